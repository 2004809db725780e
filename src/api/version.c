/* Status strings, version and ABI metadata (docs/c-api.md §2.1, §3). */
#include <stdalign.h>

#include "core/status.h"
#include "transcribe/extensions.h"

#ifndef TR_GIT_COMMIT
#define TR_GIT_COMMIT "unknown"
#endif

TRANSCRIBE_API const char *transcribe_status_string(int status) {
    return tr_status_string(status);
}

TRANSCRIBE_API const char *transcribe_version(void) {
    return TRANSCRIBE_VERSION;
}

TRANSCRIBE_API const char *transcribe_version_commit(void) {
    return TR_GIT_COMMIT;
}

/* One table drives both size and alignment so the two cannot disagree. */
#define ABI_ROW(id, type) [id] = {sizeof(type), alignof(type)}
static const struct {
    size_t size, align;
} k_abi[] = {
    ABI_ROW(TRANSCRIBE_ABI_MODEL_LOAD_PARAMS, struct transcribe_model_load_params),
    ABI_ROW(TRANSCRIBE_ABI_SESSION_PARAMS, struct transcribe_session_params),
    ABI_ROW(TRANSCRIBE_ABI_RUN_PARAMS, struct transcribe_run_params),
    ABI_ROW(TRANSCRIBE_ABI_STREAM_PARAMS, struct transcribe_stream_params),
    ABI_ROW(TRANSCRIBE_ABI_CAPABILITIES, struct transcribe_capabilities),
    ABI_ROW(TRANSCRIBE_ABI_TIMINGS, struct transcribe_timings),
    ABI_ROW(TRANSCRIBE_ABI_SEGMENT, struct transcribe_segment),
    ABI_ROW(TRANSCRIBE_ABI_WORD, struct transcribe_word),
    ABI_ROW(TRANSCRIBE_ABI_TOKEN, struct transcribe_token),
    ABI_ROW(TRANSCRIBE_ABI_STREAM_UPDATE, struct transcribe_stream_update),
    ABI_ROW(TRANSCRIBE_ABI_STREAM_TEXT, struct transcribe_stream_text),
    ABI_ROW(TRANSCRIBE_ABI_SESSION_LIMITS, struct transcribe_session_limits),
    ABI_ROW(TRANSCRIBE_ABI_EXT, struct transcribe_ext),
    ABI_ROW(TRANSCRIBE_ABI_DEVICE_INFO, struct transcribe_device_info),
    ABI_ROW(TRANSCRIBE_ABI_SPEAKER_SEGMENT, struct transcribe_speaker_segment),
    ABI_ROW(TRANSCRIBE_ABI_BACKEND_DEVICE, struct transcribe_backend_device),
};

TRANSCRIBE_API size_t transcribe_abi_struct_size(transcribe_abi_struct which) {
    int i = (int)which;
    if (i < 0 || i >= (int)(sizeof k_abi / sizeof k_abi[0])) return 0;
    return k_abi[i].size;
}

TRANSCRIBE_API size_t transcribe_abi_struct_align(transcribe_abi_struct which) {
    int i = (int)which;
    if (i < 0 || i >= (int)(sizeof k_abi / sizeof k_abi[0])) return 0;
    return k_abi[i].align;
}
