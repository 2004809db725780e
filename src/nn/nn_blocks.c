/* Pre-LN transformer blocks (encoder and decoder) on F32 activations. Every
 * buffer is caller-provided scratch so a forward pass allocates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

bool tr_nn_kv_init(tr_nn_kv *kv, int n_layers, int n_ctx, int n_head, int head_dim, bool f16) {
    memset(kv, 0, sizeof *kv);
    size_t n = (size_t)n_layers * (size_t)n_ctx * (size_t)n_head * (size_t)head_dim;
    size_t es = f16 ? sizeof(uint16_t) : sizeof(float);
    kv->n_layers = n_layers;
    kv->n_ctx = n_ctx;
    kv->n_head = n_head;
    kv->head_dim = head_dim;
    kv->dim = n_head * head_dim;
    kv->f16 = f16;
    kv->k = calloc(n, es);
    kv->v = calloc(n, es);
    if (!kv->k || !kv->v) {
        tr_nn_kv_free(kv);
        return false;
    }
    return true;
}

void tr_nn_kv_free(tr_nn_kv *kv) {
    if (!kv) return;
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

size_t tr_nn_kv_bytes(const tr_nn_kv *kv) {
    size_t es = kv->f16 ? 2 : 4;
    return 2 * (size_t)kv->n_layers * (size_t)kv->n_ctx * (size_t)kv->dim * es;
}

/* Elements from the start of the cache to (layer, head, pos). */
static size_t kv_at(const tr_nn_kv *kv, int layer, int head, int pos) {
    return (((size_t)layer * (size_t)kv->n_head + (size_t)head) * (size_t)kv->n_ctx + (size_t)pos) *
           (size_t)kv->head_dim;
}

void tr_nn_kv_put(tr_nn_kv *kv, int layer, int head, int pos, const float *k, const float *v) {
    const size_t at = kv_at(kv, layer, head, pos), hd = (size_t)kv->head_dim;
    if (!kv->f16) {
        memcpy((float *)kv->k + at, k, hd * sizeof(float));
        memcpy((float *)kv->v + at, v, hd * sizeof(float));
        return;
    }
    tr_f32_to_f16_row(k, (uint16_t *)kv->k + at, (int64_t)hd);
    tr_f32_to_f16_row(v, (uint16_t *)kv->v + at, (int64_t)hd);
}

void tr_nn_kv_write(tr_nn_kv *kv, int layer, int pos, int rows, const float *tk, const float *tv) {
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < kv->n_head; h++) {
            const size_t o = (size_t)r * (size_t)kv->dim + (size_t)h * (size_t)kv->head_dim;
            tr_nn_kv_put(kv, layer, h, pos + r, tk + o, tv + o);
        }
}

void tr_nn_kv_view(const tr_nn_kv *kv, int layer, tr_attn_args *a, const uint16_t **k16,
                   const uint16_t **v16) {
    const size_t at = kv_at(kv, layer, 0, 0);
    a->kv_stride = kv->head_dim;
    a->kv_head_stride = (long)kv->n_ctx * kv->head_dim;
    a->k = a->v = NULL;
    *k16 = *v16 = NULL;
    if (kv->f16) {
        *k16 = (const uint16_t *)kv->k + at;
        *v16 = (const uint16_t *)kv->v + at;
    } else {
        a->k = (const float *)kv->k + at;
        a->v = (const float *)kv->v + at;
    }
}

void tr_nn_kv_copy_prefix(tr_nn_kv *dst, const tr_nn_kv *src, int rows) {
    const size_t es = src->f16 ? 2 : 4, run = (size_t)rows * (size_t)src->head_dim * es;
    for (int l = 0; l < src->n_layers; l++)
        for (int h = 0; h < src->n_head; h++) {
            const size_t at = kv_at(src, l, h, 0) * es;
            memcpy((char *)dst->k + at, (const char *)src->k + at, run);
            memcpy((char *)dst->v + at, (const char *)src->v + at, run);
        }
}

