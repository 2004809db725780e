#!/usr/bin/python3
"""Independent PyTorch reference of the Canary family (transcribe.cpp 0.2.1
file schema), written from the format documents (docs/formats/canary.md, docs/formats/parakeet.md sections 6-7, docs/formats/gguf.md), not
from the C sources.

It builds random-weight Canary models with real (small) SentencePiece
vocabularies, writes them as GGUF in the published key/tensor schema (an F32
file and an F16 copy per the F16 column of docs/formats/canary.md section 3.6) and
dumps golden tensors and greedy decodes for the C parity tests.

    /usr/bin/python3 tools/ref/canary.py --config tiny-canary  --out tests/data/canary/tiny-canary
    /usr/bin/python3 tools/ref/canary.py --config tiny-canary2 --out tests/data/canary/tiny-canary2
    /usr/bin/python3 tools/ref/canary.py --config tiny-canary2-agg --out tests/data/canary/tiny-canary2-agg
    /usr/bin/python3 tools/ref/canary.py --config canary-1b-flash --out build-ref/canary-1b-flash

The encoder is tools/ref/fastconformer.py (shared with the Parakeet
reference); everything after it (projection, Transformer decoder, prompt,
greedy decoding) lives here. See tools/ref/README.md and
tests/data/canary/README.md.
"""

import argparse
import io
import math
import os
import sys
import time
from collections import OrderedDict

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
import mel_ref  # noqa: E402
from fastconformer import FastConformerEncoder, FCConfig, t_enc_of  # noqa: E402

LN_EPS = 1e-5
TT_NORMAL, TT_UNKNOWN, TT_CONTROL = 1, 2, 3

# ----------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------

CONFIGS = {
    # canary-1b style: 5-token "canary" prompt, aggregate tokenizer (special
    # SentencePiece + one per language), with the 180m-flash-style
    # encoder->decoder projection (d_enc != d_dec).
    "tiny-canary": dict(
        variant="canary-1b", prompt_format="canary", tokenizer="aggregate",
        enc_layers=2, d_enc=32, enc_heads=2, enc_ff=64, conv_kernel=9, sub_channels=16,
        dec_layers=2, d_dec=48, dec_heads=3, dec_ff=96, max_position=64,
        languages=["en", "de", "es", "fr"], translate_exclude=[], lang_vocab=64,
        spl_layout="canary1", n_timestamps=6, seed=1, search=256),
    # canary-1b-v2 style: canary2 prompt with a single SentencePiece model (the
    # leading bare "▁" token), no projection (d_enc == d_dec).
    "tiny-canary2": dict(
        variant="canary-1b-v2", prompt_format="canary2", tokenizer="single",
        enc_layers=2, d_enc=32, enc_heads=2, enc_ff=64, conv_kernel=9, sub_channels=16,
        dec_layers=2, d_dec=32, dec_heads=2, dec_ff=64, max_position=48,
        languages=["en", "de", "es", "fr", "lv"], translate_exclude=["lv"], single_vocab=160,
        spl_layout="canary2", n_timestamps=6, seed=2, search=1024),
    # canary-1b-flash / 180m-flash style: 9-token canary2 prompt with the
    # aggregate tokenizer (NeMo's canary2 special order: bos 4, eos 3, pad 2).
    # Shipped as F16 only (size budget); its goldens use the F16 weights.
    "tiny-canary2-agg": dict(
        variant="canary-1b-flash", prompt_format="canary2", tokenizer="aggregate",
        enc_layers=2, d_enc=32, enc_heads=2, enc_ff=64, conv_kernel=9, sub_channels=16,
        dec_layers=2, d_dec=32, dec_heads=2, dec_ff=64, max_position=48,
        languages=["en", "de", "es", "fr"], translate_exclude=[], lang_vocab=64,
        spl_layout="canary2", n_timestamps=6, seed=4, search=512, f16_only=True),
    # benchmark file with the published canary-1b-flash geometry (docs/formats/canary.md
    # section 1: decoder FFN 4096, max_position 1024, 8 heads).
    "canary-1b-flash": dict(
        variant="canary-1b-flash", prompt_format="canary2", tokenizer="aggregate",
        enc_layers=32, d_enc=1024, enc_heads=8, enc_ff=4096, conv_kernel=9, sub_channels=256,
        dec_layers=4, d_dec=1024, dec_heads=8, dec_ff=4096, max_position=1024,
        languages=["en", "de", "es", "fr"], translate_exclude=[], lang_vocab=1024, vocab_size=5248,
        spl_layout="canary2", n_timestamps=None, seed=3, search=0),
    # benchmark file with the published canary-180m-flash geometry (section 1:
    # 17 encoder layers of width 512, the 512->1024 projection, the same
    # decoder as 1b-flash; encoder heads 8, FFN 4x as in NeMo's configs).
    "canary-180m-flash": dict(
        variant="canary-180m-flash", prompt_format="canary2", tokenizer="aggregate",
        enc_layers=17, d_enc=512, enc_heads=8, enc_ff=2048, conv_kernel=9, sub_channels=256,
        dec_layers=4, d_dec=1024, dec_heads=8, dec_ff=4096, max_position=1024,
        languages=["en", "de", "es", "fr"], translate_exclude=[], lang_vocab=1024, vocab_size=5248,
        spl_layout="canary2", n_timestamps=None, seed=3, search=0),
}

N_MELS = 128
POS_EMB_MAX_LEN = 5000

# ----------------------------------------------------------------------------
# Tokenizers (docs/formats/canary.md section 4; NeMo CanaryTokenizer layout)
# ----------------------------------------------------------------------------

# Every piece of the stt.canary.special.* catalog (section 2.6) plus the
# canary2 emotion token.
CATALOG = ["<|startoftranscript|>", "<|endoftext|>", "<pad>", "<|startofcontext|>", "<|pnc|>", "<|nopnc|>",
           "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>", "<|itn|>", "<|timestamp|>", "<|diarize|>",
           "<|nospeech|>", "<|spkchange|>", "<|audioseparator|>", "<|transcribe|>", "<|translate|>"]
EMO = "<|emo:undefined|>"

# Small hand-written training text (our own sentences) for the per-language
# SentencePiece models.
CORPUS = {
    "en": """And so my fellow listeners, ask what the quiet machine can hear for you.
The small model reads the sound and writes the words it believes were spoken.
Every sentence ends with a period, and every question ends with a question mark?
We test the decoder with random weights, yet it must stop at the end of the text.
Bright morning light fell over the harbour while the boats returned with fish.
Numbers like 12 and 345 appear in speech, and so do names such as Anna and Paul.""",
    "de": """Die kleine Maschine hört genau zu und schreibt die Wörter auf, die sie versteht.
Jeder Satz endet mit einem Punkt, und jede Frage endet mit einem Fragezeichen?
Wir prüfen den Decoder mit zufälligen Gewichten, aber er muss am Ende anhalten.
Am Morgen fiel helles Licht über den Hafen, während die Boote zurückkehrten.
Zahlen wie 12 und 345 kommen in der Sprache vor, ebenso Namen wie Anna und Paul.
Schöne Grüße aus München, über die Brücke und durch die Straßen der Stadt.""",
    "es": """La pequeña máquina escucha con atención y escribe las palabras que entiende.
Cada frase termina con un punto, y cada pregunta termina con un signo de interrogación?
Probamos el decodificador con pesos aleatorios, pero debe detenerse al final.
La luz de la mañana cayó sobre el puerto mientras los barcos volvían con pescado.
Números como 12 y 345 aparecen en el habla, y también nombres como Ana y Pablo.
El niño leyó la canción en voz alta durante la reunión del jueves.""",
    "fr": """La petite machine écoute attentivement et écrit les mots qu'elle comprend.
Chaque phrase se termine par un point, et chaque question par un point d'interrogation?
Nous testons le décodeur avec des poids aléatoires, mais il doit s'arrêter à la fin.
La lumière du matin tombait sur le port pendant que les bateaux rentraient.
Des nombres comme 12 et 345 apparaissent dans la parole, ainsi que des noms comme Anne et Paul.
Où est la gare? Elle est à côté du théâtre, près de la forêt.""",
    "lv": """Mazā mašīna uzmanīgi klausās un pieraksta vārdus, ko tā saprot.
Katrs teikums beidzas ar punktu, un katrs jautājums ar jautājuma zīmi?
Rīta gaisma krita pār ostu, kamēr laivas atgriezās ar zivīm.""",
}


