#!/usr/bin/python3
"""Voxtral Realtime 2602 reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/voxtral_realtime.md (and the pages it defers to:
docs/formats/causal-lm.md for the decoder block, docs/formats/gguf.md §8.5 for
the `global` mel normalisation and §9.5 for the quantizer buckets; the tekken
token layout of Voxtral 2507 that docs/formats/voxtral_realtime.md §2.1 refers
to is restated below), independently of the C code. Pieces, as sections of
docs/formats/voxtral_realtime.md:

* §4 front end: [32·1280 zeros] + pcm + zeros to a multiple of 1280 +
  (d + 1 + 10)·1280 zeros; reflect pad 200, periodic Hann 400, |FFT_400|^2,
  the stored Slaney 128x201 filterbank, log10(max(E, 1e-10)), last frame
  dropped, (max(L, 1.5 - 8) + 4) / 4.
* §5 encoder: causal conv stem (k 3, left pad 2 / stride 2 left pad 1, GELU),
  RMSNorm blocks with NeoX RoPE (θ 1e6), causal sliding-window attention,
  SwiGLU FFN, final RMSNorm; projector: 4 frames concatenated, GELU MLP.
* §6.1 ada-norm delay scales s_l = 1 + W2·gelu(W1·[cos(d·f), sin(d·f)]),
  used in place of the FFN-norm weight.
* §6.2–6.4 LM (Llama block without q/k norm, GQA, tied head), prompt
  [BOS] + [STREAMING_PAD] × (32 + d), additive fusion E[token_p] + audio[p],
  offline greedy loop to EOS or the audio horizon; §6.5 text.
* §8 streaming: tentative decodes over the audio rows a prefix of the input
  yields (mel frames whose window lies inside the received samples, fed in
  multiples of 8), decoder KV ring of `decoder.sliding_window` rows,
  finalize = the offline padding.
* GGUF writer in the published schema (§2 keys with their types, §3 tensors
  in write order, dtype classes for the F32 / F16 / Q8_0 presets); every file
  is read back and the goldens of each file come from the weights it holds.

usage:
  voxtral_realtime.py --config tiny --out tests/data/voxtral_realtime
  voxtral_realtime.py --config real --out build-ref/voxtral-realtime --dtypes F16 --no-decode
"""
import argparse
import json
import math
import os
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

# --------------------------------------------------------------------------
# constants of the format (docs/formats/voxtral_realtime.md §2, §4, §6.3)
# --------------------------------------------------------------------------
BOS, EOS, UNK, PAD_ID, STREAM_PAD, STREAM_WORD = 1, 2, 0, 11, 32, 33
N_CONTROL = 1000          # ids 0..999 are CONTROL (docs/formats/voxtral_realtime.md §2.1)
N_LEFT_PAD = 32           # streaming_n_left_pad_tokens
OFFLINE_BUFFER = 10       # OFFLINE_STREAMING_BUFFER_TOKENS
HOP, NFFT, NMEL = 160, 400, 128
GLOBAL_LOG_MEL_MAX = 1.5
LANGS = ["en", "fr", "es", "de", "ru", "zh", "ja", "it", "pt", "nl", "ar", "hi", "ko"]

CONFIGS = {
    # enc attention width 3 x 16 = 48 != d_model 32 (as 2048 != 1280); its
    # attn.out ne[0] = 48 takes the Q8_0 -> F16 fallback. LM Q width 4 x 24 = 96 != 64.
    "tiny": dict(enc_layers=2, d_model=32, enc_heads=3, enc_hd=16, enc_ffn=64, enc_window=100,
                 dec_layers=2, hidden=64, inter=128, heads=4, kv_heads=2, head_dim=24, dec_window=48,
                 ada_hidden=32, n_audio_dims=8, n_merges=120, vocab=None, size_label="tiny",
                 enc_seed=41, dec_seed=42),
    "real": dict(enc_layers=32, d_model=1280, enc_heads=32, enc_hd=64, enc_ffn=5120, enc_window=750,
                 dec_layers=26, hidden=3072, inter=9216, heads=32, kv_heads=8, head_dim=128, dec_window=8192,
                 ada_hidden=32, n_audio_dims=256, n_merges=120, vocab=131072, size_label="4.4B",
                 enc_seed=41, dec_seed=42),
}
DEFAULT_DELAY = 6
OTHER_DELAY = 2

# Greedy output of the successor-chain LM (after the prompt's last [STREAMING_PAD]):
# every text token occurs once; [STREAMING_WORD] (a CONTROL id) sits inside the chain.
TEXT_WORDS = ["And", " so", None, " my", " fellow", " Americans", ",", " ask", " not", " what", " your",
              " country", " can", " do", " for", " you", ".", " The", " quick", " brown", " fox", " jumps", " over",
              " lazy", " dogs", " today", "!"]  # None = [STREAMING_WORD]
TEXT = ("And so my fellow Americans, ask not what your country can do for you. "
        "The quick brown fox jumps over lazy dogs today!")

f16r = lc.f16r
npsave = lc.npsave


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


# --------------------------------------------------------------------------
# tekken-layout vocabulary (docs/formats/voxtral_realtime.md §2.1)
# --------------------------------------------------------------------------
CONTROL_NAMES = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]", 11: "<pad>", 24: "[AUDIO]",
                 25: "[BEGIN_AUDIO]", 32: "[STREAMING_PAD]", 33: "[STREAMING_WORD]"}


class TekkenVocab:
    """ids 0..999 CONTROL (`<SPECIAL_N>` unless named), 1000 + b = byte b
    (GPT-2 byte-mapped piece), then merges trained on our text; a real-size
    table is filled with `[UNUSED_N]` pieces (type 1)."""

    def __init__(self, n_merges, V=None):
        corpus = [TEXT] * 40
        self.merges = tok_ref.train_bpe(corpus, n_merges, "qwen2")
        self.tokens = [CONTROL_NAMES.get(i, "<SPECIAL_%d>" % i) for i in range(N_CONTROL)]
        self.tokens += [tok_ref.BYTE_MAP[b] for b in range(256)]
        seen = set(self.tokens)
        for m in self.merges:
            p = m.replace(" ", "")
            if p in seen:
                p = "[DUP_%d]" % len(self.tokens)
            seen.add(p)
            self.tokens.append(p)
        if V is not None:
            assert len(self.tokens) <= V
            self.tokens += ["[UNUSED_%d]" % i for i in range(len(self.tokens), V)]
        self.V = len(self.tokens)
        self.types = [3] * N_CONTROL + [1] * (self.V - N_CONTROL)
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)
        self.id = {p: i for i, p in enumerate(self.tokens)}

    def encode(self, text):
        return self.bpe.encode(text.encode("utf-8"), "qwen2")

    def raw_text(self, ids):
        """docs/formats/voxtral_realtime.md §6.5 raw_text: control pieces literal, untrimmed."""
        return b"".join(self.tokens[i].encode("utf-8") if i < N_CONTROL else tok_ref.from_piece(self.tokens[i])
                        for i in ids).decode("utf-8", "replace")

    def full_text(self, ids):
        """docs/formats/voxtral_realtime.md §6.5 full_text: CONTROL ids removed,
        byte-level decode, C-whitespace trimmed."""
        b = self.bpe.decode_bytes([i for i in ids if self.types[i] != 3])
        return b.decode("utf-8", "replace").strip(" \t\n\v\f\r")

    def chain(self):
        ids = [STREAM_PAD]
        for w in TEXT_WORDS:
            if w is None:
                ids.append(STREAM_WORD)
            else:
                t = self.encode(w)
                assert len(t) == 1, (w, t)
                ids += t
        ids.append(EOS)
        assert len(set(ids)) == len(ids)
        assert self.full_text(ids[1:-1]) == TEXT, self.full_text(ids[1:-1])
        return ids


