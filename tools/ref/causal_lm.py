#!/usr/bin/python3
"""Shared causal-LM decoder reference (PyTorch, float64 by default).

Written from docs/formats/causal-lm.md (block math §3, RoPE §3.3, audio
injection §6.1, greedy step loop §7) and docs/formats/granite_speech.md §8 (the four
Granite multipliers), independently of the C code. Used by qwen3_asr.py;
usable by any audio-LLM reference (Qwen3-ASR, MOSS, Granite).

Weights are a dict keyed by the GGUF names of docs/formats/causal-lm.md §2 holding torch
tensors in PyTorch (out, in) order:
    dec.token_embd.weight (V, H), dec.output_norm.weight (H),
    [dec.output.weight (V, H) when untied],
    dec.blocks.N.{norm_attn, attn.q, attn.k, attn.v, attn.o,
                  attn.q_norm, attn.k_norm, norm_ffn, ffn.gate, ffn.up, ffn.down}.weight

Self-test: /usr/bin/python3 tools/ref/causal_lm.py
"""
import math
from dataclasses import dataclass

import torch


@dataclass
class LMConfig:
    n_layers: int
    hidden: int
    intermediate: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    eps: float = 1e-6
    rope_theta: float = 1e6
    qk_norm: bool = True  # per-head q/k RMSNorm (Qwen3, MOSS); Granite: False
    tied: bool = True  # head = dec.token_embd.weight; else dec.output.weight
    # Granite hooks (docs/formats/granite_speech.md §8); the defaults are the Qwen3 math.
    embedding_multiplier: float = 1.0  # scales every injected input row
    attention_multiplier: float = 0.0  # score scale; 0 means 1/sqrt(head_dim)
    residual_multiplier: float = 1.0  # scales each sublayer output before the add
    logits_scaling: float = 1.0  # logits are divided by this


