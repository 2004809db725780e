#!/usr/bin/python3
"""Independent PyTorch/numpy reference of the Parakeet family (transcribe.cpp
0.2.1 file schema), written from docs/formats/parakeet.md and docs/formats/gguf.md, not
from the C sources.

It builds random-weight Parakeet models (FastConformer encoder from
fastconformer.py + CTC head, or LSTM predictor + joint for RNN-T / TDT),
writes them as GGUF in the published schema (F32, and F16 per the section
4.5 F16 column), and dumps golden tensors and greedy decodes:

    /usr/bin/python3 tools/ref/parakeet.py --config tiny-tdt --out tests/data/parakeet/tiny-tdt --legacy
    /usr/bin/python3 tools/ref/parakeet.py --config tdt-0.6b-v2 --out build-ref/parakeet-tdt-0.6b-v2

Pipeline (float64): mel (mel_ref.nemo_logmel, section 6) -> encoder
(section 7) -> greedy CTC / RNN-T / TDT (section 8) -> tokens, times, words,
segment and text (section 9). See tests/data/parakeet/README.md.
"""

import argparse
import io
import math
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
import mel_ref  # noqa: E402
from fastconformer import FastConformerEncoder, FCConfig, t_enc_of  # noqa: E402

torch.set_num_threads(1)

SUBSAMPLING = 8  # the published models; set_subsampling() for a config's own
HOP, SR = 160, 16000
FRAME_MS = 1000.0 * SUBSAMPLING * HOP / SR  # 80 ms, section 9


def set_subsampling(factor):
    """An encoder frame spans `factor` hops (sec. 9: 80 ms at 8; 20 ms at 2)."""
    global SUBSAMPLING, FRAME_MS
    SUBSAMPLING = factor
    FRAME_MS = 1000.0 * SUBSAMPLING * HOP / SR

# ----------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------


@dataclass
class PKConfig:
    enc: FCConfig
    head: str  # "ctc" | "rnnt" | "tdt"
    vocab: int  # V, SentencePiece pieces without blank
    tok_text: str  # "lower" (letters, apostrophe) | "cased" (with punctuation)
    pred_hidden: int = 0
    pred_layers: int = 0
    joint_hidden: int = 0
    joint_act: str = "relu"
    durations: list = field(default_factory=list)
    max_symbols: int = 10
    variant: str = ""
    size_label: str = "tiny"
    seed: int = 1  # encoder weights
    head_seed: int = 100  # predictor / joint / CTC weights (searched)
    audio: tuple = ("jfk",)
    target_rate: float = 0.35  # fraction of encoder frames that emit (jfk)
    knobs: dict = field(default_factory=dict)  # HEAD_KNOBS overrides
    # unified-en style (sec. 3.3, 7.8): chunked_limited_with_rc with the
    # buffered-streaming menus (left, chunk, right), encoder frames each
    chunk_menus: tuple = ()
    buffered: tuple = ()  # (L, C, R) choices whose buffered tokens are stored


CONFIGS = {
    "tiny-ctc": PKConfig(
        enc=FCConfig(n_layers=2, d_model=64, n_heads=4, d_ff=128, conv_kernel=9, sub_channels=16, n_mels=80,
                     use_bias=True, xscaling=True),
        head="ctc", vocab=128, tok_text="lower", variant="tiny-ctc", audio=("jfk", "whole-earth")),
    "tiny-rnnt": PKConfig(
        enc=FCConfig(n_layers=2, d_model=64, n_heads=2, d_ff=128, conv_kernel=7, sub_channels=24, n_mels=80,
                     use_bias=True, xscaling=False, att_left=8, att_right=8),
        head="rnnt", vocab=192, tok_text="lower", pred_hidden=48, pred_layers=1, joint_hidden=64, joint_act="tanh",
        variant="tiny-rnnt", seed=2, head_seed=200, target_rate=0.3, knobs=dict(pred_gain=1.0, out_noise=1.0)),
    "tiny-tdt": PKConfig(
        enc=FCConfig(n_layers=2, d_model=64, n_heads=2, d_ff=96, conv_kernel=9, sub_channels=24, n_mels=128,
                     use_bias=False, xscaling=False),
        head="tdt", vocab=256, tok_text="cased", pred_hidden=48, pred_layers=2, joint_hidden=64, joint_act="relu",
        durations=[0, 1, 2, 3, 4], max_symbols=10, variant="tiny-tdt", seed=3, head_seed=300, target_rate=0.4,
        audio=("jfk", "whole-earth")),
    "tiny-unified": PKConfig(
        enc=FCConfig(n_layers=2, d_model=64, n_heads=2, d_ff=128, conv_kernel=9, sub_channels=16, n_mels=80,
                     use_bias=True, xscaling=True),
        head="rnnt", vocab=192, tok_text="lower", pred_hidden=48, pred_layers=1, joint_hidden=64, joint_act="tanh",
        variant="unified-en-tiny", seed=5, head_seed=500, target_rate=0.3, knobs=dict(pred_gain=1.0, out_noise=1.0),
        chunk_menus=([6, 4], [1, 3], [0, 2]), buffered=((6, 3, 2), (4, 3, 0), (6, 1, 2), (4, 1, 0))),
    # other subsampling factors (NeMo builds 2, 4, 8, 16; the published
    # models use 8): small CTC models, jfk only
    "tiny-ctc-sub2": PKConfig(
        enc=FCConfig(n_layers=2, d_model=32, n_heads=2, d_ff=64, conv_kernel=9, sub_channels=8, n_mels=80,
                     use_bias=True, xscaling=True, sub_factor=2),
        head="ctc", vocab=128, tok_text="lower", variant="tiny-ctc-sub2", seed=6, head_seed=600),
    "tiny-ctc-sub4": PKConfig(
        enc=FCConfig(n_layers=2, d_model=32, n_heads=2, d_ff=64, conv_kernel=9, sub_channels=8, n_mels=80,
                     use_bias=True, xscaling=True, sub_factor=4),
        head="ctc", vocab=128, tok_text="lower", variant="tiny-ctc-sub4", seed=7, head_seed=700),
    "tdt-0.6b-v2": PKConfig(
        enc=FCConfig(n_layers=24, d_model=1024, n_heads=8, d_ff=4096, conv_kernel=9, sub_channels=256, n_mels=128,
                     use_bias=False, xscaling=False),
        head="tdt", vocab=1024, tok_text="cased", pred_hidden=640, pred_layers=2, joint_hidden=640,
        joint_act="relu", durations=[0, 1, 2, 3, 4], max_symbols=10, variant="tdt-0.6b-v2", size_label="0.6B",
        seed=4, head_seed=400),
}

