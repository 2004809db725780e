#!/usr/bin/python3
"""Voxtral 2507 reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/voxtral.md (and the pages it refers to:
docs/formats/gguf.md §8 for the Whisper-style mel, docs/formats/whisper.md for
the encoder blocks, docs/formats/causal-lm.md for the Llama blocks and the
greedy loop), independently of the C code. Pieces (sections of
docs/formats/voxtral.md):

* §4 front end: the PCM is zero-padded to n_chunks·480 000 samples, then one
  Whisper log-mel over the whole padded signal (reflect 200, the stored
  periodic Hann 400, |FFT|², the stored Slaney 128×201 filterbank,
  log10(max(E, 1e-10)), last STFT frame dropped, one maximum g over every
  kept value, (max(L, g−8)+4)/4); chunk c = frames [3000c, 3000c+3000).
* §5 encoder per chunk (two Conv1d + GELU(erf), + sinusoid table, pre-LN
  blocks with k without bias, bidirectional attention, ln_post) and the
  projector (4 consecutive frames concatenated, GELU(erf) between two
  bias-free linears).
* §6.1 special tokens looked up by piece string, §6.2 transcription prompt
  (optional `lang:<code>`) and translation prompt, §6.3 Llama LM without q/k
  norm, NeoX RoPE θ = rope_theta, GQA, untied head, §6.5 budget / KV sizing /
  greedy loop (EOS only), §6.6 text (EOS dropped, isspace trimmed).
* GGUF writer in the published schema (§2 keys with their types and order,
  §3 tensors in write order, §3.1 dtype classes for the F32 / F16 / Q8_0
  presets); every tiny file is read back and its goldens are computed from
  the weights it holds.

Tokenizer: a small tekken-like table: `n_control` CONTROL pieces at the front
(the real ids of docs/formats/voxtral.md §6.1: <unk> 0, <s> 1, </s> 2,
[INST] 3, [/INST] 4, <pad> 11, [AUDIO] 24, [BEGIN_AUDIO] 25, [TRANSCRIBE] 34,
`<SPECIAL_N>` elsewhere), then the 256 byte pieces in byte order (GPT-2
byte-mapped), then merges trained with the qwen2 pre-tokenizer (the
fallback the runtime uses for `tekken`).

LM: a successor-chain machine (llm_common.py pieces): greedy decoding walks
[TRANSCRIBE] → a fixed sentence → </s> (and [/INST] → a short French
sentence → </s> for the translation prompt) with large margins.

usage:
  voxtral.py --config tiny --out tests/data/voxtral
  voxtral.py --config real --out build-ref/voxtral-mini-3b [--dtypes F16] [--no-decode]
"""
import argparse
import math
import os
import struct
import sys
import time
import zlib
from collections import OrderedDict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import causal_lm as clm  # noqa: E402
import gguf_writer as gw  # noqa: E402
import llm_common as lc  # noqa: E402
import mel_ref  # noqa: E402
import tok_ref  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

N_SAMPLES, NB_FRAMES, HOP = 480000, 3000, 160
GEN_RESERVE = 448
PREFILL_CHUNK = 2048
LANGS = ["en", "fr", "de", "es", "it", "pt", "nl", "hi"]
LANG_NAMES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian",
              "pt": "Portuguese", "nl": "Dutch", "hi": "Hindi"}
# tekken ids of docs/formats/voxtral.md §6.1 (the runtime resolves the four prompt pieces by string)
SPECIALS = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]", 11: "<pad>", 24: "[AUDIO]",
            25: "[BEGIN_AUDIO]", 34: "[TRANSCRIBE]"}

CONFIGS = {
    "tiny": dict(enc_layers=2, d_model=32, enc_heads=2, ffn=64, n_mels=128, max_src=1500, ds=4,
                 dec_layers=2, hidden=64, inter=128, heads=8, kv_heads=2, head_dim=16, vocab=512, n_control=64,
                 max_pos=131072, eps=1e-5, theta=1e8, variant="voxtral-mini-3b-2507", name="Voxtral tiny",
                 size_label="tiny", seed=2507),
    "real": dict(enc_layers=32, d_model=1280, enc_heads=20, ffn=5120, n_mels=128, max_src=1500, ds=4,
                 dec_layers=30, hidden=3072, inter=8192, heads=32, kv_heads=8, head_dim=128, vocab=131072,
                 n_control=1000, max_pos=131072, eps=1e-5, theta=1e8, variant="voxtral-mini-3b-2507",
                 name="Voxtral Mini 3B", size_label="4.7B", seed=2507),
}

# Greedy texts of the successor-chain LM: every BPE token occurs once in all chains.
TEXT = "And so, my fellow Americans: ask not what your country can do for you. Voxtral 2507"
TEXT_TR = "Bonjour tout le monde!"
CORPUS_EXTRA = ["lang:" + c for c in LANGS] + ["Translate this to %s." % n for n in LANG_NAMES.values()]

f16r = lc.f16r
npsave = lc.npsave


# --------------------------------------------------------------------------
# tokenizer (docs/formats/voxtral.md §2.2, §6.1)
# --------------------------------------------------------------------------

class TekkenVocab:
    def __init__(self, V, n_control, corpus):
        self.V = V
        self.n_control = n_control
        self.merges = tok_ref.train_bpe(corpus, V - n_control - 256, "qwen2")
        toks = [SPECIALS.get(i, "<SPECIAL_%d>" % i) for i in range(n_control)]
        toks += [tok_ref.BYTE_MAP[b] for b in range(256)]
        seen = set(toks)
        for m in self.merges:
            p = m.replace(" ", "")
            if p in seen:
                p = "<DUP_%d>" % len(toks)
            seen.add(p)
            toks.append(p)
        while len(toks) < V:
            toks.append("<UNUSED_%d>" % len(toks))
        assert len(toks) == V
        self.tokens = toks
        self.types = [3 if i < n_control else 1 for i in range(V)]
        self.id = {p: i for i, p in enumerate(toks)}
        self.bpe = tok_ref.ByteBPE(toks, self.merges)

    def encode(self, text):
        return self.bpe.encode(text.encode("utf-8"), "qwen2")

    def decode(self, ids):
        return self.bpe.decode_bytes(ids).decode("utf-8", "replace")

    def chain_ids(self, text):
        ids = self.encode(text)
        assert len(set(ids)) == len(ids), "chain token repeats: %s" % [self.tokens[i] for i in ids]
        assert self.decode(ids) == text
        return ids

    def special(self, piece):
        """docs/formats/voxtral.md §6.1: looked up by piece string; missing = load error."""
        if piece not in self.id:
            raise ValueError("GGUF error: special piece %s missing" % piece)
        return self.id[piece]


