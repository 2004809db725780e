/* Resampler quality, for the built-in windowed-sinc path and for libsoxr:
 * a 44.1 kHz sweep resampled to 16 kHz must match the sweep generated
 * analytically at 16 kHz with >= 80 dB SNR (edges excluded), and tones
 * above the 8 kHz output Nyquist must be rejected by >= 60 dB. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "test_util.h"

typedef transcribe_status (*resample_fn)(const float *, int64_t, int, int, float **, int64_t *);

#define SWEEP_S 3.0
#define F0      50.0
#define F1      7000.0

static double sweep(double t) {
    return 0.5 * sin(2 * M_PI * (F0 * t + (F1 - F0) * t * t / (2 * SWEEP_S)));
}

static float *gen(int rate, int64_t n, double (*f)(double, double), double arg) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)f((double)i / rate, arg);
    return x;
}
static double sweep2(double t, double unused) {
    (void)unused;
    return sweep(t);
}
static double sine(double t, double hz) {
    return 0.5 * sin(2 * M_PI * hz * t);
}

/* SNR (dB) of out against f(t) at rate_out over the middle of the signal. */
static double snr_db(const float *out, int64_t n, int rate, double (*f)(double, double),
                     double arg) {
    double s = 0, e = 0;
    for (int64_t j = n / 10; j < n - n / 10; j++) {
        double r = f((double)j / rate, arg);
        s += r * r;
        e += (out[j] - r) * (out[j] - r);
    }
    return 10 * log10(s / (e > 0 ? e : 1e-300));
}

static void check_backend(const char *name, resample_fn fn) {
    int64_t n_in = (int64_t)(SWEEP_S * 44100);
    float *x = gen(44100, n_in, sweep2, 0), *y = NULL;
    int64_t n_out = 0;
    CHECK(fn(x, n_in, 44100, 16000, &y, &n_out) == TRANSCRIBE_OK);
    CHECK(n_out == tr_resample_out_len(n_in, 44100, 16000));
    double snr = y ? snr_db(y, n_out, 16000, sweep2, 0) : 0;
    printf("%s: 44.1k->16k sweep %.0f-%.0f Hz: SNR %.1f dB (need >= 80)\n", name, F0, F1, snr);
    CHECK(snr >= 80);
    free(x);
    free(y);

    double tones[] = {8500, 10000, 15000, 20000};
    for (int k = 0; k < 4; k++) {
        x = gen(44100, n_in, sine, tones[k]);
        y = NULL;
        CHECK(fn(x, n_in, 44100, 16000, &y, &n_out) == TRANSCRIBE_OK);
        double e = 0;
        int64_t cnt = 0;
        for (int64_t j = n_out / 10; y && j < n_out - n_out / 10; j++, cnt++) e += y[j] * y[j];
        double rej = 10 * log10((e / (cnt ? cnt : 1)) / 0.125 + 1e-300); /* vs input power */
        printf("%s: %.0f Hz tone at 44.1k -> 16k: %.1f dB (need <= -60)\n", name, tones[k], rej);
        CHECK(rej <= -60);
        free(x);
        free(y);
    }

    /* upsampling 16k -> 48k and 22.05k of a 3 kHz tone */
    int outs[] = {48000, 22050};
    for (int k = 0; k < 2; k++) {
        n_in = 16000;
        x = gen(16000, n_in, sine, 3000);
        y = NULL;
        CHECK(fn(x, n_in, 16000, outs[k], &y, &n_out) == TRANSCRIBE_OK);
        snr = y ? snr_db(y, n_out, outs[k], sine, 3000) : 0;
        printf("%s: 3 kHz tone 16k -> %d: SNR %.1f dB\n", name, outs[k], snr);
        CHECK(snr >= 80);
        free(x);
        free(y);
    }
}

int main(void) {
    check_backend("builtin", tr_resample_builtin);
#ifdef TR_HAVE_SOXR
    CHECK(tr_resample_have_soxr());
    check_backend("soxr", tr_resample_soxr);
#else
    printf("soxr: not in this build, skipped\n");
#endif
    /* odd ratio (no small polyphase table): 44099 -> 16000 stays sane */
    int64_t n_in = 44099 / 4;
    float *x = gen(44099, n_in, sine, 1000), *y = NULL;
    int64_t n_out;
    CHECK(tr_resample_builtin(x, n_in, 44099, 16000, &y, &n_out) == TRANSCRIBE_OK);
    double snr = y ? snr_db(y, n_out, 16000, sine, 1000) : 0;
    printf("builtin: 1 kHz tone 44099 -> 16000: SNR %.1f dB\n", snr);
    CHECK(snr >= 80);
    free(y);
    /* argument checks */
    CHECK(tr_resample(x, n_in, 0, 16000, &y, &n_out) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_resample(x, 0, 44100, 16000, &y, &n_out) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_resample(x, n_in, 16000, 16000, &y, &n_out) == TRANSCRIBE_OK && n_out == n_in &&
          memcmp(x, y, sizeof(float) * (size_t)n_in) == 0);
    free(y);
    free(x);
    return TEST_DONE();
}
