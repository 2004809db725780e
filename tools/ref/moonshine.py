#!/usr/bin/python3
"""Independent float64 reference of the Moonshine family (docs/formats/moonshine.md).

Written from the family specification only (GGUF schema §2-§3, raw-PCM
front end §4, conv stem §5.1, encoder blocks with partial interleaved RoPE
§5.2-§5.3, SwiGLU decoder with cross-attention and tied head §6.1, greedy
decode §6.2, output text §6.3), never from the C sources. Builds
random-weight models in the published GGUF schema (F32, F16, Q8_0), reads
every file back, and writes float64 goldens for committed clips.

    /usr/bin/python3 tools/ref/moonshine.py --config tiny --out tests/data/moonshine/tiny
    /usr/bin/python3 tools/ref/moonshine.py --config real --out build-ref/moonshine-tiny
    /usr/bin/python3 tools/ref/moonshine.py --config base --out build-ref/moonshine-base

Weight design (why the random model decodes varied text that stops):
the decoder is a "successor machine". Dimension 0 of the residual stream is
a constant channel (every embedding row has κ there), dimension 1 is an
audio "switch" written only by cross-attention head 0 of layer 0 (uniform
attention, value = a direction w fitted so that the clip mean of enc_out·w
is +1 for the main clip and -1 for the 895-sample clip), the other
dimensions hold orthonormal token directions for the chain tokens (every
embedding row zero-sum over them, so LayerNorm means do not favour tokens).
The last decoder FFN has one SwiGLU unit per (token a -> successor b,
branch) edge: gate = α(⟨R_a, h⟩ + s·h_switch − 1), value = ⟨R_a, h⟩, output
column R_b − R_a, so the tied head sees token b instead of a. Branch +1
(main clip) is a sentence ending with </s>; branch −1 (895-sample clip) is
a 5-token cycle that runs into the 194-token cap (OUTPUT_TRUNCATED). Every
other weight is random (the encoder fully; the decoder attention / FFN
with a small output scale and no write to dims 0-1), so goldens test all of
the math while the argmax margins stay large.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as Fn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as gw  # noqa: E402
from llm_common import FILE_TYPE, npsave, write_wav16  # noqa: E402

torch.set_default_dtype(torch.float64)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

LN_EPS = 1e-5
MIN_SAMPLES = 895  # docs/formats/moonshine.md §4 / §5.1: T_enc = 1

CONFIGS = {
    # d 64 (Q8_0 needs inner dims % 32), 4 heads of 16, factor 0.7 -> rot = (int)11.2 & ~1 = 10:
    # both the truncation and the bit clearing of docs/formats/moonshine.md §5.3 matter;
    # head_dim 16 pads to 16 (no-op).
    "tiny": dict(d=64, enc_layers=2, dec_layers=2, heads=4, ffn=128, vocab=320, prf=0.7,
                 pad=8, max_pos=194, name="Moonshine Tiny (random-weight reference)"),
    # moonshine-tiny geometry (docs/formats/moonshine.md §1): 160 tensors, 27 092 736 params.
    "real": dict(d=288, enc_layers=6, dec_layers=6, heads=8, ffn=1152, vocab=32768, prf=0.9,
                 pad=8, max_pos=194, name="Moonshine Tiny (random-weight reference, real dims)"),
    # moonshine-base geometry (docs/formats/moonshine.md §1): d 416, 8 + 8 layers, hd 52, rot 32.
    "base": dict(d=416, enc_layers=8, dec_layers=8, heads=8, ffn=1664, vocab=32768, prf=0.62,
                 pad=8, max_pos=194, name="Moonshine Base (random-weight reference, real dims)"),
}
KERNELS, STRIDES = [127, 7, 3], [64, 3, 2]
UNK, BOS, EOS = 0, 1, 2
N_ST = {"tiny": 16, "real": 768, "base": 768}

# the decoded texts: branch +1 ends with </s>; branch -1 cycles (truncation case)
CHAIN_A = ["▁And", "▁so", "▁my", "▁fellow", "▁Americans", "<0x2C>", "▁ask", "▁not", "▁what",
           "▁your", "▁country", "▁can", "▁do", "▁for", "▁you", "▁caf", "<0xC3>", "<0xA9>", "."]
CYCLE_B = ["▁ask", "▁what", "▁you", "▁can", "▁do"]
FILL = ["▁the", "▁a", "▁to", "▁of", "▁and", "▁in", "▁is", "▁it", "▁that", "▁we", "s", "e", "t",
        "ing", "ed", "er", "▁be", "▁this", "▁on", "▁with", "▁he", "▁are", "▁as", "▁at", "▁all",
        "▁by", "▁Ameri", "cans", "▁fell", "ow", "▁coun", "try"]


# --------------------------------------------------------------------------
# vocabulary (docs/formats/moonshine.md §2.2, §3.4)
# --------------------------------------------------------------------------
def build_vocab(cfg, n_st):
    V = cfg["vocab"]
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    words = []
    for p in CHAIN_A + CYCLE_B + FILL:
        if p not in words and not p.startswith("<0x"):
            words.append(p)
    n_norm = V - len(toks) - n_st
    i = 0
    while len(words) < n_norm:
        words.append("▁w%d" % i)
        i += 1
    toks += words[:n_norm]
    types += [1] * n_norm
    toks += ["<<ST_%d>>" % j for j in range(n_st)]
    types += [3] * n_st
    assert len(toks) == V and len(set(toks)) == V
    # a merge list in HF form ("left right"); parsed but never used by the runtime
    merges = []
    for w in words[:64]:
        if len(w) >= 2:
            merges.append("%s %s" % (w[0], w[1]))
    merges = list(dict.fromkeys(merges))
    return toks, types, merges


def sp_decode(ids, toks):
    """docs/formats/gguf.md §6.1 SentencePiece decode: ▁ -> space, <0xHH> -> byte HH."""
    b = b""
    for i in ids:
        p = toks[i]
        if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
            b += bytes([int(p[3:5], 16)])
        else:
            b += p.replace("▁", " ").encode("utf-8")
    return b.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------
# model math
# --------------------------------------------------------------------------
def rot_dims(hd, prf):
    """docs/formats/moonshine.md §5.3: (int)((float)hd * factor) & ~1, in single precision."""
    return int(np.float32(hd) * np.float32(prf)) & ~1


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def layer_norm(x, g):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + LN_EPS) * g


def stem_lengths(n):
    t1 = (n - KERNELS[0]) // STRIDES[0] + 1 if n >= KERNELS[0] else 0
    t2 = (t1 - KERNELS[1]) // STRIDES[1] + 1 if t1 >= KERNELS[1] else 0
    t3 = (t2 - KERNELS[2]) // STRIDES[2] + 1 if t2 >= KERNELS[2] else 0
    return t1, t2, t3


def conv_stem(pcm, W, eps=1e-5):
    """docs/formats/moonshine.md §5.1. pcm: 1-D tensor. Returns (tanh(conv0) [T1, d],
    GroupNorm out [T1, d], stem [T_enc, d])."""
    x = pcm.reshape(1, 1, -1)
    a = torch.tanh(Fn.conv1d(x, W["enc.conv.0.weight"], stride=STRIDES[0]))
    mu = a.mean()
    var = ((a - mu) ** 2).mean()
    gn = (a - mu) / torch.sqrt(var + eps) * W["enc.conv.norm.weight"][None, :, None] + \
        W["enc.conv.norm.bias"][None, :, None]
    b = gelu(Fn.conv1d(gn, W["enc.conv.1.weight"], W["enc.conv.1.bias"], stride=STRIDES[1]))
    s = gelu(Fn.conv1d(b, W["enc.conv.2.weight"], W["enc.conv.2.bias"], stride=STRIDES[2]))
    return a[0].T, gn[0].T, s[0].T


def rope(x, pos, rot, theta):
    """Interleaved (GPT-J) RoPE on the first rot dims of every head. x [T, H, hd]."""
    half = rot // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / rot)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    c = torch.cos(ang).to(x.dtype)[:, None, :]
    s = torch.sin(ang).to(x.dtype)[:, None, :]
    x0, x1 = x[..., 0:rot:2], x[..., 1:rot:2]
    y = x.clone()
    y[..., 0:rot:2] = x0 * c - x1 * s
    y[..., 1:rot:2] = x0 * s + x1 * c
    return y


def attention(q, k, v, H, mask=None):
    """q [Tq, d], k/v [Tk, d]; scale 1/sqrt(hd) (unpadded); mask [Tq, Tk] bool (True = visible)."""
    Tq, d = q.shape
    hd = d // H
    qh = q.reshape(Tq, H, hd).transpose(0, 1)
    kh = k.reshape(-1, H, hd).transpose(0, 1)
    vh = v.reshape(-1, H, hd).transpose(0, 1)
    s = qh @ kh.transpose(1, 2) / math.sqrt(hd)
    if mask is not None:
        s = s.masked_fill(~mask[None], float("-inf"))
    a = torch.softmax(s, dim=-1)
    return (a @ vh).transpose(0, 1).reshape(Tq, d)


def encoder(pcm, W, cfg):
    """Returns dict of [T, d] tensors: conv1_out (tanh(conv0), [T1, d]), groupnorm_out
    ([T1, d]), stem_out, block0_out (after encoder block 0), enc_out (after final norm)."""
    H, L = cfg["heads"], cfg["enc_layers"]
    d = cfg["d"]
    rot = rot_dims(d // H, cfg["prf"])
    a, gn, x = conv_stem(pcm, W)
    out = {"conv1_out": a, "groupnorm_out": gn, "stem_out": x}
    T = x.shape[0]
    pos = torch.arange(T)
    for i in range(L):
        p = "enc.blocks.%d." % i
        h = layer_norm(x, W[p + "norm_attn.weight"])
        q = h @ W[p + "attn.q.weight"].T
        k = h @ W[p + "attn.k.weight"].T
        v = h @ W[p + "attn.v.weight"].T
        q = rope(q.reshape(T, H, -1), pos, rot, cfg["theta"]).reshape(T, d)
        k = rope(k.reshape(T, H, -1), pos, rot, cfg["theta"]).reshape(T, d)
        x = x + attention(q, k, v, H) @ W[p + "attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_ffn.weight"])
        u = gelu(h @ W[p + "ffn.fc1.weight"].T + W[p + "ffn.fc1.bias"])
        x = x + u @ W[p + "ffn.fc2.weight"].T + W[p + "ffn.fc2.bias"]
        if i == 0:
            out["block0_out"] = x
    out["enc_out"] = layer_norm(x, W["enc.final_norm.weight"])
    return out


def cross_kv(enc_out, W, cfg):
    return [(enc_out @ W["dec.blocks.%d.cross_attn.k.weight" % i].T,
             enc_out @ W["dec.blocks.%d.cross_attn.v.weight" % i].T)
            for i in range(cfg["dec_layers"])]


def decoder(tokens, ckv, W, cfg, taps=None):
    """One causal pass over the token prefix (== the K/V-cache steps of docs/formats/moonshine.md §6.1, the
    self K cached after RoPE). Returns y = final-norm output [n, d]. taps: dict that
    receives the last block's FFN input (for the weight design)."""
    H, L, d, Fd = cfg["heads"], cfg["dec_layers"], cfg["d"], cfg["ffn"]
    rot = rot_dims(d // H, cfg["prf"])
    n = len(tokens)
    x = W["dec.token_embd.weight"][torch.tensor(tokens)]
    pos = torch.arange(n)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    for i in range(L):
        p = "dec.blocks.%d." % i
        h = layer_norm(x, W[p + "norm_self.weight"])
        q = rope((h @ W[p + "self_attn.q.weight"].T).reshape(n, H, -1), pos, rot, cfg["theta"])
        k = rope((h @ W[p + "self_attn.k.weight"].T).reshape(n, H, -1), pos, rot, cfg["theta"])
        v = h @ W[p + "self_attn.v.weight"].T
        x = x + attention(q.reshape(n, d), k.reshape(n, d), v, H, causal) @ W[p + "self_attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_cross.weight"])
        K, Vv = ckv[i]
        x = x + attention(h @ W[p + "cross_attn.q.weight"].T, K, Vv, H) @ W[p + "cross_attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_ffn.weight"])
        if taps is not None and i == L - 1:
            taps["ffn_in"] = h
        u = h @ W[p + "ffn.fc1.weight"].T + W[p + "ffn.fc1.bias"]
        x = x + (Fn.silu(u[:, Fd:]) * u[:, :Fd]) @ W[p + "ffn.fc2.weight"].T + W[p + "ffn.fc2.bias"]
    return layer_norm(x, W["dec.final_norm.weight"])


