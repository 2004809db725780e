/* The rotary Conformer block of nn/conformer.h. Scratch per call (R packed
 * rows, d = d_model): h, r, q, k, v [R][d] and mid [R][max(d_ff, 2d)]. */
#include "nn/conformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "util/log.h"

static const struct {
    const char *part;
    tr_nn_wkind kind;
    int in, out; /* indices into dims: 0 = d, 1 = d_ff, 2 = kernel; -1 = none */
    size_t offset;
} k_parts[] = {
    {"norm_ff1", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_ff1)},
    {"ff1.linear1", TR_NN_W_LINEAR, 0, 1, offsetof(tr_cf_block, ff1_up)},
    {"ff1.linear2", TR_NN_W_LINEAR, 1, 0, offsetof(tr_cf_block, ff1_down)},
    {"norm_conv", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_conv)},
    {"conv.ln", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, conv_ln)},
    {"norm_attn", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_attn)},
    {"attn.linear_q", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.q)},
    {"attn.linear_k", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.k)},
    {"attn.linear_v", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.v)},
    {"attn.linear_out", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.o)},
    {"norm_ff2", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_ff2)},
    {"ff2.linear1", TR_NN_W_LINEAR, 0, 1, offsetof(tr_cf_block, ff2_up)},
    {"ff2.linear2", TR_NN_W_LINEAR, 1, 0, offsetof(tr_cf_block, ff2_down)},
    {"norm_out", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_out)},
};

size_t tr_cf_block_specs(const char *prefix, tr_nn_wspec *specs, char (*names)[96]) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof k_parts / sizeof k_parts[0]; i++, n++) {
        snprintf(names[n], 96, "%s%s", prefix, k_parts[i].part);
        tr_nn_wspec s = {names[n], k_parts[i].kind, {0}, 0, 0, k_parts[i].offset};
        s.ne[0] = TR_NN_DIM(k_parts[i].in);
        if (k_parts[i].out >= 0) s.ne[1] = TR_NN_DIM(k_parts[i].out);
        specs[n] = s;
    }
    /* the conv module's kernels: pointwise {1, d, 2d} / {1, d, d}, depthwise
     * {k, 1, d} (F32 or F16 like every conv slot), F32 biases */
    static const struct {
        const char *part;
        int64_t ne[3];
        int n_dims;
        uint32_t types;
        size_t offset;
    } conv[] = {
        {"conv.pointwise1.weight",
         {1, TR_NN_DIM(0), TR_NN_DIM(3)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, pw1_w)},
        {"conv.pointwise1.bias", {TR_NN_DIM(3)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, pw1_b)},
        {"conv.depthwise.weight",
         {TR_NN_DIM(2), 1, TR_NN_DIM(0)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, dw_w)},
        {"conv.depthwise.bias", {TR_NN_DIM(0)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, dw_b)},
        {"conv.pointwise2.weight",
         {1, TR_NN_DIM(0), TR_NN_DIM(0)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, pw2_w)},
        {"conv.pointwise2.bias", {TR_NN_DIM(0)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, pw2_b)},
    };
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++, n++) {
        snprintf(names[n], 96, "%s%s", prefix, conv[i].part);
        bool vec = conv[i].types == TR_TYPES_F32;
        tr_nn_wspec s = {names[n],      vec ? TR_NN_W_VEC : TR_NN_W_TENSOR,
                         {0},           conv[i].n_dims,
                         conv[i].types, conv[i].offset};
        memcpy(s.ne, conv[i].ne, sizeof conv[i].ne);
        if (vec) s.ne[1] = 1;
        specs[n] = s;
    }
    return n;
}

static void pointwise_view(const tr_tensor *t, tr_tensor *view, int64_t in, int64_t out) {
    *view = *t;
    view->n_dims = 2;
    view->ne[0] = in;
    view->ne[1] = out;
    view->ne[2] = view->ne[3] = 1;
    view->nb1 = tr_row_bytes(t->type, in);
}

