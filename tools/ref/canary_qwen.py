#!/usr/bin/python3
"""Canary-Qwen reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/canary_qwen.md (and the pages it refers to:
docs/formats/canary.md §5-6 for the NeMo mel and the FastConformer,
docs/formats/causal-lm.md for the Qwen3 blocks and the greedy loop,
docs/formats/qwen3_asr.md §4 for the Qwen2 byte-level BPE), independently of
the C code. Pieces (sections of docs/formats/canary_qwen.md):

* §4 front end: pre-emphasis 0.97, numpy-reflect padding 256, the stored
  bfloat16-rounded symmetric Hann 400 centred in 512, |FFT_512|^2, the
  stored bfloat16-rounded Slaney 128x257 filterbank, ln(x + 2^-24),
  per-feature normalisation over all frames (unbiased std + 1e-5).
* §5 encoder = tools/ref/fastconformer.py (use_bias, no x-scaling, full
  attention, 2T-1 rel-pos table), then audio = W_proj·enc + b_proj.
* §6.1 prompt (prefix / T_enc placeholders / suffix, the literal segments
  BPE-encoded), §6.2 LM = causal_lm.py (Qwen3 math, tied head), audio rows
  replace the placeholder rows, §6.3 greedy loop (256 tokens incl. the
  prefill token and EOS), §6.4 text = byte-level decode, not trimmed.
* GGUF writer in the published schema (§2 keys with their types, §3 tensors
  in write order, §3.1 dtype classes for the F32 / F16 / Q8_0 presets);
  every file is read back and its goldens come from the weights it holds.

The pieces shared with funasr_nano.py (small Qwen2 BPE vocabulary with the
Qwen3 specials at the same distance from the end, the successor-chain LM)
live here.

usage:
  canary_qwen.py --config tiny --out tests/data/canary_qwen
  canary_qwen.py --config real --out build-ref/canary-qwen --dtypes F16
"""
import argparse
import math
import os
import sys
import time
from collections import OrderedDict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import causal_lm as clm  # noqa: E402
import gguf_writer as gw  # noqa: E402
import llm_common as lc  # noqa: E402
import mel_ref  # noqa: E402
import tok_ref  # noqa: E402
from fastconformer import FCConfig, FastConformerEncoder  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REAL_VOCAB = 151936
# Qwen3 added tokens used here (docs/formats/canary_qwen.md §2.1), at their
# real ids; tiny vocabularies keep the same distance from the end.
QWEN_SPECIALS = [("<|endoftext|>", 151643, 3), ("<|im_start|>", 151644, 3), ("<|im_end|>", 151645, 3),
                 ("<think>", 151667, 1), ("</think>", 151668, 1)]
AUDIO_LOCATOR = ("<|audioplaceholder|>", 151669, 3)

CONFIGS = {
    "tiny": dict(enc_layers=2, d_enc=32, enc_heads=2, enc_ff=64, conv_kernel=9, sub_channels=8,
                 dec_layers=2, hidden=64, inter=128, heads=4, kv_heads=2, head_dim=16,
                 vocab=1024, max_pos=40960, variant="canary-qwen-2.5b", size_label="tiny",
                 enc_seed=31, dec_seed=32),
    "real": dict(enc_layers=32, d_enc=1024, enc_heads=8, enc_ff=4096, conv_kernel=9, sub_channels=256,
                 dec_layers=28, hidden=2048, inter=6144, heads=16, kv_heads=8, head_dim=128,
                 vocab=REAL_VOCAB, max_pos=40960, variant="canary-qwen-2.5b", size_label="2.5B",
                 enc_seed=31, dec_seed=32),
}

# Greedy text of the successor-chain LM: every BPE token occurs once.
TEXT = "And so, my fellow Americans: ask not what your country can do for you. Whole Earth catalog 1984"
PROMPT_USER = "user\nTranscribe the following: "

f16r = lc.f16r
npsave = lc.npsave


def bf16r(a):
    """Round to bfloat16-representable values (round to nearest even)."""
    return torch.as_tensor(np.asarray(a, np.float32)).to(torch.bfloat16).to(torch.float64).numpy()


# --------------------------------------------------------------------------
# Qwen2 byte-level BPE vocabulary (shared with funasr_nano.py)
# --------------------------------------------------------------------------

