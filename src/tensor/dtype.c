/* Type table, half-precision conversions and portable row dequantizers for
 * the ggml block layouts (docs/formats/gguf.md §9.1; Q2_K/Q3_K follow ggml). */
#include "tensor/dtype.h"

#include <string.h>

#include "tensor/cpu.h"
#include "tensor/quant_internal.h"

typedef struct {
    const char *name;
    int block;
    size_t bytes;
    bool valid; /* we can dequantize it */
} type_info;

static const type_info k_types[TR_TYPE_COUNT] = {
    [TR_F32] = {"F32", 1, 4, true},       [TR_F16] = {"F16", 1, 2, true},
    [TR_Q4_0] = {"Q4_0", 32, 18, true},   [TR_Q4_1] = {"Q4_1", 32, 20, true},
    [TR_Q5_0] = {"Q5_0", 32, 22, true},   [TR_Q5_1] = {"Q5_1", 32, 24, true},
    [TR_Q8_0] = {"Q8_0", 32, 34, true},   [TR_Q8_1] = {"Q8_1", 32, 36, false},
    [TR_Q2_K] = {"Q2_K", 256, 84, true},  [TR_Q3_K] = {"Q3_K", 256, 110, true},
    [TR_Q4_K] = {"Q4_K", 256, 144, true}, [TR_Q5_K] = {"Q5_K", 256, 176, true},
    [TR_Q6_K] = {"Q6_K", 256, 210, true}, [TR_Q8_K] = {"Q8_K", 256, 292, false},
    [TR_BF16] = {"BF16", 1, 2, true},
};

static const type_info *info(int type) {
    if (type < 0 || type >= TR_TYPE_COUNT || !k_types[type].name) return NULL;
    return &k_types[type];
}

uint32_t tr_type_mask_all(void) {
    uint32_t mask = 0;
    for (int t = 0; t < 32; t++)
        if (tr_type_valid(t)) mask |= 1u << t;
    return mask;
}

bool tr_type_valid(int type) {
    const type_info *t = info(type);
    return t && t->valid;
}

const char *tr_type_name(int type) {
    const type_info *t = info(type);
    return t ? t->name : "?";
}

int tr_type_block(int type) {
    const type_info *t = info(type);
    return t ? t->block : 0;
}

size_t tr_type_block_bytes(int type) {
    const type_info *t = info(type);
    return t ? t->bytes : 0;
}

size_t tr_row_bytes(int type, int64_t n) {
    const type_info *t = info(type);
    if (!t || n < 0 || n % t->block) return 0;
    return (size_t)(n / t->block) * t->bytes;
}

/* ---- half precision ---- */

float tr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf / NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: value = man * 2^-24, exactly representable */
        float f = (float)man * (1.0f / 16777216.0f);
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t tr_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00 | (uint16_t)((ax >> 13) & 0x3ff); /* NaN */
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* rounds to >= 65536: inf */
    if (ax < 0x38800000u) {                      /* below 2^-14: subnormal half */
        /* Adding 0.5 (2^-1) puts the subnormal half mantissa in the low float
         * bits; the float add itself rounds to nearest even. */
        float a, m = 0.5f;
        memcpy(&a, &ax, 4);
        float s = a + m;
        uint32_t sb;
        memcpy(&sb, &s, 4);
        return sign | (uint16_t)(sb - 0x3f000000u);
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xc8000fffu + mant_odd; /* rebias exponent (-112<<23) and round */
    return sign | (uint16_t)(ax >> 13);
}

float tr_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t tr_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- dequantizers (portable) ---- */

static inline float half_at(const uint8_t *p) {
    return tr_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

static inline uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void deq_q4_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((qs[j] & 15) - 8) * d;
        y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
}

static void deq_q4_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(qs[j] & 15) * d + m;
        y[j + 16] = (float)(qs[j] >> 4) * d + m;
    }
}

static void deq_q5_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    uint32_t qh = u32_at(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
        int hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        y[j] = (float)(lo - 16) * d;
        y[j + 16] = (float)(hi - 16) * d;
    }
}

static void deq_q5_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    uint32_t qh = u32_at(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
        int hi = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        y[j] = (float)lo * d + m;
        y[j + 16] = (float)hi * d + m;
    }
}

static void deq_q8_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    const int8_t *qs = (const int8_t *)(b + 2);
    for (int j = 0; j < 32; j++) y[j] = (float)qs[j] * d;
}

void tr_kq_scale_min(int j, const uint8_t *s, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static void deq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *scales = b, *qs = b + 16;
    float d = half_at(b + 80), dmin = half_at(b + 82);
    for (int n = 0; n < 2; n++) {
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 32; l++) {
                int s = scales[8 * n + 2 * j + l / 16];
                int q = (qs[32 * n + l] >> (2 * j)) & 3;
                y[128 * n + 32 * j + l] = d * (float)(s & 15) * (float)q - dmin * (float)(s >> 4);
            }
        }
    }
}

