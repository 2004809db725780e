/* Shared helpers of the GigaAM tests: the tiny reference files
 * (tools/ref/gigaam.py, tests/data/gigaam/tiny), the family loaded through
 * its internal entry points, and the fields of the reference's decode.json
 * a test compares. */
#ifndef TR_TEST_GA_TEST_H
#define TR_TEST_GA_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "golden_json.h"
#include "models/gigaam/gigaam.h"
#include "test_files.h"

#define GA_DIR  TR_SOURCE_DIR "/tests/data/gigaam/tiny"
#define GA_CLIP TR_SOURCE_DIR "/tests/data/gigaam/clip.wav"

/* The reference's cases: variant and dtype ("ctc", "F32") name the file
 * gigaam-v3-<variant>-tiny-ref-<dtype>.gguf and the goldens <variant>_<dtype>_*. */
typedef struct ga_case {
    const char *variant, *dtype;
} ga_case;

static const ga_case k_ga_cases[] = {
    {"ctc", "F32"},     {"ctc", "F16"},      {"ctc", "Q8_0"},      {"rnnt", "F32"},
    {"e2e-ctc", "F16"}, {"e2e-rnnt", "F16"}, {"e2e-rnnt", "Q8_0"},
};
#define GA_N_CASES ((int)(sizeof k_ga_cases / sizeof k_ga_cases[0]))

static inline void ga_case_path(const char *dir, const char *config, const ga_case *c, char *out,
                                size_t cap) {
    snprintf(out, cap, "%s/gigaam-v3-%s-%s-ref-%s.gguf", dir, c->variant, config, c->dtype);
}

typedef struct ga_loaded {
    gguf_file *g;
    ga_model *m;
} ga_loaded;

static inline transcribe_status ga_load_internal(const char *path, ga_loaded *L) {
    memset(L, 0, sizeof *L);
    transcribe_status st = tr_gguf_open(path, &L->g);
    if (st) return st;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    return tr_ga_model_load(&lc, &L->m);
}

static inline void ga_unload_internal(ga_loaded *L) {
    tr_ga_model_free(L->m);
    tr_gguf_close(L->g);
}

/* One case of decode.json: emitted ids and frames, the text and raw text
 * (UTF-8, copied without escape handling: the reference writes none). */
typedef struct ga_golden {
    int32_t ids[256], frames[256];
    int n_ids, n_frames;
    char text[1024], raw[1024];
} ga_golden;

static inline bool ga_golden_load(const char *dir, const char *which, ga_golden *g) {
    memset(g, 0, sizeof *g);
    g->n_ids = -1;
    char path[512];
    snprintf(path, sizeof path, "%s/decode.json", dir);
    char *js = tr_test_read_text(path, NULL);
    if (!js) return false;
    char pat[192];
    snprintf(pat, sizeof pat, "\"%.160s\": {", which);
    const char *obj = strstr(js, pat);
    if (obj) {
        g->n_ids = tr_json_ints(obj, NULL, "ids", g->ids, 256);
        g->n_frames = tr_json_ints(obj, NULL, "frames", g->frames, 256);
        tr_json_str(obj, NULL, "text", g->text, sizeof g->text);
        tr_json_str(obj, NULL, "raw_text", g->raw, sizeof g->raw);
    }
    free(js);
    return g->n_ids >= 0;
}

#endif
