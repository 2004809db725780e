/* Built-in band-limited resampler: Kaiser-windowed sinc, evaluated as a
 * polyphase filter bank for the reduced ratio L/M (44.1k -> 16k is
 * 160/441). Design: passband to 90% of the lower Nyquist, stopband from
 * 100%, 100 dB attenuation (Kaiser beta 10.06). Zero phase: output sample
 * j sits exactly at input time j·M/L. Samples outside the input are 0. */
#include <math.h>
#include <stdlib.h>

#include "audio/audio_internal.h"
#include "util/log.h"

#define ATTEN_DB  100.0
#define PASS_FRAC 0.90 /* passband edge / lower Nyquist */
#define MAX_TABLE (1 << 22)

static double bessel_i0(double x) {
    double sum = 1.0, term = 1.0, q = 0.25 * x * x;
    for (int k = 1; k < 200; k++) {
        term *= q / ((double)k * k);
        sum += term;
        if (term < 1e-17 * sum) break;
    }
    return sum;
}

typedef struct {
    double fc;   /* cutoff, cycles per input sample */
    double half; /* filter half-length in input samples */
    double beta, i0_beta;
} sinc_design;

static double coef(const sinc_design *d, double tau) {
    if (fabs(tau) >= d->half) return 0.0;
    double x = 2.0 * d->fc * tau;
    double s = fabs(x) < 1e-12 ? 1.0 : sin(M_PI * x) / (M_PI * x);
    double r = tau / d->half;
    return 2.0 * d->fc * s * bessel_i0(d->beta * sqrt(1.0 - r * r)) / d->i0_beta;
}

static long gcd(long a, long b) {
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

transcribe_status tr_resample_builtin(const float *in, int64_t n_in, int rate_in, int rate_out,
                                      float **out, int64_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!in || n_in <= 0 || rate_in <= 0 || rate_out <= 0) {
        TR_ERROR("resample: bad arguments");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int64_t olen = tr_resample_out_len(n_in, rate_in, rate_out);
    if (olen <= 0 || (uint64_t)olen > SIZE_MAX / sizeof(float)) {
        TR_ERROR("resample: bad length (%lld samples, %d -> %d Hz)", (long long)n_in, rate_in,
                 rate_out);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    long g = gcd(rate_in, rate_out), L = rate_out / g, M = rate_in / g;
    double nyq = 0.5 * (rate_in < rate_out ? rate_in : rate_out);
    sinc_design d;
    d.fc = 0.5 * (1.0 + PASS_FRAC) * nyq / rate_in;
    double dw = 2.0 * M_PI * (1.0 - PASS_FRAC) * nyq / rate_in; /* transition, rad/sample */
    d.half = 0.5 * (ATTEN_DB - 8.0) / (2.285 * dw);
    d.beta = 0.1102 * (ATTEN_DB - 8.7);
    d.i0_beta = bessel_i0(d.beta);
    int K = (int)ceil(d.half); /* taps i0-K+1 .. i0+K around the output time */
    int taps = 2 * K;

    float *o = malloc(sizeof(float) * (size_t)olen);
    double *tab = NULL, *row = NULL;
    bool table = (double)L * taps <= MAX_TABLE;
    if (table)
        tab = malloc(sizeof(double) * (size_t)L * taps);
    else
        row = malloc(sizeof(double) * (size_t)taps);
    if (!o || (table ? !tab : !row)) {
        free(o);
        free(tab);
        free(row);
        TR_ERROR("resample: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    /* Phase p (time frac p/L past input sample i0): weight of input
     * i0 + k - K + 1 is h(p/L - (k - K + 1)); each row sums to 1 so DC
     * passes exactly. */
    for (long p = 0; p < (table ? L : 0); p++) {
        double *r = tab + (size_t)p * taps, s = 0;
        for (int k = 0; k < taps; k++) s += r[k] = coef(&d, (double)p / L - (k - K + 1));
        for (int k = 0; k < taps; k++) r[k] /= s;
    }
    for (int64_t j = 0; j < olen; j++) {
        /* j·M fits: j < olen <= n_in·L/M + 1 and both are bounded above */
        int64_t pos = j * M, i0 = pos / L;
        long p = (long)(pos % L);
        const double *r;
        if (table) {
            r = tab + (size_t)p * taps;
        } else {
            double s = 0;
            for (int k = 0; k < taps; k++) s += row[k] = coef(&d, (double)p / L - (k - K + 1));
            for (int k = 0; k < taps; k++) row[k] /= s;
            r = row;
        }
        int64_t first = i0 - K + 1;
        int k0 = first < 0 ? (int)-first : 0;
        int k1 = first + taps > n_in ? (int)(n_in - first) : taps;
        /* four partial sums: lets the compiler vectorise the dot product
         * without reassociating a single accumulator */
        const float *x = in + first;
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        int k = k0;
        for (; k + 4 <= k1; k += 4) {
            a0 += r[k] * x[k];
            a1 += r[k + 1] * x[k + 1];
            a2 += r[k + 2] * x[k + 2];
            a3 += r[k + 3] * x[k + 3];
        }
        for (; k < k1; k++) a0 += r[k] * x[k];
        o[j] = (float)((a0 + a1) + (a2 + a3));
    }
    free(tab);
    free(row);
    *out = o;
    *n_out = olen;
    return TRANSCRIBE_OK;
}