class QwenVocab:
    """256 byte glyphs + merges trained by tok_ref.train_bpe on corpus + the
    Qwen3 specials (and extra specials) at real ids, or at the same distance
    from the end of a smaller table; every other id `<|unused_N|>` (type 1)."""

    def __init__(self, V, corpus, extra=(), n_merges=600):
        specials = QWEN_SPECIALS + list(extra)
        base = V - (REAL_VOCAB - QWEN_SPECIALS[0][1])
        self.sid = {p: base + (i - QWEN_SPECIALS[0][1]) for p, i, _ in specials}
        byte_pieces = [tok_ref.BYTE_MAP[b] for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                       + list(range(0xAE, 0x100))]
        byte_pieces += [tok_ref.BYTE_MAP[b] for b in range(256) if tok_ref.BYTE_MAP[b] not in byte_pieces]
        self.merges = tok_ref.train_bpe(corpus, min(base - 256, n_merges), "qwen2")
        seen = set()
        self.tokens, self.types = [], []
        for p in byte_pieces + [m.replace(" ", "") for m in self.merges]:
            if p in seen:  # a merge can rebuild an existing piece: keep ids unique
                p = "<|dup_%d|>" % len(self.tokens)
            seen.add(p)
            self.tokens.append(p)
            self.types.append(1)
        assert len(self.tokens) <= base, "vocab too small for the merges"
        while len(self.tokens) < V:
            self.tokens.append("<|unused_%d|>" % len(self.tokens))
            self.types.append(1)
        for p, _, t in specials:
            self.tokens[self.sid[p]] = p
            self.types[self.sid[p]] = t
        self.V = V
        self.bpe = tok_ref.ByteBPE(self.tokens, self.merges)
        self.id = {p: i for i, p in enumerate(self.tokens)}

    def encode(self, text):
        return self.bpe.encode(text.encode("utf-8"), "qwen2")

    def decode(self, ids):
        return self.bpe.decode_bytes(ids).decode("utf-8", "replace")

    def chain_ids(self, text):
        ids = self.encode(text)
        assert len(set(ids)) == len(ids), "chain token repeats: %s" % [self.tokens[i] for i in ids]
        assert self.decode(ids) == text
        return ids


# --------------------------------------------------------------------------
# successor-chain Qwen3 LM (shared with funasr_nano.py)
# --------------------------------------------------------------------------

D_CONST = 0  # the only reserved residual dim: κ in every embedding row and audio row
N_RESERVED = 1


def chain_lm_weights(cfg, chain, gen, dt, alpha=24.0, beta=8.0, tau=0.5, out_gain=0.25):
    """Qwen3 LM weights in the docs/formats/causal-lm.md §2 layout
    ("dec.blocks.N."): random blocks whose sublayer outputs add noise of total
    norm ≈ out_gain and never write dim 0; embeddings κ·e0 + ρ·r_t with the
    chain tokens orthonormal; the last block's FFN holds one SwiGLU unit per
    edge a → b of the chain (fires on token a through the const-dim threshold
    τ, writes β·r_b), so greedy decoding walks the chain with wide margins.
    The final-norm γ ≈ 2 widens the logits."""
    H, I, V = cfg["hidden"], cfg["inter"], cfg["vocab"]
    nh, nkv, hd, L = cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["dec_layers"]
    Q, K = nh * hd, nkv * hd
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dt)
    R, E, free = lc.successor_embeddings(r, V, H, N_RESERVED, {0: chain}, dt, D_CONST)
    W = {"dec.token_embd.weight": f16r(E), "dec.output_norm.weight": 2.0 * (1 + 0.1 * r(H))}
    clm.random_blocks(W, r, L, H, I, Q, K, hd, out_gain / math.sqrt(2 * L * H), N_RESERVED)
    wn, n, gate, up, down = lc.ffn_unit_scale(W, L, H)
    units = lc.edges({0: chain})
    assert len(units) <= I
    g_exp = alpha * (1 - tau)
    act = g_exp / (1 + math.exp(-g_exp))
    for u, (a, b, _) in enumerate(units):
        ra = R[a]
        gate[u] = 0
        gate[u, free] = alpha * n * ra[free] / wn[free]
        gate[u, D_CONST] = -alpha * tau * n * lc.RHO / (lc.KAPPA * wn[D_CONST])
        up[u] = 0
        up[u, free] = n * ra[free] / wn[free]
        down[:, u] = 0
        down[free, u] = beta * R[b, free] / act
    lc.round_linear(W)
    return W


