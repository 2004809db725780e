#!/usr/bin/python3
"""Independent float64 reference of the SenseVoice family (docs/formats/sensevoice.md).

Written from the family specification (docs/formats/sensevoice.md: GGUF
schema §2-§3, Kaldi fbank + LFR + CMVN §4, prefix rows + SAN-M encoder §5,
greedy CTC + result §6), never from the C sources. Builds random-weight models in the published GGUF schema,
reads every file back, and writes float64 goldens for a committed clip.

    /usr/bin/python3 tools/ref/sensevoice.py --config tiny --out tests/data/sensevoice/tiny
    /usr/bin/python3 tools/ref/sensevoice.py --config real --out build-ref/sensevoice-small

Weight design (why the random model decodes something varied): every
matrix is rounded to F16-representable values first (F32 and F16 files hold
the same math); then the CTC head is *fitted* by least squares on the
float64 tp_norm output of the committed clip, for both prompts (woitn and
withitn) at once, so that prefix rows decode to real tags
(<|en|> <|NEUTRAL|> <|Speech|> <|woitn|>/<|withitn|>) and the audio frames to
a varied chain of text pieces and blanks, each with a chosen logit margin.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as gw  # noqa: E402

torch.set_default_dtype(torch.float64)

LN_EPS = 1e-12


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------
CONFIGS = {
    # d_model 128 > 3 prompts x T = 37 rows of the 2 s clip: the head fit is exact.
    "tiny": dict(n_blocks=3, tp_blocks=1, d_model=128, n_heads=4, d_ff=128, kernel=11,
                 n_mels=80, lfr_m=7, lfr_n=6, vocab=None, size_label="1M"),
    "real": dict(n_blocks=50, tp_blocks=20, d_model=512, n_heads=4, d_ff=2048, kernel=11,
                 n_mels=80, lfr_m=7, lfr_n=6, vocab=25055, size_label="234M"),
}

TAGS_REAL = {  # known vocabulary ids of the published SenseVoiceSmall
    "<|zh|>": 24884, "<|en|>": 24885, "<|yue|>": 24888, "<|ja|>": 24892, "<|ko|>": 24896,
    "<|nospeech|>": 24992, "<|Speech|>": 24993, "<|BGM|>": 24995, "<|HAPPY|>": 25001,
    "<|SAD|>": 25002, "<|ANGRY|>": 25003, "<|NEUTRAL|>": 25004, "<|EMO_UNKNOWN|>": 25009,
    "<|withitn|>": 25016, "<|woitn|>": 25017, "<|Event_UNK|>": 25019,
}
TAG_ORDER = list(TAGS_REAL)
TEXT_PIECES = ["▁and", "▁so", "▁my", "▁fell", "ow", "▁a", "mer", "ic", "ans", "▁ask", "▁not",
               "▁what", "▁your", "▁country", "▁can", "▁do", "▁for", "▁you", ",", ".", "▁",
               "s", "e", "t", "▁the", "▁we", "ing", "ed", "▁to", "▁of", "n", "r"]


def build_vocab(cfg):
    """tokens, scores, types. Tiny: <unk> <s> </s>, text pieces, then the 16 known tags.
    Real: 25055 pieces with the known tags at their real ids, CONTROL placeholders
    `<|tagN|>` in the rest of 24884..25054, filler text pieces elsewhere."""
    if cfg["vocab"] is None:
        toks = ["<unk>", "<s>", "</s>"] + TEXT_PIECES + TAG_ORDER
    else:
        V = cfg["vocab"]
        toks = ["<unk>", "<s>", "</s>"]
        i = 0
        while len(toks) < 24884:
            toks.append(TEXT_PIECES[i] if i < len(TEXT_PIECES) else "▁w%d" % i)
            i += 1
        inv = {v: k for k, v in TAGS_REAL.items()}
        for tid in range(24884, V):
            toks.append(inv.get(tid, "<|tag%d|>" % tid))
    types = []
    for t in toks:
        if t == "<unk>":
            types.append(2)
        elif t in ("<s>", "</s>") or (t.startswith("<|") and t.endswith("|>") and "|" not in t[2:-2]):
            types.append(3)
        else:
            types.append(1)
    scores = [0.0 if ty != 1 else -float(i) for i, ty in enumerate(types)]
    return toks, scores, types


# --------------------------------------------------------------------------
# front end (docs/formats/sensevoice.md §4)
# --------------------------------------------------------------------------
def read_wav16(path):
    b = open(path, "rb").read()
    assert b[:4] == b"RIFF" and b[8:12] == b"WAVE"
    pos, fmt, data = 12, None, None
    while pos + 8 <= len(b):
        cid, size = b[pos:pos + 4], struct.unpack("<I", b[pos + 4:pos + 8])[0]
        if cid == b"fmt ":
            fmt = struct.unpack("<HHIIHH", b[pos + 8:pos + 24])
        elif cid == b"data":
            data = b[pos + 8:pos + 8 + size]
        pos += 8 + size + (size & 1)
    assert fmt[0] == 1 and fmt[1] == 1 and fmt[5] == 16, fmt
    return np.frombuffer(data, "<i2").astype(np.float64) / 32768.0, fmt[2]


def write_wav16(path, x16, rate):
    data = x16.astype("<i2").tobytes()
    hdr = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    hdr += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    hdr += b"data" + struct.pack("<I", len(data))
    open(path, "wb").write(hdr + data)


def htk_hz_filterbank(sr, n_mels, P):
    """Mel-domain edges, triangles linear in Hz: the runtime's rule
    (docs/formats/sensevoice.md §4)."""
    def mel(f):
        return 1127.0 * math.log(1.0 + f / 700.0)

    def hz(m):
        return 700.0 * (math.exp(m / 1127.0) - 1.0)
    lo, hi = mel(20.0), mel(sr / 2.0)
    step = (hi - lo) / (n_mels + 1)
    nb = P // 2 + 1
    fb = np.zeros((n_mels, nb))
    for m in range(n_mels):
        l, c, r = hz(lo + m * step), hz(lo + (m + 1) * step), hz(lo + (m + 2) * step)
        for b in range(nb):
            f = b * sr / P
            if l < f <= c:
                fb[m, b] = (f - l) / (c - l)
            elif c < f < r:
                fb[m, b] = (r - f) / (r - c)
    return fb


def fbank(pcm, sr=16000, n_mels=80, N=400, hop=160):
    """Log filterbank [T_frames, n_mels], float64 throughout (snip edges)."""
    P = 1 << (N - 1).bit_length()
    T = 1 + (len(pcm) - N) // hop
    if len(pcm) < N:
        return np.zeros((0, n_mels))
    idx = np.arange(T)[:, None] * hop + np.arange(N)[None, :]
    s = pcm[idx] * 32768.0
    s = s - s.mean(axis=1, keepdims=True)
    s[:, 1:] = s[:, 1:] - 0.97 * s[:, :-1]
    s[:, 0] *= 0.03
    w = 0.54 - 0.46 * np.cos(2 * np.pi * np.arange(N) / (N - 1))
    s = s * w
    spec = np.fft.rfft(s, n=P, axis=1)
    power = spec.real ** 2 + spec.imag ** 2
    E = power @ htk_hz_filterbank(sr, n_mels, P).T
    return np.log(np.maximum(E, 1.1920928955078125e-7))


def lfr(L, m=7, n=6):
    T = L.shape[0]
    T_lfr = -(-T // n)
    left = (m - 1) // 2
    out = np.zeros((T_lfr, m * L.shape[1]))
    for i in range(T_lfr):
        for k in range(m):
            src = min(max(i * n + k - left, 0), T - 1)
            out[i, k * L.shape[1]:(k + 1) * L.shape[1]] = L[src]
    return out


# --------------------------------------------------------------------------
# encoder (docs/formats/sensevoice.md §5)
# --------------------------------------------------------------------------
def layer_norm(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + LN_EPS) * w + b


def sinusoid(T, D):
    half = D // 2
    inc = math.log(10000.0) / (half - 1)
    pos = torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    inv = torch.exp(-torch.arange(half, dtype=torch.float64) * inc)[None, :]
    return torch.cat([torch.sin(pos * inv), torch.cos(pos * inv)], dim=1)


def sanm(y, W, p, d, H, k):
    qkv = y @ W[p + ".attn.qkv.weight"].T + W[p + ".attn.qkv.bias"]
    q, kk, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
    T = y.shape[0]
    pad = (k - 1) // 2
    vp = torch.cat([torch.zeros(pad, d), v, torch.zeros(pad, d)], 0)
    wf = W[p + ".attn.fsmn.weight"][:, 0, :]  # (d, k)
    f = v.clone()
    for j in range(k):
        f = f + wf[:, j] * vp[j:j + T]
    hd = d // H
    o = []
    for h in range(H):
        sl = slice(h * hd, (h + 1) * hd)
        a = torch.softmax(q[:, sl] @ kk[:, sl].T / math.sqrt(hd), dim=-1)
        o.append(a @ v[:, sl])
    o = torch.cat(o, 1)
    return o @ W[p + ".attn.out.weight"].T + W[p + ".attn.out.bias"] + f


def block(x, W, p, cfg, residual):
    d, H, k = cfg["d_model"], cfg["n_heads"], cfg["kernel"]
    a = sanm(layer_norm(x, W[p + ".norm_attn.weight"], W[p + ".norm_attn.bias"]), W, p, d, H, k)
    x = x + a if residual else a
    y = layer_norm(x, W[p + ".norm_ffn.weight"], W[p + ".norm_ffn.bias"])
    y = torch.relu(y @ W[p + ".ffn.fc1.weight"].T + W[p + ".ffn.fc1.bias"])
    return x + (y @ W[p + ".ffn.fc2.weight"].T + W[p + ".ffn.fc2.bias"])


def block_names(cfg):
    return (["enc.encoders0.0"] + ["enc.encoders.%d" % i for i in range(cfg["n_blocks"] - 1)],
            ["enc.tp_encoders.%d" % i for i in range(cfg["tp_blocks"])])


def encoder(feats, W, cfg, lid, textnorm):
    """Returns dict of intermediates; feats = CMVN'd LFR [T_lfr, di] (torch)."""
    E = W["enc.embed.weight"]
    X = torch.cat([E[lid:lid + 1], E[1:2], E[2:3], E[textnorm:textnorm + 1], feats], 0)
    # PE computed in double, stored as float (docs/formats/sensevoice.md §5.1)
    pe = sinusoid(X.shape[0], X.shape[1]).to(torch.float32).to(X.dtype)
    x = X * math.sqrt(cfg["d_model"]) + pe
    out = {"embed_out": x}
    main, tp = block_names(cfg)
    for i, p in enumerate(main):
        x = block(x, W, p, cfg, residual=(i > 0))
        if i == 0:
            out["encoders0_out"] = x
    out["encoders_out"] = x
    x = layer_norm(x, W["enc.after_norm.weight"], W["enc.after_norm.bias"])
    out["after_norm_out"] = x
    for p in tp:
        x = block(x, W, p, cfg, residual=True)
    x = layer_norm(x, W["enc.tp_norm.weight"], W["enc.tp_norm.bias"])
    out["tp_norm_out"] = x
    return out