def greedy(ckv, W, cfg):
    """docs/formats/moonshine.md §6.2. Returns (out ids, truncated, per-step margins, per-step logits)."""
    E = W["dec.token_embd.weight"]
    seq = [BOS]
    out, margins, logits_all = [], [], []
    n_past = 0
    while True:
        y = decoder(seq, ckv, W, cfg)[-1]
        lg = E @ y
        n_past += 1
        top = torch.topk(lg, 2).values
        margins.append(float(top[0] - top[1]))
        logits_all.append(lg)
        tok = int(torch.argmax(lg))  # first maximum on ties (lowest id)
        if tok != EOS:
            out.append(tok)
        if tok == EOS or n_past >= cfg["max_pos"]:
            break
        seq.append(tok)
    return out, tok != EOS, margins, torch.stack(logits_all)


# --------------------------------------------------------------------------
# GGUF schema (docs/formats/moonshine.md §2, §3)
# --------------------------------------------------------------------------
def tensor_shapes(cfg):
    d, Fd, V, c1 = cfg["d"], cfg["ffn"], cfg["vocab"], 2 * cfg["d"]
    s = {"enc.conv.0.weight": (d, 1, KERNELS[0]),
         "enc.conv.1.weight": (c1, d, KERNELS[1]), "enc.conv.1.bias": (c1,),
         "enc.conv.2.weight": (d, c1, KERNELS[2]), "enc.conv.2.bias": (d,),
         "enc.conv.norm.weight": (d,), "enc.conv.norm.bias": (d,), "enc.final_norm.weight": (d,)}
    for i in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % i
        s[p + "norm_attn.weight"] = (d,)
        for m in ("q", "k", "v", "out"):
            s[p + "attn.%s.weight" % m] = (d, d)
        s[p + "norm_ffn.weight"] = (d,)
        s[p + "ffn.fc1.weight"], s[p + "ffn.fc1.bias"] = (Fd, d), (Fd,)
        s[p + "ffn.fc2.weight"], s[p + "ffn.fc2.bias"] = (d, Fd), (d,)
    s["dec.token_embd.weight"] = (V, d)
    s["dec.final_norm.weight"] = (d,)
    for i in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % i
        s[p + "norm_self.weight"] = (d,)
        for m in ("q", "k", "v", "out"):
            s[p + "self_attn.%s.weight" % m] = (d, d)
        s[p + "norm_cross.weight"] = (d,)
        for m in ("q", "k", "v", "out"):
            s[p + "cross_attn.%s.weight" % m] = (d, d)
        s[p + "norm_ffn.weight"] = (d,)
        s[p + "ffn.fc1.weight"], s[p + "ffn.fc1.bias"] = (2 * Fd, d), (2 * Fd,)
        s[p + "ffn.fc2.weight"], s[p + "ffn.fc2.bias"] = (d, Fd), (d,)
    assert len(s) == 8 + 10 * cfg["enc_layers"] + 2 + 15 * cfg["dec_layers"]
    return s


