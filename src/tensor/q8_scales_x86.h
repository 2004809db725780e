/* The half-float scales of four consecutive Q8_0 blocks (34 bytes each,
 * the scale first) widened at once: shared by the AVX2 and AVX-512
 * integer dots, included only by sources compiled with F16C. */
#ifndef TR_TENSOR_Q8_SCALES_X86_H
#define TR_TENSOR_Q8_SCALES_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline __m128 tr_q8_scales4(const uint8_t *p) {
    uint16_t h[4];
    memcpy(&h[0], p, 2);
    memcpy(&h[1], p + 34, 2);
    memcpy(&h[2], p + 68, 2);
    memcpy(&h[3], p + 102, 2);
    __m128i hv = _mm_cvtsi32_si128((int)((uint32_t)h[0] | ((uint32_t)h[1] << 16)));
    hv = _mm_insert_epi32(hv, (int)((uint32_t)h[2] | ((uint32_t)h[3] << 16)), 1);
    return _mm_cvtph_ps(hv);
}

#endif
