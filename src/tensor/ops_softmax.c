/* Row softmax (with optional additive mask) and log-softmax. */
#include "tensor/ops_simd.h"

#include <math.h>
#include <string.h>

/* The ISA is looked up once per call, then passed to the per-row helpers. */
static float row_max(tr_ops_isa_t isa, const float *x, long n) {
    switch (isa) {
#if defined(TR_CPU_X86)
    case TR_ISA_AVX512:
        return tr_act_max_avx512(x, n);
    case TR_ISA_AVX2:
        return tr_act_max_avx2(x, n);
#endif
    default:
        return tr_act_max_generic(x, n);
    }
}

static float exp_shift_sum(tr_ops_isa_t isa, float *x, long n, float m) {
    switch (isa) {
#if defined(TR_CPU_X86)
    case TR_ISA_AVX512:
        return tr_act_exp_shift_sum_avx512(x, n, m);
    case TR_ISA_AVX2:
        return tr_act_exp_shift_sum_avx2(x, n, m);
#endif
    default:
        return tr_act_exp_shift_sum_generic(x, n, m);
    }
}

static float exp_sum(tr_ops_isa_t isa, const float *x, long n, float m) {
    switch (isa) {
#if defined(TR_CPU_X86)
    case TR_ISA_AVX512:
        return tr_act_exp_sum_avx512(x, n, m);
    case TR_ISA_AVX2:
        return tr_act_exp_sum_avx2(x, n, m);
#endif
    default:
        return tr_act_exp_sum_generic(x, n, m);
    }
}

void tr_softmax(float *x, int rows, int n, const float *mask) {
    if (n <= 0) return;
    const tr_ops_isa_t isa = tr_ops_isa();
    for (long r = 0; r < rows; r++) {
        float *p = x + r * (long)n;
        if (mask) {
            const float *mk = mask + r * (long)n;
            for (int i = 0; i < n; i++) p[i] += mk[i];
        }
        float m = row_max(isa, p, n);
        if (!(m > -INFINITY)) { /* all masked (or NaN max): no valid entry */
            memset(p, 0, (size_t)n * sizeof(float));
            continue;
        }
        float inv = 1.0f / exp_shift_sum(isa, p, n, m);
        for (int i = 0; i < n; i++) p[i] *= inv;
    }
}

void tr_log_softmax(float *x, int n) {
    if (n <= 0) return;
    const tr_ops_isa_t isa = tr_ops_isa();
    float m = row_max(isa, x, n);
    if (!(m > -INFINITY)) return; /* all -inf: log-probs stay -inf */
    float lse = m + logf(exp_sum(isa, x, n, m));
    for (int i = 0; i < n; i++) x[i] -= lse;
}
