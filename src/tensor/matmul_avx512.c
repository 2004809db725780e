/* AVX-512 kernel table (compiled with -mavx512f/bw/vl/dq/vnni). */
#include <immintrin.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"

#define MR 12
#define NR 32

/* 12 rows × 32 columns: 24 zmm accumulators, 2 weight vectors and one
 * broadcast per k step. */
static void kernel_avx512(const float *xp, const float *wp, int kc, float *y, long ldy, int mr,
                          int nr, const float *bias, int accumulate) {
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 w0 = _mm512_load_ps(wp), w1 = _mm512_load_ps(wp + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512 xb = _mm512_set1_ps(xp[i]);
            c[i][0] = _mm512_fmadd_ps(xb, w0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(xb, w1, c[i][1]);
        }
        xp += MR;
        wp += NR;
    }
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    if (!accumulate && bias) {
        b0 = _mm512_maskz_loadu_ps(m0, bias);
        b1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    }
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= mr) break;
        float *yi = y + i * ldy;
        __m512 y0 = b0, y1 = b1;
        if (accumulate) {
            y0 = _mm512_maskz_loadu_ps(m0, yi);
            y1 = _mm512_maskz_loadu_ps(m1, yi + 16);
        }
        _mm512_mask_storeu_ps(yi, m0, _mm512_add_ps(y0, c[i][0]));
        _mm512_mask_storeu_ps(yi + 16, m1, _mm512_add_ps(y1, c[i][1]));
    }
}

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline __mmask16 tail_mask(long n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

static float dot_f32(const float *w, const float *x, long K) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    for (; k + 64 <= K; k += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k), _mm512_loadu_ps(x + k), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 16), _mm512_loadu_ps(x + k + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 32), _mm512_loadu_ps(x + k + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 48), _mm512_loadu_ps(x + k + 48), a3);
    }
    for (; k < K; k += 16) {
        __mmask16 m = tail_mask(K - k);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + k), _mm512_maskz_loadu_ps(m, x + k), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

static inline __m512 load_f16(const uint8_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static float dot_f16(const uint8_t *w, const float *x, long K) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    for (; k + 64 <= K; k += 64) {
        a0 = _mm512_fmadd_ps(load_f16(w + 2 * k), _mm512_loadu_ps(x + k), a0);
        a1 = _mm512_fmadd_ps(load_f16(w + 2 * k + 32), _mm512_loadu_ps(x + k + 16), a1);
        a2 = _mm512_fmadd_ps(load_f16(w + 2 * k + 64), _mm512_loadu_ps(x + k + 32), a2);
        a3 = _mm512_fmadd_ps(load_f16(w + 2 * k + 96), _mm512_loadu_ps(x + k + 48), a3);
    }
    for (; k < K; k += 16) {
        __mmask16 m = tail_mask(K - k);
        __m512 wv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + 2 * k));
        a0 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x + k), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* Quantize x to int8 per 32-element group (scale xs[g] = amax/127) so the
 * Q4_K dot can run on VNNI integer products. The extra rounding (~0.4% of
 * each x, random) is far below Q4_K's own weight error. */
/* Quantize x to int8 per 32-element group (scale xs[g] = amax/127) so the
 * K-quant dots can run on VNNI integer products. The extra rounding (~0.4%
 * of each x, random) is far below the weights' own quantization error.
 * For the K-quants the groups are stored in the order their dot consumes
 * them: within every 128 elements, groups 0, 2, 1, 3 (see dot_q45_k). */
static void quantize_x_q8(const float *x, long K, int8_t *xq, float *xs, bool kquant_order) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    static const int slot[4] = {0, 2, 1, 3};
    for (long g = 0; g < K / 32; g++) {
        __m512 a = _mm512_loadu_ps(x + 32 * g), b = _mm512_loadu_ps(x + 32 * g + 16);
        __m512 m = _mm512_max_ps(_mm512_andnot_ps(sign, a), _mm512_andnot_ps(sign, b));
        float amax = _mm512_reduce_max_ps(m);
        float d = amax / 127.0f;
        if (amax < 0x1p-100f) { /* 127/amax would overflow below ~4e-37: scale up (exact) */
            a = _mm512_mul_ps(a, _mm512_set1_ps(0x1p64f));
            b = _mm512_mul_ps(b, _mm512_set1_ps(0x1p64f));
            amax *= 0x1p64f;
        }
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(id)));
        __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, _mm512_set1_ps(id)));
        int8_t *dst = kquant_order ? xq + 128 * (g / 4) + 32 * slot[g % 4] : xq + 32 * g;
        _mm_storeu_si128((__m128i *)dst, _mm512_cvtsepi32_epi8(qa));
        _mm_storeu_si128((__m128i *)(dst + 16), _mm512_cvtsepi32_epi8(qb));
        xs[g] = d;
    }
}

