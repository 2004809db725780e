#!/usr/bin/env python3
"""Reference front-end features for the C tests (numpy only).

Written from the formulas of docs/formats/gguf.md §8, docs/formats/whisper.md §5.2,
docs/formats/parakeet.md §6 and docs/formats/canary.md §5, independently of the C code
in src/audio/. Writes small float32 .npy goldens under tests/data/audio/:
only the first frames of each output are stored (the whole utterance still
enters every global statistic), together with <name>.meta.npy holding
[total_frames, stored_frames] as int32.

usage: mel_ref.py SAMPLES_DIR OUT_DIR
"""
import struct
import sys

import numpy as np


def read_wav(path):
    """Mono float64 PCM and rate from a PCM-16 or float-32 WAV."""
    b = open(path, "rb").read()
    assert b[:4] == b"RIFF" and b[8:12] == b"WAVE"
    pos, fmt, data = 12, None, None
    while pos + 8 <= len(b):
        cid, size = b[pos:pos + 4], struct.unpack("<I", b[pos + 4:pos + 8])[0]
        body = b[pos + 8:pos + 8 + size]
        if cid == b"fmt ":
            fmt = list(struct.unpack("<HHIIHH", body[:16]))
            if fmt[0] == 0xFFFE:  # WAVE_FORMAT_EXTENSIBLE: tag in the GUID
                fmt[0] = struct.unpack("<H", body[24:26])[0]
        elif cid == b"data":
            data = body
        pos += 8 + size + (size & 1)
    tag, ch, rate, _, align, bits = fmt
    if tag == 1 and bits == 16:
        x = np.frombuffer(data[:len(data) // align * align], "<i2").astype(np.float64) / 32768.0
    elif tag == 3 and bits == 32:
        x = np.frombuffer(data[:len(data) // align * align], "<f4").astype(np.float64)
    else:
        raise ValueError("unsupported wav %s" % (fmt,))
    x = x.reshape(-1, ch).mean(axis=1)
    # the C loader hands float32 samples to the front end
    return x.astype(np.float32).astype(np.float64), rate


def hz_to_mel_slaney(f):
    f = np.asarray(f, dtype=np.float64)
    return np.where(f < 1000.0, f / (200.0 / 3.0),
                    15.0 + np.log(np.maximum(f, 1e-300) / 1000.0) / (np.log(6.4) / 27.0))


def mel_to_hz_slaney(m):
    m = np.asarray(m, dtype=np.float64)
    return np.where(m < 15.0, m * (200.0 / 3.0), 1000.0 * np.exp((m - 15.0) * (np.log(6.4) / 27.0)))


def slaney_filterbank(sr, n_fft, n_mels, fmin, fmax):
    fk = np.arange(n_fft // 2 + 1) * sr / n_fft
    h = mel_to_hz_slaney(np.linspace(hz_to_mel_slaney(fmin), hz_to_mel_slaney(fmax), n_mels + 2))
    fb = np.zeros((n_mels, fk.size))
    for m in range(n_mels):
        up = (fk - h[m]) / (h[m + 1] - h[m])
        down = (h[m + 2] - fk) / (h[m + 2] - h[m + 1])
        fb[m] = np.maximum(0.0, np.minimum(up, down)) * 2.0 / (h[m + 2] - h[m])
    return fb


def kaldi_filterbank(sr, n_fft, n_mels, fmin, fmax):
    mel = lambda f: 1127.0 * np.log(1.0 + f / 700.0)
    hz = lambda m: 700.0 * (np.exp(m / 1127.0) - 1.0)
    fk = np.arange(n_fft // 2 + 1) * sr / n_fft
    step = (mel(fmax) - mel(fmin)) / (n_mels + 1)
    fb = np.zeros((n_mels, fk.size))
    for m in range(n_mels):
        l, c, r = (hz(mel(fmin) + (m + i) * step) for i in range(3))
        inside = (fk > l) & (fk < r)
        w = np.where(fk <= c, (fk - l) / (c - l), (r - fk) / (r - c))
        fb[m] = np.where(inside, np.maximum(w, 0.0), 0.0)
    return fb


def stft_power(y, n_fft, win, hop, pad_mode, n_frames):
    pad = n_fft // 2
    p = np.pad(y, pad, mode="reflect" if pad_mode == "reflect" else "constant")
    w = np.zeros(n_fft)
    off = (n_fft - win.size) // 2
    w[off:off + win.size] = win
    idx = np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]
    spec = np.fft.rfft(p[idx] * w[None, :], axis=1)
    return (spec.real ** 2 + spec.imag ** 2)  # [T, n_fft/2+1]


def whisper_logmel(x, n_mels):
    n = x.size
    if n <= 480000:
        x = np.concatenate([x, np.zeros(480000 - n)])
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    n_stft = x.size // 160 + 1
    P = stft_power(x, 400, win, 160, "reflect", n_stft)
    E = slaney_filterbank(16000, 400, n_mels, 0.0, 8000.0) @ P.T  # [M, T]
    L = np.log10(np.maximum(E, 1e-10))[:, :n_stft - 1]
    g = L.max()
    return (np.maximum(L, g - 8.0) + 4.0) / 4.0


def nemo_logmel(x, n_mels, pad_mode):
    """Parakeet (pad_mode constant) / Canary (reflect) per-feature log-mel."""
    n = x.size
    y = x.copy()
    y[1:] = x[1:] - 0.97 * x[:-1]
    T = n // 160 + 1
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)
    P = stft_power(y, 512, win, 160, pad_mode, T)
    E = slaney_filterbank(16000, 512, n_mels, 0.0, 8000.0) @ P.T
    L = np.log(E + 2.0 ** -24)
    N = T - 1 if pad_mode == "constant" else T
    mu = L[:, :N].mean(axis=1, keepdims=True)
    sd = np.sqrt(((L[:, :N] - mu) ** 2).sum(axis=1, keepdims=True) / (N - 1))
    out = (L - mu) / (sd + 1e-5)
    out[:, N:] = 0.0
    return out


def kaldi_fbank_lfr(x, n_mels=80, lfr_m=7, lfr_n=6):
    W, hop = 400, 160
    T = 1 + (x.size - W) // hop
    idx = np.arange(T)[:, None] * hop + np.arange(W)[None, :]
    fr = x[idx] * 32768.0
    fr = fr - fr.mean(axis=1, keepdims=True)
    pre = fr.copy()
    pre[:, 1:] = fr[:, 1:] - 0.97 * fr[:, :-1]
    pre[:, 0] = fr[:, 0] * (1.0 - 0.97)
    win = 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(W) / (W - 1))
    spec = np.fft.rfft(pre * win[None, :], n=512, axis=1)
    P = spec.real ** 2 + spec.imag ** 2
    E = P @ kaldi_filterbank(16000, 512, n_mels, 20.0, 8000.0).T  # [T, M]
    F = np.log(np.maximum(E, np.finfo(np.float32).eps))
    T_lfr = -(-T // lfr_n)
    left = (lfr_m - 1) // 2
    rows = []
    for t in range(T_lfr):
        src = np.clip(t * lfr_n + np.arange(lfr_m) - left, 0, T - 1)
        rows.append(F[src].reshape(-1))  # feature k*M + m
    return np.array(rows).T  # [M*lfr_m, T_lfr]


def save(out_dir, name, feat, keep):
    keep = min(keep, feat.shape[1])
    np.save("%s/%s.npy" % (out_dir, name), np.ascontiguousarray(feat[:, :keep], dtype=np.float32))
    np.save("%s/%s.meta.npy" % (out_dir, name), np.array([feat.shape[1], keep], dtype=np.int32))
    print("%-22s %s stored %d frames" % (name, feat.shape, keep))


def main():
    samples, out = sys.argv[1], sys.argv[2]
    jfk, _ = read_wav(samples + "/jfk.wav")
    jfk = jfk[:160000]  # 10 s, 16-bit PCM source
    save(out, "jfk_whisper80", whisper_logmel(jfk, 80), 1010)
    save(out, "jfk_whisper128", whisper_logmel(jfk, 128), 1010)
    save(out, "jfk_parakeet128", nemo_logmel(jfk, 128, "constant"), 1001)
    save(out, "jfk_kaldi80", kaldi_fbank_lfr(jfk), 1000)
    ja, _ = read_wav(samples + "/ja.wav")  # IEEE float source
    ja = ja[:64000]
    save(out, "ja_whisper80", whisper_logmel(ja, 80), 410)
    save(out, "ja_canary128", nemo_logmel(ja, 128, "reflect"), 401)
    save(out, "ja_kaldi80", kaldi_fbank_lfr(ja), 1000)
    we, _ = read_wav(samples + "/whole-earth.wav")
    save(out, "we32s_whisper80_long", whisper_logmel(we[:512000], 80), 300)
    save(out, "we_slice_parakeet80", nemo_logmel(we[320000:368000], 80, "constant"), 301)


if __name__ == "__main__":
    main()
