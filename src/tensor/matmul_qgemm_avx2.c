/* The AVX2 level's integer GEMM of Q4_K and Q5_K (tr_mm_qgemm, driven by
 * matmul_qgemm.c): the AVX-512 level's arithmetic (matmul_qgemm_avx512.c),
 * so the same bits, on byte products without VNNI: vpmaddubsw multiplies
 * the unsigned codes by the signed x bytes and adds pairs into int16 lanes,
 * and vpmaddwd makes the 32-bit sums. The int16 lanes must not saturate:
 * a Q4_K group's 8 steps add up there (16 products of at most 15 * 127:
 * 30480 < 32767); Q5_K's codes reach 31, so its kernel widens after every
 * 4 steps (8 products: 31496). Signed 8-bit codes on both sides (Q8_0)
 * would saturate those pair sums, so this table leaves Q8_0 to the F32 GEMM.
 *
 * Where the CPU has AVX-VNNI (Intel Alder Lake and later client cores, Zen
 * 5), tr_mm_qgemm_avx_vnni takes over with the same packing: vpdpbusd on
 * 256-bit vectors sums the byte products straight into int32, so one kernel
 * takes Q4_K and Q5_K, and Q8_0 comes in as on AVX-512 (codes offset by
 * 128, x as two codes per element, the offset taken off in int32). The
 * VNNI functions carry their own target attribute, so nothing else in this
 * file may use those instructions. */
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

/* A group's 32 values into v, scaled up by 2^64 (exact) where their max
 * is below 2^-100, as 127 / amax would overflow; *amax gets the max before
 * that, the return 127 / the max after it (0 for an all-zero group). */
static inline float group_load(const float *xg, __m256 v[4], float *amax) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(xg + 8 * j);
    const __m256 m =
        _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    float a = hmax8(m);
    *amax = a;
    if (a < 0x1p-100f) {
        for (int j = 0; j < 4; j++) v[j] = _mm256_mul_ps(v[j], _mm256_set1_ps(0x1p64f));
        a *= 0x1p64f;
    }
    return a > 0.0f ? 127.0f / a : 0.0f;
}

/* 32 codes of 4 vectors of 8 int32 to bytes in order (saturating packs). */
static inline void store_codes(int8_t *q, const __m256i i[4]) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(p, order));
}

/* As the AVX-512 level's quant_row: the same codes, scales and sums. */
static void quant_row(const float *x, long K, int8_t *q, float *sc) {
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        __m256 v[4];
        float amax;
        const __m256 id = _mm256_set1_ps(group_load(xg, v, &amax));
        __m256i c[4];
        for (int j = 0; j < 4; j++) c[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], id));
        store_codes(q + 32 * g, c);
        float s = 0.0f;
        for (int j = 0; j < 32; j++) s += xg[j];
        sc[2 * g] = amax / 127.0f;
        sc[2 * g + 1] = -s;
    }
}

/* The sum of 32 signed bytes at q. */
static inline int sum_codes(const int8_t *q) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)q);
    const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), v);
    const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(t);
}

/* As the AVX-512 level's quant_row8: per group the 32 high codes round(u),
 * u = x * 127 / amax, then the 32 low codes round((u - high) * 254), xs =
 * amax / 32258 and 128 * (254 * sum(high) + sum(low)) (for the VNNI
 * kernel, whose weight codes are offset by 128). */
