/* Kernel tables behind tr_matmul: one per instruction set. The driver in
 * matmul.c does blocking, packing and threading; a table supplies the
 * register-blocked GEMM microkernel, the fused matrix-vector row dots and a
 * fast row dequantizer. */
#ifndef TR_TENSOR_MATMUL_INTERNAL_H
#define TR_TENSOR_MATMUL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/pool.h"

#define TR_MM_KC 512 /* K block: a multiple of every block size */

/* A weight matrix: N rows of K elements of `type`, row r at data + r*stride. */
typedef struct {
    int type;
    const uint8_t *data;
    size_t stride;
    int64_t K, N;
} tr_mm_w;

/* acc[i][j] = sum_{k<kc} xp[k*MR+i] * wp[k*NR+j]; then for i<mr, j<nr:
 * y[i*ldy+j] = (accumulate ? y[i*ldy+j] : bias ? bias[j] : 0) + acc[i][j]. */
typedef void (*tr_mm_kernel_fn)(const float *xp, const float *wp, int kc, float *y, long ldy,
                                int mr, int nr, const float *bias, int accumulate);
/* y[n - n0] = dot(W row n, x) (+ bias[n]) for n in [n0, n1). xsum holds sums
 * of x over each 32-element group (K/32 values, for K-quant mins); scratch
 * has room for K floats. Returns 0 if the type is not handled. */
typedef int (*tr_mm_rows_fn)(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                             long n1, const float *bias, float *scratch);
typedef void (*tr_mm_deq_fn)(int type, const void *src, float *dst, int64_t n);

/* A few rows of x (2..TR_MM_SMALL_M) prepared once for a level's integer
 * dots of Q8_0, Q4_K, Q5_K and Q6_K rows (tr_mm_isa.quant_x_rows): row i's
 * int8 values at q + i*K, its scales at s + i*(K/32) (Q8_0) or s +
 * i*(K/256) (AVX2 K-quants, and Q6_K on both x86 levels) or s + i*(K/16)
 * (AVX-512 Q4_K / Q5_K: scales and group sums), its sums per 16 at bsum +
 * i*(K/16) (where the layout has them). rows_int8_multi writes Y[i*ldy + n]
 * for weight rows [n0, n1), plus bias[n] when given; each weight row is
 * read once for all m, and every output has the bits of the level's
 * one-row path. */
typedef struct {
    int8_t *q;
    float *s;
    int16_t *bsum;
} tr_mm_xq;

/* Y[i][j] for i < mr rows (X row i's codes at xq + i * ldq, its group pairs
 * at xsc + i * ldsc, both at the block's first group; Q8_0's 64 codes a
 * group, the 32 high then the 32 low), j < nr: ng groups of the packed
 * panel wp, onto Y (accumulate), else onto bias[j] (or 0). */
typedef void (*tr_mm_qgemm_kernel_fn)(const int8_t *xq, long ldq, const float *xsc, long ldsc,
                                      const uint8_t *wp, int ng, float *y, long ldy, int mr, int nr,
                                      const float *bias, int accumulate);

/* A level's kernel dispatch by tile height: ROWS(n) with n the literal for
 * mr = 1..4 (or 1..6), so each always_inline instantiation of its kernel
 * gets a constant row count. */
#define TR_MM_QG_TILES4(mr, ROWS)                                                                  \
    do {                                                                                           \
        switch (mr) {                                                                              \
        case 4:                                                                                    \
            ROWS(4);                                                                               \
            break;                                                                                 \
        case 3:                                                                                    \
            ROWS(3);                                                                               \
            break;                                                                                 \
        case 2:                                                                                    \
            ROWS(2);                                                                               \
            break;                                                                                 \
        default:                                                                                   \
            ROWS(1);                                                                               \
            break;                                                                                 \
        }                                                                                          \
    } while (0)
#define TR_MM_QG_TILES6(mr, ROWS)                                                                  \
    do {                                                                                           \
        if ((mr) == 6)                                                                             \
            ROWS(6);                                                                               \
        else if ((mr) == 5)                                                                        \
            ROWS(5);                                                                               \
        else                                                                                       \
            TR_MM_QG_TILES4(mr, ROWS);                                                             \
    } while (0)

