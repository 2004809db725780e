/* The batched run of an audio-LLM family (causal_lm_batch.h). */
#include <stdlib.h>

#include "nn/causal_lm_batch.h"
#include "util/timer.h"

/* Prepares every utterance until the batch stops; st[i] gets utterance
 * i's preparation status. Returns OK, OOM or ABORTED. */
static transcribe_status prepare_all(const tr_clm_batch_job *job, tr_clm_batch_row *rows, int n,
                                     transcribe_status *st, int *n_valid, int *n_ctx) {
    for (int i = 0; i < n; i++) {
        tr_clm_batch_row *row = &rows[i];
        transcribe_status e = job->hooks->prepare(job, i, row);
        if (e == TRANSCRIBE_OK) {
            row->out = malloc((size_t)(row->max_new > 0 ? row->max_new : 1) * sizeof *row->out);
            if (!row->out) e = TRANSCRIBE_ERR_OOM;
        }
        st[i] = e;
        if (e != TRANSCRIBE_OK) {
            job->hooks->settle(job->ctxs, i, e, -1.0f);
            free(row->x);
            row->x = NULL;
            if (e == TRANSCRIBE_ERR_OOM || e == TRANSCRIBE_ERR_ABORTED) return e;
            continue;
        }
        if (row->max_n_kv > *n_ctx) *n_ctx = row->max_n_kv;
        (*n_valid)++;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_clm_decode_batch(tr_clm_session *ds, const tr_clm_batch_job *job, int n) {
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    tr_clm_batch_row *rows = calloc((size_t)n, sizeof *rows);
    transcribe_status *prep = calloc((size_t)n, sizeof *prep); /* OK: not reached */
    if (!rows || !prep) {
        free(rows);
        free(prep);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < n; i++) rows[i].slot = -1; /* not decoded (yet) */
    if (job->pool) ds->pool = job->pool;
    int n_valid = 0, n_ctx = 0;
    transcribe_status st = prepare_all(job, rows, n, prep, &n_valid, &n_ctx);
    double t0 = tr_time_ms(), prefill_ms = 0;
    if (st == TRANSCRIBE_OK && n_valid > 0) {
        tr_clm_greedy_cfg cfg = job->cfg;
        cfg.should_abort = job->hooks->should_abort;
        cfg.abort_user = job->ctxs;
        st = tr_clm_run_batch(ds->lm, ds->pool, &cfg, rows, n, n_ctx, &prefill_ms);
    }
    ds->prefill_ms = prefill_ms;
    const float dec_ms = n_valid ? (float)((tr_time_ms() - t0) / n_valid) : 0.0f;
    const bool decoded = st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED;
    for (int i = 0; i < n; i++) {
        tr_clm_batch_row *row = &rows[i];
        if (decoded && row->x && row->slot >= 0) {
            transcribe_status e = job->hooks->fill(job, i, row);
            job->hooks->settle(job->ctxs, i, e != TRANSCRIBE_OK ? e : row->status, dec_ms);
        } else if (st == TRANSCRIBE_ERR_ABORTED && prep[i] == TRANSCRIBE_OK) {
            job->hooks->settle(job->ctxs, i, TRANSCRIBE_ERR_ABORTED, -1.0f);
        }
        free(row->x);
        free(row->out);
    }
    free(rows);
    free(prep);
    return st;
}