def train_sp(lines, vocab_size, user_defined=(), hard=True):
    """Unigram SentencePiece model (python3-sentencepiece), unk = 0 and no
    bos/eos/pad pieces, like NeMo's create_spt_model defaults. Returns the
    processor."""
    import sentencepiece as spm

    buf = io.BytesIO()
    kw = dict(sentence_iterator=iter(list(lines)), model_writer=buf, vocab_size=vocab_size, model_type="unigram",
              bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, num_threads=1, character_coverage=1.0,
              hard_vocab_limit=hard, split_digits=False, minloglevel=2, max_sentencepiece_length=16)
    if user_defined:
        kw["user_defined_symbols"] = list(user_defined)
    spm.SentencePieceTrainer.train(**kw)
    return spm.SentencePieceProcessor(model_proto=buf.getvalue())


def special_list(cfg):
    """Special pieces in id order. canary1 layout: <pad>=1, eos=2, bos=3 (the
    canary-1b ids of section 1); canary2 layout: NeMo's default order
    <|nospeech|>=1, <pad>=2, eos=3, bos=4."""
    if cfg["spl_layout"] == "canary1":
        head = ["<pad>", "<|endoftext|>", "<|startoftranscript|>", "<|transcribe|>", "<|translate|>",
                "<|nospeech|>", "<|pnc|>", "<|nopnc|>"]
    else:
        head = ["<|nospeech|>", "<pad>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>",
                "<|startofcontext|>", "<|itn|>", "<|noitn|>", "<|timestamp|>", "<|notimestamp|>", "<|diarize|>",
                "<|nodiarize|>", "<|spkchange|>", "<|audioseparator|>", EMO]
    toks = list(head)
    for t in CATALOG + [EMO] + ["<|%s|>" % l for l in cfg["languages"]]:
        if t not in toks:
            toks.append(t)
    return toks


class Vocab:
    """Flat token list of one Canary file: pieces, scores, token types,
    routing arrays and the named special ids."""

    def __init__(self, cfg):
        self.cfg = cfg
        if cfg["tokenizer"] == "aggregate":
            self._aggregate(cfg)
        else:
            self._single(cfg)
        self.V = len(self.pieces)
        self.id_of = {}
        for i, p in enumerate(self.pieces):
            self.id_of.setdefault(p, i)
        assert len(self.scores) == self.V and len(self.types) == self.V

    def _aggregate(self, cfg):
        spl = special_list(cfg)
        if cfg.get("vocab_size"):  # fill the special tokenizer up to the published size with <|k|> timestamps
            n_spl = cfg["vocab_size"] - cfg["lang_vocab"] * len(cfg["languages"])
            k = 0
            while len(spl) + 2 < n_spl:
                spl.append("<|%d|>" % k)
                k += 1
        else:
            spl += ["<|%d|>" % k for k in range(cfg["n_timestamps"])]
        # NeMo build_special_tokenizer: train text = the tokens, vocab = n + 2
        sp_spl = train_sp(spl, len(spl) + 2, user_defined=spl)
        subs = [("spl_tokens", sp_spl)]
        for lang in cfg["languages"]:
            lines = CORPUS[lang].split("\n")
            if cfg["lang_vocab"] > 200:  # benchmark-size vocabulary: add dictionary words
                lines = lines + dict_lines()
            subs.append((lang, train_sp(lines, cfg["lang_vocab"])))
        self.pieces, self.scores, self.types = [], [], []
        self.codes, self.offsets, self.sizes = [], [], []
        self.specials = {}
        for name, sp in subs:
            off = len(self.pieces)
            n = sp.get_piece_size()
            self.codes.append(name)
            self.offsets.append(off)
            self.sizes.append(n)
            for i in range(n):
                p = sp.id_to_piece(i)
                self.pieces.append(p)
                self.scores.append(0.0)  # aggregate tokenizers: scores 0.0 (section 2.2)
                gid = off + i
                special = name == "spl_tokens" and ((p.startswith("<|") and p.endswith("|>")) or p == "<pad>")
                if special:
                    self.specials[p] = gid
                self.types.append(TT_UNKNOWN if gid == 0 else TT_CONTROL if special else TT_NORMAL)
        if cfg.get("vocab_size"):
            assert len(self.pieces) == cfg["vocab_size"], len(self.pieces)

    def _single(self, cfg):
        spl = special_list(cfg) + ["<|%d|>" % k for k in range(cfg["n_timestamps"])]
        lines = []
        for lang in cfg["languages"]:
            lines += CORPUS[lang].split("\n")
        sp = train_sp(lines, cfg["single_vocab"], user_defined=spl)
        self.pieces, self.scores, self.types = [], [], []
        self.specials = {}
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            self.pieces.append(p)
            self.scores.append(float(sp.get_score(i)))
            shaped = (p.startswith("<|") and p.endswith("|>")) or p in ("<pad>", "<unk>")
            if sp.is_unknown(i):
                t = TT_UNKNOWN
            elif sp.is_control(i) or shaped:
                t = TT_CONTROL
                self.specials[p] = i
            else:
                t = TT_NORMAL
            self.types.append(t)
        n = len(self.pieces)
        self.codes, self.offsets, self.sizes = ["all"], [0], [n]
        assert "\u2581" in self.pieces, "single-SP vocabulary lacks the bare U+2581 piece"

    @property
    def eos(self):
        return self.specials["<|endoftext|>"]

    def catalog_ids(self):
        """stt.canary.special.* keys (section 2.6): key -> id, written only for
        pieces in the special set."""
        out = OrderedDict()
        for p in CATALOG:
            if p in self.specials:
                out["stt.canary.special.%s_id" % p.strip("<>|")] = self.specials[p]
        for lang in self.cfg["languages"]:
            p = "<|%s|>" % lang
            if p in self.specials:
                out["stt.canary.special.lang.%s_id" % lang] = self.specials[p]
        return out

    def decode(self, ids, keep_control=False):
        """Section 4 decode + section 10 filtering/trim."""
        out = bytearray()
        for i in ids:
            if not 0 <= i < self.V:
                continue
            if not keep_control and self.types[i] == TT_CONTROL:
                continue
            p = self.pieces[i]
            b = p.encode("utf-8")
            if len(b) == 6 and b.startswith(b"<0x") and b.endswith(b">"):
                try:
                    out.append(int(b[3:5], 16))
                    continue
                except ValueError:
                    pass
            out += b.replace("\u2581".encode("utf-8"), b" ")
        s = out.decode("utf-8", errors="replace")
        if not keep_control and s.startswith(" "):
            s = s[1:]
        return s


