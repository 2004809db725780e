/* The AVX-512 level's integer dots (VNNI and AVX512BW byte products) for
 * Q8_0 and the K-quants: one-row matrix-vector rows and the few-row path
 * of a batched decode step (tr_mm_isa.quant_x_rows / rows_int8_multi).
 * Every dot takes m rows of x (1..4) against one weight row that is
 * unpacked once, and does for each row of x exactly what it does for one
 * row: a batched step gives every row the bits of its one-row step. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/q8_scales_x86.h"

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* How far ahead of itself a dot fetches its weights (fetch_at). As on
 * AVX2 (matmul_avx2.c), the integer dots leave the hardware prefetcher too
 * little slack to keep the DRAM stream busy; 4096 rather than 2048 as
 * there (Q6_K at 1x1280x51866: 0.89 -> 1.1 of a contended copy bandwidth,
 * Q8_0 about even). */
#define PF_DIST 4096

/* The same as one step of a dot that reads len bytes at p: the lines
 * PF_DIST on, but at most up to end (past it only by the lines of one
 * step), with no loop or test per line. A line of the step's last bytes
 * that the next step begins in is that step's first fetch. Into L2 (T1),
 * not L1: on the 2-core Xeon (Sapphire Rapids class, a loaded host), 2
 * threads, alternating call by call with T0, the K-quants read 4-19 % more
 * and Q8_0 0-2 % (a fetch into L1 holds one of its few fill buffers until
 * the line arrives); with the rows already in L2 it costs 2-7 %. */
static inline __attribute__((always_inline)) void fetch_at(const uint8_t *p, size_t len,
                                                           const uint8_t *end) {
    uintptr_t a = (uintptr_t)p + PF_DIST;
    const uintptr_t stop = (uintptr_t)end - 1;
    if (a > stop) a = stop;
#pragma GCC unroll 4
    for (size_t o = 0; o < len; o += 64) _mm_prefetch((const char *)(a + o), _MM_HINT_T1);
}

/* The first bytes of rows [n0, n1) at once: a range of a few dozen rows
 * would otherwise start at the latency of one stream ramping up. */
static inline void prefetch_first(const tr_mm_w *w, long n0, long n1) {
    const size_t len = (size_t)(n1 - n0) * w->stride;
    for (size_t o = 0; o < PF_DIST && o < len; o += 64)
        _mm_prefetch((const char *)(w->data + (size_t)n0 * w->stride + o), _MM_HINT_T0);
}

/* The end an integer dot fetches ahead up to, or NULL where it should
 * not: on Zen 5 the hardware prefetcher keeps up with these rows and the
 * software fetch only takes load slots and fill buffers from it (Q8_0
 * 1x1280x51866: 2.0-2.3 ms fetching ahead against 1.35-1.55 ms without;
 * Q4_K 1x3072x48k on 2 threads, alternating call by call: 0.78-0.86 of the
 * time without); on Intel Xeon (Sapphire Rapids class) leaving it to the
 * hardware got only 0.49 of the copy bandwidth for Q8_0, fetching ahead
 * 0.81, and the K-quants' fetch distance and hint were tuned there. */
static inline const uint8_t *int8_fetch_end(const uint8_t *end) {
    return tr_cpu_get_features()->amd ? NULL : end;
}

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

/* 128-bit lane r (0..3) of v; literal lane numbers, as the intrinsic
 * needs an immediate even where the compiler does not fold r. */
static inline __attribute__((always_inline)) __m128i lane128(__m512i v, int r) {
    switch (r) {
    case 0:
        return _mm512_castsi512_si128(v);
    case 1:
        return _mm512_extracti32x4_epi32(v, 1);
    case 2:
        return _mm512_extracti32x4_epi32(v, 2);
    default:
        return _mm512_extracti32x4_epi32(v, 3);
    }
}

/* Four pairs of partial-sum vectors to four sums through one transposed
 * reduction (cheaper than four; at whisper sizes, 4-5 blocks per row, the
 * reductions cost as much as the blocks). Each vector takes the same tree
 * whatever its slot, so a sum does not depend on its neighbours. */
