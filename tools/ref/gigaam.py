#!/usr/bin/python3
"""Independent float64 reference of the GigaAM-v3 family (docs/formats/gigaam.md).

Written from the family specification (GGUF schema §2-§3, HTK mel front end
§4, pre-encode convs + rotary Conformer §5, greedy CTC / one-layer-LSTM
RNN-T decode and result §6-§7), never from the C sources. Builds
random-weight models of the four variants (ctc, rnnt, e2e-ctc, e2e-rnnt) in
the published GGUF schema, reads every file back, and writes float64
goldens for a committed clip.

    /usr/bin/python3 tools/ref/gigaam.py --config tiny --out tests/data/gigaam/tiny
    /usr/bin/python3 tools/ref/gigaam.py --config real --out build-ref/gigaam

Weight design (why a random model decodes something varied, with large
margins): the encoder is random (conv0 bias centred on the clip's mean
log-mel); the CTC head is *fitted* by least squares on the float64 encoder
output of the clip (d_model + 1 > T_enc, so the fit is exact) to give a
chosen chain of pieces, repeats and blanks with a chosen margin. The RNN-T
head is *constructed*: the joint's hidden units split into (a) ± pairs
carrying a least-squares frame term A(t) (blank M, the frame's first piece
3M / 2M, its second 2M) and (b) one "suppress" unit per used piece, fed by
LSTM units that remember the last two emitted pieces (input gate open,
forget gate shut; a "prev" unit copies the "last" unit of the previous
step through Wh). So each frame emits 0, 1 or 2 planned pieces and then
blank, every joint decision with margin ≈ M. See tools/ref/README.md.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)

LN_EPS = 1e-5
ROPE_BASE = 5000.0  # hard-coded (docs/formats/gigaam.md §2.3, §5.2)
SR, N_FFT, WIN, HOP = 16000, 320, 320, 160
FRAME_MS = 40

# --------------------------------------------------------------------------
# configurations and variants
# --------------------------------------------------------------------------
CONFIGS = {
    # d_model 64 + 1 > T_enc = 50 of the 2 s clip: the head fits are exact.
    "tiny": dict(n_layers=2, d_model=64, n_heads=4, d_ff=128, conv_kernel=5, subs_kernel=5,
                 n_mels=64, pred_hidden=64, joint_hidden=64, spm_pieces={"e2e-ctc": 40, "e2e-rnnt": 56}, ridge=0.1,
                 # every head x dtype once, ~4 MB committed: CTC all three (charwise), RNN-T F32
                 # (charwise) + F16 / Q8_0 (SentencePiece), E2E-CTC F16
                 dtypes={"ctc": ["F32", "F16", "Q8_0"], "rnnt": ["F32"], "e2e-ctc": ["F16"],
                         "e2e-rnnt": ["F16", "Q8_0"]}),
    # the published dimensions (docs/formats/gigaam.md §1)
    "real": dict(n_layers=16, d_model=768, n_heads=16, d_ff=3072, conv_kernel=5, subs_kernel=5,
                 n_mels=64, pred_hidden=320, joint_hidden=320, spm_pieces={"e2e-ctc": 256, "e2e-rnnt": 1024},
                 ridge=0.01,
                 dtypes={v: ["F32", "F16", "Q8_0"] for v in ("ctc", "rnnt", "e2e-ctc", "e2e-rnnt")}),
}

VARIANTS = {
    "ctc": dict(slug="gigaam-v3-ctc", head="ctc", tok="char", name="GigaAM v3 CTC", seed=11),
    "rnnt": dict(slug="gigaam-v3-rnnt", head="rnnt", tok="char", name="GigaAM v3 RNN-T", seed=12),
    "e2e-ctc": dict(slug="gigaam-v3-e2e-ctc", head="ctc", tok="spm", name="GigaAM v3 E2E-CTC", seed=13),
    "e2e-rnnt": dict(slug="gigaam-v3-e2e-rnnt", head="rnnt", tok="spm", name="GigaAM v3 E2E-RNN-T",
                     seed=14),
}
VARIANT_ORDER = ["ctc", "rnnt", "e2e-ctc", "e2e-rnnt"]

# --------------------------------------------------------------------------
# vocabularies (docs/formats/gigaam.md §2.2)
# --------------------------------------------------------------------------
CHARS = [" "] + [chr(0x430 + i) for i in range(32)]  # " ", а..я (no ё)
SPM_BASE = ["<unk>", "<0xD0>", "<0xD1>", "<0x81>", "<0x91>", "▁", "▁Важно", "▁раз", "лича", "ть",
            "▁гла", "голы", "▁и", "▁до", "пол", "нения", ".", ",", "!", "?", "ж", "▁В", "а", "н", "о",
            "е", "▁не", "▁на", "▁что", "▁это", "ка", "ло", "ро", "ст", "ми", "▁по", "-", "▁Мо", "сква",
            "ли"]
SYLL = ["ба", "ва", "га", "да", "за", "ма", "па", "ра", "са", "та", "фа", "ха", "ча", "ша", "бо", "во",
        "го", "до", "зо", "мо", "по", "со", "то", "ни", "ти", "ди", "би", "ви", "ку", "лу", "му", "ру"]

# planned outputs (pieces); the CTC plans contain a doubled letter / a repeat
# across a blank, the RNN-T plans never repeat one of the last two pieces
PLAN_CHAR_CTC = "важно ванна глаголы"
PLAN_CHAR_RNNT = "важно различать глаголы"
# the charwise RNN-T clip also has one frame that hits the 10-symbol limit (" да да да ")
RNNT_CAP = {"rnnt": [" ", "д", "а"]}
PLAN_SPM_CTC = ["▁Важно", "▁раз", "лича", "ть", "▁гла", "голы", "▁и", "▁до", "пол", "нения", ".", "▁",
                "<0xD1>", "<0x91>", "ж", "."]
PLAN_SPM_RNNT = ["▁Важно", "▁раз", "лича", "ть", "▁гла", "голы", "▁и", "▁до", "пол", "нения", ",", "▁",
                 "<0xD0>", "<0x81>", "ж", "!"]


def build_vocab(cfg, variant):
    """tokens, scores, types (the last entry is <blank>)."""
    if VARIANTS[variant]["tok"] == "char":
        toks = CHARS + ["<blank>"]
        return toks, [0.0] * len(toks), [1] * (len(toks) - 1) + [3]
    n = cfg["spm_pieces"][variant]
    toks = list(SPM_BASE)
    i = 0
    while len(toks) < n:
        a, b = SYLL[i % len(SYLL)], SYLL[(i // len(SYLL)) % len(SYLL)]
        p = ("▁" if i % 3 == 0 else "") + a + (b if i >= len(SYLL) else "")
        if p not in toks:
            toks.append(p)
        i += 1
    toks = toks[:n]
    types = []
    for t in toks:
        types.append(2 if t == "<unk>" else 6 if (t.startswith("<0x") and len(t) == 6) else 1)
    scores = [0.0 if ty != 1 else -float(i) for i, ty in enumerate(types)]
    return toks + ["<blank>"], scores + [0.0], types + [3]


def plan_pieces(variant):
    v = VARIANTS[variant]
    if v["tok"] == "char":
        return list(PLAN_CHAR_CTC if v["head"] == "ctc" else PLAN_CHAR_RNNT)
    return list(PLAN_SPM_CTC if v["head"] == "ctc" else PLAN_SPM_RNNT)


# --------------------------------------------------------------------------
# wav
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


# --------------------------------------------------------------------------
# front end (docs/formats/gigaam.md §4)
# --------------------------------------------------------------------------
def htk_filterbank(n_mels=64, sr=SR, n_fft=N_FFT, fmin=0.0, fmax=8000.0):
    """torchaudio's HTK triangle bank, [n_mels, n_fft/2+1] (peak 1, no norm)."""
    nf = n_fft // 2 + 1
    fk = np.linspace(0.0, sr // 2, nf)  # k * 50 Hz

    def mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def hz(m):
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    fp = hz(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    fd = fp[1:] - fp[:-1]
    slopes = fp[None, :] - fk[:, None]  # [nf, n_mels+2]
    down = -slopes[:, :-2] / fd[:-1]
    up = slopes[:, 2:] / fd[1:]
    return np.maximum(0.0, np.minimum(down, up)).T


def periodic_hann(n=WIN):
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


def log_mel(pcm, fb, win):
    """[n_mels, T_mel] = ln(clamp(fb · |FFT_320(frame · win)|², 1e-9, 1e9)), float64."""
    n = len(pcm)
    if n < WIN:
        raise ValueError("fewer than 320 samples")
    T = (n - WIN) // HOP + 1
    idx = np.arange(T)[:, None] * HOP + np.arange(WIN)[None, :]
    spec = np.fft.rfft(pcm[idx] * win[None, :], n=N_FFT, axis=1)
    P = spec.real ** 2 + spec.imag ** 2  # [T, 161]
    M = fb @ P.T  # [n_mels, T]
    return np.log(np.minimum(np.maximum(M, 1e-9), 1e9))


# --------------------------------------------------------------------------
# encoder (docs/formats/gigaam.md §5)
# --------------------------------------------------------------------------
def layer_norm(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + LN_EPS) * w + b


def conv1d(x, w, b, stride, pad):
    """x [C_in, T], w (C_out, C_in, k): zero padding."""
    return torch.nn.functional.conv1d(x[None], w, b, stride=stride, padding=pad)[0]


def rotate(y, H):
    """NeoX rotate-half per head, θ = p · 5000^(−2i/hd), on the LN output (docs/formats/gigaam.md §5.2)."""
    T, d = y.shape
    hd = d // H
    half = hd // 2
    p = torch.arange(T, dtype=torch.float64)[:, None]
    inv = ROPE_BASE ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    th = p * inv[None, :]  # [T, half]
    c, s = torch.cos(th).to(y.dtype), torch.sin(th).to(y.dtype)
    yh = y.reshape(T, H, hd)
    a, bb = yh[:, :, :half], yh[:, :, half:]
    r = torch.cat([a * c[:, None, :] - bb * s[:, None, :], bb * c[:, None, :] + a * s[:, None, :]], -1)
    return r.reshape(T, d)


def attention(y, W, p, H):
    T, d = y.shape
    hd = d // H
    r = rotate(y, H)
    q = r @ W(p + "attn.linear_q.weight").T + W(p + "attn.linear_q.bias")
    k = r @ W(p + "attn.linear_k.weight").T + W(p + "attn.linear_k.bias")
    v = y @ W(p + "attn.linear_v.weight").T + W(p + "attn.linear_v.bias")
    q, k, v = (z.reshape(T, H, hd).transpose(0, 1) for z in (q, k, v))
    a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd), dim=-1)
    o = (a @ v).transpose(0, 1).reshape(T, d)
    return o @ W(p + "attn.linear_out.weight").T + W(p + "attn.linear_out.bias")


