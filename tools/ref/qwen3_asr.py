#!/usr/bin/python3
"""Qwen3-ASR reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/qwen3_asr.md, docs/formats/causal-lm.md and
docs/formats/gguf.md, independently of the C code. Pieces:

* mel (docs/formats/qwen3_asr.md §5): reflect pad 200, periodic Hann 400, |FFT|^2, Slaney 128x201,
  log10(max(., 1e-10)), last frame dropped, per-utterance clamp gmax-8,
  (x + 4) / 4; no padding to 30 s. Filterbank and window are written to the
  GGUF as frontend buffers and the reference uses the stored F32 values.
* encoder (§6): 100-frame chunks (last one zero padded), 3 stride-2 3x3
  Conv2d + GELU, flatten c*16+f, conv_out (no bias), per-chunk sinusoidal
  positions, trim to T_enc, full bidirectional pre-LN blocks, ln_post,
  proj1 + GELU, proj2.
* prompt (§7), optional forced language, LM = causal_lm.py (Qwen3 math),
  greedy loop (docs/formats/causal-lm.md §7), input gate (docs/formats/qwen3_asr.md §9.3), output parsing (§10).
* GGUF writer in the published schema (§2-§3) with a small byte-level BPE
  vocabulary (256 byte glyphs + trained merges + specials).

Weights are random but constructed so the greedy decode is a long, varied,
audio-dependent sequence with large argmax margins (see README of the
golden folder and build_lm_weights()).

usage:
  qwen3_asr.py --config tiny --out tests/data/qwen3_asr/tiny
  qwen3_asr.py --config real-0.6b --out build-ref/qwen3-asr-0.6b
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
import llm_common as lc  # noqa: E402
import mel_ref  # noqa: E402
import tok_ref  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# docs/formats/qwen3_asr.md §9.1: code, publisher name (order of general.languages)
LANGUAGES = [("zh", "Chinese"), ("en", "English"), ("yue", "Cantonese"), ("ar", "Arabic"), ("de", "German"),
             ("fr", "French"), ("es", "Spanish"), ("pt", "Portuguese"), ("id", "Indonesian"), ("it", "Italian"),
             ("ko", "Korean"), ("ru", "Russian"), ("th", "Thai"), ("vi", "Vietnamese"), ("ja", "Japanese"),
             ("tr", "Turkish"), ("hi", "Hindi"), ("ms", "Malay"), ("nl", "Dutch"), ("sv", "Swedish"),
             ("da", "Danish"), ("fi", "Finnish"), ("pl", "Polish"), ("cs", "Czech"), ("fil", "Filipino"),
             ("fa", "Persian"), ("el", "Greek"), ("ro", "Romanian"), ("hu", "Hungarian"), ("mk", "Macedonian")]
LANG_NAME = dict(LANGUAGES)
NAME_LANG = {n: c for c, n in LANGUAGES}

REAL_VOCAB = 151936
# Special pieces at their real ids (docs/formats/qwen3_asr.md §2.2, §2.5, §4); tiny files keep the same
# distance from the end of the table.
SPECIALS = [("<|endoftext|>", 151643), ("<|im_start|>", 151644), ("<|im_end|>", 151645),
            ("<|audio_start|>", 151669), ("<|audio_end|>", 151670), ("<|audio_pad|>", 151676),
            ("<asr_text>", 151704)]

CONFIGS = {
    "tiny": dict(
        enc_layers=2, enc_d=32, enc_heads=2, enc_ffn=64, conv_ch=8, n_mels=128,
        dec_layers=3, hidden=64, inter=128, heads=8, kv_heads=4, head_dim=16, mrope=(4, 2, 2),
        vocab=1024, max_pos=65536, variant="qwen3-asr-tiny", size_label="tiny",
        enc_seed=11, dec_seed=22),
    "real-0.6b": dict(
        enc_layers=18, enc_d=896, enc_heads=14, enc_ffn=3584, conv_ch=480, n_mels=128,
        dec_layers=28, hidden=1024, inter=3072, heads=16, kv_heads=8, head_dim=128, mrope=(24, 20, 20),
        vocab=REAL_VOCAB, max_pos=65536, variant="qwen3-asr-0.6b", size_label="0.6B",
        enc_seed=11, dec_seed=22),
}

# Greedy texts. The LM is a (token, audio-branch) successor machine: branch A
# (jfk-like audio) and branch B (whole-earth-like audio) write different
# sentences; every token occurs once per chain.
TEXT_A = ("And so, my fellow Americans: ask not what your country can do for you. "
          "Whole Earth catalog access to tools! stay hungry café 1984")
TEXT_B = ("Whole Earth catalog: access to new tools and ideas, so stay hungry. "
          "You can do what your fellow Americans ask! café 1984")


# --------------------------------------------------------------------------
# audio + mel (docs/formats/qwen3_asr.md §5)
# --------------------------------------------------------------------------

write_wav16 = lc.write_wav16


def frontend_buffers(n_mels=128):
    """Stored F32 buffers (docs/formats/qwen3_asr.md §3.2): Slaney filterbank (n_mels, 201), periodic Hann."""
    fb = mel_ref.slaney_filterbank(16000, 400, n_mels, 0.0, 8000.0).astype(np.float32)
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    return fb, win


def logmel(x, fb, win):
    """docs/formats/qwen3_asr.md §5 on float samples x (float64 array): [n_mels, floor(n/160)]."""
    n = x.size
    if n < 201:
        raise ValueError("INVALID_ARG: clip shorter than 201 samples")
    T = n // 160 + 1
    P = mel_ref.stft_power(x, 400, win.astype(np.float64), 160, "reflect", T)  # [T, 201]
    E = fb.astype(np.float64) @ P.T
    L = np.log10(np.maximum(E, 1e-10))[:, :T - 1]
    return (np.maximum(L, L.max() - 8.0) + 4.0) / 4.0


# --------------------------------------------------------------------------
# encoder (docs/formats/qwen3_asr.md §6)
# --------------------------------------------------------------------------

def aftercnn(L):
    for _ in range(3):
        L = (L + 1) // 2
    return L


def t_enc_of(T_mel):
    n_chunks = -(-T_mel // 100)
    return (n_chunks - 1) * 13 + aftercnn(T_mel - (n_chunks - 1) * 100)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def sinusoids(n, d):
    half = d // 2
    s = math.log(10000.0) / (half - 1)
    inv = torch.exp(-s * torch.arange(half, dtype=torch.float64))
    a = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([torch.sin(a), torch.cos(a)], dim=1)


def encoder(cfg, W, mel, stop_at_proj2=False, taps=None):
    """mel [n_mels, T_mel] -> [T_enc, output_dim]. With stop_at_proj2 returns
    the proj2 input (gelu(proj1(...))) instead (weight calibration). taps
    (dict) receives "pre": the input of block 0 (conv_out + positions, trimmed)."""
    dt = W["enc.proj1.weight"].dtype
    w = lambda n: W[n].to(dt)
    mel = torch.as_tensor(mel, dtype=dt)
    n_mels, T_mel = mel.shape
    n_chunks = -(-T_mel // 100)
    T_enc = t_enc_of(T_mel)
    padded = torch.zeros(n_mels, n_chunks * 100, dtype=dt)
    padded[:, :T_mel] = mel
    x = padded.view(n_mels, n_chunks, 100).permute(1, 0, 2).unsqueeze(1).contiguous()  # [n,1,mel,100]
    for i in range(3):
        x = gelu(torch.nn.functional.conv2d(x, w("enc.conv.%d.weight" % i), w("enc.conv.%d.bias" % i),
                                            stride=2, padding=1))
    n, C, F, Tt = x.shape  # [n, C, 16, 13]
    feat = x.permute(0, 3, 1, 2).reshape(n, Tt, C * F)  # feature c*16 + f
    h = feat @ w("enc.conv_out.weight").T + sinusoids(Tt, w("enc.conv_out.weight").shape[0]).to(dt)
    h = h.reshape(n * Tt, -1)[:T_enc]
    if taps is not None:
        taps["pre"] = h
    d = h.shape[1]
    nh = cfg["enc_heads"]
    hd = d // nh
    ln = lambda t, p: torch.nn.functional.layer_norm(t, (d,), w(p + ".weight"), w(p + ".bias"), eps=1e-5)
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        a = ln(h, p + "norm_attn")
        q = (a @ w(p + "attn.q.weight").T + w(p + "attn.q.bias")).view(-1, nh, hd)
        k = (a @ w(p + "attn.k.weight").T + w(p + "attn.k.bias")).view(-1, nh, hd)
        v = (a @ w(p + "attn.v.weight").T + w(p + "attn.v.bias")).view(-1, nh, hd)
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
        o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(-1, d)
        h = h + o @ w(p + "attn.out.weight").T + w(p + "attn.out.bias")
        a = ln(h, p + "norm_ffn")
        h = h + gelu(a @ w(p + "ffn.fc1.weight").T + w(p + "ffn.fc1.bias")) @ w(p + "ffn.fc2.weight").T \
            + w(p + "ffn.fc2.bias")
    y = ln(h, "enc.ln_post")
    y = gelu(y @ w("enc.proj1.weight").T + w("enc.proj1.bias"))
    if stop_at_proj2:
        return y
    return y @ w("enc.proj2.weight").T + w("enc.proj2.bias")


# --------------------------------------------------------------------------
# tokenizer (docs/formats/qwen3_asr.md §4)
# --------------------------------------------------------------------------

class Vocab:
    def __init__(self, V):
        base = V - (REAL_VOCAB - SPECIALS[0][1])  # tiny: same distance from the end
        self.sid = {p: base + (i - SPECIALS[0][1]) for p, i in SPECIALS}
        corpus = []
        for t in (TEXT_A, TEXT_B):
            corpus += [t] * 40
        corpus += ["system", "user", "assistant"] * 60 + ["\n"] * 60
        corpus += ["language " + n for _, n in LANGUAGES] * 8 + ["language English"] * 60
        byte_pieces = [tok_ref.BYTE_MAP[b] for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                       + list(range(0xAE, 0x100))]
        byte_pieces += [tok_ref.BYTE_MAP[b] for b in range(256) if tok_ref.BYTE_MAP[b] not in byte_pieces]
        n_merges = min(base - 256, 600)
        self.merges = tok_ref.train_bpe(corpus, n_merges, "qwen2")
        pieces = byte_pieces + [m.replace(" ", "") for m in self.merges]
        seen = set()
        self.tokens, self.types = [], []
        for p in pieces:  # a merge can rebuild an existing piece: keep ids unique
            if p in seen:
                p = "<|dup_%d|>" % len(self.tokens)
            seen.add(p)
            self.tokens.append(p)
            self.types.append(1)
        assert len(self.tokens) <= base, "vocab too small for the merges"
        while len(self.tokens) < V:
            self.tokens.append("<|unused_%d|>" % len(self.tokens))
            self.types.append(1)
        for p, i in self.sid.items():
            self.tokens[i] = p
            self.types[i] = 3  # CONTROL (added special token)
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)
        self.id = {p: i for i, p in enumerate(self.tokens)}
        for need in ("system", "user", "assistant", "Ċ", "language", "ĠEnglish"):
            assert need in self.id, need

    def encode(self, text):
        return self.bpe.encode(text.encode("utf-8"), "qwen2")

    def decode(self, ids):
        return self.bpe.decode_bytes(ids).decode("utf-8", "replace")


def chain_ids(vocab, text):
    ids = vocab.encode(text)
    assert len(set(ids)) == len(ids), "chain token repeats: %s" % [vocab.tokens[i] for i in ids]
    assert vocab.decode(ids) == text
    return ids


# --------------------------------------------------------------------------
# prompt (docs/formats/qwen3_asr.md §7), gate (§9.3), parse (§10)
# --------------------------------------------------------------------------

def build_prompt(vocab, T_enc, lang=None):
    s, i = vocab.sid, vocab.id
    nl = i["Ċ"]
    ids = [s["<|im_start|>"], i["system"], nl, s["<|im_end|>"], nl,
           s["<|im_start|>"], i["user"], nl, s["<|audio_start|>"]]
    ids += [s["<|audio_pad|>"]] * T_enc
    ids += [s["<|audio_end|>"], s["<|im_end|>"], nl, s["<|im_start|>"], i["assistant"], nl]
    if lang:
        if lang not in LANG_NAME:
            raise ValueError("UNSUPPORTED_LANGUAGE")
        ids += vocab.encode("language " + LANG_NAME[lang]) + [s["<asr_text>"]]
    return ids


def input_gate(T_prompt, max_pos, n_ctx=0):
    ceiling = min(max_pos, n_ctx) if n_ctx > 0 else max_pos
    return "INPUT_TOO_LONG" if T_prompt + 256 > ceiling else "OK"


def parse_output(vocab, gen, eos, forced):
    ids = gen[:-1] if gen and gen[-1] == eos else list(gen)
    raw = vocab.decode(ids)
    sep = raw.find("<asr_text>")
    lang = None
    if sep >= 0:
        text = raw[sep + len("<asr_text>"):]
        if not forced:
            p = raw.find("language ")
            if 0 <= p < sep:
                lang = NAME_LANG.get(raw[p + 9:sep].rstrip(" \t\n"))
    else:
        text = raw
    return raw, text, lang


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------

f16r = lc.f16r


def build_encoder_weights(cfg, gen, dt):
    d, F, C, O = cfg["enc_d"], cfg["enc_ffn"], cfg["conv_ch"], cfg["hidden"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    W = {}
    cin = 1
    for i in range(3):
        W["enc.conv.%d.weight" % i] = f16r(r(C, cin, 3, 3) * math.sqrt(2.0 / (cin * 9)))
        W["enc.conv.%d.bias" % i] = 0.1 * r(C)
        cin = C
    W["enc.conv_out.weight"] = f16r(r(d, C * 16) / math.sqrt(C * 16))
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        for nm in ("norm_attn", "norm_ffn"):
            W[p + nm + ".weight"] = 1 + 0.1 * r(d)
            W[p + nm + ".bias"] = 0.1 * r(d)
        for nm in ("q", "k", "v", "out"):
            W[p + "attn.%s.weight" % nm] = f16r(r(d, d) / math.sqrt(d) * (1.5 if nm in "qk" else 1.0))
            W[p + "attn.%s.bias" % nm] = 0.1 * r(d)
        W[p + "ffn.fc1.weight"] = f16r(r(F, d) / math.sqrt(d))
        W[p + "ffn.fc1.bias"] = 0.1 * r(F)
        W[p + "ffn.fc2.weight"] = f16r(r(d, F) / math.sqrt(F))
        W[p + "ffn.fc2.bias"] = 0.1 * r(d)
    W["enc.ln_post.weight"] = 1 + 0.1 * r(d)
    W["enc.ln_post.bias"] = 0.1 * r(d)
    W["enc.proj1.weight"] = f16r(r(d, d) / math.sqrt(d))
    W["enc.proj1.bias"] = 0.1 * r(d)
    W["enc.proj2.weight"] = f16r(r(O, d) / math.sqrt(d))
    W["enc.proj2.bias"] = 0.1 * r(O)
    return W


# residual dims reserved by the construction
D_CONST, D_FLAG, D_SWITCH, D_AUDIO, D_FR_MARK, D_FR_SWITCH = 0, 1, 2, 3, 4, 5
N_RESERVED = 6
KAPPA, RHO = lc.KAPPA, lc.RHO


def calibrate_projector(W, z_a, z_b):
    """proj2 rows of the reserved dims: const κ, an audio flag whose clip
    mean is + for clip A and - for clip B, 0 on the switch dim, 1 on the
    is-audio dim."""
    wt, b = W["enc.proj2.weight"], W["enc.proj2.bias"]
    m_a, m_b = z_a.mean(0).to(wt.dtype), z_b.mean(0).to(wt.dtype)
    u = m_a - m_b
    u = u / u.norm()
    wt[D_CONST] = 0
    b[D_CONST] = KAPPA
    wt[D_FLAG] = f16r(3.0 * u)
    b[D_FLAG] = -float(wt[D_FLAG] @ (m_a + m_b)) / 2
    wt[D_SWITCH] = 0
    b[D_SWITCH] = 0
    wt[D_AUDIO] = 0
    b[D_AUDIO] = 1.0
    wt[D_FR_MARK:N_RESERVED] = 0
    b[D_FR_MARK:N_RESERVED] = 0


def build_lm_weights(cfg, vocab, chains, gen, dt, switch_gain, fr_gain, alpha=24.0, beta=8.0):
    """Qwen3 LM weights: random everywhere, plus
    * token embeddings κ·e0 + ρ·r_t (r_t unit, in the free dims 4..H-1;
      the tokens of the chains orthonormal);
    * layer 0, query head 0: attends (q from the const dim, k from the
      is-audio dim, at the lowest RoPE frequency) uniformly over the audio
      rows and copies the mean audio flag to the switch dim;
    * last layer FFN: one SwiGLU unit per (token, branch) of each chain,
      firing on that token (threshold through the const dim) with the
      right sign of the switch dim, writing β·r_successor;
    * French forcing: only `ĠFrench` has a marker (dim 4) in its embedding;
      layer 0 query head 2 attends to it (q const, k marker) and writes the
      French switch (dim 5). Units of chain "fr" (a 2-cycle after
      <asr_text>, so the decode never reaches EOS: OUTPUT_TRUNCATED) need
      it; the ±branch units are suppressed by it;
    * no other sublayer writes the reserved dims 0..5.
    chains: {"header": [...], +1: [...], -1: [...], "fr": [...]} successor lists."""
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    nh, nkv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    Q, K = nh * hd, nkv * hd
    L = cfg["dec_layers"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    R, E, free = lc.successor_embeddings(r, V, H, N_RESERVED, chains, dt, D_CONST)
    E[vocab.id["ĠFrench"], D_FR_MARK] = 1.0
    W = {"dec.token_embd.weight": f16r(E), "dec.output_norm.weight": 2.0 * (1 + 0.1 * r(H))}
    # sublayer outputs are noise of norm ≈ 0.25/sqrt(2L) each (≈ 0.25 in all, vs |E_t| ≈ 1.1)
    out_scale = 0.25 / math.sqrt(2 * L * H)
    clm.random_blocks(W, r, L, H, I, Q, K, hd, out_scale, N_RESERVED)
    # layer 0 head 0: the audio switch
    j = hd // 2 - 1  # lowest RoPE frequency: rotation ≈ pos * θ^(-(hd-2)/hd)
    lc.switch_head(W, 0, 0, hd, j, D_CONST, D_AUDIO, D_FLAG, D_SWITCH, switch_gain)
    W["dec.blocks.0.attn.q_norm.weight"][j] = 3.0
    W["dec.blocks.0.attn.k_norm.weight"][j] = 3.0
    # layer 0 query head 2 (KV head 2 // (nh/nkv)): the French switch
    lc.switch_head(W, 2, 2 // (nh // nkv), hd, j, D_CONST, D_FR_MARK, D_FR_MARK, D_FR_SWITCH, fr_gain)
    # last layer FFN: the successor machine
    wn, n, gate, up, down = lc.ffn_unit_scale(W, L, H)
    units = lc.edges(chains, lambda br: 0 if br == "header" else br)
    fr = 2  # branch tag of the French units
    assert len(units) <= I
    units = [(a, b, fr if br == "fr" else br) for a, b, br in units]
    for u, (a, b, br) in enumerate(units):
        ra = R[a].clone()
        tau = 1.0 if br == fr else 0.75 if br else 0.5
        gate[u] = 0
        gate[u, free] = alpha * n * ra[free] / wn[free]
        gate[u, D_CONST] = -alpha * tau * n * RHO / (KAPPA * wn[D_CONST])
        # switch columns hold signs here, scaled by the calibration in build()
        if br == fr:
            gate[u, D_FR_SWITCH] = 1.0  # fires only with French forced
        elif br:
            gate[u, D_SWITCH] = br
            gate[u, D_FR_SWITCH] = -2.0  # French switch overrides the audio branch
        up[u] = 0
        up[u, free] = n * ra[free] / wn[free]
        g_exp = alpha * (1 - tau) + (0.5 * alpha if br else 0.0)
        act = g_exp / (1 + math.exp(-g_exp))
        down[:, u] = 0
        down[free, u] = beta * R[b, free] / act
    lc.round_linear(W)
    return W, units


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

class Model:
    def __init__(self, cfg, vocab, Wenc, Wdec, dt=torch.float64):
        self.cfg, self.vocab = cfg, vocab
        self.Wenc = {k: v.to(dt) for k, v in Wenc.items()}
        self.lmcfg = clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                                  n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                                  vocab=cfg["vocab"], eps=1e-6, rope_theta=1e6)
        self.lm = clm.CausalLM(self.lmcfg, Wdec, dtype=dt)
        self.eos = vocab.sid["<|im_end|>"]
        self.pad = vocab.sid["<|audio_pad|>"]

    def encode(self, mel):
        """Encoder output, cached per mel (the big config re-uses it)."""
        key = (mel.shape, mel.dtype.str, hash(np.ascontiguousarray(mel).tobytes()))
        if not hasattr(self, "_enc_cache"):
            self._enc_cache = {}
        if key not in self._enc_cache:
            self._enc_cache[key] = encoder(self.cfg, self.Wenc, mel)
        return self._enc_cache[key]

    def run(self, mel, lang=None, kv_f16=False, n_ctx=0):
        enc = self.encode(mel)
        ids = build_prompt(self.vocab, enc.shape[0], lang)
        gate = input_gate(len(ids), self.cfg["max_pos"], n_ctx)
        if gate != "OK":
            return dict(status=gate, enc=enc, prompt=ids)
        x = self.lm.inject(ids, self.pad, enc)
        gen, margins, logits0, trunc = clm.greedy(self.lm, x, self.eos, max_new=256, kv_f16=kv_f16)
        raw, text, det = parse_output(self.vocab, gen, self.eos, bool(lang))
        return dict(status="OUTPUT_TRUNCATED" if trunc else "OK", enc=enc, prompt=ids, gen=gen,
                    margins=margins, logits0=logits0, raw=raw, text=text, lang=det)

    def switch_value(self, mel, lang=None, dim=D_SWITCH):
        """A switch dim after layer 0 at the last prompt row (calibration)."""
        enc = self.encode(mel)
        ids = build_prompt(self.vocab, enc.shape[0], lang)
        x = self.lm.inject(ids, self.pad, enc)
        cache = clm.KVCache(self.lmcfg, len(ids), dtype=self.lm.dtype)
        h = self.lm.hidden(x, 0, cache, upto=1)
        return float(h[-1, dim])


# --------------------------------------------------------------------------
# GGUF (docs/formats/qwen3_asr.md §2, §3)
# --------------------------------------------------------------------------

def classify(name):
    if name.startswith("frontend.") or name.endswith((".bias", "norm.weight", "norm_attn.weight",
                                                       "norm_ffn.weight", "ln_post.weight")):
        return "N"
    if name.startswith("enc.conv.") and name.endswith(".weight"):
        return "C"
    if name == "dec.token_embd.weight" or name == "dec.output.weight":
        return "E"
    return "L"


def tensor_order(cfg, untied=False):
    names = ["frontend.mel_filterbank", "frontend.window"]
    for i in range(3):
        names += ["enc.conv.%d.weight" % i, "enc.conv.%d.bias" % i]
    names += ["enc.conv_out.weight", "enc.ln_post.weight", "enc.ln_post.bias", "enc.proj1.weight",
              "enc.proj1.bias", "enc.proj2.weight", "enc.proj2.bias"]
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        names += [p + s for s in ("norm_attn.weight", "norm_attn.bias", "attn.q.weight", "attn.q.bias",
                                  "attn.k.weight", "attn.k.bias", "attn.v.weight", "attn.v.bias",
                                  "attn.out.weight", "attn.out.bias", "norm_ffn.weight", "norm_ffn.bias",
                                  "ffn.fc1.weight", "ffn.fc1.bias", "ffn.fc2.weight", "ffn.fc2.bias")]
    names += ["dec.token_embd.weight", "dec.output_norm.weight"]
    if untied:
        names += ["dec.output.weight"]
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % l
        names += [p + s for s in ("norm_attn.weight", "norm_ffn.weight", "attn.q.weight", "attn.k.weight",
                                  "attn.v.weight", "attn.o.weight", "attn.q_norm.weight", "attn.k_norm.weight",
                                  "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight")]
    return names


FILE_TYPE = lc.FILE_TYPE


def ggml_type_for(name, arr_shape, mode):
    cls = classify(name)
    if mode == "F32" or cls == "N" or cls == "C":
        return gw.GGML_F32
    if mode == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if arr_shape[-1] % 32 == 0 else gw.GGML_F16


def write_gguf(path, cfg, vocab, tensors, mode, untied=False, lazy=False):
    """tensors: name -> torch tensor (PyTorch shape) or numpy array."""
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "qwen3_asr")
    w.add_string("general.name", "Qwen3-ASR %s (random reference weights)" % cfg["size_label"])
    w.add_string("general.basename", "qwen3-asr")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_uint32("general.file_type", FILE_TYPE[mode])
    w.add_array("general.languages", [c for c, _ in LANGUAGES], gw.STRING)
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.lang_detect", True)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen2")
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.sid["<|im_end|>"])
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.sid["<|endoftext|>"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    e = "stt.qwen3_asr.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("d_model", cfg["enc_d"]), ("n_heads", cfg["enc_heads"]),
                 ("ffn_dim", cfg["enc_ffn"]), ("num_mel_bins", cfg["n_mels"]),
                 ("downsample_hidden", cfg["conv_ch"]), ("output_dim", cfg["hidden"]),
                 ("max_source_positions", 1500), ("n_window", 50), ("n_window_infer", 800),
                 ("conv_chunksize", 500)):
        w.add_uint32(e + k, v)
    w.add_string(e + "activation", "gelu")
    d = "stt.qwen3_asr.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                 ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                 ("head_dim", cfg["head_dim"])):
        w.add_uint32(d + k, v)
    w.add_string(d + "hidden_act", "silu")
    w.add_float32(d + "rms_norm_eps", 1e-6)
    w.add_float32(d + "rope_theta", 1e6)
    for k, v in zip("thw", cfg["mrope"]):
        w.add_uint32(d + "rope_mrope_section_" + k, v)
    w.add_bool(d + "rope_mrope_interleaved", True)
    w.add_uint32(d + "max_position_embeddings", cfg["max_pos"])
    w.add_bool(d + "tie_word_embeddings", not untied)
    w.add_uint32(d + "vocab_size", cfg["vocab"])
    w.add_uint32("stt.qwen3_asr.audio_token_id", vocab.sid["<|audio_pad|>"])
    w.add_uint32("stt.qwen3_asr.audio_start_token_id", vocab.sid["<|audio_start|>"])
    w.add_uint32("stt.qwen3_asr.audio_end_token_id", vocab.sid["<|audio_end|>"])
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    for k, v in (("num_mels", cfg["n_mels"]), ("sample_rate", 16000), ("n_fft", 400), ("win_length", 400),
                 ("hop_length", 160)):
        w.add_uint32(f + k, v)
    w.add_string(f + "window", "hann_periodic")
    w.add_string(f + "normalize", "per_utterance")
    w.add_float32(f + "dither", 0.0)
    w.add_float32(f + "pre_emphasis", 0.0)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)
    w.add_string(f + "pad_mode", "reflect")
    w.add_bool(f + "center", True)
    w.add_string(f + "mel_norm", "slaney")
    for k, v in (("chunk_length", 30), ("n_samples", 480000), ("nb_max_frames", 3000)):
        w.add_uint32(f + k, v)
    names = tensor_order(cfg, untied)
    assert len(names) == 13 + 16 * cfg["enc_layers"] + 2 + 11 * cfg["dec_layers"] + 2 + (1 if untied else 0)
    for nm in names:
        t = tensors[nm]
        shape = tuple(t.shape)
        gt = ggml_type_for(nm, shape, mode)
        to_np = (lambda t=t: (t.float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)))
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, to_np)
        else:
            w.add_tensor(nm, to_np(), gt)
    if lazy:
        return w.write_stream(path)
    return w.write(path)


# --------------------------------------------------------------------------
# build + goldens
# --------------------------------------------------------------------------

def load_clips(out_dir, shared):
    jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
    we_path = os.path.join(out_dir, "..", "whole-earth-30s.wav")
    if not os.path.exists(we_path):
        src = os.path.join(shared, "samples", "whole-earth.wav")
        we, _ = mel_ref.read_wav(src)
        write_wav16(we_path, we[:480000])
    we, _ = mel_ref.read_wav(we_path)
    assert we.size == 480000
    # partial last chunk (T_mel 236: 2 full chunks + 36 frames) and the
    # shortest accepted clip (201 samples: T_mel 1, T_enc 1)
    return {"jfk": jfk, "we30": we, "jfk_short": jfk[64000:101900], "jfk_min": jfk[40000:40201]}


def build(cfg, vocab, mels, dt):
    t0 = time.time()
    g_enc = torch.Generator().manual_seed(cfg["enc_seed"])
    Wenc = build_encoder_weights(cfg, g_enc, dt)
    z_a = encoder(cfg, Wenc, mels["jfk"], stop_at_proj2=True)
    z_b = encoder(cfg, Wenc, mels["we30"], stop_at_proj2=True)
    calibrate_projector(Wenc, z_a, z_b)
    print("encoder built + calibrated %.1fs" % (time.time() - t0))
    A = chain_ids(vocab, TEXT_A)
    B = chain_ids(vocab, TEXT_B)
    s, i = vocab.sid, vocab.id
    eos = s["<|im_end|>"]
    header = [i["Ċ"], i["language"], i["ĠEnglish"], s["<asr_text>"]]
    cyc = [i["Ġtools"], i["!"]]
    chains = {"header": header, 1: [s["<asr_text>"]] + A + [eos], -1: [s["<asr_text>"]] + B + [eos],
              "fr": [s["<asr_text>"]] + cyc + cyc[:1]}
    # pass 1: measure the switch with unit gain, then set the gain so |s| ≈ 0.4
    g_dec = lambda: torch.Generator().manual_seed(cfg["dec_seed"])
    Wdec, units = build_lm_weights(cfg, vocab, chains, g_dec(), dt, switch_gain=1.0, fr_gain=1.0)
    m = Model(cfg, vocab, Wenc, Wdec, dt)
    sv = {k: m.switch_value(mels[k]) for k in ("jfk", "we30")}
    assert sv["jfk"] > 0 > sv["we30"], sv
    gain = 0.4 / math.sqrt(abs(sv["jfk"] * sv["we30"]))
    fr_gain = 0.4 / m.switch_value(mels["jfk"], "fr", D_FR_SWITCH)
    Wdec, units = build_lm_weights(cfg, vocab, chains, g_dec(), dt, switch_gain=float(f16r(torch.tensor(gain))),
                                   fr_gain=float(f16r(torch.tensor(fr_gain))))
    cache = m._enc_cache
    m = Model(cfg, vocab, Wenc, Wdec, dt)
    m._enc_cache = cache
    sv = {k: m.switch_value(mels[k]) for k in ("jfk", "we30")}
    s_fr = m.switch_value(mels["jfk"], "fr", D_FR_SWITCH)
    assert m.switch_value(mels["jfk"], "de", D_FR_SWITCH) == 0.0
    # switch column of the successor units: γ·|ĥ[switch]| ≈ α/2 at the geometric mean
    p = "dec.blocks.%d." % (cfg["dec_layers"] - 1)
    H = cfg["hidden"]
    rms_pure = math.sqrt((KAPPA ** 2 + RHO ** 2) / H)
    s_ref = math.sqrt(abs(sv["jfk"] * sv["we30"]))
    gamma = 0.5 * 24.0 * rms_pure / (float(Wdec[p + "norm_ffn.weight"][D_SWITCH]) * s_ref)
    gamma_fr = 0.5 * 24.0 * rms_pure / (float(Wdec[p + "norm_ffn.weight"][D_FR_SWITCH]) * s_fr)
    gate = Wdec[p + "ffn.gate.weight"]
    for u in range(len(units)):
        gate[u, D_SWITCH] = f16r(gate[u, D_SWITCH] * gamma)
        gate[u, D_FR_SWITCH] = f16r(gate[u, D_FR_SWITCH] * gamma_fr)
    print("switch after layer 0: jfk %+.4f we30 %+.4f, gain %.3f, gamma %.3f; French %.4f gain %.3f gamma %.3f; "
          "%.1fs" % (sv["jfk"], sv["we30"], gain, gamma, s_fr, fr_gain, gamma_fr, time.time() - t0))
    return Wenc, Wdec, chains


def tensors_for_file(Wenc, Wdec, fb, win):
    T = {"frontend.mel_filterbank": torch.from_numpy(fb.astype(np.float64)),
         "frontend.window": torch.from_numpy(win.astype(np.float64))}
    T.update(Wenc)
    T.update(Wdec)
    return T


def check_readback(path, tensors, cfg, mode, untied=False):
    kv, ts = gw.read_gguf(path)
    names = tensor_order(cfg, untied)
    assert list(ts) == names
    for nm in names:
        gt, ne, a = ts[nm]
        want = tensors[nm]
        want = want.float().numpy() if isinstance(want, torch.Tensor) else np.asarray(want, np.float32)
        assert list(reversed(a.shape)) == ne and a.shape == want.shape, nm
        assert gt == ggml_type_for(nm, want.shape, mode), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
        else:
            q = gw.dequantize_q8_0(gw.quantize_q8_0(want), want.size).reshape(want.shape)
            assert np.array_equal(a, q), nm
    assert kv["tokenizer.ggml.eos_token_id"][0] == gw.UINT32
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == cfg["vocab"]
    return kv, ts


npsave = lc.npsave


def goldens(cfg, vocab, Wenc, Wdec, mels, samples, out, log):
    m64 = Model(cfg, vocab, Wenc, Wdec, torch.float64)
    m32 = Model(cfg, vocab, Wenc, Wdec, torch.float32)
    all_margins = []
    decodes = []
    for clip, modes in (("jfk", ("auto", "en", "de", "fr")), ("we30", ("auto", "en")), ("jfk_short", ("auto",)),
                        ("jfk_min", ("auto",))):
        npsave(os.path.join(out, "%s.mel.npy" % clip), mels[clip])
        for mode in modes:
            lang = None if mode == "auto" else mode
            r = m64.run(mels[clip], lang)
            stem = os.path.join(out, "%s.%s" % (clip, mode))
            if mode == "auto":
                taps = {}
                encoder(cfg, m64.Wenc, mels[clip], taps=taps)
                npsave(os.path.join(out, "%s.pre.npy" % clip), taps["pre"])
                npsave(os.path.join(out, "%s.enc.npy" % clip), r["enc"])
                npsave(os.path.join(out, "%s.enc.f16.npy" % clip), r["enc"])
            npsave(stem + ".prompt.npy", r["prompt"], np.int32)
            npsave(stem + ".logits0.npy", r["logits0"])
            if clip == "jfk_min":
                # one audio row: the switch is ~0, the greedy loop wanders
                # with tiny margins until the budget -> no token golden
                line = ("%-9s T_mel %4d T_enc %3d T_prompt %3d: tensors only (greedy margins %.3f, %d ids, %s)"
                        % (clip + "." + mode, mels[clip].shape[1], r["enc"].shape[0], len(r["prompt"]),
                           min(r["margins"]), len(r["gen"]), r["status"]))
                print(line)
                log.append(line)
                continue
            npsave(stem + ".tokens.npy", r["gen"], np.int32)
            npsave(stem + ".f16.tokens.npy", r["gen"], np.int32)
            with open(stem + ".text.txt", "w", encoding="utf-8") as f:
                f.write("status: %s\nraw: %s\ntext: %s\nlanguage: %s\nsegment_ms: 0 %d\n"
                        % (r["status"], r["raw"], r["text"], r["lang"] or "",
                           samples[clip].size * 1000 // 16000))
            # float32 re-runs (F32 and F16 K/V cache) must give the same tokens
            r32 = m32.run(mels[clip].astype(np.float32), lang)
            r32h = m32.run(mels[clip].astype(np.float32), lang, kv_f16=True)
            same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"]
            enc_err = float((r32["enc"].double() - r["enc"]).abs().max() / r["enc"].abs().max())
            lg_err = float((r32["logits0"].double() - r["logits0"]).abs().max())
            lg_err_h = float((r32h["logits0"].double() - r["logits0"]).abs().max())
            mm = min(r["margins"])
            all_margins.append(mm)
            distinct = len(set(r["gen"]))
            line = ("%-9s T_mel %4d T_enc %3d T_prompt %3d n_gen %3d distinct %2d min_margin %.3f "
                    "|logits0|max %.2f f32: same_tokens=%s enc_rel %.1e logits0_abs %.1e (f16 KV %.1e)"
                    % (clip + "." + mode, mels[clip].shape[1], r["enc"].shape[0], len(r["prompt"]),
                       len(r["gen"]), distinct, mm, float(r["logits0"].abs().max()), same, enc_err, lg_err,
                       lg_err_h))
            print(line)
            log.append(line)
            decodes.append("%s.%s [%s] lang=%s\n  raw:  %r\n  text: %r\n  ids: %s"
                           % (clip, mode, r["status"], r["lang"], r["raw"], r["text"], r["gen"]))
            assert same, "float32 decode differs"
            if mode == "fr":
                assert r["status"] == "OUTPUT_TRUNCATED" and len(r["gen"]) == 256
            else:
                assert r["status"] == "OK" and (distinct >= 30 or clip.startswith("jfk_"))
    # clip-level gate examples
    for clip in ("jfk", "we30"):
        T_prompt = 15 + t_enc_of(mels[clip].shape[1])
        log.append("gate %s: T_prompt %d -> n_ctx %d: %s, n_ctx %d: %s" % (
            clip, T_prompt, T_prompt + 256, input_gate(T_prompt, cfg["max_pos"], T_prompt + 256),
            T_prompt + 255, input_gate(T_prompt, cfg["max_pos"], T_prompt + 255)))
    log.append("smallest margin over all goldens: %.3f" % min(all_margins))
    with open(os.path.join(out, "decodes.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(decodes) + "\n")
    return m64


def model_from_gguf(path, cfg, vocab, dt=torch.float64):
    """Model built from the (dequantized) tensors of a written file, plus its
    stored filterbank and window."""
    _, ts = gw.read_gguf(path)
    W = {n: torch.from_numpy(a.astype(np.float64)).to(dt) for n, (_, _, a) in ts.items()}
    Wenc = {n: t for n, t in W.items() if n.startswith("enc.")}
    Wdec = {n: t for n, t in W.items() if n.startswith("dec.")}
    fb = ts["frontend.mel_filterbank"][2]
    win = ts["frontend.window"][2]
    return Model(cfg, vocab, Wenc, Wdec, dt), fb, win


def q8_goldens(cfg, vocab, mels, samples, out, log):
    """Decodes with the Q8_0 file's dequantized weights (its own column)."""
    m, fb, win = model_from_gguf(os.path.join(out, "qwen3-asr-tiny-ref-Q8_0.gguf"), cfg, vocab)
    for clip, modes in (("jfk", ("auto", "en", "fr")), ("we30", ("auto", "en")), ("jfk_short", ("auto",))):
        mel = logmel(samples[clip], fb, win)
        assert np.array_equal(mel, mels[clip])
        for mode in modes:
            r = m.run(mel, None if mode == "auto" else mode)
            stem = os.path.join(out, "%s.%s" % (clip, mode))
            if mode == "auto":
                npsave(os.path.join(out, "%s.enc.q8_0.npy" % clip), r["enc"])
            npsave(stem + ".q8_0.logits0.npy", r["logits0"])
            npsave(stem + ".q8_0.tokens.npy", r["gen"], np.int32)
            same = list(np.load(stem + ".tokens.npy")) == r["gen"]
            line = "q8_0 %-14s %s n_gen %d min_margin %.3f, tokens %s the F32 ones" % (
                clip + "." + mode, r["status"], len(r["gen"]), min(r["margins"]), "equal" if same else "DIFFER from")
            print(line)
            log.append(line)


