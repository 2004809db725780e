/* Element-wise passes spread over the pool (tr_ew_*). Each is cheap on its
 * own, but left serial on the caller it grows into a visible share of a
 * transformer block once the GEMMs use every core (Whisper-base: the FFN's
 * GELU over 1500 x 2048 values and two residual adds per layer; the
 * FastConformer's SiLU, GLU and half-step residuals).
 *
 * Work is cut into fixed blocks of EW_BLOCK elements (whole rows for the
 * GLU) whatever the thread count. The SIMD kernels treat a vector body and
 * a scalar tail differently; EW_BLOCK is a multiple of every vector width,
 * so the body / tail boundary falls where a single call over all n
 * elements puts it, and the results equal the serial call's bit for bit for
 * any thread count. */
#include "tensor/ops.h"

#define EW_BLOCK 8192L  /* a multiple of every vector width */
#define EW_MIN   32768L /* below this, one thread: dispatch would cost more */

typedef enum { EW_GELU, EW_SILU, EW_RELU, EW_ADD, EW_AXPY, EW_SCALE, EW_GLU } ew_op;

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

/* A thread's blocks are contiguous, so they run as one range (whole blocks
 * but for the array's end: the same body / tail split as one call). */
static void ew_task(void *vctx, int ith, int nth) {
    const ew_ctx *c = vctx;
    long b0, b1;
    tr_split_range((c->n + c->step - 1) / c->step, ith, nth, &b0, &b1);
    const long b = b0 * c->step, e = b1 * c->step < c->n ? b1 * c->step : c->n;
    if (b < e) ew_range(c, b, e);
}

static void ew_run(tr_pool *pool, ew_ctx *c, long elements) {
    if (c->n <= 0) return;
    tr_pool_run(elements >= EW_MIN ? pool : NULL, ew_task, c);
}

void tr_ew_gelu(tr_pool *pool, float *x, long n) {
    ew_ctx c = {.op = EW_GELU, .x = x, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_silu(tr_pool *pool, float *x, long n) {
    ew_ctx c = {.op = EW_SILU, .x = x, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_relu(tr_pool *pool, float *x, long n) {
    ew_ctx c = {.op = EW_RELU, .x = x, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_add(tr_pool *pool, float *x, const float *y, long n) {
    ew_ctx c = {.op = EW_ADD, .x = x, .y = y, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_axpy(tr_pool *pool, float *x, const float *y, float s, long n) {
    ew_ctx c = {.op = EW_AXPY, .x = x, .y = y, .s = s, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_scale(tr_pool *pool, float *x, float s, long n) {
    ew_ctx c = {.op = EW_SCALE, .x = x, .s = s, .n = n, .step = EW_BLOCK};
    ew_run(pool, &c, n);
}

void tr_ew_glu(tr_pool *pool, const float *x, float *y, int rows, int half) {
    /* tr_glu works row by row, so any row split gives the same bits */
    long step = half > 0 ? EW_BLOCK / half : 1;
    ew_ctx c = {.op = EW_GLU, .x = y, .y = x, .n = rows, .half = half, .step = step < 1 ? 1 : step};
    ew_run(pool, &c, (long)rows * half);
}
