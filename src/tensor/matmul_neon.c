/* Advanced SIMD kernel table (AArch64 baseline, every 64-bit ARM CPU).
 * GEMM: an 8×12 register tile (24 accumulators, 3 weight and 2 activation
 * vectors of the 32 registers), fused multiply-add by lane. Matrix-vector:
 * F32/F16/Q8_0 rows are dotted in place; other types are dequantized into
 * L1 scratch first. The dotprod table (matmul_neon_dotprod.c) reuses the
 * GEMM kernel and the dequantizer from here. */
#include <arm_neon.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"

#define MR TR_MM_NEON_MR
#define NR TR_MM_NEON_NR

void tr_mm_kernel_neon(const float *xp, const float *wp, int kc, float *y, long ldy, int mr, int nr,
                       const float *bias, int accumulate) {
    float32x4_t c[MR][3];
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = c[i][2] = vdupq_n_f32(0.0f);
    for (int k = 0; k < kc; k++) {
        float32x4_t w0 = vld1q_f32(wp), w1 = vld1q_f32(wp + 4), w2 = vld1q_f32(wp + 8);
        float32x4_t x0 = vld1q_f32(xp), x1 = vld1q_f32(xp + 4);
#define ROW(i, xv, lane)                                                                           \
    c[i][0] = vfmaq_laneq_f32(c[i][0], w0, xv, lane);                                              \
    c[i][1] = vfmaq_laneq_f32(c[i][1], w1, xv, lane);                                              \
    c[i][2] = vfmaq_laneq_f32(c[i][2], w2, xv, lane);
        ROW(0, x0, 0)
        ROW(1, x0, 1)
        ROW(2, x0, 2)
        ROW(3, x0, 3)
        ROW(4, x1, 0)
        ROW(5, x1, 1)
        ROW(6, x1, 2)
        ROW(7, x1, 3)
#undef ROW
        xp += MR;
        wp += NR;
    }
    for (int i = 0; i < mr; i++) {
        float *yi = y + i * ldy;
        if (nr == NR) {
            for (int v = 0; v < 3; v++) {
                float32x4_t base = accumulate ? vld1q_f32(yi + 4 * v)
                                   : bias     ? vld1q_f32(bias + 4 * v)
                                              : vdupq_n_f32(0.0f);
                vst1q_f32(yi + 4 * v, vaddq_f32(base, c[i][v]));
            }
        } else {
            float tile[NR];
            for (int v = 0; v < 3; v++) vst1q_f32(tile + 4 * v, c[i][v]);
            for (int j = 0; j < nr; j++) {
                float base = accumulate ? yi[j] : bias ? bias[j] : 0.0f;
                yi[j] = base + tile[j];
            }
        }
    }
}

static inline float32x4_t load_f16x4(const uint8_t *p) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
}

float tr_mm_dot_f32_neon(const float *w, const float *x, long K) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    for (; k + 16 <= K; k += 16) {
        a0 = vfmaq_f32(a0, vld1q_f32(w + k), vld1q_f32(x + k));
        a1 = vfmaq_f32(a1, vld1q_f32(w + k + 4), vld1q_f32(x + k + 4));
        a2 = vfmaq_f32(a2, vld1q_f32(w + k + 8), vld1q_f32(x + k + 8));
        a3 = vfmaq_f32(a3, vld1q_f32(w + k + 12), vld1q_f32(x + k + 12));
    }
    float tail = 0.0f;
    for (; k < K; k++) tail += w[k] * x[k];
    return vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))) + tail;
}

static float dot_f16(const uint8_t *w, const float *x, long K) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    for (; k + 16 <= K; k += 16) {
        a0 = vfmaq_f32(a0, load_f16x4(w + 2 * k), vld1q_f32(x + k));
        a1 = vfmaq_f32(a1, load_f16x4(w + 2 * k + 8), vld1q_f32(x + k + 4));
        a2 = vfmaq_f32(a2, load_f16x4(w + 2 * k + 16), vld1q_f32(x + k + 8));
        a3 = vfmaq_f32(a3, load_f16x4(w + 2 * k + 24), vld1q_f32(x + k + 12));
    }
    float tail = 0.0f;
    for (; k < K; k++) tail += tr_f16_to_f32((uint16_t)(w[2 * k] | (w[2 * k + 1] << 8))) * x[k];
    return vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))) + tail;
}

/* Q8_0 against float x: per block d * <q, x>, codes widened to float. */
static float dot_q8_0(const uint8_t *w, const float *x, long K) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 32; b++) {
        const uint8_t *p = w + b * 34;
        const float *xb = x + b * 32;
        float32x4_t t0 = vdupq_n_f32(0.0f), t1 = t0;
        for (int j = 0; j < 2; j++) {
            int8x16_t q = vld1q_s8((const int8_t *)(p + 2 + 16 * j));
            int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
            const float *xj = xb + 16 * j;
            t0 = vfmaq_f32(t0, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(xj));
            t1 = vfmaq_f32(t1, vcvtq_f32_s32(vmovl_high_s16(lo)), vld1q_f32(xj + 4));
            t0 = vfmaq_f32(t0, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(xj + 8));
            t1 = vfmaq_f32(t1, vcvtq_f32_s32(vmovl_high_s16(hi)), vld1q_f32(xj + 12));
        }
        float d = tr_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
        acc = vfmaq_n_f32(acc, vaddq_f32(t0, t1), d);
    }
    return vaddvq_f32(acc);
}

void tr_mm_deq_neon(int type, const void *src, float *dst, int64_t n) {
    if (!tr_dequantize_row_neon(type, src, dst, n)) tr_dequantize_row_ref(type, src, dst, n);
}

int tr_mm_rows_neon(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0, long n1,
                    const float *bias, float *scratch) {
    long K = (long)w->K;
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float s;
        switch (w->type) {
        case TR_F32:
            s = tr_mm_dot_f32_neon((const float *)row, x, K);
            break;
        case TR_F16:
            s = dot_f16(row, x, K);
            break;
        case TR_Q8_0:
            s = dot_q8_0(row, x, K);
            break;
        default: /* dequantize into L1 scratch, then an F32 dot */
            tr_mm_deq_neon(w->type, row, scratch, K);
            s = tr_mm_dot_f32_neon(scratch, x, K);
            break;
        }
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

const tr_mm_isa tr_mm_isa_neon = {.name = "neon",
                                  .mr = MR,
                                  .nr = NR,
                                  .nc = 24 * NR,
                                  .kernel = tr_mm_kernel_neon,
                                  .rows = tr_mm_rows_neon,
                                  .deq = tr_mm_deq_neon};
