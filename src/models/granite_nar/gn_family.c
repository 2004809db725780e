/* The Granite Speech NAR family vtable (src/core/family.h). No run_batch: a batch runs its
 * utterances one after another through run (the dispatcher's serial loop), as upstream. */
#include "models/granite_nar/granite_nar.h"
#include "nn/enc_cost.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    gn_model *m = NULL;
    transcribe_status st = tr_gn_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) tr_gn_model_describe(m, desc);
    return st;
}
static void fam_free_model(void *model) {
    tr_gn_model_free(model);
}
static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    gn_session *s = NULL;
    transcribe_status st = tr_gn_session_create(model, cfg, &s);
    *out = s;
    return st;
}
static void fam_session_free(void *session) {
    tr_gn_session_free(session);
}
static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return tr_gn_validate_run(model, p);
}
static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return tr_gn_run(session, pcm, n_samples, ctx);
}

/* docs/c-api.md §13.2 (docs/formats/granite_nar.md §8): the context ceiling; the audio it
 * leaves, floor((ceiling − 256) / n_query) windows of block·2·hop samples; no KV cache. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gn_session *s = session;
    const gn_model *m = s->m;
    const int64_t windows = ((int64_t)s->ceiling - 256) / m->proj.n_query;
    out->effective_n_ctx = s->ceiling;
    out->effective_max_audio_ms =
        windows > 0 ? windows * m->proj.block * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    out->max_kv_bytes = 0;
}

/* Tool hook (transcribe-bench): the Conformer (nn/enc_cost.h) plus the BPE-CTC head on the
 * pooled windows (gn_encode.c pools the hidden state before the head). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define EK "stt.granite_nar.encoder."
    if (!tr_enc_cost_granite(g, EK, n, out, why)) return false;
    const double d = tr_enc_cost_u32(g, EK "hidden", 0),
                 V = tr_enc_cost_u32(g, EK "bpe_output_dim", 0);
    const double P = tr_enc_cost_u32(g, EK "bpe_pool_window", 4);
#undef EK
    out->gflop += 2 * (out->frames / (P > 0 ? P : 1) + 1) * d * V * 1e-9;
    out->family = "granite_nar";
    return true;
}

const tr_family tr_family_granite_nar = {
    .arch = "granite_speech_nar",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
};