def make_vocab(cfg):
    corpus = [TEXT] * 40 + [TEXT_TR] * 40 + CORPUS_EXTRA * 20
    return TekkenVocab(cfg["vocab"], cfg["n_control"], corpus)


# --------------------------------------------------------------------------
# front end (docs/formats/voxtral.md §3.2, §4)
# --------------------------------------------------------------------------

def frontend_buffers():
    fb = mel_ref.slaney_filterbank(16000, 400, 128, 0.0, 8000.0).astype(np.float32)
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    return fb, win


def n_chunks_of(n):
    return max(1, -(-n // N_SAMPLES))


def logmel(pcm, fb, win):
    """docs/formats/voxtral.md §4: [128, n_chunks·3000], one maximum over the padded utterance."""
    n = pcm.size
    if n < 1:
        raise ValueError("INVALID_ARG: empty PCM")
    nc = n_chunks_of(n)
    x = np.zeros(nc * N_SAMPLES)
    x[:n] = pcm
    p = np.pad(x, 200, mode="reflect")
    n_stft = x.size // HOP + 1
    idx = np.arange(n_stft)[:, None] * HOP + np.arange(400)[None, :]
    spec = np.fft.rfft(p[idx] * win.astype(np.float64)[None, :], n=400, axis=1)
    power = spec.real ** 2 + spec.imag ** 2
    E = fb.astype(np.float64) @ power.T
    L = np.log10(np.maximum(E, 1e-10))[:, :n_stft - 1]
    g = L.max()
    mel = (np.maximum(L, g - 8.0) + 4.0) / 4.0
    assert mel.shape[1] == nc * NB_FRAMES
    return mel


# --------------------------------------------------------------------------
# model (docs/formats/voxtral.md §5, §6)
# --------------------------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps=1e-5)


class Encoder:
    """docs/formats/voxtral.md §5 encoder + projector over one [128, 3000] chunk; get(name) -> tensor (PyTorch order)."""

    def __init__(self, cfg, get, dt):
        self.cfg, self.get, self.dt = cfg, get, dt

    def w(self, n):
        return self.get(n).to(self.dt)

    def encode(self, mel_chunk, taps=None):
        c = self.cfg
        x = torch.as_tensor(np.asarray(mel_chunk)).to(self.dt)[None]
        h = gelu(torch.nn.functional.conv1d(x, self.w("enc.conv.0.weight"), self.w("enc.conv.0.bias"), padding=1))
        h = gelu(torch.nn.functional.conv1d(h, self.w("enc.conv.1.weight"), self.w("enc.conv.1.bias"), stride=2,
                                            padding=1))
        x = h[0].T
        assert x.shape[0] == c["max_src"], "n_mel_frames/2 != max_source_positions"
        x = x + self.w("enc.pos_emb.weight")
        if taps is not None:
            taps["stem"] = x
        T, d, nh = x.shape[0], c["d_model"], c["enc_heads"]
        hd = d // nh
        for l in range(c["enc_layers"]):
            p = "enc.blocks.%d." % l
            y = layer_norm(x, self.w(p + "norm_attn.weight"), self.w(p + "norm_attn.bias"))
            q = (y @ self.w(p + "attn.q.weight").T + self.w(p + "attn.q.bias")).view(T, nh, hd).transpose(0, 1)
            k = (y @ self.w(p + "attn.k.weight").T).view(T, nh, hd).transpose(0, 1)
            v = (y @ self.w(p + "attn.v.weight").T + self.w(p + "attn.v.bias")).view(T, nh, hd).transpose(0, 1)
            a = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(hd), dim=-1)
            o = (a @ v).transpose(0, 1).reshape(T, d)
            x = x + o @ self.w(p + "attn.out.weight").T + self.w(p + "attn.out.bias")
            y = layer_norm(x, self.w(p + "norm_ffn.weight"), self.w(p + "norm_ffn.bias"))
            f = gelu(y @ self.w(p + "ffn.fc1.weight").T + self.w(p + "ffn.fc1.bias"))
            x = x + f @ self.w(p + "ffn.fc2.weight").T + self.w(p + "ffn.fc2.bias")
            if taps is not None and l == 0:
                taps["block0"] = x
        return layer_norm(x, self.w("enc.ln_post.weight"), self.w("enc.ln_post.bias"))

    def project(self, e):
        g = e.reshape(e.shape[0] // self.cfg["ds"], self.cfg["ds"] * e.shape[1])
        return gelu(g @ self.w("proj.linear_1.weight").T) @ self.w("proj.linear_2.weight").T


def lm_config(cfg):
    return clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                        n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                        vocab=cfg["vocab"], eps=cfg["eps"], rope_theta=cfg["theta"], qk_norm=False, tied=False)


def transcription_prompt(vocab, n_audio, language=None):
    """docs/formats/voxtral.md §6.2: [BOS][INST][BEGIN_AUDIO][AUDIO]×n [/INST] (lang:xx)? [TRANSCRIBE]."""
    s = vocab.special
    ids = [s("<s>"), s("[INST]"), s("[BEGIN_AUDIO]")] + [s("[AUDIO]")] * n_audio + [s("[/INST]")]
    if language:
        ids += vocab.encode("lang:" + language)
    return ids + [s("[TRANSCRIBE]")]


def translation_prompt(vocab, n_audio, target=None):
    """docs/formats/voxtral.md §6.2 instruct prompt (no [TRANSCRIBE])."""
    s = vocab.special
    name = LANG_NAMES.get(target, target) if target else "English"
    return ([s("<s>"), s("[INST]"), s("[BEGIN_AUDIO]")] + [s("[AUDIO]")] * n_audio
            + vocab.encode("Translate this to " + name + ".") + [s("[/INST]")])


def pick_kv_cache_context(needed, mx):
    """docs/formats/causal-lm.md §4.2."""
    if needed > 4096:
        n = -(-needed // 4096) * 4096
    else:
        n = 1024
        while n < needed:
            n *= 2
    return min(n, mx)


def budget(T_prompt, n_audio, max_pos, n_ctx=0, kv_ctx=4096):
    """docs/formats/voxtral.md §6.5 -> (status, max_new, max_n_kv, kv n_ctx)."""
    ceiling = min(max_pos, n_ctx) if n_ctx > 0 else max_pos
    if T_prompt + GEN_RESERVE > ceiling:
        return "INPUT_TOO_LONG", 0, 0, kv_ctx
    max_new = min(max(GEN_RESERVE, n_audio), ceiling - T_prompt)
    need = T_prompt + max_new
    if kv_ctx < need:
        kv_ctx = max(kv_ctx, pick_kv_cache_context(need, ceiling))
    m = 1
    while m < max(1024, need):
        m *= 2
    return "OK", max_new, min(m, kv_ctx), kv_ctx


class Model:
    def __init__(self, cfg, vocab, get, dt=torch.float64):
        self.cfg, self.vocab, self.dt = cfg, vocab, dt
        self.enc = Encoder(cfg, get, dt)
        lm_w = {k: get(k) for k in lm_tensor_names(cfg)}
        self.lm = clm.CausalLM(lm_config(cfg), lm_w, dtype=dt)
        self.eos = vocab.special("</s>")
        self.audio_id = vocab.special("[AUDIO]")

    def audio(self, mel, taps=None):
        """Encoder outputs per chunk and the projector rows of the utterance."""
        nc = mel.shape[1] // NB_FRAMES
        encs, projs = [], []
        for c in range(nc):
            t = {} if (taps is not None and c == 0) else None
            e = self.enc.encode(mel[:, c * NB_FRAMES:(c + 1) * NB_FRAMES], t)
            if t is not None:
                taps.update(t)
            encs.append(e)
            projs.append(self.enc.project(e))
        return encs, torch.cat(projs, 0)

    def run(self, n_samples, audio, language=None, task="transcribe", target=None, kv_f16=False, n_ctx=0):
        n_audio = audio.shape[0]
        if task == "transcribe":
            ids = transcription_prompt(self.vocab, n_audio, language)
        else:
            ids = translation_prompt(self.vocab, n_audio, target)
        st, max_new, max_n_kv, kv_ctx = budget(len(ids), n_audio, self.cfg["max_pos"], n_ctx)
        r = dict(prompt=ids, status=st, max_new=max_new, max_n_kv=max_n_kv)
        if st != "OK":
            return r
        x = self.lm.inject(ids, self.audio_id, audio)
        # prefix_len = 3: the audio rows are positions 3 .. 3 + n_audio - 1 (contiguous splice)
        assert all(t == self.audio_id for t in ids[3:3 + n_audio])
        gen, margins, logits0, trunc = clm.greedy(self.lm, x, self.eos, max_new=max_new, max_n_kv=max_n_kv,
                                                  kv_f16=kv_f16, n_ctx=kv_ctx)
        out = gen[:-1] if gen and gen[-1] == self.eos else list(gen)
        raw = self.vocab.decode(out)
        r.update(gen=gen, margins=margins, logits0=logits0, raw_text=raw, text=raw.strip(" \t\n\v\f\r"),
                 status="OUTPUT_TRUNCATED" if trunc else "OK", t1_ms=n_samples * 1000 // 16000)
        return r


# --------------------------------------------------------------------------
# tensors (docs/formats/voxtral.md §3)
# --------------------------------------------------------------------------

ENC_BLOCK = ["norm_attn.weight", "norm_attn.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight",
             "attn.v.weight", "attn.v.bias", "attn.out.weight", "attn.out.bias", "norm_ffn.weight",
             "norm_ffn.bias", "ffn.fc1.weight", "ffn.fc1.bias", "ffn.fc2.weight", "ffn.fc2.bias"]
DEC_BLOCK = ["norm_attn.weight", "norm_ffn.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight",
             "attn.o.weight", "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight"]


def tensor_shapes(cfg):
    """OrderedDict name -> PyTorch shape in the docs/formats/voxtral.md §3.4 write order."""
    d, F, M, P = cfg["d_model"], cfg["ffn"], cfg["n_mels"], cfg["max_src"]
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    Q, K = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    S = OrderedDict()
    S["frontend.mel_filterbank"] = (M, 201)
    S["frontend.window"] = (400,)
    S["enc.conv.0.weight"] = (d, M, 3)
    S["enc.conv.0.bias"] = (d,)
    S["enc.conv.1.weight"] = (d, d, 3)
    S["enc.conv.1.bias"] = (d,)
    S["enc.pos_emb.weight"] = (P, d)
    S["enc.ln_post.weight"] = (d,)
    S["enc.ln_post.bias"] = (d,)
    enc_shape = {"norm_attn.weight": (d,), "norm_attn.bias": (d,), "attn.q.weight": (d, d), "attn.q.bias": (d,),
                 "attn.k.weight": (d, d), "attn.v.weight": (d, d), "attn.v.bias": (d,), "attn.out.weight": (d, d),
                 "attn.out.bias": (d,), "norm_ffn.weight": (d,), "norm_ffn.bias": (d,), "ffn.fc1.weight": (F, d),
                 "ffn.fc1.bias": (F,), "ffn.fc2.weight": (d, F), "ffn.fc2.bias": (d,)}
    for l in range(cfg["enc_layers"]):
        for s in ENC_BLOCK:
            S["enc.blocks.%d.%s" % (l, s)] = enc_shape[s]
    S["proj.linear_1.weight"] = (H, d * cfg["ds"])
    S["proj.linear_2.weight"] = (H, H)
    S["dec.token_embd.weight"] = (V, H)
    S["dec.output_norm.weight"] = (H,)
    S["dec.output.weight"] = (V, H)
    dec_shape = {"norm_attn.weight": (H,), "norm_ffn.weight": (H,), "attn.q.weight": (Q, H),
                 "attn.k.weight": (K, H), "attn.v.weight": (K, H), "attn.o.weight": (H, Q),
                 "ffn.gate.weight": (I, H), "ffn.up.weight": (I, H), "ffn.down.weight": (H, I)}
    for l in range(cfg["dec_layers"]):
        for s in DEC_BLOCK:
            S["dec.blocks.%d.%s" % (l, s)] = dec_shape[s]
    assert len(S) == 2 + 7 + 15 * cfg["enc_layers"] + 2 + 3 + 9 * cfg["dec_layers"]
    return S


def lm_tensor_names(cfg):
    return [n for n in tensor_shapes(cfg) if n.startswith("dec.")]


def dtype_class(name):
    """docs/formats/voxtral.md §3.1: L, A, E, C, N."""
    if name.startswith("frontend.") or name.endswith(".bias") or "norm" in name or name.endswith("ln_post.weight") \
            or name == "enc.pos_emb.weight":
        return "N"
    if name.startswith("enc.conv."):
        return "C"
    if name == "dec.token_embd.weight":
        return "E"
    if name.endswith(("attn.out.weight", "attn.o.weight")):
        return "A"
    return "L"


def ggml_type_for(name, shape, preset):
    c = dtype_class(name)
    if preset == "F32" or c in ("N", "C"):
        return gw.GGML_F32
    if preset == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


# --------------------------------------------------------------------------
# weight design
# --------------------------------------------------------------------------

D_CONST = 0
N_RESERVED = 1


def tensor_gen(seed, name):
    return torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (2 ** 63))


def enc_tensor(cfg, name, shape, dt):
    """Random encoder / projector-input tensor from its own generator (so the
    real config can regenerate any tensor on demand)."""
    g = tensor_gen(cfg["seed"], name)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float32).to(dt)
    d = cfg["d_model"]
    if name == "enc.pos_emb.weight":
        # Whisper sinusoids (docs/formats/voxtral.md §3.3): sin for k < d/2, then cos
        P, half = shape[0], d // 2
        inv = np.exp(-math.log(10000.0) / (half - 1) * np.arange(half))
        t = np.arange(P)[:, None] * inv[None, :]
        return torch.from_numpy(np.concatenate([np.sin(t), np.cos(t)], axis=1)).to(dt)
    if name.endswith(("norm_attn.weight", "norm_ffn.weight", "ln_post.weight")):
        return 1.0 + 0.1 * r(*shape)
    if name.endswith(".bias"):
        return 0.1 * r(*shape) if not name.startswith("enc.conv.0") else -0.2 + 0.1 * r(*shape)
    if name.startswith("enc.conv."):
        fan = shape[1] * shape[2]
        return f16r(r(*shape) * (2.0 if name.startswith("enc.conv.0") else 1.0) / math.sqrt(fan))
    if name.endswith(("attn.q.weight", "attn.k.weight")):
        return f16r(1.5 * r(*shape) / math.sqrt(shape[1]))
    if name.endswith(("attn.out.weight", "ffn.fc2.weight")):
        return f16r(0.5 * r(*shape) / math.sqrt(shape[1]))
    return f16r(r(*shape) / math.sqrt(shape[1]))


class LMDesign:
    """Llama LM (docs/formats/voxtral.md §6.3) as a successor machine, produced
    lazily (one decoder block at a time, each from its own generator, so the
    real config never holds the whole LM): dim 0 is a constant channel (κ in
    every embedding row), the chain tokens are orthonormal in the other dims,
    random blocks (no q/k norm) never write dim 0, and the last block's FFN
    holds one SwiGLU unit per edge a -> b (fires on token a through the
    const-dim threshold τ, writes β·R_b). Untied head = 1.25·R + N(0, 0.02²)
    with a zero const column (differs from the embedding in every row);
    final-norm γ ≈ 2 widens the logits."""

    ROWS = 8192

    def __init__(self, cfg, chains, dt, alpha=24.0, beta=8.0, tau=0.5, out_gain=0.25):
        self.cfg, self.dt = cfg, dt
        self.alpha, self.beta, self.tau = alpha, beta, tau
        H, V = cfg["hidden"], cfg["vocab"]
        L = cfg["dec_layers"]
        self.out_scale = out_gain / math.sqrt(2 * L * H)
        nf = H - N_RESERVED
        special = sorted({t for c in chains.values() for t in c})
        assert len(special) <= nf
        gq = tensor_gen(cfg["seed"], "dec.chain")
        qm, _ = torch.linalg.qr(torch.randn(nf, len(special), generator=gq, dtype=torch.float32).to(dt))
        self.R_chain = {t: torch.cat([torch.zeros(N_RESERVED, dtype=dt), qm[:, i]]) for i, t in enumerate(special)}
        self.E16 = np.empty((V, H), np.float16)
        self.head16 = np.empty((V, H), np.float16)
        idx = torch.tensor(special)
        for b0 in range(0, V, self.ROWS):
            n = min(self.ROWS, V - b0)
            g = tensor_gen(cfg["seed"], "dec.embd.%d" % b0)
            R = torch.zeros(n, H, dtype=dt)
            rr = torch.randn(n, nf, generator=g, dtype=torch.float32).to(dt)
            R[:, N_RESERVED:] = rr / rr.norm(dim=1, keepdim=True)
            sel = idx[(idx >= b0) & (idx < b0 + n)]
            for t in sel.tolist():
                R[t - b0] = self.R_chain[t]
            E = lc.RHO * R
            E[:, D_CONST] = lc.KAPPA
            self.E16[b0:b0 + n] = E.to(torch.float16).numpy()
            hd_ = 1.25 * R + 0.02 * torch.randn(n, H, generator=g, dtype=torch.float32).to(dt)
            hd_[:, D_CONST] = 0
            self.head16[b0:b0 + n] = hd_.to(torch.float16).numpy()
            del R, rr, E, hd_
        go = tensor_gen(cfg["seed"], "dec.output_norm")
        self.out_norm = (2.0 * (1 + 0.1 * torch.randn(H, generator=go, dtype=torch.float32))).to(dt)
        self.units = lc.edges(chains)
        assert len(self.units) <= cfg["inter"]
        self._cache = (None, None)

    def block(self, l):
        """The 9 tensors of decoder block l (PyTorch order, F16-representable linears)."""
        if self._cache[0] == l:
            return self._cache[1]
        c, dt = self.cfg, self.dt
        H, I = c["hidden"], c["inter"]
        Q, K, hd = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"], c["head_dim"]
        g = tensor_gen(c["seed"], "dec.blocks.%d" % l)
        r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float32).to(dt)
        W = {}
        clm.random_blocks(W, r, 1, H, I, Q, K, hd, self.out_scale, N_RESERVED, qk_norm=False)
        if l == c["dec_layers"] - 1:
            p = "dec.blocks.0."
            wn = W[p + "norm_ffn.weight"]
            n = math.sqrt((lc.KAPPA ** 2 + lc.RHO ** 2) / H) / lc.RHO
            gate, up, down = W[p + "ffn.gate.weight"], W[p + "ffn.up.weight"], W[p + "ffn.down.weight"]
            g_exp = self.alpha * (1 - self.tau)
            act = g_exp / (1 + math.exp(-g_exp))
            fr = slice(N_RESERVED, H)
            for u, (a, b, _) in enumerate(self.units):
                ra, rb = self.R_chain[a], self.R_chain[b]
                gate[u] = 0
                gate[u, fr] = self.alpha * n * ra[fr] / wn[fr]
                gate[u, D_CONST] = -self.alpha * self.tau * n * lc.RHO / (lc.KAPPA * wn[D_CONST])
                up[u] = 0
                up[u, fr] = n * ra[fr] / wn[fr]
                down[:, u] = 0
                down[fr, u] = self.beta * rb[fr] / act
        lc.round_linear(W)
        out = OrderedDict()
        for s in DEC_BLOCK:
            out["dec.blocks.%d.%s" % (l, s)] = W["dec.blocks.0." + s].float().to(dt)
        self._cache = (l, out)
        return out

    def tensor(self, name):
        """Any dec.* tensor by name (torch, dt)."""
        if name == "dec.token_embd.weight":
            return torch.from_numpy(self.E16.astype(np.float32)).to(self.dt)
        if name == "dec.output.weight":
            return torch.from_numpy(self.head16.astype(np.float32)).to(self.dt)
        if name == "dec.output_norm.weight":
            return self.out_norm.float().to(self.dt)
        return self.block(int(name.split(".")[2]))[name]


