/* Speaker attribution by a separate diarization model
 * (transcribe_run_params.diarizer, docs/c-api.md §16.4): after a
 * transcription, the diarizer runs over the same audio (the whole input,
 * on the caller's session pool, in a family session that lives for that
 * one call: the caller may free the diarizer model as soon as the call
 * returns, so nothing of it is kept), its speaker rows become the result's,
 * and every word
 * and segment takes the speaker whose activity overlaps it most
 * (core/speaker_label.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/speaker_label.h"
#include "util/log.h"

/* The activity grid's resolution: fine enough for any diarizer's rows
 * (Sortformer's are 80 ms). */
#define DIAR_FRAME_MS 10.0

transcribe_status tr_diarize_check(const struct transcribe_session *s,
                                   const struct transcribe_run_params *p, const char *where) {
    const struct transcribe_model *d = p->diarizer;
    if (!d) return TRANSCRIBE_OK;
    if (s->model->desc.speakers_only) {
        /* its result is speaker turns already: a diarizer would only relabel
         * them ("[S1] speaker_2"), so the two could never agree */
        TR_ERROR("%s: the model (%s) is a diarization model itself and gives speaker turns, "
                 "not text; run it without a diarizer, or give the diarizer to a transcription "
                 "model",
                 where, s->model->arch ? s->model->arch : "?");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!d->family || !d->family->run || !d->desc.features[TRANSCRIBE_FEATURE_DIARIZATION]) {
        TR_ERROR("%s: the diarizer (%s) is not a diarization model", where,
                 d->arch ? d->arch : "?");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (d->desc.caps.native_sample_rate != s->model->desc.caps.native_sample_rate) {
        TR_ERROR("%s: the diarizer runs at %d Hz, the model at %d Hz", where,
                 (int)d->desc.caps.native_sample_rate, (int)s->model->desc.caps.native_sample_rate);
        return TRANSCRIBE_ERR_SAMPLE_RATE;
    }
    return TRANSCRIBE_OK;
}

void tr_diarize_release(struct transcribe_session *s) {
    if (s->diar_fsession && s->diar_model && s->diar_model->family->session_free)
        s->diar_model->family->session_free(s->diar_fsession);
    s->diar_fsession = NULL;
    s->diar_model = NULL;
}

static transcribe_status diar_session(struct transcribe_session *s,
                                      const struct transcribe_model *d) {
    if (s->diar_model == d && s->diar_fsession) return TRANSCRIBE_OK;
    tr_diarize_release(s);
    void *fs = NULL;
    transcribe_status st = d->family->session_init(d->fmodel, &s->cfg, &fs);
    if (st != TRANSCRIBE_OK) return st;
    s->diar_model = d;
    s->diar_fsession = fs;
    return TRANSCRIBE_OK;
}

static void progress_scaled(float f, void *user_data) {
    const tr_progress_span *ps = user_data;
    if (ps->hold_end && f >= 1.0f) return;
    ps->cb(ps->base + ps->span * f, ps->user_data);
}

void tr_diarize_progress_begin(struct transcribe_session *s, tr_progress_span *ps) {
    *ps =
        (tr_progress_span){s->progress_cb, s->progress_user_data, 0.0f, TR_DIAR_PROGRESS_AT, false};
    if (!ps->cb) return;
    s->progress_cb = progress_scaled;
    s->progress_user_data = ps;
}

void tr_diarize_progress_end(struct transcribe_session *s, const tr_progress_span *ps) {
    s->progress_cb = ps->cb;
    s->progress_user_data = ps->user_data;
}

/* progress: whether the diarizer's pass reports the run's last share
 * (a single run; a batch reports none) */
static transcribe_status diarize_one(struct transcribe_session *s,
                                     const struct transcribe_run_params *p, const float *pcm, int n,
                                     tr_result *r, const char *where, bool progress) {
    const struct transcribe_model *d = p->diarizer;
    if (!d) return TRANSCRIBE_OK;
    transcribe_status st = diar_session(s, d);
    if (st != TRANSCRIBE_OK) {
        TR_ERROR("%s: the diarizer's session failed: %s", where, transcribe_status_string(st));
        return st;
    }
    struct transcribe_run_params dp;
    transcribe_run_params_init(&dp);
    tr_result dr;
    tr_result_init(&dr);
    tr_run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.params = &dp;
    ctx.pool = s->pool;
    ctx.abort_cb = s->abort_cb;
    ctx.abort_user_data = s->abort_user_data;
    ctx.result = &dr;
    ctx.language_prob = NAN;
    tr_progress_span ps = {s->progress_cb, s->progress_user_data, TR_DIAR_PROGRESS_AT,
                           1.0f - TR_DIAR_PROGRESS_AT, true};
    if (progress && ps.cb) {
        ctx.progress_cb = progress_scaled;
        ctx.progress_user_data = &ps;
    }
    tr_pool_take_failures(s->pool);
    st = d->family->run(s->diar_fsession, pcm, n, &ctx);
    st = tr_session_kernel_status(s, st, where);
    float *act = NULL;
    int nf = 0, ns = 0;
    if (st == TRANSCRIBE_OK &&
        !tr_speaker_activity_from_rows(dr.spk, dr.n_spk, DIAR_FRAME_MS, &act, &nf, &ns))
        st = TRANSCRIBE_ERR_OOM;
    if (st == TRANSCRIBE_OK) {
        const tr_speaker_activity a = {act, nf, ns, DIAR_FRAME_MS};
        tr_speaker_label_result(r, &a);
        r->n_spk = 0;
        for (int i = 0; i < dr.n_spk; i++)
            tr_result_add_speaker(r, dr.spk[i].t0_ms, dr.spk[i].t1_ms, dr.spk[i].speaker_id,
                                  dr.spk[i].p);
        if (r->oom) st = TRANSCRIBE_ERR_OOM;
        r->encode_ms += dr.mel_ms + dr.encode_ms;
        if (progress && ps.cb && st == TRANSCRIBE_OK) ps.cb(1.0f, ps.user_data);
    } else {
        TR_ERROR("%s: the diarizer failed: %s", where, transcribe_status_string(st));
    }
    free(act);
    tr_result_free(&dr);
    return st;
}

transcribe_status tr_diarize_result(struct transcribe_session *s,
                                    const struct transcribe_run_params *p, const float *pcm, int n,
                                    tr_result *r, const char *where) {
    const transcribe_status st = diarize_one(s, p, pcm, n, r, where, true);
    tr_diarize_release(s);
    return st;
}

static transcribe_status diarize_batch(struct transcribe_session *s,
                                       const struct transcribe_run_params *p,
                                       const float *const *pcm, const int *n_samples, int n) {
    for (int i = 0; i < n; i++) {
        tr_result *r = &s->results[i];
        if (r->status != TRANSCRIBE_OK && r->status != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) continue;
        transcribe_status st =
            diarize_one(s, p, pcm[i], n_samples[i], r, "transcribe_run_batch", false);
        if (st == TRANSCRIBE_OK) continue;
        r->status = st;
        tr_result_take_error(r);
        if (st == TRANSCRIBE_ERR_ABORTED) {
            for (int j = i + 1; j < n; j++)
                if (s->results[j].status == TRANSCRIBE_OK) s->results[j].status = st;
            return st;
        }
        if (st == TRANSCRIBE_ERR_OOM) return st;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_diarize_batch(struct transcribe_session *s,
                                   const struct transcribe_run_params *p, const float *const *pcm,
                                   const int *n_samples, int n) {
    if (!p->diarizer) return TRANSCRIBE_OK;
    /* one diarizer session for the whole batch, gone when the call ends */
    const transcribe_status st = diarize_batch(s, p, pcm, n_samples, n);
    tr_diarize_release(s);
    return st;
}
