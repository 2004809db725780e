/* Causal-LM forward passes (docs/formats/causal-lm.md §3–§6): the block math shared by
 * prefill and decode steps, the KV cache, and the head. One routine runs a
 * set of rows through every block; prefill feeds one slot's consecutive
 * positions in row chunks, a step feeds one row per batch slot. */
#include "nn/causal_lm.h"

#include "nn/causal_lm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/argmax.h"
#include "util/log.h"
#include "util/mem.h"

/* Prefill row chunk: large enough for GEMM efficiency, small enough that the
 * FFN scratch of a long prompt stays bounded (rows × d_ffn floats). */
#define CLM_CHUNK 256
/* Rows per pass of a batched prefill (all slots together): each weight is
 * read once per pass for every prompt's rows. */
#define CLM_BATCH_ROWS 512

void tr_clm_hparams_defaults(tr_clm_hparams *hp) {
    hp->embedding_mult = 1.0f;
    hp->attention_mult = 0.0f;
    hp->residual_mult = 1.0f;
    hp->logits_scale = 1.0f;
}

static bool tensor_is(const tr_tensor *t, int64_t ne0, int64_t ne1, const char *what) {
    if (t && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1) return true;
    if (!t)
        TR_ERROR("causal_lm: %s is missing", what);
    else
        TR_ERROR("causal_lm: %s '%s' has ne {%lld, %lld}, expected {%lld, %lld}", what,
                 t->name ? t->name : "?", (long long)t->ne[0], (long long)t->ne[1], (long long)ne0,
                 (long long)ne1);
    return false;
}

bool tr_clm_check(const tr_clm_hparams *hp, const tr_clm_weights *w) {
    if (hp->n_layer < 1 || hp->d_model < 1 || hp->n_head < 1 || hp->n_head_kv < 1 ||
        hp->head_dim < 2 || (hp->head_dim & 1) || hp->d_ffn < 1 || hp->n_vocab < 1 ||
        hp->n_head % hp->n_head_kv) {
        TR_ERROR("causal_lm: bad geometry (layers %d, d %d, heads %d/%d, head_dim %d, ffn %d, "
                 "vocab %d)",
                 hp->n_layer, hp->d_model, hp->n_head, hp->n_head_kv, hp->head_dim, hp->d_ffn,
                 hp->n_vocab);
        return false;
    }
    const int64_t D = hp->d_model, Q = (int64_t)hp->n_head * hp->head_dim,
                  K = (int64_t)hp->n_head_kv * hp->head_dim, F = hp->d_ffn;
    if (!tensor_is(w->tok_emb, D, hp->n_vocab, "token embedding") ||
        !tensor_is(w->head, D, hp->n_vocab, "output head"))
        return false;
    if (!w->out_norm || !w->blocks) {
        TR_ERROR("causal_lm: output norm or blocks missing");
        return false;
    }
    for (int l = 0; l < hp->n_layer; l++) {
        const tr_clm_block *b = &w->blocks[l];
        if (!tensor_is(b->wq, D, Q, "attn.q") || !tensor_is(b->wk, D, K, "attn.k") ||
            !tensor_is(b->wv, D, K, "attn.v") || !tensor_is(b->wo, Q, D, "attn.o") ||
            !tensor_is(b->gate, D, F, "ffn.gate") || !tensor_is(b->up, D, F, "ffn.up") ||
            !tensor_is(b->down, F, D, "ffn.down"))
            return false;
        if (!b->norm_attn || !b->norm_ffn || (hp->qk_norm && (!b->q_norm || !b->k_norm))) {
            TR_ERROR("causal_lm: block %d lacks a norm weight", l);
            return false;
        }
    }
    return true;
}

size_t tr_clm_step_weight_bytes(const tr_clm_hparams *hp, const tr_clm_weights *w) {
    size_t n = w->head->nbytes;
    for (int l = 0; l < hp->n_layer; l++) {
        const tr_clm_block *b = &w->blocks[l];
        n += b->wq->nbytes + b->wk->nbytes + b->wv->nbytes + b->wo->nbytes + b->gate->nbytes +
             b->up->nbytes + b->down->nbytes;
    }
    return n;
}

