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
