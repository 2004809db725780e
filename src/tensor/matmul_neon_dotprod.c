/* Advanced SIMD + dot-product kernel table (compiled with
 * -march=armv8.2-a+dotprod; used only when tensor/cpu.h reports SDOT).
 * Matrix-vector products of Q8_0, Q4_K and Q6_K rows quantize x to 8 bits
 * per 32-element group (scale = group max / 127, as the AVX-512 path does)
 * and sum code products in 32-bit integers with SDOT; each group's integer
 * sum is then scaled once in float. The GEMM kernel, the dequantizer and the
 * other row types are the plain NEON ones (matmul_neon.c). */
#include <arm_neon.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"

static inline float half_at(const uint8_t *p) {
    return tr_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

/* xq[k] = round(x[k] / xs[g]) with xs[g] = max |x| of group g / 127. */
static void quantize_x(const float *x, long K, int8_t *xq, float *xs) {
    for (long g = 0; g < K / 32; g++) {
        const float *v = x + 32 * g;
        float32x4_t m = vabsq_f32(vld1q_f32(v));
        for (int j = 4; j < 32; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(v + j)));
        float amax = vmaxvq_f32(m);
        /* 1/d would overflow for a group max below ~4e-37: such groups are
         * scaled up by 2^64 first (exact), their scale stays amax/127 */
        float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        float d = amax * pre / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        xs[g] = amax / 127.0f;
        for (int h = 0; h < 2; h++) {
            int16x8_t s[2];
            for (int j = 0; j < 2; j++) {
                const float *u = v + 16 * h + 8 * j;
                int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(vmulq_n_f32(vld1q_f32(u), pre), id));
                int32x4_t b = vcvtnq_s32_f32(vmulq_n_f32(vmulq_n_f32(vld1q_f32(u + 4), pre), id));
                s[j] = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
            }
            vst1q_s8(xq + 32 * g + 16 * h, vcombine_s8(vqmovn_s16(s[0]), vqmovn_s16(s[1])));
        }
    }
}

static float dot_q8_0(const uint8_t *w, const int8_t *xq, const float *xs, long K) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 32; b++) {
        const uint8_t *p = w + b * 34;
        const int8_t *xb = xq + 32 * b;
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8((const int8_t *)(p + 2)), vld1q_s8(xb));
        s = vdotq_s32(s, vld1q_s8((const int8_t *)(p + 18)), vld1q_s8(xb + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), half_at(p) * xs[b]);
    }
    return vaddvq_f32(acc);
}

/* 32 unsigned 4-bit codes (two vectors) · 32 codes of x. */
static inline int32x4_t dot32(int8x16_t q0, int8x16_t q1, const int8_t *x) {
    int32x4_t s = vdotq_s32(vdupq_n_s32(0), q0, vld1q_s8(x));
    return vdotq_s32(s, q1, vld1q_s8(x + 16));
}

/* Q4_K: sum_j d*sc_j*xs_j * <q_j, xq_j> - dmin * sum_j mn_j * sum(x_j). */
static float dot_q4_k(const uint8_t *w, const int8_t *xq, const float *xs, const float *xsum,
                      long K) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    float32x4_t acc = vdupq_n_f32(0.0f);
    float mins = 0.0f;
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * 144, *qs = p + 16;
        const int8_t *xb = xq + 256 * b;
        const float *xsb = xs + 8 * b, *sumb = xsum + 8 * b;
        float d = half_at(p), dmin = half_at(p + 2), msum = 0.0f;
        for (int c = 0; c < 4; c++) {
            int sc0, mn0, sc1, mn1;
            tr_kq_scale_min(2 * c, p + 4, &sc0, &mn0);
            tr_kq_scale_min(2 * c + 1, p + 4, &sc1, &mn1);
            uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16);
            int32x4_t lo = dot32(vreinterpretq_s8_u8(vandq_u8(q0, low4)),
                                 vreinterpretq_s8_u8(vandq_u8(q1, low4)), xb + 64 * c);
            int32x4_t hi = dot32(vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)),
                                 vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), xb + 64 * c + 32);
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(lo), d * (float)sc0 * xsb[2 * c]);
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(hi), d * (float)sc1 * xsb[2 * c + 1]);
            msum += (float)mn0 * sumb[2 * c] + (float)mn1 * sumb[2 * c + 1];
        }
        mins += dmin * msum;
    }
    return vaddvq_f32(acc) - mins;
}

/* Q6_K: signed codes (code - 32) rebuilt in registers; each 32-element x
 * group spans two 16-element sub-scales. */
static float dot_q6_k(const uint8_t *w, const int8_t *xq, const float *xs, long K) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), two = vdupq_n_u8(0x03);
    const int8x16_t off = vdupq_n_s8(32);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * 210;
        float d = half_at(p + 208);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = p + 64 * h, *qh = p + 128 + 32 * h;
            const int8_t *sc = (const int8_t *)(p + 192 + 8 * h);
            const int8_t *xb = xq + 256 * b + 128 * h;
            int32x4_t s[4];
            for (int l0 = 0; l0 < 32; l0 += 16) {
                uint8x16_t A = vld1q_u8(ql + l0), B = vld1q_u8(ql + 32 + l0);
                uint8x16_t H = vld1q_u8(qh + l0);
                uint8x16_t q[4] = {
                    vorrq_u8(vandq_u8(A, low4), vshlq_n_u8(vandq_u8(H, two), 4)),
                    vorrq_u8(vandq_u8(B, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 2), two), 4)),
                    vorrq_u8(vshrq_n_u8(A, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 4), two), 4)),
                    vorrq_u8(vshrq_n_u8(B, 4), vshlq_n_u8(vshrq_n_u8(H, 6), 4)),
                };
                for (int k = 0; k < 4; k++) {
                    int8x16_t c = vsubq_s8(vreinterpretq_s8_u8(q[k]), off);
                    int32x4_t t = vdotq_s32(vdupq_n_s32(0), c, vld1q_s8(xb + 32 * k + l0));
                    int scale = sc[2 * k + l0 / 16];
                    s[k] = l0 ? vmlaq_n_s32(s[k], t, scale) : vmulq_n_s32(t, scale);
                }
            }
            const float *xsh = xs + 8 * b + 4 * h;
            for (int k = 0; k < 4; k++) acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s[k]), d * xsh[k]);
        }
    }
    return vaddvq_f32(acc);
}

static int rows_dotprod(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                        long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    if (w->type != TR_Q8_0 && w->type != TR_Q4_K && w->type != TR_Q6_K)
        return tr_mm_rows_neon(w, x, xsum, y, n0, n1, bias, scratch);
    if (w->type == TR_Q4_K && !xsum) return tr_mm_rows_neon(w, x, xsum, y, n0, n1, bias, scratch);
    /* scratch (K floats) holds xq (K bytes) and xs (K/32 floats) */
    int8_t *xq = (int8_t *)scratch;
    float *xs = scratch + K / 4;
    quantize_x(x, K, xq, xs);
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float s = w->type == TR_Q8_0   ? dot_q8_0(row, xq, xs, K)
                  : w->type == TR_Q4_K ? dot_q4_k(row, xq, xs, xsum, K)
                                       : dot_q6_k(row, xq, xs, K);
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

const tr_mm_isa tr_mm_isa_neon_dotprod = {.name = "neon_dotprod",
                                          .mr = TR_MM_NEON_MR,
                                          .nr = TR_MM_NEON_NR,
                                          .nc = 24 * TR_MM_NEON_NR,
                                          .kernel = tr_mm_kernel_neon,
                                          .rows = rows_dotprod,
                                          .deq = tr_mm_deq_neon};
