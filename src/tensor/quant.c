/* Row quantizers (F32 -> F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
 * Q5_K, Q6_K), writing the ggml block layouts of docs/formats/gguf.md §9.1.
 *
 * The 32-element types use the classic ggml rules (absmax or min/max
 * scaling). The K-quants use a small, sound search: for each 32-element
 * sub-block (Q4_K/Q5_K) a few candidate inverse scales around nmax/range
 * quantize the values, a least-squares fit of x ≈ a·q + b (b ≤ 0) gives the
 * best scale/offset for those codes, and the candidate with the lowest
 * squared error wins. The per-sub-block scales and mins are then quantized
 * to 6 bits against the super-block d/dmin and the codes recomputed with
 * the final (rounded) values, so the stored codes match what decodes.
 * Q6_K uses signed absmax scales per 16 elements and 8-bit sub-scales. */
#include <math.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/quant_internal.h"

static inline void put_half(uint8_t *p, float f) {
    uint16_t h = tr_f32_to_f16(f);
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
}

static inline void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

static inline int nearest(float f) {
    return (int)lrintf(f);
}

static void q8_0_block(const float *x, uint8_t *b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)clampi(nearest(x[j] * id), -127, 127);
}

/* Symmetric 4/5-bit blocks: d = signed absmax / -(2^(bits-1)). */
static void qsym_block(const float *x, int bits, float *d_out, int *q) {
    float amax = 0.0f, maxv = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            maxv = x[j];
        }
    }
    int half = 1 << (bits - 1), top = (1 << bits) - 1;
    float d = maxv / (float)-half, id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) q[j] = clampi((int)floorf(x[j] * id + (float)half + 0.5f), 0, top);
    *d_out = d;
}

static void qasym_block(const float *x, int bits, float *d_out, float *m_out, int *q) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < 32; j++) {
        mn = fminf(mn, x[j]);
        mx = fmaxf(mx, x[j]);
    }
    int top = (1 << bits) - 1;
    float d = (mx - mn) / (float)top, id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) q[j] = clampi((int)floorf((x[j] - mn) * id + 0.5f), 0, top);
    *d_out = d;
    *m_out = mn;
}

static void pack_nibbles(const int *q, uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

static uint32_t high_bits(const int *q) {
    uint32_t qh = 0;
    for (int j = 0; j < 32; j++) qh |= (uint32_t)((q[j] >> 4) & 1) << j;
    return qh;
}

/* Fit x ≈ a*q + b (b <= 0) to one sub-block; returns squared error. */
static float fit_affine(const float *x, int n, int nmax, float *a_out, float *b_out) {
    float mn = 0.0f, mx = x[0];
    for (int i = 0; i < n; i++) {
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
    }
    if (mx <= mn) {
        *a_out = 0.0f;
        *b_out = mn;
        return 0.0f;
    }
    float best_err = INFINITY, best_a = (mx - mn) / (float)nmax, best_b = mn;
    int q[32];
    for (int t = -8; t <= 8; t++) {
        float iscale = ((float)nmax + 0.1f * (float)t) / (mx - mn);
        double sq = 0, sqq = 0, sx = 0, sxq = 0;
        for (int i = 0; i < n; i++) {
            q[i] = clampi(nearest(iscale * (x[i] - mn)), 0, nmax);
            sq += q[i];
            sqq += (double)q[i] * q[i];
            sx += x[i];
            sxq += (double)x[i] * q[i];
        }
        double det = n * sqq - sq * sq, a, b;
        if (det <= 0) continue;
        a = (n * sxq - sq * sx) / det;
        b = (sx - a * sq) / n;
        if (b > 0) { /* offset must be a subtraction: refit the scale alone */
            b = 0;
            a = sqq > 0 ? sxq / sqq : 0;
        }
        if (a <= 0) continue;
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            float e = (float)(a * q[i] + b) - x[i];
            err += e * e;
        }
        if (err < best_err) {
            best_err = err;
            best_a = (float)a;
            best_b = (float)b;
        }
    }
    *a_out = best_a;
    *b_out = best_b;
    return best_err;
}

/* Q4_K / Q5_K common part: scales[12], d, dmin and the final codes q[256]. */
static void kquant_scales(const float *x, int nmax, uint8_t *dm, uint8_t *scales, int *q) {
    float a[8], m[8], amax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < 8; j++) {
        float b;
        fit_affine(x + 32 * j, 32, nmax, &a[j], &b);
        m[j] = -b;
        amax = fmaxf(amax, a[j]);
        mmax = fmaxf(mmax, m[j]);
    }
    float d = amax / 63.0f, dmin = mmax / 63.0f;
    put_half(dm, d);
    put_half(dm + 2, dmin);
    d = tr_f16_to_f32(tr_f32_to_f16(d));
    dmin = tr_f16_to_f32(tr_f32_to_f16(dmin));
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0.0f ? clampi(nearest(a[j] / d), 0, 63) : 0;
        mn[j] = dmin > 0.0f ? clampi(nearest(m[j] / dmin), 0, 63) : 0;
    }
    for (int j = 0; j < 4; j++) {
        scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
        scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
    for (int j = 0; j < 8; j++) {
        float s = d * (float)sc[j], off = dmin * (float)mn[j];
        for (int i = 0; i < 32; i++)
            q[32 * j + i] = s > 0.0f ? clampi(nearest((x[32 * j + i] + off) / s), 0, nmax) : 0;
    }
}

