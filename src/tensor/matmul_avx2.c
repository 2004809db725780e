/* AVX2+FMA kernel table (compiled with -mavx2 -mfma -mf16c). */
#include <immintrin.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/q8_scales_x86.h"
#include "tensor/quant_internal.h"

#define MR 6
#define NR 16

/* 6 rows × 16 columns: 12 ymm accumulators, 2 weight vectors and one
 * broadcast per k step (the 16-register budget). The accumulators are
 * named scalars, not an array: GCC spilled an indexed array to the stack
 * on every k step (measured: 2.5× slower). */
static void kernel_avx2(const float *xp, const float *wp, int kc, float *y, long ldy, int mr,
                        int nr, const float *bias, int accumulate) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    /* Consecutive calls walk down the rows of Y (often a multiple of 4 KiB
     * apart, so they share L1 sets): fetch this tile's rows while the k
     * loop runs, or the final loads and stores stall on them. */
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(y + i * ldy), _MM_HINT_T0);
        _mm_prefetch((const char *)(y + i * ldy + NR - 1), _MM_HINT_T0);
    }
    /* one k step: 2 weight vectors, 6 broadcasts, 12 FMAs */
#define STEP(o)                                                                                    \
    do {                                                                                           \
        __m256 w0 = _mm256_load_ps(wp + (o)*NR), w1 = _mm256_load_ps(wp + (o)*NR + 8), xb;         \
        xb = _mm256_broadcast_ss(xp + (o)*MR);                                                     \
        c00 = _mm256_fmadd_ps(xb, w0, c00);                                                        \
        c01 = _mm256_fmadd_ps(xb, w1, c01);                                                        \
        xb = _mm256_broadcast_ss(xp + (o)*MR + 1);                                                 \
        c10 = _mm256_fmadd_ps(xb, w0, c10);                                                        \
        c11 = _mm256_fmadd_ps(xb, w1, c11);                                                        \
        xb = _mm256_broadcast_ss(xp + (o)*MR + 2);                                                 \
        c20 = _mm256_fmadd_ps(xb, w0, c20);                                                        \
        c21 = _mm256_fmadd_ps(xb, w1, c21);                                                        \
        xb = _mm256_broadcast_ss(xp + (o)*MR + 3);                                                 \
        c30 = _mm256_fmadd_ps(xb, w0, c30);                                                        \
        c31 = _mm256_fmadd_ps(xb, w1, c31);                                                        \
        xb = _mm256_broadcast_ss(xp + (o)*MR + 4);                                                 \
        c40 = _mm256_fmadd_ps(xb, w0, c40);                                                        \
        c41 = _mm256_fmadd_ps(xb, w1, c41);                                                        \
        xb = _mm256_broadcast_ss(xp + (o)*MR + 5);                                                 \
        c50 = _mm256_fmadd_ps(xb, w0, c50);                                                        \
        c51 = _mm256_fmadd_ps(xb, w1, c51);                                                        \
    } while (0)
    /* one step per iteration: unrolled, GCC spills accumulators. The X
     * tile streams in from L2 (the W panel stays in L1): ask for it ~10
     * steps ahead (past the end of the block is harmless). */
    for (int k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(xp + 64), _MM_HINT_T0);
        STEP(0);
        xp += MR;
        wp += NR;
    }
#undef STEP
    __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    if (nr == NR) {
        __m256 b0 = _mm256_setzero_ps(), b1 = b0;
        if (!accumulate && bias) {
            b0 = _mm256_loadu_ps(bias);
            b1 = _mm256_loadu_ps(bias + 8);
        }
        for (int i = 0; i < mr; i++) {
            float *yi = y + i * ldy;
            __m256 y0 = b0, y1 = b1;
            if (accumulate) {
                y0 = _mm256_loadu_ps(yi);
                y1 = _mm256_loadu_ps(yi + 8);
            }
            _mm256_storeu_ps(yi, _mm256_add_ps(y0, acc[i][0]));
            _mm256_storeu_ps(yi + 8, _mm256_add_ps(y1, acc[i][1]));
        }
        return;
    }
    float tile[MR][NR];
    for (int i = 0; i < mr; i++) {
        _mm256_storeu_ps(tile[i], acc[i][0]);
        _mm256_storeu_ps(tile[i] + 8, acc[i][1]);
        float *yi = y + i * ldy;
        for (int j = 0; j < nr; j++)
            yi[j] = (accumulate ? yi[j] : bias ? bias[j] : 0.0f) + tile[i][j];
    }
}

