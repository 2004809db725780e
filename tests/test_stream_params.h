/* Stream helpers for tests: TU_WINDOW, the parameters that stream a model
 * through the library's window driver (docs/c-api.md §14): the defaults of
 * transcribe_stream_params_init with window_fallback set, so any model with
 * an offline run path streams; tr_stream_texts, a stream's committed and
 * full text; tr_stream_expect_abort, an abort mid-stream. Include after
 * test_util.h. */
#ifndef TR_TEST_STREAM_PARAMS_H
#define TR_TEST_STREAM_PARAMS_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

#define TU_WINDOW                                                                                  \
    (&(struct transcribe_stream_params){.struct_size = sizeof(struct transcribe_stream_params),    \
                                        .commit_policy = TRANSCRIBE_STREAM_COMMIT_AUTO,            \
                                        .window_fallback = true})

/* The committed text of the stream on s into com (cap bytes) and, when full
 * is not NULL, its full text (committed and tentative) into full: a CHECK
 * that the texts could be read. */
static inline void tr_stream_texts(struct transcribe_session *s, char *com, size_t cap, char *full,
                                   size_t fcap) {
    struct transcribe_stream_text t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    CHECK(transcribe_stream_get_text(s, &t) == TRANSCRIBE_OK);
    snprintf(com, cap, "%s", t.committed_text ? t.committed_text : "");
    if (full) snprintf(full, fcap, "%s", t.full_text ? t.full_text : "");
}

static int tr_stream_polls, tr_stream_abort_at;
static inline bool tr_stream_abort_after(void *user) {
    (void)user;
    return ++tr_stream_polls > tr_stream_abort_at;
}

/* The begun stream on s fed pcm (n samples) in 1600-sample pieces with an
 * abort callback that asks to stop after `after` polls: a CHECK that a feed
 * says ABORTED. The callback is then cleared and the stream reset. */
static inline void tr_stream_expect_abort(struct transcribe_session *s, const float *pcm, int n,
                                          int after) {
    tr_stream_polls = 0;
    tr_stream_abort_at = after;
    transcribe_set_abort_callback(s, tr_stream_abort_after, NULL);
    transcribe_status st = TRANSCRIBE_OK;
    for (int at = 0; at < n && st == TRANSCRIBE_OK; at += 1600)
        st = transcribe_stream_feed(s, pcm + at, n - at < 1600 ? n - at : 1600, NULL);
    CHECK(st == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    transcribe_stream_reset(s);
}

#endif
