/* The NEON dot-product level's integer GEMM of Q4_K, Q5_K and Q8_0 (tr_mm_qgemm,
 * driven by matmul_qgemm.c): the AVX-512 level's arithmetic
 * (matmul_qgemm_avx512.c), so the same bits, on SDOT: vdotq_laneq_s32
 * multiplies 4 signed bytes of each of 4 weight rows by the same 4 bytes of
 * x and adds them into that row's 32-bit lane. SDOT is signed on both
 * sides; the codes (0..15 for Q4_K, 0..31 for Q5_K) fit a signed byte as
 * they are, so the group dots are exact in int32 with no bias correction,
 * and one kernel takes both types (only pack_w tells them apart: Q5_K adds
 * the fifth bit from qh). Q8_0's codes are signed bytes already: packed as
 * they are; x comes as two codes per element (tr_mm_qgemm), and kernel8
 * applies the scale alone (no min). The panel layout
 * is the AVX2 level's: 16 weight
 * rows, per 32-group 8 steps of [16 rows][4 bytes] of codes, then the 16
 * scales and 16 mins. */
#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"

#define MR 4
#define NR 16
#define GB TR_MM_QG_GROUP_BYTES(NR) /* one packed group: codes [8][16][4], wsc[16], wmin[16] */

/* As the AVX-512 level's quant_row: the same codes, scales and sums
 * (vcvtnq rounds to nearest with even ties; the narrowing moves saturate);
 * q8: its quant_row8's two codes per element and xs = amax / 32258 (the
 * second value is not read: SDOT is signed, no offset to take off). */
