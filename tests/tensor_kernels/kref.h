/* Independent double-precision reference decoder for the ggml block
 * layouts, written from docs/formats/gguf.md §9.1 (and ggml for Q2_K/Q3_K): one
 * element at a time, sharing no code with src/tensor. */
#ifndef TESTS_TENSOR_KERNELS_KREF_H
#define TESTS_TENSOR_KERNELS_KREF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline double kref_half(const uint8_t *p) {
    unsigned h = p[0] | (p[1] << 8);
    int sign = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp((double)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(1.0 + m / 1024.0, e - 15);
    return sign ? -v : v;
}

static inline double kref_bf16(const uint8_t *p) {
    uint32_t bits = (uint32_t)(p[0] | (p[1] << 8)) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* 4-bit code of element i (0..31) in the Q4_0 nibble layout. */
static inline int kref_nib32(const uint8_t *qs, int i) {
    return i < 16 ? (qs[i] & 15) : (qs[i - 16] >> 4);
}

static inline int kref_bit(const uint8_t *p, int bit) {
    return (p[bit / 8] >> (bit % 8)) & 1;
}

static inline void kref_k_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q3_K: unpack all 16 six-bit scales from 12 bytes via 32-bit words. */
static inline void kref_q3k_scales(const uint8_t *s, int out[16]) {
    uint32_t a[3];
    for (int w = 0; w < 3; w++)
        a[w] =
            s[4 * w] | (s[4 * w + 1] << 8) | (s[4 * w + 2] << 16) | ((uint32_t)s[4 * w + 3] << 24);
    uint32_t r[4];
    r[0] = (a[0] & 0x0f0f0f0f) | ((a[2] & 0x03030303) << 4);
    r[1] = (a[1] & 0x0f0f0f0f) | (((a[2] >> 2) & 0x03030303) << 4);
    r[2] = ((a[0] >> 4) & 0x0f0f0f0f) | (((a[2] >> 4) & 0x03030303) << 4);
    r[3] = ((a[1] >> 4) & 0x0f0f0f0f) | (((a[2] >> 6) & 0x03030303) << 4);
    for (int i = 0; i < 16; i++) out[i] = (int)((r[i / 4] >> (8 * (i % 4))) & 0xff) - 32;
}

/* Value of element i of the block starting at b (type is a ggml id). */
static inline double kref_elem(int type, const uint8_t *b, int i) {
    switch (type) {
    case 0: {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    case 1:
        return kref_half(b + 2 * i);
    case 30:
        return kref_bf16(b + 2 * i);
    case 2:
        return (kref_nib32(b + 2, i) - 8) * kref_half(b);
    case 3:
        return kref_nib32(b + 4, i) * kref_half(b) + kref_half(b + 2);
    case 6:
        return ((kref_nib32(b + 6, i) | (kref_bit(b + 2, i) << 4)) - 16) * kref_half(b);
    case 7:
        return (kref_nib32(b + 8, i) | (kref_bit(b + 4, i) << 4)) * kref_half(b) + kref_half(b + 2);
    case 8:
        return (int8_t)b[2 + i] * kref_half(b);
    case 10: { /* Q2_K: scales[16], qs[64], d, dmin */
        int n = i / 128, j = (i % 128) / 32, l = i % 32;
        int s = b[8 * n + 2 * j + l / 16];
        int q = (b[16 + 32 * n + l] >> (2 * j)) & 3;
        return kref_half(b + 80) * (s & 15) * q - kref_half(b + 82) * (s >> 4);
    }
    case 11: { /* Q3_K: hmask[32], qs[64], scales[12], d */
        int sc[16];
        kref_q3k_scales(b + 96, sc);
        int n = i / 128, j = (i % 128) / 32, l = i % 32;
        int q = (b[32 + 32 * n + l] >> (2 * j)) & 3;
        if (!((b[l] >> (4 * n + j)) & 1)) q -= 4;
        return kref_half(b + 108) * sc[8 * n + 2 * j + l / 16] * q;
    }
    case 12:
    case 13: {
        int sub = i / 32, c = i / 64, l = i % 32, sc, mn;
        kref_k_scale_min(b + 4, sub, &sc, &mn);
        const uint8_t *qs = b + (type == 12 ? 16 : 48);
        int q = (sub % 2 == 0) ? (qs[32 * c + l] & 15) : (qs[32 * c + l] >> 4);
        if (type == 13) q += 16 * ((b[16 + l] >> sub) & 1);
        return kref_half(b) * sc * q - kref_half(b + 2) * mn;
    }
    case 14: { /* Q6_K: ql[128], qh[64], scales[16], d */
        int h = i / 128, k = (i % 128) / 32, l = i % 32;
        int lb = b[64 * h + l + 32 * (k & 1)];
        int lo = k < 2 ? (lb & 15) : (lb >> 4);
        int hi = (b[128 + 32 * h + l] >> (2 * k)) & 3;
        int sc = (int8_t)b[192 + 8 * h + l / 16 + 2 * k];
        return kref_half(b + 208) * sc * ((lo | (hi << 4)) - 32);
    }
    default:
        return NAN;
    }
}

static inline int kref_block(int type) {
    switch (type) {
    case 0:
    case 1:
    case 30:
        return 1;
    case 2:
    case 3:
    case 6:
    case 7:
    case 8:
        return 32;
    default:
        return 256;
    }
}

static inline size_t kref_block_bytes(int type) {
    static const size_t bytes[31] = {
        [0] = 4,  [1] = 2,   [30] = 2,   [2] = 18,   [3] = 20,   [6] = 22,  [7] = 24,
        [8] = 34, [10] = 84, [11] = 110, [12] = 144, [13] = 176, [14] = 210};
    return bytes[type];
}

static inline double kref_row_elem(int type, const uint8_t *row, long i) {
    int bs = kref_block(type);
    return kref_elem(type, row + (size_t)(i / bs) * kref_block_bytes(type), (int)(i % bs));
}

/* Deterministic test RNG. */
static uint64_t kref_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t kref_u32(void) {
    kref_rng ^= kref_rng << 13;
    kref_rng ^= kref_rng >> 7;
    kref_rng ^= kref_rng << 17;
    return (uint32_t)(kref_rng >> 16);
}
static inline float kref_uniform(void) { /* [-1, 1) */
    return (float)((kref_u32() & 0xffffff) / 8388608.0 - 1.0);
}
/* A random positive f16 in [2^-10, 2^-3) (keeps block scales sane). */
static inline void kref_put_scale(uint8_t *p) {
    unsigned e = 5 + kref_u32() % 7, m = kref_u32() & 1023;
    unsigned h = (e << 10) | m;
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Random bytes for n elements of a block type, with valid scale fields. */
static inline void kref_random_blocks(int type, uint8_t *p, long n) {
    if (type == 0) {
        for (long i = 0; i < n; i++) {
            float f = kref_uniform();
            memcpy(p + 4 * i, &f, 4);
        }
        return;
    }
    size_t bb = kref_block_bytes(type);
    long nb = n / kref_block(type);
    for (size_t i = 0; i < bb * (size_t)nb; i++) p[i] = (uint8_t)kref_u32();
    for (long b = 0; b < nb; b++) {
        uint8_t *q = p + b * bb;
        switch (type) {
        case 1:
            kref_put_scale(q);
            if (kref_u32() & 1) q[1] |= 0x80;
            break;
        case 30:
            q[1] = (uint8_t)((q[1] & 0x80) | (0x3c + kref_u32() % 6));
            break;
        case 2:
        case 6:
        case 8:
            kref_put_scale(q);
            break;
        case 3:
        case 7:
        case 12:
        case 13:
            kref_put_scale(q);
            kref_put_scale(q + 2);
            break;
        case 10:
            kref_put_scale(q + 80);
            kref_put_scale(q + 82);
            break;
        case 11:
            kref_put_scale(q + 108);
            break;
        case 14:
            kref_put_scale(q + 208);
            break;
        default:
            break;
        }
    }
}

#endif
