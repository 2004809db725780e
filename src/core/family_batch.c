/* The per-utterance bookkeeping of a family's batched run (core/family.h):
 * the same steps in every family whose run_batch finishes utterances one
 * at a time and marks what an abort left unfinished. */
#include "core/family.h"
#include "util/log.h"

void tr_run_batch_finish(tr_run_ctx *ctxs, bool *done, int i, transcribe_status st) {
    /* a truncated utterance keeps its text, as a single run does */
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        tr_result_clear(ctxs[i].result);
    tr_run_settle(&ctxs[i], st);
    done[i] = true;
}

bool tr_run_batch_input_ok(const char *who, const float *const *pcm, const int *n_samples, int i,
                           tr_run_ctx *ctxs, bool *done) {
    if (pcm[i] && n_samples[i] > 0) return true;
    TR_ERROR("%s: batch utterance %d has %s", who, i, pcm[i] ? "n_samples <= 0" : "NULL pcm");
    tr_run_batch_finish(ctxs, done, i, TRANSCRIBE_ERR_INVALID_ARG);
    return false;
}

void tr_run_batch_abort_rest(tr_run_ctx *ctxs, bool *done, int n) {
    for (int i = 0; i < n; i++)
        if (!done[i]) tr_run_batch_finish(ctxs, done, i, TRANSCRIBE_ERR_ABORTED);
}

void tr_run_group_finish(void *grp, int i, transcribe_status st) {
    const tr_run_group *g = grp;
    tr_run_batch_finish(g->ctxs, g->done, i, st);
}

transcribe_status tr_run_batch_groups(const tr_run_groups *g, void *user, const float *const *pcm,
                                      const int *n_samples, int n, tr_run_ctx *ctxs) {
    const int cap = n < g->max_n ? n : g->max_n;
    bool *done = calloc((size_t)n, sizeof *done);
    int *idx = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *idx);
    if (!done || !idx) {
        free(done);
        free(idx);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = TRANSCRIBE_OK;
    for (int i = 0; st == TRANSCRIBE_OK && i < n; i++) {
        const transcribe_status u =
            g->gate ? g->gate(user, i, pcm[i], n_samples[i]) : TRANSCRIBE_OK;
        if (u != TRANSCRIBE_OK) {
            tr_run_batch_finish(ctxs, done, i, u);
            continue;
        }
        if (!g->alone || !g->alone(user, n_samples[i])) continue;
        if (tr_run_should_abort(&ctxs[i])) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        const transcribe_status r = g->run_alone(user, pcm[i], n_samples[i], &ctxs[i]);
        if (r == TRANSCRIBE_ERR_OOM || r == TRANSCRIBE_ERR_BACKEND)
            st = r;
        else
            tr_run_batch_finish(ctxs, done, i, r);
        if (r == TRANSCRIBE_ERR_ABORTED) st = r;
    }
    for (int i = 0; st == TRANSCRIBE_OK && i < n;) {
        int k = 0, frames = 0; /* the next group */
        for (; i < n && k < cap; i++) {
            if (done[i]) continue;
            const int f = g->frames(user, n_samples[i]);
            if (k > 0 && frames + f > g->max_frames) break;
            idx[k++] = i;
            frames += f;
        }
        if (k == 0) break;
        const tr_run_group grp = {pcm, n_samples, ctxs, done, idx, k};
        st = tr_run_should_abort(&ctxs[idx[0]]) ? TRANSCRIBE_ERR_ABORTED : g->run(user, &grp);
    }
    if (st == TRANSCRIBE_ERR_ABORTED) tr_run_batch_abort_rest(ctxs, done, n);
    free(done);
    free(idx);
    return st;
}

void tr_run_batch_settle(void *ctxs, int i, transcribe_status st, float decode_ms) {
    tr_run_ctx *ctx = (tr_run_ctx *)ctxs + i;
    tr_run_settle(ctx, st);
    if (decode_ms >= 0) ctx->result->decode_ms = decode_ms;
}

void tr_family_no_limits(void *session, struct transcribe_session_limits *out) {
    (void)session;
    out->effective_n_ctx = 0;
    out->effective_max_audio_ms = 0;
    out->max_kv_bytes = 0;
}
