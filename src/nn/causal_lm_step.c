/* The one-row decode step (causal-lm.md §7) as one pool run.
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
 * then the head's rows. Every phase is split into chunks that any thread
 * claims from the phase's counter; a thread that finds no chunk left waits
 * until all of the phase's chunks are done (a barrier on work, not on
 * threads: a descheduled thread holds up only the chunk it has claimed, and
 * a thread that starts late finds the early phases finished and catches
 * up, so parts never wait for one another's arrival as tr_pool_run
 * requires). The norms feeding qkv, gu and the head are computed by each
 * thread for itself on entering the phase (a few microseconds) rather than
 * in a phase of their own.
 *
 * Every value is computed by the same code as the general path (the
 * matrix-vector rows, tr_rms_norm, tr_silu, the attention row kernel), so
 * the logits equal it bit for bit whatever thread takes which chunk. */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nn/causal_lm_internal.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

/* Weight bytes per chunk: small enough that the threads finish a phase
 * together (the last chunk is the only tail), large enough that claiming
 * and per-chunk setup stay negligible. */
#define CHUNK_BYTES (64 << 10)

enum { PH_QKV, PH_ATTN, PH_O, PH_GU, PH_DOWN, PH_PER_LAYER };

typedef struct {
    _Alignas(64) atomic_int claim; /* next unclaimed chunk */
    atomic_int done;               /* chunks finished */
    int n;                         /* chunks */
} phase;

/* Rows per chunk of one weight (a multiple of 16, at least 16). */
typedef struct {
    long rows, n_chunks;
} split;

/* Per-part buffers (a part runs on one thread at a time). */
typedef struct {
    float *h;       /* [d_model] the normed input of qkv, gu, head */
    float *prep[3]; /* tr_matvec_prepare of the phase input, per weight type */
    float *mv;      /* matrix-vector scratch */
    float *att;     /* attention scratch */
} part_buf;

struct clm_step1 {
    int n_parts;
    phase *ph; /* [n_layer * PH_PER_LAYER + 1] */
    int n_ph;
    part_buf *parts;
    float *part_mem;
    double *freq;       /* [head_dim / 2] RoPE frequencies */
    float *cosv, *sinv; /* [head_dim / 2] of the step's position */
    split q, k, v, o, gu, down, head;
    bool checked, ok;
};

/* ---- plan ---- */

static split split_of(const tr_tensor *w, int n_weights) {
    long row_bytes = (long)tr_row_bytes(w->type, w->ne[0]) * n_weights, n = (long)w->ne[1];
    long rows = row_bytes > 0 ? CHUNK_BYTES / row_bytes : n;
    rows = rows < 16 ? 16 : rows / 16 * 16;
    return (split){rows, (n + rows - 1) / rows};
}

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

/* The plan and buffers for n_parts parts; NULL on OOM. */
static clm_step1 *plan_new(const tr_clm_hparams *hp, const tr_clm_weights *w, int n_parts) {
    clm_step1 *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const int half = hp->head_dim / 2;
    const long D = hp->d_model, Q = (long)hp->n_head * hp->head_dim, F = hp->d_ffn;
    long k_max = D > Q ? D : Q;
    if (F > k_max) k_max = F;
    const long mv = k_max + 16, att = (tr_attention_kv_head_floats(hp->head_dim) + 15) / 16 * 16;
    const long per_part = (D + 15) / 16 * 16 + 4 * mv + att;
    s->n_parts = n_parts;
    s->n_ph = hp->n_layer * PH_PER_LAYER + 1;
    s->ph = aligned_alloc(64, sizeof(phase) * (size_t)s->n_ph);
    s->parts = calloc((size_t)n_parts, sizeof *s->parts);
    s->part_mem = aligned_alloc(64, sizeof(float) * (size_t)(per_part * n_parts));
    s->freq = malloc(sizeof(double) * (size_t)half);
    s->cosv = malloc(sizeof(float) * 2 * (size_t)half);
    if (!s->ph || !s->parts || !s->part_mem || !s->freq || !s->cosv) {
        tr_clm_step1_free(s);
        return NULL;
    }
    s->sinv = s->cosv + half;
    for (int p = 0; p < n_parts; p++) {
        float *m = s->part_mem + per_part * p;
        s->parts[p].h = m;
        m += (D + 15) / 16 * 16;
        for (int i = 0; i < 3; i++, m += mv) s->parts[p].prep[i] = m;
        s->parts[p].mv = m;
        s->parts[p].att = m + mv;
    }
    /* tr_rope's frequencies, computed the same way */
    for (int i = 0; i < half; i++)
        s->freq[i] = pow((double)hp->rope_theta, -2.0 * i / hp->head_dim);
    const tr_clm_block *b = &w->blocks[0];
    s->q = split_of(b->wq, 1);
    s->k = split_of(b->wk, 1);
    s->v = split_of(b->wv, 1);
    s->o = split_of(b->wo, 1);
    s->gu = split_of(b->gate, 2);
    s->down = split_of(b->down, 1);
    s->head = split_of(w->head, 1);
    return s;
}

