/* 2-D convolution (PyTorch Conv2d semantics, symmetric zero padding, no
 * dilation). Depthwise runs directly per channel; the rest (including 1x1
 * pointwise) goes through im2col + tr_matmul. */
#include <stdlib.h>
#include <string.h>

#include "tensor/conv_internal.h"
#include "util/log.h"

typedef struct {
    const float *x;
    int c_in, h, w_in, kh, kw, sh, sw, ph, pw, h_out, w_out, cin_g;
    const tr_tensor *w;
    const float *bias;
    float *y;
    tr_pool *pool; /* for the failure record */
} conv2d_ctx;

/* Output columns ox with 0 <= ox*sw - pw + kx < w_in: [*lo, *hi). */
static void col_range(const conv2d_ctx *c, int kx, int *lo, int *hi) {
    const int off = kx - c->pw;
    int a = off >= 0 ? 0 : (-off + c->sw - 1) / c->sw;
    int b = c->w_in - off <= 0 ? 0 : (c->w_in - off + c->sw - 1) / c->sw;
    if (b > c->w_out) b = c->w_out;
    *lo = a;
    *hi = b > a ? b : a;
}

static void depthwise_channel(const void *vctx, long ch) {
    const conv2d_ctx *c = vctx;
    enum { KMAX = 64 };
    const long kn = (long)c->kh * c->kw;
    float wbuf[KMAX];
    int lo_t[KMAX], hi_t[KMAX];
    float *wr = kn <= KMAX ? wbuf : malloc(sizeof(float) * (size_t)kn);
    float *y = c->y + ch * (long)c->h_out * c->w_out;
    const float *x = c->x + ch * (long)c->h * c->w_in;
    const float b = c->bias ? c->bias[ch] : 0.0f;
    if (!wr) {
        tr_pool_note_failure(c->pool, TR_POOL_FAIL_OOM);
        TR_ERROR("conv2d: out of memory for %ld taps", kn);
        for (long i = 0; i < (long)c->h_out * c->w_out; i++) y[i] = b;
        return;
    }
    tr_conv_weight_row(c->w, kn, ch, wr);
    /* column ranges depend only on kx: hoist the divisions out of the rows */
    for (int kx = 0; kx < c->kw && kx < KMAX; kx++) col_range(c, kx, &lo_t[kx], &hi_t[kx]);
    for (int oy = 0; oy < c->h_out; oy++) {
        float *yr = y + (long)oy * c->w_out;
        for (int ox = 0; ox < c->w_out; ox++) yr[ox] = b;
        for (int ky = 0; ky < c->kh; ky++) {
            const int iy = oy * c->sh - c->ph + ky;
            if (iy < 0 || iy >= c->h) continue;
            const float *xr = x + (long)iy * c->w_in;
            for (int kx = 0; kx < c->kw; kx++) {
                const float wk = wr[ky * c->kw + kx];
                const int off = kx - c->pw;
                int lo, hi;
                if (kx < KMAX)
                    lo = lo_t[kx], hi = hi_t[kx];
                else
                    col_range(c, kx, &lo, &hi);
                if (c->sw == 1)
                    for (int ox = lo; ox < hi; ox++) yr[ox] += wk * xr[ox + off];
                else
                    for (int ox = lo; ox < hi; ox++) yr[ox] += wk * xr[ox * c->sw + off];
            }
        }
    }
    if (wr != wbuf) free(wr);
}

/* One im2col row, r[(ci*kh + ky)*kw + kx] = xg[ci][oy*sh - ph + ky][ox*sw - pw + kx]
 * (zero outside the image), xg = group g's first input channel. */
static void im2col_row(const conv2d_ctx *c, const float *xg, int oy, int ox, float *r) {
    const long hw = (long)c->h * c->w_in;
    const int iy0 = oy * c->sh - c->ph, ix0 = ox * c->sw - c->pw;
    if (iy0 >= 0 && iy0 + c->kh <= c->h && ix0 >= 0 && ix0 + c->kw <= c->w_in) {
        /* the whole window inside the image (most positions): no bounds
         * checks, and the usual 3x3 window with its taps unrolled */
        const float *b = xg + (long)iy0 * c->w_in + ix0;
        if (c->kh == 3 && c->kw == 3) {
            /* each window row as one 4-float copy whose last float the next
             * row's copy overwrites (the last row copies 3): the 4th float
             * read lies in the image (at worst the next row's first) */
            const long w1 = c->w_in, w2 = 2L * c->w_in;
            for (int ci = 0; ci < c->cin_g; ci++, b += hw, r += 9) {
                memcpy(r, b, 4 * sizeof(float));
                memcpy(r + 3, b + w1, 4 * sizeof(float));
                memcpy(r + 6, b + w2, 3 * sizeof(float));
            }
        } else {
            for (int ci = 0; ci < c->cin_g; ci++, b += hw)
                for (int ky = 0; ky < c->kh; ky++)
                    for (int kx = 0; kx < c->kw; kx++) *r++ = b[(long)ky * c->w_in + kx];
        }
        return;
    }
    for (int ci = 0; ci < c->cin_g; ci++) {
        const float *x = xg + ci * hw;
        for (int ky = 0; ky < c->kh; ky++) {
            const int iy = iy0 + ky;
            if (iy < 0 || iy >= c->h) {
                for (int kx = 0; kx < c->kw; kx++) *r++ = 0.0f;
                continue;
            }
            const float *xr = x + (long)iy * c->w_in;
            for (int kx = 0; kx < c->kw; kx++) {
                const int ix = ix0 + kx;
                *r++ = (ix >= 0 && ix < c->w_in) ? xr[ix] : 0.0f;
            }
        }
    }
}

