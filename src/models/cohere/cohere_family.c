/* The Cohere Transcribe family vtable (src/core/family.h). */
#include "models/cohere/cohere.h"
#include "gguf/gguf.h"
#include "nn/enc_cost.h"

TR_FAMILY_ADAPTERS(ch)

/* docs/c-api.md §13.2: encoder-bound, so n_ctx narrows the decoder KV but
 * not the 400 s audio bound (docs/formats/cohere.md §8); KV bytes = K and V
 * of every layer for each of n_ctx positions. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const ch_session *s = session;
    const ch_model *m = s->m;
    out->effective_n_ctx = s->n_ctx;
    out->effective_max_audio_ms = m->max_audio_ms;
    out->max_kv_bytes = (int64_t)tr_nn_kv_bytes(&s->kv);
}

/* Tool hook (transcribe-bench): one FastConformer pass, enc_dec_proj and
 * the decoder's cross K/V, all inside the timed encode stage. */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
    out->family = "cohere";
    return tr_enc_cost_fced(g, "stt.cohere.encoder.", n,
                            tr_enc_cost_u32(g, "stt.cohere.decoder.hidden_size", 0),
                            tr_enc_cost_u32(g, "stt.cohere.decoder.n_layers", 0), true, out, why);
}

/* Tool hook (transcribe-bench's step probe): the decoder of the latest
 * single run, one row at its final position over its cache and cross K/V. */
static bool fam_ed_probe(void *session, tr_ed_probe *out) {
    ch_session *s = session;
    if (s->last_T_enc < 1) return false;
    static const int32_t id = 0;
    int pos = CH_PROMPT + (s->n_last > 0 ? s->n_last - 1 : 0);
    if (pos >= s->n_ctx) pos = s->n_ctx - 1;
    const ch_model *m = s->m;
    *out = (tr_ed_probe){.dec = &m->decoder,
                         .seq = tr_fced_seq(&m->fced, &s->enc, &s->kv, &id, 1, pos, s->last_T_enc),
                         .x = s->dec_x,
                         .scratch = s->dec_scratch,
                         .logits = s->logits};
    return true;
}

const tr_family tr_family_cohere = {
    .arch = "cohere_asr",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
    .ed_probe = fam_ed_probe,
};