/* ---- the run ---- */

typedef struct {
    tr_clm_state *st;
    clm_step1 *s;
    int pos, slot;
    float *x, *q, *k, *v, *o, *g, *u, *t;
    float attn_scale;
} step_ctx;

static void wait_phase(phase *p) {
    for (int i = 0; atomic_load_explicit(&p->done, memory_order_acquire) < p->n; i++)
        tr_cpu_relax(i);
}

/* Next chunk of phase p for this thread, or -1 when none is left. */
static inline int claim(phase *p) {
    int i = atomic_fetch_add_explicit(&p->claim, 1, memory_order_relaxed);
    return i < p->n ? i : -1;
}

static inline void finish(phase *p) {
    atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
}

static inline bool has_work(phase *p) {
    return atomic_load_explicit(&p->claim, memory_order_relaxed) < p->n;
}

/* Rows [c * rows, ...) of W (n_rows rows) into y[...] from x. */
static void rows_chunk(const tr_tensor *W, split sp, long c, const float *x, const float *prep,
                       float *y, float *mv) {
    long n0 = c * sp.rows, n1 = n0 + sp.rows < W->ne[1] ? n0 + sp.rows : W->ne[1];
    tr_matvec_rows(W, x, prep, y + n0, n0, n1, mv);
}

/* The phase input prepared for the n weights W (once per weight type; the
 * int8 x of Q8_0 rows, the group sums of K-quants) into prep[i]. */
static void prepare(part_buf *pb, const tr_tensor *const *W, int n, const float *x,
                    const float **prep) {
    for (int i = 0; i < n; i++) {
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (W[j]->type == W[i]->type) same = j;
        prep[i] = same >= 0 ? prep[same] : tr_matvec_prepare(W[i], x, pb->prep[i]);
    }
}

/* The input norm (each thread its own copy), prepared for W. */
static void prep_input(const step_ctx *c, part_buf *pb, const float *norm_w,
                       const tr_tensor *const *W, int n, const float **prep) {
    const tr_clm_hparams *hp = &c->st->hp;
    tr_rms_norm(NULL, c->x, pb->h, 1, hp->d_model, norm_w, hp->eps);
    prepare(pb, W, n, pb->h, prep);
}

static void rope_head(const clm_step1 *s, float *p, int head_dim) {
    const int half = head_dim / 2;
    for (int i = 0; i < half; i++) { /* tr_rope's NeoX rotation */
        float a = p[i], b = p[i + half];
        p[i] = a * s->cosv[i] - b * s->sinv[i];
        p[i + half] = a * s->sinv[i] + b * s->cosv[i];
    }
}

/* KV head g of layer l: its K/V row into the cache, its query heads'
 * norms and rotation, and their attention over positions [0, pos]. */
