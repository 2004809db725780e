/* SentencePiece encoders ("bpe" and "unigram" kinds), following the
 * behaviour of the sentencepiece library (0.1.9x) for a model trained with
 * identity normalisation:
 *
 * - normalisation: a dummy-prefix U+2581 is prepended to non-empty input and
 *   every ASCII space becomes U+2581. Nothing else (no NFKC, no whitespace
 *   collapsing: models trained with remove_extra_whitespaces=false).
 * - only NORMAL, USER_DEFINED and UNUSED pieces can be produced by merging
 *   or by the lattice; CONTROL / UNKNOWN / BYTE pieces never come from text.
 * - bpe: user-defined pieces are split off first as frozen symbols; then the
 *   adjacent pair whose concatenation is a piece with the highest score is
 *   merged (leftmost on ties). Same heap scheme as tok_bpe.c.
 * - unigram: Viterbi over all pieces starting at each character; a
 *   user-defined piece scores len_bytes * max_score - 0.1 (max over NORMAL
 *   pieces, starting from FLT_MIN as the library does), a character no
 *   single-character piece covers gets an unk node scored min_score - 10.
 * - unknown pieces: with byte pieces <0xHH> present they become the bytes of
 *   their text; without, a run of consecutive unknowns becomes one unk id.
 * - bpe: a final piece of type UNUSED is split back into the two symbols it
 *   was merged from, recursively (the library's re-segmentation). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"
#include "util/vec.h"

#define SPM_SPACE "\xE2\x96\x81"

static bool mergeable(int32_t type) {
    return type == TR_TT_NORMAL || type == TR_TT_USER_DEFINED || type == TR_TT_UNUSED;
}

transcribe_status tr_tok_build_spm(tr_tokenizer *t) {
    if (!tr_trie_init(&t->trie) || !tr_trie_init(&t->ud_trie)) return TRANSCRIBE_ERR_OOM;
    t->min_score = FLT_MAX;
    t->max_score = FLT_MIN; /* sic: the library's starting value */
    int n_normal = 0;
    bool ws_inside = false;
    for (int i = 0; i < t->n_vocab; i++) {
        size_t len;
        const char *p = tr_piecemap_key(&t->pieces, i, &len);
        int32_t ty = t->types[i];
        if (ty == TR_TT_NORMAL) {
            if (t->scores[i] < t->min_score) t->min_score = t->scores[i];
            if (t->scores[i] > t->max_score) t->max_score = t->scores[i];
            n_normal++;
        }
        if (len == 0) continue;
        if (mergeable(ty) && len > 3 && memmem(p + 1, len - 1, SPM_SPACE, 3)) ws_inside = true;
        /* the piece trie serves the unigram lattice alone: a BPE model
         * (which merges through the piece map) leaves it empty, ~1 MB less
         * for a 32k vocabulary */
        if (t->kind == TR_TOK_SPM_UNIGRAM && mergeable(ty) &&
            tr_piecemap_find(&t->pieces, p, len) == i && !tr_trie_insert(&t->trie, p, len, i))
            return TRANSCRIBE_ERR_OOM;
        if (ty == TR_TT_USER_DEFINED) {
            if (!tr_trie_insert(&t->ud_trie, p, len, i)) return TRANSCRIBE_ERR_OOM;
            t->has_ud = true;
        }
        if (ty == TR_TT_UNKNOWN && t->unk < 0) t->unk = i;
    }
    if (n_normal == 0) t->min_score = 0.0f;
    t->spm_ws_split = !ws_inside;
    int n_bytes = 0;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof(name), "<0x%02X>", b);
        int32_t id = tr_piecemap_find(&t->pieces, name, 6);
        if (id >= 0 && (!t->has_types || t->types[id] == TR_TT_BYTE)) {
            t->byte_id[b] = id;
            n_bytes++;
        } else {
            t->byte_id[b] = -1;
        }
    }
    t->byte_fallback = n_bytes > 0;
    return TRANSCRIBE_OK;
}

