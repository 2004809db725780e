/* STFT log-mel front end (docs/formats/gguf.md §8.1–§8.5). Frames are computed
 * independently on the pool threads (each with its own scratch), then the
 * utterance-level normalisation runs once over the result. Everything up
 * to the log is double precision. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/fft.h"
#include "audio/mel.h"
#include "audio/mel_internal.h"
#include "util/log.h"

void tr_mel_config_whisper(tr_mel_config *c, int n_mels) {
    memset(c, 0, sizeof *c);
    c->type = TR_FRONTEND_MEL;
    c->sample_rate = 16000;
    c->n_mels = n_mels;
    c->n_fft = 400;
    c->win_length = 400;
    c->hop_length = 160;
    c->window = TR_WIN_HANN_PERIODIC;
    c->pad_mode = TR_PAD_REFLECT;
    c->normalize = TR_NORM_PER_UTTERANCE;
    c->mel_scale = TR_MELSCALE_SLANEY;
    c->mel_area_norm = true;
    c->f_max = 8000.0f;
    c->global_log_mel_max = 1.5f;
    c->log = true;
}

void tr_mel_config_nemo(tr_mel_config *c, int n_mels) {
    memset(c, 0, sizeof *c);
    c->type = TR_FRONTEND_MEL;
    c->sample_rate = 16000;
    c->n_mels = n_mels;
    c->n_fft = 512;
    c->win_length = 400;
    c->hop_length = 160;
    c->window = TR_WIN_HANN_SYMMETRIC;
    c->pad_mode = TR_PAD_CONSTANT;
    c->normalize = TR_NORM_PER_FEATURE;
    c->mel_scale = TR_MELSCALE_SLANEY;
    c->mel_area_norm = true;
    c->pre_emphasis = 0.97f;
    c->f_max = 8000.0f;
    c->global_log_mel_max = 1.5f;
    c->log = true;
}

void tr_mel_config_kaldi(tr_mel_config *c, int n_mels) {
    memset(c, 0, sizeof *c);
    c->type = TR_FRONTEND_KALDI_FBANK_LFR;
    c->sample_rate = 16000;
    c->n_mels = n_mels;
    c->n_fft = 512;
    c->win_length = 400;
    c->hop_length = 160;
    c->window = TR_WIN_HAMMING;
    c->pad_mode = TR_PAD_NONE;
    c->normalize = TR_NORM_NONE;
    c->mel_scale = TR_MELSCALE_HTK;
    c->pre_emphasis = 0.97f;
    c->f_min = 20.0f;
    c->f_max = 8000.0f;
    c->log = true;
    c->lfr_m = 7;
    c->lfr_n = 6;
    c->snip_edges = true;
    c->upscale_samples = true;
}

int tr_mel_n_features(const tr_mel_config *c) {
    if (c->type == TR_FRONTEND_KALDI_FBANK_LFR) return c->n_mels * (c->lfr_m > 0 ? c->lfr_m : 1);
    return c->n_mels;
}

typedef struct {
    const tr_mel_config *c;
    const float *pcm;
    int64_t n;
    int pad;           /* left padding (n_fft/2 centred, 0 for none) */
    int n_compute;     /* frames to compute */
    int row;           /* output row stride (frames) */
    const double *win; /* n_fft, zero outside the window */
    const double *fb;
    const int *lo, *hi;
    int n_bins;
    const tr_fft *fft;
    double *scratch; /* per thread: frame n_fft, spec n_fft+2, power n_bins, fft */
    size_t scratch_per;
    float *out;
} mel_job;

/* Pre-emphasised sample s of the signal (0 outside for constant/none). */
static inline double sample_at(const mel_job *j, int64_t s) {
    int64_t n = j->n;
    if (j->c->pad_mode == TR_PAD_REFLECT) {
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
    }
    if (s < 0 || s >= n) return 0.0;
    double a = j->c->pre_emphasis;
    double v = j->pcm[s];
    if (a != 0.0 && s > 0) v -= a * (double)j->pcm[s - 1];
    return v;
}

