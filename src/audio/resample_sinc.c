/* Built-in band-limited resampler: Kaiser-windowed sinc, evaluated as a
 * polyphase filter bank for the reduced ratio L/M (44.1k -> 16k is
 * 160/441). Design: passband to 90% of the lower Nyquist, stopband from
 * 100%, 100 dB attenuation (Kaiser beta 10.06). Zero phase: output sample
 * j sits exactly at input time j·M/L. Samples outside the input are 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

bool tr_sinc_plan_init(tr_sinc_plan *pl, int rate_in, int rate_out) {
    memset(pl, 0, sizeof *pl);
    long g = gcd(rate_in, rate_out);
    pl->L = rate_out / g;
    pl->M = rate_in / g;
    double nyq = 0.5 * (rate_in < rate_out ? rate_in : rate_out);
    sinc_design *d = &pl->d;
    d->fc = 0.5 * (1.0 + PASS_FRAC) * nyq / rate_in;
    double dw = 2.0 * M_PI * (1.0 - PASS_FRAC) * nyq / rate_in; /* transition, rad/sample */
    d->half = 0.5 * (ATTEN_DB - 8.0) / (2.285 * dw);
    d->beta = 0.1102 * (ATTEN_DB - 8.7);
    d->i0_beta = bessel_i0(d->beta);
    pl->K = (int)ceil(d->half); /* taps i0-K+1 .. i0+K around the output time */
    pl->taps = 2 * pl->K;
    bool table = (double)pl->L * pl->taps <= MAX_TABLE;
    if (table)
        pl->tab = malloc(sizeof(double) * (size_t)pl->L * (size_t)pl->taps);
    else
        pl->row = malloc(sizeof(double) * (size_t)pl->taps);
    if (table ? !pl->tab : !pl->row) {
        tr_sinc_plan_free(pl);
        return false;
    }
    /* Phase p (time frac p/L past input sample i0): weight of input
     * i0 + k - K + 1 is h(p/L - (k - K + 1)); each row sums to 1 so DC
     * passes exactly. */
    for (long p = 0; p < (table ? pl->L : 0); p++) {
        double *r = pl->tab + (size_t)p * (size_t)pl->taps, s = 0;
        for (int k = 0; k < pl->taps; k++) s += r[k] = coef(d, (double)p / pl->L - (k - pl->K + 1));
        for (int k = 0; k < pl->taps; k++) r[k] /= s;
    }
    return true;
}

void tr_sinc_plan_free(tr_sinc_plan *pl) {
    free(pl->tab);
    free(pl->row);
    pl->tab = pl->row = NULL;
}

const double *tr_sinc_row(tr_sinc_plan *pl, long p) {
    if (pl->tab) return pl->tab + (size_t)p * (size_t)pl->taps;
    double s = 0;
    for (int k = 0; k < pl->taps; k++)
        s += pl->row[k] = coef(&pl->d, (double)p / pl->L - (k - pl->K + 1));
    for (int k = 0; k < pl->taps; k++) pl->row[k] /= s;
    return pl->row;
}

float tr_sinc_dot(const double *r, const float *x, int n) {
    /* four partial sums: lets the compiler vectorise the dot product
     * without reassociating a single accumulator */
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        a0 += r[k] * x[k];
        a1 += r[k + 1] * x[k + 1];
        a2 += r[k + 2] * x[k + 2];
        a3 += r[k + 3] * x[k + 3];
    }
    for (; k < n; k++) a0 += r[k] * x[k];
    return (float)((a0 + a1) + (a2 + a3));
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
    tr_sinc_plan pl;
    float *o = malloc(sizeof(float) * (size_t)olen);
    if (!o || !tr_sinc_plan_init(&pl, rate_in, rate_out)) {
        free(o);
        TR_ERROR("resample: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    for (int64_t j = 0; j < olen; j++) {
        /* j·M fits: j < olen <= n_in·L/M + 1 and both are bounded above */
        int64_t pos = j * pl.M, i0 = pos / pl.L;
        const double *r = tr_sinc_row(&pl, (long)(pos % pl.L));
        int64_t first = i0 - pl.K + 1;
        int k0 = first < 0 ? (int)-first : 0;
        int k1 = first + pl.taps > n_in ? (int)(n_in - first) : pl.taps;
        o[j] = tr_sinc_dot(r + k0, in + first + k0, k1 - k0);
    }
    tr_sinc_plan_free(&pl);
    *out = o;
    *n_out = olen;
    return TRANSCRIBE_OK;
}