# --------------------------------------------------------------------------
# decoding (docs/formats/sensevoice.md §6)
# --------------------------------------------------------------------------
def greedy_ctc(logits):
    prev, ids = -1, []
    for a in torch.argmax(logits, dim=1).tolist():  # torch.argmax: first max on ties
        if a != prev:
            if a != 0:
                ids.append(a)
            prev = a
    return ids


def sp_decode(pieces):
    s = "".join(pieces).replace("▁", " ")
    return s


def result(ids, toks, types, hint=None):
    r = {"ids": ids, "tokens": [sp_decode([toks[i]]) for i in ids]}
    if not ids:
        r.update(text="", raw_text="", detected_language=None)
        return r
    det = None
    if hint in (None, "", "auto") and types[ids[0]] == 3:
        t = sp_decode([toks[ids[0]]]).lstrip(" ")
        if t[2:-2] in ("zh", "en", "yue", "ja", "ko"):
            det = t[2:-2]
    text = sp_decode([toks[i] for i in ids if types[i] != 3])
    if text.startswith(" "):
        text = text[1:]
    tags = [toks[i] for i in ids if types[i] == 3]
    r.update(text=text, raw_text=sp_decode([toks[i] for i in ids]), detected_language=det,
             tags=tags)
    return r


def margins(logits):
    top = torch.topk(logits, 2, dim=1).values
    return (top[:, 0] - top[:, 1])


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------
def f16r(t):
    return t.to(torch.float16).to(torch.float64)


