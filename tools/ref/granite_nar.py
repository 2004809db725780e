#!/usr/bin/python3
"""Granite Speech NAR reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/granite_nar.md (and docs/formats/granite_speech.md for
the shared Conformer and front end, docs/formats/gguf.md for the container),
independently of the C code. Pieces:

* front end (docs/formats/granite_nar.md §4): the Granite mel of granite.py
  (reflect 256, periodic Hann, HTK 80x257 bank, log10, clamp max-8, odd
  T_mel drops a frame, 2-frame stacking) from the stored `frontend.*` buffers.
* Conformer (§5.1): the granite.py block math (macaron FFNs, block-local
  Shaw attention, conv module, post LN) under the NAR tensor names, the
  char-CTC softmax bypass after block n_layers/2 (blank probability kept),
  captures per `layer_indices` taken AFTER the bypass, frame-level BPE logits.
* first-pass hypothesis (§6.1): importance-weighted 4-frame pooling of the BPE
  logits, argmax with the channel-0 quirk, blank = EOS id, collapse.
* projector (§5.2): per-layer LayerNorms, Linear + tanh GELU, zero padding
  after the GELU, 15-frame windows, 3 mean-pooled queries + query, K/V =
  window + window_positions, cross-attention + SiLU MLP layers, out LN + Linear,
  n_audio = min(floor(T_enc/5), 3*nb).
* fusion (§5.3), insertion slots (§6.2), one bidirectional Granite-4 pass with
  no mask, RoPE positions from the first audio row, tied head / logits_scaling
  (§6.3), argmax / EOS drop / collapse / byte-level BPE decode (§6.4).
* GGUF writer in the published schema (§2 keys with their types, §3 tensors,
  F32 / F16 / Q8_0 files per the quantizer policy of docs/formats/gguf.md §9.5).

usage:
  granite_nar.py --config tiny --out tests/data/granite_nar
  granite_nar.py --config real --out build-ref/granite-nar   (random weights, published dims)
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import causal_lm as clm  # noqa: E402
import gguf_writer as gw  # noqa: E402
import granite as gs  # noqa: E402  (mel, Shaw attention, conv module, FFN of the AR family)
import llm_common as lc  # noqa: E402
import mel_ref  # noqa: E402
import tok_ref  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REAL_VOCAB = 100352
N_ADDED = 96  # added tokens at 100256..100351 (docs/formats/granite_nar.md §2.2)
PAD_REAL, EOS_REAL = 100256, 100257
LANGS = ["en", "fr", "de", "es", "pt"]

CONFIGS = {
    "tiny": dict(
        enc_layers=4, enc_h=32, enc_heads=2, enc_hd=16, ctc_dim=24, ff_mult=4, conv_k=15, conv_exp=2,
        max_pos_emb=64, context=48, pool=4, layer_indices=[1, 2, 3, -1], self_cond=2,
        p_layers=2, p_h=32, p_heads=4, mlp_ratio=2, block=15, down=5, p_eps=1e-6,
        lm_layers=2, hidden=64, inter=128, heads=4, kv_heads=2, head_dim=16, vocab=512, max_pos=4096,
        emb_mult=12.0, att_mult=1.0 / 16, res_mult=0.22, logit_scale=8.0, size_label="tiny",
        enc_seed=61, p_seed=62, lm_seed=63),
    "real": dict(
        enc_layers=16, enc_h=1024, enc_heads=8, enc_hd=128, ctc_dim=348, ff_mult=4, conv_k=15, conv_exp=2,
        max_pos_emb=512, context=200, pool=4, layer_indices=[4, 8, 12, -1], self_cond=8,
        p_layers=2, p_h=2048, p_heads=32, mlp_ratio=2, block=15, down=5, p_eps=1e-6,
        lm_layers=40, hidden=2048, inter=4096, heads=16, kv_heads=4, head_dim=128, vocab=REAL_VOCAB,
        max_pos=4096, emb_mult=12.0, att_mult=0.0078125, res_mult=0.22, logit_scale=8.0, size_label="2.3B",
        enc_seed=71, p_seed=72, lm_seed=73),
}

# The clip: the first 38 957 samples of samples/jfk.wav ("and so my fellow
# americans"): floor(n/160) = 243 (odd -> one more frame dropped), T_mel 242,
# T_enc 121 = 2*48 + 25 (3 attention blocks, the last partial), 31 pooling
# windows (the last holds one frame), 9 projector windows (the last holds one
# real frame), n_audio = min(24, 27) = 24.
CLIP_N = 243 * 160 + 77
# The noise clip: samples 36 000 .. 45 809 of samples/jfk.wav (the pause after
# "americans", background noise only): floor(n/160) = 61 (odd), T_mel 60, T_enc 30,
# 8 pooling windows. The char head is built to give it blank probability 1 on every
# frame, so every window is blank and the hypothesis is empty (docs/formats/granite_nar.md
# §6.1: empty transcript).
NOISE_AT, NOISE_N = 36000, 61 * 160 + 50

# First-pass hypothesis the BPE-CTC head is fitted to, one label per pooling
# window: a word (one BPE token each), "_" = blank (EOS id), "!" = channel 0
# (the docs/formats/granite_nar.md §6.1 quirk: treated as blank). Repeated labels in
# adjacent windows collapse.
WINDOW_LABELS = ["_", "and", "and", "so", "!", "uh", "my", "my", "fellow", "fellow", "americans", "americans",
                 "americans", "_", "ask", "not", "not", "_", "what", "your", "your", "contry", "contry", "_", "can",
                 "do", "do", "_", "_", "_", "_"]
# LM edits (token-local, last-layer FFN units): substitution and deletion.
EDIT_SUB = ("contry", "country")
EDIT_DEL = "uh"
CORPUS_WORDS = ["and", "so", "uh", "my", "fellow", "americans", "ask", "not", "what", "your", "contry", "country",
                "can", "do", "for", "you"]


# --------------------------------------------------------------------------
# tokenizer (docs/formats/granite_nar.md §2.2): byte-level BPE, added tokens at
# the real distance from the end of the table
# --------------------------------------------------------------------------

class Vocab:
    def __init__(self, cfg):
        V = cfg["vocab"]
        self.base = V - N_ADDED
        self.pad, self.eos = self.base + (PAD_REAL - 100256), self.base + (EOS_REAL - 100256)
        byte_pieces = [tok_ref.BYTE_MAP[b] for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                       + list(range(0xAE, 0x100))]
        byte_pieces += [tok_ref.BYTE_MAP[b] for b in range(256) if tok_ref.BYTE_MAP[b] not in byte_pieces]
        corpus = [" ".join(CORPUS_WORDS)] * 20 + [w for w in CORPUS_WORDS] * 20 + [" " + w for w in CORPUS_WORDS] * 20
        self.merges = tok_ref.train_bpe(corpus, min(120, self.base - 256), "gpt2") if V < 4096 else []
        self.tokens = byte_pieces + [m.replace(" ", "") for m in self.merges]
        seen = set()
        for i, p in enumerate(self.tokens):
            assert p not in seen, p
            seen.add(p)
        self.types = [1] * len(self.tokens)
        while len(self.tokens) < self.base:
            self.tokens.append("<|unused_%d|>" % len(self.tokens))
            self.types.append(1)
        while len(self.tokens) < V:
            i = len(self.tokens)
            self.tokens.append("<|added_%d|>" % i)
            self.types.append(3 if (i - self.base) % 2 == 0 else 4)
        self.tokens[self.pad], self.types[self.pad] = "<|pad|>", 3
        self.tokens[self.eos], self.types[self.eos] = "<|end_of_text|>", 3
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)

    def word_id(self, w, first):
        ids = self.bpe.encode(((" " if not first else "") + w).encode(), "gpt2")
        assert len(ids) == 1, (w, ids)
        return ids[0]

    def decode(self, ids):
        return self.bpe.decode_bytes(ids)


def window_targets(vocab):
    """WINDOW_LABELS -> channel per window (blank = EOS id, '!' = channel 0)."""
    words = [w for w in WINDOW_LABELS if w not in "_!"]
    out = []
    for w in WINDOW_LABELS:
        if w == "_":
            out.append(vocab.eos)
        elif w == "!":
            out.append(0)
        else:
            out.append(vocab.word_id(w, w == words[0]))  # the first word has no leading space
    return out


# --------------------------------------------------------------------------
# encoder (docs/formats/granite_nar.md §5.1)
# --------------------------------------------------------------------------

AR_NAME = {"ff1_up": "ff1.up", "ff1_down": "ff1.down", "ff2_up": "ff2.up", "ff2_down": "ff2.down",
           "attn_q": "attn.q", "attn_kv": "attn.kv", "attn_out": "attn.out", "attn_rel_pos_emb": "attn.rel_pos_emb",
           "conv_pointwise1": "conv.pointwise1", "conv_pointwise2": "conv.pointwise2",
           "conv_depthwise": "conv.depthwise", "conv_bn": "conv.bn"}

BLOCK_SUFFIXES = [
    "norm_ff1.weight", "norm_ff1.bias", "ff1_up.weight", "ff1_up.bias", "ff1_down.weight", "ff1_down.bias",
    "norm_attn.weight", "norm_attn.bias", "attn_q.weight", "attn_kv.weight", "attn_out.weight", "attn_out.bias",
    "attn_rel_pos_emb.weight", "norm_conv.weight", "norm_conv.bias", "conv_pointwise1.weight",
    "conv_pointwise1.bias", "conv_depthwise.weight", "conv_bn.weight", "conv_bn.bias", "conv_bn.running_mean",
    "conv_bn.running_var", "conv_pointwise2.weight", "conv_pointwise2.bias", "norm_ff2.weight", "norm_ff2.bias",
    "ff2_up.weight", "ff2_up.bias", "ff2_down.weight", "ff2_down.bias", "norm_post.weight", "norm_post.bias"]


def ar_view(W, l):
    """Block l's tensors under the AR family names granite.py uses."""
    p = "enc.blocks.%d." % l
    out = {}
    for s in BLOCK_SUFFIXES:
        stem, _, leaf = s.rpartition(".")
        out[p + AR_NAME.get(stem, stem) + "." + leaf] = W[p + s]
    return out


