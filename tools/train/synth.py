#!/usr/bin/env python3
"""Synthesize the corpus with espeak-ng + sox and precompute log-mel features.

Every utterance: random voice (accent x variant), speed, pitch, amplitude and
word gap in espeak-ng; then a random sox chain (tempo, equaliser, reverb,
telephone band via an 8 kHz round trip), always resampled to 16 kHz mono
16-bit; then additive noise (white / pink / brown) at a random SNR in numpy,
and 16-bit quantisation, exactly what a WAV file would hold. Features are the
Parakeet 80-bin log-mel of tools/ref/mel_ref.py (the C front end's formulas),
stored as float16 [T_mel, 80] rows.

The held-out accent and the held-out variants below never occur in training.

usage: synth.py train OUT_DIR [--max N] [--jobs 2] [--seed S] [--repeat R]
                      [--sources fortune,words --tag x_]
       synth.py test  OUT_DIR [--n 300] [--sources fortune,number] [--name test]
                      [--exclude OTHER/test.tsv]
"""
import argparse
import functools
import multiprocessing as mp
import os
import random
import subprocess
import sys
import wave

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import mel_ref  # noqa: E402

# the filterbank is the same for every utterance: build it once per process
mel_ref.slaney_filterbank = functools.lru_cache(maxsize=4)(mel_ref.slaney_filterbank)

TRAIN_ACCENTS = ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-029",
                 "en-us-nyc"]
HELD_ACCENT = "en-gb-x-gbcwmd"
HELD_VARIANTS = ["m7", "f4", "klatt3", "benjamin"]
VARIANT_DIR = "/usr/lib/x86_64-linux-gnu/espeak-ng-data/voices/!v"
EXCLUDED = {"Demonic", "whisper", "whisperf", "croak"}  # not speech-like enough


def train_variants():
    names = sorted(os.listdir(VARIANT_DIR)) if os.path.isdir(VARIANT_DIR) else []
    vs = [v for v in names if v not in EXCLUDED and v not in HELD_VARIANTS]
    return [""] + vs  # "" = the accent's default voice


def sox_chain(rng, test):
    fx = []
    if rng.random() < 0.3:
        fx += ["tempo", "-s", "%.3f" % rng.uniform(0.85, 1.15)]
    if rng.random() < 0.3:
        fx += ["equalizer", str(rng.randint(200, 4000)), "1q", "%.1f" % rng.uniform(-8, 8)]
    if rng.random() < 0.25:
        fx += ["reverb", str(rng.randint(10, 60)), "50", str(rng.randint(20, 80))]
    if rng.random() < 0.1:
        fx += ["sinc", "300-3400", "rate", "8000"]
    fx += ["rate", "16000"]
    return fx


def add_noise(rng, x):
    if rng.random() >= 0.5:
        return x
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    kind = rng.choice(["white", "pink", "brown"])
    n = nrng.standard_normal(x.size)
    if kind == "brown":
        n = np.cumsum(n)
        n -= np.convolve(n, np.ones(801) / 801, mode="same")  # drop DC drift
    elif kind == "pink":
        f = np.fft.rfft(n)
        f /= np.sqrt(np.maximum(np.arange(f.size), 1.0))
        n = np.fft.irfft(f, n=x.size)
    snr = rng.uniform(10.0, 40.0)
    ps = np.mean(x * x) + 1e-12
    pn = np.mean(n * n) + 1e-12
    return x + n * np.sqrt(ps / (pn * 10 ** (snr / 10)))


def synth_one(text, rng, accent, variant, test=False):
    voice = accent + ("+" + variant if variant else "")
    esp = ["espeak-ng", "-v", voice, "-s", str(rng.randint(120, 220)),
           "-p", str(rng.randint(25, 75)), "-a", str(rng.randint(70, 150)),
           "-g", str(rng.choice([0, 0, 0, 1, 2])), "--stdout", text]
    sox = ["sox", "-t", "wav", "-", "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", "-"]
    sox += sox_chain(rng, test)
    p1 = subprocess.Popen(esp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    raw = subprocess.run(sox, stdin=p1.stdout, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
    p1.wait()
    x = np.frombuffer(raw, "<i2").astype(np.float64) / 32768.0
    if x.size < 3200:
        return None, voice
    # random lead/tail silence so utterances do not all start on the onset
    lead = np.zeros(rng.randint(0, 4000))
    tail = np.zeros(rng.randint(0, 4000))
    x = np.concatenate([lead, x, tail])
    x = add_noise(rng, x)
    peak = np.max(np.abs(x)) + 1e-9
    x = x / peak * rng.uniform(0.1, 0.95)
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)
    return pcm, voice


def features(pcm):
    x = pcm.astype(np.float64) / 32768.0
    return mel_ref.nemo_logmel(x, 80, "constant").T.astype(np.float16)  # [T, 80]


def train_chunk(args):
    idx, rows, out_dir, seed, tag = args
    path = os.path.join(out_dir, "feats", "train_%s%04d.npz" % (tag, idx))
    if os.path.exists(path):
        return idx, 0
    # a tagged extra pass draws its own voices (same seed, same index, new stream)
    rng = random.Random(seed * 100003 + idx if not tag else "%s%d/%d" % (tag, seed, idx))
    variants = train_variants()
    feats, lens, texts, voices = [], [], [], []
    for _, text in rows:
        pcm, voice = synth_one(text, rng, rng.choice(TRAIN_ACCENTS), rng.choice(variants))
        if pcm is None:
            continue
        f = features(pcm)
        feats.append(f)
        lens.append(f.shape[0])
        texts.append(text)
        voices.append(voice)
    tmp = path + ".tmp.npz"
    np.savez(tmp, feats=np.concatenate(feats), lens=np.array(lens, np.int32),
             texts=np.array(texts), voices=np.array(voices))
    os.replace(tmp, path)
    return idx, len(lens)


def read_tsv(path):
    return [tuple(line.rstrip("\n").split("\t", 1)) for line in open(path)]


def write_wav(path, pcm):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())


