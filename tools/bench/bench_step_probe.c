/* The decode step against the memory bandwidth, measured side by side.
 *
 * This host's memory bandwidth drifts by tens of percent over seconds, so a
 * step time from one moment and a copy bandwidth from another can be
 * compared only loosely. The probe alternates the two: one decode step
 * (tr_clm_step on one row, or an encoder-decoder family's tr_ed_step on
 * one row, argmax included) and a copy sample, `pairs`
 * times, and reports the median of the per-step ratios of step time to the
 * step's floor: its weight bytes at the mean of the copy samples taken just
 * before and just after that step. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_lm.h"
#include "tensor/pool.h"
#include "util/argmax.h"
#include "util/timer.h"

/* One decode step of whichever decoder; false on failure. */
typedef bool (*probe_step_fn)(void *user, tr_pool *pool);

static bool probe_run(probe_step_fn step, void *user, tr_pool *pool, size_t step_bytes, int pairs,
                      bench_step_probe *out) {
    memset(out, 0, sizeof *out);
    if (pairs < 1 || pairs > BENCH_STEP_PROBE_MAX || step_bytes == 0) return false;
    bench_copy cp;
    if (!bench_copy_init(&cp)) return false;
    double ms[BENCH_STEP_PROBE_MAX], bw[BENCH_STEP_PROBE_MAX], ratio[BENCH_STEP_PROBE_MAX];
    bool ok = step(user, pool); /* warm: plan, first touch */
    double before = bench_copy_best(pool, &cp, 2);
    for (int i = 0; ok && i < pairs; i++) {
        double t0 = tr_time_ms();
        ok = step(user, pool);
        ms[i] = tr_time_ms() - t0;
        /* the step's bandwidth: the mean of the samples just before and
         * just after it */
        double after = bench_copy_best(pool, &cp, 2);
        bw[i] = 0.5 * (before + after);
        before = after;
        ratio[i] = bw[i] > 0 ? ms[i] / ((double)step_bytes / (bw[i] * 1e6)) : 0;
    }
    bench_copy_free(&cp);
    if (!ok) return false;
    out->pairs = pairs;
    out->ratio_min = ratio[0];
    for (int i = 1; i < pairs; i++)
        if (ratio[i] < out->ratio_min) out->ratio_min = ratio[i];
    out->step_ms = bench_median(ms, pairs);
    out->copy_gbps = bench_median(bw, pairs);
    out->ratio = bench_median(ratio, pairs);
    return true;
}

typedef struct {
    tr_clm_state *st;
    int pos;
} clm_step;

static bool clm_step_fn(void *user, tr_pool *pool) {
    clm_step *c = user;
    const int32_t id = 0;
    const int slot = 0;
    int32_t next;
    return tr_clm_step(c->st, pool, &id, &c->pos, &slot, 1, &next);
}

bool bench_step_probe_run(tr_clm_state *st, tr_pool *pool, int pos, size_t step_bytes, int pairs,
                          bench_step_probe *out) {
    memset(out, 0, sizeof *out);
    if (!st) return false;
    clm_step c = {st, pos};
    return probe_run(clm_step_fn, &c, pool, step_bytes, pairs, out);
}

static bool ed_step_fn(void *user, tr_pool *pool) {
    const tr_ed_probe *p = user;
    tr_ed_step(pool, p->dec, 1, &p->seq, p->x, p->scratch, p->logits);
    return tr_argmax(p->logits, p->dec->n_vocab) >= 0;
}

bool bench_ed_step_probe_run(const tr_ed_probe *p, tr_pool *pool, size_t step_bytes, int pairs,
                             bench_step_probe *out) {
    memset(out, 0, sizeof *out);
    if (!p || !p->dec || p->seq.rows != 1 || !p->seq.kv || p->seq.n_past >= p->seq.kv->n_ctx)
        return false;
    return probe_run(ed_step_fn, (void *)p, pool, step_bytes, pairs, out);
}