# ----------------------------------------------------------------------------
# Tokenizer: a small SentencePiece BPE model trained on English text
# ----------------------------------------------------------------------------

TOKENIZER_DIR = os.path.join(REPO, "tests", "data", "parakeet")
CORPUS = "/usr/share/common-licenses"  # plain English prose present on every Debian system


def _corpus_lines(style):
    lines = []
    for name in sorted(os.listdir(CORPUS)):
        p = os.path.join(CORPUS, name)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        for ln in open(p, encoding="utf-8", errors="ignore"):
            if style == "lower":
                ln = re.sub(r"[^a-z' ]+", " ", ln.lower())
            else:
                ln = re.sub(r"[^A-Za-z0-9.,;:'?!\-() ]+", " ", ln)
            ln = re.sub(r" +", " ", ln).strip()
            if len(ln) > 3:
                lines.append(ln)
    return lines


def load_tokenizer(cfg):
    """The committed model tests/data/parakeet/tokenizer-<V>-<style>.model is
    reused when present (so regeneration does not depend on the corpus);
    otherwise it is trained (BPE, single thread, deterministic)."""
    import sentencepiece as spm

    path = os.path.join(TOKENIZER_DIR, "tokenizer-%d-%s.model" % (cfg.vocab, cfg.tok_text))
    if not os.path.exists(path):
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(_corpus_lines(cfg.tok_text)), model_writer=buf, model_type="bpe",
            vocab_size=cfg.vocab, character_coverage=1.0, num_threads=1, shuffle_input_sentence=False,
            input_sentence_size=0, byte_fallback=False, normalization_rule_name="identity", minloglevel=2)
        os.makedirs(TOKENIZER_DIR, exist_ok=True)
        with open(path, "wb") as f:
            f.write(buf.getvalue())
    sp = spm.SentencePieceProcessor(model_file=path)
    assert sp.get_piece_size() == cfg.vocab
    return sp


LANG_TAG = re.compile(r"^<[a-z]{2,3}-[A-Za-z]{2,4}>$")
NORMAL, UNKNOWN, CONTROL, UNUSED, BYTE = 1, 2, 3, 5, 6


class Vocab:
    """pieces 0..V-1 then "<blank>" at V, with scores and token types (section 5)."""

    def __init__(self, sp):
        V = sp.get_piece_size()
        self.pieces, self.scores, self.types = [], [], []
        for i in range(V):
            self.pieces.append(sp.id_to_piece(i))
            self.scores.append(float(np.float32(sp.get_score(i))))
            if sp.is_unknown(i):
                t = UNKNOWN
            elif sp.is_control(i):
                t = CONTROL
            elif sp.is_unused(i):
                t = UNUSED
            elif sp.is_byte(i):
                t = BYTE
            elif LANG_TAG.match(self.pieces[-1]):
                t = CONTROL
            else:
                t = NORMAL
            self.types.append(t)
        self.pieces.append("<blank>")
        self.scores.append(0.0)
        self.types.append(CONTROL)
        self.V = V
        self.unk = sp.unk_id() if sp.unk_id() >= 0 else None
        self.bos = sp.bos_id() if sp.bos_id() >= 0 else None
        self.eos = sp.eos_id() if sp.eos_id() >= 0 else None

    def decode(self, ids):
        """Section 5: skip out-of-range ids, <0xHH> pieces give one raw byte,
        otherwise the piece bytes with U+2581 replaced by a space."""
        out = bytearray()
        for i in ids:
            if not 0 <= i < len(self.pieces):
                continue
            p = self.pieces[i]
            if re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", p):
                out.append(int(p[3:5], 16))
            else:
                out += p.replace("\u2581", " ").encode("utf-8")
        return bytes(out)


# ----------------------------------------------------------------------------
# Heads (section 8) — numpy, float64 for goldens or float32 for the check
# ----------------------------------------------------------------------------


def head_tensor_names(cfg):
    if cfg.head == "ctc":
        return ["head.ctc.weight", "head.ctc.bias"]
    names = ["pred.embed.weight"]
    for l in range(cfg.pred_layers):
        names += ["pred.lstm.%d.Wx" % l, "pred.lstm.%d.Wh" % l, "pred.lstm.%d.bias" % l]
    names += ["joint.enc.weight", "joint.enc.bias", "joint.pred.weight", "joint.pred.bias", "joint.out.weight",
              "joint.out.bias"]
    return names


