/* Init functions of every public struct and family extension (docs/c-api.md §6,
 * §7), and transcribe_ext_check. Inits zero-fill, write the non-zero
 * defaults and stamp the library's sizeof; all are no-ops on NULL. */
#include <string.h>

#include "api/api_internal.h"
#include "core/abi.h"
#include "transcribe/extensions.h"

#define STAMP(p)                                                                                   \
    do {                                                                                           \
        memset((p), 0, sizeof *(p));                                                               \
        (p)->struct_size = sizeof *(p);                                                            \
    } while (0)

#define STAMP_EXT(p, k)                                                                            \
    do {                                                                                           \
        memset((p), 0, sizeof *(p));                                                               \
        (p)->ext.size = sizeof *(p);                                                               \
        (p)->ext.kind = (k);                                                                       \
    } while (0)

TRANSCRIBE_API void transcribe_model_load_params_init(struct transcribe_model_load_params *p) {
    if (!p) return;
    STAMP(p);
    p->backend = TRANSCRIBE_BACKEND_AUTO;
    p->device = NULL;
    p->gpu_device = 0;
}

TRANSCRIBE_API void transcribe_session_params_init(struct transcribe_session_params *p) {
    if (!p) return;
    STAMP(p);
    p->n_threads = 0;
    p->kv_type = TRANSCRIBE_KV_TYPE_AUTO;
    p->n_ctx = 0;
}

TRANSCRIBE_API void transcribe_run_params_init(struct transcribe_run_params *p) {
    if (!p) return;
    STAMP(p);
    p->task = TRANSCRIBE_TASK_TRANSCRIBE;
    p->timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
    p->pnc = TRANSCRIBE_PNC_MODE_DEFAULT;
    p->itn = TRANSCRIBE_ITN_MODE_DEFAULT;
    p->diarize = TRANSCRIBE_DIARIZE_MODE_DEFAULT;
    p->language = NULL;
    p->target_language = NULL;
    p->keep_special_tags = false;
    p->family = NULL;
    p->spec_k_drafts = -1;
    p->vocabulary = NULL;
    p->n_vocabulary = 0;
}

TRANSCRIBE_API void transcribe_stream_params_init(struct transcribe_stream_params *p) {
    if (!p) return;
    STAMP(p);
    p->family = NULL;
    p->commit_policy = TRANSCRIBE_STREAM_COMMIT_AUTO;
    p->stable_prefix_agreement_n = 0;
    p->window_fallback = false;
}

/* ---- output structs ---- */

TRANSCRIBE_API void transcribe_capabilities_init(struct transcribe_capabilities *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_session_limits_init(struct transcribe_session_limits *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_timings_init(struct transcribe_timings *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_stream_update_init(struct transcribe_stream_update *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_stream_text_init(struct transcribe_stream_text *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_segment_init(struct transcribe_segment *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_word_init(struct transcribe_word *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_token_init(struct transcribe_token *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_speaker_segment_init(struct transcribe_speaker_segment *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_piece_init(struct transcribe_piece *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_device_info_init(struct transcribe_device_info *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_backend_device_init(struct transcribe_backend_device *p) {
    if (p) STAMP(p);
}
TRANSCRIBE_API void transcribe_whisper_chunk_trace_init(struct transcribe_whisper_chunk_trace *p) {
    if (p) STAMP(p);
}

/* ---- family extensions ---- */

TRANSCRIBE_API void transcribe_whisper_run_ext_init(struct transcribe_whisper_run_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_WHISPER_RUN);
    e->initial_prompt = NULL;
    e->prompt_tokens = NULL;
    e->n_prompt_tokens = 0;
    e->prompt_condition = TRANSCRIBE_WHISPER_PROMPT_FIRST_SEGMENT;
    e->condition_on_prev_tokens = false;
    e->max_prev_context_tokens = 223;
    e->temperature = 0.0f;
    e->temperature_inc = 0.2f;
    e->compression_ratio_thold = 2.4f;
    e->logprob_thold = -1.0f;
    e->no_speech_thold = 0.6f;
    e->seed = 0;
    e->max_initial_timestamp = 1.0f;
}

TRANSCRIBE_API void
transcribe_sortformer_stream_ext_init(struct transcribe_sortformer_stream_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_SORTFORMER_STREAM);
    e->preset = TRANSCRIBE_SORTFORMER_PRESET_DEFAULT;
}

TRANSCRIBE_API void transcribe_parakeet_stream_ext_init(struct transcribe_parakeet_stream_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_PARAKEET_STREAM);
    e->att_context_right = -1;
}

TRANSCRIBE_API void
transcribe_parakeet_buffered_stream_ext_init(struct transcribe_parakeet_buffered_stream_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM);
    e->left_ms = -1;
    e->chunk_ms = -1;
    e->right_ms = -1;
}

TRANSCRIBE_API void transcribe_moonshine_streaming_stream_ext_init(
    struct transcribe_moonshine_streaming_stream_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_MOONSHINE_STREAMING_STREAM);
    e->min_decode_interval_ms = -1;
}

TRANSCRIBE_API void
transcribe_voxtral_realtime_stream_ext_init(struct transcribe_voxtral_realtime_stream_ext *e) {
    if (!e) return;
    STAMP_EXT(e, TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM);
    e->num_delay_tokens = -1;
    e->min_decode_interval_ms = -1;
}

TRANSCRIBE_API transcribe_status transcribe_ext_check(const struct transcribe_ext *ext,
                                                      uint32_t expected_kind, uint64_t min_size) {
    return tr_ext_check(ext, expected_kind, min_size);
}