static inline __attribute__((always_inline)) void reduce4(__m512 acc[4][2], int n, float *out) {
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
    for (int r = 0; r < n; r++) out[r] = tmp[4 * r];
}

/* Q4_K / Q5_K: sum_j d*sc_j*xs_j * <q_j, xq_j> - dmin*mn_j * sum(x_j), the
 * exact x sums precomputed per 32-element group. Two 32-byte code chunks
 * (sub-blocks 2c..2c+3) are handled per step: one 64-byte load, low nibbles
 * = sub-blocks 2c | 2c+2, high = 2c+1 | 2c+3, each dotted (VNNI) with xq,
 * which quantize_x_q8 stored in that order.
 * NR_ weight rows (1..4) run together: they share the x loads, and their
 * sums leave through one reduction (reduce4).
 * For Q4_K the high nibbles are used in place (q & 0xF0 = 16 * code, still
 * a valid unsigned VNNI byte); the caller folded the 1/16 into xsx. Q5_K
 * needs the fifth bit above them, so it shifts. xsx per block holds
 * [xs_j (8) | -xsum_j (8)], so the mins are simply added. */
static inline __attribute__((always_inline)) void dot_q45_k_rows(const uint8_t *w, size_t stride,
                                                                 const int8_t *xq, const float *xsx,
                                                                 long K, int five, int NR_,
                                                                 bool fetch, float *out) {
    const size_t bsz = five ? 176 : 144;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i idx_sb = _mm512_set_epi32(7, 6, 3, 2, 7, 6, 3, 2, 5, 4, 1, 0, 5, 4, 1, 0);
    const __m512i idx_dm = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i idx_hdr = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    const __m128i sh_w = _mm_set_epi32(4, 0, 0, 0);
    const __m128i mask_w = _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m128i top_w = _mm_set_epi32(0x30303030, 0, 0x30303030, 0);
    /* Q5_K fifth bits: of step h, bit 2h (bytes 0-31) and 2h+2 (bytes 32-63)
     * of qh[l] for the low nibbles, the next bit up for the high ones */
    const __m512i bit_lo[2] = {_mm512_inserti64x4(_mm512_set1_epi8(1), _mm256_set1_epi8(4), 1),
                               _mm512_inserti64x4(_mm512_set1_epi8(16), _mm256_set1_epi8(64), 1)};
    const __m512i bit_hi[2] = {_mm512_add_epi8(bit_lo[0], bit_lo[0]),
                               _mm512_add_epi8(bit_lo[1], bit_lo[1])};
    const __m512i b4 = _mm512_set1_epi8(16);
    for (long b = 0; b < K / 256; b++) {
        const int8_t *xb = xq + b * 256;
        const __m512 xsb = _mm512_loadu_ps(xsx + b * 16);
        __m512i xv[4];
        for (int i = 0; i < 4; i++) xv[i] = _mm512_loadu_si512((const void *)(xb + 64 * i));
        if (NR_ == 4 && fetch) {
            /* four row streams (a quarter of the caller's range apart): each
             * fetched PF_DIST ahead of itself, in step; past the end of the
             * range by at most PF_DIST, which is harmless, hence the integer
             * arithmetic (no out-of-object pointer) */
            for (int r = 0; r < 4; r++) {
                const char *pf =
                    (const char *)((uintptr_t)w + r * stride + (size_t)b * bsz + PF_DIST);
                for (size_t o = 0; o < bsz; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
            }
        }
        /* four rows: their headers decoded at once as below, one 128-bit
         * lane each (the same bytes and values, in a quarter of the
         * operations), and their d, dmin converted together */
        __m512i scmn4 = _mm512_setzero_si512();
        __m256 dm8 = _mm256_setzero_ps();
        if (NR_ == 4) {
            const uint8_t *p0 = w + b * bsz;
            __m512i v16 = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p0));
            v16 = _mm512_inserti32x4(v16, _mm_loadu_si128((const __m128i *)(p0 + stride)), 1);
            v16 = _mm512_inserti32x4(v16, _mm_loadu_si128((const __m128i *)(p0 + 2 * stride)), 2);
            v16 = _mm512_inserti32x4(v16, _mm_loadu_si128((const __m128i *)(p0 + 3 * stride)), 3);
            __m512i pw = _mm512_shuffle_epi32(v16, (_MM_PERM_ENUM)_MM_SHUFFLE(3, 2, 3, 1));
            __m512i qw = _mm512_shuffle_epi32(v16, (_MM_PERM_ENUM)_MM_SHUFFLE(2, 2, 1, 1));
            __m512i lo6 = _mm512_and_si512(_mm512_srlv_epi32(pw, _mm512_broadcast_i32x4(sh_w)),
                                           _mm512_broadcast_i32x4(mask_w));
            __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(qw, 2), _mm512_broadcast_i32x4(top_w));
            scmn4 = _mm512_or_si512(lo6, hi2);
            dm8 = _mm256_cvtph_ps(
                _mm512_castsi512_si128(_mm512_permutexvar_epi32(idx_hdr, v16))); /* d, dmin x4 */
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
            __m128i scmn; /* bytes: sc0..7, mn0..7 */
            __m512 dm16;  /* d (8), dmin (8) */
            if (NR_ == 4) {
                scmn = lane128(scmn4, r);
                dm16 = _mm512_permutexvar_ps(_mm512_add_epi32(idx_dm, _mm512_set1_epi32(2 * r)),
                                             _mm512_castps256_ps512(dm8));
            } else {
                __m128i v4 = _mm_loadu_si128((const __m128i *)p);
                __m128i pw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(3, 2, 3, 1)); /* a c b c */
                __m128i qw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(2, 2, 1, 1)); /* a a b b */
                __m128i lo6 = _mm_and_si128(_mm_srlv_epi32(pw, sh_w), mask_w);
                __m128i hi2 = _mm_and_si128(_mm_srli_epi32(qw, 2), top_w);
                scmn = _mm_or_si128(lo6, hi2);
                __m128 dmf = _mm_cvtph_ps(v4); /* lanes 0, 1: d, dmin */
                dm16 = _mm512_permutexvar_ps(idx_dm, _mm512_castps128_ps512(dmf));
            }
            /* one vector [sc_j * d * xs_j (8) | -mn_j * dmin * xsum_j (8)] */
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
                if (five) { /* + 16 where the code's fifth bit (bit_lo / bit_hi) is set */
                    hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
                    lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, bit_lo[h]), lo, b4);
                    hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh, bit_hi[h]), hi, b4);
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
    reduce4(acc, NR_, out);
}

