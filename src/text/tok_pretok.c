/* Pre-tokenizers of the byte-level BPE encoder, hand-written from their
 * regexes (docs/formats/gguf.md §6.1; qwen2/granite as in the HF tokenizer.json of
 * those models). Each function returns where the regex match starting at p
 * ends, trying the alternatives in order like a backtracking engine does:
 *
 *   gpt2:    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
 *            |\s+(?!\S)|\s+
 *   qwen2:   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *            | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   granite: qwen2 with \p{N}{1,3} and no [\r\n]* after symbol runs.
 *
 * \s is Unicode White_Space. Bytes that are not valid UTF-8 arrive as code
 * points above U+10FFFF with no class, i.e. they behave as symbols. The
 * (?i) contractions fold ASCII only. */
#include "text/tok_internal.h"

#define IS(i, c) ((i) < n && (fl[i] & (c)))
#define OTHER(i) ((i) < n && fl[i] == 0)

static uint32_t lower_ascii(uint32_t c) {
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/* Contraction length at p (0 if none). */
static size_t contraction(const uint32_t *cps, size_t n, size_t p, bool fold) {
    if (cps[p] != '\'' || p + 1 >= n) return 0;
    uint32_t c1 = fold ? lower_ascii(cps[p + 1]) : cps[p + 1];
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (p + 2 >= n) return 0;
    uint32_t c2 = fold ? lower_ascii(cps[p + 2]) : cps[p + 2];
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

/* \s+(?!\S) | \s+ on the whitespace run [p, p+k). */
static size_t space_run(size_t n, size_t p, size_t k) {
    return (p + k < n && k > 1) ? p + k - 1 : p + k;
}

static size_t next_gpt2(const uint32_t *cps, const uint8_t *fl, size_t n, size_t p) {
    size_t e = contraction(cps, n, p, false);
    if (e) return p + e;
    size_t q = p + (cps[p] == ' ');
    if (IS(q, TR_UNI_L)) {
        while (IS(q, TR_UNI_L)) q++;
        return q;
    }
    if (IS(q, TR_UNI_N)) {
        while (IS(q, TR_UNI_N)) q++;
        return q;
    }
    if (OTHER(q)) {
        while (OTHER(q)) q++;
        return q;
    }
    size_t k = 0;
    while (IS(p + k, TR_UNI_WS)) k++;
    return k ? space_run(n, p, k) : p + 1;
}

static size_t next_qwen2(const uint32_t *cps, const uint8_t *fl, size_t n, size_t p, bool granite) {
    size_t e = contraction(cps, n, p, true);
    if (e) return p + e;
    uint32_t c = cps[p];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (fl[p] & TR_UNI_L) {
        size_t q = p;
        while (IS(q, TR_UNI_L)) q++;
        return q;
    }
    if (c != '\r' && c != '\n' && !(fl[p] & TR_UNI_N) && IS(p + 1, TR_UNI_L)) {
        size_t q = p + 1;
        while (IS(q, TR_UNI_L)) q++;
        return q;
    }
    /* \p{N} or \p{N}{1,3} */
    if (fl[p] & TR_UNI_N) {
        size_t q = p + 1;
        if (granite)
            while (q < p + 3 && IS(q, TR_UNI_N)) q++;
        return q;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t q = p + (c == ' ');
    if (OTHER(q)) {
        while (OTHER(q)) q++;
        if (!granite)
            while (q < n && (cps[q] == '\r' || cps[q] == '\n')) q++;
        return q;
    }
    /* \s*[\r\n]+ ends after the run's last newline; else \s+(?!\S) | \s+ */
    size_t k = 0, after_nl = 0;
    while (IS(p + k, TR_UNI_WS)) {
        if (cps[p + k] == '\r' || cps[p + k] == '\n') after_nl = p + k + 1;
        k++;
    }
    if (after_nl) return after_nl;
    return k ? space_run(n, p, k) : p + 1;
}

size_t tr_pretok_next(tr_pretok pre, const uint32_t *cps, const uint8_t *fl, size_t n, size_t p) {
    switch (pre) {
    case TR_PRE_GPT2:
        return next_gpt2(cps, fl, n, p);
    case TR_PRE_GRANITE:
        return next_qwen2(cps, fl, n, p, true);
    case TR_PRE_QWEN2:
    default:
        return next_qwen2(cps, fl, n, p, false);
    }
}
