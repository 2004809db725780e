/* The one-row decode step (docs/formats/causal-lm.md §7) as one pool run,
 * and its R-row form for consecutive positions of one slot (the verify
 * step of speculative decoding, greedy.h).
 *
 * A step is memory-bound: it streams every weight once (~1.2 GB for
 * Qwen3-ASR 0.6b in F16) and does little else. Run as a sequence of kernel
 * calls it pays, per layer, five pool dispatches and the serial work in
 * between (norms, RoPE, the cache write, SwiGLU, residual adds) while the
 * other threads wait. Here the whole step is one pool run through a fixed
 * list of phases per layer:
 *
 *   qkv   rows of q, k and v                 (input: the attention norm of x)
 *   attn  one KV head each: q/k norm, RoPE, cache write, attention
 *   o     rows of o; x += residual_mult * row (each row of x has one owner)
 *   gu    matching rows of gate and up, then silu(gate) * up
 *   down  rows of down; x += residual_mult * row
 *
 * then the head's rows, claimed and awaited as nn/step_phase.h describes.
 * The norms feeding qkv, gu and the head are computed by each thread for
 * itself on entering the phase (a few microseconds) rather than in a phase
 * of their own.
 *
 * Every value is computed by the same code as the general path (the
 * matrix-vector rows, tr_rms_norm, tr_silu, the attention row kernel), so
 * the logits equal it bit for bit whatever thread takes which chunk.
 *
 * R rows (positions p0 .. p0 + R - 1): every phase runs each claimed
 * block of weight rows for all R inputs before the next block (the block
 * stays in cache, so the weights are streamed once for all rows), and an
 * attention claim (one KV head) writes and attends row after row, each
 * over its own [0, pos]. Each row is computed by exactly the one-row code
 * on its own input, so row r's logits and K/V are the bits R one-row
 * steps would give: a speculative step accepts exactly what plain greedy
 * decoding would produce. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/causal_lm_internal.h"
#include "nn/step_phase.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

enum { PH_QKV, PH_ATTN, PH_O, PH_GU, PH_DOWN, PH_PER_LAYER };

/* Per-part buffers (a part runs on one thread at a time). */
typedef struct {
    float *h;       /* [r_cap][h_stride] the normed inputs of qkv, gu, head */
    float *prep[3]; /* [r_cap][mv_stride] tr_matvec_prepare of the phase inputs, per weight */
    float *mv;      /* matrix-vector scratch */
    float *att;     /* attention scratch */
    int ith;        /* the thread's share of every phase */
} part_buf;

struct clm_step1 {
    int n_parts, r_cap; /* parts, rows the buffers hold */
    long h_stride, mv_stride;
    tr_sp_phase *ph; /* [n_layer * PH_PER_LAYER + 1] */
    int n_ph;
    part_buf *parts;
    float *part_mem;
    double *freq;       /* [head_dim / 2] RoPE frequencies */
    float *cosv, *sinv; /* [r_cap][head_dim / 2] of each row's position */
    tr_sp_split q, k, v, o, gu, down, head;
    bool checked, ok;
};

/* ---- plan ---- */

void tr_clm_step1_free(clm_step1 *s) {
    if (!s) return;
    free(s->ph);
    free(s->parts);
    free(s->part_mem);
    free(s->freq);
    free(s->cosv);
    free(s);
}

static bool weights_ok(tr_pool *pool, const tr_clm_hparams *hp, const tr_clm_weights *w) {
    if (!tr_matvec_check(pool, w->head)) return false;
    for (int l = 0; l < hp->n_layer; l++) {
        const tr_clm_block *b = &w->blocks[l];
        const tr_tensor *m[7] = {b->wq, b->wk, b->wv, b->wo, b->gate, b->up, b->down};
        for (int i = 0; i < 7; i++)
            if (!tr_matvec_check(pool, m[i])) return false;
    }
    return true;
}

/* The plan and buffers for n_parts parts and up to r_cap rows; NULL on
 * OOM. */
