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
#include "models/gigaam/gigaam.h"

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

static inline char *ga_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* One case of decode.json: emitted ids and frames, the text and raw text
 * (UTF-8, copied without escape handling: the reference writes none). */
typedef struct ga_golden {
    int32_t ids[256], frames[256];
    int n_ids, n_frames;
    char text[1024], raw[1024];
} ga_golden;

static inline void ga_json_str(const char *obj, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(obj, pat);
    out[0] = '\0';
    if (!p) return;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != '"') return;
    size_t n = 0;
    for (p++; *p && *p != '"' && n + 1 < cap; p++) out[n++] = *p;
    out[n] = '\0';
}

static inline int ga_json_ints(const char *obj, const char *key, int32_t *out, int cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(obj, pat);
    if (!p) return -1;
    p += strlen(pat);
    int n = 0;
    while (*p && *p != ']' && n < cap) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        out[n++] = (int32_t)v;
        p = end;
    }
    return n;
}

static inline bool ga_golden_load(const char *dir, const char *which, ga_golden *g) {
    memset(g, 0, sizeof *g);
    g->n_ids = -1;
    char path[512];
    snprintf(path, sizeof path, "%s/decode.json", dir);
    char *js = ga_read_text(path);
    if (!js) return false;
    char pat[192];
    snprintf(pat, sizeof pat, "\"%.160s\": {", which);
    const char *obj = strstr(js, pat);
    if (obj) {
        g->n_ids = ga_json_ints(obj, "ids", g->ids, 256);
        g->n_frames = ga_json_ints(obj, "frames", g->frames, 256);
        ga_json_str(obj, "text", g->text, sizeof g->text);
        ga_json_str(obj, "raw_text", g->raw, sizeof g->raw);
    }
    free(js);
    return g->n_ids >= 0;
}

#endif