def capture_blocks(cfg):
    """layer_indices (1-based over block outputs) -> 0-based block indices."""
    L = cfg["enc_layers"]
    return [L + i if i < 0 else max(i - 1, 0) for i in cfg["layer_indices"]]


def encoder(cfg, W, stacked):
    """stacked [T_enc, 160] -> dict(x final, blank [T_enc], cat [T_enc, 4h], bpe [T_enc, V], ctc [T_enc, O],
    blocks: list of block outputs (after the bypass where it applies))."""
    dt = W["enc.input_linear.weight"].dtype
    x = torch.as_tensor(stacked, dtype=dt) @ W["enc.input_linear.weight"].T + W["enc.input_linear.bias"]
    L = cfg["enc_layers"]
    caps = capture_blocks(cfg)
    blocks, blank, ctc = [], None, None
    for i in range(L):
        A = ar_view(W, i)
        p = "enc.blocks.%d." % i
        x = gs.ffn_half(A, p, x, "ff1")
        x = x + gs.shaw_attention(cfg, A, p, x)
        x = x + gs.conv_module(cfg, A, p, x)
        x = gs.ffn_half(A, p, x, "ff2")
        x = gs.layer_norm(x, A[p + "norm_post.weight"], A[p + "norm_post.bias"], 1e-5)
        if i + 1 == L // 2:
            ctc = x @ W["enc.ctc_proj.weight"].T + W["enc.ctc_proj.bias"]
            sm = torch.softmax(ctc, dim=-1)
            blank = sm[:, 0]
            x = x + sm @ W["enc.ctc_bypass.weight"].T + W["enc.ctc_bypass.bias"]
        blocks.append(x)
    bpe = x @ W["enc.ctc_bpe.weight"].T + W["enc.ctc_bpe.bias"]
    cat = torch.cat([blocks[c] for c in caps], dim=1)
    return dict(x=x, blank=blank, ctc=ctc, cat=cat, bpe=bpe, blocks=blocks)


