/* Run parameters (c-api.md §10.1): the one size-versioned copy-in of a
 * caller's struct transcribe_run_params (run, batch and stream) and the
 * checks every run path shares. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"

static bool in_list(const char *s, const char *const *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i] && strcmp(list[i], s) == 0) return true;
    }
    return false;
}

transcribe_status tr_validate_ext_ptr(const struct transcribe_model *m,
                                      const struct transcribe_ext *ext, transcribe_ext_slot slot,
                                      const char *where) {
    if (!ext) return TRANSCRIBE_OK;
    if (ext->size < sizeof(struct transcribe_ext)) {
        TR_ERROR("%s: extension size %llu < %zu", where, (unsigned long long)ext->size,
                 sizeof(struct transcribe_ext));
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    if (!transcribe_model_accepts_ext_kind(m, slot, ext->kind)) {
        TR_ERROR("%s: extension kind 0x%08x is not accepted on the %s slot of this %s model", where,
                 (unsigned)ext->kind, slot == TRANSCRIBE_EXT_SLOT_RUN ? "run" : "stream", m->arch);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_validate_run_params(const struct transcribe_model *m,
                                         const struct transcribe_run_params *p, bool streaming) {
    const struct transcribe_capabilities *c = &m->desc.caps;
    const char *where = streaming ? "transcribe_stream_begin" : "transcribe_run";
    /* Enums are checked as raw integers: callers may pass anything. */
    if ((int)p->task < TRANSCRIBE_TASK_TRANSCRIBE || (int)p->task > TRANSCRIBE_TASK_TRANSLATE ||
        (int)p->timestamps < TRANSCRIBE_TIMESTAMPS_NONE ||
        (int)p->timestamps > TRANSCRIBE_TIMESTAMPS_TOKEN ||
        (int)p->pnc < TRANSCRIBE_PNC_MODE_DEFAULT || (int)p->pnc > TRANSCRIBE_PNC_MODE_ON ||
        (int)p->itn < TRANSCRIBE_ITN_MODE_DEFAULT || (int)p->itn > TRANSCRIBE_ITN_MODE_ON ||
        (int)p->diarize < TRANSCRIBE_DIARIZE_MODE_DEFAULT ||
        (int)p->diarize > TRANSCRIBE_DIARIZE_MODE_ON) {
        TR_ERROR("%s: run params hold an out-of-range enum (task %d, timestamps %d, pnc %d, "
                 "itn %d, diarize %d)",
                 where, (int)p->task, (int)p->timestamps, (int)p->pnc, (int)p->itn,
                 (int)p->diarize);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* Draft length of speculative decoding: a hint (the output is plain
     * greedy's whatever it is), so a family without it ignores it; only a
     * value no caller means is refused. */
    if (p->spec_k_drafts < -1) {
        TR_ERROR("%s: spec_k_drafts %d (-1 = family default, 0 = off, N = drafts per step)", where,
                 (int)p->spec_k_drafts);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* Granularities are ordered NONE(0) < SEGMENT(2) < WORD(3) < TOKEN(4);
     * AUTO(1) is never rejected. */
    if (p->timestamps != TRANSCRIBE_TIMESTAMPS_AUTO &&
        p->timestamps != TRANSCRIBE_TIMESTAMPS_NONE) {
        int max =
            c->max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_AUTO ? 0 : (int)c->max_timestamp_kind;
        if ((int)p->timestamps > max) {
            static const char *const names[] = {"none", "auto", "segment", "word", "token"};
            TR_ERROR("%s: %s timestamps are finer than this %s model gives (at most %s)", where,
                     names[p->timestamps], m->arch, names[max]);
            return TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS;
        }
    }
    if (p->language && c->n_languages > 0 && !in_list(p->language, c->languages, c->n_languages)) {
        TR_ERROR("%s: language '%s' is not supported by this %s model", where, p->language,
                 m->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE && p->target_language) {
        if (c->n_translate_target_languages > 0 &&
            !in_list(p->target_language, c->translate_target_languages,
                     c->n_translate_target_languages)) {
            TR_ERROR("%s: translation target '%s' is not supported by this %s model", where,
                     p->target_language, m->arch);
            return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
        }
        if (p->language && m->desc.n_translate_pairs > 0) {
            char pair[256];
            int n = snprintf(pair, sizeof pair, "%s>%s", p->language, p->target_language);
            if (n < 0 || (size_t)n >= sizeof pair ||
                !in_list(pair, m->desc.translate_pairs, m->desc.n_translate_pairs)) {
                TR_ERROR("%s: translation pair %s -> %s is not supported by this %s model", where,
                         p->language, p->target_language, m->arch);
                return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
            }
        }
    }
    if (streaming && p->task == TRANSCRIBE_TASK_TRANSLATE) {
        TR_ERROR("%s: streaming does not support translation", where);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    /* Advisory: an unsupported runtime toggle is ignored, not an error. */
    const char *variant = m->desc.variant ? m->desc.variant : "";
    if (p->pnc != TRANSCRIBE_PNC_MODE_DEFAULT && !m->desc.features[TRANSCRIBE_FEATURE_PNC]) {
        TR_WARN("%s: model %s/%s has no runtime PNC control; pnc ignored", where, m->arch, variant);
    }
    if (p->itn != TRANSCRIBE_ITN_MODE_DEFAULT && !m->desc.features[TRANSCRIBE_FEATURE_ITN]) {
        TR_WARN("%s: model %s/%s has no runtime ITN control; itn ignored", where, m->arch, variant);
    }
    if (p->diarize != TRANSCRIBE_DIARIZE_MODE_DEFAULT &&
        !m->desc.features[TRANSCRIBE_FEATURE_DIARIZATION]) {
        TR_WARN("%s: model %s/%s has no diarization; diarize ignored", where, m->arch, variant);
    }
    if (p->n_vocabulary > 0 && !m->desc.features[TRANSCRIBE_FEATURE_VOCABULARY]) {
        TR_WARN("%s: model %s/%s takes no vocabulary hints; %d term%s ignored", where, m->arch,
                variant, (int)p->n_vocabulary, p->n_vocabulary == 1 ? "" : "s");
    }
    if (!streaming && p->task == TRANSCRIBE_TASK_TRANSLATE && !c->supports_translate) {
        TR_ERROR("%s: this %s model cannot translate", where, m->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    return TRANSCRIBE_OK;
}

/* Steps 2 and 4–10 of docs/c-api.md §10.1 shared by run and run_batch (step 3, the
 * stream check, sits between 2 and 4 and is done by the callers). */
transcribe_status tr_run_params_load(const struct transcribe_run_params *params,
                                     struct transcribe_run_params *out, const char *where) {
    transcribe_run_params_init(out);
    if (!params) return TRANSCRIBE_OK;
    if (params->struct_size < TR_MIN_RUN_PARAMS) {
        TR_ERROR("%s: run params struct_size %llu < %u (rebuild against this header)", where,
                 (unsigned long long)params->struct_size, TR_MIN_RUN_PARAMS);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    /* The fields every caller has, then each appended field the caller's
     * struct covers whole (an older caller's keep their defaults; a newer
     * caller's extra bytes are not ours to read). */
    memcpy((char *)out + sizeof out->struct_size, (const char *)params + sizeof out->struct_size,
           TR_MIN_RUN_PARAMS - sizeof out->struct_size);
#define COVERS(f)                                                                                  \
    (params->struct_size >= offsetof(struct transcribe_run_params, f) + sizeof params->f)
    if (COVERS(vad_model)) out->vad_model = params->vad_model;
    if (COVERS(vad_params)) out->vad_params = params->vad_params;
    if (COVERS(n_vocabulary)) {
        out->vocabulary = params->vocabulary;
        out->n_vocabulary = params->n_vocabulary;
    }
    if (COVERS(chunk_max_ms)) out->chunk_max_ms = params->chunk_max_ms;
    if (COVERS(chunking)) out->chunking = params->chunking;
    if (COVERS(chunk_batch)) out->chunk_batch = params->chunk_batch;
    if (COVERS(diarizer)) out->diarizer = params->diarizer;
#undef COVERS
    if ((int)out->chunking < TRANSCRIBE_CHUNKING_AUTO ||
        (int)out->chunking > TRANSCRIBE_CHUNKING_OFF || out->chunk_batch < 0 ||
        out->chunk_batch > TR_CHUNK_MAX_BATCH ||
        (out->chunk_max_ms != 0 &&
         (out->chunk_max_ms < TR_CHUNK_MIN_MS || out->chunk_max_ms > TR_CHUNK_MAX_MS))) {
        TR_ERROR("%s: chunking %d, chunk_max_ms %lld (0 or %d..%d), chunk_batch %d (0..%d)", where,
                 (int)out->chunking, (long long)out->chunk_max_ms, TR_CHUNK_MIN_MS, TR_CHUNK_MAX_MS,
                 (int)out->chunk_batch, TR_CHUNK_MAX_BATCH);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->n_vocabulary < 0 || (out->n_vocabulary > 0 && !out->vocabulary)) {
        TR_ERROR("%s: %d vocabulary terms at %p", where, (int)out->n_vocabulary,
                 (const void *)out->vocabulary);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    for (int i = 0; i < out->n_vocabulary; i++) {
        if (!out->vocabulary[i]) {
            TR_ERROR("%s: vocabulary term %d is NULL", where, i);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_run_params_check(const struct transcribe_session *s,
                                      const struct transcribe_run_params *p, const char *where) {
    const struct transcribe_model *m = s->model;
    transcribe_status st = tr_validate_ext_ptr(m, p->family, TRANSCRIBE_EXT_SLOT_RUN, where);
    if (st != TRANSCRIBE_OK) return st;
    st = tr_validate_run_params(m, p, false);
    if (st != TRANSCRIBE_OK) return st;
    st = tr_diarize_check(s, p, where);
    if (st != TRANSCRIBE_OK) return st;
    if (m->family->validate_run) {
        st = m->family->validate_run(m->fmodel, p);
        if (st != TRANSCRIBE_OK) {
            TR_ERROR("%s: %s rejected the run parameters: %s", where, m->arch,
                     transcribe_status_string(st));
            return st;
        }
    }
    return TRANSCRIBE_OK;
}
