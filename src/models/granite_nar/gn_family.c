/* The Granite Speech NAR family vtable (src/core/family.h). No run_batch: a batch runs its
 * utterances one after another through run (the dispatcher's serial loop), as upstream. */
#include "models/granite_nar/granite_nar.h"
#include "nn/enc_cost.h"

TR_FAMILY_SERIAL_ADAPTERS(gn)

/* docs/c-api.md §13.2 (docs/formats/granite_nar.md §8): the context ceiling; the audio it
 * leaves, floor((ceiling − 256) / n_query) windows of block·2·hop samples; no KV cache. */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const gn_session *s = session;
    const gn_model *m = s->m;
    const int64_t windows = ((int64_t)s->ceiling - 256) / m->proj.n_query;
    out->effective_n_ctx = s->ceiling;
    out->effective_max_audio_ms =
        windows > 0 ? windows * m->proj.block * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    out->max_kv_bytes = 0;
}

/* Tool hook (transcribe-bench): the Conformer (nn/enc_cost.h) plus the BPE-CTC head on the
 * pooled windows (gn_encode.c pools the hidden state before the head). */
static bool fam_enc_cost(const struct gguf_file *g, int64_t n, tr_enc_cost *out, const char **why) {
#define EK "stt.granite_nar.encoder."
    if (!tr_enc_cost_granite(g, EK, n, out, why)) return false;
    const double d = tr_enc_cost_u32(g, EK "hidden", 0),
                 V = tr_enc_cost_u32(g, EK "bpe_output_dim", 0);
    const double P = tr_enc_cost_u32(g, EK "bpe_pool_window", 4);
#undef EK
    out->gflop += 2 * (out->frames / (P > 0 ? P : 1) + 1) * d * V * 1e-9;
    out->family = "granite_nar";
    return true;
}

const tr_family tr_family_granite_nar = {
    .arch = "granite_speech_nar",
    TR_FAMILY_SERIAL_HOOKS,
    .get_limits = fam_get_limits,
    .enc_cost = fam_enc_cost,
};
