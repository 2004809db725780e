/* Vectorised element-wise kernels, written once against ops_vec.h and
 * compiled per ISA by act_generic.c / act_avx2.c / act_avx512.c. Tails are
 * run through a zero-padded lane buffer so every element sees the same
 * arithmetic. */
#include "tensor/ops_simd.h"
#include "tensor/ops_vec.h"

/* Apply f (vf -> vf) to x[0..n) in place. */
#define TR_MAP_INPLACE(x, n, f)                                                                    \
    do {                                                                                           \
        long i_ = 0;                                                                               \
        for (; i_ + VW <= (n); i_ += VW) vstore((x) + i_, f(vload((x) + i_)));                     \
        if (i_ < (n)) {                                                                            \
            float buf_[VW] = {0};                                                                  \
            memcpy(buf_, (x) + i_, (size_t)((n)-i_) * sizeof(float));                              \
            vstore(buf_, f(vload(buf_)));                                                          \
            memcpy((x) + i_, buf_, (size_t)((n)-i_) * sizeof(float));                              \
        }                                                                                          \
    } while (0)

/* GELU, erf form: 0.5 x erfc(-x/sqrt2) written through erfc(|z|) so both
 * signs keep full relative accuracy. erfc uses the Chebyshev-fitted form
 * t*exp(-z^2 + P(t)), t = 1/(1+z/2) (fractional error < 1.2e-7). */
static inline vf gelu_v(vf x) {
    vf z = vmul(vabs(x), vset1(0.70710678118654752f));
    vf t = vdiv(vset1(1.0f), vfmadd(z, vset1(0.5f), vset1(1.0f)));
    vf p = vset1(0.17087277f);
    p = vfmadd(p, t, vset1(-0.82215223f));
    p = vfmadd(p, t, vset1(1.48851587f));
    p = vfmadd(p, t, vset1(-1.13520398f));
    p = vfmadd(p, t, vset1(0.27886807f));
    p = vfmadd(p, t, vset1(-0.18628806f));
    p = vfmadd(p, t, vset1(0.09678418f));
    p = vfmadd(p, t, vset1(0.37409196f));
    p = vfmadd(p, t, vset1(1.00002368f));
    p = vfmadd(p, t, vset1(-1.26551223f));
    /* -z^2 = -x^2/2 split into an exact head and tail (x^2 via FMA or
     * Dekker; halving is exact) so large |x| keep full relative accuracy:
     * exp(-hi + (p - lo)). Squaring the rounded z instead would cost
     * ~z^2 ulp. */
    vf xx = vmul(x, x);
    vf zz = vmul(xx, vset1(0.5f));
    vf zz_lo = vmul(vmul_lo(x, x, xx), vset1(0.5f));
    vf erfc = vmul(t, vexp2(vsub(vzero(), zz), vsub(p, zz_lo)));
    vf half_x = vmul(x, vset1(0.5f));
    /* x >= 0: x - 0.5 x erfc(z); x < 0: 0.5 x erfc(z) */
    vf neg = vmul(half_x, erfc);
    return vsel_neg(x, neg, vsub(x, neg));
}

/* 0.5 x (1 + tanh(u)) == x * sigmoid(2u) */
static inline vf gelu_tanh_v(vf x) {
    vf x3 = vmul(vmul(x, x), x);
    vf u = vmul(vset1(0.79788456080286536f), vfmadd(x3, vset1(0.044715f), x));
    vf e = vexp(vmul(u, vset1(-2.0f)));
    return vdiv(x, vadd(vset1(1.0f), e));
}

/* tanh keeping relative accuracy near 0 (1 - 2/(e^2x + 1) alone would lose
 * it to cancellation): |x| < 0.625 an odd polynomial x + x^3 P(x^2) (the
 * classic Cephes tanhf fit, ~1 ulp), beyond it sign(x)(1 - 2/(e^2|x| + 1))
 * with |x| capped at 9, where tanh is 1 in float. */
static inline vf tanh_v(vf x) {
    vf z = vmul(x, x);
    vf p = vset1(-5.70498872745e-3f);
    p = vfmadd(p, z, vset1(2.06390887954e-2f));
    p = vfmadd(p, z, vset1(-5.37397155531e-2f));
    p = vfmadd(p, z, vset1(1.33314422036e-1f));
    p = vfmadd(p, z, vset1(-3.33332819422e-1f));
    vf small = vfmadd(vmul(p, z), x, x);
    vf a = vabs(x);
    vf e = vexp(vmul(vmin(a, vset1(9.0f)), vset1(2.0f)));
    vf big = vsub(vset1(1.0f), vdiv(vset1(2.0f), vadd(e, vset1(1.0f))));
    big = vsel_neg(x, vsub(vzero(), big), big);
    return vsel_neg(vsub(a, vset1(0.625f)), small, big);
}