def is_matrix(name):
    """docs/formats/moonshine.md §3.3: attention / FFN matrices and the token embedding follow the preset;
    conv kernels, norms and biases stay F32."""
    return name.endswith(("q.weight", "k.weight", "v.weight", "out.weight", "fc1.weight",
                          "fc2.weight")) or name == "dec.token_embd.weight"


def dtype_for(name, preset):
    if preset == "F32" or not is_matrix(name):
        return gw.GGML_F32
    return gw.GGML_F16 if preset == "F16" else gw.GGML_Q8_0


def size_label(n):
    return "%.0fM" % (n / 1e6) if n >= 1e6 else "%.0fK" % (n / 1e3)


def write_gguf(path, cfg, W, toks, types, merges, preset, slug):
    d = cfg["d"]
    n_params = sum(int(np.prod(s)) for s in tensor_shapes(cfg).values())
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "moonshine")
    w.add_string("general.name", cfg["name"])
    w.add_string("general.basename", "moonshine")
    w.add_string("general.size_label", size_label(n_params))
    w.add_string("general.author", "Useful Sensors")
    w.add_string("general.organization", "UsefulSensors")
    w.add_string("general.license", "mit")
    w.add_string("general.license.name", "MIT License")
    w.add_string("general.license.link", "https://opensource.org/license/mit")
    w.add_string("general.repo_url", "https://huggingface.co/UsefulSensors/moonshine-tiny")
    w.add_uint32("general.file_type", FILE_TYPE[preset])
    w.add_array("general.languages", ["en"])
    w.add_string("stt.variant", slug)
    w.add_bool("stt.capability.lang_detect", False)
    w.add_bool("stt.capability.translate", False)
    w.add_bool("stt.capability.timestamps", False)
    w.add_string("tokenizer.ggml.model", "bpe")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_bool("tokenizer.ggml.byte_fallback", True)
    w.add_uint32("tokenizer.ggml.unknown_token_id", UNK)
    w.add_uint32("tokenizer.ggml.bos_token_id", BOS)
    w.add_uint32("tokenizer.ggml.eos_token_id", EOS)
    w.add_uint32("tokenizer.ggml.padding_token_id", EOS)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    m = "stt.moonshine."
    w.add_uint32(m + "encoder.n_layers", cfg["enc_layers"])
    w.add_uint32(m + "encoder.d_model", d)
    w.add_uint32(m + "encoder.n_heads", cfg["heads"])
    w.add_uint32(m + "encoder.n_kv_heads", cfg["heads"])
    w.add_uint32(m + "encoder.ffn_dim", cfg["ffn"])
    w.add_string(m + "encoder.activation", "gelu")
    w.add_uint32(m + "decoder.n_layers", cfg["dec_layers"])
    w.add_uint32(m + "decoder.d_model", d)
    w.add_uint32(m + "decoder.n_heads", cfg["heads"])
    w.add_uint32(m + "decoder.n_kv_heads", cfg["heads"])
    w.add_uint32(m + "decoder.ffn_dim", cfg["ffn"])
    w.add_string(m + "decoder.activation", "silu")
    w.add_uint32(m + "decoder.vocab_size", cfg["vocab"])
    w.add_uint32(m + "decoder.max_position_embeddings", cfg["max_pos"])
    w.add_bool(m + "decoder.tie_word_embeddings", True)
    w.add_float32(m + "partial_rotary_factor", cfg["prf"])
    w.add_float32(m + "rope_theta", cfg["theta"])
    w.add_bool(m + "attention_bias", False)
    w.add_uint32(m + "pad_head_dim_to_multiple_of", cfg["pad"])
    w.add_array(m + "conv_stem.channels", [d, 2 * d, d])  # Python ints -> INT32 arrays
    w.add_array(m + "conv_stem.kernel_sizes", list(KERNELS))
    w.add_array(m + "conv_stem.strides", list(STRIDES))
    w.add_uint32(m + "conv_stem.groupnorm_num_groups", 1)
    w.add_float32(m + "conv_stem.groupnorm_eps", 1e-5)
    w.add_uint32(m + "decoder_start_token_id", BOS)
    w.add_uint32(m + "bos_token_id", BOS)
    w.add_uint32(m + "eos_token_id", EOS)
    w.add_uint32(m + "pad_token_id", EOS)
    w.add_string("stt.frontend.type", "raw")
    w.add_uint32("stt.frontend.sample_rate", 16000)
    w.add_uint32("stt.frontend.num_mels", 1)
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", merges)
    for n in tensor_shapes(cfg):
        w.add_tensor(n, W[n].numpy().astype(np.float32), dtype_for(n, preset))
    w.write(path)