/* Q4_K / Q5_K: sum_j d*sc_j*xs_j * <q_j, xq_j> - dmin*mn_j * sum(x_j), the
 * exact x sums precomputed per 32-element group. Two 32-byte code chunks
 * (sub-blocks 2c..2c+3) are handled per step: one 64-byte load, low nibbles
 * = sub-blocks 2c | 2c+2, high = 2c+1 | 2c+3, each dotted (VNNI) with xq,
 * which quantize_x_q8 stored in that order.
 * NR_ rows (1..4) run together: they share the x loads, and their sums
 * leave through one transposed reduction instead of one each, which at
 * whisper sizes (4-5 blocks per row) costs as much as the blocks.
 * For Q4_K the high nibbles are used in place (q & 0xF0 = 16 * code, still
 * a valid unsigned VNNI byte); the caller folded the 1/16 into xsx. Q5_K
 * needs the fifth bit above them, so it shifts. xsx per block holds
 * [xs_j (8) | -xsum_j (8)], so the mins are simply added. */
static inline __attribute__((always_inline)) void dot_q45_k_rows(const uint8_t *w, size_t stride,
                                                                 const int8_t *xq, const float *xsx,
                                                                 long K, int five, int NR_,
                                                                 float *out) {
    const size_t bsz = five ? 176 : 144;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
    const __m512i idx_sb = _mm512_set_epi32(7, 6, 3, 2, 7, 6, 3, 2, 5, 4, 1, 0, 5, 4, 1, 0);
    const __m512i idx_dm = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i sh_w = _mm_set_epi32(4, 0, 0, 0);
    const __m128i mask_w = _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m128i top_w = _mm_set_epi32(0x30303030, 0, 0x30303030, 0);
    /* Q5_K fifth bits: bit 2c (words 0-15) and 2c+2 (words 16-31) of qh[l] */
    const __m512i sh_lo[2] = {_mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1),
                              _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1)};
    for (long b = 0; b < K / 256; b++) {
        const int8_t *xb = xq + b * 256;
        const __m512 xsb = _mm512_loadu_ps(xsx + b * 16);
        __m512i xv[4];
        for (int i = 0; i < 4; i++) xv[i] = _mm512_loadu_si512((const void *)(xb + 64 * i));
        if (NR_ == 4) {
            /* four interleaved row streams defeat the hardware prefetcher
             * (measured): fetch the group after next, in step. The rows are
             * contiguous; prefetches past the end are harmless, hence the
             * integer arithmetic (no out-of-object pointer). */
            const char *pf = (const char *)((uintptr_t)w + 8 * stride + (size_t)b * 4 * bsz);
            for (size_t o = 0; o < 4 * bsz; o += 64) _mm_prefetch(pf + o, _MM_HINT_T0);
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR_; r++) {
            const uint8_t *p = w + r * stride + b * bsz, *qs = p + (five ? 48 : 16);
            /* The first 16 bytes are d, dmin and scales[12]: as 32-bit words
             * [dm, a, b, c]. The 6-bit scales and mins of the 8 sub-blocks
             * (see tr_kq_scale_min for the per-byte form) are, 4 bytes per word,
             *   sc0-3 = a & 63            sc4-7 = (c & 15) | ((a >> 2) & 0x30)
             *   mn0-3 = b & 63            mn4-7 = (c >> 4 & 15) | ((b >> 2) & 0x30)
             * computed here on all four words at once. */
            __m128i v4 = _mm_loadu_si128((const __m128i *)p);
            __m128i pw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(3, 2, 3, 1)); /* a c b c */
            __m128i qw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(2, 2, 1, 1)); /* a a b b */
            __m128i lo6 = _mm_and_si128(_mm_srlv_epi32(pw, sh_w), mask_w);
            __m128i hi2 = _mm_and_si128(_mm_srli_epi32(qw, 2), top_w);
            __m128i scmn = _mm_or_si128(lo6, hi2); /* bytes: sc0..7, mn0..7 */
            /* one vector [sc_j * d * xs_j (8) | -mn_j * dmin * xsum_j (8)] */
            __m128 dmf = _mm_cvtph_ps(v4); /* lanes 0, 1: d, dmin */
            __m512 dm16 = _mm512_permutexvar_ps(idx_dm, _mm512_castps128_ps512(dmf));
            __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(scmn));
            __m512 s16 = _mm512_mul_ps(_mm512_mul_ps(v, dm16), xsb);
            acc[r][0] = _mm512_mask_add_ps(acc[r][0], 0xFF00, acc[r][0], s16);
            __m512i qh = _mm512_setzero_si512();
            if (five) qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 16)));
            __m512i d[4];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m512i q = _mm512_loadu_si512((const void *)(qs + 64 * h));
                __m512i lo = _mm512_and_si512(q, low4);
                __m512i hi;
                if (five) {
                    hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
                    __m512i b0 = _mm512_and_si512(_mm512_srlv_epi16(qh, sh_lo[h]), one);
                    __m512i b1 = _mm512_and_si512(
                        _mm512_srlv_epi16(qh, _mm512_add_epi16(sh_lo[h], _mm512_set1_epi16(1))),
                        one);
                    lo = _mm512_or_si512(lo, _mm512_slli_epi16(b0, 4));
                    hi = _mm512_or_si512(hi, _mm512_slli_epi16(b1, 4));
                } else {
                    hi = _mm512_andnot_si512(low4, q);
                }
                d[2 * h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xv[2 * h]);
                d[2 * h + 1] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, xv[2 * h + 1]);
            }
            /* Sum each sub-block's 8 lanes down to 2 in integers, so one
             * convert and one FMA apply all 8 scales: per 128-bit chunk k,
             * [d0_k, d1_k, d2_k, d3_k] = sub-blocks (0 1 4 5) for k < 2,
             * (2 3 6 7) for k >= 2. */
            __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]),
                                          _mm512_unpackhi_epi32(d[0], d[1]));
            __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]),
                                          _mm512_unpackhi_epi32(d[2], d[3]));
            __m512i u =
                _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
            acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(u), _mm512_permutexvar_ps(idx_sb, s16),
                                        acc[r][1]);
        }
    }
    /* 4 row vectors -> [row0 (4) | row1 (4) | row2 (4) | row3 (4)] -> sums */
    __m512 v0 = _mm512_add_ps(acc[0][0], acc[0][1]), v1 = _mm512_add_ps(acc[1][0], acc[1][1]);
    __m512 v2 = _mm512_add_ps(acc[2][0], acc[2][1]), v3 = _mm512_add_ps(acc[3][0], acc[3][1]);
    __m512 s01 =
        _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xEE));
    __m512 s23 =
        _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x44), _mm512_shuffle_f32x4(v2, v3, 0xEE));
    __m512 t =
        _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xDD));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0xB1));
    float tmp[16];
    _mm512_storeu_ps(tmp, t);
    for (int r = 0; r < NR_; r++) out[r] = tmp[4 * r];
}

