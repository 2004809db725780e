#!/usr/bin/python3
"""MOSS Transcribe-Diarize reference (PyTorch, float64) + random-weight GGUF
writer + goldens.

Written from docs/formats/moss.md, docs/formats/causal-lm.md §6.3, §7 (chunked
prefill, step loop), docs/formats/whisper.md (encoder) and docs/formats/gguf.md,
independently of any C code. Reuses the Whisper encoder and front end of
whisper.py and the Qwen3 decoder of causal_lm.py (imported, not copied).

Pieces:
* docs/formats/moss.md §5 30 s chunking: each chunk = pcm[start:start+real_len] + zeros to
  480 000 samples -> Whisper log-mel [80, 3000] (clamp over this chunk);
* §6 Whisper encoder per chunk -> keep token_len*4 rows -> concatenate ->
  4x merge -> VQAdaptor (fc1, SiLU, fc2, LayerNorm eps = rms_norm_eps);
* §7 prompt: baked prefix + audio span with time-marker digits every 5 s +
  baked suffix; hotword re-rendering (new work, see HOTWORDS below);
* §8/§9 Qwen3 LM, single-shot or chunked prefill, gen budget and window;
* §10 output parser, post-processing and run-parameter policy.

usage:
  moss.py --config tiny --out tests/data/moss/tiny
  moss.py --config real --out build-ref/moss
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
import whisper  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REAL_VOCAB = 151936
# The 29 added tokens of the real vocabulary (ids 151643..151671); tiny files
# keep them at the same distance from the end of the table.
ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
         "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
         "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
         "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
         "<tool_response>", "</tool_response>", "<think>", "</think>", "<|audio_start|>", "<|audio_end|>",
         "<|audio_pad|>"]
ADDED_BASE = 151643
NOT_CONTROL = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"}

INSTRUCTION_ZH = ("请将音频转写为文本，每一段需以起始时间戳和说话人编号"
                  "（[S01]、[S02]、[S03]…）开头，正文为对应的语音内容，"
                  "并在段末标注结束时间戳，以清晰标明该段语音范围。")
SYSTEM = "You are a helpful assistant."

# ---------------------------------------------------------------------------
# HOTWORDS (issue 16; not in upstream 0.2.1, docs/formats/moss.md §7.3 / §12.1).
# The file carries the "instruction split" as two optional KVs our writer adds
# (the published converter does not):
#   stt.moss.prompt_instruction          str  the instruction text as rendered
#   stt.moss.prompt_instruction_offset   u32  index in prompt_suffix_tokens of
#                                             its first id
# The split is usable iff both keys are present with these types and
#   suffix[off : off + len(enc(instr))] == enc(instr)
# (enc = the file's BPE, qwen2 pre-tokenizer, no specials). Then, for terms
# t1..tk: rendered = instr + SEP + "t1, t2, ..., tk" with SEP = "热词提示："
# when instr contains a CJK ideograph (U+4E00..U+9FFF), else " Hotwords: ";
# suffix' = suffix[:off] + enc(rendered) + suffix[off + len(enc(instr)):].
# Terms: each stripped of spaces/tabs/CR/LF at both ends, empty ones dropped,
# order kept, no de-duplication. Budget: k = the largest count such that the
# prompt with terms t1..tk satisfies T_prompt(k) + reserve <= ceiling, where
# reserve = max(256, 2*T_enc + 128) (the §9 wanted generation budget, so
# hotwords never shorten generation) and ceiling = min(max_pos, n_ctx>0);
# k = 0 leaves the prompt unchanged. Counting stops at the first term that
# does not fit (cut at a term boundary, later shorter terms not tried).
# ---------------------------------------------------------------------------
HOTWORD_SEP_EN = " Hotwords: "
HOTWORD_SEP_ZH = "热词提示："
HOTWORD_JOIN = ", "

CONFIGS = {
    "tiny": dict(
        enc_layers=2, enc_d=64, enc_heads=4, enc_ffn=128, n_mels=80, enc_pos=1500,
        dec_layers=3, hidden=64, inter=128, heads=8, kv_heads=4, head_dim=16,
        vocab=1024, max_pos=2048, variant="moss-transcribe-diarize-tiny", size_label="tiny",
        enc_seed=31, dec_seed=32, prefill_chunk=256),
    "real": dict(
        enc_layers=24, enc_d=1024, enc_heads=16, enc_ffn=4096, n_mels=80, enc_pos=1500,
        dec_layers=28, hidden=1024, inter=3072, heads=16, kv_heads=8, head_dim=128,
        vocab=REAL_VOCAB, max_pos=131072, variant="moss-transcribe-diarize", size_label="0.9B",
        enc_seed=31, dec_seed=32, prefill_chunk=2048),
}

N_CHUNK = 480000
HOP, MERGE = 160, 4
TOKENS_PER_SECOND, MARKER_EVERY = 12.5, 5
GEN_RESERVE = 256

# Greedy transcripts (branch +1: multitalker mix, branch -1: whole-earth 33 s).
TEXT_A = ("[0.48][S01]Welcome back to the show.[2.90][3.12][S02]Thanks, it is great to be here.[5.75][6.02][S01]"
          "So tell us about your new project?[9.40][9.66][S02]We built a tiny model that listens.[13.10]")
TEXT_B = ("[0.48][S01]So tell us, is it a tiny show?[9.40][9.66][S02]Thanks![13.10][15.75][S03]We built that new "
          "model.[24.90][25.12][S01]Welcome back here.[31.02]")
# The loop model (repetition guard tests): branch +1 runs into a 3-cycle.
TEXT_LOOP = "[0.48][S01]Welcome back to"
LOOP_CYCLE = [" the", " show", " again"]


# ---------------------------------------------------------------------------
# tokenizer
# ---------------------------------------------------------------------------

def output_pieces(text):
    """Splits a transcript into output pieces, each unique within the text
    (the successor machine needs that): time markers split after the dot
    ("[2." "90]"), speaker tags whole, words with their leading space, each
    punctuation char alone; a repeated piece is glued to the next one."""
    import re
    raw = re.findall(r"\[\d+\.|\d+\]|\[S\d+\]| ?[A-Za-z']+|[^A-Za-z'\[ ]| ", text)
    assert "".join(raw) == text, raw
    out, seen, i = [], set(), 0
    while i < len(raw):
        p = raw[i]
        i += 1
        while p in seen and i < len(raw):
            p += raw[i]
            i += 1
        assert p not in seen, p
        seen.add(p)
        out.append(p)
    return out


class Vocab:
    def __init__(self, V, extra_texts=()):
        self.V = V
        base = V - (REAL_VOCAB - ADDED_BASE)
        self.sid = {p: base + i for i, p in enumerate(ADDED)}
        corpus = [INSTRUCTION_ZH] * 40 + [SYSTEM] * 40 + ["system", "user", "assistant"] * 60 + ["\n"] * 60
        corpus += ["Hotwords: Kubernetes, Anthropic, Dr. Nguyen", "热词提示：Kubernetes"] * 10
        corpus += [TEXT_A, TEXT_B] * 4
        byte_pieces = [tok_ref.BYTE_MAP[b] for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                       + list(range(0xAE, 0x100))]
        byte_pieces += [tok_ref.BYTE_MAP[b] for b in range(256) if tok_ref.BYTE_MAP[b] not in byte_pieces]
        n_merges = min(base - 256 - 160, 400)
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
        self.n_bpe = len(self.tokens)
        # output pieces the BPE does not have: plain normal tokens after the merges
        for t in (TEXT_A, TEXT_B, TEXT_LOOP, "".join(LOOP_CYCLE)) + tuple(extra_texts):
            for p in output_pieces(t):
                g = tok_ref.to_piece(p.encode("utf-8"))
                if g not in seen:
                    seen.add(g)
                    self.tokens.append(g)
                    self.types.append(1)
        assert len(self.tokens) <= base, "vocab too small: %d > %d" % (len(self.tokens), base)
        while len(self.tokens) < V:
            self.tokens.append("<|unused_%d|>" % len(self.tokens))
            self.types.append(1)
        for p, i in self.sid.items():
            self.tokens[i] = p
            self.types[i] = 1 if p in NOT_CONTROL else 3
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)
        self.id = {p: i for i, p in enumerate(self.tokens)}
        self.digits = [self.encode(d) for d in "0123456789"]
        assert all(len(d) == 1 for d in self.digits)
        self.digits = [d[0] for d in self.digits]

    def encode(self, text):
        """Plain text (no special-token recognition)."""
        return self.bpe.encode(text.encode("utf-8"), "qwen2")

    def encode_with_specials(self, text):
        out, i = [], 0
        while i < len(text):
            j = min([k for k in (text.find(s, i) for s in ADDED) if k >= 0] or [len(text)])
            if j > i:
                out += self.encode(text[i:j])
                i = j
                continue
            s = next(s for s in ADDED if text.startswith(s, i))
            out.append(self.sid[s])
            i += len(s)
        return out

    def piece_id(self, p):
        return self.id[tok_ref.to_piece(p.encode("utf-8"))]

    def decode_bytes(self, ids):
        return self.bpe.decode_bytes(ids)


def baked_prompt(vocab, instruction):
    """docs/formats/moss.md §7.1: the rendered chat prompt split at its single <|audio_pad|>."""
    text = ("<|im_start|>system\n" + SYSTEM + "<|im_end|>\n<|im_start|>user\n<|audio_start|><|audio_pad|>"
            "<|audio_end|>" + instruction + "<|im_end|>\n<|im_start|>assistant\n")
    assert text.count("<|audio_pad|>") == 1
    before, after = text.split("<|audio_pad|>")
    prefix, suffix = vocab.encode_with_specials(before), vocab.encode_with_specials(after)
    off = 1  # <|audio_end|> then the instruction
    assert suffix[0] == vocab.sid["<|audio_end|>"] and suffix[off:off + len(vocab.encode(instruction))] == \
        vocab.encode(instruction)
    return prefix, suffix, off


# ---------------------------------------------------------------------------
# front end, encoder, adaptor (docs/formats/moss.md §5, §6)
# ---------------------------------------------------------------------------

def frontend_buffers(n_mels=80):
    fb = mel_ref.slaney_filterbank(16000, 400, n_mels, 0.0, 8000.0).astype(np.float32)
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    return fb, win


def chunks_of(n_samples):
    """docs/formats/moss.md §5: (start, real_len, token_len) per 30 s chunk."""
    out, start = [], 0
    while start < n_samples:
        real = min(N_CHUNK, n_samples - start)
        out.append((start, real, (real - 1) // (HOP * 2 * MERGE) + 1))
        start += N_CHUNK
    return out


def chunk_mels(pcm, fb, win):
    mels = []
    for start, real, _ in chunks_of(pcm.size):
        x = np.zeros(N_CHUNK)
        x[:real] = pcm[start:start + real]
        mels.append(whisper.log_mel(x, fb, win))  # [80, 3000], clamp over this chunk
    return mels


def encoder_model(cfg, Wenc, dt):
    return whisper.Model(dict(enc_layers=cfg["enc_layers"], heads=cfg["enc_heads"], dec_layers=0),
                         {k: v.double().numpy() for k, v in Wenc.items()}, dtype=dt)


def adaptor_in(cfg, enc_model, mels, n_samples):
    """Per-chunk encoder outputs [1500, d], merged [T_enc, 4d]."""
    outs, keep = [], []
    for mel, (_, _, tl) in zip(mels, chunks_of(n_samples)):
        e = enc_model.encode(mel)
        outs.append(e)
        keep.append(e[:tl * MERGE])
    cat = torch.cat(keep, 0)
    return outs, cat.reshape(cat.shape[0] // MERGE, MERGE * cat.shape[1])


def adaptor(W, merged, eps=1e-6, upto_fc2=False):
    dt = merged.dtype
    w = lambda n: W[n].to(dt)
    h = torch.nn.functional.silu(merged @ w("adaptor.fc1.weight").T + w("adaptor.fc1.bias"))
    if upto_fc2 == "h":
        return h
    y = h @ w("adaptor.fc2.weight").T + w("adaptor.fc2.bias")
    if upto_fc2:
        return y
    return torch.nn.functional.layer_norm(y, y.shape[-1:], w("adaptor.norm_out.weight"),
                                          w("adaptor.norm_out.bias"), eps=eps)


# ---------------------------------------------------------------------------
# prompt (docs/formats/moss.md §7), hotwords, budget (§9)
# ---------------------------------------------------------------------------

def audio_span(T_enc, digits, audio_id, every=MARKER_EVERY, tps=TOKENS_PER_SECOND, enable=True):
    span, pos = [], []

    def emit(n):
        for _ in range(n):
            pos.append(len(span))
            span.append(audio_id)
    tpm = int(tps * every)
    if not enable or T_enc <= 0 or every <= 0 or tpm <= 0:
        emit(T_enc)
        return span, pos
    duration = int(T_enc / tps)
    consumed, sec = 0, every
    while sec <= duration:
        p = (sec // every) * tpm
        if p - consumed > 0:
            emit(p - consumed)
            consumed = p
        for c in str(sec):
            span.append(digits[int(c)])
        sec += every
    if T_enc - consumed > 0:
        emit(T_enc - consumed)
    return span, pos


def clean_terms(terms):
    return [t.strip(" \t\r\n") for t in terms if t.strip(" \t\r\n")]


def hotword_suffix(vocab, suffix, split, terms):
    """suffix with the instruction re-rendered for terms, or None when the
    split is missing or does not reproduce the baked suffix."""
    if split is None:
        return None
    instr, off = split
    base = vocab.encode(instr)
    if suffix[off:off + len(base)] != base:
        return None
    if not terms:
        return list(suffix)
    zh = any(0x4E00 <= ord(c) <= 0x9FFF for c in instr)
    text = instr + (HOTWORD_SEP_ZH if zh else HOTWORD_SEP_EN) + HOTWORD_JOIN.join(terms)
    return suffix[:off] + vocab.encode(text) + suffix[off + len(base):]


def ceiling_of(max_pos, n_ctx=0):
    return min(max_pos, n_ctx) if n_ctx > 0 else max_pos


def build_prompt(vocab, prefix, suffix, T_enc, audio_id, split=None, terms=(), max_pos=2048, n_ctx=0):
    """input ids, absolute audio positions, number of terms used, note."""
    span, pos = audio_span(T_enc, vocab.digits, audio_id)
    terms = clean_terms(terms)
    used, note = 0, ""
    if terms:
        if hotword_suffix(vocab, suffix, split, []) is None:
            note = "hotwords ignored: no instruction split"
        else:
            reserve = max(GEN_RESERVE, 2 * T_enc + 128)
            ceil = ceiling_of(max_pos, n_ctx)
            for k in range(1, len(terms) + 1):
                s = hotword_suffix(vocab, suffix, split, terms[:k])
                if len(prefix) + len(span) + len(s) + reserve > ceil:
                    break
                used = k
            if used:
                suffix = hotword_suffix(vocab, suffix, split, terms[:used])
            note = "hotwords: %d of %d terms" % (used, len(terms))
    ids = list(prefix) + span + list(suffix)
    return ids, [len(prefix) + p for p in pos], used, note


def pick_kv_cache_context(needed, mx):
    n = 1024
    if needed > 4096:
        n = -(-needed // 4096) * 4096
    else:
        while n < needed:
            n *= 2
    return min(n, mx)


def budget(T_prompt, T_enc, max_pos, n_ctx=0):
    ceil = ceiling_of(max_pos, n_ctx)
    if T_prompt + GEN_RESERVE > ceil:
        return None
    gen_budget = min(ceil - T_prompt, max(GEN_RESERVE, 2 * T_enc + 128))
    kv_ctx = pick_kv_cache_context(T_prompt + gen_budget, ceil)
    need = max(1024, T_prompt + gen_budget)
    p2 = 1 << (need - 1).bit_length()
    return gen_budget, kv_ctx, min(p2, kv_ctx)


# ---------------------------------------------------------------------------
# LM run (docs/formats/moss.md §8, §9, docs/formats/causal-lm.md §6.3, §7)
# ---------------------------------------------------------------------------

def blend(lm, ids, audio_pos, audio):
    x = lm.embed(ids).clone()
    keep = torch.ones(len(ids), 1, dtype=x.dtype)
    dense = torch.zeros_like(x)
    if audio_pos:
        idx = torch.tensor(audio_pos)
        keep[idx] = 0
        dense[idx] = audio.to(x.dtype)
    return x * keep + dense


def prefill(lm, x, cache, chunk=None):
    T = x.shape[0]
    if chunk is None or T <= chunk:
        return lm.prefill(x, cache)
    for n_past in range(0, T, chunk):
        h = lm.hidden(x[n_past:n_past + chunk], n_past, cache)
    return lm.head(h[-1])


def generate(lm, x, T_enc, eos, max_pos, n_ctx=0, chunk=None, kv_f16=False):
    T = x.shape[0]
    b = budget(T, T_enc, max_pos, n_ctx)
    if b is None:
        return dict(status="INPUT_TOO_LONG")
    gen_budget, kv_ctx, max_n_kv = b
    cache = clm.KVCache(lm.cfg, kv_ctx, dtype=lm.dtype, f16=kv_f16)
    logits0 = prefill(lm, x, cache, chunk)
    tok, m = clm.argmax_lowest(logits0)
    gen, margins, n_past = [tok], [m], T
    while tok != eos and len(gen) < gen_budget and n_past + 1 <= max_n_kv:
        tok, m = clm.argmax_lowest(lm.step(tok, n_past, cache))
        gen.append(tok)
        margins.append(m)
        n_past += 1
    return dict(status="OK" if gen[-1] == eos else "OUTPUT_TRUNCATED", gen=gen, margins=margins,
                logits0=logits0, gen_budget=gen_budget, kv_ctx=kv_ctx, max_n_kv=max_n_kv)


# ---------------------------------------------------------------------------
# output parsing (docs/formats/moss.md §10)
# ---------------------------------------------------------------------------

MAX_TIME_INT_DIGITS = 12  # integer part beyond 10^12 s: not a TIME (int64 ms safety)
MAX_SPEAKER_ID = 2147483647  # [Sn] with n beyond int32: not a tag


def _digits(s, i):
    j = i
    while j < len(s) and 0x30 <= s[j] <= 0x39:
        j += 1
    return j


def parse_time(s, i):
    """TIME at i -> (ms, end) or None."""
    if i >= len(s) or s[i] != 0x5B:
        return None
    j = _digits(s, i + 1)
    if j == i + 1:
        return None
    ip = s[i + 1:j]
    frac = b""
    if j < len(s) and s[j] == 0x2E:
        k = _digits(s, j + 1)
        if k == j + 1:
            return None
        frac = s[j + 1:k]
        j = k
    if j >= len(s) or s[j] != 0x5D:
        return None
    if len(ip.lstrip(b"0")) > MAX_TIME_INT_DIGITS:
        return None
    f3 = (frac[:3] + b"000")[:3]
    ms = int(ip) * 1000 + int(f3)
    if len(frac) >= 4 and frac[3] >= 0x35:
        ms += 1
    return ms, j + 1


def parse_spk(s, i):
    if i + 1 >= len(s) or s[i] != 0x5B or s[i + 1] != 0x53:
        return None
    j = _digits(s, i + 2)
    if j == i + 2 or j >= len(s) or s[j] != 0x5D:
        return None
    v = int(s[i + 2:j])
    if v < 1 or v > MAX_SPEAKER_ID:
        return None
    return v, j + 1


TRIM = b" \t\r\n"


def parse_output(raw, audio_ms):
    """raw bytes -> dict(ok, segments [(t0, t1, spk, text bytes)], speakers
    [(t0, t1, spk)], full_text bytes). Times in ms."""
    s = bytes(raw)
    turns = []  # [t0, t1, spk, bytearray]
    lead = bytearray()
    cur = None
    i = 0

    def text_out():
        return cur[3] if cur is not None else lead

    while i < len(s):
        c = s[i]
        if c != 0x5B:
            text_out().append(c)
            i += 1
            continue
        t = parse_time(s, i)
        if t is not None:
            ms, j = t
            sp = parse_spk(s, j)
            if sp is not None:
                if cur is not None:
                    cur[1] = ms
                cur = [ms, None, sp[0], bytearray()]
                turns.append(cur)
                i = sp[1]
                continue
            t2 = parse_time(s, j)
            if t2 is not None and parse_spk(s, t2[1]) is not None:
                if cur is not None:
                    sp2 = parse_spk(s, t2[1])
                    cur[1] = ms
                    cur = [t2[0], None, sp2[0], bytearray()]
                    turns.append(cur)
                    i = sp2[1]
                    continue
                lead.extend(s[i:j])  # literal, rescan at TIME'
                i = j
                continue
            if j == len(s) and cur is not None:
                cur[1] = ms
                i = j
                continue
            text_out().extend(s[i:j])
            i = j
            continue
        sp = parse_spk(s, i)
        if sp is not None:
            cur = [None, None, sp[0], bytearray()]
            turns.append(cur)
            i = sp[1]
            continue
        text_out().append(c)
        i += 1
    if not turns:
        return dict(ok=False, segments=[(0, audio_ms, 0, s)], speakers=[], full_text=s)
    for k, t in enumerate(turns):
        if t[0] is None:
            if k == 0:
                t[0] = 0
            else:
                p = turns[k - 1]
                t[0] = p[1] if p[1] is not None else p[0]
        t[0] = max(t[0], 0)
    for k, t in enumerate(turns):
        if t[1] is None:
            t[1] = turns[k + 1][0] if k + 1 < len(turns) else audio_ms
        if t[1] < t[0]:
            t[1] = t[0]
    segs = []
    lead_t = bytes(lead).strip(TRIM)
    if lead_t:
        segs.append((0, turns[0][0], 0, lead_t))
    for t in turns:
        segs.append((t[0], t[1], t[2], bytes(t[3]).strip(TRIM)))
    full = b" ".join(x[3] for x in segs if x[3])
    return dict(ok=True, segments=segs, speakers=[(t[0], t[1], t[2]) for t in turns], full_text=full)


def apply_policy(p, diarize_on, timestamps_none):
    """docs/formats/moss.md §10.3 -> (kind, segments, speaker rows)."""
    if not p["ok"]:
        return "NONE", p["segments"], []
    segs, spk = list(p["segments"]), list(p["speakers"])
    if not diarize_on:
        segs = [(a, b, 0, t) for a, b, _, t in segs]
        spk = []
    if timestamps_none:
        segs = [(0, 0, s, t) for _, _, s, t in segs]
        spk = [(0, 0, s) for _, _, s in spk]
        return "NONE", segs, spk
    return "SEGMENT", segs, spk


# ---------------------------------------------------------------------------
# weights
# ---------------------------------------------------------------------------

f16r = lc.f16r
D_CONST, D_FLAG, D_SWITCH, D_AUDIO = 0, 1, 2, 3
N_RESERVED = 4
KAPPA, RHO = lc.KAPPA, lc.RHO


def build_encoder_weights(cfg, gen, dt):
    d, F, M, P = cfg["enc_d"], cfg["enc_ffn"], cfg["n_mels"], cfg["enc_pos"]
    H = cfg["hidden"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    W = {"enc.conv.0.weight": f16r(r(d, M, 3) / math.sqrt(3 * M)), "enc.conv.0.bias": 0.1 * r(d),
         "enc.conv.1.weight": f16r(r(d, d, 3) / math.sqrt(3 * d)), "enc.conv.1.bias": 0.1 * r(d),
         "enc.pos_emb.weight": torch.from_numpy(whisper.sinusoids(P, d)).to(dt) * 0.5 + 0.05 * r(P, d)}
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        for nm in ("norm_attn", "norm_ffn"):
            W[p + nm + ".weight"] = 1 + 0.1 * r(d)
            W[p + nm + ".bias"] = 0.1 * r(d)
        for nm in ("q", "k", "v", "out"):
            W[p + "attn.%s.weight" % nm] = f16r(r(d, d) / math.sqrt(d) * (1.5 if nm in "qk" else 1.0))
            if nm != "k":
                W[p + "attn.%s.bias" % nm] = 0.1 * r(d)
        W[p + "ffn.fc1.weight"] = f16r(r(F, d) / math.sqrt(d))
        W[p + "ffn.fc1.bias"] = 0.1 * r(F)
        W[p + "ffn.fc2.weight"] = f16r(r(d, F) / math.sqrt(F))
        W[p + "ffn.fc2.bias"] = 0.1 * r(d)
    W["enc.final_norm.weight"] = 1 + 0.1 * r(d)
    W["enc.final_norm.bias"] = 0.1 * r(d)
    W["adaptor.fc1.weight"] = f16r(r(H, MERGE * d) / math.sqrt(MERGE * d) * 2.0)
    W["adaptor.fc1.bias"] = 0.1 * r(H)
    W["adaptor.fc2.weight"] = f16r(r(H, H) / math.sqrt(H))
    W["adaptor.fc2.bias"] = 0.1 * r(H)
    W["adaptor.norm_out.weight"] = 0.15 * (1 + 0.1 * r(H))
    W["adaptor.norm_out.bias"] = 0.02 * r(H)
    return W


def calibrate_adaptor(W, h_a, h_b):
    """Reserved dims of the adaptor output (LayerNorm weight 0 there unless
    said): const κ, is-audio 1, switch 0, and a flag whose clip mean is +1
    for clip A and -1 for clip B (fc2 row along the clip-mean difference,
    LayerNorm weight/bias mapping the two normalised means to ±1)."""
    wt, b = W["adaptor.fc2.weight"], W["adaptor.fc2.bias"]
    m_a, m_b = h_a.mean(0).to(wt.dtype), h_b.mean(0).to(wt.dtype)
    u = (m_a - m_b) / (m_a - m_b).norm()
    for d in (D_CONST, D_SWITCH, D_AUDIO):
        wt[d] = 0
        b[d] = 0
    wt[D_FLAG] = f16r(6.0 * u)
    b[D_FLAG] = -float(wt[D_FLAG] @ (m_a + m_b)) / 2
    ln_w, ln_b = W["adaptor.norm_out.weight"], W["adaptor.norm_out.bias"]
    ln_w[D_CONST], ln_b[D_CONST] = 0, KAPPA
    ln_w[D_AUDIO], ln_b[D_AUDIO] = 0, 1.0
    ln_w[D_SWITCH], ln_b[D_SWITCH] = 0, 0

    def nflag(h):
        y = h @ wt.T + b
        n = torch.nn.functional.layer_norm(y, y.shape[-1:], eps=1e-6)
        return float(n[:, D_FLAG].mean())
    na, nb = nflag(h_a), nflag(h_b)
    assert na - nb > 0.5, (na, nb)
    ln_w[D_FLAG] = 2.0 / (na - nb)
    ln_b[D_FLAG] = -(na + nb) / (na - nb)


def build_lm_weights(cfg, chains, gen, dt, switch_gain, alpha=24.0, beta=8.0):
    """Random Qwen3 weights plus a successor machine (same idea as
    qwen3_asr.py): embeddings κ·e_const + ρ·r_t; layer 0 query head 0
    averages the audio flag over the audio rows into the switch dim; the
    last layer's FFN has one SwiGLU unit per (token -> successor, branch)
    firing on the token with the branch sign of the switch, writing
    β·r_successor. No other sublayer writes the reserved dims.
    chains: {+1: [...], -1: [...]} successor lists."""
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    nh, nkv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    Q, K = nh * hd, nkv * hd
    L = cfg["dec_layers"]
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    R, E, free = lc.successor_embeddings(r, V, H, N_RESERVED, chains, dt, D_CONST)
    W = {"dec.token_embd.weight": f16r(E), "dec.output_norm.weight": 2.0 * (1 + 0.1 * r(H))}
    out_scale = 0.25 / math.sqrt(2 * L * H)
    clm.random_blocks(W, r, L, H, I, Q, K, hd, out_scale, N_RESERVED)
    j = hd // 2 - 1  # lowest RoPE frequency
    lc.switch_head(W, 0, 0, hd, j, D_CONST, D_AUDIO, D_FLAG, D_SWITCH, switch_gain)
    W["dec.blocks.0.attn.q_norm.weight"][j] = 3.0
    W["dec.blocks.0.attn.k_norm.weight"][j] = 3.0
    wn, n, gate, up, down = lc.ffn_unit_scale(W, L, H)
    units = lc.edges(chains)
    assert len(units) <= I, (len(units), I)
    tau = 0.75
    for u, (a, b, br) in enumerate(units):
        ra = R[a].clone()
        gate[u] = 0
        gate[u, free] = alpha * n * ra[free] / wn[free]
        gate[u, D_CONST] = -alpha * tau * n * RHO / (KAPPA * wn[D_CONST])
        gate[u, D_SWITCH] = br  # scaled by the calibration in build()
        up[u] = 0
        up[u, free] = n * ra[free] / wn[free]
        g_exp = alpha * (1 - tau) + 0.5 * alpha
        act = g_exp / (1 + math.exp(-g_exp))
        down[:, u] = 0
        down[free, u] = beta * R[b, free] / act
    lc.round_linear(W)
    return W, units


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------

class Model:
    def __init__(self, cfg, vocab, W, dt=torch.float64, prompt=None):
        self.cfg, self.vocab, self.dt = cfg, vocab, dt
        self.Wenc = {k: v.to(dt) for k, v in W.items() if k.startswith(("enc.", "adaptor."))}
        Wdec = {k: v for k, v in W.items() if k.startswith("dec.")}
        self.lmcfg = clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                                  n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                                  vocab=cfg["vocab"], eps=1e-6, rope_theta=1e6)
        self.lm = clm.CausalLM(self.lmcfg, Wdec, dtype=dt)
        self.enc_model = encoder_model(cfg, self.Wenc, dt)
        self.eos = vocab.sid["<|im_end|>"]
        self.pad = vocab.sid["<|audio_pad|>"]
        self.prefix, self.suffix, off = prompt or baked_prompt(vocab, INSTRUCTION_ZH)
        self.split = (INSTRUCTION_ZH, off)
        self._cache = {}

    def audio(self, pcm, fb, win):
        key = hash(pcm.tobytes())
        if key not in self._cache:
            mels = chunk_mels(pcm, fb, win)
            encs, merged = adaptor_in(self.cfg, self.enc_model, mels, pcm.size)
            y = adaptor(self.Wenc, merged)
            self._cache[key] = (mels, encs, merged, y)
        return self._cache[key]

    def prompt(self, T_enc, terms=(), split=True, n_ctx=0):
        return build_prompt(self.vocab, self.prefix, self.suffix, T_enc, self.pad,
                            self.split if split else None, terms, self.cfg["max_pos"], n_ctx)

    def run(self, pcm, fb, win, terms=(), split=True, chunk=None, kv_f16=False, n_ctx=0):
        mels, encs, merged, y = self.audio(pcm, fb, win)
        T_enc = y.shape[0]
        ids, apos, used, note = self.prompt(T_enc, terms, split, n_ctx)
        x = blend(self.lm, ids, apos, y)
        r = generate(self.lm, x, T_enc, self.eos, self.cfg["max_pos"], n_ctx, chunk, kv_f16)
        r.update(mels=mels, encs=encs, y=y, ids=ids, apos=apos, used=used, note=note, T_enc=T_enc)
        if "gen" in r:
            body = r["gen"][:-1] if r["gen"][-1] == self.eos else r["gen"]
            r["raw"] = self.vocab.decode_bytes(body)
            r["parse"] = parse_output(r["raw"], pcm.size * 1000 // 16000)
        return r

    def switch_value(self, pcm, fb, win):
        _, _, _, y = self.audio(pcm, fb, win)
        ids, apos, _, _ = self.prompt(y.shape[0])
        x = blend(self.lm, ids, apos, y)
        cache = clm.KVCache(self.lmcfg, len(ids), dtype=self.dt)
        return float(self.lm.hidden(x, 0, cache, upto=1)[-1, D_SWITCH])


def chain_ids(vocab, text):
    ids = [vocab.piece_id(p) for p in output_pieces(text)]
    assert len(set(ids)) == len(ids)
    assert vocab.decode_bytes(ids) == text.encode("utf-8")
    return ids


def build(cfg, vocab, clips, fb, win, dt, loop=False):
    """clips: {"A": pcm, "B": pcm}. Returns the weight dict (enc + adaptor + dec)."""
    t0 = time.time()
    W = build_encoder_weights(cfg, torch.Generator().manual_seed(cfg["enc_seed"]), dt)
    em = encoder_model(cfg, W, dt)
    hs = {}
    for k, pcm in clips.items():
        mels = chunk_mels(pcm, fb, win)
        _, merged = adaptor_in(cfg, em, mels, pcm.size)
        hs[k] = adaptor(W, merged, upto_fc2="h")
    calibrate_adaptor(W, hs["A"], hs["B"])
    nl = vocab.id["Ċ"]
    eos = vocab.sid["<|im_end|>"]
    if loop:
        cyc = [vocab.piece_id(p) for p in LOOP_CYCLE]
        a = chain_ids(vocab, TEXT_LOOP) + cyc + cyc[:1]
    else:
        a = chain_ids(vocab, TEXT_A) + [eos]
    chains = {1: [nl] + a, -1: [nl] + chain_ids(vocab, TEXT_B) + [eos]}
    g_dec = lambda: torch.Generator().manual_seed(cfg["dec_seed"] + (100 if loop else 0))
    Wd, units = build_lm_weights(cfg, chains, g_dec(), dt, switch_gain=1.0)
    m = Model(cfg, vocab, {**W, **Wd}, dt)
    sv = {k: m.switch_value(clips[k], fb, win) for k in ("A", "B")}
    assert sv["A"] > 0 > sv["B"], sv
    gain = float(f16r(torch.tensor(0.4 / math.sqrt(abs(sv["A"] * sv["B"])))))
    Wd, units = build_lm_weights(cfg, chains, g_dec(), dt, switch_gain=gain)
    m = Model(cfg, vocab, {**W, **Wd}, dt)
    sv = {k: m.switch_value(clips[k], fb, win) for k in ("A", "B")}
    p = "dec.blocks.%d." % (cfg["dec_layers"] - 1)
    rms_pure = math.sqrt((KAPPA ** 2 + RHO ** 2) / cfg["hidden"])
    s_ref = math.sqrt(abs(sv["A"] * sv["B"]))
    gamma = 0.5 * 24.0 * rms_pure / (float(Wd[p + "norm_ffn.weight"][D_SWITCH]) * s_ref)
    gate = Wd[p + "ffn.gate.weight"]
    for u in range(len(units)):
        gate[u, D_SWITCH] = f16r(gate[u, D_SWITCH] * gamma)
    print("%sswitch after layer 0: A %+.4f B %+.4f gain %.3f gamma %.3f (%d units) %.1fs"
          % ("loop: " if loop else "", sv["A"], sv["B"], gain, gamma, len(units), time.time() - t0))
    return {**W, **Wd}


# ---------------------------------------------------------------------------
# GGUF (docs/formats/moss.md §2, §3)
# ---------------------------------------------------------------------------

FILE_TYPE = lc.FILE_TYPE
ENC_BLOCK = ["norm_attn.weight", "norm_attn.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight",
             "attn.v.weight", "attn.v.bias", "attn.out.weight", "attn.out.bias", "norm_ffn.weight",
             "norm_ffn.bias", "ffn.fc1.weight", "ffn.fc1.bias", "ffn.fc2.weight", "ffn.fc2.bias"]
DEC_BLOCK = ["norm_attn.weight", "norm_ffn.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight",
             "attn.o.weight", "attn.q_norm.weight", "attn.k_norm.weight", "ffn.gate.weight", "ffn.up.weight",
             "ffn.down.weight"]


def tensor_order(cfg):
    """The converter's order: frontend buffers, encoder top, encoder blocks,
    adaptor, decoder top, decoder blocks (docs/formats/moss.md §3)."""
    names = ["frontend.mel_filterbank", "frontend.window", "enc.conv.0.weight", "enc.conv.0.bias",
             "enc.conv.1.weight", "enc.conv.1.bias", "enc.pos_emb.weight", "enc.final_norm.weight",
             "enc.final_norm.bias"]
    for l in range(cfg["enc_layers"]):
        names += ["enc.blocks.%d.%s" % (l, s) for s in ENC_BLOCK]
    names += ["adaptor.fc1.weight", "adaptor.fc1.bias", "adaptor.fc2.weight", "adaptor.fc2.bias",
              "adaptor.norm_out.weight", "adaptor.norm_out.bias", "dec.token_embd.weight", "dec.output_norm.weight"]
    for l in range(cfg["dec_layers"]):
        names += ["dec.blocks.%d.%s" % (l, s) for s in DEC_BLOCK]
    assert len(names) == 7 + 15 * cfg["enc_layers"] + 6 + 2 + 11 * cfg["dec_layers"] + 2
    return names


def tensor_class(name):
    if name.startswith("frontend.") or name.endswith(".bias") or "norm" in name or name == "enc.pos_emb.weight":
        return "N"
    if name.startswith("enc.conv."):
        return "C"
    if name == "dec.token_embd.weight":
        return "E"
    return "L"


def ggml_type_for(name, shape, mode):
    cls = tensor_class(name)
    if mode == "F32" or cls in "NC":
        return gw.GGML_F32
    if mode == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def write_gguf(path, cfg, vocab, tensors, mode, prompt, split=True, lazy=False):
    prefix, suffix, off = prompt
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "moss")
    w.add_string("general.name", "MOSS-Transcribe-Diarize %s (random reference weights)" % cfg["size_label"])
    w.add_string("general.basename", "moss-transcribe-diarize")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "MOSI.AI")
    w.add_string("general.organization", "OpenMOSS-Team")
    w.add_string("general.license", "apache-2.0")
    w.add_uint32("general.file_type", FILE_TYPE[mode])
    w.add_array("general.languages", ["en", "zh"], gw.STRING)
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.speaker_diarization", True)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen2")
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.sid["<|im_end|>"])
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.sid["<|endoftext|>"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    e = "stt.moss.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("d_model", cfg["enc_d"]), ("n_heads", cfg["enc_heads"]),
                 ("ffn_dim", cfg["enc_ffn"]), ("num_mel_bins", cfg["n_mels"]),
                 ("max_source_positions", cfg["enc_pos"])):
        w.add_uint32(e + k, v)
    w.add_string(e + "activation", "gelu")
    w.add_bool(e + "scale_embedding", False)
    d = "stt.moss.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                 ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                 ("head_dim", cfg["head_dim"])):
        w.add_uint32(d + k, v)
    w.add_string(d + "hidden_act", "silu")
    w.add_float32(d + "rms_norm_eps", 1e-6)
    w.add_float32(d + "rope_theta", 1e6)
    w.add_uint32(d + "max_position_embeddings", cfg["max_pos"])
    w.add_bool(d + "tie_word_embeddings", True)
    w.add_uint32(d + "vocab_size", cfg["vocab"])
    w.add_uint32("stt.moss.adaptor.input_dim", cfg["hidden"] * MERGE)
    w.add_uint32("stt.moss.audio_merge_size", MERGE)
    w.add_uint32("stt.moss.audio_token_id", vocab.sid["<|audio_pad|>"])
    w.add_float32("stt.moss.audio_tokens_per_second", TOKENS_PER_SECOND)
    w.add_uint32("stt.moss.time_marker_every_seconds", MARKER_EVERY)
    w.add_bool("stt.moss.enable_time_marker", True)
    w.add_array("stt.moss.prompt_prefix_tokens", prefix, gw.INT32)
    w.add_array("stt.moss.prompt_suffix_tokens", suffix, gw.INT32)
    w.add_array("stt.moss.digit_tokens", vocab.digits, gw.INT32)
    if split:  # hotword extension (not written by the published converter)
        w.add_string("stt.moss.prompt_instruction", INSTRUCTION_ZH)
        w.add_uint32("stt.moss.prompt_instruction_offset", off)
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
    for k, v in (("chunk_length", 30), ("n_samples", N_CHUNK), ("nb_max_frames", 3000)):
        w.add_uint32(f + k, v)
    for nm in tensor_order(cfg):
        t = tensors[nm]
        shape = tuple(t.shape)
        gt = ggml_type_for(nm, shape, mode)
        to_np = (lambda t=t: t.float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32))
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
        assert list(reversed(a.shape)) == ne and a.shape == want.shape, nm
        assert gt == ggml_type_for(nm, want.shape, mode), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == cfg["vocab"]
    return kv, ts


def model_from_gguf(path, cfg, vocab, dt=torch.float64):
    kv, ts = gw.read_gguf(path)
    W = {n: torch.from_numpy(a.astype(np.float64)).to(dt) for n, (_, _, a) in ts.items()
         if not n.startswith("frontend.")}
    prefix = list(kv["stt.moss.prompt_prefix_tokens"][1][1])
    suffix = list(kv["stt.moss.prompt_suffix_tokens"][1][1])
    off = kv["stt.moss.prompt_instruction_offset"][1] if "stt.moss.prompt_instruction_offset" in kv else 1
    return (Model(cfg, vocab, W, dt, (prefix, suffix, off)), ts["frontend.mel_filterbank"][2],
            ts["frontend.window"][2])


# ---------------------------------------------------------------------------
# goldens
# ---------------------------------------------------------------------------

MEL_KEEP = 1400  # mel goldens: first min(token_len*8, 1400) frames of each chunk
HOT_TERMS = ["Kubernetes", " Anthropic ", "", "Dr. Nguyen"]
LONG_TERMS = ["Kubernetes", "Anthropic", "Dr. Nguyen"] + ["term%03d" % i for i in range(400)]


write_wav16 = lc.write_wav16


def load_clips(data_dir, shared):
    out = {}
    for name, src, n in (("mix", "multitalker-2spk-mix.wav", None), ("we33", "whole-earth.wav", 528000)):
        path = os.path.join(data_dir, "%s.wav" % name)
        if not os.path.exists(path):
            x, _ = mel_ref.read_wav(os.path.join(shared, "samples", src))
            write_wav16(path, x[:n] if n else x)
        out[name], _ = mel_ref.read_wav(path)
    return out


npsave = lc.npsave


def fmt_segments(kind, segs, spk):
    lines = ["kind: %s" % kind, "segments: %d" % len(segs)]
    for a, b, s, t in segs:
        lines.append("  %d %d %d %s" % (a, b, s, t.decode("utf-8", "backslashreplace")))
    lines.append("speakers: %d" % len(spk))
    for a, b, s in spk:
        lines.append("  %d %d %d" % (a, b, s))
    return lines


def result_text(r):
    p = r["parse"]
    lines = ["status: %s" % r["status"], "n_tokens: %d" % len(r["gen"]),
             "gen_budget: %d  kv_ctx: %d  max_n_kv: %d" % (r["gen_budget"], r["kv_ctx"], r["max_n_kv"]),
             "raw: %s" % r["raw"].decode("utf-8", "backslashreplace"), "raw_hex: %s" % r["raw"].hex(),
             "full_text: %s" % p["full_text"].decode("utf-8", "backslashreplace"), "parsed: %s" % p["ok"]]
    for title, on, none in (("diarize=ON timestamps=SEGMENT", True, False),
                            ("diarize=OFF timestamps=SEGMENT", False, False),
                            ("diarize=ON timestamps=NONE", True, True)):
        lines.append("[%s]" % title)
        lines += fmt_segments(*apply_policy(p, on, none))
    return "\n".join(lines) + "\n"


def goldens(cfg, vocab, W, Wloop, clips, fb, win, out, log, prompt):
    m64 = Model(cfg, vocab, W, torch.float64, prompt)
    m32 = Model(cfg, vocab, W, torch.float32, prompt)
    margins_all = []
    r_plain_mix = None
    for clip in ("mix", "we33"):
        pcm = clips[clip]
        r = m64.run(pcm, fb, win)
        if clip == "mix":
            r_plain_mix = r["ids"]
        for c, ((_, real, tl), mel, enc) in enumerate(zip(chunks_of(pcm.size), r["mels"], r["encs"])):
            npsave(os.path.join(out, "%s.mel.%d.npy" % (clip, c)), mel[:, :min(tl * 8, MEL_KEEP)])
            npsave(os.path.join(out, "%s.enc.%d.npy" % (clip, c)), enc[:tl * MERGE])
        npsave(os.path.join(out, "%s.adaptor.npy" % clip), r["y"])
        for mode, terms, split in (("plain", (), True), ("hot", HOT_TERMS, True), ("hotlong", LONG_TERMS, True)):
            rr = r if mode == "plain" else m64.run(pcm, fb, win, terms=terms, split=split)
            stem = os.path.join(out, "%s.%s" % (clip, mode))
            npsave(stem + ".prompt.npy", rr["ids"], np.int32)
            npsave(stem + ".logits0.npy", rr["logits0"])
            npsave(stem + ".tokens.npy", rr["gen"], np.int32)
            npsave(stem + ".f16.tokens.npy", rr["gen"], np.int32)
            with open(stem + ".text.txt", "w", encoding="utf-8") as f:
                f.write(result_text(rr))
            # chunked prefill (docs/formats/causal-lm.md §6.3) with the tiny chunk
            rc = m64.run(pcm, fb, win, terms=terms, split=split, chunk=cfg["prefill_chunk"])
            chunked = len(rr["ids"]) > cfg["prefill_chunk"]
            d_chunk = float((rc["logits0"] - rr["logits0"]).abs().max())
            assert rc["gen"] == rr["gen"] and d_chunk < 1e-9
            if chunked:
                npsave(stem + ".chunked.logits0.npy", rc["logits0"])
            r32 = m32.run(pcm.astype(np.float32).astype(np.float64), fb, win, terms=terms, split=split)
            r32h = m32.run(pcm, fb, win, terms=terms, split=split, kv_f16=True)
            same = r32["gen"] == rr["gen"] and r32h["gen"] == rr["gen"]
            mm = min(rr["margins"])
            margins_all.append(mm)
            line = ("%-12s T_enc %3d T_prompt %3d terms %d n_gen %3d distinct %2d %s min_margin %.3f "
                    "f32 same=%s adaptor_rel %.1e logits0_abs %.1e (f16 KV %.1e) chunked(%d)=%s d %.1e | %s"
                    % (clip + "." + mode, rr["T_enc"], len(rr["ids"]), rr["used"], len(rr["gen"]),
                       len(set(rr["gen"])), rr["status"], mm, same,
                       float((r32["y"].double() - rr["y"]).abs().max() / rr["y"].abs().max()),
                       float((r32["logits0"].double() - rr["logits0"]).abs().max()),
                       float((r32h["logits0"].double() - rr["logits0"]).abs().max()), cfg["prefill_chunk"],
                       chunked, d_chunk, rr["note"]))
            print(line)
            log.append(line)
            assert same and rr["status"] == "OK" and len(set(rr["gen"])) >= 30
    # loop model
    ml = Model(cfg, vocab, Wloop, torch.float64, prompt)
    rl = ml.run(clips["mix"], fb, win)
    stem = os.path.join(out, "mix.loop")
    npsave(stem + ".prompt.npy", rl["ids"], np.int32)
    npsave(stem + ".tokens.npy", rl["gen"], np.int32)
    npsave(stem + ".logits0.npy", rl["logits0"])
    with open(stem + ".text.txt", "w", encoding="utf-8") as f:
        f.write(result_text(rl))
    rn = ml.run(clips["mix"], fb, win, terms=HOT_TERMS, split=False)
    assert rn["ids"] == rl["ids"] and rn["gen"] == rl["gen"]
    npsave(os.path.join(out, "mix.nosplit.prompt.npy"), rn["ids"], np.int32)
    log.append("mix.nosplit (loop-nosplit file, terms %r): prompt == mix.loop prompt == mix.plain prompt: %s (%s)"
               % (HOT_TERMS, rn["ids"] == r_plain_mix, rn["note"]))
    rlb = ml.run(clips["we33"], fb, win)
    assert rlb["gen"] == np.load(os.path.join(out, "we33.plain.tokens.npy")).tolist()
    line = ("mix.loop     %s n_gen %d (budget %d) min_margin %.3f; we33 on the loop model: same tokens as "
            "we33.plain (min margin %.3f)" % (rl["status"], len(rl["gen"]), rl["gen_budget"], min(rl["margins"]),
                                              min(rlb["margins"])))
    print(line)
    log.append(line)
    assert rl["status"] == "OUTPUT_TRUNCATED" and len(rl["gen"]) == rl["gen_budget"]
    margins_all += [min(rl["margins"]), min(rlb["margins"])]
    log.append("smallest margin over all token goldens: %.3f" % min(margins_all))
    return m64


# ---------------------------------------------------------------------------
# hostile parser table
# ---------------------------------------------------------------------------

PARSER_CASES = [
    ("canonical", b"[0.48][S01]Welcome.[1.66][1.70][S02]Thanks for having me.[3.20]"),
    ("no markers", b"just plain text"),
    ("empty", b""),
    ("unclosed time", b"[0.48[S01]hello"),
    ("unclosed spk", b"[0.48][S01hello"),
    ("unclosed at end", b"[0.48][S01]hello[1.5"),
    ("S00 is not a tag", b"[0.00][S00]zero[1.00]"),
    ("S00 then real tag", b"[0.50][S00]x[0.60][S02]y[0.90]"),
    ("bare times", b"[1.0] [2.0] hello [3.0]"),
    ("bare spk tags", b"[S01]first[S02]second"),
    ("spk then time at end", b"[S03]abc[2.5]"),
    ("times out of order", b"[5.0][S01]late[3.0][4.0][S02]early[2.0]"),
    ("leading text", b"  intro text [1.0][S01]turn one[2.0]"),
    ("time time spk without open turn", b"[1.0][2.0][S01]x[3.0]"),
    ("three times before spk", b"[0.5][S01]a[1.0][1.5][2.0][S02]b[2.5]"),
    ("time inside speech", b"[0.0][S01]call [911] now[4.0]"),
    ("trailing space after end time", b"[0.0][S01]hi[1.0] "),
    ("fraction rounding", b"[1.2345][S01]a[2.9995][3.00049][S02]b[7]"),
    ("fraction padding", b"[1.5][S01]a[2.05][2][S02]b[3.1]"),
    ("dot without digits", b"[1.][S01]a[2.0]"),
    ("huge time", b"[9999999999999.0][S01]a[1.0]"),
    ("max time digits", b"[999999999999.999][S01]a"),
    ("huge speaker", b"[0.0][S2147483648]a[1.0][S2147483647]b"),
    ("leading zero speaker", b"[0.0][S0001]a[1.0][1.0][S010]b[2.0]"),
    ("brackets noise", b"[[[]]][0.1][S01][x][S]y[2.0]"),
    ("empty turn text", b"[0.0][S01][1.0][1.0][S02]  [2.0]"),
    ("invalid utf-8", b"[0.0][S01]caf\xc3 \xff\xfe bad[1.0][1.0][S02]\xe6\x97ok[2.0]"),
    ("nul and newlines", b"[0.0][S01]a\x00b\r\n[1.0][1.0][S02]\tc\n[2.0]"),
    ("negative-looking", b"[-1.0][S01]a[1.0]"),
]
AUDIO_MS_PARSER = 10000


def parser_table(out):
    lines = ["# MOSS output parser goldens (family-moss.md §10, audio_ms = %d for every case)." % AUDIO_MS_PARSER,
             "# Per case: `case <name>`, `input <hex>` (or `input_repeat <hex unit> <count>` = the unit",
             "# repeated count times), `parsed <1|0>` (0 = plain fallback), `full_text <hex>`,",
             "# `segments <n>` then n lines `seg <t0_ms> <t1_ms> <speaker> <text hex>`,",
             "# `speakers <n>` then n lines `spk <t0_ms> <t1_ms> <speaker>` (diarize ON, timestamps SEGMENT).",
             "# For repeat cases only the first 3 and last 3 segment/speaker rows are listed",
             "# (`seg_first|seg_last <t0> <t1> <speaker> <text length> <hex of the first 40 text bytes>`,",
             "# `spk_first|spk_last <t0> <t1> <speaker>`) plus full_text_len.", ""]

    def emit(name, data, rep=None):
        p = parse_output(data, AUDIO_MS_PARSER)
        lines.append("case %s" % name)
        lines.append("input %s" % data.hex() if rep is None else "input_repeat %s %d" % (rep[0].hex(), rep[1]))
        lines.append("parsed %d" % int(p["ok"]))
        if rep is None:
            lines.append("full_text %s" % p["full_text"].hex())
            lines.append("segments %d" % len(p["segments"]))
            lines.extend(["seg %d %d %d %s" % (a, b, s, t.hex()) for a, b, s, t in p["segments"]])
            lines.append("speakers %d" % len(p["speakers"]))
            lines.extend(["spk %d %d %d" % x for x in p["speakers"]])
        else:
            lines.append("full_text_len %d" % len(p["full_text"]))
            lines.append("segments %d" % len(p["segments"]))
            for tag, rows in (("seg_first", p["segments"][:3]), ("seg_last", p["segments"][-3:])):
                lines.extend(["%s %d %d %d %d %s" % (tag, a, b, s, len(t), t[:40].hex()) for a, b, s, t in rows])
            lines.append("speakers %d" % len(p["speakers"]))
            for tag, rows in (("spk_first", p["speakers"][:3]), ("spk_last", p["speakers"][-3:])):
                lines.extend(["%s %d %d %d" % ((tag,) + x) for x in rows])
        lines.append("")
    for name, data in PARSER_CASES:
        emit(name, data)
    unit = b"[1.0][S01]x"
    emit("10000 markers", unit * 10000, (unit, 10000))
    unit = b"[S02]"
    emit("10000 bare speaker tags", unit * 10000, (unit, 10000))
    unit = b"[0.5]"
    emit("10000 bare times", unit * 10000, (unit, 10000))
    with open(os.path.join(out, "parser_cases.txt"), "w") as f:
        f.write("\n".join(lines))


def random_lm_weights_f32(cfg, gen):
    """Plain random Qwen3 weights, float32 and F16-representable (the real
    dimensions; causal_lm.random_weights works in float64, twice the memory)."""
    H, I, Q, K = cfg.hidden, cfg.intermediate, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    r = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float32)
    W = {"dec.token_embd.weight": f16r(r(cfg.vocab, H) * 0.05), "dec.output_norm.weight": 1 + 0.1 * r(H)}
    for l in range(cfg.n_layers):
        p = "dec.blocks.%d." % l
        W[p + "norm_attn.weight"] = 1 + 0.1 * r(H)
        W[p + "norm_ffn.weight"] = 1 + 0.1 * r(H)
        for nm, o, i in (("attn.q", Q, H), ("attn.k", K, H), ("attn.v", K, H), ("attn.o", H, Q),
                         ("ffn.gate", I, H), ("ffn.up", I, H), ("ffn.down", H, I)):
            W[p + nm + ".weight"] = f16r(r(o, i) / math.sqrt(i) * (0.3 if nm in ("attn.o", "ffn.down") else 1.0))
        W[p + "attn.q_norm.weight"] = 1 + 0.1 * r(cfg.head_dim)
        W[p + "attn.k_norm.weight"] = 1 + 0.1 * r(cfg.head_dim)
    return W


def hotword_table(vocab, prompt, out):
    """hotwords.txt: per term list the cleaned terms, how many fit, the
    rendered instruction and its ids (see HOTWORDS above)."""
    prefix, suffix, off = prompt
    lines = ["# MOSS hotword rendering (tools/ref/moss.py HOTWORDS); instruction split: offset %d, "
             "instruction ids %d..%d of the suffix" % (off, off, off + len(vocab.encode(INSTRUCTION_ZH)) - 1),
             "# per case: name, terms (hex of the terms joined by 0x1f), n_used, rendered (hex), rendered_ids", ""]
    cases = [("hot", HOT_TERMS, None), ("hotlong.mix", LONG_TERMS, 194), ("hotlong.we33", LONG_TERMS, 91)]
    for name, terms, k in cases:
        t = clean_terms(terms)
        k = len(t) if k is None else k
        text = INSTRUCTION_ZH + HOTWORD_SEP_ZH + HOTWORD_JOIN.join(t[:k])
        lines += ["case %s" % name, "terms %s" % "\x1f".join(terms).encode("utf-8").hex(), "n_used %d" % k,
                  "rendered %s" % text.encode("utf-8").hex(),
                  "rendered_ids %s" % " ".join(map(str, vocab.encode(text))), ""]
    with open(os.path.join(out, "hotwords.txt"), "w") as f:
        f.write("\n".join(lines))


def limits_table(vocab, prompt, clips, max_pos, out):
    """limits.txt: docs/formats/moss.md §9 gate / budget / KV sizes and the hotword fit for
    several session n_ctx values (prompt arithmetic only, no model)."""
    prefix, suffix, off = prompt
    pad = vocab.sid["<|audio_pad|>"]
    lines = ["# clip n_ctx terms -> status T_prompt n_terms_used gen_budget kv_n_ctx max_n_kv",
             "# (max_position_embeddings %d; n_ctx 0 = no session limit; terms: none | hot | hotlong)" % max_pos]
    for clip in ("mix", "we33"):
        T_enc = sum(tl for _, _, tl in chunks_of(clips[clip].size))
        base = len(prefix) + len(audio_span(T_enc, vocab.digits, pad)[0]) + len(suffix)
        for n_ctx in (0, base + 255, base + 256, 1024, 1500, 4096):
            for tname, terms in (("none", ()), ("hot", HOT_TERMS), ("hotlong", LONG_TERMS)):
                ids, _, used, _ = build_prompt(vocab, prefix, suffix, T_enc, pad, (INSTRUCTION_ZH, off), terms,
                                               max_pos, n_ctx)
                b = budget(len(ids), T_enc, max_pos, n_ctx)
                if b is None:
                    lines.append("%s %d %s -> INPUT_TOO_LONG %d %d" % (clip, n_ctx, tname, len(ids), used))
                else:
                    lines.append("%s %d %s -> OK %d %d %d %d %d" % ((clip, n_ctx, tname, len(ids), used) + b))
    with open(os.path.join(out, "limits.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


TOKENIZER_TEXTS = [INSTRUCTION_ZH, SYSTEM, "system", "user", "assistant\n", "0123456789",
                   INSTRUCTION_ZH + HOTWORD_SEP_ZH + "Kubernetes, Anthropic, Dr. Nguyen",
                   "Transcribe." + HOTWORD_SEP_EN + "Kubernetes, Anthropic, Dr. Nguyen",
                   "term000, term001, term399", TEXT_A, "Ünïcödé café — naïve 東京 🙂", "line one\nline two\r\n\n"]


def tokenizer_cases(vocab, out):
    with open(os.path.join(out, "tokenizer_cases.txt"), "w") as f:
        f.write("# hex(text) \t ids  (qwen2 pre-tokenizer, merges of moss-tiny-*.gguf, no specials)\n")
        for t in TOKENIZER_TEXTS:
            ids = vocab.encode(t)
            assert vocab.decode_bytes(ids) == t.encode("utf-8")
            f.write("%s\t%s\n" % (t.encode("utf-8").hex(), " ".join(map(str, ids))))


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=os.environ.get("TR_SHARED_DIR", os.path.join(ROOT, "..", "shared")))
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    vocab = Vocab(cfg["vocab"])
    prompt = baked_prompt(vocab, INSTRUCTION_ZH)
    print("vocab %d: %d merges, prefix %d suffix %d ids, eos %d audio_pad %d digits %s"
          % (cfg["vocab"], len(vocab.merges), len(prompt[0]), len(prompt[1]), vocab.sid["<|im_end|>"],
             vocab.sid["<|audio_pad|>"], vocab.digits))
    fb, win = frontend_buffers(cfg["n_mels"])
    data_dir = os.path.dirname(os.path.abspath(a.out)) if a.config == "tiny" else a.out
    clips = load_clips(data_dir, a.shared)
    dt = torch.float64 if a.config == "tiny" else torch.float32
    ab = {"A": clips["mix"], "B": clips["we33"]}
    if a.config == "real":
        # random weights at the real dimensions for the benchmark (no calibration)
        g = torch.Generator().manual_seed(cfg["enc_seed"])
        W = build_encoder_weights(cfg, g, dt)
        cfg_lm = clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                              n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                              vocab=cfg["vocab"])
        W.update(random_lm_weights_f32(cfg_lm, torch.Generator().manual_seed(cfg["dec_seed"])))
        T = {"frontend.mel_filterbank": torch.from_numpy(fb.astype(np.float64)),
             "frontend.window": torch.from_numpy(win.astype(np.float64)), **W}
        for mode in ("F16", "Q8_0"):
            path = os.path.join(a.out, "moss-real-ref-%s.gguf" % mode)
            size = write_gguf(path, cfg, vocab, T, mode, prompt, lazy=True)
            print("wrote %s (%.1f MB) %.0fs" % (path, size / 1e6, time.time() - t0))
        return
    W = build(cfg, vocab, ab, fb, win, dt)
    Wloop = build(cfg, vocab, ab, fb, win, dt, loop=True)
    tensors = {"frontend.mel_filterbank": torch.from_numpy(fb.astype(np.float64)),
               "frontend.window": torch.from_numpy(win.astype(np.float64)), **W}
    tl = {"frontend.mel_filterbank": tensors["frontend.mel_filterbank"],
          "frontend.window": tensors["frontend.window"], **Wloop}
    log = ["config %s seeds enc %d dec %d (loop model dec %d)" % (a.config, cfg["enc_seed"], cfg["dec_seed"],
                                                                  cfg["dec_seed"] + 100)]
    # the loop model is also the file without the instruction split (hotwords off)
    for mode, T, name, split in (("F32", tensors, "moss-tiny-ref-F32.gguf", True),
                                 ("F16", tensors, "moss-tiny-ref-F16.gguf", True),
                                 ("F16", tl, "moss-tiny-loop-nosplit-F16.gguf", False)):
        path = os.path.join(a.out, name)
        size = write_gguf(path, cfg, vocab, T, mode, prompt, split=split)
        check_readback(path, T, cfg, mode)
        print("wrote %s (%.2f MB)" % (path, size / 1e6))
    # the goldens come from the weights as read back from the F16 file
    m16, fb16, win16 = model_from_gguf(os.path.join(a.out, "moss-tiny-ref-F16.gguf"), cfg, vocab)
    assert np.array_equal(fb16, fb) and np.array_equal(win16, win)
    goldens(cfg, vocab, W, Wloop, clips, fb, win, a.out, log, prompt)
    r16 = m16.run(clips["mix"], fb, win)
    assert r16["gen"] == np.load(os.path.join(a.out, "mix.plain.tokens.npy")).tolist()
    parser_table(a.out)
    hotword_table(vocab, prompt, a.out)
    tokenizer_cases(vocab, a.out)
    limits_table(vocab, prompt, clips, cfg["max_pos"], a.out)
    with open(os.path.join(a.out, "margins.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    print("done %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