def random_head(cfg, gen):
    """Head weights (float64 numpy). Logit scale ~8 so argmax margins are large
    against float32 error; the blank bias is tuned afterwards."""
    V, d = cfg.vocab, cfg.enc.d_model

    def rn(*shape, std=1.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).numpy() * std

    W = {}
    if cfg.head == "ctc":
        W["head.ctc.weight"] = rn(V + 1, d, 1, std=8.0 / math.sqrt(d))
        W["head.ctc.bias"] = rn(V + 1, std=1.0)
        return W
    # Transducer: a random model repeats whatever token wins at a frame (the
    # predictor barely changes the joint), so the weights carry a structure on
    # top of the noise: the predictor output after token k is roughly -s(w_k)
    # (g-gate ~ identity, input/output gates open, forget gate mostly shut),
    # the joint maps it to g ~ -u_k, and token k's output row points along u_k.
    # Emitting k thus lowers k's own logit and blank tends to win next, like a
    # trained model. Every tensor still has dense random noise.
    Hp, J = cfg.pred_hidden, cfg.joint_hidden
    N = V + 1 + len(cfg.durations)
    K = dict(HEAD_KNOBS, **cfg.knobs)
    w = rn(V + 1, Hp, std=1.0)
    emb = -w + rn(V + 1, Hp, std=K["noise"])
    emb[V] = 0.0  # blank-as-pad row (never used as input, section 8.1)
    W["pred.embed.weight"] = emb
    for l in range(cfg.pred_layers):
        wx = rn(4 * Hp, Hp, std=K["noise"] / math.sqrt(Hp))
        wx[2 * Hp:3 * Hp] += K["g_gain"] * np.eye(Hp)
        W["pred.lstm.%d.Wx" % l] = wx
        W["pred.lstm.%d.Wh" % l] = rn(4 * Hp, Hp, std=K["rec"] / math.sqrt(Hp))
        b = rn(4 * Hp, std=0.3)
        b[0:Hp] += 2.0  # input gate mostly open
        b[Hp:2 * Hp] -= 2.0  # forget gate mostly shut: the last token dominates
        b[3 * Hp:4 * Hp] += 2.0  # output gate mostly open
        W["pred.lstm.%d.bias" % l] = b
    W["joint.enc.weight"] = rn(J, d, std=1.0 / math.sqrt(d))
    W["joint.enc.bias"] = rn(J, std=0.3)
    wp = rn(J, Hp, std=K["pred_gain"] / math.sqrt(Hp))
    W["joint.pred.weight"] = wp
    W["joint.pred.bias"] = rn(J, std=0.3)
    u = np.tanh(np.tanh(w)) @ wp.T  # [V+1, J]: the joint direction of each token
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    wo = rn(N, J, std=K["out_noise"] / math.sqrt(J))
    wo[:V] += K["out_gain"] * u[:V]
    wo[V] += K["blank_gain"] / math.sqrt(J)  # blank grows with the joint activity, like the token logits' spread
    W["joint.out.weight"] = wo
    W["joint.out.bias"] = rn(N, std=1.0)
    return W


# Structured transducer head (see random_head).
HEAD_KNOBS = dict(noise=0.3, g_gain=1.5, rec=0.3, pred_gain=2.0, out_gain=8.0, out_noise=3.0, blank_gain=0.0)


def frame_rate(toks, T):
    """Fraction of encoder frames that emit at least one token."""
    return len(set(t[1] for t in toks)) / T


def blank_bias_name(cfg):
    return "head.ctc.bias" if cfg.head == "ctc" else "joint.out.bias"


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class Stats:
    def __init__(self):
        self.tok_margin = math.inf
        self.dur_margin = math.inf
        self.steps = 0
        self.n_emit = 0
        self.dur_hist = {}  # duration index -> joint steps choosing it

    def margin(self, logits, kind):
        top = np.partition(logits, -2)[-2:]
        m = float(top[1] - top[0])
        if kind == "tok":
            self.tok_margin = min(self.tok_margin, m)
        else:
            self.dur_margin = min(self.dur_margin, m)


def _argmax(x):
    return int(np.argmax(x))  # first maximal index: ties -> lowest index


def _confidence(logits):
    """Section 8.6 over the V+1 token logits."""
    z = logits - logits.max()
    p = np.exp(z) / np.exp(z).sum()
    h = -(p * np.log(p + 1e-10)).sum()
    return float(1.0 - h / math.log(logits.size))


class Decoder:
    def __init__(self, cfg, W, dtype):
        self.cfg = cfg
        self.W = {k: np.asarray(v, dtype=dtype) for k, v in W.items()}
        self.dtype = dtype

    def pred(self, last, state):
        """(pred_out, pending) = PRED(last, state), section 8.1."""
        cfg, W = self.cfg, self.W
        Hp = cfg.pred_hidden
        x = np.zeros(Hp, self.dtype) if last is None else W["pred.embed.weight"][last]
        new = []
        for l in range(cfg.pred_layers):
            h, c = state[l]
            gates = W["pred.lstm.%d.Wx" % l] @ x + W["pred.lstm.%d.Wh" % l] @ h + W["pred.lstm.%d.bias" % l]
            i = _sigmoid(gates[0:Hp])
            f = _sigmoid(gates[Hp:2 * Hp])
            g = np.tanh(gates[2 * Hp:3 * Hp])
            o = _sigmoid(gates[3 * Hp:4 * Hp])
            c2 = f * c + i * g
            h2 = o * np.tanh(c2)
            new.append((h2, c2))
            x = h2
        return x, new

    def act(self, x):
        a = self.cfg.joint_act
        return np.maximum(x, 0) if a == "relu" else _sigmoid(x) if a == "sigmoid" else np.tanh(x)

    def decode(self, enc, stats=None):
        """Greedy decode of enc [T, d] -> list of (id, frame, duration, confidence)."""
        stats = stats or Stats()
        cfg, W = self.cfg, self.W
        enc = np.asarray(enc, dtype=self.dtype)
        T, V = enc.shape[0], cfg.vocab
        out = []
        if cfg.head == "ctc":
            logits = enc @ W["head.ctc.weight"][:, :, 0].T + W["head.ctc.bias"]
            prev = -1
            for t in range(T):
                z = logits[t]
                lp = z - (z.max() + np.log(np.exp(z - z.max()).sum()))
                a = _argmax(lp)
                stats.margin(z, "tok")
                stats.steps += 1
                if a == prev:
                    continue
                prev = a
                if a == V:
                    continue
                out.append((a, t, 1, float(np.exp(lp[a]))))
            return out
        e = enc @ W["joint.enc.weight"].T + W["joint.enc.bias"]  # [T, J]
        zero = np.zeros(cfg.pred_hidden, self.dtype)
        state = [(zero, zero) for _ in range(cfg.pred_layers)]
        pred_out, pending = self.pred(None, state)
        cap = 16 * T + 1024
        t = sym = it = 0
        while t < T:
            it += 1
            if it > cap:
                raise RuntimeError("iteration cap")
            g = W["joint.pred.weight"] @ pred_out + W["joint.pred.bias"]
            logits = W["joint.out.weight"] @ self.act(e[t] + g) + W["joint.out.bias"]
            k = _argmax(logits[:V + 1])
            stats.margin(logits[:V + 1], "tok")
            stats.steps += 1
            if cfg.head == "tdt":
                dl = logits[V + 1:]
                dur = cfg.durations[_argmax(dl)]
                stats.margin(dl, "dur")
                stats.dur_hist[_argmax(dl)] = stats.dur_hist.get(_argmax(dl), 0) + 1
                if k != V:
                    stats.n_emit += 1
                    out.append((k, t, dur, _confidence(logits[:V + 1])))
                    state = pending
                    pred_out, pending = self.pred(k, state)
                t += dur
                sym += 1
                if dur != 0:
                    sym = 0
                elif cfg.max_symbols > 0 and sym >= cfg.max_symbols:
                    t += 1
                    sym = 0
            else:
                if k == V:
                    t += 1
                    sym = 0
                else:
                    out.append((k, t, 1, _confidence(logits[:V + 1])))
                    state = pending
                    pred_out, pending = self.pred(k, state)
                    sym += 1
                    if sym >= 10:
                        t += 1
                        sym = 0
        return out


