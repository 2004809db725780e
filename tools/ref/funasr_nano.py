#!/usr/bin/python3
"""Fun-ASR-Nano reference (PyTorch, float64) + random-weight GGUF writer + goldens.

Written from docs/formats/funasr_nano.md (and the pages it refers to:
docs/formats/sensevoice.md §4-5 for the Kaldi fbank + LFR front end and the
SAN-M blocks, docs/formats/causal-lm.md for the Qwen3 blocks and the greedy
loop, docs/formats/qwen3_asr.md §4 for the Qwen2 byte-level BPE),
independently of the C code. Pieces (sections of docs/formats/funasr_nano.md):

* §4 front end = sensevoice.py fbank + LFR 7/6, **no CMVN**.
* §5.1 encoder = sensevoice.py SAN-M blocks without prefix rows
  (x = X·sqrt(d) + PE at positions 1..T_lfr, encoders0.0 without residual,
  after_norm, tp blocks, tp_norm; LayerNorm eps 1e-12).
* §5.2 adaptor: relu(linear1) -> linear2, then 2 pre-LN transformer blocks
  (bidirectional MHA with biases, ReLU FFN), no final norm.
* §6.1 T_audio = ceil(T_lfr/8) with use_low_frame_rate (the first T_audio
  adaptor rows), else T_lfr; §6.2 prompt (system turn, "语音转写" + optional
  "成<lang>" + the ITN suffix "，不进行文本规整" unless ITN is ON, "："),
  segments BPE-encoded separately, placeholders id 0, concat injection;
  §6.3 LM = causal_lm.py (Qwen3, tied head; GGUF names dec.layers.N);
  §6.4 greedy loop (256 tokens incl. prefill token and EOS); §6.5 text.
* GGUF writer in the published schema (§2 keys with their types, §3 tensor
  order and dtypes for F32 / F16 / Q8_0; encoders0.0 qkv (ne[0] 560) F16 in
  Q8_0); every file is read back and its goldens come from its own weights.

The Qwen2 vocabulary and the successor-chain LM come from canary_qwen.py.

usage:
  funasr_nano.py --config tiny --out tests/data/funasr_nano
  funasr_nano.py --config real --out build-ref/funasr-nano --dtypes F16
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
import canary_qwen as cq  # noqa: E402
import causal_lm as clm  # noqa: E402
import gguf_writer as gw  # noqa: E402
import llm_common as lc  # noqa: E402
import mel_ref  # noqa: E402
import sensevoice as sv  # noqa: E402

torch.set_default_dtype(torch.float64)
ROOT = cq.ROOT

CONFIGS = {
    "tiny": dict(n_blocks=2, tp_blocks=1, d_model=32, n_heads=4, d_ff=64, kernel=11, n_mels=80, lfr_m=7, lfr_n=6,
                 ad_blocks=2, ad_heads=4, ad_head_dim=16, pre_ffn=128, block_ffn=32,
                 dec_layers=2, hidden=64, inter=128, heads=4, kv_heads=2, head_dim=16,
                 vocab=1024, max_pos=40960, size_label="tiny", enc_seed=41, ad_seed=42, dec_seed=43),
    "real": dict(n_blocks=50, tp_blocks=20, d_model=512, n_heads=4, d_ff=2048, kernel=11, n_mels=80, lfr_m=7,
                 lfr_n=6, ad_blocks=2, ad_heads=8, ad_head_dim=128, pre_ffn=2048, block_ffn=256,
                 dec_layers=28, hidden=1024, inter=3072, heads=16, kv_heads=8, head_dim=128,
                 vocab=cq.REAL_VOCAB, max_pos=40960, size_label="0.8B", enc_seed=41, ad_seed=42, dec_seed=43),
}
VARIANTS = {  # docs/formats/funasr_nano.md §1, §2.1, §2.4
    "nano": dict(variant="fun-asr-nano-2512", name="Fun-ASR Nano", low_frame_rate=True, languages=["zh", "en", "ja"]),
    "mlt": dict(variant="fun-asr-mlt-nano-2512", name="Fun-ASR Nano Multilingual", low_frame_rate=False,
                languages="zh en yue ja ko vi id th ms tl ar hi bg hr cs da nl et fi el hu ga lv lt mt pl pt ro sk sl "
                          "sv".split()),
}

TEXT = "And so my fellow Americans, ask not what your country can do for you. 开饭时间早上九点"
SYSTEM = "system\nYou are a helpful assistant."
ITN_SUFFIX = "，不进行文本规整"
LN_EPS = 1e-12

f16r = lc.f16r
npsave = lc.npsave


# --------------------------------------------------------------------------
# front end, encoder, adaptor (docs/formats/funasr_nano.md §4, §5.1, §5.2)
# --------------------------------------------------------------------------

def features(x):
    """Kaldi fbank + LFR without CMVN: [T_lfr, 560]."""
    if x.size < 400:
        raise ValueError("INVALID_ARG: fewer than 400 samples")
    return sv.lfr(sv.fbank(x))


def sanm(y, W, p, d, H, k):
    """docs/formats/sensevoice.md §5.3 SAN-M attention (sensevoice.sanm, dtype-generic
    so the float32 re-run stays in float32): MHA + FSMN memory of v."""
    qkv = y @ W[p + ".attn.qkv.weight"].T + W[p + ".attn.qkv.bias"]
    q, kk, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
    T, pad, hd = y.shape[0], (k - 1) // 2, d // H
    vp = torch.nn.functional.pad(v, (0, 0, pad, pad))
    wf = W[p + ".attn.fsmn.weight"][:, 0, :]  # (d, k)
    f = v.clone()
    for j in range(k):
        f = f + wf[:, j] * vp[j:j + T]
    a = torch.softmax(torch.einsum("qhd,khd->hqk", q.view(T, H, hd), kk.view(T, H, hd)) / math.sqrt(hd), dim=-1)
    o = torch.einsum("hqk,khd->qhd", a, v.view(T, H, hd)).reshape(T, d)
    return o @ W[p + ".attn.out.weight"].T + W[p + ".attn.out.bias"] + f


def block(x, W, p, cfg, residual):
    """docs/formats/sensevoice.md §5.2 pre-LN SAN-M block (the first one without residual)."""
    lnw = lambda t, n: ln(t, W, p + n)
    a = sanm(lnw(x, ".norm_attn"), W, p, cfg["d_model"], cfg["n_heads"], cfg["kernel"])
    x = x + a if residual else a
    y = torch.relu(lnw(x, ".norm_ffn") @ W[p + ".ffn.fc1.weight"].T + W[p + ".ffn.fc1.bias"])
    return x + (y @ W[p + ".ffn.fc2.weight"].T + W[p + ".ffn.fc2.bias"])


def encoder(feats, W, cfg, taps=None):
    feats = torch.as_tensor(feats).to(W["enc.tp_norm.weight"].dtype)
    pe = sv.sinusoid(feats.shape[0], feats.shape[1]).to(torch.float32).to(feats.dtype)
    x = feats * math.sqrt(cfg["d_model"]) + pe
    main, tp = sv.block_names(cfg)
    for i, p in enumerate(main):
        x = block(x, W, p, cfg, residual=(i > 0))
        if taps is not None and i == 0:
            taps["encoders0"] = x
    x = ln(x, W, "enc.after_norm")
    for p in tp:
        x = block(x, W, p, cfg, residual=True)
    return ln(x, W, "enc.tp_norm")


def ln(x, W, p):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), W[p + ".weight"], W[p + ".bias"], eps=LN_EPS)


def adaptor(x, W, cfg):
    lin = lambda t, p: t @ W[p + ".weight"].T + W[p + ".bias"]
    h = lin(torch.relu(lin(x, "adaptor.linear1")), "adaptor.linear2")
    nh, hd = cfg["ad_heads"], cfg["ad_head_dim"]
    T = h.shape[0]
    for b in range(cfg["ad_blocks"]):
        p = "adaptor.blocks.%d." % b
        y = ln(h, W, p + "norm_attn")
        q = lin(y, p + "attn.q").view(T, nh, hd)
        k = lin(y, p + "attn.k").view(T, nh, hd)
        v = lin(y, p + "attn.v").view(T, nh, hd)
        a = torch.softmax(torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd), dim=-1)
        o = torch.einsum("hqk,khd->qhd", a, v).reshape(T, nh * hd)
        h = h + lin(o, p + "attn.out")
        z = ln(h, W, p + "norm_ffn")
        h = h + lin(torch.relu(lin(z, p + "ffn.fc1")), p + "ffn.fc2")
    return h


def t_audio_of(T_lfr, low_frame_rate):
    """docs/formats/funasr_nano.md §6.1."""
    if not low_frame_rate:
        return T_lfr
    o1 = 1 + (T_lfr - 1) // 2
    o2 = 1 + (o1 - 1) // 2
    return (o2 - 1) // 2 + 1


# --------------------------------------------------------------------------
# prompt (docs/formats/funasr_nano.md §6.2) and model
# --------------------------------------------------------------------------

def prompt_text(lang=None, itn=False):
    P = "语音转写" if not lang else "语音转写成" + lang
    if not itn:
        P += ITN_SUFFIX
    return P + "："


def build_prompt(vocab, lang=None, itn=False):
    """(prefix ids, suffix ids); the T_audio placeholders (id 0) go between."""
    s = vocab.sid
    prefix = [s["<|im_start|>"]] + vocab.encode(SYSTEM) + [s["<|im_end|>"]] + vocab.encode("\n") + \
        [s["<|im_start|>"]] + vocab.encode("user\n" + prompt_text(lang, itn))
    suffix = [s["<|im_end|>"]] + vocab.encode("\n") + [s["<|im_start|>"]] + vocab.encode("assistant\n")
    return prefix, suffix


def lm_names_to_gguf(name):
    return name.replace("dec.blocks.", "dec.layers.")


def lm_names_from_gguf(name):
    return name.replace("dec.layers.", "dec.blocks.")


class Model:
    def __init__(self, cfg, vocab, W, low_frame_rate, languages, dt=torch.float64):
        self.cfg, self.vocab, self.lfr_flag, self.languages = cfg, vocab, low_frame_rate, languages
        self.W = {k: v.to(dt) for k, v in W.items() if not k.startswith("dec.")}
        self.lm = clm.CausalLM(cq.lm_config(cfg), {lm_names_from_gguf(k): v for k, v in W.items()
                                                    if k.startswith("dec.")}, dtype=dt)
        self.eos = vocab.sid["<|im_end|>"]

    def run(self, feats, lang=None, itn=False, kv_f16=False, n_ctx=0, audio_override=None):
        if lang is not None and lang not in self.languages:
            return dict(status="UNSUPPORTED_LANGUAGE")
        taps = {}
        enc = encoder(feats, self.W, self.cfg, taps)
        ad = adaptor(enc, self.W, self.cfg)
        T_audio = t_audio_of(enc.shape[0], self.lfr_flag)
        audio = ad[:T_audio] if audio_override is None else audio_override
        prefix, suffix = build_prompt(self.vocab, lang, itn)
        ids = prefix + [0] * T_audio + suffix
        r = dict(encoders0=taps["encoders0"], enc=enc, adaptor=ad, audio=audio, prompt=ids,
                 prefix_len=len(prefix), status=cq.input_gate(len(ids), self.cfg["max_pos"], n_ctx))
        if r["status"] != "OK":
            return r
        x = torch.cat([self.lm.embed(prefix), audio.to(self.lm.dtype), self.lm.embed(suffix)], 0)
        gen, margins, logits0, trunc = clm.greedy(self.lm, x, self.eos, max_new=256, kv_f16=kv_f16)
        ids_out = gen[:-1] if gen and gen[-1] == self.eos else list(gen)
        r.update(gen=gen, margins=margins, logits0=logits0, text=self.vocab.decode(ids_out),
                 status="OUTPUT_TRUNCATED" if trunc else "OK")
        return r


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------

def enc_tensor_order(cfg):
    main, tp = sv.block_names(cfg)
    per = [".attn.qkv.weight", ".attn.qkv.bias", ".attn.out.weight", ".attn.out.bias", ".attn.fsmn.weight",
           ".ffn.fc1.weight", ".ffn.fc1.bias", ".ffn.fc2.weight", ".ffn.fc2.bias", ".norm_attn.weight",
           ".norm_attn.bias", ".norm_ffn.weight", ".norm_ffn.bias"]
    names = []
    for p in main:
        names += [p + s for s in per]
    names += ["enc.after_norm.weight", "enc.after_norm.bias"]
    for p in tp:
        names += [p + s for s in per]
    return names + ["enc.tp_norm.weight", "enc.tp_norm.bias"]


AD_BLOCK = ["attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.k.bias", "attn.v.weight", "attn.v.bias",
            "attn.out.weight", "attn.out.bias", "ffn.fc1.weight", "ffn.fc1.bias", "ffn.fc2.weight", "ffn.fc2.bias",
            "norm_attn.weight", "norm_attn.bias", "norm_ffn.weight", "norm_ffn.bias"]
LM_LAYER = ["norm_attn", "norm_ffn", "attn.q", "attn.k", "attn.v", "attn.o", "attn.q_norm", "attn.k_norm",
            "ffn.gate", "ffn.up", "ffn.down"]


def tensor_count(cfg):
    return 13 * (cfg["n_blocks"] + cfg["tp_blocks"]) + 4 + 4 + 16 * cfg["ad_blocks"] + 2 + 11 * cfg["dec_layers"]


def is_f32_class(name):
    """docs/formats/funasr_nano.md §3 dtypes: biases, LayerNorm / RMSNorm weights and FSMN kernels stay F32."""
    return name.endswith((".bias", "norm.weight", "norm_attn.weight", "norm_ffn.weight", "attn.fsmn.weight"))


def ggml_type_for(name, shape, preset):
    if preset == "F32" or is_f32_class(name):
        return gw.GGML_F32
    if preset == "F16":
        return gw.GGML_F16
    return gw.GGML_Q8_0 if shape[-1] % 32 == 0 else gw.GGML_F16


def build_weights(cfg, vocab, feats_cal, chain, dt):
    t0 = time.time()
    g = torch.Generator().manual_seed(cfg["enc_seed"])
    Wsv = sv.random_weights(cfg, 2, g)  # SenseVoice block set; its CMVN / embed / CTC tensors are dropped
    W = OrderedDict((n, Wsv[n].to(dt)) for n in enc_tensor_order(cfg))
    del Wsv
    enc = encoder(feats_cal, W, cfg)
    g = torch.Generator().manual_seed(cfg["ad_seed"])
    r = lambda *s: torch.randn(*s, generator=g, dtype=dt)
    d, A, Fp, Fb = cfg["d_model"], cfg["hidden"], cfg["pre_ffn"], cfg["block_ffn"]
    assert cfg["ad_heads"] * cfg["ad_head_dim"] == A
    W["adaptor.linear1.weight"] = f16r(r(Fp, d) / math.sqrt(d))
    W["adaptor.linear1.bias"] = 0.1 * r(Fp)
    W["adaptor.linear2.weight"] = f16r(r(A, Fp) / math.sqrt(Fp / 2))
    W["adaptor.linear2.bias"] = 0.1 * r(A)
    for b in range(cfg["ad_blocks"]):
        p = "adaptor.blocks.%d." % b
        for n in "qkvo":
            nm = "attn.out" if n == "o" else "attn." + n
            W[p + nm + ".weight"] = f16r(r(A, A) / math.sqrt(A) * (1.5 if n in "qk" else 0.5))
            W[p + nm + ".bias"] = 0.1 * r(A)
        W[p + "ffn.fc1.weight"] = f16r(r(Fb, A) / math.sqrt(A))
        W[p + "ffn.fc1.bias"] = 0.1 * r(Fb)
        W[p + "ffn.fc2.weight"] = f16r(r(A, Fb) / math.sqrt(Fb / 2) * 0.5)
        W[p + "ffn.fc2.bias"] = 0.1 * r(A)
        for nm in ("norm_attn", "norm_ffn"):
            W[p + nm + ".weight"] = 1 + 0.1 * r(A)
            W[p + nm + ".bias"] = 0.1 * r(A)
    # reserved dim 0 (the LM's constant channel) = κ exactly in every audio
    # row; then everything that writes the adaptor output is scaled so the
    # rows have unit norm (LayerNorms make the output linear in that scale)
    writers = ["adaptor.linear2"] + ["adaptor.blocks.%d.%s" % (b, s) for b in range(cfg["ad_blocks"])
                                     for s in ("attn.out", "ffn.fc2")]
    for p in writers:
        W[p + ".weight"][cq.D_CONST] = 0
        W[p + ".bias"][cq.D_CONST] = 0
    ad = adaptor(enc, W, cfg)
    s = float(ad[:, cq.N_RESERVED:].norm(dim=1).mean())
    for p in writers:
        W[p + ".weight"] = f16r(W[p + ".weight"] / s)
        W[p + ".bias"] = W[p + ".bias"] / s
    W["adaptor.linear2.bias"][cq.D_CONST] = lc.KAPPA
    print("encoder + adaptor built, audio scale %.3f, %.1fs" % (s, time.time() - t0))
    Wd = cq.chain_lm_weights(cfg, chain, torch.Generator().manual_seed(cfg["dec_seed"]), dt)
    W["dec.token_embd.weight"] = Wd["dec.token_embd.weight"]
    W["dec.output_norm.weight"] = Wd["dec.output_norm.weight"]
    for l in range(cfg["dec_layers"]):
        for s_ in LM_LAYER:
            W["dec.layers.%d.%s.weight" % (l, s_)] = Wd["dec.blocks.%d.%s.weight" % (l, s_)]
    for k in W:  # every stored value a float32 value
        W[k] = W[k].float().to(dt)
    assert len(W) == tensor_count(cfg), (len(W), tensor_count(cfg))
    return W


# --------------------------------------------------------------------------
# GGUF (docs/formats/funasr_nano.md §2, §3)
# --------------------------------------------------------------------------

def write_gguf(path, cfg, vocab, W, preset, var, lazy=False):
    v = VARIANTS[var]
    w = gw.GGUFWriter()
    w.add_string("general.architecture", "funasr_nano")
    w.add_string("general.name", v["name"] + " (random reference weights)")
    w.add_string("general.basename", v["variant"].rsplit("-", 1)[0])
    w.add_string("general.version", "2512")
    w.add_string("general.size_label", cfg["size_label"])
    w.add_string("general.author", "transcribe tools/ref/funasr_nano.py")
    w.add_string("general.license", "apache-2.0")
    if preset == "F32":
        w.add_uint32("general.file_type", 0)
    w.add_array("general.languages", v["languages"], gw.STRING)
    w.add_array("general.tags", ["asr", "speech-recognition", "audio-llm", "FunASRNano", "SenseVoiceEncoderSmall",
                                 "Qwen3-0.6B"], gw.STRING)
    w.add_string("stt.variant", v["variant"])
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "qwen2")
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.sid["<|im_end|>"])
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.sid["<|endoftext|>"])
    e = "stt.funasr_nano.encoder."
    for k, val in (("n_blocks", cfg["n_blocks"]), ("tp_blocks", cfg["tp_blocks"]), ("d_model", cfg["d_model"]),
                   ("d_input", cfg["n_mels"] * cfg["lfr_m"]), ("n_heads", cfg["n_heads"]), ("d_ff", cfg["d_ff"]),
                   ("kernel_size", cfg["kernel"]), ("sanm_shift", 0)):
        w.add_uint32(e + k, val)
    w.add_string(e + "attention_type", "sanm")
    w.add_bool(e + "normalize_before", True)
    a = "stt.funasr_nano.adaptor."
    for k, val in (("n_blocks", cfg["ad_blocks"]), ("encoder_dim", cfg["d_model"]), ("llm_dim", cfg["hidden"]),
                   ("pre_ffn_dim", cfg["pre_ffn"]), ("block_ffn_dim", cfg["block_ffn"]),
                   ("n_heads", cfg["ad_heads"]), ("d_head", cfg["ad_head_dim"])):
        w.add_uint32(a + k, val)
    w.add_float32(a + "layer_norm_eps", LN_EPS)
    w.add_string(a + "activation", "relu")
    w.add_uint32(a + "downsample_rate", 1)
    w.add_bool(a + "use_low_frame_rate", v["low_frame_rate"])
    d = "stt.funasr_nano.decoder."
    for k, val in (("n_layers", cfg["dec_layers"]), ("hidden_size", cfg["hidden"]),
                   ("intermediate_size", cfg["inter"]), ("n_heads", cfg["heads"]), ("n_kv_heads", cfg["kv_heads"]),
                   ("head_dim", cfg["head_dim"]), ("vocab_size", cfg["vocab"]),
                   ("max_position_embeddings", cfg["max_pos"])):
        w.add_uint32(d + k, val)
    w.add_float32(d + "rms_norm_eps", 1e-6)
    w.add_float32(d + "rope_theta", 1e6)
    w.add_bool(d + "tie_word_embeddings", True)
    w.add_string(d + "activation", "silu")
    f = "stt.frontend."
    w.add_string(f + "type", "kaldi_fbank_lfr")
    for k, val in (("num_mels", cfg["n_mels"]), ("sample_rate", 16000), ("n_fft", 400), ("win_length", 400),
                   ("hop_length", 160)):
        w.add_uint32(f + k, val)
    w.add_string(f + "window", "hamming")
    w.add_string(f + "normalize", "none")
    w.add_float32(f + "dither", 0.0)
    w.add_bool(f + "upscale_samples", True)
    w.add_bool(f + "snip_edges", True)
    w.add_uint32(f + "lfr_m", cfg["lfr_m"])
    w.add_uint32(f + "lfr_n", cfg["lfr_n"])
    w.add_string(f + "fbank_style", "kaldi_htk")
    w.add_bool(f + "apply_cmvn", False)
    if preset != "F32":
        w.add_uint32("general.file_type", lc.FILE_TYPE[preset])  # derived files: last scalar (docs/formats/funasr_nano.md §2)
    w.add_array("tokenizer.ggml.tokens", vocab.tokens, gw.STRING)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_array("tokenizer.ggml.merges", vocab.merges, gw.STRING)
    cq.add_tensors(w, W, lambda nm, shape: ggml_type_for(nm, shape, preset), lazy)
    return w.write_stream(path) if lazy else w.write(path)


# --------------------------------------------------------------------------
# goldens
# --------------------------------------------------------------------------

# (stem, language hint, ITN on)
RUNS = [("auto", None, False), ("en", "en", False), ("itn", None, True), ("ja_itn", "ja", True)]


def load_clips(out):
    """clip.wav = jfk 0.30-2.80 s (committed once); clip_min = its first 400
    samples (one fbank frame: T_lfr 1, T_audio 1)."""
    path = os.path.join(out, "clip.wav")
    if not os.path.exists(path):
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        lc.write_wav16(path, jfk[4800:44800])
    x, _ = mel_ref.read_wav(path)
    return {"clip": x, "clip_min": x[:400]}


def goldens(cfg, vocab, path, var, tag, clips, out, log, runs, first):
    _, ts, W = cq.read_weights(path)
    v = VARIANTS[var]
    m64 = Model(cfg, vocab, W, v["low_frame_rate"], v["languages"], torch.float64)
    m32 = Model(cfg, vocab, W, v["low_frame_rate"], v["languages"], torch.float32)
    for name, x in clips.items():
        feats = features(x)
        if first:
            npsave(os.path.join(out, name + ".feats.npy"), feats)
        for stem, lang, itn in runs:
            r = m64.run(feats, lang, itn)
            base = os.path.join(out, "%s%s" % (name, tag))
            if stem == runs[0][0]:
                for k in ("encoders0", "enc", "adaptor", "audio"):
                    npsave("%s.%s.npy" % (base, k), r[k])
            base += "." + stem
            npsave(base + ".prompt.npy", r["prompt"], np.int32)
            npsave(base + ".logits0.npy", r["logits0"])
            npsave(base + ".tokens.npy", r["gen"], np.int32)
            with open(base + ".text.txt", "w", encoding="utf-8") as f:
                f.write("status: %s\nprefix_len: %d\ntext: %s\nsegment_ms: 0 %d\n"
                        % (r["status"], r["prefix_len"], r["text"], x.size * 1000 // 16000))
            r32 = m32.run(feats.astype(np.float32), lang, itn)
            r32h = m32.run(feats.astype(np.float32), lang, itn, kv_f16=True)
            same = r32["gen"] == r["gen"] and r32h["gen"] == r["gen"]
            enc_err = float((r32["enc"].double() - r["enc"]).abs().max())
            ad_err = float((r32["adaptor"].double() - r["adaptor"]).abs().max())
            lg_err = float((r32["logits0"].double() - r["logits0"]).abs().max())
            lg_err_h = float((r32h["logits0"].double() - r["logits0"]).abs().max())
            r0 = m64.run(feats, lang, itn, audio_override=torch.zeros_like(r["audio"]))
            aud = float((r0["logits0"] - r["logits0"]).abs().max())
            line = ("%-22s T_lfr %3d T_audio %3d T_prompt %3d (prefix %2d) n_gen %3d %s min_margin %.3f "
                    "|logits0|max %.2f audio->logits0 %.3f | f32: same_tokens=%s enc %.1e adaptor %.1e logits0 %.1e "
                    "(F16 KV %.1e)" % (name + (tag or "") + "." + stem, feats.shape[0], r["audio"].shape[0],
                                       len(r["prompt"]), r["prefix_len"], len(r["gen"]), r["status"],
                                       min(r["margins"]), float(r["logits0"].abs().max()), aud, same, enc_err,
                                       ad_err, lg_err, lg_err_h))
            print(line)
            log.append(line)
            assert same and r["status"] == "OK"
        log.append("    text %r" % r["text"])
    assert m64.run(features(clips["clip"]), "de")["status"] == "UNSUPPORTED_LANGUAGE"


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
    corpus = [TEXT] * 40 + [SYSTEM, "user\n", "assistant\n", "\n"] * 60
    corpus += ["user\n" + prompt_text(l, i) for l in (None, "en", "zh", "ja") for i in (False, True)] * 30
    vocab = cq.QwenVocab(cfg["vocab"], corpus)
    print("vocab %d: %d merges, specials %s" % (vocab.V, len(vocab.merges), vocab.sid))
    for need in ("<|im_start|>", "<|im_end|>", "Ċ", "system", "user", "assistant"):
        assert need in vocab.id, need
    chain = [vocab.id["Ċ"]] + vocab.chain_ids(TEXT) + [vocab.sid["<|im_end|>"]]
    if tiny:
        clips = load_clips(a.out)
    else:
        jfk, _ = mel_ref.read_wav(os.path.join(ROOT, "samples", "jfk.wav"))
        clips = {"jfk": jfk}
    dt = torch.float64 if tiny else torch.float32
    cal = features(clips["clip" if tiny else "jfk"])
    W = build_weights(cfg, vocab, cal, chain, dt)
    n_par = sum(int(np.prod(t.shape)) for t in W.values())
    log = ["config %s seeds enc %d adaptor %d dec %d; %d tensors, %d parameters"
           % (a.config, cfg["enc_seed"], cfg["ad_seed"], cfg["dec_seed"], len(W), n_par)]
    print(log[0])
    tag = "tiny" if tiny else "2512"
    files = [("nano", p) for p in presets] + ([("mlt", "F16")] if tiny else [])
    for var, preset in files:
        path = os.path.join(a.out, "%s-%s-ref-%s.gguf" % (VARIANTS[var]["variant"].rsplit("-", 1)[0], tag, preset))
        size = write_gguf(path, cfg, vocab, W, preset, var, lazy=not tiny)
        print("wrote %s (%d bytes) %.1fs" % (os.path.basename(path), size, time.time() - t0))
        log.append("%s: %d bytes" % (os.path.basename(path), size))
        if tiny:
            _, ts = gw.read_gguf(path)
            cq.check_tensors(ts, W, lambda nm, shape: ggml_type_for(nm, shape, preset))
    if tiny:
        d = a.out
        goldens(cfg, vocab, os.path.join(d, "fun-asr-nano-tiny-ref-F32.gguf"), "nano", "", clips, d, log, RUNS, True)
        _, _, W16 = cq.read_weights(os.path.join(d, "fun-asr-nano-tiny-ref-F16.gguf"))
        assert all(torch.equal(W16[k], W[k]) for k in W), "F16 file differs from F32"
        goldens(cfg, vocab, os.path.join(d, "fun-asr-nano-tiny-ref-Q8_0.gguf"), "nano", ".q8_0", clips, d, log,
                RUNS[:1], False)
        goldens(cfg, vocab, os.path.join(d, "fun-asr-mlt-nano-tiny-ref-F16.gguf"), "mlt", ".mlt", clips, d, log,
                RUNS[:2], False)
        with open(os.path.join(d, "margins.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(log) + "\n")
    elif not a.no_decode:
        v = VARIANTS["nano"]
        m = Model(cfg, vocab, W, v["low_frame_rate"], v["languages"], torch.float32)
        r = m.run(features(clips["jfk"]).astype(np.float32))
        line = "jfk: %s T_audio %d n_gen %d min_margin %.3f text %r" % (
            r["status"], r["audio"].shape[0], len(r["gen"]), min(r["margins"]), r["text"])
        print(line)
        with open(os.path.join(a.out, "decode.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(log + [line]) + "\n")
    print("done %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
