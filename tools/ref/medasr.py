#!/usr/bin/python3
"""Independent float64 reference of the MedASR family (docs/formats/medasr.md).

Written from the family specification (GGUF schema §2-§3, un-padded Kaldi-mel
front end with the clamped log §4, linear/conv subsampler + RoPE Conformer
with scaled residuals §5, CTC head + greedy collapse + result §6-§7), never
from the C sources. Builds random-weight models in the published GGUF
schema, reads every file back, and writes float64 goldens for a committed
clip.

    /usr/bin/python3 tools/ref/medasr.py --config tiny --out tests/data/medasr/tiny
    /usr/bin/python3 tools/ref/medasr.py --config real --out build-ref/medasr --no-goldens

Weight design: random encoder (dense_0 bias centred on the clip's mean
log-mel; BatchNorm statistics random, fused at use as §3.2 says); the CTC
head is fitted by least squares on the float64 encoder output of the clip
(hidden + 1 > T_enc = 47, so the fit is exact) towards a chosen frame chain
that exercises every §6.2 rule: runs that collapse, a blank that resets the
repeat memory, `<s>` / `</s>` / `<unk>` frames that are dropped but still
update the repeat memory, byte-fallback pieces; margin 8.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
from gigaam import argmax_first, margin_of, npsave, read_wav16, write_wav16  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)

SR, N_FFT, WIN, HOP = 16000, 512, 400, 160
BN_EPS = 1e-5
FRAME_MS = 40
SPECIALS = (1, 2, 3)  # <s>, </s>, <unk>: dropped by the decoder (hard-coded ids)

CONFIGS = {
    # hidden 64 + 1 > T_enc = 47 of the 2 s clip: the head fit is exact
    "tiny": dict(n_layers=2, hidden=64, n_heads=4, intermediate=128, conv_kernel=32, sub_kernel=5,
                 sub_channels=32, n_mels=128, vocab=64, size_label="0.2M", dtypes=["F32", "F16", "Q8_0"]),
    # the published dimensions (docs/formats/medasr.md §1)
    "real": dict(n_layers=17, hidden=512, n_heads=8, intermediate=2048, conv_kernel=32, sub_kernel=5,
                 sub_channels=256, n_mels=128, vocab=512, size_label="105M", dtypes=["F32", "F16", "Q8_0"]),
}

PIECES = ["<epsilon>", "<s>", "</s>", "<unk>", "▁And", "▁so", "▁my", "▁fel", "low", "▁a", "mer", "ic",
          "ans", ",", "▁ask", "▁not", "▁what", "▁your", "▁country", "▁can", "▁do", "▁for", "▁you", ".",
          "▁caf", "<0xC3>", "<0xA9>", "▁the", "s", "e", "t", "▁", "▁pat", "ient", "▁mg", "▁dose"]
SYLL = ["ba", "ce", "di", "fo", "gu", "ha", "ke", "li", "mo", "nu", "pa", "re", "si", "to", "vu", "wa"]

# (piece, frames): the CTC frame chain of the clip; "-" is blank
CHAIN = [("-", 1), ("<s>", 1), ("▁And", 2), ("▁so", 1), ("-", 1), ("▁so", 1), ("▁my", 1), ("</s>", 1),
         ("▁my", 1), ("▁fel", 1), ("low", 2), ("-", 1), ("▁a", 1), ("mer", 1), ("ic", 1), ("ans", 1),
         (",", 1), ("-", 2), ("▁ask", 1), ("▁not", 2), ("<unk>", 1), ("▁what", 1), ("-", 1), ("▁caf", 1),
         ("<0xC3>", 1), ("<0xA9>", 1), (".", 1), ("</s>", 2), ("-", 1), ("▁the", 1), ("▁dose", 1),
         ("</s>", 1), ("-", 5)]


def build_vocab(cfg):
    toks = list(PIECES)
    assert cfg["vocab"] <= len(PIECES) + 2 * len(SYLL) ** 2
    i = 0
    while len(toks) < cfg["vocab"]:
        a, b = SYLL[i % len(SYLL)], SYLL[(i // len(SYLL)) % len(SYLL)]
        word = (i % 2 == 0) != (i >= len(SYLL) ** 2)  # the second round flips the ▁ prefixes
        p = ("▁" if word else "") + a + (b if i >= len(SYLL) else "")
        if p not in toks:
            toks.append(p)
        i += 1
    toks = toks[:cfg["vocab"]]
    types = [3 if i < 3 else 2 if i == 3 else 6 if (t.startswith("<0x") and len(t) == 6) else 1
             for i, t in enumerate(toks)]
    scores = [0.0 if ty != 1 else -float(i) for i, ty in enumerate(types)]
    return toks, scores, types


# --------------------------------------------------------------------------
# front end (docs/formats/medasr.md §4)
# --------------------------------------------------------------------------
def lasr_filterbank(n_mels=128, lo=125.0, hi=7500.0):
    """(257, n_mels): triangles in the Kaldi mel domain, peak 1, DC row zero."""
    def mel(f):
        return 1127.0 * np.log(1.0 + f / 700.0)
    fk = np.linspace(0.0, SR / 2, N_FFT // 2 + 1)
    m = mel(fk)
    e = np.linspace(mel(lo), mel(hi), n_mels + 2)
    up = (m[:, None] - e[None, :-2]) / (e[1:-1] - e[:-2])[None, :]
    down = (e[None, 2:] - m[:, None]) / (e[2:] - e[1:-1])[None, :]
    fb = np.maximum(0.0, np.minimum(up, down))
    fb[0] = 0.0
    return fb


def symmetric_hann(n=WIN):
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / (n - 1))


def log_mel(pcm, fb, win, clamp=1e-5):
    """[T_mel, n_mels]: ln(max(P · FB, clamp)), window left-aligned in the 512 buffer."""
    n = len(pcm)
    if n < WIN:
        raise ValueError("fewer than 400 samples")
    T = (n - WIN) // HOP + 1
    idx = np.arange(T)[:, None] * HOP + np.arange(WIN)[None, :]
    spec = np.fft.rfft(pcm[idx] * win[None, :], n=N_FFT, axis=1)
    P = spec.real ** 2 + spec.imag ** 2  # [T, 257]
    return np.log(np.maximum(P @ fb, clamp))


# --------------------------------------------------------------------------
# encoder (docs/formats/medasr.md §5)
# --------------------------------------------------------------------------
def layer_norm(x, g, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g


def silu(x):
    return x * torch.sigmoid(x)


def rope(u, H, theta):
    T, d = u.shape
    hd = d // H
    half = hd // 2
    p = torch.arange(T, dtype=torch.float64)[:, None]
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    th = p * inv[None, :]
    c, s = torch.cos(th).to(u.dtype)[:, None, :], torch.sin(th).to(u.dtype)[:, None, :]
    uh = u.reshape(T, H, hd)
    a, b = uh[:, :, :half], uh[:, :, half:]
    return torch.cat([a * c - b * s, a * s + b * c], -1).reshape(T, d)


def residual(x, y, w0, w1):
    return (x if w0 == 1.0 else w0 * x) + (y if w1 == 1.0 else w1 * y)


def bn_fuse(W, p):
    """docs/formats/medasr.md §3.2, in float32 like the loader."""
    w, b = W(p + "conv_bn.weight").float(), W(p + "conv_bn.bias").float()
    mean, var = W(p + "conv_bn.running_mean").float(), W(p + "conv_bn.running_var").float()
    scale = w / torch.sqrt(var + torch.tensor(BN_EPS, dtype=torch.float32))
    shift = b - mean * scale
    return scale.to(torch.get_default_dtype()), shift.to(torch.get_default_dtype())


def block(x, W, i, cfg, hp, taps=None):
    p = "enc.blocks.%d." % i
    eps, H, k = hp["eps"], cfg["n_heads"], cfg["conv_kernel"]
    T, d = x.shape
    # FF1
    y = layer_norm(x, W(p + "norm_ff1.weight"), eps)
    y = silu(y @ W(p + "ff1_up.weight").T) @ W(p + "ff1_down.weight").T
    x = residual(x, y, *hp["ff"])
    if taps is not None:
        taps["post_ff1"] = x
    # RoPE MHSA
    y = layer_norm(x, W(p + "norm_attn.weight"), eps)
    q = rope(y @ W(p + "attn_q.weight").T, H, hp["theta"])
    kk = rope(y @ W(p + "attn_k.weight").T, H, hp["theta"])
    v = y @ W(p + "attn_v.weight").T
    hd = d // H
    q, kk, v = (z.reshape(T, H, hd).transpose(0, 1) for z in (q, kk, v))
    a = torch.softmax(q @ kk.transpose(1, 2) / math.sqrt(hd), dim=-1)
    y = (a @ v).transpose(0, 1).reshape(T, d) @ W(p + "attn_o.weight").T
    x = x + y
    if taps is not None:
        taps["post_attn"] = x
    # conv module
    y = layer_norm(x, W(p + "norm_conv.weight"), eps)
    z = y @ W(p + "conv_pointwise1.weight")[:, :, 0].T
    g = z[:, :d] * torch.sigmoid(z[:, d:])
    left = (k - 1) // 2
    gp = torch.nn.functional.pad(g.T[None], (left, k - 1 - left))
    u = torch.nn.functional.conv1d(gp, W(p + "conv_depthwise.weight"), groups=d)[0].T
    scale, shift = bn_fuse(W, p)
    u = silu(u * scale + shift)
    y = u @ W(p + "conv_pointwise2.weight")[:, :, 0].T
    x = residual(x, y, *hp["conv"])
    if taps is not None:
        taps["post_conv"] = x
    # FF2
    y = layer_norm(x, W(p + "norm_ff2.weight"), eps)
    y = silu(y @ W(p + "ff2_up.weight").T) @ W(p + "ff2_down.weight").T
    x = residual(x, y, *hp["ff"])
    if taps is not None:
        taps["post_ff2"] = x
    return layer_norm(x, W(p + "norm_post.weight"), eps)


def subsample(mel, W):
    a = torch.relu(mel @ W("enc.subsampling.dense_0.weight").T + W("enc.subsampling.dense_0.bias"))
    c0 = torch.relu(torch.nn.functional.conv1d(a.T[None], W("enc.subsampling.conv_0.weight"),
                                               W("enc.subsampling.conv_0.bias"), stride=2)[0])
    c1 = torch.relu(torch.nn.functional.conv1d(c0[None], W("enc.subsampling.conv_1.weight"),
                                               W("enc.subsampling.conv_1.bias"), stride=2)[0])
    return c1.T @ W("enc.subsampling.dense_1.weight").T + W("enc.subsampling.dense_1.bias")


def hparams(cfg):
    return dict(eps=1e-6, theta=10000.0, ff=(1.5, 0.5), conv=(2.0, 1.0))


def encoder(mel, W, cfg):
    """mel [T_mel, n_mels] torch -> dict of intermediates."""
    hp = hparams(cfg)
    x = subsample(mel, W)
    out = {"subsample": x}
    for i in range(cfg["n_layers"]):
        taps = {} if i == 0 else None
        x = block(x, W, i, cfg, hp, taps)
        if i == 0:
            for k, v in taps.items():
                out["block0_" + k] = v
            out["block0"] = x
    out["last_block"] = x
    out["enc"] = layer_norm(x, W("enc.out_norm.weight"), hp["eps"])
    return out


# --------------------------------------------------------------------------
# decoding (docs/formats/medasr.md §6-§7)
# --------------------------------------------------------------------------
def ctc_greedy(logits, blank=0):
    prev, out = -1, []
    for t in range(logits.shape[0]):
        a = argmax_first(logits[t])
        if a == blank:
            prev = -1
            continue
        if a == prev:
            continue
        prev = a
        if a in SPECIALS:
            continue
        out.append((a, t))
    return out


def sp_bytes(p):
    if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
        return bytes([int(p[3:5], 16)])
    return p.replace("▁", " ").encode("utf-8")


def result(emitted, toks):
    ids = [k for k, _ in emitted]
    raw = b"".join(sp_bytes(toks[k]) for k in ids if k < len(toks)).decode("utf-8", errors="replace")
    text = raw[1:] if raw.startswith(" ") else raw
    return dict(ids=ids, frames=[t for _, t in emitted], pieces=[toks[k] for k in ids], raw_text=raw,
                text=text, tokens=[dict(id=k, text=toks[k], t0_ms=FRAME_MS * t, t1_ms=FRAME_MS * t + FRAME_MS)
                                   for k, t in emitted])


# --------------------------------------------------------------------------
# tensors
# --------------------------------------------------------------------------
BLOCK_SUFFIXES = ["norm_ff1.weight", "ff1_up.weight", "ff1_down.weight", "norm_attn.weight", "attn_q.weight",
                  "attn_k.weight", "attn_v.weight", "attn_o.weight", "norm_conv.weight",
                  "conv_pointwise1.weight", "conv_depthwise.weight", "conv_bn.weight", "conv_bn.bias",
                  "conv_bn.running_mean", "conv_bn.running_var", "conv_pointwise2.weight", "norm_ff2.weight",
                  "ff2_up.weight", "ff2_down.weight", "norm_post.weight"]
TOP = ["frontend.mel_filterbank", "frontend.window", "enc.subsampling.dense_0.weight",
       "enc.subsampling.dense_0.bias", "enc.subsampling.conv_0.weight", "enc.subsampling.conv_0.bias",
       "enc.subsampling.conv_1.weight", "enc.subsampling.conv_1.bias", "enc.subsampling.dense_1.weight",
       "enc.subsampling.dense_1.bias", "enc.out_norm.weight", "ctc.proj.weight", "ctc.proj.bias"]


def tensor_order(cfg):
    names = list(TOP)
    for i in range(cfg["n_layers"]):
        names += ["enc.blocks.%d.%s" % (i, s) for s in BLOCK_SUFFIXES]
    return names


def tensor_shapes(cfg):
    d, F, k, C, M, V = (cfg["hidden"], cfg["intermediate"], cfg["conv_kernel"], cfg["sub_channels"],
                        cfg["n_mels"], cfg["vocab"])
    ks = cfg["sub_kernel"]
    s = {"frontend.mel_filterbank": (N_FFT // 2 + 1, M), "frontend.window": (WIN,),
         "enc.subsampling.dense_0.weight": (d, M), "enc.subsampling.dense_0.bias": (d,),
         "enc.subsampling.conv_0.weight": (d, d, ks), "enc.subsampling.conv_0.bias": (d,),
         "enc.subsampling.conv_1.weight": (C, d, ks), "enc.subsampling.conv_1.bias": (C,),
         "enc.subsampling.dense_1.weight": (d, C), "enc.subsampling.dense_1.bias": (d,),
         "enc.out_norm.weight": (d,), "ctc.proj.weight": (V, d, 1), "ctc.proj.bias": (V,)}
    per = {"ff1_up.weight": (F, d), "ff1_down.weight": (d, F), "ff2_up.weight": (F, d), "ff2_down.weight": (d, F),
           "attn_q.weight": (d, d), "attn_k.weight": (d, d), "attn_v.weight": (d, d), "attn_o.weight": (d, d),
           "conv_pointwise1.weight": (2 * d, d, 1), "conv_depthwise.weight": (d, 1, k),
           "conv_pointwise2.weight": (d, d, 1)}
    for i in range(cfg["n_layers"]):
        for suf in BLOCK_SUFFIXES:
            s["enc.blocks.%d.%s" % (i, suf)] = per.get(suf, (d,))
    return s


def dtype_for(name, shape, preset):
    """docs/formats/medasr.md §3.1 columns (the quantizer buckets)."""
    if preset == "F32":
        return gw.GGML_F32
    if (name.startswith("frontend.") or name.endswith((".bias", "norm.weight", "norm_ff1.weight",
                                                         "norm_attn.weight", "norm_conv.weight",
                                                         "norm_ff2.weight", "norm_post.weight"))
            or ".conv_bn." in name):
        return gw.GGML_F32  # Norm bucket
    if name.endswith("conv_depthwise.weight"):
        return gw.GGML_F32  # Conv bucket
    if name.endswith(("conv_pointwise1.weight", "conv_pointwise2.weight")):
        return gw.GGML_F16  # ConvPw bucket
    if preset == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16  # Linear, fallback F16


FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------
def random_weights(cfg, g, mel_mean):
    d, F, k, C, M = cfg["hidden"], cfg["intermediate"], cfg["conv_kernel"], cfg["sub_channels"], cfg["n_mels"]
    ks = cfg["sub_kernel"]
    W = {}

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std

    W["frontend.mel_filterbank"] = torch.from_numpy(lasr_filterbank(M)).float()
    W["frontend.window"] = torch.from_numpy(symmetric_hann()).float()
    w0 = rn(d, M, std=1.5 / math.sqrt(M))
    W["enc.subsampling.dense_0.weight"] = w0
    W["enc.subsampling.dense_0.bias"] = (-(w0.double() @ torch.from_numpy(mel_mean)).float() + rn(d, std=0.1))
    W["enc.subsampling.conv_0.weight"] = rn(d, d, ks, std=2.0 / math.sqrt(d * ks))
    W["enc.subsampling.conv_0.bias"] = rn(d, std=0.1)
    W["enc.subsampling.conv_1.weight"] = rn(C, d, ks, std=2.0 / math.sqrt(d * ks))
    W["enc.subsampling.conv_1.bias"] = rn(C, std=0.1)
    W["enc.subsampling.dense_1.weight"] = rn(d, C, std=1.0 / math.sqrt(C))
    W["enc.subsampling.dense_1.bias"] = rn(d, std=0.1)
    W["enc.out_norm.weight"] = 1.0 + rn(d, std=0.1)
    for i in range(cfg["n_layers"]):
        p = "enc.blocks.%d." % i
        for n in ("norm_ff1", "norm_attn", "norm_conv", "norm_ff2", "norm_post"):
            W[p + n + ".weight"] = 1.0 + rn(d, std=0.1)
        for f in ("ff1", "ff2"):
            W[p + f + "_up.weight"] = rn(F, d, std=1.0 / math.sqrt(d))
            W[p + f + "_down.weight"] = rn(d, F, std=1.0 / math.sqrt(F))
        for n, std in (("q", 2.0), ("k", 2.0), ("v", 1.0), ("o", 1.0)):
            W[p + "attn_%s.weight" % n] = rn(d, d, std=std / math.sqrt(d))
        W[p + "conv_pointwise1.weight"] = rn(2 * d, d, 1, std=1.0 / math.sqrt(d))
        W[p + "conv_depthwise.weight"] = rn(d, 1, k, std=1.0 / math.sqrt(k))
        W[p + "conv_bn.weight"] = 1.0 + rn(d, std=0.1)
        W[p + "conv_bn.bias"] = rn(d, std=0.1)
        W[p + "conv_bn.running_mean"] = rn(d, std=0.1)
        W[p + "conv_bn.running_var"] = 0.5 + torch.rand(d, generator=g, dtype=torch.float32)
        W[p + "conv_pointwise2.weight"] = rn(d, d, 1, std=1.0 / math.sqrt(d))
    return W


def getter(W):
    return lambda n: W[n].to(torch.float64)


def chain_targets(tid, T):
    tg = []
    for p, n in CHAIN:
        tg += [0 if p == "-" else tid[p]] * n
    assert len(tg) <= T, (len(tg), T)
    return tg + [0] * (T - len(tg))


def fit_head(enc, targets, V, margin, g):
    Z = torch.cat([enc, torch.ones(enc.shape[0], 1)], 1)
    Y = torch.zeros(enc.shape[0], V)
    Y[torch.arange(enc.shape[0]), torch.tensor(targets)] = margin
    sol = torch.linalg.lstsq(Z, Y, driver="gelsd").solution
    noise = torch.randn(V, enc.shape[1], generator=g, dtype=torch.float32).double() * 0.002
    return (sol[:-1].T.contiguous() + noise).float()[:, :, None], sol[-1].float()


# --------------------------------------------------------------------------
# GGUF
# --------------------------------------------------------------------------
def write_gguf(path, cfg, W, vocab, preset, config_name):
    toks, scores, types = vocab
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "medasr")
    w.add_string("general.name", "MedASR (random-weight reference, %s)" % config_name)
    w.add_string("general.basename", "medasr")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/medasr.py")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "other")
    w.add_string("general.license.name", "cc0-1.0")
    w.add_string("general.license.link", "https://creativecommons.org/publicdomain/zero/1.0/")
    w.add_string("general.repo_url", "https://example.invalid/transcribe/tools/ref/medasr.py")
    if preset == "F32":
        w.add_uint32("general.file_type", 0)
    w.add_array("general.languages", ["en"])
    w.add_string("stt.variant", "medasr")
    for c in ("translate", "lang_detect", "streaming", "word_timestamps", "speaker_diarization"):
        w.add_bool("stt.capability." + c, False)
    w.add_string("tokenizer.ggml.model", "bpe")
    w.add_string("tokenizer.ggml.pre", "medasr")
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 3)
    w.add_uint32("tokenizer.ggml.blank_token_id", 0)
    w.add_uint32("tokenizer.ggml.padding_token_id", 0)
    e = "stt.medasr.encoder."
    d, H = cfg["hidden"], cfg["n_heads"]
    w.add_uint32(e + "n_layers", cfg["n_layers"])
    w.add_uint32(e + "hidden", d)
    w.add_uint32(e + "n_heads", H)
    w.add_uint32(e + "n_kv_heads", H)
    w.add_uint32(e + "head_dim", d // H)
    w.add_uint32(e + "intermediate", cfg["intermediate"])
    w.add_string(e + "hidden_act", "silu")
    w.add_uint32(e + "conv_kernel", cfg["conv_kernel"])
    w.add_float32(e + "conv_residual_w0", 2.0)
    w.add_float32(e + "conv_residual_w1", 1.0)
    w.add_float32(e + "ff_residual_w0", 1.5)
    w.add_float32(e + "ff_residual_w1", 0.5)
    w.add_float32(e + "layer_norm_eps", 1e-6)
    w.add_uint32(e + "max_pos_emb", 10000)
    w.add_float32(e + "batch_norm_momentum", 0.01)
    w.add_float32(e + "rope_theta", 10000.0)
    w.add_string(e + "rope_type", "default")
    w.add_uint32(e + "num_mel_bins", cfg["n_mels"])
    w.add_uint32(e + "sub_kernel", cfg["sub_kernel"])
    w.add_uint32(e + "sub_stride", 2)
    w.add_uint32(e + "sub_channels", cfg["sub_channels"])
    w.add_uint32(e + "sub_n_layers", 2)
    w.add_uint32("stt.medasr.ctc.vocab_size", cfg["vocab"])
    w.add_uint32("stt.medasr.ctc.blank_id", 0)
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "sample_rate", SR)
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "n_fft", N_FFT)
    w.add_uint32(f + "win_length", WIN)
    w.add_uint32(f + "hop_length", HOP)
    w.add_string(f + "window", "hann_symmetric")
    w.add_string(f + "normalize", "none")
    w.add_string(f + "pad_mode", "zero")
    w.add_string(f + "mel_norm", "htk")
    w.add_float32(f + "log_clamp_min", 1e-5)
    w.add_float32(f + "mel_lower_hz", 125.0)
    w.add_float32(f + "mel_upper_hz", 7500.0)
    if preset != "F32":
        w.add_uint32("general.file_type", FILE_TYPE[preset])  # derived files: last scalar
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.scores", scores, gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    shapes = tensor_shapes(cfg)
    for n in tensor_order(cfg):
        assert tuple(W[n].shape) == shapes[n], (n, W[n].shape, shapes[n])
        w.add_tensor_lazy(n, shapes[n], dtype_for(n, shapes[n], preset),
                          (lambda n=n: W[n].numpy().astype(np.float32)))
    return w.write_stream(path)


def read_back(path, cfg, W, preset, vocab):
    kv, tensors = gw.read_gguf(path)
    names = tensor_order(cfg)
    assert list(tensors) == names, "tensor order"
    assert len(names) == 13 + 20 * cfg["n_layers"]
    assert kv["general.architecture"] == (gw.STRING, "medasr")
    assert kv["stt.medasr.encoder.conv_residual_w0"] == (gw.FLOAT32, 2.0)
    assert kv["stt.medasr.encoder.rope_type"] == (gw.STRING, "default")
    assert kv["stt.medasr.ctc.vocab_size"] == (gw.UINT32, cfg["vocab"])
    assert kv["stt.frontend.log_clamp_min"][0] == gw.FLOAT32
    assert kv["tokenizer.ggml.tokens"][1][1] == vocab[0]
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    assert sum(1 for k in kv if k.startswith("stt.frontend.")) == 13
    shapes = tensor_shapes(cfg)
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
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=list(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--wav", default=None, help="input clip (default: <out>/../clip.wav)")
    ap.add_argument("--dtypes", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--margin", type=float, default=8.0)
    ap.add_argument("--no-goldens", action="store_true")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    dtypes = a.dtypes.split(",") if a.dtypes else cfg["dtypes"]
    os.makedirs(a.out, exist_ok=True)
    wav = a.wav or os.path.join(os.path.dirname(os.path.abspath(a.out)), "clip.wav")
    if not os.path.exists(wav):  # cut 2.0 s of samples/jfk.wav (0.30 .. 2.30 s)
        x, sr = read_wav16(os.path.join(REPO, "samples", "jfk.wav"))
        write_wav16(wav, np.round(x[4800:4800 + 32000] * 32768.0), sr)
    pcm, sr = read_wav16(wav)
    assert sr == SR
    vocab = build_vocab(cfg)
    toks = vocab[0]
    tid = {t: i for i, t in enumerate(toks)}
    fb0 = lasr_filterbank(cfg["n_mels"]).astype(np.float32).astype(np.float64)
    win0 = symmetric_hann().astype(np.float32).astype(np.float64)
    mel0 = log_mel(pcm, fb0, win0)
    g = torch.Generator().manual_seed(a.seed)
    W = random_weights(cfg, g, mel0.mean(0))
    enc = encoder(torch.from_numpy(mel0), getter(W), cfg)["enc"]
    T = enc.shape[0]
    targets = chain_targets(tid, T)
    W["ctc.proj.weight"], W["ctc.proj.bias"] = fit_head(enc, targets, cfg["vocab"], a.margin, g)
    prev, expect = -1, []  # the docs/formats/medasr.md §6.2 rule applied to the planned frames
    for t, k in enumerate(targets):
        if k == 0:
            prev = -1
        elif k != prev:
            prev = k
            if k not in SPECIALS:
                expect.append((k, t))
    if not a.no_goldens:
        npsave(os.path.join(a.out, "mel.npy"), mel0)
    report = {}
    for preset in dtypes:
        path = os.path.join(a.out, "medasr-%s-ref-%s.gguf" % (a.config, preset))
        size = write_gguf(path, cfg, W, vocab, preset, a.config)
        Wq = read_back(path, cfg, W, preset, vocab)
        print("wrote %s (%d bytes), read back OK" % (path, size))
        Wf = getter(Wq)
        mel = torch.from_numpy(log_mel(pcm, Wq["frontend.mel_filterbank"].double().numpy(),
                                       Wq["frontend.window"].double().numpy()))
        out = encoder(mel, Wf, cfg)
        logits = out["enc"] @ Wf("ctc.proj.weight")[:, :, 0].T + Wf("ctc.proj.bias")
        emitted = ctc_greedy(logits)
        r = result(emitted, toks)
        r["min_margin"] = min(margin_of(logits[t]) for t in range(T))
        r["T_mel"], r["T_enc"] = int(mel.shape[0]), int(T)
        r["as_planned"] = emitted == expect
        r["frame_argmax"] = [argmax_first(logits[t]) for t in range(T)]
        r["max_abs_residual_block0"] = float(max(out[k].abs().max() for k in out if k.startswith("block0_")))
        if preset == "F32":  # float32 re-run: the error a float32 port may show
            torch.set_default_dtype(torch.float32)
            o32 = encoder(mel.float(), lambda n: Wq[n].float(), cfg)
            l32 = o32["enc"] @ Wq["ctc.proj.weight"][:, :, 0].T + Wq["ctc.proj.bias"]
            torch.set_default_dtype(torch.float64)
            o32["logits"] = l32
            out["logits"] = logits
            r["f32_max_abs_err"] = {k: float((o32[k].double() - out[k]).abs().max()) for k in o32}
            print("    float32 re-run, max |err|: %s" % ", ".join("%s %.1e" % kv for kv in r["f32_max_abs_err"].items()))
        report[preset] = r
        print("%-5s min margin %.3f  %d ids  planned %s  raw %r" % (preset, r["min_margin"], len(r["ids"]),
                                                                  r["as_planned"], r["raw_text"]))
        if not a.no_goldens:
            stem = os.path.join(a.out, preset)
            for k in ("subsample", "block0_post_ff1", "block0_post_attn", "block0_post_conv", "block0_post_ff2",
                      "block0", "last_block", "enc"):
                npsave("%s_%s.npy" % (stem, k), out[k])
            npsave(stem + "_logits.npy", logits)
            np.save(stem + "_emitted.npy", np.array(emitted, dtype=np.int32).reshape(-1, 2))
    with open(os.path.join(a.out, "decode.json"), "w") as fh:  # one line per dtype
        fh.write("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(r, ensure_ascii=False))
                                     for k, r in report.items()) + "\n}\n")
    bad = [k for k, r in report.items() if not r["as_planned"]]
    if bad:
        print("NOT AS PLANNED:", bad)
        sys.exit(1)


if __name__ == "__main__":
    main()
