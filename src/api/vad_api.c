/* The VAD section of include/transcribe.h: thin wrappers over the detector
 * of src/vad (vad.h), which checks every argument itself so that the
 * library's own callers get the same checks. */
#include "transcribe.h"
#include "util/log.h"
#include "vad/vad.h"

TRANSCRIBE_API void transcribe_vad_params_init(struct transcribe_vad_params *p) {
    tr_vad_params_default(p);
}

TRANSCRIBE_API transcribe_status transcribe_vad_model_load(const char *path,
                                                           struct transcribe_vad_model **out) {
    if (out) *out = NULL;
    if (!path || !out) {
        TR_ERROR("transcribe_vad_model_load: NULL argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_vad_model_load(path, out);
}

TRANSCRIBE_API void transcribe_vad_model_free(struct transcribe_vad_model *m) {
    tr_vad_model_free(m);
}

TRANSCRIBE_API transcribe_status transcribe_vad_init(const struct transcribe_vad_model *model,
                                                     int sample_rate,
                                                     const struct transcribe_vad_params *params,
                                                     struct transcribe_vad **out) {
    return tr_vad_create(model, sample_rate, params, out);
}

TRANSCRIBE_API void transcribe_vad_free(struct transcribe_vad *v) {
    tr_vad_free(v);
}

TRANSCRIBE_API void transcribe_vad_reset(struct transcribe_vad *v) {
    tr_vad_reset(v);
}

TRANSCRIBE_API transcribe_status transcribe_vad_feed(struct transcribe_vad *v, const float *pcm,
                                                     int64_t n) {
    return tr_vad_feed(v, pcm, n);
}

TRANSCRIBE_API transcribe_status transcribe_vad_finish(struct transcribe_vad *v) {
    return tr_vad_finish(v);
}

TRANSCRIBE_API transcribe_status transcribe_vad_run(struct transcribe_vad *v, const float *pcm,
                                                    int64_t n) {
    return tr_vad_run(v, pcm, n);
}

TRANSCRIBE_API bool transcribe_vad_in_speech(const struct transcribe_vad *v) {
    return tr_vad_in_speech(v);
}

TRANSCRIBE_API int transcribe_vad_n_segments(const struct transcribe_vad *v) {
    return tr_vad_n_segments(v);
}

TRANSCRIBE_API transcribe_status transcribe_vad_get_segment(const struct transcribe_vad *v, int i,
                                                            struct transcribe_vad_segment *out) {
    return tr_vad_get_segment(v, i, out);
}

TRANSCRIBE_API const float *transcribe_vad_probs(const struct transcribe_vad *v,
                                                 int64_t *n_windows) {
    return tr_vad_probs(v, n_windows);
}
