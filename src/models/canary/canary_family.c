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
    out->max_kv_bytes = (int64_t)tr_nn_kv_bytes(&s->kv);
}

/* Tool hook (transcribe-bench): the FastConformer encoder in one pass, the
 * encoder→decoder projection, and the decoder's cross K/V, projected
 * inside the timed encode stage (4·T·d_src·d_dec per decoder layer). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    bool proj = false;
    tr_gguf_get_bool(g, "stt.canary.decoder.encoder_decoder_proj", &proj);
    out->family = "canary";
    return tr_enc_cost_fced(g, "stt.canary.encoder.", n,
                            tr_enc_cost_u32(g, "stt.canary.decoder.d_model", 0),
                            tr_enc_cost_u32(g, "stt.canary.decoder.n_layers", 0), proj, out, why);
}

const tr_family tr_family_canary = {
    .arch = "canary",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
};