def calibrate_projection(Wp, bp, enc_rows):
    """Scales a random projection so the audio rows have unit norm in the free
    dims on the calibration clip (like an embedding row), and puts κ in the
    const dim (weights 0)."""
    a = enc_rows @ Wp.T + bp
    s = float(a[:, N_RESERVED:].norm(dim=1).mean())
    Wp = Wp / s
    bp = bp / s
    Wp[D_CONST] = 0
    bp[D_CONST] = lc.KAPPA
    return f16r(Wp), bp


def lm_config(cfg):
    return clm.LMConfig(n_layers=cfg["dec_layers"], hidden=cfg["hidden"], intermediate=cfg["inter"],
                        n_heads=cfg["heads"], n_kv_heads=cfg["kv_heads"], head_dim=cfg["head_dim"],
                        vocab=cfg["vocab"], eps=1e-6, rope_theta=1e6)


def input_gate(T_prompt, max_pos, n_ctx=0):
    """docs/formats/canary_qwen.md §6.3 (and docs/formats/funasr_nano.md §8): INPUT_TOO_LONG if T_prompt + 256 > ceiling."""
    ceiling = min(max_pos, n_ctx) if n_ctx > 0 else max_pos
    return "INPUT_TOO_LONG" if T_prompt + 256 > ceiling else "OK"


def qwen_tokenizer_kv(w, vocab):
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen2")
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.sid["<|im_end|>"])
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.sid["<|endoftext|>"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)


def read_weights(path):
    """(kv, {name: float64 torch tensor}) of a written file (dequantized)."""
    kv, ts = gw.read_gguf(path)
    return kv, ts, OrderedDict((n, torch.from_numpy(a.astype(np.float64))) for n, (_, _, a) in ts.items())


def check_tensors(ts, W, type_of):
    """Read-back check: order, ne, ggml type, values (F32 exact, F16 exact
    after rounding, Q8_0 equal to our own quantize/dequantize)."""
    assert list(ts) == list(W), "tensor order"
    for nm, want in W.items():
        gt, ne, a = ts[nm]
        want = np.asarray(want.float().numpy() if isinstance(want, torch.Tensor) else want, np.float32)
        assert ne == list(reversed(want.shape)) and a.shape == want.shape, nm
        assert gt == type_of(nm, want.shape), nm
        if gt == gw.GGML_F32:
            assert np.array_equal(a, want), nm
        elif gt == gw.GGML_F16:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), nm
        else:
            q = gw.dequantize_q8_0(gw.quantize_q8_0(want), want.size).reshape(want.shape)
            assert np.array_equal(a, q), nm


def add_tensors(w, W, type_of, lazy):
    for nm, t in W.items():
        shape = tuple(t.shape)
        gt = type_of(nm, shape)
        to_np = (lambda t=t: (t.float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, np.float32)))
        if lazy:
            w.add_tensor_lazy(nm, shape, gt, to_np)
        else:
            w.add_tensor(nm, to_np(), gt)


# --------------------------------------------------------------------------
# front end (docs/formats/canary_qwen.md §3.2, §4)
# --------------------------------------------------------------------------

def frontend_buffers():
    """The baked buffers: Slaney 128x257 and symmetric Hann 400, both
    rounded to bfloat16 like the published checkpoint (docs/formats/canary_qwen.md §3.2)."""
    fb = bf16r(mel_ref.slaney_filterbank(16000, 512, 128, 0.0, 8000.0))
    win = bf16r(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399))
    return fb, win