static void q4_k_block(const float *x, uint8_t *b) {
    int q[256];
    kquant_scales(x, 15, b, b + 4, q);
    uint8_t *qs = b + 16;
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

static void q5_k_block(const float *x, uint8_t *b) {
    int q[256];
    kquant_scales(x, 31, b, b + 4, q);
    uint8_t *qh = b + 16, *qs = b + 48;
    memset(qh, 0, 32);
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
            qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
            qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
    }
}

static void q6_k_block(const float *x, uint8_t *b) {
    float s[16], smax = 0.0f;
    for (int g = 0; g < 16; g++) {
        float amax = 0.0f, maxv = 0.0f;
        for (int i = 0; i < 16; i++) {
            if (fabsf(x[16 * g + i]) > amax) {
                amax = fabsf(x[16 * g + i]);
                maxv = x[16 * g + i];
            }
        }
        s[g] = maxv / -32.0f; /* the extreme value maps to code -32 exactly */
        smax = fmaxf(smax, fabsf(s[g]));
    }
    float d = smax / 127.0f;
    put_half(b + 208, d);
    d = tr_f16_to_f32(tr_f32_to_f16(d));
    int8_t *sc = (int8_t *)(b + 192);
    int q[256];
    for (int g = 0; g < 16; g++) {
        sc[g] = (int8_t)(d > 0.0f ? clampi(nearest(s[g] / d), -127, 127) : 0);
        float step = d * (float)sc[g];
        for (int i = 0; i < 16; i++)
            q[16 * g + i] = step != 0.0f ? clampi(nearest(x[16 * g + i] / step), -32, 31) + 32 : 32;
    }
    for (int h = 0; h < 2; h++) {
        uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int *qq = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            int q1 = qq[l], q2 = qq[l + 32], q3 = qq[l + 64], q4 = qq[l + 96];
            ql[l] = (uint8_t)((q1 & 15) | ((q3 & 15) << 4));
            ql[l + 32] = (uint8_t)((q2 & 15) | ((q4 & 15) << 4));
            qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
}

bool tr_type_can_quantize(int type) {
    switch (type) {
    case TR_F32:
    case TR_F16:
    case TR_BF16:
    case TR_Q8_0:
    case TR_Q4_0:
    case TR_Q4_1:
    case TR_Q5_0:
    case TR_Q5_1:
    case TR_Q4_K:
    case TR_Q5_K:
    case TR_Q6_K:
        return true;
    default:
        return false;
    }
}

bool tr_quantize_row(int type, const float *src, void *dst, int64_t n) {
    if (!tr_type_can_quantize(type) || n < 0 || n % tr_type_block(type) != 0) return false;
    uint8_t *p = (uint8_t *)dst;
    size_t bb = tr_type_block_bytes(type);
    int bs = tr_type_block(type);
    int q[32];
    float d, m;
    switch (type) {
    case TR_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return true;
    case TR_F16:
        for (int64_t i = 0; i < n; i++) put_half(p + 2 * i, src[i]);
        return true;
    case TR_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = tr_f32_to_bf16(src[i]);
            p[2 * i] = (uint8_t)(h & 0xff);
            p[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return true;
    default:
        break;
    }
    for (int64_t i = 0; i < n / bs; i++) {
        const float *x = src + i * bs;
        uint8_t *b = p + (size_t)i * bb;
        switch (type) {
        case TR_Q8_0:
            q8_0_block(x, b);
            break;
        case TR_Q4_0:
            qsym_block(x, 4, &d, q);
            put_half(b, d);
            pack_nibbles(q, b + 2);
            break;
        case TR_Q5_0:
            qsym_block(x, 5, &d, q);
            put_half(b, d);
            put_u32(b + 2, high_bits(q));
            pack_nibbles(q, b + 6);
            break;
        case TR_Q4_1:
            qasym_block(x, 4, &d, &m, q);
            put_half(b, d);
            put_half(b + 2, m);
            pack_nibbles(q, b + 4);
            break;
        case TR_Q5_1:
            qasym_block(x, 5, &d, &m, q);
            put_half(b, d);
            put_half(b + 2, m);
            put_u32(b + 4, high_bits(q));
            pack_nibbles(q, b + 8);
            break;
        case TR_Q4_K:
            q4_k_block(x, b);
            break;
        case TR_Q5_K:
            q5_k_block(x, b);
            break;
        case TR_Q6_K:
            q6_k_block(x, b);
            break;
        default:
            return false;
        }
    }
    return true;
}
