#!/usr/bin/python3
"""Generates the tokenizer parity data in tests/data/text/ (run with Debian's
/usr/bin/python3, which has python3-sentencepiece):

  bpe_vocab.txt, bpe_merges.txt   small byte-level BPE learned here (2000
                                  merges) from a multilingual corpus
  bpe_cases_<pre>.txt             tok_ref.py encodings, pre = gpt2/qwen2/granite
  whisper_cases.txt               tiktoken-style (rank = id) encodings over the
                                  real Whisper vocabulary (shared/vocab, docs/formats/gguf.md §11)
  spm_<model>_vocab.txt           pieces/scores/types of sentencepiece models
  spm_<model>_cases.txt           sentencepiece's own encodings
  utf8_cases.txt                  bytes → bytes.decode("utf-8", "replace")

Every text file is line based: hex fields separated by tabs, '#' comments.
Case lines are "<hex text>\\t<ids separated by spaces>".
"""
import os
import random
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tok_ref  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "text")
SHARED = os.path.abspath(os.path.join(ROOT, "..", "shared"))

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "And so, my fellow Americans: ask not what your country can do for you.",
    "I'm sure you're right, but they'll say it's too late and we'd better go.",
    "DON'T SHOUT! I'M LISTENING. THEY'RE HERE, WE'VE SEEN IT.",
    "She sells sea shells by the sea shore; the shells she sells are surely seashells.",
    "Speech recognition turns audio into text, one token at a time.",
    "Numbers like 3.14159, 2,718 and 1,000,000 appear in 2024-01-15 reports.",
    "Call me at +1 (555) 012-3456 or email someone@example.com today!",
    "Whole Earth Catalog: access to tools. Stay hungry, stay foolish.",
    "It was the best of times, it was the worst of times.",
    "Hello world", "hello   world", "  leading spaces", "trailing spaces   ",
    "tabs\tand\ttabs", "line one\nline two\n\nline four", "windows\r\nline endings\r\n",
    "mixed \t \n whitespace \n\n\t runs", "x" * 40, "ab" * 30,
]
ACCENTED = [
    "Café crème brûlée à la française, s'il vous plaît.",
    "Über die Straße gehen Müller und Schröder; Größe: 1,80 m.",
    "El niño comió jalapeños en São Paulo y Zürich.",
    "Tiếng Việt có nhiều dấu thanh: à á ả ã ạ.",
    "Ærøskøbing og Ålborg ligger i Danmark.",
    "Łódź, Kraków i Gdańsk to polskie miasta.",
    "naïve résumé façade coöperate",
]
CYRILLIC = [
    "Привет, мир! Как дела?", "Съешь же ещё этих мягких французских булок.",
    "Україна — це держава у Східній Європі.", "Москва 2024 год",
]
CJK = [
    "你好，世界！今天天气很好。", "日本語のテキストも正しく処理されます。",
    "東京タワーは333メートルです。", "한국어 문장도 테스트합니다.", "中文和English混合",
]
OTHER = [
    "Γειά σου Κόσμε", "مرحبا بالعالم", "नमस्ते दुनिया", "שלום עולם", "สวัสดีชาวโลก",
    "e\u0301te\u0301 a\u0308bc o\u0302\u0323", "Z\u0351\u036b\u0343a\u0352l\u0350g\u030co\u0364",
    "ﬁne ﬂow №5 ½ ² Ⅻ ①", "\u00a0nbsp\u2003em\u3000ideographic",
]
EMOJI = [
    "I love it 👍🏽!", "Family: 👨\u200d👩\u200d👧\u200d👦 and flag 🏳️\u200d🌈",
    "🎉🎉🎉 party", "smile 😀😃😄 grin", "keycap 1️⃣ #️⃣", "🇺🇸🇫🇷 flags",
]
FRAGMENTS = ENGLISH + ACCENTED + CYRILLIC + CJK + OTHER + EMOJI
SEPS = [" ", " ", " ", "  ", "\n", "\t", ", ", "", "\n\n", " \n ", "'s ", "'LL "]


def make_texts(seed, n):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        k = rnd.randint(1, 5)
        parts = []
        for _ in range(k):
            f = rnd.choice(FRAGMENTS)
            if rnd.random() < 0.5:  # a random slice keeps splits varied
                a = rnd.randint(0, len(f))
                b = rnd.randint(a, len(f))
                f = f[a:b] or f
            parts.append(f)
            parts.append(rnd.choice(SEPS))
        out.append("".join(parts[:-1]))
    return out


def bpe_cases():
    cases = [t.encode() for t in FRAGMENTS + make_texts(7, 260)]
    cases += [b"", b" ", b"   ", b"\n", b"a", b"\xff", b"abc\xffdef", b"\xc3", b"caf\xc3",
              b"\xe2\x82", b"x\xe2\x82y", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80",
              b"\xf4\x90\x80\x80", b"\x80\x80 \xbf", b"a\x01b", b"\xf0\x9f\x98",
              b"it's \xff's", b"  \xff  ", "ﬁ".encode() * 3]
    return cases