static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256 load_f16(const uint8_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* How far ahead of itself a matrix-vector dot fetches its weights. On the
 * 2-core Xeon (Sapphire Rapids class), 4096 against 2048, 2 threads,
 * ratio to the copy bandwidth averaged over alternating runs: at
 * 1x1280x51866 Q8_0 0.87 -> 0.98, Q4_K 0.85 -> 0.92, Q5_K 0.69 -> 0.78,
 * Q6_K 0.73 -> 0.84 (a busy host; a sweep of 2048-8192 had 4096 and 6144
 * best); F16 at 1x1024x4096 0.84 -> 0.89, at 1x1280x51866 0.90 -> 0.91
 * (quiet host, 6 alternations). */
#define PF_DIST 4096

/* end: where the dot fetches its row ahead (PF_DIST on), up to end; NULL
 * leaves it to the hardware (float_fetch_end). */
static inline __attribute__((always_inline)) float
dot_avx2_at(int type, const uint8_t *w, const float *x, long K, const uint8_t *end) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    float tail = 0.0f;
    /* eight chains: a 2 KB row is 16 iterations, and the wider body keeps
     * more of the row's loads in flight (~5 % more of the DRAM bandwidth on
     * the 2-core Zen 3 host). F32 takes the same order as F16, so an F16
     * row widened to floats dots to the same bits (the few-row path of
     * matmul.c widens a block once for several rows of x). */
    const float *f = (const float *)w;
    const bool h = type == TR_F16;
#define W8(o) (h ? load_f16(w + 2 * (o)) : _mm256_loadu_ps(f + (o)))
    __m256 a4 = _mm256_setzero_ps(), a5 = a4, a6 = a4, a7 = a4;
    for (; k + 64 <= K; k += 64) {
        if (end) { /* 64 values: 128 (F16) or 256 (F32) bytes */
            const uint8_t *p = w + (h ? 2 : 4) * k + PF_DIST;
            for (int l = 0; l < (h ? 2 : 4); l++)
                if (p + 64 * l < end) _mm_prefetch((const char *)(p + 64 * l), _MM_HINT_T0);
        }
        a0 = _mm256_fmadd_ps(W8(k), _mm256_loadu_ps(x + k), a0);
        a1 = _mm256_fmadd_ps(W8(k + 8), _mm256_loadu_ps(x + k + 8), a1);
        a2 = _mm256_fmadd_ps(W8(k + 16), _mm256_loadu_ps(x + k + 16), a2);
        a3 = _mm256_fmadd_ps(W8(k + 24), _mm256_loadu_ps(x + k + 24), a3);
        a4 = _mm256_fmadd_ps(W8(k + 32), _mm256_loadu_ps(x + k + 32), a4);
        a5 = _mm256_fmadd_ps(W8(k + 40), _mm256_loadu_ps(x + k + 40), a5);
        a6 = _mm256_fmadd_ps(W8(k + 48), _mm256_loadu_ps(x + k + 48), a6);
        a7 = _mm256_fmadd_ps(W8(k + 56), _mm256_loadu_ps(x + k + 56), a7);
    }
    a0 = _mm256_add_ps(a0, a4);
    a1 = _mm256_add_ps(a1, a5);
    a2 = _mm256_add_ps(a2, a6);
    a3 = _mm256_add_ps(a3, a7);
    for (; k + 32 <= K; k += 32) {
        a0 = _mm256_fmadd_ps(W8(k), _mm256_loadu_ps(x + k), a0);
        a1 = _mm256_fmadd_ps(W8(k + 8), _mm256_loadu_ps(x + k + 8), a1);
        a2 = _mm256_fmadd_ps(W8(k + 16), _mm256_loadu_ps(x + k + 16), a2);
        a3 = _mm256_fmadd_ps(W8(k + 24), _mm256_loadu_ps(x + k + 24), a3);
    }
#undef W8
    for (; k < K; k++) tail += (h ? half_at(w + 2 * k) : f[k]) * x[k];
    return hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) + tail;
}

static float dot_avx2(int type, const uint8_t *w, const float *x, long K) {
    return dot_avx2_at(type, w, x, K, NULL);
}

/* ---- matrix-vector with integer dot products ---- */

/* Quantize x to int8 per 32-element group (xs[g] = amax/127, rounded to
 * nearest) so the Q8_0 and K-quant row dots can multiply bytes
 * (_mm256_maddubs_epi16) instead of widening every weight to float. The
 * extra rounding (~0.4% of each x, random) is far below the weights' own
 * quantization error; the same scheme as the AVX-512 table's. */
static void quantize_x_q8(const float *x, long K, int8_t *xq, float *xs) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        __m256 v0 = _mm256_loadu_ps(xg), v1 = _mm256_loadu_ps(xg + 8);
        __m256 v2 = _mm256_loadu_ps(xg + 16), v3 = _mm256_loadu_ps(xg + 24);
        __m256 m =
            _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                          _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h), xs_g = amax / 127.0f;
        if (amax < 0x1p-100f) { /* 127/amax would overflow below ~4e-37: scale up (exact) */
            const __m256 up = _mm256_set1_ps(0x1p64f);
            v0 = _mm256_mul_ps(v0, up), v1 = _mm256_mul_ps(v1, up);
            v2 = _mm256_mul_ps(v2, up), v3 = _mm256_mul_ps(v3, up);
            amax *= 0x1p64f;
        }
        __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
        /* the packs work per 128-bit lane: dwords come out as
         * i0 lo, i1 lo, i2 lo, i3 lo, i0 hi, ... and are put back in order */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(xq + 32 * g), _mm256_permutevar8x32_epi32(p, order));
        xs[g] = xs_g;
    }
}

