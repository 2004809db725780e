/* AVX-512 row dequantizers for the block types (compiled with the AVX-512
 * flags; call only when tr_cpu_has_avx512()). Each block's integer codes
 * are widened to 16 int32 lanes, converted, and scaled with one FMA; the
 * results equal the portable decoder's (same float operations per element
 * up to FMA contraction of code*scale - min). */
#include <immintrin.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/quant_internal.h"

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline __m512 u8x16(__m128i v) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

static inline __m512 i8x16(__m128i v) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
}

/* 32 nibble codes of a Q4_0-style block: lo = elements 0..15, hi = 16..31. */
static inline void nibbles16(const uint8_t *qs, __m128i *lo, __m128i *hi) {
    __m128i q = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0F);
    *lo = _mm_and_si128(q, m);
    *hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
}

static void q4_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    __m128i lo, hi;
    nibbles16(b + 2, &lo, &hi);
    __m512 vd = _mm512_set1_ps(d), off = _mm512_set1_ps(-8.0f);
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_add_ps(u8x16(lo), off), vd));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_add_ps(u8x16(hi), off), vd));
}

static void q4_1(const uint8_t *b, float *y) {
    __m512 vd = _mm512_set1_ps(half_at(b)), vm = _mm512_set1_ps(half_at(b + 2));
    __m128i lo, hi;
    nibbles16(b + 4, &lo, &hi);
    _mm512_storeu_ps(y, _mm512_fmadd_ps(u8x16(lo), vd, vm));
    _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(u8x16(hi), vd, vm));
}

/* Adds 16 to the codes whose bit is set in the 32-bit qh mask. */
static inline void q5_codes(const uint8_t *qh_p, const uint8_t *qs, __m512i *c0, __m512i *c1) {
    uint32_t qh;
    memcpy(&qh, qh_p, 4);
    __m128i lo, hi;
    nibbles16(qs, &lo, &hi);
    __m512i sixteen = _mm512_set1_epi32(16);
    __m512i a = _mm512_cvtepu8_epi32(lo), b = _mm512_cvtepu8_epi32(hi);
    *c0 = _mm512_mask_add_epi32(a, (__mmask16)(qh & 0xFFFF), a, sixteen);
    *c1 = _mm512_mask_add_epi32(b, (__mmask16)(qh >> 16), b, sixteen);
}

static void q5_0(const uint8_t *b, float *y) {
    __m512 vd = _mm512_set1_ps(half_at(b)), off = _mm512_set1_ps(-16.0f);
    __m512i c0, c1;
    q5_codes(b + 2, b + 6, &c0, &c1);
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(c0), off), vd));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(c1), off), vd));
}

static void q5_1(const uint8_t *b, float *y) {
    __m512 vd = _mm512_set1_ps(half_at(b)), vm = _mm512_set1_ps(half_at(b + 2));
    __m512i c0, c1;
    q5_codes(b + 4, b + 8, &c0, &c1);
    _mm512_storeu_ps(y, _mm512_fmadd_ps(_mm512_cvtepi32_ps(c0), vd, vm));
    _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(c1), vd, vm));
}

static void q8_0(const uint8_t *b, float *y) {
    __m512 vd = _mm512_set1_ps(half_at(b));
    _mm512_storeu_ps(y, _mm512_mul_ps(i8x16(_mm_loadu_si128((const __m128i *)(b + 2))), vd));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(i8x16(_mm_loadu_si128((const __m128i *)(b + 18))), vd));
}

/* 32 codes (one ymm of bytes) times scale minus min, into y[0..31]. */
static inline void store32(__m256i codes, float scale, float min, float *y) {
    __m512 s = _mm512_set1_ps(scale), m = _mm512_set1_ps(-min);
    _mm512_storeu_ps(y, _mm512_fmadd_ps(u8x16(_mm256_castsi256_si128(codes)), s, m));
    _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(u8x16(_mm256_extracti128_si256(codes, 1)), s, m));
}

static void q45_k(const uint8_t *b, float *y, int five) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *qs = b + (five ? 48 : 16);
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(b + 16)) : _mm256_setzero_si256();
    uint8_t sc[8], mn[8];
    tr_kq_scales_mins(b + 4, sc, mn);
    for (int c = 0; c < 4; c++) {
        int sc0 = sc[2 * c], mn0 = mn[2 * c], sc1 = sc[2 * c + 1], mn1 = mn[2 * c + 1];
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if (five) { /* bit 2c / 2c+1 of qh[l] is the fifth bit */
            __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
            __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
        }
        store32(lo, d * (float)sc0, dmin * (float)mn0, y + 64 * c);
        store32(hi, d * (float)sc1, dmin * (float)mn1, y + 64 * c + 32);
    }
}

static void q6_k(const uint8_t *b, float *y) {
    float d = half_at(b + 208);
    const __m256i low4 = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    const __m256i bias = _mm256_set1_epi8(32);
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
            __m256i s = _mm256_sub_epi8(q[k], bias); /* -32..31 */
            float *o = y + 128 * h + 32 * k;
            _mm512_storeu_ps(o, _mm512_mul_ps(i8x16(_mm256_castsi256_si128(s)),
                                              _mm512_set1_ps(d * (float)sc[2 * k])));
            _mm512_storeu_ps(o + 16, _mm512_mul_ps(i8x16(_mm256_extracti128_si256(s, 1)),
                                                   _mm512_set1_ps(d * (float)sc[2 * k + 1])));
        }
    }
}

bool tr_dequantize_row_avx512(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    int64_t i = 0;
    switch (type) {
    case TR_F16:
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(dst + i,
                             _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 2 * i))));
        if (i < n) {
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
            _mm512_mask_storeu_ps(dst + i, m,
                                  _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i)));
        }
        return true;
    case TR_BF16:
        for (; i + 16 <= n; i += 16) {
            __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + 2 * i)));
            _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
        }
        if (i < n) {
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
            __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p + 2 * i));
            _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
        }
        return true;
    default:
        break;
    }
    void (*fn)(const uint8_t *, float *) = NULL;
    switch (type) {
    case TR_Q4_0:
        fn = q4_0;
        break;
    case TR_Q4_1:
        fn = q4_1;
        break;
    case TR_Q5_0:
        fn = q5_0;
        break;
    case TR_Q5_1:
        fn = q5_1;
        break;
    case TR_Q8_0:
        fn = q8_0;
        break;
    case TR_Q6_K:
        fn = q6_k;
        break;
    case TR_Q4_K:
    case TR_Q5_K:
        for (int64_t b = 0; b < n / 256; b++)
            q45_k(p + (size_t)b * tr_type_block_bytes(type), dst + 256 * b, type == TR_Q5_K);
        return true;
    default:
        return false;
    }
    int bs = tr_type_block(type);
    size_t bb = tr_type_block_bytes(type);
    for (int64_t b = 0; b < n / bs; b++) fn(p + (size_t)b * bb, dst + b * bs);
    return true;
}