/* 6-bit signed scale of sub-block is (0..15) of a Q3_K block. */
static int q3k_scale(const uint8_t *s, int is) {
    int v;
    if (is < 4)
        v = (s[is] & 15) | ((s[is + 8] & 3) << 4);
    else if (is < 8)
        v = (s[is] & 15) | (((s[is + 4] >> 2) & 3) << 4);
    else if (is < 12)
        v = (s[is - 8] >> 4) | (((s[is] >> 4) & 3) << 4);
    else
        v = (s[is - 8] >> 4) | (((s[is - 4] >> 6) & 3) << 4);
    return v - 32;
}

static void deq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hmask = b, *qs = b + 32, *scales = b + 96;
    float d = half_at(b + 108);
    for (int n = 0; n < 2; n++) {
        for (int j = 0; j < 4; j++) {
            int m = 1 << (4 * n + j);
            for (int l = 0; l < 32; l++) {
                int sc = q3k_scale(scales, 8 * n + 2 * j + l / 16);
                int q = ((qs[32 * n + l] >> (2 * j)) & 3) - ((hmask[l] & m) ? 0 : 4);
                y[128 * n + 32 * j + l] = d * (float)sc * (float)q;
            }
        }
    }
}

static void deq_q4_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *scales = b + 4, *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        int sc0, mn0, sc1, mn1;
        tr_kq_scale_min(2 * c, scales, &sc0, &mn0);
        tr_kq_scale_min(2 * c + 1, scales, &sc1, &mn1);
        float d0 = d * (float)sc0, m0 = dmin * (float)mn0;
        float d1 = d * (float)sc1, m1 = dmin * (float)mn1;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d0 * (float)(qs[32 * c + l] & 15) - m0;
            y[64 * c + 32 + l] = d1 * (float)(qs[32 * c + l] >> 4) - m1;
        }
    }
}

static void deq_q5_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
    for (int c = 0; c < 4; c++) {
        int sc0, mn0, sc1, mn1;
        tr_kq_scale_min(2 * c, scales, &sc0, &mn0);
        tr_kq_scale_min(2 * c + 1, scales, &sc1, &mn1);
        float d0 = d * (float)sc0, m0 = dmin * (float)mn0;
        float d1 = d * (float)sc1, m1 = dmin * (float)mn1;
        for (int l = 0; l < 32; l++) {
            int lo = (qs[32 * c + l] & 15) + ((qh[l] >> (2 * c)) & 1) * 16;
            int hi = (qs[32 * c + l] >> 4) + ((qh[l] >> (2 * c + 1)) & 1) * 16;
            y[64 * c + l] = d0 * (float)lo - m0;
            y[64 * c + 32 + l] = d1 * (float)hi - m1;
        }
    }
}

static void deq_q6_k(const uint8_t *b, float *y) {
    float d = half_at(b + 208);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        float *o = y + 128 * h;
        for (int l = 0; l < 32; l++) {
            int s = l / 16;
            int q1 = ((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            o[l] = d * (float)sc[s] * (float)q1;
            o[l + 32] = d * (float)sc[s + 2] * (float)q2;
            o[l + 64] = d * (float)sc[s + 4] * (float)q3;
            o[l + 96] = d * (float)sc[s + 6] * (float)q4;
        }
    }
}

typedef void (*block_deq_fn)(const uint8_t *b, float *y);

static block_deq_fn block_deq(int type) {
    switch (type) {
    case TR_Q4_0:
        return deq_q4_0;
    case TR_Q4_1:
        return deq_q4_1;
    case TR_Q5_0:
        return deq_q5_0;
    case TR_Q5_1:
        return deq_q5_1;
    case TR_Q8_0:
        return deq_q8_0;
    case TR_Q2_K:
        return deq_q2_k;
    case TR_Q3_K:
        return deq_q3_k;
    case TR_Q4_K:
        return deq_q4_k;
    case TR_Q5_K:
        return deq_q5_k;
    case TR_Q6_K:
        return deq_q6_k;
    default:
        return NULL;
    }
}

void tr_dequantize_row_ref(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = (const uint8_t *)src;
    switch (type) {
    case TR_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    case TR_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = tr_f16_to_f32((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
        return;
    case TR_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = tr_bf16_to_f32((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
        return;
    default:
        break;
    }
    block_deq_fn fn = block_deq(type);
    if (!fn) return;
    int bs = tr_type_block(type);
    size_t bb = tr_type_block_bytes(type);
    for (int64_t i = 0; i < n / bs; i++) fn(p + (size_t)i * bb, dst + i * bs);
}

void tr_f32_to_f16_row(const float *src, uint16_t *dst, int64_t n) {
#if defined(TR_CPU_X86)
    if (tr_cpu_has(TR_CPU_AVX2)) { /* F16C: the same round to nearest even */
        tr_f32_to_f16_row_avx2(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) dst[i] = tr_f32_to_f16(src[i]);
}

void tr_dequantize_row(int type, const void *src, float *dst, int64_t n) {
#if defined(TR_CPU_X86)
    if (tr_cpu_has(TR_CPU_AVX512) && tr_dequantize_row_avx512(type, src, dst, n)) return;
    if (tr_cpu_has(TR_CPU_AVX2) && tr_dequantize_row_avx2(type, src, dst, n)) return;
#elif defined(TR_CPU_ARM64)
    if (tr_cpu_has(TR_CPU_NEON) && tr_dequantize_row_neon(type, src, dst, n)) return;
#endif
    tr_dequantize_row_ref(type, src, dst, n);
}
