/* The SenseVoice family vtable (src/core/family.h): offline runs; a batch
 * runs each utterance on its own (run_batch NULL: the dispatcher's serial
 * path), which gives every utterance exactly its single-run result. */
#include "models/sensevoice/sensevoice.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    sv_model *m = NULL;
    transcribe_status st = tr_sv_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) tr_sv_model_describe(m, desc);
    return st;
}

static void fam_free_model(void *model) {
    tr_sv_model_free(model);
}

static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    sv_session *s = NULL;
    transcribe_status st = tr_sv_session_create(model, cfg, &s);
    *out = s;
    return st;
}

static void fam_session_free(void *session) {
    tr_sv_session_free(session);
}

static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return tr_sv_validate_run(model, p);
}

static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return tr_sv_run(session, pcm, n_samples, ctx);
}

const tr_family tr_family_sensevoice = {
    .arch = "sensevoice",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = tr_family_no_limits, /* docs/formats/sensevoice.md §7: n_ctx has no effect */
};