static clm_step1 *plan_new(const tr_clm_hparams *hp, const tr_clm_weights *w, int n_parts,
                           int r_cap) {
    clm_step1 *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const int half = hp->head_dim / 2;
    const long D = hp->d_model, Q = (long)hp->n_head * hp->head_dim, F = hp->d_ffn;
    long k_max = D > Q ? D : Q;
    if (F > k_max) k_max = F;
    const long mv = k_max + 16, att = (tr_attention_kv_head_floats(hp->head_dim) + 15) / 16 * 16;
    const long hs = (D + 15) / 16 * 16, per_part = r_cap * (hs + 3 * mv) + mv + att;
    s->n_parts = n_parts;
    s->r_cap = r_cap;
    s->h_stride = hs;
    s->mv_stride = mv;
    s->n_ph = hp->n_layer * PH_PER_LAYER + 1;
    /* the phases, then their shares */
    s->ph = aligned_alloc(64, sizeof(tr_sp_phase) * (size_t)s->n_ph +
                                  tr_sp_shares_size(s->n_ph, n_parts));
    s->parts = calloc((size_t)n_parts, sizeof *s->parts);
    s->part_mem = aligned_alloc(64, sizeof(float) * (size_t)(per_part * n_parts));
    s->freq = malloc(sizeof(double) * (size_t)half);
    s->cosv = malloc(sizeof(float) * 2 * (size_t)half * (size_t)r_cap);
    if (!s->ph || !s->parts || !s->part_mem || !s->freq || !s->cosv) {
        tr_clm_step1_free(s);
        return NULL;
    }
    s->sinv = s->cosv + (size_t)half * r_cap;
    for (int p = 0; p < n_parts; p++) {
        float *m = s->part_mem + per_part * p;
        s->parts[p].h = m;
        m += hs * r_cap;
        for (int i = 0; i < 3; i++, m += mv * r_cap) s->parts[p].prep[i] = m;
        s->parts[p].mv = m;
        s->parts[p].att = m + mv;
        s->parts[p].ith = p;
    }
    for (int i = 0; i < s->n_ph; i++)
        tr_sp_phase_bind(&s->ph[i], s->ph + s->n_ph, s->n_ph, i, n_parts);
    /* tr_rope's frequencies, computed the same way */
    for (int i = 0; i < half; i++)
        s->freq[i] = pow((double)hp->rope_theta, -2.0 * i / hp->head_dim);
    const tr_clm_block *b = &w->blocks[0];
    s->q = tr_sp_split_of(b->wq, 1);
    s->k = tr_sp_split_of(b->wk, 1);
    s->v = tr_sp_split_of(b->wv, 1);
    s->o = tr_sp_split_of(b->wo, 1);
    s->gu = tr_sp_split_of(b->gate, 2);
    s->down = tr_sp_split_of(b->down, 1);
    s->head = tr_sp_split_of(w->head, 1);
    return s;
}

/* ---- the run ---- */

/* Row r's vectors are x + r * D, q + r * Q, k / v + r * K, o + r * Q,
 * g / u + r * F, t + r * D (D, Q, K, F as in step_ctx). */
typedef struct {
    tr_clm_state *st;
    clm_step1 *s;
    int p0, R, slot; /* rows: positions p0 .. p0 + R - 1 */
    long D, Q, K, F;
    float *x, *q, *k, *v, *o, *g, *u, *t;
    float attn_scale;
} step_ctx;

/* The R rows' inputs prepared for up to three weights: where the level has multi-row integer
 * dots for weight i and R > 1, grp[i] holds the rows in groups of TR_MATVEC_MULTI_MAX (group g at
 * grp[i] + g * TR_MATVEC_MULTI_MAX * mv_stride), so each weight row is unpacked once for a group
 * instead of once per row; else col[i][r] is row r's tr_matvec_prepare. Both give every row the
 * bits of its one-row step. */
typedef struct {
    const float *col[3][TR_CLM_SPEC_ROWS];
    const float *grp[3];
} prep_in;

