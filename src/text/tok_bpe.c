/* Byte-level BPE ("gpt2", docs/formats/gguf.md §6.1): pre-tokenize, map bytes to
 * symbols, merge the lowest-ranked adjacent pair (leftmost on ties) until no
 * pair has a rank. Merging uses a linked list of symbols plus a binary heap
 * of candidate pairs, so one pre-token of m bytes costs O(m log m) — a 100 kB
 * "word" is no problem. Stale heap entries are recognised by re-checking the
 * two symbols, which only ever grow, so an entry is valid iff both slots
 * still hold the symbols it was built from and are still adjacent. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"
#include "util/log.h"
#include "util/vec.h"

/* GPT-2 bytes-to-unicode: printable Latin-1 maps to itself, the other 68
 * bytes (0x00-0x20, 0x7F-0xA0, 0xAD) to U+0100.. in increasing byte order. */
static uint32_t byte_to_cp(unsigned b) {
    if (b <= 0x20) return 256 + b;
    if (b >= 0x7F && b <= 0xA0) return 256 + 33 + (b - 0x7F);
    if (b == 0xAD) return 256 + 67;
    return b;
}

size_t tr_gpt2_byte_piece(unsigned char b, char out[4]) {
    return (size_t)tr_utf8_encode(byte_to_cp(b), out);
}

int tr_gpt2_cp_to_byte(uint32_t cp) {
    if (cp < 256) return (cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) ? -1 : (int)cp;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(0x7F + (cp - 256 - 33));
    return cp == 256 + 67 ? 0xAD : -1;
}

static int32_t intern(tr_tokenizer *t, const char *s, size_t n) {
    int32_t id = tr_piecemap_find(&t->pieces, s, n);
    return id >= 0 ? id : tr_piecemap_add(&t->pieces, s, n);
}

static bool put_pair(tr_tokenizer *t, int32_t l, int32_t r, int32_t rank, int32_t res) {
    uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    int64_t val = (int64_t)(((uint64_t)(uint32_t)rank << 32) | (uint32_t)res);
    return tr_u64map_put(&t->pairs, key, val);
}

static bool is_control(const tr_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && t->types[id] == TR_TT_CONTROL;
}

transcribe_status tr_tok_build_gpt2(tr_tokenizer *t, const char *const *merges, int n_merges,
                                    bool rank_by_id) {
    if (!tr_u64map_init(&t->pairs, rank_by_id ? (size_t)t->n_vocab * 3 : (size_t)n_merges))
        return TRANSCRIBE_ERR_OOM;
    char *buf = NULL;
    size_t buf_cap = 0;
    if (!rank_by_id) {
        for (int i = 0; i < n_merges; i++) {
            const char *m = merges[i];
            size_t len = m ? strlen(m) : 0;
            const char *sp = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
            if (!sp) {
                TR_ERROR("tokenizer: merge %d (\"%.40s\") has no \"left right\" separator", i,
                         m ? m : "");
                free(buf);
                return TRANSCRIBE_ERR_GGUF;
            }
            size_t nl = (size_t)(sp - m), nr = len - nl - 1;
            if (len > buf_cap) {
                char *nb = realloc(buf, len);
                if (!nb) {
                    free(buf);
                    return TRANSCRIBE_ERR_OOM;
                }
                buf = nb;
                buf_cap = len;
            }
            memcpy(buf, m, nl);
            memcpy(buf + nl, sp + 1, nr);
            int32_t l = intern(t, m, nl), r = intern(t, sp + 1, nr), res = intern(t, buf, nl + nr);
            if (l < 0 || r < 0 || res < 0 || !put_pair(t, l, r, i, res)) {
                free(buf);
                return TRANSCRIBE_ERR_OOM;
            }
        }
        free(buf);
    } else {
        /* tiktoken / whisper.cpp .bin: the rank of a pair is the id of the
         * concatenated piece. Symbols are single bytes (interned even when
         * the vocabulary lacks them: whisper.cpp files do) or pieces, so
         * every split of a piece into two symbols is a pair; the first
         * (lowest) id of a string wins. */
        for (int b = 0; b < 256; b++) {
            char mapped[4];
            if (intern(t, mapped, tr_gpt2_byte_piece((unsigned char)b, mapped)) < 0)
                return TRANSCRIBE_ERR_OOM;
        }
        for (int32_t v = 0; v < t->n_vocab; v++) {
            size_t len;
            const char *p = tr_piecemap_key(&t->pieces, v, &len);
            int32_t first = tr_piecemap_find(&t->pieces, p, len);
            if (first != v || is_control(t, v)) continue;
            size_t k = 0;
            while (k < len) {
                uint32_t cp;
                int cl = tr_utf8_decode((const unsigned char *)p + k, len - k, &cp);
                k += cl > 0 ? (size_t)cl : 1;
                if (k >= len) break;
                int32_t a = tr_piecemap_find(&t->pieces, p, k);
                int32_t b = tr_piecemap_find(&t->pieces, p + k, len - k);
                if (a >= 0 && b >= 0 && !put_pair(t, a, b, v, v)) return TRANSCRIBE_ERR_OOM;
            }
        }
    }
    for (int b = 0; b < 256; b++) {
        char mapped[4];
        size_t ml = tr_gpt2_byte_piece((unsigned char)b, mapped);
        t->byte_sym[b] = tr_piecemap_find(&t->pieces, mapped, ml);
    }
    return TRANSCRIBE_OK;
}

/* ---- encoding ---- */

typedef struct {
    int32_t rank, left, right, sl, sr, res;
} pair_ent;

typedef struct {
    int32_t *sym, *prv, *nxt;
    pair_ent *heap;
    size_t cap, hcap, hn;
    bool oom;
} bpe_ws;

