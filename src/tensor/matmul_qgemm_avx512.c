/* The AVX-512 level's integer GEMM of the K-quants (tr_mm_qgemm, driven by
 * matmul_qgemm.c): X rows quantized per 32-element group, Q4_K / Q5_K
 * panels of 32 weight rows packed as unsigned bytes, and a 6 x 32 kernel of
 * VNNI byte products (vpdpbusd: 4 code x activation products per 32-bit
 * lane). The codes are 0..15 (Q4_K) or 0..31 (Q5_K), unsigned as vpdpbusd
 * takes its first operand, so no bias correction: each group's min is one
 * more FMA against the exact float sum of its x. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"

#define MR 6
#define NR 32
#define GB TR_MM_QG_GROUP_BYTES(NR) /* one packed group: codes [8][32][4], wsc[32], wmin[32] */

/* Per 32 elements: codes round(x * 127 / amax) (even ties, as every
 * integer path of this level rounds), then xs = amax / 127 and -sum(x) in
 * order; a group whose max is below 2^-100 is scaled up by 2^64 first
 * (exact), as 127 / amax would overflow. */
static void quant_row(const float *x, long K, int8_t *q, float *sc) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        __m512 a = _mm512_loadu_ps(xg), b = _mm512_loadu_ps(xg + 16);
        float amax = _mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_andnot_ps(sign, a), _mm512_andnot_ps(sign, b)));
        const float d = amax / 127.0f;
        if (amax < 0x1p-100f) {
            a = _mm512_mul_ps(a, _mm512_set1_ps(0x1p64f));
            b = _mm512_mul_ps(b, _mm512_set1_ps(0x1p64f));
            amax *= 0x1p64f;
        }
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(id)));
        __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, _mm512_set1_ps(id)));
        _mm_storeu_si128((__m128i *)(q + 32 * g), _mm512_cvtsepi32_epi8(qa));
        _mm_storeu_si128((__m128i *)(q + 32 * g + 16), _mm512_cvtsepi32_epi8(qb));
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += xg[j];
        sc[2 * g] = d;
        sc[2 * g + 1] = -s;
    }
}

/* 16 rows of 8 dwords (r[j]: 32 bytes) to 8 vectors, out[s] lane j = dword
 * s of row j: the bytes of k 4s..4s+3 of each weight row side by side, as
 * vpdpbusd wants them. */
static inline void transpose16x8(const uint8_t *const r[16], __m512i out[8]) {
    __m512i a[8], t[8], u[8];
    for (int j = 0; j < 8; j++)
        a[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)r[j])),
                                  _mm256_loadu_si256((const __m256i *)r[j + 8]), 1);
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm512_unpacklo_epi32(a[j], a[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(a[j], a[j + 1]);
    }
    for (int h = 0; h < 8; h += 4) { /* rows 0-3 (h 0), 4-7 (h 4), per 128-bit lane */
        u[h] = _mm512_unpacklo_epi64(t[h], t[h + 2]);
        u[h + 1] = _mm512_unpackhi_epi64(t[h], t[h + 2]);
        u[h + 2] = _mm512_unpacklo_epi64(t[h + 1], t[h + 3]);
        u[h + 3] = _mm512_unpackhi_epi64(t[h + 1], t[h + 3]);
    }
    /* u[s] (rows 0-3 | 8-11) and u[s + 4] (rows 4-7 | 12-15): dwords s
     * in 128-bit lanes 0 and 2, s + 4 in lanes 1 and 3 */
    const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    for (int s = 0; s < 4; s++) {
        out[s] = _mm512_permutex2var_epi64(u[s], lo, u[s + 4]);
        out[s + 4] = _mm512_permutex2var_epi64(u[s], hi, u[s + 4]);
    }
}

/* Bits 2c (low nibbles) and 2c + 1 (high) of each byte of qh moved to bit
 * 4, for chunk c of a Q5_K block: 16-bit shifts, each kept byte's bit from
 * within the same byte. */
static inline __m512i fifth_bit(__m512i qh, int bit) {
    const __m512i b4 = _mm512_set1_epi8(0x10);
    switch (bit) {
    case 0:
        return _mm512_and_si512(_mm512_slli_epi16(qh, 4), b4);
    case 1:
        return _mm512_and_si512(_mm512_slli_epi16(qh, 3), b4);
    case 2:
        return _mm512_and_si512(_mm512_slli_epi16(qh, 2), b4);
    case 3:
        return _mm512_and_si512(_mm512_slli_epi16(qh, 1), b4);
    case 4:
        return _mm512_and_si512(qh, b4);
    case 5:
        return _mm512_and_si512(_mm512_srli_epi16(qh, 1), b4);
    case 6:
        return _mm512_and_si512(_mm512_srli_epi16(qh, 2), b4);
    default:
        return _mm512_and_si512(_mm512_srli_epi16(qh, 3), b4);
    }
}