def dict_lines():
    path = "/usr/share/dict/words"
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        words = [w.strip() for w in f if w.strip() and "'" not in w]
    return [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]


# ----------------------------------------------------------------------------
# Prompt (docs/formats/canary.md section 8.1 / 8.2)
# ----------------------------------------------------------------------------


class PromptError(ValueError):
    pass


def build_prompt(cfg, vocab, task="transcribe", source=None, target=None, pnc=True):
    """Exact prompt ids. Raises PromptError where the runtime reports an
    invalid-argument / unsupported-language error."""
    langs = cfg["languages"]
    xlat = [l for l in langs if l not in cfg["translate_exclude"]]
    pairs = english_pivot_pairs(xlat)
    src = source or "en"
    if src not in langs:
        raise PromptError("unsupported language " + src)
    if task == "translate":
        tgt = target or src
        if tgt not in xlat or "%s>%s" % (src, tgt) not in pairs:
            raise PromptError("unsupported language pair %s>%s" % (src, tgt))
    else:
        tgt = src
    sp = vocab.specials

    def need(piece):
        if piece not in sp:
            raise PromptError("missing special " + piece)
        return sp[piece]

    SRC, TGT = need("<|%s|>" % src), need("<|%s|>" % tgt)
    PNC = need("<|pnc|>" if pnc else "<|nopnc|>")
    if cfg["prompt_format"] == "canary":
        if (task == "translate" or src != tgt) and "<|translate|>" in sp:
            TASK = sp["<|translate|>"]
        else:
            TASK = need("<|transcribe|>")
        return [need("<|startoftranscript|>"), SRC, TASK, TGT, PNC]
    if EMO not in vocab.id_of:
        raise PromptError("missing " + EMO)
    ids = [need("<|startofcontext|>"), need("<|startoftranscript|>"), vocab.id_of[EMO], SRC, TGT, PNC,
           need("<|noitn|>"), need("<|notimestamp|>"), need("<|nodiarize|>")]
    if cfg["tokenizer"] == "single":
        if "\u2581" not in vocab.id_of:
            raise PromptError("missing bare U+2581 piece")
        ids = [vocab.id_of["\u2581"]] + ids
    return ids


def english_pivot_pairs(langs):
    return [p for l in langs if l != "en" for p in ("en>%s" % l, "%s>en" % l)]


# ----------------------------------------------------------------------------
# Weights
# ----------------------------------------------------------------------------


def f16_round(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float64)


def f16_bucket(name):
    """True when the F16 column of docs/formats/canary.md section 3.6 (= the
    quantizer's F16 preset, docs/formats/gguf.md section 9.5) stores the tensor as
    F16: linear weights, the token embedding, conformer pointwise convs.
    Norms, biases, BN, pos_bias_*, pos_enc, pre-encode and depthwise convs stay
    F32."""
    if name == "dec.embed.token.weight":
        return True
    if (name.endswith(".bias") or ".bn." in name or name.endswith(("running_mean", "running_var"))
            or ("norm_" in name and name.endswith(".weight")) or name.endswith("_norm.weight")
            or name.endswith((".embed.norm.weight", ".norm1.weight", ".norm2.weight", ".norm3.weight"))
            or name == "dec.norm.weight" or name.endswith((".pos_bias_u", ".pos_bias_v", ".pos_enc"))):
        return False
    if name.startswith("enc.blocks.") and name.endswith((".conv.pointwise1.weight", ".conv.pointwise2.weight")):
        return True
    if ".conv." in name and name.endswith(".weight"):
        return False
    return True


