/* Deterministic pseudo-random data for the tensor op tests. */
#ifndef TR_TEST_RNG_H
#define TR_TEST_RNG_H

#include <stdint.h>
#include <stdlib.h>

static uint64_t test_rng_state = 0x9E3779B97F4A7C15ull;

/* uniform in [-1, 1) */
static inline float rnd(void) {
    test_rng_state = test_rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(test_rng_state >> 40) / (double)(1ull << 23) - 1.0);
}

static inline float *rnd_vec(long n, float scale) {
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++) v[i] = rnd() * scale;
    return v;
}

/* max |a - b| / (atol + rtol |b|) over n; <= 1 means within tolerance */
static inline double err_ratio(const float *a, const double *b, long n, double atol, double rtol) {
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        double e = __builtin_fabs((double)a[i] - b[i]) / (atol + rtol * __builtin_fabs(b[i]));
        if (!(e <= worst)) worst = e; /* NaN propagates as failure */
    }
    return worst;
}

#endif
