/* Whisper chunk-trace accessors (include/transcribe/whisper.h). The data
 * lives in the whisper family session; other families report none. */
#include <string.h>

#include "api/api_internal.h"
#include "transcribe/whisper.h"
#include "util/log.h"

TRANSCRIBE_API int transcribe_get_whisper_chunk_count(const struct transcribe_session *session) {
    if (!session || !session->model->family->chunk_trace_count) return 0;
    int n = session->model->family->chunk_trace_count(session->fsession);
    return n > 0 ? n : 0;
}

TRANSCRIBE_API transcribe_status
transcribe_get_whisper_chunk_trace(const struct transcribe_session *session, int i,
                                   struct transcribe_whisper_chunk_trace *out_trace) {
    if (!out_trace) {
        TR_ERROR("transcribe_get_whisper_chunk_trace: out_trace is NULL");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out_trace->struct_size < sizeof *out_trace) {
        TR_ERROR("transcribe_get_whisper_chunk_trace: struct_size %llu < %zu",
                 (unsigned long long)out_trace->struct_size, sizeof *out_trace);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_whisper_chunk_trace t = {0};
    t.struct_size = sizeof t;
    if (session && session->model->family->chunk_trace_get && i >= 0 &&
        i < transcribe_get_whisper_chunk_count(session)) {
        if (!session->model->family->chunk_trace_get(session->fsession, i, &t)) {
            memset(&t, 0, sizeof t);
        }
        t.struct_size = sizeof t;
    }
    tr_api_copy_out(out_trace, &t, sizeof t);
    return TRANSCRIBE_OK;
}