int tr_clm_ctx_pow2(int64_t need, int ceiling) {
    int64_t c = 1024;
    while (c < need && c < ((int64_t)1 << 30)) c *= 2;
    if (ceiling > 0 && c > ceiling) c = ceiling;
    return (int)c;
}

size_t tr_clm_kv_bytes_per_pos(const tr_clm_hparams *hp, bool f16) {
    return 2 * (size_t)hp->n_layer * (size_t)hp->n_head_kv * (size_t)hp->head_dim * (f16 ? 2 : 4);
}

/* ---- state ---- */

static size_t scratch_floats(const tr_clm_hparams *hp, int rows) {
    size_t D = (size_t)hp->d_model, Q = (size_t)hp->n_head * hp->head_dim,
           K = (size_t)hp->n_head_kv * hp->head_dim, F = (size_t)hp->d_ffn;
    return (2 * D + 2 * Q + 2 * K + 2 * F) * (size_t)rows;
}

static bool grow_rows(tr_clm_state *st, int rows) {
    if (rows <= st->cap_rows) return true;
    const tr_clm_hparams *hp = &st->hp;
    float *s = malloc(scratch_floats(hp, rows) * sizeof(float));
    float *x = malloc((size_t)rows * hp->d_model * sizeof(float));
    float *lg = malloc((size_t)rows * hp->n_vocab * sizeof(float));
    int32_t *p = malloc((size_t)rows * sizeof(int32_t));
    clm_seg *sg = malloc((size_t)rows * sizeof(clm_seg));
    if (!s || !x || !lg || !p || !sg) {
        free(s);
        free(x);
        free(lg);
        free(p);
        free(sg);
        TR_ERROR("causal_lm: out of memory for %d rows of scratch", rows);
        return false;
    }
    free(st->scratch);
    free(st->x);
    free(st->logits);
    free(st->pos32);
    free(st->segs);
    st->scratch = s;
    st->x = x;
    st->logits = lg;
    st->pos32 = p;
    st->segs = sg;
    st->cap_rows = rows;
    return true;
}

tr_clm_state *tr_clm_state_new(const tr_clm_hparams *hp, const tr_clm_weights *w, bool kv_f16) {
    tr_clm_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->hp = *hp;
    st->w = *w;
    st->kv_f16 = kv_f16;
    if (!grow_rows(st, 1)) {
        tr_clm_state_free(st);
        return NULL;
    }
    return st;
}

static void kv_release(tr_clm_kv *kv) {
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
    kv->n_slot = kv->n_ctx = 0;
    kv->window = 0;
}

void tr_clm_state_trim(tr_clm_state *st) {
    if (!st) return;
    kv_release(&st->kv);
    tr_clm_undo_drop(st);
    TR_FREE_ALL(st->scratch, st->x, st->logits, st->pos32, st->segs);
    st->scratch = st->x = st->logits = NULL;
    st->pos32 = NULL;
    st->segs = NULL;
    st->cap_rows = 0;
    st->n_logit_rows = 0;
}

void tr_clm_state_free(tr_clm_state *st) {
    if (!st) return;
    tr_clm_state_trim(st);
    free(st->add);
    tr_clm_step1_free(st->step1);
    tr_clm_undo_free(st);
    free(st);
}

