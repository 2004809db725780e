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
#include "models/sensevoice/sensevoice.h"

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

static inline char *sv_read_text(const char *path) {
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

/* The object of decode.json named `which` ("F32_auto_woitn", ...): its
 * "ids" into ids (returns the count, -1 when absent) and its "text",
 * "raw_text" and "detected_language" strings (copied without escapes; the
 * tiny vocabulary's text is ASCII; "" for null). */
typedef struct sv_golden {
    int32_t ids[256];
    int n_ids;
    char text[512], raw[512], lang[16];
} sv_golden;

static inline const char *sv_json_str(const char *obj, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(obj, pat);
    out[0] = '\0';
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != '"') return out; /* null */
    size_t n = 0;
    for (p++; *p && *p != '"' && n + 1 < cap; p++) out[n++] = *p;
    out[n] = '\0';
    return out;
}

static inline bool sv_golden_load(const char *which, sv_golden *g) {
    memset(g, 0, sizeof *g);
    g->n_ids = -1;
    char *js = sv_read_text(SV_DIR "/decode.json");
    if (!js) return false;
    char pat[192];
    snprintf(pat, sizeof pat, "\"%.160s\": {", which);
    const char *obj = strstr(js, pat);
    const char *ids = obj ? strstr(obj, "\"ids\": [") : NULL;
    if (ids) {
        const char *p = ids + 8;
        g->n_ids = 0;
        while (*p && *p != ']' && g->n_ids < 256) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            g->ids[g->n_ids++] = (int32_t)v;
            p = end;
        }
        sv_json_str(obj, "text", g->text, sizeof g->text);
        sv_json_str(obj, "raw_text", g->raw, sizeof g->raw);
        sv_json_str(obj, "detected_language", g->lang, sizeof g->lang);
    }
    free(js);
    return g->n_ids >= 0;
}

#endif