def rms_norm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) * w over the last axis (no 1 + w offset)."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def rope_angles(pos, head_dim, theta):
    """theta_i(pos) = pos * theta^(-2i/head_dim), i < head_dim/2 -> [T, head_dim/2]."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv = theta ** (-2.0 * i / head_dim)
    return pos.to(torch.float64)[:, None] * inv[None, :]


def mrope_angles(pos_thw, head_dim, theta, section):
    """Interleaved multimodal RoPE angles: frequency i takes the h position
    when i % 3 == 1 and i < 3*h_sec, the w position when i % 3 == 2 and
    i < 3*w_sec, the t position otherwise (sum(section) == head_dim/2).
    With t == h == w this is rope_angles exactly (docs/formats/causal-lm.md §3.3)."""
    assert sum(section) == head_dim // 2
    ang = [rope_angles(p, head_dim, theta) for p in pos_thw]
    out = ang[0].clone()
    for axis, offset in ((1, 1), (2, 2)):
        idx = torch.arange(offset, 3 * section[axis], 3)
        out[:, idx] = ang[axis][:, idx]
    return out


def apply_rope(x, ang):
    """NeoX / rotate-half: pairs (i, i + hd/2). x [T, heads, hd], ang [T, hd/2]."""
    half = x.shape[-1] // 2
    c = torch.cos(ang).to(x.dtype)[:, None, :]
    s = torch.sin(ang).to(x.dtype)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class KVCache:
    """Per-layer K/V rows [n_ctx, n_kv, hd]; optional F16 rounding on write
    (upstream's default cache type, docs/formats/causal-lm.md §3.4)."""

    def __init__(self, cfg, n_ctx, dtype=torch.float64, f16=False):
        shape = (cfg.n_layers, n_ctx, cfg.n_kv_heads, cfg.head_dim)
        self.k = torch.zeros(shape, dtype=dtype)
        self.v = torch.zeros(shape, dtype=dtype)
        self.f16 = f16
        self.n_ctx = n_ctx

    def write(self, layer, pos0, k, v):
        if self.f16:
            k, v = k.half().to(k.dtype), v.half().to(v.dtype)
        self.k[layer, pos0:pos0 + k.shape[0]] = k
        self.v[layer, pos0:pos0 + v.shape[0]] = v


class CausalLM:
    def __init__(self, cfg: LMConfig, W, dtype=torch.float64):
        self.cfg = cfg
        self.dtype = dtype
        self.W = {k: v.to(dtype) for k, v in W.items()}

    def w(self, name):
        return self.W[name]

    def embed(self, ids):
        return self.w("dec.token_embd.weight")[torch.as_tensor(ids, dtype=torch.long)]

    def inject(self, ids, audio_id, audio):
        """Prompt embeddings with the j-th audio row at the j-th audio_id
        position (docs/formats/causal-lm.md §6.1), times embedding_multiplier."""
        x = self.embed(ids).clone()
        pos = [i for i, t in enumerate(ids) if t == audio_id]
        assert len(pos) == (0 if audio is None else audio.shape[0]), "audio rows != placeholders"
        if pos:
            x[torch.tensor(pos)] = audio.to(self.dtype)
        return x * self.cfg.embedding_multiplier

    def block(self, l, x, pos, cache):
        """One decoder block over rows x [T, H] at positions pos [T]; writes
        K/V rows pos into the cache and attends over rows [0, pos[-1]]."""
        c, p = self.cfg, "dec.blocks.%d." % l
        T = x.shape[0]
        h = rms_norm(x, self.w(p + "norm_attn.weight"), c.eps)
        q = (h @ self.w(p + "attn.q.weight").T).view(T, c.n_heads, c.head_dim)
        k = (h @ self.w(p + "attn.k.weight").T).view(T, c.n_kv_heads, c.head_dim)
        v = (h @ self.w(p + "attn.v.weight").T).view(T, c.n_kv_heads, c.head_dim)
        if c.qk_norm:
            q = rms_norm(q, self.w(p + "attn.q_norm.weight"), c.eps)
            k = rms_norm(k, self.w(p + "attn.k_norm.weight"), c.eps)
        ang = rope_angles(pos, c.head_dim, c.rope_theta)
        q, k = apply_rope(q, ang), apply_rope(k, ang)
        p0 = int(pos[0])
        cache.write(l, p0, k, v)
        n_keys = int(pos[-1]) + 1
        K = cache.k[l, :n_keys]
        V = cache.v[l, :n_keys]
        g = c.n_heads // c.n_kv_heads  # query head h uses KV head h // g
        K = K.repeat_interleave(g, dim=1)
        V = V.repeat_interleave(g, dim=1)
        scale = c.attention_multiplier if c.attention_multiplier else 1.0 / math.sqrt(c.head_dim)
        s = torch.einsum("qhd,khd->hqk", q, K) * scale
        mask = torch.arange(n_keys)[None, :] > pos[:, None]  # key k visible iff k <= pos
        s = s.masked_fill(mask[None], float("-inf"))
        a = torch.softmax(s, dim=-1)
        o = torch.einsum("hqk,khd->qhd", a, V).reshape(T, c.n_heads * c.head_dim)
        x = x + c.residual_multiplier * (o @ self.w(p + "attn.o.weight").T)
        h = rms_norm(x, self.w(p + "norm_ffn.weight"), c.eps)
        f = torch.nn.functional.silu(h @ self.w(p + "ffn.gate.weight").T) * (h @ self.w(p + "ffn.up.weight").T)
        return x + c.residual_multiplier * (f @ self.w(p + "ffn.down.weight").T)

    def hidden(self, x, pos0, cache, upto=None):
        """Runs blocks [0, upto) over rows x placed at positions pos0.."""
        pos = torch.arange(pos0, pos0 + x.shape[0])
        for l in range(self.cfg.n_layers if upto is None else upto):
            x = self.block(l, x, pos, cache)
        return x

    def head(self, x_last):
        c = self.cfg
        y = rms_norm(x_last, self.w("dec.output_norm.weight"), c.eps)
        Wh = self.w("dec.token_embd.weight") if c.tied else self.w("dec.output.weight")
        return (Wh @ y) / c.logits_scaling

    def prefill(self, x, cache):
        """Single-shot prefill (docs/formats/causal-lm.md §6.2): logits of the last prompt position."""
        return self.head(self.hidden(x, 0, cache)[-1])

    def step(self, tok, pos, cache):
        x = self.embed([tok]) * self.cfg.embedding_multiplier
        return self.head(self.hidden(x, pos, cache)[-1])


def argmax_lowest(logits):
    """Greedy choice; ties resolve to the lowest id (torch.argmax gives the
    first maximal index). Also returns the top-1 minus top-2 margin."""
    t = int(torch.argmax(logits))
    top2 = torch.topk(logits.double(), 2).values
    return t, float(top2[0] - top2[1])


def greedy(lm, x_prompt, eos, max_new=256, max_n_kv=None, kv_f16=False, n_ctx=None):
    """Qwen3-ASR / MOSS step loop of docs/formats/causal-lm.md §7: gen starts with the
    prefill token; a step runs while tok != EOS, len(gen) < max_new and
    n_past + 1 <= max_n_kv. Returns (gen ids incl. a final EOS, margins per
    choice, prefill logits, truncated flag)."""
    T = x_prompt.shape[0]
    if max_n_kv is None:
        max_n_kv = 1 << max(10, (T + 256 - 1).bit_length())
    cache = KVCache(lm.cfg, n_ctx or max_n_kv, dtype=lm.dtype, f16=kv_f16)
    logits0 = lm.prefill(x_prompt, cache)
    tok, m = argmax_lowest(logits0)
    gen, margins, n_past = [tok], [m], T
    while tok != eos and len(gen) < max_new and n_past + 1 <= max_n_kv:
        tok, m = argmax_lowest(lm.step(tok, n_past, cache))
        gen.append(tok)
        margins.append(m)
        n_past += 1
    return gen, margins, logits0, gen[-1] != eos


def random_blocks(W, r, L, H, I, Q, K, hd, out_scale, n_reserved=0, qk_norm=True, q_gain=None):
    """Random decoder blocks into W ("dec.blocks.<l>.", draws from r in this
    order): norms near 1, linear weights of unit fan-in variance (q times
    q_gain), the attention output and FFN down scaled by out_scale and kept
    out of the first n_reserved dims; qk_norm adds the Qwen3 q/k norms."""
    for l in range(L):
        p = "dec.blocks.%d." % l
        W[p + "norm_attn.weight"] = 1 + 0.1 * r(H)
        W[p + "norm_ffn.weight"] = 1 + 0.1 * r(H)
        if q_gain is None:
            W[p + "attn.q.weight"] = r(Q, H) / math.sqrt(H)
        else:
            W[p + "attn.q.weight"] = r(Q, H) * q_gain / math.sqrt(H)
        W[p + "attn.k.weight"] = r(K, H) / math.sqrt(H)
        W[p + "attn.v.weight"] = r(K, H) / math.sqrt(H)
        W[p + "attn.o.weight"] = r(H, Q) * out_scale / math.sqrt(Q)
        if qk_norm:
            W[p + "attn.q_norm.weight"] = 1 + 0.1 * r(hd)
            W[p + "attn.k_norm.weight"] = 1 + 0.1 * r(hd)
        W[p + "ffn.gate.weight"] = r(I, H) / math.sqrt(H)
        W[p + "ffn.up.weight"] = r(I, H) / math.sqrt(H)
        W[p + "ffn.down.weight"] = r(H, I) * out_scale / math.sqrt(I)
        if n_reserved:
            W[p + "attn.o.weight"][:n_reserved] = 0
            W[p + "ffn.down.weight"][:n_reserved] = 0


def random_weights(cfg, gen, scale=1.0):
    """Plain random weights in the docs/formats/causal-lm.md §2 layout (self-tests, Granite hooks)."""
    H, I, Q, K = cfg.hidden, cfg.intermediate, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    r = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64)
    W = {"dec.token_embd.weight": r(cfg.vocab, H), "dec.output_norm.weight": 1 + 0.1 * r(H)}
    if not cfg.tied:
        W["dec.output.weight"] = r(cfg.vocab, H)
    random_blocks(W, r, cfg.n_layers, H, I, Q, K, cfg.head_dim, scale, qk_norm=cfg.qk_norm)
    return W


