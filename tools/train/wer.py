"""Word error rate: word-level Levenshtein distance over normalised text."""
from textnorm import normalise


def edit_distance(ref, hyp):
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer_counts(ref, hyp):
    """(errors, reference words) after normalising both sides."""
    r = normalise(ref).split()
    h = normalise(hyp).split()
    return edit_distance(r, h), len(r)
