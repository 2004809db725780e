/* Advanced SIMD + dot-product kernel table (compiled with
 * -march=armv8.2-a+dotprod; used only when tensor/cpu.h reports SDOT).
 * Matrix-vector products of Q8_0, Q4_K, Q5_K and Q6_K rows quantize x to 8
 * bits per 32-element group (scale = group max / 127, as the AVX-512 path
 * does) and sum code products in 32-bit integers with SDOT; each group's
 * integer sum is then scaled once in float. A few rows of x (a batched
 * decode step) take the same dots with each weight row read once for all
 * of them, every row getting the bits of its one-row result. The GEMM
 * kernel, the dequantizer and the other row types are the plain NEON ones
 * (matmul_neon.c). */
#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

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

#define AI static inline __attribute__((always_inline))

/* Q8_0 row w against m (1..4) rows of the int8 x (row i: xq + i*K, xs +
 * i*xstride): per block d * xs_b * <q, xq>. Each weight block is loaded
 * once for all rows, and a row's value does not depend on m. */
AI void dot_q8_0_rows(const uint8_t *w, const int8_t *xq, const float *xs, long xstride, long K,
                      int m, float *out) {
    float32x4_t acc[4];
    for (int i = 0; i < 4; i++) acc[i] = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 32; b++) {
        const uint8_t *p = w + b * 34;
        const int8x16_t q0 = vld1q_s8((const int8_t *)(p + 2)),
                        q1 = vld1q_s8((const int8_t *)(p + 18));
        const float d = half_at(p);
        for (int i = 0; i < m; i++) {
            const int8_t *xb = xq + i * K + 32 * b;
            int32x4_t s = vdotq_s32(vdupq_n_s32(0), q0, vld1q_s8(xb));
            s = vdotq_s32(s, q1, vld1q_s8(xb + 16));
            acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(s), d * xs[i * xstride + b]);
        }
    }
    for (int i = 0; i < m; i++) out[i] = vaddvq_f32(acc[i]);
}

/* 32 unsigned 5-bit-at-most codes (two vectors) · 32 codes of x. */
static inline int32x4_t dot32(int8x16_t q0, int8x16_t q1, const int8_t *x) {
    int32x4_t s = vdotq_s32(vdupq_n_s32(0), q0, vld1q_s8(x));
    return vdotq_s32(s, q1, vld1q_s8(x + 16));
}

/* Q4_K / Q5_K against m rows of x (row i: xq + i*K, group scales at xs +
 * i*xstride, exact group sums at xsum + i*xstride):
 *   sum_j d*sc_j*xs_j * <q_j, xq_j> - dmin * sum_j mn_j * sum(x_j).
 * Sub-block 2c holds the low nibbles of code bytes [32c, 32c + 32), 2c+1
 * the high ones; Q5_K adds bits 2c and 2c+1 of qh as the fifth bit. */
