"""Text normalisation shared by corpus building and WER scoring.

Targets must be exactly what espeak-ng says, so every sentence is reduced to
lowercase words [a-z'] separated by single spaces, with numbers spelled out
in words *before* synthesis (espeak then reads our words, not its own
number rules).
"""
import re

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
ORD_IRREG = {"one": "first", "two": "second", "three": "third", "five": "fifth",
             "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}


def _below_1000(n):
    out = []
    if n >= 100:
        out += [ONES[n // 100], "hundred"]
        n %= 100
        if n:
            out.append("and")
    if n >= 20:
        out.append(TENS[n // 10])
        if n % 10:
            out.append(ONES[n % 10])
    elif n or not out:
        out.append(ONES[n])
    return out


def cardinal(n):
    """English cardinal words for 0 <= n < 10**12."""
    if n < 1000:
        return " ".join(_below_1000(n))
    out = []
    for value, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand")):
        if n >= value:
            out += _below_1000(n // value) + [name]
            n %= value
    if n:
        if n < 100:
            out.append("and")
        out += _below_1000(n)
    return " ".join(out)


def ordinal(n):
    words = cardinal(n).split()
    last = words[-1]
    if last in ORD_IRREG:
        words[-1] = ORD_IRREG[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def year(n):
    """Years read the usual way: 1984 -> nineteen eighty four."""
    if 2000 <= n < 2010:
        return cardinal(n)
    hi, lo = divmod(n, 100)
    if lo == 0:
        return cardinal(hi) + " hundred"
    if lo < 10:
        return cardinal(hi) + " oh " + ONES[lo]
    return cardinal(hi) + " " + cardinal(lo)


def _num(m):
    s = m.group(0)
    if len(s) > 12:
        return " ".join(ONES[int(c)] for c in s)
    n = int(s)
    if len(s) == 4 and 1100 <= n <= 2099:
        return year(n)
    if s.startswith("0") and len(s) > 1:
        return " ".join(ONES[int(c)] for c in s)
    return cardinal(n)


def normalise(text):
    """Lowercase words [a-z'] with numbers spelled out; '' if nothing left."""
    t = text.lower().replace("\u2019", "'")
    t = re.sub(r"(\d),(\d{3})", r"\1\2", t)
    t = re.sub(r"(\d+)(st|nd|rd|th)\b", lambda m: ordinal(int(m.group(1))), t)
    t = re.sub(r"%", " percent ", t)
    t = re.sub(r"&", " and ", t)
    t = re.sub(r"\d+", lambda m: " " + _num(m) + " ", t)
    t = re.sub(r"[^a-z' ]+", " ", t)
    words = []
    for w in t.split():
        w = w.strip("'")
        if w:
            words.append(w)
    return " ".join(words)