def pooled_weights(blank, pool):
    """docs/formats/granite_nar.md §6.1 pooling weights: list per window of (frames, weights) or None (blank window)."""
    imp = 1.0 - blank
    T = imp.shape[0]
    out = []
    for w in range(-(-T // pool)):
        t = torch.arange(w * pool, min(w * pool + pool, T))
        total = float(imp[t].sum())
        out.append(None if total <= 1e-9 else (t, imp[t] / total))
    return out


def pool_features(x, blank, pool):
    """Importance-pooled rows of x (the BPE logits are linear in x, so pooled logits = pooled x @ W^T + b)."""
    rows = []
    for pw in pooled_weights(blank, pool):
        rows.append(None if pw is None else (pw[1][:, None] * x[pw[0]]).sum(0))
    return rows


def bpe_hypothesis(cfg, bpe, blank, blank_id):
    """docs/formats/granite_nar.md §6.1: (hyp ids, per-window chosen channel, per-window margin top1 - top2)."""
    pooled = pool_features(bpe, blank, cfg["pool"])
    shift = 1 if blank_id == 0 else 0
    prev, hyp, chosen, margins = -1, [], [], []
    for row in pooled:
        a = blank_id
        if row is not None:
            v = int(torch.argmax(row))  # first maximum = lowest id on ties (strict '>')
            a = blank_id if v == 0 else v
            top2 = torch.topk(row, 2).values
            margins.append(float(top2[0] - top2[1]))
        if a != blank_id and a != prev:
            hyp.append(a - shift)
        prev = a
        chosen.append(a)
    return hyp, chosen, margins


# --------------------------------------------------------------------------
# projector (docs/formats/granite_nar.md §5.2)
# --------------------------------------------------------------------------

def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def projector(cfg, W, cat):
    """cat [T_enc, n*h] -> (tokens [n_audio, llm_dim], all tokens [3*nb, llm_dim], Z [T_enc, P])."""
    T = cat.shape[0]
    h, eps, nh = cfg["enc_h"], cfg["p_eps"], cfg["p_heads"]
    lin = lambda x, n: x @ W[n + ".weight"].T + W[n + ".bias"]
    ln = lambda x, n: gs.layer_norm(x, W[n + ".weight"], W[n + ".bias"], eps)
    n_enc = len(cfg["layer_indices"])
    E = torch.cat([ln(cat[:, j * h:(j + 1) * h], "prj.layer_norms.%d" % j) for j in range(n_enc)], dim=1)
    Z = gelu_tanh(lin(E, "prj.layer_projector"))
    B, D = cfg["block"], cfg["down"]
    nq = B // D
    nb = -(-T // B)
    Zp = torch.zeros(nb * B, Z.shape[1], dtype=Z.dtype)
    Zp[:T] = Z
    P = Z.shape[1]
    hd = P // nh
    pos = W["prj.window_positions"].reshape(B, P)
    query = W["prj.query"].reshape(nq, P)
    out = []
    for b in range(nb):
        Wb = Zp[b * B:(b + 1) * B]
        KV = Wb + pos
        Q = Wb.reshape(nq, D, P).mean(dim=1) + query
        for l in range(cfg["p_layers"]):
            p = "prj.blocks.%d." % l
            qn = ln(Q, p + "norm_attn")
            q = lin(qn, p + "cross_attn_q").view(nq, nh, hd)
            k = lin(KV, p + "cross_attn_k").view(B, nh, hd)
            v = lin(KV, p + "cross_attn_v").view(B, nh, hd)
            s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
            o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(nq, P)
            Q = Q + lin(o, p + "cross_attn_o")
            fn = ln(Q, p + "norm_ffn")
            Q = Q + lin(torch.nn.functional.silu(lin(fn, p + "ffn_fc1")), p + "ffn_fc2")
        out.append(lin(ln(Q, "prj.out_norm"), "prj.out_linear"))
    allt = torch.cat(out, dim=0)
    n_audio = min(T // D, nq * nb)
    return allt[:n_audio], allt, Z


# --------------------------------------------------------------------------
# LM (docs/formats/granite_nar.md §5.3, §6.2-§6.4)
# --------------------------------------------------------------------------

def insertion_slots(hyp, eos):
    n_text = max(2 * len(hyp) + 1, 8)
    ids = [eos] * n_text
    for i, t in enumerate(hyp):
        ids[2 * i + 1] = t
    return ids


def lm_input(cfg, W, proj, text_ids):
    """docs/formats/granite_nar.md §5.3: audio rows round-trip through *(1/m) in float32,
    then X = m * concat(A, embeddings)."""
    m = cfg["emb_mult"]
    A = (proj.float() * np.float32(1.0 / m)).to(proj.dtype) if m > 0 else proj
    Tx = W["dec.token_embd.weight"][torch.as_tensor(text_ids, dtype=torch.long)]
    X = torch.cat([A, Tx], dim=0)
    return X * m if m > 0 else X


def lm_bidi(cfg, W, X, n_audio, causal=False):
    """docs/formats/granite_nar.md §6.3: every block without a mask; logits of the text rows (after / logits_scaling).
    causal=True is only for the sensitivity check (what a causal port would get)."""
    T = X.shape[0]
    nh, nkv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    pos = torch.arange(T)
    ang = clm.rope_angles(pos, hd, 10000.0)
    Mr, eps = cfg["res_mult"], 1e-5
    for l in range(cfg["lm_layers"]):
        p = "dec.blocks.%d." % l
        h = clm.rms_norm(X, W[p + "norm_attn.weight"], eps)
        q = clm.apply_rope((h @ W[p + "attn.q.weight"].T).view(T, nh, hd), ang)
        k = clm.apply_rope((h @ W[p + "attn.k.weight"].T).view(T, nkv, hd), ang)
        v = (h @ W[p + "attn.v.weight"].T).view(T, nkv, hd)
        g = nh // nkv
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        s = torch.einsum("qhd,khd->hqk", q, k) * cfg["att_mult"]
        if causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1)[None], float("-inf"))
        o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(T, nh * hd)
        X = X + Mr * (o @ W[p + "attn.o.weight"].T)
        h = clm.rms_norm(X, W[p + "norm_ffn.weight"], eps)
        f = torch.nn.functional.silu(h @ W[p + "ffn.gate.weight"].T) * (h @ W[p + "ffn.up.weight"].T)
        X = X + Mr * (f @ W[p + "ffn.down.weight"].T)
    Y = clm.rms_norm(X[n_audio:], W["dec.output_norm.weight"], eps)
    logits = Y @ W["dec.token_embd.weight"].T
    ls = cfg["logit_scale"]
    return logits / ls if ls > 0 and ls != 1 else logits


def final_decode(logits, eos):
    """docs/formats/granite_nar.md §6.4: (ids, per-slot argmax, per-slot margin)."""
    prev, out, am, margins = -1, [], [], []
    for row in logits:
        a = int(torch.argmax(row))
        top2 = torch.topk(row, 2).values
        am.append(a)
        margins.append(float(top2[0] - top2[1]))
        if a == eos:
            prev = eos
            continue
        if a == prev:
            continue
        out.append(a)
        prev = a
    return out, am, margins


def run(cfg, vocab, W, stacked):
    """The whole docs/formats/granite_nar.md §4-§6 pipeline; returns every intermediate."""
    enc = encoder(cfg, W, stacked)
    hyp, chosen, ctc_margins = bpe_hypothesis(cfg, enc["bpe"], enc["blank"], vocab.eos)
    r = dict(enc=enc, hyp=hyp, chosen=chosen, ctc_margins=ctc_margins)
    if not hyp:
        r.update(ids=[], text=b"")
        return r
    proj, allt, Z = projector(cfg, W, enc["cat"])
    text_ids = insertion_slots(hyp, vocab.eos)
    X = lm_input(cfg, W, proj, text_ids)
    logits = lm_bidi(cfg, W, X, proj.shape[0])
    ids, am, lm_margins = final_decode(logits, vocab.eos)
    r.update(proj=proj, proj_all=allt, Z=Z, text_ids=text_ids, X=X, logits=logits, ids=ids, argmax=am,
             lm_margins=lm_margins, text=vocab.decode(ids))
    return r


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------

f16r = lc.f16r


def build_encoder_weights(cfg, gen, dt):
    h, nh, hd, F = cfg["enc_h"], cfg["enc_heads"], cfg["enc_hd"], cfg["enc_h"] * cfg["ff_mult"]
    ci, K, O = cfg["enc_h"] * cfg["conv_exp"], cfg["conv_k"], cfg["ctc_dim"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    W = {"enc.input_linear.weight": f16r(r(h, 160) / math.sqrt(160) * 2.0), "enc.input_linear.bias": 0.1 * r(h),
         "enc.ctc_proj.weight": f16r(r(O, h) * 2.0 / math.sqrt(h)), "enc.ctc_proj.bias": 0.3 * r(O),
         "enc.ctc_bypass.weight": f16r(r(h, O)), "enc.ctc_bypass.bias": 0.1 * r(h)}
    W["enc.ctc_proj.bias"][0] += 3.5  # blank probability well above zero, varying over time
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        B = {}
        for nm in ("norm_ff1", "norm_attn", "norm_conv", "norm_ff2", "norm_post"):
            B[nm + ".weight"] = 1 + 0.1 * r(h)
            B[nm + ".bias"] = 0.1 * r(h)
        for ff in ("ff1", "ff2"):
            B[ff + "_up.weight"] = f16r(r(F, h) / math.sqrt(h))
            B[ff + "_up.bias"] = 0.1 * r(F)
            B[ff + "_down.weight"] = f16r(r(h, F) / math.sqrt(F))
            B[ff + "_down.bias"] = 0.1 * r(h)
        B["attn_q.weight"] = f16r(r(nh * hd, h) * 1.5 / math.sqrt(h))
        B["attn_kv.weight"] = f16r(r(2 * nh * hd, h) * 1.5 / math.sqrt(h))
        B["attn_out.weight"] = f16r(r(h, nh * hd) / math.sqrt(nh * hd))
        B["attn_out.bias"] = 0.1 * r(h)
        B["attn_rel_pos_emb.weight"] = f16r(r(2 * cfg["max_pos_emb"] + 1, hd))
        B["conv_pointwise1.weight"] = f16r(r(2 * ci, h, 1) / math.sqrt(h))
        B["conv_pointwise1.bias"] = 0.1 * r(2 * ci)
        B["conv_depthwise.weight"] = f16r(r(ci, 1, K) / math.sqrt(K))
        B["conv_bn.weight"] = 1 + 0.1 * r(ci)
        B["conv_bn.bias"] = 0.1 * r(ci)
        B["conv_bn.running_mean"] = 0.1 * r(ci)
        B["conv_bn.running_var"] = 0.5 + torch.rand(ci, generator=gen, dtype=dt)
        B["conv_pointwise2.weight"] = f16r(r(h, ci, 1) / math.sqrt(ci))
        B["conv_pointwise2.bias"] = 0.1 * r(h)
        W.update({p + k: v for k, v in B.items()})
    return W


def build_projector_weights(cfg, gen, dt):
    h, P, H = cfg["enc_h"], cfg["p_h"], cfg["hidden"]
    n_enc, M = len(cfg["layer_indices"]), cfg["p_h"] * cfg["mlp_ratio"]
    nq = cfg["block"] // cfg["down"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    W = {"prj.layer_projector.weight": f16r(r(P, n_enc * h) * 2.0 / math.sqrt(n_enc * h)),
         "prj.layer_projector.bias": 0.1 * r(P),
         "prj.out_norm.weight": 1 + 0.1 * r(P), "prj.out_norm.bias": 0.1 * r(P),
         "prj.out_linear.weight": f16r(r(H, P) / math.sqrt(P)), "prj.out_linear.bias": 0.1 * r(H),
         "prj.query": f16r(0.5 * r(1, nq, P)), "prj.window_positions": f16r(0.5 * r(1, cfg["block"], P))}
    for j in range(n_enc):
        W["prj.layer_norms.%d.weight" % j] = 1 + 0.1 * r(h)
        W["prj.layer_norms.%d.bias" % j] = 0.1 * r(h)
    for l in range(cfg["p_layers"]):
        b = "prj.blocks.%d." % l
        W[b + "norm_attn.weight"] = 1 + 0.1 * r(P)
        W[b + "norm_attn.bias"] = 0.1 * r(P)
        for x, g in (("q", 2.0), ("k", 2.0), ("v", 1.0), ("o", 1.0)):
            W[b + "cross_attn_%s.weight" % x] = f16r(r(P, P) * g / math.sqrt(P))
            W[b + "cross_attn_%s.bias" % x] = 0.1 * r(P)
        W[b + "norm_ffn.weight"] = 1 + 0.1 * r(P)
        W[b + "norm_ffn.bias"] = 0.1 * r(P)
        W[b + "ffn_fc1.weight"] = f16r(r(M, P) / math.sqrt(P))
        W[b + "ffn_fc1.bias"] = 0.1 * r(M)
        W[b + "ffn_fc2.weight"] = f16r(r(P, M) / math.sqrt(M))
        W[b + "ffn_fc2.bias"] = 0.1 * r(P)
    return W


def fit_bpe_head(cfg, vocab, enc_runs, targets, margin=12.0, ridge=1e-3):
    """BPE-CTC head fitted to the wanted window labels: least squares on the
    pooled final encoder features (one row per window and per encoder run) to
    logits +margin on the label channel, 0 on every other fitted channel;
    channels never used as labels get zero weight and bias 0 - margin."""
    V, h = cfg["vocab"], cfg["enc_h"]
    rows, lab = [], []
    for e in enc_runs:
        pooled = pool_features(e["x"], e["blank"], cfg["pool"])
        assert len(pooled) == len(targets), (len(pooled), len(targets))
        for row, t in zip(pooled, targets):
            if row is None:  # a blank window (total <= 1e-9): nothing to fit
                assert t == vocab.eos, "a labelled window is blank"
                continue
            rows.append(torch.cat([row, torch.ones(1)]))
            lab.append(t)
    A = torch.stack(rows)  # [N, h+1]
    used = sorted(set(lab))
    Y = torch.zeros(len(rows), len(used))
    for i, t in enumerate(lab):
        Y[i, used.index(t)] = margin
    # ridge least squares (the bias column is regularised too; tiny ridge)
    G = A.T @ A + ridge * torch.eye(h + 1)
    Wt = torch.linalg.solve(G, A.T @ Y)  # [h+1, n_used]
    Wb = torch.zeros(V, h)
    bb = torch.full((V,), -margin)
    for j, t in enumerate(used):
        Wb[t] = Wt[:h, j]
        bb[t] = Wt[h, j]
    return f16r(Wb), bb, float(torch.linalg.cond(A))


# residual dims reserved by the LM construction
D_CONST = 0
N_RESERVED = 1
KAPPA, RHO = lc.KAPPA, lc.RHO


def build_lm_weights(cfg, vocab, specials, edits, gen, dt, gamma=40.0, alpha=24.0, beta=2.5):
    """Granite LM weights: a 'copy machine' (each text slot's own token wins the
    tied head) with token-local edits.
    * embeddings κ·e0 + ρ·R_t: the special tokens (hypothesis, edit targets,
      EOS) orthonormal in the free dims, every other token orthogonal to them;
    * random blocks whose sublayers never write dim 0 (small: ~0.25 embedding
      units of noise over the whole stack), output norm γ > 0 (wide logits);
    * last-layer FFN: one SwiGLU unit per edit (a -> b) fires only on token a
      and writes β·(R_b − R_a) (in embedding units): substitution / deletion
      (b = EOS). Everything else is copied, so the audio rows act through the
      random attention (logit values), not through the argmax."""
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    nh, nkv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    L = cfg["lm_layers"]
    Me, Mr = cfg["emb_mult"], cfg["res_mult"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    R, E, free = lc.successor_embeddings(r, V, H, N_RESERVED, {"all": specials}, dt, D_CONST)
    S = R[torch.tensor(specials)][:, free]  # orthonormal rows
    others = torch.tensor([t for t in range(V) if t not in set(specials)])
    Ro = R[others][:, free]
    Ro = Ro - (Ro @ S.T) @ S
    R[others[:, None], free[None, :]] = Ro / Ro.norm(dim=1, keepdim=True)
    E = RHO * R
    E[:, D_CONST] = KAPPA
    W = {"dec.token_embd.weight": f16r(E), "dec.output_norm.weight": gamma * (1 + 0.1 * r(H).abs())}
    out_scale = 0.25 / math.sqrt(2 * L * H) * Me / Mr
    clm.random_blocks(W, r, L, H, I, nh * hd, nkv * hd, hd, out_scale, N_RESERVED, qk_norm=False, q_gain=4.0)
    wn, n, gate, up, down = lc.ffn_unit_scale(W, L, H)
    g_exp = 0.5 * alpha
    act = g_exp / (1 + math.exp(-g_exp))
    for u, (a, b) in enumerate(edits):
        ra = R[a]
        gate[u] = 0
        gate[u, free] = alpha * n * ra[free] / wn[free]
        gate[u, D_CONST] = -alpha * 0.5 * n * RHO / (KAPPA * wn[D_CONST])
        up[u] = 0
        up[u, free] = n * ra[free] / wn[free]
        down[:, u] = 0
        down[free, u] = beta * (R[b, free] - R[a, free]) / act * Me / Mr
    lc.round_linear(W)
    return W


# --------------------------------------------------------------------------
# GGUF (docs/formats/granite_nar.md §2, §3)
# --------------------------------------------------------------------------

def tensor_order(cfg):
    names = ["frontend.mel_filterbank", "frontend.window", "enc.input_linear.weight", "enc.input_linear.bias",
             "enc.ctc_proj.weight", "enc.ctc_proj.bias", "enc.ctc_bypass.weight", "enc.ctc_bypass.bias",
             "enc.ctc_bpe.weight", "enc.ctc_bpe.bias"]
    for l in range(cfg["enc_layers"]):
        names += ["enc.blocks.%d.%s" % (l, s) for s in BLOCK_SUFFIXES]
    names += ["prj.layer_projector.weight", "prj.layer_projector.bias", "prj.out_norm.weight", "prj.out_norm.bias",
              "prj.out_linear.weight", "prj.out_linear.bias", "prj.query", "prj.window_positions"]
    for j in range(len(cfg["layer_indices"])):
        names += ["prj.layer_norms.%d.weight" % j, "prj.layer_norms.%d.bias" % j]
    for l in range(cfg["p_layers"]):
        b = "prj.blocks.%d." % l
        names += [b + "norm_attn.weight", b + "norm_attn.bias"]
        for x in "qkvo":
            names += [b + "cross_attn_%s.weight" % x, b + "cross_attn_%s.bias" % x]
        names += [b + "norm_ffn.weight", b + "norm_ffn.bias", b + "ffn_fc1.weight", b + "ffn_fc1.bias",
                  b + "ffn_fc2.weight", b + "ffn_fc2.bias"]
    names += ["dec.token_embd.weight", "dec.output_norm.weight"]
    for l in range(cfg["lm_layers"]):
        p = "dec.blocks.%d." % l
        names += [p + s for s in ("norm_attn.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight",
                                  "attn.o.weight", "norm_ffn.weight", "ffn.gate.weight", "ffn.up.weight",
                                  "ffn.down.weight")]
    n_enc = len(cfg["layer_indices"])
    assert len(names) == 2 + 8 + 32 * cfg["enc_layers"] + 8 + 2 * n_enc + 16 * cfg["p_layers"] + 2 \
        + 9 * cfg["lm_layers"]
    return names


def bucket(name):
    """docs/formats/gguf.md §9.5 buckets for the names of this family."""
    if name == "dec.token_embd.weight":
        return "E"
    if name.startswith("frontend.") or name.endswith(".bias") or "conv_bn." in name or \
            ("norm_" in name and name.endswith(".weight")) or name.endswith("_norm.weight") or \
            ("_norms." in name and name.endswith(".weight")) or name in ("prj.query", "prj.window_positions"):
        return "N"
    if name.endswith(("conv_pointwise1.weight", "conv_pointwise2.weight")):
        return "P"
    if name.endswith("conv_depthwise.weight"):
        return "C"
    return "L"


def ggml_type_for(name, shape, mode):
    """F32 file: everything F32 (a converter-style reference). F16 / Q8_0: quantizer presets."""
    b = bucket(name)
    if mode == "F32" or b in ("N", "C"):
        return gw.GGML_F32
    if b == "P" or mode == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def stored_shape(name, t, mode):
    shape = tuple(t.shape)
    if name in ("prj.query", "prj.window_positions"):
        shape = (1,) + shape[-2:] if mode == "F32" else shape[-2:]  # 3-D like the converter, 2-D derived
    return shape


def ctc_chars(n):
    """Index -> one character, 0 = blank (docs/formats/granite_nar.md §2.3 default table shape)."""
    out = []
    for i in range(n):
        if i == 0:
            out.append("")
        elif 32 <= i <= 255:
            out.append(chr(i))
        elif 256 <= i < 256 + 92:
            out.append(chr(0x30A1 + i - 256))
        else:
            out.append("")
    if n < 64:  # tiny tables: letters from index 1
        out = [""] + [chr(ord("a") + i) for i in range(min(26, n - 1))] + [""] * max(0, n - 27)
    return out[:n]


def write_gguf(path, cfg, vocab, tensors, mode, lazy=False, drop=(), kv_override=None):
    kv_override = kv_override or {}
    w = gw.GGUFWriter()
    add = {"u32": w.add_uint32, "str": w.add_string, "f32": w.add_float32, "bool": w.add_bool}

    def put(kind, key, value):
        if key in kv_override:
            ov = kv_override[key]
            if ov is None:
                return
            kind, value = ov
        if kind == "arr_str":
            w.add_array(key, value, gw.STRING)
        elif kind == "arr_i32":
            w.add_array(key, value, gw.INT32)
        else:
            add[kind](key, value)

    put("str", "general.architecture", "granite_speech_nar")
    put("str", "general.name", "Granite Speech NAR %s (random reference weights)" % cfg["size_label"])
    put("str", "general.basename", "granite-speech-nar")
    put("str", "general.size_label", cfg["size_label"])
    put("str", "general.author", "IBM")
    put("str", "general.organization", "ibm-granite")
    put("str", "general.license", "apache-2.0")
    put("str", "general.license.name", "Apache License 2.0")
    put("str", "general.license.link", "https://www.apache.org/licenses/LICENSE-2.0")
    put("str", "general.repo_url", "https://huggingface.co/ibm-granite/granite-speech-4.1-2b-nar")
    if mode == "F32":
        put("u32", "general.file_type", lc.FILE_TYPE[mode])
    put("arr_str", "general.languages", LANGS)
    put("str", "stt.variant", "granite-speech-4.1-2b-nar")
    for k in ("translate", "lang_detect", "word_timestamps", "speaker_diarization"):
        put("bool", "stt.capability." + k, False)
    put("str", "tokenizer.ggml.model", "gpt2")
    put("str", "tokenizer.ggml.pre", "granite")
    put("arr_str", "tokenizer.ggml.tokens", vocab.tokens)
    put("arr_i32", "tokenizer.ggml.token_type", vocab.types)
    put("arr_str", "tokenizer.ggml.merges", vocab.merges)
    put("u32", "tokenizer.ggml.bos_token_id", vocab.eos)
    put("u32", "tokenizer.ggml.eos_token_id", vocab.eos)
    put("u32", "tokenizer.ggml.padding_token_id", vocab.pad)
    put("arr_str", "stt.granite_nar.ctc_chars", ctc_chars(cfg["ctc_dim"]))
    e = "stt.granite_nar.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("hidden", cfg["enc_h"]), ("n_heads", cfg["enc_heads"]),
                 ("head_dim", cfg["enc_hd"]), ("input_dim", 160), ("output_dim", cfg["ctc_dim"]),
                 ("bpe_output_dim", cfg["vocab"]), ("bpe_pool_window", cfg["pool"]), ("bpe_blank_id", vocab.eos),
                 ("self_cond_layer", cfg["self_cond"]), ("feedforward_mult", cfg["ff_mult"]),
                 ("conv_kernel_size", cfg["conv_k"]), ("conv_expansion", cfg["conv_exp"]),
                 ("max_pos_emb", cfg["max_pos_emb"]), ("context_size", cfg["context"])):
        put("u32", e + k, v)
    put("arr_i32", e + "layer_indices", cfg["layer_indices"])
    p = "stt.granite_nar.projector."
    for k, v in (("n_layers", cfg["p_layers"]), ("hidden", cfg["p_h"]), ("mlp_ratio", cfg["mlp_ratio"]),
                 ("n_heads", cfg["p_heads"]), ("encoder_dim", cfg["enc_h"]),
                 ("num_encoder_layers", len(cfg["layer_indices"])), ("block_size", cfg["block"]),
                 ("downsample_rate", cfg["down"]), ("llm_dim", cfg["hidden"])):
        put("u32", p + k, v)
    put("f32", p + "layernorm_eps", cfg["p_eps"])
    put("bool", p + "attn_bias", True)
    put("bool", p + "mlp_bias", True)
    put("bool", "stt.granite_nar.scale_projected_embeddings", True)
    t = "stt.granite_nar.text."
    for k, v in (("n_layers", cfg["lm_layers"]), ("hidden", cfg["hidden"]), ("intermediate", cfg["inter"]),
                 ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]), ("head_dim", cfg["head_dim"])):
        put("u32", t + k, v)
    put("str", t + "hidden_act", "silu")
    put("f32", t + "rms_norm_eps", 1e-5)
    put("f32", t + "rope_theta", 10000.0)
    put("u32", t + "max_position_embeddings", cfg["max_pos"])
    put("bool", t + "tie_word_embeddings", True)
    put("u32", t + "vocab_size", cfg["vocab"])
    put("f32", t + "embedding_multiplier", cfg["emb_mult"])
    put("f32", t + "logits_scaling", cfg["logit_scale"])
    put("f32", t + "attention_multiplier", cfg["att_mult"])
    put("f32", t + "residual_multiplier", cfg["res_mult"])
    put("u32", t + "bos_id", vocab.eos)
    put("u32", t + "eos_id", vocab.eos)
    put("u32", t + "pad_id", vocab.pad)
    f = "stt.frontend."
    put("str", f + "type", "mel")
    for k, v in (("sample_rate", 16000), ("num_mels", 80), ("n_fft", 512), ("win_length", 400), ("hop_length", 160)):
        put("u32", f + k, v)
    put("str", f + "window", "hann_periodic")
    put("str", f + "normalize", "per_utterance")
    put("str", f + "pad_mode", "reflect")
    put("str", f + "mel_norm", "htk")
    if mode != "F32":  # the quantizer rewrites file_type and moves it after the last scalar
        put("u32", "general.file_type", lc.FILE_TYPE[mode])
    for nm in tensor_order(cfg):
        if nm in drop:
            continue
        tt = tensors[nm]
        shape = stored_shape(nm, tt, mode)
        gt = ggml_type_for(nm, shape, mode)
        to_np = (lambda tt=tt, shape=shape: (tt.float().numpy() if hasattr(tt, "numpy")
                                             else np.asarray(tt, np.float32)).reshape(shape))
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, to_np)
        else:
            w.add_tensor(nm, to_np(), gt)
    return w.write_stream(path) if lazy else w.write(path)