def fixed_pos_enc(n, d):
    """NeMo's frozen sinusoidal decoder table, divided by sqrt(d) (docs/formats/canary.md
    §3.4): sin on even channels, cos on odd."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    div = np.exp(np.arange(0, d, 2, dtype=np.float64) * -(math.log(10000.0) / d))[None, :]
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)
    return pe / math.sqrt(d)


EOS_HORIZON = 128  # the EOS clock ramps monotonically over this many positions


def eos_channel(d, max_position):
    """The sin channel of the positional table whose frequency makes it a
    monotone ramp over the whole decoder context (used to end decoding)."""
    best = None
    for j in range(d // 2):
        w = math.exp(-2 * j * math.log(10000.0) / d)
        if w * max_position <= 1.4:
            best = 2 * j
            break
    return best


def init_decoder(cfg, vocab, rng, knobs):
    """Random decoder weights (float64 numpy, PyTorch shapes) in file order.

    Why it decodes 'meaningfully': token embedding rows have equal norms
    (knob embed_norm = 1, comparable to the positional rows, so position
    matters); sublayer output projections are scaled by sub_scale (no single
    hub token wins everywhere); the final norm has random-sign gamma so
    logits spread widely (big argmax margins); one positional channel (a slow
    sine that ramps monotonically over EOS_HORIZON positions) is reserved as
    an 'EOS clock': no token embedding and no sublayer writes to it, and only
    the EOS head row reads it, so EOS wins after a number of steps set by the
    EOS head bias. Control tokens (tags) get a negative head bias so the text
    is mostly ordinary pieces."""
    d, ff, V, L = cfg["d_dec"], cfg["dec_ff"], vocab.V, cfg["dec_layers"]
    e = eos_channel(d, min(cfg["max_position"], EOS_HORIZON))
    W = OrderedDict()

    def lin(o, i, scale=1.0):
        return rng.standard_normal((o, i)) * scale / math.sqrt(i)

    def norm(prefix):
        W[prefix + ".weight"] = 1.0 + 0.1 * rng.standard_normal(d)
        W[prefix + ".bias"] = 0.1 * rng.standard_normal(d)

    # token rows: zero in the EOS channel, zero-mean over the others (so the
    # embedding norm's mean is token-independent), equal norms
    E = rng.standard_normal((V, d))
    E[:, e] = 0.0
    E -= E.sum(axis=1, keepdims=True) / (d - 1)
    E[:, e] = 0.0
    E *= knobs["embed_norm"] / np.linalg.norm(E, axis=1, keepdims=True)
    W["dec.embed.token.weight"] = E
    W["dec.embed.pos_enc"] = fixed_pos_enc(cfg["max_position"], d)
    norm("dec.embed.norm")
    W["dec.embed.norm.weight"][e] = knobs["eos_gain"]
    W["dec.embed.norm.bias"][e] = 0.0
    for i in range(L):
        p = "dec.layer.%d." % i
        for sub, qk in (("self_attn", knobs["qk_self"]), ("cross_attn", knobs["qk_cross"])):
            norm(p + ("norm1" if sub == "self_attn" else "norm2"))
            for n, s in (("q", qk), ("k", qk), ("v", 1.0), ("o", 1.0)):
                W[p + sub + ".%s.weight" % n] = lin(d, d, s)
                W[p + sub + ".%s.bias" % n] = 0.1 * rng.standard_normal(d)
        norm(p + "norm3")
        W[p + "ffn.up.weight"] = lin(ff, d)
        W[p + "ffn.up.bias"] = 0.1 * rng.standard_normal(ff)
        W[p + "ffn.down.weight"] = lin(d, ff)
        W[p + "ffn.down.bias"] = 0.1 * rng.standard_normal(d)
        for n in (p + "self_attn.o", p + "cross_attn.o", p + "ffn.down"):  # nothing writes the EOS clock
            W[n + ".weight"] *= knobs["sub_scale"]
            W[n + ".weight"][e, :] = 0.0
            W[n + ".bias"][e] = 0.0
    norm("dec.norm")
    W["dec.norm.weight"] = np.sign(rng.standard_normal(d)) * knobs["final_gain"] * (
        1.0 + 0.1 * rng.standard_normal(d))
    W["dec.norm.weight"][e] = 1.0
    W["dec.norm.bias"][e] = 0.0
    H = lin(V, d)
    H[:, e] = 0.0
    H[vocab.eos, :] = 0.0
    H[vocab.eos, e] = knobs["eos_slope"]
    b = 0.1 * rng.standard_normal(V)
    for i, t in enumerate(vocab.types):
        if t != TT_NORMAL or vocab.pieces[i] == "<unk>":  # incl. the sub-tokenizers' own <unk> pieces
            b[i] -= knobs["control_penalty"]
    b[vocab.eos] = knobs["eos_bias"]
    W["dec.head.weight"] = H
    W["dec.head.bias"] = b
    return reorder_decoder(W, L)


def reorder_decoder(W, L):
    """Catalog order of section 3.4 (the converter's table order)."""
    names = ["dec.embed.token.weight", "dec.embed.pos_enc", "dec.embed.norm.weight", "dec.embed.norm.bias"]
    for i in range(L):
        p = "dec.layer.%d." % i
        names += [p + "norm1.weight", p + "norm1.bias"]
        names += [p + "self_attn.%s.%s" % (n, k) for n in "qkvo" for k in ("weight", "bias")]
        names += [p + "norm2.weight", p + "norm2.bias"]
        names += [p + "cross_attn.%s.%s" % (n, k) for n in "qkvo" for k in ("weight", "bias")]
        names += [p + "norm3.weight", p + "norm3.bias"]
        names += [p + "ffn.up.weight", p + "ffn.up.bias", p + "ffn.down.weight", p + "ffn.down.bias"]
    names += ["dec.norm.weight", "dec.norm.bias", "dec.head.weight", "dec.head.bias"]
    assert set(names) == set(W), set(W) ^ set(names)
    return OrderedDict((n, W[n]) for n in names)


DEFAULT_KNOBS = dict(embed_norm=1.0, sub_scale=0.3, qk_self=1.5, qk_cross=2.0, final_gain=6.0, eos_gain=30.0,
                     eos_slope=1.0, eos_bias=0.0, control_penalty=2.0)


# ----------------------------------------------------------------------------
# Decoder (section 7) and greedy decoding (section 8.3)
# ----------------------------------------------------------------------------


class Decoder:
    def __init__(self, cfg, W, dtype=torch.float64, kv_f16=False):
        self.cfg = cfg
        self.dtype = dtype
        self.kv_f16 = kv_f16  # store self/cross K/V rounded to F16 (upstream's default cache type)
        self.W = {k: torch.as_tensor(np.asarray(v), dtype=dtype) for k, v in W.items() if k.startswith("dec.")}
        self.proj = None
        if "enc.proj.weight" in W:
            self.proj = (torch.as_tensor(W["enc.proj.weight"], dtype=dtype),
                         torch.as_tensor(W["enc.proj.bias"], dtype=dtype))
        self.d, self.h = cfg["d_dec"], cfg["dec_heads"]
        self.n_ctx = cfg["max_position"]

    def project(self, enc):
        enc = enc.to(self.dtype)
        if self.proj is None:
            return enc
        return enc @ self.proj[0].T + self.proj[1]

    def _ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.W[p + ".weight"], self.W[p + ".bias"], LN_EPS)

    def _lin(self, x, p):
        return x @ self.W[p + ".weight"].T + self.W[p + ".bias"]

    def _attend(self, q, k, v, mask=None):
        """q [n, d], k/v [m, d] -> [n, d]; heads are channel slices."""
        n, m, h = q.shape[0], k.shape[0], self.h
        dh = self.d // h
        qh = q.reshape(n, h, dh).transpose(0, 1)
        kh = k.reshape(m, h, dh).transpose(0, 1)
        vh = v.reshape(m, h, dh).transpose(0, 1)
        s = qh @ kh.transpose(1, 2) / math.sqrt(dh)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return (torch.softmax(s, dim=-1) @ vh).transpose(0, 1).reshape(n, self.d)

    def _kv(self, x):
        return x.to(torch.float16).to(self.dtype) if self.kv_f16 else x

    def cross_kv(self, enc):
        """Per layer K/V of the (projected) encoder output, once per utterance."""
        return [(self._kv(self._lin(enc, "dec.layer.%d.cross_attn.k" % i)),
                 self._kv(self._lin(enc, "dec.layer.%d.cross_attn.v" % i))) for i in range(self.cfg["dec_layers"])]

    def step(self, ids, cache, ckv):
        """Feed tokens `ids` at positions len(cache)..; extends the self K/V
        cache in place; returns logits [len(ids), V]."""
        n0 = cache["n"]
        n = len(ids)
        if n0 + n > self.n_ctx:
            raise RuntimeError("decoder context full")
        x = self.W["dec.embed.token.weight"][torch.as_tensor(ids)] + self.W["dec.embed.pos_enc"][n0:n0 + n]
        x = self._ln(x, "dec.embed.norm")
        mask = torch.arange(n0 + n)[None, :] <= (n0 + torch.arange(n))[:, None]  # causal
        for i in range(self.cfg["dec_layers"]):
            p = "dec.layer.%d." % i
            y = self._ln(x, p + "norm1")
            k = self._kv(self._lin(y, p + "self_attn.k"))
            v = self._kv(self._lin(y, p + "self_attn.v"))
            cache["k"][i] = k if n0 == 0 else torch.cat([cache["k"][i], k])
            cache["v"][i] = v if n0 == 0 else torch.cat([cache["v"][i], v])
            q = self._lin(y, p + "self_attn.q")
            x = x + self._lin(self._attend(q, cache["k"][i], cache["v"][i], mask), p + "self_attn.o")
            y = self._ln(x, p + "norm2")
            q = self._lin(y, p + "cross_attn.q")
            x = x + self._lin(self._attend(q, ckv[i][0], ckv[i][1]), p + "cross_attn.o")
            y = self._ln(x, p + "norm3")
            x = x + self._lin(torch.relu(self._lin(y, p + "ffn.up")), p + "ffn.down")
        cache["n"] = n0 + n
        h = self._ln(x, "dec.norm")
        return self._lin(h, "dec.head")

    def new_cache(self):
        L = self.cfg["dec_layers"]
        return {"n": 0, "k": [None] * L, "v": [None] * L}


def top2_margin(logits):
    v, _ = torch.topk(logits, 2)
    return (v[0] - v[1]).item()


