/* Test kit: a session opened on a model file with the few parameters tests
 * vary (threads, context, KV type), and a CHECK that it opened, naming the
 * file and the status; a run with a language hint. Include after test_util.h. */
#ifndef TR_TESTS_TEST_SESSION_H
#define TR_TESTS_TEST_SESSION_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* What a run left in its session: the status it returned, the full text
 * and the token ids (for comparing runs bit for bit). */
typedef struct tr_test_run_out {
    transcribe_status st;
    char *text;
    int n_tok, *ids;
} tr_test_run_out;

static inline tr_test_run_out tr_test_run_take(struct transcribe_session *s, transcribe_status st) {
    tr_test_run_out o = {st, NULL, 0, NULL};
    const char *t = transcribe_full_text(s);
    o.text = strdup(t ? t : "");
    o.n_tok = transcribe_n_tokens(s);
    o.ids = calloc((size_t)(o.n_tok > 0 ? o.n_tok : 1), sizeof(int));
    for (int i = 0; o.ids && i < o.n_tok; i++) {
        struct transcribe_token tk;
        transcribe_token_init(&tk);
        if (transcribe_get_token(s, i, &tk) == TRANSCRIBE_OK) o.ids[i] = tk.id;
    }
    return o;
}

/* Whether two runs gave the same status, text and ids. */
static inline bool tr_test_run_same(const tr_test_run_out *a, const tr_test_run_out *b) {
    return a->st == b->st && a->text && b->text && strcmp(a->text, b->text) == 0 &&
           a->n_tok == b->n_tok && a->ids && b->ids &&
           !memcmp(a->ids, b->ids, sizeof(int) * (size_t)a->n_tok);
}

static inline void tr_test_run_out_free(tr_test_run_out *o) {
    free(o->text);
    free(o->ids);
    o->text = NULL;
    o->ids = NULL;
}

#endif