/* x as int8 in 256-element blocks for the K-quant row dots (the layout of
 * ggml's q8_K): one scale per block (xd[b] = amax/127), and the sums of the
 * int8 values over each 16 elements (bsum, 16 per block), so a weight
 * block's min or offset term is an integer dot of its 8-bit mins/scales
 * with bsum. One scale per 256 (not per 32) lets every sub-block's 6- or
 * 8-bit scale be applied in int32 (_mm256_madd_epi16) and the block's sum
 * be converted to float once; the result is then exactly the dot of the
 * dequantized weights with the rounded x. K is a multiple of 256. */
static void quantize_x_q8k(const float *x, long K, int8_t *xq, float *xd, int16_t *bsum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (long b = 0; b < K / 256; b++) {
        const float *xb = x + 256 * b;
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < 256; i += 8)
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float amax = _mm_cvtss_f32(h);
        /* 127/amax overflows for amax below ~4e-37: scale such blocks up
         * by 2^64 first (exact) */
        float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        __m256 vpre = _mm256_set1_ps(pre);
        __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / (amax * pre) : 0.0f);
        for (int g = 0; g < 8; g++) {
            const float *xg = xb + 32 * g;
            __m256i i0 =
                _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xg), vpre), id));
            __m256i i1 =
                _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xg + 8), vpre), id));
            __m256i i2 = _mm256_cvtps_epi32(
                _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xg + 16), vpre), id));
            __m256i i3 = _mm256_cvtps_epi32(
                _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xg + 24), vpre), id));
            /* sums of elements 0-15 and 16-31 of the group */
            __m256i s01 = _mm256_add_epi32(i0, i1), s23 = _mm256_add_epi32(i2, i3);
            __m256i hs = _mm256_hadd_epi32(s01, s23); /* [s01 pairs | s23 pairs] per lane */
            hs = _mm256_hadd_epi32(hs, hs);
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(hs), _mm256_extracti128_si256(hs, 1));
            bsum[16 * b + 2 * g] = (int16_t)_mm_cvtsi128_si32(t);
            bsum[16 * b + 2 * g + 1] = (int16_t)_mm_extract_epi32(t, 1);
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
            _mm256_storeu_si256((__m256i *)(xq + 256 * b + 32 * g),
                                _mm256_permutevar8x32_epi32(p, order));
        }
        xd[b] = amax / 127.0f;
    }
}

/* Eight int32 lanes of sum(u8 codes * s8 x) over 32 bytes. */
static inline __m256i dot_u8s8(__m256i codes, __m256i xq) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, xq), _mm256_set1_epi16(1));
}

/* The lines of [p, p + len) moved PF_DIST on, at most up to end (the end
 * of the caller's rows: a fetch past it would read what another thread
 * reads; past it here only by the lines of one step), for a dot step that
 * reads len bytes at p: unrolled, no test per line. A line of the step's
 * last bytes that the next step begins in is that step's first fetch. A
 * dot that fetches as it goes keeps the DRAM stream evenly busy: fetching
 * a whole row at a time instead, rows of K >= 2048 Q8_0 values read ~20 %
 * below a plain read of the same bytes on the 2-core Zen 3 host (Q6_K
 * likewise), and matched it fetched this way. Into L1 (T0): with the
 * K-quants' two streams (rows_int8_type) T0 read 1-3 % more than T1 (into
 * L2) on the 2-core Xeon, and Q8_0 was 6 % faster with its rows in L2. */
static inline __attribute__((always_inline)) void fetch_at(const uint8_t *p, size_t len,
                                                           const uint8_t *end) {
    uintptr_t a = (uintptr_t)p + PF_DIST;
    const uintptr_t stop = (uintptr_t)end - 1;
    if (a > stop) a = stop;
#pragma GCC unroll 4
    for (size_t o = 0; o < len; o += 64) _mm_prefetch((const char *)(a + o), _MM_HINT_T0);
}

/* Q8_0 row w against m (1..4) rows of the int8 x (row i: xq + i*K,
 * xs + i*(K/32)): per block d * xs_b * <q, xq>, the weight signs moved onto
 * x (maddubs multiplies unsigned by signed bytes); even blocks sum in one
 * chain, odd in the other. Each weight block is loaded once for all rows,
 * and a row's value does not depend on m: a batched decode step gives each
 * row the bits of its one-row step. Four blocks a step: their d converted
 * and multiplied by xs at once (the same products), one fetch ahead up to
 * end (fetch_at). */
