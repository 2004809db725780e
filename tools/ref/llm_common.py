"""Scaffolding the audio-LLM references share (qwen3_asr.py, granite.py,
moss.py): 16-bit WAV and .npy writers, F16 rounding, the GGUF file types,
and the pieces of the constructed "successor machine" decoders, whose
greedy output is a chosen token chain with large margins:

* embeddings κ·e_const + ρ·r_t, the chain tokens orthonormal in the free
  (non-reserved) dims (successor_embeddings);
* random blocks whose attention / FFN outputs never write the reserved
  dims (causal_lm.random_blocks);
* layer-0 heads that copy a marker dim into a switch dim (switch_head);
* the last layer's FFN, one SwiGLU unit per (token -> successor) edge, sized
  by ffn_unit_scale; every linear weight rounded to F16 (round_linear).

Each function draws from the caller's generator in the order the family
references always drew, so their goldens are unchanged."""
import math
import struct

import numpy as np
import torch

KAPPA, RHO = 0.5, 1.0  # embedding constant / token direction norms
FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}
LINEAR_SUFFIXES = ("attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight",
                   "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight")


def f16r(t):
    """Round to F16-representable values (F32 and F16 files then hold the same math)."""
    return t.half().to(t.dtype)


def write_wav16(path, x):
    """16 kHz mono PCM-16 WAV of samples in [-1, 1)."""
    pcm = np.clip(np.round(np.asarray(x) * 32768.0), -32768, 32767).astype("<i2").tobytes()
    hdr = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16) + b"data" + struct.pack("<I", len(pcm))
    with open(path, "wb") as f:
        f.write(hdr + pcm)


def npsave(path, a, dtype=np.float32):
    """C-order .npy of an array or tensor (tensors through float64)."""
    if isinstance(a, torch.Tensor):
        a = a.double().numpy()
    np.save(path, np.ascontiguousarray(np.asarray(a), dtype=dtype))


def successor_embeddings(r, V, H, n_reserved, chains, dt, d_const):
    """(R, E, free): token directions R (unit rows in the free dims, the
    chain tokens orthonormal), embeddings E = ρ·R + κ·e_const, the free dims.
    chains: branch -> token list."""
    free = torch.arange(n_reserved, H)
    nf = H - n_reserved
    special = sorted({t for c in chains.values() for t in c})
    assert len(special) <= nf, (len(special), nf)
    R = torch.zeros(V, H, dtype=dt)
    g = r(V, nf)
    R[:, free] = g / g.norm(dim=1, keepdim=True)
    qm, _ = torch.linalg.qr(r(nf, len(special)))
    R[torch.tensor(special)[:, None], free[None, :]] = qm.T.to(dt)
    E = RHO * R
    E[:, d_const] = KAPPA
    return R, E, free


def switch_head(W, qh, kvh, hd, j, q_src, k_src, v_src, out_dim, out_gain, qk_gain=1.0):
    """Layer-0 query head qh (KV head kvh) attends at the lowest RoPE
    frequency j from q_src to the rows marked in k_src and copies v_src of
    them into out_dim (gain out_gain)."""
    p = "dec.blocks.0."
    q, k, v, o = (W[p + "attn.%s.weight" % n] for n in "qkvo")
    q[qh * hd:(qh + 1) * hd] = 0
    q[qh * hd + j, q_src] = qk_gain
    k[kvh * hd:(kvh + 1) * hd] = 0
    k[kvh * hd + j, k_src] = qk_gain
    v[kvh * hd] = 0
    v[kvh * hd, v_src] = 1.0
    o[:, qh * hd] = 0
    o[out_dim, qh * hd] = out_gain


def ffn_unit_scale(W, L, H):
    """(norm weight, n, gate, up, down) of the last block's FFN: n turns a
    pure token direction at the FFN input back into unit size."""
    p = "dec.blocks.%d." % (L - 1)
    wn = W[p + "norm_ffn.weight"]
    rms_pure = math.sqrt((KAPPA ** 2 + RHO ** 2) / H)
    return wn, rms_pure / RHO, W[p + "ffn.gate.weight"], W[p + "ffn.up.weight"], W[p + "ffn.down.weight"]


def edges(chains, tag=lambda br: br):
    """(a, b, tag(branch)) for every successor edge of every chain."""
    return [(a, b, tag(br)) for br, seq in chains.items() for a, b in zip(seq[:-1], seq[1:])]


def round_linear(W):
    """Every block linear weight rounded to F16-representable values."""
    for k in list(W):
        if k.endswith(LINEAR_SUFFIXES):
            W[k] = f16r(W[k])