static void mel_frames(void *ctx, int ith, int nth) {
    const mel_job *j = ctx;
    const tr_mel_config *c = j->c;
    int n_fft = c->n_fft;
    double *frame = j->scratch + (size_t)ith * j->scratch_per;
    double *spec = frame + n_fft, *power = spec + n_fft + 2, *fs = power + j->n_bins;
    long t0, t1;
    tr_split_range(j->n_compute, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        int64_t base = (int64_t)t * c->hop_length - j->pad;
        for (int k = 0; k < n_fft; k++)
            frame[k] = j->win[k] != 0.0 ? j->win[k] * sample_at(j, base + k) : 0.0;
        tr_fft_real(j->fft, frame, spec, fs);
        for (int k = 0; k < j->n_bins; k++)
            power[k] = spec[2 * k] * spec[2 * k] + spec[2 * k + 1] * spec[2 * k + 1];
        for (int m = 0; m < c->n_mels; m++) {
            const double *w = j->fb + (size_t)m * j->n_bins;
            double e = 0.0;
            for (int k = j->lo[m]; k < j->hi[m]; k++) e += w[k] * power[k];
            double L;
            if (!c->log)
                L = e;
            else if (c->normalize == TR_NORM_PER_UTTERANCE || c->normalize == TR_NORM_GLOBAL)
                L = log10(e > 1e-10 ? e : 1e-10);
            else if (c->log_clamp_min > 0)
                L = log(e > c->log_clamp_min ? e : (double)c->log_clamp_min);
            else
                L = log(e + 5.9604644775390625e-8); /* 2^-24 */
            j->out[(size_t)m * j->row + t] = (float)L;
        }
    }
}

