#!/usr/bin/python3
"""Granite Speech reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/granite_speech.md,
docs/formats/causal-lm.md and docs/formats/gguf.md, independently of the C code. Pieces:

* mel (docs/formats/granite_speech.md §5): reflect pad 256, periodic Hann 400 centred in 512, |FFT|^2,
  HTK 80x257 filterbank (no area norm), log10(max(., 1e-10)), last STFT
  frame dropped, gmax over the kept frames, (max(x, gmax-8) + 4) / 4, odd
  T_mel drops one more frame (§12.1 upstream rule), 2-frame stacking.
* Conformer (§6.1): input linear, macaron FFNs, block-local (200) Shaw
  attention with the query-dependent relative bias, GLU + depthwise +
  BatchNorm conv module, post LN, cat_hidden_layers capture (before the
  bypass), self-conditioned CTC bypass after block n_layers/2.
* Q-Former projector (§6.2): input LayerNorm on the 3 queries, per
  15-frame window self-attn / cross-attn / GELU FFN, proj.linear.
* prompt (§7) with instruction selection, Granite-4 LM (four multipliers,
  tied or untied head) on tools/ref/causal_lm.py, Granite greedy loop
  (docs/formats/causal-lm.md §7 Granite column), output parsing (docs/formats/granite_speech.md §10).
* GGUF writer in the published schema (§2-§3) with a small byte-level BPE.

usage:
  granite.py --config tiny-1b   --out tests/data/granite/tiny-1b
  granite.py --config tiny-plus --out tests/data/granite/tiny-plus
  granite.py --config real-4.0-1b --out build-ref/granite-4.0-1b
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

REAL_VOCAB = 100353
N_BPE_REAL = 100256  # 97 added tokens follow
# Added tokens used by the prompt, at their real ids (docs/formats/granite_speech.md §1, §4); tiny files keep
# the same distance from the end of the table.
SPECIALS = [("<|pad|>", 100256), ("<|end_of_text|>", 100257), ("<|start_of_role|>", 100264),
            ("<|end_of_role|>", 100265), ("<|audio|>", 100352)]

SYSTEM_PLUS = ("Knowledge Cutoff Date: April 2024.\nToday's Date: December 19, 2024.\n"
               "You are Granite, developed by IBM. You are a helpful AI assistant")
INSTR_2B = "transcribe the speech with proper punctuation and capitalization."
INSTR_PLUS = " can you transcribe the speech into a written format?"
INSTR_DEFAULT = "can you transcribe the speech into a written format?"
INSTR_TS = (" Timestamps: Transcribe the speech. After each word, add a timestamp tag showing the end time "
            "in centiseconds, e.g. hello [T:45] world [T:82]")
INSTR_SPK = (" Speaker attribution: Transcribe and denote who is speaking by adding [Speaker 1]: and "
             "[Speaker 2]: tags before speaker turns.")
TR_NAMES = {"de": "German", "fr": "French", "es": "Spanish", "pt": "Portuguese", "ja": "Japanese",
            "it": "Italian", "zh": "Mandarin", "en": "English"}
CHAT_TEMPLATE_G4 = ("{%- for message in messages %}<|start_of_role|>{{ message['role'] }}<|end_of_role|>"
                    "{{ message['content'] }}<|end_of_text|>\n{%- endfor %}"
                    "{%- if add_generation_prompt %}<|start_of_role|>assistant<|end_of_role|>{%- endif %}")
CHAT_TEMPLATE_PLAIN = ("{%- for message in messages %}{{ message['role'].upper() }}: {{ message['content'] }}\n"
                       "{%- endfor %}{%- if add_generation_prompt %} ASSISTANT:{%- endif %}")

BASE_TINY = dict(
    enc_layers=2, enc_h=32, enc_heads=4, enc_hd=8, ctc_dim=24, ff_mult=4, conv_k=15, conv_exp=2,
    max_pos_emb=512, context=200,
    q_layers=2, q_h=32, q_heads=4, q_inter=64,
    dec_layers=3, hidden=96, inter=128, heads=6, kv_heads=3, head_dim=16, vocab=1024, max_pos=4096,
    emb_mult=12.0, att_mult=1.0 / 16, res_mult=0.22, logit_scale=8.0, size_label="tiny")
CONFIGS = {
    "tiny-1b": dict(BASE_TINY, cat=[], tied=False, pre="granite", variant="granite-4.0-1b-speech",
                    plus=False, enc_seed=31, q_seed=32, dec_seed=33),
    "tiny-plus": dict(BASE_TINY, cat=[1], tied=True, pre="gpt2", variant="granite-speech-4.1-2b-plus",
                      plus=True, enc_seed=41, q_seed=42, dec_seed=43),
    "real-4.0-1b": dict(
        enc_layers=16, enc_h=1024, enc_heads=8, enc_hd=128, ctc_dim=348, ff_mult=4, conv_k=15, conv_exp=2,
        max_pos_emb=512, context=200, q_layers=2, q_h=1024, q_heads=16, q_inter=4096,
        dec_layers=40, hidden=2048, inter=4096, heads=16, kv_heads=4, head_dim=128, vocab=REAL_VOCAB,
        max_pos=4096, emb_mult=12.0, att_mult=0.0078125, res_mult=0.22, logit_scale=8.0, size_label="1B",
        cat=[], tied=False, pre="granite", variant="granite-4.0-1b-speech", plus=False,
        enc_seed=51, q_seed=52, dec_seed=53),
}


def langs_of(cfg):
    return ["en", "fr", "de", "es", "pt"] if cfg["plus"] else ["en", "fr", "de", "es", "pt", "ja"]


TR_TARGETS = ["en", "fr", "de", "es", "pt", "ja", "it", "zh"]
TR_PAIRS = ["en>fr", "fr>en", "en>de", "de>en", "en>es", "es>en", "en>pt", "pt>en", "en>ja", "ja>en", "en>it",
            "en>zh"]

# ---- greedy texts ----------------------------------------------------------
# plain transcript (both configs); every token once per chain
TEXT_PLAIN = ("And so my fellow Americans, ask not what your country can do for you. "
              "Whole Earth catalog access to tools! stay hungry and foolish friends café 1984")
# 1b translation into German
TEXT_DE = ("Und so meine lieben amerikanischen Mitbürger, fragt nicht was euer Land für euch leisten kann. "
           "Ganzer Erdkatalog Zugang zu Werkzeugen! bleibt hungrig und töricht 1984")
# plus word timestamps: (word, end centiseconds) -> "word [T:N]" with N = cs % 1000;
# "_" items are silences; the final word has no marker (end = audio end)
TS_WORDS = [("_", 30), ("And", 62), ("so", 95), ("my", 130), ("fellow", 171), ("Americans", 240), ("_", 310),
            ("ask", 352), ("not", 398), ("what", 455), ("your", 507), ("country", 569), ("can", 633),
            ("do", 671), ("for", 720), ("you.", 788), ("Whole", 846), ("Earth", 903), ("catalog", 960),
            ("access", 1004), ("to", 1021), ("tools!", 1058), ("stay", 1077), ("hungry", None)]
# plus speaker attribution: (marker piece, turn words)
SPK_TURNS = [("[Speaker 1]:", " And so my fellow Americans,"), ("Ġ[Speaker 2]:", " ask not what your country can"),
             ("Ġ[Speaker 1]:", " do for you."), ("Ċ[Speaker 2]:", " Whole Earth catalog access to tools!"),
             ("Ċ[Speaker 1]:", " stay hungry and foolish")]


def ts_marker_pieces():
    out = []
    for w, cs in TS_WORDS:
        if cs is not None:
            out.append("Ġ[T:%d]" % (cs % 1000))
    assert len(set(out)) == len(out), "marker values repeat"
    return out


EXTRA_PIECES = ts_marker_pieces() + ["Ġ_", "[Speaker 1]:", "Ġ[Speaker 2]:", "Ġ[Speaker 1]:", "Ċ[Speaker 2]:", "Ċ[Speaker 1]:"]


# --------------------------------------------------------------------------
# audio + mel (docs/formats/granite_speech.md §5)
# --------------------------------------------------------------------------

write_wav16 = lc.write_wav16


def htk_filterbank(sr=16000, n_fft=512, n_mels=80, fmin=0.0, fmax=8000.0):
    """librosa mel(htk=True, norm=None): triangles on the HTK mel scale,
    peak 1, no area normalisation. (n_mels, n_fft/2+1)."""
    mel = lambda f: 2595.0 * np.log10(1.0 + np.asarray(f, np.float64) / 700.0)
    hz = lambda m: 700.0 * (10.0 ** (np.asarray(m, np.float64) / 2595.0) - 1.0)
    fft_f = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = hz(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_f[None, :]
    fb = np.zeros((n_mels, fft_f.size))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        fb[i] = np.maximum(0.0, np.minimum(lower, upper))
    return fb


def frontend_buffers():
    fb = htk_filterbank().astype(np.float32)
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    return fb, win


def stacked_mel(x, fb, win):
    """docs/formats/granite_speech.md §5 on float samples: [T_enc, 160] (frame 2t's 80 bins, then 2t+1's)."""
    n = x.size
    if n < 257:
        raise ValueError("INVALID_ARG: needs >= 257 samples for the reflect pad")
    T = n // 160 + 1
    P = mel_ref.stft_power(x, 512, win.astype(np.float64), 160, "reflect", T)  # [T, 257]
    L = np.log10(np.maximum(fb.astype(np.float64) @ P.T, 1e-10))[:, :T - 1]  # [80, T_mel]
    feat = (np.maximum(L, L.max() - 8.0) + 4.0) / 4.0
    T_mel = feat.shape[1] - (feat.shape[1] % 2)
    T_enc = T_mel // 2
    if T_enc == 0:
        raise ValueError("INVALID_ARG: T_enc = 0")
    f = feat[:, :T_mel]
    return np.concatenate([f[:, 0::2].T, f[:, 1::2].T], axis=1)


# --------------------------------------------------------------------------
# encoder (docs/formats/granite_speech.md §6.1) and projector (§6.2)
# --------------------------------------------------------------------------

def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=eps)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def shaw_attention(cfg, W, p, x):
    T, d = x.shape
    nh, hd, C, M = cfg["enc_heads"], cfg["enc_hd"], cfg["context"], cfg["max_pos_emb"]
    h = layer_norm(x, W[p + "norm_attn.weight"], W[p + "norm_attn.bias"], 1e-5)
    nb = -(-T // C)
    hp = torch.zeros(nb * C, d, dtype=x.dtype)
    hp[:T] = h
    q = hp @ W[p + "attn.q.weight"].T
    kv = hp @ W[p + "attn.kv.weight"].T
    inner = nh * hd
    k, v = kv[:, :inner], kv[:, inner:]
    q = q.view(nb, C, nh, hd)
    k = k.view(nb, C, nh, hd)
    v = v.view(nb, C, nh, hd)
    idx = torch.arange(C)
    dist = (idx[:, None] - idx[None, :]).clamp(-C, C) + M  # [i, j] -> row of rel_pos_emb
    E = W[p + "attn.rel_pos_emb.weight"][dist]  # [C, C, hd]
    s = torch.einsum("bihd,bjhd->bhij", q, k) + torch.einsum("bihd,ijd->bhij", q, E)
    s = s / math.sqrt(hd)
    rem = T - (nb - 1) * C
    if rem < C:
        s[nb - 1, :, :, rem:] = float("-inf")
    o = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, dim=-1), v).reshape(nb * C, inner)[:T]
    return o @ W[p + "attn.out.weight"].T + W[p + "attn.out.bias"]


def conv_module(cfg, W, p, x):
    ci = cfg["enc_h"] * cfg["conv_exp"]
    K = cfg["conv_k"]
    y = layer_norm(x, W[p + "norm_conv.weight"], W[p + "norm_conv.bias"], 1e-5)
    y = y @ W[p + "conv.pointwise1.weight"][:, :, 0].T + W[p + "conv.pointwise1.bias"]
    y = y[:, :ci] * torch.sigmoid(y[:, ci:])
    y = torch.nn.functional.conv1d(y.T[None], W[p + "conv.depthwise.weight"], None, padding=(K - 1) // 2,
                                   groups=ci)[0].T
    y = (y - W[p + "conv.bn.running_mean"]) / torch.sqrt(W[p + "conv.bn.running_var"] + 1e-5) \
        * W[p + "conv.bn.weight"] + W[p + "conv.bn.bias"]
    y = torch.nn.functional.silu(y)
    return y @ W[p + "conv.pointwise2.weight"][:, :, 0].T + W[p + "conv.pointwise2.bias"]


def ffn_half(W, p, x, which):
    h = layer_norm(x, W[p + "norm_%s.weight" % which], W[p + "norm_%s.bias" % which], 1e-5)
    h = torch.nn.functional.silu(h @ W[p + "%s.up.weight" % which].T + W[p + "%s.up.bias" % which])
    return x + 0.5 * (h @ W[p + "%s.down.weight" % which].T + W[p + "%s.down.bias" % which])


def encoder(cfg, W, stacked, taps=None):
    """stacked [T_enc, 160] -> [T_enc, enc_h * (1 + len(cat))]."""
    dt = W["enc.input_linear.weight"].dtype
    x = torch.as_tensor(stacked, dtype=dt) @ W["enc.input_linear.weight"].T + W["enc.input_linear.bias"]
    L = cfg["enc_layers"]
    saved = []
    for i in range(L):
        p = "enc.blocks.%d." % i
        x = ffn_half(W, p, x, "ff1")
        x = x + shaw_attention(cfg, W, p, x)
        x = x + conv_module(cfg, W, p, x)
        x = ffn_half(W, p, x, "ff2")
        x = layer_norm(x, W[p + "norm_post.weight"], W[p + "norm_post.bias"], 1e-5)
        if (i + 1) in cfg["cat"]:
            saved.append(x)
        if (i + 1) == L // 2:
            a = torch.softmax(x @ W["enc.ctc_proj.weight"].T + W["enc.ctc_proj.bias"], dim=-1)
            x = x + a @ W["enc.ctc_bypass.weight"].T + W["enc.ctc_bypass.bias"]
        if taps is not None:
            taps["block%d" % i] = x
    return torch.cat(saved + [x], dim=1)


def mha(q, k, v, nh):
    Tq, d = q.shape
    hd = d // nh
    s = torch.einsum("qhd,khd->hqk", q.view(Tq, nh, hd), k.view(-1, nh, hd)) / math.sqrt(hd)
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v.view(-1, nh, hd)).reshape(Tq, d)


def projector(cfg, W, enc):
    """enc [T_enc, e] -> [3 * ceil(T_enc / 15), LM hidden], window-major."""
    T, e = enc.shape
    nh, eps = cfg["q_heads"], 1e-12
    nb = -(-T // 15)
    Ep = torch.zeros(nb * 15, e, dtype=enc.dtype)
    Ep[:T] = enc
    lin = lambda x, n: x @ W[n + ".weight"].T + W[n + ".bias"]
    q0 = W["proj.query"].reshape(3, -1)
    Q0 = layer_norm(q0, W["proj.qformer.final_norm.weight"], W["proj.qformer.final_norm.bias"], eps)
    out = []
    for b in range(nb):
        Wb = Ep[b * 15:(b + 1) * 15]
        Q = Q0
        for l in range(cfg["q_layers"]):
            p = "proj.qformer.blocks.%d." % l
            a = lin(mha(lin(Q, p + "self_attn.q"), lin(Q, p + "self_attn.k"), lin(Q, p + "self_attn.v"), nh),
                    p + "self_attn.out")
            Q = layer_norm(a + Q, W[p + "norm_self_attn.weight"], W[p + "norm_self_attn.bias"], eps)
            a = lin(mha(lin(Q, p + "cross_attn.q"), lin(Wb, p + "cross_attn.k"), lin(Wb, p + "cross_attn.v"), nh),
                    p + "cross_attn.out")
            Q = layer_norm(a + Q, W[p + "norm_cross_attn.weight"], W[p + "norm_cross_attn.bias"], eps)
            f = lin(gelu(lin(Q, p + "ffn.up")), p + "ffn.down")
            Q = layer_norm(f + Q, W[p + "norm_ffn.weight"], W[p + "norm_ffn.bias"], eps)
        out.append(lin(Q, "proj.linear"))
    return torch.cat(out, dim=0)


# --------------------------------------------------------------------------
# tokenizer (docs/formats/granite_speech.md §4)
# --------------------------------------------------------------------------

class Vocab:
    def __init__(self, cfg):
        V = cfg["vocab"]
        self.pre = cfg["pre"]
        base = V - (REAL_VOCAB - N_BPE_REAL)
        self.n_bpe = base
        self.sid = {p: base + (i - N_BPE_REAL) for p, i in SPECIALS}
        corpus = [TEXT_PLAIN] * 40 + [TEXT_DE] * 40
        corpus += [" ".join(w for w, _ in TS_WORDS)] * 20 + [t for _, t in SPK_TURNS if t] * 20
        corpus += ["USER: ", "\n ASSISTANT:", "system", "user", "assistant", "\n", SYSTEM_PLUS] * 30
        corpus += [INSTR_2B, INSTR_PLUS, INSTR_DEFAULT, INSTR_TS, INSTR_SPK] * 30
        corpus += ["can you translate the speech into %s?" % n for n in TR_NAMES.values()] * 10
        byte_pieces = [tok_ref.BYTE_MAP[b] for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                       + list(range(0xAE, 0x100))]
        byte_pieces += [tok_ref.BYTE_MAP[b] for b in range(256) if tok_ref.BYTE_MAP[b] not in byte_pieces]
        n_merges = min(base - 256 - len(EXTRA_PIECES), 620)
        self.merges = tok_ref.train_bpe(corpus, n_merges, self.pre)
        pieces = byte_pieces + [m.replace(" ", "") for m in self.merges]
        seen = set()
        self.tokens, self.types = [], []
        for p in pieces:
            if p in seen:
                p = "<|dup_%d|>" % len(self.tokens)
            seen.add(p)
            self.tokens.append(p)
            self.types.append(1)
        for p in EXTRA_PIECES:  # whole-marker pieces: reachable only by generation
            if p not in seen:
                seen.add(p)
                self.tokens.append(p)
                self.types.append(1)
        assert len(self.tokens) <= base, "vocab too small"
        while len(self.tokens) < base:
            self.tokens.append("<|unused_%d|>" % len(self.tokens))
            self.types.append(1)
        while len(self.tokens) < V:
            self.tokens.append("<|added_%d|>" % len(self.tokens))
            self.types.append(3)
        for p, i in self.sid.items():
            self.tokens[i] = p
            self.types[i] = 3
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)
        self.id = {}
        for i, p in enumerate(self.tokens):
            self.id.setdefault(p, i)

    def encode(self, text):
        return self.bpe.encode(text.encode("utf-8"), self.pre)

    def decode(self, ids):
        return self.bpe.decode_bytes(ids).decode("utf-8", "replace")


def chain_of_text(vocab, text):
    ids = vocab.encode(text)
    assert vocab.decode(ids) == text
    return ids


def ts_chain(vocab):
    ids = []
    for w, cs in TS_WORDS:
        if w == "_":
            ids.append(vocab.id["_"] if not ids else vocab.id["Ġ_"])
        else:
            ids += vocab.encode((" " if ids else "") + w)
        if cs is not None:
            ids.append(vocab.id["Ġ[T:%d]" % (cs % 1000)])
    return ids


def spk_chain(vocab):
    ids = []
    for mk, words in SPK_TURNS:
        if words is None:
            break
        ids.append(vocab.id[mk])
        ids += vocab.encode(words)
    return ids


# --------------------------------------------------------------------------
# prompt (docs/formats/granite_speech.md §7), gate (§9), parse (§10)
# --------------------------------------------------------------------------

def select_instruction(cfg, task="transcribe", target=None, timestamps="none", diarize=False, lang=None):
    """docs/formats/granite_speech.md §7.2 plus the run-time checks; raises ValueError(status)."""
    if lang is not None and lang not in langs_of(cfg):
        raise ValueError("UNSUPPORTED_LANGUAGE")
    if task == "translate" and cfg["plus"]:
        raise ValueError("UNSUPPORTED_TASK")
    if diarize:
        if not cfg["plus"]:
            raise ValueError("UNSUPPORTED (diarize needs stt.capability.speaker_diarization)")
        if task != "transcribe":
            raise ValueError("INVALID_ARG")
        if timestamps not in ("none", "auto"):
            raise ValueError("UNSUPPORTED_TIMESTAMPS")
    if timestamps == "word" and not cfg["plus"]:
        raise ValueError("UNSUPPORTED_TIMESTAMPS")
    v = cfg["variant"]
    instr = INSTR_2B if v == "granite-speech-4.1-2b" else INSTR_PLUS if v == "granite-speech-4.1-2b-plus" \
        else INSTR_DEFAULT
    if task == "translate":
        if target is None:
            raise ValueError("INVALID_ARG")
        if target not in TR_TARGETS or (lang is not None and "%s>%s" % (lang, target) not in TR_PAIRS):
            raise ValueError("UNSUPPORTED_LANGUAGE")
        instr = "can you translate the speech into " + TR_NAMES[target] + "?"
    elif timestamps == "word":
        instr = INSTR_TS
    elif diarize:
        instr = INSTR_SPK
    return instr


def build_prompt(cfg, vocab, n_audio, instr):
    """docs/formats/granite_speech.md §7.1; audio placeholders carry the <|audio|> id here (the C side may
    use id 0 for the lookup, the rows are replaced either way)."""
    s = vocab.sid
    audio = [s["<|audio|>"]] * n_audio
    if cfg["plus"]:
        e = vocab.encode
        return ([s["<|start_of_role|>"]] + e("system") + [s["<|end_of_role|>"]] + e(SYSTEM_PLUS)
                + [s["<|end_of_text|>"]] + e("\n") + [s["<|start_of_role|>"]] + e("user") + [s["<|end_of_role|>"]]
                + audio + e(instr) + [s["<|end_of_text|>"]] + e("\n") + [s["<|start_of_role|>"]] + e("assistant")
                + [s["<|end_of_role|>"]])
    return vocab.encode("USER: ") + audio + vocab.encode(instr + "\n ASSISTANT:")


def input_gate(T_prompt, max_pos, n_ctx=0):
    ceiling = min(max_pos, n_ctx) if n_ctx > 0 else max_pos
    return "INPUT_TOO_LONG" if T_prompt + 256 > ceiling else "OK"


def parse_words(raw, audio_ms):
    """docs/formats/granite_speech.md §10.1 -> list of (t0_ms, t1_ms, text)."""
    rollover, last, prev_end, pending, words = 0, -1, 0, "", []
    i, n = 0, len(raw)
    trim = lambda s: s.strip(" \t\n\r")
    while i < n:
        if raw.startswith("[T:", i):
            j = i + 3
            while j < n and raw[j] == " ":
                j += 1
            k = j
            while k < n and "0" <= raw[k] <= "9":
                k += 1
            m = k
            while m < n and raw[m] == " ":
                m += 1
            if k > j and m < n and raw[m] == "]":
                N = int(raw[j:k])
                if last >= 0 and N < last:
                    rollover += 1
                last = N
                end_ms = (N + 1000 * rollover) * 10
                w = trim(pending)
                if w and w != "_":
                    words.append((prev_end, end_ms, w))
                prev_end, pending = end_ms, ""
                i = m + 1
                continue
        pending += raw[i]
        i += 1
    w = trim(pending)
    if w and w != "_":
        words.append((prev_end, max(audio_ms, prev_end), w))
    return words


def parse_speakers(raw):
    """docs/formats/granite_speech.md §10.2 -> list of (speaker_id, text) turns (empty leading speaker-0 turn dropped)."""
    turns, cur_spk, cur, i, n = [], 0, "", 0, len(raw)
    found = False
    while i < n:
        if raw.startswith("[Speaker ", i):
            j = i + 9
            k = j
            while k < n and "0" <= raw[k] <= "9":
                k += 1
            if k > j and k < n and raw[k] == "]" and int(raw[j:k]) >= 1:
                turns.append((cur_spk, cur))
                cur_spk, cur, found = int(raw[j:k]), "", True
                i = k + 1
                if i < n and raw[i] == ":":
                    i += 1
                if i < n and raw[i] == " ":
                    i += 1
                continue
        cur += raw[i]
        i += 1
    turns.append((cur_spk, cur))
    if not found:
        return None
    turns = [(s, t.strip(" \t\n\r")) for s, t in turns]
    if turns and turns[0][0] == 0 and turns[0][1] == "":
        turns = turns[1:]
    return turns


def parse_output(vocab, gen, eos, audio_ms, timestamps, diarize):
    ids = gen[:-1] if gen and gen[-1] == eos else list(gen)
    raw = vocab.decode(ids)
    res = dict(raw=raw, words=[], speakers=[], kind="NONE")
    if timestamps == "word":
        words = parse_words(raw, audio_ms)
        if words:
            res.update(words=words, text=" ".join(w for _, _, w in words), kind="WORD",
                       segments=[(words[0][0], words[-1][1], None, " ".join(w for _, _, w in words))])
            return res
    if diarize:
        turns = parse_speakers(raw)
        if turns is not None:
            res.update(segments=[(0, 0, s, t) for s, t in turns], speakers=[(s, t) for s, t in turns if s >= 1],
                       text=" ".join(t for _, t in turns if t))
            return res
    res.update(text=raw, segments=[(0, audio_ms, None, raw)])
    return res


def granite_greedy(lm, x_prompt, eos, max_pos, n_ctx_session=0, kv_f16=False):
    """Granite step loop (docs/formats/causal-lm.md §7 Granite column): for i < max_steps:
    stop at EOS, else emit and step. Returns (ids incl. a final EOS when
    reached, margins, prefill logits, truncated)."""
    T = x_prompt.shape[0]
    ceiling = min(max_pos, n_ctx_session) if n_ctx_session > 0 else max_pos
    n_ctx = -(-min(T + 256, ceiling) // 256) * 256
    max_steps = min(256, n_ctx - T, ceiling - T)
    cache = clm.KVCache(lm.cfg, n_ctx, dtype=lm.dtype, f16=kv_f16)
    logits0 = lm.prefill(x_prompt, cache)
    tok, m = clm.argmax_lowest(logits0)
    out, margins = [], [m]
    for i in range(max_steps):
        if tok == eos:
            break
        out.append(tok)
        tok, m = clm.argmax_lowest(lm.step(tok, T + i, cache))
        margins.append(m)
    trunc = tok != eos
    if not trunc:
        out.append(eos)
    return out, margins, logits0, trunc


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
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        for nm in ("norm_ff1", "norm_attn", "norm_conv", "norm_ff2", "norm_post"):
            W[p + nm + ".weight"] = 1 + 0.1 * r(h)
            W[p + nm + ".bias"] = 0.1 * r(h)
        for ff in ("ff1", "ff2"):
            W[p + ff + ".up.weight"] = f16r(r(F, h) / math.sqrt(h))
            W[p + ff + ".up.bias"] = 0.1 * r(F)
            W[p + ff + ".down.weight"] = f16r(r(h, F) / math.sqrt(F))
            W[p + ff + ".down.bias"] = 0.1 * r(h)
        W[p + "attn.q.weight"] = f16r(r(nh * hd, h) * 1.5 / math.sqrt(h))
        W[p + "attn.kv.weight"] = f16r(r(2 * nh * hd, h) * 1.5 / math.sqrt(h))
        W[p + "attn.out.weight"] = f16r(r(h, nh * hd) / math.sqrt(nh * hd))
        W[p + "attn.out.bias"] = 0.1 * r(h)
        W[p + "attn.rel_pos_emb.weight"] = f16r(r(2 * cfg["max_pos_emb"] + 1, hd))
        W[p + "conv.pointwise1.weight"] = f16r(r(2 * ci, h, 1) / math.sqrt(h))
        W[p + "conv.pointwise1.bias"] = 0.1 * r(2 * ci)
        W[p + "conv.depthwise.weight"] = f16r(r(ci, 1, K) / math.sqrt(K))
        W[p + "conv.bn.weight"] = 1 + 0.1 * r(ci)
        W[p + "conv.bn.bias"] = 0.1 * r(ci)
        W[p + "conv.bn.running_mean"] = 0.1 * r(ci)
        W[p + "conv.bn.running_var"] = 0.5 + torch.rand(ci, generator=gen, dtype=dt)
        W[p + "conv.pointwise2.weight"] = f16r(r(h, ci, 1) / math.sqrt(ci))
        W[p + "conv.pointwise2.bias"] = 0.1 * r(h)
    return W


def build_projector_weights(cfg, gen, dt):
    p_, e, pi, H = cfg["q_h"], cfg["enc_h"] * (1 + len(cfg["cat"])), cfg["q_inter"], cfg["hidden"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    W = {"proj.query": f16r(r(1, 3, p_)), "proj.qformer.final_norm.weight": 1 + 0.1 * r(p_),
         "proj.qformer.final_norm.bias": 0.1 * r(p_),
         "proj.linear.weight": f16r(r(H, p_) / math.sqrt(p_)), "proj.linear.bias": 0.1 * r(H)}
    for l in range(cfg["q_layers"]):
        b = "proj.qformer.blocks.%d." % l
        for att, kin in (("self_attn", p_), ("cross_attn", e)):
            W[b + att + ".q.weight"] = f16r(r(p_, p_) * 1.5 / math.sqrt(p_))
            W[b + att + ".k.weight"] = f16r(r(p_, kin) * 1.5 / math.sqrt(kin))
            W[b + att + ".v.weight"] = f16r(r(p_, kin) / math.sqrt(kin))
            W[b + att + ".out.weight"] = f16r(r(p_, p_) / math.sqrt(p_))
            for x in ("q", "k", "v", "out"):
                W[b + att + ".%s.bias" % x] = 0.1 * r(p_)
        for nm in ("norm_self_attn", "norm_cross_attn", "norm_ffn"):
            W[b + nm + ".weight"] = 1 + 0.1 * r(p_)
            W[b + nm + ".bias"] = 0.1 * r(p_)
        W[b + "ffn.up.weight"] = f16r(r(pi, p_) / math.sqrt(p_))
        W[b + "ffn.up.bias"] = 0.1 * r(pi)
        W[b + "ffn.down.weight"] = f16r(r(p_, pi) / math.sqrt(pi))
        W[b + "ffn.down.bias"] = 0.1 * r(p_)
    return W


# residual dims reserved by the LM construction
D_CONST, D_TS_MARK, D_SPK_MARK, D_TR_MARK, D_TS, D_SPK, D_TR = range(7)
N_RESERVED = 7
KAPPA, RHO, MU = lc.KAPPA, lc.RHO, 1.0
BRANCH_MARK = {"ts": (D_TS_MARK, D_TS, 0), "spk": (D_SPK_MARK, D_SPK, 2), "tr": (D_TR_MARK, D_TR, 4)}
MARK_PIECE = {"ts": "ĠTimestamps", "spk": "Ġattribution", "tr": "Ġtranslate"}


def zero_reserved_projection(Wq):
    """Audio rows carry 0 in every reserved dim but the constant (κ)."""
    Wq["proj.linear.weight"][:N_RESERVED] = 0
    Wq["proj.linear.bias"][:N_RESERVED] = 0
    Wq["proj.linear.bias"][D_CONST] = KAPPA


def build_lm_weights(cfg, vocab, chains, gen, dt, gains, alpha=24.0, beta=8.0):
    """Granite LM weights: random everywhere, plus
    * embeddings κ·e0 + ρ·r_t (chain tokens orthonormal in the free dims),
      the instruction marker tokens carry μ in their marker dim;
    * layer 0, query heads 0/2/4 (KV heads 0/1/2): attend (q from the const
      dim, k from a marker dim, lowest RoPE frequency) to the marker token
      and copy it into a switch dim (timestamps / speaker / translate);
    * last layer FFN: one SwiGLU unit per (token, branch): fires on its
      token; plain units are killed by any switch, branch units need theirs;
      writes β (in embedding units) × the successor's direction.
    chains: branch -> token list (start token first, EOS last)."""
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    nh, nkv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    Q, K = nh * hd, nkv * hd
    L = cfg["dec_layers"]
    Me, Mr = cfg["emb_mult"], cfg["res_mult"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    R, E, free = lc.successor_embeddings(r, V, H, N_RESERVED, chains, dt, D_CONST)
    for br, (dm, _, _) in BRANCH_MARK.items():
        if MARK_PIECE[br] in vocab.id:
            E[vocab.id[MARK_PIECE[br]], dm] = MU
    W = {"dec.token_embd.weight": f16r(E),
         "dec.output_norm.weight": 2.0 * cfg["logit_scale"] * (1 + 0.1 * r(H))}
    if not cfg["tied"]:
        W["dec.output.weight"] = f16r(E + 0.05 * r(V, H))
    out_scale = 0.25 / math.sqrt(2 * L * H) * Me / Mr  # sublayer noise ≈ 0.25 embedding units in all
    # q × 4: scores ~ O(1) at the 1/head_dim scale
    clm.random_blocks(W, r, L, H, I, Q, K, hd, out_scale, N_RESERVED, qk_norm=False, q_gain=4.0)
    j = hd // 2 - 1  # lowest RoPE frequency
    g_qk = 6.0
    for br, (dm, ds, qh) in BRANCH_MARK.items():
        lc.switch_head(W, qh, qh // (nh // nkv), hd, j, D_CONST, dm, dm, ds, gains.get(br, 1.0), g_qk)
    wn, n, gate, up, down = lc.ffn_unit_scale(W, L, H)
    units = lc.edges(chains)
    assert len(units) <= I, (len(units), I)
    g_exp = 0.5 * alpha
    act = g_exp / (1 + math.exp(-g_exp))
    for u, (a, b, br) in enumerate(units):
        ra = R[a]
        tau = 0.5 if br == "plain" else 1.0
        gate[u] = 0
        gate[u, free] = alpha * n * ra[free] / wn[free]
        gate[u, D_CONST] = -alpha * tau * n * RHO / (KAPPA * wn[D_CONST])
        for ob, (_, ds, _) in BRANCH_MARK.items():  # signs; scaled by the calibration in build()
            gate[u, ds] = 1.0 if ob == br else -2.0
        up[u] = 0
        up[u, free] = n * ra[free] / wn[free]
        down[:, u] = 0
        down[free, u] = beta * R[b, free] / act * Me / Mr
    lc.round_linear(W)
    return W, units


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

class Model:
    def __init__(self, cfg, vocab, Wenc, Wproj, Wdec, dt=torch.float64):
        self.cfg, self.vocab, self.dt = cfg, vocab, dt
        self.Wenc = {k: v.to(dt) for k, v in Wenc.items()}
        self.Wproj = {k: v.to(dt) for k, v in Wproj.items()}
        self.lmcfg = clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                                  n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                                  vocab=cfg["vocab"], eps=1e-5, rope_theta=10000.0, qk_norm=False,
                                  tied=cfg["tied"], embedding_multiplier=cfg["emb_mult"],
                                  attention_multiplier=cfg["att_mult"], residual_multiplier=cfg["res_mult"],
                                  logits_scaling=cfg["logit_scale"])
        self.lm = clm.CausalLM(self.lmcfg, Wdec, dtype=dt)
        self.eos = vocab.sid["<|end_of_text|>"]
        self.audio = vocab.sid["<|audio|>"]
        self._cache = {}

    def audio_rows(self, stacked):
        key = (stacked.shape, stacked.dtype.str, hash(np.ascontiguousarray(stacked).tobytes()))
        if key not in self._cache:
            enc = encoder(self.cfg, self.Wenc, stacked)
            self._cache[key] = (enc, projector(self.cfg, self.Wproj, enc))
        return self._cache[key]

    def prompt(self, stacked, **task):
        enc, proj = self.audio_rows(stacked)
        instr = select_instruction(self.cfg, **task)
        return enc, proj, build_prompt(self.cfg, self.vocab, proj.shape[0], instr)

    def run(self, stacked, n_samples, kv_f16=False, n_ctx=0, **task):
        enc, proj, ids = self.prompt(stacked, **task)
        gate = input_gate(len(ids), self.cfg["max_pos"], n_ctx)
        if gate != "OK":
            return dict(status=gate, enc=enc, proj=proj, prompt=ids)
        x = self.lm.inject(ids, self.audio, proj)
        gen, margins, logits0, trunc = granite_greedy(self.lm, x, self.eos, self.cfg["max_pos"], n_ctx, kv_f16)
        res = parse_output(self.vocab, gen, self.eos, n_samples * 1000 // 16000, task.get("timestamps", "none"),
                           task.get("diarize", False))
        res.update(status="OUTPUT_TRUNCATED" if trunc else "OK", enc=enc, proj=proj, prompt=ids, gen=gen,
                   margins=margins, logits0=logits0)
        return res

    def switch_value(self, stacked, dim, **task):
        enc, proj, ids = self.prompt(stacked, **task)
        x = self.lm.inject(ids, self.audio, proj)
        cache = clm.KVCache(self.lmcfg, len(ids), dtype=self.lm.dtype)
        return float(self.lm.hidden(x, 0, cache, upto=1)[-1, dim])


# --------------------------------------------------------------------------
# GGUF (docs/formats/granite_speech.md §2, §3)
# --------------------------------------------------------------------------

def classify(name):
    if name.startswith("frontend.") or name.endswith(".bias") or ".norm" in name or "norm_" in name \
            or ".bn." in name or name.endswith("final_norm.weight") or name == "dec.output_norm.weight":
        return "N"
    if name.endswith("conv.depthwise.weight"):
        return "C"
    if name.endswith(("pointwise1.weight", "pointwise2.weight")):
        return "P"
    if name == "dec.token_embd.weight":
        return "E"
    if name.endswith(("attn.out.weight", "attn.o.weight")):
        return "A"
    return "L"


def tensor_order(cfg, untied=None):
    untied = (not cfg["tied"]) if untied is None else untied
    names = ["frontend.mel_filterbank", "frontend.window", "enc.input_linear.weight", "enc.input_linear.bias",
             "enc.ctc_proj.weight", "enc.ctc_proj.bias", "enc.ctc_bypass.weight", "enc.ctc_bypass.bias"]
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        names += [p + s for s in (
            "norm_ff1.weight", "norm_ff1.bias", "ff1.up.weight", "ff1.up.bias", "ff1.down.weight", "ff1.down.bias",
            "norm_attn.weight", "norm_attn.bias", "attn.q.weight", "attn.kv.weight", "attn.out.weight",
            "attn.out.bias", "attn.rel_pos_emb.weight", "norm_conv.weight", "norm_conv.bias",
            "conv.pointwise1.weight", "conv.pointwise1.bias", "conv.depthwise.weight", "conv.bn.weight",
            "conv.bn.bias", "conv.bn.running_mean", "conv.bn.running_var", "conv.pointwise2.weight",
            "conv.pointwise2.bias", "norm_ff2.weight", "norm_ff2.bias", "ff2.up.weight", "ff2.up.bias",
            "ff2.down.weight", "ff2.down.bias", "norm_post.weight", "norm_post.bias")]
    names += ["proj.query", "proj.qformer.final_norm.weight", "proj.qformer.final_norm.bias", "proj.linear.weight",
              "proj.linear.bias"]
    for l in range(cfg["q_layers"]):
        b = "proj.qformer.blocks.%d." % l
        for att in ("self_attn", "cross_attn"):
            for x in ("q", "k", "v", "out"):
                names += [b + att + ".%s.weight" % x, b + att + ".%s.bias" % x]
            names += [b + "norm_" + att + ".weight", b + "norm_" + att + ".bias"]
        names += [b + "ffn.up.weight", b + "ffn.up.bias", b + "ffn.down.weight", b + "ffn.down.bias",
                  b + "norm_ffn.weight", b + "norm_ffn.bias"]
    names += ["dec.token_embd.weight"] + (["dec.output.weight"] if untied else []) + ["dec.output_norm.weight"]
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % l
        names += [p + s for s in ("norm_attn.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight",
                                  "attn.o.weight", "norm_ffn.weight", "ffn.gate.weight", "ffn.up.weight",
                                  "ffn.down.weight")]
    assert len(names) == 8 + 32 * cfg["enc_layers"] + 5 + 26 * cfg["q_layers"] + 2 + untied + 9 * cfg["dec_layers"]
    return names


FILE_TYPE = lc.FILE_TYPE


def ggml_type_for(name, shape, mode):
    cls = classify(name)
    if mode == "F32" or cls == "N":
        return gw.GGML_F32
    if cls == "C":
        return gw.GGML_F32  # derived presets store the depthwise kernel F32
    if cls == "P" or mode == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def write_gguf(path, cfg, vocab, tensors, mode, query3d=None, cat_key="auto", tie_key=True, drop=(),
               lazy=False):
    """query3d: store proj.query as ne [p, 3, 1] (converter BF16 layout) instead
    of [p, 3] (quantizer layout); default: 3-D in F32 files, 2-D otherwise.
    cat_key: "auto" (written iff non-empty, like gguf-py 0.19), "absent", "empty"."""
    if query3d is None:
        query3d = mode == "F32"
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "granite_speech")
    w.add_string("general.name", "Granite Speech %s (random reference weights)" % cfg["size_label"])
    w.add_string("general.basename", "granite-speech")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "IBM")
    w.add_string("general.organization", "ibm-granite")
    w.add_uint32("general.file_type", FILE_TYPE[mode])
    w.add_array("general.languages", langs_of(cfg), gw.STRING)
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.translate", not cfg["plus"])
    w.add_bool("stt.capability.lang_detect", False)
    w.add_bool("stt.capability.word_timestamps", cfg["plus"])
    w.add_bool("stt.capability.speaker_diarization", cfg["plus"])
    if not cfg["plus"]:
        w.add_array("stt.translation.target_languages", TR_TARGETS, gw.STRING)
        w.add_array("stt.translation.pairs", TR_PAIRS, gw.STRING)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", cfg["pre"])
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.sid["<|end_of_text|>"])
    w.add_uint32("tokenizer.ggml.bos_token_id", vocab.sid["<|end_of_text|>"])
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.sid["<|pad|>"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_string("tokenizer.chat_template", CHAT_TEMPLATE_G4 if cfg["plus"] else CHAT_TEMPLATE_PLAIN)
    e = "stt.granite.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("hidden", cfg["enc_h"]), ("n_heads", cfg["enc_heads"]),
                 ("head_dim", cfg["enc_hd"]), ("input_dim", 160), ("output_dim", cfg["ctc_dim"]),
                 ("feedforward_mult", cfg["ff_mult"]), ("conv_kernel_size", cfg["conv_k"]),
                 ("conv_expansion", cfg["conv_exp"]), ("max_pos_emb", cfg["max_pos_emb"]),
                 ("context_size", cfg["context"])):
        w.add_uint32(e + k, v)
    if cat_key == "empty":
        w.add_array(e + "cat_hidden_layers", [], gw.INT32)
    elif cat_key == "auto" and cfg["cat"]:
        w.add_array(e + "cat_hidden_layers", cfg["cat"], gw.INT32)
    p = "stt.granite.projector."
    for k, v in (("n_layers", cfg["q_layers"]), ("hidden", cfg["q_h"]), ("intermediate", cfg["q_inter"]),
                 ("n_heads", cfg["q_heads"]), ("encoder_hidden_size", cfg["enc_h"] * (1 + len(cfg["cat"]))),
                 ("cross_attn_frequency", 1)):
        w.add_uint32(p + k, v)
    w.add_string(p + "hidden_act", "gelu")
    w.add_float32(p + "layer_norm_eps", 1e-12)
    w.add_uint32(p + "max_pos_emb", 2048)
    w.add_string(p + "position_embedding_type", "absolute")
    d = "stt.granite.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                 ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                 ("head_dim", cfg["head_dim"])):
        w.add_uint32(d + k, v)
    w.add_string(d + "hidden_act", "silu")
    w.add_float32(d + "rms_norm_eps", 1e-5)
    w.add_float32(d + "rope_theta", 10000.0)
    w.add_uint32(d + "max_position_embeddings", cfg["max_pos"])
    if tie_key:
        w.add_bool(d + "tie_word_embeddings", cfg["tied"] if tie_key is True else tie_key == "true")
    w.add_uint32(d + "vocab_size", cfg["vocab"])
    w.add_float32(d + "embedding_multiplier", cfg["emb_mult"])
    w.add_float32(d + "logits_scaling", cfg["logit_scale"])
    w.add_float32(d + "attention_multiplier", cfg["att_mult"])
    w.add_float32(d + "residual_multiplier", cfg["res_mult"])
    w.add_uint32("stt.granite.audio_token_id", vocab.sid["<|audio|>"])
    w.add_uint32("stt.granite.downsample_rate", 5)
    w.add_uint32("stt.granite.window_size", 15)
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    for k, v in (("num_mels", 80), ("sample_rate", 16000), ("n_fft", 512), ("win_length", 400), ("hop_length", 160)):
        w.add_uint32(f + k, v)
    w.add_string(f + "window", "hann_periodic")
    w.add_string(f + "normalize", "per_utterance")
    for k, v in (("dither", 0.0), ("pre_emphasis", 0.0), ("f_min", 0.0), ("f_max", 8000.0)):
        w.add_float32(f + k, v)
    w.add_string(f + "pad_mode", "reflect")
    w.add_bool(f + "center", True)
    w.add_string(f + "mel_norm", "htk")
    for nm in tensor_order(cfg):
        if nm in drop:
            continue
        t = tensors[nm]
        shape = tuple(t.shape)
        if nm == "proj.query":
            shape = (1, 3, shape[-1]) if query3d else (3, shape[-1])
        gt = ggml_type_for(nm, shape, mode)
        to_np = (lambda t=t, shape=shape: (t.float().numpy() if hasattr(t, "numpy")
                                           else np.asarray(t, np.float32)).reshape(shape))
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, to_np)
        else:
            w.add_tensor(nm, to_np(), gt)
    return w.write_stream(path) if lazy else w.write(path)


def check_readback(path, tensors, cfg, mode, query3d=None):
    kv, ts = gw.read_gguf(path)
    assert list(ts) == tensor_order(cfg)
    q3 = (mode == "F32") if query3d is None else query3d
    for nm, (gt, ne, a) in ts.items():
        want = tensors[nm]
        want = want.float().numpy() if isinstance(want, torch.Tensor) else np.asarray(want, np.float32)
        if nm == "proj.query":
            assert ne == ([cfg["q_h"], 3, 1] if q3 else [cfg["q_h"], 3]), ne
            want = want.reshape(a.shape)
        assert a.shape == want.shape, nm
        assert gt == ggml_type_for(nm, want.shape, mode), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == cfg["vocab"]
    return kv, ts


def model_from_gguf(path, cfg, vocab, dt=torch.float64):
    _, ts = gw.read_gguf(path)
    W = {n: torch.from_numpy(a.astype(np.float64)).to(dt) for n, (_, _, a) in ts.items()}
    pick = lambda pre: {n: t for n, t in W.items() if n.startswith(pre)}
    return Model(cfg, vocab, pick("enc."), pick("proj."), pick("dec."), dt), ts["frontend.mel_filterbank"][2], \
        ts["frontend.window"][2]


# --------------------------------------------------------------------------
# build + goldens
# --------------------------------------------------------------------------

def load_clips(data_dir, shared):
    """jfk.wav (floor(n/160) = 1100, even) and a 54 000-sample cut of
    whole-earth.wav (floor(n/160) = 337, odd -> upstream drops a frame)."""
    jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
    odd_path = os.path.join(data_dir, "we_odd.wav")
    if not os.path.exists(odd_path):
        we, _ = mel_ref.read_wav(os.path.join(shared, "samples", "whole-earth.wav"))
        write_wav16(odd_path, we[160000:214000])
    odd, _ = mel_ref.read_wav(odd_path)
    assert odd.size == 54000 and (odd.size // 160) % 2 == 1
    return {"jfk": jfk, "odd": odd}


def stems_of(cfg):
    """stem suffix -> task kwargs"""
    if cfg["plus"]:
        return {"plain": {}, "word": dict(timestamps="word"), "spk": dict(diarize=True)}
    return {"plain": {}, "de": dict(task="translate", target="de")}


def chains_of(cfg, vocab):
    eos = vocab.sid["<|end_of_text|>"]
    if cfg["plus"]:
        start = vocab.sid["<|end_of_role|>"]
    else:
        start = vocab.encode(INSTR_DEFAULT + "\n ASSISTANT:")[-1]
    ch = {"plain": [start] + chain_of_text(vocab, TEXT_PLAIN) + [eos]}
    if cfg["plus"]:
        ch["ts"] = [start] + ts_chain(vocab) + [eos]
        ch["spk"] = [start] + spk_chain(vocab) + [eos]
    else:
        ch["tr"] = [start] + chain_of_text(vocab, TEXT_DE) + [eos]
    for k, c in ch.items():
        assert len(set(c)) == len(c), (k, [vocab.tokens[i] for i in c])
    return ch


def build(cfg, vocab, stk, dt):
    t0 = time.time()
    Wenc = build_encoder_weights(cfg, torch.Generator().manual_seed(cfg["enc_seed"]), dt)
    Wproj = build_projector_weights(cfg, torch.Generator().manual_seed(cfg["q_seed"]), dt)
    zero_reserved_projection(Wproj)
    chains = chains_of(cfg, vocab)
    g_dec = lambda: torch.Generator().manual_seed(cfg["dec_seed"])
    Wdec, units = build_lm_weights(cfg, vocab, chains, g_dec(), dt, gains={})
    m = Model(cfg, vocab, Wenc, Wproj, Wdec, dt)
    tasks = {"ts": dict(timestamps="word"), "spk": dict(diarize=True), "tr": dict(task="translate", target="de")}
    active = [b for b in ("ts", "spk", "tr") if b in chains]
    # pass 1: unit gains -> switch values; pass 2: gains so every switch ≈ 0.4 embedding units
    sv = {b: m.switch_value(stk["jfk"], BRANCH_MARK[b][1], **tasks[b]) for b in active}
    gains = {b: float(f16r(torch.tensor(0.4 * cfg["emb_mult"] / sv[b]))) for b in active}
    cache = m._cache
    Wdec, units = build_lm_weights(cfg, vocab, chains, g_dec(), dt, gains=gains)
    m = Model(cfg, vocab, Wenc, Wproj, Wdec, dt)
    m._cache = cache
    sv = {b: m.switch_value(stk["jfk"], BRANCH_MARK[b][1], **tasks[b]) for b in active}
    for b in active:  # no switch leaks into the plain prompt
        assert m.switch_value(stk["jfk"], BRANCH_MARK[b][1]) == 0.0
    p = "dec.blocks.%d." % (cfg["dec_layers"] - 1)
    H = cfg["hidden"]
    rms_x = cfg["emb_mult"] * math.sqrt((KAPPA ** 2 + RHO ** 2) / H)
    gate = Wdec[p + "ffn.gate.weight"]
    for b in active:
        ds = BRANCH_MARK[b][1]
        gamma = 0.5 * 24.0 * rms_x / (float(Wdec[p + "norm_ffn.weight"][ds]) * sv[b])
        gate[:len(units), ds] = f16r(gate[:len(units), ds] * gamma)
    print("switches after layer 0 %s gains %s; %.1fs" % (sv, gains, time.time() - t0))
    return Wenc, Wproj, Wdec, chains


npsave = lc.npsave


def fmt_rows(res):
    lines = ["status: %s" % res["status"], "kind: %s" % res["kind"], "raw: %s" % res["raw"],
             "text: %s" % res["text"]]
    for t0, t1, spk, txt in res["segments"]:
        lines.append("segment: %d %d %s %s" % (t0, t1, "-" if spk is None else spk, txt))
    return "\n".join(lines) + "\n"


def goldens(cfg, vocab, m64, m32, m16file, stk, samples, out, log):
    all_margins, decodes = [], []
    for clip in ("jfk", "odd"):
        npsave(os.path.join(out, "%s.mel.npy" % clip), stk[clip])
        n = samples[clip].size
        for stem_sfx, task in stems_of(cfg).items():
            r = m64.run(stk[clip], n, **task)
            stem = os.path.join(out, "%s.%s" % (clip, stem_sfx))
            if stem_sfx == "plain":
                npsave(os.path.join(out, "%s.enc.npy" % clip), r["enc"])
                npsave(os.path.join(out, "%s.proj.npy" % clip), r["proj"])
            npsave(stem + ".prompt.npy", r["prompt"], np.int32)
            npsave(stem + ".logits0.npy", r["logits0"])
            npsave(stem + ".tokens.npy", r["gen"], np.int32)
            with open(stem + ".text.txt", "w", encoding="utf-8") as f:
                f.write(fmt_rows(r))
            with open(stem + ".raw.txt", "wb") as f:  # exact detokenised bytes, no trailing newline
                f.write(r["raw"].encode("utf-8"))
            if r["words"]:
                with open(stem + ".words.txt", "w", encoding="utf-8") as f:
                    f.write("".join("%d %d %s\n" % w for w in r["words"]))
            if r["speakers"]:
                with open(stem + ".speakers.txt", "w", encoding="utf-8") as f:
                    f.write("".join("%d %s\n" % s for s in r["speakers"]))
            r32 = m32.run(stk[clip].astype(np.float32), n, **task)
            r32h = m32.run(stk[clip].astype(np.float32), n, kv_f16=True, **task)
            rf16 = m16file.run(stk[clip].astype(np.float32), n, **task)
            npsave(stem + ".f16.tokens.npy", rf16["gen"], np.int32)
            same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"] and rf16["gen"] == r["gen"]
            rel = lambda a, b: float((a.double() - b).abs().max() / b.abs().max())
            mm = min(r["margins"])
            all_margins.append(mm)
            distinct = len(set(r["gen"]) - {m64.eos})
            line = ("%-10s T_enc %3d n_audio %3d T_prompt %3d n_gen %3d distinct %2d min_margin %.3f |logits0|max %.2f"
                    " f32: same_tokens=%s enc_rel %.1e proj_rel %.1e logits0_abs %.1e (f16 KV %.1e)"
                    % (clip + "." + stem_sfx, r["enc"].shape[0], r["proj"].shape[0], len(r["prompt"]), len(r["gen"]),
                       distinct, mm, float(r["logits0"].abs().max()), same, rel(r32["enc"], r["enc"]),
                       rel(r32["proj"], r["proj"]), float((r32["logits0"].double() - r["logits0"]).abs().max()),
                       float((r32h["logits0"].double() - r["logits0"]).abs().max())))
            print(line)
            log.append(line)
            decodes.append("%s.%s [%s]\n  raw:  %r\n  text: %r\n  ids: %s\n  words: %s\n  speakers: %s"
                           % (clip, stem_sfx, r["status"], r["raw"], r["text"], r["gen"], r["words"], r["speakers"]))
            assert same, "float32 / F16-file decode differs"
            assert r["status"] == "OK" and distinct >= 30, (r["status"], distinct)
    log.append("smallest margin over all goldens: %.3f" % min(all_margins))
    with open(os.path.join(out, "decodes.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(decodes) + "\n")


TOKENIZER_TEXTS = ["USER: ", "\n ASSISTANT:", "system", "Hello world", "  leading and trailing  ",
                   "line one\nline two\r\n\n", "digits 0123456789 and 1984", "It's what we'll do, I'd say",
                   "What?\nNo!", "Ünïcödé café — naïve 東京 🙂", TEXT_PLAIN, INSTR_TS, INSTR_SPK]


def tokenizer_cases(vocab, out):
    with open(os.path.join(out, "tokenizer_cases.txt"), "w") as f:
        f.write("# hex(text) \t ids  (%s pre-tokenizer, merges of this folder's GGUF files)\n" % vocab.pre)
        for t in TOKENIZER_TEXTS:
            ids = vocab.encode(t)
            assert vocab.decode(ids) == t
            f.write("%s\t%s\n" % (t.encode("utf-8").hex(), " ".join(map(str, ids))))


def bad_input_files(cfg, vocab, tensors, out, tag, log):
    """Variants for the loader tests (README of the folder says what each must do)."""
    made = []
    if cfg["plus"]:
        p = os.path.join(out, "granite-%s-query3d-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", query3d=True)
        check_readback(p, tensors, cfg, "F16", query3d=True)
        made.append(p)
        p = os.path.join(out, "granite-%s-nocat-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", cat_key="absent")
        made.append(p)
        p = os.path.join(out, "granite-%s-untied-nohead-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", tie_key="false")
        made.append(p)
    else:
        p = os.path.join(out, "granite-%s-catempty-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", cat_key="empty")
        made.append(p)
        p = os.path.join(out, "granite-%s-notie-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", tie_key=False)
        made.append(p)
        p = os.path.join(out, "granite-%s-nohead-F16.gguf" % tag)
        write_gguf(p, cfg, vocab, tensors, "F16", drop=("dec.output.weight",))
        made.append(p)
    for p in made:
        log.append("bad-input file %s (%d bytes)" % (os.path.basename(p), os.path.getsize(p)))


def real_tensors(cfg, vocab):
    """Lazy random tensors at real dimensions: name -> (shape, producer)."""
    shapes = {}
    h, hd, ci, F = cfg["enc_h"], cfg["enc_hd"], cfg["enc_h"] * cfg["conv_exp"], cfg["enc_h"] * cfg["ff_mult"]
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    Qd, Kd = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    p_, e, pi = cfg["q_h"], cfg["enc_h"] * (1 + len(cfg["cat"])), cfg["q_inter"]
    shapes.update({"frontend.mel_filterbank": (80, 257), "frontend.window": (400,),
                   "enc.input_linear.weight": (h, 160), "enc.input_linear.bias": (h,),
                   "enc.ctc_proj.weight": (cfg["ctc_dim"], h), "enc.ctc_proj.bias": (cfg["ctc_dim"],),
                   "enc.ctc_bypass.weight": (h, cfg["ctc_dim"]), "enc.ctc_bypass.bias": (h,)})
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        for nm in ("norm_ff1", "norm_attn", "norm_conv", "norm_ff2", "norm_post"):
            shapes[p + nm + ".weight"] = shapes[p + nm + ".bias"] = (h,)
        for ff in ("ff1", "ff2"):
            shapes.update({p + ff + ".up.weight": (F, h), p + ff + ".up.bias": (F,), p + ff + ".down.weight": (h, F),
                           p + ff + ".down.bias": (h,)})
        shapes.update({p + "attn.q.weight": (h, h), p + "attn.kv.weight": (2 * h, h), p + "attn.out.weight": (h, h),
                       p + "attn.out.bias": (h,), p + "attn.rel_pos_emb.weight": (2 * cfg["max_pos_emb"] + 1, hd),
                       p + "conv.pointwise1.weight": (2 * ci, h, 1), p + "conv.pointwise1.bias": (2 * ci,),
                       p + "conv.depthwise.weight": (ci, 1, cfg["conv_k"]), p + "conv.pointwise2.weight": (h, ci, 1),
                       p + "conv.pointwise2.bias": (h,)})
        for nm in ("weight", "bias", "running_mean", "running_var"):
            shapes[p + "conv.bn." + nm] = (ci,)
    shapes.update({"proj.query": (1, 3, p_), "proj.qformer.final_norm.weight": (p_,),
                   "proj.qformer.final_norm.bias": (p_,), "proj.linear.weight": (H, p_), "proj.linear.bias": (H,)})
    for l in range(cfg["q_layers"]):
        b = "proj.qformer.blocks.%d." % l
        for att, kin in (("self_attn", p_), ("cross_attn", e)):
            shapes.update({b + att + ".q.weight": (p_, p_), b + att + ".k.weight": (p_, kin),
                           b + att + ".v.weight": (p_, kin), b + att + ".out.weight": (p_, p_)})
            for x in ("q", "k", "v", "out"):
                shapes[b + att + ".%s.bias" % x] = (p_,)
        for nm in ("norm_self_attn", "norm_cross_attn", "norm_ffn"):
            shapes[b + nm + ".weight"] = shapes[b + nm + ".bias"] = (p_,)
        shapes.update({b + "ffn.up.weight": (pi, p_), b + "ffn.up.bias": (pi,), b + "ffn.down.weight": (p_, pi),
                       b + "ffn.down.bias": (p_,)})
    shapes.update({"dec.token_embd.weight": (V, H), "dec.output.weight": (V, H), "dec.output_norm.weight": (H,)})
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % l
        shapes.update({p + "norm_attn.weight": (H,), p + "norm_ffn.weight": (H,), p + "attn.q.weight": (Qd, H),
                       p + "attn.k.weight": (Kd, H), p + "attn.v.weight": (Kd, H), p + "attn.o.weight": (H, Qd),
                       p + "ffn.gate.weight": (I, H), p + "ffn.up.weight": (I, H), p + "ffn.down.weight": (H, I)})
    fb, win = frontend_buffers()

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
            rng = np.random.default_rng(cfg["dec_seed"] * 100003 + self.idx)
            if ".running_var" in self.name:
                return (0.5 + rng.random(self.shape)).astype(np.float32)
            if classify(self.name) == "N":
                base = 1.0 if self.name.endswith("weight") else 0.0
                return (base + 0.1 * rng.standard_normal(self.shape, dtype=np.float32)).astype(np.float32)
            fan_in = int(np.prod(self.shape[1:])) if len(self.shape) > 1 else 1
            a = rng.standard_normal(self.shape, dtype=np.float32)
            a *= np.float32(1.0 / math.sqrt(fan_in)) if self.name not in ("dec.token_embd.weight",
                                                                         "proj.query") else np.float32(0.02)
            return a

    return {n: Lazy(n, s, i) for i, (n, s) in enumerate(shapes.items())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny-1b", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=os.environ.get("TR_SHARED_DIR", os.path.join(ROOT, "..", "shared")))
    ap.add_argument("--modes", default=None, help="real config: comma list of F16,Q8_0 (default both)")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    vocab = Vocab(cfg)
    print("vocab %d: %d merges, specials %s" % (cfg["vocab"], len(vocab.merges), vocab.sid))
    tag = a.config
    if not a.config.startswith("tiny"):
        T = real_tensors(cfg, vocab)
        for mode in (a.modes or "F16,Q8_0").split(","):
            path = os.path.join(a.out, "granite-4.0-1b-ref-%s.gguf" % mode)
            size = write_gguf(path, cfg, vocab, T, mode, lazy=True)
            print("wrote %s (%.1f MB) %.0fs" % (path, size / 1e6, time.time() - t0))
        return
    fb, win = frontend_buffers()
    samples = load_clips(os.path.dirname(os.path.abspath(a.out)), a.shared)
    stk = {k: stacked_mel(v, fb, win) for k, v in samples.items()}
    Wenc, Wproj, Wdec, chains = build(cfg, vocab, stk, torch.float64)
    tensors = {"frontend.mel_filterbank": torch.from_numpy(fb.astype(np.float64)),
               "frontend.window": torch.from_numpy(win.astype(np.float64))}
    for Wx in (Wenc, Wproj, Wdec):
        tensors.update(Wx)
    log = ["config %s seeds enc %d proj %d dec %d" % (a.config, cfg["enc_seed"], cfg["q_seed"], cfg["dec_seed"])]
    paths = {}
    for mode in ("F32", "F16"):
        paths[mode] = os.path.join(a.out, "granite-%s-ref-%s.gguf" % (tag, mode))
        size = write_gguf(paths[mode], cfg, vocab, tensors, mode)
        check_readback(paths[mode], tensors, cfg, mode)
        print("wrote %s (%.1f MB) %.1fs" % (paths[mode], size / 1e6, time.time() - t0))
    m64 = Model(cfg, vocab, Wenc, Wproj, Wdec, torch.float64)
    m32 = Model(cfg, vocab, Wenc, Wproj, Wdec, torch.float32)
    m16, fb16, win16 = model_from_gguf(paths["F16"], cfg, vocab, torch.float32)
    assert np.array_equal(fb16, fb) and np.array_equal(win16, win)
    goldens(cfg, vocab, m64, m32, m16, stk, samples, a.out, log)
    tokenizer_cases(vocab, a.out)
    bad_input_files(cfg, vocab, tensors, a.out, tag, log)
    log.append("special ids: %s" % vocab.sid)
    with open(os.path.join(a.out, "margins.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    print("done %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
