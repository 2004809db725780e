/* Row normalisations (layer norm, RMS norm) and the cheap per-channel affine
 * ops that usually sit next to them. Reductions use 8 independent partial
 * sums so the compiler can vectorise them without -ffast-math, and so the
 * result does not depend on the thread count (rows are never split). */
#include "tensor/ops.h"

#include <math.h>

#define LANES 8

static float sum_row(const float *x, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += x[i + l];
    float s = 0.0f;
    for (; i < n; i++) s += x[i];
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

/* sum((x - c)^2) */
static float sumsq_row(const float *x, int n, float c) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float d = x[i + l] - c;
            acc[l] += d * d;
        }
    float s = 0.0f;
    for (; i < n; i++) s += (x[i] - c) * (x[i] - c);
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

typedef struct {
    const float *x;
    float *y;
    int rows, dim;
    const float *g, *b;
    float eps;
    bool rms;
    float *xw;            /* tr_add_layer_norm: the residual stream (x), else NULL */
    const float *a1, *a2; /* its addends (a2 may be NULL) */
} norm_ctx;

static void norm_rows(void *vctx, int ith, int nth) {
    const norm_ctx *c = vctx;
    long r0, r1;
    tr_split_range(c->rows, ith, nth, &r0, &r1);
    const int n = c->dim;
    for (long r = r0; r < r1; r++) {
        const float *x = c->x + r * (long)n;
        float *y = c->y + r * (long)n;
        if (c->xw) { /* the residual adds first, element by element as tr_ew_add */
            float *restrict xw = c->xw + r * (long)n;
            const float *restrict a1 = c->a1 + r * (long)n;
            for (int i = 0; i < n; i++) xw[i] += a1[i];
            if (c->a2) {
                const float *restrict a2 = c->a2 + r * (long)n;
                for (int i = 0; i < n; i++) xw[i] += a2[i];
            }
        }
        /* Two-pass mean/variance: robust when |mean| >> std. */
        float mean = c->rms ? 0.0f : sum_row(x, n) / (float)n;
        float var = sumsq_row(x, n, mean) / (float)n;
        float inv = 1.0f / sqrtf(var + c->eps);
        const float *g = c->g, *b = c->b;
        if (g && b)
            for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * g[i] + b[i];
        else if (g)
            for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * g[i];
        else if (b)
            for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv + b[i];
        else
            for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv;
    }
}

static void run_norm(tr_pool *pool, norm_ctx *c) {
    if (c->rows <= 0 || c->dim <= 0) return;
    /* Small inputs are not worth waking the workers. */
    if ((long)c->rows * c->dim < 16384) pool = NULL;
    tr_pool_run(pool, norm_rows, c);
}

void tr_layer_norm(tr_pool *pool, const float *x, float *y, int rows, int dim, const float *g,
                   const float *b, float eps) {
    norm_ctx c = {x, y, rows, dim, g, b, eps, false, NULL, NULL, NULL};
    run_norm(pool, &c);
}

void tr_add_layer_norm(tr_pool *pool, float *x, const float *a1, const float *a2, float *y,
                       int rows, int dim, const float *g, const float *b, float eps) {
    norm_ctx c = {x, y, rows, dim, g, b, eps, false, x, a1, a2};
    run_norm(pool, &c);
}

void tr_rms_norm(tr_pool *pool, const float *x, float *y, int rows, int dim, const float *g,
                 float eps) {
    norm_ctx c = {x, y, rows, dim, g, NULL, eps, true, NULL, NULL, NULL};
    run_norm(pool, &c);
}

void tr_scale_bias(float *x, int rows, int dim, const float *scale, const float *bias) {
    for (long r = 0; r < rows; r++) {
        float *p = x + r * (long)dim;
        if (scale && bias)
            for (int i = 0; i < dim; i++) p[i] = p[i] * scale[i] + bias[i];
        else if (scale)
            for (int i = 0; i < dim; i++) p[i] *= scale[i];
        else if (bias)
            for (int i = 0; i < dim; i++) p[i] += bias[i];
    }
}

void tr_add_bias(float *x, int rows, int dim, const float *b) {
    if (!b) return;
    for (long r = 0; r < rows; r++) {
        float *p = x + r * (long)dim;
        for (int i = 0; i < dim; i++) p[i] += b[i];
    }
}

void tr_add_scaled(float *y, const float *a, const float *b, float s, long n) {
    for (long i = 0; i < n; i++) y[i] = a[i] + s * b[i];
}
