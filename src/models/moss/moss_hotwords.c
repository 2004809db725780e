/* MOSS vocabulary hints (hotwords; the design of tests/data/moss/README.md
 * "Hotwords", not in upstream 0.2.1). A file may carry its instruction as
 * text (stt.moss.prompt_instruction) and where its ids start in the baked
 * suffix (stt.moss.prompt_instruction_offset). When re-encoding that text
 * reproduces the baked ids, a run's terms re-render the instruction as
 * "instruction + separator + t1, t2, …" and the suffix takes the new ids;
 * the terms are fitted to the context left after the prompt and the docs/formats/moss.md §9
 * generation budget, cut at a term boundary. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/moss/moss.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/strbuf.h"

#define KEY_TEXT   "stt.moss.prompt_instruction"
#define KEY_OFFSET "stt.moss.prompt_instruction_offset"

static const char k_sep_en[] = " Hotwords: ";
static const char k_sep_zh[] = "热词提示：";
static const char k_join[] = ", ";

/* Ids of text (malloc'ed, *n long); NULL when the tokenizer cannot encode it
 * or on OOM. Byte-level BPE never gives more ids than bytes. */
static int32_t *encode(const ms_model *m, const char *text, int *n) {
    size_t cap = strlen(text) + 1;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return NULL;
    int k = tr_tokenizer_encode(m->tok, text, ids, cap);
    if (k < 0) {
        free(ids);
        return NULL;
    }
    *n = k;
    return ids;
}

/* true if the UTF-8 text holds a CJK unified ideograph (U+4E00..U+9FFF):
 * three-byte sequences E4 B8 80 .. E9 BF BF. */
static bool has_cjk(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((p[0] & 0xF0) != 0xE0 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) continue;
        unsigned cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        if (cp >= 0x4E00 && cp <= 0x9FFF) return true;
        p += 2;
    }
    return false;
}

transcribe_status tr_ms_hotwords_load(const gguf_file *f, ms_model *m) {
    m->instruction = NULL;
    const int64_t kt = tr_gguf_find_key(f, KEY_TEXT), ko = tr_gguf_find_key(f, KEY_OFFSET);
    if (kt < 0 && ko < 0) return TRANSCRIBE_OK; /* the published converter's files */
    if (kt < 0 || ko < 0 || tr_gguf_kv_type(f, kt) != GGUF_T_STRING ||
        tr_gguf_kv_type(f, ko) != GGUF_T_UINT32) {
        TR_WARN("moss: %s (STRING) and %s (UINT32) are not both present with those types; "
                "vocabulary hints are off",
                KEY_TEXT, KEY_OFFSET);
        return TRANSCRIBE_OK;
    }
    const char *text = NULL;
    int off = 0;
    transcribe_status st = tr_gguf_req_str(f, KEY_TEXT, &text);
    if (st == TRANSCRIBE_OK) st = tr_gguf_req_u32(f, KEY_OFFSET, 0, INT32_MAX, &off);
    if (st != TRANSCRIBE_OK) return st;
    int n = 0;
    int32_t *ids = tr_tokenizer_can_encode(m->tok) ? encode(m, text, &n) : NULL;
    bool same = ids && n > 0 && (int64_t)off + n <= m->n_suffix &&
                memcmp(m->suffix + off, ids, (size_t)n * sizeof *ids) == 0;
    free(ids);
    if (!same) {
        TR_WARN("moss: %s does not re-encode to the baked suffix ids at %d; vocabulary hints are "
                "off",
                KEY_TEXT, off);
        return TRANSCRIBE_OK;
    }
    m->instruction = strdup(text);
    if (!m->instruction) return TRANSCRIBE_ERR_OOM;
    m->instr_off = off;
    m->instr_n = n;
    m->instr_zh = has_cjk(text);
    return TRANSCRIBE_OK;
}

/* The terms stripped of space / tab / CR / LF at both ends, empty ones
 * dropped, order kept: views into the caller's strings. */
typedef struct term {
    const char *s;
    size_t n;
} term;