def random_weights(cfg, V, g):
    d, F, k, di = cfg["d_model"], cfg["d_ff"], cfg["kernel"], cfg["n_mels"] * cfg["lfr_m"]
    W = {}

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g) * std
    W["frontend.cmvn.shift"] = torch.zeros(di)
    W["frontend.cmvn.scale"] = torch.ones(di)
    W["enc.embed.weight"] = rn(16, di)
    main, tp = block_names(cfg)
    for i, p in enumerate(main + tp):
        din = di if i == 0 else d
        W[p + ".attn.qkv.weight"] = f16r(rn(3 * d, din, std=1.0 / math.sqrt(din)))
        W[p + ".attn.qkv.bias"] = rn(3 * d, std=0.1)
        W[p + ".attn.out.weight"] = f16r(rn(d, d, std=0.5 / math.sqrt(d)))
        W[p + ".attn.out.bias"] = rn(d, std=0.1)
        W[p + ".attn.fsmn.weight"] = rn(d, 1, k, std=0.2)
        W[p + ".ffn.fc1.weight"] = f16r(rn(F, d, std=1.0 / math.sqrt(d)))
        W[p + ".ffn.fc1.bias"] = rn(F, std=0.1)
        W[p + ".ffn.fc2.weight"] = f16r(rn(d, F, std=0.5 / math.sqrt(F)))
        W[p + ".ffn.fc2.bias"] = rn(d, std=0.1)
        W[p + ".norm_attn.weight"] = 1.0 + rn(din, std=0.1)
        W[p + ".norm_attn.bias"] = rn(din, std=0.1)
        W[p + ".norm_ffn.weight"] = 1.0 + rn(d, std=0.1)
        W[p + ".norm_ffn.bias"] = rn(d, std=0.1)
        if p == main[-1]:
            W["enc.after_norm.weight"] = 1.0 + rn(d, std=0.1)
            W["enc.after_norm.bias"] = rn(d, std=0.1)
    W["enc.tp_norm.weight"] = 1.0 + rn(d, std=0.1)
    W["enc.tp_norm.bias"] = rn(d, std=0.1)
    W["ctc.head.weight"] = f16r(rn(V, d, std=0.1 / math.sqrt(d)))
    W["ctc.head.bias"] = torch.zeros(V)
    # every F32 tensor stored as float32 values
    for n in W:
        W[n] = W[n].to(torch.float32).to(torch.float64)
    return W


