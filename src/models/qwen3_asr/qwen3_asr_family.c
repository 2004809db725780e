/* The Qwen3-ASR family vtable (src/core/family.h). */
#include "models/qwen3_asr/qwen3_asr.h"

TR_FAMILY_ADAPTERS(qa)

static transcribe_status fam_run_batch(void *session, const float *const *pcm, const int *n_samples,
                                       int n, tr_run_ctx *ctxs) {
    return tr_qa_run_batch(session, pcm, n_samples, n, ctxs);
}

/* c-api.md §13.2, decoder-bound: (n_ctx − 48 prompt − 256 reserve) audio
 * tokens of 80 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const qa_session *s = session;
    const qa_model *m = s->m;
    int64_t tokens = (int64_t)s->dec.ceiling - 48 - QA_MAX_NEW;
    out->effective_n_ctx = s->dec.ceiling;
    out->effective_max_audio_ms = tokens > 0 ? tokens * 80 : 0;
    out->max_kv_bytes = (int64_t)tr_clm_kv_bytes_per_pos(&m->lm, s->dec.kv_f16) * s->dec.ceiling;
}

const tr_family tr_family_qwen3_asr = {
    .arch = "qwen3_asr",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .run_batch = fam_run_batch,
};