static void dot_q45_k_4(const uint8_t *w, size_t stride, const int8_t *xq, const float *xsx, long K,
                        int five, bool fetch, float *out) {
    if (five)
        dot_q45_k_rows(w, stride, xq, xsx, K, 1, 4, fetch, out);
    else
        dot_q45_k_rows(w, stride, xq, xsx, K, 0, 4, fetch, out);
}

static void dot_q45_k_1(const uint8_t *w, const int8_t *xq, const float *xsx, long K, int five,
                        float *out) {
    if (five)
        dot_q45_k_rows(w, 0, xq, xsx, K, 1, 1, false, out);
    else
        dot_q45_k_rows(w, 0, xq, xsx, K, 0, 1, false, out);
}

/* Q4_K / Q5_K, one weight row against m (1..4) rows of x prepared as for
 * dot_q45_k_rows (row i: xq + i*K, xsx + i*(K/16)): the same operations,
 * per row of x, as dot_q45_k_rows does per weight row, and the same
 * reduction, so row i gets the bits of the one-row path. The codes are
 * unpacked once for all rows. */
static inline __attribute__((always_inline)) void
dot_q45_k_xrows(const uint8_t *w, const int8_t *xq, const float *xsx, long K, int five, int m,
                const uint8_t *end, float *out) {
    const size_t bsz = five ? 176 : 144;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i idx_sb = _mm512_set_epi32(7, 6, 3, 2, 7, 6, 3, 2, 5, 4, 1, 0, 5, 4, 1, 0);
    const __m512i idx_dm = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i sh_w = _mm_set_epi32(4, 0, 0, 0);
    const __m128i mask_w = _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m128i top_w = _mm_set_epi32(0x30303030, 0, 0x30303030, 0);
    const __m512i bit_lo[2] = {_mm512_inserti64x4(_mm512_set1_epi8(1), _mm256_set1_epi8(4), 1),
                               _mm512_inserti64x4(_mm512_set1_epi8(16), _mm256_set1_epi8(64), 1)};
    const __m512i bit_hi[2] = {_mm512_add_epi8(bit_lo[0], bit_lo[0]),
                               _mm512_add_epi8(bit_lo[1], bit_lo[1])};
    const __m512i b4 = _mm512_set1_epi8(16);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * bsz, *qs = p + (five ? 48 : 16);
        if (end) fetch_at(p, bsz, end); /* NULL: leave it to the hardware */
        __m128i v4 = _mm_loadu_si128((const __m128i *)p);
        __m128i pw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(3, 2, 3, 1));
        __m128i qw = _mm_shuffle_epi32(v4, _MM_SHUFFLE(2, 2, 1, 1));
        __m128i lo6 = _mm_and_si128(_mm_srlv_epi32(pw, sh_w), mask_w);
        __m128i hi2 = _mm_and_si128(_mm_srli_epi32(qw, 2), top_w);
        __m128i scmn = _mm_or_si128(lo6, hi2);
        __m128 dmf = _mm_cvtph_ps(v4);
        __m512 dm16 = _mm512_permutexvar_ps(idx_dm, _mm512_castps128_ps512(dmf));
        __m512 vd = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(scmn)), dm16);
        __m512i qh = _mm512_setzero_si512();
        if (five) qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 16)));
        __m512i c[4]; /* lo, hi of the first 64 code bytes, then of the second */
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m512i q = _mm512_loadu_si512((const void *)(qs + 64 * h));
            __m512i lo = _mm512_and_si512(q, low4), hi;
            if (five) {
                hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
                lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, bit_lo[h]), lo, b4);
                hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh, bit_hi[h]), hi, b4);
            } else {
                hi = _mm512_andnot_si512(low4, q);
            }
            c[2 * h] = lo;
            c[2 * h + 1] = hi;
        }
