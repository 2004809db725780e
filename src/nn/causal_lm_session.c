/* The decoder half of an audio-LLM session (causal_lm.h): one place for the
 * context ceiling, the KV type rule and the state / logits buffers that
 * every family decoding with the shared LM sets up the same way. */
#include <stdlib.h>
#include <string.h>

#include "nn/causal_lm.h"
#include "util/log.h"
#include "util/vec.h"

transcribe_status tr_clm_session_init(tr_clm_session *ds, const char *who, const tr_clm_hparams *hp,
                                      const tr_clm_weights *w, int max_pos, tr_pool *pool,
                                      int n_ctx, transcribe_kv_type kv_type) {
    memset(ds, 0, sizeof *ds);
    ds->pool = pool;
    ds->ceiling = n_ctx > 0 && n_ctx < max_pos ? n_ctx : max_pos;
    ds->kv_f16 = kv_type != TRANSCRIBE_KV_TYPE_F32;
    ds->lm = tr_clm_state_new(hp, w, ds->kv_f16);
    ds->last_logits = malloc((size_t)hp->n_vocab * sizeof(float));
    if (!ds->lm || !ds->last_logits) {
        TR_ERROR("%s: out of memory allocating a session", who);
        tr_clm_session_release(ds);
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

void tr_clm_session_release(tr_clm_session *ds) {
    if (!ds) return;
    tr_clm_state_free(ds->lm);
    free(ds->last_logits);
    ds->lm = NULL;
    ds->last_logits = NULL;
}

void tr_clm_session_limits(const tr_clm_session *ds, const tr_clm_hparams *hp, int64_t audio_ms,
                           struct transcribe_session_limits *out) {
    out->effective_n_ctx = ds->ceiling;
    out->effective_max_audio_ms = audio_ms > 0 ? audio_ms : 0;
    out->max_kv_bytes = (int64_t)tr_clm_kv_bytes_per_pos(hp, ds->kv_f16) * ds->ceiling;
}

transcribe_status tr_clm_session_reserve(tr_clm_session *ds, int n_ctx, int32_t **ids, int *cap,
                                         int budget) {
    transcribe_status st = tr_clm_reserve(ds->lm, 1, n_ctx);
    if (st != TRANSCRIBE_OK) return st;
    int32_t *p = tr_grow_int(*ids, cap, budget, sizeof *p, 0);
    if (!p) return TRANSCRIBE_ERR_OOM;
    *ids = p;
    return TRANSCRIBE_OK;
}