# --------------------------------------------------------------------------
# front end (docs/formats/voxtral_realtime.md §4)
# --------------------------------------------------------------------------
def frontend_buffers():
    fb = mel_ref.slaney_filterbank(16000, NFFT, NMEL, 0.0, 8000.0).astype(np.float32)
    win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(NFFT) / NFFT)).astype(np.float32)
    return fb, win


def n_tokens(n, d):
    """docs/formats/voxtral_realtime.md §4: n_tok = 32 + ceil(n/1280) + d + 11 (= n_audio)."""
    return N_LEFT_PAD + -(-n // 1280) + d + 1 + OFFLINE_BUFFER


def pad_offline(pcm, d):
    n = len(pcm)
    right = (-n) % 1280 + (d + 1 + OFFLINE_BUFFER) * 1280
    return np.concatenate([np.zeros(N_LEFT_PAD * 1280), pcm, np.zeros(right)])


def logmel_frames(sig, fb, win, n_frames):
    """Mel frames 0..n_frames-1 of sig (centred, reflect pad 200), `global` normalisation."""
    P = mel_ref.stft_power(np.asarray(sig, np.float64), NFFT, np.asarray(win, np.float64), HOP, "reflect",
                           n_frames)
    E = np.asarray(fb, np.float64) @ P.T
    L = np.log10(np.maximum(E, 1e-10))
    return (np.maximum(L, GLOBAL_LOG_MEL_MAX - 8.0) + 4.0) / 4.0  # [128, n_frames]


def logmel(pcm, d, fb, win):
    """docs/formats/voxtral_realtime.md §4 offline mel [128, T_mel],
    T_mel = len(padded)/160 (last STFT frame dropped)."""
    sig = pad_offline(pcm, d)
    assert len(sig) % 1280 == 0
    T = len(sig) // HOP
    return logmel_frames(sig, fb, win, T)


# --------------------------------------------------------------------------
# encoder + projector (docs/formats/voxtral_realtime.md §5)
# --------------------------------------------------------------------------
def causal_conv(x, w, b, stride, pad_left):
    """x [T, Cin], w (Cout, Cin, 3): output t reads frames s·t + j - pad_left (zero when < 0)."""
    xp = torch.cat([torch.zeros(pad_left, x.shape[1], dtype=x.dtype), x])
    y = torch.nn.functional.conv1d(xp.T[None], w.to(x.dtype), stride=stride)[0].T
    return y + b.to(x.dtype)


def encoder(mel, W, cfg, taps=None):
    """mel [128, T_mel] -> encoder output [T_enc, d_model] (docs/formats/voxtral_realtime.md §5 steps 1-4)."""
    dt = W["enc.final_norm.weight"].dtype
    X = torch.as_tensor(np.ascontiguousarray(mel.T)).to(dt)
    h = gelu(causal_conv(X, W["enc.conv.0.weight"], W["enc.conv.0.bias"], 1, 2))
    h = gelu(causal_conv(h, W["enc.conv.1.weight"], W["enc.conv.1.bias"], 2, 1))
    if taps is not None:
        taps["conv"] = h
    T = h.shape[0]
    nh, hd, win = cfg["enc_heads"], cfg["enc_hd"], cfg["enc_window"]
    pos = torch.arange(T)
    ang = clm.rope_angles(pos, hd, 1e6)
    qi, ki = pos[:, None], pos[None, :]
    mask = ~((ki <= qi) & (qi - ki < win))
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        y = rms_norm(h, W[p + "norm_attn.weight"], 1e-5)
        q = (y @ W[p + "attn.q.weight"].T + W[p + "attn.q.bias"]).view(T, nh, hd)
        k = (y @ W[p + "attn.k.weight"].T).view(T, nh, hd)
        v = (y @ W[p + "attn.v.weight"].T + W[p + "attn.v.bias"]).view(T, nh, hd)
        q, k = clm.apply_rope(q, ang), clm.apply_rope(k, ang)
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
        s = s.masked_fill(mask[None], float("-inf"))
        a = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v).reshape(T, nh * hd)
        h = h + (a @ W[p + "attn.out.weight"].T + W[p + "attn.out.bias"])
        y = rms_norm(h, W[p + "norm_ffn.weight"], 1e-5)
        f = torch.nn.functional.silu(y @ W[p + "ffn.gate.weight"].T) * (y @ W[p + "ffn.up.weight"].T)
        h = h + (f @ W[p + "ffn.down.weight"].T + W[p + "ffn.down.bias"])
    return rms_norm(h, W["enc.final_norm.weight"], 1e-5)


def projector(e, W):
    """docs/formats/voxtral_realtime.md §5 step 5: drop T_enc mod 4 frames,
    concat 4 frames (index 1280·r + c), GELU MLP."""
    n = e.shape[0] // 4
    g = e[:4 * n].reshape(n, 4 * e.shape[1])
    return gelu(g @ W["proj.linear_1.weight"].T) @ W["proj.linear_2.weight"].T


# --------------------------------------------------------------------------
# decoder (docs/formats/voxtral_realtime.md §6)
# --------------------------------------------------------------------------
def time_embedding(d, inv_freq):
    f = torch.as_tensor(inv_freq, dtype=torch.float64)
    return torch.cat([torch.cos(d * f), torch.sin(d * f)])


def ada_scales(W, cfg, d):
    """docs/formats/voxtral_realtime.md §6.1: [n_layers, hidden] s_l = 1 + W2_l·gelu(W1_l·t(d))."""
    t = time_embedding(d, W["dec.time_embed.inv_freq"])
    out = []
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d.ada." % l
        a = W[p + "linear_2.weight"].double() @ gelu(W[p + "linear_1.weight"].double() @ t)
        out.append(1.0 + a)
    return torch.stack(out)


class Decoder:
    """The LM of docs/formats/voxtral_realtime.md §6.2 at one delay; window = None (offline: every previous
    position) or the streaming ring size (positions max(0, p - window + 1)..p)."""

    def __init__(self, W, cfg, d, dtype=torch.float64, window=None, kv_f16=False):
        self.cfg, self.dt, self.window, self.kv_f16 = cfg, dtype, window, kv_f16
        self.scales = ada_scales(W, cfg, d)
        self.W = {k: v.to(dtype) for k, v in W.items() if k.startswith("dec.")}
        for l in range(cfg["dec_layers"]):
            k = "dec.blocks.%d.norm_ffn.weight" % l
            self.W[k] = (self.scales[l] * W[k].double()).to(dtype)
        L = cfg["dec_layers"]
        self.K = [None] * L
        self.V = [None] * L
        self.n = 0

    def embed(self, ids):
        return self.W["dec.token_embd.weight"][torch.as_tensor(ids, dtype=torch.long)]

    def forward(self, x):
        """Rows x [T, H] at positions n..n+T-1 -> logits of the last row; appends K/V."""
        c, T = self.cfg, x.shape[0]
        nh, nkv, hd = c["heads"], c["kv_heads"], c["head_dim"]
        pos = torch.arange(self.n, self.n + T)
        ang = clm.rope_angles(pos, hd, 1e6)
        for l in range(c["dec_layers"]):
            p = "dec.blocks.%d." % l
            h = rms_norm(x, self.W[p + "norm_attn.weight"], 1e-5)
            q = (h @ self.W[p + "attn.q.weight"].T).view(T, nh, hd)
            k = (h @ self.W[p + "attn.k.weight"].T).view(T, nkv, hd)
            v = (h @ self.W[p + "attn.v.weight"].T).view(T, nkv, hd)
            q, k = clm.apply_rope(q, ang), clm.apply_rope(k, ang)
            if self.kv_f16:
                k, v = k.half().to(self.dt), v.half().to(self.dt)
            self.K[l] = k if self.K[l] is None else torch.cat([self.K[l], k])
            self.V[l] = v if self.V[l] is None else torch.cat([self.V[l], v])
            Kr = self.K[l].repeat_interleave(nh // nkv, dim=1)
            Vr = self.V[l].repeat_interleave(nh // nkv, dim=1)
            s = torch.einsum("qhd,khd->hqk", q, Kr) / math.sqrt(hd)
            kp = torch.arange(Kr.shape[0])[None, :]
            bad = kp > pos[:, None]
            if self.window is not None:
                bad = bad | (kp < pos[:, None] - self.window + 1)
            s = s.masked_fill(bad[None], float("-inf"))
            o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), Vr).reshape(T, nh * hd)
            x = x + o @ self.W[p + "attn.o.weight"].T
            h = rms_norm(x, self.W[p + "norm_ffn.weight"], 1e-5)
            f = torch.nn.functional.silu(h @ self.W[p + "ffn.gate.weight"].T) * (h @ self.W[p + "ffn.up.weight"].T)
            x = x + f @ self.W[p + "ffn.down.weight"].T
        self.n += T
        y = rms_norm(x[-1], self.W["dec.output_norm.weight"], 1e-5)
        return self.W["dec.token_embd.weight"] @ y


