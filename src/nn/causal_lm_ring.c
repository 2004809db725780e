/* The ring rows a speculative verify step overwrites under a sliding window (causal_lm_internal.h,
 * tr_clm_set_window).
 *
 * Position q lives in ring row q % window, so a verify step's draft row at position q >= window
 * replaces position q - window. Its own rows never need that position again (row q attends to
 * q - window + 1 .. q, and each row attends before the next one writes), but when a draft is
 * rejected, the next step feeds an earlier position p < q and attends to p - window + 1 .. p,
 * which includes q - window. Without the window the cache holds every position and a rejected
 * row is simply overwritten later; under it the overwritten rows are kept here and put back, so
 * speculative decoding leaves exactly the cache plain one-row steps leave (the decoded ids stay
 * greedy's at any length). The cost is a copy of the draft rows' K/V per verify step
 * (n_layer × kv_dim × 2 values per draft; ~320 KB for three drafts of a 26-layer, 1024-wide
 * F16 cache), nothing next to the step's weight reads. */
#include <stdlib.h>
#include <string.h>

#include "nn/causal_lm_internal.h"

/* Copies the ring row of position q (layer l, kv head g) to or from the undo buffers' entry i. */
static void copy_row(tr_clm_state *st, int l, int g, int i, int q, bool save) {
    const tr_clm_kv *kv = &st->kv;
    struct clm_undo *u = &st->undo;
    const size_t es = kv->f16 ? 2 : 4, hd = (size_t)kv->head_dim;
    const size_t off = (tr_clm_kv_base(kv, l, u->slot) + tr_clm_kv_row(kv, g, q)) * es;
    const size_t at = ((((size_t)l * kv->n_head_kv + g) * u->n) + i) * hd * es;
    char *ck = (char *)kv->k + off, *cv = (char *)kv->v + off;
    char *bk = (char *)u->k + at, *bv = (char *)u->v + at;
    if (save) {
        memcpy(bk, ck, hd * es);
        memcpy(bv, cv, hd * es);
    } else {
        memcpy(ck, bk, hd * es);
        memcpy(cv, bv, hd * es);
    }
}

bool tr_clm_undo_save(tr_clm_state *st, int slot, int p0, int n) {
    const tr_clm_kv *kv = &st->kv;
    struct clm_undo *u = &st->undo;
    u->n = 0;
    if (kv->window <= 0 || !kv->k) return true;
    /* draft rows at q in [p0 + 1, p0 + n) hold a live position when q >= window */
    const int a = p0 + 1 > kv->window ? p0 + 1 : kv->window, b = p0 + n;
    if (a >= b) return true;
    const size_t es = kv->f16 ? 2 : 4;
    const size_t need = (size_t)kv->n_layer * kv->n_head_kv * (size_t)(b - a) * kv->head_dim * es;
    if (need > u->cap) {
        void *k = realloc(u->k, need);
        if (k) u->k = k;
        void *v = k ? realloc(u->v, need) : NULL;
        if (v) u->v = v;
        if (!k || !v) return false;
        u->cap = need;
    }
    u->slot = slot;
    u->p0 = a;
    u->n = b - a;
    for (int l = 0; l < kv->n_layer; l++)
        for (int g = 0; g < kv->n_head_kv; g++)
            for (int i = 0; i < u->n; i++) copy_row(st, l, g, i, a + i, true);
    return true;
}

void tr_clm_undo_resolve(tr_clm_state *st, int slot, int pos) {
    struct clm_undo *u = &st->undo;
    if (u->n == 0 || slot != u->slot) return;
    const tr_clm_kv *kv = &st->kv;
    /* positions after pos were not accepted: their ring rows get back what they held */
    const int from = pos + 1 > u->p0 ? pos + 1 - u->p0 : 0;
    for (int l = 0; l < kv->n_layer; l++)
        for (int g = 0; g < kv->n_head_kv; g++)
            for (int i = from; i < u->n; i++) copy_row(st, l, g, i, u->p0 + i, false);
    u->n = 0;
}

void tr_clm_undo_free(tr_clm_state *st) {
    free(st->undo.k);
    free(st->undo.v);
    st->undo = (struct clm_undo){0};
}
