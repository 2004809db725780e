/* The STREAM-style copy bandwidth the kernel and model benches divide by,
 * and the median they report. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tensor/pool.h"
#include "util/timer.h"

static void copy_part(void *arg, int ith, int nth) {
    bench_copy *c = arg;
    long b, e;
    tr_split_range((long)c->n, ith, nth, &b, &e);
    memcpy(c->dst + b, c->src + b, (size_t)(e - b) * sizeof(float));
}

bool bench_copy_init(bench_copy *c) {
    c->n = ((size_t)128 << 20) / sizeof(float);
    float *a = malloc(c->n * sizeof(float)), *b = malloc(c->n * sizeof(float));
    if (!a || !b) {
        free(a);
        free(b);
        c->src = c->dst = NULL;
        return false;
    }
    memset(a, 1, c->n * sizeof(float));
    memset(b, 2, c->n * sizeof(float));
    c->src = a;
    c->dst = b;
    return true;
}

void bench_copy_free(bench_copy *c) {
    free((void *)c->src);
    free(c->dst);
    c->src = c->dst = NULL;
}

double bench_copy_sample(tr_pool *pool, bench_copy *c) {
    double t0 = tr_time_ms();
    tr_pool_run(pool, copy_part, c);
    return 2.0 * (double)(c->n * sizeof(float)) / ((tr_time_ms() - t0) * 1e6);
}

double bench_copy_best(tr_pool *pool, bench_copy *c, int reps) {
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double g = bench_copy_sample(pool, c);
        if (g > best) best = g;
    }
    return best;
}

double bench_copy_gbps(tr_pool *pool, int reps) {
    bench_copy c;
    if (!bench_copy_init(&c)) return 0;
    double g = bench_copy_best(pool, &c, reps);
    bench_copy_free(&c);
    return g;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    if (n < 1) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
