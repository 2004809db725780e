/* Run-time choice of the SIMD kernel family for the element-wise and
 * attention ops. TR_OPS_ISA=generic|avx2|avx512 in the environment caps it
 * (for tests and for comparing paths); it can never exceed what cpuid allows. */
#include "tensor/ops_simd.h"

#include <stdlib.h>
#include <string.h>

static tr_ops_isa_t cpu_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return TR_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TR_ISA_AVX2;
#endif
    return TR_ISA_GENERIC;
}

tr_ops_isa_t tr_ops_isa(void) {
    tr_ops_isa_t isa = cpu_isa();
    const char *env = getenv("TR_OPS_ISA");
    if (env) {
        tr_ops_isa_t want = isa;
        if (!strcmp(env, "generic") || !strcmp(env, "scalar"))
            want = TR_ISA_GENERIC;
        else if (!strcmp(env, "avx2"))
            want = TR_ISA_AVX2;
        if (want < isa) isa = want;
    }
    return isa;
}
