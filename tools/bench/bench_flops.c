/* Analytic encoder cost for transcribe-bench model: 2 FLOPs per
 * multiply-add of every GEMM, attention product and convolution, counted by
 * the model's family from its file's hyper-parameters and the input length
 * (the family's enc_cost hook, reached through api/tool_hooks.h; the counts
 * of the shared blocks are nn/enc_cost.h, each family's windowing is its
 * own, in its vtable file, e.g. src/models/whisper/whisper_family.c). The
 * encode time divided into this is the achieved GFLOP/s compared with
 * OpenBLAS. The sgemm baseline's shape is the encoder FFN's K and N over at
 * least BENCH_SGEMM_MIN_M rows (bench.h says why). */
#include <string.h>

#include "api/tool_hooks.h"
#include "bench.h"

bool bench_enc_cost_of(const struct transcribe_model *m, long n_samples, bench_enc_cost *out,
                       const char **why) {
    memset(out, 0, sizeof *out);
    tr_enc_cost c;
    if (!tr_tool_enc_cost(m, n_samples, &c, why)) return false;
    out->family = c.family;
    out->gflop = c.gflop;
    out->windows = c.windows;
    out->frames = c.frames;
    out->gemm_m = c.frames > BENCH_SGEMM_MIN_M ? c.frames : BENCH_SGEMM_MIN_M;
    out->gemm_k = c.gemm_k;
    out->gemm_n = c.gemm_n;
    out->dec_step_mb = c.dec_step_mb;
    return true;
}
