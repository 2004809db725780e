/* Convolution lowered to GEMM: im2col in chunks of output positions, then
 * the product through tr_matmul_f32_nt (which owns the fast kernels and the
 * threading), written straight into the channel-major output. */
#include "tensor/conv_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "util/log.h"

/* im2col chunk budget (floats): large enough that tr_matmul sees long M runs,
 * small enough to stay far below the activations themselves. */
#define IM2COL_BUDGET (1L << 21)

bool tr_conv_weights_ok(const char *op, const tr_tensor *w, long K, long c_out) {
    size_t rb = tr_type_valid(w->type) ? tr_row_bytes(w->type, K) : 0;
    if (rb == 0 || !w->data || (size_t)c_out * rb > w->nbytes) {
        TR_ERROR("%s: weight %s has unusable type %s or size for %ld x %ld", op,
                 w->name ? w->name : "?", tr_type_name(w->type), c_out, K);
        return false;
    }
    return true;
}

void tr_conv_weight_row(const tr_tensor *w, long K, long r, float *dst) {
    const char *src = (const char *)w->data + (size_t)r * tr_row_bytes(w->type, K);
    /* short F16 rows inline: they can be as short as one kernel's taps, and
     * the generic converter's per-call dispatch would dominate; long ones
     * (Whisper's stem: 1536 and 3840 per row) through its F16C path, which
     * the scalar loop ran ~8x slower than */
    if (w->type == TR_F32) {
        memcpy(dst, src, sizeof(float) * (size_t)K);
    } else if (w->type == TR_F16 && K < 64) {
        const uint16_t *h = (const uint16_t *)src;
        for (long i = 0; i < K; i++) dst[i] = tr_f16_to_f32(h[i]);
    } else {
        tr_dequantize_row(w->type, src, dst, K);
    }
}

bool tr_conv_unalias(const float **x, long nx, const float *y, long ny, float **copy) {
    *copy = NULL;
    uintptr_t xa = (uintptr_t)*x, ya = (uintptr_t)y;
    if (nx <= 0 || ny <= 0 || xa + sizeof(float) * (size_t)nx <= ya ||
        ya + sizeof(float) * (size_t)ny <= xa)
        return true;
    *copy = malloc(sizeof(float) * (size_t)nx);
    if (!*copy) {
        TR_ERROR("conv: out of memory for an in-place copy (%ld floats)", nx);
        return false;
    }
    memcpy(*copy, *x, sizeof(float) * (size_t)nx);
    *x = *copy;
    return true;
}

typedef struct {
    tr_conv_item_fn fn;
    const void *ctx;
    long n;
} pfor_ctx;

static void pfor_task(void *vctx, int ith, int nth) {
    const pfor_ctx *c = vctx;
    long b, e;
    tr_split_range(c->n, ith, nth, &b, &e);
    for (long i = b; i < e; i++) c->fn(c->ctx, i);
}

void tr_conv_parallel_for(tr_pool *pool, long n, tr_conv_item_fn fn, const void *ctx) {
    if (n <= 0) return;
    pfor_ctx c = {fn, ctx, n};
    tr_pool_run(n > 1 ? pool : NULL, pfor_task, &c);
}

typedef struct {
    tr_im2col_fn im2col;
    const void *ctx;
    int g;
    long p0, p1, K;
    float *X;
    /* bias pass */
    const float *bias;
    float *y;
    long P;
} chunk_ctx;

#define ROWS_PER_ITEM 64

static void im2col_item(const void *vctx, long i) {
    const chunk_ctx *c = vctx;
    long a = c->p0 + i * ROWS_PER_ITEM;
    long b = a + ROWS_PER_ITEM < c->p1 ? a + ROWS_PER_ITEM : c->p1;
    c->im2col(c->ctx, c->g, a, b, c->X + (a - c->p0) * c->K);
}

static void bias_item(const void *vctx, long ch) {
    const chunk_ctx *c = vctx;
    float *row = c->y + ch * c->P;
    const float b = c->bias[ch];
    for (long p = 0; p < c->P; p++) row[p] += b;
}

typedef struct {
    const tr_tensor *w;
    long K;
    float *wf;
} deq_ctx;

static void deq_item(const void *vctx, long r) {
    const deq_ctx *c = vctx;
    tr_conv_weight_row(c->w, c->K, r, c->wf + r * c->K);
}

/* w's c_out rows widened to F32 (malloc'ed), or NULL when out of memory. */
static float *widen(tr_pool *pool, const tr_tensor *w, long K, long c_out) {
    float *wf = malloc(sizeof(float) * (size_t)(c_out * K));
    if (wf) {
        deq_ctx d = {w, K, wf};
        tr_conv_parallel_for(pool, c_out, deq_item, &d);
    }
    return wf;
}