def prompt_ids(d):
    """docs/formats/voxtral_realtime.md §6.3: [BOS] + [STREAMING_PAD] × (32 + d)."""
    return [BOS] + [STREAM_PAD] * (N_LEFT_PAD + d)


def argmax_margin(logits):
    t = int(torch.argmax(logits))
    top2 = torch.topk(logits.double(), 2).values
    return t, float(top2[0] - top2[1])


class Greedy:
    """Incremental form of the docs/formats/voxtral_realtime.md §6.4 loop: feed(rows) consumes newly available
    audio rows (prefill once T_prompt rows exist, then one step per row);
    with all n_audio rows it is exactly the offline loop."""

    def __init__(self, dec, d):
        self.dec, self.ids = dec, prompt_ids(d)
        self.Tp = len(self.ids)
        self.gen, self.margins, self.logits = [], [], []
        self.p = 0          # next position to run
        self.next = None
        self.done = False

    def feed(self, audio, n_rows):
        dt = self.dec.dt
        while not self.done:
            if self.p == 0:
                if n_rows < self.Tp:
                    return
                x = self.dec.embed(self.ids) + audio[:self.Tp].to(dt)
                lg = self.dec.forward(x)
                self.p = self.Tp
                t, m = argmax_margin(lg)
                self.gen.append(t)  # the prefill token is kept even if it is EOS
                self.next = t
            else:
                if self.next == EOS or self.p >= n_rows:
                    if self.next == EOS:
                        self.done = True
                    return
                x = self.dec.embed([self.next]) + audio[self.p:self.p + 1].to(dt)
                lg = self.dec.forward(x)
                self.p += 1
                t, m = argmax_margin(lg)
                self.next = t
                if t != EOS:
                    self.gen.append(t)
            self.logits.append(lg)
            self.margins.append(m)


def run_offline(W, cfg, vocab, pcm, d=DEFAULT_DELAY, dtype=torch.float64, kv_f16=False, taps=None):
    fb = W["frontend.mel_filterbank"].numpy()
    win = W["frontend.window"].numpy()
    mel = logmel(pcm, d, fb, win)
    t = {} if taps is None else taps
    Wd = {k: v.to(dtype) for k, v in W.items() if not k.startswith("dec.")}
    e = encoder(mel.astype(np.float32) if dtype == torch.float32 else mel, Wd, cfg, t)
    audio = projector(e, Wd)
    n_audio = audio.shape[0]
    assert n_audio == n_tokens(len(pcm), d), (n_audio, n_tokens(len(pcm), d))
    g = Greedy(Decoder(W, cfg, d, dtype, kv_f16=kv_f16), d)
    assert g.Tp < n_audio
    g.feed(audio, n_audio)
    return dict(mel=mel, conv=t["conv"], enc=e, proj=audio, prompt=g.ids, gen=g.gen, margins=g.margins,
                logits=torch.stack(g.logits), n_audio=n_audio, text=vocab.full_text(g.gen),
                raw=vocab.raw_text(g.gen))