bool tr_cf_block_prepare(tr_cf_block *b, const tr_cf_dims *dm) {
    const int d = dm->d_model, k = dm->kernel;
    pointwise_view(b->pw1_w, &b->pw1_view, d, 2 * (int64_t)d);
    pointwise_view(b->pw2_w, &b->pw2_view, d, d);
    b->pw1 = (tr_nn_linear){&b->pw1_view, b->pw1_b};
    b->pw2 = (tr_nn_linear){&b->pw2_view, b->pw2_b};
    float *raw = malloc(sizeof(float) * (size_t)(2 * k + 1) * (size_t)d);
    if (!raw) {
        TR_ERROR("conformer: out of memory for the depthwise taps");
        return false;
    }
    float *taps = raw + (size_t)(k + 1) * d; /* the file's [d][k] order, widened */
    tr_dequantize_row(b->dw_w->type, b->dw_w->data, taps, (int64_t)k * d);
    b->dw.w = raw;
    b->dw.b = raw + (size_t)k * d;
    for (int c = 0; c < d; c++) {
        float s = 1.0f, sh = 0.0f;
        if (dm->conv_bn)
            tr_nn_bn_fold(&b->bn_w[c], &b->bn_b[c], &b->bn_mean[c], &b->bn_var[c], 1, 1e-5f, &s,
                          &sh);
        for (int j = 0; j < k; j++) b->dw.w[(size_t)j * d + c] = taps[(size_t)c * k + j] * s;
        b->dw.b[c] = (b->dw_b ? b->dw_b[c] : 0.0f) * s + sh;
    }
    /* the widened copy was a temporary at the end of the same block */
    float *shrunk = realloc(raw, sizeof(float) * (size_t)(k + 1) * (size_t)d);
    if (shrunk) {
        b->dw.w = shrunk;
        b->dw.b = shrunk + (size_t)k * d;
    }
    return true;
}

void tr_cf_block_free(tr_cf_block *b) {
    if (!b) return;
    free(b->dw.w);
    b->dw.w = b->dw.b = NULL;
}

static size_t wide(const tr_cf_dims *d) {
    return (size_t)(d->d_ff > 2 * d->d_model ? d->d_ff : 2 * d->d_model);
}

size_t tr_cf_scratch(const tr_cf_dims *d, int rows) {
    return (size_t)rows * (5 * (size_t)d->d_model + wide(d));
}

void tr_cf_rotate(float *x, int T, int n_head, int head_dim, float theta) {
    const int half = head_dim / 2;
    for (int t = 0; t < T; t++) {
        float *row = x + (size_t)t * n_head * head_dim;
        for (int i = 0; i < half; i++) {
            /* angle in double, then rounded once: position-exact for long inputs */
            double ang = (double)t * pow((double)theta, -2.0 * i / head_dim);
            float c = (float)cos(ang), s = (float)sin(ang);
            for (int h = 0; h < n_head; h++) {
                float *p = row + (size_t)h * head_dim;
                float a = p[i], b = p[i + half];
                p[i] = a * c - b * s;
                p[i + half] = b * c + a * s;
            }
        }
    }
}

typedef struct cf_buf {
    float *h, *r, *q, *k, *v, *mid;
} cf_buf;

static cf_buf split(const tr_cf_dims *d, int rows, float *scratch) {
    const size_t Td = (size_t)rows * (size_t)d->d_model;
    cf_buf b = {scratch,          scratch + Td,     scratch + 2 * Td,
                scratch + 3 * Td, scratch + 4 * Td, scratch + 5 * Td};
    return b;
}

static float one_if_zero(float w) {
    return w == 0.0f ? 1.0f : w;
}

/* x = w0·x + w1·y (n floats); w0 == 1 is the plain x += w1·y. */
static void residual(tr_pool *pool, float *x, const float *y, float w0, float w1, long n) {
    if (w0 != 1.0f) tr_ew_scale(pool, x, w0, n);
    if (w1 == 1.0f)
        tr_ew_add(pool, x, y, n);
    else
        tr_ew_axpy(pool, x, y, w1, n);
}

/* x = w0·x + s · down(silu(up(LN(x)))) */
static void ff_half(tr_pool *pool, const tr_cf_dims *d, const tr_nn_norm *ln,
                    const tr_nn_linear *up, const tr_nn_linear *down, float *x, int R,
                    const cf_buf *b) {
    tr_layer_norm(pool, x, b->h, R, d->d_model, ln->w, ln->b, d->ln_eps);
    tr_nn_linear_fwd(pool, up, b->h, R, b->mid);
    tr_ew_silu(pool, b->mid, (long)R * d->d_ff);
    tr_nn_linear_fwd(pool, down, b->mid, R, b->q);
    residual(pool, x, b->q, one_if_zero(d->ff_w0), d->ff_scale, (long)R * d->d_model);
}