def check_readback(path, tensors, cfg, mode):
    kv, ts = gw.read_gguf(path)
    assert list(ts) == tensor_order(cfg)
    for nm, (gt, ne, a) in ts.items():
        want = tensors[nm].float().numpy()
        shape = stored_shape(nm, tensors[nm], mode)
        assert list(ne) == list(reversed(shape)), (nm, ne, shape)
        want = want.reshape(a.shape)
        assert gt == ggml_type_for(nm, shape, mode), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
        else:
            assert np.abs(a - want).max() <= np.abs(want).max() / 127 + 1e-6, nm
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == cfg["vocab"]
    return kv, ts


def weights_from_gguf(path, dt=torch.float64):
    _, ts = gw.read_gguf(path)
    return {n: torch.from_numpy(a.astype(np.float64)).to(dt) for n, (_, _, a) in ts.items()}


# --------------------------------------------------------------------------
# build + goldens
# --------------------------------------------------------------------------

npsave = lc.npsave


def quantized_view(W, mode):
    """W as the given file type would hold it (Q8_0 round trip of the LIN tensors), without writing a file."""
    out = {}
    for nm, t in W.items():
        shape = stored_shape(nm, t, mode)
        gt = ggml_type_for(nm, shape, mode)
        if gt == gw.GGML_Q8_0:
            a = t.float().numpy().reshape(shape)
            raw = gw.quantize_q8_0(a)
            out[nm] = torch.from_numpy(gw.dequantize_q8_0(raw, a.size).reshape(t.shape).astype(np.float64))
        elif gt == gw.GGML_F16:
            out[nm] = f16r(t)
        else:
            out[nm] = t.float().double()
    return out