static inline __attribute__((always_inline)) void dot_q8_0_rows(const uint8_t *w, const int8_t *xq,
                                                                const float *xs, long K, int m,
                                                                const uint8_t *end, float *out) {
    __m256 acc0[4], acc1[4];
    for (int i = 0; i < m; i++) acc0[i] = acc1[i] = _mm256_setzero_ps();
    long nb = K / 32, b = 0;
    for (; b + 4 <= nb; b += 4) {
        const uint8_t *p = w + b * 34;
        fetch_at(p, 136, end);
        __m256i q[4], u[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            q[j] = _mm256_loadu_si256((const __m256i *)(p + 34 * j + 2));
            u[j] = _mm256_abs_epi8(q[j]);
        }
        const __m128 d4 = tr_q8_scales4(p);
        for (int i = 0; i < m; i++) {
            const int8_t *xi = xq + i * K + 32 * b;
            const __m256 sc = _mm256_castps128_ps256(_mm_mul_ps(d4, _mm_loadu_ps(xs + i * nb + b)));
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(xi + 32 * j));
                __m256i e = dot_u8s8(u[j], _mm256_sign_epi8(x, q[j]));
                __m256 sj = _mm256_permutevar8x32_ps(sc, _mm256_set1_epi32(j));
                if (j & 1)
                    acc1[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), sj, acc1[i]);
                else
                    acc0[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), sj, acc0[i]);
            }
        }
    }
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *p = w + b * 34;
        __m256i q0 = _mm256_loadu_si256((const __m256i *)(p + 2));
        __m256i q1 = _mm256_loadu_si256((const __m256i *)(p + 36));
        __m256i u0 = _mm256_abs_epi8(q0), u1 = _mm256_abs_epi8(q1);
        const float d0 = half_at(p), d1 = half_at(p + 34);
        for (int i = 0; i < m; i++) {
            const int8_t *xi = xq + i * K + 32 * b;
            const float *si = xs + i * (K / 32) + b;
            __m256i x0 = _mm256_loadu_si256((const __m256i *)xi);
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(xi + 32));
            __m256i e0 = dot_u8s8(u0, _mm256_sign_epi8(x0, q0));
            __m256i e1 = dot_u8s8(u1, _mm256_sign_epi8(x1, q1));
            acc0[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e0), _mm256_set1_ps(d0 * si[0]), acc0[i]);
            acc1[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e1), _mm256_set1_ps(d1 * si[1]), acc1[i]);
        }
    }
    for (; b < nb; b++) { /* odd last block */
        const uint8_t *p = w + b * 34;
        __m256i q = _mm256_loadu_si256((const __m256i *)(p + 2)), u = _mm256_abs_epi8(q);
        const float d = half_at(p);
        for (int i = 0; i < m; i++) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + i * K + 32 * b));
            __m256i e = dot_u8s8(u, _mm256_sign_epi8(xv, q));
            acc0[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e),
                                      _mm256_set1_ps(d * xs[i * (K / 32) + b]), acc0[i]);
        }
    }
    for (int i = 0; i < m; i++) out[i] = hsum256(_mm256_add_ps(acc0[i], acc1[i]));
}

/* Bit `bit` (0..7) of every byte of v, as 16 in that byte (0 where the
 * bit is clear): a 16-bit shift then a byte mask, since a shift by at most
 * 4 moves no byte's bit into another's bit 4. */
static inline __attribute__((always_inline)) __m256i bit_to4(__m256i v, int bit) {
    const __m256i b4 = _mm256_set1_epi8(16);
    if (bit == 4) return _mm256_and_si256(v, b4);
    return _mm256_and_si256(bit < 4 ? _mm256_slli_epi16(v, 4 - bit) : _mm256_srli_epi16(v, bit - 4),
                            b4);
}

/* Q4_K / Q5_K rows wr[0..nw) against m rows of the q8_K-like x (row i:
 * xq + i*K, xd + i*(K/256), bsum + i*(K/16)); nw * m <= 4, out[r*m + i]:
 * per 256-block
 *   xd * (d * sum_j sc_j <q_j, xq_j> - dmin * sum_j mn_j * bsum32_j)
 * over the 8 sub-blocks j, all in int32 but the last step. Sub-block 2c
 * holds the low nibbles of code bytes [32c, 32c+32), 2c+1 the high ones;
 * Q5_K adds bits 2c and 2c+1 of qh as the fifth bit. maddubs cannot
 * saturate: 2 * 31 * 127 < 32767. The codes and scales are unpacked once
 * for all rows of x, and a row's value does not depend on m or nw (nw = 2:
 * two weight rows block by block, sharing the x loads and the loop). */