def logmel(x, fb, win):
    """docs/formats/canary_qwen.md §4 on float samples x: [128, floor(n/160) + 1]."""
    n = x.size
    T = n // 160 + 1
    if n < 257 or T < 2:
        raise ValueError("INVALID_ARG: clip shorter than 257 samples")
    y = x.astype(np.float64).copy()
    y[1:] = x[1:] - 0.97 * x[:-1]
    P = mel_ref.stft_power(y, 512, np.asarray(win, np.float64), 160, "reflect", T)  # [T, 257]
    L = np.log(np.asarray(fb, np.float64) @ P.T + 2.0 ** -24)
    mu = L.mean(axis=1, keepdims=True)
    sd = np.sqrt(((L - mu) ** 2).sum(axis=1, keepdims=True) / (T - 1))
    return (L - mu) / (sd + 1e-5)


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

def fc_config(cfg):
    return FCConfig(n_layers=cfg["enc_layers"], d_model=cfg["d_enc"], n_heads=cfg["enc_heads"], d_ff=cfg["enc_ff"],
                    conv_kernel=cfg["conv_kernel"], sub_channels=cfg["sub_channels"], n_mels=128,
                    use_bias=True, xscaling=False)


def build_prompt(vocab, T_enc):
    """docs/formats/canary_qwen.md §6.1: prefix + [audio_locator] × T_enc + suffix."""
    s = vocab.sid
    prefix = [s["<|im_start|>"]] + vocab.encode(PROMPT_USER)
    suffix = [s["<|im_end|>"]] + vocab.encode("\n") + [s["<|im_start|>"]] + vocab.encode("assistant\n")
    return prefix + [s[AUDIO_LOCATOR[0]]] * T_enc + suffix


class Model:
    def __init__(self, cfg, vocab, W, dt=torch.float64):
        self.cfg, self.vocab, self.dt = cfg, vocab, dt
        self.enc = FastConformerEncoder(fc_config(cfg))
        self.enc = self.enc.double() if dt == torch.float64 else self.enc.float()
        self.enc.load_gguf_tensors({k: v for k, v in W.items() if k.startswith("enc.pre_encode.")
                                    or k.startswith("enc.blocks.")})
        self.Wp, self.bp = W["enc.proj.weight"].to(dt), W["enc.proj.bias"].to(dt)
        self.lm = clm.CausalLM(lm_config(cfg), {k: v for k, v in W.items() if k.startswith("dec.")}, dtype=dt)
        self.eos = vocab.sid["<|im_end|>"]
        self.loc = vocab.sid[AUDIO_LOCATOR[0]]

    def encode(self, mel):
        """(pre-encode out, block-0 out, encoder out, projection out)."""
        layers = []
        pre, out = self.enc(torch.as_tensor(mel), layers_out=layers)
        return pre, layers[0], out, out @ self.Wp.T + self.bp

    def run(self, mel, kv_f16=False, n_ctx=0, audio_override=None):
        pre, b0, enc, audio = self.encode(mel)
        if audio_override is not None:
            audio = audio_override
        ids = build_prompt(self.vocab, enc.shape[0])
        gate = input_gate(len(ids), self.cfg["max_pos"], n_ctx)
        r = dict(pre=pre, block0=b0, enc=enc, proj=audio, prompt=ids, status=gate)
        if gate != "OK":
            return r
        x = self.lm.inject(ids, self.loc, audio)
        gen, margins, logits0, trunc = clm.greedy(self.lm, x, self.eos, max_new=256, kv_f16=kv_f16)
        ids_out = gen[:-1] if gen and gen[-1] == self.eos else list(gen)
        r.update(gen=gen, margins=margins, logits0=logits0, text=self.vocab.decode(ids_out),
                 status="OUTPUT_TRUNCATED" if trunc else "OK")
        return r


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------

def dtype_class(name):
    """docs/formats/canary_qwen.md §3.1 classes: N, Conv, ConvPw, E, A, L."""
    if name.startswith("frontend.") or name.endswith((".bias", "norm.weight", "running_mean", "running_var",
                                                       "pos_bias_u", "pos_bias_v", "bn.weight")) \
            or ".norm_" in name or name == "dec.output_norm.weight":
        return "N"
    if name.startswith("enc.pre_encode.conv.") or name.endswith("conv.depthwise.weight"):
        return "Conv"
    if name.endswith(("conv.pointwise1.weight", "conv.pointwise2.weight")):
        return "ConvPw"
    if name == "dec.token_embd.weight":
        return "E"
    if name.endswith(("attn.linear_out.weight", "attn.o.weight")):
        return "A"
    return "L"