AI void dot_q45_k_rows(const uint8_t *w, const int8_t *xq, const float *xs, const float *xsum,
                       long xstride, long K, int five, int m, float *out) {
    const size_t bsz = five ? 176 : 144;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
    float32x4_t acc[4];
    float mins[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 4; i++) acc[i] = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * bsz, *qs = p + (five ? 48 : 16);
        const float d = half_at(p), dmin = half_at(p + 2);
        uint8x16_t qh0 = vdupq_n_u8(0), qh1 = qh0;
        if (five) {
            qh0 = vld1q_u8(p + 16);
            qh1 = vld1q_u8(p + 32);
        }
        float msum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int c = 0; c < 4; c++) {
            int sc0, mn0, sc1, mn1;
            tr_kq_scale_min(2 * c, p + 4, &sc0, &mn0);
            tr_kq_scale_min(2 * c + 1, p + 4, &sc1, &mn1);
            uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16);
            uint8x16_t l0 = vandq_u8(q0, low4), l1 = vandq_u8(q1, low4);
            uint8x16_t h0 = vshrq_n_u8(q0, 4), h1 = vshrq_n_u8(q1, 4);
            if (five) {
                const int8x16_t lo_sh = vdupq_n_s8((int8_t)(-2 * c)),
                                hi_sh = vdupq_n_s8((int8_t)(-2 * c - 1));
                l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(vshlq_u8(qh0, lo_sh), one), 4));
                l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(vshlq_u8(qh1, lo_sh), one), 4));
                h0 = vorrq_u8(h0, vshlq_n_u8(vandq_u8(vshlq_u8(qh0, hi_sh), one), 4));
                h1 = vorrq_u8(h1, vshlq_n_u8(vandq_u8(vshlq_u8(qh1, hi_sh), one), 4));
            }
            for (int i = 0; i < m; i++) {
                const int8_t *xb = xq + i * K + 256 * b + 64 * c;
                const float *xsb = xs + i * xstride + 8 * b, *sumb = xsum + i * xstride + 8 * b;
                int32x4_t lo = dot32(vreinterpretq_s8_u8(l0), vreinterpretq_s8_u8(l1), xb);
                int32x4_t hi = dot32(vreinterpretq_s8_u8(h0), vreinterpretq_s8_u8(h1), xb + 32);
                acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(lo), d * (float)sc0 * xsb[2 * c]);
                acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(hi), d * (float)sc1 * xsb[2 * c + 1]);
                msum[i] += (float)mn0 * sumb[2 * c] + (float)mn1 * sumb[2 * c + 1];
            }
        }
        for (int i = 0; i < m; i++) mins[i] += dmin * msum[i];
    }
    for (int i = 0; i < m; i++) out[i] = vaddvq_f32(acc[i]) - mins[i];
}

/* Q6_K against m rows of x (scales at xs + i*xstride): signed codes (code
 * - 32) rebuilt in registers once for all rows; each 32-element x group
 * spans two 16-element sub-scales. */
AI void dot_q6_k_rows(const uint8_t *w, const int8_t *xq, const float *xs, long xstride, long K,
                      int m, float *out) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), two = vdupq_n_u8(0x03);
    const int8x16_t off = vdupq_n_s8(32);
    float32x4_t acc[4];
    for (int i = 0; i < 4; i++) acc[i] = vdupq_n_f32(0.0f);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * 210;
        const float d = half_at(p + 208);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = p + 64 * h, *qh = p + 128 + 32 * h;
            const int8_t *sc = (const int8_t *)(p + 192 + 8 * h);
            int32x4_t s[4][4];
            for (int l0 = 0; l0 < 32; l0 += 16) {
                uint8x16_t A = vld1q_u8(ql + l0), B = vld1q_u8(ql + 32 + l0);
                uint8x16_t H = vld1q_u8(qh + l0);
                const uint8x16_t q[4] = {
                    vorrq_u8(vandq_u8(A, low4), vshlq_n_u8(vandq_u8(H, two), 4)),
                    vorrq_u8(vandq_u8(B, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 2), two), 4)),
                    vorrq_u8(vshrq_n_u8(A, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 4), two), 4)),
                    vorrq_u8(vshrq_n_u8(B, 4), vshlq_n_u8(vshrq_n_u8(H, 6), 4)),
                };
                for (int k = 0; k < 4; k++) {
                    const int8x16_t c = vsubq_s8(vreinterpretq_s8_u8(q[k]), off);
                    const int scale = sc[2 * k + l0 / 16];
                    for (int i = 0; i < m; i++) {
                        const int8_t *xb = xq + i * K + 256 * b + 128 * h;
                        int32x4_t t = vdotq_s32(vdupq_n_s32(0), c, vld1q_s8(xb + 32 * k + l0));
                        s[i][k] = l0 ? vmlaq_n_s32(s[i][k], t, scale) : vmulq_n_s32(t, scale);
                    }
                }
            }
            for (int i = 0; i < m; i++) {
                const float *xsh = xs + i * xstride + 8 * b + 4 * h;
                for (int k = 0; k < 4; k++)
                    acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(s[i][k]), d * xsh[k]);
            }
        }
    }
    for (int i = 0; i < m; i++) out[i] = vaddvq_f32(acc[i]);
}