static inline __attribute__((always_inline)) void quant_groups(const float *x, long K, int8_t *q,
                                                               float *sc, int q8) {
    for (long g = 0; g < K / 32; g++) {
        const float *xg = x + 32 * g;
        int8_t *qg = q + (q8 ? 64 : 32) * g;
        float32x4_t v[8];
        for (int j = 0; j < 8; j++) v[j] = vld1q_f32(xg + 4 * j);
        float32x4_t m = vabsq_f32(v[0]);
        for (int j = 1; j < 8; j++) m = vmaxq_f32(m, vabsq_f32(v[j]));
        float amax = vmaxvq_f32(m);
        const float d = q8 ? amax / 32258.0f : amax / 127.0f;
        if (amax < 0x1p-100f) { /* 127 / amax would overflow: scale up by 2^64 (exact) */
            for (int j = 0; j < 8; j++) v[j] = vmulq_n_f32(v[j], 0x1p64f);
            amax *= 0x1p64f;
        }
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32x4_t c[8], l[8];
        for (int j = 0; j < 8; j++) {
            const float32x4_t u = vmulq_n_f32(v[j], id);
            c[j] = vcvtnq_s32_f32(u);
            if (q8) l[j] = vcvtnq_s32_f32(vmulq_n_f32(vsubq_f32(u, vcvtq_f32_s32(c[j])), 254.0f));
        }
        for (int pass = 0; pass < (q8 ? 2 : 1); pass++) {
            const int32x4_t *e = pass ? l : c;
            int16x8_t h[4];
            for (int j = 0; j < 4; j++)
                h[j] = vcombine_s16(vqmovn_s32(e[2 * j]), vqmovn_s32(e[2 * j + 1]));
            vst1q_s8(qg + 32 * pass, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
            vst1q_s8(qg + 32 * pass + 16, vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
        }
        sc[2 * g] = d;
        if (q8) {
            sc[2 * g + 1] = 0.0f;
            continue;
        }
        float s = 0.0f; /* in order, as the reference sums */
        for (int j = 0; j < 32; j++) s += xg[j];
        sc[2 * g + 1] = -s;
    }
}

static void quant_row(const float *x, long K, int8_t *q, float *sc) {
    quant_groups(x, K, q, sc, 0);
}

static void quant_row8(const float *x, long K, int8_t *q, float *sc) {
    quant_groups(x, K, q, sc, 1);
}

/* 4 rows of 4 dwords (a[j]) to out[s], lane j = dword s of row j: the
 * bytes of 4 consecutive k of each weight row side by side, as SDOT with a
 * broadcast x lane wants them. */
static inline void transpose4x4(const uint8x16_t a[4], uint8x16_t out[4]) {
    const uint32x4_t t0 = vtrn1q_u32(vreinterpretq_u32_u8(a[0]), vreinterpretq_u32_u8(a[1]));
    const uint32x4_t t1 = vtrn2q_u32(vreinterpretq_u32_u8(a[0]), vreinterpretq_u32_u8(a[1]));
    const uint32x4_t t2 = vtrn1q_u32(vreinterpretq_u32_u8(a[2]), vreinterpretq_u32_u8(a[3]));
    const uint32x4_t t3 = vtrn2q_u32(vreinterpretq_u32_u8(a[2]), vreinterpretq_u32_u8(a[3]));
    out[0] = vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    out[1] = vreinterpretq_u8_u64(vtrn1q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
    out[2] = vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    out[3] = vreinterpretq_u8_u64(vtrn2q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
}

/* Bit `bit` of each byte of qh moved to bit 4 (value 16): the fifth bit of
 * Q5_K's codes in group `bit` of the block (vshlq_u8 shifts right for a
 * negative count). */
static inline uint8x16_t fifth_bit(uint8x16_t qh, int bit) {
    return vandq_u8(vshlq_u8(qh, vdupq_n_s8((int8_t)(4 - bit))), vdupq_n_u8(0x10));
}

/* Q8_0 groups [k0 / 32, (k0 + kc) / 32): each a 34-byte block (d, then 32
 * signed codes) per row, the codes transposed as pack_w's, the scales as
 * floats (the min slots are not read). */
static void pack_q8(const uint8_t *src, size_t stride, int nr, long k0, int kc, uint8_t *dst) {
    static const uint8_t zero[34];
    for (long b = k0 / 32; b < (k0 + kc) / 32; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 32) * GB;
        const uint8_t *blk[NR];
        for (int c = 0; c < NR; c++)
            blk[c] = c < nr ? src + (size_t)c * stride + (size_t)b * 34 : zero;
        for (int h = 0; h < NR / 4; h++)
            for (int half = 0; half < 2; half++) { /* steps 4 half .. 4 half + 3 */
                uint8x16_t a[4], t[4];
                for (int j = 0; j < 4; j++) a[j] = vld1q_u8(blk[4 * h + j] + 2 + 16 * half);
                transpose4x4(a, t);
                for (int s = 0; s < 4; s++) vst1q_u8(gd + 64 * (4 * half + s) + 16 * h, t[s]);
            }
        float *ws = (float *)(gd + 32 * NR);
        for (int c = 0; c < NR; c++) {
            uint16_t hd;
            memcpy(&hd, blk[c], 2);
            ws[c] = tr_f16_to_f32(hd);
        }
    }
}

static bool pack_w(int type, const uint8_t *src, size_t stride, int nr, long k0, int kc,
                   uint8_t *dst) {
    if (type == TR_Q8_0) {
        pack_q8(src, stride, nr, k0, kc, dst);
        return true;
    }
    if (type != TR_Q4_K && type != TR_Q5_K) return false;
    const int five = type == TR_Q5_K;
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    for (long b = k0 / 256; b < (k0 + kc) / 256; b++) {
        uint8_t *gd = dst + (size_t)(b - k0 / 256) * 8 * GB;
        const uint8_t *blk[NR];
        tr_mm_qgemm_pack_block(type, src, stride, nr, NR, b, blk, gd);
        /* 32 code bytes per 64 elements (ch): low nibbles group 2ch, high
         * nibbles group 2ch + 1; each 16 bytes are 4 steps of 4 k. Q5_K's
         * 32 bytes of qh (byte l: bit g is the fifth bit of element l of
         * group g) are transposed as the code bytes are, so lane for lane. */
        for (int h = 0; h < NR / 4; h++) {
            for (int half = 0; half < 2; half++) {
                uint8x16_t a[4], t[4], qh[4];
                if (five) {
                    for (int j = 0; j < 4; j++) a[j] = vld1q_u8(blk[4 * h + j] + 16 + 16 * half);
                    transpose4x4(a, qh);
                }
                for (int ch = 0; ch < 4; ch++) {
                    for (int j = 0; j < 4; j++)
                        a[j] = vld1q_u8(blk[4 * h + j] + (five ? 48 : 16) + 32 * ch + 16 * half);
                    transpose4x4(a, t);
                    uint8_t *glo = gd + (size_t)(2 * ch) * GB + 64 * (4 * half) + 16 * h;
                    uint8_t *ghi = glo + GB;
                    for (int s = 0; s < 4; s++) {
                        uint8x16_t lo = vandq_u8(t[s], low4), hi = vshrq_n_u8(t[s], 4);
                        if (five) {
                            lo = vorrq_u8(lo, fifth_bit(qh[s], 2 * ch));
                            hi = vorrq_u8(hi, fifth_bit(qh[s], 2 * ch + 1));
                        }
                        vst1q_u8(glo + 64 * s, lo);
                        vst1q_u8(ghi + 64 * s, hi);
                    }
                }
            }
        }
    }
    return true;
}

/* MR_ rows of X against a 16-row panel: per group 8 steps of SDOT per row
 * and 4 weight rows into 16 int32 accumulators, then the group's scale and
 * min in float (tr_mm_qgemm's order, q8: the scale alone; vfmaq_f32 is fused, as fmaf). The
 * float sums live in f: the integer ones, the step's weights and x take
 * most of the 32 registers. */
static inline __attribute__((always_inline)) void
kernel_rows(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
            float *y, long ldy, int MR_, int nr, const float *bias, int accumulate, int q8) {
    float f[MR][NR];
    for (int i = 0; i < MR_; i++)
        for (int j = 0; j < NR; j++)
            f[i][j] = j >= nr ? 0.0f : accumulate ? y[i * ldy + j] : bias ? bias[j] : 0.0f;
    for (int g = 0; g < ng; g++) {
        const uint8_t *gp = wp + (size_t)g * GB;
        int32x4_t s[MR][4];
        int8x16_t xv[MR][2];
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++) s[i][0] = s[i][1] = s[i][2] = s[i][3] = vdupq_n_s32(0);
        /* q8: the high codes, the sums times 254, then the low codes */
        for (int pass = 0; pass < (q8 ? 2 : 1); pass++) {
            const int8_t *xp = xq + (q8 ? 64 * g + 32 * pass : 32 * g);
#pragma GCC unroll 4
            for (int i = 0; i < MR_; i++) {
                if (pass)
                    for (int v = 0; v < 4; v++) s[i][v] = vmulq_n_s32(s[i][v], 254);
                xv[i][0] = vld1q_s8(xp + i * ldq);
                xv[i][1] = vld1q_s8(xp + i * ldq + 16);
            }
            /* the lane index of vdotq_laneq_s32 must be a constant: 4 steps
             * per 16 bytes of x, spelled out */
#define QG_STEP(t, lane)                                                                           \
    do {                                                                                           \
        const int8x16_t w0 = vld1q_s8((const int8_t *)(gp + 64 * (t)));                            \
        const int8x16_t w1 = vld1q_s8((const int8_t *)(gp + 64 * (t) + 16));                       \
        const int8x16_t w2 = vld1q_s8((const int8_t *)(gp + 64 * (t) + 32));                       \
        const int8x16_t w3 = vld1q_s8((const int8_t *)(gp + 64 * (t) + 48));                       \
        _Pragma("GCC unroll 4") for (int i = 0; i < MR_; i++) {                                    \
            s[i][0] = vdotq_laneq_s32(s[i][0], w0, xv[i][(t) / 4], lane);                          \
            s[i][1] = vdotq_laneq_s32(s[i][1], w1, xv[i][(t) / 4], lane);                          \
            s[i][2] = vdotq_laneq_s32(s[i][2], w2, xv[i][(t) / 4], lane);                          \
            s[i][3] = vdotq_laneq_s32(s[i][3], w3, xv[i][(t) / 4], lane);                          \
        }                                                                                          \
    } while (0)
            QG_STEP(0, 0);
            QG_STEP(1, 1);
            QG_STEP(2, 2);
            QG_STEP(3, 3);
            QG_STEP(4, 0);
            QG_STEP(5, 1);
            QG_STEP(6, 2);
            QG_STEP(7, 3);
#undef QG_STEP
        }
        const float *gs = (const float *)(gp + 32 * NR);
#pragma GCC unroll 4
        for (int i = 0; i < MR_; i++) {
            const float xs = xsc[i * ldsc + 2 * g], nx = xsc[i * ldsc + 2 * g + 1];
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                float32x4_t a = vld1q_f32(&f[i][4 * v]);
                const float32x4_t si = vcvtq_f32_s32(s[i][v]);
                a = vfmaq_f32(a, si, vmulq_n_f32(vld1q_f32(gs + 4 * v), xs));
                if (!q8) a = vfmaq_n_f32(a, vld1q_f32(gs + NR + 4 * v), nx);
                vst1q_f32(&f[i][4 * v], a);
            }
        }
    }
    for (int i = 0; i < MR_; i++) memcpy(y + i * ldy, f[i], sizeof(float) * (size_t)nr);
}

static inline __attribute__((always_inline)) void
kernel_any(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp, int ng,
           float *y, long ldy, int mr, int nr, const float *bias, int accumulate, int q8) {
#define ROWS(n) kernel_rows(xq, ldq, xsc, ldsc, wp, ng, y, ldy, n, nr, bias, accumulate, q8)
    TR_MM_QG_TILES4(mr, ROWS);
#undef ROWS
}

static void kernel(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                   int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 0);
}

static void kernel8(const int8_t *xq, long ldq, const float *xsc, long ldsc, const uint8_t *wp,
                    int ng, float *y, long ldy, int mr, int nr, const float *bias, int accumulate) {
    kernel_any(xq, ldq, xsc, ldsc, wp, ng, y, ldy, mr, nr, bias, accumulate, 1);
}

const tr_mm_qgemm tr_mm_qgemm_neon_dotprod = {.mr = MR,
                                              .nr = NR,
                                              .q5k = true,
                                              .quant_row = quant_row,
                                              .quant_row8 = quant_row8,
                                              .pack_w = pack_w,
                                              .kernel = kernel,
                                              .kernel8 = kernel8};
