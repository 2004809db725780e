/* Per-handle error messages: the text of the last failed call on a session
 * or a model, beside the process-wide log sink that also receives it. */
#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"

static void keep(char *dst, transcribe_status st, const char *captured) {
    if (captured && captured[0])
        snprintf(dst, TR_LAST_ERROR_CAP, "%s", captured);
    else
        snprintf(dst, TR_LAST_ERROR_CAP, "%s", tr_status_string(st));
}

void tr_api_note_session_error(struct transcribe_session *s, transcribe_status st,
                               const char *captured) {
    if (!s || st == TRANSCRIBE_OK) return;
    keep(s->last_error, st, captured);
}

void tr_api_note_model_error(struct transcribe_model *m, transcribe_status st,
                             const char *captured) {
    if (!m || st == TRANSCRIBE_OK) return;
    /* calloc'ed models start with a clear flag (all-zero is ATOMIC_FLAG_INIT). */
    while (atomic_flag_test_and_set_explicit(&m->error_lock, memory_order_acquire)) {
    }
    keep(m->last_error, st, captured);
    atomic_flag_clear_explicit(&m->error_lock, memory_order_release);
}

TRANSCRIBE_API const char *transcribe_session_last_error(const struct transcribe_session *session) {
    return session ? session->last_error : "";
}

TRANSCRIBE_API const char *transcribe_model_last_error(const struct transcribe_model *model) {
    return model ? model->last_error : "";
}