static void dot_q45_k_4(const uint8_t *w, size_t stride, const int8_t *xq, const float *xsx, long K,
                        int five, float *out) {
    if (five)
        dot_q45_k_rows(w, stride, xq, xsx, K, 1, 4, out);
    else
        dot_q45_k_rows(w, stride, xq, xsx, K, 0, 4, out);
}

static void dot_q45_k_1(const uint8_t *w, const int8_t *xq, const float *xsx, long K, int five,
                        float *out) {
    if (five)
        dot_q45_k_rows(w, 0, xq, xsx, K, 1, 1, out);
    else
        dot_q45_k_rows(w, 0, xq, xsx, K, 0, 1, out);
}

/* Q6_K fused: codes rebuilt in registers (as in the dequantizer) and dotted
 * with x per 16-element group, then scaled by d*sc once per group. */
static float dot_q6_k(const uint8_t *w, const float *x, long K) {
    __m512 acc[8]; /* independent chains, one per code vector half */
    for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    const __m256i bias = _mm256_set1_epi8(32);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * 210;
        float d = half_at(p + 208);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = p + 64 * h, *qhp = p + 128 + 32 * h;
            const int8_t *sc = (const int8_t *)(p + 192 + 8 * h);
            const float *xh = x + b * 256 + 128 * h;
            __m256i A = _mm256_loadu_si256((const __m256i *)ql);
            __m256i B = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i H = _mm256_loadu_si256((const __m256i *)qhp);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(A, low4),
                                   _mm256_and_si256(_mm256_slli_epi16(H, 4), top));
            q[1] = _mm256_or_si256(_mm256_and_si256(B, low4),
                                   _mm256_and_si256(_mm256_slli_epi16(H, 2), top));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), low4),
                                   _mm256_and_si256(H, top));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), low4),
                                   _mm256_and_si256(_mm256_srli_epi16(H, 2), top));
            for (int k = 0; k < 4; k++) {
                __m256i sq = _mm256_sub_epi8(q[k], bias);
                __m512 t0 = _mm512_mul_ps(
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(sq))),
                    _mm512_loadu_ps(xh + 32 * k));
                __m512 t1 = _mm512_mul_ps(
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(sq, 1))),
                    _mm512_loadu_ps(xh + 32 * k + 16));
                acc[2 * k] = _mm512_fmadd_ps(t0, _mm512_set1_ps(d * (float)sc[2 * k]), acc[2 * k]);
                acc[2 * k + 1] =
                    _mm512_fmadd_ps(t1, _mm512_set1_ps(d * (float)sc[2 * k + 1]), acc[2 * k + 1]);
            }
        }
    }
    for (int i = 0; i < 4; i++) acc[i] = _mm512_add_ps(acc[i], acc[i + 4]);
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