void tr_nn_window_attn(tr_pool *pool, const float *q, const float *k, const float *v, int nb,
                       int nq, int nk, int d, int n_head, float *out) {
    const int dh = d / n_head;
    for (int b = 0; b < nb; b++) {
        tr_attn_args a = {.q = q + (size_t)b * nq * d,
                          .q_stride = d,
                          .k = k + (size_t)b * nk * d,
                          .v = v + (size_t)b * nk * d,
                          .kv_stride = d,
                          .out = out + (size_t)b * nq * d,
                          .out_stride = d,
                          .n_q = nq,
                          .n_kv = nk,
                          .kv_valid = nk,
                          .n_head = n_head,
                          .n_head_kv = n_head,
                          .head_dim = dh,
                          .scale = 1.0f / sqrtf((float)dh)};
        tr_attention(pool, &a);
    }
}

void tr_nn_linear_fwd(tr_pool *pool, const tr_nn_linear *l, const float *x, int rows, float *y) {
    tr_linear(pool, l->w, l->b, x, rows, y);
}

/* FFN hidden floats per row: F, or value and gate (2F) when gated. */
static size_t ffn_width(const tr_nn_dims *d) {
    return (size_t)d->d_ffn * (d->glu ? 2 : 1);
}

/* The attention half uses h, q, k, v (4 D per row); the FFN half h, its
 * hidden rows over the dead q/k/v and its output after them (2 D + F). */
size_t tr_nn_enc_block_scratch(const tr_nn_dims *d, int rows) {
    const size_t D = (size_t)d->d_model, attn = 4 * D, ffn = 2 * D + ffn_width(d);
    return (attn > ffn ? attn : ffn) * (size_t)rows;
}

size_t tr_nn_dec_block_scratch(const tr_nn_dims *d, int rows, int n_ctx) {
    (void)n_ctx;
    return ((size_t)5 * d->d_model + ffn_width(d)) * (size_t)rows;
}

static void add_inplace(tr_pool *pool, float *x, const float *y, size_t n) {
    tr_ew_add(pool, x, y, (long)n);
}

void tr_nn_act_apply(tr_nn_act act, float *x, long n) {
    switch (act) {
    case TR_NN_ACT_RELU:
        tr_relu(x, n);
        break;
    case TR_NN_ACT_SILU:
        tr_silu(x, n);
        break;
    default:
        tr_gelu(x, n);
        break;
    }
}

/* Gated rows: u is [rows][2F] (value, gate); gate <- value ⊙ act(gate).
 * Rows split over the pool, each row by one thread: thread-count
 * independent. */
typedef struct {
    tr_nn_act act;
    float *u;
    long rows, F;
} glu_ctx;

static void glu_task(void *vctx, int ith, int nth) {
    const glu_ctx *c = vctx;
    long r0, r1;
    tr_split_range(c->rows, ith, nth, &r0, &r1);
    for (long r = r0; r < r1; r++) {
        const float *v = c->u + r * 2 * c->F;
        float *g = c->u + r * 2 * c->F + c->F;
        tr_nn_act_apply(c->act, g, c->F);
        for (long i = 0; i < c->F; i++) g[i] *= v[i];
    }
}

static void ffn_act(tr_pool *pool, tr_nn_act act, float *x, long n) {
    switch (act) {
    case TR_NN_ACT_RELU:
        tr_ew_relu(pool, x, n);
        break;
    case TR_NN_ACT_SILU:
        tr_ew_silu(pool, x, n);
        break;
    default:
        tr_ew_gelu(pool, x, n);
        break;
    }
}

/* x += W2 act(W1 LN(x) + b1) + b2, or gated x += W2 (value ⊙ act(gate)) + b2;
 * uses h [rows][D], mid [rows][ffn_width], out [rows][D]. Gated, the
 * value and gate of a row sit side by side in mid (fc1's own layout when
 * fused, two strided products when split) and fc2 reads the products in
 * the gate half with a row stride of 2F, so nothing is compacted. */