static inline __attribute__((always_inline)) void
dot_q45_k_rows(const uint8_t *const *wr, int nw, const int8_t *xq, const float *xd,
               const int16_t *bsum, long K, int five, int m, const uint8_t *end, float *out) {
    const size_t bsz = five ? 176 : 144;
    __m256 acc[4];
    for (int i = 0; i < nw * m; i++) acc[i] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    /* d, dmin and the 6-bit scales and mins (tr_kq_scale_min) of all 8
     * sub-blocks at once, from the first 16 bytes as words [dm, a, b, c]:
     *   sc0-3 = a & 63            sc4-7 = (c & 15) | ((a >> 2) & 0x30)
     *   mn0-3 = b & 63            mn4-7 = (c >> 4 & 15) | ((b >> 2) & 0x30)
     * (the two rows' headers in one 128-bit lane each when nw = 2) */
    const __m256i sh_w = _mm256_set_epi32(4, 0, 0, 0, 4, 0, 0, 0);
    const __m256i mask_w = _mm256_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f,
                                            0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m256i top_w =
        _mm256_set_epi32(0x30303030, 0, 0x30303030, 0, 0x30303030, 0, 0x30303030, 0);
    /* sub-block j's scale as the word pair (sc_j, sc_j) in spl[4r + j]
     * (j < 4) or sph[4r + j - 4], read back as a broadcast load (a load
     * port, where a shuffle per sub-block took a vector ALU slot) */
    const __m256i pair_lo =
        _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 0, -1, 0, -1, 1,
                         -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1);
    const __m256i pair_hi =
        _mm256_setr_epi8(4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1, 4, -1, 4, -1, 5,
                         -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
    _Alignas(32) int32_t spl[8], sph[8];
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *pr[2];
        for (int r = 0; r < nw; r++) {
            pr[r] = wr[r] + b * bsz;
            fetch_at(pr[r], bsz, end);
        }
        __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)pr[0]));
        if (nw == 2) v = _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)pr[1]), 1);
        __m256i pw = _mm256_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1)); /* a c b c */
        __m256i qw = _mm256_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1)); /* a a b b */
        __m256i scmn = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi32(pw, sh_w), mask_w),
                                       _mm256_and_si256(_mm256_srli_epi32(qw, 2), top_w));
        /* the mins doubled, one per 16-element x sum */
        __m256i mn2 = _mm256_unpackhi_epi8(scmn, scmn), mnw[2];
        if (nw == 2) {
            _mm256_store_si256((__m256i *)spl, _mm256_shuffle_epi8(scmn, pair_lo));
            _mm256_store_si256((__m256i *)sph, _mm256_shuffle_epi8(scmn, pair_hi));
            mnw[1] = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(mn2, 1));
        } else {
            const __m128i s1 = _mm256_castsi256_si128(scmn);
            _mm_store_si128((__m128i *)spl, _mm_shuffle_epi8(s1, _mm256_castsi256_si128(pair_lo)));
            _mm_store_si128((__m128i *)sph, _mm_shuffle_epi8(s1, _mm256_castsi256_si128(pair_hi)));
        }
        mnw[0] = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(mn2));
        __asm__("" : "+m"(spl), "+m"(sph)); /* or GCC forwards the stores in registers */
        /* two rows against one x: both rows' d, dmin converted and scaled
         * by xd at once (lanes dA, dminA, dB, dminB; the same products) */
        __m128 dm2 = _mm_setzero_ps();
        if (nw == 2 && m == 1) {
            const __m256i at04 = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
            dm2 = _mm_mul_ps(
                _mm_cvtph_ps(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, at04))),
                _mm_set1_ps(xd[b]));
        }
        for (int r = 0; r < nw; r++) {
            const uint8_t *p = pr[r], *qs = p + (five ? 48 : 16);
            __m256i qh = _mm256_setzero_si256();
            if (five) qh = _mm256_loadu_si256((const __m256i *)(p + 16));
            __m256i sumi[4];
            for (int i = 0; i < m; i++) sumi[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
                __m256i lo = _mm256_and_si256(q, low4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
                if (five) { /* bits 2c and 2c+1 of qh moved to bit 4 (see bit_to4) */
                    lo = _mm256_or_si256(lo, bit_to4(qh, 2 * c));
                    hi = _mm256_or_si256(hi, bit_to4(qh, 2 * c + 1));
                }
                __m256i s_lo =
                    _mm256_set1_epi32(c < 2 ? spl[4 * r + 2 * c] : sph[4 * r + 2 * c - 4]);
                __m256i s_hi =
                    _mm256_set1_epi32(c < 2 ? spl[4 * r + 2 * c + 1] : sph[4 * r + 2 * c - 3]);
                for (int i = 0; i < m; i++) {
                    const int8_t *xb = xq + i * K + 256 * b;
                    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xb + 64 * c));
                    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xb + 64 * c + 32));
                    __m256i d0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), s_lo);
                    __m256i d1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), s_hi);
                    sumi[i] = _mm256_add_epi32(sumi[i], _mm256_add_epi32(d0, d1));
                }
            }
            for (int i = 0; i < m; i++) {
                const int16_t *bs = bsum + i * (K / 16) + 16 * b;
                __m256i mins = _mm256_madd_epi16(mnw[r], _mm256_loadu_si256((const __m256i *)bs));
                __m256 dv, mv; /* d * xd and dmin * xd in every lane */
                if (nw == 2 && m == 1) {
                    const __m256 q = _mm256_castps128_ps256(dm2);
                    dv = _mm256_permutevar8x32_ps(q, _mm256_set1_epi32(2 * r));
                    mv = _mm256_permutevar8x32_ps(q, _mm256_set1_epi32(2 * r + 1));
                } else {
                    const __m128 dm = _mm_mul_ps(_mm_cvtph_ps(_mm_loadu_si128((const __m128i *)p)),
                                                 _mm_set1_ps(xd[i * (K / 256) + b]));
                    dv = _mm256_broadcastss_ps(dm);
                    mv = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
                }
                /* one add on the loop-carried chain */
                __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(sumi[i]), dv);
                t = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), mv, t);
                acc[r * m + i] = _mm256_add_ps(acc[r * m + i], t);
            }
        }
    }
    for (int i = 0; i < nw * m; i++) out[i] = hsum256(acc[i]);
}