/* Rows r of x + r * xs prepared for the n weights W into the part's buffers (once per weight type
 * and width: q / k / v and gate / up share theirs). */
static void prep_rows(const step_ctx *c, part_buf *pb, const tr_tensor *const *W, int n,
                      const float *x, long xs, prep_in *pi) {
    const clm_step1 *s = c->s;
    const long gs = TR_MATVEC_MULTI_MAX * s->mv_stride;
    for (int i = 0; i < n; i++) {
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (W[j]->type == W[i]->type && W[j]->ne[0] == W[i]->ne[0]) same = j;
        if (same >= 0) {
            pi->grp[i] = pi->grp[same];
            memcpy(pi->col[i], pi->col[same], sizeof pi->col[i]);
            continue;
        }
        bool multi = c->R > 1;
        for (int r0 = 0; multi && r0 < c->R; r0 += TR_MATVEC_MULTI_MAX) {
            const int m = c->R - r0 < TR_MATVEC_MULTI_MAX ? c->R - r0 : TR_MATVEC_MULTI_MAX;
            multi = tr_matvec_prepare_multi(W[i], x + r0 * xs, xs, m,
                                            pb->prep[i] + (r0 / TR_MATVEC_MULTI_MAX) * gs);
        }
        pi->grp[i] = multi ? pb->prep[i] : NULL;
        if (!multi)
            for (int r = 0; r < c->R; r++)
                pi->col[i][r] =
                    tr_matvec_prepare(W[i], x + r * xs, pb->prep[i] + (size_t)r * s->mv_stride);
    }
}

/* Each row's input norm (each thread its own copy), prepared for W. */
static void prep_input(const step_ctx *c, part_buf *pb, const float *norm_w,
                       const tr_tensor *const *W, int n, prep_in *pi) {
    const tr_clm_hparams *hp = &c->st->hp;
    for (int r = 0; r < c->R; r++)
        tr_rms_norm(NULL, c->x + r * c->D, pb->h + (size_t)r * c->s->h_stride, 1, hp->d_model,
                    norm_w, hp->eps);
    prep_rows(c, pb, W, n, pb->h, c->s->h_stride, pi);
}

/* y + r * ys [n] = W row n · row r of the input, for the rows [n0, n1) of W and every row r,
 * prepared as weight i of pi (row r's input at x + r * xs). */
static void rows_of(const step_ctx *c, const prep_in *pi, int i, const tr_tensor *W, long n0,
                    long n1, const float *x, long xs, float *y, long ys, float *mv) {
    if (!pi->grp[i]) {
        tr_sp_rows_range(c->R, W, n0, n1, x, xs, pi->col[i], y, ys, mv);
        return;
    }
    const long gs = TR_MATVEC_MULTI_MAX * c->s->mv_stride;
    if (c->R <= TR_MATVEC_MULTI_MAX) { /* one group: every weight row once */
        tr_matvec_rows_multi(W, pi->grp[i], c->R, y, ys, n0, n1);
        return;
    }
    long bu = TR_SP_ROWS_BLOCK / ((long)tr_row_bytes(W->type, W->ne[0]) * TR_SP_UNIT_ROWS);
    const long block = (bu < 1 ? 1 : bu) * TR_SP_UNIT_ROWS;
    for (long b0 = n0; b0 < n1; b0 += block) {
        const long b1 = b0 + block < n1 ? b0 + block : n1;
        for (int r0 = 0; r0 < c->R; r0 += TR_MATVEC_MULTI_MAX) {
            const int m = c->R - r0 < TR_MATVEC_MULTI_MAX ? c->R - r0 : TR_MATVEC_MULTI_MAX;
            tr_matvec_rows_multi(W, pi->grp[i] + (r0 / TR_MATVEC_MULTI_MAX) * gs, m, y + r0 * ys,
                                 ys, b0, b1);
        }
    }
}

static void rope_head(const clm_step1 *s, int r, float *p, int head_dim) {
    const int half = head_dim / 2;
    tr_rope_head(p, s->cosv + (size_t)r * half, s->sinv + (size_t)r * half, half, true);
}

