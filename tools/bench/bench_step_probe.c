/* The decode step against the memory bandwidth, measured side by side.
 *
 * This host's memory bandwidth drifts by tens of percent over seconds, so a
 * step time from one moment and a copy bandwidth from another can be
 * compared only loosely. The probe alternates the two: one decode step
 * (tr_clm_step on one row, argmax included) and a copy sample, `pairs`
 * times, and reports the median of the per-step ratios of step time to the
 * step's floor: its weight bytes at the mean of the copy samples taken just
 * before and just after that step. */
#include <stdlib.h>
#include <string.h>

#include "bench_lm.h"
#include "tensor/pool.h"
#include "util/timer.h"

typedef struct {
    float *dst;
    const float *src;
    size_t n;
} copy_job;

static void copy_part(void *arg, int ith, int nth) {
    copy_job *c = arg;
    long b, e;
    tr_split_range((long)c->n, ith, nth, &b, &e);
    memcpy(c->dst + b, c->src + b, (size_t)(e - b) * sizeof(float));
}

/* STREAM-style copy of 128 MiB (bytes read + written per second, GB/s),
 * the best of reps copies; buffers from the caller (or allocated here
 * when a is NULL). 0 on OOM. */
static double copy_with(tr_pool *pool, float *a, float *b, size_t n, int reps) {
    copy_job c = {.dst = b, .src = a, .n = n};
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = tr_time_ms();
        tr_pool_run(pool, copy_part, &c);
        double g = 2.0 * (double)(n * sizeof(float)) / ((tr_time_ms() - t0) * 1e6);
        if (g > best) best = g;
    }
    return best;
}

#define COPY_FLOATS (((size_t)128 << 20) / sizeof(float))

static bool copy_buffers(float **a, float **b) {
    *a = malloc(COPY_FLOATS * sizeof(float));
    *b = malloc(COPY_FLOATS * sizeof(float));
    if (!*a || !*b) {
        free(*a);
        free(*b);
        return false;
    }
    memset(*a, 1, COPY_FLOATS * sizeof(float));
    memset(*b, 2, COPY_FLOATS * sizeof(float));
    return true;
}

double bench_copy_gbps(tr_pool *pool, int reps) {
    float *a, *b;
    if (!copy_buffers(&a, &b)) return 0;
    double g = copy_with(pool, a, b, COPY_FLOATS, reps);
    free(a);
    free(b);
    return g;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool bench_step_probe_run(tr_clm_state *st, tr_pool *pool, int pos, size_t step_bytes, int pairs,
                          bench_step_probe *out) {
    memset(out, 0, sizeof *out);
    if (!st || pairs < 1 || pairs > BENCH_STEP_PROBE_MAX || step_bytes == 0) return false;
    float *a, *b;
    if (!copy_buffers(&a, &b)) return false;
    double ms[BENCH_STEP_PROBE_MAX], bw[BENCH_STEP_PROBE_MAX], ratio[BENCH_STEP_PROBE_MAX];
    const int32_t id = 0;
    const int slot = 0;
    int32_t next;
    bool ok = tr_clm_step(st, pool, &id, &pos, &slot, 1, &next); /* warm: plan, first touch */
    double before = copy_with(pool, a, b, COPY_FLOATS, 2);
    for (int i = 0; ok && i < pairs; i++) {
        double t0 = tr_time_ms();
        ok = tr_clm_step(st, pool, &id, &pos, &slot, 1, &next);
        ms[i] = tr_time_ms() - t0;
        /* the step's bandwidth: the mean of the samples just before and
         * just after it */
        double after = copy_with(pool, a, b, COPY_FLOATS, 2);
        bw[i] = 0.5 * (before + after);
        before = after;
        ratio[i] = bw[i] > 0 ? ms[i] / ((double)step_bytes / (bw[i] * 1e6)) : 0;
    }
    free(a);
    free(b);
    if (!ok) return false;
    out->pairs = pairs;
    out->ratio_min = ratio[0];
    for (int i = 1; i < pairs; i++)
        if (ratio[i] < out->ratio_min) out->ratio_min = ratio[i];
    out->step_ms = median(ms, pairs);
    out->copy_gbps = median(bw, pairs);
    out->ratio = median(ratio, pairs);
    return true;
}