TOKENIZER_TEXTS = ["language English", "language German", "language Macedonian", TEXT_A, TEXT_B,
                   "Hello world", "  leading and trailing  ", "line one\nline two\r\n\n", "tabs\tand\tdigits 0123456789",
                   "It's what we'll do, I'd say", "Ünïcödé café — naïve 東京 🙂", "language English<asr_text>x"]


def tokenizer_cases(vocab, out):
    """hex(text) \t ids per line (the layout of tests/data/text/bpe_cases_*.txt):
    encode() with the qwen2 pre-tokenizer and this file's merges."""
    with open(os.path.join(out, "tokenizer_cases.txt"), "w") as f:
        f.write("# hex(text) \t ids  (qwen2 pre-tokenizer, merges of qwen3-asr-tiny-ref-*.gguf)\n")
        for t in TOKENIZER_TEXTS:
            ids = vocab.encode(t)
            assert vocab.decode(ids) == t
            f.write("%s\t%s\n" % (t.encode("utf-8").hex(), " ".join(map(str, ids))))


def untied_golden(cfg, vocab, Wenc, Wdec, mels, out, log, tensors, fb, win):
    """tie_word_embeddings = false + dec.output.weight: the Qwen3-ASR loader
    must refuse it (docs/formats/qwen3_asr.md §2.4). Its untied-head logits are written for decoder
    tests of the shared causal-LM path."""
    g = torch.Generator().manual_seed(cfg["dec_seed"] + 1000)
    Wout = f16r(Wdec["dec.token_embd.weight"] + 0.05 * torch.randn(Wdec["dec.token_embd.weight"].shape,
                                                                    generator=g))
    T = dict(tensors)
    T["dec.output.weight"] = Wout
    path = os.path.join(out, "qwen3-asr-tiny-untied-F16.gguf")
    write_gguf(path, cfg, vocab, T, "F16", untied=True)
    check_readback(path, T, cfg, "F16", untied=True)
    W2 = dict(Wdec)
    W2["dec.output.weight"] = Wout
    m = Model(cfg, vocab, Wenc, W2)
    m.lmcfg.tied = False
    r = m.run(mels["jfk"])
    npsave(os.path.join(out, "jfk.auto.untied.logits0.npy"), r["logits0"])
    npsave(os.path.join(out, "jfk.auto.untied.tokens.npy"), r["gen"], np.int32)
    log.append("untied: jfk.auto tokens %s as tied: %s, min margin %.3f"
               % ("same" if r["gen"] == Model(cfg, vocab, Wenc, Wdec).run(mels["jfk"])["gen"] else "differ",
                  vocab.decode(r["gen"][:-1])[:60], min(r["margins"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=os.environ.get("TR_SHARED_DIR", os.path.join(ROOT, "..", "shared")))
    ap.add_argument("--no-decode", action="store_true", help="real-0.6b: skip the reference decode")
    ap.add_argument("--check-file", help="decode jfk.wav (auto) with the weights of this written GGUF and exit")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    vocab = Vocab(cfg["vocab"])
    print("vocab %d: %d merges, specials %s" % (cfg["vocab"], len(vocab.merges), vocab.sid))
    if a.check_file:
        m, fb, win = model_from_gguf(a.check_file, cfg, vocab, torch.float32)
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        r = m.run(logmel(jfk, fb, win).astype(np.float32))
        print("%s jfk auto: %s n_gen %d min_margin %.3f lang %s text %r (%.0fs)" % (
            os.path.basename(a.check_file), r["status"], len(r["gen"]), min(r["margins"]), r["lang"], r["text"],
            time.time() - t0))
        return
    fb, win = frontend_buffers(cfg["n_mels"])
    if a.config == "tiny":
        samples = load_clips(a.out, a.shared)
    else:
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        we, _ = mel_ref.read_wav(os.path.join(a.shared, "samples", "whole-earth.wav"))
        samples = {"jfk": jfk, "we30": we[:480000].astype(np.float32).astype(np.float64)}
    mels = {k: logmel(v, fb, win) for k, v in samples.items()}
    dt = torch.float64 if a.config == "tiny" else torch.float32
    Wenc, Wdec, chains = build(cfg, vocab, mels, dt)
    tensors = tensors_for_file(Wenc, Wdec, fb, win)
    log = ["config %s seeds enc %d dec %d" % (a.config, cfg["enc_seed"], cfg["dec_seed"])]
    tag = "tiny" if a.config == "tiny" else "0.6b"
    modes = ("F32", "F16", "Q8_0") if a.config == "tiny" else ("F16", "Q8_0")
    for mode in modes:
        path = os.path.join(a.out, "qwen3-asr-%s-ref-%s.gguf" % (tag, mode))
        size = write_gguf(path, cfg, vocab, tensors, mode, lazy=a.config != "tiny")
        print("wrote %s (%.1f MB) %.1fs" % (path, size / 1e6, time.time() - t0))
        if a.config == "tiny":
            check_readback(path, tensors, cfg, mode)
    if a.config == "tiny":
        goldens(cfg, vocab, Wenc, Wdec, mels, samples, a.out, log)
        tokenizer_cases(vocab, a.out)
        q8_goldens(cfg, vocab, mels, samples, a.out, log)
        untied_golden(cfg, vocab, Wenc, Wdec, mels, a.out, log, tensors, fb, win)
        with open(os.path.join(a.out, "margins.txt"), "w") as f:
            f.write("\n".join(log) + "\n")
    elif not a.no_decode:
        m = Model(cfg, vocab, Wenc, Wdec, torch.float32)
        with open(os.path.join(a.out, "decode.txt"), "w", encoding="utf-8") as f:
            for clip in ("jfk", "we30"):
                for lang in (None, "en"):
                    t1 = time.time()
                    r = m.run(mels[clip].astype(np.float32), lang)
                    line = ("%s %s: %s n_gen %d min_margin %.3f lang %s text %r (%.0fs)"
                            % (clip, lang or "auto", r["status"], len(r["gen"]), min(r["margins"]), r["lang"],
                               r["text"], time.time() - t1))
                    print(line)
                    f.write(line + "\n")
    print("done %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