def ggml_type_for(name, shape, preset):
    c = dtype_class(name)
    if preset == "F32" or c in ("N", "Conv"):
        return gw.GGML_F32
    if preset == "F16" or c == "ConvPw":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def build_weights(cfg, vocab, mel_cal, chain, dt):
    """All tensors in file order (docs/formats/canary_qwen.md §3.4 write order), F16-representable in
    every F16/Q8_0-class tensor so the F32 and F16 files hold the same math."""
    t0 = time.time()
    fb, win = frontend_buffers()
    W = OrderedDict()
    W["frontend.mel_filterbank"] = torch.from_numpy(fb)
    W["frontend.window"] = torch.from_numpy(win)
    g = torch.Generator().manual_seed(cfg["enc_seed"])
    enc = FastConformerEncoder(fc_config(cfg))
    enc = (enc.double() if dt == torch.float64 else enc.float()).randomize_(g)
    enc.calibrate_(torch.as_tensor(mel_cal).to(enc.dtype))
    for k, v in enc.gguf_tensors().items():
        t = torch.from_numpy(v).to(dt)
        W[k] = f16r(t) if dtype_class(k) in ("L", "A", "ConvPw") else t.float().to(dt)
    _, out = enc(torch.as_tensor(mel_cal).to(enc.dtype))
    del enc
    H, d = cfg["hidden"], cfg["d_enc"]
    Wp = torch.randn(H, d, generator=g, dtype=dt) / math.sqrt(d)
    bp = 0.1 * torch.randn(H, generator=g, dtype=dt)
    W["enc.proj.weight"], W["enc.proj.bias"] = calibrate_projection(Wp, bp, out.to(dt))
    print("encoder built + calibrated %.1fs" % (time.time() - t0))
    Wd = chain_lm_weights(cfg, chain, torch.Generator().manual_seed(cfg["dec_seed"]), dt)
    W["dec.token_embd.weight"] = Wd["dec.token_embd.weight"]
    W["dec.output_norm.weight"] = Wd["dec.output_norm.weight"]
    for l in range(cfg["dec_layers"]):
        p = "dec.blocks.%d." % l
        for s in ("norm_attn", "norm_ffn", "attn.q", "attn.k", "attn.v", "attn.o", "attn.q_norm", "attn.k_norm",
                  "ffn.gate", "ffn.up", "ffn.down"):
            W[p + s + ".weight"] = Wd[p + s + ".weight"]
    for k in W:  # every stored value a float32 value
        if W[k].dtype == torch.float64:
            W[k] = W[k].float().double()
    return W


def tensor_count(cfg):
    return 2 + 12 + 39 * cfg["enc_layers"] + 2 + 2 + 11 * cfg["dec_layers"]


# --------------------------------------------------------------------------
# GGUF (docs/formats/canary_qwen.md §2, §3)
# --------------------------------------------------------------------------