/* A level's integer GEMM for quantized weights (matmul_qgemm.c drives it):
 * X quantized once per call, per 32-element group, W packed per panel of nr
 * weight rows and K block, and a register-blocked kernel on byte products
 * (VNNI on AVX-512, vpmaddubsw on AVX2, SDOT on NEON). For every output
 * (i, j) the arithmetic is fixed (the scalar test reference repeats it bit
 * for bit). acc starts at bias[j] or 0; then, over the 32-groups g in
 * order,
 *
 *   acc = fmaf((float)isum, wsc[j][g] * xs[i][g], acc)
 *   acc = fmaf(wmin[j][g], -xsum[i][g], acc)      (Q4_K and Q5_K only)
 *
 * with isum = sum_t wq[j][32g+t] * xq[i][32g+t] exact in int32, xq =
 * round(x * 127 / amax) per group (even ties), xs = amax / 127, xsum the
 * group's float sum in order; wq the codes (Q4_K / Q5_K: unsigned 0..31),
 * wsc = d * sc and wmin = dmin * m (exact in float). Q8_0 weights have
 * 8-bit codes, as precise as x's, so x takes two codes per element there
 * (one pass of int8 x would add its error on top of the weights' and
 * roughly double a Q8_0 encoder's distance from the float model): h =
 * round(u), u = x * 127 / amax as above, and l = round((u - h) * 254)
 * (u - h is exact); isum = 254 * sum_t wq * h + sum_t wq * l (int32,
 * exact), xs = amax / 32258 and wsc = the block's d. */
typedef struct {
    int mr, nr; /* kernel tile: rows of X, weight rows (a panel) */
    bool q5k;   /* takes Q5_K too (Q4_K always) */
    /* K quantized: the row's codes q[K], per group (xs, -xsum) at sc[2g] */
    void (*quant_row)(const float *x, long K, int8_t *q, float *sc);
    /* for Q8_0 weights: the two codes per element, q[2K] (group g's high
     * codes at 64g, its low ones at 64g + 32), and per group (xs, the
     * level's own second value) at sc[2g] (AVX-512: 128 * (254 * sum(h) +
     * sum(l)), what its offset weight codes add) */
    void (*quant_row8)(const float *x, long K, int8_t *q, float *sc);
    /* Weight rows [0, nr) of src (row r at src + r * stride, nr <= the
     * panel width; rows past nr packed as zero) over k [k0, k0 + kc), k0 and
     * kc multiples of the type's block (256, or 32 for Q8_0), into dst:
     * TR_MM_QG_GROUP_BYTES(nr) per group. False for a type it does not take. */
    bool (*pack_w)(int type, const uint8_t *src, size_t stride, int nr, long k0, int kc,
                   uint8_t *dst);
    tr_mm_qgemm_kernel_fn kernel;
    /* for Q5_K's codes (up to 31) where the level needs another kernel
     * (AVX2: shorter int16 runs); NULL: kernel takes them */
    tr_mm_qgemm_kernel_fn kernel5;
    /* Q8_0 (two x codes, no min term); NULL: the level does not take Q8_0 */
    tr_mm_qgemm_kernel_fn kernel8;
} tr_mm_qgemm;

/* Bytes of one packed 32-group of a panel nr wide: codes [8][nr][4], then
 * nr floats of wsc, nr of wmin. */
#define TR_MM_QG_GROUP_BYTES(nr) ((size_t)(nr) * (32 + 8))

/* The start of every level's pack_w for 256-element block b of a Q4_K /
 * Q5_K panel nr_panel rows wide: blk[c] = row c's block (row c at src +
 * c * stride; rows from nr on get an all-zero block), and the float scale
 * and min of each of its 8 groups written into the packed groups at gd
 * (group j's d * sc at gd + j * TR_MM_QG_GROUP_BYTES(nr_panel) + 32 *
 * nr_panel, [0, nr_panel), dmin * m right after; both exact in float).
 * Only the codes' layout is the level's own. */
void tr_mm_qgemm_pack_block(int type, const uint8_t *src, size_t stride, int nr, int nr_panel,
                            long b, const uint8_t **blk, uint8_t *gd);

typedef struct {
    const char *name;
    int mr, nr, nc; /* microkernel tile and N block (a multiple of nr) */
    tr_mm_kernel_fn kernel;
    tr_mm_rows_fn rows;
    /* rows() dots an F16 row to the bits of its exact F32 widening (deq) */
    bool f16_widen;
    tr_mm_deq_fn deq;
    /* Optional 16×16 transpose for packing: rows r < nr of src (pitch floats
     * apart), k < kn, to dst[k*ld + r] for all 16 r (missing rows 0); dst is
     * 64-byte aligned and ld a multiple of 16. */
    void (*transpose16)(const float *src, long pitch, int nr, int kn, float *dst, long ld);
    /* Optional: the same transpose straight from a quantized weight's rows
     * (row i at src + i*stride, elements k0..k0+kn of each, k0 a multiple
     * of 16), each value the bits deq gives; false for a type it does not
     * take (then deq and transpose16). */
    bool (*pack16)(int type, const uint8_t *src, size_t stride, long k0, int nr, int kn, float *dst,
                   long ld);
    /* Optional (NULL: the level has none): a few rows of X for the
     * integer-dot types, quantized once per call, then each weight row read
     * once for all of them (see tr_mm_xq); quant_x_rows returns false for a
     * type the level has no integer dots for. */
    bool (*quant_x_rows)(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x);
    void (*rows_int8_multi)(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy, long n0,
                            long n1, const float *bias);
    /* Optional: the matrix-vector rows of the integer-dot types on one row
     * of x that quant_x_rows prepared (M = 1) once for the whole call
     * instead of per claimed chunk: y[n - n0] for weight rows [n0, n1),
     * the bits rows() gives. */
    void (*rows_int8)(const tr_mm_w *w, const tr_mm_xq *x, float *y, long n0, long n1,
                      const float *bias);
    /* Optional: the integer GEMM of the K-quants and Q8_0 at M > TR_MM_SMALL_M */
    const tr_mm_qgemm *qgemm;
    /* Optional: the one to take instead where the CPU has AVX-VNNI (the AVX2
     * level: tr_mm_qgemm_avx_vnni) */
    const tr_mm_qgemm *qgemm_vnni;
} tr_mm_isa;

