/* AVX2+FMA kernel table (compiled with -mavx2 -mfma -mf16c). */
#include <immintrin.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
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
    for (int k = 0; k < kc; k++) {
        __m256 w0 = _mm256_load_ps(wp), w1 = _mm256_load_ps(wp + 8), xb;
        xb = _mm256_broadcast_ss(xp);
        c00 = _mm256_fmadd_ps(xb, w0, c00);
        c01 = _mm256_fmadd_ps(xb, w1, c01);
        xb = _mm256_broadcast_ss(xp + 1);
        c10 = _mm256_fmadd_ps(xb, w0, c10);
        c11 = _mm256_fmadd_ps(xb, w1, c11);
        xb = _mm256_broadcast_ss(xp + 2);
        c20 = _mm256_fmadd_ps(xb, w0, c20);
        c21 = _mm256_fmadd_ps(xb, w1, c21);
        xb = _mm256_broadcast_ss(xp + 3);
        c30 = _mm256_fmadd_ps(xb, w0, c30);
        c31 = _mm256_fmadd_ps(xb, w1, c31);
        xb = _mm256_broadcast_ss(xp + 4);
        c40 = _mm256_fmadd_ps(xb, w0, c40);
        c41 = _mm256_fmadd_ps(xb, w1, c41);
        xb = _mm256_broadcast_ss(xp + 5);
        c50 = _mm256_fmadd_ps(xb, w0, c50);
        c51 = _mm256_fmadd_ps(xb, w1, c51);
        xp += MR;
        wp += NR;
    }
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

static float dot_avx2(int type, const uint8_t *w, const float *x, long K) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    float tail = 0.0f;
    if (type == TR_F32) {
        const float *f = (const float *)w;
        for (; k + 32 <= K; k += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(f + k), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(f + k + 8), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(f + k + 16), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(f + k + 24), _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k < K; k++) tail += f[k] * x[k];
    } else {
        for (; k + 32 <= K; k += 32) {
            a0 = _mm256_fmadd_ps(load_f16(w + 2 * k), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(load_f16(w + 2 * k + 16), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(load_f16(w + 2 * k + 32), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(load_f16(w + 2 * k + 48), _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k < K; k++) tail += half_at(w + 2 * k) * x[k];
    }
    return hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) + tail;
}

static float dot_q8_0(const uint8_t *w, const float *x, long K) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (long b = 0; b < K / 32; b++) {
        const uint8_t *p = w + b * 34;
        const float *xb = x + b * 32;
        __m256 t = _mm256_setzero_ps();
        for (int j = 0; j < 4; j++) {
            __m128i q = _mm_loadl_epi64((const __m128i *)(p + 2 + 8 * j));
            __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
            t = _mm256_fmadd_ps(qf, _mm256_loadu_ps(xb + 8 * j), t);
        }
        if (b & 1)
            a1 = _mm256_fmadd_ps(t, _mm256_set1_ps(half_at(p)), a1);
        else
            a0 = _mm256_fmadd_ps(t, _mm256_set1_ps(half_at(p)), a0);
    }
    return hsum256(_mm256_add_ps(a0, a1));
}

static void deq_avx2(int type, const void *src, float *dst, int64_t n) {
    if (!tr_dequantize_row_avx2(type, src, dst, n)) tr_dequantize_row_ref(type, src, dst, n);
}

static int rows_avx2(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                     long n1, const float *bias, float *scratch) {
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        float s;
        if (w->type == TR_Q8_0) {
            s = dot_q8_0(row, x, (long)w->K);
        } else if (w->type == TR_F32 || w->type == TR_F16) {
            s = dot_avx2(w->type, row, x, (long)w->K);
        } else { /* dequantize into L1 scratch, then an F32 dot */
            deq_avx2(w->type, row, scratch, w->K);
            s = dot_avx2(TR_F32, (const uint8_t *)scratch, x, (long)w->K);
        }
        y[n - n0] = s + (bias ? bias[n] : 0.0f);
    }
    return 1;
}

const tr_mm_isa tr_mm_isa_avx2 = {"avx2",    MR,       NR,   24 * NR, kernel_avx2,
                                  rows_avx2, deq_avx2, NULL, NULL};