static transcribe_status check_config(const tr_mel_config *c) {
    const char *why = NULL;
    if (c->sample_rate <= 0 || c->sample_rate > 1000000)
        why = "sample_rate out of range";
    else if (c->n_mels <= 0 || c->n_mels > 4096)
        why = "n_mels out of range";
    else if (c->n_fft < 2 || c->n_fft > (1 << 16) || (c->n_fft & 1))
        why = "n_fft must be even and at most 65536";
    else if (c->win_length <= 0 || c->win_length > c->n_fft)
        why = "win_length must be in [1, n_fft]";
    else if (c->hop_length <= 0)
        why = "hop_length must be positive";
    else if (!(c->f_min >= 0) || !(c->f_max > c->f_min))
        why = "need 0 <= f_min < f_max";
    else if (!isfinite(c->pre_emphasis))
        why = "pre_emphasis is not finite";
    if (why) {
        TR_ERROR("mel: invalid front-end config: %s", why);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

/* Normalisation of L [n_mels][row], n_frames computed columns (docs/formats/gguf.md §8.5). */
static void normalise(const tr_mel_config *c, float *L, int row, int n_frames, int64_t n) {
    int M = c->n_mels;
    if (c->normalize == TR_NORM_PER_UTTERANCE || c->normalize == TR_NORM_GLOBAL) {
        double g = c->global_log_mel_max;
        if (c->normalize == TR_NORM_PER_UTTERANCE) {
            g = -INFINITY;
            for (size_t i = 0; i < (size_t)M * row; i++)
                if (L[i] > g) g = L[i];
        }
        for (size_t i = 0; i < (size_t)M * row; i++) {
            double v = L[i] > g - 8.0 ? L[i] : g - 8.0;
            L[i] = (float)((v + 4.0) / 4.0);
        }
    } else if (c->normalize == TR_NORM_PER_FEATURE) {
        bool constant = c->pad_mode == TR_PAD_CONSTANT;
        int nn = constant ? n_frames - 1 : n_frames;
        for (int m = 0; m < M; m++) {
            float *r = L + (size_t)m * row;
            double mean = 0, var = 0;
            for (int t = 0; t < nn; t++) mean += r[t];
            mean /= nn;
            for (int t = 0; t < nn; t++) var += (r[t] - mean) * (r[t] - mean);
            /* Unbiased; upstream divides by zero for nn = 1, here std is 0. */
            double sd = nn > 1 ? sqrt(var / (nn - 1)) : 0.0;
            for (int t = 0; t < nn; t++) r[t] = (float)((r[t] - mean) / (sd + 1e-5));
            for (int t = nn; t < n_frames; t++) r[t] = 0.0f;
        }
    } else if (c->normalize == TR_NORM_NONE && c->pad_mode != TR_PAD_NONE) {
        int64_t valid = n / c->hop_length;
        for (int m = 0; m < M; m++)
            for (int64_t t = valid; t < n_frames; t++) L[(size_t)m * row + t] = 0.0f;
    }
}

/* The mel front end of tr_mel_compute (type MEL only) into `dst` when it
 * holds the output (cap floats; else TRANSCRIBE_ERR_INVALID_ARG), or into
 * a malloc'ed *out when dst is NULL. */
static transcribe_status mel_compute(const tr_mel_config *c, const float *pcm, int64_t n,
                                     tr_pool *pool, float *dst, size_t cap, float **out,
                                     int *n_frames);

transcribe_status tr_mel_compute(const tr_mel_config *c, const float *pcm, int64_t n, tr_pool *pool,
                                 float **out, int *n_frames) {
    *out = NULL;
    *n_frames = 0;
    if (c->type == TR_FRONTEND_KALDI_FBANK_LFR)
        return tr_kaldi_fbank_compute(c, pcm, n, pool, out, n_frames);
    return mel_compute(c, pcm, n, pool, NULL, 0, out, n_frames);
}

transcribe_status tr_mel_compute_into(const tr_mel_config *c, const float *pcm, int64_t n,
                                      tr_pool *pool, float *out, size_t cap, int *n_frames) {
    float *unused = NULL;
    *n_frames = 0;
    if (!out) {
        TR_ERROR("mel: no output buffer");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return mel_compute(c, pcm, n, pool, out, cap, &unused, n_frames);
}

static transcribe_status mel_compute(const tr_mel_config *c, const float *pcm, int64_t n,
                                     tr_pool *pool, float *dst, size_t cap, float **out,
                                     int *n_frames) {
    if (c->type != TR_FRONTEND_MEL) {
        TR_ERROR("mel: front-end type %d has no features to compute", (int)c->type);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    transcribe_status st = check_config(c);
    if (st != TRANSCRIBE_OK) return st;
    if (!pcm || n <= 0) {
        TR_ERROR("mel: no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int hop = c->hop_length, pad = c->pad_mode == TR_PAD_NONE ? 0 : c->n_fft / 2;
    int64_t nf;
    if (c->pad_mode == TR_PAD_NONE) {
        if (n < c->win_length) {
            TR_ERROR("mel: %lld samples is shorter than one window (%d)", (long long)n,
                     c->win_length);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        nf = (n - c->win_length) / hop + 1;
    } else {
        if (c->pad_mode == TR_PAD_REFLECT && n < pad + 1) {
            TR_ERROR("mel: reflect padding needs at least %d samples, got %lld", pad + 1,
                     (long long)n);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        nf = c->ceil_frames ? (n + hop - 1) / hop : n / hop + 1;
        if (nf < 2) {
            TR_ERROR("mel: %lld samples give fewer than 2 frames", (long long)n);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
    }
    bool drop_last = c->normalize == TR_NORM_PER_UTTERANCE || c->normalize == TR_NORM_GLOBAL;
    int64_t n_out = drop_last ? nf - 1 : nf;
    if (n_out < 1 || nf > INT_MAX || (uint64_t)n_out * (uint64_t)c->n_mels > SIZE_MAX / 8) {
        TR_ERROR("mel: input of %lld samples is too long", (long long)n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }

    int n_fft = c->n_fft, n_bins = n_fft / 2 + 1, M = c->n_mels;
    if (dst && (size_t)M * (size_t)n_out > cap) {
        TR_ERROR("mel: %lld frames do not fit the %zu floats given", (long long)n_out, cap);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int nth = tr_pool_n_threads(pool);
    mel_job j = {.c = c,
                 .pcm = pcm,
                 .n = n,
                 .pad = pad,
                 .n_compute = (int)n_out,
                 .row = (int)n_out,
                 .n_bins = n_bins};
    tr_fft *fft = tr_fft_create(n_fft);
    double *win = calloc((size_t)n_fft, sizeof(double));
    double *fb = malloc(sizeof(double) * (size_t)M * n_bins);
    int *lo = malloc(sizeof(int) * (size_t)M), *hi = malloc(sizeof(int) * (size_t)M);
    float *L = dst ? dst : malloc(sizeof(float) * (size_t)M * (size_t)n_out);
    j.scratch_per = fft ? (size_t)2 * n_fft + 2 + n_bins + tr_fft_scratch_len(fft) : 0;
    double *scratch = malloc(sizeof(double) * j.scratch_per * (size_t)nth);
    if (!fft || !win || !fb || !lo || !hi || !L || !scratch) {
        TR_ERROR("mel: out of memory");
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    /* Window placed in the n_fft buffer: centred, left-aligned for none. */
    int off = c->pad_mode == TR_PAD_NONE ? 0 : (n_fft - c->win_length) / 2;
    if (c->baked_window) {
        for (int k = 0; k < c->win_length; k++) win[off + k] = c->baked_window[k];
    } else {
        tr_mel_window(c->window, c->win_length, win + off);
    }
    if (c->filterbank) {
        for (size_t i = 0; i < (size_t)M * n_bins; i++) fb[i] = c->filterbank[i];
    } else {
        tr_mel_filterbank(c->sample_rate, n_fft, M, c->f_min, c->f_max, c->mel_scale,
                          c->mel_area_norm, fb);
    }
    tr_mel_fb_ranges(fb, M, n_bins, lo, hi);
    j.win = win;
    j.fb = fb;
    j.lo = lo;
    j.hi = hi;
    j.fft = fft;
    j.scratch = scratch;
    j.out = L;
    tr_pool_run(pool, mel_frames, &j);
    normalise(c, L, (int)n_out, (int)n_out, n);
    *out = dst ? NULL : L;
    *n_frames = (int)n_out;
    L = NULL;
done:
    tr_fft_free(fft);
    free(win);
    free(fb);
    free(lo);
    free(hi);
    if (L != dst) free(L);
    free(scratch);
    return st;
}

transcribe_status tr_mel_whisper(const tr_mel_config *c, const float *pcm, int64_t n, tr_pool *pool,
                                 float **out, int *n_frames) {
    *out = NULL;
    *n_frames = 0;
    if (c->sample_rate <= 0 || c->hop_length <= 0) {
        TR_ERROR("mel: invalid Whisper front-end config");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int64_t chunk = (int64_t)30 * c->sample_rate;
    if (!pcm || n < 0) {
        TR_ERROR("mel: no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (n > chunk) return tr_mel_compute(c, pcm, n, pool, out, n_frames);
    /* Short form: zero-pad to exactly 30 s so the maximum g sees the pad. */
    float *buf = calloc((size_t)chunk, sizeof(float));
    if (!buf) {
        TR_ERROR("mel: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    if (n > 0) memcpy(buf, pcm, sizeof(float) * (size_t)n);
    transcribe_status st = tr_mel_compute(c, buf, chunk, pool, out, n_frames);
    free(buf);
    if (st == TRANSCRIBE_OK && *n_frames != (int)(chunk / c->hop_length)) {
        TR_ERROR("mel: Whisper short form gave %d frames, expected %lld", *n_frames,
                 (long long)(chunk / c->hop_length));
        free(*out);
        *out = NULL;
        *n_frames = 0;
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return st;
}

transcribe_status tr_mel_check_reflect_len(const tr_mel_config *c, const char *who, int64_t n) {
    if (n >= c->n_fft / 2 + 1) return TRANSCRIBE_OK;
    TR_ERROR("%s: %lld samples are too short (reflect padding needs at least %d)", who,
             (long long)n, c->n_fft / 2 + 1);
    return TRANSCRIBE_ERR_INVALID_ARG;
}

transcribe_status tr_mel_compute_min(const tr_mel_config *c, const char *who, const float *pcm,
                                     int64_t n, tr_pool *pool, int min_frames, float **out,
                                     int *n_frames) {
    transcribe_status st = tr_mel_compute(c, pcm, n, pool, out, n_frames);
    if (st != TRANSCRIBE_OK) return st;
    if (*n_frames < min_frames) {
        TR_ERROR("%s: %lld samples give %d mel frames (at least %d needed)", who, (long long)n,
                 *n_frames, min_frames);
        free(*out);
        *out = NULL;
        *n_frames = 0;
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_mel_compute_stacked2(const tr_mel_config *c, const char *who, const float *pcm,
                                          int64_t n, tr_pool *pool, float **out, int *n_rows) {
    *out = NULL;
    *n_rows = 0;
    transcribe_status st = tr_mel_check_reflect_len(c, who, n);
    if (st != TRANSCRIBE_OK) return st;
    float *mel = NULL;
    int T_mel = 0;
    if ((st = tr_mel_compute(c, pcm, n, pool, &mel, &T_mel))) return st;
    const int M = c->n_mels, T = T_mel / 2;
    if (T < 1) {
        free(mel);
        TR_ERROR("%s: %lld samples give no stacked frame", who, (long long)n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    float *x = malloc((size_t)T * 2 * M * sizeof(float));
    if (!x) {
        free(mel);
        return TRANSCRIBE_ERR_OOM;
    }
    /* stacked[t] = frame 2t's bins, then frame 2t+1's */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < 2; h++)
            for (int f = 0; f < M; f++)
                x[(size_t)t * 2 * M + (size_t)h * M + f] = mel[(size_t)f * T_mel + 2 * t + h];
    free(mel);
    *out = x;
    *n_rows = T;
    return TRANSCRIBE_OK;
}

transcribe_status tr_mel_compute_rows(const tr_mel_config *c, const float *pcm, int64_t n,
                                      tr_pool *pool, float **out, int *n_frames) {
    float *fm = NULL; /* feature-major [F][T] */
    int T = 0;
    *out = NULL;
    *n_frames = 0;
    transcribe_status st = tr_mel_compute(c, pcm, n, pool, &fm, &T);
    if (st != TRANSCRIBE_OK) return st;
    const size_t F = (size_t)tr_mel_n_features(c);
    float *rows = malloc(sizeof(float) * (size_t)T * F);
    if (!rows) {
        free(fm);
        return TRANSCRIBE_ERR_OOM;
    }
    for (size_t f = 0; f < F; f++)
        for (size_t t = 0; t < (size_t)T; t++) rows[t * F + f] = fm[f * (size_t)T + t];
    free(fm);
    *out = rows;
    *n_frames = T;
    return TRANSCRIBE_OK;
}