/* M at or below which tr_matmul takes the few-row path (each row exact to
 * its matrix-vector product) over packed GEMM. */
#define TR_MM_SMALL_M 4

/* AVX2 (x86-64 only): x quantized once for many matrix-vector calls, as
 * the table's rows does it per call: quant_x fills xq (K bytes) and xs
 * (K / 32 scales); rows_q8 writes y[n - n0] for Q8_0 rows [n0, n1) from
 * them, the bits rows gives without a bias. */
void tr_mm_quant_x_avx2(const float *x, long K, int8_t *xq, float *xs);
void tr_mm_rows_q8_avx2(const tr_mm_w *w, const int8_t *xq, const float *xs, float *y, long n0,
                        long n1);
bool tr_mm_quant_x_rows_avx2(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x);
void tr_mm_rows_int8_multi_avx2(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy,
                                long n0, long n1, const float *bias);
void tr_mm_rows_int8_x_avx2(const tr_mm_w *w, const tr_mm_xq *x, float *y, long n0, long n1,
                            const float *bias);
/* AVX-512 (x86-64 only): the same for its own layouts; rows_int8 is the
 * one-row matrix-vector path of Q8_0 and the K-quants (as tr_mm_rows_fn;
 * returns 0 for other types). */
int tr_mm_rows_int8_avx512(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                           long n1, const float *bias, float *scratch);
bool tr_mm_quant_x_rows_avx512(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x);
void tr_mm_rows_int8_multi_avx512(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy,
                                  long n0, long n1, const float *bias);
void tr_mm_rows_int8_x_avx512(const tr_mm_w *w, const tr_mm_xq *x, float *y, long n0, long n1,
                              const float *bias);

/* The integer GEMM (matmul_qgemm.c): the level's table for this CPU
 * (qgemm_vnni where the CPU has AVX-VNNI, else qgemm; NULL: none); takes
 * says whether the level has one for W's type (else the F32 GEMM runs);
 * run computes Y = X W^T (+ bias)
 * with it, row m of X from x_row(xctx, m, tmp) (tmp: K floats of the
 * calling part's own); a failure is logged and noted on the pool. */
const tr_mm_qgemm *tr_mm_qgemm_of(const tr_mm_isa *isa);
bool tr_mm_qgemm_takes(const tr_mm_isa *isa, int type);
void tr_mm_qgemm_run(tr_pool *pool, const tr_mm_isa *isa, const tr_mm_w *w, const float *bias,
                     const float *(*x_row)(const void *xctx, long m, float *tmp), const void *xctx,
                     long M, float *Y, long ldy);
extern const tr_mm_qgemm tr_mm_qgemm_avx512;       /* x86-64 only */
extern const tr_mm_qgemm tr_mm_qgemm_avx2;         /* x86-64 only */
extern const tr_mm_qgemm tr_mm_qgemm_avx_vnni;     /* x86-64 only, needs AVX-VNNI */
extern const tr_mm_qgemm tr_mm_qgemm_neon_dotprod; /* aarch64 only, needs SDOT */

extern const tr_mm_isa tr_mm_isa_scalar;
extern const tr_mm_isa tr_mm_isa_avx2;         /* x86-64 only */
extern const tr_mm_isa tr_mm_isa_avx512;       /* x86-64 only */
extern const tr_mm_isa tr_mm_isa_neon;         /* aarch64 only */
extern const tr_mm_isa tr_mm_isa_neon_dotprod; /* aarch64 only, needs SDOT */

/* matmul_neon.c pieces the dotprod table shares (aarch64 only). */
#define TR_MM_NEON_MR 8
#define TR_MM_NEON_NR 12
void tr_mm_kernel_neon(const float *xp, const float *wp, int kc, float *y, long ldy, int mr, int nr,
                       const float *bias, int accumulate);
int tr_mm_rows_neon(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0, long n1,
                    const float *bias, float *scratch);
void tr_mm_deq_neon(int type, const void *src, float *dst, int64_t n);
float tr_mm_dot_f32_neon(const float *w, const float *x, long K);

#endif
