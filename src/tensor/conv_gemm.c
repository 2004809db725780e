/* Convolution lowered to GEMM: im2col in chunks of output positions, the
 * product through tr_matmul (which owns the fast kernels and the threading),
 * then a blocked transpose from position-major to channel-major. */
#include "tensor/conv_internal.h"

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
    if (w->type == TR_F32)
        memcpy(dst, src, sizeof(float) * (size_t)K);
    else
        tr_dequantize_row(w->type, src, dst, K);
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
    /* transpose */
    const float *Yt;
    float *y;
    long c_out, P;
} chunk_ctx;

#define ROWS_PER_ITEM 64

static void im2col_item(const void *vctx, long i) {
    const chunk_ctx *c = vctx;
    long a = c->p0 + i * ROWS_PER_ITEM;
    long b = a + ROWS_PER_ITEM < c->p1 ? a + ROWS_PER_ITEM : c->p1;
    c->im2col(c->ctx, c->g, a, b, c->X + (a - c->p0) * c->K);
}

/* y[ch][p0 + j] = Yt[j][ch] for 32 channels per item, in 32x32 tiles */
static void transpose_item(const void *vctx, long i) {
    const chunk_ctx *c = vctx;
    long ch0 = i * 32, ch1 = ch0 + 32 < c->c_out ? ch0 + 32 : c->c_out;
    long n = c->p1 - c->p0;
    for (long j0 = 0; j0 < n; j0 += 32) {
        long j1 = j0 + 32 < n ? j0 + 32 : n;
        for (long ch = ch0; ch < ch1; ch++) {
            float *dst = c->y + ch * c->P + c->p0;
            for (long j = j0; j < j1; j++) dst[j] = c->Yt[j * c->c_out + ch];
        }
    }
}

bool tr_conv_gemm(tr_pool *pool, const tr_tensor *w, int groups, int cout_g, long K, long P,
                  const float *bias, tr_im2col_fn im2col, const void *ctx, float *y) {
    const long c_out = (long)groups * cout_g;
    if (P <= 0 || c_out <= 0) return true;
    long chunk = IM2COL_BUDGET / (K > c_out ? K : c_out);
    if (chunk < 16) chunk = 16;
    if (chunk > P) chunk = P;
    float *X = malloc(sizeof(float) * (size_t)(chunk * K));
    float *Yt = malloc(sizeof(float) * (size_t)(chunk * c_out));
    if (!X || !Yt) {
        TR_ERROR("conv: out of memory (%ld x %ld im2col)", chunk, K);
        free(X);
        free(Yt);
        memset(y, 0, sizeof(float) * (size_t)(c_out * P));
        return false;
    }
    const size_t row_bytes = tr_row_bytes(w->type, K);
    for (long p0 = 0; p0 < P; p0 += chunk) {
        const long p1 = p0 + chunk < P ? p0 + chunk : P;
        chunk_ctx c = {im2col, ctx, 0, p0, p1, K, X, Yt, y, c_out, P};
        for (int g = 0; g < groups; g++) {
            c.g = g;
            tr_conv_parallel_for(pool, (p1 - p0 + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM, im2col_item,
                                 &c);
            /* the group's cout_g weight rows as a 2-D tensor {K, cout_g} */
            tr_tensor wg = *w;
            wg.n_dims = 2;
            wg.ne[0] = K;
            wg.ne[1] = cout_g;
            wg.ne[2] = wg.ne[3] = 1;
            wg.nb1 = row_bytes;
            wg.nbytes = row_bytes * (size_t)cout_g;
            wg.data = (const char *)w->data + (size_t)g * cout_g * row_bytes;
            tr_matmul(pool, &wg, bias ? bias + (long)g * cout_g : NULL, X, (int)(p1 - p0), (int)K,
                      Yt + (long)g * cout_g, (int)c_out);
        }
        tr_conv_parallel_for(pool, (c_out + 31) / 32, transpose_item, &c);
    }
    free(X);
    free(Yt);
    return true;
}