def proj_weights(cfg, enc_out_cal, dt):
    """Projector: random; linear_2 scaled so the audio rows of the calibration
    clip have unit mean norm (like an embedding row); its row 0 (the const dim) zero."""
    H, din = cfg["hidden"], cfg["d_model"] * cfg["ds"]
    g1 = tensor_gen(cfg["seed"], "proj.linear_1.weight")
    g2 = tensor_gen(cfg["seed"], "proj.linear_2.weight")
    W1 = f16r(torch.randn(H, din, generator=g1, dtype=torch.float32).to(dt) * 2.0 / math.sqrt(din))
    W2 = torch.randn(H, H, generator=g2, dtype=torch.float32).to(dt) / math.sqrt(H)
    W2[D_CONST] = 0
    e = enc_out_cal.to(dt)
    p = gelu(e.reshape(e.shape[0] // cfg["ds"], -1) @ W1.T) @ W2.T
    return W1, f16r(W2 / float(p.norm(dim=1).mean()))


def build_weights(cfg, vocab, chains, mel_cal, dt):
    """All tensors in write order (tiny); every L/A/E/C tensor F16-representable so
    the F32 and F16 files hold the same math; every value a float32 value."""
    S = tensor_shapes(cfg)
    fb, win = frontend_buffers()
    W = OrderedDict()
    W["frontend.mel_filterbank"] = torch.from_numpy(fb.astype(np.float64))
    W["frontend.window"] = torch.from_numpy(win.astype(np.float64))
    for nm, shape in S.items():
        if nm.startswith("enc."):
            W[nm] = enc_tensor(cfg, nm, shape, dt).float().to(dt)
    e = Encoder(cfg, lambda n: W[n], dt).encode(mel_cal[:, :NB_FRAMES])
    W["proj.linear_1.weight"], W["proj.linear_2.weight"] = proj_weights(cfg, e, dt)
    lm = LMDesign(cfg, chains, dt)
    for nm in S:
        if nm.startswith("dec."):
            W[nm] = lm.tensor(nm)
    for k in W:
        W[k] = W[k].float().to(dt)
    assert list(W) == list(S)
    return W


def teacher_forced(cfg, block_of, embed, out_norm, head, prompt_x, expect):
    """Greedy check in one causal pass, a decoder block at a time: feeds the
    prompt rows then the expected ids (without the last one) and returns, per
    generated position, (argmax, top1 - top2 margin), and the prefill logits.
    Equal to the KV-cache greedy loop iff every argmax equals the expected id."""
    dt = prompt_x.dtype
    one = clm.LMConfig(**{**lm_config(cfg).__dict__, "n_layers": 1})
    x = torch.cat([prompt_x, embed(expect[:-1]).to(dt)], 0)
    pos = torch.arange(x.shape[0])
    for l in range(cfg["dec_layers"]):
        Wl = {k.replace("dec.blocks.%d." % l, "dec.blocks.0."): v.to(dt) for k, v in block_of(l).items()}
        lm = clm.CausalLM(one, Wl, dtype=dt)
        x = lm.block(0, x, pos, clm.KVCache(one, x.shape[0], dtype=dt))
    T = prompt_x.shape[0]
    y = clm.rms_norm(x[T - 1:], out_norm.to(dt), cfg["eps"])
    logits = y @ head.to(dt).T
    return [clm.argmax_lowest(z) for z in logits], logits[0]


# --------------------------------------------------------------------------
# GGUF (docs/formats/voxtral.md §2, §3)
# --------------------------------------------------------------------------

def write_gguf(path, cfg, vocab, W, preset, lazy=False):
    """W: name -> tensor, or (with lazy) name -> producer() of a float32 ndarray."""
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "voxtral")
    w.add_string("general.name", cfg["name"] + " (random reference weights)")
    w.add_string("general.basename", "voxtral")
    w.add_string("general.version", "2507")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/voxtral.py")
    w.add_string("general.organization", "mistralai")
    w.add_string("general.license", "apache-2.0")
    w.add_string("general.license.name", "Apache License 2.0")
    w.add_string("general.license.link", "https://www.apache.org/licenses/LICENSE-2.0")
    w.add_string("general.repo_url", "https://huggingface.co/mistralai/Voxtral-Mini-3B-2507")
    w.add_uint32("general.file_type", lc.FILE_TYPE[preset])
    w.add_array("general.languages", LANGS, gw.STRING)
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.lang_detect", True)
    w.add_bool("stt.capability.translate", True)
    w.add_array("stt.translation.target_languages", LANGS, gw.STRING)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "tekken")
    w.add_uint32("tokenizer.ggml.bos_token_id", vocab.special("<s>"))
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.special("</s>"))
    w.add_uint32("tokenizer.ggml.unknown_token_id", vocab.special("<unk>"))
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.special("<pad>"))
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    e = "stt.voxtral.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("d_model", cfg["d_model"]), ("n_heads", cfg["enc_heads"]),
                 ("head_dim", cfg["d_model"] // cfg["enc_heads"]), ("ffn_dim", cfg["ffn"]),
                 ("num_mel_bins", cfg["n_mels"]), ("max_source_positions", cfg["max_src"])):
        w.add_uint32(e + k, v)
    w.add_string(e + "activation", "gelu")
    p = "stt.voxtral.projector."
    w.add_uint32(p + "downsample_factor", cfg["ds"])
    w.add_uint32(p + "input_dim", cfg["d_model"] * cfg["ds"])
    w.add_string(p + "hidden_act", "gelu")
    d = "stt.voxtral.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                 ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                 ("head_dim", cfg["head_dim"])):
        w.add_uint32(d + k, v)
    w.add_string(d + "hidden_act", "silu")
    w.add_float32(d + "rms_norm_eps", cfg["eps"])
    w.add_float32(d + "rope_theta", cfg["theta"])
    w.add_uint32(d + "max_position_embeddings", cfg["max_pos"])
    w.add_bool(d + "tie_word_embeddings", False)
    w.add_uint32(d + "vocab_size", cfg["vocab"])
    w.add_uint32("stt.voxtral.audio_token_id", vocab.special("[AUDIO]"))
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", cfg["n_mels"])
    w.add_uint32(f + "sample_rate", 16000)
    w.add_uint32(f + "n_fft", 400)
    w.add_uint32(f + "win_length", 400)
    w.add_uint32(f + "hop_length", HOP)
    w.add_string(f + "window", "hann_periodic")
    w.add_string(f + "normalize", "per_utterance")
    w.add_float32(f + "dither", 0.0)
    w.add_float32(f + "pre_emphasis", 0.0)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)
    w.add_string(f + "pad_mode", "reflect")
    w.add_bool(f + "center", True)
    w.add_string(f + "mel_norm", "slaney")
    w.add_uint32(f + "chunk_length", 30)
    w.add_uint32(f + "n_samples", N_SAMPLES)
    w.add_uint32(f + "nb_max_frames", NB_FRAMES)
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    S = tensor_shapes(cfg)
    assert list(W) == list(S)
    for nm, shape in S.items():
        gt = ggml_type_for(nm, shape, preset)
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, W[nm])
        else:
            w.add_tensor(nm, W[nm].float().numpy(), gt)
    return w.write_stream(path) if lazy else w.write(path)