def conv_module(y, W, p, k):
    d = y.shape[1]
    z = y @ W(p + "conv.pointwise1.weight")[:, :, 0].T + W(p + "conv.pointwise1.bias")
    g = z[:, :d] * torch.sigmoid(z[:, d:])
    u = torch.nn.functional.conv1d(g.T[None], W(p + "conv.depthwise.weight"), W(p + "conv.depthwise.bias"),
                                   padding=(k - 1) // 2, groups=d)[0].T
    u = layer_norm(u, W(p + "conv.ln.weight"), W(p + "conv.ln.bias"))
    u = u * torch.sigmoid(u)
    return u @ W(p + "conv.pointwise2.weight")[:, :, 0].T + W(p + "conv.pointwise2.bias")


def ffn(y, W, p):
    h = y @ W(p + "linear1.weight").T + W(p + "linear1.bias")
    h = h * torch.sigmoid(h)
    return h @ W(p + "linear2.weight").T + W(p + "linear2.bias")


def block(x, W, i, cfg):
    p = "enc.blocks.%d." % i

    def ln(z, n):
        return layer_norm(z, W(p + n + ".weight"), W(p + n + ".bias"))
    x = x + 0.5 * ffn(ln(x, "norm_ff1"), W, p + "ff1.")
    x = x + attention(ln(x, "norm_attn"), W, p, cfg["n_heads"])
    x = x + conv_module(ln(x, "norm_conv"), W, p, cfg["conv_kernel"])
    x = x + 0.5 * ffn(ln(x, "norm_ff2"), W, p + "ff2.")
    return ln(x, "norm_out")


def subsample(mel, W, cfg):
    pad = (cfg["subs_kernel"] - 1) // 2
    y1 = torch.relu(conv1d(mel, W("enc.pre_encode.conv.0.weight"), W("enc.pre_encode.conv.0.bias"), 2, pad))
    y2 = torch.relu(conv1d(y1, W("enc.pre_encode.conv.2.weight"), W("enc.pre_encode.conv.2.bias"), 2, pad))
    return y2.T.contiguous()


def encoder(mel, W, cfg):
    """mel [n_mels, T_mel] (torch float64) -> dict of intermediates."""
    x = subsample(mel, W, cfg)
    out = {"subsample": x}
    for i in range(cfg["n_layers"]):
        x = block(x, W, i, cfg)
        if i == 0:
            out["block0"] = x
    out["enc"] = x
    return out


# --------------------------------------------------------------------------
# decoding (docs/formats/gigaam.md §6)
# --------------------------------------------------------------------------
def argmax_first(z):
    return int(torch.argmax(z).item())  # torch.argmax: first maximum on ties


def margin_of(z):
    top = torch.topk(z, 2).values
    return float(top[0] - top[1])


def ctc_decode(enc, W, C):
    z = enc @ W("head.ctc.weight")[:, :, 0].T + W("head.ctc.bias")
    lp = torch.log_softmax(z, dim=1)
    blank = C - 1
    prev, out = -1, []
    for t in range(z.shape[0]):
        a = argmax_first(lp[t])
        if a == prev:
            continue
        prev = a
        if a == blank:
            continue
        out.append((a, t))
    margins = [margin_of(z[t]) for t in range(z.shape[0])]
    return dict(logits=z, emitted=out, margins=margins)


def lstm_step(x, h, c, W, Hp):
    gates = W("pred.lstm.0.Wx") @ x + W("pred.lstm.0.Wh") @ h + W("pred.lstm.0.bias")
    i = torch.sigmoid(gates[0:Hp])
    f = torch.sigmoid(gates[Hp:2 * Hp])
    g = torch.tanh(gates[2 * Hp:3 * Hp])
    o = torch.sigmoid(gates[3 * Hp:4 * Hp])
    c2 = f * c + i * g
    return o * torch.tanh(c2), c2


def rnnt_decode(enc, W, C, Hp, max_symbols=10):
    """docs/formats/gigaam.md §6.1 greedy; returns emitted (id, frame), every joint evaluation."""
    blank = C - 1
    e = enc @ W("joint.enc.weight").T + W("joint.enc.bias")  # [T, Hj]
    Wp, bp = W("joint.pred.weight"), W("joint.pred.bias")
    Wo, bo = W("joint.out.weight"), W("joint.out.bias")
    emb = W("pred.embed.weight")
    zero = torch.zeros(Hp)
    state = (zero, zero)
    pending = lstm_step(zero, zero, zero, W, Hp)
    g = pending[0]
    preds = [g]
    steps = []  # (frame, argmax, logits)
    out = []

    def joint(t, g):
        z = Wo @ torch.relu(e[t] + Wp @ g + bp) + bo
        k = argmax_first(z)
        steps.append((t, k, z))
        return k

    t = 0
    while t < enc.shape[0]:
        k = joint(t, g)
        if k == blank:
            t += 1
            continue
        out.append((k, t))
        state = pending
        pending = lstm_step(emb[k], state[0], state[1], W, Hp)
        g = pending[0]
        preds.append(g)
        n = 1
        while n < max_symbols:
            k = joint(t, g)
            if k == blank:
                break
            out.append((k, t))
            state = pending
            n += 1
            pending = lstm_step(emb[k], state[0], state[1], W, Hp)
            g = pending[0]
            preds.append(g)
        t += 1
    return dict(emitted=out, enc_proj=e, steps=steps, preds=torch.stack(preds),
                logits=torch.stack([s[2] for s in steps]),
                margins=[margin_of(s[2]) for s in steps])


def sp_piece_bytes(p):
    if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
        return bytes([int(p[3:5], 16)])
    return p.replace("▁", " ").encode("utf-8")


def result(emitted, toks, tok_kind):
    ids = [k for k, _ in emitted]
    if tok_kind == "char":
        raw = "".join(toks[k] for k in ids)
    else:
        raw = b"".join(sp_piece_bytes(toks[k]) for k in ids).decode("utf-8", errors="replace")
    text = raw[1:] if raw.startswith(" ") else raw
    return dict(ids=ids, frames=[t for _, t in emitted], pieces=[toks[k] for k in ids], raw_text=raw,
                text=text, tokens=[dict(id=k, text=toks[k], t0_ms=FRAME_MS * t, t1_ms=FRAME_MS * t + FRAME_MS)
                                   for k, t in emitted])


# --------------------------------------------------------------------------
# tensors, dtypes (docs/formats/gigaam.md §3; docs/formats/gguf.md §9.5 buckets)
# --------------------------------------------------------------------------
BLOCK_SUFFIXES = ["norm_ff1.weight", "norm_ff1.bias", "ff1.linear1.weight", "ff1.linear1.bias",
                  "ff1.linear2.weight", "ff1.linear2.bias", "norm_conv.weight", "norm_conv.bias",
                  "conv.pointwise1.weight", "conv.pointwise1.bias", "conv.depthwise.weight",
                  "conv.depthwise.bias", "conv.ln.weight", "conv.ln.bias", "conv.pointwise2.weight",
                  "conv.pointwise2.bias", "norm_attn.weight", "norm_attn.bias", "attn.linear_q.weight",
                  "attn.linear_q.bias", "attn.linear_k.weight", "attn.linear_k.bias", "attn.linear_v.weight",
                  "attn.linear_v.bias", "attn.linear_out.weight", "attn.linear_out.bias", "norm_ff2.weight",
                  "norm_ff2.bias", "ff2.linear1.weight", "ff2.linear1.bias", "ff2.linear2.weight",
                  "ff2.linear2.bias", "norm_out.weight", "norm_out.bias"]
RNNT_HEAD = ["pred.embed.weight", "pred.lstm.0.Wx", "pred.lstm.0.Wh", "pred.lstm.0.bias", "joint.enc.weight",
             "joint.enc.bias", "joint.pred.weight", "joint.pred.bias", "joint.out.weight", "joint.out.bias"]
CTC_HEAD = ["head.ctc.weight", "head.ctc.bias"]


def tensor_order(cfg, head):
    names = ["frontend.mel_filterbank", "frontend.window", "enc.pre_encode.conv.0.weight",
             "enc.pre_encode.conv.0.bias", "enc.pre_encode.conv.2.weight", "enc.pre_encode.conv.2.bias"]
    for i in range(cfg["n_layers"]):
        names += ["enc.blocks.%d.%s" % (i, s) for s in BLOCK_SUFFIXES]
    return names + (RNNT_HEAD if head == "rnnt" else CTC_HEAD)


def tensor_shapes(cfg, C):
    d, F, k, M, Hp, Hj = (cfg["d_model"], cfg["d_ff"], cfg["conv_kernel"], cfg["n_mels"], cfg["pred_hidden"],
                          cfg["joint_hidden"])
    ks = cfg["subs_kernel"]
    s = {"frontend.mel_filterbank": (M, N_FFT // 2 + 1), "frontend.window": (WIN,),
         "enc.pre_encode.conv.0.weight": (d, M, ks), "enc.pre_encode.conv.0.bias": (d,),
         "enc.pre_encode.conv.2.weight": (d, d, ks), "enc.pre_encode.conv.2.bias": (d,),
         "pred.embed.weight": (C, Hp), "pred.lstm.0.Wx": (4 * Hp, Hp), "pred.lstm.0.Wh": (4 * Hp, Hp),
         "pred.lstm.0.bias": (4 * Hp,), "joint.enc.weight": (Hj, d), "joint.enc.bias": (Hj,),
         "joint.pred.weight": (Hj, Hp), "joint.pred.bias": (Hj,), "joint.out.weight": (C, Hj),
         "joint.out.bias": (C,), "head.ctc.weight": (C, d, 1), "head.ctc.bias": (C,)}
    per = {"ff1.linear1.weight": (F, d), "ff1.linear1.bias": (F,), "ff1.linear2.weight": (d, F),
           "ff1.linear2.bias": (d,), "conv.pointwise1.weight": (2 * d, d, 1), "conv.pointwise1.bias": (2 * d,),
           "conv.depthwise.weight": (d, 1, k), "conv.depthwise.bias": (d,),
           "conv.pointwise2.weight": (d, d, 1), "conv.pointwise2.bias": (d,)}
    for i in range(cfg["n_layers"]):
        for suf in BLOCK_SUFFIXES:
            n = "enc.blocks.%d.%s" % (i, suf)
            if suf in per:
                s[n] = per[suf]
            elif suf.startswith("ff2."):
                s[n] = per["ff1." + suf[4:]]
            elif suf.startswith("attn."):
                s[n] = (d, d) if suf.endswith(".weight") else (d,)
            else:
                s[n] = (d,)
    return s


def bucket(name):
    """The quantizer's bucket (docs/formats/gguf.md §9.5) for the names of this family."""
    if (name.endswith(".bias") or ("norm_" in name and name.endswith(".weight"))
            or name in ("frontend.mel_filterbank", "frontend.window")):
        return "norm"
    if name.endswith((".conv.pointwise1.weight", ".conv.pointwise2.weight")) and "enc.blocks." in name:
        return "convpw"
    if ".conv." in name and name.endswith(".weight"):
        return "conv"
    return "linear"


def dtype_for(name, shape, preset):
    b = bucket(name)
    if preset == "F32" or b in ("norm", "conv"):
        return gw.GGML_F32
    if preset == "F16" or b == "convpw":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16  # Q8_0 preset, fallback F16


FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


# --------------------------------------------------------------------------
# random encoder
# --------------------------------------------------------------------------
def random_encoder(cfg, g, mel_mean):
    """float32 torch tensors (values as the F32 file holds them)."""
    d, F, M = cfg["d_model"], cfg["d_ff"], cfg["n_mels"]
    k, ks = cfg["conv_kernel"], cfg["subs_kernel"]
    W = {}

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std

    W["frontend.mel_filterbank"] = torch.from_numpy(htk_filterbank(M)).float()
    W["frontend.window"] = torch.from_numpy(periodic_hann()).float()
    w0 = rn(d, M, ks, std=1.5 / math.sqrt(M * ks))
    W["enc.pre_encode.conv.0.weight"] = w0
    # centre conv0 on the clip's mean log-mel so about half of its units fire per frame
    W["enc.pre_encode.conv.0.bias"] = (-(w0.double().sum(2) @ torch.from_numpy(mel_mean)).float()
                                       + rn(d, std=0.1))
    W["enc.pre_encode.conv.2.weight"] = rn(d, d, ks, std=2.0 / math.sqrt(d * ks))
    W["enc.pre_encode.conv.2.bias"] = rn(d, std=0.3)
    for i in range(cfg["n_layers"]):
        p = "enc.blocks.%d." % i
        for n in ("norm_ff1", "norm_conv", "norm_attn", "norm_ff2", "norm_out", "conv.ln"):
            W[p + n + ".weight"] = 1.0 + rn(d, std=0.1)
            W[p + n + ".bias"] = rn(d, std=0.1)
        for f in ("ff1.", "ff2."):
            W[p + f + "linear1.weight"] = rn(F, d, std=1.0 / math.sqrt(d))
            W[p + f + "linear1.bias"] = rn(F, std=0.1)
            W[p + f + "linear2.weight"] = rn(d, F, std=1.0 / math.sqrt(F))
            W[p + f + "linear2.bias"] = rn(d, std=0.1)
        W[p + "conv.pointwise1.weight"] = rn(2 * d, d, 1, std=1.0 / math.sqrt(d))
        W[p + "conv.pointwise1.bias"] = rn(2 * d, std=0.1)
        W[p + "conv.depthwise.weight"] = rn(d, 1, k, std=0.5)
        W[p + "conv.depthwise.bias"] = rn(d, std=0.1)
        W[p + "conv.pointwise2.weight"] = rn(d, d, 1, std=1.0 / math.sqrt(d))
        W[p + "conv.pointwise2.bias"] = rn(d, std=0.1)
        for n, std in (("q", 2.0), ("k", 2.0), ("v", 1.0), ("out", 1.0)):
            W[p + "attn.linear_%s.weight" % n] = rn(d, d, std=std / math.sqrt(d))
            W[p + "attn.linear_%s.bias" % n] = rn(d, std=0.1)
    return W


def getter(W):
    return lambda n: W[n].to(torch.float64)


# --------------------------------------------------------------------------
# heads (the design of the module docstring)
# --------------------------------------------------------------------------
def ctc_chain(pieces, tid, T, blank):
    """Per-frame targets: 2 leading blanks, runs of 1-3 frames, blanks between
    some pieces and always between equal neighbours; blank tail."""
    tg = [blank, blank]
    runs = [1, 2, 1, 3, 1]
    for i, p in enumerate(pieces):
        if tg[-1] == tid[p]:
            tg.append(blank)
        tg += [tid[p]] * runs[i % len(runs)]
        if i % 3 == 2:
            tg.append(blank)
    assert len(tg) <= T, (len(tg), T)
    return tg + [blank] * (T - len(tg))


def fit_ctc_head(enc, targets, C, margin, g):
    Z = torch.cat([enc, torch.ones(enc.shape[0], 1)], 1)
    Y = torch.zeros(enc.shape[0], C)
    Y[torch.arange(enc.shape[0]), torch.tensor(targets)] = margin
    sol = torch.linalg.lstsq(Z, Y, driver="gelsd").solution  # (d+1, C), min norm
    noise = torch.randn(C, enc.shape[1], generator=g, dtype=torch.float32).double() * 0.002
    return (sol[:-1].T.contiguous() + noise).float()[:, :, None], sol[-1].float()


def rnnt_plan(pieces, tid, T, cap=None, cap_frame=40):
    """Per frame a list of 0, 1 or 2 ids; no id equals either of the two ids
    emitted before it. `cap` (3 pieces) at `cap_frame`: levels 4M / 3M / 2M
    with a memory of two make the frame cycle a b c a b c ... until the
    10-symbol limit (docs/formats/gigaam.md §6.1) moves on. Returns the plan
    and the expected emission [(id, frame)]."""
    pattern = [0, 1, 2, 0, 1, 0, 1, 2, 0, 0, 1, 1]
    plan, j = [], 0
    for t in range(T):
        n = min(pattern[t % len(pattern)], len(pieces) - j)
        plan.append([tid[p] for p in pieces[j:j + n]])
        j += n
    assert j == len(pieces), "plan does not fit"
    if cap is not None:
        assert not plan[cap_frame], "cap frame not free"
        plan[cap_frame] = [tid[p] for p in cap]
    expect = []
    for t, f in enumerate(plan):
        seq = f if len(f) <= 2 else [f[i % 3] for i in range(10)]
        for n, k in enumerate(seq):
            if n < 3:
                assert k not in [e for e, _ in expect[-2:]], "plan repeats one of the last two ids"
            expect.append((k, t))
    return plan, expect


def build_rnnt_head(enc, plan, C, cfg, margin, g, L=8.0, ridge=0.0):
    """Constructed predictor + joint (float32 tensors)."""
    Hp, Hj, d = cfg["pred_hidden"], cfg["joint_hidden"], enc.shape[1]
    T = enc.shape[0]
    blank = C - 1
    used = sorted({k for f in plan for k in f})
    nu = len(used)
    M, Q = margin, 3.0 * margin
    assert 2 * nu <= Hp and 3 * nu <= Hj, "hidden too small for %d used pieces" % nu

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float32).double() * std

    # --- predictor: unit u = last-emitted flag of used[u], nu + u = the one before
    emb = rn(C, Hp, std=1.0)
    Wx = rn(4 * Hp, Hp, std=0.01)
    Wh = rn(4 * Hp, Hp, std=0.01)
    bias = rn(4 * Hp, std=0.1)
    D = torch.linalg.pinv(emb[used])  # (Hp, nu): emb[used] @ D = I
    h1 = math.tanh(1.0)  # ≈ the output of a saturated unit: σ(L)·tanh(tanh(L))
    for u in range(2 * nu):
        bias[u] = L  # input gate open
        bias[Hp + u] = -L  # forget gate shut
        bias[2 * Hp + u] = 0.0
        bias[3 * Hp + u] = L  # output gate open
        Wx[2 * Hp + u] = 0.0
        Wh[2 * Hp + u] = 0.0
    # cell input ±L/2 (last) / ±L (prev): an off unit sits at h ≈ −tanh(1), far from the
    # suppressor's threshold, so F16 / Q8_0 leaks through Wx·embed cannot switch it on
    for j in range(nu):
        Wx[2 * Hp + j] = L * D[:, j]
        bias[2 * Hp + j] = -L / 2
        Wh[2 * Hp + nu + j, j] = L / h1
    # --- joint: units [0, 2r) ± pairs of the frame term, [2r, 2r + nu) suppressors
    Y = torch.zeros(T, C)
    for t, f in enumerate(plan):
        for n, k in enumerate(f):
            Y[t, k] = (len(f) + 1 - n) * M  # first 3M/2M, second 2M
    Z = torch.cat([enc, torch.ones(T, 1)], 1)
    # ridge: a little residual buys small weights (Q8_0 joint.enc / joint.out keep the margins)
    sol = torch.linalg.solve(Z.T @ Z + ridge * torch.eye(Z.shape[1]), Z.T @ Y)  # (d+1, C)
    U, S, Vh = torch.linalg.svd(sol, full_matrices=False)
    r = nu
    assert float(S[r:].abs().max()) < 1e-6 * float(S[0]) if S.numel() > r else True
    Pm = U[:, :r] * S[:r].sqrt()  # (d+1, r)
    Qm = Vh[:r].T * S[:r].sqrt()  # (C, r)
    Wenc = rn(Hj, d, std=0.02 / math.sqrt(d))
    benc = torch.full((Hj,), -1.0)  # idle units stay off
    Wpred = rn(Hj, Hp, std=0.01)
    bpred = torch.zeros(Hj)
    Wout = rn(C, Hj, std=0.01)
    bout = torch.zeros(C)
    bout[blank] = M
    for k in range(r):
        for s, u in ((1.0, 2 * k), (-1.0, 2 * k + 1)):
            Wenc[u] = s * Pm[:d, k]
            benc[u] = s * Pm[d, k]
            Wpred[u] = 0.0
            Wout[:, u] = s * Qm[:, k]
    for j, k in enumerate(used):
        u = 2 * r + j
        Wenc[u] = 0.0
        benc[u] = 0.0
        Wpred[u] = 0.0
        # relu(Q/a·(h_last + h_prev) + Q): Q when one of them is on (+a), ≤ 0 when both are off
        # (−a) or at the start (h_prev = 0); the gain sits here so joint.out rows stay fine
        Wpred[u, j] = Q / h1
        Wpred[u, nu + j] = Q / h1
        bpred[u] = Q
        Wout[:, u] = 0.0
        Wout[k, u] = -1.0
    f32 = {"pred.embed.weight": emb, "pred.lstm.0.Wx": Wx, "pred.lstm.0.Wh": Wh, "pred.lstm.0.bias": bias,
           "joint.enc.weight": Wenc, "joint.enc.bias": benc, "joint.pred.weight": Wpred,
           "joint.pred.bias": bpred, "joint.out.weight": Wout, "joint.out.bias": bout}
    return {n: t.float() for n, t in f32.items()}


# --------------------------------------------------------------------------
# GGUF
# --------------------------------------------------------------------------
def write_gguf(path, cfg, variant, W, vocab, preset, config_name):
    v = VARIANTS[variant]
    toks, scores, types = vocab
    C = len(toks)
    d = cfg["d_model"]
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "gigaam")
    w.add_string("general.name", "%s (random-weight reference, %s)" % (v["name"], config_name))
    w.add_string("general.basename", "gigaam-v3")
    w.add_string("general.version", "v3")
    w.add_string("general.size_label", cfg.get("size_label", config_name))
    w.add_string("general.author", "transcribe tools/ref/gigaam.py")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "mit")
    w.add_string("general.license.name", "MIT License")
    w.add_string("general.license.link", "https://opensource.org/license/mit")
    w.add_string("general.repo_url", "https://example.invalid/transcribe/tools/ref/gigaam.py")
    if preset == "F32":
        w.add_uint32("general.file_type", 0)
    w.add_array("general.languages", ["ru"])
    w.add_string("stt.variant", v["slug"])
    w.add_string("stt.gigaam.head_kind", v["head"])
    w.add_string("tokenizer.ggml.model", "char" if v["tok"] == "char" else "bpe")
    if v["tok"] == "spm":
        w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.blank_token_id", C - 1)
    e = "stt.gigaam.encoder."
    for key, val in (("n_layers", cfg["n_layers"]), ("d_model", d), ("n_heads", cfg["n_heads"]),
                     ("d_ff", cfg["d_ff"]), ("conv_kernel", cfg["conv_kernel"]), ("subsampling_factor", 4),
                     ("subs_kernel_size", cfg["subs_kernel"]), ("pos_emb_max_len", 5000),
                     ("feat_in", cfg["n_mels"])):
        w.add_uint32(e + key, val)
    w.add_string(e + "self_attention_model", "rotary")
    w.add_string(e + "conv_norm_type", "layer_norm")
    if v["head"] == "rnnt":
        w.add_uint32("stt.gigaam.predictor.hidden", cfg["pred_hidden"])
        w.add_uint32("stt.gigaam.predictor.n_layers", 1)
        w.add_uint32("stt.gigaam.predictor.vocab", C)
        w.add_uint32("stt.gigaam.joint.hidden", cfg["joint_hidden"])
        w.add_uint32("stt.gigaam.joint.num_classes", C)
        w.add_string("stt.gigaam.joint.activation", "relu")
    else:
        w.add_uint32("stt.gigaam.head.feat_in", d)
        w.add_uint32("stt.gigaam.head.num_classes", C)
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "sample_rate", SR)
    w.add_uint32(f + "n_fft", N_FFT)
    w.add_uint32(f + "win_length", WIN)
    w.add_uint32(f + "hop_length", HOP)
    w.add_string(f + "window", "hann_periodic")
    w.add_string(f + "normalize", "none")
    for key, val in (("dither", 0.0), ("pre_emphasis", 0.0), ("f_min", 0.0), ("f_max", 8000.0)):
        w.add_float32(f + key, val)
    w.add_bool(f + "center", False)
    w.add_string(f + "mel_norm", "htk")
    w.add_float32(f + "log_clamp_min", 1e-9)
    w.add_float32(f + "log_clamp_max", 1e9)
    if preset != "F32":
        w.add_uint32("general.file_type", FILE_TYPE[preset])  # derived files: last scalar
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.scores", scores, gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    shapes = tensor_shapes(cfg, C)
    for n in tensor_order(cfg, v["head"]):
        assert tuple(W[n].shape) == shapes[n], (n, W[n].shape, shapes[n])
        w.add_tensor_lazy(n, shapes[n], dtype_for(n, shapes[n], preset),
                          (lambda n=n: W[n].numpy().astype(np.float32)))
    return w.write_stream(path)


