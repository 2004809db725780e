/* F16C row conversions (compiled with -mavx2 -mfma -mf16c). */
#include <immintrin.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/quant_internal.h"

void tr_f16_to_f32_row_avx2(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) { /* memcpy: src may be unaligned model data */
        uint16_t h;
        memcpy(&h, src + i, 2);
        dst[i] = tr_f16_to_f32(h);
    }
}

void tr_f32_to_f16_row_avx2(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    for (; i < n; i++) dst[i] = tr_f32_to_f16(src[i]);
}

/* ---- AVX2 row dequantizers for the common block types ---- */

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* 8 bytes of unsigned codes -> 8 floats * s + m */
static inline __m256 u8x8(__m128i v, __m256 s, __m256 m) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)), s, m);
}

/* 32 unsigned byte codes (ymm) * s - min into y[0..31]. */
static inline void store32_u8(__m256i codes, float s, float min, float *y) {
    __m256 vs = _mm256_set1_ps(s), vm = _mm256_set1_ps(-min);
    __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
    _mm256_storeu_ps(y, u8x8(lo, vs, vm));
    _mm256_storeu_ps(y + 8, u8x8(_mm_srli_si128(lo, 8), vs, vm));
    _mm256_storeu_ps(y + 16, u8x8(hi, vs, vm));
    _mm256_storeu_ps(y + 24, u8x8(_mm_srli_si128(hi, 8), vs, vm));
}

static void q8_0_avx2(const uint8_t *b, float *y) {
    __m256 d = _mm256_set1_ps(half_at(b));
    for (int j = 0; j < 4; j++) {
        __m128i q = _mm_loadl_epi64((const __m128i *)(b + 2 + 8 * j));
        _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
}

static void q4_0_avx2(const uint8_t *b, float *y) {
    float d = half_at(b);
    __m128i q = _mm_loadu_si128((const __m128i *)(b + 2)), m = _mm_set1_epi8(0x0F);
    __m128i lo = _mm_and_si128(q, m), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
    store32_u8(_mm256_set_m128i(hi, lo), d, 8.0f * d, y);
}

static void q45_k_avx2(const uint8_t *b, float *y, int five) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *s = b + 4, *qs = b + (five ? 48 : 16);
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(b + 16)) : _mm256_setzero_si256();
    uint8_t sc[8], mn[8];
    tr_kq_scales_mins(s, sc, mn);
    for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if (five) {
            __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
            __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
        }
        store32_u8(lo, d * (float)sc[2 * c], dmin * (float)mn[2 * c], y + 64 * c);
        store32_u8(hi, d * (float)sc[2 * c + 1], dmin * (float)mn[2 * c + 1], y + 64 * c + 32);
    }
}

static void q6_k_avx2(const uint8_t *b, float *y) {
    float d = half_at(b + 208);
    const __m256i low4 = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qhp = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
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
            float *o = y + 128 * h + 32 * k;
            float s0 = d * (float)sc[2 * k], s1 = d * (float)sc[2 * k + 1];
            /* codes 0..63 with offset 32: value = s * code - 32 * s */
            __m128i lo = _mm256_castsi256_si128(q[k]), hi = _mm256_extracti128_si256(q[k], 1);
            __m256 v0 = _mm256_set1_ps(s0), m0 = _mm256_set1_ps(-32.0f * s0);
            __m256 v1 = _mm256_set1_ps(s1), m1 = _mm256_set1_ps(-32.0f * s1);
            _mm256_storeu_ps(o, u8x8(lo, v0, m0));
            _mm256_storeu_ps(o + 8, u8x8(_mm_srli_si128(lo, 8), v0, m0));
            _mm256_storeu_ps(o + 16, u8x8(hi, v1, m1));
            _mm256_storeu_ps(o + 24, u8x8(_mm_srli_si128(hi, 8), v1, m1));
        }
    }
}

bool tr_dequantize_row_avx2(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    switch (type) {
    case TR_F16:
        tr_f16_to_f32_row_avx2((const uint16_t *)src, dst, n);
        return true;
    case TR_Q8_0:
        for (int64_t b = 0; b < n / 32; b++) q8_0_avx2(p + (size_t)b * 34, dst + 32 * b);
        return true;
    case TR_Q4_0:
        for (int64_t b = 0; b < n / 32; b++) q4_0_avx2(p + (size_t)b * 18, dst + 32 * b);
        return true;
    case TR_Q4_K:
    case TR_Q5_K:
        for (int64_t b = 0; b < n / 256; b++)
            q45_k_avx2(p + (size_t)b * tr_type_block_bytes(type), dst + 256 * b, type == TR_Q5_K);
        return true;
    case TR_Q6_K:
        for (int64_t b = 0; b < n / 256; b++) q6_k_avx2(p + (size_t)b * 210, dst + 256 * b);
        return true;
    default:
        return false;
    }
}
