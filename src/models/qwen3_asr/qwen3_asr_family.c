/* The Qwen3-ASR family vtable (src/core/family.h). */
#include "models/qwen3_asr/qwen3_asr.h"

static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc) {
    qa_model *m = NULL;
    transcribe_status st = qa_model_load(lc, &m);
    *out_model = m;
    if (st == TRANSCRIBE_OK) qa_model_describe(m, desc);
    return st;
}

static void fam_free_model(void *model) {
    qa_model_free(model);
}

static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    qa_session *s = NULL;
    transcribe_status st = qa_session_create(model, cfg, &s);
    *out = s;
    return st;
}

static void fam_session_free(void *session) {
    qa_session_free(session);
}

static transcribe_status fam_validate_run(void *model, const struct transcribe_run_params *p) {
    return qa_validate_run(model, p);
}

static transcribe_status fam_run(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    return qa_run(session, pcm, n_samples, ctx);
}

static transcribe_status fam_run_batch(void *session, const float *const *pcm, const int *n_samples,
                                       int n, tr_run_ctx *ctxs) {
    return qa_run_batch(session, pcm, n_samples, n, ctxs);
}

/* c-api.md §13.2, decoder-bound: (n_ctx − 48 prompt − 256 reserve) audio
 * tokens of 80 ms; KV bytes for one utterance at the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const qa_session *s = session;
    const qa_model *m = s->m;
    int64_t tokens = (int64_t)s->ceiling - 48 - QA_MAX_NEW;
    out->effective_n_ctx = s->ceiling;
    out->effective_max_audio_ms = tokens > 0 ? tokens * 80 : 0;
    out->max_kv_bytes = (int64_t)tr_clm_kv_bytes_per_pos(&m->lm, s->kv_f16) * s->ceiling;
}

const tr_family tr_family_qwen3_asr = {
    .arch = "qwen3_asr",
    .load = fam_load,
    .free_model = fam_free_model,
    .session_init = fam_session_init,
    .session_free = fam_session_free,
    .validate_run = fam_validate_run,
    .run = fam_run,
    .get_limits = fam_get_limits,
    .run_batch = fam_run_batch,
};
