/* The Fun-ASR-Nano family vtable (src/core/family.h). */
#include "models/funasr_nano/funasr_nano.h"

TR_FAMILY_ADAPTERS(fn)

/* docs/c-api.md §13.2 and docs/formats/funasr_nano.md §8, decoder-bound:
 * (n_ctx − 48 prompt − 256 reserve) audio tokens of folds · lfr_n hops (480
 * ms with the low frame rate, 60 ms without); KV bytes for one utterance at
 * the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const fn_session *s = session;
    const fn_model *m = s->m;
    const int64_t tokens = (int64_t)s->dec.ceiling - FN_PROMPT_RESERVE - FN_MAX_NEW;
    const int64_t ms_tok = (m->ad.low_frame_rate ? 8 : 1) * (int64_t)m->mel.lfr_n *
                           m->mel.hop_length * 1000 / m->mel.sample_rate;
    tr_clm_session_limits(&s->dec, &m->lm, tokens * ms_tok, out);
}

TR_CLM_STAGES_HOOK(fn_session, s->enc_ms, s->adaptor_ms)

const tr_family tr_family_funasr_nano = {
    .arch = "funasr_nano",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .lm_stages = fam_lm_stages,
};