/* Q6_K rows wr[0..nw) against m rows of the q8_K-like x (laid out as for
 * dot_q45_k_rows; nw * m <= 4, out[r*m + i]): per 256-block d * xd *
 * (sum_g sc_g <u_g, xq_g> - 32 * sum_g sc_g * bsum_g) over the 16 groups g
 * of 16, with the unsigned 6-bit codes u = q + 32 (maddubs: 2 * 63 * 127 <
 * 32767). Half h holds elements [128h, 128h+128): code bytes ql[64h..] give
 * the low nibbles of four 32-element runs, qh[32h..] two bits each.
 * Unpacked once for all rows of x; a row's value does not depend on m or
 * nw. */
static inline __attribute__((always_inline)) void dot_q6_k_rows(const uint8_t *const *wr, int nw,
                                                                const int8_t *xq, const float *xd,
                                                                const int16_t *bsum, long K, int m,
                                                                const uint8_t *end, float *out) {
    __m256 acc[4];
    for (int i = 0; i < nw * m; i++) acc[i] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
    /* run k of a half: low 16 bytes take scale 2k, high 16 bytes 2k+1 */
    const __m256i pick0 = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                                           3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    const __m256i step = _mm256_set1_epi8(4);
    for (long b = 0; b < K / 256; b++) {
        for (int r = 0; r < nw; r++) {
            const uint8_t *p = wr[r] + b * 210;
            fetch_at(p, 210, end);
            __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 192)));
            __m256i sumi[4];
            for (int i = 0; i < m; i++) sumi[i] = _mm256_setzero_si256();
            for (int h = 0; h < 2; h++) {
                __m256i ql0 = _mm256_loadu_si256((const __m256i *)(p + 64 * h));
                __m256i ql1 = _mm256_loadu_si256((const __m256i *)(p + 64 * h + 32));
                __m256i qh = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h));
                __m256i u[4];
                u[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2));
                u[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2));
                u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                       _mm256_and_si256(qh, top2));
                u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2));
                __m256i sch = _mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(sc, 1)
                                                            : _mm256_castsi256_si128(sc));
                __m256i pick = pick0;
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m256i sk = _mm256_shuffle_epi8(sch, pick);
                    for (int i = 0; i < m; i++) {
                        const int8_t *xb = xq + i * K + 256 * b;
                        __m256i xv = _mm256_loadu_si256((const __m256i *)(xb + 128 * h + 32 * k));
                        __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], xv), sk);
                        sumi[i] = _mm256_add_epi32(sumi[i], d);
                    }
                    pick = _mm256_add_epi8(pick, step);
                }
            }
            const float d6 = half_at(p + 208);
            for (int i = 0; i < m; i++) {
                const int16_t *bs = bsum + i * (K / 16) + 16 * b;
                __m256i off = _mm256_madd_epi16(sc, _mm256_loadu_si256((const __m256i *)bs));
                __m256i si = _mm256_sub_epi32(sumi[i], _mm256_slli_epi32(off, 5));
                acc[r * m + i] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(si),
                                    _mm256_set1_ps(d6 * xd[i * (K / 256) + b]), acc[r * m + i]);
            }
        }
    }
    for (int i = 0; i < nw * m; i++) out[i] = hsum256(acc[i]);
}

/* One weight row of an integer-dot type against m rows of the prepared x,
 * m a constant at each call site so the per-row sums stay in registers
 * (m = 1: the matrix-vector rows). */
static inline __attribute__((always_inline)) void dot_rows_m(int type, const uint8_t *row,
                                                             const tr_mm_xq *x, long K, int m,
                                                             const uint8_t *end, float *out) {
    switch (type) {
    case TR_Q8_0:
        dot_q8_0_rows(row, x->q, x->s, K, m, end, out);
        break;
    case TR_Q4_K:
        dot_q45_k_rows(&row, 1, x->q, x->s, x->bsum, K, 0, m, end, out);
        break;
    case TR_Q5_K:
        dot_q45_k_rows(&row, 1, x->q, x->s, x->bsum, K, 1, m, end, out);
        break;
    default: /* TR_Q6_K */
        dot_q6_k_rows(&row, 1, x->q, x->s, x->bsum, K, m, end, out);
        break;
    }
}

static void deq_avx2(int type, const void *src, float *dst, int64_t n) {
    if (!tr_dequantize_row_avx2(type, src, dst, n)) tr_dequantize_row_ref(type, src, dst, n);
}

