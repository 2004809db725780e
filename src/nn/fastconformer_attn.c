/* Relative-position multi-head self-attention (docs/formats/parakeet.md §7.4-7.6,
 * §7.8): the content term (q + pos_bias_u) . k goes through tr_attention;
 * the position term BD = rel_shift((q + pos_bias_v) . p^T) / sqrt(dh) is
 * handed to it as an additive [heads][T][T] bias, with -inf wherever the
 * local window or the chunked_limited mask hides a key.
 *
 * BD is built per block of QB query rows: rows [a0, a1) only read table
 * rows [T - a1, 2T - 1 - a0), so one small GEMM of QB x (T + QB - 1) per
 * block replaces the full T x (2T - 1) product (about half the work and a
 * scratch of QB rows instead of T). Blocks are independent, so each pool
 * thread takes whole blocks with a single-threaded GEMM and the result does
 * not depend on the thread count.
 *
 * Memory: the caller passes one group of heads at a time (their own q, k,
 * v and positional columns, and a [g][T][T] bias), so long inputs cost
 * one head's T^2 floats rather than H*T^2. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "nn/fastconformer_internal.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define FC_QB 64

static bool is_local(const tr_fc_hparams *hp) {
    return hp->att_style == TR_FC_STYLE_REGULAR && hp->att_left >= 0 && hp->att_right >= 0;
}

/* Local windows wider than the input reach positions no pair of frames
 * has; clipping them to T - 1 gives the same scores with a shorter table. */
static int clip_ctx(int w, int T) {
    return w < T - 1 ? w : T - 1;
}

int tr_fc_pos_rows(const tr_fc_hparams *hp, int T) {
    if (is_local(hp)) return clip_ctx(hp->att_left, T) + clip_ctx(hp->att_right, T) + 1;
    return 2 * T - 1;
}

int tr_fc_pos_first(const tr_fc_hparams *hp, int T) {
    return is_local(hp) ? clip_ctx(hp->att_left, T) : T - 1;
}

typedef struct {
    float *pe;
    int P, d, pos0;
} pe_ctx;

/* Rows of the table; the frequencies are made per chunk of channel pairs
 * on the stack (any d), in float arithmetic as NeMo: pos * div_term. */
static void pe_task(void *vctx, int ith, int nth) {
    enum { JCH = 256 };
    const pe_ctx *c = vctx;
    const int half = c->d / 2;
    const float step = (float)(-log(10000.0) / c->d);
    float div[JCH];
    long r0, r1;
    tr_split_range(c->P, ith, nth, &r0, &r1);
    for (int j0 = 0; j0 < half; j0 += JCH) {
        const int nj = half - j0 < JCH ? half - j0 : JCH;
        for (int j = 0; j < nj; j++) div[j] = expf((float)(2 * (j0 + j)) * step);
        for (long i = r0; i < r1; i++) {
            const float pos = (float)(c->pos0 - i);
            float *row = c->pe + i * c->d + 2 * j0;
            for (int j = 0; j < nj; j++) {
                const float arg = pos * div[j];
                row[2 * j] = sinf(arg);
                row[2 * j + 1] = cosf(arg);
            }
        }
    }
}

void tr_fc_pos_table(tr_pool *pool, float *pe, int P, int d, int pos0) {
    pe_ctx c = {pe, P, d, pos0}; /* d is even (checked with the hyper-parameters) */
    tr_pool_run(P > 1 ? pool : NULL, pe_task, &c);
}

void tr_fc_shift_rows(const float *c, int ldc, int a0, int a1, int T, float scale, float *bias) {
    for (int a = a0; a < a1; a++) {
        const float *restrict src = c + (size_t)(a - a0) * ldc + (a1 - 1 - a);
        float *restrict dst = bias + (size_t)a * T;
        for (int b = 0; b < T; b++) dst[b] = src[b] * scale;
    }
}

typedef struct {
    const tr_fc_hparams *hp;
    const float *qv, *p; /* the group's columns, rows ld floats apart */
    int T, P, G, nb, ld;
    float scale;
    float *bias, *scratch;
    size_t scratch_per;
    float *mm; /* each thread's GEMM panels (mm_floats), or NULL */
    size_t mm_floats;
} bias_ctx;

/* Keys outside the chunked_limited window of query a get -inf: b is
 * visible iff its chunk is a's or one of the left_chunks before it. */
static void chunk_mask(const tr_fc_hparams *hp, int a, int T, float *row) {
    const int chunk = hp->att_right + 1;
    const int left_chunks = hp->att_left < 0 ? INT_MAX / 2 : hp->att_left / chunk;
    const int ca = a / chunk;
    const long lo = (long)(ca - left_chunks > 0 ? ca - left_chunks : 0) * chunk;
    const long hi = (long)(ca + 1) * chunk;
    for (long b = 0; b < T; b++)
        if (b < lo || b >= hi) row[b] = -INFINITY;
}

/* chunked_limited_with_rc (buffered streaming): a's chunk plus rc_left
 * frames before it and rc_right after it. */
static void chunk_rc_mask(const tr_fc_hparams *hp, int a, int T, float *row) {
    const long c0 = (long)(a / hp->rc_chunk) * hp->rc_chunk;
    const long lo = c0 - hp->rc_left, hi = c0 + hp->rc_chunk - 1 + hp->rc_right;
    for (long b = 0; b < T; b++)
        if (b < lo || b > hi) row[b] = -INFINITY;
}