struct tr_conv_weight {
    const tr_tensor *w;
    int groups, cout_g;
    long K;
    float *wf;           /* the rows widened to F32; NULL when w is F32 */
    tr_mm_lhs *packed[]; /* per group; NULL where memory ran out (packed per call) */
};

tr_conv_weight *tr_conv_weight_make(tr_pool *pool, const tr_tensor *w, int groups, long K,
                                    long c_out) {
    tr_conv_weight *cw = calloc(1, sizeof *cw + sizeof(tr_mm_lhs *) * (size_t)groups);
    if (!cw) return NULL;
    cw->w = w;
    cw->groups = groups;
    cw->cout_g = (int)(c_out / groups);
    cw->K = K;
    if (w->type != TR_F32 && !(cw->wf = widen(pool, w, K, c_out))) {
        free(cw);
        return NULL;
    }
    const float *W = cw->wf ? cw->wf : (const float *)w->data;
    for (int g = 0; g < groups; g++)
        cw->packed[g] =
            tr_matmul_lhs_pack(pool, W + (long)g * cw->cout_g * K, (int)K, cw->cout_g, (int)K);
    return cw;
}

const tr_tensor *tr_conv_weight_tensor(const tr_conv_weight *cw, int *groups) {
    *groups = cw->groups;
    return cw->w;
}

void tr_conv_weight_free(tr_conv_weight *cw) {
    if (!cw) return;
    for (int g = 0; g < cw->groups; g++) tr_matmul_lhs_free(cw->packed[g]);
    free(cw->wf);
    free(cw);
}

/* The product is taken as Y[c_out][P] = W[c_out][K] . X[P][K]^T with
 * tr_matmul_f32_nt, which writes the channel-major output directly (no
 * transpose pass over the largest tensor of the op). Non-F32 weights are
 * widened once per call (or once for all calls: cw); the GEMM would
 * otherwise widen them per panel. Where the positions take several im2col
 * chunks, a group's weight is packed once for all of them
 * (tr_matmul_lhs_pack) instead of per chunk. */
bool tr_conv_gemm(tr_pool *pool, const tr_tensor *w, const tr_conv_weight *cw, int groups,
                  int cout_g, long K, long P, const float *bias, tr_im2col_fn im2col,
                  const void *ctx, float *y) {
    const long c_out = (long)groups * cout_g;
    if (P <= 0 || c_out <= 0) return true;
    long chunk = IM2COL_BUDGET / K;
    if (chunk < 64) chunk = 64;
    if (chunk > P) chunk = P;
    float *X = malloc(sizeof(float) * (size_t)(chunk * K));
    float *wf = !cw && w->type != TR_F32 ? widen(pool, w, K, c_out) : NULL;
    if (!X || (!cw && w->type != TR_F32 && !wf)) {
        TR_ERROR("conv: out of memory (%ld x %ld im2col)", chunk, K);
        free(X);
        free(wf);
        memset(y, 0, sizeof(float) * (size_t)(c_out * P));
        return false;
    }
    const float *W = cw && cw->wf ? cw->wf : wf ? wf : (const float *)w->data;
    for (int g = 0; g < groups; g++) {
        const float *Wg = W + (long)g * cout_g * K;
        /* own: packed for this call's chunks; NULL where one chunk (or no
         * memory for it) lets each product pack Wg */
        tr_mm_lhs *own =
            !cw && P > chunk ? tr_matmul_lhs_pack(pool, Wg, (int)K, cout_g, (int)K) : NULL;
        const tr_mm_lhs *packed = cw ? cw->packed[g] : own;
        for (long p0 = 0; p0 < P; p0 += chunk) {
            const long p1 = p0 + chunk < P ? p0 + chunk : P;
            chunk_ctx c = {im2col, ctx, g, p0, p1, K, X, bias, y, P};
            tr_conv_parallel_for(pool, (p1 - p0 + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM, im2col_item,
                                 &c);
            float *yg = y + (long)g * cout_g * P + p0;
            if (packed)
                tr_matmul_f32_nt_lhs(pool, packed, X, (int)K, yg, (int)P, (int)(p1 - p0));
            else
                tr_matmul_f32_nt(pool, Wg, (int)K, X, (int)K, yg, (int)P, cout_g, (int)(p1 - p0),
                                 (int)K);
        }
        tr_matmul_lhs_free(own);
    }
    if (bias) {
        chunk_ctx c = {.bias = bias, .y = y, .P = P};
        tr_conv_parallel_for(pool, c_out, bias_item, &c);
    }
    free(X);
    free(wf);
    return true;
}
