/* Whisper's own public entry points (include/transcribe/whisper.h): chunk
 * traces of the latest run, asked of the session's family through the
 * ext_query hook (core/ext_query.h), so a session of a family that keeps
 * no traces reports none. */
#include <string.h>

#include "core/abi.h"
#include "core/ext_query.h"
#include "transcribe/whisper.h"
#include "util/log.h"

static int query(const struct transcribe_session *session, uint32_t what, int i, void *out) {
    if (!session) return -1;
    const tr_session_head *h = tr_session_head_of(session);
    if (!h->family || !h->family->ext_query) return -1;
    return h->family->ext_query(h->fsession, what, i, out);
}

static int chunk_count(const struct transcribe_session *session) {
    int n = query(session, TR_QUERY_WHISPER_CHUNK_COUNT, 0, NULL);
    return n > 0 ? n : 0;
}

TRANSCRIBE_API int transcribe_get_whisper_chunk_count(const struct transcribe_session *session) {
    return chunk_count(session);
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
    if (i >= 0 && i < chunk_count(session)) {
        if (query(session, TR_QUERY_WHISPER_CHUNK_TRACE, i, &t) != 1) memset(&t, 0, sizeof t);
        t.struct_size = sizeof t;
    }
    tr_copy_out(out_trace, &t, sizeof t);
    return TRANSCRIBE_OK;
}