static void ffn_residual(tr_pool *pool, const tr_nn_norm *ln, const tr_nn_ffn *ffn,
                         const tr_nn_dims *d, float *x, int rows, float *h, float *mid,
                         float *out) {
    const int D = d->d_model, F = d->d_ffn;
    size_t n = (size_t)rows * (size_t)D;
    tr_layer_norm(pool, x, h, rows, D, ln->w, ln->b, d->ln_eps);
    if (ffn->glu == TR_NN_GLU_NONE) {
        tr_nn_linear_fwd(pool, &ffn->fc1, h, rows, mid);
        ffn_act(pool, ffn->act, mid, (long)rows * F);
        tr_nn_linear_fwd(pool, &ffn->fc2, mid, rows, out);
    } else {
        if (ffn->glu == TR_NN_GLU_FUSED) {
            tr_nn_linear_fwd(pool, &ffn->fc1, h, rows, mid);
        } else {
            tr_matmul(pool, ffn->fc1.w, ffn->fc1.b, h, rows, D, mid, 2 * F);
            tr_matmul(pool, ffn->gate.w, ffn->gate.b, h, rows, D, mid + F, 2 * F);
        }
        glu_ctx g = {ffn->act, mid, rows, F};
        tr_pool_run((long)rows * F >= 32768 ? pool : NULL, glu_task, &g);
        tr_matmul(pool, ffn->fc2.w, ffn->fc2.b, mid + F, rows, 2 * F, out, D);
    }
    add_inplace(pool, x, out, n);
}

/* Rotary positions on `rows` rows of q / k (row stride D) at positions
 * pos0.. (tr_rope takes a position list: built in chunks on the stack). */
static void rope_rows(const tr_nn_dims *d, float *x, int rows, int pos0) {
    enum { CHUNK = 256 };
    int32_t pos[CHUNK];
    for (int t0 = 0; t0 < rows; t0 += CHUNK) {
        const int n = rows - t0 < CHUNK ? rows - t0 : CHUNK;
        for (int i = 0; i < n; i++) pos[i] = pos0 + t0 + i;
        tr_rope(x + (size_t)t0 * (size_t)d->d_model, n, d->n_head, d->head_dim, d->d_model, pos,
                d->rope.n_rot, d->rope.theta, d->rope.neox);
    }
}

void tr_nn_enc_block_fwd(tr_pool *pool, const tr_nn_enc_block *blk, const tr_nn_dims *d, float *x,
                         int rows, float *scratch) {
    const int D = d->d_model;
    size_t n = (size_t)rows * (size_t)D;
    float *h = scratch, *q = h + n, *k = q + n, *v = k + n;

    tr_layer_norm(pool, x, h, rows, D, blk->ln_attn.w, blk->ln_attn.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->attn.q, h, rows, q);
    tr_nn_linear_fwd(pool, &blk->attn.k, h, rows, k);
    tr_nn_linear_fwd(pool, &blk->attn.v, h, rows, v);
    if (d->rope.n_rot > 0) {
        rope_rows(d, q, rows, 0);
        rope_rows(d, k, rows, 0);
    }
    tr_attn_args a = {
        .q = q,
        .q_stride = D,
        .k = k,
        .v = v,
        .kv_stride = D,
        .out = h,
        .out_stride = D,
        .n_q = rows,
        .n_kv = rows,
        .kv_valid = rows,
        .n_head = d->n_head,
        .n_head_kv = d->n_head,
        .head_dim = d->head_dim,
        .scale = 1.0f / sqrtf((float)d->head_dim),
        .causal = false,
    };
    tr_attention(pool, &a);
    tr_nn_linear_fwd(pool, &blk->attn.o, h, rows, q);
    add_inplace(pool, x, q, n);

    float *mid = q, *out = mid + (size_t)rows * ffn_width(d); /* q/k/v are dead here */
    ffn_residual(pool, &blk->ln_ffn, &blk->ffn, d, x, rows, h, mid, out);
}

/* Rows y [n][n_head · hd] as rows [row0, row0 + n) of a head-major block of
 * capacity rows (F32 or, with f16, half floats). */
static void to_heads(const float *y, int n, const tr_nn_dims *d, size_t rows, size_t row0,
                     void *dst, bool f16) {
    const size_t hd = (size_t)d->head_dim, D = (size_t)d->n_head * hd;
    for (int h = 0; h < d->n_head; h++) {
        const size_t at = ((size_t)h * rows + row0) * hd;
        for (int j = 0; j < n; j++) {
            const float *src = y + (size_t)j * D + (size_t)h * hd;
            if (f16)
                tr_f32_to_f16_row(src, (uint16_t *)dst + at + (size_t)j * hd, (int64_t)hd);
            else
                memcpy((float *)dst + at + (size_t)j * hd, src, hd * sizeof(float));
        }
    }
}

