/* CPU feature detection (see cpu.h).
 *
 * x86-64: CPUID for the instruction sets and XGETBV for the register state
 * the OS saves on a context switch; a CPU with AVX-512 under an OS that does
 * not save ZMM registers must not run AVX-512 code. aarch64: the kernel's
 * HWCAP bits (Linux); elsewhere Advanced SIMD alone, which AArch64 always
 * has. Detection and the TRANSCRIBE_CPU lookup run once (pthread_once):
 * CPUID traps to the hypervisor in a VM, far too slow for per-call checks.
 *
 * State: the write-once detection result, and one atomic override that
 * tests and benchmarks set with tr_cpu_force(). */
#include "tensor/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#if defined(TR_CPU_X86)
#include <cpuid.h>
#elif defined(TR_CPU_ARM64) && defined(__linux__)
#include <sys/auxv.h>
#endif

static const char *const k_names[TR_CPU_LEVEL_COUNT] = {"scalar", "avx2", "avx512", "neon",
                                                        "neon_dotprod"};

/* Position of a level on its architecture's ladder; -1: not this one. */
static int rank(tr_cpu_level level) {
    switch (level) {
    case TR_CPU_SCALAR:
        return 0;
#if defined(TR_CPU_X86)
    case TR_CPU_AVX2:
        return 1;
    case TR_CPU_AVX512:
        return 2;
#elif defined(TR_CPU_ARM64)
    case TR_CPU_NEON:
        return 1;
    case TR_CPU_NEON_DOTPROD:
        return 2;
#endif
    default:
        return -1;
    }
}

static struct {
    pthread_once_t once;
    tr_cpu_features f;
    tr_cpu_level best, capped; /* capped: best lowered by TRANSCRIBE_CPU */
} g_cpu = {PTHREAD_ONCE_INIT};

/* 0: no override, else 1 + the forced level. */
static atomic_int g_forced;

#if defined(TR_CPU_X86)
static unsigned long long xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect_x86(tr_cpu_features *f) {
    unsigned a, b, c, d;
    unsigned vendor[3] = {0, 0, 0};
    if (__get_cpuid(0, &a, &vendor[0], &vendor[2], &vendor[1]))
        f->amd = !memcmp(vendor, "AuthenticAMD", 12);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = c & (1u << 27), avx = c & (1u << 28);
    bool fma = c & (1u << 12), f16c = c & (1u << 29);
    unsigned long long xcr = osxsave ? xcr0() : 0;
    bool ymm = avx && (xcr & 0x6) == 0x6;   /* XMM + YMM state */
    bool zmm = ymm && (xcr & 0xe0) == 0xe0; /* opmask + ZMM state */
    unsigned b7 = 0, c7 = 0, a71 = 0;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d);
        unsigned max_sub = a;
        if (max_sub >= 1) __cpuid_count(7, 1, a71, b, c, d);
    }
    f->fma = ymm && fma;
    f->f16c = ymm && f16c;
    f->avx2 = ymm && (b7 & (1u << 5));
    f->avx_vnni = ymm && (a71 & (1u << 4));
    /* F (16), DQ (17), BW (30), VL (31) */
    const unsigned need = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
    f->avx512 = zmm && (b7 & need) == need;
    f->avx512_vnni = f->avx512 && (c7 & (1u << 11));
    f->avx512_bf16 = f->avx512 && (a71 & (1u << 5));
}
#endif

#if defined(TR_CPU_ARM64)
static void detect_arm64(tr_cpu_features *f) {
    f->neon = true; /* Advanced SIMD is part of the AArch64 base ABI */
#if defined(__linux__)
    /* arch/arm64/include/uapi/asm/hwcap.h */
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->neon = hw & (1ul << 1);                               /* ASIMD */
    f->fp16_arith = (hw & (1ul << 9)) && (hw & (1ul << 10)); /* FPHP, ASIMDHP */
    f->dotprod = hw & (1ul << 20);                           /* ASIMDDP */
    f->i8mm = hw2 & (1ul << 13);                             /* I8MM */
#endif
}
#endif

static void detect(void) {
    tr_cpu_features *f = &g_cpu.f;
    tr_cpu_level best = TR_CPU_SCALAR;
#if defined(TR_CPU_X86)
    detect_x86(f);
    if (f->avx2 && f->fma && f->f16c) best = TR_CPU_AVX2;
    if (best == TR_CPU_AVX2 && f->avx512 && f->avx512_vnni) best = TR_CPU_AVX512;
#elif defined(TR_CPU_ARM64)
    detect_arm64(f);
    if (f->neon) best = TR_CPU_NEON;
    if (f->neon && f->dotprod) best = TR_CPU_NEON_DOTPROD;
#endif
    g_cpu.best = g_cpu.capped = best;
    const char *env = getenv("TRANSCRIBE_CPU");
    if (!env || !*env || !strcmp(env, "auto")) return;
    tr_cpu_level want;
    if (!tr_cpu_level_parse(env, &want) || rank(want) < 0)
        TR_WARN("TRANSCRIBE_CPU=%s: not a level of this architecture; using %s", env,
                k_names[best]);
    else if (rank(want) > rank(best))
        TR_WARN("TRANSCRIBE_CPU=%s: this CPU only runs up to %s; using %s", env, k_names[best],
                k_names[best]);
    else
        g_cpu.capped = want;
}

static void init(void) {
    pthread_once(&g_cpu.once, detect);
}

const tr_cpu_features *tr_cpu_get_features(void) {
    init();
    return &g_cpu.f;
}

tr_cpu_level tr_cpu_best(void) {
    init();
    return g_cpu.best;
}

tr_cpu_level tr_cpu_level_active(void) {
    int forced = atomic_load_explicit(&g_forced, memory_order_relaxed);
    if (forced > 0) return (tr_cpu_level)(forced - 1);
    init();
    return g_cpu.capped;
}

bool tr_cpu_has(tr_cpu_level level) {
    int r = rank(level);
    return r >= 0 && rank(tr_cpu_level_active()) >= r;
}

const char *tr_cpu_level_name(tr_cpu_level level) {
    return (unsigned)level < TR_CPU_LEVEL_COUNT ? k_names[level] : "?";
}

bool tr_cpu_level_parse(const char *name, tr_cpu_level *out) {
    if (!name) return false;
    if (!strcmp(name, "generic")) name = "scalar"; /* the element-wise kernels' old name */
    for (int i = 0; i < TR_CPU_LEVEL_COUNT; i++) {
        if (!strcmp(name, k_names[i])) {
            *out = (tr_cpu_level)i;
            return true;
        }
    }
    return false;
}

int tr_cpu_levels(tr_cpu_level out[3]) {
    int n = 0, top = rank(tr_cpu_best());
    for (int i = 0; i < TR_CPU_LEVEL_COUNT; i++) {
        int r = rank((tr_cpu_level)i);
        if (r >= 0 && r <= top) out[n++] = (tr_cpu_level)i; /* enum order is ladder order */
    }
    return n;
}

bool tr_cpu_force(tr_cpu_level level) {
    int r = rank(level);
    if (r < 0 || r > rank(tr_cpu_best())) return false;
    atomic_store(&g_forced, (int)level + 1);
    return true;
}

void tr_cpu_unforce(void) {
    atomic_store(&g_forced, 0);
}