/* Row r's attention for KV head g of layer l over positions [0, pos] (the last window ones under a
 * window: their ring rows, in any order). */
static void attn_row(const step_ctx *c, int l, int g, int r, part_buf *pb) {
    tr_clm_state *st = c->st;
    const tr_clm_hparams *hp = &st->hp;
    const int hd = hp->head_dim, pos = c->p0 + r;
    const tr_clm_kv *kv = &st->kv;
    const size_t base = tr_clm_kv_base(kv, l, c->slot);
    const int Q = hp->n_head * hd;
    tr_attn_args a = {
        .q = c->q + r * c->Q,
        .q_stride = Q,
        .kv_stride = hd,
        .kv_head_stride = (long)tr_clm_kv_head_stride(kv),
        .out = c->o + r * c->Q,
        .out_stride = Q,
        .n_q = 1,
        .n_kv = tr_clm_kv_span(kv, pos),
        .kv_valid = tr_clm_kv_span(kv, pos),
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hd,
        .scale = c->attn_scale,
        .causal = true,
        .causal_offset = tr_clm_kv_span(kv, pos) - 1,
    };
    if (kv->f16) {
        tr_attention_kv_head(&a, (const uint16_t *)kv->k + base, (const uint16_t *)kv->v + base, g,
                             pb->att);
    } else {
        a.k = (const float *)kv->k + base;
        a.v = (const float *)kv->v + base;
        tr_attention_kv_head(&a, NULL, NULL, g, pb->att);
    }
}

/* KV head g of layer l, row after row: the row's K/V into the cache, its
 * query heads' norms and rotation, and their attention over positions
 * [0, pos] (the rows before it are written by then). */
static void attn_chunk(const step_ctx *c, int l, int g, part_buf *pb) {
    for (int r = 0; r < c->R; r++) {
        tr_clm_state *st = c->st;
        const tr_clm_hparams *hp = &st->hp;
        const tr_clm_block *b = &st->w.blocks[l];
        const int hd = hp->head_dim, G = hp->n_head / hp->n_head_kv, pos = c->p0 + r;
        tr_clm_kv *kv = &st->kv;
        float *q = c->q + r * c->Q, *kh = c->k + r * c->K + (size_t)g * hd,
              *qh = q + (size_t)g * G * hd;
        if (hp->qk_norm) {
            tr_rms_norm(NULL, kh, kh, 1, hd, b->k_norm, hp->eps);
            tr_rms_norm(NULL, qh, qh, G, hd, b->q_norm, hp->eps);
        }
        rope_head(c->s, r, kh, hd);
        for (int j = 0; j < G; j++) rope_head(c->s, r, qh + (size_t)j * hd, hd);
        const size_t base = tr_clm_kv_base(kv, l, c->slot);
        tr_clm_kv_write(kv, base + tr_clm_kv_row(kv, g, pos), kh, c->v + r * c->K + (size_t)g * hd,
                        hd);
        attn_row(c, l, g, r, pb);
    }
}

/* x[n] += residual_mult * (W row n · in) over the rows of units [u0, u1),
 * for every row (row r's input at in + r * in_stride, prepared as pi's weight 0). */
static void residual_units(const step_ctx *c, const tr_tensor *W, long u0, long u1, const float *in,
                           long in_stride, const prep_in *pi, float *mv) {
    long n0, n1;
    tr_sp_unit_rows(W, u0, u1, &n0, &n1);
    const float rm = c->st->hp.residual_mult;
    rows_of(c, pi, 0, W, n0, n1, in, in_stride, c->t, c->D, mv);
    for (int r = 0; r < c->R; r++) {
        float *x = c->x + r * c->D, *t = c->t + r * c->D;
        for (long n = n0; n < n1; n++) x[n] = x[n] + rm * t[n]; /* tr_add_scaled's form */
    }
}

