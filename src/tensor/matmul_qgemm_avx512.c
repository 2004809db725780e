/* The AVX-512 level's integer GEMM of Q4_K, Q5_K and Q8_0 (tr_mm_qgemm,
 * driven by matmul_qgemm.c): X rows quantized per 32-element group, panels
 * of 32 weight rows packed as unsigned bytes, and a 6 x 32 kernel of VNNI
 * byte products (vpdpbusd: 4 code x activation products per 32-bit lane).
 * The K-quant codes are 0..15 (Q4_K) or 0..31 (Q5_K), unsigned as vpdpbusd
 * takes its first operand, so no bias correction: each group's min is one
 * more FMA against the exact float sum of its x. Q8_0 takes x as two codes
 * per element (tr_mm_qgemm), and its signed codes are packed offset by 128
 * (w ^ 0x80), so each group dot comes out 128 * (254 * sum(high codes) +
 * sum(low codes)) too large; quant_row8 supplies that amount per group and
 * kernel8 takes it off in int32, exactly, before the float conversion. */
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
 * (exact), as 127 / amax would overflow. q8 (Q8_0's two-code form, see
 * tr_mm_qgemm): per group the 32 high codes h = round(u), u = x * 127 /
 * amax, then 32 low codes round((u - h) * 254) (u - h is exact), then xs =
 * amax / 32258 and 128 * (254 * sum(h) + sum(low)), the amount the offset
 * codes add to the group dot (a multiple of 128 below 2^31: exact in
 * float). */
static inline __attribute__((always_inline)) void quant_groups(const float *x, long K, int8_t *q,
                                                               float *sc, int q8) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        int8_t *qg = q + (q8 ? 64 : 32) * g;
        __m512 a = _mm512_loadu_ps(xg), b = _mm512_loadu_ps(xg + 16);
        float amax = _mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_andnot_ps(sign, a), _mm512_andnot_ps(sign, b)));
        const float d = q8 ? amax / 32258.0f : amax / 127.0f;
        if (amax < 0x1p-100f) {
            a = _mm512_mul_ps(a, _mm512_set1_ps(0x1p64f));
            b = _mm512_mul_ps(b, _mm512_set1_ps(0x1p64f));
            amax *= 0x1p64f;
        }
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        const __m512 ua = _mm512_mul_ps(a, _mm512_set1_ps(id)),
                     ub = _mm512_mul_ps(b, _mm512_set1_ps(id));
        const __m512i qa = _mm512_cvtps_epi32(ua), qb = _mm512_cvtps_epi32(ub);
        _mm_storeu_si128((__m128i *)qg, _mm512_cvtsepi32_epi8(qa));
        _mm_storeu_si128((__m128i *)(qg + 16), _mm512_cvtsepi32_epi8(qb));
        sc[2 * g] = d;
        if (q8) {
            const __m512 k254 = _mm512_set1_ps(254.0f);
            const __m512i la =
                _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(ua, _mm512_cvtepi32_ps(qa)), k254));
            const __m512i lb =
                _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(ub, _mm512_cvtepi32_ps(qb)), k254));
            _mm_storeu_si128((__m128i *)(qg + 32), _mm512_cvtsepi32_epi8(la));
            _mm_storeu_si128((__m128i *)(qg + 48), _mm512_cvtsepi32_epi8(lb));
            /* the sums of the codes as stored */
            const __m512i hs =
                _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)qg)),
                                 _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(qg + 16))));
            const __m512i ls =
                _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(qg + 32))),
                                 _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(qg + 48))));
            sc[2 * g + 1] =
                128.0f * (float)(254 * _mm512_reduce_add_epi32(hs) + _mm512_reduce_add_epi32(ls));
            continue;
        }
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += xg[j];
        sc[2 * g + 1] = -s;
    }
}

static void quant_row(const float *x, long K, int8_t *q, float *sc) {
    quant_groups(x, K, q, sc, 0);
}

