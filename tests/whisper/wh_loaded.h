/* Loads a Whisper GGUF through the family's internal entry points (for tests
 * that compare intermediate tensors): one model and one single-threaded F32
 * KV session. Shared by the parity and synthetic-model tests. */
#ifndef TR_TEST_WH_LOADED_H
#define TR_TEST_WH_LOADED_H

#include <stdbool.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/whisper/whisper.h"

typedef struct loaded {
    gguf_file *g;
    wh_model *m;
    wh_session *s;
} loaded;

static inline bool load_internal(const char *path, loaded *L) {
    memset(L, 0, sizeof *L);
    if (tr_gguf_open(path, &L->g) != TRANSCRIBE_OK) return false;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    if (tr_wh_model_load(&lc, &L->m) != TRANSCRIBE_OK) return false;
    tr_session_cfg cfg = {.n_threads = 1, .kv_type = TRANSCRIBE_KV_TYPE_F32};
    return tr_wh_session_create(L->m, &cfg, &L->s) == TRANSCRIBE_OK;
}

static inline void unload_internal(loaded *L) {
    tr_wh_session_free(L->s);
    tr_wh_model_free(L->m);
    tr_gguf_close(L->g);
}

#endif