# --------------------------------------------------------------------------
# streaming (docs/formats/voxtral_realtime.md §8)
# --------------------------------------------------------------------------
def stream_rows_available(n_recv):
    """Audio rows a non-final incremental process can have after n_recv
    samples: mel frames t with 160t + 200 <= 32·1280 + n_recv, fed in multiples of 8."""
    Lb = N_LEFT_PAD * 1280 + n_recv
    M = (Lb - NFFT // 2) // HOP + 1
    return M // 8


def prefix_rows(W, cfg, pcm_prefix):
    """Audio rows computed from the received prefix only (the causality check)."""
    fb = W["frontend.mel_filterbank"].numpy()
    win = W["frontend.window"].numpy()
    sig = np.concatenate([np.zeros(N_LEFT_PAD * 1280), pcm_prefix])
    R = stream_rows_available(len(pcm_prefix))
    # frames 0..8R-1 each lie inside sig; pad a copy so the STFT helper can frame it
    mel = logmel_frames(np.concatenate([sig, np.zeros(NFFT)]), fb, win, 8 * R)
    return projector(encoder(mel, W, cfg), W)


def run_stream(W, cfg, vocab, pcm, chunk, d, interval_ms, audio_final):
    """Feeds pcm in chunks of `chunk` samples, then finalizes. audio_final:
    the offline audio rows at delay d (every stream row equals the offline row
    of the same index, checked separately). Returns the event trace."""
    g = Greedy(Decoder(W, cfg, d, window=cfg["dec_window"]), d)
    ms = 1000 if interval_ms == -1 else interval_ms
    recv, last = 0, 0
    events = []
    for i in range(0, len(pcm), chunk):
        n = min(chunk, len(pcm) - i)
        recv += n
        ev = dict(call="feed", n=n, received=recv, received_ms=recv * 1000 // 16000, decoded=False)
        if (recv - last) * 1000 >= ms * 16000:
            rows = stream_rows_available(recv)
            g.feed(audio_final, rows)
            last = recv
            ev.update(decoded=True, rows=rows)
        ev.update(ids=list(g.gen), text=vocab.full_text(g.gen))
        events.append(ev)
    n_audio = audio_final.shape[0]
    g.feed(audio_final, n_audio)
    events.append(dict(call="finalize", received=recv, rows=n_audio, ids=list(g.gen), text=vocab.full_text(g.gen),
                       raw_text=vocab.raw_text(g.gen)))
    return events, g


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------
def dtype_class(name):
    """docs/formats/voxtral_realtime.md §3 classes: N, C, E, A, L."""
    if name.startswith("frontend.") or name == "dec.time_embed.inv_freq" or name.endswith(".bias") \
            or "norm" in name.split(".")[-2]:
        return "N"
    if name in ("enc.conv.0.weight", "enc.conv.1.weight"):
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


def tensor_names(cfg):
    names = ["frontend.mel_filterbank", "frontend.window", "dec.time_embed.inv_freq",
             "enc.conv.0.weight", "enc.conv.0.bias", "enc.conv.1.weight", "enc.conv.1.bias", "enc.final_norm.weight"]
    for l in range(cfg["enc_layers"]):
        names += ["enc.blocks.%d.%s" % (l, s) for s in (
            "norm_attn.weight", "attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.v.weight", "attn.v.bias",
            "attn.out.weight", "attn.out.bias", "norm_ffn.weight", "ffn.gate.weight", "ffn.up.weight",
            "ffn.down.weight", "ffn.down.bias")]
    names += ["proj.linear_1.weight", "proj.linear_2.weight", "dec.token_embd.weight", "dec.output_norm.weight"]
    for l in range(cfg["dec_layers"]):
        names += ["dec.blocks.%d.%s" % (l, s) for s in (
            "norm_attn.weight", "norm_ffn.weight", "attn.q.weight", "attn.k.weight", "attn.v.weight",
            "attn.o.weight", "ffn.gate.weight", "ffn.up.weight", "ffn.down.weight", "ada.linear_1.weight",
            "ada.linear_2.weight")]
    return names


def tensor_shapes(cfg, V):
    """PyTorch shapes (ne reversed) of docs/formats/voxtral_realtime.md §3."""
    d, A, F = cfg["d_model"], cfg["enc_heads"] * cfg["enc_hd"], cfg["enc_ffn"]
    H, I = cfg["hidden"], cfg["inter"]
    Q, K = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    S = {"frontend.mel_filterbank": (NMEL, NFFT // 2 + 1), "frontend.window": (NFFT,),
         "dec.time_embed.inv_freq": (H // 2,), "enc.conv.0.weight": (d, NMEL, 3), "enc.conv.0.bias": (d,),
         "enc.conv.1.weight": (d, d, 3), "enc.conv.1.bias": (d,), "enc.final_norm.weight": (d,),
         "proj.linear_1.weight": (H, 4 * d), "proj.linear_2.weight": (H, H), "dec.token_embd.weight": (V, H),
         "dec.output_norm.weight": (H,)}
    for l in range(cfg["enc_layers"]):
        p = "enc.blocks.%d." % l
        S.update({p + "norm_attn.weight": (d,), p + "attn.q.weight": (A, d), p + "attn.q.bias": (A,),
                  p + "attn.k.weight": (A, d), p + "attn.v.weight": (A, d), p + "attn.v.bias": (A,),
                  p + "attn.out.weight": (d, A), p + "attn.out.bias": (d,), p + "norm_ffn.weight": (d,),
                  p + "ffn.gate.weight": (F, d), p + "ffn.up.weight": (F, d), p + "ffn.down.weight": (d, F),
                  p + "ffn.down.bias": (d,)})
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % l
        S.update({p + "norm_attn.weight": (H,), p + "norm_ffn.weight": (H,), p + "attn.q.weight": (Q, H),
                  p + "attn.k.weight": (K, H), p + "attn.v.weight": (K, H), p + "attn.o.weight": (H, Q),
                  p + "ffn.gate.weight": (I, H), p + "ffn.up.weight": (I, H), p + "ffn.down.weight": (H, I),
                  p + "ada.linear_1.weight": (cfg["ada_hidden"], H),
                  p + "ada.linear_2.weight": (H, cfg["ada_hidden"])})
    return S


def tensor_count(cfg):
    return 3 + 5 + 13 * cfg["enc_layers"] + 2 + 2 + 11 * cfg["dec_layers"]


def rn(seed, name, shape, dt=torch.float64):
    """Standard normal tensor from its own generator (seed, crc32(name)):
    any tensor can be regenerated alone (the real config streams them)."""
    g = torch.Generator().manual_seed(seed * 1000003 + zlib.crc32(name.encode()))
    return torch.randn(*shape, generator=g, dtype=dt)


def encoder_weight(cfg, name, shape, dt):
    """Random encoder / conv tensors: norms 1 + N(0, 0.1), biases N(0, 0.05),
    unit fan-in linears (q, k ×1.5 for sharper attention), sublayer outputs
    scaled by 1/sqrt(2L) (the residual stays O(1) through the stack)."""
    s = cfg["enc_seed"]
    x = rn(s, name, shape, dt)
    if name.endswith("norm_attn.weight") or name.endswith("norm_ffn.weight") or name == "enc.final_norm.weight":
        return 1 + 0.1 * x
    if name.endswith(".bias"):
        return 0.05 * x
    if name.startswith("enc.conv."):
        return x / math.sqrt(shape[1] * 3)
    fan_in = shape[1]
    g = 1.0 / math.sqrt(fan_in)
    if name.endswith(("attn.q.weight", "attn.k.weight")):
        g *= 1.5
    if name.endswith(("attn.out.weight", "ffn.down.weight")):
        g *= 1.0 / math.sqrt(2 * cfg["enc_layers"])
    return x * g


D_CONST = 0  # constant channel: κ in every token embedding, 0 in audio rows


class Design:
    """Every tensor of the file, each from its own generator (rn), so a tensor
    can be regenerated alone (the real config streams them to disk).

    Encoder: encoder_weight. Decoder: a successor-chain LM for additive
    fusion. Residual dims: 0 = constant channel (κ in every embedding),
    1..A = audio dims (the only dims the projector writes, zero in every
    embedding, never written by a block), A+1.. = free dims (token
    directions: random unit rows, the chain tokens orthonormal). The last
    block's FFN holds one SwiGLU unit per chain edge a -> b that fires on
    ⟨R_a, x⟩ against the constant channel (both divided by the same RMS, so
    the audio dims only rescale it) and writes β·R_b; the last block's
    ada.linear_2 is zero outside the audio dims, so that norm weight is
    delay-independent. Every other block is random (sublayer outputs of norm
    ≈ out_gain, never into dims 0..A) with random delay scales. The final
    norm γ ≈ 2 widens the logits."""

    def __init__(self, cfg, vocab, chain, dt, audio_norm=0.5, alpha=24.0, beta=8.0, tau=0.5, out_gain=0.25,
                 gamma=2.0):
        self.cfg, self.vocab, self.chain, self.dt = cfg, vocab, chain, dt
        self.shapes = tensor_shapes(cfg, vocab.V)
        self.H = cfg["hidden"]
        self.A = cfg["n_audio_dims"]
        self.nres = 1 + self.A
        self.audio_norm, self.alpha, self.beta, self.tau, self.gamma = audio_norm, alpha, beta, tau, gamma
        L = cfg["dec_layers"]
        self.out_scale = out_gain / math.sqrt(2 * L * self.H)
        nf = self.H - self.nres
        assert len(chain) <= nf
        qm, _ = torch.linalg.qr(rn(cfg["dec_seed"], "chain.basis", (nf, len(chain)), dt))
        self.Rc = {t: qm[:, i].contiguous() for i, t in enumerate(chain)}  # free-dim coordinates
        self.proj_scale = 1.0
        fb, win = frontend_buffers()
        half = self.H // 2
        inv = np.exp(-math.log(10000.0) * np.arange(half) / half).astype(np.float32)
        self.fixed = {"frontend.mel_filterbank": fb, "frontend.window": win, "dec.time_embed.inv_freq": inv}

    def embedding(self):
        V, H, nres = self.vocab.V, self.H, self.nres
        g = rn(self.cfg["dec_seed"], "dec.token_embd.weight", (V, H - nres), self.dt)
        for r0 in range(0, V, 8192):
            g[r0:r0 + 8192] /= g[r0:r0 + 8192].norm(dim=1, keepdim=True)
        for t, v in self.Rc.items():
            g[t] = v
        E = torch.zeros(V, H, dtype=self.dt)
        E[:, D_CONST] = lc.KAPPA
        E[:, nres:] = lc.RHO * g
        return E

    def _raw(self, nm):
        cfg, dt, H = self.cfg, self.dt, self.H
        shape = self.shapes[nm]
        if nm in self.fixed:
            return torch.from_numpy(self.fixed[nm].astype(np.float64)).to(dt)
        if nm.startswith("enc."):
            return encoder_weight(cfg, nm, shape, dt)
        if nm == "proj.linear_1.weight":
            return rn(cfg["enc_seed"], nm, shape, dt) / math.sqrt(shape[1])
        if nm == "proj.linear_2.weight":
            w = rn(cfg["enc_seed"], nm, shape, dt) * (self.proj_scale / math.sqrt(H))
            w[:self.nres - self.A] = 0
            w[self.nres:] = 0
            return w
        if nm == "dec.token_embd.weight":
            return self.embedding()
        x = rn(cfg["dec_seed"], nm, shape, dt)
        if nm == "dec.output_norm.weight":
            return self.gamma * (1 + 0.1 * x)
        l = int(nm.split(".")[2])
        last = l == cfg["dec_layers"] - 1
        leaf = nm.split(".", 3)[3]
        if leaf.startswith("norm_"):
            return 1 + 0.1 * x
        if leaf == "ada.linear_1.weight":
            return x * (2.0 / math.sqrt(H))
        if leaf == "ada.linear_2.weight":
            x = x * (0.3 / math.sqrt(shape[1]))
            if last:
                x[:self.nres - self.A] = 0
                x[self.nres:] = 0
            return x
        x = x / math.sqrt(shape[1])
        if leaf in ("attn.o.weight", "ffn.down.weight"):
            x = x * self.out_scale
            x[:self.nres] = 0
        if last and leaf.startswith("ffn."):
            self._chain_units(nm, leaf, x)
        return x

    def _chain_units(self, nm, leaf, x):
        free = slice(self.nres, self.H)
        wn = self._raw(nm.replace(leaf, "norm_ffn.weight"))
        # typical RMS of an input row: κ, ρ and the audio row norm
        n = math.sqrt((lc.KAPPA ** 2 + lc.RHO ** 2 + self.audio_norm ** 2) / self.H) / lc.RHO
        g_exp = self.alpha * (1 - self.tau)
        act = g_exp / (1 + math.exp(-g_exp))
        units = lc.edges({0: self.chain})
        assert len(units) <= self.cfg["inter"]
        for u, (a, b, _) in enumerate(units):
            if leaf == "ffn.gate.weight":
                x[u] = 0
                x[u, free] = self.alpha * n * self.Rc[a] / wn[free]
                x[u, D_CONST] = -self.alpha * self.tau * n * lc.RHO / (lc.KAPPA * wn[D_CONST])
            elif leaf == "ffn.up.weight":
                x[u] = 0
                x[u, free] = n * self.Rc[a] / wn[free]
            else:
                x[:, u] = 0
                x[free, u] = self.beta * self.Rc[b] / act

    def tensor(self, nm):
        """The stored values (float32-representable; F16-representable in the L / A / E classes)."""
        t = self._raw(nm)
        if dtype_class(nm) in ("L", "A", "E"):
            t = f16r(t)
        return t.float().to(self.dt)

    def calibrate(self, pcm):
        """Scales proj.linear_2 so the audio rows have mean norm audio_norm on pcm (delay 6)."""
        fb, win = self.fixed["frontend.mel_filterbank"], self.fixed["frontend.window"]
        mel = logmel(pcm, DEFAULT_DELAY, fb, win)
        self.proj_scale = 1.0
        e = encoder(mel.astype(np.float32) if self.dt == torch.float32 else mel, LazyW(self), self.cfg)
        n = e.shape[0] // 4
        h = gelu(e[:4 * n].reshape(n, -1) @ self._raw("proj.linear_1.weight").T) @ self._raw("proj.linear_2.weight").T
        self.proj_scale = self.audio_norm / float(h.norm(dim=1).mean())
        return e.shape[0]


def chain_check(design):
    """The last block's chain units in isolation: input E[a] + an audio row
    of norm audio_norm; returns (min over edges a -> b of ⟨f, R_b⟩, max over
    edges and other chain tokens c of |⟨f, R_c⟩|), f = the FFN output.
    The design aims at β (8) and 0."""
    cfg, H = design.cfg, design.H
    p = "dec.blocks.%d." % (cfg["dec_layers"] - 1)
    wn = design.tensor(p + "norm_ffn.weight").double()
    gate, up, down = (design.tensor(p + "ffn.%s.weight" % k).double() for k in ("gate", "up", "down"))
    free = slice(design.nres, H)
    aud = rn(cfg["dec_seed"], "chain_check.audio", (design.A,), torch.float64)
    aud *= design.audio_norm / aud.norm()
    lo, hi = float("inf"), 0.0
    for a, b, _ in lc.edges({0: design.chain}):
        x = torch.zeros(H, dtype=torch.float64)
        x[D_CONST] = lc.KAPPA
        x[1:design.nres] = aud
        x[free] = lc.RHO * design.Rc[a].double()
        h = rms_norm(x, wn, 1e-5)
        f = down @ (torch.nn.functional.silu(gate @ h) * (up @ h))
        for c in design.chain:
            v = float(f[free] @ design.Rc[c].double())
            if c == b:
                lo = min(lo, v)
            else:
                hi = max(hi, abs(v))
    return lo, hi


class LazyW:
    """dict-like view of a Design (keeps the last few tensors)."""

    def __init__(self, design, keep=16):
        self.d, self.keep, self.cache = design, keep, OrderedDict()

    def __getitem__(self, nm):
        if nm not in self.cache:
            self.cache[nm] = self.d.tensor(nm)
            while len(self.cache) > self.keep:
                self.cache.popitem(last=False)
        return self.cache[nm]


def build_weights(cfg, vocab, chain, pcm_cal, dt=torch.float64):
    """All tensors in write order (float32 values; F16-representable in the F16/Q8_0 classes)."""
    design = Design(cfg, vocab, chain, dt)
    design.calibrate(pcm_cal)
    design.check = chain_check(design)
    W = OrderedDict((nm, design.tensor(nm).double()) for nm in tensor_names(cfg))
    assert len(W) == tensor_count(cfg)
    for k, v in W.items():
        assert tuple(v.shape) == design.shapes[k], (k, v.shape, design.shapes[k])
    return W, design


# --------------------------------------------------------------------------
# GGUF (docs/formats/voxtral_realtime.md §2, §3)
# --------------------------------------------------------------------------
def write_gguf(path, cfg, vocab, W, preset, lazy=False):
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "voxtral_realtime")
    w.add_string("general.name", "Voxtral Mini 4B Realtime")
    w.add_string("general.basename", "voxtral_realtime")
    w.add_string("general.version", "2602")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "Mistral AI")
    w.add_string("general.organization", "mistralai")
    w.add_string("general.license", "apache-2.0")
    if preset == "F32":  # the converter writes file_type in the general block
        w.add_uint32("general.file_type", lc.FILE_TYPE[preset])
    w.add_array("general.languages", LANGS, gw.STRING)
    w.add_string("stt.variant", "voxtral-mini-4b-realtime-2602")
    w.add_bool("stt.capability.lang_detect", True)
    w.add_bool("stt.capability.translate", False)
    w.add_bool("stt.capability.streaming", True)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "tekken")
    w.add_uint32("tokenizer.ggml.bos_token_id", BOS)
    w.add_uint32("tokenizer.ggml.eos_token_id", EOS)
    w.add_uint32("tokenizer.ggml.unknown_token_id", UNK)
    w.add_uint32("tokenizer.ggml.padding_token_id", PAD_ID)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    w.add_uint32("stt.voxtral_realtime.streaming_pad_token_id", STREAM_PAD)
    e = "stt.voxtral_realtime.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("d_model", cfg["d_model"]), ("n_heads", cfg["enc_heads"]),
                 ("n_kv_heads", cfg["enc_heads"]), ("head_dim", cfg["enc_hd"]), ("ffn_dim", cfg["enc_ffn"]),
                 ("num_mel_bins", NMEL), ("sliding_window", cfg["enc_window"]), ("max_position_embeddings", 1500)):
        w.add_uint32(e + k, v)
    w.add_float32(e + "rope_theta", 1e6)
    w.add_float32(e + "rms_norm_eps", 1e-5)
    w.add_string(e + "hidden_act", "silu")
    p = "stt.voxtral_realtime.projector."
    w.add_uint32(p + "downsample_factor", 4)
    w.add_uint32(p + "input_dim", 4 * cfg["d_model"])
    w.add_string(p + "hidden_act", "gelu")
    w.add_uint32(p + "audio_length_per_tok", 8)
    d = "stt.voxtral_realtime.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]), ("intermediate_size", cfg["inter"]),
                 ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]), ("head_dim", cfg["head_dim"])):
        w.add_uint32(d + k, v)
    w.add_string(d + "hidden_act", "silu")
    w.add_float32(d + "rms_norm_eps", 1e-5)
    w.add_float32(d + "rope_theta", 1e6)
    w.add_uint32(d + "sliding_window", cfg["dec_window"])
    w.add_uint32(d + "max_position_embeddings", 131072)
    w.add_bool(d + "tie_word_embeddings", True)
    w.add_uint32(d + "vocab_size", vocab.V)
    t = "stt.voxtral_realtime.time."
    w.add_uint32(t + "default_num_delay_tokens", DEFAULT_DELAY)
    w.add_float32(t + "embed_theta", 10000.0)
    w.add_uint32(t + "embed_dim", cfg["hidden"])
    w.add_uint32(t + "ada_hidden", cfg["ada_hidden"])
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", NMEL)
    w.add_uint32(f + "sample_rate", 16000)
    w.add_uint32(f + "n_fft", NFFT)
    w.add_uint32(f + "win_length", NFFT)
    w.add_uint32(f + "hop_length", HOP)
    w.add_string(f + "window", "hann_periodic")
    w.add_string(f + "normalize", "global")
    w.add_float32(f + "global_log_mel_max", GLOBAL_LOG_MEL_MAX)
    w.add_float32(f + "dither", 0.0)
    w.add_float32(f + "pre_emphasis", 0.0)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)
    w.add_string(f + "pad_mode", "reflect")
    w.add_string(f + "mel_norm", "slaney")
    w.add_bool(f + "center", True)
    if preset != "F32":  # the quantizer re-appends file_type as the last scalar key
        w.add_uint32("general.file_type", lc.FILE_TYPE[preset])
    if isinstance(W, Design):  # streamed: one tensor generated at a time
        items = [(nm, W.shapes[nm], (lambda nm=nm: W.tensor(nm).float().numpy())) for nm in tensor_names(cfg)]
    else:
        items = [(nm, tuple(t.shape), (lambda t=t: t.float().numpy())) for nm, t in W.items()]
    assert len(items) == tensor_count(cfg)
    for nm, shape, to_np in items:
        gt = ggml_type_for(nm, shape, preset)
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, to_np)
        else:
            w.add_tensor(nm, to_np(), gt)
    return w.write_stream(path) if lazy else w.write(path)


