/* The one CPU-feature module: what this CPU (and its OS) can run, detected
 * once, and the kernel level every SIMD dispatch in the library uses.
 *
 * Levels form a ladder per architecture; each includes the one below:
 *   x86-64:  scalar < avx2 (AVX2 + FMA + F16C, YMM state saved by the OS)
 *                   < avx512 (+ AVX-512 F/BW/VL/DQ/VNNI, ZMM state saved)
 *   aarch64: scalar < neon (Advanced SIMD) < neon_dotprod (+ SDOT/UDOT)
 *   other:   scalar
 * The active level is the best the CPU has, lowered by the environment
 * variable TRANSCRIBE_CPU=<level name> (for bug reports and comparisons; a
 * level the CPU lacks, or an unknown name, is logged once and ignored), or
 * by tr_cpu_force() (tests and benchmarks). */
#ifndef TR_TENSOR_CPU_H
#define TR_TENSOR_CPU_H

#include <stdbool.h>

#if defined(__x86_64__)
#define TR_CPU_X86 1
#elif defined(__aarch64__)
#define TR_CPU_ARM64 1
#endif

typedef enum {
    TR_CPU_SCALAR = 0,
    TR_CPU_AVX2,
    TR_CPU_AVX512,
    TR_CPU_NEON,
    TR_CPU_NEON_DOTPROD,
    TR_CPU_LEVEL_COUNT
} tr_cpu_level;

/* Raw features as detected (not lowered by the override). */
typedef struct {
    /* x86-64 (each already requires the OS to save the register state) */
    bool avx2, fma, f16c, avx512, avx512_vnni, avx512_bf16, avx_vnni;
    /* AuthenticAMD: a tuning hint, not a capability (Zen's L2 stream
     * prefetcher keeps up with a Q8_0 row that Intel's needs fetched ahead) */
    bool amd;
    /* aarch64 */
    bool neon, fp16_arith, dotprod, i8mm;
} tr_cpu_features;

const tr_cpu_features *tr_cpu_get_features(void);

/* Best level the CPU supports, ignoring every override. */
tr_cpu_level tr_cpu_best(void);
/* Level the kernels use now (see above). Cheap: a cached load. */
tr_cpu_level tr_cpu_level_active(void);
/* True if `level` belongs to this architecture and the active level is at
 * or above it (TR_CPU_SCALAR is always true). */
bool tr_cpu_has(tr_cpu_level level);

/* "scalar", "avx2", "avx512", "neon", "neon_dotprod". */
const char *tr_cpu_level_name(tr_cpu_level level);
/* Level of a name; false if it names no level (of any architecture). */
bool tr_cpu_level_parse(const char *name, tr_cpu_level *out);

/* Levels this CPU can run, lowest (scalar) first; returns the count (at
 * most 3). Tests run every kernel once per level. */
int tr_cpu_levels(tr_cpu_level out[3]);

/* Force a level for the whole process (tests, benchmarks): any level from
 * tr_cpu_levels(), which may be above the TRANSCRIBE_CPU cap. Returns false
 * (and changes nothing) for a level this CPU cannot run. */
bool tr_cpu_force(tr_cpu_level level);
/* Back to the detected level (lowered by TRANSCRIBE_CPU). */
void tr_cpu_unforce(void);

#endif
