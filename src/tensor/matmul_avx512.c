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

static inline __m512 q8_lo(const uint8_t *q) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q)));
}

static float dot_q8_0(const uint8_t *w, const float *x, long K) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    long nb = K / 32, b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *p = w + b * 34;
        const float *xb = x + b * 32;
        __m512 t0 = _mm512_mul_ps(q8_lo(p + 2), _mm512_loadu_ps(xb));
        t0 = _mm512_fmadd_ps(q8_lo(p + 18), _mm512_loadu_ps(xb + 16), t0);
        __m512 t1 = _mm512_mul_ps(q8_lo(p + 36), _mm512_loadu_ps(xb + 32));
        t1 = _mm512_fmadd_ps(q8_lo(p + 52), _mm512_loadu_ps(xb + 48), t1);
        a0 = _mm512_fmadd_ps(t0, _mm512_set1_ps(half_at(p)), a0);
        a1 = _mm512_fmadd_ps(t1, _mm512_set1_ps(half_at(p + 34)), a1);
    }
    for (; b < nb; b++) {
        const uint8_t *p = w + b * 34;
        const float *xb = x + b * 32;
        __m512 t0 = _mm512_mul_ps(q8_lo(p + 2), _mm512_loadu_ps(xb));
        t0 = _mm512_fmadd_ps(q8_lo(p + 18), _mm512_loadu_ps(xb + 16), t0);
        a0 = _mm512_fmadd_ps(t0, _mm512_set1_ps(half_at(p)), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

static inline __m512 u8_to_ps(__m128i v) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

/* Q4_K: sum_j d*sc_j * <q_j, x_j> - dmin*mn_j * sum(x_j); the x sums come
 * precomputed per 32-element group. */
static float dot_q4_k(const uint8_t *w, const float *x, const float *xsum, long K) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    float mins = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (long b = 0; b < K / 256; b++) {
        const uint8_t *p = w + b * 144, *qs = p + 16;
        const float *xb = x + b * 256;
        float d = half_at(p), dmin = half_at(p + 2);
        for (int c = 0; c < 4; c++) {
            int sc0, mn0, sc1, mn1;
            tr_kq_scale_min(2 * c, p + 4, &sc0, &mn0);
            tr_kq_scale_min(2 * c + 1, p + 4, &sc1, &mn1);
            __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            const float *xc = xb + 64 * c;
            __m512 t0 = _mm512_mul_ps(u8_to_ps(_mm256_castsi256_si128(lo)), _mm512_loadu_ps(xc));
            t0 = _mm512_fmadd_ps(u8_to_ps(_mm256_extracti128_si256(lo, 1)),
                                 _mm512_loadu_ps(xc + 16), t0);
            __m512 t1 =
                _mm512_mul_ps(u8_to_ps(_mm256_castsi256_si128(hi)), _mm512_loadu_ps(xc + 32));
            t1 = _mm512_fmadd_ps(u8_to_ps(_mm256_extracti128_si256(hi, 1)),
                                 _mm512_loadu_ps(xc + 48), t1);
            acc0 = _mm512_fmadd_ps(t0, _mm512_set1_ps(d * (float)sc0), acc0);
            acc1 = _mm512_fmadd_ps(t1, _mm512_set1_ps(d * (float)sc1), acc1);
            const float *xs = xsum + b * 8 + 2 * c;
            mins += dmin * ((float)mn0 * xs[0] + (float)mn1 * xs[1]);
        }
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) - mins;
}

static int rows_avx512(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                       long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    switch (w->type) {
    case TR_F32:
    case TR_F16:
    case TR_Q8_0:
    case TR_Q4_K:
        break;
    default:
        return 0;
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
            s = dot_q8_0(row, x, K);
            break;
        default:
            s = dot_q4_k(row, x, xsum, K);
            break;
        }
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

static void deq_avx512(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    if (type == TR_F16) {
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load_f16(p + 2 * i));
        if (i < n) {
            __mmask16 m = tail_mask(n - i);
            _mm512_mask_storeu_ps(dst + i, m,
                                  _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i)));
        }
        return;
    }
    if (type == TR_Q8_0) {
        for (int64_t b = 0; b < n / 32; b++) {
            const uint8_t *q = p + b * 34;
            __m512 d = _mm512_set1_ps(half_at(q));
            _mm512_storeu_ps(dst + 32 * b, _mm512_mul_ps(q8_lo(q + 2), d));
            _mm512_storeu_ps(dst + 32 * b + 16, _mm512_mul_ps(q8_lo(q + 18), d));
        }
        return;
    }
    tr_dequantize_row_ref(type, src, dst, n);
}

const tr_mm_isa tr_mm_isa_avx512 = {"avx512",      MR,          NR,        16 * NR,
                                    kernel_avx512, rows_avx512, deq_avx512};