#pragma GCC unroll 4
        for (int i = 0; i < m; i++) {
            const int8_t *xb = xq + i * K + b * 256;
            __m512 s16 = _mm512_mul_ps(vd, _mm512_loadu_ps(xsx + i * (K / 16) + b * 16));
            acc[i][0] = _mm512_mask_add_ps(acc[i][0], 0xFF00, acc[i][0], s16);
            __m512i d[4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                d[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[j],
                                           _mm512_loadu_si512((const void *)(xb + 64 * j)));
            __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]),
                                          _mm512_unpackhi_epi32(d[0], d[1]));
            __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]),
                                          _mm512_unpackhi_epi32(d[2], d[3]));
            __m512i u =
                _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
            acc[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(u), _mm512_permutexvar_ps(idx_sb, s16),
                                        acc[i][1]);
        }
    }
    reduce4(acc, m, out);
}

/* Q8_0 row w against m (1..4) rows of the int8 x (row i: xq + i*K, xs +
 * i*(K/32)): per block d_w * xs_g * <q, xq>, two blocks per 64-byte VNNI
 * dot (signs moved onto x, since VNNI multiplies unsigned by signed bytes),
 * pairs of blocks alternating between two chains. Cheaper than widening
 * every code to float. Four blocks a step: their four d_w converted at
 * once, and one fetch of the lines PF_DIST on (fetch_at) instead of a loop
 * per pair; the float operations per chain are those of two at a time. */
static inline __attribute__((always_inline)) void dot_q8_0_rows(const uint8_t *w, const int8_t *xq,
                                                                const float *xs, long K, int m,
                                                                const uint8_t *end, float *out) {
    __m512 acc0[4], acc1[4];
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i idx23 = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
    const long nb = K / 32;
    long b = 0;
    for (; b + 4 <= nb; b += 4) {
        const uint8_t *p = w + b * 34;
        if (end) fetch_at(p, 136, end); /* NULL: leave it to the hardware (int8_fetch_end) */
        __m512i qa =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2))),
                               _mm256_loadu_si256((const __m256i *)(p + 36)), 1);
        __m512i qb = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 70))),
            _mm256_loadu_si256((const __m256i *)(p + 104)), 1);
        const __mmask64 na = _mm512_movepi8_mask(qa), nb2 = _mm512_movepi8_mask(qb);
        const __m512i ua = _mm512_abs_epi8(qa), ub = _mm512_abs_epi8(qb);
        const __m128 dd = tr_q8_scales4(p);
