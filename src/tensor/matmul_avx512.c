/* AVX-512 kernel table (compiled with -mavx512f/bw/vl/dq/vnni). */
#include <immintrin.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"

#define MR 12
#define NR 32

/* 12 rows × 32 columns: 24 zmm accumulators, 2 weight vectors and one
 * broadcast per k step. A short last tile (mr <= 4 or 8, e.g. 183 rows = 15
 * tiles + 3) runs only as many rows as it has, each output summed exactly as
 * in the full tile. */
static inline __attribute__((always_inline)) void kernel_rows(const float *xp, const float *wp,
                                                              int kc, float *y, long ldy, int mr,
                                                              int nr, const float *bias,
                                                              int accumulate, const int R) {
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 w0 = _mm512_load_ps(wp), w1 = _mm512_load_ps(wp + 16);
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
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
    for (int i = 0; i < R; i++) {
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

static void kernel_avx512(const float *xp, const float *wp, int kc, float *y, long ldy, int mr,
                          int nr, const float *bias, int accumulate) {
    if (mr <= 4)
        kernel_rows(xp, wp, kc, y, ldy, mr, nr, bias, accumulate, 4);
    else if (mr <= 8)
        kernel_rows(xp, wp, kc, y, ldy, mr, nr, bias, accumulate, 8);
    else
        kernel_rows(xp, wp, kc, y, ldy, mr, nr, bias, accumulate, MR);
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

/* How far ahead an F16 matrix-vector dot fetches its row, where it does:
 * not on AMD (Zen's prefetcher keeps up), on Intel Xeon (Sapphire Rapids
 * class) it lifts 1x1280x51866 F16 from ~0.76 of the copy bandwidth;
 * 4096 rather than 2048 lifted 1x1024x4096 from 0.89 to 0.93 (quiet host,
 * 4 alternations; 1x1280x51866 even). */
#define F16_PF_DIST 4096

static inline __m512 load_f16(const uint8_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* The same order as dot_f32, so an F16 row widened to floats dots to the
 * same bits (the few-row path of matmul.c widens a block once for several
 * rows of x). */
static inline __attribute__((always_inline)) float dot_f16_at(const uint8_t *w, const float *x,
                                                              long K, const uint8_t *end) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long k = 0;
    for (; k + 64 <= K; k += 64) {
        if (end) { /* fetch ahead (f16_fetch_end) */
            const uint8_t *f = w + 2 * k + F16_PF_DIST;
            if (f < end) _mm_prefetch((const char *)f, _MM_HINT_T0);
            if (f + 64 < end) _mm_prefetch((const char *)(f + 64), _MM_HINT_T0);
        }
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

static float dot_f16(const uint8_t *w, const float *x, long K) {
    return dot_f16_at(w, x, K, NULL);
}

static void deq_avx512(int type, const void *src, float *dst, int64_t n) {
    if (!tr_dequantize_row_avx512(type, src, dst, n)) tr_dequantize_row_ref(type, src, dst, n);
}

static int rows_avx512(const tr_mm_w *w, const float *x, const float *xsum, float *y, long n0,
                       long n1, const float *bias, float *scratch) {
    if (tr_mm_rows_int8_avx512(w, x, xsum, y, n0, n1, bias, scratch)) return 1;
    const long K = (long)w->K;
    const uint8_t *f16_end =
        w->type == TR_F16 && !tr_cpu_get_features()->amd ? w->data + (size_t)n1 * w->stride : NULL;
    for (long n = n0; n < n1; n++) {
        const uint8_t *row = w->data + (size_t)n * w->stride;
        if (n + 1 < n1) _mm_prefetch((const char *)(row + w->stride), _MM_HINT_T0);
        float s;
        switch (w->type) {
        case TR_F32:
            s = dot_f32((const float *)row, x, K);
            break;
        case TR_F16:
            s = f16_end ? dot_f16_at(row, x, K, f16_end) : dot_f16(row, x, K);
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

/* Transposes a 16×16 tile: rows r < nr of src (pitch floats apart), k <
 * kn, into dst[k*ld + r] for k < kn and all 16 r (missing rows are 0). */
/* r[i] (row i, k in its lanes) to dst[k*ld + i] for k < kn. */
static inline __attribute__((always_inline)) void transpose_store(__m512 r[16], int kn, float *dst,
                                                                  long ld) {
    __m512 t[16], u[16];
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

static void transpose16_avx512(const float *src, long pitch, int nr, int kn, float *dst, long ld) {
    __mmask16 km = tail_mask(kn);
    __m512 r[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < nr ? _mm512_maskz_loadu_ps(km, src + i * pitch) : _mm512_setzero_ps();
    transpose_store(r, kn, dst, ld);
}

/* F16 and Q8_0 rows widened straight into the transpose (no staging row):
 * each value exactly as deq_avx512 gives it (F16 widened, Q8_0 code × the
 * block's scale as one product). k0 is a multiple of 16. */
static bool pack16_avx512(int type, const uint8_t *src, size_t stride, long k0, int nr, int kn,
                          float *dst, long ld) {
    __mmask16 km = tail_mask(kn);
    __m512 r[16];
    if (type == TR_F16) {
        for (int i = 0; i < 16; i++)
            r[i] = i < nr ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, src + (size_t)i * stride +
                                                                             (size_t)k0 * 2))
                          : _mm512_setzero_ps();
    } else if (type == TR_Q8_0) {
        const size_t off = (size_t)(k0 / 32) * 34;
        const int o = (int)(k0 % 32);
        for (int i = 0; i < 16; i++) {
            if (i >= nr) {
                r[i] = _mm512_setzero_ps();
                continue;
            }
            const uint8_t *b = src + (size_t)i * stride + off;
            uint16_t h;
            memcpy(&h, b, 2);
            __m512 vd = _mm512_set1_ps(_cvtsh_ss(h));
            __m512 q =
                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, b + 2 + o)));
            r[i] = _mm512_mul_ps(q, vd);
        }
    } else {
        return false;
    }
    transpose_store(r, kn, dst, ld);
    return true;
}

const tr_mm_isa tr_mm_isa_avx512 = {.name = "avx512",
                                    .mr = MR,
                                    .nr = NR,
                                    .nc = 16 * NR,
                                    .kernel = kernel_avx512,
                                    .rows = rows_avx512,
                                    .f16_widen = true,
                                    .deq = deq_avx512,
                                    .transpose16 = transpose16_avx512,
                                    .pack16 = pack16_avx512,
                                    .quant_x_rows = tr_mm_quant_x_rows_avx512,
                                    .rows_int8_multi = tr_mm_rows_int8_multi_avx512,
                                    .rows_int8 = tr_mm_rows_int8_x_avx512,
                                    .qgemm = &tr_mm_qgemm_avx512};
