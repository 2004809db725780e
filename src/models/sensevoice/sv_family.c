/* The SenseVoice family vtable (src/core/family.h): offline runs; a batch
 * runs each utterance on its own (run_batch NULL: the dispatcher's serial
 * path), which gives every utterance exactly its single-run result. */
#include "models/sensevoice/sensevoice.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"

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

/* Tool hook (transcribe-bench): one encoder pass over T = T_lfr + 4 rows
 * (docs/formats/sensevoice.md §4–§5; nn/enc_cost.h counts the SAN-M stack),
 * then the CTC head. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    const int64_t win = tr_enc_cost_u32(g, "stt.frontend.win_length", 400),
                  hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160),
                  lfr_n = tr_enc_cost_u32(g, "stt.frontend.lfr_n", 6);
    if (win <= 0 || hop <= 0 || lfr_n <= 0) {
        *why = "missing sensevoice front-end keys";
        return false;
    }
    if (n < win) {
        *why = "input shorter than one frame";
        return false;
    }
    const int64_t frames = 1 + (n - win) / hop, T_lfr = (frames + lfr_n - 1) / lfr_n;
    if (!tr_enc_cost_sanm(g, "stt.sensevoice.encoder.", T_lfr + 4, out, why)) return false;
    const int64_t tk = tr_gguf_find_key(g, "tokenizer.ggml.tokens");
    const double V = tk >= 0 ? (double)tr_gguf_kv_arr_n(g, tk) : 0; /* the CTC head's rows */
    out->family = "sensevoice";
    out->gflop += 2.0 * (double)(T_lfr + 4) * out->gemm_k * V * 1e-9;
    return true;
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
    .enc_cost = fam_enc_cost,
};
