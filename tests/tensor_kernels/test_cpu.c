/* The CPU-feature module: the level ladder of this host, names, the
 * test override, and (when run with an argument) the TRANSCRIBE_CPU cap:
 *   test_cpu            ladder and override checks
 *   test_cpu scalar     the environment asked for scalar: active is scalar
 *   test_cpu best       the environment held a bad value: it was ignored */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/matmul.h"
#include "tensor/ops_simd.h"
#include "test_util.h"

static void test_ladder(void) {
    tr_cpu_level lv[3];
    int n = tr_cpu_levels(lv);
    CHECK(n >= 1 && n <= 3 && lv[0] == TR_CPU_SCALAR);
    CHECK(lv[n - 1] == tr_cpu_best());
    const tr_cpu_features *f = tr_cpu_get_features();
    printf("best level: %s (avx2 %d fma %d f16c %d avx512 %d vnni %d bf16 %d | neon %d fp16 %d "
           "dotprod %d i8mm %d)\n",
           tr_cpu_level_name(tr_cpu_best()), f->avx2, f->fma, f->f16c, f->avx512, f->avx512_vnni,
           f->avx512_bf16, f->neon, f->fp16_arith, f->dotprod, f->i8mm);
    for (int i = 0; i < n; i++) {
        CHECK(tr_cpu_force(lv[i]));
        CHECK(tr_cpu_level_active() == lv[i]);
        CHECK(tr_cpu_has(TR_CPU_SCALAR) && tr_cpu_has(lv[i]));
        if (i + 1 < n) CHECK(!tr_cpu_has(lv[i + 1]));
        /* matmul and the element-wise ops follow the same level */
        CHECK_MSG(strcmp(tr_matmul_isa(), tr_cpu_level_name(lv[i])) == 0, "matmul %s at %s",
                  tr_matmul_isa(), tr_cpu_level_name(lv[i]));
        tr_ops_isa_t want = lv[i] == TR_CPU_AVX512 ? TR_ISA_AVX512
                            : lv[i] == TR_CPU_AVX2 ? TR_ISA_AVX2
                                                   : TR_ISA_GENERIC;
        CHECK(tr_ops_isa() == want);
    }
    /* levels of the other architecture, or past the ladder, are refused */
    tr_cpu_level keep = tr_cpu_level_active();
#if defined(TR_CPU_X86)
    CHECK(!tr_cpu_force(TR_CPU_NEON) && !tr_cpu_has(TR_CPU_NEON_DOTPROD));
#elif defined(TR_CPU_ARM64)
    CHECK(!tr_cpu_force(TR_CPU_AVX2) && !tr_cpu_has(TR_CPU_AVX512));
#endif
    CHECK(!tr_cpu_force(TR_CPU_LEVEL_COUNT));
    CHECK(tr_cpu_level_active() == keep);
    tr_cpu_unforce();
    /* back to the environment's level: the best, unless TRANSCRIBE_CPU lowers it
     * (the whole suite may run under a forced level) */
    if (getenv("TRANSCRIBE_CPU"))
        CHECK(tr_cpu_level_active() <= tr_cpu_best());
    else
        CHECK(tr_cpu_level_active() == tr_cpu_best());
}

static void test_names(void) {
    for (int i = 0; i < TR_CPU_LEVEL_COUNT; i++) {
        tr_cpu_level l;
        CHECK(tr_cpu_level_parse(tr_cpu_level_name((tr_cpu_level)i), &l) && (int)l == i);
    }
    tr_cpu_level l = TR_CPU_AVX2;
    CHECK(tr_cpu_level_parse("generic", &l) && l == TR_CPU_SCALAR);
    CHECK(!tr_cpu_level_parse("sse9", &l) && !tr_cpu_level_parse("", &l));
    CHECK(!tr_cpu_level_parse(NULL, &l));
    CHECK(strcmp(tr_cpu_level_name(TR_CPU_LEVEL_COUNT), "?") == 0);
    /* the matmul wrapper takes the same names */
    CHECK(tr_matmul_force_isa("scalar") && strcmp(tr_matmul_isa(), "scalar") == 0);
    CHECK(!tr_matmul_force_isa("sse9"));
    CHECK(tr_matmul_force_isa(NULL));
}

int main(int argc, char **argv) {
    if (argc > 1) { /* run by ctest with TRANSCRIBE_CPU set */
        tr_cpu_level want = tr_cpu_best();
        if (strcmp(argv[1], "best") != 0) CHECK(tr_cpu_level_parse(argv[1], &want));
        CHECK_MSG(tr_cpu_level_active() == want, "active %s, expected %s",
                  tr_cpu_level_name(tr_cpu_level_active()), tr_cpu_level_name(want));
        /* the override still reaches every level the CPU has */
        CHECK(tr_cpu_force(tr_cpu_best()) && tr_cpu_level_active() == tr_cpu_best());
        tr_cpu_unforce();
        CHECK(tr_cpu_level_active() == want);
        return TEST_DONE();
    }
    test_ladder();
    test_names();
    return TEST_DONE();
}