static void quant_row8(const float *x, long K, int8_t *q, float *sc) {
    for (long g = 0; g < K / 32; g++) {
        int8_t *qg = q + 64 * g;
        __m256 v[4];
        float amax;
        const __m256 id = _mm256_set1_ps(group_load(x + 32 * g, v, &amax));
        __m256i hi[4], lo[4];
        for (int j = 0; j < 4; j++) {
            const __m256 u = _mm256_mul_ps(v[j], id);
            hi[j] = _mm256_cvtps_epi32(u);
            lo[j] = _mm256_cvtps_epi32(
                _mm256_mul_ps(_mm256_sub_ps(u, _mm256_cvtepi32_ps(hi[j])), _mm256_set1_ps(254.0f)));
        }
        store_codes(qg, hi);
        store_codes(qg + 32, lo);
        sc[2 * g] = amax / 32258.0f;
        sc[2 * g + 1] = 128.0f * (float)(254 * sum_codes(qg) + sum_codes(qg + 32));
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

/* Q8_0 groups [k0 / 32, (k0 + kc) / 32): each a 34-byte block (d, then 32
 * signed codes) per row; codes offset by 128 (for vpdpbusd's unsigned side),
 * scales as floats (the min slots are not read). */
static void pack_q8(const uint8_t *src, size_t stride, int nr, long k0, int kc, uint8_t *dst) {
    static const uint8_t zero[34];
    const __m256i off = _mm256_set1_epi8((char)0x80);
    for (long b = k0 / 32; b < (k0 + kc) / 32; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 32) * GB;
        for (int h = 0; h < NR / 8; h++) {
            const uint8_t *r[8];
            __m256i t[8];
            for (int j = 0; j < 8; j++) {
                const int c = 8 * h + j;
                r[j] = (c < nr ? src + (size_t)c * stride + (size_t)b * 34 : zero) + 2;
            }
            transpose8x8(r, t);
            for (int st = 0; st < 8; st++)
                _mm256_storeu_si256((__m256i *)(gd + 64 * st + 32 * h),
                                    _mm256_xor_si256(t[st], off));
        }
        _Alignas(16) uint16_t hd[NR];
        for (int c = 0; c < NR; c++) {
            hd[c] = 0;
            if (c < nr) memcpy(&hd[c], src + (size_t)c * stride + (size_t)b * 34, 2);
        }
        float *ws = (float *)(gd + 32 * NR);
        _mm256_store_ps(ws, _mm256_cvtph_ps(_mm_load_si128((const __m128i *)hd)));
        _mm256_store_ps(ws + 8, _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(hd + 8))));
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

/* A tile's float sums to start from: Y (accumulate), else the bias, else
 * 0; columns from nr on 0. */
static inline __attribute__((always_inline)) void init_sums(float f[MR][NR], int MR_, int nr,
                                                            const float *y, long ldy,
                                                            const float *bias, int accumulate) {
    for (int i = 0; i < MR_; i++)
        for (int j = 0; j < NR; j++)
            f[i][j] = j >= nr ? 0.0f : accumulate ? y[i * ldy + j] : bias ? bias[j] : 0.0f;
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
    init_sums(f, MR_, nr, y, ldy, bias, accumulate);
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
#define ROWS(n) kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, n, nr, bias, accumulate, RUN)
    TR_MM_QG_TILES4(mr, ROWS);
#undef ROWS
}

static void kernel(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                   int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_run(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 8);
}

static void kernel5(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                    int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_run(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 4);
}

/* AVX-VNNI: MR_ rows of X against a 16-row panel, per group 8 steps of
 * vpdpbusd per row and half panel into int32 (q8: the high codes, the sums
 * times 254, the low codes, the offset taken off), then tr_mm_qgemm's
 * float steps as kernel_rows. */
#define VNNI __attribute__((target("avxvnni")))
static inline __attribute__((always_inline)) VNNI void
vnni_rows(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
          float *y, long ldy, int MR_, int nr, const float *bias, int accumulate, int q8) {
    float f[MR][NR];
    init_sums(f, MR_, nr, y, ldy, bias, accumulate);
    for (int g = 0; g < ng; g++) {
        const uint8_t *gp = wp + (size_t)g * GB;
        __m256i s[MR][2];
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++) s[i][0] = s[i][1] = _mm256_setzero_si256();
        for (int pass = 0; pass < (q8 ? 2 : 1); pass++) {
            const int8_t *xp = xq + (q8 ? 64 * g + 32 * pass : 32 * g);
            if (pass) {
                const __m256i k254 = _mm256_set1_epi32(254);
#pragma GCC unroll 4
                for (int i = 0; i < MR_; i++) {
                    s[i][0] = _mm256_mullo_epi32(s[i][0], k254);
                    s[i][1] = _mm256_mullo_epi32(s[i][1], k254);
                }
            }
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                const __m256i w0 = _mm256_load_si256((const __m256i *)(gp + 64 * t));
                const __m256i w1 = _mm256_load_si256((const __m256i *)(gp + 64 * t + 32));
#pragma GCC unroll 4
                for (int i = 0; i < MR_; i++) {
                    int32_t v;
                    memcpy(&v, xp + i * ldq + 4 * t, 4);
                    const __m256i xb = _mm256_set1_epi32(v);
                    s[i][0] = _mm256_dpbusd_avx_epi32(s[i][0], w0, xb);
                    s[i][1] = _mm256_dpbusd_avx_epi32(s[i][1], w1, xb);
                }
            }
        }
        const float *gs = (const float *)(gp + 32 * NR);
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++) {
            const __m256 xs = _mm256_set1_ps(xsc[i * ldsc + 2 * g]);
            const float second = xsc[i * ldsc + 2 * g + 1];
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++) {
                __m256 a = _mm256_loadu_ps(&f[i][8 * v]);
                const __m256i si =
                    q8 ? _mm256_sub_epi32(s[i][v], _mm256_set1_epi32((int32_t)second)) : s[i][v];
                a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si),
                                    _mm256_mul_ps(_mm256_load_ps(gs + 8 * v), xs), a);
                if (!q8)
                    a = _mm256_fmadd_ps(_mm256_load_ps(gs + NR + 8 * v), _mm256_set1_ps(second), a);
                _mm256_storeu_ps(&f[i][8 * v], a);
            }
        }
    }
    for (int i = 0; i < MR_; i++) memcpy(y + i * ldy, f[i], sizeof(float) * (size_t)nr);
}

static inline __attribute__((always_inline)) VNNI void
vnni_any(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
         float *y, long ldy, int mr, int nr, const float *bias, int accumulate, int q8) {
#define ROWS(n) vnni_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, n, nr, bias, accumulate, q8)
    TR_MM_QG_TILES4(mr, ROWS);
#undef ROWS
}

static VNNI void kernel_vnni(const int8_t *xq, long ldq, const float *xsc, long ldsc,
                             const uint8_t *wp, int ng, float *y, long ldy, int mr, int nr,
                             const float *bias, int accumulate) {
    vnni_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 0);
}

static VNNI void kernel8_vnni(const int8_t *xq, long ldq, const float *xsc, long ldsc,
                              const uint8_t *wp, int ng, float *y, long ldy, int mr, int nr,
                              const float *bias, int accumulate) {
    vnni_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 1);
}

const tr_mm_qgemm tr_mm_qgemm_avx_vnni = {.mr = MR,
                                          .nr = NR,
                                          .q5k = true,
                                          .quant_row = quant_row,
                                          .quant_row8 = quant_row8,
                                          .pack_w = pack_w,
                                          .kernel = kernel_vnni,
                                          .kernel8 = kernel8_vnni};

const tr_mm_qgemm tr_mm_qgemm_avx2 = {.mr = MR,
                                      .nr = NR,
                                      .q5k = true,
                                      .quant_row = quant_row,
                                      .pack_w = pack_w,
                                      .kernel = kernel,
                                      .kernel5 = kernel5};
