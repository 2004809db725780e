/* The Canary family vtable (src/core/family.h). */
#include "models/canary/canary.h"

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

const tr_family tr_family_canary = {
    .arch = "canary",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
};