#pragma GCC unroll 4
        for (int i = 0; i < m; i++) {
            const int8_t *xi = xq + i * K + 32 * b;
            __m512i xa = _mm512_loadu_si512((const void *)xi);
            __m512i xb = _mm512_loadu_si512((const void *)(xi + 64));
            __m512i sa = _mm512_mask_sub_epi8(xa, na, _mm512_setzero_si512(), xa);
            __m512i sb = _mm512_mask_sub_epi8(xb, nb2, _mm512_setzero_si512(), xb);
            __m512i da = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ua, sa);
            __m512i db = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ub, sb);
            __m512 sc = _mm512_castps128_ps512(_mm_mul_ps(dd, _mm_loadu_ps(xs + i * nb + b)));
            acc0[i] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(da), _mm512_permutexvar_ps(idx, sc), acc0[i]);
            acc1[i] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(db), _mm512_permutexvar_ps(idx23, sc), acc1[i]);
        }
    }
    for (; b + 2 <= nb; b += 2) { /* a last pair: b % 4 == 0, the first chain's */
        const uint8_t *p = w + b * 34;
        __m512i q =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p + 2))),
                               _mm256_loadu_si256((const __m256i *)(p + 36)), 1);
        const __mmask64 neg = _mm512_movepi8_mask(q);
        const __m512i u = _mm512_abs_epi8(q);
        uint16_t h0, h1;
        memcpy(&h0, p, 2);
        memcpy(&h1, p + 34, 2);
        __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)h0 | ((uint32_t)h1 << 16))));
#pragma GCC unroll 4
        for (int i = 0; i < m; i++) {
            __m512i xv = _mm512_loadu_si512((const void *)(xq + i * K + 32 * b));
            __m512i sx = _mm512_mask_sub_epi8(xv, neg, _mm512_setzero_si512(), xv);
            __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, sx);
            __m128 sc =
                _mm_mul_ps(dd, _mm_castpd_ps(_mm_load_sd((const double *)(xs + i * nb + b))));
            __m512 s16 = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(sc));
            acc0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), s16, acc0[i]);
        }
    }
    for (; b < nb; b++) { /* odd last block */
        const uint8_t *p = w + b * 34;
        __m256i q = _mm256_loadu_si256((const __m256i *)(p + 2)), u = _mm256_abs_epi8(q);
        const float d = half_at(p);
        for (int i = 0; i < m; i++) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + i * K + 32 * b));
            __m256i dp = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, _mm256_sign_epi8(xv, q));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(dp), _mm256_extracti128_si256(dp, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
            tail[i] += d * xs[i * nb + b] * (float)_mm_cvtsi128_si32(s4);
        }
    }
    for (int i = 0; i < m; i++)
        out[i] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[i], acc1[i])) + tail[i];
}

/* Q6_K rows w + r*wstride (r < nw) against m rows of the q8_K-like x of
 * the AVX2 level (tr_mm_quant_x_rows_avx2: row i's codes at xq + i*K, one
 * scale per 256 at xd + i*(K/256), sums per 16 at bsum + i*(K/16)); nw * m
 * <= 4, out[r*m + i]. Per 256-block
 *   d * xd * (sum_g sc_g <u_g, xq_g> - 32 * sum_g sc_g * bsum_g)
 * over its 16 groups of 16, the codes unsigned (u = q + 32, 0..63) so that
 * one maddubs takes them (2 * 63 * 127 < 32767), the group scales and the
 * offset applied in int32 by dpwssd (one accumulation each instead of a
 * madd and an add), one float FMA per block. Half h of a block is elements
 * [128h, 128h + 128): its 64 low-nibble bytes ql give elements 0-63 (low
 * nibbles) and 64-127 (high), its 32 qh bytes two bits of each. A row's
 * value does not depend on nw or m: the same operations per row. */