def check_tensors(ts, W, preset):
    """Read-back: order, ne, ggml type, values (F32 exact, F16 exact after
    rounding, Q8_0 equal to our own quantize/dequantize)."""
    assert list(ts) == list(W), "tensor order"
    for nm, want in W.items():
        gt, ne, a = ts[nm]
        want = want.float().numpy()
        assert ne == list(reversed(want.shape)) and a.shape == want.shape, nm
        assert gt == ggml_type_for(nm, want.shape, preset), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
        else:
            q = gw.dequantize_q8_0(gw.quantize_q8_0(want), want.size).reshape(want.shape)
            assert np.array_equal(a, q), nm


def check_kvs(kv, cfg):
    """Every docs/formats/voxtral.md §2 key with its exact GGUF type."""
    U, F, S_, B, A = gw.UINT32, gw.FLOAT32, gw.STRING, gw.BOOL, gw.ARRAY
    want = {"general.architecture": S_, "stt.variant": S_, "general.file_type": U, "general.languages": A,
            "stt.capability.lang_detect": B, "stt.capability.translate": B,
            "stt.translation.target_languages": A, "tokenizer.ggml.model": S_, "tokenizer.ggml.pre": S_,
            "tokenizer.ggml.tokens": A, "tokenizer.ggml.token_type": A, "tokenizer.ggml.merges": A,
            "tokenizer.ggml.bos_token_id": U, "tokenizer.ggml.eos_token_id": U,
            "stt.voxtral.encoder.activation": S_, "stt.voxtral.projector.hidden_act": S_,
            "stt.voxtral.decoder.hidden_act": S_, "stt.voxtral.decoder.rms_norm_eps": F,
            "stt.voxtral.decoder.rope_theta": F, "stt.voxtral.decoder.tie_word_embeddings": B,
            "stt.voxtral.audio_token_id": U, "stt.frontend.type": S_, "stt.frontend.dither": F,
            "stt.frontend.center": B, "stt.frontend.n_samples": U, "stt.frontend.nb_max_frames": U}
    for k, t in want.items():
        assert kv[k][0] == t, k
    assert kv["tokenizer.ggml.token_type"][1][0] == gw.INT32
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == cfg["vocab"]
    assert list(kv)[-3:] == ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"]