def make_test(out_dir, n, seed, sources, name, exclude=""):
    """n held-out utterances, alternating between the sources while each has
    sentences left (a source that runs out leaves the rest to the others),
    round-robin over the held-out voice groups; written to OUT_DIR/<name>/. Sentences of
    the test.tsv named by `exclude` are skipped (a dev set for checkpoint
    choice that shares no sentence with the test set)."""
    skip = set()
    if exclude:
        skip = {line.rstrip("\n").split("\t")[3] for line in open(exclude)}
    rows = [r for r in read_tsv(os.path.join(out_dir, "text_test.tsv"))
            if len(r[1].split()) >= 3 and r[1] not in skip]
    rng = random.Random(seed + 7)
    rng.shuffle(rows)
    per_src = {s: [r for r in rows if r[0] == s] for s in sources}
    picked = []
    for i in range(max(len(v) for v in per_src.values())):
        for s in sources:
            if i < len(per_src[s]):
                picked.append(per_src[s][i])
    variants = train_variants()
    groups = [(a, v) for v in HELD_VARIANTS for a in [None]] + [(HELD_ACCENT, None)]
    tdir = os.path.join(out_dir, name)
    wdir = os.path.join(tdir, "wav")
    os.makedirs(wdir, exist_ok=True)
    feats, lens, texts, voices = [], [], [], []
    with open(os.path.join(tdir, "test.tsv"), "w") as f:
        k = 0
        for src, text in picked:
            if k >= n:
                break
            acc, var = groups[k % len(groups)]
            group = var if var else HELD_ACCENT
            acc = acc or rng.choice(TRAIN_ACCENTS)
            var = var or rng.choice(variants)
            pcm, voice = synth_one(text, rng, acc, var, test=True)
            if pcm is None:
                continue
            utt = "t%03d" % k
            write_wav(os.path.join(wdir, utt + ".wav"), pcm)
            fe = features(pcm)
            feats.append(fe)
            lens.append(fe.shape[0])
            texts.append(text)
            voices.append(group)
            f.write("%s\t%s\t%s\t%s\t%s\n" % (utt, group, voice, text, src))
            k += 1
    np.savez(os.path.join(tdir, "test_feats.npz"), feats=np.concatenate(feats),
             lens=np.array(lens, np.int32), texts=np.array(texts), voices=np.array(voices))
    print("%s: %d utterances, %.1f min" % (name, len(lens), sum(lens) / 100 / 60))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "test"])
    ap.add_argument("out_dir")
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--sources", default="",
                    help="test: held-out text sources, taken in turn (default fortune,number); "
                    "train: only the training sentences of these sources (default all)")
    ap.add_argument("--tag", default="", help="train: shard name prefix (train_<tag>NNNN.npz), "
                    "so an extra pass over some sources adds shards instead of replacing them")
    ap.add_argument("--name", default="test", help="test: output folder name")
    ap.add_argument("--exclude", default="", help="test: skip the sentences of this test.tsv")
    ap.add_argument("--repeat", type=int, default=1,
                    help="train: each sentence spoken this many times (new voice each time)")
    a = ap.parse_args()
    if a.mode == "test":
        make_test(a.out_dir, a.n, a.seed, (a.sources or "fortune,number").split(","), a.name,
                  a.exclude)
        return
    rows = read_tsv(os.path.join(a.out_dir, "text_train.tsv"))
    if a.sources:
        rows = [r for r in rows if r[0] in a.sources.split(",")]
    if a.repeat > 1:  # later copies come after every first copy, so a partial run is balanced
        rows = rows * a.repeat
    if a.max:
        rows = rows[:a.max]
    os.makedirs(os.path.join(a.out_dir, "feats"), exist_ok=True)
    chunks = [(i, rows[s:s + a.chunk], a.out_dir, a.seed, a.tag)
              for i, s in enumerate(range(0, len(rows), a.chunk))]
    with mp.Pool(a.jobs) as pool:
        for idx, cnt in pool.imap_unordered(train_chunk, chunks):
            print("chunk %d: %d utterances" % (idx, cnt), flush=True)


if __name__ == "__main__":
    main()