/* Q8_0's two-code form (see quant_groups) */
static void quant_row8(const float *x, long K, int8_t *q, float *sc) {
    quant_groups(x, K, q, sc, 1);
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

/* Q8_0 groups [k0 / 32, (k0 + kc) / 32): each a 34-byte block (d, then 32
 * signed codes) per row; codes offset by 128, scales as floats (the min
 * slots are not read). */
static void pack_q8(const uint8_t *src, size_t stride, int nr, long k0, int kc, uint8_t *dst) {
    static const uint8_t zero[34];
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (long b = k0 / 32; b < (k0 + kc) / 32; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 32) * GB;
        float *ws = (float *)(gd + 32 * NR);
        for (int h = 0; h < NR / 16; h++) {
            const uint8_t *r[16];
            __m512i t[8];
            for (int j = 0; j < 16; j++) {
                const int c = 16 * h + j;
                r[j] = (c < nr ? src + (size_t)c * stride + (size_t)b * 34 : zero) + 2;
            }
            transpose16x8(r, t);
            for (int s = 0; s < 8; s++)
                _mm512_storeu_si512((void *)(gd + 128 * s + 64 * h), _mm512_xor_si512(t[s], off));
        }
        /* the 32 scales widened two vectors at a time (F16C), not one call each */
        _Alignas(32) uint16_t hd[NR];
        for (int c = 0; c < NR; c++) {
            hd[c] = 0;
            if (c < nr) memcpy(&hd[c], src + (size_t)c * stride + (size_t)b * 34, 2);
        }
        _mm512_store_ps(ws, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)hd)));
        _mm512_store_ps(ws + 16, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(hd + 16))));
    }
}

static bool pack_w(int type, const uint8_t *src, size_t stride, int nr, long k0, int kc,
                   uint8_t *dst) {
    if (type == TR_Q8_0) {
        pack_q8(src, stride, nr, k0, kc, dst);
        return true;
    }
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
 * order; q8: the codes' offset taken off, then the scale alone). 12 integer
 * and 12 float accumulators at MR_ = 6. */
static inline __attribute__((always_inline)) void
kernel_rows(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
            float *y, long ldy, int MR_, __mmask16 k0m, __mmask16 k1m, const float *bias,
            int accumulate, int q8) {
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
        /* q8: the high codes, the sums times 254, then the low codes */
        for (int pass = 0; pass < (q8 ? 2 : 1); pass++) {
            const int8_t *xp = xq + (q8 ? 64 * g + 32 * pass : 32 * g);
            if (pass) {
                const __m512i k254 = _mm512_set1_epi32(254);
#pragma GCC unroll 6
                for (int i = 0; i < MR_; i++) {
                    s[i][0] = _mm512_mullo_epi32(s[i][0], k254);
                    s[i][1] = _mm512_mullo_epi32(s[i][1], k254);
                }
            }
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                const __m512i w0 = _mm512_load_si512((const void *)(gp + 128 * t));
                const __m512i w1 = _mm512_load_si512((const void *)(gp + 128 * t + 64));
#pragma GCC unroll 6
                for (int i = 0; i < MR_; i++) {
                    int32_t v;
                    memcpy(&v, xp + i * ldq + 4 * t, 4);
                    const __m512i xb = _mm512_set1_epi32(v);
                    s[i][0] = _mm512_dpbusd_epi32(s[i][0], w0, xb);
                    s[i][1] = _mm512_dpbusd_epi32(s[i][1], w1, xb);
                }
            }
        }
        const float *gs = (const float *)(gp + 32 * NR);
        const __m512 ws0 = _mm512_load_ps(gs), ws1 = _mm512_load_ps(gs + 16);
        if (q8) { /* the offset off in int32 (exact), then the one scale */
#pragma GCC unroll 6
            for (int i = 0; i < MR_; i++) {
                const __m512 xs = _mm512_set1_ps(xsc[i * ldsc + 2 * g]);
                const __m512i off = _mm512_set1_epi32((int32_t)xsc[i * ldsc + 2 * g + 1]);
                f[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s[i][0], off)),
                                          _mm512_mul_ps(ws0, xs), f[i][0]);
                f[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s[i][1], off)),
                                          _mm512_mul_ps(ws1, xs), f[i][1]);
            }
            continue;
        }
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

static inline __attribute__((always_inline)) void
kernel_any(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
           float *y, long ldy, int mr, int nr, const float *bias, int accumulate, int q8) {
    const __mmask16 k0m = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 k1m = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
#define ROWS(n) kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, n, k0m, k1m, bias, accumulate, q8)
    TR_MM_QG_TILES6(mr, ROWS);
#undef ROWS
}

static void kernel(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                   int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 0);
}

static void kernel8(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                    int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 1);
}

const tr_mm_qgemm tr_mm_qgemm_avx512 = {.mr = MR,
                                        .nr = NR,
                                        .q5k = true,
                                        .quant_row = quant_row,
                                        .quant_row8 = quant_row8,
                                        .pack_w = pack_w,
                                        .kernel = kernel,
                                        .kernel8 = kernel8};
