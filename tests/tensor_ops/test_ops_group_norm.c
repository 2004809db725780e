/* tr_group_norm against a double-precision reference written from the
 * definition (mean and biased variance over each group's values, then the
 * per-channel affine), for one group (Moonshine's conv stem), several and
 * one per channel; both layouts (channel-major and time-major give the same
 * bits: the statistics visit the values in the same order); 1, 2 and 3
 * threads bit-identical; in place; NULL gamma / beta; bad group counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

/* Reference on channel-major x [c][n]. */
static void ref(const float *x, double *y, int n, int c, int groups, const float *g, const float *b,
                double eps) {
    const int cg = c / groups;
    for (int k = 0; k < groups; k++) {
        double s = 0, ss = 0, cnt = (double)cg * n;
        for (int ch = k * cg; ch < (k + 1) * cg; ch++)
            for (int t = 0; t < n; t++) s += x[(size_t)ch * n + t];
        const double m = s / cnt;
        for (int ch = k * cg; ch < (k + 1) * cg; ch++)
            for (int t = 0; t < n; t++) ss += pow(x[(size_t)ch * n + t] - m, 2);
        const double inv = 1.0 / sqrt(ss / cnt + eps);
        for (int ch = k * cg; ch < (k + 1) * cg; ch++)
            for (int t = 0; t < n; t++)
                y[(size_t)ch * n + t] =
                    (x[(size_t)ch * n + t] - m) * inv * (g ? g[ch] : 1.0) + (b ? b[ch] : 0.0);
    }
}

static void check(tr_pool *const *pools, int n, int c, int groups, bool affine, float offset) {
    const size_t N = (size_t)n * (size_t)c;
    float *x = rnd_vec((long)N, 2.0f), *xt = malloc(sizeof(float) * N);
    for (size_t i = 0; i < N; i++) x[i] += offset; /* |mean| >> std: two-pass variance */
    float *g = affine ? rnd_vec(c, 1.0f) : NULL, *b = affine ? rnd_vec(c, 0.5f) : NULL;
    double *want = malloc(sizeof(double) * N);
    float *got = malloc(sizeof(float) * N), *first = malloc(sizeof(float) * N),
          *tm = malloc(sizeof(float) * N);
    ref(x, want, n, c, groups, g, b, 1e-5);
    for (int ch = 0; ch < c; ch++)
        for (int t = 0; t < n; t++) xt[(size_t)t * c + ch] = x[(size_t)ch * n + t];
    for (int p = 0; p < 3; p++) {
        CHECK(tr_group_norm(pools[p], x, got, n, c, groups, true, g, b, 1e-5f));
        if (p == 0) {
            memcpy(first, got, sizeof(float) * N);
            CHECK_MSG(err_ratio(got, want, (long)N, 1e-5, 1e-4) <= 1,
                      "n %d c %d groups %d: error ratio %g", n, c, groups,
                      err_ratio(got, want, (long)N, 1e-5, 1e-4));
        }
        CHECK_MSG(memcmp(got, first, sizeof(float) * N) == 0, "threads %d differ", p + 1);
        /* time-major: the same values transposed, bit for bit */
        CHECK(tr_group_norm(pools[p], xt, tm, n, c, groups, false, g, b, 1e-5f));
        bool same = true;
        for (int ch = 0; ch < c; ch++)
            for (int t = 0; t < n; t++) same &= tm[(size_t)t * c + ch] == first[(size_t)ch * n + t];
        CHECK_MSG(same, "time-major n %d c %d groups %d differs", n, c, groups);
    }
    /* in place */
    memcpy(got, x, sizeof(float) * N);
    CHECK(tr_group_norm(pools[1], got, got, n, c, groups, true, g, b, 1e-5f));
    CHECK(memcmp(got, first, sizeof(float) * N) == 0);
    free(x), free(xt), free(g), free(b), free(want), free(got), free(first), free(tm);
}

int main(void) {
    tr_pool *pools[3] = {NULL, tr_pool_create(2), tr_pool_create(3)};
    check(pools, 1, 1, 1, true, 0.0f);
    check(pools, 37, 12, 1, true, 0.0f);
    check(pools, 37, 12, 3, false, 0.0f);
    check(pools, 5, 12, 12, true, 0.0f);
    check(pools, 2749, 32, 1, true, 100.0f); /* big: pooled, one group */
    check(pools, 1000, 64, 8, true, -3.0f);
    /* bad shapes: refused, nothing written */
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    CHECK(!tr_group_norm(NULL, x, y, 2, 3, 2, true, NULL, NULL, 1e-5f));
    CHECK(!tr_group_norm(NULL, x, y, 2, 3, 0, true, NULL, NULL, 1e-5f));
    CHECK(y[0] == 0.0f);
    CHECK(tr_group_norm(NULL, x, y, 0, 3, 1, true, NULL, NULL, 1e-5f)); /* empty: no-op */
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    return TEST_DONE();
}
