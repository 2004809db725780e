/* The Voxtral Realtime family vtable (src/core/family.h): offline runs, lockstep batches and
 * native streaming (vxr_stream.c). */
#include "models/voxtral_realtime/vxr.h"
#include "transcribe/voxtral_realtime.h"

TR_FAMILY_ADAPTERS(vxr)

/* docs/c-api.md §13.2; docs/formats/voxtral_realtime.md §8: the session n_ctx is ignored and
 * nothing is bounded but the decoder's positions, so every limit reads 0 (unbounded). */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    (void)session;
    out->effective_n_ctx = 0;
    out->effective_max_audio_ms = 0;
    out->max_kv_bytes = 0;
}

/* docs/formats/voxtral_realtime.md §8: the stream slot's VRST kind only. */
static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_STREAM &&
           kind == TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM;
}

static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    return tr_vxr_validate_stream(model, ext);
}

static transcribe_status fam_stream_begin(void *session, tr_stream_ctx *ctx) {
    return tr_vxr_stream_begin(session, ctx);
}

static transcribe_status fam_stream_feed(void *session, const float *pcm, int n,
                                         tr_stream_ctx *ctx) {
    return tr_vxr_stream_feed(session, pcm, n, ctx);
}

static transcribe_status fam_stream_finalize(void *session, tr_stream_ctx *ctx) {
    return tr_vxr_stream_finalize(session, ctx);
}

static void fam_stream_reset(void *session) {
    tr_vxr_stream_reset(session);
}

TR_CLM_STAGES_HOOK(vxr_session, -1, -1)

const tr_family tr_family_voxtral_realtime = {
    .arch = "voxtral_realtime",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
    .stream_begin = fam_stream_begin,
    .stream_feed = fam_stream_feed,
    .stream_finalize = fam_stream_finalize,
    .stream_reset = fam_stream_reset,
    .lm_stages = fam_lm_stages,
};
