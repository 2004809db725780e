#!/usr/bin/python3
"""Reference byte-level BPE for the transcribe tokenizer tests.

Written from the algorithm text of docs/formats/gguf.md §6.1, independently of the
C code in src/text/, so the two can be compared:

* pre-tokenizers gpt2 / qwen2 / granite as Python `re` patterns, with \\p{L},
  \\p{N} and \\s spelled out as explicit classes built from unicodedata (the
  same classes tok_gen_unicode.py writes into the C table; \\s is the Unicode
  White_Space property, not Python's str.isspace()).
* invalid UTF-8 is carried through as surrogate escapes (U+DC80..U+DCFF), so a
  stray byte is a "symbol" character for the regex, then maps back to its byte.
* GPT-2 bytes-to-unicode map, merge of the lowest-ranked adjacent pair
  (leftmost on ties), one pair at a time.
* rank source: an explicit merges list, or (merges=None) tiktoken style where
  the rank of a pair is the id of the concatenated piece.
"""
import re
import unicodedata

# Unicode White_Space (what \s means for the HF / Rust regex engines).
WHITESPACE = [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
              0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
F_LETTER, F_NUMBER, F_SPACE = 1, 2, 4


def cp_flag(c):
    if c in WHITESPACE:
        return F_SPACE
    cat = unicodedata.category(chr(c))
    if cat[0] == "L":
        return F_LETTER
    if cat[0] == "N":
        return F_NUMBER
    return 0


def unicode_ranges():
    """Sorted, merged (lo, hi, flag) ranges of every code point with a flag."""
    out, prev, start = [], 0, 0
    for c in range(0x110000):
        f = cp_flag(c)
        if f != prev:
            if prev:
                out.append((start, c - 1, prev))
            start, prev = c, f
    if prev:
        out.append((start, 0x10FFFF, prev))
    return out


def _cls(flag):
    parts = []
    for lo, hi, f in unicode_ranges():
        if f == flag:
            parts.append(re.escape(chr(lo)) if lo == hi else
                         re.escape(chr(lo)) + "-" + re.escape(chr(hi)))
    return "".join(parts)


_L, _N, _S = _cls(F_LETTER), _cls(F_NUMBER), _cls(F_SPACE)
_CONTR_CI = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]"
PATTERNS = {
    "gpt2": (f"'s|'t|'re|'ve|'m|'ll|'d| ?[{_L}]+| ?[{_N}]+| ?[^{_S}{_L}{_N}]+"
             f"|[{_S}]+(?![^{_S}])|[{_S}]+"),
    "qwen2": (f"(?:{_CONTR_CI})|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]| ?[^{_S}{_L}{_N}]+[\\r\\n]*"
              f"|[{_S}]*[\\r\\n]+|[{_S}]+(?![^{_S}])|[{_S}]+"),
    "granite": (f"(?:{_CONTR_CI})|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]{{1,3}}| ?[^{_S}{_L}{_N}]+"
                f"|[{_S}]*[\\r\\n]+|[{_S}]+(?![^{_S}])|[{_S}]+"),
}
_COMPILED = {k: re.compile(v) for k, v in PATTERNS.items()}


def pretokenize(data: bytes, flavor: str):
    """Splits raw bytes into pre-token byte strings."""
    text = data.decode("utf-8", "surrogateescape")
    parts = _COMPILED[flavor].findall(text)
    assert "".join(parts) == text, "regex left characters unmatched"
    return [p.encode("utf-8", "surrogateescape") for p in parts]


def bytes_to_unicode():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_MAP = bytes_to_unicode()
BYTE_UNMAP = {v: k for k, v in BYTE_MAP.items()}


def to_piece(data: bytes) -> str:
    return "".join(BYTE_MAP[b] for b in data)


def from_piece(piece: str) -> bytes:
    out = bytearray()
    for ch in piece:
        if ch in BYTE_UNMAP:
            out.append(BYTE_UNMAP[ch])
        else:
            out += ch.encode("utf-8")
    return bytes(out)


def bpe_word(symbols, rank_of):
    """Merges the lowest-ranked adjacent pair (leftmost on ties) until none."""
    symbols = list(symbols)
    while len(symbols) > 1:
        best, best_i = None, -1
        for i in range(len(symbols) - 1):
            r = rank_of(symbols[i], symbols[i + 1])
            if r is not None and (best is None or r < best):
                best, best_i = r, i
        if best is None:
            break
        symbols[best_i:best_i + 2] = [symbols[best_i] + symbols[best_i + 1]]
    return symbols


class ByteBPE:
    """pieces: list of byte-mapped piece strings (index = id); merges: list of
    "left right" strings, or None for rank = id of the concatenation."""

    def __init__(self, pieces, merges=None, control=()):
        self.pieces = pieces
        self.ids = {}
        for i, p in enumerate(pieces):
            self.ids.setdefault(p, i)
        self.control = set(control)
        if merges is not None:
            self.ranks = {}
            for r, m in enumerate(merges):
                sp = m.index(" ", 1)
                self.ranks.setdefault((m[:sp], m[sp + 1:]), r)
            self.rank_of = lambda a, b: self.ranks.get((a, b))
        else:
            def rank_of(a, b):
                i = self.ids.get(a + b)
                return None if i is None or i in self.control else i
            self.rank_of = rank_of

    def encode(self, data: bytes, flavor: str):
        out = []
        for word in pretokenize(data, flavor):
            for sym in bpe_word(to_piece(word), self.rank_of):
                if sym in self.ids:
                    out.append(self.ids[sym])
                else:  # not a vocab entry: one id per code point
                    out.extend(self.ids[ch] for ch in sym if ch in self.ids)
        return out

    def decode_bytes(self, ids):
        return b"".join(from_piece(self.pieces[i]) for i in ids if 0 <= i < len(self.pieces))


def train_bpe(texts, n_merges, flavor="gpt2"):
    """Plain BPE training over byte-mapped pre-tokens; ties broken by the
    lexicographically smallest pair so the output is deterministic."""
    from collections import Counter
    words = Counter()
    for t in texts:
        for w in pretokenize(t.encode("utf-8"), flavor):
            words[tuple(to_piece(w))] += 1
    words = {w: c for w, c in words.items()}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, c in words.items():
            for i in range(len(w) - 1):
                pairs[(w[i], w[i + 1])] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best[0] + " " + best[1])
        new = {}
        for w, c in words.items():
            i, nw = 0, []
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    nw.append(w[i] + w[i + 1])
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            nw = tuple(nw)
            new[nw] = new.get(nw, 0) + c
        words = new
    return merges