static bool cross_kv(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                     const float *src, int n_src, size_t rows, size_t row0, void *ck, void *cv,
                     bool f16) {
    enum { BLOCK = 256 }; /* rows a product takes: the blocked GEMM's rate */
    const size_t D = (size_t)d->n_head * (size_t)d->head_dim, in = (size_t)d->d_model;
    float *tmp = malloc(sizeof(float) * (size_t)(n_src < BLOCK ? n_src : BLOCK) * D);
    if (!tmp) {
        TR_ERROR("decoder: out of memory for the cross K/V (%d rows)", n_src);
        return false;
    }
    const tr_nn_linear *lin[2] = {&blk->cross.k, &blk->cross.v};
    void *out[2] = {ck, cv};
    for (int r0 = 0; r0 < n_src; r0 += BLOCK) {
        const int n = n_src - r0 < BLOCK ? n_src - r0 : BLOCK;
        for (int i = 0; i < 2; i++) {
            tr_nn_linear_fwd(pool, lin[i], src + (size_t)r0 * in, n, tmp);
            to_heads(tmp, n, d, rows, row0 + (size_t)r0, out[i], f16);
        }
    }
    free(tmp);
    return true;
}

bool tr_nn_cross_kv(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                    const float *src, int n, size_t rows, size_t row0, float *ck, float *cv) {
    return cross_kv(pool, blk, d, src, n, rows, row0, ck, cv, false);
}

bool tr_nn_cross_kv16(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                      const float *src, int n, size_t rows, size_t row0, uint16_t *ck16,
                      uint16_t *cv16) {
    return cross_kv(pool, blk, d, src, n, rows, row0, ck16, cv16, true);
}

void tr_nn_cross_copy(void *dst, size_t dst_rows, const void *src, size_t src_rows, size_t n,
                      const tr_nn_dims *d, size_t es) {
    const size_t hd = (size_t)d->head_dim * es;
    for (int h = 0; h < d->n_head; h++)
        memcpy((char *)dst + (size_t)h * dst_rows * hd,
               (const char *)src + (size_t)h * src_rows * hd, n * hd);
}

void tr_nn_cross_rows(const float *blk, size_t rows, size_t n, const tr_nn_dims *d, float *out) {
    const size_t hd = (size_t)d->head_dim, D = (size_t)d->n_head * hd;
    for (int h = 0; h < d->n_head; h++)
        for (size_t j = 0; j < n; j++)
            memcpy(out + j * D + (size_t)h * hd, blk + ((size_t)h * rows + j) * hd,
                   hd * sizeof(float));
}

void tr_nn_cross_view(const tr_nn_dec_seg *sg, int layer, int head_dim, tr_attn_args *a,
                      const uint16_t **k16, const uint16_t **v16) {
    const size_t off = (size_t)layer * sg->cross_stride;
    const size_t rows = sg->cross_rows ? sg->cross_rows : (size_t)sg->n_src;
    a->kv_stride = head_dim;
    a->kv_head_stride = (long)(rows * (size_t)head_dim);
    a->k = sg->ck16 ? NULL : sg->ck + off;
    a->v = sg->ck16 ? NULL : sg->cv + off;
    *k16 = sg->ck16 ? sg->ck16 + off : NULL;
    *v16 = sg->ck16 ? sg->cv16 + off : NULL;
}

