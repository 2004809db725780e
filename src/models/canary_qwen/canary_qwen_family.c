/* The Canary-Qwen family vtable (src/core/family.h). */
#include "models/canary_qwen/canary_qwen.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(cq)

/* docs/c-api.md §13.2, decoder-bound (docs/formats/canary_qwen.md §8): (n_ctx − 32
 * prompt − 256 reserve) audio tokens of 80 ms; KV bytes for one utterance at
 * the effective context. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const cq_session *s = session;
    const cq_model *m = s->m;
    int64_t tokens = (int64_t)s->dec.ceiling - CQ_PROMPT_SLACK - CQ_MAX_NEW;
    tr_clm_session_limits(
        &s->dec, &m->lm,
        tokens * m->enc_hp.sub_factor * m->mel.hop_length * 1000 / m->mel.sample_rate, out);
}

/* Tool hook (transcribe-bench): one FastConformer pass over the whole
 * input, then the perception projection to the LM width. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    tr_fc_hparams hp;
    if (tr_fc_read_hparams(g, "stt.canary_qwen.encoder.", TR_FC_KEYS_CANARY, &hp)) {
        *why = "unreadable encoder hyper-parameters";
        return false;
    }
    const int64_t hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    const double h = tr_enc_cost_u32(g, "stt.canary_qwen.decoder.hidden_size", 0);
    if (hop <= 0 || h <= 0) {
        *why = "bad hop_length or hidden_size";
        return false;
    }
    long T = 0;
    out->family = "canary_qwen";
    out->windows = 1;
    out->gflop =
        (tr_enc_cost_fc_pass(&hp, (long)(n / hop + 1), &T) + 2.0 * T * hp.d_model * h) * 1e-9;
    out->frames = (int)T;
    out->gemm_k = hp.d_model;
    out->gemm_n = hp.d_ff;
    return true;
}

TR_CLM_STAGES_HOOK(cq_session, s->enc_ms, s->proj_ms)

const tr_family tr_family_canary_qwen = {
    .arch = "canary_qwen",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .lm_stages = fam_lm_stages,
};
