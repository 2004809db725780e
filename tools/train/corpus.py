#!/usr/bin/env python3
"""Build the sentence lists (train and held-out) from offline Debian text.

Sources: fortune cookies (Debian packages fortunes-min + fortunes), the
wamerican word list, and generated number / date / time / money readings.
Every sentence is normalised (textnorm.py) and kept only if all its words
are in the word list (or are number words), so espeak-ng says exactly the
target words.

The domain is a closed vocabulary: the VOCAB_K most frequent words of the
fortune sentences plus every word the number generators use. Fortune
sentences made only of those words are the "fortune" source; the held-out
text is a hash split (5 %) of all normalised sentences, disjoint from
training by construction. Held-out fortune sentences *outside* the
vocabulary are written too (source "open"), never trained on, so the model
can also be measured beyond its domain.

usage: corpus.py OUT_DIR [SEED]
writes OUT_DIR/text_train.tsv and OUT_DIR/text_test.tsv  (source<TAB>text)
and OUT_DIR/vocab.txt (the domain's words, most frequent first)
"""
import glob
import hashlib
import os
import random
import re
import sys

from textnorm import cardinal, normalise, ordinal, year

FORTUNE_DIR = "/usr/share/games/fortunes"
WORDS = "/usr/share/dict/words"
MONTHS = ("january february march april may june july august september october "
          "november december").split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
NUMBER_WORDS = set(("zero one two three four five six seven eight nine ten eleven twelve "
                    "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty "
                    "thirty forty fifty sixty seventy eighty ninety hundred thousand million "
                    "billion and oh first second third fifth eighth ninth twelfth").split())


def load_words():
    ws = set()
    for line in open(WORDS, encoding="utf-8", errors="ignore"):
        w = line.strip()
        if re.fullmatch(r"[a-z']+", w):
            ws.add(w)
    return ws


def fortune_sentences():
    out = []
    for path in sorted(glob.glob(FORTUNE_DIR + "/*")):
        if "." in os.path.basename(path) or os.path.isdir(path):
            continue
        if os.path.basename(path) in ("ascii-art", "art"):
            continue
        text = open(path, encoding="utf-8", errors="ignore").read()
        for rec in re.split(r"\n%\n", text):
            rec = " ".join(rec.split())
            for s in re.split(r"(?<=[.!?;:])\s+|\s+--\s+", rec):
                out.append(s)
    return out


def number_sentences(rng, n):
    """Readings of numbers, dates, times, money, phone numbers."""
    def t_count():
        k = rng.choice([rng.randint(0, 20), rng.randint(20, 100), rng.randint(100, 1000),
                        rng.randint(1000, 100000), rng.randint(10**5, 10**9)])
        noun = rng.choice(["people", "apples", "miles", "books", "cars", "days", "years",
                           "dollars", "points", "houses", "birds", "steps", "pages"])
        pre = rng.choice(["there were", "we counted", "i saw", "they sold", "she has",
                          "about", "nearly", "exactly", "more than", "less than", "only"])
        return "%s %s %s" % (pre, cardinal(k), noun)

    def t_date():
        m = rng.choice(MONTHS)
        d = ordinal(rng.randint(1, 31))
        y = year(rng.randint(1600, 2099))
        form = rng.randint(0, 3)
        if form == 0:
            return "%s %s %s" % (m, d, y)
        if form == 1:
            return "on %s the %s of %s %s" % (rng.choice(DAYS), d, m, y)
        if form == 2:
            return "the %s of %s" % (d, m)
        return "it happened in %s" % y

    def t_time():
        h = rng.randint(1, 12)
        mi = rng.choice([0, 5, 10, 15, 20, 30, 45, rng.randint(1, 59)])
        form = rng.randint(0, 3)
        if form == 0:
            if mi == 0:
                return "at %s o'clock" % cardinal(h)
            mm = ("oh " + cardinal(mi)) if mi < 10 else cardinal(mi)
            return "at %s %s %s" % (cardinal(h), mm, rng.choice(["a m", "p m", "in the morning",
                                                                  "in the evening", ""]))
        if form == 1:
            return "half past %s" % cardinal(h)
        if form == 2:
            return "a quarter to %s" % cardinal(h)
        return "the train leaves at %s %s" % (cardinal(h), cardinal(mi) if mi >= 10 else "sharp")

    def t_money():
        d = rng.randint(1, 5000)
        c = rng.randint(1, 99)
        return "it costs %s dollars and %s cents" % (cardinal(d), cardinal(c))

    def t_phone():
        digits = [str(rng.randint(0, 9)) for _ in range(rng.randint(4, 10))]
        return "call %s" % " ".join(normalise(x) for x in digits)

    def t_math():
        a, b = rng.randint(0, 999), rng.randint(0, 999)
        op = rng.choice(["plus", "minus", "times"])
        return "%s %s %s" % (cardinal(a), op, cardinal(b))

    gens = [t_count, t_date, t_time, t_money, t_phone, t_math]
    return [normalise(rng.choice(gens)()) for _ in range(n)]


VOCAB_K = 1000  # domain size: most frequent fortune words (number words come on top)


def random_word_sentences(rng, words, n):
    pool = sorted(words)
    return [" ".join(rng.choice(pool) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def is_test(text):
    return int(hashlib.md5(text.encode()).hexdigest(), 16) % 100 < 5


def main():
    out_dir = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1234
    rng = random.Random(seed)
    words = load_words()

    def usable(text):
        ws = text.split()
        return (2 <= len(ws) <= 24 and len(text) <= 160 and
                all(w in words or w in NUMBER_WORDS for w in ws))

    fortunes = list(dict.fromkeys(t for t in map(normalise, fortune_sentences())
                                  if t and usable(t)))
    numbers = list(dict.fromkeys(t for t in number_sentences(rng, 8000) if t and usable(t)))
    freq = {}
    for t in fortunes:
        for w in t.split():
            freq[w] = freq.get(w, 0) + 1
    ranked = sorted(freq, key=lambda w: (-freq[w], w))
    vocab = set(ranked[:VOCAB_K]) | NUMBER_WORDS
    for t in numbers:
        vocab.update(t.split())
    train, test = [], []
    for src, rows in (("fortune", fortunes), ("number", numbers)):
        for t in rows:
            inside = all(w in vocab for w in t.split())
            if src == "fortune" and not inside:
                if is_test(t):
                    test.append(("open", t))  # outside the domain: measured, never trained
                continue
            (test if is_test(t) else train).append((src, t))
    # random strings of domain words give every word of the vocabulary many
    # spoken examples in varied contexts; they go to training only
    seen = set(t for _, t in train) | set(t for _, t in test)
    for s in random_word_sentences(rng, vocab, 6000):
        if s not in seen:
            seen.add(s)
            train.append(("words", s))
    rng.shuffle(train)
    rng.shuffle(test)
    for name, rows in (("text_train.tsv", train), ("text_test.tsv", test)):
        with open(os.path.join(out_dir, name), "w") as f:
            for src, text in rows:
                f.write("%s\t%s\n" % (src, text))
    with open(os.path.join(out_dir, "vocab.txt"), "w") as f:
        for w in sorted(vocab, key=lambda w: (-freq.get(w, 0), w)):
            f.write(w + "\n")
    by, tby = {}, {}
    for src, _ in train:
        by[src] = by.get(src, 0) + 1
    for src, _ in test:
        tby[src] = tby.get(src, 0) + 1
    print("vocab %d  train %d %s  test %d %s" % (len(vocab), len(train), by, len(test), tby))


if __name__ == "__main__":
    main()
