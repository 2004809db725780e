/* The session's result slots (api_internal.h): index 0 is the single run's
 * result, 0..n those of a batch; run, stream and the accessors share them. */
#include <stdlib.h>

#include "api/api_internal.h"

bool tr_session_reserve_results(struct transcribe_session *s, int n) {
    if (n <= s->cap_results) return true;
    tr_result *r = realloc(s->results, (size_t)n * sizeof *r);
    if (!r) return false;
    for (int i = s->cap_results; i < n; i++) tr_result_init(&r[i]);
    s->results = r;
    s->cap_results = n;
    return true;
}

void tr_session_clear_results(struct transcribe_session *s) {
    for (int i = 0; i < s->cap_results; i++) tr_result_clear(&s->results[i]);
    s->n_results = 0;
    s->aborted = s->truncated = false;
    s->mel_ms = s->encode_ms = s->decode_ms = 0.0f;
}

const tr_result *tr_session_result(const struct transcribe_session *s) {
    return (s && s->n_results > 0) ? &s->results[0] : NULL;
}

const tr_result *tr_session_batch_result(const struct transcribe_session *s, int i) {
    return (s && i >= 0 && i < s->n_results) ? &s->results[i] : NULL;
}