static void attn_chunk(const step_ctx *c, int l, int g, part_buf *pb) {
    tr_clm_state *st = c->st;
    const tr_clm_hparams *hp = &st->hp;
    const tr_clm_block *b = &st->w.blocks[l];
    const int hd = hp->head_dim, G = hp->n_head / hp->n_head_kv;
    tr_clm_kv *kv = &st->kv;
    float *kh = c->k + (size_t)g * hd, *qh = c->q + (size_t)g * G * hd;
    if (hp->qk_norm) {
        tr_rms_norm(NULL, kh, kh, 1, hd, b->k_norm, hp->eps);
        tr_rms_norm(NULL, qh, qh, G, hd, b->q_norm, hp->eps);
    }
    rope_head(c->s, kh, hd);
    for (int j = 0; j < G; j++) rope_head(c->s, qh + (size_t)j * hd, hd);
    const size_t base = tr_clm_kv_off(kv, l, c->slot, 0);
    tr_clm_kv_write(kv, base + (size_t)c->pos * kv->kv_dim + (size_t)g * hd, kh,
                    c->v + (size_t)g * hd, hd);
    const int Q = hp->n_head * hd;
    tr_attn_args a = {
        .q = c->q,
        .q_stride = Q,
        .kv_stride = kv->kv_dim,
        .out = c->o,
        .out_stride = Q,
        .n_q = 1,
        .n_kv = c->pos + 1,
        .kv_valid = c->pos + 1,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hd,
        .scale = c->attn_scale,
        .causal = true,
        .causal_offset = c->pos,
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

/* x[n] += residual_mult * (W row n · in) over chunk c's rows. */
static void residual_chunk(const step_ctx *c, const tr_tensor *W, split sp, long ch,
                           const float *in, const float *prep, float *mv) {
    long n0 = ch * sp.rows, n1 = n0 + sp.rows < W->ne[1] ? n0 + sp.rows : W->ne[1];
    const float rm = c->st->hp.residual_mult;
    tr_matvec_rows(W, in, prep, c->t + n0, n0, n1, mv);
    for (long n = n0; n < n1; n++) c->x[n] = c->x[n] + rm * c->t[n]; /* tr_add_scaled's form */
}

static void layer(const step_ctx *c, int l, part_buf *pb) {
    tr_clm_state *st = c->st;
    const tr_clm_hparams *hp = &st->hp;
    const tr_clm_block *b = &st->w.blocks[l];
    clm_step1 *s = c->s;
    phase *ph = s->ph + (size_t)l * PH_PER_LAYER;
    int i;

    const float *pp[3];
    phase *p = &ph[PH_QKV];
    if (has_work(p)) {
        const tr_tensor *qkv[3] = {b->wq, b->wk, b->wv};
        prep_input(c, pb, b->norm_attn, qkv, 3, pp);
        const long nq = s->q.n_chunks, nk = s->k.n_chunks;
        while ((i = claim(p)) >= 0) {
            if (i < nq)
                rows_chunk(b->wq, s->q, i, pb->h, pp[0], c->q, pb->mv);
            else if (i < nq + nk)
                rows_chunk(b->wk, s->k, i - nq, pb->h, pp[1], c->k, pb->mv);
            else
                rows_chunk(b->wv, s->v, i - nq - nk, pb->h, pp[2], c->v, pb->mv);
            finish(p);
        }
    }
    wait_phase(p);

    p = &ph[PH_ATTN];
    while ((i = claim(p)) >= 0) {
        attn_chunk(c, l, i, pb);
        finish(p);
    }
    wait_phase(p);

    p = &ph[PH_O];
    if (has_work(p)) {
        prepare(pb, &b->wo, 1, c->o, pp);
        while ((i = claim(p)) >= 0) {
            residual_chunk(c, b->wo, s->o, i, c->o, pp[0], pb->mv);
            finish(p);
        }
    }
    wait_phase(p);

    p = &ph[PH_GU];
    if (has_work(p)) {
        const tr_tensor *gu[2] = {b->gate, b->up};
        prep_input(c, pb, b->norm_ffn, gu, 2, pp);
        while ((i = claim(p)) >= 0) {
            long n0 = i * s->gu.rows,
                 n1 = n0 + s->gu.rows < hp->d_ffn ? n0 + s->gu.rows : hp->d_ffn;
            rows_chunk(b->gate, s->gu, i, pb->h, pp[0], c->g, pb->mv);
            rows_chunk(b->up, s->gu, i, pb->h, pp[1], c->u, pb->mv);
            tr_silu(c->g + n0, n1 - n0);
            for (long n = n0; n < n1; n++) c->g[n] *= c->u[n];
            finish(p);
        }
    }
    wait_phase(p);

    p = &ph[PH_DOWN];
    if (has_work(p)) {
        prepare(pb, &b->down, 1, c->g, pp);
        while ((i = claim(p)) >= 0) {
            residual_chunk(c, b->down, s->down, i, c->g, pp[0], pb->mv);
            finish(p);
        }
    }
    wait_phase(p);
}

static void step_task(void *arg, int ith, int nth) {
    const step_ctx *c = arg;
    tr_clm_state *st = c->st;
    clm_step1 *s = c->s;
    part_buf *pb = &s->parts[ith];
    (void)nth;
    for (int l = 0; l < st->hp.n_layer; l++) layer(c, l, pb);
    phase *p = &s->ph[s->n_ph - 1];
    if (has_work(p)) {
        const float *pp;
        prep_input(c, pb, st->w.out_norm, &st->w.head, 1, &pp);
        int i;
        while ((i = claim(p)) >= 0) {
            rows_chunk(st->w.head, s->head, i, pb->h, pp, st->logits, pb->mv);
            finish(p);
        }
    }
    /* the pool returns once every part is done: no wait needed here */
}

bool tr_clm_step1(tr_clm_state *st, tr_pool *pool, int pos, int slot) {
    const tr_clm_hparams *hp = &st->hp;
    const int n_parts = tr_pool_n_threads(pool);
    clm_step1 *s = st->step1;
    if (!s || s->n_parts != n_parts) {
        tr_clm_step1_free(s);
        s = st->step1 = plan_new(hp, &st->w, n_parts);
        if (!s) return false;
    }
    if (!s->checked) {
        s->ok = weights_ok(pool, hp, &st->w);
        s->checked = true;
    }
    if (!s->ok) return false;
    const int half = hp->head_dim / 2;
    for (int i = 0; i < half; i++) { /* tr_rope's angles */
        double ang = (double)pos * s->freq[i];
        s->cosv[i] = (float)cos(ang);
        s->sinv[i] = (float)sin(ang);
    }
    for (int p = 0; p < s->n_ph; p++) {
        int n = s->head.n_chunks;
        switch (p == s->n_ph - 1 ? -1 : p % PH_PER_LAYER) {
        case PH_QKV:
            n = (int)(s->q.n_chunks + s->k.n_chunks + s->v.n_chunks);
            break;
        case PH_ATTN:
            n = hp->n_head_kv;
            break;
        case PH_O:
            n = (int)s->o.n_chunks;
            break;
        case PH_GU:
            n = (int)s->gu.n_chunks;
            break;
        case PH_DOWN:
            n = (int)s->down.n_chunks;
            break;
        default:
            break;
        }
        atomic_store_explicit(&s->ph[p].claim, 0, memory_order_relaxed);
        atomic_store_explicit(&s->ph[p].done, 0, memory_order_relaxed);
        s->ph[p].n = n;
    }
    const size_t D = (size_t)hp->d_model, Q = (size_t)hp->n_head * hp->head_dim,
                 K = (size_t)hp->n_head_kv * hp->head_dim, F = (size_t)hp->d_ffn;
    float *q = st->scratch + D, *k = q + Q, *v = k + K, *o = v + K, *g = o + Q, *u = g + F,
          *t = u + F;
    step_ctx c = {
        .st = st,
        .s = s,
        .pos = pos,
        .slot = slot,
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
        for (size_t i = 0; i < (size_t)hp->n_vocab; i++) st->logits[i] *= sc;
    }
    return true;
}