def write_gguf(path, cfg, vocab, W, preset, lazy=False):
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "canary_qwen")
    w.add_string("general.name", "Canary-Qwen %s (random reference weights)" % cfg["size_label"])
    w.add_string("general.basename", "canary-qwen")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/canary_qwen.py")
    w.add_string("general.license", "cc-by-4.0")
    w.add_uint32("general.file_type", lc.FILE_TYPE[preset])
    w.add_array("general.languages", ["en"], gw.STRING)
    w.add_string("stt.variant", cfg["variant"])
    for k in ("lang_detect", "translate", "timestamps", "streaming"):
        w.add_bool("stt.capability." + k, False)
    qwen_tokenizer_kv(w, vocab)
    e = "stt.canary_qwen.encoder."
    for k, v in (("n_layers", cfg["enc_layers"]), ("d_model", cfg["d_enc"]), ("n_heads", cfg["enc_heads"]),
                 ("d_ff", cfg["enc_ff"]), ("conv_kernel", cfg["conv_kernel"]), ("subsampling_factor", 8),
                 ("subsampling_channels", cfg["sub_channels"]), ("pos_emb_max_len", 5000)):
        w.add_uint32(e + k, v)
    w.add_bool(e + "use_bias", True)
    p = "stt.canary_qwen.perception."
    w.add_uint32(p + "output_dim", cfg["hidden"])
    w.add_uint32(p + "audio_locator_id", vocab.sid[AUDIO_LOCATOR[0]])
    w.add_string(p + "audio_locator_tag", AUDIO_LOCATOR[0])
    w.add_bool(p + "has_proj_bias", True)
    d = "stt.canary_qwen.decoder."
    for k, v in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                 ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                 ("head_dim", cfg["head_dim"]), ("max_position_embeddings", cfg["max_pos"]),
                 ("vocab_size", cfg["vocab"])):
        w.add_uint32(d + k, v)
    w.add_float32(d + "rms_norm_eps", 1e-6)
    w.add_float32(d + "rope_theta", 1e6)
    w.add_bool(d + "tie_word_embeddings", True)
    w.add_string(d + "hidden_act", "silu")
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    for k, v in (("sample_rate", 16000), ("num_mels", 128), ("n_fft", 512), ("win_length", 400),
                 ("hop_length", 160)):
        w.add_uint32(f + k, v)
    w.add_float32(f + "pre_emphasis", 0.97)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)
    w.add_string(f + "pad_mode", "reflect")
    w.add_string(f + "normalize", "per_feature")
    w.add_string(f + "window", "hann")
    w.add_float32(f + "dither", 0.0)
    w.add_bool(f + "center", True)
    w.add_string(f + "mel_norm", "slaney")
    w.add_bool(f + "log", True)
    assert len(W) == tensor_count(cfg), (len(W), tensor_count(cfg))
    add_tensors(w, W, lambda nm, shape: ggml_type_for(nm, shape, preset), lazy)
    return w.write_stream(path) if lazy else w.write(path)


# --------------------------------------------------------------------------
# goldens
# --------------------------------------------------------------------------

def load_clips(out):
    """clip.wav = jfk 0.30-2.80 s (committed once); clip_min = its first 257
    samples (T_mel 2, T_enc 1: the shortest accepted input)."""
    path = os.path.join(out, "clip.wav")
    if not os.path.exists(path):
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        lc.write_wav16(path, jfk[4800:44800])
    x, _ = mel_ref.read_wav(path)
    return {"clip": x, "clip_min": x[:257]}


