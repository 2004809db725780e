/* Session limits (c-api.md §13.2): the family's get_limits, else the
 * model's input limit; the run and stream paths read them internally. */
#include <string.h>

#include "api/api_internal.h"
#include "util/log.h"

TRANSCRIBE_API transcribe_status transcribe_session_get_limits(
    const struct transcribe_session *session, struct transcribe_session_limits *out) {
    if (!session || !out) {
        TR_ERROR("transcribe_session_get_limits: %s is NULL", session ? "out" : "session");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (out->struct_size < TR_MIN_SESSION_LIMITS) {
        TR_ERROR("transcribe_session_get_limits: struct_size %llu < %u",
                 (unsigned long long)out->struct_size, TR_MIN_SESSION_LIMITS);
        return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    }
    struct transcribe_session_limits l;
    tr_session_limits(session, &l);
    tr_copy_out(out, &l, sizeof l);
    return TRANSCRIBE_OK;
}

void tr_session_limits(const struct transcribe_session *s, struct transcribe_session_limits *out) {
    memset(out, 0, sizeof *out);
    if (s->model->family->get_limits) {
        s->model->family->get_limits(s->head.fsession, out);
    } else {
        out->effective_max_audio_ms = s->model->desc.caps.max_audio_ms;
    }
    out->struct_size = sizeof *out;
}