/* One segment of the normalised text: [start, start+len) and its id, or -1
 * for unknown. */
typedef struct {
    size_t start, len;
    int32_t id;
} seg;

typedef struct {
    seg *v;
    size_t n, cap;
} segs;

static bool segs_push(segs *s, size_t start, size_t len, int32_t id) {
    seg *v = tr_grow(s->v, &s->cap, s->n + 1, sizeof(*v), 64);
    if (!v) return false;
    s->v = v;
    s->v[s->n++] = (seg){start, len, id};
    return true;
}

static size_t char_len(const unsigned char *s, size_t n) {
    uint32_t cp;
    int l = tr_utf8_decode(s, n, &cp);
    return l > 0 ? (size_t)l : 1;
}

/* Id of a final piece as the library's PieceToId sees it (-1 = unknown). */
static int32_t piece_id(const tr_tokenizer *t, const char *p, size_t n) {
    int32_t id = tr_piecemap_find(&t->pieces, p, n);
    if (id < 0 || id >= t->n_vocab || t->types[id] == TR_TT_UNKNOWN) return -1;
    return id;
}

/* ---- bpe ---- */

typedef struct {
    float score;
    int32_t left, right;
    size_t size;
} spm_pair;

typedef struct {
    spm_pair *v;
    size_t n, cap;
    bool oom;
} spm_heap;

static bool pair_before(const spm_pair *a, const spm_pair *b) {
    return a->score != b->score ? a->score > b->score : a->left < b->left;
}

