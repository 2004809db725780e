/* The family's offline run paths with validated parameters, into results
 * the caller hands in (api_internal.h, tr_run_family*): the session's
 * result slots for transcribe_run / transcribe_run_batch, scratch results
 * for the pieces of long audio (chunk.c). Nothing here touches the
 * session's result slots or outcome flags: the callers own those. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "util/log.h"

static void init_ctx(const struct transcribe_session *s, tr_run_ctx *ctx,
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
        tr_result_untangle_words(r);
        if (r->oom) {
            TR_ERROR("run: out of memory while building the result");
            return TRANSCRIBE_ERR_OOM;
        }
    }
    return st;
}

transcribe_status tr_run_family(struct transcribe_session *s, const float *pcm, int n,
                                const struct transcribe_run_params *p, tr_result *r,
                                float *detect_prob, const char *where) {
    tr_run_ctx ctx;
    init_ctx(s, &ctx, p, r);
    ctx.detect_only = detect_prob != NULL;
    tr_pool_take_failures(s->pool); /* nothing stale from an earlier call */
    transcribe_status st = s->model->family->run(s->head.fsession, pcm, n, &ctx);
    if (detect_prob) *detect_prob = ctx.language_prob;
    return finish_result(r, tr_session_kernel_status(s, st, where));
}

transcribe_status tr_run_family_joined(struct transcribe_session *s, const tr_vad_join *vj,
                                       const struct transcribe_run_params *p, tr_result *r,
                                       float *detect_prob, const char *where) {
    /* No speech: the family still runs, on a short quiet clip, so that the
     * empty result keeps the run's timestamp kind and timings; its text and
     * rows are then dropped. */
    bool no_speech = vj->n == 0;
    int n_quiet = 0;
    const float *quiet = tr_vad_quiet_pcm(&n_quiet);
    transcribe_status st = tr_run_family(s, no_speech ? quiet : vj->pcm,
                                         no_speech ? n_quiet : vj->n, p, r, detect_prob, where);
    if (no_speech && st == TRANSCRIBE_OK) tr_vad_empty_result(r);
    tr_vad_join_remap(vj, r);
    return st;
}

static bool abort_requested(const struct transcribe_session *s) {
    return s->abort_cb && s->abort_cb(s->abort_user_data);
}

/* Sequential fallback: each utterance through family->run. Per the
 * upstream contract only OK utterances keep rows/text. */
static transcribe_status run_sequential(struct transcribe_session *s, const float *const *pcm,
                                        const int *n_samples, int n,
                                        const struct transcribe_run_params *p, tr_result *rs) {
    for (int i = 0; i < n; i++) {
        tr_result *r = &rs[i];
        tr_log_latest_take(NULL, 0); /* nothing before this utterance is its reason */
        if (abort_requested(s)) {
            for (int j = i; j < n; j++) rs[j].status = TRANSCRIBE_ERR_ABORTED;
            return TRANSCRIBE_ERR_ABORTED;
        }
        if (!pcm[i] || n_samples[i] <= 0) {
            TR_ERROR("transcribe_run_batch: utterance %d has %s", i,
                     pcm[i] ? "n_samples <= 0" : "NULL pcm");
            r->status = TRANSCRIBE_ERR_INVALID_ARG;
            tr_result_take_error(r);
            continue;
        }
        transcribe_status st =
            tr_run_family(s, pcm[i], n_samples[i], p, r, NULL, "transcribe_run_batch");
        float mel = r->mel_ms, enc = r->encode_ms, dec = r->decode_ms;
        if (st == TRANSCRIBE_ERR_OOM || st == TRANSCRIBE_ERR_BACKEND) {
            TR_ERROR("transcribe_run_batch: utterance %d: %s", i, transcribe_status_string(st));
            return st;
        }
        if (st != TRANSCRIBE_OK) {
            char why[TR_RESULT_ERROR_CAP]; /* the run's own settle may have kept it */
            memcpy(why, r->error, sizeof why);
            tr_result_clear(r);
            memcpy(r->error, why, sizeof why);
        }
        r->status = st;
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            r->error[0] = '\0';
        else if (st != TRANSCRIBE_OK)
            tr_result_take_error(r);
        r->mel_ms = mel;
        r->encode_ms = enc;
        r->decode_ms = dec;
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
            TR_WARN("transcribe_run_batch: utterance %d output truncated", i);
        }
        if (st == TRANSCRIBE_ERR_ABORTED) {
            for (int j = i + 1; j < n; j++) rs[j].status = TRANSCRIBE_ERR_ABORTED;
            return TRANSCRIBE_ERR_ABORTED;
        }
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_run_family_batch(struct transcribe_session *s, const float *const *pcm,
                                      const int *n_samples, int n,
                                      const struct transcribe_run_params *p, tr_result *rs) {
    const tr_family *fam = s->model->family;
    if (!fam->run_batch) return run_sequential(s, pcm, n_samples, n, p, rs);
    tr_run_ctx *ctxs = calloc((size_t)n, sizeof *ctxs);
    if (!ctxs) {
        TR_ERROR("transcribe_run_batch: out of memory");
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < n; i++) init_ctx(s, &ctxs[i], p, &rs[i]);
    tr_pool_take_failures(s->pool);
    transcribe_status st = fam->run_batch(s->head.fsession, pcm, n_samples, n, ctxs);
    st = tr_session_kernel_status(s, st, "transcribe_run_batch");
    for (int i = 0; i < n; i++) rs[i].status = finish_result(&rs[i], rs[i].status);
    free(ctxs);
    return st;
}

transcribe_status tr_session_kernel_status(struct transcribe_session *s, transcribe_status st,
                                           const char *where) {
    int failed = tr_pool_take_failures(s->pool);
    if (!failed || (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED &&
                    st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED))
        return st;
    transcribe_status k = failed & TR_POOL_FAIL_OOM ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_ERR_BACKEND;
    TR_ERROR("%s: a compute kernel failed during the run (%s); the output is not usable", where,
             tr_status_string(k));
    return k;
}