/* X[p - p0][(ci*kh + ky)*kw + kx] = x[g*cin_g + ci][oy*sh - ph + ky][ox*sw - pw + kx] */
static void im2col_2d(const void *vctx, int g, long p0, long p1, float *X) {
    const conv2d_ctx *c = vctx;
    const long K = (long)c->cin_g * c->kh * c->kw;
    const long hw = (long)c->h * c->w_in;
    if (c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->ph == 0 && c->pw == 0) {
        /* pointwise: a plain transpose, read along positions */
        for (int ci = 0; ci < c->cin_g; ci++) {
            const float *x = c->x + (long)(g * c->cin_g + ci) * hw;
            for (long p = p0; p < p1; p++) X[(p - p0) * K + ci] = x[p];
        }
        return;
    }
    const float *xg = c->x + (long)g * c->cin_g * hw;
    int oy = (int)(p0 / c->w_out), ox = (int)(p0 % c->w_out);
    for (long p = p0; p < p1; p++) {
        im2col_row(c, xg, oy, ox, X + (p - p0) * K);
        if (++ox == c->w_out) ox = 0, oy++;
    }
}

static void conv2d_run(tr_pool *pool, const float *x, int c_in, int h, int w_in, const tr_tensor *w,
                       const tr_conv_weight *cw, const float *bias, int stride_h, int stride_w,
                       int pad_h, int pad_w, int groups, float *y, int *h_out, int *w_out) {
    const int kw = (int)w->ne[0], kh = (int)w->ne[1], cin_g = (int)w->ne[2];
    const int c_out = (int)w->ne[3];
    int ho = tr_conv1d_out_len(h, kh, stride_h, pad_h, pad_h, 1);
    int wo = tr_conv1d_out_len(w_in, kw, stride_w, pad_w, pad_w, 1);
    if (h_out) *h_out = ho;
    if (w_out) *w_out = wo;
    if (groups <= 0 || c_in <= 0 || c_in % groups || c_out % groups || cin_g != c_in / groups) {
        TR_ERROR("conv2d: weight %s {%d,%d,%d,%d} does not fit c_in %d groups %d",
                 w->name ? w->name : "?", kw, kh, cin_g, c_out, c_in, groups);
        if (h_out) *h_out = 0;
        if (w_out) *w_out = 0;
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    if (ho <= 0 || wo <= 0) return;
    const bool depthwise = groups == c_in && c_out == c_in;
    const long K = depthwise ? (long)kh * kw : (long)cin_g * kh * kw;
    if (!cw && !tr_conv_weights_ok("conv2d", w, K, c_out)) { /* cw: checked when made */
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    float *xcopy;
    if (!tr_conv_unalias(&x, (long)c_in * h * w_in, y, (long)c_out * ho * wo, &xcopy)) {
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
        return;
    }
    conv2d_ctx c = {x,     c_in, h,  w_in,  kh, kw,   stride_h, stride_w, pad_h,
                    pad_w, ho,   wo, cin_g, w,  bias, y,        pool};
    if (depthwise)
        tr_conv_parallel_for(pool, c_out, depthwise_channel, &c);
    else if (!tr_conv_gemm(pool, w, cw, groups, c_out / groups, K, (long)ho * wo, bias, im2col_2d,
                           &c, y))
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
    free(xcopy);
}

void tr_conv2d(tr_pool *pool, const float *x, int c_in, int h, int w_in, const tr_tensor *w,
               const float *bias, int stride_h, int stride_w, int pad_h, int pad_w, int groups,
               float *y, int *h_out, int *w_out) {
    conv2d_run(pool, x, c_in, h, w_in, w, NULL, bias, stride_h, stride_w, pad_h, pad_w, groups, y,
               h_out, w_out);
}

tr_conv_weight *tr_conv2d_weight_prepare(tr_pool *pool, const tr_tensor *w, int groups) {
    const long K = (long)(w->ne[0] * w->ne[1] * w->ne[2]), c_out = (long)w->ne[3];
    if (groups <= 0 || c_out % groups || (w->ne[2] == 1 && groups == c_out)) return NULL;
    if (!tr_conv_weights_ok("conv2d", w, K, c_out)) {
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return NULL;
    }
    return tr_conv_weight_make(pool, w, groups, K, c_out);
}

void tr_conv2d_prepared(tr_pool *pool, const float *x, int c_in, int h, int w_in,
                        const tr_conv_weight *cw, const float *bias, int stride_h, int stride_w,
                        int pad_h, int pad_w, float *y, int *h_out, int *w_out) {
    int groups;
    const tr_tensor *w = tr_conv_weight_tensor(cw, &groups);
    conv2d_run(pool, x, c_in, h, w_in, w, cw, bias, stride_h, stride_w, pad_h, pad_w, groups, y,
               h_out, w_out);
}