# ----------------------------------------------------------------------------
# Result construction (section 9)
# ----------------------------------------------------------------------------


def build_result(vocab, toks):
    def llround(x):
        return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)

    kept = []
    for (i, fr, du, conf) in toks:
        if vocab.types[i] == CONTROL or LANG_TAG.match(vocab.pieces[i]):
            continue
        kept.append((i, fr, du, conf, llround(FRAME_MS * fr), llround(FRAME_MS * (fr + du))))
    words = []
    for k in kept:
        if not words or vocab.pieces[k[0]].startswith("\u2581"):
            words.append([k])
        else:
            words[-1].append(k)
    word_rows = []
    for w in words:
        txt = vocab.decode([k[0] for k in w])
        if txt.startswith(b" "):
            txt = txt[1:]
        word_rows.append((w[0][4], w[-1][5], txt))
    text = vocab.decode([k[0] for k in kept])
    text = re.sub(rb" +", b" ", text).strip(b" ")
    seg = (kept[0][4], kept[-1][5], text) if kept else None
    raw = vocab.decode([t[0] for t in toks])
    return dict(kept=kept, words=word_rows, segment=seg, text=text, raw=raw)


# ----------------------------------------------------------------------------
# GGUF
# ----------------------------------------------------------------------------

def f16_bucket(name):
    """True when the tensor is F16 in the published F16 file (section 4.5):
    ConvPw and Linear buckets; Norm (biases, norms, BN, pos_bias) and Conv
    (pre-encode convs, depthwise) stay F32."""
    if name.endswith(".bias") or ".norm_" in name or ".bn." in name or "running_" in name or "pos_bias_" in name:
        return False
    if re.match(r"enc\.blocks\.\d+\.conv\.pointwise[12]\.weight$", name):
        return True
    if ".conv." in name and name.endswith(".weight"):
        return False
    return True


def add_metadata(w, cfg, vocab, file_type, legacy=False):
    e = cfg.enc
    basename = {"tdt": "parakeet-tdt", "rnnt": "parakeet-rnnt", "ctc": "parakeet-ctc"}[cfg.head]
    w.add_string("general.architecture", "parakeet")
    w.add_string("general.name", "Parakeet %s (random-weight reference)" % cfg.variant)
    w.add_string("general.basename", basename)
    w.add_string("general.version", "ref")
    w.add_string("general.size_label", cfg.size_label)
    w.add_string("general.author", "transcribe tools/ref/parakeet.py")
    w.add_string("general.organization", "transcribe")
    w.add_string("general.license", "cc0-1.0")
    w.add_string("general.license.name", "CC0 1.0")
    w.add_string("general.license.link", "https://creativecommons.org/publicdomain/zero/1.0/")
    w.add_string("general.repo_url", "https://example.invalid/transcribe/tools/ref/parakeet.py")
    w.add_uint32("general.file_type", file_type)
    w.add_string("stt.variant", cfg.variant)
    w.add_array("general.languages", ["en"])
    w.add_bool("stt.capability.lang_detect", False)
    if not legacy:
        w.add_bool("stt.capability.streaming", bool(cfg.chunk_menus))
        w.add_string("stt.parakeet.head_kind", cfg.head)
    # tokenizer (section 3.2)
    w.add_string("tokenizer.ggml.model", "bpe")
    w.add_array("tokenizer.ggml.tokens", vocab.pieces, gw.STRING)
    w.add_array("tokenizer.ggml.scores", vocab.scores, gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    if vocab.unk is not None:
        w.add_uint32("tokenizer.ggml.unknown_token_id", vocab.unk)
    if vocab.bos is not None:
        w.add_uint32("tokenizer.ggml.bos_token_id", vocab.bos)
    if vocab.eos is not None:
        w.add_uint32("tokenizer.ggml.eos_token_id", vocab.eos)
    w.add_uint32("tokenizer.ggml.blank_token_id", vocab.V)
    # encoder (section 3.3)
    p = "stt.parakeet.encoder."
    w.add_uint32(p + "n_layers", e.n_layers)
    w.add_uint32(p + "d_model", e.d_model)
    w.add_uint32(p + "n_heads", e.n_heads)
    w.add_uint32(p + "d_ff", e.d_ff)
    w.add_uint32(p + "conv_kernel", e.conv_kernel)
    w.add_uint32(p + "subsampling_factor", SUBSAMPLING)
    w.add_uint32(p + "subsampling_channels", e.sub_channels)
    w.add_uint32(p + "pos_emb_max_len", 5000)
    if not legacy:
        w.add_bool(p + "use_bias", e.use_bias)
        w.add_bool(p + "xscaling", e.xscaling)
        w.add_int32(p + "att_context_left", e.att_left)
        w.add_int32(p + "att_context_right", e.att_right)
        w.add_string(p + "att_context_style", "chunked_limited_with_rc" if cfg.chunk_menus else "regular")
        for name, menu in zip(("left", "chunk", "right"), cfg.chunk_menus):
            w.add_array(p + "att_chunk_%s_choices" % name, list(menu), gw.INT32)
        pl, pr = e.conv_pads
        w.add_int32(p + "conv_context_left", pl)
        w.add_int32(p + "conv_context_right", pr)
        w.add_string(p + "conv_norm_type", "layer_norm" if e.conv_layer_norm else "batch_norm")
        w.add_int32(p + "streaming.pre_encode_cache_size", 0)
        w.add_int32(p + "streaming.drop_extra_pre_encoded", 0)
        w.add_int32(p + "streaming.sampling_frames_first", 0)
    # head (section 3.4)
    if cfg.head != "ctc":
        w.add_uint32("stt.parakeet.predictor.hidden", cfg.pred_hidden)
        w.add_uint32("stt.parakeet.predictor.n_layers", cfg.pred_layers)
        w.add_uint32("stt.parakeet.predictor.vocab", cfg.vocab + 1)
        w.add_uint32("stt.parakeet.joint.hidden", cfg.joint_hidden)
        w.add_uint32("stt.parakeet.joint.num_extra_outputs", len(cfg.durations))
        w.add_string("stt.parakeet.joint.activation", cfg.joint_act)
    if cfg.head == "tdt":
        w.add_array("stt.parakeet.tdt.durations", cfg.durations, gw.INT32)
        w.add_uint32("stt.parakeet.tdt.max_symbols", cfg.max_symbols)
    # front end (section 3.5)
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", e.n_mels)
    w.add_uint32(f + "sample_rate", SR)
    w.add_uint32(f + "n_fft", 512)
    w.add_uint32(f + "win_length", 400)
    w.add_uint32(f + "hop_length", HOP)
    w.add_string(f + "window", "hann")
    w.add_string(f + "normalize", "per_feature")
    w.add_float32(f + "dither", 1e-5)
    w.add_float32(f + "pre_emphasis", 0.97)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)


