/* The Moonshine Streaming family vtable (src/core/family.h): offline runs,
 * lockstep batches and native streaming (mss_stream.c). */
#include "models/moonshine_streaming/mss.h"
#include "transcribe/moonshine_streaming.h"

TR_FAMILY_ADAPTERS(mss)

/* docs/c-api.md §13.2: the decoder context is max_position_embeddings (the
 * session n_ctx is ignored, docs/formats/moonshine_streaming.md §8). */
static void fam_get_limits(void *session, struct transcribe_session_limits *out) {
    const mss_session *s = session;
    out->effective_n_ctx = s->m->hp.max_pos;
    out->effective_max_audio_ms = s->m->max_audio_ms;
    out->max_kv_bytes = (int64_t)tr_nn_kv_bytes(&s->kv);
}

/* docs/formats/moonshine_streaming.md §8: the stream slot's MSST kind only. */
static bool fam_accepts_ext_kind(uint32_t kind, int slot) {
    return slot == TRANSCRIBE_EXT_SLOT_STREAM &&
           kind == TRANSCRIBE_EXT_KIND_MOONSHINE_STREAMING_STREAM;
}

static transcribe_status fam_validate_stream(void *model, const struct transcribe_ext *ext) {
    return tr_mss_validate_stream(model, ext);
}

static transcribe_status fam_stream_begin(void *session, tr_stream_ctx *ctx) {
    return tr_mss_stream_begin(session, ctx);
}

static transcribe_status fam_stream_feed(void *session, const float *pcm, int n,
                                         tr_stream_ctx *ctx) {
    return tr_mss_stream_feed(session, pcm, n, ctx);
}

static transcribe_status fam_stream_finalize(void *session, tr_stream_ctx *ctx) {
    return tr_mss_stream_finalize(session, ctx);
}

static void fam_stream_reset(void *session) {
    tr_mss_stream_reset(session);
}

const tr_family tr_family_moonshine_streaming = {
    .arch = "moonshine_streaming",
    TR_FAMILY_ADAPTED_HOOKS,
    .get_limits = fam_get_limits,
    .accepts_ext_kind = fam_accepts_ext_kind,
    .validate_stream = fam_validate_stream,
    .stream_begin = fam_stream_begin,
    .stream_feed = fam_stream_feed,
    .stream_finalize = fam_stream_finalize,
    .stream_reset = fam_stream_reset,
};
