/* Advanced SIMD (AArch64 baseline) half-float conversion and row
 * dequantizers for the common block types; the rest go to the portable
 * decoder. Bytes are loaded as bytes: model data need not be aligned. */
#include <arm_neon.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/quant_internal.h"

void tr_f16_to_f32_row_neon(const uint16_t *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(p + 2 * i));
        vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
        vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
    }
    for (; i < n; i++) dst[i] = tr_f16_to_f32((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
}

static inline float half_at(const uint8_t *p) {
    return tr_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

/* 16 unsigned codes -> y[0..15] = code * s + m (one rounding, like the
 * x86 paths). */
static inline void store16_u8(uint8x16_t q, float s, float m, float *y) {
    float32x4_t vs = vdupq_n_f32(s), vm = vdupq_n_f32(m);
    uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_high_u8(q);
    vst1q_f32(y, vfmaq_f32(vm, vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), vs));
    vst1q_f32(y + 4, vfmaq_f32(vm, vcvtq_f32_u32(vmovl_high_u16(lo)), vs));
    vst1q_f32(y + 8, vfmaq_f32(vm, vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), vs));
    vst1q_f32(y + 12, vfmaq_f32(vm, vcvtq_f32_u32(vmovl_high_u16(hi)), vs));
}

static void q8_0_neon(const uint8_t *b, float *y) {
    float32x4_t d = vdupq_n_f32(half_at(b));
    for (int j = 0; j < 2; j++) {
        int8x16_t q = vld1q_s8((const int8_t *)(b + 2 + 16 * j));
        int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
        float *o = y + 16 * j;
        vst1q_f32(o, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
        vst1q_f32(o + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
        vst1q_f32(o + 8, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
        vst1q_f32(o + 12, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
    }
}

static void q4_0_neon(const uint8_t *b, float *y) {
    float d = half_at(b);
    uint8x16_t q = vld1q_u8(b + 2);
    store16_u8(vandq_u8(q, vdupq_n_u8(0x0F)), d, -8.0f * d, y);
    store16_u8(vshrq_n_u8(q, 4), d, -8.0f * d, y + 16);
}

static void q4_k_neon(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        int sc0, mn0, sc1, mn1;
        tr_kq_scale_min(2 * c, b + 4, &sc0, &mn0);
        tr_kq_scale_min(2 * c + 1, b + 4, &sc1, &mn1);
        for (int h = 0; h < 2; h++) {
            uint8x16_t q = vld1q_u8(qs + 32 * c + 16 * h);
            float *o = y + 64 * c + 16 * h;
            store16_u8(vandq_u8(q, vdupq_n_u8(0x0F)), d * (float)sc0, -dmin * (float)mn0, o);
            store16_u8(vshrq_n_u8(q, 4), d * (float)sc1, -dmin * (float)mn1, o + 32);
        }
    }
}

static void q6_k_neon(const uint8_t *b, float *y) {
    float d = half_at(b + 208);
    const uint8x16_t low4 = vdupq_n_u8(0x0F), two = vdupq_n_u8(0x03);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        for (int l0 = 0; l0 < 32; l0 += 16) {
            uint8x16_t A = vld1q_u8(ql + l0), B = vld1q_u8(ql + 32 + l0), H = vld1q_u8(qh + l0);
            uint8x16_t q[4] = {
                vorrq_u8(vandq_u8(A, low4), vshlq_n_u8(vandq_u8(H, two), 4)),
                vorrq_u8(vandq_u8(B, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 2), two), 4)),
                vorrq_u8(vshrq_n_u8(A, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 4), two), 4)),
                vorrq_u8(vshrq_n_u8(B, 4), vshlq_n_u8(vshrq_n_u8(H, 6), 4)),
            };
            for (int k = 0; k < 4; k++) { /* codes 0..63 with offset 32 */
                float s = d * (float)sc[2 * k + l0 / 16];
                store16_u8(q[k], s, -32.0f * s, y + 128 * h + 32 * k + l0);
            }
        }
    }
}

bool tr_dequantize_row_neon(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    switch (type) {
    case TR_F16:
        tr_f16_to_f32_row_neon((const uint16_t *)src, dst, n);
        return true;
    case TR_Q8_0:
        for (int64_t b = 0; b < n / 32; b++) q8_0_neon(p + (size_t)b * 34, dst + 32 * b);
        return true;
    case TR_Q4_0:
        for (int64_t b = 0; b < n / 32; b++) q4_0_neon(p + (size_t)b * 18, dst + 32 * b);
        return true;
    case TR_Q4_K:
        for (int64_t b = 0; b < n / 256; b++) q4_k_neon(p + (size_t)b * 144, dst + 256 * b);
        return true;
    case TR_Q6_K:
        for (int64_t b = 0; b < n / 256; b++) q6_k_neon(p + (size_t)b * 210, dst + 256 * b);
        return true;
    default:
        return false;
    }
}
