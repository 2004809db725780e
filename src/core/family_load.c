/* The model-load wrapper of core/family.h: the allocate / fill / free-on-
 * failure steps every GGUF-only family takes the same way; the run checks
 * the transcription-only families share. */
#include <stdlib.h>

#include "core/family.h"
#include "util/log.h"

transcribe_status tr_family_load_gguf(const tr_load_ctx *lc, const char *who, size_t size,
                                      tr_gguf_model_fill fill, void (*free_model)(void *model),
                                      void **out) {
    *out = NULL;
    if (!lc->gguf) {
        TR_ERROR("%s: only GGUF files are supported", who);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    void *m = calloc(1, size);
    if (!m) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = fill(lc->gguf, m);
    if (st != TRANSCRIBE_OK) {
        free_model(m);
        return st;
    }
    *out = m;
    return TRANSCRIBE_OK;
}

transcribe_status tr_family_check_transcribe_only(const char *who,
                                                  const struct transcribe_run_params *p) {
    if (p->family) {
        TR_ERROR("%s: this family takes no run extension", who);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE) {
        TR_ERROR("%s: translation is not supported (transcription only)", who);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_family_gate_whole(const char *who, const float *pcm, int n_samples,
                                       int min_samples, int sample_rate, int max_ms) {
    if (!pcm || n_samples < min_samples) {
        TR_ERROR("%s: %d samples is shorter than one %d-sample frame", who, n_samples, min_samples);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t ms = (int64_t)n_samples * 1000 / sample_rate;
    if (ms > max_ms)
        TR_WARN("%s: %.1f s is longer than the model's %d s window; running it whole "
                "(attention cost grows with the square of the length)",
                who, (double)ms / 1000.0, max_ms / 1000);
    return TRANSCRIBE_OK;
}
