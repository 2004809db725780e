/* A tiny SIMD abstraction so one kernel source serves three builds: the file
 * that includes it defines TR_VEC_AVX512, TR_VEC_AVX2 or nothing (portable
 * GCC/Clang vector extensions, 4 lanes, lowered to whatever the target has).
 * Intrinsics are used for the ISA builds because ISO C mode disables FMA
 * contraction in GCC and the kernels are FMA-bound.
 * TR_VSUF(name) appends the build's suffix so the three copies can coexist. */
#ifndef TR_TENSOR_OPS_VEC_H
#define TR_TENSOR_OPS_VEC_H

#include <stdint.h>
#include <string.h>

#include "tensor/dtype.h"

#if defined(TR_VEC_AVX512)
#include <immintrin.h>
#define VW         16
#define TR_VSUF(n) n##_avx512
typedef __m512 vf;
static inline vf vload(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline void vstore(float *p, vf v) {
    _mm512_storeu_ps(p, v);
}
static inline vf vset1(float x) {
    return _mm512_set1_ps(x);
}
static inline vf vadd(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
static inline vf vsub(vf a, vf b) {
    return _mm512_sub_ps(a, b);
}
static inline vf vmul(vf a, vf b) {
    return _mm512_mul_ps(a, b);
}
static inline vf vdiv(vf a, vf b) {
    return _mm512_div_ps(a, b);
}
static inline vf vmax(vf a, vf b) {
    return _mm512_max_ps(a, b);
}
static inline vf vmin(vf a, vf b) {
    return _mm512_min_ps(a, b);
}
static inline vf vfmadd(vf a, vf b, vf c) { /* a*b + c */
    return _mm512_fmadd_ps(a, b, c);
}
/* the rounding error of p = a*b, exactly: a*b - p */
static inline vf vmul_lo(vf a, vf b, vf p) {
    return _mm512_fmsub_ps(a, b, p);
}
static inline vf vround(vf x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 2^n for integral n in [-126, 127] */
static inline vf vpow2i(vf n) {
    __m512i i = _mm512_cvtps_epi32(n);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(i, _mm512_set1_epi32(127)), 23));
}
/* r where x >= lo, else 0 */
static inline vf vkeep_ge(vf x, vf lo, vf r) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), r);
}
/* r where x < 0, else s */
static inline vf vsel_neg(vf x, vf r, vf s) {
    return _mm512_mask_mov_ps(s, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), r);
}
static inline vf vabs(vf x) {
    return _mm512_abs_ps(x);
}
static inline float vhsum(vf v) {
    return _mm512_reduce_add_ps(v);
}
static inline float vhmax(vf v) {
    return _mm512_reduce_max_ps(v);
}

#elif defined(TR_VEC_AVX2)
#include <immintrin.h>
#define VW         8
#define TR_VSUF(n) n##_avx2
typedef __m256 vf;
static inline vf vload(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline void vstore(float *p, vf v) {
    _mm256_storeu_ps(p, v);
}
static inline vf vset1(float x) {
    return _mm256_set1_ps(x);
}
static inline vf vadd(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
static inline vf vsub(vf a, vf b) {
    return _mm256_sub_ps(a, b);
}
static inline vf vmul(vf a, vf b) {
    return _mm256_mul_ps(a, b);
}
static inline vf vdiv(vf a, vf b) {
    return _mm256_div_ps(a, b);
}
static inline vf vmax(vf a, vf b) {
    return _mm256_max_ps(a, b);
}
static inline vf vmin(vf a, vf b) {
    return _mm256_min_ps(a, b);
}
static inline vf vfmadd(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
static inline vf vmul_lo(vf a, vf b, vf p) {
    return _mm256_fmsub_ps(a, b, p);
}
static inline vf vround(vf x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline vf vpow2i(vf n) {
    __m256i i = _mm256_cvtps_epi32(n);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23));
}
static inline vf vkeep_ge(vf x, vf lo, vf r) {
    return _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), r);
}
static inline vf vsel_neg(vf x, vf r, vf s) {
    return _mm256_blendv_ps(s, r, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}
static inline vf vabs(vf x) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}
static inline float vhsum(vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float vhmax(vf v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#else
#define VW         4
#define TR_VSUF(n) n##_generic
typedef float vf __attribute__((vector_size(16)));
typedef int vi __attribute__((vector_size(16)));
static inline vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vstore(float *p, vf v) {
    memcpy(p, &v, sizeof v);
}
static inline vf vset1(float x) {
    vf v = {x, x, x, x};
    return v;
}
static inline vf vadd(vf a, vf b) {
    return a + b;
}
static inline vf vsub(vf a, vf b) {
    return a - b;
}
static inline vf vmul(vf a, vf b) {
    return a * b;
}
static inline vf vdiv(vf a, vf b) {
    return a / b;
}
static inline vf vsel_mask(vi m, vf a, vf b) { /* m ? a : b */
    return (vf)(((vi)a & m) | ((vi)b & ~m));
}
static inline vf vmax(vf a, vf b) {
    return vsel_mask(a > b, a, b);
}
static inline vf vmin(vf a, vf b) {
    return vsel_mask(a < b, a, b);
}
static inline vf vfmadd(vf a, vf b, vf c) {
    return a * b + c;
}
/* Dekker's exact product error (no FMA assumed); all partial products of
 * the 12-bit halves are exact, so contraction cannot change the result. */
static inline vf vmul_lo(vf a, vf b, vf p) {
    const vf split = vset1(4097.0f);
    vf ca = a * split, cb = b * split;
    vf ah = ca - (ca - a), bh = cb - (cb - b);
    vf al = a - ah, bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}
static inline vf vround(vf x) {
    /* Adding 1.5*2^23 rounds to nearest for |x| < 2^22 (all callers). */
    const vf magic = vset1(12582912.0f);
    return (x + magic) - magic;
}
static inline vf vpow2i(vf n) {
    vi i = __builtin_convertvector(n, vi);
    return (vf)((i + 127) << 23);
}
static inline vf vkeep_ge(vf x, vf lo, vf r) {
    return (vf)((vi)r & (x >= lo));
}
static inline vf vsel_neg(vf x, vf r, vf s) {
    return vsel_mask(x < vset1(0.0f), r, s);
}
static inline vf vabs(vf x) {
    return (vf)((vi)x & 0x7fffffff);
}
static inline float vhsum(vf v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}
static inline float vhmax(vf v) {
    float a = v[0] > v[1] ? v[0] : v[1];
    float b = v[2] > v[3] ? v[2] : v[3];
    return a > b ? a : b;
}
#endif

/* dst[0..n) = F16 src[0..n) as float */
static inline void vcvt_f16(const uint16_t *src, float *dst, long n) {
    long i = 0;
#if defined(TR_VEC_AVX512)
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
#elif defined(TR_VEC_AVX2)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
    for (; i < n; i++) dst[i] = tr_f16_to_f32(src[i]);
}

/* dst[0..n) = F16 src[0..n) as float for n < VW, through one vector
 * conversion (dst holds VW floats; the values past n are zeros) */
static inline void vcvt_f16_short(const uint16_t *src, float *dst, int n) {
#if defined(TR_VEC_AVX512)
    const __m256i h = _mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), src);
    _mm512_storeu_ps(dst, _mm512_cvtph_ps(h));
#elif defined(TR_VEC_AVX2)
    uint16_t t[8] = {0};
    memcpy(t, src, sizeof(uint16_t) * (size_t)n);
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)t)));
#else
    for (int i = 0; i < n; i++) dst[i] = tr_f16_to_f32(src[i]);