def expected_tensor_count(cfg):
    e = cfg.enc
    per_block = 26 + (0 if e.conv_layer_norm else 2) + (11 if e.use_bias else 0)
    n = 2 * (2 * e.sub_stages - 1) + 2 + per_block * e.n_layers  # pre-encode convs + out, blocks
    if cfg.head == "ctc":
        return n + 2
    return n + 1 + 3 * cfg.pred_layers + 6


def write_gguf(path, cfg, vocab, tensors, dtype, legacy=False, lazy=False):
    """tensors: ordered name -> numpy array (PyTorch shape) or, with lazy,
    name -> (shape, producer)."""
    w = gw.GGUFWriter()
    add_metadata(w, cfg, vocab, 0 if dtype == "F32" else 1, legacy=legacy)
    for name, a in tensors.items():
        gt = gw.GGML_F16 if (dtype == "F16" and f16_bucket(name)) else gw.GGML_F32
        if lazy:
            w.add_tensor_lazy(name, a[0], gt, a[1])
        else:
            w.add_tensor(name, a, gt)
    return w.write_stream(path)


def verify_gguf(path, cfg, vocab, tensors, dtype, legacy):
    kv, ts = gw.read_gguf(path)
    assert kv["general.architecture"] == (gw.STRING, "parakeet")
    assert kv["tokenizer.ggml.tokens"][1][1] == vocab.pieces
    assert kv["tokenizer.ggml.blank_token_id"] == (gw.UINT32, vocab.V)
    assert ("stt.parakeet.head_kind" in kv) == (not legacy)
    assert len(ts) == len(tensors) == expected_tensor_count(cfg), (len(ts), expected_tensor_count(cfg))
    for name, a in tensors.items():
        t, ne, b = ts[name]
        want = gw.GGML_F16 if (dtype == "F16" and f16_bucket(name)) else gw.GGML_F32
        assert t == want, name
        assert ne == list(reversed(a.shape)), (name, ne)
        assert np.array_equal(b, a.astype(np.float32)), name


# ----------------------------------------------------------------------------
# Model assembly
# ----------------------------------------------------------------------------


def round_weights(tensors):
    """Make every value exactly representable in the files: F16-bucket tensors
    rounded to binary16 (so the F32 and F16 files hold the same numbers), all
    others to binary32."""
    out = {}
    for n, a in tensors.items():
        a = np.asarray(a, dtype=np.float32)
        if f16_bucket(n):
            a = a.astype(np.float16).astype(np.float32)
        out[n] = a.astype(np.float64)
    return out


def tune_blank(cfg, W, enc, target, step=0.25):
    """Choose the blank bias on a 0.25 grid (never at a decision boundary
    found by bisection) so that ~target tokens per frame are emitted."""
    bname = blank_bias_name(cfg)
    V = cfg.vocab
    base = float(W[bname][V])

    def rate(b):
        W2 = dict(W)
        W2[bname] = W[bname].copy()
        W2[bname][V] = b
        st = Stats()
        try:
            toks = Decoder(cfg, W2, np.float64).decode(enc, st)
        except RuntimeError:
            return 1.0
        # TDT skips frames, so there the rate is per joint step
        return st.n_emit / st.steps if cfg.head == "tdt" else frame_rate(toks, enc.shape[0])

    lo, hi = -80, 80  # grid index; rate decreases with the blank bias
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rate(base + step * mid) > target:
            lo = mid
        else:
            hi = mid
    W[bname] = W[bname].copy()
    W[bname][V] = float(np.float32(base + step * hi))
    return rate(W[bname][V])


DUR_TARGET = [0.15, 0.35, 0.25, 0.15, 0.10]  # share of joint steps per duration index


def tune_durations(cfg, W, enc, step=0.5):
    """Nudge the duration biases (steps of 0.5) until every duration is chosen
    at a fair share of the joint steps, so that all TDT paths are exercised."""
    n = len(cfg.durations)
    target = DUR_TARGET if n == len(DUR_TARGET) else [1.0 / n] * n
    b = W["joint.out.bias"].copy()
    for _ in range(12):
        W["joint.out.bias"] = b.copy()
        st = Stats()
        try:
            Decoder(cfg, W, np.float64).decode(enc, st)
        except RuntimeError:
            pass
        tot = max(sum(st.dur_hist.values()), 1)
        frac = [st.dur_hist.get(i, 0) / tot for i in range(n)]
        moved = False
        for i in range(n):
            if frac[i] < 0.6 * target[i]:
                b[cfg.vocab + 1 + i] += step
                moved = True
            elif frac[i] > 1.6 * target[i]:
                b[cfg.vocab + 1 + i] -= step
                moved = True
        if not moved:
            break
    W["joint.out.bias"] = b.astype(np.float32).astype(np.float64)