static void sheap_push(spm_heap *h, spm_pair e) {
    spm_pair *v = tr_grow(h->v, &h->cap, h->n + 1, sizeof(*v), 128);
    if (!v) {
        h->oom = true;
        return;
    }
    h->v = v;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!pair_before(&e, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
}

static spm_pair sheap_pop(spm_heap *h) {
    spm_pair top = h->v[0], last = h->v[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pair_before(&h->v[c + 1], &h->v[c])) c++;
        if (!pair_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = last;
    return top;
}

typedef struct {
    size_t *start, *len;
    int32_t *prv, *nxt;
    uint8_t *frozen;
    /* merge tree for re-segmenting UNUSED pieces: node of each slot, and
     * per node its children (-1 for a leaf) and text span */
    int32_t *node, *kid_l, *kid_r, n_nodes;
    size_t *nstart, *nlen;
} spm_syms;

/* Emits the piece of tree node x, splitting UNUSED pieces into their parts. */
static bool emit_node(const tr_tokenizer *t, const char *buf, const spm_syms *y, int32_t x,
                      segs *out) {
    int32_t stack[64];
    int sp = 0;
    stack[sp++] = x;
    while (sp > 0) {
        x = stack[--sp];
        int32_t id = piece_id(t, buf + y->nstart[x], y->nlen[x]);
        if (y->kid_l[x] >= 0 && id >= 0 && t->types[id] == TR_TT_UNUSED && sp + 2 <= 64) {
            stack[sp++] = y->kid_r[x];
            stack[sp++] = y->kid_l[x];
            continue;
        }
        if (!segs_push(out, y->nstart[x], y->nlen[x], id)) return false;
    }
    return true;
}

static void spm_try_pair(const tr_tokenizer *t, const char *buf, spm_syms *y, spm_heap *h,
                         int32_t l, int32_t r) {
    if (l < 0 || r < 0 || y->frozen[l] || y->frozen[r]) return;
    size_t size = y->len[l] + y->len[r];
    int32_t id = tr_piecemap_find(&t->pieces, buf + y->start[l], size);
    if (id < 0 || id >= t->n_vocab || !mergeable(t->types[id])) return;
    sheap_push(h, (spm_pair){t->scores[id], l, r, size});
}

/* Merges the symbols of buf[from, to) (positions stay absolute). y and h
 * are preallocated for the whole buffer and reused across spans. */
static bool bpe_span(const tr_tokenizer *t, const char *buf, size_t from, size_t to, spm_syms *y,
                     spm_heap *h, segs *out) {
    int32_t m = 0;
    h->n = 0;
    for (size_t i = from; i < to;) {
        size_t l = 0;
        if (t->has_ud) { /* longest user-defined piece at i */
            int32_t node = 0;
            for (size_t k = i; k < to; k++) {
                node = tr_trie_step(&t->ud_trie, node, (unsigned char)buf[k]);
                if (node < 0) break;
                if (t->ud_trie.value[node] >= 0) l = k + 1 - i;
            }
        }
        y->frozen[m] = l > 0;
        if (!l) l = char_len((const unsigned char *)buf + i, to - i);
        y->start[m] = i;
        y->len[m] = l;
        y->prv[m] = m - 1;
        y->nxt[m] = i + l < to ? m + 1 : -1;
        y->node[m] = m;
        y->kid_l[m] = y->kid_r[m] = -1;
        y->nstart[m] = i;
        y->nlen[m] = l;
        m++;
        i += l;
    }
    if (m == 0) return true;
    y->n_nodes = m;
    for (int32_t i = 0; i + 1 < m; i++) spm_try_pair(t, buf, y, h, i, i + 1);
    while (h->n > 0 && !h->oom) {
        spm_pair e = sheap_pop(h);
        int32_t l = e.left, r = e.right;
        if (y->len[l] == 0 || y->len[r] == 0 || y->nxt[l] != r || y->len[l] + y->len[r] != e.size)
            continue; /* stale */
        int32_t nn = y->n_nodes++;
        y->kid_l[nn] = y->node[l];
        y->kid_r[nn] = y->node[r];
        y->nstart[nn] = y->start[l];
        y->nlen[nn] = y->len[l] + y->len[r];
        y->node[l] = nn;
        y->len[l] += y->len[r];
        y->len[r] = 0;
        y->nxt[l] = y->nxt[r];
        if (y->nxt[r] >= 0) y->prv[y->nxt[r]] = l;
        spm_try_pair(t, buf, y, h, y->prv[l], l);
        spm_try_pair(t, buf, y, h, l, y->nxt[l]);
    }
    if (h->oom) return false;
    bool ok = true;
    for (int32_t i = 0; i >= 0 && ok; i = y->nxt[i]) ok = emit_node(t, buf, y, y->node[i], out);
    return ok;
}

static bool encode_bpe(const tr_tokenizer *t, const char *buf, size_t n, segs *out) {
    spm_syms y = {0};
    spm_heap h = {0};
    bool ok = false;
    y.start = malloc(n * sizeof(size_t));
    y.len = malloc(n * sizeof(size_t));
    y.prv = malloc(n * sizeof(int32_t));
    y.nxt = malloc(n * sizeof(int32_t));
    y.frozen = malloc(n);
    y.node = malloc(n * sizeof(int32_t));
    y.kid_l = malloc(2 * n * sizeof(int32_t));
    y.kid_r = malloc(2 * n * sizeof(int32_t));
    y.nstart = malloc(2 * n * sizeof(size_t));
    y.nlen = malloc(2 * n * sizeof(size_t));
    if (!y.start || !y.len || !y.prv || !y.nxt || !y.frozen || !y.node || !y.kid_l || !y.kid_r ||
        !y.nstart || !y.nlen || n > INT32_MAX / 2)
        goto done;
    if (!t->spm_ws_split) {
        ok = bpe_span(t, buf, 0, n, &y, &h, out);
    } else {
        /* No mergeable piece has U+2581 past its first byte, so no merge
         * crosses the point before a U+2581: each word merges alone (same
         * result, far smaller heaps). */
        ok = true;
        for (size_t from = 0; from < n && ok;) {
            size_t to = from + 3;
            while (to < n && !(to + 3 <= n && memcmp(buf + to, SPM_SPACE, 3) == 0)) to++;
            if (to > n) to = n;
            ok = bpe_span(t, buf, from, to, &y, &h, out);
            from = to;
        }
    }
done:
    free(y.start);
    free(y.len);
    free(y.prv);
    free(y.nxt);
    free(y.frozen);
    free(y.node);
    free(y.kid_l);
    free(y.kid_r);
    free(y.nstart);
    free(y.nlen);
    free(h.v);
    return ok;
}

/* ---- unigram ---- */

typedef struct {
    float score;
    int64_t from; /* start of the best piece ending here, -1 unset */
    int32_t id;
} best_end;

static bool encode_unigram(const tr_tokenizer *t, const char *buf, size_t n, segs *out) {
    best_end *b = malloc((n + 1) * sizeof(*b));
    if (!b) return false;
    for (size_t i = 0; i <= n; i++) b[i] = (best_end){0.0f, -1, -1};
    const float unk_score = t->min_score - 10.0f;
    for (size_t at = 0; at < n;) {
        const float here = b[at].score;
        const size_t mblen = char_len((const unsigned char *)buf + at, n - at);
        bool single = false;
        int32_t node = 0;
        for (size_t k = at; k < n;) {
            node = tr_trie_step(&t->trie, node, (unsigned char)buf[k]);
            if (node < 0) break;
            k++;
            int32_t id = t->trie.value[node];
            if (id < 0 || t->types[id] == TR_TT_UNUSED) continue;
            size_t length = k - at;
            /* The library computes this in double (its ternary mixes float
             * and double) and stores the result as float. */
            double score = t->types[id] == TR_TT_USER_DEFINED
                               ? (double)((float)length * t->max_score) - 0.1
                               : (double)t->scores[id];
            double cand = score + (double)here;
            if (b[k].from < 0 || cand > (double)b[k].score) {
                b[k].score = (float)cand;
                b[k].from = (int64_t)at;
                b[k].id = id;
            }
            if (length == mblen) single = true;
        }
        if (!single) {
            float cand = unk_score + here;
            best_end *e = &b[at + mblen];
            if (e->from < 0 || cand > e->score) {
                e->score = cand;
                e->from = (int64_t)at;
                e->id = -1;
            }
        }
        at += mblen;
    }
    /* Backtrack, then reverse into out. */
    size_t first = out->n;
    bool ok = true;
    for (size_t end = n; end > 0 && ok;) {
        size_t from = (size_t)b[end].from;
        ok = segs_push(out, from, end - from, b[end].id);
        end = from;
    }
    for (size_t i = first, j = out->n; ok && i + 1 < j; i++, j--) {
        seg tmp = out->v[i];
        out->v[i] = out->v[j - 1];
        out->v[j - 1] = tmp;
    }
    free(b);
    return ok;
}

void tr_tok_encode_spm(const tr_tokenizer *t, const unsigned char *s, size_t n, tr_ids *out) {
    if (n == 0) return;
    if (n > (SIZE_MAX - 4) / 3) {
        out->oom = true;
        return;
    }
    char *buf = malloc(3 * n + 4);
    segs sg = {0};
    if (!buf) {
        out->oom = true;
        return;
    }
    size_t m = 0;
    memcpy(buf, SPM_SPACE, 3);
    m = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(buf + m, SPM_SPACE, 3);
            m += 3;
        } else {
            buf[m++] = (char)s[i];
        }
    }
    bool ok =
        t->kind == TR_TOK_SPM_BPE ? encode_bpe(t, buf, m, &sg) : encode_unigram(t, buf, m, &sg);
    if (!ok) out->oom = true;
    bool prev_unk = false;
    for (size_t i = 0; ok && i < sg.n; i++) {
        const seg *g = &sg.v[i];
        if (g->id >= 0) {
            tr_ids_push(out, g->id);
            prev_unk = false;
        } else if (t->byte_fallback) {
            for (size_t k = 0; k < g->len; k++) {
                int32_t id = t->byte_id[(unsigned char)buf[g->start + k]];
                if (id < 0) id = t->unk;
                if (id >= 0) tr_ids_push(out, id);
            }
        } else {
            if (!prev_unk && t->unk >= 0) tr_ids_push(out, t->unk);
            prev_unk = true;
        }
    }
    free(sg.v);
    free(buf);
}