static inline __attribute__((always_inline)) void
dot_q6_k_rows(const uint8_t *w, size_t wstride, int nw, const int8_t *xq, const float *xd,
              const int16_t *bsum, long K, int m, const uint8_t *end, float *out) {
    __m512 acc[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) acc[i] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30);
    /* qh's bits 4-5 of elements 0-31 sit 4 up, of 32-63 2 up (first
     * vector: shift left), of 64-95 in place, of 96-127 2 down (second) */
    const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    /* each 128-bit lane (16 elements) takes one group's scale: lane l of
     * vector v in half h is group 8h + 4v + l */
    __m512i pick[2][2];
    for (int h = 0; h < 2; h++)
        for (int v = 0; v < 2; v++) {
            const int g = 8 * h + 4 * v;
            pick[h][v] = _mm512_inserti64x4(
                _mm512_castsi256_si512(
                    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)g)),
                                            _mm_set1_epi16((short)(g + 1)), 1)),
                _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)(g + 2))),
                                        _mm_set1_epi16((short)(g + 3)), 1),
                1);
        }
    for (long b = 0; b < K / 256; b++) {
#pragma GCC unroll 4
        for (int r = 0; r < nw; r++) {
            const uint8_t *p = w + r * wstride + b * 210;
            if (end) fetch_at(p, 210, end);
            const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 192)));
            const __m512i sc5 = _mm512_castsi256_si512(sc);
            /* the offset -32 * sum_g sc_g * bsum_g as one more product
             * accumulated in the same lanes (-32 * sc fits int16) */
            const __m512i scm32 =
                _mm512_zextsi256_si512(_mm256_mullo_epi16(sc, _mm256_set1_epi16(-32)));
            __m512i sumi[4];
#pragma GCC unroll 4
            for (int i = 0; i < m; i++)
                sumi[i] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), scm32,
                                              _mm512_zextsi256_si512(_mm256_loadu_si256((
                                                  const __m256i *)(bsum + i * (K / 16) + 16 * b))));
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m512i ql = _mm512_loadu_si512((const void *)(p + 64 * h));
                __m512i qh =
                    _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h)));
                __m512i u0 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                             _mm512_and_si512(_mm512_sllv_epi16(qh, shl), top2));
                __m512i u1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                             _mm512_and_si512(_mm512_srlv_epi16(qh, shr), top2));
                __m512i s0 = _mm512_permutexvar_epi16(pick[h][0], sc5);
                __m512i s1 = _mm512_permutexvar_epi16(pick[h][1], sc5);
#pragma GCC unroll 4
                for (int i = 0; i < m; i++) {
                    const int8_t *xh = xq + i * K + 256 * b + 128 * h;
                    __m512i x0 = _mm512_loadu_si512((const void *)xh);
                    __m512i x1 = _mm512_loadu_si512((const void *)(xh + 64));
                    /* int32 sums are exact, so the order of these
                     * accumulations does not change the block's value */
                    sumi[i] = _mm512_dpwssd_epi32(sumi[i], _mm512_maddubs_epi16(u0, x0), s0);
                    sumi[i] = _mm512_dpwssd_epi32(sumi[i], _mm512_maddubs_epi16(u1, x1), s1);
                }
            }
            const float d6 = half_at(p + 208);
#pragma GCC unroll 4
            for (int i = 0; i < m; i++)
                acc[r * m + i] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[i]),
                                    _mm512_set1_ps(d6 * xd[i * (K / 256) + b]), acc[r * m + i]);
        }
    }
    for (int i = 0; i < nw * m; i++) out[i] = _mm512_reduce_add_ps(acc[i]);
}

static void dot_q6_k_4(const uint8_t *w, size_t wstride, const tr_mm_xq *x, long K,
                       const uint8_t *end, float *out) {
    dot_q6_k_rows(w, wstride, 4, x->q, x->s, x->bsum, K, 1, end, out);
}