def goldens(cfg, vocab, path, tag, clips, out, log, first):
    """Goldens from the weights the file at path holds (tag "" for F32/F16, ".q8_0")."""
    kv, ts, W = read_weights(path)
    fb = W["frontend.mel_filterbank"].numpy()
    win = W["frontend.window"].numpy()
    m64 = Model(cfg, vocab, W, torch.float64)
    m32 = Model(cfg, vocab, W, torch.float32)
    for name, x in clips.items():
        mel = logmel(x, fb, win)
        r = m64.run(mel)
        stem = os.path.join(out, name + tag)
        if first:
            npsave(os.path.join(out, name + ".mel.npy"), mel)
            npsave(os.path.join(out, name + ".prompt.npy"), r["prompt"], np.int32)
        for k in ("pre", "block0", "enc", "proj", "logits0"):
            npsave("%s.%s.npy" % (stem, k), r[k])
        npsave(stem + ".tokens.npy", r["gen"], np.int32)
        with open(stem + ".text.txt", "w", encoding="utf-8") as f:
            f.write("status: %s\ntext: %s\nsegment_ms: 0 %d\n" % (r["status"], r["text"], x.size * 1000 // 16000))
        r32 = m32.run(mel.astype(np.float32))
        r32h = m32.run(mel.astype(np.float32), kv_f16=True)
        same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"]
        enc_err = float((r32["enc"].double() - r["enc"]).abs().max())
        proj_err = float((r32["proj"].double() - r["proj"]).abs().max())
        lg_err = float((r32["logits0"].double() - r["logits0"]).abs().max())
        lg_err_h = float((r32h["logits0"].double() - r["logits0"]).abs().max())
        # how much the audio rows matter to the prefill logits
        r0 = m64.run(mel, audio_override=torch.zeros_like(r["proj"]))
        aud = float((r0["logits0"] - r["logits0"]).abs().max())
        line = ("%-14s T_mel %4d T_enc %3d T_prompt %3d n_gen %3d %s min_margin %.3f |logits0|max %.2f "
                "audio->logits0 %.3f | f32: same_tokens=%s enc %.1e proj %.1e logits0 %.1e (F16 KV %.1e)"
                % (name + (tag or ".f32"), mel.shape[1], r["enc"].shape[0], len(r["prompt"]), len(r["gen"]),
                   r["status"], min(r["margins"]), float(r["logits0"].abs().max()), aud, same, enc_err, proj_err,
                   lg_err, lg_err_h))
        print(line)
        log.append(line)
        log.append("    text %r" % r["text"])
        assert same and r["status"] == "OK"
    return m64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default=None, help="comma list of F32,F16,Q8_0 (tiny: all three; real: F16,Q8_0)")
    ap.add_argument("--no-decode", action="store_true", help="real: skip the float32 reference decode")
    a = ap.parse_args()
    cfg = CONFIGS[a.config]
    tiny = a.config == "tiny"
    presets = a.dtypes.split(",") if a.dtypes else (["F32", "F16", "Q8_0"] if tiny else ["F16", "Q8_0"])
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    corpus = [TEXT] * 40 + [PROMPT_USER, "assistant\n", "\n"] * 60
    vocab = QwenVocab(cfg["vocab"], corpus, extra=[AUDIO_LOCATOR])
    print("vocab %d: %d merges, specials %s" % (vocab.V, len(vocab.merges), vocab.sid))
    for need in ("<|im_start|>", "<|im_end|>", "user", "assistant"):
        assert need in vocab.id, need
    chain = [vocab.id["Ċ"]] + vocab.chain_ids(TEXT) + [vocab.sid["<|im_end|>"]]
    fb, win = frontend_buffers()
    assert fb.shape == (128, 257)
    clips = load_clips(a.out) if tiny else None
    if not tiny:
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        clips = {"jfk": jfk}
    dt = torch.float64 if tiny else torch.float32
    cal = logmel(clips["clip" if tiny else "jfk"], fb, win)
    W = build_weights(cfg, vocab, cal, chain, dt)
    log = ["config %s seeds enc %d dec %d; prompt %s" % (a.config, cfg["enc_seed"], cfg["dec_seed"],
                                                         build_prompt(vocab, 1))]
    n_par = sum(int(np.prod(t.shape)) for k, t in W.items() if not k.startswith("frontend."))
    print("%d tensors, %d parameters" % (len(W), n_par))
    log.append("%d tensors, %d parameters" % (len(W), n_par))
    tag = "tiny" if tiny else "2.5b"
    for preset in presets:
        path = os.path.join(a.out, "canary-qwen-%s-ref-%s.gguf" % (tag, preset))
        size = write_gguf(path, cfg, vocab, W, preset, lazy=not tiny)
        print("wrote %s (%d bytes) %.1fs" % (os.path.basename(path), size, time.time() - t0))
        log.append("%s: %d bytes" % (os.path.basename(path), size))
        if tiny:
            _, ts = gw.read_gguf(path)
            check_tensors(ts, W, lambda nm, shape: ggml_type_for(nm, shape, preset))
    if tiny:
        goldens(cfg, vocab, os.path.join(a.out, "canary-qwen-tiny-ref-F32.gguf"), "", clips, a.out, log, True)
        # the F16 file holds the same values: its goldens are the F32 ones
        _, _, W16 = read_weights(os.path.join(a.out, "canary-qwen-tiny-ref-F16.gguf"))
        assert all(torch.equal(W16[k], W[k]) for k in W), "F16 file differs from F32"
        goldens(cfg, vocab, os.path.join(a.out, "canary-qwen-tiny-ref-Q8_0.gguf"), ".q8_0", clips, a.out, log,
                False)
        with open(os.path.join(a.out, "margins.txt"), "w") as f:
            f.write("\n".join(log) + "\n")
    elif not a.no_decode:
        m = Model(cfg, vocab, W, torch.float32)
        r = m.run(logmel(clips["jfk"], fb, win).astype(np.float32))
        line = "jfk: %s T_enc %d n_gen %d min_margin %.3f text %r" % (
            r["status"], r["enc"].shape[0], len(r["gen"]), min(r["margins"]), r["text"])
        print(line)
        with open(os.path.join(a.out, "decode.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(log + [line]) + "\n")
    print("done %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