def tensor_order(cfg):
    main, tp = block_names(cfg)
    per = [".attn.qkv.weight", ".attn.qkv.bias", ".attn.out.weight", ".attn.out.bias",
           ".attn.fsmn.weight", ".ffn.fc1.weight", ".ffn.fc1.bias", ".ffn.fc2.weight",
           ".ffn.fc2.bias", ".norm_attn.weight", ".norm_attn.bias", ".norm_ffn.weight",
           ".norm_ffn.bias"]
    names = ["frontend.cmvn.shift", "frontend.cmvn.scale", "enc.embed.weight"]
    for p in main:
        names += [p + s for s in per]
    names += ["enc.after_norm.weight", "enc.after_norm.bias"]
    for p in tp:
        names += [p + s for s in per]
    names += ["enc.tp_norm.weight", "enc.tp_norm.bias", "ctc.head.weight", "ctc.head.bias"]
    return names


LINEAR = (".attn.qkv.weight", ".attn.out.weight", ".ffn.fc1.weight", ".ffn.fc2.weight",
          "ctc.head.weight")


def dtype_for(name, arr, preset):
    """docs/formats/sensevoice.md §3: F32 file all F32; F16 file linear matrices
    F16; Q8_0 file linear matrices Q8_0 where ne[0] % 32 == 0, else F16 (encoders0.0 qkv, ne[0] = 560)."""
    if preset == "F32" or not name.endswith(LINEAR):
        return gw.GGML_F32
    if preset == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if arr.shape[-1] % 32 == 0 else gw.GGML_F16


FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


def write_gguf(path, cfg, W, toks, scores, types, preset, variant):
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "sensevoice")
    w.add_string("general.name", "SenseVoice Small (random-weight reference %s)" % variant)
    w.add_string("general.basename", "sensevoice-small")  # the variant string (docs/formats/sensevoice.md §2)
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/sensevoice.py")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "cc0-1.0")
    w.add_string("general.license.name", "CC0 1.0")
    w.add_string("general.license.link", "https://creativecommons.org/publicdomain/zero/1.0/")
    w.add_string("general.repo_url", "https://example.invalid/transcribe/tools/ref/sensevoice.py")
    w.add_string("general.url", "https://example.invalid/transcribe/tools/ref/sensevoice.py")
    w.add_string("general.source.url", "https://example.invalid/transcribe/tools/ref/sensevoice.py")
    w.add_string("general.description", "random weights, schema of SenseVoiceSmall")
    if preset == "F32":
        w.add_uint32("general.file_type", 0)
    w.add_array("general.languages", ["zh", "yue", "en", "ja", "ko"])
    w.add_array("general.tags", ["asr", "speech-recognition", "encoder-ctc", "SenseVoiceSmall",
                                 "SenseVoiceEncoderSmall"])
    w.add_string("stt.variant", "sensevoice-small")
    w.add_bool("stt.capability.lang_detect", True)
    w.add_string("tokenizer.ggml.model", "bpe")
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.blank_token_id", 0)
    e = "stt.sensevoice.encoder."
    w.add_uint32(e + "n_blocks", cfg["n_blocks"])
    w.add_uint32(e + "tp_blocks", cfg["tp_blocks"])
    w.add_uint32(e + "d_model", cfg["d_model"])
    w.add_uint32(e + "d_input", cfg["n_mels"] * cfg["lfr_m"])
    w.add_uint32(e + "n_heads", cfg["n_heads"])
    w.add_uint32(e + "d_ff", cfg["d_ff"])
    w.add_uint32(e + "kernel_size", cfg["kernel"])
    w.add_uint32(e + "sanm_shift", 0)
    w.add_string(e + "attention_type", "sanm")
    w.add_bool(e + "normalize_before", True)
    s = "stt.sensevoice.special."
    for key, val in [("lang_auto", 0), ("lang_zh", 3), ("lang_en", 4), ("lang_yue", 7),
                     ("lang_ja", 11), ("lang_ko", 12), ("lang_nospeech", 13),
                     ("event_speech", 1), ("emotion_neutral", 2), ("withitn", 14),
                     ("woitn", 15)]:
        w.add_uint32(s + key, val)
    f = "stt.frontend."
    w.add_string(f + "type", "kaldi_fbank_lfr")
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "sample_rate", 16000)
    w.add_uint32(f + "n_fft", 400)
    w.add_uint32(f + "win_length", 400)
    w.add_uint32(f + "hop_length", 160)
    w.add_string(f + "window", "hamming")
    w.add_string(f + "normalize", "per_feature")
    w.add_float32(f + "dither", 0.0)
    w.add_bool(f + "upscale_samples", True)
    w.add_bool(f + "snip_edges", True)
    w.add_uint32(f + "lfr_m", cfg["lfr_m"])
    w.add_uint32(f + "lfr_n", cfg["lfr_n"])
    w.add_string(f + "fbank_style", "kaldi_htk")
    if preset != "F32":
        w.add_uint32("general.file_type", FILE_TYPE[preset])  # derived files: last scalar
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.scores", scores, gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    for n in tensor_order(cfg):
        a = W[n].numpy().astype(np.float32)
        w.add_tensor(n, a, dtype_for(n, a, preset))
    w.write(path)