static bool ws_reserve(bpe_ws *w, size_t m) {
    if (m <= w->cap) return true;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < m) cap *= 2;
    int32_t *a = realloc(w->sym, cap * sizeof(int32_t));
    if (a) w->sym = a;
    int32_t *b = realloc(w->prv, cap * sizeof(int32_t));
    if (b) w->prv = b;
    int32_t *c = realloc(w->nxt, cap * sizeof(int32_t));
    if (c) w->nxt = c;
    if (!a || !b || !c) return false;
    w->cap = cap;
    return true;
}

static bool ent_less(const pair_ent *a, const pair_ent *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(bpe_ws *w, pair_ent e) {
    pair_ent *h = tr_grow(w->heap, &w->hcap, w->hn + 1, sizeof(*h), 128);
    if (!h) {
        w->oom = true;
        return;
    }
    w->heap = h;
    size_t i = w->hn++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ent_less(&e, &w->heap[parent])) break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = e;
}

static pair_ent heap_pop(bpe_ws *w) {
    pair_ent top = w->heap[0], last = w->heap[--w->hn];
    size_t i = 0, n = w->hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ent_less(&w->heap[c + 1], &w->heap[c])) c++;
        if (!ent_less(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

static void try_pair(const tr_tokenizer *t, bpe_ws *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || w->sym[l] < 0 || w->sym[r] < 0) return;
    uint64_t key = ((uint64_t)(uint32_t)w->sym[l] << 32) | (uint32_t)w->sym[r];
    int64_t v;
    if (!tr_u64map_get(&t->pairs, key, &v)) return;
    pair_ent e = {(int32_t)((uint64_t)v >> 32), l, r, w->sym[l], w->sym[r], (int32_t)(uint32_t)v};
    heap_push(w, e);
}

/* Emits a final symbol: its id when it is a vocab entry, otherwise the ids
 * of its code points (unk for anything the vocab lacks). */
static void emit_sym(const tr_tokenizer *t, int32_t s, tr_ids *out) {
    if (s >= 0 && s < t->n_vocab) {
        tr_ids_push(out, s);
        return;
    }
    if (s < 0) {
        if (t->unk >= 0) tr_ids_push(out, t->unk);
        return;
    }
    size_t len;
    const char *p = tr_piecemap_key(&t->pieces, s, &len);
    size_t k = 0;
    while (k < len) {
        uint32_t cp;
        int cl = tr_utf8_decode((const unsigned char *)p + k, len - k, &cp);
        size_t step = cl > 0 ? (size_t)cl : 1;
        int32_t id = tr_piecemap_find(&t->pieces, p + k, step);
        if (id >= 0 && id < t->n_vocab)
            tr_ids_push(out, id);
        else if (t->unk >= 0)
            tr_ids_push(out, t->unk);
        k += step;
    }
}

static void bpe_word(const tr_tokenizer *t, bpe_ws *w, const unsigned char *s, size_t m,
                     tr_ids *out) {
    if (m == 1) {
        emit_sym(t, t->byte_sym[s[0]], out);
        return;
    }
    if (m > INT32_MAX || !ws_reserve(w, m)) {
        out->oom = true;
        return;
    }
    for (size_t i = 0; i < m; i++) {
        w->sym[i] = t->byte_sym[s[i]];
        w->prv[i] = (int32_t)i - 1;
        w->nxt[i] = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    w->hn = 0;
    for (size_t i = 0; i + 1 < m; i++) try_pair(t, w, (int32_t)i, (int32_t)i + 1);
    while (w->hn > 0 && !w->oom) {
        pair_ent e = heap_pop(w);
        if (w->sym[e.left] != e.sl || w->nxt[e.left] != e.right || w->sym[e.right] != e.sr)
            continue; /* stale */
        int32_t l = e.left, r = e.right;
        w->sym[l] = e.res;
        w->nxt[l] = w->nxt[r];
        if (w->nxt[r] >= 0) w->prv[w->nxt[r]] = l;
        w->sym[r] = INT32_MIN; /* dead: never matches an entry again */
        w->nxt[r] = -2;
        try_pair(t, w, w->prv[l], l);
        try_pair(t, w, l, w->nxt[l]);
    }
    if (w->oom) out->oom = true;
    for (int32_t i = 0; i >= 0; i = w->nxt[i]) emit_sym(t, w->sym[i], out);
}

void tr_tok_encode_gpt2(const tr_tokenizer *t, const unsigned char *s, size_t n, tr_ids *out) {
    if (n == 0) return;
    uint32_t *cps = malloc(n * sizeof(*cps));
    uint8_t *fl = malloc(n);
    size_t *off = malloc((n + 1) * sizeof(*off));
    bpe_ws w = {0};
    if (!cps || !fl || !off) {
        out->oom = true;
        goto done;
    }
    /* Decode once; an invalid byte becomes a classless pseudo code point. */
    size_t ncp = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int cl = tr_utf8_decode(s + i, n - i, &cp);
        off[ncp] = i;
        if (cl > 0) {
            cps[ncp] = cp;
            fl[ncp] = (uint8_t)tr_uni_flags(cp);
            i += (size_t)cl;
        } else {
            cps[ncp] = 0x110000u + s[i];
            fl[ncp] = 0;
            i++;
        }
        ncp++;
    }
    off[ncp] = n;
    for (size_t p = 0; p < ncp && !out->oom;) {
        size_t e = tr_pretok_next(t->pre, cps, fl, ncp, p);
        if (e <= p || e > ncp) e = p + 1; /* cannot happen; keeps the loop finite */
        bpe_word(t, &w, s + off[p], off[e] - off[p], out);
        p = e;
    }
done:
    free(cps);
    free(fl);
    free(off);
    free(w.sym);
    free(w.prv);
    free(w.nxt);
    free(w.heap);
}