void tr_nn_dec_block_fwd_segs(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                              float *x, int n_seg, const tr_nn_dec_seg *segs, int layer,
                              float *scratch) {
    const int D = d->d_model;
    int rows = 0;
    for (int i = 0; i < n_seg; i++) rows += segs[i].rows;
    size_t n = (size_t)rows * (size_t)D;
    float *h = scratch, *q = h + n, *o = q + n, *tk = o + n, *tv = tk + n, *mid = tv + n;
    const float scale = 1.0f / sqrtf((float)d->head_dim);

    /* causal self-attention over each sequence's cache */
    tr_layer_norm(pool, x, h, rows, D, blk->ln_self.w, blk->ln_self.b, d->ln_eps);
    if (!blk->self.q.b && !blk->self.k.b && !blk->self.v.b) {
        /* bias-free projections (Moonshine): one pool dispatch for the three
         * in a one-row step, each output bit for bit tr_linear's */
        const tr_tensor *const w3[3] = {blk->self.q.w, blk->self.k.w, blk->self.v.w};
        float *const y3[3] = {q, tk, tv};
        tr_linear_group(pool, w3, 3, h, rows, y3);
    } else {
        tr_nn_linear_fwd(pool, &blk->self.q, h, rows, q);
        tr_nn_linear_fwd(pool, &blk->self.k, h, rows, tk);
        tr_nn_linear_fwd(pool, &blk->self.v, h, rows, tv);
    }
    for (int i = 0, r0 = 0; i < n_seg; r0 += segs[i++].rows) {
        const tr_nn_dec_seg *sg = &segs[i];
        const size_t off = (size_t)r0 * (size_t)D;
        const uint16_t *k16, *v16;
        if (d->rope.n_rot > 0) {
            rope_rows(d, q + off, sg->rows, sg->n_past);
            rope_rows(d, tk + off, sg->rows, sg->n_past);
        }
        tr_nn_kv_write(sg->kv, layer, sg->n_past, sg->rows, tk + off, tv + off);
        const int n_kv = sg->n_past + sg->rows;
        tr_attn_args a = {
            .q = q + off,
            .q_stride = D,
            .out = o + off,
            .out_stride = D,
            .n_q = sg->rows,
            .n_kv = n_kv,
            .kv_valid = n_kv,
            .n_head = d->n_head,
            .n_head_kv = d->n_head,
            .head_dim = d->head_dim,
            .scale = scale,
            .causal = true,
            .causal_offset = sg->n_past,
        };
        tr_nn_kv_view(sg->kv, layer, &a, &k16, &v16);
        if (k16)
            tr_attention_f16kv(pool, &a, k16, v16);
        else
            tr_attention(pool, &a);
    }
    tr_nn_linear_fwd(pool, &blk->self.o, o, rows, q);
    add_inplace(pool, x, q, n);

    /* cross-attention, each sequence over its own source */
    tr_layer_norm(pool, x, h, rows, D, blk->ln_cross.w, blk->ln_cross.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->cross.q, h, rows, q);
    for (int i = 0, r0 = 0; i < n_seg; r0 += segs[i++].rows) {
        const tr_nn_dec_seg *sg = &segs[i];
        const size_t off = (size_t)r0 * (size_t)D;
        tr_attn_args c = {
            .q = q + off,
            .q_stride = D,
            .out = o + off,
            .out_stride = D,
            .n_q = sg->rows,
            .n_kv = sg->n_src,
            .kv_valid = sg->n_src,
            .n_head = d->n_head,
            .n_head_kv = d->n_head,
            .head_dim = d->head_dim,
            .scale = scale,
            .causal = false,
        };
        const uint16_t *ck16, *cv16;
        tr_nn_cross_view(sg, layer, d->head_dim, &c, &ck16, &cv16);
        if (ck16)
            tr_attention_f16kv(pool, &c, ck16, cv16);
        else
            tr_attention(pool, &c);
    }
    tr_nn_linear_fwd(pool, &blk->cross.o, o, rows, q);
    add_inplace(pool, x, q, n);

    ffn_residual(pool, &blk->ln_ffn, &blk->ffn, d, x, rows, h, mid, q);
}

void tr_nn_dec_block_fwd(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d, float *x,
                         int rows, tr_nn_kv *kv, int layer, int n_past, const float *ck,
                         const float *cv, int n_src, float *scratch) {
    const tr_nn_dec_seg one = {rows, n_past, n_src, kv, ck, cv, 0, NULL, NULL, NULL, 0};
    tr_nn_dec_block_fwd_segs(pool, blk, d, x, 1, &one, layer, scratch);
}