static inline vf silu_v(vf x) {
    return vdiv(x, vadd(vset1(1.0f), vexp(vsub(vzero(), x))));
}

static inline vf sigmoid_v(vf x) {
    return vdiv(vset1(1.0f), vadd(vset1(1.0f), vexp(vsub(vzero(), x))));
}

/* gelu_v on GELU_U vectors at once, every step written across all of them.
 * One vector's chain (a divide, ten dependent multiply-adds, the
 * exponential) is ~100 cycles of latency in ~80 instructions, more than
 * the out-of-order window overlaps: one at a time it ran at ~1/3 of the
 * FP units' throughput. Interleaved chains fill it. Each lane gets exactly
 * gelu_v's operations, so results are the same bits. */
#define GELU_U 4
static inline __attribute__((always_inline)) void gelu_vn(float *x) {
    vf v[GELU_U], t[GELU_U], p[GELU_U], zz[GELU_U], lo[GELU_U];
    const int U = GELU_U;
    for (int k = 0; k < U; k++) v[k] = vload(x + k * VW);
    for (int k = 0; k < U; k++) {
        vf z = vmul(vabs(v[k]), vset1(0.70710678118654752f));
        t[k] = vdiv(vset1(1.0f), vfmadd(z, vset1(0.5f), vset1(1.0f)));
    }
    for (int k = 0; k < U; k++) p[k] = vfmadd(vset1(0.17087277f), t[k], vset1(-0.82215223f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(1.48851587f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(-1.13520398f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(0.27886807f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(-0.18628806f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(0.09678418f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(0.37409196f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(1.00002368f));
    for (int k = 0; k < U; k++) p[k] = vfmadd(p[k], t[k], vset1(-1.26551223f));
    for (int k = 0; k < U; k++) {
        vf xx = vmul(v[k], v[k]);
        zz[k] = vmul(xx, vset1(0.5f));
        lo[k] = vmul(vmul_lo(v[k], v[k], xx), vset1(0.5f));
    }
    for (int k = 0; k < U; k++) p[k] = vexp2(vsub(vzero(), zz[k]), vsub(p[k], lo[k]));
    for (int k = 0; k < U; k++) {
        vf erfc = vmul(t[k], p[k]);
        vf neg = vmul(vmul(v[k], vset1(0.5f)), erfc);
        vstore(x + k * VW, vsel_neg(v[k], neg, vsub(v[k], neg)));
    }
}

void TR_VSUF(tr_act_gelu)(float *x, long n) {
    long i = 0;
    for (; i + GELU_U * VW <= n; i += GELU_U * VW) gelu_vn(x + i);
    TR_MAP_INPLACE(x + i, n - i, gelu_v);
}

void TR_VSUF(tr_act_gelu_tanh)(float *x, long n) {
    TR_MAP_INPLACE(x, n, gelu_tanh_v);
}

void TR_VSUF(tr_act_tanh)(float *x, long n) {
    TR_MAP_INPLACE(x, n, tanh_v);
}

void TR_VSUF(tr_act_silu)(float *x, long n) {
    TR_MAP_INPLACE(x, n, silu_v);
}

void TR_VSUF(tr_act_sigmoid)(float *x, long n) {
    TR_MAP_INPLACE(x, n, sigmoid_v);
}

float TR_VSUF(tr_act_max)(const float *x, long n) {
    float m = -INFINITY;
    long i = 0;
    if (n >= VW) {
        vf acc = vload(x);
        for (i = VW; i + VW <= n; i += VW) acc = vmax(acc, vload(x + i));
        m = vhmax(acc);
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* x[i] = exp(x[i] - m); returns the sum (lane order fixed, so deterministic). */
float TR_VSUF(tr_act_exp_shift_sum)(float *x, long n, float m) {
    vf acc = vzero(), mv = vset1(m);
    long i = 0;
    for (; i + VW <= n; i += VW) {
        vf e = vexp(vsub(vload(x + i), mv));
        vstore(x + i, e);
        acc = vadd(acc, e);
    }
    if (i < n) {
        float buf[VW];
        for (int l = 0; l < VW; l++) buf[l] = -INFINITY;
        memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
        vf e = vexp(vsub(vload(buf), mv));
        vstore(buf, e);
        memcpy(x + i, buf, (size_t)(n - i) * sizeof(float));
        acc = vadd(acc, e);
    }
    return vhsum(acc);
}

float TR_VSUF(tr_act_exp_sum)(const float *x, long n, float m) {
    vf acc = vzero(), mv = vset1(m);
    long i = 0;
    for (; i + VW <= n; i += VW) acc = vadd(acc, vexp(vsub(vload(x + i), mv)));
    if (i < n) {
        float buf[VW];
        for (int l = 0; l < VW; l++) buf[l] = -INFINITY;
        memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
        acc = vadd(acc, vexp(vsub(vload(buf), mv)));
    }
    return vhsum(acc);
}
