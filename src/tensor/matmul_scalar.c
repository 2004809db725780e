/* Portable kernel table: plain C the compiler may auto-vectorize. */
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"

#define MR 4
#define NR 16

static void kernel_scalar(const float *xp, const float *wp, int kc, float *y, long ldy, int mr,
                          int nr, const float *bias, int accumulate) {
    float acc[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++) {
        const float *xk = xp + (long)k * MR, *wk = wp + (long)k * NR;
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) acc[i][j] += xk[i] * wk[j];
    }
    for (int i = 0; i < mr; i++) {
        float *yi = y + i * ldy;
        for (int j = 0; j < nr; j++) {
            float base = accumulate ? yi[j] : bias ? bias[j] : 0.0f;
            yi[j] = base + acc[i][j];
        }
    }
}

static int rows_scalar(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                       long n1, const float *bias, float *scratch) {
    return 0; /* the driver's generic dequantize-then-dot path */
}

const tr_mm_isa tr_mm_isa_scalar = {.name = "scalar",
                                    .mr = MR,
                                    .nr = NR,
                                    .nc = 16 * NR,
                                    .kernel = kernel_scalar,
                                    .rows = rows_scalar,
                                    .deq = tr_dequantize_row_ref};