static term *clean_terms(const char *const *in, int n_in, int *n_out) {
    *n_out = 0;
    term *t = malloc(((size_t)n_in + 1) * sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < n_in; i++) {
        const char *a = in[i], *b = a + strlen(a);
        while (a < b && strchr(" \t\r\n", *a)) a++;
        while (b > a && strchr(" \t\r\n", b[-1])) b--;
        if (b > a) t[(*n_out)++] = (term){a, (size_t)(b - a)};
    }
    return t;
}

/* Suffix ids with the instruction rendered for terms t[0..k): malloc'ed,
 * *n long; NULL on OOM or an encoding failure. */
static int32_t *render_suffix(const ms_model *m, const term *t, int k, int *n) {
    tr_strbuf b;
    tr_strbuf_init(&b);
    tr_strbuf_appends(&b, m->instruction);
    tr_strbuf_appends(&b, m->instr_zh ? k_sep_zh : k_sep_en);
    for (int i = 0; i < k; i++) {
        if (i) tr_strbuf_appends(&b, k_join);
        tr_strbuf_append(&b, t[i].s, t[i].n);
    }
    int n_text = 0;
    int32_t *text = b.oom ? NULL : encode(m, tr_strbuf_cstr(&b), &n_text);
    tr_strbuf_free(&b);
    if (!text) return NULL;
    const int tail = m->n_suffix - m->instr_off - m->instr_n;
    int32_t *out = malloc(((size_t)m->instr_off + (size_t)n_text + (size_t)tail) * sizeof *out);
    if (out) {
        memcpy(out, m->suffix, (size_t)m->instr_off * sizeof *out);
        memcpy(out + m->instr_off, text, (size_t)n_text * sizeof *out);
        memcpy(out + m->instr_off + n_text, m->suffix + m->instr_off + m->instr_n,
               (size_t)tail * sizeof *out);
        *n = m->instr_off + n_text + tail;
    }
    free(text);
    return out;
}

transcribe_status tr_ms_hotword_suffix(const ms_model *m, const char *const *terms, int n_terms,
                                       int64_t room, int32_t **suffix, int *n_suffix, int *n_used) {
    *suffix = NULL;
    *n_suffix = 0;
    *n_used = 0;
    if (!m->instruction || n_terms <= 0 || !terms) return TRANSCRIBE_OK;
    int n_clean = 0;
    term *t = clean_terms(terms, n_terms, &n_clean);
    if (!t) return TRANSCRIBE_ERR_OOM;
    /* k = the largest count whose suffix fits in room. The suffix only grows
     * with k (each term adds ", term" after a pre-token boundary), so a
     * binary search finds the first term that does not fit in O(log n)
     * encodings; the reference adds one term at a time and stops there. */
    int lo = 0, hi = n_clean; /* fits(lo); the answer is in [lo, hi] */
    int32_t *best = NULL;
    int n_best = 0;
    transcribe_status st = TRANSCRIBE_OK;
    while (lo < hi && st == TRANSCRIBE_OK) {
        const int mid = lo + (hi - lo + 1) / 2;
        int n = 0;
        int32_t *ids = render_suffix(m, t, mid, &n);
        if (!ids) {
            st = TRANSCRIBE_ERR_OOM;
        } else if (n <= room) {
            free(best);
            best = ids;
            n_best = n;
            lo = mid;
        } else {
            free(ids);
            hi = mid - 1;
        }
    }
    free(t);
    if (st != TRANSCRIBE_OK || lo == 0) {
        free(best);
        if (st == TRANSCRIBE_OK && n_clean > 0)
            TR_WARN("moss: no vocabulary term fits the context left after the prompt (%lld ids "
                    "for the suffix); terms ignored",
                    (long long)room);
        return st;
    }
    if (lo < n_clean)
        TR_WARN("moss: %d of %d vocabulary terms fit the context; the rest are dropped", lo,
                n_clean);
    *suffix = best;
    *n_suffix = n_best;
    *n_used = lo;
    return TRANSCRIBE_OK;
}