def read_back(path, cfg, W, preset, n_tok):
    kv, tensors = gw.read_gguf(path)
    names = tensor_order(cfg)
    assert list(tensors) == names, "tensor order"
    assert len(names) == 3 + 13 * (cfg["n_blocks"] + cfg["tp_blocks"]) + 6
    assert kv["general.architecture"] == (gw.STRING, "sensevoice")
    assert kv["stt.sensevoice.encoder.kernel_size"][0] == gw.UINT32
    assert kv["stt.frontend.dither"][0] == gw.FLOAT32
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == n_tok
    Wq = {}
    for n in names:
        gt, ne, a = tensors[n]
        ref = W[n].numpy().astype(np.float32)
        assert gt == dtype_for(n, ref, preset), n
        assert ne == list(reversed(ref.shape)), (n, ne)
        if gt == gw.GGML_Q8_0:
            assert np.abs(a - ref).max() <= np.abs(ref).max() / 127.0 + 1e-6, n
        else:
            assert np.array_equal(a, ref.astype(np.float16).astype(np.float32)
                                  if gt == gw.GGML_F16 else ref), n
        Wq[n] = torch.from_numpy(a.astype(np.float64))
    return Wq


# --------------------------------------------------------------------------
# head fit (why the decode is varied)
# --------------------------------------------------------------------------
def fit_head(Zs, targets, V, margin, g):
    """Least-squares head [W | b] with Z·Wᵀ + b ≈ margin·onehot(target) for every row
    of every prompt; off-target logits ≈ 0."""
    Z = torch.cat([torch.cat([z, torch.ones(z.shape[0], 1)], 1) for z in Zs], 0)
    tgt = torch.cat([torch.tensor(t) for t in targets])
    Y = torch.zeros(Z.shape[0], V)
    Y[torch.arange(Z.shape[0]), tgt] = margin
    sol = torch.linalg.lstsq(Z, Y, driver="gelsd").solution  # (d+1, V), min-norm
    Wh = f16r(sol[:-1].T.contiguous())
    bh = sol[-1].to(torch.float32).to(torch.float64)
    return Wh, bh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=list(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--wav", default=None, help="input clip (default: <out>/../clip.wav)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--margin", type=float, default=8.0)
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    os.makedirs(a.out, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wav = a.wav or os.path.join(os.path.dirname(os.path.abspath(a.out)), "clip.wav")
    if not os.path.exists(wav):  # cut 2.0 s of samples/jfk.wav (0.30 .. 2.30 s)
        x, sr = read_wav16(os.path.join(root, "samples", "jfk.wav"))
        write_wav16(wav, np.round(x[4800:4800 + 32000] * 32768.0), sr)
    pcm, sr = read_wav16(wav)
    assert sr == 16000
    toks, scores, types = build_vocab(cfg)
    V = len(toks)
    tid = {t: i for i, t in enumerate(toks)}
    g = torch.Generator().manual_seed(a.seed)
    W = random_weights(cfg, V, g)

    L = fbank(pcm, n_mels=cfg["n_mels"])
    X = lfr(L, cfg["lfr_m"], cfg["lfr_n"])
    # am.mvn stand-in: shift = −mean, scale = 1/std of this clip (float32 values)
    W["frontend.cmvn.shift"] = torch.from_numpy(-X.mean(0)).to(torch.float32).to(torch.float64)
    W["frontend.cmvn.scale"] = torch.from_numpy(1.0 / (X.std(0) + 1e-3)).to(torch.float32).to(
        torch.float64)

    def frontend(Wx):
        return (torch.from_numpy(X) + Wx["frontend.cmvn.shift"]) * Wx["frontend.cmvn.scale"]

    # (lid row, textnorm row): auto / en hint without ITN, en hint with ITN
    prompts = {"auto_woitn": (0, 15), "en_woitn": (4, 15), "en_withitn": (4, 14)}
    T = X.shape[0] + 4
    # audio-frame targets: a varied chain of text pieces separated by blanks
    text_ids = [tid[p] for p in TEXT_PIECES[:16]]
    chain = []
    for j in range(X.shape[0]):
        chain.append(0 if j % 3 == 2 else text_ids[(j // 3 * 5 + j % 3) % len(text_ids)])
    targets = {}
    for name, (_, tn) in prompts.items():
        targets[name] = [tid["<|en|>"], tid["<|Speech|>"], tid["<|NEUTRAL|>"],
                         tid["<|withitn|>" if tn == 14 else "<|woitn|>"]] + chain
    if cfg["vocab"] is None:
        Zs = [encoder(frontend(W), W, cfg, lid, tn)["tp_norm_out"] for lid, tn in prompts.values()]
        W["ctc.head.weight"], W["ctc.head.bias"] = fit_head(
            Zs, [targets[n] for n in prompts], V, a.margin, g)

    variant = "sensevoice-%s-ref" % a.config
    presets = ["F32", "F16", "Q8_0"] if a.config == "tiny" else ["F16"]
    report = {}
    for preset in presets:
        path = os.path.join(a.out, "%s-%s.gguf" % (variant, preset))
        write_gguf(path, cfg, W, toks, scores, types, preset, a.config)
        Wq = read_back(path, cfg, W, preset, V)
        print("wrote %s (%d bytes), read back OK" % (path, os.path.getsize(path)))
        if cfg["vocab"] is not None:
            continue
        feats = frontend(Wq)
        for pname, (lid, tn) in prompts.items():
            hint = None if lid == 0 else "en"
            if True:
                out = encoder(feats, Wq, cfg, lid, tn)
                logits = out["tp_norm_out"] @ Wq["ctc.head.weight"].T + Wq["ctc.head.bias"]
                ids = greedy_ctc(logits)
                m = margins(logits)
                r = result(ids, toks, types, hint)
                r["min_margin"] = float(m.min())
                r["T_frames"], r["T_lfr"], r["T"] = L.shape[0], X.shape[0], logits.shape[0]
                key = "%s_%s" % (preset, pname)
                report[key] = r
                print("%-20s min margin %.3f  ids %d  lang %s  raw %r" % (
                    key, r["min_margin"], len(ids), r["detected_language"], r["raw_text"]))
                # float32 re-run: the error a float32 port may show, and its tokens
                torch.set_default_dtype(torch.float32)
                o32 = encoder(feats.float(), {n: t.float() for n, t in Wq.items()}, cfg, lid, tn)
                l32 = o32["tp_norm_out"] @ Wq["ctc.head.weight"].float().T + Wq["ctc.head.bias"].float()
                torch.set_default_dtype(torch.float64)
                r["f32_max_abs_logit_err"] = float((l32.double() - logits).abs().max())
                r["f32_same_ids"] = greedy_ctc(l32) == ids
                print("    float32 re-run: max |logit err| %.2e, same ids %s" % (
                    r["f32_max_abs_logit_err"], r["f32_same_ids"]))
                if preset != "F16":  # F16 math == F32 math (weights F16-rounded)
                    stem = os.path.join(a.out, "%s_%s" % (preset, pname))
                    if pname == "auto_woitn" and preset == "F32":
                        np.save(os.path.join(a.out, "fbank.npy"), L.astype(np.float32))
                        np.save(os.path.join(a.out, "features.npy"),
                                feats.numpy().astype(np.float32))
                    for k2 in ("embed_out", "encoders0_out", "encoders_out", "after_norm_out",
                               "tp_norm_out"):
                        np.save(stem + "_" + k2 + ".npy", out[k2].numpy().astype(np.float32))
                    np.save(stem + "_logits.npy", logits.numpy().astype(np.float32))
    if report:
        with open(os.path.join(a.out, "decode.json"), "w") as fh:
            json.dump(report, fh, indent=1, ensure_ascii=False)
            fh.write("\n")


if __name__ == "__main__":
    main()
