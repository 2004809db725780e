/* Public activation entry points: dispatch to the SIMD kernels (act_kern.h)
 * or do the trivially memory-bound ones inline. */
#include "tensor/ops_simd.h"

#include <math.h>

/* The x86 kernels exist only in x86-64 builds. */
#if defined(TR_CPU_X86)
#define X86_CASES(name, ...)                                                                       \
    case TR_ISA_AVX512:                                                                            \
        name##_avx512(__VA_ARGS__);                                                                \
        break;                                                                                     \
    case TR_ISA_AVX2:                                                                              \
        name##_avx2(__VA_ARGS__);                                                                  \
        break;
#else
#define X86_CASES(name, ...)
#endif

#define DISPATCH(name, ...)                                                                        \
    do {                                                                                           \
        switch (tr_ops_isa()) {                                                                    \
            X86_CASES(name, __VA_ARGS__)                                                           \
        default:                                                                                   \
            name##_generic(__VA_ARGS__);                                                           \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

void tr_gelu(float *x, long n) {
    if (n > 0) DISPATCH(tr_act_gelu, x, n);
}

void tr_gelu_tanh(float *x, long n) {
    if (n > 0) DISPATCH(tr_act_gelu_tanh, x, n);
}

void tr_silu(float *x, long n) {
    if (n > 0) DISPATCH(tr_act_silu, x, n);
}

void tr_sigmoid(float *x, long n) {
    if (n > 0) DISPATCH(tr_act_sigmoid, x, n);
}

void tr_relu(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void tr_tanh(float *x, long n) {
    if (n > 0) DISPATCH(tr_act_tanh, x, n);
}

void tr_glu(const float *x, float *y, int rows, int half) {
    /* Gates go through a small stack buffer so that y == x works: output row
     * r never overlaps the unread part of input rows >= r, and within row 0
     * each element is read before it is overwritten. */
    enum { CHUNK = 256 };
    float gate[CHUNK];
    const tr_ops_isa_t isa = tr_ops_isa(); /* once per call */
    for (long r = 0; r < rows; r++) {
        const float *a = x + r * 2L * half;
        float *o = y + r * (long)half;
        for (int i = 0; i < half; i += CHUNK) {
            int n = half - i < CHUNK ? half - i : CHUNK;
            for (int j = 0; j < n; j++) gate[j] = a[half + i + j];
            switch (isa) {
#if defined(TR_CPU_X86)
            case TR_ISA_AVX512:
                tr_act_sigmoid_avx512(gate, n);
                break;
            case TR_ISA_AVX2:
                tr_act_sigmoid_avx2(gate, n);
                break;
#endif
            default:
                tr_act_sigmoid_generic(gate, n);
                break;
            }
            for (int j = 0; j < n; j++) o[i + j] = a[i + j] * gate[j];
        }
    }
}