static bool pack_w(int type, const uint8_t *src, size_t stride, int nr, long k0, int kc,
                   uint8_t *dst) {
    if (type != TR_Q4_K && type != TR_Q5_K) return false;
    const int five = type == TR_Q5_K;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (long b = k0 / 256; b < (k0 + kc) / 256; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 256) * 8 * GB; /* its 8 groups */
        const uint8_t *blk[NR];
        tr_mm_qgemm_pack_block(type, src, stride, nr, NR, b, blk, gd);
        for (int h = 0; h < NR / 16; h++) { /* 16 weight rows at a time */
            const uint8_t *r[16];
            __m512i qh[8], t[8];
            if (five) {
                for (int j = 0; j < 16; j++) r[j] = blk[16 * h + j] + 16;
                transpose16x8(r, qh);
            }
            for (int ch = 0; ch < 4; ch++) { /* 32 code bytes: groups 2ch (low), 2ch + 1 (high) */
                for (int j = 0; j < 16; j++) r[j] = blk[16 * h + j] + (five ? 48 : 16) + 32 * ch;
                transpose16x8(r, t);
                uint8_t *glo = gd + (size_t)(2 * ch) * GB + 64 * h, *ghi = glo + GB;
                for (int s = 0; s < 8; s++) {
                    __m512i lo = _mm512_and_si512(t[s], low4);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(t[s], 4), low4);
                    if (five) {
                        lo = _mm512_or_si512(lo, fifth_bit(qh[s], 2 * ch));
                        hi = _mm512_or_si512(hi, fifth_bit(qh[s], 2 * ch + 1));
                    }
                    _mm512_storeu_si512((void *)(glo + 128 * s), lo);
                    _mm512_storeu_si512((void *)(ghi + 128 * s), hi);
                }
            }
        }
    }
    return true;
}

/* MR_ rows of X against a 32-row panel: per group, 8 steps of two VNNI
 * products per row (the 4 codes of each of 32 weight rows against 4 x
 * bytes broadcast), then the group's scale and min in float (tr_mm_qgemm's
 * order). 12 integer and 12 float accumulators at MR_ = 6. */
static inline __attribute__((always_inline)) void
kernel_rows(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
            float *y, long ldy, int MR_, __mmask16 k0m, __mmask16 k1m, const float *bias,
            int accumulate) {
    __m512 f[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR_; i++) {
        if (accumulate) {
            f[i][0] = _mm512_maskz_loadu_ps(k0m, y + i * ldy);
            f[i][1] = _mm512_maskz_loadu_ps(k1m, y + i * ldy + 16);
        } else if (bias) {
            f[i][0] = _mm512_maskz_loadu_ps(k0m, bias);
            f[i][1] = _mm512_maskz_loadu_ps(k1m, bias + 16);
        } else {
            f[i][0] = f[i][1] = _mm512_setzero_ps();
        }
    }
    for (int g = 0; g < ng; g++) {
        const uint8_t *gp = wp + (size_t)g * GB;
        __m512i s[MR][2];
#pragma GCC unroll 6
        for (int i = 0; i < MR_; i++) s[i][0] = s[i][1] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) {
            const __m512i w0 = _mm512_load_si512((const void *)(gp + 128 * t));
            const __m512i w1 = _mm512_load_si512((const void *)(gp + 128 * t + 64));
#pragma GCC unroll 6
            for (int i = 0; i < MR_; i++) {
                int32_t v;
                memcpy(&v, xq + i * ldq + 32 * g + 4 * t, 4);
                const __m512i xb = _mm512_set1_epi32(v);
                s[i][0] = _mm512_dpbusd_epi32(s[i][0], w0, xb);
                s[i][1] = _mm512_dpbusd_epi32(s[i][1], w1, xb);
            }
        }
        const float *gs = (const float *)(gp + 32 * NR);
        const __m512 ws0 = _mm512_load_ps(gs), ws1 = _mm512_load_ps(gs + 16);
        const __m512 wm0 = _mm512_load_ps(gs + NR), wm1 = _mm512_load_ps(gs + NR + 16);
#pragma GCC unroll 6
        for (int i = 0; i < MR_; i++) {
            const __m512 xs = _mm512_set1_ps(xsc[i * ldsc + 2 * g]);
            const __m512 nx = _mm512_set1_ps(xsc[i * ldsc + 2 * g + 1]);
            f[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i][0]), _mm512_mul_ps(ws0, xs), f[i][0]);
            f[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i][1]), _mm512_mul_ps(ws1, xs), f[i][1]);
            f[i][0] = _mm512_fmadd_ps(wm0, nx, f[i][0]);
            f[i][1] = _mm512_fmadd_ps(wm1, nx, f[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR_; i++) {
        _mm512_mask_storeu_ps(y + i * ldy, k0m, f[i][0]);
        _mm512_mask_storeu_ps(y + i * ldy + 16, k1m, f[i][1]);
    }
}

static void kernel(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                   int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    const __mmask16 k0m = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 k1m = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    switch (mr) {
    case 6:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 6, k0m, k1m, bias, accumulate);
        break;
    case 5:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 5, k0m, k1m, bias, accumulate);
        break;
    case 4:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 4, k0m, k1m, bias, accumulate);
        break;
    case 3:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 3, k0m, k1m, bias, accumulate);
        break;
    case 2:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 2, k0m, k1m, bias, accumulate);
        break;
    default:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 1, k0m, k1m, bias, accumulate);
        break;
    }
}

const tr_mm_qgemm tr_mm_qgemm_avx512 = {
    .mr = MR, .nr = NR, .q5k = true, .quant_row = quant_row, .pack_w = pack_w, .kernel = kernel};