static void bias_block(const bias_ctx *c, int u, float *scr, float *mm) {
    const tr_fc_hparams *hp = c->hp;
    const int dh = hp->d_model / hp->n_heads, T = c->T, ld = c->ld;
    const int hg = u / c->nb, a0 = (u % c->nb) * FC_QB;
    const int a1 = a0 + FC_QB < T ? a0 + FC_QB : T;
    float *bias = c->bias + (size_t)hg * T * T;
    const float *qv = c->qv + (size_t)a0 * ld + (size_t)hg * dh;
    if (is_local(hp)) {
        /* row a needs table row b - a + W_L for keys in the window */
        const int wl = tr_fc_pos_first(hp, T);
        tr_matmul_f32_nt_buf(qv, ld, c->p + (size_t)hg * dh, ld, scr, c->P, a1 - a0, c->P, dh, mm,
                             c->mm_floats);
        for (int a = a0; a < a1; a++) {
            const float *restrict src = scr + (size_t)(a - a0) * c->P;
            float *restrict dst = bias + (size_t)a * T;
            for (int b = 0; b < T; b++) {
                const int j = b - a + wl;
                dst[b] = (j >= 0 && j < c->P) ? src[j] * c->scale : -INFINITY;
            }
        }
        return;
    }
    const int n = T + (a1 - a0) - 1;
    tr_matmul_f32_nt_buf(qv, ld, c->p + (size_t)(T - a1) * ld + (size_t)hg * dh, ld, scr, n,
                         a1 - a0, n, dh, mm, c->mm_floats);
    tr_fc_shift_rows(scr, n, a0, a1, T, c->scale, bias);
    if (hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED)
        for (int a = a0; a < a1; a++) chunk_mask(hp, a, T, bias + (size_t)a * T);
    if (hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED_RC && hp->rc_chunk > 0)
        for (int a = a0; a < a1; a++) chunk_rc_mask(hp, a, T, bias + (size_t)a * T);
}

static void bias_task(void *vctx, int ith, int nth) {
    const bias_ctx *c = vctx;
    float *scr = c->scratch + (size_t)ith * c->scratch_per;
    float *mm = c->mm ? c->mm + (size_t)ith * c->mm_floats : NULL;
    for (int u = ith; u < c->G * c->nb; u += nth) bias_block(c, u, scr, mm);
}

/* qv = q + pos_bias_v; q += pos_bias_u (the group's columns of both, per
 * head, broadcast over frames) */
typedef struct {
    float *q, *qv;
    const float *u, *v;
    int T, ld;
} qbias_ctx;

static void qbias_task(void *vctx, int ith, int nth) {
    const qbias_ctx *c = vctx;
    long t0, t1;
    tr_split_range(c->T, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        float *qr = c->q + t * c->ld, *vr = c->qv + t * c->ld;
        for (int i = 0; i < c->ld; i++) {
            vr[i] = qr[i] + c->v[i];
            qr[i] += c->u[i];
        }
    }
}

size_t tr_fc_bd_floats(const tr_fc_hparams *hp, int T, int P) {
    /* a block's GEMM writes FC_QB rows of P (local) or T + FC_QB - 1 columns */
    return (size_t)FC_QB * (size_t)(is_local(hp) ? P : T + FC_QB - 1);
}

void tr_fc_rel_attention_group(const tr_fc_hparams *hp, const tr_fc_block *blk, tr_pool *pool,
                               int h0, int g, float *qg, const float *kg, const float *vg,
                               const float *pg, int P, int T, float *att, float *qv, float *bias,
                               float *bd, float *pack, size_t pack_floats) {
    const int d = hp->d_model, dh = d / hp->n_heads, ld = g * dh;
    qbias_ctx qc = {qg, qv, blk->pos_bias_u + (size_t)h0 * dh, blk->pos_bias_v + (size_t)h0 * dh,
                    T,  ld};
    tr_pool_run((long)T * ld >= 32768 ? pool : NULL, qbias_task, &qc);
    const float scale = 1.0f / sqrtf((float)dh);
    bias_ctx c = {.hp = hp,
                  .qv = qv,
                  .p = pg,
                  .T = T,
                  .P = P,
                  .G = g,
                  .nb = (T + FC_QB - 1) / FC_QB,
                  .ld = ld,
                  .scale = scale,
                  .bias = bias,
                  .scratch = bd,
                  .scratch_per = tr_fc_bd_floats(hp, T, P)};
    /* the blocks' single-thread products take their panels from the pool's
     * GEMM panel slot (idle outside a GEMM), so they allocate nothing */
    const int m = T < FC_QB ? T : FC_QB, n = is_local(hp) ? P : T + m - 1;
    c.mm_floats = (tr_matmul_f32_nt_scratch_floats(m, n, dh) + 15) / 16 * 16;
    if (c.mm_floats)
        c.mm = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_PANELS,
                                    c.mm_floats * (size_t)tr_pool_n_threads(pool));
    tr_pool_run(pool, bias_task, &c);
    tr_attn_args a = {
        .q = qg,
        .q_stride = ld,
        .k = kg,
        .v = vg,
        .kv_stride = ld,
        .out = att + (size_t)h0 * dh,
        .out_stride = d,
        .n_q = T,
        .n_kv = T,
        .kv_valid = T,
        .n_head = g,
        .n_head_kv = g,
        .head_dim = dh,
        .scale = scale,
        .causal = false,
        .pos_bias = bias,
        .pack = pack,
        .pack_floats = pack_floats,
    };
    tr_attention(pool, &a);
}
