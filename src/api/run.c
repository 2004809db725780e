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

/* The run is committed: forget the previous result and stream. */
static void commit_run(struct transcribe_session *s) {
    tr_session_clear_results(s);
    tr_stream_clear(s);
}

/* A piece of a split run truncated and kept (partial text). */
static bool kept_truncated(const tr_result *r) {
    for (int i = 0; i < r->n_pieces; i++) {
        if (r->pieces[i].status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return true;
    }
    return false;
}

/* Long audio through transcribe_run: the input cut at pauses (before
 * anything changes: a rejected cut leaves the previous result), the pieces
 * run and joined into the single result, which a split run keeps whatever
 * its status. */
static transcribe_status run_chunked(struct transcribe_session *s, const float *pcm, int n,
                                     const struct transcribe_run_params *p,
                                     const tr_chunk_plan *plan) {
    struct transcribe_audio_span *spans = NULL;
    int ns = 0;
    transcribe_status st = tr_chunk_cut(s, pcm, n, p, plan, &spans, &ns);
    if (st != TRANSCRIBE_OK) return st;
    commit_run(s);
    tr_result *r = &s->results[0];
    s->n_results = 1;
    tr_progress_span ps;
    if (p->diarizer) tr_diarize_progress_begin(s, &ps);
    st = tr_chunk_run(s, pcm, n, p, plan, spans, ns, r);
    if (p->diarizer) tr_diarize_progress_end(s, &ps);
    if (p->diarizer && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)) {
        transcribe_status ds = tr_diarize_result(s, p, pcm, n, r, "transcribe_run");
        if (ds != TRANSCRIBE_OK) st = ds;
    }
    r->status = st;
    s->mel_ms = r->mel_ms;
    s->encode_ms = r->encode_ms;
    s->decode_ms = r->decode_ms;
    s->truncated = kept_truncated(r);
    s->aborted = st == TRANSCRIBE_ERR_ABORTED;
    return st;
}

/* What transcribe_run judges without its session: every public entry answers
 * these before it touches a handle, and never keeps their message on the
 * handle (last_error.c), for a call with a bad argument may hold no session
 * at all (a stale or made-up pointer). */
