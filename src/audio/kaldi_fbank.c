/* Kaldi-style fbank + low-frame-rate stacking (docs/formats/gguf.md §8.7), the
 * sensevoice / funasr front end. Each frame is processed on its own
 * (snip-edges framing, DC removal and pre-emphasis inside the frame), so
 * frames run in parallel; LFR stacking and CMVN follow serially. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/fft.h"
#include "audio/mel_internal.h"
#include "util/log.h"

typedef struct {
    const tr_mel_config *c;
    const float *pcm;
    int T, n_fft, n_bins;
    const double *win, *fb;
    const int *lo, *hi;
    const tr_fft *fft;
    double *scratch;
    size_t scratch_per;
    float *feat; /* [T][n_mels] */
} kaldi_job;

static void kaldi_frames(void *ctx, int ith, int nth) {
    const kaldi_job *j = ctx;
    const tr_mel_config *c = j->c;
    int W = c->win_length, M = c->n_mels;
    double *frame = j->scratch + (size_t)ith * j->scratch_per;
    double *spec = frame + j->n_fft, *power = spec + j->n_fft + 2, *fs = power + j->n_bins;
    double scale = c->upscale_samples ? 32768.0 : 1.0, a = c->pre_emphasis;
    long t0, t1;
    tr_split_range(j->T, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        const float *x = j->pcm + (size_t)t * c->hop_length;
        double mean = 0;
        for (int i = 0; i < W; i++) {
            frame[i] = x[i] * scale;
            mean += frame[i];
        }
        mean /= W;
        for (int i = 0; i < W; i++) frame[i] -= mean;
        /* Kaldi pre-emphasis runs backwards so each x[i-1] is still the
         * original value; x[0] is scaled by (1 - a). */
        if (a != 0.0) {
            for (int i = W - 1; i >= 1; i--) frame[i] -= a * frame[i - 1];
            frame[0] *= 1.0 - a;
        }
        for (int i = 0; i < W; i++) frame[i] *= j->win[i];
        for (int i = W; i < j->n_fft; i++) frame[i] = 0.0;
        tr_fft_real(j->fft, frame, spec, fs);
        for (int k = 0; k < j->n_bins; k++)
            power[k] = spec[2 * k] * spec[2 * k] + spec[2 * k + 1] * spec[2 * k + 1];
        for (int m = 0; m < M; m++) {
            const double *w = j->fb + (size_t)m * j->n_bins;
            double e = 0;
            for (int k = j->lo[m]; k < j->hi[m]; k++) e += w[k] * power[k];
            j->feat[(size_t)t * M + m] = (float)log(e > FLT_EPSILON ? e : FLT_EPSILON);
        }
    }
}

transcribe_status tr_kaldi_fbank_compute(const tr_mel_config *c, const float *pcm, int64_t n,
                                         tr_pool *pool, float **out, int *n_frames) {
    const char *why = NULL;
    if (c->sample_rate <= 0 || c->sample_rate > 1000000)
        why = "sample_rate out of range";
    else if (c->n_mels <= 0 || c->n_mels > 4096)
        why = "n_mels out of range";
    else if (c->win_length < 2 || c->win_length > (1 << 16))
        why = "win_length out of range";
    else if (c->hop_length <= 0)
        why = "hop_length must be positive";
    else if (c->lfr_m <= 0 || c->lfr_n <= 0 || c->lfr_m > 64)
        why = "lfr_m / lfr_n out of range";
    else if (!c->snip_edges)
        why = "only snip-edges framing is implemented";
    else if (c->apply_cmvn && (!c->cmvn_shift || !c->cmvn_scale))
        why = "apply_cmvn without CMVN vectors";
    if (why) {
        TR_ERROR("fbank: invalid front-end config: %s", why);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!pcm || n < c->win_length) {
        TR_ERROR("fbank: %lld samples is shorter than one window (%d)", (long long)n,
                 c->win_length);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int64_t T64 = (n - c->win_length) / c->hop_length + 1;
    int M = c->n_mels, lm = c->lfr_m, ln = c->lfr_n, D = M * lm;
    if (T64 > INT_MAX / 2 || (uint64_t)T64 * (uint64_t)D > SIZE_MAX / 8) {
        TR_ERROR("fbank: input of %lld samples is too long", (long long)n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int T = (int)T64, n_fft = 1;
    while (n_fft < c->win_length) n_fft <<= 1;
    if (n_fft < 2) n_fft = 2;
    int n_bins = n_fft / 2 + 1, nth = tr_pool_n_threads(pool);
    double f_max = c->f_max > 0 ? c->f_max : 0.5 * c->sample_rate;
    int T_lfr = (T + ln - 1) / ln;

    transcribe_status st = TRANSCRIBE_OK;
    kaldi_job j = {.c = c, .pcm = pcm, .T = T, .n_fft = n_fft, .n_bins = n_bins};
    tr_fft *fft = tr_fft_create(n_fft);
    double *win = malloc(sizeof(double) * (size_t)c->win_length);
    double *fb = malloc(sizeof(double) * (size_t)M * n_bins);
    int *lo = malloc(sizeof(int) * (size_t)M), *hi = malloc(sizeof(int) * (size_t)M);
    float *feat = malloc(sizeof(float) * (size_t)T * M);
    float *res = malloc(sizeof(float) * (size_t)T_lfr * D);
    j.scratch_per = fft ? (size_t)2 * n_fft + 2 + n_bins + tr_fft_scratch_len(fft) : 0;
    double *scratch = malloc(sizeof(double) * j.scratch_per * (size_t)nth);
    if (!fft || !win || !fb || !lo || !hi || !feat || !res || !scratch) {
        TR_ERROR("fbank: out of memory");
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (c->baked_window) {
        for (int i = 0; i < c->win_length; i++) win[i] = c->baked_window[i];
    } else {
        tr_mel_window(c->window, c->win_length, win);
    }
    if (c->filterbank) {
        for (size_t i = 0; i < (size_t)M * n_bins; i++) fb[i] = c->filterbank[i];
    } else {
        tr_mel_filterbank_kaldi(c->sample_rate, n_fft, M, c->f_min, f_max, fb);
    }
    tr_mel_fb_ranges(fb, M, n_bins, lo, hi);
    j.win = win;
    j.fb = fb;
    j.lo = lo;
    j.hi = hi;
    j.fft = fft;
    j.scratch = scratch;
    j.feat = feat;
    tr_pool_run(pool, kaldi_frames, &j);

    /* LFR: output t stacks frames t·ln - (lm-1)/2 + k, k < lm, clamped to
     * [0, T-1] (left pad = copies of frame 0, right edge replicated).
     * Output is feature-major: row k·M + m, column t. */
    int left = (lm - 1) / 2;
    for (int t = 0; t < T_lfr; t++) {
        for (int k = 0; k < lm; k++) {
            int src = t * ln + k - left;
            if (src < 0) src = 0;
            if (src > T - 1) src = T - 1;
            for (int m = 0; m < M; m++) {
                int d = k * M + m;
                float v = feat[(size_t)src * M + m];
                if (c->apply_cmvn) v = (v + c->cmvn_shift[d]) * c->cmvn_scale[d];
                res[(size_t)d * T_lfr + t] = v;
            }
        }
    }
    *out = res;
    *n_frames = T_lfr;
    res = NULL;
done:
    tr_fft_free(fft);
    free(win);
    free(fb);
    free(lo);
    free(hi);
    free(feat);
    free(res);
    free(scratch);
    return st;
}