/* One weight row of an integer-dot type against m rows of x laid out by
 * tr_mm_quant_x_rows_dotprod (group scales, then for the K-quants with mins
 * the group sums, xstride floats per row); m a constant at each call site. */
AI void dot_rows_m(int type, const uint8_t *row, const int8_t *xq, const float *xs, long xstride,
                   long K, int m, float *out) {
    switch (type) {
    case TR_Q8_0:
        dot_q8_0_rows(row, xq, xs, xstride, K, m, out);
        break;
    case TR_Q4_K:
        dot_q45_k_rows(row, xq, xs, xs + K / 32, xstride, K, 0, m, out);
        break;
    case TR_Q5_K:
        dot_q45_k_rows(row, xq, xs, xs + K / 32, xstride, K, 1, m, out);
        break;
    default: /* TR_Q6_K */
        dot_q6_k_rows(row, xq, xs, xstride, K, m, out);
        break;
    }
}

static bool int8_type(int type) {
    return type == TR_Q8_0 || type == TR_Q4_K || type == TR_Q5_K || type == TR_Q6_K;
}

/* Exact sums of x per 32-element group, in order, as tr_matmul sums them
 * for the one-row path. */
static void group_sums(const float *x, long K, float *sums) {
    for (long g = 0; g < K / 32; g++) {
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += x[g * 32 + j];
        sums[g] = s;
    }
}

static int rows_dotprod(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                        long n1, const float *bias, float *scratch) {
    const long K = (long)w->K;
    if (!int8_type(w->type)) return tr_mm_rows_neon(w, x, xsum, y, n0, n1, bias, scratch);
    /* scratch (K floats) holds xq (K bytes), xs (K/32 floats) and, for
     * Q4_K / Q5_K, the group sums (K/32 floats) */
    int8_t *xq = (int8_t *)scratch;
    float *xs = scratch + K / 4;
    quantize_x(x, K, xq, xs);
    if (w->type == TR_Q4_K || w->type == TR_Q5_K) {
        if (xsum)
            memcpy(xs + K / 32, xsum, sizeof(float) * (size_t)(K / 32));
        else
            group_sums(x, K, xs + K / 32);
    }
    for (long n = n0; n < n1; n++) {
        float s;
        dot_rows_m(w->type, w->data + (size_t)n * w->stride, xq, xs, 0, K, 1, &s);
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

bool tr_mm_quant_x_rows_dotprod(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x) {
    if (!int8_type(type)) return false;
    for (long m = 0; m < M; m++) { /* row m's scales at s + m * (K / 16) */
        float *xs = x->s + m * (K / 16);
        quantize_x(X + m * ldx, K, x->q + m * K, xs);
        if (type == TR_Q4_K || type == TR_Q5_K) group_sums(X + m * ldx, K, xs + K / 32);
    }
    return true;
}

void tr_mm_rows_int8_multi_dotprod(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy,
                                   long n0, long n1, const float *bias) {
    const long K = (long)w->K;
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float out[4];
        if (m == 2)
            dot_rows_m(w->type, row, x->q, x->s, K / 16, K, 2, out);
        else if (m == 3)
            dot_rows_m(w->type, row, x->q, x->s, K / 16, K, 3, out);
        else
            dot_rows_m(w->type, row, x->q, x->s, K / 16, K, 4, out);
        const float bn = bias ? bias[n] : 0.0f;
        for (int i = 0; i < m; i++) Y[i * ldy + n] = out[i] + bn;
    }
}

const tr_mm_isa tr_mm_isa_neon_dotprod = {.name = "neon_dotprod",
                                          .mr = TR_MM_NEON_MR,
                                          .nr = TR_MM_NEON_NR,
                                          .nc = 24 * TR_MM_NEON_NR,
                                          .kernel = tr_mm_kernel_neon,
                                          .rows = rows_dotprod,
                                          .deq = tr_mm_deq_neon,
                                          .quant_x_rows = tr_mm_quant_x_rows_dotprod,
                                          .rows_int8_multi = tr_mm_rows_int8_multi_dotprod,
                                          .qgemm = &tr_mm_qgemm_neon_dotprod};