def read_back(path, cfg, variant, W, preset, vocab):
    v = VARIANTS[variant]
    kv, tensors = gw.read_gguf(path)
    names = tensor_order(cfg, v["head"])
    assert list(tensors) == names, "tensor order"
    assert len(names) == 6 + 34 * cfg["n_layers"] + (10 if v["head"] == "rnnt" else 2)
    assert kv["general.architecture"] == (gw.STRING, "gigaam")
    assert kv["stt.gigaam.head_kind"] == (gw.STRING, v["head"])
    assert kv["stt.gigaam.encoder.d_model"] == (gw.UINT32, cfg["d_model"])
    assert kv["stt.frontend.center"] == (gw.BOOL, False)
    assert kv["stt.frontend.log_clamp_min"][0] == gw.FLOAT32
    assert kv["tokenizer.ggml.tokens"][1][1] == vocab[0]
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    shapes = tensor_shapes(cfg, len(vocab[0]))
    Wq = {}
    for n in names:
        gt, ne, a = tensors[n]
        ref = W[n].numpy().astype(np.float32)
        assert gt == dtype_for(n, shapes[n], preset), (n, gt)
        assert ne == list(reversed(shapes[n])), (n, ne)
        if gt == gw.GGML_Q8_0:
            err = np.abs(a - ref).reshape(-1, 32).max(1)
            assert (err <= np.abs(ref).reshape(-1, 32).max(1) / 127.0 * 0.6 + 4e-6).all(), n
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, ref.astype(np.float16).astype(np.float32)), n
        else:
            assert np.array_equal(a, ref), n
        Wq[n] = torch.from_numpy(a)
    return Wq


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def npsave(path, t):
    np.save(path, (t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)).astype(np.float32))


