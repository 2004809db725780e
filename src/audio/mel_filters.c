/* Windows and mel filterbanks (docs/formats/gguf.md §8.2, §8.3, §8.7). */
#include <math.h>

#include "audio/mel_internal.h"

void tr_mel_window(tr_window_type type, int win_length, double *w) {
    int N = win_length;
    if (N == 1) {
        w[0] = 1.0;
        return;
    }
    for (int k = 0; k < N; k++) {
        switch (type) {
        case TR_WIN_HANN_PERIODIC:
            w[k] = 0.5 - 0.5 * cos(2.0 * M_PI * k / N);
            break;
        case TR_WIN_HAMMING:
            w[k] = 0.54 - 0.46 * cos(2.0 * M_PI * k / (N - 1));
            break;
        case TR_WIN_HANN_SYMMETRIC:
        default:
            w[k] = 0.5 - 0.5 * cos(2.0 * M_PI * k / (N - 1));
            break;
        }
    }
}

static double hz_to_mel(double f, tr_mel_scale s) {
    if (s == TR_MELSCALE_HTK) return 2595.0 * log10(1.0 + f / 700.0);
    if (f < 1000.0) return f / (200.0 / 3.0);
    return 15.0 + log(f / 1000.0) / (log(6.4) / 27.0);
}

static double mel_to_hz(double m, tr_mel_scale s) {
    if (s == TR_MELSCALE_HTK) return 700.0 * (pow(10.0, m / 2595.0) - 1.0);
    if (m < 15.0) return m * (200.0 / 3.0);
    return 1000.0 * exp((m - 15.0) * (log(6.4) / 27.0));
}

void tr_mel_filterbank(int sample_rate, int n_fft, int n_mels, double f_min, double f_max,
                       tr_mel_scale scale, bool area_norm, double *fb) {
    int n_bins = n_fft / 2 + 1;
    double mlo = hz_to_mel(f_min, scale), mhi = hz_to_mel(f_max, scale);
    for (int m = 0; m < n_mels; m++) {
        double h0 = mel_to_hz(mlo + (mhi - mlo) * m / (n_mels + 1), scale);
        double h1 = mel_to_hz(mlo + (mhi - mlo) * (m + 1) / (n_mels + 1), scale);
        double h2 = mel_to_hz(mlo + (mhi - mlo) * (m + 2) / (n_mels + 1), scale);
        double norm = area_norm ? 2.0 / (h2 - h0) : 1.0;
        for (int k = 0; k < n_bins; k++) {
            double f = (double)k * sample_rate / n_fft;
            double up = (f - h0) / (h1 - h0), down = (h2 - f) / (h2 - h1);
            double v = up < down ? up : down;
            fb[(int64_t)m * n_bins + k] = v > 0 ? v * norm : 0.0;
        }
    }
}

void tr_mel_filterbank_kaldi(int sample_rate, int n_fft, int n_mels, double f_min, double f_max,
                             double *fb) {
    int n_bins = n_fft / 2 + 1;
    double mlo = 1127.0 * log(1.0 + f_min / 700.0), mhi = 1127.0 * log(1.0 + f_max / 700.0);
    double step = (mhi - mlo) / (n_mels + 1);
    for (int m = 0; m < n_mels; m++) {
        double l = 700.0 * (exp((mlo + m * step) / 1127.0) - 1.0);
        double c = 700.0 * (exp((mlo + (m + 1) * step) / 1127.0) - 1.0);
        double r = 700.0 * (exp((mlo + (m + 2) * step) / 1127.0) - 1.0);
        for (int k = 0; k < n_bins; k++) {
            double f = (double)k * sample_rate / n_fft, v = 0.0;
            if (f > l && f < r) v = f <= c ? (f - l) / (c - l) : (r - f) / (r - c);
            fb[(int64_t)m * n_bins + k] = v > 0 ? v : 0.0;
        }
    }
}

void tr_mel_fb_ranges(const double *fb, int n_mels, int n_bins, int *lo, int *hi) {
    for (int m = 0; m < n_mels; m++) {
        const double *row = fb + (int64_t)m * n_bins;
        int a = 0, b = n_bins;
        while (a < n_bins && row[a] == 0.0) a++;
        while (b > a && row[b - 1] == 0.0) b--;
        lo[m] = a;
        hi[m] = b;
    }
}
