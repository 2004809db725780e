/* Decode-step figures of the audio-LLM families (bench_step_probe.c). */
#ifndef TR_TOOLS_BENCH_LM_H
#define TR_TOOLS_BENCH_LM_H

#include <stdbool.h>
#include <stddef.h>

#include "nn/causal_lm.h"
#include "nn/encdec_decoder.h"

#define BENCH_STEP_PROBE_MAX 64

typedef struct {
    int pairs;
    double step_ms;   /* median step */
    double copy_gbps; /* median copy sample */
    double ratio;     /* median of step ÷ (step bytes at that pair's bandwidth) */
    double ratio_min;
} bench_step_probe;

/* `pairs` alternations of one decode step (one row at position pos of
 * slot 0, which must lie in the cache) and a copy sample. Overwrites that
 * cache row. false on bad arguments or failure. */
bool bench_step_probe_run(tr_clm_state *st, tr_pool *pool, int pos, size_t step_bytes, int pairs,
                          bench_step_probe *out);

/* The same alternation for one step of an encoder-decoder family's
 * decoder (tr_ed_step of one row at the probe's position, head and argmax
 * included; the probe's cache row is overwritten). */
bool bench_ed_step_probe_run(const tr_ed_probe *p, tr_pool *pool, size_t step_bytes, int pairs,
                             bench_step_probe *out);

#endif
