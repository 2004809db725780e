/* Helpers the audio-LLM parity tests share (tests/qwen3_asr,
 * tests/granite_speech, tests/moss, tests/canary_qwen, tests/voxtral, ...)
 * on top of parity.h: golden files by folder and file name (a missing one is
 * a failure), the max-abs error against a golden (with the golden's own
 * largest magnitude), and the tokenizer_cases.txt check (`hex(text) \t ids`
 * per line) through any encoder. Include after test_util.h. */
#ifndef TR_TESTS_LLM_PARITY_H
#define TR_TESTS_LLM_PARITY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "parity.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

/* dir/name as an .npy; a missing golden is a failure (logged). */
static inline bool llm_load_npy(const char *dir, const char *name, npy_array *a) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (npy_load(p, a) != 0) {
        fprintf(stderr, "cannot read %s\n", p);
        tr_test_fail++;
        return false;
    }
    return true;
}

/* dir/name as text (malloc'ed); a missing golden is a failure (logged). */
static inline char *llm_read_golden(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *s = tr_test_read_text(p, NULL);
    if (!s) {
        fprintf(stderr, "cannot read %s\n", p);
        tr_test_fail++;
    }
    return s;
}

/* max |a - b| over n values; *max_ref (optional) gets max |b|. */
static inline double llm_max_abs_diff(const float *a, const float *b, int64_t n, double *max_ref) {
    double e = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        /* written out: GCC 12 aarch64 cannot vectorise fmax(fabs) reductions */
        double d = fabs((double)a[i] - b[i]), r = fabs((double)b[i]);
        if (d > e) e = d;
        if (r > m) m = r;
    }
    if (max_ref) *max_ref = m;
    return e;
}

/* Encodes text into ids (capacity n); the count or < 0. */
typedef int (*llm_encode_fn)(const void *user, const char *text, int32_t *ids, size_t n);

/* llm_encode_fn through the public API; user is the transcribe_model. */
static inline int llm_encode_public(const void *model, const char *text, int32_t *ids, size_t n) {
    return transcribe_tokenize(model, text, ids, n);
}

/* Every case of a tokenizer_cases.txt (`#` lines skipped) through encode;
 * each one a CHECK naming tag. Returns the number of cases. */
static inline int llm_tokenizer_cases(const char *path, llm_encode_fn encode, const void *user,
                                      const char *tag) {
    char *s = tr_test_read_text(path, NULL);
    CHECK_MSG(s != NULL, "cannot read %s", path);
    int n_cases = 0;
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *tab = strchr(line, '\t');
        if (line[0] != '#' && tab) {
            char text[512];
            size_t k = 0;
            for (char *h = line; h + 1 < tab && k + 1 < sizeof text; h += 2) {
                unsigned v;
                sscanf(h, "%2x", &v);
                text[k++] = (char)v;
            }
            text[k] = 0;
            int32_t want[256], got[256];
            int nw = 0;
            for (char *p = tab + 1; *p && nw < 256;) {
                char *e;
                long v = strtol(p, &e, 10);
                if (e == p) break;
                want[nw++] = (int32_t)v;
                p = e;
            }
            int ng = encode(user, text, got, 256);
            CHECK_MSG(ng == nw && memcmp(got, want, sizeof(int32_t) * (size_t)nw) == 0,
                      "%s tokenize case %d", tag, n_cases);
            n_cases++;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(s);
    return n_cases;
}

#endif
