/* The Qwen3-ASR family vtable (src/core/family.h). */
#include "models/qwen3_asr/qwen3_asr.h"

TR_FAMILY_ADAPTERS(qa)

/* docs/c-api.md §13.2, decoder-bound: (n_ctx − 48 prompt − 256 reserve) audio
 * tokens of 80 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const qa_session *s = session;
    const qa_model *m = s->m;
    int64_t tokens = (int64_t)s->dec.ceiling - 48 - QA_MAX_NEW;
    tr_clm_session_limits(&s->dec, &m->lm, tokens * 80, out);
}

const tr_family tr_family_qwen3_asr = {
    .arch = "qwen3_asr",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
};
