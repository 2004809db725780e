/* Internal helpers shared by the dtype, quantizer and matmul files. */
#ifndef TR_TENSOR_QUANT_INTERNAL_H
#define TR_TENSOR_QUANT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/cpu.h"

/* 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block. */
void tr_kq_scale_min(int j, const uint8_t *scales, int *sc, int *mn);
/* All 8 at once (the same layout), for the paths that want every one. */
static inline void tr_kq_scales_mins(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 0x0F) | ((s[j] >> 6) << 4));
        mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}
/* Portable dequantizer (the reference the SIMD paths are tested against). */
void tr_dequantize_row_ref(int type, const void *src, float *dst, int64_t n);

/* Shorthands for the CPU module's levels (tensor/cpu.h). */
static inline bool tr_cpu_has_avx2(void) { /* AVX2 + FMA + F16C */
    return tr_cpu_has(TR_CPU_AVX2);
}
static inline bool tr_cpu_has_avx512(void) { /* AVX-512 F/BW/VL/DQ/VNNI and the above */
    return tr_cpu_has(TR_CPU_AVX512);
}

/* quant_avx2.c: only call when tr_cpu_has_avx2(). */
void tr_f16_to_f32_row_avx2(const uint16_t *src, float *dst, int64_t n);
void tr_f32_to_f16_row_avx2(const float *src, uint16_t *dst, int64_t n);
/* Returns false for types it does not handle. */
bool tr_dequantize_row_avx2(int type, const void *src, float *dst, int64_t n);

/* quant_avx512.c: only call when tr_cpu_has_avx512(). Returns false for
 * types it does not handle (Q2_K, Q3_K, F32). */
bool tr_dequantize_row_avx512(int type, const void *src, float *dst, int64_t n);

/* quant_neon.c (aarch64 only; Advanced SIMD is always there). Returns false
 * for types it does not handle. */
void tr_f16_to_f32_row_neon(const uint16_t *src, float *dst, int64_t n);
bool tr_dequantize_row_neon(int type, const void *src, float *dst, int64_t n);

#endif