static void deq_avx512(int type, const void *src, float *dst, int64_t n) {
    if (!tr_dequantize_row_avx512(type, src, dst, n)) tr_dequantize_row_ref(type, src, dst, n);
}

/* Q8_0 against the int8-quantized x: per block d_w * xs_g * <q, xq>, two
 * blocks per 64-byte VNNI dot (signs moved onto x, since VNNI multiplies
 * unsigned by signed bytes). Cheaper than widening every code to float. */
static float dot_q8_0_vnni(const uint8_t *w, const int8_t *xq, const float *xs, long K) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    long nb = K / 32, b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *p = w + b * 34;
        __m512i q =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2))),
                               _mm256_loadu_si256((const __m256i *)(p + 36)), 1);
        __m512i xv = _mm512_loadu_si512((const void *)(xq + 32 * b));
        __m512i sx = _mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(q), _mm512_setzero_si512(), xv);
        __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sx);
        uint16_t h0, h1;
        memcpy(&h0, p, 2);
        memcpy(&h1, p + 34, 2);
        __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)h0 | ((uint32_t)h1 << 16))));
        __m128 sc = _mm_mul_ps(dd, _mm_castpd_ps(_mm_load_sd((const double *)(xs + b))));
        __m512 s16 = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(sc));
        if (b & 2)
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), s16, acc1);
        else
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), s16, acc0);
    }
    float tail = 0.0f;
    for (; b < nb; b++) { /* odd last block */
        const uint8_t *p = w + b * 34;
        __m256i q = _mm256_loadu_si256((const __m256i *)(p + 2));
        __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + 32 * b));
        __m256i sx = _mm256_sign_epi8(xv, q);
        __m256i dp = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(q), sx);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(dp), _mm256_extracti128_si256(dp, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        tail += half_at(p) * xs[b] * (float)_mm_cvtsi128_si32(s4);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
}

