/* The Parakeet family vtable (src/core/family.h). Offline runs only: the
 * streaming geometry is advertised per §7.8 but there are no stream hooks,
 * so the dispatcher answers NOT_IMPLEMENTED to a stream request. */
#include "models/parakeet/parakeet.h"

TR_FAMILY_ADAPTERS(pk)

static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    (void)session;
    out->effective_n_ctx = 0; /* §10.1: the context knob has no effect */
    out->effective_max_audio_ms = 0;
    out->max_kv_bytes = 0;
}

static transcribe_status fam_run_batch(void *session, const float *const *pcm, const int *n_samples,
                                       int n, tr_run_ctx *ctxs) {
    return pk_run_batch(session, pcm, n_samples, n, ctxs);
}

const tr_family tr_family_parakeet = {
    .arch = "parakeet",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .run_batch = fam_run_batch,
};
