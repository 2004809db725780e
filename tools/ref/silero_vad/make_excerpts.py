#!/usr/bin/python3
"""Cuts the parity excerpts of tests/data/vad/ from ../shared/samples (16 kHz
PCM16 WAV) and derives 8 kHz copies (windowed-sinc low-pass at 3.6 kHz, then
every second sample), written as PCM16 WAV so the C test and the onnxruntime
reference read the very same samples.

    /usr/bin/python3 tools/ref/silero_vad/make_excerpts.py ../shared/samples tests/data/vad
"""
import struct
import sys
import wave

import numpy as np

# name, source, start s, length s
EXCERPTS = [
    ("speech", "jfk.wav", 0.0, 4.0),
    ("silence", "jobs-silence.wav", 0.5, 4.0),
    ("noise", "noise.wav", 2.0, 4.0),
    ("twospk", "multitalker-2spk-mix.wav", 3.0, 4.0),
]


def read_wav(path):
    """PCM16 or float32 mono WAV -> (float64 samples in [-1, 1), rate)."""
    data = open(path, "rb").read()
    pos, fmt, rate, bits, pcm = 12, None, None, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        body = data[pos + 8 : pos + 8 + size]
        if cid == b"fmt ":
            fmt, ch, rate = struct.unpack("<HHI", body[:8])
            bits = struct.unpack("<H", body[14:16])[0]
            assert ch == 1, path
        elif cid == b"data":
            pcm = body
        pos += 8 + size + (size & 1)
    if fmt == 1 and bits == 16:
        return np.frombuffer(pcm, "<i2").astype(np.float64) / 32768.0, rate
    if fmt == 3 and bits == 32:
        return np.frombuffer(pcm, "<f4").astype(np.float64), rate
    raise SystemExit("%s: unsupported WAV format %s/%s" % (path, fmt, bits))


def write_wav(path, x, rate):
    q = np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(q.tobytes())


def to_8k(x):
    n = np.arange(-64, 65)
    h = 2 * 0.225 * np.sinc(2 * 0.225 * n) * np.blackman(len(n))
    return np.convolve(x, h / h.sum(), mode="same")[::2]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    for name, f, t0, dur in EXCERPTS:
        x, rate = read_wav("%s/%s" % (src, f))
        assert rate == 16000
        seg = x[int(t0 * rate) : int((t0 + dur) * rate)]
        write_wav("%s/%s_16k.wav" % (dst, name), seg, 16000)
        write_wav("%s/%s_8k.wav" % (dst, name), to_8k(seg), 8000)
        print(name, len(seg))


if __name__ == "__main__":
    main()