def write_cases(path, cases, encode):
    with open(path, "w") as f:
        f.write("# hex(text) \\t ids\n")
        for c in cases:
            f.write(c.hex() + "\t" + " ".join(map(str, encode(c))) + "\n")


def gen_bpe():
    texts = make_texts(1, 1500) + FRAGMENTS * 3
    merges = tok_ref.train_bpe(texts, 2000, "gpt2")
    pieces = [tok_ref.BYTE_MAP[b] for b in range(256)]
    seen = set(pieces)
    dropped = merges[700].replace(" ", "")  # one merge result left out of the vocab
    for m in merges:
        p = m.replace(" ", "")
        if p not in seen and p != dropped:
            seen.add(p)
            pieces.append(p)
    control = [len(pieces), len(pieces) + 1]
    pieces += ["<|endoftext|>", "<|en|>"]
    with open(os.path.join(OUT, "bpe_vocab.txt"), "w") as f:
        f.write("# hex(piece) \\t token type; learned by tools/ref/tok_gen_data.py\n")
        for i, p in enumerate(pieces):
            f.write(p.encode().hex() + "\t" + ("3" if i in control else "1") + "\n")
    with open(os.path.join(OUT, "bpe_merges.txt"), "w") as f:
        f.write("# hex(\"left right\") in rank order\n")
        for m in merges:
            f.write(m.encode().hex() + "\n")
    ref = tok_ref.ByteBPE(pieces, merges, control)
    cases = bpe_cases()
    for pre in ("gpt2", "qwen2", "granite"):
        write_cases(os.path.join(OUT, f"bpe_cases_{pre}.txt"), cases, lambda c: ref.encode(c, pre))
        for c in cases:
            assert ref.decode_bytes(ref.encode(c, pre)) == c
    print("bpe:", len(pieces), "pieces,", len(merges), "merges,", len(cases), "cases")


def read_whisper_vocab(path):
    d = open(path, "rb").read()
    off = 4 + 44
    n_mel, n_fft = struct.unpack_from("<ii", d, off)
    off += 8 + 4 * n_mel * n_fft
    (count,) = struct.unpack_from("<i", d, off)
    off += 4
    toks = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", d, off)
        off += 4
        toks.append(d[off:off + n])
        off += n
    return toks


def gen_whisper():
    path = os.path.join(SHARED, "vocab", "whisper-multilingual-vocab.ggml.bin")
    if not os.path.exists(path):
        print("whisper vocab not found, skipped")
        return
    toks = read_whisper_vocab(path)
    ref = tok_ref.ByteBPE([tok_ref.to_piece(t) for t in toks], None)
    cases = bpe_cases()[:200]
    write_cases(os.path.join(OUT, "whisper_cases.txt"), cases, lambda c: ref.encode(c, "gpt2"))
    print("whisper:", len(toks), "pieces,", len(cases), "cases")


SPM_MODELS = {
    "unigram_bf": dict(model_type="unigram", byte_fallback=True, vocab_size=700),
    "bpe_bf": dict(model_type="bpe", byte_fallback=True, vocab_size=700),
    "unigram": dict(model_type="unigram", byte_fallback=False, vocab_size=400),
    "bpe": dict(model_type="bpe", byte_fallback=False, vocab_size=400),
    "bpe_unused": dict(model_type="bpe", byte_fallback=True, vocab_size=700, unused=True),
    "unigram_unused": dict(model_type="unigram", byte_fallback=True, vocab_size=700, unused=True),
}


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _put_varint(v):
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7