def read_back(path, cfg, W, preset, n_tok):
    """Parse the file, check KV types, tensor order / dtype / ne / values; return the
    weights the file holds (dequantized), in float64."""
    kv, tensors = gw.read_gguf(path)
    shapes = tensor_shapes(cfg)
    assert list(tensors) == list(shapes), "tensor order"
    assert kv["general.architecture"] == (gw.STRING, "moonshine")
    assert kv["general.file_type"] == (gw.UINT32, FILE_TYPE[preset])
    for k in ("encoder.n_layers", "decoder.vocab_size", "decoder.max_position_embeddings",
              "decoder_start_token_id", "eos_token_id", "pad_head_dim_to_multiple_of"):
        assert kv["stt.moonshine." + k][0] == gw.UINT32, k
    assert kv["stt.moonshine.partial_rotary_factor"][0] == gw.FLOAT32
    assert kv["stt.moonshine.conv_stem.strides"] == (gw.ARRAY, (gw.INT32, STRIDES))
    assert kv["stt.moonshine.conv_stem.kernel_sizes"] == (gw.ARRAY, (gw.INT32, KERNELS))
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == n_tok
    assert all(" " in m[1:] for m in kv["tokenizer.ggml.merges"][1][1])
    Wq = {}
    for n, shp in shapes.items():
        gt, ne, a = tensors[n]
        ref = W[n].numpy().astype(np.float32)
        assert gt == dtype_for(n, preset), n
        assert ne == list(reversed(shp)), (n, ne)
        if gt == gw.GGML_Q8_0:
            assert np.abs(a - ref).max() <= np.abs(ref).max() / 127.0 + 1e-6, n
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, ref.astype(np.float16).astype(np.float32)), n
        else:
            assert np.array_equal(a, ref), n
        Wq[n] = torch.from_numpy(a.astype(np.float64))
    return Wq


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------
def f32r(t):
    return t.to(torch.float32).to(torch.float64)