/* The units [u0, u1) of the qkv phase: q's units, then k's, then v's. */
static void qkv_units(const step_ctx *c, const tr_clm_block *b, int u0, int u1, part_buf *pb,
                      const prep_in *pi) {
    const clm_step1 *s = c->s;
    const tr_tensor *W[3] = {b->wq, b->wk, b->wv};
    float *y[3] = {c->q, c->k, c->v};
    const long ys[3] = {c->Q, c->K, c->K};
    const long nu[3] = {s->q.n_units, s->k.n_units, s->v.n_units};
    long base = 0;
    for (int m = 0; m < 3; m++) {
        long a = u0 > base ? u0 : base, e = u1 < base + nu[m] ? u1 : base + nu[m];
        if (a < e) {
            long n0, n1;
            tr_sp_unit_rows(W[m], a - base, e - base, &n0, &n1);
            rows_of(c, pi, m, W[m], n0, n1, pb->h, s->h_stride, y[m], ys[m], pb->mv);
        }
        base += nu[m];
    }
}

static void layer(const step_ctx *c, int l, part_buf *pb) {
    tr_clm_state *st = c->st;
    const tr_clm_block *b = &st->w.blocks[l];
    clm_step1 *s = c->s;
    tr_sp_phase *ph = s->ph + (size_t)l * PH_PER_LAYER;
    int u0, u1;

    prep_in pi;
    tr_sp_phase *p = &ph[PH_QKV];
    if (tr_sp_has_work(p)) {
        const tr_tensor *qkv[3] = {b->wq, b->wk, b->wv};
        prep_input(c, pb, b->norm_attn, qkv, 3, &pi);
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            qkv_units(c, b, u0, u1, pb, &pi);
            tr_sp_finish(p, u0, u1);
        }
    }
    tr_sp_wait(p);

    p = &ph[PH_ATTN];
    while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
        for (int g = u0; g < u1; g++) attn_chunk(c, l, g, pb);
        tr_sp_finish(p, u0, u1);
    }
    tr_sp_wait(p);

    p = &ph[PH_O];
    if (tr_sp_has_work(p)) {
        prep_rows(c, pb, &b->wo, 1, c->o, c->Q, &pi);
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            residual_units(c, b->wo, u0, u1, c->o, c->Q, &pi, pb->mv);
            tr_sp_finish(p, u0, u1);
        }
    }
    tr_sp_wait(p);

    p = &ph[PH_GU];
    if (tr_sp_has_work(p)) {
        const tr_tensor *gu[2] = {b->gate, b->up};
        prep_input(c, pb, b->norm_ffn, gu, 2, &pi);
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            long n0, n1;
            tr_sp_unit_rows(b->gate, u0, u1, &n0, &n1);
            rows_of(c, &pi, 0, b->gate, n0, n1, pb->h, s->h_stride, c->g, c->F, pb->mv);
            rows_of(c, &pi, 1, b->up, n0, n1, pb->h, s->h_stride, c->u, c->F, pb->mv);
            for (int r = 0; r < c->R; r++) {
                float *g = c->g + r * c->F, *u = c->u + r * c->F;
                tr_silu(g + n0, n1 - n0);
                for (long n = n0; n < n1; n++) g[n] *= u[n];
            }
            tr_sp_finish(p, u0, u1);
        }
    }
    tr_sp_wait(p);

    p = &ph[PH_DOWN];
    if (tr_sp_has_work(p)) {
        prep_rows(c, pb, &b->down, 1, c->g, c->F, &pi);
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            residual_units(c, b->down, u0, u1, c->g, c->F, &pi, pb->mv);
            tr_sp_finish(p, u0, u1);
        }
    }
    tr_sp_wait(p);
}

static void step_task(void *arg, int ith, int nth) {
    const step_ctx *c = arg;
    tr_clm_state *st = c->st;
    clm_step1 *s = c->s;
    part_buf *pb = &s->parts[ith];
    (void)nth;
    for (int l = 0; l < st->hp.n_layer; l++) layer(c, l, pb);
    tr_sp_phase *p = &s->ph[s->n_ph - 1];
    if (tr_sp_has_work(p)) {
        prep_in pi;
        prep_input(c, pb, st->w.out_norm, &st->w.head, 1, &pi);
        int u0, u1;
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            long n0, n1;
            tr_sp_unit_rows(st->w.head, u0, u1, &n0, &n1);
            rows_of(c, &pi, 0, st->w.head, n0, n1, pb->h, s->h_stride, st->logits, st->hp.n_vocab,
                    pb->mv);
            tr_sp_finish(p, u0, u1);
        }
    }
    /* the pool returns once every part is done: no wait needed here */
}

