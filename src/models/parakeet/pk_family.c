/* The Parakeet family vtable (src/core/family.h): offline and batched runs,
 * and native streaming for the cache-aware files (pk_stream.c; begin
 * declines every other file with NOT_IMPLEMENTED). */
#include "models/parakeet/parakeet.h"
#include "transcribe/parakeet.h"

TR_FAMILY_ADAPTERS(pk)

static transcribe_status fam_stream_begin(void *session, tr_stream_ctx *ctx) {
    return tr_pk_stream_begin(session, ctx);
}

static transcribe_status fam_stream_feed(void *session, const float *pcm, int n_samples,
                                         tr_stream_ctx *ctx) {
    return tr_pk_stream_feed(session, pcm, n_samples, ctx);
}

static transcribe_status fam_stream_finalize(void *session, tr_stream_ctx *ctx) {
    return tr_pk_stream_finalize(session, ctx);
}

static void fam_stream_reset(void *session) {
    tr_pk_stream_reset(session);
}

/* Cache-aware files stream natively; every other Parakeet file (offline,
 * unified-en's buffered menu) through the dispatcher's generic driver. */
static bool fam_stream_native(void *model) {
    return tr_pk_stream_native(model);
}

/* c-api.md §7.2 / §7.3: the cache-aware files take the lookahead knob
 * (PKST) on the STREAM slot; nothing else takes an extension. */
static bool fam_model_accepts_ext_kind(void *model, uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_STREAM && kind == TRANSCRIBE_EXT_KIND_PARAKEET_STREAM &&
           tr_pk_stream_native(model);
}

/* Preflight of the stream extension (c-api.md §14.3 step 10). */
static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    int choice = 0;
    return tr_pk_stream_choice(model, ext, &choice);
}

const tr_family tr_family_parakeet = {
    .arch = "parakeet",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = tr_family_no_limits, /* §10.1: the context knob has no effect */
    .stream_begin = fam_stream_begin,
    .stream_feed = fam_stream_feed,
    .stream_finalize = fam_stream_finalize,
    .stream_reset = fam_stream_reset,
    .stream_native = fam_stream_native,
    .model_accepts_ext_kind = fam_model_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
};