/* [xs_j * odd_j (8) | -xsum_j (8)] per 256-block, as the K-quant dots
 * take them: Q4_K dots its high nibbles unshifted (16 * code), so odd
 * sub-blocks get 1/16 here (exact). */
static void kquant_xsx(int type, const float *xs, const float *xsum, long K, float *xsx) {
    const float odd = type == TR_Q4_K ? 1.0f / 16.0f : 1.0f;
    for (long b = 0; b < K / 256; b++)
        for (int j = 0; j < 8; j++) {
            xsx[16 * b + j] = xs[8 * b + j] * (j & 1 ? odd : 1.0f);
            xsx[16 * b + 8 + j] = -xsum[8 * b + j];
        }
}

/* One weight row of an integer-dot type against m rows of x prepared by
 * tr_mm_quant_x_rows_avx512; m a constant at each call site so the
 * per-row sums stay in registers. */
static inline __attribute__((always_inline)) void dot_rows_m(int type, const uint8_t *row,
                                                             const tr_mm_xq *x, long K, int m,
                                                             const uint8_t *end, float *out) {
    switch (type) {
    case TR_Q8_0:
        dot_q8_0_rows(row, x->q, x->s, K, m, end, out);
        break;
    case TR_Q4_K:
        dot_q45_k_xrows(row, x->q, x->s, K, 0, m, end, out);
        break;
    case TR_Q5_K:
        dot_q45_k_xrows(row, x->q, x->s, K, 1, m, end, out);
        break;
    default: /* TR_Q6_K */
        dot_q6_k_rows(row, 0, 1, x->q, x->s, x->bsum, K, m, end, out);
        break;
    }
}

void tr_mm_rows_int8_x_avx512(const tr_mm_w *w, const tr_mm_xq *x, float *y, long n0, long n1,
                              const float *bias) {
    const long K = (long)w->K;
    /* NULL where the hardware fetches these rows alone (int8_fetch_end) */
    const uint8_t *end = int8_fetch_end(w->data + (size_t)n1 * w->stride);
    switch (w->type) {
    case TR_Q8_0: {
        if (end) prefetch_first(w, n0, n1);
        for (long n = n0; n < n1; n++) {
            const uint8_t *row = w->data + (size_t)n * w->stride;
            if (!end && n + 1 < n1) _mm_prefetch((const char *)(row + w->stride), _MM_HINT_T0);
            float s;
            dot_rows_m(TR_Q8_0, row, x, K, 1, end, &s);
            y[n - n0] = s + (bias ? bias[n] : 0.0f);
        }
        return;
    }
    case TR_Q4_K:
    case TR_Q5_K: {
        const int five = w->type == TR_Q5_K;
        long n = n0;
        /* four rows a step: row i of each quarter of the range, so the
         * dot reads four streams in different pages (adjacent rows share
         * them): alternating call by call with adjacent rows on the 2-core
         * Xeon (Sapphire Rapids class), 2 threads, 5-8 % more read */
        const long q = (n1 - n0) / 4;
        for (int r = 0; r < 4 && q > 0; r++) prefetch_first(w, n0 + r * q, n1);
        for (long i = 0; i < q; i++) {
            float s[4];
            dot_q45_k_4(w->data + (size_t)(n0 + i) * w->stride, (size_t)q * w->stride, x->q, x->s,
                        K, five, end != NULL, s);
            for (int r = 0; r < 4; r++) y[i + r * q] = s[r] + (bias ? bias[n0 + i + r * q] : 0.0f);
        }
        n = n0 + 4 * q;
        for (; n < n1; n++) {
            float s;
            dot_q45_k_1(w->data + (size_t)n * w->stride, x->q, x->s, K, five, &s);
            y[n - n0] = s + (bias ? bias[n] : 0.0f);
        }
        return;
    }
    default: { /* TR_Q6_K: four rows a step, row i of each quarter of the range as for
                * Q4_K (four streams; Zen 5 host, 2 threads: 0.80-0.86 of the time of
                * one row at a time, mostly; four adjacent rows block by block took
                * 1.8-2.2 times as long) */
        const long q = (n1 - n0) / 4;
        for (int r = 0; r < 4 && q > 0; r++) prefetch_first(w, n0 + r * q, n1);
        if (q == 0) prefetch_first(w, n0, n1);
        for (long i = 0; i < q; i++) {
            float s[4];
            dot_q6_k_4(w->data + (size_t)(n0 + i) * w->stride, (size_t)q * w->stride, x, K, end, s);
            for (int r = 0; r < 4; r++) y[i + r * q] = s[r] + (bias ? bias[n0 + i + r * q] : 0.0f);
        }
        for (long n = n0 + 4 * q; n < n1; n++) {
            float s;
            dot_rows_m(TR_Q6_K, w->data + (size_t)n * w->stride, x, K, 1, end, &s);
            y[n - n0] = s + (bias ? bias[n] : 0.0f);
        }
        return;
    }
    }
}