transcribe_status tr_clm_reserve(tr_clm_state *st, int n_slot, int n_ctx) {
    tr_clm_kv *kv = &st->kv;
    const int kv_dim = st->hp.n_head_kv * st->hp.head_dim;
    const size_t es = st->kv_f16 ? 2 : 4;
    if (n_slot < 1 || n_ctx < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    if (n_ctx < st->window) n_ctx = st->window; /* a window's ring needs its rows */
    tr_clm_undo_drop(st);
    /* Reuse without clearing: a pass only reads rows [0, pos] it has
     * written itself, so stale rows of an earlier run are never seen. */
    if (kv->k && kv->n_slot == n_slot && kv->n_ctx >= n_ctx) {
        kv->window = st->window;
        return TRANSCRIBE_OK;
    }
    kv_release(kv);
    size_t n = (size_t)st->hp.n_layer * (size_t)n_slot * (size_t)n_ctx * (size_t)kv_dim;
    kv->k = calloc(n, es);
    kv->v = calloc(n, es);
    if (!kv->k || !kv->v) {
        kv_release(kv);
        TR_ERROR("causal_lm: out of memory for a KV cache of %d x %d positions (%zu MiB)", n_slot,
                 n_ctx, 2 * n * es >> 20);
        return TRANSCRIBE_ERR_OOM;
    }
    kv->n_layer = st->hp.n_layer;
    kv->n_slot = n_slot;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->n_head_kv = st->hp.n_head_kv;
    kv->head_dim = st->hp.head_dim;
    kv->f16 = st->kv_f16;
    kv->window = st->window;
    return TRANSCRIBE_OK;
}

bool tr_clm_set_window(tr_clm_state *st, int window) {
    if (window < 0) return false;
    st->window = window;
    tr_clm_undo_drop(st);
    st->kv.window = st->kv.k && window <= st->kv.n_ctx ? window : 0;
    return true;
}

bool tr_clm_set_input_rows(tr_clm_state *st, int slot, const float *rows, int64_t first, int n) {
    if (slot < 0 || slot > 1 << 20) return false;
    if (slot >= st->n_add) {
        if (!rows || n <= 0) return true;
        struct clm_add *a = realloc(st->add, (size_t)(slot + 1) * sizeof *a);
        if (!a) return false;
        for (int i = st->n_add; i <= slot; i++) a[i] = (struct clm_add){NULL, 0, 0};
        st->add = a;
        st->n_add = slot + 1;
    }
    st->add[slot] =
        (rows && n > 0) ? (struct clm_add){rows, first, n} : (struct clm_add){NULL, 0, 0};
    return true;
}

void tr_clm_clear_input_rows(tr_clm_state *st) {
    for (int i = 0; i < st->n_add; i++) st->add[i] = (struct clm_add){NULL, 0, 0};
}

/* Adds slot's input row of position pos to x (d_model floats), if it has one. */
static void add_input_row(const tr_clm_state *st, int slot, int pos, float *x) {
    if (slot >= st->n_add || !st->add[slot].rows) return;
    const struct clm_add *a = &st->add[slot];
    if (pos < a->first || pos >= a->first + a->n) return;
    const size_t D = (size_t)st->hp.d_model;
    const float *r = a->rows + (size_t)(pos - a->first) * D;
    for (size_t i = 0; i < D; i++) x[i] += r[i];
}

const tr_clm_kv *tr_clm_cache(const tr_clm_state *st) {
    return &st->kv;
}

/* ---- math ---- */

void tr_clm_embed(const tr_clm_hparams *hp, const tr_clm_weights *w, const int32_t *ids, int n,
                  const float *audio, int audio_at, int n_audio, float *out) {
    const size_t D = (size_t)hp->d_model;
    tr_get_rows(w->tok_emb, ids, n, out);
    if (audio && n_audio > 0 && audio_at >= 0 && audio_at + n_audio <= n)
        memcpy(out + (size_t)audio_at * D, audio, (size_t)n_audio * D * sizeof(float));
    if (hp->embedding_mult != 1.0f)
        for (size_t i = 0; i < (size_t)n * D; i++) out[i] *= hp->embedding_mult;
}

void tr_clm_kv_write(tr_clm_kv *kv, size_t off, const float *k, const float *v, int n) {
    if (kv->f16) {
        uint16_t *kd = (uint16_t *)kv->k + off, *vd = (uint16_t *)kv->v + off;
        for (int i = 0; i < n; i++) {
            kd[i] = tr_f32_to_f16(k[i]);
            vd[i] = tr_f32_to_f16(v[i]);
        }
    } else {
        memcpy((float *)kv->k + off, k, (size_t)n * sizeof(float));
        memcpy((float *)kv->v + off, v, (size_t)n * sizeof(float));
    }
}

void tr_clm_kv_write_pos(tr_clm_kv *kv, int layer, int slot, int pos, const float *k,
                         const float *v) {
    const size_t base = tr_clm_kv_base(kv, layer, slot);
    const int hd = kv->head_dim;
    for (int g = 0; g < kv->n_head_kv; g++)
        tr_clm_kv_write(kv, base + tr_clm_kv_row(kv, g, pos), k + (size_t)g * hd,
                        v + (size_t)g * hd, hd);
}

/* Attention of n_q query rows of one slot whose first query sits at
 * position p0, over cache rows [0, p0 + n_q) with the causal rule. */
static void attend(const clm_pass *ps, tr_pool *pool, int layer, int slot, int p0, int n_q,
                   const float *q, float *o) {
    const tr_clm_hparams *hp = ps->hp;
    const tr_clm_kv *kv = ps->kv;
    const int Q = hp->n_head * hp->head_dim;
    size_t base = tr_clm_kv_base(kv, layer, slot);
    /* under a window a one-row segment attends to its span of ring rows (in any order: one
     * query, no mask); longer segments stay below the window (tr_clm_prefill checks) */
    const int n_kv = n_q == 1 ? tr_clm_kv_span(kv, p0) : p0 + n_q;
    tr_attn_args a = {
        .q = q,
        .q_stride = Q,
        .kv_stride = kv->head_dim,
        .kv_head_stride = (long)tr_clm_kv_head_stride(kv),
        .out = o,
        .out_stride = Q,
        .n_q = n_q,
        .n_kv = n_kv,
        .kv_valid = n_kv,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .scale = hp->attention_mult > 0 ? hp->attention_mult : 1.0f / sqrtf((float)hp->head_dim),
        .causal = true,
        .causal_offset = n_kv - n_q,
    };
    if (kv->f16) {
        tr_attention_f16kv(pool, &a, (const uint16_t *)kv->k + base,
                           (const uint16_t *)kv->v + base);
    } else {
        a.k = (const float *)kv->k + base;
        a.v = (const float *)kv->v + base;
        tr_attention(pool, &a);
    }
}

/* Bidirectional attention of the R rows of one pass over their own K/V
 * (no cache, no mask): every row attends to every row. */
static void attend_all(const clm_pass *ps, tr_pool *pool, int R, const float *q, const float *k,
                       const float *v, float *o) {
    const tr_clm_hparams *hp = ps->hp;
    const int Q = hp->n_head * hp->head_dim, K = hp->n_head_kv * hp->head_dim;
    tr_attn_args a = {
        .q = q,
        .q_stride = Q,
        .k = k,
        .v = v,
        .kv_stride = K,
        .out = o,
        .out_stride = Q,
        .n_q = R,
        .n_kv = R,
        .kv_valid = R,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .scale = hp->attention_mult > 0 ? hp->attention_mult : 1.0f / sqrtf((float)hp->head_dim),
    };
    tr_attention(pool, &a);
}

size_t tr_clm_scratch_floats(const tr_clm_hparams *hp, int rows) {
    return scratch_floats(hp, rows);
}

bool tr_clm_blocks_fwd(const clm_pass *ps, tr_pool *pool, float *x, int R, const clm_seg *segs,
                       int n_seg) {
    const tr_clm_hparams *hp = ps->hp;
    const int D = hp->d_model, Q = hp->n_head * hp->head_dim, K = hp->n_head_kv * hp->head_dim,
              F = hp->d_ffn, hd = hp->head_dim;
    const size_t r = (size_t)R;
    float *h = ps->scratch, *q = h + r * D, *k = q + r * Q, *v = k + r * K, *o = v + r * K,
          *g = o + r * Q, *u = g + r * F, *t = u + r * F;
    int32_t *p32 = ps->pos32;
    for (int s = 0, i = 0; s < n_seg; s++)
        for (int j = 0; j < segs[s].n; j++) p32[i++] = segs[s].p0 + j;
    const float rm = hp->residual_mult;

    for (int l = 0; l < hp->n_layer; l++) {
        const tr_clm_block *b = &ps->w->blocks[l];
        tr_rms_norm(pool, x, h, R, D, b->norm_attn, hp->eps);
        const tr_tensor *qkv_w[3] = {b->wq, b->wk, b->wv};
        float *qkv_y[3] = {q, k, v};
        tr_linear_group(pool, qkv_w, 3, h, R, qkv_y);
        if (hp->qk_norm) {
            tr_rms_norm(pool, q, q, R * hp->n_head, hd, b->q_norm, hp->eps);
            tr_rms_norm(pool, k, k, R * hp->n_head_kv, hd, b->k_norm, hp->eps);
        }
        tr_rope(q, R, hp->n_head, hd, Q, p32, hd, hp->rope_theta, true);
        tr_rope(k, R, hp->n_head_kv, hd, K, p32, hd, hp->rope_theta, true);
        if (!ps->kv) {
            attend_all(ps, pool, R, q, k, v, o);
        } else {
            for (int s = 0, i0 = 0; s < n_seg; i0 += segs[s].n, s++) {
                for (int j = 0; j < segs[s].n; j++)
                    tr_clm_kv_write_pos(ps->kv, l, segs[s].slot, segs[s].p0 + j,
                                        k + (size_t)(i0 + j) * K, v + (size_t)(i0 + j) * K);
                attend(ps, pool, l, segs[s].slot, segs[s].p0, segs[s].n, q + (size_t)i0 * Q,
                       o + (size_t)i0 * Q);
            }
        }
        tr_linear(pool, b->wo, NULL, o, R, t);
        tr_add_scaled(x, x, t, rm, (long)R * D);

        tr_rms_norm(pool, x, h, R, D, b->norm_ffn, hp->eps);
        const tr_tensor *gu_w[2] = {b->gate, b->up};
        float *gu_y[2] = {g, u};
        tr_linear_group(pool, gu_w, 2, h, R, gu_y);
        tr_silu(g, (long)R * F);
        for (size_t i = 0; i < r * F; i++) g[i] *= u[i];
        tr_linear(pool, b->down, NULL, g, R, t);
        tr_add_scaled(x, x, t, rm, (long)R * D);
        if (ps->should_abort && l + 1 < hp->n_layer && ps->should_abort(ps->abort_user))
            return false;
    }
    return true;
}

void tr_clm_head_fwd(const tr_clm_hparams *hp, const tr_clm_weights *w, tr_pool *pool, float *x,
                     int R, float *logits) {
    tr_rms_norm(pool, x, x, R, hp->d_model, w->out_norm, hp->eps);
    tr_linear(pool, w->head, NULL, x, R, logits);
    if (hp->logits_scale != 1.0f && hp->logits_scale != 0.0f) {
        const float s = 1.0f / hp->logits_scale;
        for (size_t i = 0; i < (size_t)R * hp->n_vocab; i++) logits[i] *= s;
    }
}

/* The cached pass of the state's rows. */
static void blocks_fwd(tr_clm_state *st, tr_pool *pool, float *x, int R, const clm_seg *segs,
                       int n_seg) {
    const clm_pass ps = {&st->hp, &st->w, &st->kv, st->scratch, st->pos32, NULL, NULL};
    (void)tr_clm_blocks_fwd(&ps, pool, x, R, segs, n_seg);
}

static void head_fwd(const tr_clm_state *st, tr_pool *pool, float *x, int R, float *logits) {
    tr_clm_head_fwd(&st->hp, &st->w, pool, x, R, logits);
}

int tr_clm_prefill(tr_clm_state *st, tr_pool *pool, float *x, int n, int slot, float *logits) {
    const tr_clm_hparams *hp = &st->hp;
    if (!x || n < 1 || slot < 0 || slot >= st->kv.n_slot || n > st->kv.n_ctx ||
        (st->kv.window > 0 && n > st->kv.window)) {
        TR_ERROR("causal_lm: prefill of %d rows does not fit the cache (%d slots x %d)", n,
                 st->kv.n_slot, st->kv.n_ctx);
        return -1;
    }
    tr_clm_undo_drop(st); /* the slot starts again */
    int chunk = n < CLM_CHUNK ? n : CLM_CHUNK;
    if (!grow_rows(st, chunk)) return -1;
    for (int p0 = 0; p0 < n; p0 += chunk) {
        int R = n - p0 < chunk ? n - p0 : chunk;
        const clm_seg seg = {slot, p0, R};
        blocks_fwd(st, pool, x + (size_t)p0 * hp->d_model, R, &seg, 1);
    }
    head_fwd(st, pool, x + (size_t)(n - 1) * hp->d_model, 1, st->logits);
    st->n_logit_rows = 1;
    if (logits) memcpy(logits, st->logits, (size_t)hp->n_vocab * sizeof(float));
    return tr_argmax(st->logits, hp->n_vocab);
}

static bool step_rows(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                      const int *slots, int B, int32_t *next, bool one_run);

bool tr_clm_step(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                 const int *slots, int B, int32_t *next) {
    return tr_clm_step_path(st, pool, ids, pos, slots, B, next, true);
}

bool tr_clm_step_path(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                      const int *slots, int B, int32_t *next, bool one_run) {
    const tr_clm_hparams *hp = &st->hp;
    if (B < 1) return false;
    for (int b = 0; b < B; b++) {
        if (ids[b] < 0 || ids[b] >= hp->n_vocab || slots[b] < 0 || slots[b] >= st->kv.n_slot ||
            !tr_clm_kv_pos_ok(&st->kv, pos[b])) {
            TR_ERROR("causal_lm: step row %d (id %d, slot %d, position %d) is outside the cache "
                     "(%d x %d)",
                     b, (int)ids[b], slots[b], pos[b], st->kv.n_slot, st->kv.n_ctx);
            return false;
        }
    }
    for (int b = 0; b < B; b++) tr_clm_undo_resolve(st, slots[b], pos[b]);
    return step_rows(st, pool, ids, pos, slots, B, next, one_run);
}

/* tr_clm_step_path's rows once checked (and the ring rows of rejected drafts put back). */
static bool step_rows(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                      const int *slots, int B, int32_t *next, bool one_run) {
    const tr_clm_hparams *hp = &st->hp;
    if (!grow_rows(st, B)) return false;
    tr_clm_embed(hp, &st->w, ids, B, NULL, 0, 0, st->x);
    for (int b = 0; b < B; b++)
        add_input_row(st, slots[b], pos[b], st->x + (size_t)b * hp->d_model);
    if (B == 1 && one_run && tr_clm_step1(st, pool, pos[0], 1, slots[0])) {
        st->n_logit_rows = 1;
        next[0] = tr_argmax(st->logits, hp->n_vocab);
        return true;
    }
    for (int b = 0; b < B; b++) st->segs[b] = (clm_seg){slots[b], pos[b], 1};
    blocks_fwd(st, pool, st->x, B, st->segs, B);
    head_fwd(st, pool, st->x, B, st->logits);
    st->n_logit_rows = B;
    for (int b = 0; b < B; b++)
        next[b] = tr_argmax(st->logits + (size_t)b * hp->n_vocab, hp->n_vocab);
    return true;
}

bool tr_clm_step_seq(tr_clm_state *st, tr_pool *pool, const int32_t *ids, int n, int p0, int slot,
                     int32_t *next) {
    const tr_clm_hparams *hp = &st->hp;
    if (!ids || !next || n < 1 || n > TR_CLM_SPEC_ROWS || slot < 0 || slot >= st->kv.n_slot ||
        !tr_clm_kv_pos_ok(&st->kv, p0) || !tr_clm_kv_pos_ok(&st->kv, (int64_t)p0 + n - 1)) {
        TR_ERROR("causal_lm: verify step of %d rows at position %d (slot %d) is outside the cache "
                 "(%d x %d)",
                 n, p0, slot, st->kv.n_slot, st->kv.n_ctx);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= hp->n_vocab) {
            TR_ERROR("causal_lm: verify row %d has id %d outside the vocabulary", i, (int)ids[i]);
            return false;
        }
    tr_clm_undo_resolve(st, slot, p0);
    if (!tr_clm_undo_save(st, slot, p0, n)) return false;
    if (n > 1) {
        if (!grow_rows(st, n)) return false;
        tr_clm_embed(hp, &st->w, ids, n, NULL, 0, 0, st->x);
        for (int i = 0; i < n; i++)
            add_input_row(st, slot, p0 + i, st->x + (size_t)i * hp->d_model);
        if (tr_clm_step1(st, pool, p0, n, slot)) {
            st->n_logit_rows = n;
            for (int i = 0; i < n; i++)
                next[i] = tr_argmax(st->logits + (size_t)i * hp->n_vocab, hp->n_vocab);
            return true;
        }
    }
    /* one row, or weights the one-run step does not take: the plain steps
     * one after another (the same bits, without the shared weight reads) */
    for (int i = 0; i < n; i++) {
        int pos = p0 + i;
        if (!step_rows(st, pool, ids + i, &pos, &slot, 1, next + i, true)) return false;
    }
    return true;
}

const float *tr_clm_step_logits(const tr_clm_state *st, int b) {
    if (b < 0 || b >= st->n_logit_rows) return NULL;
    return st->logits + (size_t)b * st->hp.n_vocab;
}

bool tr_clm_prefill_batch(tr_clm_state *st, tr_pool *pool, float *const *x, const int *T,
                          const int *slots, int B, int32_t *first) {
    const tr_clm_hparams *hp = &st->hp;
    const size_t D = (size_t)hp->d_model;
    if (B < 1) return false;
    int T_max = 0;
    for (int b = 0; b < B; b++) {
        if (!x[b] || T[b] < 1 || T[b] > st->kv.n_ctx || slots[b] < 0 || slots[b] >= st->kv.n_slot ||
            (st->kv.window > 0 && T[b] > st->kv.window)) {
            TR_ERROR("causal_lm: batched prefill row %d (%d positions, slot %d) does not fit the "
                     "cache (%d slots x %d)",
                     b, T[b], slots[b], st->kv.n_slot, st->kv.n_ctx);
            return false;
        }
        if (T[b] > T_max) T_max = T[b];
    }
    tr_clm_undo_drop(st);
    /* positions per pass: CLM_BATCH_ROWS rows shared by the prompts */
    const int C = CLM_BATCH_ROWS / B > 0 ? CLM_BATCH_ROWS / B : 1;
    int rows = 0;
    for (int b = 0; b < B; b++) rows += T[b] < C ? T[b] : C;
    if (!grow_rows(st, rows > B ? rows : B)) return false;
    for (int p0 = 0; p0 < T_max; p0 += C) {
        int R = 0, n_seg = 0;
        for (int b = 0; b < B; b++) {
            if (T[b] <= p0) continue;
            int n = T[b] - p0 < C ? T[b] - p0 : C;
            memcpy(st->x + (size_t)R * D, x[b] + (size_t)p0 * D, (size_t)n * D * sizeof(float));
            st->segs[n_seg++] = (clm_seg){slots[b], p0, n};
            R += n;
        }
        blocks_fwd(st, pool, st->x, R, st->segs, n_seg);
        /* keep each prompt's last row (the only one the head needs) */
        for (int s = 0, i0 = 0, b = 0; s < n_seg; i0 += st->segs[s].n, s++, b++) {
            while (T[b] <= p0) b++;
            if (p0 + st->segs[s].n == T[b])
                memcpy(x[b] + (size_t)(T[b] - 1) * D, st->x + (size_t)(i0 + st->segs[s].n - 1) * D,
                       D * sizeof(float));
        }
    }
    for (int b = 0; b < B; b++)
        memcpy(st->x + (size_t)b * D, x[b] + (size_t)(T[b] - 1) * D, D * sizeof(float));
    /* the head row by row: the matrix-vector path of a single prefill, so
     * each prompt's first token is its single run's (one head read per
     * prompt is small next to the prefill) */
    for (int b = 0; b < B; b++) {
        float *lg = st->logits + (size_t)b * hp->n_vocab;
        head_fwd(st, pool, st->x + (size_t)b * D, 1, lg);
        first[b] = tr_argmax(lg, hp->n_vocab);
    }
    st->n_logit_rows = B;
    return true;
}