def random_weights(cfg, g, knobs):
    """Random encoder; decoder random parts that never write dims 0-1."""
    d, Fd = cfg["d"], cfg["ffn"]
    W = {}

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g) * std
    for n, shp in tensor_shapes(cfg).items():
        if n.endswith("norm.weight") or "norm_" in n:
            W[n] = 1.0 + rn(*shp, std=0.1)
        elif n.endswith(".bias"):
            W[n] = rn(*shp, std=0.1)
        elif n.startswith("enc.conv."):
            fan_in = shp[1] * shp[2]
            W[n] = rn(*shp, std=1.0 / math.sqrt(fan_in))
        elif n.startswith("enc.blocks."):
            fan_in = shp[1]
            s = 1.0 / math.sqrt(fan_in)
            if n.endswith(("attn.q.weight", "attn.k.weight")):
                s *= knobs["enc_qk"]
            elif n.endswith(("out.weight", "fc2.weight")):
                s *= 0.5
            W[n] = rn(*shp, std=s)
        else:
            W[n] = torch.zeros(*shp)
    W["enc.conv.norm.bias"] = rn(d, std=0.1)
    W["enc.final_norm.weight"] = 1.0 + rn(d, std=0.1)
    noise = knobs["dec_noise"]
    for i in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % i
        for n in ("norm_self", "norm_cross", "norm_ffn"):
            W[p + n + ".weight"] = 1.0 + rn(d, std=0.05)
        for a in ("self_attn", "cross_attn"):
            for m in "qkv":
                W[p + "%s.%s.weight" % (a, m)] = rn(d, d, std=1.0 / math.sqrt(d))
            o = rn(d, d, std=noise / d)  # sublayer output norm ~ noise (token rows: norm rho)
            o[:2] = 0.0
            W[p + a + ".out.weight"] = o
        W[p + "ffn.fc1.weight"] = rn(2 * Fd, d, std=1.0 / math.sqrt(d))
        W[p + "ffn.fc1.bias"] = rn(2 * Fd, std=0.1)
        o = rn(d, Fd, std=2.0 * noise / math.sqrt(Fd * d))
        o[:2] = 0.0
        W[p + "ffn.fc2.weight"] = o
        b = rn(d, std=0.02)
        b[:2] = 0.0
        W[p + "ffn.fc2.bias"] = b
    W["dec.final_norm.weight"] = knobs["head_gain"] * (1.0 + rn(d, std=0.05))
    return W


