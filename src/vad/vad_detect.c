/* The detector behind the VAD section of include/transcribe.h (whose thin
 * public wrappers are src/api/vad_api.c): parameters, detectors, the
 * offline run and the streaming feed (one code path: run = reset + feed +
 * finish). Arguments are checked here, so internal callers (src/api's VAD
 * runs and streams, the pause splitter) get the same checks and messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/vec.h"
#include "vad/vad.h"

/* The smallest params struct this library reads (every field it has). */
#define TR_MIN_VAD_PARAMS sizeof(struct transcribe_vad_params)

void tr_vad_params_default(struct transcribe_vad_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->threshold = 0.5f;
    p->neg_threshold = -1.0f;
    p->min_speech_ms = 250;
    p->min_silence_ms = 100;
    p->speech_pad_ms = 30;
    p->max_speech_s = 0.0f;
    p->window_samples = 0;
}

void tr_vad_model_free(struct transcribe_vad_model *m) {
    if (!m) return;
    tr_fft_free(m->fft);
    tr_gguf_close(m->gguf);
    free(m);
}

static int default_window(int rate) {
    return rate == 16000 ? 512 : 256;
}

transcribe_status tr_vad_params_check(const struct transcribe_vad_params *p, int rate,
                                      const char *where) {
    if (rate != 16000 && rate != 8000) {
        TR_ERROR("%s: sample rate %d Hz: Silero VAD runs at 16000 or 8000 Hz (resample first)",
                 where, rate);
        return TRANSCRIBE_ERR_SAMPLE_RATE;
    }
    if (!(p->threshold >= 0.0f && p->threshold <= 1.0f)) {
        TR_ERROR("%s: threshold %g is outside [0, 1]", where, (double)p->threshold);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!(p->neg_threshold < 0.0f ||
          (p->neg_threshold <= p->threshold && p->neg_threshold <= 1.0f))) {
        TR_ERROR("%s: neg_threshold %g must be in [0, threshold %g] (or < 0 for the default)",
                 where, (double)p->neg_threshold, (double)p->threshold);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->min_speech_ms < 0 || p->min_silence_ms < 0 || p->speech_pad_ms < 0 ||
        p->min_speech_ms > 3600000 || p->min_silence_ms > 3600000 || p->speech_pad_ms > 60000 ||
        !(p->max_speech_s >= 0.0f && p->max_speech_s <= 1e6f)) {
        TR_ERROR("%s: durations out of range (min_speech_ms %d, min_silence_ms %d, "
                 "speech_pad_ms %d, max_speech_s %g)",
                 where, (int)p->min_speech_ms, (int)p->min_silence_ms, (int)p->speech_pad_ms,
                 (double)p->max_speech_s);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int w = p->window_samples ? p->window_samples : default_window(rate);
    int base = default_window(rate);
    if (w != base && w != 2 * base && w != 3 * base) {
        TR_ERROR("%s: window of %d samples: the model takes %d, %d or %d at %d Hz", where, w, base,
                 2 * base, 3 * base, rate);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_vad_create(const struct transcribe_vad_model *model, int sample_rate,
                                const struct transcribe_vad_params *params,
                                struct transcribe_vad **out) {
    if (out) *out = NULL;
    if (!model || !out) {
        TR_ERROR("transcribe_vad_init: NULL argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_vad_params p;
    tr_vad_params_default(&p);
    if (params) {
        if (params->struct_size < TR_MIN_VAD_PARAMS) {
            TR_ERROR("transcribe_vad_init: params struct_size %llu < %zu",
                     (unsigned long long)params->struct_size, TR_MIN_VAD_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        memcpy(&p, params, sizeof p);
        p.struct_size = sizeof p;
    }
    transcribe_status st = tr_vad_params_check(&p, sample_rate, "transcribe_vad_init");
    if (st != TRANSCRIBE_OK) return st;
    struct transcribe_vad *v = calloc(1, sizeof *v);
    if (!v) return TRANSCRIBE_ERR_OOM;
    v->model = model;
    v->rate = sample_rate;
    v->net = sample_rate == 16000 ? &model->net16 : &model->net8;
    v->win = p.window_samples ? p.window_samples : default_window(sample_rate);
    v->params = p;
    const size_t rows = TR_VAD_BATCH * tr_vad_frames(v->win);
    v->pending = malloc(sizeof(float) * TR_VAD_BATCH * (size_t)v->win);
    v->frames = malloc(sizeof(float) * rows * TR_VAD_N_FFT);
    v->spec = malloc(sizeof(float) * rows * 2 * TR_VAD_BINS);
    v->scratch = malloc(sizeof(float) * tr_vad_scratch_floats(v->win, TR_VAD_BATCH));
    v->fft_buf = malloc(sizeof(double) * (tr_vad_fft_doubles(model) + 1));
    if (!v->pending || !v->frames || !v->spec || !v->scratch || !v->fft_buf) {
        TR_ERROR("transcribe_vad_init: out of memory");
        tr_vad_free(v);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_vad_reset(v);
    *out = v;
    return TRANSCRIBE_OK;
}

void tr_vad_free(struct transcribe_vad *v) {
    if (!v) return;
    tr_vad_rules_free(&v->rules);
    free(v->pending);
    free(v->frames);
    free(v->fft_buf);
    free(v->spec);
    free(v->scratch);
    free(v->probs);
    free(v);
}

void tr_vad_reset(struct transcribe_vad *v) {
    if (!v) return;
    memset(v->h, 0, sizeof v->h);
    memset(v->c, 0, sizeof v->c);
    v->n_pending = 0;
    v->n_fed = 0;
    v->n_probs = 0;
    v->flushed = false;
    tr_vad_rules_init(&v->rules, &v->params, v->rate, v->win);
}

/* Runs every complete window of v->pending (their spectra in one GEMM),
 * keeping an incomplete tail for the next call. */
static transcribe_status run_pending(struct transcribe_vad *v) {
    const int count = v->n_pending / v->win;
    if (count == 0) return TRANSCRIBE_OK;
    float *pr = tr_grow(v->probs, &v->cap_probs, v->n_probs + (size_t)count, sizeof *pr, 1024);
    if (!pr) {
        TR_ERROR("transcribe_vad: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    v->probs = pr;
    tr_vad_net_spectra(v->model, v->pool, v->pending, v->win, count, v->frames, v->spec,
                       v->fft_buf);
    float *out = v->probs + v->n_probs;
    tr_vad_net_batch(v->model, v->net, v->pool, v->spec, v->win, count, v->h, v->c, v->scratch,
                     out);
    for (int w = 0; w < count; w++) {
        v->n_probs++;
        if (!tr_vad_rules_push(&v->rules, out[w])) {
            TR_ERROR("transcribe_vad: out of memory");
            return TRANSCRIBE_ERR_OOM;
        }
    }
    int used = count * v->win;
    memmove(v->pending, v->pending + used, sizeof(float) * (size_t)(v->n_pending - used));
    v->n_pending -= used;
    return TRANSCRIBE_OK;
}

transcribe_status tr_vad_feed(struct transcribe_vad *v, const float *pcm, int64_t n) {
    if (!v || (!pcm && n > 0) || n < 0) {
        TR_ERROR("transcribe_vad_feed: %s", !v ? "NULL detector" : "bad samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (v->flushed) {
        TR_ERROR("transcribe_vad_feed: the stream is finished (transcribe_vad_reset starts anew)");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    bool warned = false;
    for (int64_t i = 0; i < n; i++) {
        float x = pcm[i];
        if (!isfinite(x)) {
            if (!warned) TR_WARN("transcribe_vad_feed: non-finite samples read as 0");
            warned = true;
            x = 0.0f;
        }
        v->pending[v->n_pending++] = x;
        v->n_fed++;
        if (v->n_pending == TR_VAD_BATCH * v->win) {
            transcribe_status st = run_pending(v);
            if (st != TRANSCRIBE_OK) return st;
        }
    }
    return run_pending(v); /* a streaming caller sees every complete window at once */
}

transcribe_status tr_vad_finish(struct transcribe_vad *v) {
    if (!v) {
        TR_ERROR("transcribe_vad_finish: NULL detector");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (v->flushed) return TRANSCRIBE_OK;
    if (v->n_pending > 0) {
        memset(v->pending + v->n_pending, 0, sizeof(float) * (size_t)(v->win - v->n_pending));
        v->n_pending = v->win;
        transcribe_status st = run_pending(v);
        if (st != TRANSCRIBE_OK) return st;
    }
    if (!tr_vad_rules_finish(&v->rules, v->n_fed)) {
        TR_ERROR("transcribe_vad_finish: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    v->flushed = true;
    return TRANSCRIBE_OK;
}

transcribe_status tr_vad_run(struct transcribe_vad *v, const float *pcm, int64_t n) {
    if (!v || (!pcm && n > 0) || n < 0) {
        TR_ERROR("transcribe_vad_run: %s", !v ? "NULL detector" : "bad samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_vad_reset(v);
    transcribe_status st = tr_vad_feed(v, pcm, n);
    return st == TRANSCRIBE_OK ? tr_vad_finish(v) : st;
}

bool tr_vad_in_speech(const struct transcribe_vad *v) {
    return v && v->rules.triggered;
}

int tr_vad_n_segments(const struct transcribe_vad *v) {
    if (!v) return 0;
    size_t n = tr_vad_rules_n_final(&v->rules, v->n_fed, v->flushed);
    return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}

transcribe_status tr_vad_get_segment(const struct transcribe_vad *v, int i,
                                     struct transcribe_vad_segment *out) {
    if (!v || !out || i < 0 || i >= tr_vad_n_segments(v)) {
        TR_ERROR("transcribe_vad_get_segment: %s", !v || !out ? "NULL argument" : "bad index");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_vad_rules_padded(&v->rules, (size_t)i, v->n_fed, &out->start, &out->end);
    out->t0_ms = out->start * 1000 / v->rate;
    out->t1_ms = out->end * 1000 / v->rate;
    return TRANSCRIBE_OK;
}

const float *tr_vad_probs(const struct transcribe_vad *v, int64_t *n_windows) {
    if (n_windows) *n_windows = v ? (int64_t)v->n_probs : 0;
    return v ? v->probs : NULL;
}
