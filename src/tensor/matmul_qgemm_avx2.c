/* The AVX2 level's integer GEMM of Q4_K and Q5_K (tr_mm_qgemm, driven by
 * matmul_qgemm.c): the AVX-512 level's arithmetic (matmul_qgemm_avx512.c),
 * so the same bits, on byte products without VNNI: vpmaddubsw multiplies
 * the unsigned codes by the signed x bytes and adds pairs into int16 lanes,
 * and vpmaddwd makes the 32-bit sums. The int16 lanes must not saturate:
 * a Q4_K group's 8 steps add up there (16 products of at most 15 * 127:
 * 30480 < 32767); Q5_K's codes reach 31, so its kernel widens after every
 * 4 steps (8 products: 31496). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"

#define MR 4
#define NR 16
#define GB TR_MM_QG_GROUP_BYTES(NR) /* one packed group: codes [8][16][4], wsc[16], wmin[16] */

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* As the AVX-512 level's quant_row: the same codes, scales and sums. */
static void quant_row(const float *x, long K, int8_t *q, float *sc) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        __m256 v[4];
        for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(xg + 8 * j);
        __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
            _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
        float amax = hmax8(m);
        const float d = amax / 127.0f;
        if (amax < 0x1p-100f) {
            for (int j = 0; j < 4; j++) v[j] = _mm256_mul_ps(v[j], _mm256_set1_ps(0x1p64f));
            amax *= 0x1p64f;
        }
        const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[0], id));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[1], id));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[2], id));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[3], id));
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(q + 32 * g), _mm256_permutevar8x32_epi32(p, order));
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += xg[j];
        sc[2 * g] = d;
        sc[2 * g + 1] = -s;
    }
}

/* 8 rows of 8 dwords (r[j]: 32 bytes) to out[s], lane j = dword s of row j. */
static inline void transpose8x8(const uint8_t *const r[8], __m256i out[8]) {
    __m256i a[8], t[8], u[8];
    for (int j = 0; j < 8; j++) a[j] = _mm256_loadu_si256((const __m256i *)r[j]);
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm256_unpacklo_epi32(a[j], a[j + 1]);
        t[j + 1] = _mm256_unpackhi_epi32(a[j], a[j + 1]);
    }
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm256_unpacklo_epi64(t[h], t[h + 2]);
        u[h + 1] = _mm256_unpackhi_epi64(t[h], t[h + 2]);
        u[h + 2] = _mm256_unpacklo_epi64(t[h + 1], t[h + 3]);
        u[h + 3] = _mm256_unpackhi_epi64(t[h + 1], t[h + 3]);
    }
    for (int s = 0; s < 4; s++) {
        out[s] = _mm256_permute2x128_si256(u[s], u[s + 4], 0x20);
        out[s + 4] = _mm256_permute2x128_si256(u[s], u[s + 4], 0x31);
    }
}

/* Bits 2c (low nibbles) and 2c + 1 (high) of each byte of qh moved to bit
 * 4, for chunk c of a Q5_K block: 16-bit shifts, each kept byte's bit from
 * within the same byte. */
static inline __m256i fifth_bit(__m256i qh, int bit) {
    const __m256i b4 = _mm256_set1_epi8(0x10);
    if (bit < 4) return _mm256_and_si256(_mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - bit)), b4);
    return _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(bit - 4)), b4);
}

static bool pack_w(int type, const uint8_t *src, size_t stride, int nr, long k0, int kc,
                   uint8_t *dst) {
    if (type != TR_Q4_K && type != TR_Q5_K) return false;
    const int five = type == TR_Q5_K;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (long b = k0 / 256; b < (k0 + kc) / 256; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 256) * 8 * GB;
        const uint8_t *blk[NR];
        tr_mm_qgemm_pack_block(type, src, stride, nr, NR, b, blk, gd);
        for (int h = 0; h < NR / 8; h++) { /* 8 weight rows at a time */
            const uint8_t *r[8];
            __m256i qh[8], t[8];
            if (five) {
                for (int j = 0; j < 8; j++) r[j] = blk[8 * h + j] + 16;
                transpose8x8(r, qh);
            }
            for (int ch = 0; ch < 4; ch++) { /* 32 code bytes: groups 2ch (low), 2ch + 1 (high) */
                for (int j = 0; j < 8; j++) r[j] = blk[8 * h + j] + (five ? 48 : 16) + 32 * ch;
                transpose8x8(r, t);
                uint8_t *glo = gd + (size_t)(2 * ch) * GB + 32 * h, *ghi = glo + GB;
                for (int s = 0; s < 8; s++) {
                    __m256i lo = _mm256_and_si256(t[s], low4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(t[s], 4), low4);
                    if (five) {
                        lo = _mm256_or_si256(lo, fifth_bit(qh[s], 2 * ch));
                        hi = _mm256_or_si256(hi, fifth_bit(qh[s], 2 * ch + 1));
                    }
                    _mm256_storeu_si256((__m256i *)(glo + 64 * s), lo);
                    _mm256_storeu_si256((__m256i *)(ghi + 64 * s), hi);
                }
            }
        }
    }
    return true;
}