def greedy(dec, enc, prompt, eos, n_ctx=None, suppress_eos=False, max_steps=None):
    """Section 8.3. Returns dict(tokens, truncated, logits0, margins, eos_gap):
    eos_gap[t] = (best non-EOS logit) - (EOS logit) at generated step t."""
    n_ctx = min(n_ctx or dec.n_ctx, dec.n_ctx)
    P = len(prompt)
    max_tokens = min(512, n_ctx - P)
    if max_steps is not None:
        max_tokens = max_steps
    ckv = dec.cross_kv(enc)  # enc is already projected
    cache = dec.new_cache()
    lg = dec.step(prompt, cache, ckv)[-1]
    logits0 = lg.clone()
    out, margins, gaps = [], [], []

    def pick(lg):
        other = lg.clone()
        other[eos] = float("-inf")
        gaps.append((other.max() - lg[eos]).item())
        z = other if suppress_eos else lg
        margins.append(top2_margin(z))
        return int(torch.argmax(z).item())  # first index on ties

    tok = pick(lg)
    if tok != eos:
        out.append(tok)
    n_past = P
    step = 1
    while step < max_tokens and tok != eos:
        if n_past + 1 > n_ctx:
            break
        lg = dec.step([tok], cache, ckv)[-1]
        n_past += 1
        tok = pick(lg)
        if tok != eos:
            out.append(tok)
        step += 1
    return dict(tokens=out, truncated=tok != eos, logits0=logits0, margins=margins, eos_gap=gaps)


# ----------------------------------------------------------------------------
# Encoder (tools/ref/fastconformer.py) and the full model
# ----------------------------------------------------------------------------


def fc_config(cfg):
    return FCConfig(n_layers=cfg["enc_layers"], d_model=cfg["d_enc"], n_heads=cfg["enc_heads"], d_ff=cfg["enc_ff"],
                    conv_kernel=cfg["conv_kernel"], sub_channels=cfg["sub_channels"], n_mels=N_MELS,
                    use_bias=True, xscaling=False)


def init_weights(cfg, vocab, knobs):
    """All tensors (float64 numpy, PyTorch shapes) in file order (converter
    order: pre-encode, blocks, projection, decoder)."""
    g = torch.Generator().manual_seed(cfg["seed"])
    enc = FastConformerEncoder(fc_config(cfg)).double().randomize_(g)
    W = OrderedDict((k, v.astype(np.float64)) for k, v in enc.gguf_tensors().items())
    del enc
    rng = np.random.default_rng(knobs.get("dec_seed", cfg["seed"] + 1000))
    if cfg["d_enc"] != cfg["d_dec"]:
        W["enc.proj.weight"] = rng.standard_normal((cfg["d_dec"], cfg["d_enc"])) / math.sqrt(cfg["d_enc"])
        W["enc.proj.bias"] = 0.1 * rng.standard_normal(cfg["d_dec"])
    W.update(init_decoder(cfg, vocab, rng, knobs))
    return W


def model_weights(cfg, vocab, knobs):
    """init_weights, F16-rounded per section 3.6 for configs shipped as F16
    only (so every golden of such a config is exact for the F16 file)."""
    W = init_weights(cfg, vocab, knobs)
    return f16_weights(W) if cfg.get("f16_only") else W


def f16_weights(W):
    return OrderedDict((k, f16_round(v) if f16_bucket(k) else v) for k, v in W.items())


class Model:
    def __init__(self, cfg, W, dtype=torch.float64, kv_f16=False):
        self.cfg = cfg
        self.enc = FastConformerEncoder(fc_config(cfg))
        self.enc = self.enc.double() if dtype == torch.float64 else self.enc.float()
        self.enc.load_gguf_tensors(OrderedDict((k, v) for k, v in W.items() if k.startswith("enc.")
                                               and not k.startswith("enc.proj.")))
        self.dec = Decoder(cfg, W, dtype, kv_f16)

    def encode(self, mel):
        """Encoder output after the optional projection, [T_enc, d_dec]."""
        _, out = self.enc(torch.as_tensor(mel))
        return self.dec.project(out)


# ----------------------------------------------------------------------------
# GGUF (docs/formats/canary.md section 2-3)
# ----------------------------------------------------------------------------


def tensor_count(cfg):
    proj = 2 if cfg["d_enc"] != cfg["d_dec"] else 0
    return 12 + 39 * cfg["enc_layers"] + proj + 4 + 26 * cfg["dec_layers"] + 2 + 2


def write_metadata(w, cfg, vocab, file_type):
    langs = cfg["languages"]
    xlat = [l for l in langs if l not in cfg["translate_exclude"]]
    w.add_string("general.architecture", "canary")
    w.add_string("general.name", "Canary reference (random weights, %s geometry)" % cfg["variant"])
    w.add_string("general.basename", "canary")
    w.add_string("general.version", "ref")
    w.add_string("general.size_label", "tiny" if cfg["d_enc"] < 256 else "1B")
    w.add_string("general.author", "transcribe-c tools/ref")
    w.add_string("general.license", "cc-by-4.0")
    w.add_array("general.languages", langs)
    w.add_string("stt.variant", cfg["variant"])
    w.add_bool("stt.capability.translate", True)
    w.add_bool("stt.capability.lang_detect", False)
    w.add_array("stt.translation.target_languages", xlat)
    w.add_array("stt.translation.pairs", english_pivot_pairs(xlat))
    w.add_bool("stt.capability.timestamps", "<|timestamp|>" in vocab.specials)
    w.add_string("tokenizer.ggml.model", "unigram")
    w.add_array("tokenizer.ggml.tokens", vocab.pieces)
    w.add_array("tokenizer.ggml.scores", [float(s) for s in vocab.scores], gw.FLOAT32)
    w.add_array("tokenizer.ggml.token_type", vocab.types, gw.INT32)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.bos_token_id", vocab.specials["<|startoftranscript|>"])
    w.add_uint32("tokenizer.ggml.eos_token_id", vocab.eos)
    w.add_uint32("tokenizer.ggml.padding_token_id", vocab.specials["<pad>"])
    w.add_array("stt.canary.tokenizer.lang_codes", vocab.codes)
    w.add_array("stt.canary.tokenizer.lang_offsets", vocab.offsets, gw.INT32)
    w.add_array("stt.canary.tokenizer.lang_sizes", vocab.sizes, gw.INT32)
    w.add_bool("stt.canary.tokenizer.single_sp", cfg["tokenizer"] == "single")
    w.add_string("stt.canary.tokenizer.prompt_format", cfg["prompt_format"])
    for k, v in vocab.catalog_ids().items():
        w.add_uint32(k, v)
    e = "stt.canary.encoder."
    w.add_uint32(e + "n_layers", cfg["enc_layers"])
    w.add_uint32(e + "d_model", cfg["d_enc"])
    w.add_uint32(e + "n_heads", cfg["enc_heads"])
    w.add_uint32(e + "d_ff", cfg["enc_ff"])
    w.add_uint32(e + "conv_kernel", cfg["conv_kernel"])
    w.add_uint32(e + "subsampling_factor", 8)
    w.add_uint32(e + "subsampling_channels", cfg["sub_channels"])
    w.add_uint32(e + "pos_emb_max_len", POS_EMB_MAX_LEN)
    w.add_bool(e + "use_bias", True)
    d = "stt.canary.decoder."
    w.add_uint32(d + "n_layers", cfg["dec_layers"])
    w.add_uint32(d + "d_model", cfg["d_dec"])
    w.add_uint32(d + "n_heads", cfg["dec_heads"])
    w.add_uint32(d + "d_ff", cfg["dec_ff"])
    w.add_uint32(d + "max_position", cfg["max_position"])
    w.add_uint32(d + "vocab_size", vocab.V)
    w.add_string(d + "activation", "relu")
    w.add_bool(d + "pre_ln", True)
    w.add_bool(d + "learn_positional_encodings", False)
    w.add_bool(d + "encoder_decoder_proj", cfg["d_enc"] != cfg["d_dec"])
    f = "stt.frontend."
    w.add_string(f + "type", "mel")
    w.add_uint32(f + "num_mels", N_MELS)
    w.add_uint32(f + "sample_rate", 16000)
    w.add_uint32(f + "n_fft", 512)
    w.add_uint32(f + "win_length", 400)
    w.add_uint32(f + "hop_length", 160)
    w.add_string(f + "window", "hann")
    w.add_string(f + "normalize", "per_feature")
    w.add_float32(f + "dither", 1e-5)  # training value, never applied (docs/formats/canary.md §2.7)
    w.add_float32(f + "pre_emphasis", 0.97)
    w.add_float32(f + "f_min", 0.0)
    w.add_float32(f + "f_max", 8000.0)
    w.add_bool(f + "log", True)
    # like the quantizer: general.file_type is the last scalar key (docs/formats/gguf.md §9.5)
    w.add_uint32("general.file_type", file_type)


