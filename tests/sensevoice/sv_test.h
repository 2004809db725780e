/* Shared helpers of the SenseVoice tests: the tiny reference files, the
 * family loaded through its internal entry points, and the few fields of
 * the reference's decode.json (tools/ref/sensevoice.py) a test compares. */
#ifndef TR_TEST_SV_TEST_H
#define TR_TEST_SV_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "golden_json.h"
#include "models/sensevoice/sensevoice.h"
#include "test_files.h"

#define SV_DIR  TR_SOURCE_DIR "/tests/data/sensevoice/tiny"
#define SV_CLIP TR_SOURCE_DIR "/tests/data/sensevoice/clip.wav"

typedef struct sv_loaded {
    gguf_file *g;
    sv_model *m;
} sv_loaded;

static inline transcribe_status sv_load_internal(const char *path, sv_loaded *L) {
    memset(L, 0, sizeof *L);
    transcribe_status st = tr_gguf_open(path, &L->g);
    if (st) return st;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    return tr_sv_model_load(&lc, &L->m);
}

static inline void sv_unload_internal(sv_loaded *L) {
    tr_sv_model_free(L->m);
    tr_gguf_close(L->g);
}

/* The object of decode.json named `which` ("F32_auto_woitn", ...): its
 * "ids" into ids (returns the count, -1 when absent) and its "text",
 * "raw_text" and "detected_language" strings (copied without escapes; the
 * tiny vocabulary's text is ASCII; "" for null). */
typedef struct sv_golden {
    int32_t ids[256];
    int n_ids;
    char text[512], raw[512], lang[16];
} sv_golden;

static inline bool sv_golden_load(const char *which, sv_golden *g) {
    memset(g, 0, sizeof *g);
    g->n_ids = -1;
    char *js = tr_test_read_text(SV_DIR "/decode.json", NULL);
    if (!js) return false;
    char pat[192];
    snprintf(pat, sizeof pat, "\"%.160s\": {", which);
    const char *obj = strstr(js, pat);
    if (obj) g->n_ids = tr_json_ints(obj, NULL, "ids", g->ids, 256);
    if (g->n_ids >= 0) {
        tr_json_str(obj, NULL, "text", g->text, sizeof g->text);
        tr_json_str(obj, NULL, "raw_text", g->raw, sizeof g->raw);
        tr_json_str(obj, NULL, "detected_language", g->lang, sizeof g->lang);
    }
    free(js);
    return g->n_ids >= 0;
}

#endif