def design_embeddings(cfg, g, chain_tokens, knobs):
    """E = κ·e0 + ρ·R: chain tokens orthonormal, other tokens unit directions orthogonal
    to them; all directions zero-sum and zero in dims 0-1."""
    d, V = cfg["d"], cfg["vocab"]
    nf = d - 2
    ones = torch.ones(nf) / math.sqrt(nf)
    k = len(chain_tokens)
    A = torch.cat([ones[:, None], torch.randn(nf, k, generator=g)], 1)
    Q, _ = torch.linalg.qr(A)
    Q = Q[:, 1:]  # orthonormal, orthogonal to ones
    proj = torch.cat([ones[:, None], Q], 1)
    Rf = torch.randn(V, nf, generator=g)
    Rf = Rf - (Rf @ proj) @ proj.T
    Rf = Rf / Rf.norm(dim=1, keepdim=True)
    Rf[torch.tensor(chain_tokens)] = Q.T
    R = torch.zeros(V, d)
    R[:, 2:] = Rf
    E = knobs["rho"] * R
    E[:, 0] = knobs["kappa"]
    return R, E


def design(cfg, W, R, edges, switch_w, calib, knobs):
    """Cross head 0 of layer 0 -> switch dim; last-layer FFN units = successor edges.
    calib: (c_tok [V], c_sw) the measured ⟨R_a, h⟩ and |h_switch| at the last FFN input."""
    d, H, Fd, L = cfg["d"], cfg["heads"], cfg["ffn"], cfg["dec_layers"]
    hd = d // H
    p0 = "dec.blocks.0.cross_attn."
    W[p0 + "q.weight"][:hd] = 0.0  # head 0: uniform attention over the frames
    W[p0 + "v.weight"][:hd] = 0.0
    W[p0 + "v.weight"][0] = switch_w
    W[p0 + "out.weight"][:, :hd] = 0.0
    W[p0 + "out.weight"][1, 0] = knobs["switch_gain"]
    if calib is None:
        return
    c_tok, c_sw = calib
    p = "dec.blocks.%d.ffn." % (L - 1)
    fc1, b1, fc2 = W[p + "fc1.weight"], W[p + "fc1.bias"], W[p + "fc2.weight"]
    alpha, rho = knobs["alpha"], knobs["rho"]
    assert len(edges) <= Fd
    for u, (a, b, s) in enumerate(edges):
        ra = R[a] / c_tok[a]
        fc1[u] = ra                      # value half
        b1[u] = 0.0
        gate = alpha * ra.clone()
        gate[1] += alpha * s / c_sw
        fc1[Fd + u] = gate               # gate half
        b1[Fd + u] = -alpha
        fc2[:, u] = rho * (R[b] - R[a]) / (alpha / (1.0 + math.exp(-alpha)))


DEFAULT_KNOBS = dict(kappa=0.5, rho=1.0, enc_qk=1.5, dec_noise=0.25, head_gain=3.0,
                     switch_gain=1.0, alpha=14.0, stem_gain=1.5)


# --------------------------------------------------------------------------
# driver
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


def shared_dir(arg):
    return arg or os.environ.get("TR_SHARED_DIR") or os.path.join(os.path.dirname(REPO), "shared")