def write_gguf(path, cfg, vocab, W, dtype):
    w = gw.GGUFWriter()
    write_metadata(w, cfg, vocab, 0 if dtype == "F32" else 1)
    for name, a in W.items():
        t = gw.GGML_F16 if (dtype == "F16" and f16_bucket(name)) else gw.GGML_F32
        w.add_tensor(name, np.asarray(a, dtype=np.float32), t)
    assert len(w.tensors) == tensor_count(cfg), (len(w.tensors), tensor_count(cfg))
    return w.write(path)


def verify_gguf(path, cfg, vocab, W, dtype):
    kv, ts = gw.read_gguf(path)
    assert kv["general.architecture"] == (gw.STRING, "canary")
    assert kv["tokenizer.ggml.tokens"][1][1] == vocab.pieces
    assert kv["stt.canary.decoder.vocab_size"] == (gw.UINT32, vocab.V)
    assert list(ts) == list(W), "tensor order"
    for name, a in W.items():
        t, ne, got = ts[name]
        f16 = dtype == "F16" and f16_bucket(name)
        assert t == (gw.GGML_F16 if f16 else gw.GGML_F32), name
        assert ne == list(reversed(a.shape)) or (a.ndim == 0 and ne == [1]), (name, ne, a.shape)
        want = np.asarray(a, dtype=np.float32)
        if f16:
            want = want.astype(np.float16).astype(np.float32)
        assert np.array_equal(got.reshape(want.shape), want), name


# ----------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------

# (stem, task, source, target, pnc)
RUNS = [("jfk.transcribe", "transcribe", "en", None, True),
        ("jfk.translate", "translate", "en", "de", True),
        ("jfk.nopnc", "transcribe", "en", None, False)]

MIN_TOKENS, MAX_TOKENS = 10, 40
# (name, first sample, sample count) of jfk.wav: 0.25 s, and the minimum
# input of section 9 (257 samples: T_mel 2, T_enc 1)
CLIPS = [("jfk_short", 64000, 4000), ("jfk_min", 40000, 257)]
CTX_EXTRA = 8  # n_ctx = P + 8 for the truncation golden
MIN_DISTINCT = 6
MAX_RUN = 4  # longest run of one repeated token
MAX_TAG_FRACTION = 0.15


def longest_run(seq):
    best, n = 0, 0
    for i, t in enumerate(seq):
        n = n + 1 if i and seq[i - 1] == t else 1
        best = max(best, n)
    return best  # reject seeds whose greedy output is one repeated token


def choose_eos_bias(gap_runs, max_tokens_list):
    """gap_runs[r][t] = best non-EOS logit - EOS logit (EOS bias 0) at
    generated step t of run r (EOS suppressed). With head bias b on EOS, run r
    stops at the first t where gap < b. Pick b (midpoint of the widest feasible
    interval) so every run stops after MIN..MAX tokens or, failing that, runs
    to its cap. Returns (b, margin) or (None, 0)."""
    cands = sorted(set(g for gaps in gap_runs for g in gaps))
    best = (None, 0.0)
    for lo, hi in zip(cands, cands[1:]):
        b = 0.5 * (lo + hi)
        ok = True
        m = 0.5 * (hi - lo)
        for gaps, cap in zip(gap_runs, max_tokens_list):
            stop = next((t for t, g in enumerate(gaps) if g < b), None)
            if stop is None:
                if len(gaps) < cap:
                    ok = False
                continue
            if not MIN_TOKENS <= stop <= MAX_TOKENS:
                ok = False
        if ok and m > best[1]:
            best = (b, m)
    return best


def run_all(model, enc, prompts, eos, n_ctx=None):
    return {stem: greedy(model.dec, enc, p, eos, n_ctx=n_ctx) for stem, p in prompts.items()}


