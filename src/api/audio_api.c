/* Public audio helpers of the C API: decode any supported file to mono
 * float PCM at a target rate (src/audio); plan pause-aligned spans of long
 * audio (the planner of src/audio/pause_split.h, at the pauses of the
 * energy track or of the VAD of src/vad). */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "audio/audio.h"
#include "audio/pause_split.h"
#include "transcribe.h"
#include "util/log.h"
#include "vad/vad.h"

/* Declared in include/transcribe.h. Note target_rate 0 means 16000 Hz here
 * (the rate every published model takes), per the audio module's brief. */
transcribe_status transcribe_audio_load_file(const char *path, int target_rate, float **out_pcm,
                                             int *out_n_samples) {
    return transcribe_audio_load_file_max(path, target_rate, 0, out_pcm, out_n_samples);
}

transcribe_status transcribe_audio_load_file_max(const char *path, int target_rate, int64_t max_ms,
                                                 float **out_pcm, int *out_n_samples) {
    if (out_pcm) *out_pcm = NULL;
    if (out_n_samples) *out_n_samples = 0;
    if (!path || !out_pcm || !out_n_samples) {
        TR_ERROR("transcribe_audio_load_file: NULL argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (target_rate < 0) {
        TR_ERROR("transcribe_audio_load_file: negative target rate %d", target_rate);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_audio a;
    double max_s = max_ms > 0 ? (double)max_ms / 1000.0 : 0;
    transcribe_status st =
        tr_audio_load_file_max(path, target_rate ? target_rate : 16000, max_s, &a);
    if (st != TRANSCRIBE_OK) return st;
    if (a.n > INT_MAX) {
        TR_ERROR("transcribe_audio_load_file: %lld samples exceed INT_MAX", (long long)a.n);
        tr_audio_free(&a);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out_pcm = a.pcm;
    *out_n_samples = (int)a.n;
    return TRANSCRIBE_OK;
}

void transcribe_audio_free(float *pcm) {
    free(pcm);
}

/* The smallest params struct this library reads (the first three fields;
 * the VAD fields were appended). */
#define TR_MIN_SPLIT_PARAMS offsetof(struct transcribe_pause_split_params, vad_model)

static void split_defaults(struct transcribe_pause_split_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->target_ms = 20000;
    p->max_ms = 30000;
    p->min_pause_ms = 250;
}

void transcribe_pause_split_params_init(struct transcribe_pause_split_params *p) {
    if (p) split_defaults(p);
}

/* Pauses from the VAD's speech regions instead of the energy's. */
static transcribe_status use_vad(const struct transcribe_pause_split_params *p, const float *pcm,
                                 int64_t n, int rate, tr_pause_track *t) {
    struct transcribe_vad *v = NULL;
    transcribe_status st = tr_vad_create(p->vad_model, rate, p->vad_params, &v);
    if (st == TRANSCRIBE_OK) st = tr_vad_run(v, pcm, n);
    int nr = st == TRANSCRIBE_OK ? tr_vad_n_segments(v) : 0;
    int64_t *reg = st == TRANSCRIBE_OK ? malloc(sizeof(int64_t) * 2 * (size_t)(nr + 1)) : NULL;
    if (st == TRANSCRIBE_OK && !reg) st = TRANSCRIBE_ERR_OOM;
    for (int i = 0; reg && i < nr; i++) {
        struct transcribe_vad_segment sg;
        tr_vad_get_segment(v, i, &sg);
        reg[2 * i] = sg.start;
        reg[2 * i + 1] = sg.end;
    }
    tr_vad_free(v);
    if (st == TRANSCRIBE_OK)
        st = tr_pause_track_set_speech(t, n, reg, nr, p->min_pause_ms * rate / 1000);
    else
        tr_pause_track_free(t);
    free(reg);
    if (st != TRANSCRIBE_OK)
        TR_ERROR("transcribe_pause_split: the VAD failed: %s", tr_status_string(st));
    return st;
}

transcribe_status transcribe_pause_split(const float *pcm, int64_t n_samples, int sample_rate,
                                         const struct transcribe_pause_split_params *params,
                                         struct transcribe_audio_span **out_spans, int *out_n) {
    if (out_spans) *out_spans = NULL;
    if (out_n) *out_n = 0;
    if (!out_spans || !out_n || (!pcm && n_samples > 0) || n_samples < 0) {
        TR_ERROR("transcribe_pause_split: %s", !out_spans || !out_n ? "NULL output argument"
                                               : n_samples < 0      ? "n_samples < 0"
                                                                    : "pcm is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (sample_rate < 1000 || sample_rate > 384000) {
        TR_ERROR("transcribe_pause_split: sample rate %d outside 1000..384000", sample_rate);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_pause_split_params p;
    split_defaults(&p);
    if (params) {
        if (params->struct_size < TR_MIN_SPLIT_PARAMS) {
            TR_ERROR("transcribe_pause_split: params struct_size %llu < %zu",
                     (unsigned long long)params->struct_size, TR_MIN_SPLIT_PARAMS);
            return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
        }
        p.target_ms = params->target_ms;
        p.max_ms = params->max_ms;
        p.min_pause_ms = params->min_pause_ms;
        if (params->struct_size >= sizeof p) {
            p.vad_model = params->vad_model;
            p.vad_params = params->vad_params;
        }
    }
    /* 100 hours bounds every product below well inside int64. */
    const int64_t max_ms_cap = 100LL * 3600 * 1000;
    if (p.target_ms < 1000 || p.max_ms < p.target_ms || p.max_ms > max_ms_cap ||
        p.min_pause_ms < 10 || p.min_pause_ms > 5000) {
        TR_ERROR("transcribe_pause_split: need 1000 <= target_ms (%lld) <= max_ms (%lld) <= %lld "
                 "and 10 <= min_pause_ms (%lld) <= 5000",
                 (long long)p.target_ms, (long long)p.max_ms, (long long)max_ms_cap,
                 (long long)p.min_pause_ms);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (n_samples == 0) return TRANSCRIBE_OK;
    tr_pause_track t;
    transcribe_status st = tr_pause_find(pcm, n_samples, sample_rate, p.min_pause_ms, &t);
    if (st == TRANSCRIBE_OK && p.vad_model) {
        st = use_vad(&p, pcm, n_samples, sample_rate, &t);
        if (st != TRANSCRIBE_OK) return st; /* t freed */
    }
    if (st == TRANSCRIBE_OK) {
        st = tr_pause_plan(&t, n_samples, sample_rate, p.target_ms, p.max_ms, out_spans, out_n);
    }
    tr_pause_track_free(&t);
    if (st != TRANSCRIBE_OK) TR_ERROR("transcribe_pause_split: out of memory");
    return st;
}

void transcribe_pause_split_free(struct transcribe_audio_span *spans) {
    free(spans);
}