# --------------------------------------------------------------------------
# goldens (tiny)
# --------------------------------------------------------------------------

def load_clip(out):
    """clip.wav = jfk.wav 0.30-2.80 s (written once, re-read afterwards)."""
    path = os.path.join(out, "clip.wav")
    if not os.path.exists(path):
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        lc.write_wav16(path, jfk[4800:44800])
    x, _ = mel_ref.read_wav(path)
    return x


def two_chunk_pcm(clip):
    """32 s: the clip at 0 s and again at 29.5 s (straddling the chunk boundary at 30 s), zeros elsewhere."""
    x = np.zeros(512000)
    x[:clip.size] = clip
    x[472000:472000 + clip.size] = clip
    return x


MEL_KEEP = 256


def write_text(path, r):
    with open(path, "w", encoding="utf-8") as f:
        f.write("status: %s\ntext: %s\nraw_text: %r\nsegment_ms: 0 %d\n"
                % (r["status"], r["text"], r["raw_text"], r["t1_ms"]))


def goldens(cfg, vocab, path, tag, pcm, out, log, first):
    """Goldens from the weights the file at path holds (tag "" = F32/F16, ".q8_0")."""
    kv, ts = gw.read_gguf(path)
    W = {n: torch.from_numpy(a.astype(np.float64)) for n, (_, _, a) in ts.items()}
    fb, win = W["frontend.mel_filterbank"].numpy(), W["frontend.window"].numpy()
    m64 = Model(cfg, vocab, lambda n: W[n], torch.float64)
    m32 = Model(cfg, vocab, lambda n: W[n], torch.float32)
    results = {}
    for clip_name, x in pcm.items():
        mel = logmel(x, fb, win)
        taps = {}
        encs, audio = m64.audio(mel, taps)
        e32, a32 = m32.audio(mel.astype(np.float32))
        stem = os.path.join(out, clip_name + tag)
        if first:
            if clip_name == "clip":
                npsave(os.path.join(out, "clip.mel.npy"), mel[:, :MEL_KEEP])
                npsave(os.path.join(out, "clip.mel.meta.npy"),
                       [mel.shape[1], MEL_KEEP], np.int32)
            floor = float(mel.min())
            log.append("%s: mel [128, %d], max %.6f, floor (g-4)/4 = %.6f, frames >= %d all at the floor: %s"
                       % (clip_name, mel.shape[1], mel.max(), floor, MEL_KEEP,
                          bool(np.all(mel[:, MEL_KEEP:NB_FRAMES] == floor))))
        if clip_name == "clip":
            npsave(stem + ".enc.npy", encs[0])
            if first:
                npsave(stem + ".block0.npy", taps["block0"])
        if clip_name == "clip" or first:
            npsave(stem + ".proj.npy", audio)
        runs = [("auto", dict()), ("en", dict(language="en"))]
        if clip_name == "clip":
            runs += [("fr", dict(language="fr")), ("tr_de", dict(task="translate", target="de"))]
        for run_name, kw in runs:
            r = m64.run(x.size, audio, **kw)
            s = "%s.%s" % (stem, run_name)
            if first:
                npsave(os.path.join(out, "%s.%s.prompt.npy" % (clip_name, run_name)), r["prompt"], np.int32)
            npsave(s + ".logits0.npy", r["logits0"])
            npsave(s + ".tokens.npy", r["gen"], np.int32)
            write_text(s + ".text.txt", r)
            r32 = m32.run(x.size, a32, kv_f16=False, **kw)
            r32h = m32.run(x.size, a32, kv_f16=True, **kw)
            same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"]
            line = ("%-22s n %6d T_prompt %4d n_gen %2d %s min_margin %.3f max_new %d max_n_kv %d | f32: same=%s "
                    "enc %.1e proj %.1e logits0 %.1e (F16 KV %.1e)"
                    % (clip_name + tag + "." + run_name, x.size, len(r["prompt"]), len(r["gen"]), r["status"],
                       min(r["margins"]), r["max_new"], r["max_n_kv"], same,
                       float((e32[0].double() - encs[0]).abs().max()), float((a32.double() - audio).abs().max()),
                       float((r32["logits0"].double() - r["logits0"]).abs().max()),
                       float((r32h["logits0"].double() - r["logits0"]).abs().max())))
            print(line)
            log.append(line)
            log.append("    text %r" % r["text"])
            assert same and r["status"] == "OK"
            results[(clip_name, run_name)] = r
        # the block-at-a-time teacher-forced pass (what --config real uses) == the greedy loop
        r = results[(clip_name, "auto")]
        lm = m64.lm
        tf, lg0 = teacher_forced(cfg, lambda l: {k: v for k, v in lm.W.items() if k.startswith("dec.blocks.%d." % l)},
                                 lm.embed, lm.W["dec.output_norm.weight"], lm.W["dec.output.weight"],
                                 lm.inject(r["prompt"], m64.audio_id, audio), r["gen"])
        assert [t for t, _ in tf] == r["gen"] and float((lg0 - r["logits0"]).abs().max()) < 1e-9
        # how much the audio rows matter to the prefill logits
        r0 = m64.run(x.size, torch.zeros_like(audio))
        log.append("    audio -> logits0 (auto) %.3f" % float((r0["logits0"] - results[(clip_name, "auto")]["logits0"])
                                                     .abs().max()))
    return results