def check_file(path, cfg, vocab, W, preset):
    """Read-back: KV types, tensor order, ne, ggml types, values."""
    kv, ts = gw.read_gguf(path)
    U, F, S, B = gw.UINT32, gw.FLOAT32, gw.STRING, gw.BOOL
    want = {"general.architecture": (S, "voxtral_realtime"), "stt.variant": (S, "voxtral-mini-4b-realtime-2602"),
            "tokenizer.ggml.bos_token_id": (U, 1), "tokenizer.ggml.eos_token_id": (U, 2),
            "stt.voxtral_realtime.streaming_pad_token_id": (U, 32),
            "stt.voxtral_realtime.encoder.n_kv_heads": (U, cfg["enc_heads"]),
            "stt.voxtral_realtime.encoder.rope_theta": (F, 1e6),
            "stt.voxtral_realtime.projector.input_dim": (U, 4 * cfg["d_model"]),
            "stt.voxtral_realtime.decoder.tie_word_embeddings": (B, True),
            "stt.voxtral_realtime.decoder.vocab_size": (U, vocab.V),
            "stt.voxtral_realtime.time.default_num_delay_tokens": (U, 6),
            "stt.voxtral_realtime.time.embed_dim": (U, cfg["hidden"]),
            "stt.frontend.normalize": (S, "global"), "stt.frontend.global_log_mel_max": (F, 1.5),
            "general.file_type": (U, lc.FILE_TYPE[preset])}
    for k, v in want.items():
        assert kv[k] == v, (k, kv[k], v)
    assert kv["tokenizer.ggml.token_type"] == (gw.ARRAY, (gw.INT32, vocab.types))
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == vocab.V
    assert list(ts) == list(W), "tensor order"
    for nm, t in W.items():
        gt, ne, a = ts[nm]
        x = t.float().numpy()
        assert ne == list(reversed(x.shape)) and gt == ggml_type_for(nm, x.shape, preset), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, x), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, x.astype(np.float16).astype(np.float32)), nm
        else:
            assert np.array_equal(a, gw.dequantize_q8_0(gw.quantize_q8_0(x), x.size).reshape(x.shape)), nm
    return kv, ts