def run_variant(a, cfg, variant, pcm, mel64, report):
    v = VARIANTS[variant]
    vocab = build_vocab(cfg, variant)
    toks = vocab[0]
    C = len(toks)
    tid = {t: i for i, t in enumerate(toks)}
    g = torch.Generator().manual_seed(a.seed * 1000 + v["seed"])
    W = random_encoder(cfg, g, mel64.mean(1))
    fb = W["frontend.mel_filterbank"].double().numpy()
    win = W["frontend.window"].double().numpy()
    mel = torch.from_numpy(log_mel(pcm, fb, win))
    enc = encoder(mel, getter(W), cfg)["enc"]
    T = enc.shape[0]
    pieces = plan_pieces(variant)
    if v["head"] == "ctc":
        targets = ctc_chain(pieces, tid, T, C - 1)
        W["head.ctc.weight"], W["head.ctc.bias"] = fit_ctc_head(enc, targets, C, a.margin, g)
    else:
        plan, expect = rnnt_plan(pieces, tid, T, RNNT_CAP.get(variant))
        W.update(build_rnnt_head(enc, plan, C, cfg, a.rnnt_margin, g, ridge=a.ridge))
    expect_ids = [tid[p] for p in pieces] if v["head"] == "ctc" else [k for k, _ in expect]
    short = variant
    for preset in cfg["dtypes"][variant] if a.dtypes is None else a.dtypes:
        path = os.path.join(a.out, "%s-%s-ref-%s.gguf" % (v["slug"], a.config, preset))
        size = write_gguf(path, cfg, variant, W, vocab, preset, a.config)
        Wq = read_back(path, cfg, variant, W, preset, vocab)
        print("wrote %s (%d bytes), read back OK" % (path, size))
        Wf = getter(Wq)
        mel_q = torch.from_numpy(log_mel(pcm, Wq["frontend.mel_filterbank"].double().numpy(),
                                         Wq["frontend.window"].double().numpy()))
        out = encoder(mel_q, Wf, cfg)
        if v["head"] == "ctc":
            dec = ctc_decode(out["enc"], Wf, C)
        else:
            dec = rnnt_decode(out["enc"], Wf, C, cfg["pred_hidden"])
        r = result(dec["emitted"], toks, v["tok"])
        r["min_margin"] = min(dec["margins"])
        r["T_mel"], r["T_enc"] = int(mel_q.shape[1]), int(T)
        r["n_joint_steps"] = len(dec["margins"]) if v["head"] == "rnnt" else None
        r["as_planned"] = r["ids"] == expect_ids and (v["head"] == "ctc" or dec["emitted"] == expect)
        key = "%s_%s" % (short, preset)
        report[key] = r
        print("%-14s min margin %.3f  %d ids  planned %s  text %r" % (key, r["min_margin"], len(r["ids"]),
                                                                    r["as_planned"], r["text"]))
        if preset == "F32":  # float32 re-run: the error a float32 port may show
            torch.set_default_dtype(torch.float32)
            o32 = encoder(mel_q.float(), lambda n: Wq[n].float(), cfg)
            torch.set_default_dtype(torch.float64)
            r["f32_max_abs_err"] = {k: float((o32[k].double() - out[k]).abs().max()) for k in o32}
            print("    float32 re-run, max |err|: %s" % ", ".join(
                "%s %.1e" % kv for kv in r["f32_max_abs_err"].items()))
        if not a.no_goldens:
            stem = os.path.join(a.out, key)
            npsave(stem + "_subsample.npy", out["subsample"])
            npsave(stem + "_block0.npy", out["block0"])
            npsave(stem + "_enc.npy", out["enc"])
            npsave(stem + "_logits.npy", dec["logits"])
            if v["head"] == "rnnt":
                npsave(stem + "_enc_proj.npy", dec["enc_proj"])
                npsave(stem + "_pred.npy", dec["preds"])
                np.save(stem + "_steps.npy", np.array([[t, k] for t, k, _ in dec["steps"]], dtype=np.int32))
            np.save(stem + "_emitted.npy", np.array(dec["emitted"], dtype=np.int32).reshape(-1, 2))
    return C


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=list(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--wav", default=None, help="input clip (default: <out>/../clip.wav)")
    ap.add_argument("--variants", default=",".join(VARIANT_ORDER))
    ap.add_argument("--dtypes", default=None, help="comma list overriding the config's F32,F16,Q8_0 choice")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--margin", type=float, default=8.0)
    ap.add_argument("--rnnt-margin", type=float, default=10.0)
    ap.add_argument("--ridge", type=float, default=None, help="RNN-T frame-term fit (default: the config's)")
    ap.add_argument("--no-goldens", action="store_true")
    a = ap.parse_args()
    a.dtypes = a.dtypes.split(",") if a.dtypes else None
    cfg = CONFIGS[a.config]
    a.ridge = cfg["ridge"] if a.ridge is None else a.ridge
    os.makedirs(a.out, exist_ok=True)
    wav = a.wav or os.path.join(os.path.dirname(os.path.abspath(a.out)), "clip.wav")
    if not os.path.exists(wav):  # cut 2.0 s of samples/jfk.wav (0.30 .. 2.30 s)
        x, sr = read_wav16(os.path.join(REPO, "samples", "jfk.wav"))
        write_wav16(wav, np.round(x[4800:4800 + 32000] * 32768.0), sr)
    pcm, sr = read_wav16(wav)
    assert sr == SR
    fb0 = htk_filterbank(cfg["n_mels"]).astype(np.float32).astype(np.float64)
    win0 = periodic_hann().astype(np.float32).astype(np.float64)
    mel64 = log_mel(pcm, fb0, win0)
    if not a.no_goldens:
        npsave(os.path.join(a.out, "mel.npy"), mel64)
    report = {}
    for variant in a.variants.split(","):
        run_variant(a, cfg, variant, pcm, mel64, report)
    with open(os.path.join(a.out, "decode.json"), "w") as fh:  # one line per variant_dtype
        fh.write("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(r, ensure_ascii=False))
                                     for k, r in report.items()) + "\n}\n")
    bad = [k for k, r in report.items() if not r["as_planned"]]
    if bad:
        print("NOT AS PLANNED:", bad)
        sys.exit(1)


if __name__ == "__main__":
    main()
