/* Depthwise convolution over time for the Conformer convolution module
 * (nn/depthwise.h; docs/formats/parakeet.md §7.5), directly on the time-major [T][d] activations:
 * with tap-major weights [k][d] every inner loop runs along contiguous
 * channels of both input and weights, so no transposes are needed around
 * the pointwise GEMMs. Frames are split across the pool; every output is
 * computed by one thread in a fixed order. */
#include <math.h>

#include "nn/depthwise.h"

typedef struct {
    const tr_nn_dw *dw;
    int d, k, pad_l, T;
    long t_first, n; /* the output frames [t_first, t_first + n) */
    const float *g;
    float *u; /* their rows */
} dw_ctx;

static void dw_task(void *vctx, int ith, int nth) {
    const dw_ctx *c = vctx;
    const int d = c->d;
    long t0, t1;
    tr_split_range(c->n, ith, nth, &t0, &t1);
    for (long t = c->t_first + t0; t < c->t_first + t1; t++) {
        float *restrict u = c->u + (t - c->t_first) * d;
        const float *restrict bias = c->dw->b;
        for (int i = 0; i < d; i++) u[i] = bias[i];
        for (int j = 0; j < c->k; j++) {
            const long src = t + j - c->pad_l;
            if (src < 0 || src >= c->T) continue; /* zero padding */
            const float *restrict g = c->g + src * d;
            const float *restrict w = c->dw->w + (long)j * d;
            for (int i = 0; i < d; i++) u[i] += w[i] * g[i];
        }
    }
}

void tr_nn_bn_fold(const float *gamma, const float *beta, const float *mean, const float *var,
                   int n, float eps, float *scale, float *shift) {
    for (int i = 0; i < n; i++) {
        scale[i] = gamma[i] / sqrtf(var[i] + eps);
        shift[i] = beta[i] - mean[i] * scale[i];
    }
}

void tr_nn_depthwise(tr_pool *pool, const tr_nn_dw *dw, int d, int k, int pad_l, const float *g,
                     float *u, int T) {
    tr_nn_depthwise_rows(pool, dw, d, k, pad_l, g, T, 0, T, u);
}

void tr_nn_depthwise_rows(tr_pool *pool, const tr_nn_dw *dw, int d, int k, int pad_l,
                          const float *g, int T, int t0, int n, float *u) {
    dw_ctx c = {dw, d, k, pad_l, T, t0, n, g, u};
    tr_pool_run(n > 1 ? pool : NULL, dw_task, &c);
}