bool tr_clm_step1(tr_clm_state *st, tr_pool *pool, int p0, int R, int slot) {
    const tr_clm_hparams *hp = &st->hp;
    const int n_parts = tr_pool_n_threads(pool);
    if (R < 1 || R > TR_CLM_SPEC_ROWS) return false;
    clm_step1 *s = st->step1;
    if (!s || s->n_parts != n_parts || s->r_cap < R) {
        bool checked = s && s->checked, ok = s && s->ok;
        tr_clm_step1_free(s);
        /* a single row keeps the small plan; several take the most */
        s = st->step1 = plan_new(hp, &st->w, n_parts, R > 1 ? TR_CLM_SPEC_ROWS : 1);
        if (!s) return false;
        s->checked = checked;
        s->ok = ok;
    }
    if (!s->checked) {
        s->ok = weights_ok(pool, hp, &st->w);
        s->checked = true;
    }
    if (!s->ok) return false;
    const int half = hp->head_dim / 2;
    for (int r = 0; r < R; r++)
        for (int i = 0; i < half; i++) { /* tr_rope's angles */
            double ang = (double)(p0 + r) * s->freq[i];
            s->cosv[(size_t)r * half + i] = (float)cos(ang);
            s->sinv[(size_t)r * half + i] = (float)sin(ang);
        }
    for (int p = 0; p < s->n_ph; p++) {
        tr_sp_phase *ph = &s->ph[p];
        switch (p == s->n_ph - 1 ? -1 : p % PH_PER_LAYER) {
        case PH_QKV:
            tr_sp_phase_set(ph, s->q.n_units + s->k.n_units + s->v.n_units, s->q);
            break;
        case PH_ATTN: /* one KV head per claim */
            tr_sp_phase_set(ph, hp->n_head_kv, (tr_sp_split){0, 0});
            break;
        case PH_O:
            tr_sp_phase_set(ph, s->o.n_units, s->o);
            break;
        case PH_GU:
            tr_sp_phase_set(ph, s->gu.n_units, s->gu);
            break;
        case PH_DOWN:
            tr_sp_phase_set(ph, s->down.n_units, s->down);
            break;
        default:
            tr_sp_phase_set(ph, s->head.n_units, s->head);
            break;
        }
    }
    const size_t D = (size_t)hp->d_model, Q = (size_t)hp->n_head * hp->head_dim,
                 K = (size_t)hp->n_head_kv * hp->head_dim, F = (size_t)hp->d_ffn;
    const size_t n = (size_t)R;
    float *q = st->scratch + n * D, *k = q + n * Q, *v = k + n * K, *o = v + n * K, *g = o + n * Q,
          *u = g + n * F, *t = u + n * F;
    step_ctx c = {
        .st = st,
        .s = s,
        .p0 = p0,
        .R = R,
        .slot = slot,
        .D = (long)D,
        .Q = (long)Q,
        .K = (long)K,
        .F = (long)F,
        .x = st->x,
        .q = q,
        .k = k,
        .v = v,
        .o = o,
        .g = g,
        .u = u,
        .t = t,
        .attn_scale =
            hp->attention_mult > 0 ? hp->attention_mult : 1.0f / sqrtf((float)hp->head_dim),
    };
    tr_pool_run(pool, step_task, &c);
    if (hp->logits_scale != 1.0f && hp->logits_scale != 0.0f) {
        const float sc = 1.0f / hp->logits_scale;
        for (size_t i = 0; i < n * (size_t)hp->n_vocab; i++) st->logits[i] *= sc;
    }
    return true;
}
