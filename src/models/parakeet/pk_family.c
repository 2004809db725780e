/* The Parakeet family vtable (src/core/family.h). Offline runs only: the
 * streaming geometry is advertised per §7.8 but there are no stream hooks,
 * so the dispatcher answers NOT_IMPLEMENTED to a stream request. */
#include "models/parakeet/parakeet.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    pk_model *m = NULL;
    transcribe_status st = pk_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) pk_model_describe(m, desc);
    return st;
}

static void fam_free_model(void *model) {
    pk_model_free(model);
}

static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    pk_session *s = NULL;
    transcribe_status st = pk_session_create(model, cfg, &s);
    *out = s;
    return st;
}

static void fam_session_free(void *session) {
    pk_session_free(session);
}

static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return pk_run(session, pcm, n_samples, ctx);
}

static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return pk_validate_run(model, p);
}

static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    (void)session;
    out->effective_n_ctx = 0; /* §10.1: the context knob has no effect */
    out->effective_max_audio_ms = 0;
    out->max_kv_bytes = 0;
}

const tr_family tr_family_parakeet = {
    .arch = "parakeet",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = fam_get_limits,
};
