/* Shared machinery of the convolution ops (internal to tensor/). */
#ifndef TR_TENSOR_CONV_INTERNAL_H
#define TR_TENSOR_CONV_INTERNAL_H

#include <stdbool.h>

#include "tensor/ops.h"

/* Writes rows [p0, p1) of group g's im2col matrix: X[p - p0][0..K). */
typedef void (*tr_im2col_fn)(const void *ctx, int g, long p0, long p1, float *X);

/* Dense grouped convolution as GEMM: for each group, X = im2col (P x K) times
 * the group's weight rows (cout_g x K, taken from w viewed as c_out rows of
 * K elements) plus bias, written channel-major into y [c_out][P]; cw: the
 * same weight prepared once (tr_conv_weight_make), or NULL. Returns
 * false (after logging) when memory runs out; y is then zeroed. */
bool tr_conv_gemm(tr_pool *pool, const tr_tensor *w, const tr_conv_weight *cw, int groups,
                  int cout_g, long K, long P, const float *bias, tr_im2col_fn im2col,
                  const void *ctx, float *y);

/* w (c_out rows of K, checked with tr_conv_weights_ok) widened and packed
 * per group for tr_conv_gemm's cw (which then skips that work); NULL when
 * memory runs out. tr_conv_weight_tensor gives back w and its groups. */
tr_conv_weight *tr_conv_weight_make(tr_pool *pool, const tr_tensor *w, int groups, long K,
                                    long c_out);
const tr_tensor *tr_conv_weight_tensor(const tr_conv_weight *cw, int *groups);

/* Checks that w holds c_out rows of K elements of a type this module can
 * read (F32, F16, BF16 or any dequantizable type with K a block multiple). */
bool tr_conv_weights_ok(const char *op, const tr_tensor *w, long K, long c_out);

/* Copies weight row r (K elements) to F32. */
void tr_conv_weight_row(const tr_tensor *w, long K, long r, float *dst);

/* Runs fn(ctx, i) for i in [0, n) split over the pool in contiguous ranges. */
typedef void (*tr_conv_item_fn)(const void *ctx, long i);
void tr_conv_parallel_for(tr_pool *pool, long n, tr_conv_item_fn fn, const void *ctx);

/* In-place support: when [y, y + ny) overlaps [*x, *x + nx), *x is replaced
 * by a malloc'ed copy returned in *copy (free it after the op; NULL when no
 * copy was needed). Returns false (logged) when the copy cannot be made. */
bool tr_conv_unalias(const float **x, long nx, const float *y, long ny, float **copy);

#endif