#endif
}

/* VW F16 values at src as a vector */
static inline vf vload_f16(const uint16_t *src) {
#if defined(TR_VEC_AVX512)
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)src));
#elif defined(TR_VEC_AVX2)
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)src));
#else
    vf v;
    for (int i = 0; i < VW; i++) v[i] = tr_f16_to_f32(src[i]);
    return v;
#endif
}

static inline vf vzero(void) {
    return vset1(0.0f);
}

/* exp(a + b) for |b| small relative to a, with ~1 ulp error: b joins after
 * the Cody-Waite reduction of a, so a large exact a loses nothing to the
 * rounding of a + b. Exactly 0 when a + b < -87.3 (also for a = -INFINITY),
 * saturates above 88.3. NaN is not propagated (callers never feed NaN). */
static inline vf vexp2(vf a, vf b) {
    const vf lo = vset1(-87.3f), hi = vset1(88.3f);
    vf x = vadd(a, b);
    vf ac = vmin(vmax(a, lo), hi);
    vf n = vround(vmul(vmin(vmax(x, lo), hi), vset1(1.44269504088896341f)));
    vf r = vfmadd(n, vset1(-0.693359375f), ac);
    r = vfmadd(n, vset1(2.12194440e-4f), r);
    r = vadd(r, b);
    vf p = vset1(1.9875691500e-4f);
    p = vfmadd(p, r, vset1(1.3981999507e-3f));
    p = vfmadd(p, r, vset1(8.3334519073e-3f));
    p = vfmadd(p, r, vset1(4.1665795894e-2f));
    p = vfmadd(p, r, vset1(1.6666665459e-1f));
    p = vfmadd(p, r, vset1(5.0000001201e-1f));
    p = vfmadd(p, vmul(r, r), vadd(r, vset1(1.0f)));
    return vkeep_ge(x, lo, vmul(p, vpow2i(n)));
}

/* exp(x), same accuracy and range rules as vexp2 */
static inline vf vexp(vf x) {
    const vf lo = vset1(-87.3f);
    vf xc = vmin(vmax(x, lo), vset1(88.3f));
    vf n = vround(vmul(xc, vset1(1.44269504088896341f)));
    vf r = vfmadd(n, vset1(-0.693359375f), xc);
    r = vfmadd(n, vset1(2.12194440e-4f), r);
    vf p = vset1(1.9875691500e-4f);
    p = vfmadd(p, r, vset1(1.3981999507e-3f));
    p = vfmadd(p, r, vset1(8.3334519073e-3f));
    p = vfmadd(p, r, vset1(4.1665795894e-2f));
    p = vfmadd(p, r, vset1(1.6666665459e-1f));
    p = vfmadd(p, r, vset1(5.0000001201e-1f));
    p = vfmadd(p, vmul(r, r), vadd(r, vset1(1.0f)));
    return vkeep_ge(x, lo, vmul(p, vpow2i(n)));
}

#endif
