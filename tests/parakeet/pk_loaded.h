/* Loads a Parakeet GGUF through the family's internal entry points and runs
 * it into a plain tr_result (tests that need the session's internals: the
 * window geometry, buffer sizes). */
#ifndef TR_TEST_PK_LOADED_H
#define TR_TEST_PK_LOADED_H

#include <stdbool.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/parakeet/parakeet.h"

typedef struct pk_loaded {
    gguf_file *g;
    pk_model *m;
    pk_session *s;
    tr_pool *pool;
} pk_loaded;

static inline bool pk_load_internal(const char *path, int n_threads, pk_loaded *L) {
    memset(L, 0, sizeof *L);
    if (tr_gguf_open(path, &L->g) != TRANSCRIBE_OK) return false;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    if (tr_pk_model_load(&lc, &L->m) != TRANSCRIBE_OK) return false;
    L->pool = tr_pool_create(n_threads);
    tr_session_cfg cfg = {.n_threads = n_threads, .pool = L->pool};
    return tr_pk_session_create(L->m, &cfg, &L->s) == TRANSCRIBE_OK;
}

static inline void pk_unload_internal(pk_loaded *L) {
    tr_pk_session_free(L->s);
    tr_pk_model_free(L->m);
    tr_pool_free(L->pool);
    tr_gguf_close(L->g);
}

/* Runs with default params (or p) into res (initialised by the caller). */
static inline transcribe_status pk_run_internal(pk_loaded *L, const float *pcm, int n,
                                                const struct transcribe_run_params *p,
                                                tr_result *res) {
    struct transcribe_run_params def;
    transcribe_run_params_init(&def);
    tr_run_ctx ctx = {.params = p ? p : &def, .pool = L->pool, .result = res};
    tr_result_clear(res);
    return tr_pk_run(L->s, pcm, n, &ctx);
}

#endif