/* The first bytes of rows [n0, n1) at once: a range of a few dozen rows
 * (an LLM step's claim) would otherwise start at the latency of one stream
 * ramping up. */
static inline void prefetch_first(const tr_mm_w *w, long n0, long n1, size_t bytes) {
    const size_t len = (size_t)(n1 - n0) * w->stride;
    for (size_t o = 0; o < bytes && o < len; o += 64)
        _mm_prefetch((const char *)(w->data + (size_t)n0 * w->stride + o), _MM_HINT_T0);
}

/* The matrix-vector rows [n0, n1) of one integer-dot type (a constant at
 * each call below: a function of its own per type, so one type's loop does
 * not change the registers and code layout of another's); the K-quants two
 * weight rows at a time (nw = 2). Every row has the bits of its one-row
 * dot, whichever rows it is paired with. */
static inline __attribute__((always_inline)) void rows_int8_type(int type, const tr_mm_w *w,
                                                                 const tr_mm_xq *x, float *y,
                                                                 long n0, long n1,
                                                                 const float *bias) {
    /* The integer dots fetch their rows ahead as they go (fetch_at): they
     * leave too little slack for the hardware prefetcher alone to keep the
     * stream from DRAM busy. */
    const uint8_t *end = w->data + (size_t)n1 * w->stride;
    prefetch_first(w, n0, n1, PF_DIST);
    const long K = (long)w->K;
    long n = n0;
    if (type != TR_Q8_0) {
        /* the pairs: row i of each half of the range, so the dot reads two
         * streams in different pages (a row and the next one share the
         * pages, which the hardware fetches as one stream): alternating call
         * by call with adjacent pairs on the 2-core Xeon (Sapphire Rapids
         * class, a loaded host), 1 and 2 threads, Q4_K / Q5_K / Q6_K read
         * 3-13 % more */
        const long h = (n1 - n0) / 2;
        prefetch_first(w, n0 + h, n1, PF_DIST);
        for (long i = 0; i < h; i++) {
            const long na = n0 + i, nb = n0 + h + i;
            const uint8_t *wr[2] = {w->data + (size_t)na * w->stride,
                                    w->data + (size_t)nb * w->stride};
            float s[2];
            if (type == TR_Q6_K)
                dot_q6_k_rows(wr, 2, x->q, x->s, x->bsum, K, 1, end, s);
            else
                dot_q45_k_rows(wr, 2, x->q, x->s, x->bsum, K, type == TR_Q5_K, 1, end, s);
            y[na - n0] = s[0] + (bias ? bias[na] : 0.0f);
            y[nb - n0] = s[1] + (bias ? bias[nb] : 0.0f);
        }
        n = n0 + 2 * h;
    }
    for (; n < n1; n++) {
        float s;
        dot_rows_m(type, w->data + (size_t)n * w->stride, x, K, 1, end, &s);
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
}

static __attribute__((noinline)) void rows_int8_q8_0(const tr_mm_w *w, const tr_mm_xq *x, float *y,
                                                     long n0, long n1, const float *bias) {
    rows_int8_type(TR_Q8_0, w, x, y, n0, n1, bias);
}
static __attribute__((noinline)) void rows_int8_q4_k(const tr_mm_w *w, const tr_mm_xq *x, float *y,
                                                     long n0, long n1, const float *bias) {
    rows_int8_type(TR_Q4_K, w, x, y, n0, n1, bias);
}
static __attribute__((noinline)) void rows_int8_q5_k(const tr_mm_w *w, const tr_mm_xq *x, float *y,
                                                     long n0, long n1, const float *bias) {
    rows_int8_type(TR_Q5_K, w, x, y, n0, n1, bias);
}
static __attribute__((noinline)) void rows_int8_q6_k(const tr_mm_w *w, const tr_mm_xq *x, float *y,
                                                     long n0, long n1, const float *bias) {
    rows_int8_type(TR_Q6_K, w, x, y, n0, n1, bias);
}

void tr_mm_rows_int8_x_avx2(const tr_mm_w *w, const tr_mm_xq *x, float *y, long n0, long n1,
                            const float *bias) {
    switch (w->type) {
    case TR_Q8_0:
        rows_int8_q8_0(w, x, y, n0, n1, bias);
        break;
    case TR_Q4_K:
        rows_int8_q4_k(w, x, y, n0, n1, bias);
        break;
    case TR_Q5_K:
        rows_int8_q5_k(w, x, y, n0, n1, bias);
        break;
    default: /* TR_Q6_K */
        rows_int8_q6_k(w, x, y, n0, n1, bias);
        break;
    }
}

static int rows_avx2(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                     long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    (void)xsum; /* the K-quant dots take their min terms from the int8 x sums */
    /* scratch (K floats): xq (K bytes), then Q8_0's xs (K/32 floats) or the
     * K-quants' xd (K/256 floats) and bsum (K/16 int16) */
    int8_t *xq = (int8_t *)scratch;
    float *xs = scratch + (K + 3) / 4;
    int16_t *bsum = (int16_t *)(xs + K / 256);
    tr_mm_xq xv = {xq, xs, bsum};
    if (tr_mm_quant_x_rows_avx2(w->type, x, K, 1, K, &xv)) {
        tr_mm_rows_int8_x_avx2(w, &xv, y, n0, n1, bias);
        return 1;
    }
    /* F16 and F32 lost 2-5 % to a software fetch on the Zen 3 host (AMD:
     * they take only the first 4 KiB at once); on an Intel Xeon (Sapphire
     * Rapids class) F16 without it reached only 0.58-0.68 of the copy
     * bandwidth, so there they fetch ahead too. */
    const uint8_t *float_end = tr_cpu_get_features()->amd ? NULL : w->data + (size_t)n1 * w->stride;
    prefetch_first(w, n0, n1, PF_DIST);
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float s;
        if (w->type == TR_F32 || w->type == TR_F16) {
            s = float_end ? dot_avx2_at(w->type, row, x, K, float_end)
                          : dot_avx2(w->type, row, x, K);
        } else { /* dequantize into L1 scratch (x is not quantized), then an F32 dot */
            deq_avx2(w->type, row, scratch, w->K);
            s = dot_avx2(TR_F32, (const uint8_t *)scratch, x, K);
        }
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

/* Q8_0 rows against an x quantized once (quantize_x_q8) for many calls. */
void tr_mm_quant_x_avx2(const float *x, long K, int8_t *xq, float *xs) {
    quantize_x_q8(x, K, xq, xs);
}

void tr_mm_rows_q8_avx2(const tr_mm_w *w, const int8_t *xq, const float *xs, float *y, long n0,
                        long n1) {
    const uint8_t *end = w->data + (size_t)n1 * w->stride;
    prefetch_first(w, n0, n1, PF_DIST); /* then the dot fetches on, as in rows_avx2 */
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float s;
        dot_q8_0_rows(row, xq, xs, (long)w->K, 1, end, &s);
        y[n - n0] = s + 0.0f;
    }
}

bool tr_mm_quant_x_rows_avx2(int type, const float *X, long ldx, long M, long K, tr_mm_xq *x) {
    if (type != TR_Q8_0 && type != TR_Q4_K && type != TR_Q5_K && type != TR_Q6_K) return false;
    for (long m = 0; m < M; m++) {
        if (type == TR_Q8_0)
            quantize_x_q8(X + m * ldx, K, x->q + m * K, x->s + m * (K / 32));
        else
            quantize_x_q8k(X + m * ldx, K, x->q + m * K, x->s + m * (K / 256),
                           x->bsum + m * (K / 16));
    }
    return true;
}

void tr_mm_rows_int8_multi_avx2(const tr_mm_w *w, const tr_mm_xq *x, int m, float *Y, long ldy,
                                long n0, long n1, const float *bias) {
    const long K = (long)w->K;
    const uint8_t *end = w->data + (size_t)n1 * w->stride;
    prefetch_first(w, n0, n1, PF_DIST);
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

/* 8×8 block of the pack transpose: rows r < nr of src (pitch apart), k <
 * kn, to dst[k*ld + r] for all 8 r (missing rows 0). */
static void transpose8(const float *src, long pitch, int nr, int kn, float *dst, long ld) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i km = _mm256_cmpgt_epi32(_mm256_set1_epi32(kn), lane);
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = i < nr ? _mm256_maskload_ps(src + i * pitch, km) : _mm256_setzero_ps();
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* u[i + c]: k = c and c + 4 of rows i..i+3 */
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        if (c < kn) _mm256_store_ps(dst + c * ld, _mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
        if (c + 4 < kn)
            _mm256_store_ps(dst + (c + 4) * ld, _mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
    }
}

/* The table's 16×16 pack transpose, as four 8×8 blocks. */
static void transpose16_avx2(const float *src, long pitch, int nr, int kn, float *dst, long ld) {
    for (int kb = 0; kb < 16 && kb < kn; kb += 8)
        for (int rb = 0; rb < 16; rb += 8) {
            int rn = nr - rb < 0 ? 0 : nr - rb > 8 ? 8 : nr - rb;
            transpose8(src + (long)rb * pitch + kb, pitch, rn, kn - kb, dst + kb * ld + rb, ld);
        }
}

/* nc is unused: matmul.c sizes AVX2 blocks from the host's caches. */
const tr_mm_isa tr_mm_isa_avx2 = {.name = "avx2",
                                  .mr = MR,
                                  .nr = NR,
                                  .nc = 24 * NR,
                                  .kernel = kernel_avx2,
                                  .rows = rows_avx2,
                                  .f16_widen = true,
                                  .deq = deq_avx2,
                                  .transpose16 = transpose16_avx2,
                                  .quant_x_rows = tr_mm_quant_x_rows_avx2,
                                  .rows_int8_multi = tr_mm_rows_int8_multi_avx2,
                                  .rows_int8 = tr_mm_rows_int8_x_avx2,
                                  .qgemm = &tr_mm_qgemm_avx2,
                                  .qgemm_vnni = &tr_mm_qgemm_avx_vnni};