static void rotate_segs(const tr_cf_dims *d, float *x, int n_seg, const int *seg_T) {
    const int dh = d->d_model / d->n_head;
    size_t off = 0;
    for (int i = 0; i < n_seg; i++) {
        tr_cf_rotate(x + off * d->d_model, seg_T[i], d->n_head, dh, d->rot_theta);
        off += (size_t)seg_T[i];
    }
}

static void attn(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, float *x, int R,
                 int n_seg, const int *seg_T, const cf_buf *b) {
    const int D = d->d_model, dh = D / d->n_head;
    tr_layer_norm(pool, x, b->h, R, D, blk->norm_attn.w, blk->norm_attn.b, d->ln_eps);
    const float *qk_in = b->h;
    if (d->rot == TR_CF_ROT_INPUT) {
        memcpy(b->r, b->h, sizeof(float) * (size_t)R * D);
        rotate_segs(d, b->r, n_seg, seg_T);
        qk_in = b->r;
    }
    tr_nn_linear_fwd(pool, &blk->attn.q, qk_in, R, b->q);
    tr_nn_linear_fwd(pool, &blk->attn.k, qk_in, R, b->k);
    tr_nn_linear_fwd(pool, &blk->attn.v, b->h, R, b->v);
    if (d->rot == TR_CF_ROT_QK) {
        rotate_segs(d, b->q, n_seg, seg_T);
        rotate_segs(d, b->k, n_seg, seg_T);
    }
    size_t off = 0;
    for (int i = 0; i < n_seg; i++) {
        const size_t o = off * D;
        const tr_attn_args a = {.q = b->q + o,
                                .q_stride = D,
                                .k = b->k + o,
                                .v = b->v + o,
                                .kv_stride = D,
                                .out = b->r + o,
                                .out_stride = D,
                                .n_q = seg_T[i],
                                .n_kv = seg_T[i],
                                .kv_valid = seg_T[i],
                                .n_head = d->n_head,
                                .n_head_kv = d->n_head,
                                .head_dim = dh,
                                .scale = (float)(1.0 / sqrt((double)dh))};
        tr_attention(pool, &a);
        off += (size_t)seg_T[i];
    }
    tr_nn_linear_fwd(pool, &blk->attn.o, b->r, R, b->q);
    tr_ew_add(pool, x, b->q, (long)R * D);
}

static void conv(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, float *x, int R,
                 int n_seg, const int *seg_T, const cf_buf *b) {
    const int D = d->d_model;
    tr_layer_norm(pool, x, b->h, R, D, blk->norm_conv.w, blk->norm_conv.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->pw1, b->h, R, b->mid); /* [R][2d] */
    tr_ew_glu(pool, b->mid, b->h, R, D);
    size_t off = 0;
    for (int i = 0; i < n_seg; i++) {
        const size_t o = off * D;
        tr_nn_depthwise(pool, &blk->dw, D, d->kernel, (d->kernel - 1) / 2, b->h + o, b->q + o,
                        seg_T[i]);
        off += (size_t)seg_T[i];
    }
    if (!d->conv_bn)
        tr_layer_norm(pool, b->q, b->q, R, D, blk->conv_ln.w, blk->conv_ln.b, d->ln_eps);
    tr_ew_silu(pool, b->q, (long)R * D);
    tr_nn_linear_fwd(pool, &blk->pw2, b->q, R, b->h);
    residual(pool, x, b->h, one_if_zero(d->conv_w0), one_if_zero(d->conv_w1), (long)R * D);
}

void tr_cf_block_fwd(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, float *x,
                     int n_seg, const int *seg_T, float *scratch) {
    int R = 0;
    for (int i = 0; i < n_seg; i++) R += seg_T[i];
    if (R <= 0) return;
    const cf_buf b = split(d, R, scratch);
    ff_half(pool, d, &blk->norm_ff1, &blk->ff1_up, &blk->ff1_down, x, R, &b);
    attn(pool, blk, d, x, R, n_seg, seg_T, &b);
    conv(pool, blk, d, x, R, n_seg, seg_T, &b);
    ff_half(pool, d, &blk->norm_ff2, &blk->ff2_up, &blk->ff2_down, x, R, &b);
    tr_layer_norm(pool, x, x, R, d->d_model, blk->norm_out.w, blk->norm_out.b, d->ln_eps);
}
