/* The SAN-M block (docs/formats/sensevoice.md §5.2–§5.3). Where the time
 * goes is the four projections (tr_matmul, any weight type) and the
 * attention (tr_attention's online softmax: no T×T matrix, so long inputs
 * cost O(T) memory); the FSMN memory is nn/depthwise.h on a contiguous copy
 * of v. Everything accumulates in F32: SenseVoice has no norm between the
 * blocks of a tier and its residuals reach ~4.5e4 (docs/formats/sensevoice.md §5.3). */
#include "nn/sanm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define TYPES_F32_F16 ((1u << TR_F32) | (1u << TR_F16))

enum { N_PARTS = 6 };

bool tr_sanm_block_load(const tr_nn_wsrc *src, const char *prefix, const tr_sanm_dims *d, int din,
                        bool attn_residual, tr_sanm_block *out) {
    memset(out, 0, sizeof *out);
    out->din = din;
    out->attn_residual = attn_residual;
    const int64_t D = d->d_model, F = d->d_ff, K = d->kernel;
    static const char *const part[N_PARTS] = {"norm_attn", "attn.qkv", "attn.out",
                                              "ffn.fc1",   "ffn.fc2",  "norm_ffn"};
    char names[N_PARTS + 1][160];
    for (int i = 0; i < N_PARTS; i++)
        if (snprintf(names[i], sizeof names[i], "%s.%s", prefix, part[i]) >= (int)sizeof names[i])
            return false;
    if (snprintf(names[N_PARTS], sizeof names[0], "%s.attn.fsmn.weight", prefix) >=
        (int)sizeof names[0])
        return false;
    const tr_nn_wspec spec[N_PARTS] = {
        {names[0], TR_NN_W_NORM, {din}, 0, 0, offsetof(tr_sanm_block, ln_attn)},
        {names[1], TR_NN_W_LINEAR, {din, 3 * D}, 0, 0, offsetof(tr_sanm_block, qkv)},
        {names[2], TR_NN_W_LINEAR, {D, D}, 0, 0, offsetof(tr_sanm_block, out)},
        {names[3], TR_NN_W_LINEAR, {D, F}, 0, 0, offsetof(tr_sanm_block, fc1)},
        {names[4], TR_NN_W_LINEAR, {F, D}, 0, 0, offsetof(tr_sanm_block, fc2)},
        {names[5], TR_NN_W_NORM, {D}, 0, 0, offsetof(tr_sanm_block, ln_ffn)},
    };
    bool ok = tr_nn_load_weights(src, spec, N_PARTS, NULL, 0, true, out);
    const int64_t kne[3] = {K, 1, D};
    const tr_tensor *kw = src->find(src->ctx, names[N_PARTS], TYPES_F32_F16, 3, kne);
    if (!ok || !kw) return false;
    /* the file's kernel is PyTorch (d, 1, k): element (c, 0, j) at c·k + j;
     * depthwise.h wants tap-major [k][d] */
    float *row = malloc(sizeof(float) * (size_t)K);
    out->fsmn.w = malloc(sizeof(float) * (size_t)(K * D));
    out->fsmn.b = calloc((size_t)D, sizeof(float));
    if (!row || !out->fsmn.w || !out->fsmn.b) {
        free(row);
        TR_ERROR("sanm: out of memory for the FSMN taps of %s", prefix);
        return false;
    }
    for (int64_t c = 0; c < D; c++) {
        tr_dequantize_row(kw->type, (const char *)kw->data + (size_t)c * kw->nb1, row, K);
        for (int64_t j = 0; j < K; j++) out->fsmn.w[j * D + c] = row[j];
    }
    free(row);
    return true;
}

void tr_sanm_block_free(tr_sanm_block *b) {
    if (!b) return;
    free(b->fsmn.w);
    free(b->fsmn.b);
    b->fsmn.w = b->fsmn.b = NULL;
}

/* y: LN rows (max(din, d) wide), qkv: 3d, v / f / o: d each, h: F */
size_t tr_sanm_scratch(const tr_sanm_dims *d, int din_max, int T) {
    size_t D = (size_t)d->d_model, wide = (size_t)din_max > D ? (size_t)din_max : D;
    return (size_t)T * (wide + 3 * D + 3 * D + (size_t)d->d_ff);
}

void tr_sanm_block_fwd(tr_pool *pool, const tr_sanm_block *blk, const tr_sanm_dims *d,
                       const float *in, float *x, int T, float *scratch) {
    const int D = d->d_model, H = d->n_head, hd = D / H, F = d->d_ff, din = blk->din;
    const size_t wide = (size_t)(din > D ? din : D);
    float *y = scratch, *qkv = y + (size_t)T * wide, *v = qkv + (size_t)T * 3 * D;
    float *f = v + (size_t)T * D, *o = f + (size_t)T * D, *h = o + (size_t)T * D;
    const long n = (long)T * D;

    /* attention half: qkv = LN(in)·Wqkv + b */
    tr_layer_norm(pool, in, y, T, din, blk->ln_attn.w, blk->ln_attn.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->qkv, y, T, qkv);
    /* FSMN memory on v (before the head split): f = dwconv(v) + v, zero padded
     * (k-1)/2 each side */
    for (int t = 0; t < T; t++)
        memcpy(v + (size_t)t * D, qkv + (size_t)t * 3 * D + 2 * D, sizeof(float) * (size_t)D);
    tr_nn_depthwise(pool, &blk->fsmn, D, d->kernel, (d->kernel - 1) / 2, v, f, T);
    tr_ew_add(pool, f, v, n);
    tr_attn_args a = {
        .q = qkv,
        .q_stride = 3 * D,
        .k = qkv + D,
        .v = qkv + 2 * D,
        .kv_stride = 3 * D,
        .kv_head_stride = 0,
        .out = o,
        .out_stride = D,
        .n_q = T,
        .n_kv = T,
        .kv_valid = T,
        .n_head = H,
        .n_head_kv = H,
        .head_dim = hd,
        .scale = (float)(1.0 / sqrt((double)hd)),
    };
    tr_attention(pool, &a);
    if (blk->attn_residual) {
        tr_nn_linear_fwd(pool, &blk->out, o, T, v); /* v is dead: reuse */
        tr_ew_add(pool, x, v, n);
        tr_ew_add(pool, x, f, n);
    } else {
        tr_nn_linear_fwd(pool, &blk->out, o, T, x);
        tr_ew_add(pool, x, f, n);
    }

    /* FFN half: x += fc2(relu(fc1(LN(x)))) */
    tr_layer_norm(pool, x, y, T, D, blk->ln_ffn.w, blk->ln_ffn.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->fc1, y, T, h);
    tr_ew_relu(pool, h, (long)T * F);
    tr_nn_linear_fwd(pool, &blk->fc2, h, T, o);
    tr_ew_add(pool, x, o, n);
}

void tr_sanm_add_positions(float *x, int T, int D) {
    const int half = D / 2;
    const double inc = log(10000.0) / (double)(half - 1);
    for (int t = 0; t < T; t++) {
        float *r = x + (size_t)t * D;
        for (int j = 0; j < half; j++) {
            double a = (double)(t + 1) * exp(-(double)j * inc);
            r[j] += (float)sin(a);
            r[half + j] += (float)cos(a);
        }
    }
}
