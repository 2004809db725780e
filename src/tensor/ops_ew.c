/* Element-wise passes spread over the pool (tr_ew_*). Each is cheap on its
 * own, but left serial on the caller it grows into a visible share of a
 * transformer block once the GEMMs use every core (Whisper-base: the FFN's
 * GELU over 1500 x 2048 values and two residual adds per layer).
 *
 * Work is cut into fixed blocks of EW_BLOCK elements whatever the thread
 * count. The SIMD kernels treat a vector body and a scalar tail
 * differently; EW_BLOCK is a multiple of every vector width, so the body /
 * tail boundary falls where a single call over all n elements puts it, and
 * the results equal the serial call's bit for bit for any thread count. */
#include "tensor/ops.h"

#define EW_BLOCK 8192L  /* a multiple of every vector width */
#define EW_MIN   32768L /* below this, one thread: dispatch would cost more */

typedef enum { EW_GELU, EW_SILU, EW_RELU, EW_ADD } ew_op;

typedef struct {
    ew_op op;
    float *x;
    const float *y;
    long n;
} ew_ctx;

static void ew_task(void *vctx, int ith, int nth) {
    const ew_ctx *c = vctx;
    long b0, b1;
    tr_split_range((c->n + EW_BLOCK - 1) / EW_BLOCK, ith, nth, &b0, &b1);
    const long b = b0 * EW_BLOCK, e = b1 * EW_BLOCK < c->n ? b1 * EW_BLOCK : c->n;
    if (b >= e) return;
    switch (c->op) {
    case EW_GELU:
        tr_gelu(c->x + b, e - b);
        break;
    case EW_SILU:
        tr_silu(c->x + b, e - b);
        break;
    case EW_RELU:
        tr_relu(c->x + b, e - b);
        break;
    case EW_ADD:
        for (long i = b; i < e; i++) c->x[i] += c->y[i];
        break;
    }
}

static void ew_run(tr_pool *pool, ew_op op, float *x, const float *y, long n) {
    if (n <= 0) return;
    ew_ctx c = {op, x, y, n};
    tr_pool_run(n >= EW_MIN ? pool : NULL, ew_task, &c);
}

void tr_ew_gelu(tr_pool *pool, float *x, long n) {
    ew_run(pool, EW_GELU, x, NULL, n);
}

void tr_ew_silu(tr_pool *pool, float *x, long n) {
    ew_run(pool, EW_SILU, x, NULL, n);
}

void tr_ew_relu(tr_pool *pool, float *x, long n) {
    ew_run(pool, EW_RELU, x, NULL, n);
}

void tr_ew_add(tr_pool *pool, float *x, const float *y, long n) {
    ew_run(pool, EW_ADD, x, y, n);
}
