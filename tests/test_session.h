/* Test kit: a session opened on a model file with the few parameters tests
 * vary (threads, context, KV type), and a CHECK that it opened, naming the
 * file and the status; a run with a language hint. Include after test_util.h. */
#ifndef TR_TESTS_TEST_SESSION_H
#define TR_TESTS_TEST_SESSION_H

#include <stddef.h>

#include "test_util.h"
#include "transcribe.h"

/* transcribe_open(path) with n_threads, n_ctx (0: the model's) and kv; NULL
 * (and a failed CHECK) when it does not open. */
static inline struct transcribe_session *tr_test_open(const char *path, int n_threads, int n_ctx,
                                                      transcribe_kv_type kv) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = n_threads;
    sp.n_ctx = n_ctx;
    sp.kv_type = kv;
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(path, NULL, &sp, &s);
    CHECK_MSG(st == TRANSCRIBE_OK, "open %s: %s", path, transcribe_status_string(st));
    return s;
}

/* transcribe_run with the default parameters but for the language hint lang (NULL: none). */
static inline transcribe_status tr_test_run_lang(struct transcribe_session *s, const float *pcm,
                                                 int n, const char *lang) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = lang;
    return transcribe_run(s, pcm, n, &p);
}

#endif