int tr_mm_rows_int8_avx512(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                           long n1, const float *bias, float *scratch) {
    const long K = (long)w->K;
    /* scratch (K floats): xq (K bytes), then Q8_0's xs (K / 32 floats), the
     * Q4_K / Q5_K xs and xsx (K / 32 + K / 16 floats), or Q6_K's xd
     * (K / 256 floats) and bsum (K / 16 int16) */
    int8_t *xq = (int8_t *)scratch;
    float *xs = scratch + (K + 3) / 4;
    tr_mm_xq xv = {xq, xs, NULL};
    switch (w->type) {
    case TR_Q8_0:
        quantize_x_q8(x, K, xq, xs, false);
        break;
    case TR_Q4_K:
    case TR_Q5_K:
        quantize_x_q8(x, K, xq, xs, true);
        xv.s = xs + K / 32;
        kquant_xsx(w->type, xs, xsum, K, xv.s);
        break;
    case TR_Q6_K:
        xv.bsum = (int16_t *)(xs + K / 256);
        tr_mm_quant_x_rows_avx2(TR_Q6_K, x, K, 1, K, &xv);
        break;
    default:
        return 0;
    }
    tr_mm_rows_int8_x_avx512(w, &xv, y, n0, n1, bias);
    return 1;
}

bool tr_mm_quant_x_rows_avx512(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x) {
    if (type != TR_Q8_0 && type != TR_Q4_K && type != TR_Q5_K && type != TR_Q6_K) return false;
    if (type == TR_Q6_K) /* the AVX2 level's layout (dot_q6_k_rows) */
        return tr_mm_quant_x_rows_avx2(type, X, ldx, M, K, x);
    for (long m = 0; m < M; m++) {
        const float *xm = X + m * ldx;
        if (type == TR_Q8_0) {
            quantize_x_q8(xm, K, x->q + m * K, x->s + m * (K / 32), false);
            continue;
        }
        /* Q4_K / Q5_K: per 256-block its 8 scales and the exact sums of its
         * 8 groups, summed in order as tr_matmul's one-row path sums them */
        float *xsx = x->s + m * (K / 16);
        for (long b = 0; b < K / 256; b++) {
            float xs[8], xsum[8];
            quantize_x_q8(xm + 256 * b, 256, x->q + m * K + 256 * b, xs, true);
            for (int g = 0; g < 8; g++) {
                float s = 0.0f;
                for (int j = 0; j < 32; j++) s += xm[256 * b + 32 * g + j];
                xsum[g] = s;
            }
            kquant_xsx(type, xs, xsum, 256, xsx + 16 * b);
        }
    }
    return true;
}

void tr_mm_rows_int8_multi_avx512(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy,
                                  long n0, long n1, const float *bias) {
    const long K = (long)w->K;
    const uint8_t *end = int8_fetch_end(w->data + (size_t)n1 * w->stride);
    prefetch_first(w, n0, n1);
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float out[4];
        if (m == 2)
            dot_rows_m(w->type, row, x, K, 2, end, out);
        else if (m == 3)
            dot_rows_m(w->type, row, x, K, 3, end, out);
        else
            dot_rows_m(w->type, row, x, K, 4, end, out);
        const float bn = bias ? bias[n] : 0.0f;
        for (int i = 0; i < m; i++) Y[i * ldy + n] = out[i] + bn;
    }
}