def pre_bypass(cfg, W, stacked):
    """The encoder state that feeds the char-CTC head (after block n_layers/2 - 1)."""
    x = torch.as_tensor(stacked) @ W["enc.input_linear.weight"].T + W["enc.input_linear.bias"]
    for i in range(cfg["enc_layers"] // 2):
        A, p = ar_view(W, i), "enc.blocks.%d." % i
        x = gs.ffn_half(A, p, x, "ff1")
        x = x + gs.shaw_attention(cfg, A, p, x)
        x = x + gs.conv_module(cfg, A, p, x)
        x = gs.ffn_half(A, p, x, "ff2")
        x = gs.layer_norm(x, A[p + "norm_post.weight"], A[p + "norm_post.bias"], 1e-5)
    return x


def blank_channel(cfg, W, stacked, noise, k=16.0):
    """Adds k * (s + 1) to the char head's channel 0, s a linear score of the pre-bypass state
    fitted (least squares, refitted on the violators) to <= -1 on every frame of the clip and
    >= +1 on every frame of the noise clip: the noise frames get blank probability 1 (their
    channel 0 leads by > 40), the clip's keeps its spread."""
    Xo, Xe = pre_bypass(cfg, W, stacked), pre_bypass(cfg, W, noise)
    A = torch.cat([torch.cat([Xo, torch.ones(Xo.shape[0], 1)], 1), torch.cat([Xe, torch.ones(Xe.shape[0], 1)], 1)])
    y = torch.cat([-torch.ones(Xo.shape[0]), torch.ones(Xe.shape[0])])
    G = A.T @ A + 1e-4 * torch.eye(A.shape[1])
    w = torch.linalg.solve(G, A.T @ y)
    for _ in range(200):
        sc = A @ w
        w = torch.linalg.solve(G, A.T @ torch.where(y * sc < 1.0, y, sc))
    sc = A @ w
    gap = (float(sc[Xo.shape[0]:].min()), float(sc[:Xo.shape[0]].max()))
    assert gap[0] > 0.9 and gap[1] < -0.9, gap
    h = cfg["enc_h"]
    W["enc.ctc_proj.weight"][0] = f16r(W["enc.ctc_proj.weight"][0] + k * w[:h])
    W["enc.ctc_proj.bias"][0] += k * (w[h] + 1.0)
    return gap


def build_tiny(cfg, vocab, stacked, noise):
    dt = torch.float64
    fb, win = gs.frontend_buffers()
    W = {"frontend.mel_filterbank": torch.from_numpy(fb.astype(np.float64)),
         "frontend.window": torch.from_numpy(win.astype(np.float64))}
    W.update(build_encoder_weights(cfg, torch.Generator().manual_seed(cfg["enc_seed"]), dt))
    W["enc.ctc_bpe.weight"] = torch.zeros(cfg["vocab"], cfg["enc_h"])
    W["enc.ctc_bpe.bias"] = torch.zeros(cfg["vocab"])
    W.update(build_projector_weights(cfg, torch.Generator().manual_seed(cfg["p_seed"]), dt))
    gap = blank_channel(cfg, W, stacked, noise)
    print("noise score >= %.3f, clip score <= %.3f" % gap)
    targets = window_targets(vocab)
    runs = [encoder(cfg, W, stacked), encoder(cfg, quantized_view(W, "Q8_0"), stacked)]
    Wb, bb, cond = fit_bpe_head(cfg, vocab, runs, targets)
    W["enc.ctc_bpe.weight"], W["enc.ctc_bpe.bias"] = Wb, bb
    enc = encoder(cfg, W, stacked)
    hyp, chosen, m = bpe_hypothesis(cfg, enc["bpe"], enc["blank"], vocab.eos)
    want = [vocab.eos if t == 0 else t for t in targets]
    assert chosen == want, (chosen, want)
    print("BPE head fit: cond %.1f, min window margin %.2f, hypothesis %d ids: %r"
          % (cond, min(m), len(hyp), vocab.decode(hyp)))
    specials = sorted(set(hyp) | {vocab.word_id(EDIT_SUB[1], False), vocab.eos})
    edits = [(vocab.word_id(EDIT_SUB[0], False), vocab.word_id(EDIT_SUB[1], False)),
             (vocab.word_id(EDIT_DEL, False), vocab.eos)]
    W.update(build_lm_weights(cfg, vocab, specials, edits, torch.Generator().manual_seed(cfg["lm_seed"]), dt))
    return W


def golden_set(out, tag, r, stacked, cfg):
    """Intermediates of one run (float32 .npy, ids int32)."""
    pre = os.path.join(out, tag + ".")
    e = r["enc"]
    npsave(pre + "enc.npy", e["x"])
    npsave(pre + "enc_cat.npy", e["cat"])
    npsave(pre + "blank.npy", e["blank"])
    npsave(pre + "ctc_logits.npy", e["ctc"])
    pooled = pool_features(e["bpe"], e["blank"], cfg["pool"])
    npsave(pre + "bpe_pooled.npy", torch.stack([p if p is not None else torch.full_like(e["bpe"][0], float("nan"))
                                                for p in pooled]))
    npsave(pre + "hyp.npy", r["hyp"], np.int32)
    npsave(pre + "proj.npy", r["proj"])
    npsave(pre + "lm_in.npy", r["X"])
    npsave(pre + "text_ids.npy", r["text_ids"], np.int32)
    npsave(pre + "logits.npy", r["logits"])
    npsave(pre + "ids.npy", r["ids"], np.int32)
    with open(pre + "text.txt", "wb") as f:
        f.write(r["text"])


def real_tensors(cfg):
    """Lazy random tensors at the published dimensions (no construction: a benchmark file)."""
    h, hd, ci, F = cfg["enc_h"], cfg["enc_hd"], cfg["enc_h"] * cfg["conv_exp"], cfg["enc_h"] * cfg["ff_mult"]
    H, I, V, P = cfg["hidden"], cfg["inter"], cfg["vocab"], cfg["p_h"]
    n_enc, M, nq = len(cfg["layer_indices"]), cfg["p_h"] * cfg["mlp_ratio"], cfg["block"] // cfg["down"]
    shapes = {"frontend.mel_filterbank": (80, 257), "frontend.window": (400,), "enc.input_linear.weight": (h, 160),
              "enc.input_linear.bias": (h,), "enc.ctc_proj.weight": (cfg["ctc_dim"], h),
              "enc.ctc_proj.bias": (cfg["ctc_dim"],), "enc.ctc_bypass.weight": (h, cfg["ctc_dim"]),
              "enc.ctc_bypass.bias": (h,), "enc.ctc_bpe.weight": (V, h), "enc.ctc_bpe.bias": (V,)}
    blk = {"ff1_up.weight": (F, h), "ff1_up.bias": (F,), "ff1_down.weight": (h, F), "ff1_down.bias": (h,),
           "attn_q.weight": (h, h), "attn_kv.weight": (2 * h, h), "attn_out.weight": (h, h), "attn_out.bias": (h,),
           "attn_rel_pos_emb.weight": (2 * cfg["max_pos_emb"] + 1, hd),
           "conv_pointwise1.weight": (2 * ci, h, 1), "conv_pointwise1.bias": (2 * ci,),
           "conv_depthwise.weight": (ci, 1, cfg["conv_k"]), "conv_pointwise2.weight": (h, ci, 1),
           "conv_pointwise2.bias": (h,)}
    for s in ("ff2_up.weight", "ff2_up.bias", "ff2_down.weight", "ff2_down.bias"):
        blk[s] = blk[s.replace("ff2", "ff1")]
    for l in range(cfg["enc_layers"]):
        for s in BLOCK_SUFFIXES:
            shapes["enc.blocks.%d.%s" % (l, s)] = blk.get(s, (ci,) if s.startswith("conv_bn") else (h,))
    shapes.update({"prj.layer_projector.weight": (P, n_enc * h), "prj.layer_projector.bias": (P,),
                   "prj.out_norm.weight": (P,), "prj.out_norm.bias": (P,), "prj.out_linear.weight": (H, P),
                   "prj.out_linear.bias": (H,), "prj.query": (1, nq, P), "prj.window_positions": (1, cfg["block"], P)})
    for j in range(n_enc):
        shapes["prj.layer_norms.%d.weight" % j] = shapes["prj.layer_norms.%d.bias" % j] = (h,)
    for l in range(cfg["p_layers"]):
        b = "prj.blocks.%d." % l
        for s in ("norm_attn.weight", "norm_attn.bias", "norm_ffn.weight", "norm_ffn.bias", "ffn_fc2.bias") + \
                tuple("cross_attn_%s.bias" % x for x in "qkvo"):
            shapes[b + s] = (P,)
        for x in "qkvo":
            shapes[b + "cross_attn_%s.weight" % x] = (P, P)
        shapes.update({b + "ffn_fc1.weight": (M, P), b + "ffn_fc1.bias": (M,), b + "ffn_fc2.weight": (P, M)})
    Qd, Kd = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    shapes.update({"dec.token_embd.weight": (V, H), "dec.output_norm.weight": (H,)})
    for l in range(cfg["lm_layers"]):
        p = "dec.blocks.%d." % l
        shapes.update({p + "norm_attn.weight": (H,), p + "norm_ffn.weight": (H,), p + "attn.q.weight": (Qd, H),
                       p + "attn.k.weight": (Kd, H), p + "attn.v.weight": (Kd, H), p + "attn.o.weight": (H, Qd),
                       p + "ffn.gate.weight": (I, H), p + "ffn.up.weight": (I, H), p + "ffn.down.weight": (H, I)})
    fb, win = gs.frontend_buffers()

    class Lazy:
        def __init__(self, name, shape, idx):
            self.name, self.shape, self.idx = name, shape, idx

        def float(self):
            return self

        def numpy(self):
            if self.name == "frontend.mel_filterbank":
                return fb
            if self.name == "frontend.window":
                return win
            rng = np.random.default_rng(cfg["lm_seed"] * 100003 + self.idx)
            if self.name.endswith("running_var"):
                return (0.5 + rng.random(self.shape)).astype(np.float32)
            if bucket(self.name) == "N" and self.name not in ("prj.query", "prj.window_positions"):
                base = 1.0 if self.name.endswith("weight") else 0.0
                return (base + 0.1 * rng.standard_normal(self.shape, dtype=np.float32)).astype(np.float32)
            fan_in = int(np.prod(self.shape[1:])) if len(self.shape) > 1 else 1
            a = rng.standard_normal(self.shape, dtype=np.float32)
            a *= np.float32(0.02 if self.name in ("dec.token_embd.weight", "prj.query", "prj.window_positions")
                            else 1.0 / math.sqrt(fan_in))
            return a

    T = {n: Lazy(n, s, i) for i, (n, s) in enumerate(shapes.items())}
    assert list(T) != [] and set(T) == set(tensor_order(cfg))
    return T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=os.environ.get("TR_SHARED_DIR", os.path.join(ROOT, "..", "shared")))
    ap.add_argument("--modes", default="F16,Q8_0", help="real config: comma list of F16,Q8_0")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    os.makedirs(a.out, exist_ok=True)
    t0 = t_start = time.time()
    vocab = Vocab(cfg)
    if a.config == "real":
        T = real_tensors(cfg)
        for mode in a.modes.split(","):
            path = os.path.join(a.out, "granite-speech-4.1-2b-nar-ref-%s.gguf" % mode)
            size = write_gguf(path, cfg, vocab, T, mode, lazy=True)
            print("wrote %s (%.1f MB) %.0fs" % (path, size / 1e6, time.time() - t0))
        return
    clip_path = os.path.join(a.out, "jfk_2s4.wav")
    noise_path = os.path.join(a.out, "jfk_noise.wav")
    if not os.path.exists(clip_path) or not os.path.exists(noise_path):
        src = os.path.join(ROOT, "samples", "jfk.wav")
        if not os.path.exists(src):
            src = os.path.join(a.shared, "samples", "jfk.wav")
        x, _ = mel_ref.read_wav(src)
        lc.write_wav16(clip_path, x[:CLIP_N])
        lc.write_wav16(noise_path, x[NOISE_AT:NOISE_AT + NOISE_N])
    x, _ = mel_ref.read_wav(clip_path)
    xn, _ = mel_ref.read_wav(noise_path)
    assert x.size == CLIP_N and xn.size == NOISE_N
    fb, win = gs.frontend_buffers()
    stacked = gs.stacked_mel(x, fb, win)
    noise = gs.stacked_mel(xn, fb, win)
    W = build_tiny(cfg, vocab, stacked, noise)
    log = ["config tiny seeds enc %d proj %d lm %d; clip %d samples, T_enc %d"
           % (cfg["enc_seed"], cfg["p_seed"], cfg["lm_seed"], x.size, stacked.shape[0])]
    results = {}
    for mode in ("F32", "F16", "Q8_0"):
        path = os.path.join(a.out, "granite-nar-tiny-ref-%s.gguf" % mode)
        size = write_gguf(path, cfg, vocab, W, mode)
        check_readback(path, W, cfg, mode)
        Wf = weights_from_gguf(path)
        # the stored buffers drive the front end
        st = gs.stacked_mel(x, Wf["frontend.mel_filterbank"].numpy(), Wf["frontend.window"].numpy())
        assert np.array_equal(st, stacked)
        r = run(cfg, vocab, Wf, st)
        results[mode] = r
        rn = run(cfg, vocab, Wf, noise)
        rn32 = run(cfg, vocab, {k: v.float() for k, v in Wf.items()}, noise.astype(np.float32))
        ctc = rn["enc"]["ctc"]
        lead = float((ctc[:, 0] - ctc[:, 1:].max(dim=1).values).min())
        n_blank_win = sum(pw is None for pw in pooled_weights(rn["enc"]["blank"], cfg["pool"]))
        n_blank_win32 = sum(pw is None for pw in pooled_weights(rn32["enc"]["blank"].double(), cfg["pool"]))
        line = ("%-5s noise clip: T_enc %d, %d/%d blank windows (float32 rerun %d), channel 0 leads by >= %.1f, "
                "hypothesis %r" % (mode, noise.shape[0], n_blank_win, -(-noise.shape[0] // cfg["pool"]),
                                   n_blank_win32, lead, rn["hyp"]))
        print(line)
        log.append(line)
        assert rn["hyp"] == [] and rn32["hyp"] == [] and rn["text"] == b"" and n_blank_win == n_blank_win32 == 8
        results[mode + ".noise"] = rn
        r32 = run(cfg, vocab, {k: v.float() for k, v in Wf.items()}, st.astype(np.float32))
        err = lambda k1, k2=None: float((r32[k1] if k2 is None else r32[k1][k2]).double().sub(
            r[k1] if k2 is None else r[k1][k2]).abs().max())
        line = ("%-5s %8d bytes hyp %d text_ids %d n_audio %d ids %d | min CTC window margin %.2f, min LM slot "
                "margin %.2f, |logits| max %.1f | float32 rerun: same ids %s, enc %.1e cat %.1e proj %.1e "
                "lm_in %.1e logits %.1e"
                % (mode, size, len(r["hyp"]), len(r["text_ids"]), r["proj"].shape[0], len(r["ids"]),
                   min(r["ctc_margins"]), min(r["lm_margins"]), float(r["logits"].abs().max()),
                   r32["ids"] == r["ids"] and r32["hyp"] == r["hyp"], err("enc", "x"), err("enc", "cat"),
                   err("proj"), err("X"), err("logits")))
        print(line)
        log.append(line)
        assert r32["ids"] == r["ids"] and r32["hyp"] == r["hyp"]
    ref, q8 = results["F32"], results["Q8_0"]
    Wf = weights_from_gguf(os.path.join(a.out, "granite-nar-tiny-ref-F32.gguf"))
    na = ref["proj"].shape[0]
    d_causal = float((lm_bidi(cfg, Wf, ref["X"], na, causal=True) - ref["logits"]).abs().max())
    X0 = ref["X"].clone()
    X0[:na] = 0
    d_audio = float((lm_bidi(cfg, Wf, X0, na) - ref["logits"]).abs().max())
    log.append("sensitivity of the text logits: causal mask instead of none %.3f, audio rows zeroed %.3f"
               % (d_causal, d_audio))
    assert results["F16"]["ids"] == ref["ids"] and q8["ids"] == ref["ids"] and q8["hyp"] == ref["hyp"]
    assert all(torch.equal(results["F16"]["logits"], ref["logits"]) for _ in [0])
    assert ref["ids"] != ref["hyp"], "the LM pass must edit the hypothesis"
    npsave(os.path.join(a.out, "mel.npy"), stacked)
    golden_set(a.out, "ref", ref, stacked, cfg)
    golden_set(a.out, "q8", q8, stacked, cfg)
    npsave(os.path.join(a.out, "noise_mel.npy"), noise)
    for tag, mode in (("ref", "F32"), ("q8", "Q8_0")):
        e = results[mode + ".noise"]["enc"]
        npsave(os.path.join(a.out, "%s.noise_enc.npy" % tag), e["x"])
        npsave(os.path.join(a.out, "%s.noise_blank.npy" % tag), e["blank"])
    log.append("hypothesis ids %s text %r" % (ref["hyp"], vocab.decode(ref["hyp"])))
    log.append("text_ids %s" % ref["text_ids"])
    log.append("slot argmax %s" % ref["argmax"])
    log.append("final ids %s text %r" % (ref["ids"], ref["text"]))
    log.append("per-window CTC margins %s" % " ".join("%.1f" % m for m in ref["ctc_margins"]))
    log.append("per-slot LM margins %s" % " ".join("%.1f" % m for m in ref["lm_margins"]))
    log.append("q8 per-slot LM margins %s" % " ".join("%.1f" % m for m in q8["lm_margins"]))
    log.append("eos %d pad %d vocab %d" % (vocab.eos, vocab.pad, cfg["vocab"]))
    with open(os.path.join(a.out, "margins.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    for l in log:
        print(l)
    print("done %.1fs" % (time.time() - t_start))


if __name__ == "__main__":
    main()