def write_ids(path, ids):
    np.save(path, np.asarray(ids, dtype=np.int32).reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="tiny-canary", choices=sorted(CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", default=None, help="folder with jfk.wav")
    ap.add_argument("--no-goldens", action="store_true")
    ap.add_argument("--search", type=int, default=None,
                    help="decoder seeds tried for the largest margin (default: per config)")
    ap.add_argument("--dec-seed", type=int, default=None, help="use this decoder seed (no search)")
    ap.add_argument("--knob", action="append", default=[], help="name=value override of an init knob")
    args = ap.parse_args()
    torch.set_num_threads(1)

    shared = os.environ.get("TR_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
    samples = args.samples or os.path.join(shared, "samples")
    cfg = dict(CONFIGS[args.config])
    knobs = dict(DEFAULT_KNOBS)
    for kv in args.knob:
        k, v = kv.split("=")
        knobs[k] = int(v) if k == "dec_seed" else float(v)
    os.makedirs(args.out, exist_ok=True)
    log = print
    vocab = Vocab(cfg)
    log("vocab: %d pieces, eos %d, specials %d, codes %s sizes %s" % (
        vocab.V, vocab.eos, len(vocab.specials), vocab.codes, vocab.sizes))
    prompts = OrderedDict((stem, build_prompt(cfg, vocab, task, src, tgt, pnc))
                          for stem, task, src, tgt, pnc in RUNS)
    for stem, p in prompts.items():
        log("prompt %-16s %s" % (stem, p))
    # section 8.2 rejections: unknown source, no target (pairs present), a
    # non-pivot pair, a target outside target_languages
    for bad in (("transcribe", "xx", None), ("translate", "en", None), ("translate", "de", "fr"),
                ("translate", "en", "lv")):
        try:
            build_prompt(cfg, vocab, *bad)
            raise AssertionError("accepted %s" % (bad,))
        except PromptError:
            pass

    pcm, rate = mel_ref.read_wav(os.path.join(samples, "jfk.wav"))
    assert rate == 16000
    mel = mel_ref.nemo_logmel(pcm, N_MELS, "reflect")  # section 5 (reflect, all-frame stats)
    log("mel %s, T_enc %d" % (mel.shape, t_enc_of(mel.shape[1])))

    if cfg["d_enc"] >= 256:
        return write_big(args, cfg, vocab, knobs, mel, prompts, log)

    # encoder once (its weights do not depend on the decoder seed)
    g = torch.Generator().manual_seed(cfg["seed"])
    fc = FastConformerEncoder(fc_config(cfg)).double().randomize_(g)
    _, enc_raw = fc(torch.as_tensor(mel))
    caps = [min(512, cfg["max_position"] - len(p)) for p in prompts.values()]

    seeds = [args.dec_seed] if args.dec_seed is not None else list(range(args.search or cfg["search"]))
    best = None
    for s in seeds:
        kn = dict(knobs, dec_seed=s, eos_bias=0.0)
        W = model_weights(cfg, vocab, kn)
        m = Model(cfg, W)
        enc = m.dec.project(enc_raw)
        gaps, margins, toks_runs = [], [], []
        for p, cap in zip(prompts.values(), caps):
            r = greedy(m.dec, enc, p, vocab.eos, suppress_eos=True)
            gaps.append(r["eos_gap"])
            margins.append(r["margins"])
            toks_runs.append(r["tokens"])
        b, bm = choose_eos_bias(gaps, caps)
        if b is None:
            log("seed %d: no EOS bias gives %d..%d tokens" % (s, MIN_TOKENS, MAX_TOKENS))
            continue
        # argmax margins of the steps actually taken with this bias
        mm = []
        seqs = []
        for gp, mg, toks in zip(gaps, margins, toks_runs):
            stop = next((t for t, x in enumerate(gp) if x < b), len(gp) - 1)
            mm.append(min(mg[:stop + 1]))
            seqs.append(tuple(toks[:stop]))
        distinct = min(len(set(q)) for q in seqs)
        if distinct < MIN_DISTINCT or len(set(seqs)) < len(seqs):
            log("seed %d: degenerate output (%d distinct tokens, %d distinct runs)" % (s, distinct, len(set(seqs))))
            continue
        # exercise the section 10 text rules: some run emits a CONTROL tag, and
        # some run's first kept piece starts with U+2581 (one leading space trimmed)
        kept = [[t for t in q if vocab.types[t] != TT_CONTROL] for q in seqs]
        if not any(len(k) < len(q) for k, q in zip(kept, seqs)) or not any(
                k and vocab.pieces[k[0]].startswith("\u2581") for k in kept):
            log("seed %d: no CONTROL tag or no leading-space text" % s)
            continue
        # ...but mostly text, without long runs of one token
        tags = sum(len(q) - len(k) for k, q in zip(kept, seqs)) / max(1, sum(len(q) for q in seqs))
        if tags > MAX_TAG_FRACTION or max(longest_run(q) for q in seqs) > MAX_RUN:
            log("seed %d: too many tags (%.2f) or a long repeat" % (s, tags))
            continue
        score = min(min(mm), bm)
        log("seed %d: eos_bias %.4f (margin %.4f), argmax margin %.4f" % (s, b, bm, min(mm)))
        if best is None or score > best[0]:
            best = (score, s, b)
    assert best is not None, "no decoder seed works"
    _, dec_seed, eos_bias = best
    knobs.update(dec_seed=dec_seed, eos_bias=eos_bias)
    log("chosen decoder seed %d, eos_bias %.6f" % (dec_seed, eos_bias))

    W = model_weights(cfg, vocab, knobs)
    W16 = f16_weights(W)
    base = "%s-ref" % args.config
    for dt in ("F16",) if cfg.get("f16_only") else ("F32", "F16"):
        path = os.path.join(args.out, "%s-%s.gguf" % (base, dt))
        write_gguf(path, cfg, vocab, W, dt)
        verify_gguf(path, cfg, vocab, W, dt)
        log("wrote %s (%.3f MB)" % (path, os.path.getsize(path) / 1e6))
    if args.no_goldens:
        return

    model = Model(cfg, W)
    model16 = Model(cfg, W16)
    enc = model.encode(mel)
    enc16 = model16.encode(mel)
    res = run_all(model, enc, prompts, vocab.eos)
    res16 = run_all(model16, enc16, prompts, vocab.eos)

    mel_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), "jfk.mel.npy")
    np.save(mel_path, mel.astype(np.float32))
    np.save(os.path.join(args.out, "jfk.enc.npy"), enc.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "jfk.enc.f16.npy"), enc16.numpy().astype(np.float32))
    # intermediate stages (F32 weights) to localise a mismatch: pre-encode
    # output (before block 0) and, with a projection, the encoder output before it
    pre, enc_raw = model.enc(torch.as_tensor(mel))
    np.save(os.path.join(args.out, "jfk.pre.npy"), pre.numpy().astype(np.float32))
    if model.dec.proj is not None:
        np.save(os.path.join(args.out, "jfk.enc.noproj.npy"), enc_raw.numpy().astype(np.float32))
    report = ["config %s decoder_seed %d eos_bias %.6f" % (args.config, dec_seed, eos_bias)]
    summary = []
    for stem, p in prompts.items():
        r, r16 = res[stem], res16[stem]
        write_ids(os.path.join(args.out, stem + ".prompt.npy"), p)
        write_ids(os.path.join(args.out, stem + ".tokens.npy"), r["tokens"])
        write_ids(os.path.join(args.out, stem + ".f16.tokens.npy"), r16["tokens"])
        np.save(os.path.join(args.out, stem + ".logits0.npy"), r["logits0"].numpy().astype(np.float32))
        text, raw = vocab.decode(r["tokens"]), vocab.decode(r["tokens"], keep_control=True)
        with open(os.path.join(args.out, stem + ".text.txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        summary += ["[%s]" % stem, "prompt %s" % ",".join(map(str, p)),
                    "tokens %s" % ",".join(map(str, r["tokens"])), "n_tokens %d" % len(r["tokens"]),
                    "truncated %d" % r["truncated"], "text %s" % text, "raw %s" % raw,
                    "f16_tokens %s" % ",".join(map(str, r16["tokens"])), "f16_truncated %d" % r16["truncated"],
                    "f16_text %s" % vocab.decode(r16["tokens"]), ""]
        report.append("%s n=%d truncated=%d min_argmax_margin %.6f | f16 n=%d truncated=%d min_margin %.6f "
                      "same_as_f32 %s" % (stem, len(r["tokens"]), r["truncated"], min(r["margins"]),
                                          len(r16["tokens"]), r16["truncated"], min(r16["margins"]),
                                          r16["tokens"] == r["tokens"]))
    # truncation: the transcribe prompt with the session context lowered to
    # P + CTX_EXTRA (section 8.3: budget min(512, n_ctx - P)) -> OUTPUT_TRUNCATED
    # with the first CTX_EXTRA tokens of the full decode.
    stem, p = RUNS[0][0], prompts[RUNS[0][0]]
    n_ctx = len(p) + CTX_EXTRA
    rt = greedy(model.dec, enc, p, vocab.eos, n_ctx=n_ctx)
    assert rt["truncated"] and rt["tokens"] == res[stem]["tokens"][:CTX_EXTRA]
    write_ids(os.path.join(args.out, stem + ".ctx.tokens.npy"), rt["tokens"])
    summary += ["[%s.ctx]" % stem, "n_ctx %d" % n_ctx, "prompt %s" % ",".join(map(str, p)),
                "tokens %s" % ",".join(map(str, rt["tokens"])), "truncated %d" % rt["truncated"],
                "text %s" % vocab.decode(rt["tokens"]), ""]
    # short clips cut from jfk.wav (edge cases of padding, statistics and
    # pre-encode lengths): mel, encoder output and the transcribe decode
    for clip, start, count in CLIPS:
        x = pcm[start:start + count]
        cm = mel_ref.nemo_logmel(x, N_MELS, "reflect")
        ce = model.encode(cm)
        p = prompts[RUNS[0][0]]
        r = greedy(model.dec, ce, p, vocab.eos)
        np.save(os.path.join(args.out, clip + ".mel.npy"), cm.astype(np.float32))
        np.save(os.path.join(args.out, clip + ".enc.npy"), ce.numpy().astype(np.float32))
        write_ids(os.path.join(args.out, clip + ".tokens.npy"), r["tokens"])
        summary += ["[%s.transcribe]" % clip, "samples %d..%d of jfk.wav" % (start, start + count),
                    "T_mel %d T_enc %d" % (cm.shape[1], ce.shape[0]), "prompt %s" % ",".join(map(str, p)),
                    "tokens %s" % ",".join(map(str, r["tokens"])), "n_tokens %d" % len(r["tokens"]),
                    "truncated %d" % r["truncated"], "text %s" % vocab.decode(r["tokens"]), ""]
        report.append("%s.transcribe (T_mel %d, T_enc %d) n=%d truncated=%d min_argmax_margin %.6f" % (
            clip, cm.shape[1], ce.shape[0], len(r["tokens"]), r["truncated"], min(r["margins"])))
    with open(os.path.join(args.out, "decodes.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(summary))

    # KV-cache check: one causal pass over prompt + generated tokens must
    # reproduce every greedy choice (and EOS at the end).
    for stem, p in prompts.items():
        r = res[stem]
        seq = p + r["tokens"]
        lg = model.dec.step(seq, model.dec.new_cache(), model.dec.cross_kv(enc))
        want = r["tokens"] + ([] if r["truncated"] else [vocab.eos])
        got = torch.argmax(lg[len(p) - 1:], dim=-1).tolist()[:len(want)]
        assert got == want, (stem, got, want)
        assert torch.allclose(lg[len(p) - 1], r["logits0"], atol=1e-9)
    report.append("kv-cache decode == single causal pass: OK")

    # float32 robustness: the same decodes computed in float32 (as a C engine
    # does) must give the same tokens.
    for tag, WW, rr, e64, kv16 in (("f32", W, res, enc, False), ("f16w_f32", W16, res16, enc16, False),
                                   ("f32_kvf16", W, res, enc, True), ("f16w_f32_kvf16", W16, res16, enc16, True)):
        m32 = Model(cfg, WW, dtype=torch.float32, kv_f16=kv16)
        e32 = m32.encode(mel.astype(np.float32))
        r32 = run_all(m32, e32, prompts, vocab.eos)
        same = all(r32[s]["tokens"] == rr[s]["tokens"] for s in prompts)
        l0 = rr[RUNS[0][0]]["logits0"]
        report.append("%s: enc_maxabs %.3g (enc absmax %.2f) logits0_maxabs %.3g (absmax %.2f) tokens_identical %s" % (
            tag, (e32.double() - e64).abs().max().item(), e64.abs().max().item(),
            (r32[RUNS[0][0]]["logits0"].double() - l0).abs().max().item(), l0.abs().max().item(), same))
    with open(os.path.join(args.out, "margins.txt"), "w") as f:
        f.write("\n".join(report) + "\n")
    log("\n".join(report))
    log("\n".join(summary))


def write_big(args, cfg, vocab, knobs, mel, prompts, log):
    """Benchmark file (canary-1b-flash geometry): float32 throughout, tensors
    streamed to disk one at a time. The EOS bias is tuned on the jfk
    transcribe prompt so the benchmark decodes a realistic ~25 tokens."""
    t0 = time.time()
    g = torch.Generator().manual_seed(cfg["seed"])
    fc = FastConformerEncoder(fc_config(cfg)).float().randomize_(g)
    log("encoder initialised (%.0f s)" % (time.time() - t0))
    _, enc_raw = fc(torch.as_tensor(mel, dtype=torch.float32))
    log("encoder forward on jfk (%.0f s)" % (time.time() - t0))
    rng = np.random.default_rng(cfg["seed"] + 1000)
    D = OrderedDict()
    if cfg["d_enc"] != cfg["d_dec"]:
        D["enc.proj.weight"] = rng.standard_normal((cfg["d_dec"], cfg["d_enc"])) / math.sqrt(cfg["d_enc"])
        D["enc.proj.bias"] = 0.1 * rng.standard_normal(cfg["d_dec"])
    D.update(init_decoder(cfg, vocab, rng, dict(knobs, eos_bias=0.0)))
    D = OrderedDict((k, v.astype(np.float32)) for k, v in D.items())
    dec = Decoder(cfg, D, torch.float32)
    enc = dec.project(enc_raw)
    stem = RUNS[0][0]
    target = 25
    r = greedy(dec, enc, prompts[stem], vocab.eos, suppress_eos=True, max_steps=MAX_TOKENS + 1)
    gaps = r["eos_gap"]
    # EOS at the step >= target with the clearest crossing
    best = None
    for t in range(target, min(len(gaps), MAX_TOKENS + 1)):
        lo = gaps[t]
        hi = min(gaps[:t])
        if hi > lo and (best is None or hi - lo > best[1]):
            best = (t, hi - lo, 0.5 * (hi + lo))
    if best is None:
        log("no clean EOS crossing; the benchmark decode runs to its budget")
        eos_bias = -1e4
    else:
        eos_bias = best[2]
        log("EOS after %d tokens (bias %.4f, margin %.4f)" % (best[0], eos_bias, best[1] / 2))
    D["dec.head.bias"][vocab.eos] = np.float32(eos_bias)
    dec = Decoder(cfg, D, torch.float32)
    r = greedy(dec, enc, prompts[stem], vocab.eos)
    log("%s: %d tokens, truncated %d: %s" % (stem, len(r["tokens"]), r["truncated"], vocab.decode(r["tokens"])))

    path = os.path.join(args.out, "%s-ref-F32.gguf" % args.config)
    w = gw.GGUFWriter()
    write_metadata(w, cfg, vocab, 0)
    for name, t in fc._named():
        w.add_tensor_lazy(name, tuple(t.shape), gw.GGML_F32, lambda t=t: t.detach().numpy())
    for name, a in D.items():
        w.add_tensor_lazy(name, a.shape, gw.GGML_F32, lambda a=a: a)
    assert len(w.tensors) == tensor_count(cfg)
    n = w.write_stream(path)
    log("wrote %s (%.1f MB, %.0f s)" % (path, n / 1e6, time.time() - t0))
    with open(os.path.join(args.out, "decode.txt"), "w", encoding="utf-8") as f:
        f.write("prompt %s\ntokens %s\ntruncated %d\ntext %s\n" % (
            ",".join(map(str, prompts[stem])), ",".join(map(str, r["tokens"])), r["truncated"],
            vocab.decode(r["tokens"])))


if __name__ == "__main__":
    main()
