#!/usr/bin/python3
"""Independent float64 reference of the Moonshine Streaming family
(docs/formats/moonshine_streaming.md).

Written from the family specification only (GGUF schema §2-§3, time-domain
front end §4, causal strided convolutions §5.1, sliding-window encoder
blocks §5.2, adapter §5.3, Moonshine decoder with untied head and the
duration budget §6, native streaming §8.1), never from the C sources.
Builds random-weight models in the published GGUF schema (F32, F16, Q8_0),
reads every file back, and writes float64 goldens for committed clips plus
the expected event trace of the streaming algorithm for several chunk sizes
and decode throttles.

    /usr/bin/python3 tools/ref/moonshine_streaming.py --config tiny --out tests/data/moonshine_streaming/tiny
    /usr/bin/python3 tools/ref/moonshine_streaming.py --config real --out build-ref/mss-real
    /usr/bin/python3 tools/ref/moonshine_streaming.py --config real-small --out build-ref/mss-small --no-goldens

Weight design (why the random model decodes varied text that stops): the
decoder is a "successor machine" (as tools/ref/moonshine.py). Residual dim 0
is a constant channel (κ in every embedding row), dim 1 an audio switch
written only by cross-attention head 0 of layer 0 (zero query -> uniform
attention over the frames, value = a direction w fitted on the *adapted*
frames so that the frame mean is positive for every prefix of the main clip
and negative for the 1-sample clip). The other dims hold token directions
(chain tokens orthonormal). The last decoder FFN holds one SwiGLU unit per
successor edge a -> b (value ⟨R_a, h⟩, gate α(⟨R_a, h⟩ − ½), output column
R_b − R_a); only the two edges leaving <s> also read the switch. Branch +1:
<s> -> a 30-token sentence -> </s> (31 decoder steps, so a decode over fewer
than 54 frames is cut by the generation budget 24 + ⌊0.13·T_enc⌋ of §6:
streaming partial decodes grow token by token); branch −1: <s> -> a
5-token cycle that always hits the budget. The head `dec.lm_head.weight` is
a separate tensor (R plus N(0, 0.02) noise, not the embedding). Everything else is
random, so the goldens test all of the math while argmax margins stay large.
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

LN_EPS = 1e-5      # encoder and decoder LayerNorms (docs/formats/moonshine_streaming.md §5.2, §6)
CMVN_EPS = 1e-6    # docs/formats/moonshine_streaming.md §2.2 cmvn_eps
FRAME_LEN = 80     # docs/formats/moonshine_streaming.md §1, §4: 5 ms at 16 kHz
SPF = 4 * FRAME_LEN  # samples per encoder frame (docs/formats/moonshine_streaming.md §5.1, §8.1)
FRONTEND_PAD = 4   # docs/formats/moonshine_streaming.md §8.1
UNK, BOS, EOS, PAD = 0, 1, 2, 0

REAL_TINY_WIN = [(16, 4), (16, 4), (16, 0), (16, 0), (16, 4), (16, 4)]


def _guess_windows(n):  # docs/formats/moonshine_streaming.md §11: first two and last two (16,4), (16,0) elsewhere
    return [(16, 4)] * 2 + [(16, 0)] * (n - 4) + [(16, 4)] * 2


CONFIGS = {
    # e = 48 (not a multiple of 32: every matrix with ne0 = e falls back to F16 in the
    # Q8_0 file, docs/formats/moonshine_streaming.md §3), attention width 2 x 16 = 32 < e, adapter projection 48 -> 64,
    # decoder 4 x 16, factor 0.7 -> rot = (int)(16 * 0.7f) & ~1 = 10 (truncation and bit
    # clearing), windows with L_total = 26, R_total = 12 (240 ms, as the real tiny),
    # P = 160 so that a 3.2 s one-shot input exceeds the adapter table (§5.3, §11).
    "tiny": dict(enc_layers=4, e=48, enc_heads=2, enc_hd=16, enc_ffn=96,
                 windows=[(8, 5), (8, 5), (6, 0), (8, 5)],
                 dec_layers=2, D=64, dec_heads=4, dec_hd=16, dec_ffn=128,
                 vocab=320, n_st=16, max_pos=160, prf=0.7, pad=0,
                 name="Moonshine Streaming Tiny", variant="moonshine-streaming-tiny"),
    # published dimensions (docs/formats/moonshine_streaming.md §1)
    "real": dict(enc_layers=6, e=320, enc_heads=8, enc_hd=40, enc_ffn=1280, windows=REAL_TINY_WIN,
                 dec_layers=6, D=320, dec_heads=8, dec_hd=40, dec_ffn=1280,
                 vocab=32768, n_st=768, max_pos=4096, prf=0.8, pad=0,
                 name="Moonshine Streaming Tiny", variant="moonshine-streaming-tiny",
                 params=44054721, n_tensors=161),
    "real-small": dict(enc_layers=10, e=620, enc_heads=8, enc_hd=64, enc_ffn=2480,
                       windows=_guess_windows(10),
                       dec_layers=10, D=512, dec_heads=8, dec_hd=64, dec_ffn=2048,
                       vocab=32768, n_st=768, max_pos=4096, prf=0.8, pad=0,
                       name="Moonshine Streaming Small", variant="moonshine-streaming-small",
                       params=140135225, n_tensors=262),
    "real-medium": dict(enc_layers=14, e=768, enc_heads=10, enc_hd=64, enc_ffn=3072,
                        windows=_guess_windows(14),
                        dec_layers=14, D=640, dec_heads=10, dec_hd=64, dec_ffn=2560,
                        vocab=32768, n_st=768, max_pos=4096, prf=0.8, pad=0,
                        name="Moonshine Streaming Medium", variant="moonshine-streaming-medium",
                        params=265898113, n_tensors=362),
}

# branch +1 (main clip): 30 distinct pieces, then </s>
CHAIN_A = ["▁And", "▁so", "▁my", "▁fellow", "▁Americans", "<0x2C>", "▁ask", "▁not", "▁what",
           "▁your", "▁country", "▁can", "▁do", "▁for", "▁you", "▁caf", "<0xC3>", "<0xA9>", ".",
           "▁The", "▁quick", "▁brown", "▁fox", "▁jumps", "▁over", "▁lazy", "▁dog", "s", "▁today",
           "<0x21>"]
# branch -1 (1-sample clip): a cycle, cut by the generation budget
CYCLE_B = ["▁hey", "▁ho", "▁let", "'s", "▁go"]
FILL = ["▁the", "▁a", "▁to", "▁of", "▁and", "▁in", "▁is", "▁it", "▁that", "▁we", "e", "t",
        "ing", "ed", "er", "▁be", "▁this", "▁on", "▁with", "▁he", "▁are", "▁as", "▁at", "▁all"]


# --------------------------------------------------------------------------
# vocabulary (docs/formats/moonshine_streaming.md §2.1: same layout as docs/formats/moonshine.md §3.4)
# --------------------------------------------------------------------------
def build_vocab(cfg):
    V, n_st = cfg["vocab"], cfg["n_st"]
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
    merges = list(dict.fromkeys("%s %s" % (w[0], w[1]) for w in words[:64] if len(w) >= 2))
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
    """docs/formats/moonshine_streaming.md §6: (int)((float)head_dim * factor) & ~1, in single precision."""
    return int(np.float32(hd) * np.float32(prf)) & ~1


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def layer_norm(x, g, eps=LN_EPS):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g


def n_frames(n_samples):
    """docs/formats/moonshine_streaming.md §4-§5.1 one-shot geometry: (n_pad, T_f, T1, T_enc)."""
    n_pad = -(-n_samples // FRAME_LEN) * FRAME_LEN
    tf = n_pad // FRAME_LEN
    t1 = -(-tf // 2)
    return n_pad, tf, t1, -(-t1 // 2)


def budget(T_enc):
    """docs/formats/moonshine_streaming.md §6: floor(T_enc * 4 * frame_len * 13 / (2 * 16000)) + 24, integer arithmetic."""
    return T_enc * SPF * 13 // (2 * 16000) + 24 if T_enc > 0 else 0


def causal_conv(x, W, b):
    """docs/formats/moonshine_streaming.md §5.1: x [T, ci]; 4 zero frames prepended, stride 2. Returns [ceil(T/2), co]."""
    xt = Fn.pad(x.T[None], (W.shape[2] - 1, 0))
    return Fn.conv1d(xt, W, b, stride=2)[0].T


def frontend(pcm, W, round_conv_in=False):
    """docs/formats/moonshine_streaming.md §4 + §5.1 on PCM whose length is a multiple of 80. Returns dict of taps.
    round_conv_in: round the two conv inputs to F16 (what ggml's im2col does upstream with
    F16 kernels, §3 numerics); only used to measure that effect, never for goldens."""
    rc = (lambda t: t.half().double()) if round_conv_in else (lambda t: t)
    fr = pcm.reshape(-1, FRAME_LEN)
    mu = fr.mean(1, keepdim=True)
    var = ((fr - mu) ** 2).mean(1, keepdim=True)
    c = (fr - mu) / torch.sqrt(var + CMVN_EPS)
    z = torch.exp(W["enc.embedder.comp.log_k"][0]) * c
    a = torch.log(z + torch.sqrt(z * z + 1.0))  # asinh
    h = Fn.silu(a @ W["enc.embedder.linear.weight"].T)
    u = Fn.silu(causal_conv(rc(h), W["enc.embedder.conv1.weight"], W["enc.embedder.conv1.bias"]))
    y = causal_conv(rc(u), W["enc.embedder.conv2.weight"], W["enc.embedder.conv2.bias"])
    return {"cmvn_out": c, "comp_out": a, "linear_out": h, "conv1_out": u, "conv2_out": y}


def window_mask(T, L, R):
    """docs/formats/moonshine_streaming.md §5.2: allowed(q, k) = 0 <= q-k < L or 0 < k-q < R."""
    q = torch.arange(T)[:, None]
    k = torch.arange(T)[None, :]
    d = q - k
    return ((d >= 0) & (d < L)) | ((d < 0) & (-d < R))


def attention(q, k, v, H, hd, mask=None):
    """q [Tq, H*hd], k/v [Tk, H*hd]; scale 1/sqrt(hd); mask [Tq, Tk] bool (True = visible)."""
    Tq = q.shape[0]
    qh = q.reshape(Tq, H, hd).transpose(0, 1)
    kh = k.reshape(-1, H, hd).transpose(0, 1)
    vh = v.reshape(-1, H, hd).transpose(0, 1)
    s = qh @ kh.transpose(1, 2) / math.sqrt(hd)
    if mask is not None:
        s = s.masked_fill(~mask[None], float("-inf"))
    return (torch.softmax(s, dim=-1) @ vh).transpose(0, 1).reshape(Tq, H * hd)


def encoder(pcm, W, cfg, round_conv_in=False):
    """docs/formats/moonshine_streaming.md §4-§5.2 over PCM (length a multiple of 80). Returns the taps plus block0_out, enc_out."""
    out = frontend(pcm, W, round_conv_in)
    x = out["conv2_out"]
    T = x.shape[0]
    H, hd = cfg["enc_heads"], cfg["enc_hd"]
    for i, (L, R) in enumerate(cfg["windows"]):
        p = "enc.blocks.%d." % i
        h = layer_norm(x, W[p + "norm_attn.weight"])
        o = attention(h @ W[p + "attn.q.weight"].T, h @ W[p + "attn.k.weight"].T,
                      h @ W[p + "attn.v.weight"].T, H, hd, window_mask(T, L, R))
        x = x + o @ W[p + "attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_ffn.weight"])
        x = x + gelu(h @ W[p + "ffn.fc1.weight"].T + W[p + "ffn.fc1.bias"]) @ W[p + "ffn.fc2.weight"].T \
            + W[p + "ffn.fc2.bias"]
        if i == 0:
            out["block0_out"] = x
    out["enc_out"] = layer_norm(x, W["enc.final_norm.weight"])
    return out


def adapter(enc, pos0, W, cfg):
    """docs/formats/moonshine_streaming.md §5.3: x_t = enc_t + pos_emb[pos0 + t]; optional projection (no bias)."""
    T = enc.shape[0]
    assert pos0 + T <= cfg["max_pos"], "adapter table overrun (§5.3, §11.2)"
    x = enc + W["adapter.pos_emb.weight"][pos0:pos0 + T]
    if "adapter.proj.weight" in W:
        x = x @ W["adapter.proj.weight"].T
    return x


def cross_kv(adapted, W, cfg):
    return [(adapted @ W["dec.blocks.%d.cross_attn.k.weight" % i].T,
             adapted @ W["dec.blocks.%d.cross_attn.v.weight" % i].T)
            for i in range(cfg["dec_layers"])]


def rope(x, pos, rot, theta):
    """GPT-J / interleaved RoPE on the first rot dims of every head (docs/formats/moonshine.md
    §5.3, referred to by §6). x [T, H, hd]."""
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


def decoder(tokens, ckv, W, cfg, taps=None):
    """One causal pass over the token prefix (== the K/V-cache steps, self K cached after
    RoPE). Returns the final-norm output [n, D]."""
    H, hd, Fd = cfg["dec_heads"], cfg["dec_hd"], cfg["dec_ffn"]
    rot = rot_dims(hd, cfg["prf"])
    n = len(tokens)
    x = W["dec.token_embd.weight"][torch.tensor(tokens)]
    pos = torch.arange(n)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    for i in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % i
        h = layer_norm(x, W[p + "norm_self.weight"])
        q = rope((h @ W[p + "self_attn.q.weight"].T).reshape(n, H, hd), pos, rot, cfg["theta"])
        k = rope((h @ W[p + "self_attn.k.weight"].T).reshape(n, H, hd), pos, rot, cfg["theta"])
        v = h @ W[p + "self_attn.v.weight"].T
        x = x + attention(q.reshape(n, -1), k.reshape(n, -1), v, H, hd, causal) @ W[p + "self_attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_cross.weight"])
        K, Vv = ckv[i]
        x = x + attention(h @ W[p + "cross_attn.q.weight"].T, K, Vv, H, hd) @ W[p + "cross_attn.out.weight"].T
        h = layer_norm(x, W[p + "norm_ffn.weight"])
        if taps is not None and i == cfg["dec_layers"] - 1:
            taps["ffn_in"] = h
        u = h @ W[p + "ffn.fc1.weight"].T + W[p + "ffn.fc1.bias"]
        x = x + (Fn.silu(u[:, Fd:]) * u[:, :Fd]) @ W[p + "ffn.fc2.weight"].T + W[p + "ffn.fc2.bias"]
    return layer_norm(x, W["dec.final_norm.weight"])


def greedy(ckv, T_enc, W, cfg):
    """docs/formats/moonshine_streaming.md §6 loop. Returns (out ids, truncated, gen_cap, per-step margins, per-step logits)."""
    b = budget(T_enc)
    cap = b if 0 < b < cfg["max_pos"] else cfg["max_pos"]
    head = W["dec.lm_head.weight"]
    seq, out, margins, logits_all = [BOS], [], [], []
    n_past = 0
    while True:
        lg = head @ decoder(seq, ckv, W, cfg)[-1]
        n_past += 1
        top = torch.topk(lg, 2).values
        margins.append(float(top[0] - top[1]))
        logits_all.append(lg)
        tok = int(torch.argmax(lg))  # first maximum on ties (lowest id)
        if tok != EOS:
            out.append(tok)
        if tok == EOS or n_past >= cap:
            break
        seq.append(tok)
    return out, tok != EOS, cap, margins, torch.stack(logits_all)


def text_of(ids, toks):
    raw = sp_decode(ids, toks)
    return raw, (raw[1:] if raw.startswith(" ") else raw)


# --------------------------------------------------------------------------
# streaming (docs/formats/moonshine_streaming.md §8.1)
# --------------------------------------------------------------------------
def stream_totals(cfg):
    L_tot = sum(L - 1 for L, _ in cfg["windows"] if L > 1)
    R_tot = sum(R - 1 for _, R in cfg["windows"] if R > 0)
    return L_tot, R_tot


class Stream:
    """The feed / finalize algorithm of docs/formats/moonshine_streaming.md §8.1 on a float64 model. decode(T) returns
    the ids of a §6 decode over the first T committed frames (cached by the caller);
    rows are the adapted frames computed window by window, exactly as §8.1 slices."""

    def __init__(self, W, cfg, decode, interval_ms=-1, agree_n=0):
        self.W, self.cfg, self.decode = W, cfg, decode
        self.L, self.R = stream_totals(cfg)
        ms = 240 if interval_ms == -1 else interval_ms
        assert ms >= 0
        self.min_frames = max(1, -(-(ms * 16000) // (1000 * SPF)))
        self.agree_n = 3 if agree_n == 0 else agree_n
        self.buf = np.zeros(0)
        self.start = 0
        self.T_emitted = 0
        self.last_decoded = 0
        self.rows = []
        self.history = []
        self.ids = None
        self.text = ""
        self.committed = 0
        self.revision = 0
        self.input_us = 0
        self.committed_us = 0
        self.events = []

    def _flush(self, win_start, win_end, emit_start, emit_end):
        pad = min(FRONTEND_PAD, win_start)
        s0 = win_start - pad
        a, b = s0 * SPF - self.start, win_end * SPF - self.start
        assert a >= 0 and b <= len(self.buf)
        enc = encoder(torch.from_numpy(self.buf[a:b]), self.W, self.cfg)["enc_out"]
        assert enc.shape[0] == win_end - s0
        rows = enc[emit_start - s0:emit_end - s0]
        self.rows.append(adapter(rows, emit_start, self.W, self.cfg))
        self.T_emitted = emit_end

    def _trim(self):
        keep = max(0, self.T_emitted - self.L - FRONTEND_PAD) * SPF
        drop = keep - self.start
        if keep > self.start and 0 < drop < len(self.buf):
            self.buf = self.buf[drop:]
            self.start = keep

    def _set_result(self, ids):
        self.ids = ids
        self.text = text_of(ids, self.toks)[1] if ids else ""

    def feed(self, pcm):
        self.buf = np.concatenate([self.buf, pcm])
        self.input_us += len(pcm) * 1000000 // 16000
        avail = (self.start + len(self.buf)) // SPF
        stable = avail - self.R
        ev = dict(call="feed", n=len(pcm), decoded=False)
        if stable > self.T_emitted:
            e0 = self.T_emitted
            self._flush(max(0, e0 - self.L), stable + self.R, e0, stable)
            self.committed_us = self.T_emitted * SPF * 1000000 // 16000
            self._trim()
            if self.T_emitted - self.last_decoded >= self.min_frames:
                prev = self.text
                self._set_result(self.decode(self.T_emitted))
                self.last_decoded = self.T_emitted
                ev["decoded"] = True
                if self.agree_n <= 1:
                    pref = len(self.ids)
                else:
                    self.history = (self.history + [self.ids])[-self.agree_n:]
                    pref = 0
                    if len(self.history) == self.agree_n:
                        base = self.history[0]
                        pref = len(base)
                        for h in self.history:
                            k = 0
                            while k < min(len(base), len(h)) and base[k] == h[k]:
                                k += 1
                            pref = min(pref, k)
                self.committed = max(self.committed, pref)
                if self.text != prev:
                    self.revision += 1
        ev.update(T_emitted=self.T_emitted, n_ids=len(self.ids) if self.ids is not None else 0,
                  committed=self.committed, revision=self.revision,
                  input_received_ms=self.input_us // 1000, audio_committed_ms=self.committed_us // 1000,
                  buffered_ms=(self.input_us - self.committed_us) // 1000)
        self.events.append(ev)

    def finalize(self):
        ev = dict(call="finalize", decoded=False)
        if len(self.buf) == 0 and self.start == 0:
            self.revision += 1
            ev.update(T_emitted=0, n_ids=0, committed=0, revision=self.revision, empty=True)
            self.events.append(ev)
            return
        rem = len(self.buf) % FRAME_LEN
        if rem:
            self.buf = np.concatenate([self.buf, np.zeros(FRAME_LEN - rem)])
        T_total = (self.start + len(self.buf)) // SPF
        if T_total > self.T_emitted:
            e0 = self.T_emitted
            self._flush(max(0, e0 - self.L), T_total, e0, T_total)
        if self.T_emitted <= 0:
            self.revision += 1
            ev.update(T_emitted=0, n_ids=0, committed=0, revision=self.revision, empty=True)
            self.events.append(ev)
            return
        if self.T_emitted > self.last_decoded or self.ids is None:
            self._set_result(self.decode(self.T_emitted))
            self.last_decoded = self.T_emitted
            ev["decoded"] = True
        self.committed = len(self.ids)
        self.revision += 1
        ev.update(T_emitted=self.T_emitted, n_ids=len(self.ids), committed=self.committed,
                  revision=self.revision)
        self.events.append(ev)

    def adapted(self):
        return torch.cat(self.rows) if self.rows else torch.zeros(0, self.cfg["D"])


def run_stream(pcm, chunk, W, cfg, toks, decode, interval_ms=-1, agree_n=0):
    s = Stream(W, cfg, decode, interval_ms, agree_n)
    s.toks = toks
    for i in range(0, len(pcm), chunk):
        s.feed(pcm[i:i + chunk])
    s.finalize()
    return s


# --------------------------------------------------------------------------
# GGUF schema (docs/formats/moonshine_streaming.md §2, §3)
# --------------------------------------------------------------------------
def has_proj(cfg):
    return cfg["e"] != cfg["D"]


def tensor_shapes(cfg):
    """PyTorch shapes (ne reversed), in write order (docs/formats/moonshine_streaming.md §3)."""
    e, a, Fe = cfg["e"], cfg["enc_heads"] * cfg["enc_hd"], cfg["enc_ffn"]
    D, Fd, V, P = cfg["D"], cfg["dec_ffn"], cfg["vocab"], cfg["max_pos"]
    assert D == cfg["dec_heads"] * cfg["dec_hd"] and e >= a
    s = {"enc.embedder.comp.log_k": (1,),
         "enc.embedder.linear.weight": (e, FRAME_LEN),
         "enc.embedder.conv1.weight": (2 * e, e, 5), "enc.embedder.conv1.bias": (2 * e,),
         "enc.embedder.conv2.weight": (e, 2 * e, 5), "enc.embedder.conv2.bias": (e,),
         "enc.final_norm.weight": (e,)}
    for i in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % i
        s[p + "norm_attn.weight"] = (e,)
        for m in "qkv":
            s[p + "attn.%s.weight" % m] = (a, e)
        s[p + "attn.out.weight"] = (e, a)
        s[p + "norm_ffn.weight"] = (e,)
        s[p + "ffn.fc1.weight"], s[p + "ffn.fc1.bias"] = (Fe, e), (Fe,)
        s[p + "ffn.fc2.weight"], s[p + "ffn.fc2.bias"] = (e, Fe), (e,)
    s["adapter.pos_emb.weight"] = (P, e)
    if has_proj(cfg):
        s["adapter.proj.weight"] = (D, e)
    s["dec.token_embd.weight"] = (V, D)
    s["dec.final_norm.weight"] = (D,)
    s["dec.lm_head.weight"] = (V, D)
    for i in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % i
        s[p + "norm_self.weight"] = (D,)
        for m in ("q", "k", "v", "out"):
            s[p + "self_attn.%s.weight" % m] = (D, D)
        s[p + "norm_cross.weight"] = (D,)
        for m in ("q", "k", "v", "out"):
            s[p + "cross_attn.%s.weight" % m] = (D, D)
        s[p + "norm_ffn.weight"] = (D,)
        s[p + "ffn.fc1.weight"], s[p + "ffn.fc1.bias"] = (2 * Fd, D), (2 * Fd,)
        s[p + "ffn.fc2.weight"], s[p + "ffn.fc2.bias"] = (D, Fd), (D,)
    assert len(s) == 7 + 10 * cfg["enc_layers"] + 1 + int(has_proj(cfg)) + 3 + 15 * cfg["dec_layers"]
    return s


def is_norm_bucket(name):
    """docs/formats/gguf.md §9.5 Norm bucket, as far as these names go: biases, norm gains,
    comp.log_k (adapter.pos_emb.weight is NOT in it)."""
    return name.endswith(".bias") or ("norm_" in name and name.endswith(".weight")) or \
        name.endswith("final_norm.weight") or name == "enc.embedder.comp.log_k"


def dtype_for(name, shape, preset):
    """docs/formats/moonshine_streaming.md §3 stored dtypes: F32 file all F32; F16 file every non-norm tensor F16 (the embedder
    convs included: their names lack `.conv.`); Q8_0 file Q8_0 where ne0 % 32 == 0, else F16."""
    if preset == "F32" or is_norm_bucket(name):
        return gw.GGML_F32
    if preset == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def size_label(n):
    if n >= 1e9:
        return "%.1fB" % (n / 1e9)
    return "%.0fM" % (n / 1e6) if n >= 1e6 else "%.0fK" % (n / 1e3)


def write_gguf(path, cfg, W, toks, types, merges, preset, stream=False):
    shapes = tensor_shapes(cfg)
    n_params = sum(int(np.prod(s)) for s in shapes.values())
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "moonshine_streaming")
    w.add_string("general.name", cfg["name"])
    w.add_string("general.basename", "moonshine_streaming")
    w.add_string("general.size_label", size_label(n_params))
    w.add_string("general.author", "Useful Sensors")
    w.add_string("general.organization", "UsefulSensors")
    w.add_string("general.license", "mit")
    w.add_string("general.license.name", "MIT License")
    w.add_string("general.license.link", "https://opensource.org/license/mit")
    w.add_string("general.repo_url", "https://huggingface.co/UsefulSensors/" + cfg["variant"])
    w.add_uint32("general.file_type", FILE_TYPE[preset])
    w.add_array("general.languages", ["en"])
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.lang_detect", False)
    w.add_bool("stt.capability.translate", False)
    w.add_bool("stt.capability.timestamps", False)
    w.add_bool("stt.capability.streaming", True)
    w.add_string("tokenizer.ggml.model", "bpe")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_bool("tokenizer.ggml.byte_fallback", True)
    w.add_uint32("tokenizer.ggml.unknown_token_id", UNK)
    w.add_uint32("tokenizer.ggml.bos_token_id", BOS)
    w.add_uint32("tokenizer.ggml.eos_token_id", EOS)
    w.add_uint32("tokenizer.ggml.padding_token_id", PAD)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    m = "stt.moonshine_streaming."
    w.add_uint32(m + "encoder.n_layers", cfg["enc_layers"])
    w.add_uint32(m + "encoder.d_model", cfg["e"])
    w.add_uint32(m + "encoder.n_heads", cfg["enc_heads"])
    w.add_uint32(m + "encoder.n_kv_heads", cfg["enc_heads"])
    w.add_uint32(m + "encoder.head_dim", cfg["enc_hd"])
    w.add_uint32(m + "encoder.ffn_dim", cfg["enc_ffn"])
    w.add_string(m + "encoder.activation", "gelu")
    w.add_float32(m + "encoder.frame_ms", 5.0)
    w.add_uint32(m + "encoder.frame_len", FRAME_LEN)
    w.add_array(m + "encoder.sliding_windows", [v for lr in cfg["windows"] for v in lr])  # INT32
    w.add_uint32(m + "decoder.n_layers", cfg["dec_layers"])
    w.add_uint32(m + "decoder.d_model", cfg["D"])
    w.add_uint32(m + "decoder.n_heads", cfg["dec_heads"])
    w.add_uint32(m + "decoder.n_kv_heads", cfg["dec_heads"])
    w.add_uint32(m + "decoder.head_dim", cfg["dec_hd"])
    w.add_uint32(m + "decoder.ffn_dim", cfg["dec_ffn"])
    w.add_string(m + "decoder.activation", "silu")
    w.add_uint32(m + "decoder.vocab_size", cfg["vocab"])
    w.add_uint32(m + "decoder.max_position_embeddings", cfg["max_pos"])
    w.add_bool(m + "decoder.tie_word_embeddings", False)
    w.add_float32(m + "partial_rotary_factor", cfg["prf"])
    w.add_float32(m + "rope_theta", cfg["theta"])
    w.add_bool(m + "attention_bias", False)
    w.add_uint32(m + "pad_head_dim_to_multiple_of", cfg["pad"])
    w.add_bool(m + "encoder_layernorm_unit_offset", True)
    w.add_float32(m + "cmvn_eps", CMVN_EPS)
    w.add_uint32(m + "encoder_hidden_size", cfg["e"])
    w.add_bool(m + "adapter_has_proj", has_proj(cfg))
    w.add_uint32(m + "decoder_start_token_id", BOS)
    w.add_uint32(m + "bos_token_id", BOS)
    w.add_uint32(m + "eos_token_id", EOS)
    w.add_uint32(m + "pad_token_id", PAD)
    w.add_string("stt.frontend.type", "raw")
    w.add_uint32("stt.frontend.sample_rate", 16000)
    w.add_uint32("stt.frontend.num_mels", 1)
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", merges)
    for n, shp in shapes.items():
        if stream:
            w.add_tensor_lazy(n, shp, dtype_for(n, shp, preset),
                              lambda n=n: W[n].numpy().astype(np.float32))
        else:
            w.add_tensor(n, W[n].numpy().astype(np.float32), dtype_for(n, shp, preset))
    if stream:
        w.write_stream(path)
    else:
        w.write(path)
    return n_params


def read_back(path, cfg, W, preset, n_tok):
    """Parse the file, check KV types, tensor order / dtype / ne / values; return the
    weights the file holds (dequantized), in float64."""
    kv, tensors = gw.read_gguf(path)
    shapes = tensor_shapes(cfg)
    assert list(tensors) == list(shapes), "tensor order"
    m = "stt.moonshine_streaming."
    assert kv["general.architecture"] == (gw.STRING, "moonshine_streaming")
    assert kv["general.file_type"] == (gw.UINT32, FILE_TYPE[preset])
    for k in ("encoder.n_layers", "encoder.head_dim", "decoder.head_dim", "decoder.vocab_size",
              "decoder.max_position_embeddings", "encoder.frame_len", "encoder_hidden_size",
              "decoder_start_token_id", "eos_token_id", "pad_token_id", "pad_head_dim_to_multiple_of"):
        assert kv[m + k][0] == gw.UINT32, k
    for k in ("partial_rotary_factor", "rope_theta", "cmvn_eps", "encoder.frame_ms"):
        assert kv[m + k][0] == gw.FLOAT32, k
    for k in ("decoder.tie_word_embeddings", "attention_bias", "adapter_has_proj",
              "encoder_layernorm_unit_offset"):
        assert kv[m + k][0] == gw.BOOL, k
    assert kv[m + "encoder.sliding_windows"] == (gw.ARRAY, (gw.INT32, [v for lr in cfg["windows"] for v in lr]))
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == n_tok
    keys = list(kv)
    assert keys[-3:] == ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"], keys[-3:]
    Wq = {}
    for n, shp in shapes.items():
        gt, ne, arr = tensors[n]
        ref = W[n].numpy().astype(np.float32)
        assert gt == dtype_for(n, shp, preset), n
        assert ne == list(reversed(shp)), (n, ne)
        if gt == gw.GGML_Q8_0:
            assert np.abs(arr - ref).max() <= np.abs(ref).max() / 127.0 + 1e-6, n
        elif gt == gw.GGML_F16:
            assert np.array_equal(arr, ref.astype(np.float16).astype(np.float32)), n
        else:
            assert np.array_equal(arr, ref), n
        Wq[n] = torch.from_numpy(arr.astype(np.float64))
    return Wq


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------
def f32r(t):
    return t.to(torch.float32).to(torch.float64)


DEFAULT_KNOBS = dict(kappa=0.5, rho=1.0, enc_qk=1.5, dec_noise=0.25, head_gain=3.0, head_scale=1.0,
                     head_noise=0.02, switch_gain=1.0, alpha=14.0, log_k=-0.7, pos_std=0.3)


def random_weights(cfg, g, knobs):
    D, Fd = cfg["D"], cfg["dec_ffn"]
    W = {}

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=g) * std
    for n, shp in tensor_shapes(cfg).items():
        if n == "enc.embedder.comp.log_k":
            W[n] = torch.tensor([knobs["log_k"]])
        elif is_norm_bucket(n) and not n.endswith(".bias"):
            W[n] = 1.0 + rn(*shp, std=0.1)  # encoder gains: the folded γ + 1 (docs/formats/moonshine_streaming.md §3)
        elif n.endswith(".bias"):
            W[n] = rn(*shp, std=0.1)
        elif n.startswith("enc."):
            fan_in = shp[1] * (shp[2] if len(shp) == 3 else 1)
            s = 1.0 / math.sqrt(fan_in)
            if n.endswith(("attn.q.weight", "attn.k.weight")):
                s *= knobs["enc_qk"]
            elif n.endswith(("out.weight", "fc2.weight")):
                s *= 0.5
            elif n == "enc.embedder.linear.weight":
                s *= 2.0
            W[n] = rn(*shp, std=s)
        elif n == "adapter.pos_emb.weight":
            W[n] = rn(*shp, std=knobs["pos_std"])
        elif n == "adapter.proj.weight":
            W[n] = rn(*shp, std=1.0 / math.sqrt(shp[1]))
        else:
            W[n] = torch.zeros(*shp)
    noise = knobs["dec_noise"]
    for i in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % i
        for n in ("norm_self", "norm_cross", "norm_ffn"):
            W[p + n + ".weight"] = 1.0 + rn(D, std=0.05)
        for a in ("self_attn", "cross_attn"):
            for m in "qkv":
                W[p + "%s.%s.weight" % (a, m)] = rn(D, D, std=1.0 / math.sqrt(D))
            o = rn(D, D, std=noise / D)
            o[:2] = 0.0
            W[p + a + ".out.weight"] = o
        W[p + "ffn.fc1.weight"] = rn(2 * Fd, D, std=1.0 / math.sqrt(D))
        W[p + "ffn.fc1.bias"] = rn(2 * Fd, std=0.1)
        o = rn(D, Fd, std=2.0 * noise / math.sqrt(Fd * D))
        o[:2] = 0.0
        W[p + "ffn.fc2.weight"] = o
        b = rn(D, std=0.02)
        b[:2] = 0.0
        W[p + "ffn.fc2.bias"] = b
    W["dec.final_norm.weight"] = knobs["head_gain"] * (1.0 + rn(D, std=0.05))
    return W


def design_embeddings(cfg, g, chain_tokens, knobs):
    """E = κ·e0 + ρ·R: chain tokens orthonormal, other tokens unit directions orthogonal
    to them; all directions zero-sum and zero in dims 0-1. The untied head reads R."""
    D, V = cfg["D"], cfg["vocab"]
    nf = D - 2
    ones = torch.ones(nf) / math.sqrt(nf)
    k = len(chain_tokens)
    A = torch.cat([ones[:, None], torch.randn(nf, k, generator=g)], 1)
    Q, _ = torch.linalg.qr(A)
    Q = Q[:, 1:]
    proj = torch.cat([ones[:, None], Q], 1)
    Rf = torch.randn(V, nf, generator=g)
    Rf = Rf - (Rf @ proj) @ proj.T
    Rf = Rf / Rf.norm(dim=1, keepdim=True)
    Rf[torch.tensor(chain_tokens)] = Q.T
    R = torch.zeros(V, D)
    R[:, 2:] = Rf
    E = knobs["rho"] * R
    E[:, 0] = knobs["kappa"]
    head = knobs["head_scale"] * R + torch.randn(V, D, generator=g) * knobs["head_noise"]
    head[:, :2] = 0.0
    return R, E, head


def design(cfg, W, R, edges, switch_w, calib, knobs):
    """Cross head 0 of layer 0 -> switch dim; last-layer FFN units = successor edges.
    calib: (c_tok [V], c_sw {+1: c, -1: c}) measured at the last FFN input."""
    hd, Fd, L = cfg["dec_hd"], cfg["dec_ffn"], cfg["dec_layers"]
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
        fc1[u] = ra          # value half
        b1[u] = 0.0
        gate = alpha * ra.clone()
        if s == 0:           # unconditional edge: gate α(⟨R_a,h⟩/c_a − ½)
            b1[Fd + u] = -alpha / 2
            on = alpha / 2
        else:                # <s> edges: gate α(⟨R_a,h⟩/c_a + s·h1/c_s − 1)
            gate[1] += alpha * s / c_sw[s]
            b1[Fd + u] = -alpha
            on = alpha
        fc1[Fd + u] = gate
        fc2[:, u] = rho * (R[b] - R[a]) / (on / (1.0 + math.exp(-on)))


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


def pad80(x):
    n_pad = n_frames(len(x))[0]
    return np.concatenate([x, np.zeros(n_pad - len(x))])


def oneshot(x, W, cfg):
    """docs/formats/moonshine_streaming.md §4-§6 one-shot path. Returns (encoder taps, adapted, ckv, T_enc)."""
    enc = encoder(torch.from_numpy(pad80(x)), W, cfg)
    T = enc["enc_out"].shape[0]
    ad = adapter(enc["enc_out"], 0, W, cfg)
    return enc, ad, cross_kv(ad, W, cfg), T


def decode_result(ckv, T, W, cfg, toks):
    ids, truncated, cap, margins, logits = greedy(ckv, T, W, cfg)
    raw, text = text_of(ids, toks)
    return dict(ids=ids, tokens=[toks[i] for i in ids], raw_text=raw, text=text,
                n_steps=len(margins), truncated=truncated,
                status="OUTPUT_TRUNCATED" if truncated else "OK", gen_cap=cap, budget=budget(T),
                min_margin=min(margins), margins=[round(m, 4) for m in margins]), logits


STREAM_CASES = [  # (name, chunk samples, min_decode_interval_ms, stable_prefix_agreement_n)
    ("chunk20ms", 320, -1, 0), ("chunk20ms_i0", 320, 0, 0), ("chunk20ms_i500", 320, 500, 0),
    ("chunk100ms", 1600, -1, 0), ("chunk500ms", 8000, -1, 0), ("chunk1000ms", 16000, -1, 0),
    ("chunk1ms_i0", 16, 0, 0), ("chunk1234", 1234, -1, 0), ("chunk100ms_n1", 1600, -1, 1),
    ("whole", None, -1, 0),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="tiny", choices=list(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=None, help="folder with samples/jfk.wav (default ../shared)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--knob", action="append", default=[], help="name=value (DEFAULT_KNOBS)")
    ap.add_argument("--dtypes", default="F32,F16,Q8_0")
    ap.add_argument("--no-goldens", action="store_true", help="real configs: files only (plus the clip decode)")
    a = ap.parse_args()
    cfg = dict(CONFIGS[a.config], theta=10000.0)
    knobs = dict(DEFAULT_KNOBS)
    for kv in a.knob:
        k, v = kv.split("=")
        knobs[k] = float(v)
    os.makedirs(a.out, exist_ok=True)
    tiny = a.config == "tiny"
    big = cfg["vocab"] > 4096
    if big:
        torch.set_num_threads(2)

    # clips (docs/formats/moonshine_streaming.md §4, §5.1, §8.1):
    #   clip.wav     = jfk.wav 0.30 .. 2.80 s, 40 000 samples = 125 encoder frames exactly
    #   clip_min.wav = 1 sample (padded to one 80-sample frame: T_enc 1; a stream drops it)
    data_dir = os.path.dirname(os.path.abspath(a.out)) if tiny else a.out
    clip = os.path.join(data_dir, "clip.wav")
    if not os.path.exists(clip):
        x, sr = read_wav16(os.path.join(shared_dir(a.shared), "samples", "jfk.wav"))
        assert sr == 16000
        write_wav16(clip, x[4800:4800 + 40000])
        write_wav16(os.path.join(data_dir, "clip_min.wav"), x[4800 + 8000:4800 + 8001])
    pcm, _ = read_wav16(clip)
    pcm_min, _ = read_wav16(os.path.join(data_dir, "clip_min.wav"))
    assert len(pcm) == 40000 and len(pcm_min) == 1
    clips = {"clip": pcm, "clip_odd": pcm[:39900], "clip_min": pcm_min}
    if not tiny:
        xj, _ = read_wav16(os.path.join(shared_dir(a.shared), "samples", "jfk.wav"))
        clips["jfk"] = xj
    signs = {"clip": +1, "clip_odd": +1, "clip_min": -1, "jfk": +1}

    toks, types, merges = build_vocab(cfg)
    V = len(toks)
    tid = {t: i for i, t in enumerate(toks)}
    chain_a = [BOS] + [tid[p] for p in CHAIN_A] + [EOS]
    cyc = [tid[p] for p in CYCLE_B]
    edges = [(chain_a[0], chain_a[1], +1)] + [(x, y, 0) for x, y in zip(chain_a[1:-1], chain_a[2:])]
    edges += [(BOS, cyc[0], -1)] + [(cyc[i], cyc[(i + 1) % len(cyc)], 0) for i in range(len(cyc))]
    chain_tokens = sorted({t for e_ in edges for t in e_[:2]})

    g = torch.Generator().manual_seed(a.seed)
    W = random_weights(cfg, g, knobs)
    R, W["dec.token_embd.weight"], W["dec.lm_head.weight"] = design_embeddings(cfg, g, chain_tokens, knobs)
    W = {n: f32r(t) for n, t in W.items()}

    # switch direction w: s = mean_t(adapted_t)·w is positive for every prefix of the
    # main clips (streaming partial decodes see prefixes, docs/formats/moonshine_streaming.md §8.1) and negative for clip_min
    rows_pos, rows_neg = [], []
    for name, x in clips.items():
        _, ad, _, T = oneshot(x, W, cfg)
        if signs[name] > 0:
            cs = torch.cumsum(ad, 0) / torch.arange(1, T + 1)[:, None]
            rows_pos.append(cs)
        else:
            rows_neg.append(ad.mean(0, keepdim=True))
    Apos, Aneg = torch.cat(rows_pos), torch.cat(rows_neg)
    wneg = math.sqrt(Apos.shape[0] / Aneg.shape[0])
    A = torch.cat([Apos, wneg * Aneg])
    y = torch.cat([torch.ones(Apos.shape[0]), -wneg * torch.ones(Aneg.shape[0])])
    sw = torch.linalg.lstsq(A, y[:, None], driver="gelsd").solution[:, 0]
    sp, sn = Apos @ sw, Aneg @ sw
    print("switch fit: positive prefixes min %.3f max %.3f; negative max %.3f" %
          (float(sp.min()), float(sp.max()), float(sn.max())))
    assert float(sp.min()) > 0.2 and float(sn.max()) < -0.2
    design(cfg, W, R, edges, sw, None, knobs)
    W = {n: f32r(t) for n, t in W.items()}

    # calibration: last-FFN input along the intended paths (that FFN affects nothing else)
    c_sum, c_cnt = torch.zeros(V), torch.zeros(V)
    sw_min = {+1: float("inf"), -1: float("inf")}
    for name, x in clips.items():
        _, ad, ckv, T = oneshot(x, W, cfg)
        s = signs[name]
        path = chain_a[:-1] if s > 0 else ([BOS] + cyc * 20)[:budget(T)]
        taps = {}
        decoder(path, ckv, W, cfg, taps)
        h = taps["ffn_in"]
        for j, t in enumerate(path):
            c_sum[t] += float(R[t] @ h[j])
            c_cnt[t] += 1
        sw_min[s] = min(sw_min[s], float((s * h[0, 1])))
        if s > 0:  # every prefix (streaming) at the <s> step
            for Tp in range(1, T + 1):
                taps = {}
                decoder([BOS], [(k[:Tp], v[:Tp]) for k, v in ckv], W, cfg, taps)
                sw_min[s] = min(sw_min[s], float(taps["ffn_in"][0, 1]))
    print("calib switch |h1| min: +1 %.3f, -1 %.3f" % (sw_min[1], sw_min[-1]))
    assert sw_min[1] > 0 and sw_min[-1] > 0
    c_tok = torch.where(c_cnt > 0, c_sum / c_cnt.clamp(min=1), torch.ones(V))
    design(cfg, W, R, edges, sw, (c_tok, sw_min), knobs)
    W = {n: f32r(t) for n, t in W.items()}

    slug = "moonshine-streaming-%s-ref" % a.config
    L_tot, R_tot = stream_totals(cfg)
    n_params = sum(int(np.prod(s)) for s in tensor_shapes(cfg).values())
    if "params" in cfg:
        assert n_params == cfg["params"], (n_params, cfg["params"])
        assert len(tensor_shapes(cfg)) == cfg["n_tensors"]
    summary = {"config": a.config, "seed": a.seed, "knobs": knobs, "V": V, "n_params": n_params,
               "n_tensors": len(tensor_shapes(cfg)),
               "rot_dims": rot_dims(cfg["dec_hd"], cfg["prf"]), "L_total": L_tot, "R_total": R_tot,
               "chain_a": chain_a[1:-1], "cycle_b": cyc}
    stream_ref = None
    for preset in a.dtypes.split(","):
        path = os.path.join(a.out, "%s-%s.gguf" % (slug, preset))
        write_gguf(path, cfg, W, toks, types, merges, preset, stream=big)
        Wq = read_back(path, cfg, W, preset, V)
        print("wrote %s (%d bytes), read back OK" % (path, os.path.getsize(path)))
        for cname, x in clips.items():
            if big and a.no_goldens and cname != "jfk":
                continue
            enc, ad, ckv, T = oneshot(x, Wq, cfg)
            r, logits = decode_result(ckv, T, Wq, cfg, toks)
            n_pad, tf, t1, te = n_frames(len(x))
            assert te == T
            r.update(n_samples=len(x), n_pad=n_pad, T_f=tf, T1=t1, T_enc=T)
            # float32 re-run (what a float32 port may show)
            torch.set_default_dtype(torch.float32)
            W32 = {n: t.float() for n, t in Wq.items()}
            enc32 = encoder(torch.from_numpy(pad80(x)).float(), W32, cfg)
            ad32 = adapter(enc32["enc_out"], 0, W32, cfg)
            ids32, _, _, _, lg32 = greedy(cross_kv(ad32, W32, cfg), T, W32, cfg)
            torch.set_default_dtype(torch.float64)
            r["f32_same_ids"] = ids32 == r["ids"]
            r["f32_max_abs_enc_err"] = float((enc32["enc_out"].double() - enc["enc_out"]).abs().max())
            n = min(len(lg32), len(logits))
            r["f32_max_abs_logit_err"] = float((lg32[:n].double() - logits[:n]).abs().max())
            if preset != "F32":  # upstream im2col rounds the conv inputs to F16 (docs/formats/moonshine_streaming.md §3 numerics)
                h16 = encoder(torch.from_numpy(pad80(x)), Wq, cfg, round_conv_in=True)["enc_out"]
                r["conv_input_f16_max_abs_enc_diff"] = float((h16 - enc["enc_out"]).abs().max())
            key = "%s_%s" % (preset, cname)
            summary[key] = r
            print("%-14s T_enc %3d  steps %3d  %-16s min margin %7.3f  f32: same ids %s, "
                  "enc err %.1e, logit err %.1e\n    %r" % (
                      key, T, r["n_steps"], r["status"], r["min_margin"], r["f32_same_ids"],
                      r["f32_max_abs_enc_err"], r["f32_max_abs_logit_err"], r["text"][:120]))
            if tiny and cname != "clip_odd":
                stem = os.path.join(a.out, key)
                if cname == "clip" and preset == "F32":
                    for k2 in ("comp_out", "linear_out", "conv1_out"):
                        npsave(os.path.join(a.out, "F32_clip_%s.npy" % k2), enc[k2])
                for k2 in ("conv2_out", "block0_out", "enc_out"):
                    npsave(stem + "_" + k2 + ".npy", enc[k2])
                npsave(stem + "_adapter_out.npy", ad)
                npsave(stem + "_cross_k0.npy", ckv[0][0])
                npsave(stem + "_cross_v0.npy", ckv[0][1])
                npsave(stem + "_logits.npy", logits)
        if not tiny:
            continue
        # native streaming (docs/formats/moonshine_streaming.md §8.1) of every committed clip, with several chunkings
        cache = {}
        _, ad_full, _, T_full = oneshot(pcm, Wq, cfg)

        def dec(T, Wq=Wq, ad_full=ad_full):
            if T not in cache:
                rr, _ = decode_result(cross_kv(ad_full[:T], Wq, cfg), T, Wq, cfg, toks)
                cache[T] = rr
            return cache[T]["ids"]
        st = {}
        for name, chunk, ims, agn in STREAM_CASES:
            s = run_stream(pcm, chunk or len(pcm), Wq, cfg, toks, dec, ims, agn)
            dev = float((s.adapted() - ad_full).abs().max())
            assert dev < 1e-9, (name, dev)  # windowed encoding == one-shot rows (docs/formats/moonshine_streaming.md §8.1)
            fin = s.events[-1]
            evs = s.events
            if len(evs) > 200:  # keep the calls where something moved (plus the last two)
                evs = [dict(e_, i=j) for j, e_ in enumerate(evs)
                       if j >= len(evs) - 2 or e_["T_emitted"] != (evs[j - 1]["T_emitted"] if j else 0)]
            st[name] = dict(chunk_samples=chunk or len(pcm), min_decode_interval_ms=ims,
                            stable_prefix_agreement_n=agn,
                            n_feeds=sum(1 for e_ in s.events if e_["call"] == "feed"),
                            n_partial_decodes=sum(1 for e_ in s.events if e_["call"] == "feed" and e_["decoded"]),
                            final_ids=s.ids, final_text=s.text, final_T_emitted=s.T_emitted,
                            final_revision=fin["revision"], max_dev_vs_oneshot=dev,
                            events_filtered=len(evs) != len(s.events), events=evs)
            print("stream %-14s feeds %4d partial decodes %3d revision %3d  %r" % (
                name, st[name]["n_feeds"], st[name]["n_partial_decodes"], fin["revision"], s.text[:60]))
        # the odd-length clip (39 900 samples): the stream keeps floor(39 920 / 320) = 124
        # frames, one-shot ceil = 125 (docs/formats/moonshine_streaming.md §8.1, §11); its own rows, its own decodes
        odd = clips["clip_odd"]
        s_odd = Stream(Wq, cfg, None, -1, 0)
        s_odd.toks = toks
        odd_margins = []

        def dec_odd(T, s_odd=s_odd, Wq=Wq):
            rr, _ = decode_result(cross_kv(s_odd.adapted()[:T], Wq, cfg), T, Wq, cfg, toks)
            odd_margins.append(rr["min_margin"])
            return rr["ids"]
        s_odd.decode = dec_odd
        for i in range(0, len(odd), 1600):
            s_odd.feed(odd[i:i + 1600])
        s_odd.finalize()
        _, ad_odd, _, _ = oneshot(odd, Wq, cfg)
        dev_odd = float((s_odd.adapted() - ad_odd[:s_odd.T_emitted]).abs().max())
        # frames that never see the differing tail (one-shot frame 124 and its padding)
        n_same = s_odd.T_emitted - R_tot
        dev_odd_head = float((s_odd.adapted()[:n_same] - ad_odd[:n_same]).abs().max())
        assert dev_odd_head < 1e-9, dev_odd_head
        st["clip_odd_chunk100ms"] = dict(chunk_samples=1600, T_emitted=s_odd.T_emitted, final_ids=s_odd.ids,
                                         final_text=s_odd.text, min_margin=min(odd_margins),
                                         max_dev_vs_oneshot_rows=dev_odd,
                                         max_dev_vs_oneshot_rows_before_last_R_total=dev_odd_head, events=s_odd.events)
        print("stream clip_odd: T %d, %d ids, dev vs one-shot rows %.2e, min margin %.3f" % (
            s_odd.T_emitted, len(s_odd.ids), dev_odd, min(odd_margins)))
        s_min = run_stream(pcm_min, 1, Wq, cfg, toks, dec, -1, 0)
        st["clip_min_whole"] = dict(events=s_min.events, final_ids=s_min.ids, final_text=s_min.text)
        st["partial_decodes_by_T"] = {str(T): dict(ids=v["ids"], n=len(v["ids"]), truncated=v["truncated"],
                                                   gen_cap=v["gen_cap"], min_margin=v["min_margin"])
                                      for T, v in sorted(cache.items())}
        st["min_margin_all_partial_decodes"] = min(v["min_margin"] for v in cache.values())
        print("stream partial decodes over %d distinct T: min margin %.3f" % (
            len(cache), st["min_margin_all_partial_decodes"]))
        if stream_ref is None:
            stream_ref = st
            with open(os.path.join(a.out, "stream.json"), "w") as fh:
                json.dump(st, fh, indent=None, ensure_ascii=False, separators=(",", ":"))
                fh.write("\n")
        summary["stream_" + preset] = dict(
            same_as_F32=all(st[n_]["final_ids"] == stream_ref[n_]["final_ids"] and
                            [e_.get("n_ids") for e_ in st[n_]["events"]] ==
                            [e_.get("n_ids") for e_ in stream_ref[n_]["events"]]
                            for n_, *_ in STREAM_CASES),
            min_margin_all_partial_decodes=st["min_margin_all_partial_decodes"],
            clip_odd_final_ids=st["clip_odd_chunk100ms"]["final_ids"])
    with open(os.path.join(a.out, "decode.json"), "w") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
