/* The Canary family vtable (src/core/family.h). */
#include "models/canary/canary.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(cn)

/* docs/c-api.md §13.2: encoder-bound, so n_ctx narrows the decoder KV but not the audio
 * limit; KV bytes = K and V of every layer for each of n_ctx positions. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const cn_session *s = session;
    const cn_model *m = s->m;
    out->effective_n_ctx = s->n_ctx;
    out->effective_max_audio_ms = m->max_audio_ms;
    out->max_kv_bytes =
        (int64_t)2 * m->hp.n_dec_layers * m->hp.d_dec * s->n_ctx * (s->kv_f16 ? 2 : 4);
}

/* Tool hook (transcribe-bench): the FastConformer encoder in one pass, the
 * encoder→decoder projection, and the decoder's cross K/V, projected
 * inside the timed encode stage (4·T·d_src·d_dec per decoder layer). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    tr_fc_hparams hp;
    if (tr_fc_read_hparams(g, "stt.canary.encoder.", TR_FC_KEYS_CANARY, &hp)) {
        *why = "unreadable encoder hyper-parameters";
        return false;
    }
    const int64_t hop = tr_enc_cost_u32(g, "stt.frontend.hop_length", 160);
    if (hop <= 0) {
        *why = "bad hop_length";
        return false;
    }
    long T = 0;
    out->family = "canary";
    out->windows = 1;
    out->gflop = tr_enc_cost_fc_pass(&hp, (long)(n / hop + 1), &T);
    const double d_dec = tr_enc_cost_u32(g, "stt.canary.decoder.d_model", 0);
    if (d_dec > 0) {
        bool proj = false;
        tr_gguf_get_bool(g, "stt.canary.decoder.encoder_decoder_proj", &proj);
        const double d_src = proj ? d_dec : hp.d_model;
        if (proj) out->gflop += 2.0 * T * hp.d_model * d_dec;
        out->gflop +=
            tr_enc_cost_u32(g, "stt.canary.decoder.n_layers", 0) * 4.0 * T * d_src * d_dec;
    }
    out->gflop *= 1e-9;
    out->frames = (int)T;
    out->gemm_k = hp.d_model;
    out->gemm_n = hp.d_ff;
    return true;
}

const tr_family tr_family_canary = {
    .arch = "canary",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
};