/* MR_ rows of X against a 16-row panel: per group 8 steps of vpmaddubsw per
 * row and half panel, summed in int16 over runs of RUN steps (8 for Q4_K, 4
 * for Q5_K), each run widened by vpmaddwd into the int32 sums, then the
 * group's scale and min in float (tr_mm_qgemm's order); the float sums
 * live in f (16 registers hold only the integer ones). */
static inline __attribute__((always_inline)) void
kernel_rows(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
            float *y, long ldy, int MR_, int nr, const float *bias, int accumulate, int RUN) {
    float f[MR][NR];
    for (int i = 0; i < MR_; i++)
        for (int j = 0; j < NR; j++)
            f[i][j] = j >= nr ? 0.0f : accumulate ? y[i * ldy + j] : bias ? bias[j] : 0.0f;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int g = 0; g < ng; g++) {
        const uint8_t *gp = wp + (size_t)g * GB;
        __m256i s[MR][2], d[MR][2];
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++)
            s[i][0] = s[i][1] = d[i][0] = d[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(gp + 64 * t));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(gp + 64 * t + 32));
#pragma GCC unroll 4
            for (int i = 0; i < MR_; i++) {
                int32_t v;
                memcpy(&v, xq + i * ldq + 32 * g + 4 * t, 4);
                const __m256i xb = _mm256_set1_epi32(v);
                s[i][0] = _mm256_add_epi16(s[i][0], _mm256_maddubs_epi16(w0, xb));
                s[i][1] = _mm256_add_epi16(s[i][1], _mm256_maddubs_epi16(w1, xb));
                if (t % RUN == RUN - 1) { /* the run ends: widen it before it could saturate */
                    d[i][0] = _mm256_add_epi32(d[i][0], _mm256_madd_epi16(s[i][0], ones));
                    d[i][1] = _mm256_add_epi32(d[i][1], _mm256_madd_epi16(s[i][1], ones));
                    s[i][0] = s[i][1] = _mm256_setzero_si256();
                }
            }
        }
        const float *gs = (const float *)(gp + 32 * NR);
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++) {
            const __m256 xs = _mm256_set1_ps(xsc[i * ldsc + 2 * g]);
            const __m256 nx = _mm256_set1_ps(xsc[i * ldsc + 2 * g + 1]);
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++) {
                __m256 a = _mm256_loadu_ps(&f[i][8 * v]);
                const __m256 si = _mm256_cvtepi32_ps(d[i][v]);
                a = _mm256_fmadd_ps(si, _mm256_mul_ps(_mm256_load_ps(gs + 8 * v), xs), a);
                a = _mm256_fmadd_ps(_mm256_load_ps(gs + NR + 8 * v), nx, a);
                _mm256_storeu_ps(&f[i][8 * v], a);
            }
        }
    }
    for (int i = 0; i < MR_; i++) memcpy(y + i * ldy, f[i], sizeof(float) * (size_t)nr);
}

static inline __attribute__((always_inline)) void
kernel_run(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
           float *y, long ldy, int mr, int nr, const float *bias, int accumulate, int RUN) {
    switch (mr) {
    case 4:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 4, nr, bias, accumulate, RUN);
        break;
    case 3:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 3, nr, bias, accumulate, RUN);
        break;
    case 2:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 2, nr, bias, accumulate, RUN);
        break;
    default:
        kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, 1, nr, bias, accumulate, RUN);
        break;
    }
}

static void kernel(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                   int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_run(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 8);
}

static void kernel5(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                    int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_run(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 4);
}

const tr_mm_qgemm tr_mm_qgemm_avx2 = {.mr = MR,
                                      .nr = NR,
                                      .q5k = true,
                                      .quant_row = quant_row,
                                      .pack_w = pack_w,
                                      .kernel = kernel,
                                      .kernel5 = kernel5};