def read_weights(path):
    _, ts = gw.read_gguf(path)
    return OrderedDict((n, torch.from_numpy(a.astype(np.float64))) for n, (_, _, a) in ts.items())


# --------------------------------------------------------------------------
# goldens
# --------------------------------------------------------------------------
def load_clips(out):
    """clip.wav = jfk.wav 0.30-2.80 s (40 000 samples, written once; EOS ends
    the decode); clip_short = its first 7 680 samples (6·1280: no ceil padding;
    n_audio 55, the horizon stops the decode right before the EOS step);
    clip_min = its first sample (n_samples 1; the horizon cuts the chain)."""
    path = os.path.join(out, "clip.wav")
    if not os.path.exists(path):
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        lc.write_wav16(path, jfk[4800:44800])
    x, _ = mel_ref.read_wav(path)
    return OrderedDict([("clip", x), ("clip_short", x[:20480]), ("clip_min", x[:1])])


N_LOGITS = 8  # prefill + 7 steps ("gen8")


def text_block(r, n):
    return ("status: OK\nn_audio: %d\nids: %s\ntext: %s\nraw_text: %s\nsegment_ms: 0 %d\n"
            % (r["n_audio"], " ".join(map(str, r["gen"])), r["text"], r["raw"], n * 1000 // 16000))


def goldens(cfg, vocab, W, tag, clips, out, log, first):
    res = {}
    for name, x in clips.items():
        r = run_offline(W, cfg, vocab, x)
        res[name] = r
        stem = os.path.join(out, name + tag)
        full = name == "clip"
        if first and full:
            npsave(os.path.join(out, "prompt.npy"), r["prompt"], np.int32)
            npsave(os.path.join(out, name + ".mel.npy"), r["mel"])
        if full:
            for k in ("conv", "enc", "proj"):
                npsave("%s.%s.npy" % (stem, k), r[k])
        npsave(stem + ".logits.npy", r["logits"][:N_LOGITS])
        npsave(stem + ".tokens.npy", r["gen"], np.int32)
        with open(stem + ".text.txt", "w", encoding="utf-8") as f:
            f.write(text_block(r, len(x)))
        r32 = run_offline(W, cfg, vocab, x, dtype=torch.float32)
        r32h = run_offline(W, cfg, vocab, x, dtype=torch.float32, kv_f16=True)
        same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"]
        err = lambda a, b: float((a.double() - b.double()).abs().max())
        line = ("%-16s n %6d T_mel %4d T_enc %3d n_audio %3d n_gen %2d min_margin %.3f |logits|max %.2f | f32: "
                "same_ids=%s enc %.1e proj %.1e logits %.1e (F16 KV %.1e)"
                % (name + (tag or ".f32"), len(x), r["mel"].shape[1], r["enc"].shape[0], r["n_audio"], len(r["gen"]),
                   min(r["margins"]), float(r["logits"].abs().max()), same, err(r32["enc"], r["enc"]),
                   err(r32["proj"], r["proj"]), err(r32["logits"][:N_LOGITS], r["logits"][:N_LOGITS]),
                   err(r32h["logits"][:N_LOGITS], r["logits"][:N_LOGITS])))
        print(line)
        log.append(line)
        log.append("    text %r  raw %r" % (r["text"], r["raw"]))
        assert same
    return res


def audio_effect(W, cfg, vocab, x, r):
    """Max |Δ logits| of the first steps when the audio rows are zeroed (the
    additive fusion reaches the logits)."""
    d = DEFAULT_DELAY
    g = Greedy(Decoder(W, cfg, d), d)
    g.feed(torch.zeros_like(r["proj"]), r["n_audio"])
    k = min(N_LOGITS, len(g.logits))
    return float((torch.stack(g.logits[:k]) - r["logits"][:k]).abs().max()), g.gen == r["gen"]


def self_checks(W, cfg, r, log):
    """KV stepping == one causal pass over the fused inputs; the encoder's
    sliding window is active on the clip."""
    d = DEFAULT_DELAY
    ids = prompt_ids(d) + r["gen"]
    n = min(len(ids), r["n_audio"])
    dec = Decoder(W, cfg, d)
    x = dec.embed(ids[:n]) + r["proj"][:n]
    # logits of every row from one pass: run the blocks, then the head per row
    full = []
    for j in range(len(prompt_ids(d)) - 1, n):
        dj = Decoder(W, cfg, d)
        full.append(dj.forward(x[:j + 1]))
    dev = float((torch.stack(full) - r["logits"][:len(full)]).abs().max())
    cfg_nw = dict(cfg, enc_window=10 ** 6)
    e_nw = encoder(r["mel"], W, cfg_nw)
    wdev = float((e_nw - r["enc"]).abs().max())
    log.append("self-check: KV stepping vs one causal pass max |Δ logits| %.1e over %d rows; encoder without "
               "the %d-frame window differs by %.3f" % (dev, len(full), cfg["enc_window"], wdev))
    print(log[-1])
    assert dev < 1e-9 and wdev > 1e-3


def stream_goldens(cfg, vocab, W, clips, res, out, log):
    """stream.json: feed traces (docs/formats/voxtral_realtime.md §8) for a few chunk sizes / intervals / delays."""
    x = clips["clip"]
    fb = W["frontend.mel_filterbank"].numpy()
    win = W["frontend.window"].numpy()
    cases = [("d6_chunk500ms_int0", 8000, DEFAULT_DELAY, 0), ("d6_chunk320ms_default", 5120, DEFAULT_DELAY, -1),
             ("d6_chunk100ms_int200", 1600, DEFAULT_DELAY, 200), ("d6_whole", len(x), DEFAULT_DELAY, 0),
             ("d2_chunk250ms_int0", 4000, OTHER_DELAY, 0)]
    audio = {}
    offline = {}
    for d in (DEFAULT_DELAY, OTHER_DELAY):
        mel = logmel(x, d, fb, win)
        audio[d] = projector(encoder(mel, W, cfg), W)
        g = Greedy(Decoder(W, cfg, d), d)
        g.feed(audio[d], audio[d].shape[0])
        offline[d] = g
    # causality: rows from a received prefix equal the offline rows (any delay)
    for n in (1, 4000, 17000, len(x)):
        pr = prefix_rows(W, cfg, x[:n])
        dev = float((pr - audio[DEFAULT_DELAY][:pr.shape[0]]).abs().max()) if pr.shape[0] else 0.0
        log.append("stream prefix %6d samples: %d rows, max |row - offline row| %.2e" % (n, pr.shape[0], dev))
        assert dev < 1e-9, dev
    doc = OrderedDict()
    for name, chunk, d, ms in cases:
        ev, g = run_stream(W, cfg, vocab, x, chunk, d, ms, audio[d])
        off = offline[d]
        assert g.gen == off.gen, (name, g.gen, off.gen)
        assert ev[-1]["text"] == vocab.full_text(off.gen)
        # the windowed decoder KV (positions >= window) changes the logits, not the ids
        k = min(len(g.logits), len(off.logits))
        dl = float((torch.stack(g.logits[:k]) - torch.stack(off.logits[:k])).abs().max())
        if name == "d6_chunk500ms_int0":  # every stream logit row (the ring window changes them)
            npsave(os.path.join(out, "stream.d6.logits.npy"), torch.stack(g.logits))
        doc[name] = OrderedDict(chunk_samples=chunk, num_delay_tokens=d, min_decode_interval_ms=ms,
                                n_samples=len(x), n_audio=int(audio[d].shape[0]), T_prompt=g.Tp,
                                final_ids=g.gen, final_text=ev[-1]["text"], final_raw_text=ev[-1]["raw_text"],
                                min_margin=min(g.margins), max_logit_dev_vs_offline=dl, events=ev)
        line = ("stream %-24s feeds %2d decodes %2d final n_gen %d == offline; min margin %.3f; "
                "windowed-KV |Δlogits| vs offline %.3f"
                % (name, len(ev) - 1, sum(e.get("decoded", False) for e in ev), len(g.gen), min(g.margins), dl))
        print(line)
        log.append(line)
    with open(os.path.join(out, "stream.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    # offline decode at the other delay (what a stream at that delay finalizes to)
    npsave(os.path.join(out, "clip.d%d.tokens.npy" % OTHER_DELAY), offline[OTHER_DELAY].gen, np.int32)
    npsave(os.path.join(out, "clip.d%d.logits.npy" % OTHER_DELAY), torch.stack(offline[OTHER_DELAY].logits[:N_LOGITS]))
    npsave(os.path.join(out, "clip.d%d.proj.npy" % OTHER_DELAY), audio[OTHER_DELAY])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default=None, help="comma list of F32,F16,Q8_0 (tiny: all three; real: F16)")
    ap.add_argument("--no-decode", action="store_true", help="real: skip the float32 decode")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    tiny = a.config == "tiny"
    presets = a.dtypes.split(",") if a.dtypes else (["F32", "F16", "Q8_0"] if tiny else ["F16"])
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    vocab = TekkenVocab(cfg["n_merges"], cfg["vocab"])
    chain = vocab.chain()
    print("vocab %d (%d merges); chain %s" % (vocab.V, len(vocab.merges), chain))
    if not tiny:
        return main_real(a, cfg, vocab, chain, presets, t0)
    clips = load_clips(a.out)
    W, design = build_weights(cfg, vocab, chain, clips["clip"])
    n_par = sum(int(np.prod(t.shape)) for k, t in W.items() if not k.startswith("frontend."))
    log = ["config tiny seeds enc %d dec %d; vocab %d; chain %s" % (cfg["enc_seed"], cfg["dec_seed"], vocab.V, chain),
           "%d tensors, %d parameters" % (len(W), n_par),
           "chain units alone (input E[a] + an audio row of norm 0.5): min <f, R_next> %.3f, "
           "max |<f, R_other chain token>| %.3f (aim 8 / 0)" % design.check]
    for preset in presets:
        path = os.path.join(a.out, "voxtral-realtime-tiny-ref-%s.gguf" % preset)
        size = write_gguf(path, cfg, vocab, W, preset)
        check_file(path, cfg, vocab, W, preset)
        log.append("%s: %d bytes" % (os.path.basename(path), size))
        print(log[-1])
    Wf = read_weights(os.path.join(a.out, "voxtral-realtime-tiny-ref-F32.gguf"))
    W16 = read_weights(os.path.join(a.out, "voxtral-realtime-tiny-ref-F16.gguf"))
    assert all(torch.equal(W16[k], Wf[k]) for k in Wf), "F16 file differs from F32"
    for d in (DEFAULT_DELAY, OTHER_DELAY):
        npsave(os.path.join(a.out, "ada.d%d.npy" % d), ada_scales(Wf, cfg, d))
    res = goldens(cfg, vocab, Wf, "", clips, a.out, log, True)
    self_checks(Wf, cfg, res["clip"], log)
    dl, same = audio_effect(Wf, cfg, vocab, clips["clip"], res["clip"])
    log.append("zero audio rows: max |Δ logits| %.3f over the first %d steps; same ids %s" % (dl, N_LOGITS, same))
    print(log[-1])
    s6, s2 = ada_scales(Wf, cfg, DEFAULT_DELAY), ada_scales(Wf, cfg, OTHER_DELAY)
    lg = [Decoder(Wf, cfg, d).forward(Decoder(Wf, cfg, d).embed(prompt_ids(DEFAULT_DELAY)) +
                                      res["clip"]["proj"][:DEFAULT_DELAY + 33]) for d in (DEFAULT_DELAY, OTHER_DELAY)]
    log.append("ada scales: range d6 [%.3f, %.3f], max |s_d6 - s_d2| %.3f; same prefill input at delay 2 instead of "
               "6: max |Δ logits| %.3f" % (float(s6.min()), float(s6.max()), float((s6 - s2).abs().max()),
                                          float((lg[0] - lg[1]).abs().max())))
    print(log[-1])
    Wq = read_weights(os.path.join(a.out, "voxtral-realtime-tiny-ref-Q8_0.gguf"))
    goldens(cfg, vocab, Wq, ".q8_0", clips, a.out, log, False)
    stream_goldens(cfg, vocab, Wf, clips, res, a.out, log)
    with open(os.path.join(a.out, "margins.txt"), "w") as f:
        f.write("\n".join(log) + "\n")
    print("done %.1fs" % (time.time() - t0))


def check_header(path, cfg, vocab, design, preset):
    """Read-back of a streamed file without loading it: KV types and values,
    tensor order / ne / types / contiguous offsets, file size, and the values
    of a few tensors (read at their offsets)."""
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
        nm = c.string()
        ne = [c.take("<q") for _ in range(c.take("<I"))]
        infos.append((nm, ne, c.take("<I"), c.take("<Q")))
    data = (c.pos + 31) // 32 * 32
    U = gw.UINT32
    for k, v in (("general.architecture", (gw.STRING, "voxtral_realtime")),
                 ("general.file_type", (U, lc.FILE_TYPE[preset])),
                 ("stt.voxtral_realtime.decoder.vocab_size", (U, vocab.V)),
                 ("stt.voxtral_realtime.encoder.n_layers", (U, cfg["enc_layers"])),
                 ("stt.voxtral_realtime.decoder.n_layers", (U, cfg["dec_layers"]))):
        assert kv[k] == v, (k, kv[k])
    assert len(kv["tokenizer.ggml.tokens"][1][1]) == vocab.V
    assert [i[0] for i in infos] == tensor_names(cfg)
    off, where = 0, {}
    for nm, ne, gt, o in infos:
        shape = design.shapes[nm]
        assert ne == list(reversed(shape)) and gt == ggml_type_for(nm, shape, preset) and o == off, nm
        bs, ts = gw._TYPE_INFO[gt]
        size = int(np.prod(shape)) // bs * ts
        where[nm] = (data + o, size, gt)
        off += (size + 31) // 32 * 32
    assert os.path.getsize(path) == data + off, "file size"
    L = cfg["dec_layers"]
    with open(path, "rb") as f:
        for nm in ("dec.time_embed.inv_freq", "enc.conv.0.bias", "enc.blocks.0.attn.q.weight",
                   "proj.linear_2.weight", "dec.blocks.%d.ffn.gate.weight" % (L - 1),
                   "dec.blocks.%d.ada.linear_2.weight" % (L - 1)):
            pos, size, gt = where[nm]
            f.seek(pos)
            raw = f.read(size)
            want = design.tensor(nm).float().numpy()
            if gt == gw.GGML_F32:
                got = np.frombuffer(raw, "<f4").reshape(want.shape)
            elif gt == gw.GGML_F16:
                got = np.frombuffer(raw, "<f2").astype(np.float32).reshape(want.shape)
                want = want.astype(np.float16).astype(np.float32)
            else:
                got = gw.dequantize_q8_0(raw, want.size).reshape(want.shape)
                want = gw.dequantize_q8_0(gw.quantize_q8_0(want), want.size).reshape(want.shape)
            assert np.array_equal(got, want), nm
    return len(infos)


def main_real(a, cfg, vocab, chain, presets, t0):
    """Published dimensions, float32, tensors generated and written one at a
    time. No decode: the float32 LM alone would need ~14 GB."""
    design = Design(cfg, vocab, chain, torch.float32)
    jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
    T_enc = design.calibrate(jfk)
    lo, hi = chain_check(design)
    print("chain units alone: min <f, R_next> %.3f, max |<f, R_other>| %.3f (aim 8 / 0)" % (lo, hi))
    n_par = sum(int(np.prod(s)) for k, s in design.shapes.items() if not k.startswith("frontend."))
    log = ["config real: %d tensors, %d parameters (excl. frontend buffers); vocab %d; proj calibrated on jfk "
           "(T_enc %d, scale %.4f) %.0fs" % (tensor_count(cfg), n_par, vocab.V, T_enc, design.proj_scale,
                                            time.time() - t0),
           "chain units alone (input E[a] + an audio row of norm 0.5): min <f, R_next> %.3f, "
           "max |<f, R_other chain token>| %.3f (aim 8 / 0)" % (lo, hi)]
    print(log[-1])
    if not a.no_decode:
        log.append("no decode at real size (float32 LM ~14 GB); run with --no-decode")
    for preset in presets:
        path = os.path.join(a.out, "voxtral-mini-4b-realtime-2602-ref-%s.gguf" % preset)
        size = write_gguf(path, cfg, vocab, design, preset, lazy=True)
        n = check_header(path, cfg, vocab, design, preset)
        log.append("%s: %d bytes, %d tensors, read back OK, %.0fs" % (os.path.basename(path), size, n,
                                                                      time.time() - t0))
        print(log[-1])
    with open(os.path.join(a.out, "real.txt"), "w") as f:
        f.write("\n".join(log) + "\n")


if __name__ == "__main__":
    main()
