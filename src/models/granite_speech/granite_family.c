/* The Granite Speech family vtable (src/core/family.h). */
#include "models/granite_speech/granite.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(gs)

/* docs/c-api.md §13.2, decoder-bound (docs/formats/granite_speech.md §9): (n_ctx − 64 − 256) / 3
 * windows of 300 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gs_session *s = session;
    const gs_model *m = s->m;
    int64_t windows = ((int64_t)s->dec.ceiling - 64 - GS_MAX_NEW) / m->proj.n_query;
    int64_t ms_per_window = (int64_t)m->proj.window * 2 * m->mel.hop_length * 1000;
    tr_clm_session_limits(&s->dec, &m->lm, windows * ms_per_window / m->mel.sample_rate, out);
}

/* ---- tool hooks (transcribe-bench) ---- */

/* Granite Speech Conformer (docs/formats/granite_speech.md §6.1) on n samples. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    if (!tr_enc_cost_granite(g, "stt.granite.encoder.", n, out, why)) return false;
    out->family = "granite_speech";
    return true;
}

TR_CLM_STAGES_HOOK(gs_session, s->encode_ms, s->proj_ms)

const tr_family tr_family_granite_speech = {
    .arch = "granite_speech",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