def tune_head(cfg, W, enc, target, step=0.25):
    """Blank bias grid `step`, duration bias steps 2*step (the tiny configs use
    0.25; the 0.6B head, whose logits are wider, a step scaled to them)."""
    rate = tune_blank(cfg, W, enc, target, step)
    if cfg.head == "tdt":
        for _ in range(2):
            tune_durations(cfg, W, enc, 2 * step)
            rate = tune_blank(cfg, W, enc, target, step)
    return rate


def logit_scale(cfg, W, enc):
    """Std of the token logits over the frames with the start-of-sequence
    predictor output."""
    D = Decoder(cfg, W, np.float64)
    if cfg.head == "ctc":
        z = enc @ D.W["head.ctc.weight"][:, :, 0].T
    else:
        zero = np.zeros(cfg.pred_hidden)
        po, _ = D.pred(None, [(zero, zero)] * cfg.pred_layers)
        g = D.W["joint.pred.weight"] @ po + D.W["joint.pred.bias"]
        e = enc @ D.W["joint.enc.weight"].T + D.W["joint.enc.bias"]
        z = D.act(e + g) @ D.W["joint.out.weight"][:cfg.vocab + 1].T
    return float(z.std())


def build(cfg, calib_mel, dtype=torch.float64):
    enc = FastConformerEncoder(cfg.enc).to(dtype)
    enc.randomize_(torch.Generator().manual_seed(cfg.seed))
    enc.calibrate_(torch.from_numpy(calib_mel))
    return enc


def center_head(cfg, W, enc, rescale=False):
    """Data-dependent head bias: subtract the projection of the mean encoder
    frame (on the calibration audio), so the argmaxes follow what changes from
    frame to frame rather than one constant winner. With rescale, the input
    weight is also divided by the RMS of the frame deviations (deep random
    encoders collapse every frame toward one vector)."""
    mean = enc.mean(axis=0)
    if rescale:
        k = 1.0 / np.sqrt(((enc - mean) ** 2).mean())
        wname = "head.ctc.weight" if cfg.head == "ctc" else "joint.enc.weight"
        W[wname] = W[wname] * k
    if cfg.head == "ctc":
        W["head.ctc.bias"] = W["head.ctc.bias"] - W["head.ctc.weight"][:, :, 0] @ mean
    else:
        W["joint.enc.bias"] = W["joint.enc.bias"] - W["joint.enc.weight"] @ mean
    return W


# ----------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------


