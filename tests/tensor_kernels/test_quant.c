/* Quantizer round trips: quantize random and structured rows, decode with
 * the independent reference decoder, and bound the error per type. */
#include <stdint.h>
#include <stdlib.h>

#include "kref.h"
#include "tensor/dtype.h"
#include "test_util.h"

typedef struct {
    int type;
    double max_rel_rms; /* RMS error / RMS signal bound for uniform data */
} qcase;

/* Bounds ~1.5× what a sound quantizer of each bit width reaches on
 * uniform data: step/sqrt(12) relative to the signal RMS. */
static const qcase k_cases[] = {
    {TR_F32, 0.0},    {TR_F16, 5e-4},  {TR_BF16, 4e-3},  {TR_Q8_0, 0.006},
    {TR_Q6_K, 0.025}, {TR_Q5_0, 0.04}, {TR_Q5_1, 0.035}, {TR_Q5_K, 0.035},
    {TR_Q4_0, 0.08},  {TR_Q4_1, 0.07}, {TR_Q4_K, 0.07},
};

static double rel_rms_error(int type, const float *x, long n, uint8_t *buf) {
    CHECK(tr_quantize_row(type, x, buf, n));
    double se = 0, ss = 0;
    for (long i = 0; i < n; i++) {
        double r = kref_row_elem(type, buf, i);
        se += (r - x[i]) * (r - x[i]);
        ss += (double)x[i] * x[i];
    }
    return ss > 0 ? sqrt(se / ss) : sqrt(se);
}

int main(void) {
    const long n = 4096;
    float *x = malloc(sizeof(float) * n);
    uint8_t *buf = malloc((size_t)n * 4);
    for (size_t c = 0; c < sizeof(k_cases) / sizeof(k_cases[0]); c++) {
        int type = k_cases[c].type;
        CHECK(tr_type_can_quantize(type));
        /* uniform data */
        for (long i = 0; i < n; i++) x[i] = kref_uniform();
        double e = rel_rms_error(type, x, n, buf);
        CHECK_MSG(e <= k_cases[c].max_rel_rms, "%s uniform: rel rms %g > %g", tr_type_name(type), e,
                  k_cases[c].max_rel_rms);
        /* gaussian-ish data with a per-block scale spread and an offset */
        for (long i = 0; i < n; i++) {
            double g = (kref_uniform() + kref_uniform() + kref_uniform()) * 0.6;
            x[i] = (float)(g * (1 + (i / 256) % 5) + ((i / 64) % 3 == 0 ? 0.3 : 0.0));
        }
        e = rel_rms_error(type, x, n, buf);
        CHECK_MSG(e <= 1.3 * k_cases[c].max_rel_rms, "%s gaussian: rel rms %g", tr_type_name(type),
                  e);
        /* all-zero row decodes to exactly zero */
        for (long i = 0; i < n; i++) x[i] = 0.0f;
        CHECK_MSG(rel_rms_error(type, x, n, buf) == 0.0, "%s zero row", tr_type_name(type));
        /* constant positive row (exercises one-sided ranges) */
        for (long i = 0; i < n; i++) x[i] = 0.75f;
        e = rel_rms_error(type, x, n, buf);
        CHECK_MSG(e <= 1.5 * k_cases[c].max_rel_rms + 1e-3, "%s constant: rel rms %g",
                  tr_type_name(type), e);
        /* decode agrees with the library's own dequantizer */
        for (long i = 0; i < n; i++) x[i] = kref_uniform() * 3.0f;
        CHECK(tr_quantize_row(type, x, buf, n));
        float *y = malloc(sizeof(float) * n);
        tr_dequantize_row(type, buf, y, n);
        int bad = 0;
        for (long i = 0; i < n; i++)
            if (fabs(y[i] - kref_row_elem(type, buf, i)) > 1e-6 * fabs(y[i]) + 1e-30) bad++;
        CHECK_MSG(bad == 0, "%s: %d decode mismatches", tr_type_name(type), bad);
        free(y);
    }
    /* bad inputs */
    CHECK(!tr_quantize_row(TR_Q4_K, x, buf, 255));
    CHECK(!tr_quantize_row(TR_Q2_K, x, buf, 256));
    CHECK(!tr_type_can_quantize(TR_Q3_K) && !tr_type_can_quantize(TR_Q8_K));
    free(x);
    free(buf);
    return TEST_DONE();
}