def mark_unused(model: bytes, names):
    """Rewrites a serialized ModelProto so the pieces in `names` get type
    UNUSED (5): a minimal protobuf walk (no protobuf module needed). Top-level
    field 1 is the repeated SentencePiece {1: piece, 2: score, 3: type}."""
    out, i = bytearray(), 0
    while i < len(model):
        start = i
        tag, i = _varint(model, i)
        wt = tag & 7
        if wt == 0:
            _, i = _varint(model, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, i = _varint(model, i)
            body = model[i:i + n]
            i += n
            if tag >> 3 == 1:
                j, fields, name = 0, bytearray(), None
                while j < len(body):
                    fs = j
                    t2, j = _varint(body, j)
                    if t2 & 7 == 0:
                        _, j = _varint(body, j)
                    elif t2 & 7 == 5:
                        j += 4
                    elif t2 & 7 == 2:
                        m, j = _varint(body, j)
                        if t2 >> 3 == 1:
                            name = body[j:j + m].decode()
                        j += m
                    if t2 >> 3 != 3:
                        fields += body[fs:j]
                    else:
                        kept_type = body[fs:j]
                if name in names:
                    body = bytes(fields) + b"\x18\x05"
                elif len(fields) != len(body):
                    body = bytes(fields) + kept_type
                out += _put_varint(tag) + _put_varint(len(body)) + body
                continue
        else:
            raise ValueError("unexpected wire type")
        out += model[start:i]
    return bytes(out)


def spm_cases():
    en = ENGLISH + ACCENTED + ["a<sep>b [X] c", "<sep><sep>", "x[X]y", "[X ] <sep"]
    rnd = random.Random(3)
    cases = list(en) + CYRILLIC[:2] + CJK[:2] + EMOJI[:2] + OTHER[5:7]
    for _ in range(200):
        k = rnd.randint(1, 4)
        cases.append(rnd.choice(SEPS).join(rnd.choice(en) for _ in range(k)))
    cases += ["", " ", "  ", "\n", "ü", "日本", "a  b", " lead", "trail "]
    return cases


def gen_spm():
    import sentencepiece as spm
    rnd = random.Random(5)
    corpus = []
    for _ in range(3000):
        corpus.append(" ".join(rnd.choice(ENGLISH + ACCENTED).split(" ")[rnd.randint(0, 3):]))
    with tempfile.TemporaryDirectory() as tmp:
        cpath = os.path.join(tmp, "corpus.txt")
        with open(cpath, "w") as f:
            f.write("\n".join(c.replace("\n", " ") for c in corpus))
        for name, kw in SPM_MODELS.items():
            prefix = os.path.join(tmp, name)
            spm.SentencePieceTrainer.train(
                input=cpath, model_prefix=prefix, user_defined_symbols=["<sep>", "[X]"],
                normalization_rule_name="identity", remove_extra_whitespaces=False,
                character_coverage=1.0, hard_vocab_limit=False, minloglevel=2,
                split_digits=False, **{k: v for k, v in kw.items() if k != "unused"})
            sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
            if kw.get("unused"):
                # a few frequent multi-character pieces become UNUSED: bpe
                # re-splits them, unigram leaves them out of the lattice
                cands = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                         if len(sp.id_to_piece(i)) > 2 and not sp.is_control(i)
                         and not sp.is_unknown(i) and not sp.is_byte(i)
                         and sp.id_to_piece(i) not in ("<sep>", "[X]")]
                blob = open(prefix + ".model", "rb").read()
                sp = spm.SentencePieceProcessor(model_proto=mark_unused(blob, set(cands[:12])))
                assert sum(sp.is_unused(i) for i in range(sp.get_piece_size())) == 12
            with open(os.path.join(OUT, f"spm_{name}_vocab.txt"), "w") as f:
                f.write("# hex(piece) \\t score \\t type (tokenizer.ggml.token_type)\n")
                for i in range(sp.get_piece_size()):
                    ty = (2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                          6 if sp.is_byte(i) else 5 if sp.is_unused(i) else
                          4 if sp.id_to_piece(i) in ("<sep>", "[X]") else 1)
                    f.write(sp.id_to_piece(i).encode().hex() + "\t%.9g\t%d\n" % (sp.get_score(i), ty))
            cases = [c.encode() for c in spm_cases()]
            write_cases(os.path.join(OUT, f"spm_{name}_cases.txt"), cases,
                        lambda c: sp.encode(c.decode()))
            print("spm", name, sp.get_piece_size(), "pieces,", len(cases), "cases")


def gen_utf8():
    rnd = random.Random(11)
    cases = [b"", b"abc", "héllo wörld 日本 😀".encode(), b"\xff", b"\xfe\xff", b"\x80",
             b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82\x28", b"\xf0\x9f\x98", b"\xf0\x9f\x98(",
             b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
             b"\xed\xbf\xbf", b"\xf0\x80\x80\xaf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
             b"\xf8\x88\x80\x80\x80", b"a\xc3\xa9\xe2\x82\xacb\xf0\x9f\x98\x80",
             b"\xe2\x82\xe2\x82\xac", b"\xf0\x9f\xf0\x9f\x98\x80", b"\xef\xbf\xbd"]
    for _ in range(300):
        n = rnd.randint(1, 12)
        cases.append(bytes(rnd.choice([rnd.randint(0, 255), rnd.randint(0x80, 0xBF),
                                       rnd.randint(0xC0, 0xF7), 0x41]) for _ in range(n)))
    with open(os.path.join(OUT, "utf8_cases.txt"), "w") as f:
        f.write("# hex(bytes) \\t hex(bytes.decode('utf-8', 'replace'))\n")
        for c in cases:
            f.write(c.hex() + "\t" + c.decode("utf-8", "replace").encode().hex() + "\n")
    print("utf8:", len(cases), "cases")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    what = sys.argv[1:] or ["utf8", "spm", "bpe", "whisper"]
    for w in what:
        globals()["gen_" + w]()
