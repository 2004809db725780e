/* Element-wise passes of the encoder (SiLU, ReLU, GLU, residual adds,
 * scaling) spread over the pool. Each is memory-bound and cheap on its own,
 * but left serial they would grow to a large share of a block once the
 * GEMMs run on every core.
 *
 * Work is cut into fixed blocks of EW_BLOCK elements (whole rows for the
 * GLU) whatever the thread count: the SIMD kernels treat a vector body and a
 * scalar tail differently, so fixed cut points keep the results identical
 * for any number of threads. */
#include "nn/fastconformer_internal.h"
#include "tensor/ops.h"

#define EW_BLOCK 8192L  /* a multiple of every vector width */
#define EW_MIN   32768L /* below this, one thread: dispatch would cost more */

typedef enum { EW_SILU, EW_RELU, EW_AXPY, EW_SCALE, EW_GLU } ew_op;

typedef struct {
    ew_op op;
    float *x;       /* updated in place; the GLU's output */
    const float *y; /* second operand; the GLU's input */
    float s;
    long n;    /* elements (rows for the GLU) */
    int half;  /* GLU */
    long step; /* elements (rows) per block */
} ew_ctx;

static void ew_range(const ew_ctx *c, long b, long e) {
    switch (c->op) {
    case EW_SILU:
        tr_silu(c->x + b, e - b);
        break;
    case EW_RELU:
        tr_relu(c->x + b, e - b);
        break;
    case EW_AXPY:
        for (long i = b; i < e; i++) c->x[i] += c->s * c->y[i];
        break;
    case EW_SCALE:
        for (long i = b; i < e; i++) c->x[i] *= c->s;
        break;
    case EW_GLU:
        tr_glu(c->y + b * 2L * c->half, c->x + b * (long)c->half, (int)(e - b), c->half);
        break;
    }
}

static void ew_task(void *vctx, int ith, int nth) {
    const ew_ctx *c = vctx;
    const long n_blocks = (c->n + c->step - 1) / c->step;
    long b0, b1;
    tr_split_range(n_blocks, ith, nth, &b0, &b1);
    for (long k = b0; k < b1; k++) {
        const long b = k * c->step, e = b + c->step < c->n ? b + c->step : c->n;
        ew_range(c, b, e);
    }
}

static void ew_run(tr_pool *pool, ew_ctx *c, long elements) {
    if (c->n <= 0) return;
    tr_pool_run(elements >= EW_MIN ? pool : NULL, ew_task, c);
}

void tr_fc_ew_silu(tr_pool *pool, float *x, long n) {
    ew_ctx c = {.op = EW_SILU, .x = x, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_fc_ew_relu(tr_pool *pool, float *x, long n) {
    ew_ctx c = {.op = EW_RELU, .x = x, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_fc_ew_axpy(tr_pool *pool, float *x, const float *y, float s, long n) {
    ew_ctx c = {.op = EW_AXPY, .x = x, .y = y, .s = s, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_fc_ew_scale(tr_pool *pool, float *x, float s, long n) {
    ew_ctx c = {.op = EW_SCALE, .x = x, .s = s, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_fc_ew_glu(tr_pool *pool, const float *x, float *y, int rows, int half) {
    /* tr_glu works row by row, so any row split gives the same bits */
    long step = EW_BLOCK / half;
    ew_ctx c = {.op = EW_GLU, .x = y, .y = x, .n = rows, .half = half, .step = step < 1 ? 1 : step};
    ew_run(pool, &c, (long)rows * half);
}