def write_text(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_decode(out, stem, vocab, toks):
    res = build_result(vocab, toks)
    write_text(os.path.join(out, stem + ".tokens.txt"),
               "".join("%d %d %d\n" % (i, fr, du) for i, fr, du, _ in toks).encode())
    rows = []
    kept_ids = iter(res["kept"])
    nxt = next(kept_ids, None)
    for i, fr, du, conf in toks:
        is_kept = nxt is not None and nxt[0] == i and nxt[1] == fr and nxt[2] == du
        t0, t1 = (nxt[4], nxt[5]) if is_kept else (-1, -1)
        if is_kept:
            nxt = next(kept_ids, None)
        rows.append(b"%d %d %d %d %d %d %.6f %s\n" % (i, fr, du, int(is_kept), t0, t1, conf,
                                                      vocab.pieces[i].encode("utf-8")))
    write_text(os.path.join(out, stem + ".tokens_detail.txt"), b"".join(rows))
    write_text(os.path.join(out, stem + ".words.txt"),
               b"".join(b"%d %d %s\n" % (t0, t1, txt) for t0, t1, txt in res["words"]))
    seg = res["segment"]
    write_text(os.path.join(out, stem + ".segments.txt"), b"%d %d %s\n" % seg if seg else b"")
    write_text(os.path.join(out, stem + ".text.txt"), res["text"] + b"\n")
    write_text(os.path.join(out, stem + ".raw.txt"), res["raw"] + b"\n")
    return res


def summarize(cfg, toks, T):
    frames = len(set(fr for _, fr, _, _ in toks))
    s = "tokens %d, T_enc %d, frames with a token %.0f%%" % (len(toks), T, 100.0 * frames / T)
    if cfg.head == "tdt":
        h = np.bincount([du for _, _, du, _ in toks], minlength=max(cfg.durations) + 1)
        s += ", emitted-token durations %s" % dict(enumerate(h.tolist()))
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--audio", nargs="*", default=None, help="wav files (default: per config, from the samples)")
    ap.add_argument("--samples", default=None, help="folder with jfk.wav and whole-earth.wav")
    ap.add_argument("--seed", type=int, default=None, help="encoder seed (default per config)")
    ap.add_argument("--head-seeds", type=int, default=24, help="head seeds tried (largest min margin wins)")
    ap.add_argument("--legacy", action="store_true", help="also write a tdt file without the newer keys")
    ap.add_argument("--legacy-dtype", default="F16", choices=["F32", "F16"])
    ap.add_argument("--dtypes", default="F32,F16", help="files to write (F32, F16 or both)")
    ap.add_argument("--no-mel", action="store_true", help="do not store the mel golden")
    ap.add_argument("--max-npy-kb", type=int, default=600, help="skip .npy goldens larger than this")
    args = ap.parse_args()

    cfg = CONFIGS[args.config]
    set_subsampling(cfg.enc.sub_factor)
    if args.seed is not None:
        cfg.seed = args.seed
    shared = os.environ.get("TR_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
    samples = args.samples or os.path.join(shared, "samples")
    os.makedirs(args.out, exist_ok=True)
    vocab = Vocab(load_tokenizer(cfg))
    if args.legacy and (cfg.head != "tdt" or cfg.enc.use_bias or cfg.enc.xscaling or cfg.enc.local_attention):
        sys.exit("--legacy needs a tdt config with the loader defaults (no bias, no xscaling, full attention)")
    big = cfg.enc.d_model >= 512
    if big:
        return main_big(cfg, args, vocab, samples)

    audio = [os.path.splitext(os.path.basename(a))[0] for a in args.audio] if args.audio else list(cfg.audio)
    audio_paths = ({os.path.splitext(os.path.basename(a))[0]: a for a in args.audio} if args.audio else
                   {a: os.path.join(samples, a + ".wav") for a in audio})
    mels, pres, encs = {}, {}, {}
    for a in audio:
        x, sr = mel_ref.read_wav(audio_paths[a])
        assert sr == SR
        mels[a] = mel_ref.nemo_logmel(x, cfg.enc.n_mels, "constant")

    # --- encoder weights (calibrated on the first audio, rounded to the files) ---
    enc64 = build(cfg, mels[audio[0]])
    enc_w = round_weights(enc64.gguf_tensors())
    enc64.load_gguf_tensors(enc_w)
    for a in audio:
        pre, out = enc64(torch.from_numpy(mels[a]))
        pres[a], encs[a] = pre.numpy(), out.numpy()
        print("%s: T_mel %d T_enc %d (ceil(T_mel/%d) %d)" % (
            a, mels[a].shape[1], out.shape[0], cfg.enc.sub_factor, t_enc_of(mels[a].shape[1], cfg.enc.sub_factor)))

    # --- head: search seeds for the largest minimum margin -----------------------
    best = None
    for s in range(cfg.head_seed, cfg.head_seed + args.head_seeds):
        W = round_weights(center_head(cfg, random_head(cfg, torch.Generator().manual_seed(s)), encs[audio[0]]))
        rate = tune_head(cfg, W, encs[audio[0]], cfg.target_rate)
        W = round_weights(W)
        st = Stats()
        ok = True
        n_tok = n_fr = 0
        for a in audio:
            try:
                toks = Decoder(cfg, W, np.float64).decode(encs[a], st)
                n_tok += len(toks)
                n_fr += len(set(t[1] for t in toks))
            except RuntimeError:
                ok = False
        m = min(st.tok_margin, st.dur_margin)
        per_frame = n_tok / max(n_fr, 1)
        print("head seed %d: rate %.2f, tokens per emitting frame %.2f, min token margin %.4g, min duration margin "
              "%.4g" % (s, rate, per_frame, st.tok_margin, st.dur_margin))
        # a realistic mix: mostly one token per emitting frame, some bursts
        ok = ok and 0.2 <= rate <= 0.6 and per_frame <= 2.0
        if ok and (best is None or m > best[0]):
            best = (m, s, W, st)
    _, head_seed, W, st = best
    print("chosen head seed %d" % head_seed)

    tensors = dict(enc_w)
    for n in head_tensor_names(cfg):
        tensors[n] = W[n]
    files = []
    dtypes = [d for d in args.dtypes.split(",") if d]
    assert set(dtypes) <= {"F32", "F16"}
    for dt in dtypes:
        p = os.path.join(args.out, "parakeet-%s-%s.gguf" % (cfg.variant, dt))
        write_gguf(p, cfg, vocab, tensors, dt)
        verify_gguf(p, cfg, vocab, tensors, dt, False)
        files.append(p)
    if args.legacy:
        dt = args.legacy_dtype
        p = os.path.join(args.out, "parakeet-%s-legacy-%s.gguf" % (cfg.variant, dt))
        write_gguf(p, cfg, vocab, tensors, dt, legacy=True)
        verify_gguf(p, cfg, vocab, tensors, dt, True)
        files.append(p)
    for p in files:
        print("wrote %s (%.0f KB)" % (p, os.path.getsize(p) / 1024))

    # --- goldens (float64) ---------------------------------------------------------
    report = ["config %s encoder_seed %d head_seed %d" % (args.config, cfg.seed, head_seed), "dims %s" % cfg.enc,
              "head %s V %d Hp %d pred_layers %d J %d act %s durations %s max_symbols %d blank_bias %.4f" % (
                  cfg.head, cfg.vocab, cfg.pred_hidden, cfg.pred_layers, cfg.joint_hidden, cfg.joint_act,
                  cfg.durations, cfg.max_symbols, W[blank_bias_name(cfg)][cfg.vocab])]
    dec64 = Decoder(cfg, W, np.float64)
    toks64 = {}
    for a in audio:
        sa = Stats()
        toks64[a] = dec64.decode(encs[a], sa)
        res = write_decode(args.out, a, vocab, toks64[a])
        T = encs[a].shape[0]
        line = "%s: %s; min token margin %.6f, min duration margin %s, joint/CTC steps %d" % (
            a, summarize(cfg, toks64[a], T), sa.tok_margin,
            "%.6f" % sa.dur_margin if cfg.head == "tdt" else "n/a", sa.steps)
        if cfg.head == "tdt":
            line += ", duration chosen per step %s" % {cfg.durations[i]: n for i, n in sorted(sa.dur_hist.items())}
        report.append(line)
        print(line)
        print("  text: %s" % res["text"].decode("utf-8", "replace")[:200])
        for nm, arr in (("mel", mels[a]), ("pre", pres[a]), ("enc", encs[a])):
            kb = arr.size * 4 / 1024
            if nm == "mel" and args.no_mel:
                continue
            if kb <= args.max_npy_kb and a == audio[0]:
                np.save(os.path.join(args.out, "%s.%s.npy" % (a, nm)), arr.astype(np.float32))

    # --- robustness: float32 encoder + float32 decode gives the same tokens --------
    enc32 = FastConformerEncoder(cfg.enc).float()
    enc32.load_gguf_tensors(enc_w)
    dec32 = Decoder(cfg, W, np.float32)
    for a in audio:
        _, o32 = enc32(torch.from_numpy(mels[a].astype(np.float32)))
        err = np.abs(o32.numpy().astype(np.float64) - encs[a]).max()
        t32 = dec32.decode(o32.numpy())
        same = [t[:3] for t in t32] == [t[:3] for t in toks64[a]]
        line = "%s: float32 encoder max abs err %.3g, float32 tokens identical %s" % (a, err, same)
        report.append(line)
        print(line)
    if cfg.buffered:
        report += buffered_goldens(cfg, enc_w, W, audio_paths[audio[0]], args.out)
    report.append("F16 file: LIN/ConvPw weights are F16-rounded before anything is computed, so the F32 and F16 "
                  "files hold identical values and share these goldens (F16 tokens == F32 tokens)")
    write_text(os.path.join(args.out, "margins.txt"), ("\n".join(report) + "\n").encode())


# ----------------------------------------------------------------------------
# Buffered streaming (unified-en menus, sec. 3.3 / 7.8; docs/c-api.md PKBS)
# ----------------------------------------------------------------------------


def buffered_steps(n, L, C, R):
    """Windows of buffered streaming over n samples: (w0, w1, l, last) per
    chunk j. Chunk j is samples [jCF, (j+1)CF) (F = samples per encoder frame);
    its window starts L frames earlier (clipped at 0: l frames of left context)
    and ends R frames after it. A chunk runs once its window is complete; at
    the end one last window runs from its start to the end of the input."""
    F = SUBSAMPLING * HOP
    out, j = [], 0
    while (j * C + C + R) * F <= n:
        c0 = j * C * F
        w0 = max(0, c0 - L * F)
        out.append((w0, c0 + (C + R) * F, (c0 - w0) // F, False))
        j += 1
    if j * C * F < n:
        c0 = j * C * F
        w0 = max(0, c0 - L * F)
        out.append((w0, n, (c0 - w0) // F, True))
    return out


def buffered_decode(cfg, enc_w, W, x, lcr, dtype, stats=None):
    """Tokens of buffered streaming with (L, C, R): each window's mel is
    normalised over the window, the encoder runs with the chunked_limited_with_rc
    mask counted from the window's first frame, and the chunk's C rows (every
    row from the chunk on in the last window) are decoded with the decoder
    state carried, i.e. one greedy decode of the concatenated chunk rows."""
    import dataclasses
    L, C, R = lcr
    ecfg = dataclasses.replace(cfg.enc, chunk_rc=(L, C, R))
    enc = FastConformerEncoder(ecfg).to(torch.float64 if dtype == np.float64 else torch.float32)
    enc.load_gguf_tensors(enc_w)
    rows = []
    for w0, w1, l, last in buffered_steps(x.size, L, C, R):
        if w1 - w0 < 2 * HOP:
            continue
        mel = mel_ref.nemo_logmel(x[w0:w1], cfg.enc.n_mels, "constant")
        _, out = enc(torch.from_numpy(mel.astype(dtype)))
        out = out.numpy()
        rows.append(out[l:] if last else out[l:l + C])
    return Decoder(cfg, W, dtype).decode(np.concatenate(rows), stats)


def write_wav16(path, x):
    import wave
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SR)
        f.writeframes(np.round(x * 32768.0).astype("<i2").tobytes())


def buffered_goldens(cfg, enc_w, W, wav_path, out_dir, seconds=5.0):
    """An excerpt of the first audio (committed, so the test needs no samples)
    and its buffered tokens per (L, C, R) of cfg.buffered: `id frame` lines."""
    x, _ = mel_ref.read_wav(wav_path)
    ex = os.path.join(out_dir, "excerpt.wav")
    write_wav16(ex, x[:int(seconds * SR)])
    x, _ = mel_ref.read_wav(ex)
    lines = ["buffered (excerpt.wav, %d samples):" % x.size]
    for lcr in cfg.buffered:
        st = Stats()
        toks = buffered_decode(cfg, enc_w, W, x, lcr, np.float64, st)
        t32 = buffered_decode(cfg, enc_w, W, x.astype(np.float32), lcr, np.float32)
        same = [t[:2] for t in t32] == [t[:2] for t in toks]
        name = "excerpt.buffered-%d-%d-%d.tokens.txt" % lcr
        write_text(os.path.join(out_dir, name), "".join("%d %d\n" % (t[0], t[1]) for t in toks).encode())
        line = "  L/C/R %s: %d tokens, min token margin %.6f, float32 tokens identical %s" % (
            lcr, len(toks), st.tok_margin, same)
        lines.append(line)
        print(line)
    return lines


def main_big(cfg, args, vocab, samples):
    """Benchmark model: float32 throughout, written tensor by tensor. The blank
    bias is tuned on jfk so the decoder does real work; no goldens."""
    x, _ = mel_ref.read_wav(os.path.join(samples, "jfk.wav"))
    mel = mel_ref.nemo_logmel(x, cfg.enc.n_mels, "constant").astype(np.float32)
    enc = build(cfg, mel, torch.float32)
    _, out = enc(torch.from_numpy(mel))
    e = out.numpy()
    W = random_head(cfg, torch.Generator().manual_seed(cfg.head_seed))
    W = {k: v.astype(np.float32) for k, v in center_head(cfg, W, e.astype(np.float64), rescale=True).items()}
    sigma = logit_scale(cfg, W, e.astype(np.float64))
    rate = tune_head(cfg, W, e.astype(np.float64), cfg.target_rate, step=sigma / 32)
    st = Stats()
    toks = Decoder(cfg, W, np.float32).decode(e, st)
    print("jfk: %s (tuned rate %.2f); min token margin %.4g, duration margin %.4g" % (
        summarize(cfg, toks, e.shape[0]), rate, st.tok_margin, st.dur_margin))
    named = enc._named()
    tensors = {n: (tuple(t.shape), (lambda t=t: t.detach().numpy())) for n, t in named}
    for n in head_tensor_names(cfg):
        tensors[n] = (W[n].shape, (lambda a=W[n]: a))
    assert len(tensors) == expected_tensor_count(cfg)
    p = os.path.join(args.out, "parakeet-%s-F32.gguf" % cfg.variant)
    n = write_gguf(p, cfg, vocab, tensors, "F32", lazy=True)
    print("wrote %s (%.2f GB)" % (p, n / 1e9))


if __name__ == "__main__":
    main()
