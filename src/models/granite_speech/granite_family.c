/* The Granite Speech family vtable (src/core/family.h). */
#include "models/granite_speech/granite.h"

TR_FAMILY_ADAPTERS(gs)

static transcribe_status fam_run_batch(void *session, const float *const *pcm, const int *n_samples,
                                       int n, tr_run_ctx *ctxs) {
    return tr_gs_run_batch(session, pcm, n_samples, n, ctxs);
}

/* c-api.md §13.2, decoder-bound (§9): (n_ctx − 64 − 256) / 3 windows of
 * 300 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gs_session *s = session;
    const gs_model *m = s->m;
    int64_t windows = ((int64_t)s->dec.ceiling - 64 - GS_MAX_NEW) / m->proj.n_query;
    out->effective_n_ctx = s->dec.ceiling;
    out->effective_max_audio_ms =
        windows > 0 ? windows * m->proj.window * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    out->max_kv_bytes = (int64_t)tr_clm_kv_bytes_per_pos(&m->lm, s->dec.kv_f16) * s->dec.ceiling;
}

const tr_family tr_family_granite_speech = {
    .arch = "granite_speech",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .run_batch = fam_run_batch,
};
