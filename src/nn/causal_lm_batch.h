/* The batched run of an audio-LLM family around the shared LM (docs/c-api.md
 * §11; docs/formats/causal-lm.md §8): every utterance prepared one at a time (front
 * end, encoder, prompt embeddings: the family's part), then one batched
 * prefill and the batched step loop for all of them, then each result
 * filled and its status settled. The bookkeeping between those steps
 * (rows, output buffers, which status an utterance ends with, the decode
 * time shared out) is the same for every such family and lives here once. */
#ifndef TR_NN_CAUSAL_LM_BATCH_H
#define TR_NN_CAUSAL_LM_BATCH_H

#include "nn/causal_lm.h"

typedef struct tr_clm_batch_job tr_clm_batch_job;

/* What the family does per utterance. */
typedef struct tr_clm_batch_hooks {
    /* Utterance i: sets row->x (malloc'ed prompt embeddings), T, max_new
     * (>= 1) and max_n_kv, and returns OK; or returns the utterance's own
     * status (it is not decoded; an x it left is freed). OOM or ABORTED
     * also stop the batch. The family polls its abort hook here. */
    transcribe_status (*prepare)(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row);
    /* Decoded utterance i: its result from row->out[0..n_out) (the row's
     * status says how decoding ended). Non-OK becomes its status. */
    transcribe_status (*fill)(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row);
    /* Records utterance i's status; decode_ms >= 0 for a decoded one (its
     * share of the batch's decode time), < 0 otherwise. */
    void (*settle)(void *ctxs, int i, transcribe_status st, float decode_ms);
    /* The batch's abort poll, given the contexts (polled once per step). */
    bool (*should_abort)(void *ctxs);
} tr_clm_batch_hooks;

struct tr_clm_batch_job {
    const tr_clm_batch_hooks *hooks;
    /* eos and repetition guard for every row (the per-row max_new /
     * max_n_kv come from prepare, the abort poll from the hooks) */
    tr_clm_greedy_cfg cfg;
    tr_pool *pool; /* the batch's pool (NULL: the session's); kept as the session's */
    /* what the hooks read: the family session, the batch's audio, the
     * dispatcher's per-utterance contexts (core's tr_run_ctx array, opaque
     * here) and anything else the family keeps for the batch */
    void *session;
    const float *const *pcm;
    const int *n_samples;
    void *ctxs;
    const void *extra;
};

/* Runs the batch of n utterances on the session's decoder state
 * (ds->prefill_ms gets the batched prefill's time). An utterance never
 * reached before an abort ends ABORTED; one whose preparation failed keeps
 * that status. Returns the whole-batch status: OK, ABORTED, OOM, or
 * INVALID_ARG for n < 1. */
transcribe_status tr_clm_decode_batch(tr_clm_session *ds, const tr_clm_batch_job *job, int n);

#endif