def _self_test():
    torch.manual_seed(0)
    # 1. rotate-half RoPE against the per-pair formula of docs/formats/causal-lm.md §3.3
    hd, th = 8, 1e4
    v = torch.randn(1, 1, hd, dtype=torch.float64)
    pos = torch.tensor([5])
    got = apply_rope(v, rope_angles(pos, hd, th))[0, 0]
    want = v[0, 0].clone()
    for i in range(hd // 2):
        t = 5 * th ** (-2 * i / hd)
        a, b = float(v[0, 0, i]), float(v[0, 0, i + hd // 2])
        want[i], want[i + hd // 2] = a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)
    assert torch.allclose(got, want, atol=1e-14)
    # 2. interleaved mrope with equal t/h/w positions == plain 1-D RoPE
    p = torch.arange(50)
    assert torch.equal(mrope_angles((p, p, p), 128, 1e6, (24, 20, 20)), rope_angles(p, 128, 1e6))
    assert not torch.equal(mrope_angles((p, p + 1, p), 128, 1e6, (24, 20, 20)), rope_angles(p, 128, 1e6))
    # 3. KV-cache stepping == one causal pass (prefill of prompt + tokens)
    for tied, mult in ((True, {}), (False, dict(embedding_multiplier=3.0, attention_multiplier=1 / 16,
                                                residual_multiplier=0.3, logits_scaling=2.0, qk_norm=False))):
        cfg = LMConfig(n_layers=2, hidden=32, intermediate=48, n_heads=4, n_kv_heads=2, head_dim=16, vocab=40,
                       tied=tied, **mult)
        lm = CausalLM(cfg, random_weights(cfg, torch.Generator().manual_seed(1)))
        ids = [3, 7, 9, 1, 2]
        gen, _, _, _ = greedy(lm, lm.inject(ids, -1, None), eos=-1, max_new=6)
        full = ids + gen[:-1]
        cache = KVCache(cfg, 64)
        h = lm.hidden(lm.inject(full, -1, None), 0, cache)
        for j in range(len(gen)):
            assert int(torch.argmax(lm.head(h[len(ids) - 1 + j]))) == gen[j]
    print("causal_lm self-test OK")


if __name__ == "__main__":
    _self_test()
