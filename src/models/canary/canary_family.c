/* The Canary family vtable (src/core/family.h). */
#include "models/canary/canary.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    cn_model *m = NULL;
    transcribe_status st = cn_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) cn_model_describe(m, desc);
    return st;
}

static void fam_free_model(void *model) {
    cn_model_free(model);
}

static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    cn_session *s = NULL;
    transcribe_status st = cn_session_create(model, cfg, &s);
    *out = s;
    return st;
}

static void fam_session_free(void *session) {
    cn_session_free(session);
}

static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return cn_validate_run(model, p);
}

static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return cn_run(session, pcm, n_samples, ctx);
}

/* §13.2: encoder-bound, so n_ctx narrows the decoder KV but not the audio
 * limit; KV bytes = K and V of every layer for each of n_ctx positions. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const cn_session *s = session;
    const cn_model *m = s->m;
    out->effective_n_ctx = s->n_ctx;
    out->effective_max_audio_ms = m->max_audio_ms;
    out->max_kv_bytes =
        (int64_t)2 * m->hp.n_dec_layers * m->hp.d_dec * s->n_ctx * (s->kv_f16 ? 2 : 4);
}

const tr_family tr_family_canary = {
    .arch = "canary",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = fam_get_limits,
};