def tiny_main(a, cfg):
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    vocab = make_vocab(cfg)
    chain = [vocab.special("[TRANSCRIBE]")] + vocab.chain_ids(TEXT) + [vocab.special("</s>")]
    chain_tr = [vocab.special("[/INST]")] + vocab.chain_ids(TEXT_TR) + [vocab.special("</s>")]
    assert not (set(chain[:-1]) & set(chain_tr[:-1])), "chains share a token"
    clip = load_clip(a.out)
    pcm = {"clip": clip, "clip2": two_chunk_pcm(clip)}
    fb, win = frontend_buffers()
    W = build_weights(cfg, vocab, {0: chain, 1: chain_tr}, logmel(clip, fb, win), torch.float64)
    n_par = sum(int(np.prod(t.shape)) for k, t in W.items() if not k.startswith("frontend."))
    log = ["config tiny seed %d: %d tensors, %d parameters" % (cfg["seed"], len(W), n_par),
           "vocab %d (%d control, %d merges); chain %d tokens + EOS, translate chain %d + EOS"
           % (vocab.V, vocab.n_control, len(vocab.merges), len(chain) - 2, len(chain_tr) - 2)]
    print("\n".join(log))
    for preset in a.dtypes.split(","):
        path = os.path.join(a.out, "voxtral-tiny-ref-%s.gguf" % preset)
        size = write_gguf(path, cfg, vocab, W, preset)
        kv, ts = gw.read_gguf(path)
        check_kvs(kv, cfg)
        check_tensors(ts, W, preset)
        log.append("%s: %d bytes" % (os.path.basename(path), size))
        print(log[-1])
    _, ts16 = gw.read_gguf(os.path.join(a.out, "voxtral-tiny-ref-F16.gguf"))
    assert all(np.array_equal(ts16[k][2], W[k].float().numpy()) for k in W), "F16 file differs from F32"
    goldens(cfg, vocab, os.path.join(a.out, "voxtral-tiny-ref-F32.gguf"), "", pcm, a.out, log, True)
    goldens(cfg, vocab, os.path.join(a.out, "voxtral-tiny-ref-Q8_0.gguf"), ".q8_0", pcm, a.out, log, False)
    with open(os.path.join(a.out, "margins.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    print("done %.1fs" % (time.time() - t0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default=None, help="comma list of F32,F16,Q8_0 (tiny: all; real: F16)")
    ap.add_argument("--no-decode", action="store_true", help="real: skip the float32 reference decode")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    if a.config == "tiny":
        a.dtypes = a.dtypes or "F32,F16,Q8_0"
        tiny_main(a, cfg)
    else:
        a.dtypes = a.dtypes or "F16"
        real_main(a, cfg)


def read_header(path, cfg):
    """Streams the GGUF header of a big file: (kv, [(name, ne, type, offset)], data_start)."""
    with open(path, "rb") as f:
        buf = f.read(64 << 20)
    c = gw._Cursor(buf)
    assert buf[:4] == b"GGUF"
    c.pos = 4
    assert c.take("<I") == 3
    n_t, n_kv = c.take("<q"), c.take("<q")
    kv = {}
    for _ in range(n_kv):
        k = c.string()
        vt = c.take("<I")
        kv[k] = (vt, c.value(vt))
    infos = []
    for _ in range(n_t):
        name = c.string()
        nd = c.take("<I")
        ne = [c.take("<q") for _ in range(nd)]
        infos.append((name, ne, c.take("<I"), c.take("<Q")))
    return kv, infos, (c.pos + gw.ALIGNMENT - 1) // gw.ALIGNMENT * gw.ALIGNMENT


def read_back_big(path, cfg, preset, producers, spot):
    """Header (KV types, names, ne, types, offsets, file size) + values of the `spot` tensors."""
    kv, infos, data_start = read_header(path, cfg)
    check_kvs(kv, cfg)
    S = tensor_shapes(cfg)
    assert [i[0] for i in infos] == list(S)
    off = 0
    sizes = {gw.GGML_F32: (1, 4), gw.GGML_F16: (1, 2), gw.GGML_Q8_0: (32, 34)}
    where = {}
    for (name, ne, gt, o), shape in zip(infos, S.values()):
        assert ne == list(reversed(shape)) and gt == ggml_type_for(name, shape, preset), name
        assert o == off, name
        bs, ts = sizes[gt]
        n = int(np.prod(ne)) // bs * ts
        where[name] = (data_start + o, n, gt)
        off += (n + gw.ALIGNMENT - 1) // gw.ALIGNMENT * gw.ALIGNMENT
    assert os.path.getsize(path) == data_start + off, "file size"
    with open(path, "rb") as f:
        for name in spot:
            pos, n, gt = where[name]
            f.seek(pos)
            raw = f.read(n)
            want = np.asarray(producers[name](), np.float32)
            if gt == gw.GGML_F32:
                got = np.frombuffer(raw, "<f4")
            elif gt == gw.GGML_F16:
                got = np.frombuffer(raw, "<f2").astype(np.float32)
                want = want.astype(np.float16).astype(np.float32)
            else:
                got = gw.dequantize_q8_0(raw, want.size)
                want = gw.dequantize_q8_0(gw.quantize_q8_0(want), want.size)
            assert np.array_equal(got.reshape(want.shape), want), name
    return len(infos)


def real_main(a, cfg):
    """Published Voxtral-Mini-3B dimensions, float32, tensors streamed to disk
    (each regenerated from its own generator when the writer reaches it)."""
    import resource
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    log = []

    def say(msg):
        line = "[%6.1fs] %s" % (time.time() - t0, msg)
        print(line, flush=True)
        log.append(line)

    dt = torch.float32
    vocab = make_vocab(cfg)
    chain = [vocab.special("[TRANSCRIBE]")] + vocab.chain_ids(TEXT) + [vocab.special("</s>")]
    chain_tr = [vocab.special("[/INST]")] + vocab.chain_ids(TEXT_TR) + [vocab.special("</s>")]
    say("vocab %d (%d control, %d merges)" % (vocab.V, vocab.n_control, len(vocab.merges)))
    jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
    fb, win = frontend_buffers()
    mel = logmel(jfk, fb, win)
    S = tensor_shapes(cfg)
    enc_get = lambda n: enc_tensor(cfg, n, S[n], dt)
    e = Encoder(cfg, enc_get, dt).encode(mel[:, :NB_FRAMES])
    say("encoder pass on jfk.wav (float32): enc [%d, %d]" % tuple(e.shape))
    W1, W2 = proj_weights(cfg, e, dt)
    audio = Encoder(cfg, lambda n: {"proj.linear_1.weight": W1, "proj.linear_2.weight": W2}[n], dt).project(e)
    lm = LMDesign(cfg, {0: chain, 1: chain_tr}, dt)
    say("LM design (embeddings + head as F16)")
    prod = OrderedDict()
    prod["frontend.mel_filterbank"] = lambda: fb
    prod["frontend.window"] = lambda: win
    for n in S:
        if n.startswith("enc."):
            prod[n] = (lambda n=n: enc_get(n).numpy())
    prod["proj.linear_1.weight"] = lambda: W1.numpy()
    prod["proj.linear_2.weight"] = lambda: W2.numpy()
    prod["dec.token_embd.weight"] = lambda: lm.E16
    prod["dec.output.weight"] = lambda: lm.head16
    for n in S:
        if n.startswith("dec.") and n not in prod:
            prod[n] = (lambda n=n: lm.tensor(n).numpy())
    prod = OrderedDict((n, prod[n]) for n in S)
    n_par = sum(int(np.prod(sh)) for n, sh in S.items() if not n.startswith("frontend."))
    say("%d tensors, %d parameters" % (len(S), n_par))
    L = cfg["dec_layers"]
    spot = ["frontend.mel_filterbank", "enc.conv.0.weight", "enc.pos_emb.weight", "enc.blocks.%d.attn.out.weight" % (cfg["enc_layers"] - 1),
            "proj.linear_2.weight", "dec.output_norm.weight", "dec.blocks.%d.ffn.down.weight" % (L - 1),
            "dec.blocks.0.attn.q.weight"]
    for preset in a.dtypes.split(","):
        path = os.path.join(a.out, "voxtral-mini-3b-ref-%s.gguf" % preset)
        size = write_gguf(path, cfg, vocab, prod, preset, lazy=True)
        say("wrote %s: %d bytes" % (os.path.basename(path), size))
        read_back_big(path, cfg, preset, prod, spot)
        say("read back: header, offsets, file size, %d spot tensors OK" % len(spot))
    if not a.no_decode:
        E = lambda ids: torch.from_numpy(lm.E16[np.asarray(ids)].astype(np.float32))
        head = torch.from_numpy(lm.head16.astype(np.float32))
        for run_name, ids, want in (("auto", transcription_prompt(vocab, audio.shape[0]), chain),
                                    ("en", transcription_prompt(vocab, audio.shape[0], "en"), chain),
                                    ("tr_de", translation_prompt(vocab, audio.shape[0], "de"), chain_tr)):
            x = E(ids)
            x[3:3 + audio.shape[0]] = audio
            expect = want[1:]
            tf, _ = teacher_forced(cfg, lm.block, E, lm.out_norm, head, x, expect)
            got = [t for t, _ in tf]
            ok = got == expect
            st, max_new, max_n_kv, _ = budget(len(ids), audio.shape[0], cfg["max_pos"])
            say("jfk %-5s T_prompt %d (budget %d, max_n_kv %d): greedy == chain: %s, %d ids, min margin %.3f, text %r"
                % (run_name, len(ids), max_new, max_n_kv, ok, len(got), min(m for _, m in tf),
                   vocab.decode(got[:-1])))
    say("peak RSS %.2f GB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20))
    with open(os.path.join(a.out, "decode.txt" if not a.no_decode else "write.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(log) + "\n")


if __name__ == "__main__":
    main()