static int rows_avx512(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                       long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    /* K-quants: scratch holds xq (K bytes), xs (K/32 floats) and per
     * 256-block [xs(8) | xsum(8)] (K/16 floats); that fits in K floats */
    int8_t *xq = (int8_t *)scratch;
    float *xs = scratch + (K + 3) / 4, *xsx = xs + K / 32;
    if (w->type == TR_Q8_0) quantize_x_q8(x, K, xq, xs, false);
    if (w->type == TR_Q4_K || w->type == TR_Q5_K) {
        quantize_x_q8(x, K, xq, xs, true);
        /* Q4_K dots its high nibbles unshifted (16 * code): odd sub-blocks
         * get 1/16 here (exact) */
        float odd = w->type == TR_Q4_K ? 1.0f / 16.0f : 1.0f;
        for (long b = 0; b < K / 256; b++)
            for (int j = 0; j < 8; j++) {
                xsx[16 * b + j] = xs[8 * b + j] * (j & 1 ? odd : 1.0f);
                xsx[16 * b + 8 + j] = -xsum[8 * b + j];
            }
        int five = w->type == TR_Q5_K;
        long n = n0;
        for (; n + 4 <= n1; n += 4) {
            float s[4];
            dot_q45_k_4(w->data + (size_t)n * w->stride, w->stride, xq, xsx, K, five, s);
            for (int r = 0; r < 4; r++) y[n + r - n0] = s[r] + (bias ? bias[n + r] : 0.0f);
        }
        for (; n < n1; n++) {
            float s;
            dot_q45_k_1(w->data + (size_t)n * w->stride, xq, xsx, K, five, &s);
            y[n - n0] = s + (bias ? bias[n] : 0.0f);
        }
        return 1;
    }
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        if (n + 1 < n1) _mm_prefetch((const char *)(row + w->stride), _MM_HINT_T0);
        float s;
        switch (w->type) {
        case TR_F32:
            s = dot_f32((const float *)row, x, K);
            break;
        case TR_F16:
            s = dot_f16(row, x, K);
            break;
        case TR_Q8_0:
            s = dot_q8_0_vnni(row, xq, xs, K);
            break;
        case TR_Q6_K:
            s = dot_q6_k(row, x, K);
            break;
        default: /* other types: dequantize into L1 scratch, then dot */
            deq_avx512(w->type, row, scratch, K);
            s = dot_f32(scratch, x, K);
            break;
        }
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

/* Up to 4 rows of X against one float weight row, sharing each W load. */
static void dot4_f32(const float *w, const float *x, long ldx, int m, long K, float *out) {
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    __m512 b[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    long k = 0;
    for (; k + 32 <= K; k += 32) {
        __m512 w0 = _mm512_loadu_ps(w + k), w1 = _mm512_loadu_ps(w + k + 16);
        for (int i = 0; i < 4; i++) {
            if (i >= m) break;
            a[i] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + i * ldx + k), a[i]);
            b[i] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i * ldx + k + 16), b[i]);
        }
    }
    for (; k < K; k += 16) {
        __mmask16 msk = tail_mask(K - k);
        __m512 w0 = _mm512_maskz_loadu_ps(msk, w + k);
        for (int i = 0; i < m; i++)
            a[i] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(msk, x + i * ldx + k), a[i]);
    }
    for (int i = 0; i < m; i++) out[i] = _mm512_reduce_add_ps(_mm512_add_ps(a[i], b[i]));
}

/* Small M: stream each weight row once (dequantized into L1 scratch) and
 * dot it with every row of X. */
static void rows_multi_avx512(const tr_mm_w *w, const float *X, long M, long ldx, float *Y,
                              long ldy, long n0, long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        const float *v = (const float *)row;
        if (w->type != TR_F32) {
            deq_avx512(w->type, row, scratch, K);
            v = scratch;
        }
        float bn = bias ? bias[n] : 0.0f;
        for (long m = 0; m < M; m += 4) {
            float out[4];
            int mm = (int)(M - m < 4 ? M - m : 4);
            dot4_f32(v, X + m * ldx, ldx, mm, K, out);
            for (int i = 0; i < mm; i++) Y[(m + i) * ldy + n] = out[i] + bn;
        }
    }
}

/* Transposes a 16×16 tile: rows r < nr of src (pitch floats apart), k <
 * kn, into dst[k*ld + r] for k < kn and all 16 r (missing rows are 0). */
static void transpose16_avx512(const float *src, long pitch, int nr, int kn, float *dst, long ld) {
    __mmask16 km = tail_mask(kn);
    __m512 r[16], t[16], u[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < nr ? _mm512_maskz_loadu_ps(km, src + i * pitch) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* rows i..i+3; u[i+c] holds k = c mod 4 */
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        __m512 o[4] = {_mm512_shuffle_f32x4(v0, v2, 0x88), _mm512_shuffle_f32x4(v1, v3, 0x88),
                       _mm512_shuffle_f32x4(v0, v2, 0xDD), _mm512_shuffle_f32x4(v1, v3, 0xDD)};
        for (int j = 0; j < 4; j++) { /* o[j] is k = c + 4j */
            int k = c + 4 * j;
            if (k < kn) _mm512_store_ps(dst + k * ld, o[j]);
        }
    }
}

const tr_mm_isa tr_mm_isa_avx512 = {"avx512",          MR,          NR,         16 * NR,
                                    kernel_avx512,     rows_avx512, deq_avx512, rows_multi_avx512,
                                    transpose16_avx512};