static transcribe_status run_args(const struct transcribe_session *session, const float *pcm,
                                  int n_samples, const struct transcribe_run_params *params,
                                  struct transcribe_run_params *out) {
    if (!session || !pcm || n_samples <= 0) {
        TR_ERROR("transcribe_run: %s", !session ? "session is NULL"
                                       : !pcm   ? "pcm is NULL"
                                                : "n_samples must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_run_params_load(params, out, "transcribe_run");
}

/* detect_prob: NULL for a transcription; for transcribe_detect_language,
 * where the family's detection probability goes (the run may stop early). */
static transcribe_status transcribe_run_impl(struct transcribe_session *session, const float *pcm,
                                             int n_samples,
                                             const struct transcribe_run_params *params,
                                             float *detect_prob) {
    struct transcribe_run_params p;
    transcribe_status st = run_args(session, pcm, n_samples, params, &p);
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state == TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("transcribe_run: a stream is active on this session (finalize or reset it)");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    st = tr_run_params_check(session, &p, "transcribe_run");
    if (st != TRANSCRIBE_OK) return st;

    const tr_family *fam = session->model->family;
    if (!fam->run) {
        TR_ERROR("transcribe_run: the %s family has no run path", session->model->arch);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    /* Long audio: detection looks at the start only and is never split. */
    tr_chunk_plan plan = {0};
    if (!detect_prob) plan = tr_chunk_plan_for(session, &p, n_samples);
    if (plan.split) return run_chunked(session, pcm, n_samples, &p, &plan);
    tr_vad_join vj = {0};
    if (p.vad_model) { /* before commit_run: a rejected VAD setting changes nothing */
        st = tr_vad_join_plan(p.vad_model, p.vad_params,
                              session->model->desc.caps.native_sample_rate, pcm, n_samples, &vj);
        if (st != TRANSCRIBE_OK) return st;
    }
    commit_run(session);
    tr_result *r = &session->results[0];
    /* The result under construction is readable from the abort callback
     * (same thread, between decode steps), e.g. to show progress. */
    session->n_results = 1;
    const bool diarized = p.diarizer && !detect_prob;
    tr_progress_span ps;
    if (diarized) tr_diarize_progress_begin(session, &ps);
    if (p.vad_model)
        st = tr_run_family_joined(session, &vj, &p, r, detect_prob, "transcribe_run");
    else
        st = tr_run_family(session, pcm, n_samples, &p, r, detect_prob, "transcribe_run");
    if (diarized) tr_diarize_progress_end(session, &ps);
    tr_vad_join_free(&vj);
    if (diarized && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)) {
        /* on the input's clock: the rows are already mapped back from VAD */
        transcribe_status ds = tr_diarize_result(session, &p, pcm, n_samples, r, "transcribe_run");
        if (ds != TRANSCRIBE_OK) st = ds;
    }
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
    struct transcribe_run_params p;
    transcribe_status st = run_args(session, pcm, n_samples, params, &p);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    st = transcribe_run_impl(session, pcm, n_samples, params, NULL);
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
    const struct transcribe_capabilities *caps = &session->model->desc.caps;
    if (!caps->supports_language_detect) {
        TR_ERROR("transcribe_detect_language: this %s model cannot detect the language",
                 session->model->arch);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    /* Detection looks at the start of the audio (Whisper: its first 30 s
     * window); a family that has to transcribe to detect gets no more. */
    int rate = caps->native_sample_rate > 0 ? caps->native_sample_rate : 16000;
    if (n_samples > 30 * rate) n_samples = 30 * rate;
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    float prob = NAN;
    transcribe_status st = transcribe_run_impl(session, pcm, n_samples, &p, &prob);
    if (st != TRANSCRIBE_OK) return st;
    const char *code = tr_result_language(tr_session_result(session));
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
    if (out_code) *out_code = NULL;
    if (!session || !out_code || !pcm || n_samples <= 0) { /* see run_args */
        TR_ERROR("transcribe_detect_language: %s", !session    ? "session is NULL"
                                                   : !out_code ? "out_code is NULL"
                                                   : !pcm      ? "pcm is NULL"
                                                               : "n_samples must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    char msg[TR_LAST_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    transcribe_status st = detect_impl(session, pcm, n_samples, out_code, out_probability);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

/* The session's flags and timings after a batch whose rows are in
 * results[0..n) and whose whole-call status is st. */
static transcribe_status settle_batch(struct transcribe_session *s, int n, transcribe_status st) {
    for (int i = 0; i < n; i++) {
        if (s->results[i].status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
            (s->results[i].chunked && kept_truncated(&s->results[i]))) {
            s->truncated = true;
        }
    }
    if (st == TRANSCRIBE_ERR_ABORTED) s->aborted = true;
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
        s->n_results = n;
        for (int i = 0; i < n; i++) {
            s->mel_ms += s->results[i].mel_ms;
            s->encode_ms += s->results[i].encode_ms;
            s->decode_ms += s->results[i].decode_ms;
        }
    } else {
        TR_ERROR("transcribe_run_batch: %s", transcribe_status_string(st));
        s->n_results = 0;
    }
    return st;
}

/* A batch holding long utterances (long_one[i]): the others run together
 * as usual (their results moved into their slots), then each long one
 * alone, split at its pauses, into its slot. Planning happens as each part
 * runs, so a rejected VAD setting here fails after the slots were cleared. */
static transcribe_status run_batch_mixed(struct transcribe_session *s, const float *const *pcm,
                                         const int *n_samples, int n,
                                         const struct transcribe_run_params *p,
                                         const bool *long_one) {
    const float **sp = calloc((size_t)n, sizeof *sp);
    int *sn = calloc((size_t)n, sizeof *sn), *at = calloc((size_t)n, sizeof *at);
    tr_result *rs = calloc((size_t)n, sizeof *rs);
    if (!sp || !sn || !at || !rs) {
        free(sp), free(sn), free(at), free(rs);
        TR_ERROR("transcribe_run_batch: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (long_one[i]) continue;
        sp[k] = pcm[i], sn[k] = n_samples[i], at[k] = i;
        tr_result_init(&rs[k++]);
    }
    commit_run(s);
    transcribe_status st = TRANSCRIBE_OK;
    if (k > 0) {
        tr_vad_batch vb = {0};
        const float *const *kp = sp;
        const int *kn = sn;
        if (p->vad_model) {
            st = tr_vad_batch_plan(p->vad_model, p->vad_params,
                                   s->model->desc.caps.native_sample_rate, sp, sn, k, &vb);
            kp = vb.pcm, kn = vb.n;
        }
        if (st == TRANSCRIBE_OK) st = tr_run_family_batch(s, kp, kn, k, p, rs);
        tr_vad_batch_finish(&vb, st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED ? rs : NULL);
        for (int j = 0; j < k; j++) { /* swap: the slot's old storage is freed below */
            tr_result t = s->results[at[j]];
            s->results[at[j]] = rs[j];
            rs[j] = t;
        }
    }
    for (int i = 0; i < n && (st == TRANSCRIBE_OK); i++) {
        if (!long_one[i]) continue;
        tr_result *r = &s->results[i];
        tr_chunk_plan plan = tr_chunk_plan_for(s, p, n_samples[i]);
        struct transcribe_audio_span *spans = NULL;
        int ns = 0;
        transcribe_status cs = tr_chunk_cut(s, pcm[i], n_samples[i], p, &plan, &spans, &ns);
        if (cs == TRANSCRIBE_OK) cs = tr_chunk_run(s, pcm[i], n_samples[i], p, &plan, spans, ns, r);
        r->status = cs;
        if (cs != TRANSCRIBE_OK && cs != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) tr_result_take_error(r);
        if (cs == TRANSCRIBE_ERR_ABORTED) st = cs;
    }
    if (st == TRANSCRIBE_ERR_ABORTED) {
        for (int i = 0; i < n; i++) {
            if (long_one[i] && !s->results[i].chunked)
                s->results[i].status = TRANSCRIBE_ERR_ABORTED;
        }
    }
    for (int j = 0; j < k; j++) tr_result_free(&rs[j]);
    free(sp), free(sn), free(at), free(rs);
    if (st == TRANSCRIBE_OK) st = tr_diarize_batch(s, p, pcm, n_samples, n);
    return settle_batch(s, n, st);
}

/* What transcribe_run_batch judges without its session (see run_args). */
static transcribe_status run_batch_args(const struct transcribe_session *session,
                                        const float *const *pcm, const int *n_samples, int n,
                                        const struct transcribe_run_params *params,
                                        struct transcribe_run_params *out) {
    if (!session || !pcm || !n_samples || n <= 0) {
        TR_ERROR("transcribe_run_batch: %s", !session     ? "session is NULL"
                                             : !pcm       ? "pcm is NULL"
                                             : !n_samples ? "n_samples is NULL"
                                                          : "n must be > 0");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_run_params_load(params, out, "transcribe_run_batch");
}

static transcribe_status transcribe_run_batch_impl(struct transcribe_session *session,
                                                   const float *const *pcm, const int *n_samples,
                                                   int n,
                                                   const struct transcribe_run_params *params) {
    struct transcribe_run_params p;
    transcribe_status st = run_batch_args(session, pcm, n_samples, n, params, &p);
    if (st != TRANSCRIBE_OK) return st;
    if (session->stream.state == TRANSCRIBE_STREAM_ACTIVE) {
        TR_ERROR("transcribe_run_batch: a stream is active on this session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    st = tr_run_params_check(session, &p, "transcribe_run_batch");
    if (st != TRANSCRIBE_OK) return st;
    const tr_family *fam = session->model->family;
    if (!fam->run && !fam->run_batch) {
        TR_ERROR("transcribe_run_batch: the %s family has no run path", session->model->arch);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    if (!tr_session_reserve_results(session, n)) {
        TR_ERROR("transcribe_run_batch: out of memory for %d results", n);
        return TRANSCRIBE_ERR_OOM;
    }
    /* Long utterances run alone, split at their pauses, after the rest. */
    bool *long_one = NULL;
    int n_long = 0;
    for (int i = 0; i < n; i++) {
        if (!pcm[i] || n_samples[i] <= 0 || !fam->run) continue;
        if (!tr_chunk_plan_for(session, &p, n_samples[i]).split) continue;
        if (!long_one && !(long_one = calloc((size_t)n, sizeof *long_one))) {
            TR_ERROR("transcribe_run_batch: out of memory");
            return TRANSCRIBE_ERR_OOM;
        }
        long_one[i] = true;
        n_long++;
    }
    if (n_long > 0) {
        st = run_batch_mixed(session, pcm, n_samples, n, &p, long_one);
        free(long_one);
        return st;
    }
    tr_vad_batch vb = {0};
    const float *const *orig_pcm = pcm; /* the diarizer hears the input, not the regions */
    const int *orig_n = n_samples;
    if (p.vad_model) { /* each utterance's speech regions, before anything changes */
        st =
            tr_vad_batch_plan(p.vad_model, p.vad_params,
                              session->model->desc.caps.native_sample_rate, pcm, n_samples, n, &vb);
        if (st != TRANSCRIBE_OK) return st;
        pcm = vb.pcm;
        n_samples = vb.n;
    }
    commit_run(session);
    st = tr_run_family_batch(session, pcm, n_samples, n, &p, session->results);
    tr_vad_batch_finish(&vb, session->results);
    if (st == TRANSCRIBE_OK) st = tr_diarize_batch(session, &p, orig_pcm, orig_n, n);
    return settle_batch(session, n, st);
}

/* The public entry: transcribe_run_batch_impl, with its error kept on the session (last_error.c).
 */
TRANSCRIBE_API transcribe_status transcribe_run_batch(struct transcribe_session *session,
                                                      const float *const *pcm, const int *n_samples,
                                                      int n,
                                                      const struct transcribe_run_params *params) {
    struct transcribe_run_params p;
    transcribe_status st = run_batch_args(session, pcm, n_samples, n, params, &p);
    if (st != TRANSCRIBE_OK) return st;
    char msg[TR_LAST_ERROR_CAP], latest[TR_RESULT_ERROR_CAP];
    tr_log_capture enclosing = tr_log_capture_begin(msg, sizeof msg);
    /* each failed utterance's own reason (transcribe_batch_error) */
    tr_log_capture enclosing_latest = tr_log_latest_begin(latest, sizeof latest);
    st = transcribe_run_batch_impl(session, pcm, n_samples, n, params);
    tr_log_latest_end(enclosing_latest);
    tr_log_capture_end(enclosing);
    tr_api_note_session_error(session, st, msg);
    return st;
}

TRANSCRIBE_API bool transcribe_run_would_chunk(const struct transcribe_session *session,
                                               int64_t n_samples,
                                               const struct transcribe_run_params *params) {
    if (!session || n_samples <= 0 || !session->model->family->run) return false;
    struct transcribe_run_params p;
    if (tr_run_params_load(params, &p, "transcribe_run_would_chunk") != TRANSCRIBE_OK) return false;
    return tr_chunk_plan_for(session, &p, n_samples).split;
}
