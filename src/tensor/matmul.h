/* Weight × activation products, the hot path of every model.
 *
 *   Y[m][n] = sum_k X[m][k] * W[n][k]  (+ bias[n])
 *
 * W is a 2-D weight tensor with ne = {K, N} in any tr_type that
 * tr_dequantize_row supports; X is F32 row-major [M][K] (row stride ldx
 * floats); Y is F32 row-major [M][N] (row stride ldy floats). M == 1 takes
 * the matrix-vector path. The kernel table follows the CPU level of
 * tensor/cpu.h (AVX-512, AVX2, NEON, or portable C); every path agrees within float
 * rounding. Output rows are split across the pool so results are identical
 * for any thread count. */
#ifndef TR_TENSOR_MATMUL_H
#define TR_TENSOR_MATMUL_H

#include <stdbool.h>

#include "tensor/pool.h"
#include "tensor/tensor.h"

void tr_matmul(tr_pool *pool, const tr_tensor *W, const float *bias, const float *X, int M, int ldx,
               float *Y, int ldy);

/* Same with plain contiguous strides (ldx = K, ldy = N). */
static inline void tr_linear(tr_pool *pool, const tr_tensor *W, const float *bias, const float *X,
                             int M, float *Y) {
    tr_matmul(pool, W, bias, X, M, (int)W->ne[0], Y, (int)W->ne[1]);
}

/* Several weights applied to the same X, Y[i] = X W[i]^T (no bias), e.g. a
 * decoder step's q/k/v or gate/up projections. For one row (M == 1) the
 * weights share one pool dispatch, so a step pays one barrier instead of
 * one per weight; each output equals tr_linear's bit for bit. Every W[i]
 * has the same input width; n <= TR_LINEAR_GROUP_MAX. */
#define TR_LINEAR_GROUP_MAX 4
void tr_linear_group(tr_pool *pool, const tr_tensor *const *W, int n, const float *X, int M,
                     float *const *Y);

/* Matrix-vector rows for a caller that runs its own parallel region (a
 * decoder step that puts a whole layer in one pool run): on the calling
 * thread, y[n - n0] = W row n · x for n in [n0, n1), each row exactly as
 * the M == 1 path of tr_matmul computes it (no bias). Check W once with
 * tr_matvec_check first; x has W->ne[0] floats. prep: what
 * tr_matvec_prepare returned for this x and W's type and width (NULL
 * allowed). scratch: tr_matvec_scratch_floats(W) floats, the thread's own. */
bool tr_matvec_check(tr_pool *pool, const tr_tensor *W); /* false: logged, noted on pool */
static inline long tr_matvec_scratch_floats(const tr_tensor *W) {
    return (long)W->ne[0] + 16;
}
/* Work on x that rows of W's type would otherwise redo in every call (the
 * K-quants' group sums, Q8_0's int8 x), done once into buf
 * (tr_matvec_scratch_floats(W) floats): returns buf, or NULL when the type
 * needs nothing. */
const float *tr_matvec_prepare(const tr_tensor *W, const float *x, float *buf);
void tr_matvec_rows(const tr_tensor *W, const float *x, const float *prep, float *y, long n0,
                    long n1, float *scratch);
/* Rows of x a multi-row matrix-vector call takes at most. */
#define TR_MATVEC_MULTI_MAX 4
/* The few-row form, for the verify step of speculative decoding: m (1..TR_MATVEC_MULTI_MAX) rows
 * of X (row i at X + i * ldx) prepared at once for the level's multi-row integer dots of W's type
 * into buf (m * tr_matvec_scratch_floats(W) floats). false where the level has none for W (nothing
 * to use: prepare each row with tr_matvec_prepare and call tr_matvec_rows per row). */
bool tr_matvec_prepare_multi(const tr_tensor *W, const float *X, long ldx, int m, float *buf);
/* Y[i * ldy + n] = W row n · row i of X for n in [n0, n1) and i < m, from what
 * tr_matvec_prepare_multi prepared: each weight row is unpacked and read once for all m rows, and
 * every output has the bits tr_matvec_rows gives that row alone. */
void tr_matvec_rows_multi(const tr_tensor *W, const float *buf, int m, float *Y, long ldy, long n0,
                          long n1);

/* Activation × activation: C[m][n] = sum_k A[m][k] * B[n][k] (both F32,
 * row-major, given strides). Used where both operands are computed. */
void tr_matmul_f32_nt(tr_pool *pool, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc, int M, int N, int K);

/* tr_matmul_f32_nt on the calling thread (no pool) with the packing
 * scratch from the caller, so a product inside a pool task allocates
 * nothing: tr_matmul_f32_nt_scratch_floats(M, N, K) floats, 64-byte
 * aligned (0: the shape needs none of the caller's; scratch NULL or
 * smaller: allocated as tr_matmul_f32_nt does). Same bits. */
size_t tr_matmul_f32_nt_scratch_floats(int M, int N, int K);
void tr_matmul_f32_nt_buf(const float *A, int lda, const float *B, int ldb, float *C, int ldc,
                          int M, int N, int K, float *scratch, size_t floats);

/* A of tr_matmul_f32_nt packed once for several products that share it (a
 * convolution's weight against successive im2col chunks), so each call
 * skips that pass. A itself stays the caller's and must outlive the handle
 * (a call whose shape splits rows reads it unpacked). Results equal
 * tr_matmul_f32_nt's bit for bit. NULL when memory runs out: call
 * tr_matmul_f32_nt instead. */
typedef struct tr_mm_lhs tr_mm_lhs;
tr_mm_lhs *tr_matmul_lhs_pack(tr_pool *pool, const float *A, int lda, int M, int K);
void tr_matmul_f32_nt_lhs(tr_pool *pool, const tr_mm_lhs *A, const float *B, int ldb, float *C,
                          int ldc, int N);
void tr_matmul_lhs_free(tr_mm_lhs *A);

/* The same packed into the caller's memory, for weights of one type:
 * tr_matmul_lhs_floats(M, K) floats (0 where M rows go through the few-row
 * paths, which read X unpacked: then keep A and call tr_linear), 64-byte
 * aligned. Every call through the handle reads only the packed copy, so
 * the caller may overwrite A once this returns; tr_matmul_lhs_free frees
 * the handle, not `data`. NULL when M or K is out of range, or memory for
 * the handle runs out. tr_matmul_lhs gives Y = A W^T + bias for any W of
 * `type` (a tr_type) with K columns, tr_linear's bits; the pool must be the one the
 * pack used. */
size_t tr_matmul_lhs_floats(int M, int K);
tr_mm_lhs *tr_matmul_lhs_pack_into(tr_pool *pool, const float *A, int lda, int M, int K, int type,
                                   float *data);
void tr_matmul_lhs(tr_pool *pool, const tr_tensor *W, const float *bias, const tr_mm_lhs *A,
                   float *Y, int ldy);

/* Selected kernel family, for logs and benchmarks: a tensor/cpu.h level
 * name ("avx512", "avx2", "neon_dotprod", "neon", "scalar"). */
const char *tr_matmul_isa(void);
/* Force a level for every kernel (tr_cpu_force by name; NULL: back to auto);
 * tests and benchmarks use it to compare paths. Returns false if the CPU
 * lacks it. */
bool tr_matmul_force_isa(const char *isa);

#endif
