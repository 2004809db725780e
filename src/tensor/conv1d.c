/* 1-D convolution (PyTorch Conv1d semantics, zero padding). Depthwise
 * convolutions run directly per channel; everything else goes through
 * im2col + tr_matmul (conv_gemm.c). */
#include <stdlib.h>
#include <string.h>

#include "tensor/conv_internal.h"
#include "util/log.h"

int tr_conv1d_out_len(int t_in, int k, int stride, int pad_l, int pad_r, int dilation) {
    if (t_in < 0 || k <= 0 || stride <= 0 || dilation <= 0 || pad_l < 0 || pad_r < 0) return 0;
    long span = (long)dilation * (k - 1) + 1;
    long room = (long)t_in + pad_l + pad_r - span;
    return room < 0 ? 0 : (int)(room / stride + 1);
}

typedef struct {
    const float *x;
    int c_in, t_in, t_out, k, stride, pad_l, dilation, cin_g;
    const tr_tensor *w;
    const float *bias;
    float *y;
    tr_pool *pool; /* for the failure record */
} conv1d_ctx;

/* Output positions t whose tap kk reads inside [0, t_in): [*lo, *hi). */
static void tap_range(const conv1d_ctx *c, int kk, long *lo, long *hi) {
    long off = (long)kk * c->dilation - c->pad_l; /* input index = t*stride + off */
    long a = off >= 0 ? 0 : (-off + c->stride - 1) / c->stride;
    long b = (long)c->t_in - off <= 0 ? 0 : ((long)c->t_in - off + c->stride - 1) / c->stride;
    if (b > c->t_out) b = c->t_out;
    *lo = a;
    *hi = b > a ? b : a;
}

static void depthwise_channel(const void *vctx, long ch) {
    const conv1d_ctx *c = vctx;
    enum { KMAX = 64 };
    float wbuf[KMAX];
    float *wr = c->k <= KMAX ? wbuf : malloc(sizeof(float) * (size_t)c->k);
    float *y = c->y + ch * c->t_out;
    const float *x = c->x + ch * c->t_in;
    const float b = c->bias ? c->bias[ch] : 0.0f;
    for (int t = 0; t < c->t_out; t++) y[t] = b;
    if (!wr) {
        tr_pool_note_failure(c->pool, TR_POOL_FAIL_OOM);
        TR_ERROR("conv1d: out of memory for %d taps", c->k);
        return;
    }
    tr_conv_weight_row(c->w, c->k, ch, wr);
    for (int kk = 0; kk < c->k; kk++) {
        long lo, hi;
        tap_range(c, kk, &lo, &hi);
        const float wk = wr[kk];
        const float *xs = x + (long)kk * c->dilation - c->pad_l;
        if (c->stride == 1)
            for (long t = lo; t < hi; t++) y[t] += wk * xs[t];
        else
            for (long t = lo; t < hi; t++) y[t] += wk * xs[t * c->stride];
    }
    if (wr != wbuf) free(wr);
}

/* X[p - p0][ci * k + kk] = x[g*cin_g + ci][p*stride - pad_l + kk*dilation] (0 outside) */
static void im2col_1d(const void *vctx, int g, long p0, long p1, float *X) {
    const conv1d_ctx *c = vctx;
    const long K = (long)c->cin_g * c->k;
    for (long p = p0; p < p1; p++) {
        float *row = X + (p - p0) * K;
        const long base = p * c->stride - c->pad_l;
        for (int ci = 0; ci < c->cin_g; ci++) {
            const float *x = c->x + (long)(g * c->cin_g + ci) * c->t_in;
            float *r = row + (long)ci * c->k;
            for (int kk = 0; kk < c->k; kk++) {
                long t = base + (long)kk * c->dilation;
                r[kk] = (t >= 0 && t < c->t_in) ? x[t] : 0.0f;
            }
        }
    }
}

void tr_conv1d(tr_pool *pool, const float *x, int c_in, int t_in, const tr_tensor *w,
               const float *bias, int stride, int pad_l, int pad_r, int dilation, int groups,
               float *y) {
    const int k = (int)w->ne[0], cin_g = (int)w->ne[1], c_out = (int)w->ne[2];
    const int t_out = tr_conv1d_out_len(t_in, k, stride, pad_l, pad_r, dilation);
    if (groups <= 0 || c_in <= 0 || c_in % groups || c_out % groups || cin_g != c_in / groups ||
        w->ne[3] != 1) {
        TR_ERROR("conv1d: weight %s {%d,%d,%d} does not fit c_in %d groups %d",
                 w->name ? w->name : "?", k, cin_g, c_out, c_in, groups);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    if (t_out <= 0) return;
    const bool depthwise = groups == c_in && c_out == c_in;
    const long K = depthwise ? k : (long)cin_g * k;
    if (!tr_conv_weights_ok("conv1d", w, K, c_out)) {
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    float *xcopy;
    if (!tr_conv_unalias(&x, (long)c_in * t_in, y, (long)c_out * t_out, &xcopy)) {
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
        return;
    }
    conv1d_ctx c = {x, c_in, t_in, t_out, k, stride, pad_l, dilation, cin_g, w, bias, y, pool};
    if (depthwise)
        tr_conv_parallel_for(pool, c_out, depthwise_channel, &c);
    else if (!tr_conv_gemm(pool, w, NULL, groups, c_out / groups, K, t_out, bias, im2col_1d, &c, y))
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
    free(xcopy);
}
