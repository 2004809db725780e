/* The MOSS family vtable (src/core/family.h). */
#include "models/moss/moss.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(ms)

/* docs/c-api.md §13.2 basis of docs/formats/moss.md §9: (n_ctx − prompt overhead − 256 reserve)
 * audio tokens of 80 ms; KV bytes for one utterance at the context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const ms_session *s = session;
    const ms_model *m = s->m;
    int64_t tokens = (int64_t)s->dec.ceiling - m->n_prefix - m->n_suffix - MS_GEN_RESERVE;
    int64_t ms_per_tok = (int64_t)m->mel.hop_length * 2 * m->merge * 1000 / m->mel.sample_rate;
    tr_clm_session_limits(&s->dec, &m->lm, tokens * ms_per_tok, out);
}

/* Tool hooks (transcribe-bench): the Whisper encoder per 30 s chunk (the
 * adaptor is small and not counted); the decoder and the encoder / adaptor
 * split of the latest run. */
static bool fam_enc_cost(const struct gguf_file *f, int64_t n, tr_enc_cost *out, const char **why) {
    return tr_enc_cost_whisper(f, "moss", 0, (long)n, out, why);
}

TR_CLM_STAGES_HOOK(ms_session, s->enc_ms, s->adaptor_ms)

const tr_family tr_family_moss = {
    .arch = "moss",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
