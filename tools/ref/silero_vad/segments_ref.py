#!/usr/bin/python3
"""Reference of Silero's get_speech_timestamps segment rules (v4), written
from the original's behaviour as one batch pass over the probabilities (the
C code, src/vad/vad_rules.c, is an incremental state machine: this is the
independent check). Writes tests/data/vad/segments.txt: one case per line,

    probs.npy rate window n_samples threshold neg min_speech_ms min_silence_ms pad_ms max_speech_s : n s0 e0 s1 e1 ...

for the onnxruntime goldens (default rules) and for a synthetic probability
track (tests/data/vad/synth_probs.npy, written here) under many settings.

    /usr/bin/python3 tools/ref/silero_vad/segments_ref.py tests/data/vad
"""
import os
import sys

import numpy as np


def speech_timestamps(probs, n_samples, rate, win, threshold=0.5, neg=-1.0, min_speech_ms=250,
                      min_silence_ms=100, pad_ms=30, max_speech_s=0.0):
    thr = float(np.float32(threshold))
    neg_thr = max(thr - 0.15, 0.01) if neg < 0 else float(np.float32(neg))
    min_speech = rate * min_speech_ms / 1000
    pad = rate * pad_ms // 1000
    max_speech = rate * float(np.float32(max_speech_s)) - win - 2 * pad if max_speech_s > 0 else float("inf")
    min_silence = rate * min_silence_ms / 1000
    min_silence_at_max = rate * 98 / 1000

    triggered = False
    speeches = []
    cur = {}
    temp_end = prev_end = next_start = 0
    for i, p in enumerate(float(x) for x in probs):
        pos = win * i
        if p >= thr and temp_end:
            temp_end = 0
            if next_start < prev_end:
                next_start = pos
        if p >= thr and not triggered:
            triggered = True
            cur = {"start": pos}
            continue
        if triggered and pos - cur["start"] > max_speech:
            if prev_end:
                cur["end"] = prev_end
                speeches.append(cur)
                cur = {}
                if next_start < prev_end:
                    triggered = False
                else:
                    cur = {"start": next_start}
                prev_end = next_start = temp_end = 0
            else:
                cur["end"] = pos
                speeches.append(cur)
                cur = {}
                prev_end = next_start = temp_end = 0
                triggered = False
                continue
        if p < neg_thr and triggered:
            if not temp_end:
                temp_end = pos
            if pos - temp_end > min_silence_at_max:
                prev_end = temp_end
            if pos - temp_end < min_silence:
                continue
            cur["end"] = temp_end
            if cur["end"] - cur["start"] > min_speech:
                speeches.append(cur)
            cur = {}
            prev_end = next_start = temp_end = 0
            triggered = False
            continue
    if cur and n_samples - cur["start"] > min_speech:
        cur["end"] = n_samples
        speeches.append(cur)

    for i, sp in enumerate(speeches):
        if i == 0:
            sp["start"] = max(0, sp["start"] - pad)
        if i != len(speeches) - 1:
            gap = speeches[i + 1]["start"] - sp["end"]
            if gap < 2 * pad:
                sp["end"] += gap // 2
                speeches[i + 1]["start"] = max(0, speeches[i + 1]["start"] - gap // 2)
            else:
                sp["end"] = min(n_samples, sp["end"] + pad)
                speeches[i + 1]["start"] = max(0, speeches[i + 1]["start"] - pad)
        else:
            sp["end"] = min(n_samples, sp["end"] + pad)
    return [(s["start"], s["end"]) for s in speeches]


def synth_track(n, seed):
    """Speech / pause runs of random length with noisy probabilities, some
    values exactly on the default thresholds."""
    rng = np.random.default_rng(seed)
    out, speech = [], False
    while len(out) < n:
        run = int(rng.integers(1, 60 if speech else 40))
        base = 0.85 if speech else 0.08
        vals = np.clip(base + rng.normal(0, 0.25, run), 0, 1)
        out.extend(vals.tolist())
        speech = not speech
    a = np.array(out[:n], dtype=np.float32)
    a[rng.integers(0, n, 20)] = np.float32(0.5)
    a[rng.integers(0, n, 20)] = np.float32(0.35)
    return a


def main():
    d = sys.argv[1]
    lines = []

    def case(fname, rate, win, n_samples, **kw):
        probs = np.load(os.path.join(d, fname))
        segs = speech_timestamps(probs, n_samples, rate, win, **kw)
        k = dict(threshold=0.5, neg=-1.0, min_speech_ms=250, min_silence_ms=100, pad_ms=30, max_speech_s=0.0)
        k.update(kw)
        head = "%s %d %d %d %r %r %d %d %d %r" % (fname, rate, win, n_samples, k["threshold"], k["neg"],
                                                  k["min_speech_ms"], k["min_silence_ms"], k["pad_ms"],
                                                  k["max_speech_s"])
        lines.append(head + " : %d %s" % (len(segs), " ".join("%d %d" % s for s in segs)))

    for name in ("speech", "silence", "noise", "twospk"):
        case("%s_16k_w512.npy" % name, 16000, 512, 64000)
        case("%s_8k_w256.npy" % name, 8000, 256, 32000)
    case("speech_16k_w1536.npy", 16000, 1536, 64000)
    case("twospk_16k_w1024.npy", 16000, 1024, 64000)
    case("speech_8k_w768.npy", 8000, 768, 32000)

    np.save(os.path.join(d, "synth_probs.npy"), synth_track(4000, 7))
    n16 = 4000 * 512 - 100  # the last window partial
    settings = [
        {},
        dict(threshold=0.3),
        dict(threshold=0.7, neg=0.2),
        dict(min_silence_ms=500, pad_ms=100),
        dict(max_speech_s=3.0),
        dict(max_speech_s=1.0, min_silence_ms=300),
        dict(max_speech_s=2.0, min_silence_ms=50, pad_ms=200),
        dict(pad_ms=0, min_speech_ms=0, min_silence_ms=0),
        dict(min_speech_ms=1000, pad_ms=400),
        dict(threshold=1.0),
        dict(threshold=0.0, neg=0.0),
    ]
    for s in settings:
        case("synth_probs.npy", 16000, 512, n16, **s)
    case("synth_probs.npy", 16000, 1536, 4000 * 1536, max_speech_s=5.0)
    case("synth_probs.npy", 8000, 256, 4000 * 256, min_silence_ms=200, max_speech_s=4.0)
    with open(os.path.join(d, "segments.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for ln in lines:
        print(ln[:110])


if __name__ == "__main__":
    main()
