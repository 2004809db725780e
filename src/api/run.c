/* Offline runs (docs/c-api.md §10, §11). The dispatcher performs every generic
 * check in the documented order before anything is cleared, so a rejected
 * call leaves the previous result untouched; families then see validated
 * parameters with defaults filled in. */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    /* Granularities are ordered NONE(0) < SEGMENT(2) < WORD(3) < TOKEN(4);
     * AUTO(1) is never rejected. */
    if (p->timestamps != TRANSCRIBE_TIMESTAMPS_AUTO &&
        p->timestamps != TRANSCRIBE_TIMESTAMPS_NONE) {
        int max =
            c->max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_AUTO ? 0 : (int)c->max_timestamp_kind;
        if ((int)p->timestamps > max) {
            TR_ERROR("%s: timestamp granularity %d is finer than this %s model provides (%d)",
                     where, (int)p->timestamps, m->arch, max);
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
        TR_WARN("%s: model %s/%s takes no vocabulary hints; %d terms ignored", where, m->arch,
                variant, (int)p->n_vocabulary);
    }
    if (!streaming && p->task == TRANSCRIBE_TASK_TRANSLATE && !c->supports_translate) {
        TR_ERROR("%s: this %s model cannot translate", where, m->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    return TRANSCRIBE_OK;
}

/* Steps 2 and 4–10 of docs/c-api.md §10.1 shared by run and run_batch (step 3, the
 * stream check, sits between 2 and 4 and is done by the callers). */
static transcribe_status load_params(const struct transcribe_run_params *params,
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
#undef COVERS
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

static transcribe_status validate_shared(struct transcribe_session *s,
                                         const struct transcribe_run_params *p, const char *where) {
    const struct transcribe_model *m = s->model;
    transcribe_status st = tr_validate_ext_ptr(m, p->family, TRANSCRIBE_EXT_SLOT_RUN, where);
    if (st != TRANSCRIBE_OK) return st;
    st = tr_validate_run_params(m, p, false);
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

/* The run is committed: forget the previous result and stream. */
static void commit_run(struct transcribe_session *s) {
    tr_session_clear_results(s);
    tr_stream_clear(s);
}

static void init_ctx(struct transcribe_session *s, tr_run_ctx *ctx,
                     const struct transcribe_run_params *p, tr_result *r) {
    memset(ctx, 0, sizeof *ctx);
    ctx->params = p;
    ctx->pool = s->pool;
    ctx->abort_cb = s->abort_cb;
    ctx->abort_user_data = s->abort_user_data;
    ctx->progress_cb = s->progress_cb;
    ctx->progress_user_data = s->progress_user_data;
    ctx->result = r;
    ctx->language_prob = NAN;
}

/* Fills in what a family may leave implicit and checks append failures. */
static transcribe_status finish_result(tr_result *r, transcribe_status st) {
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED ||
        st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        if (!r->has_full_text) tr_result_build_full_text(r);
        if (r->oom) {
            TR_ERROR("run: out of memory while building the result");
            return TRANSCRIBE_ERR_OOM;
        }
    }
    return st;
}

/* detect_prob: NULL for a transcription; for transcribe_detect_language,
 * where the family's detection probability goes (the run may stop early). */
static transcribe_status transcribe_run_impl(struct transcribe_session *session, const float *pcm,
                                             int n_samples,
                                             const struct transcribe_run_params *params,
                                             float *detect_prob) {
    if (!session || !pcm || n_samples <= 0) {
        TR_ERROR("transcribe_run: %s", !session ? "session is NULL"
                                       : !pcm   ? "pcm is NULL"
                                                : "n_samples must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_run_params p;
    transcribe_status st = load_params(params, &p, "transcribe_run");
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state == TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("transcribe_run: a stream is active on this session (finalize or reset it)");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    st = validate_shared(session, &p, "transcribe_run");
    if (st != TRANSCRIBE_OK) return st;

    const tr_family *fam = session->model->family;
    if (!fam->run) {
        TR_ERROR("transcribe_run: the %s family has no run path", session->model->arch);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    tr_vad_join vj = {0};
    if (p.vad_model) { /* before commit_run: a rejected VAD setting changes nothing */
        st = tr_vad_join_plan(p.vad_model, p.vad_params,
                              session->model->desc.caps.native_sample_rate, pcm, n_samples, &vj);
        if (st != TRANSCRIBE_OK) return st;
    }
    commit_run(session);
    tr_result *r = &session->results[0];
    tr_run_ctx ctx;
    init_ctx(session, &ctx, &p, r);
    ctx.detect_only = detect_prob != NULL;
    /* The result under construction is readable from the abort callback
     * (same thread, between decode steps), e.g. to show progress. */
    session->n_results = 1;
    tr_pool_take_failures(session->pool); /* nothing stale from an earlier call */
    if (!p.vad_model)
        st = fam->run(session->head.fsession, pcm, n_samples, &ctx);
    else if (vj.n > 0)
        st = fam->run(session->head.fsession, vj.pcm, vj.n, &ctx);
    else
        st = TRANSCRIBE_OK; /* no speech: an empty result */
    if (detect_prob) *detect_prob = ctx.language_prob;
    st = finish_result(r, tr_session_kernel_status(session, st, "transcribe_run"));
    tr_vad_join_remap(&vj, r);
    tr_vad_join_free(&vj);
    session->mel_ms = r->mel_ms;
    session->encode_ms = r->encode_ms;
    session->decode_ms = r->decode_ms;
    switch (st) {
    case TRANSCRIBE_ERR_OUTPUT_TRUNCATED:
        session->truncated = true;
        TR_WARN("transcribe_run: output truncated (decode hit the context/generation cap)");
        /* fallthrough */
    case TRANSCRIBE_ERR_ABORTED:
        if (st == TRANSCRIBE_ERR_ABORTED) session->aborted = true;
        /* fallthrough */
    case TRANSCRIBE_OK:
        r->status = st;
        session->n_results = 1;
        break;
    default:
        tr_result_clear(r);
        session->n_results = 0;
        TR_ERROR("transcribe_run: %s", transcribe_status_string(st));
        break;
    }
    return st;
}

/* The public entry: transcribe_run_impl, with its error kept on the session (last_error.c). */
TRANSCRIBE_API transcribe_status transcribe_run(struct transcribe_session *session,
                                                const float *pcm, int n_samples,
                                                const struct transcribe_run_params *params) {
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    transcribe_status st = transcribe_run_impl(session, pcm, n_samples, params, NULL);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

static transcribe_status detect_impl(struct transcribe_session *session, const float *pcm,
                                     int n_samples, const char **out_code, float *out_prob) {
    if (!session || !out_code) {
        TR_ERROR("transcribe_detect_language: %s is NULL", !session ? "session" : "out_code");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out_code = NULL;
    if (out_prob) *out_prob = NAN;
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(session->model, &caps);
    if (!caps.supports_language_detect) {
        TR_ERROR("transcribe_detect_language: this %s model cannot detect the language",
                 session->model->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    /* Detection looks at the start of the audio (Whisper: its first 30 s
     * window); a family that has to transcribe to detect gets no more. */
    int rate = caps.native_sample_rate > 0 ? caps.native_sample_rate : 16000;
    if (n_samples > 30 * rate) n_samples = 30 * rate;
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    float prob = NAN;
    transcribe_status st = transcribe_run_impl(session, pcm, n_samples, &p, &prob);
    if (st != TRANSCRIBE_OK) return st;
    const char *code = transcribe_detected_language(session);
    if (!code || !*code) {
        TR_ERROR("transcribe_detect_language: the %s model reported no language",
                 session->model->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    *out_code = code;
    if (out_prob) *out_prob = prob;
    return TRANSCRIBE_OK;
}

TRANSCRIBE_API transcribe_status transcribe_detect_language(struct transcribe_session *session,
                                                            const float *pcm, int n_samples,
                                                            const char **out_code,
                                                            float *out_probability) {
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    transcribe_status st = detect_impl(session, pcm, n_samples, out_code, out_probability);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

static bool abort_requested(const struct transcribe_session *s) {
    return s->abort_cb && s->abort_cb(s->abort_user_data);
}

/* Sequential fallback: each utterance through family->run. Per the
 * upstream contract only OK utterances keep rows/text. */
static transcribe_status run_sequential(struct transcribe_session *s, const float *const *pcm,
                                        const int *n_samples, int n,
                                        const struct transcribe_run_params *p) {
    const tr_family *fam = s->model->family;
    for (int i = 0; i < n; i++) {
        tr_result *r = &s->results[i];
        if (abort_requested(s)) {
            for (int j = i; j < n; j++) s->results[j].status = TRANSCRIBE_ERR_ABORTED;
            s->aborted = true;
            return TRANSCRIBE_ERR_ABORTED;
        }
        if (!pcm[i] || n_samples[i] <= 0) {
            TR_ERROR("transcribe_run_batch: utterance %d has %s", i,
                     pcm[i] ? "n_samples <= 0" : "NULL pcm");
            r->status = TRANSCRIBE_ERR_INVALID_ARG;
            continue;
        }
        tr_run_ctx ctx;
        init_ctx(s, &ctx, p, r);
        tr_pool_take_failures(s->pool);
        transcribe_status st = fam->run(s->head.fsession, pcm[i], n_samples[i], &ctx);
        st = finish_result(r, tr_session_kernel_status(s, st, "transcribe_run_batch"));
        float mel = r->mel_ms, enc = r->encode_ms, dec = r->decode_ms;
        if (st == TRANSCRIBE_ERR_OOM || st == TRANSCRIBE_ERR_BACKEND) {
            TR_ERROR("transcribe_run_batch: utterance %d: %s", i, transcribe_status_string(st));
            return st;
        }
        if (st != TRANSCRIBE_OK) tr_result_clear(r);
        r->status = st;
        r->mel_ms = mel;
        r->encode_ms = enc;
        r->decode_ms = dec;
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
            s->truncated = true;
            TR_WARN("transcribe_run_batch: utterance %d output truncated", i);
        }
        if (st == TRANSCRIBE_ERR_ABORTED) {
            for (int j = i + 1; j < n; j++) s->results[j].status = TRANSCRIBE_ERR_ABORTED;
            s->aborted = true;
            return TRANSCRIBE_ERR_ABORTED;
        }
    }
    return TRANSCRIBE_OK;
}

static transcribe_status transcribe_run_batch_impl(struct transcribe_session *session,
                                                   const float *const *pcm, const int *n_samples,
                                                   int n,
                                                   const struct transcribe_run_params *params) {
    if (!session || !pcm || !n_samples || n <= 0) {
        TR_ERROR("transcribe_run_batch: %s", !session     ? "session is NULL"
                                             : !pcm       ? "pcm is NULL"
                                             : !n_samples ? "n_samples is NULL"
                                                          : "n must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (session->stream.state == TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("transcribe_run_batch: a stream is active on this session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    struct transcribe_run_params p;
    transcribe_status st = load_params(params, &p, "transcribe_run_batch");
    if (st != TRANSCRIBE_OK) return st;
    st = validate_shared(session, &p, "transcribe_run_batch");
    if (st != TRANSCRIBE_OK) return st;
    if (!tr_session_reserve_results(session, n)) {
        TR_ERROR("transcribe_run_batch: out of memory for %d results", n);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_vad_batch vb = {0};
    if (p.vad_model) { /* each utterance's speech regions, before anything changes */
        st =
            tr_vad_batch_plan(p.vad_model, p.vad_params,
                              session->model->desc.caps.native_sample_rate, pcm, n_samples, n, &vb);
        if (st != TRANSCRIBE_OK) return st;
        pcm = vb.pcm;
        n_samples = vb.n;
    }

    commit_run(session);
    const tr_family *fam = session->model->family;
    if (!fam->run && !fam->run_batch) {
        TR_ERROR("transcribe_run_batch: the %s family has no run path", session->model->arch);
        tr_vad_batch_finish(&vb, NULL);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    if (fam->run_batch) {
        tr_run_ctx *ctxs = calloc((size_t)n, sizeof *ctxs);
        if (!ctxs) {
            TR_ERROR("transcribe_run_batch: out of memory");
            return TRANSCRIBE_ERR_OOM;
        }
        for (int i = 0; i < n; i++) init_ctx(session, &ctxs[i], &p, &session->results[i]);
        tr_pool_take_failures(session->pool);
        st = fam->run_batch(session->head.fsession, pcm, n_samples, n, ctxs);
        st = tr_session_kernel_status(session, st, "transcribe_run_batch");
        for (int i = 0; i < n; i++) {
            tr_result *r = &session->results[i];
            r->status = finish_result(r, r->status);
            if (r->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) session->truncated = true;
        }
        free(ctxs);
        if (st == TRANSCRIBE_ERR_ABORTED) session->aborted = true;
    } else {
        st = run_sequential(session, pcm, n_samples, n, &p);
    }
    tr_vad_batch_finish(&vb, session->results);
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
        session->n_results = n;
        for (int i = 0; i < n; i++) {
            session->mel_ms += session->results[i].mel_ms;
            session->encode_ms += session->results[i].encode_ms;
            session->decode_ms += session->results[i].decode_ms;
        }
    } else {
        TR_ERROR("transcribe_run_batch: %s", transcribe_status_string(st));
        session->n_results = 0;
    }
    return st;
}

/* The public entry: transcribe_run_batch_impl, with its error kept on the session (last_error.c).
 */
TRANSCRIBE_API transcribe_status transcribe_run_batch(struct transcribe_session *session,
                                                      const float *const *pcm, const int *n_samples,
                                                      int n,
                                                      const struct transcribe_run_params *params) {
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    transcribe_status st = transcribe_run_batch_impl(session, pcm, n_samples, n, params);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}