def to_dtype(W, dt):
    return {n: t.to(dt) for n, t in W.items()}


def run_clip(pcm, W, cfg, toks):
    enc = encoder(torch.from_numpy(pcm), W, cfg)
    ckv = cross_kv(enc["enc_out"], W, cfg)
    ids, truncated, margins, logits = greedy(ckv, W, cfg)
    raw = sp_decode(ids, toks)
    text = raw[1:] if raw.startswith(" ") else raw
    return enc, ckv, dict(ids=ids, tokens=[toks[i] for i in ids], raw_text=raw, text=text,
                          n_generated=len(ids) + (0 if truncated else 1), truncated=truncated,
                          status="OUTPUT_TRUNCATED" if truncated else "OK",
                          min_margin=min(margins), margins=[round(m, 4) for m in margins]), logits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="tiny", choices=list(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=None, help="folder with samples/jfk.wav (default ../shared)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--knob", action="append", default=[], help="name=value (DEFAULT_KNOBS)")
    ap.add_argument("--dtypes", default="F32,F16,Q8_0")
    a = ap.parse_args()
    cfg = dict(CONFIGS[a.config], theta=10000.0)
    knobs = dict(DEFAULT_KNOBS)
    for kv in a.knob:
        k, v = kv.split("=")
        knobs[k] = float(v)
    os.makedirs(a.out, exist_ok=True)
    tiny = a.config == "tiny"

    # clips: tests/data/moonshine/clip.wav = jfk.wav 0.30 .. 2.80 s (40 000 samples);
    # clip_min.wav = 895 samples (T_enc = 1); clip_short.wav = 894 samples (refused, docs/formats/moonshine.md §4/§9)
    data_dir = os.path.dirname(os.path.abspath(a.out)) if tiny else a.out
    clip = os.path.join(data_dir, "clip.wav")
    if not os.path.exists(clip):
        x, sr = read_wav16(os.path.join(shared_dir(a.shared), "samples", "jfk.wav"))
        assert sr == 16000
        write_wav16(clip, x[4800:4800 + 40000])
        write_wav16(os.path.join(data_dir, "clip_min.wav"), x[4800 + 8000:4800 + 8000 + MIN_SAMPLES])
        write_wav16(os.path.join(data_dir, "clip_short.wav"),
                    x[4800 + 8000:4800 + 8000 + MIN_SAMPLES - 1])
    pcm, _ = read_wav16(clip)
    pcm_min, _ = read_wav16(os.path.join(data_dir, "clip_min.wav"))
    pcm_short, _ = read_wav16(os.path.join(data_dir, "clip_short.wav"))
    assert len(pcm_min) == MIN_SAMPLES and len(pcm_short) == MIN_SAMPLES - 1
    assert stem_lengths(len(pcm_min))[2] == 1 and stem_lengths(len(pcm_short))[2] == 0
    clips = {"clip": (pcm, +1.0), "clip_min": (pcm_min, -1.0)}
    if not tiny:
        xj, _ = read_wav16(os.path.join(shared_dir(a.shared), "samples", "jfk.wav"))
        clips["jfk"] = (xj, +1.0)

    toks, types, merges = build_vocab(cfg, N_ST[a.config])
    V = len(toks)
    tid = {t: i for i, t in enumerate(toks)}
    chain_a = [BOS] + [tid[p] for p in CHAIN_A] + [EOS]
    cyc = [tid[p] for p in CYCLE_B]
    edges = [(x, y, +1.0) for x, y in zip(chain_a[:-1], chain_a[1:])]
    edges += [(BOS, cyc[0], -1.0)] + [(cyc[i], cyc[(i + 1) % len(cyc)], -1.0) for i in range(len(cyc))]
    chain_tokens = sorted({t for e in edges for t in e[:2]})

    g = torch.Generator().manual_seed(a.seed)
    W = random_weights(cfg, g, knobs)
    R, W["dec.token_embd.weight"] = design_embeddings(cfg, g, chain_tokens, knobs)
    # conv0 scale: pre-tanh std = stem_gain on the main clip
    pre = Fn.conv1d(torch.from_numpy(pcm).reshape(1, 1, -1), W["enc.conv.0.weight"], stride=64)
    W["enc.conv.0.weight"] *= knobs["stem_gain"] / float(pre.std())
    W = {n: f32r(t) for n, t in W.items()}

    # switch direction: mean_t(enc_out)·w = sign per clip (min-norm solution)
    means = torch.stack([encoder(torch.from_numpy(x), W, cfg)["enc_out"].mean(0) for x, _ in clips.values()])
    signs = torch.tensor([s for _, s in clips.values()])
    sw = torch.linalg.lstsq(means, signs[:, None], driver="gelsd").solution[:, 0]
    design(cfg, W, R, edges, sw, None, knobs)
    W = {n: f32r(t) for n, t in W.items()}
    # calibration: last-FFN input along the intended paths (that FFN affects nothing else)
    c_sum, c_cnt, sw_vals = torch.zeros(V), torch.zeros(V), []
    for name, (x, s) in clips.items():
        enc = encoder(torch.from_numpy(x), W, cfg)
        ckv = cross_kv(enc["enc_out"], W, cfg)
        path = chain_a[:-1] if s > 0 else ([BOS] + (cyc * 40))[:cfg["max_pos"]]
        taps = {}
        decoder(path, ckv, W, cfg, taps)
        h = taps["ffn_in"]
        for j, t in enumerate(path):
            c_sum[t] += float(R[t] @ h[j])
            c_cnt[t] += 1
        sw_vals.append(float(h[:, 1].abs().mean()))
        print("calib %-9s switch h[1] mean %+.3f (min |.| %.3f)" % (name, float(h[:, 1].mean()),
                                                                   float(h[:, 1].abs().min())))
    c_tok = torch.where(c_cnt > 0, c_sum / c_cnt.clamp(min=1), torch.ones(V))
    design(cfg, W, R, edges, sw, (c_tok, sum(sw_vals) / len(sw_vals)), knobs)
    W = {n: f32r(t) for n, t in W.items()}

    slug = "moonshine-%s-ref" % a.config
    summary = {"config": a.config, "seed": a.seed, "knobs": knobs, "V": V,
               "rot_dims": rot_dims(cfg["d"] // cfg["heads"], cfg["prf"])}
    for preset in a.dtypes.split(","):
        path = os.path.join(a.out, "%s-%s.gguf" % (slug, preset))
        write_gguf(path, cfg, W, toks, types, merges, preset, "moonshine-" + a.config)
        Wq = read_back(path, cfg, W, preset, V)
        print("wrote %s (%d bytes), read back OK" % (path, os.path.getsize(path)))
        for cname, (x, s) in clips.items():
            enc, ckv, r, logits = run_clip(x, Wq, cfg, toks)
            t1, t2, t3 = stem_lengths(len(x))
            r.update(n_samples=len(x), T1=t1, T2=t2, T_enc=t3)
            # float32 re-run (what a float32 port may show) with an F32 K/V cache
            torch.set_default_dtype(torch.float32)
            W32 = to_dtype(Wq, torch.float32)
            enc32 = encoder(torch.from_numpy(x).float(), W32, cfg)
            ids32, _, _, lg32 = greedy(cross_kv(enc32["enc_out"], W32, cfg), W32, cfg)
            torch.set_default_dtype(torch.float64)
            r["f32_same_ids"] = ids32 == r["ids"]
            r["f32_max_abs_enc_err"] = float((enc32["enc_out"].double() - enc["enc_out"]).abs().max())
            n = min(len(lg32), len(logits))
            r["f32_max_abs_logit_err"] = float((lg32[:n].double() - logits[:n]).abs().max())
            key = "%s_%s" % (preset, cname)
            summary[key] = r
            print("%-14s T_enc %3d  gen %3d  %-16s min margin %7.3f  f32: same ids %s, "
                  "enc err %.1e, logit err %.1e\n    %r" % (
                      key, t3, r["n_generated"], r["status"], r["min_margin"], r["f32_same_ids"],
                      r["f32_max_abs_enc_err"], r["f32_max_abs_logit_err"], r["text"][:120]))
            if tiny:
                # the conv stem is F32 in every preset (docs/formats/moonshine.md §3.3):
                # its goldens are written once
                for k2 in ("conv1_out", "groupnorm_out", "stem_out"):
                    f = os.path.join(a.out, "%s_%s.npy" % (cname, k2))
                    if preset == "F32":
                        npsave(f, enc[k2])
                    else:
                        assert np.array_equal(np.load(f), enc[k2].numpy().astype(np.float32)), f
                stem = os.path.join(a.out, key)
                for k2 in ("block0_out", "enc_out"):
                    npsave(stem + "_" + k2 + ".npy", enc[k2])
                npsave(stem + "_cross_k0.npy", ckv[0][0])
                npsave(stem + "_cross_v0.npy", ckv[0][1])
                # logits of every greedy step (row j = step j, input token = prefix[j])
                npsave(stem + "_logits.npy", logits)
    summary["short_clip"] = dict(n_samples=MIN_SAMPLES - 1, T_enc=0,
                                 expect="transcribe_run fails: TRANSCRIBE_ERR_GGUF (docs/formats/moonshine.md §4, §9)")
    with open(os.path.join(a.out, "decode.json"), "w") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
