/* Run-time choice of the SIMD kernel family for the element-wise and
 * attention ops: the active level of the CPU module (tensor/cpu.h), which
 * TRANSCRIBE_CPU or tr_cpu_force() may lower. On aarch64 the portable build
 * of those kernels (GCC vector extensions) is already Advanced SIMD code. */
#include "tensor/ops_simd.h"

tr_ops_isa_t tr_ops_isa(void) {
    switch (tr_cpu_level_active()) {
    case TR_CPU_AVX512:
        return TR_ISA_AVX512;
    case TR_CPU_AVX2:
        return TR_ISA_AVX2;
    default:
        return TR_ISA_GENERIC;
    }
}
