/* The Granite Speech family vtable (src/core/family.h). */
#include "models/granite_speech/granite.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    gs_model *m = NULL;
    transcribe_status st = gs_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) gs_model_describe(m, desc);
    return st;
}

static void fam_free_model(void *model) {
    gs_model_free(model);
}

static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    gs_session *s = NULL;
    transcribe_status st = gs_session_create(model, cfg, &s);
    *out = s;
    return st;
}

static void fam_session_free(void *session) {
    gs_session_free(session);
}

static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return gs_validate_run(model, p);
}

static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return gs_run(session, pcm, n_samples, ctx);
}

/* c-api.md §13.2, decoder-bound (§9): (n_ctx − 64 − 256) / 3 windows of
 * 300 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gs_session *s = session;
    const gs_model *m = s->m;
    int64_t windows = ((int64_t)s->ceiling - 64 - GS_MAX_NEW) / m->proj.n_query;
    out->effective_n_ctx = s->ceiling;
    out->effective_max_audio_ms =
        windows > 0 ? windows * m->proj.window * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    out->max_kv_bytes = (int64_t)tr_clm_kv_bytes_per_pos(&m->lm, s->kv_f16) * s->ceiling;
}

const tr_family tr_family_granite_speech = {
    .arch = "granite_speech",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = fam_get_limits,
};
