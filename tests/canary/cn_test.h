/* Shared helpers of the Canary tests: the reference model paths
 * (tests/data/canary/<config>/, written by tools/ref/canary.py), an
 * internal load (model + single-threaded session) for tests that compare
 * intermediate tensors or generated ids, and small file / array helpers. */
#ifndef TR_TEST_CN_TEST_H
#define TR_TEST_CN_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "gguf/gguf.h"
#include "models/canary/canary.h"
#include "npy.h"
#include "test_files.h"
#include "transcribe.h"

/* TR_CANARY_DATA overrides the folder (e.g. freshly generated goldens). */
static inline const char *cn_data(void) {
    const char *e = getenv("TR_CANARY_DATA");
    return e && *e ? e : TR_SOURCE_DIR "/tests/data/canary";
}

static const char *const cn_configs[] = {"tiny-canary", "tiny-canary2"};
#define CN_N_CONFIGS 2

/* <data>/<config>/<config>-ref-<dt>.gguf */
static inline void cn_model_path(char *buf, size_t n, const char *config, const char *dt) {
    snprintf(buf, n, "%s/%s/%s-ref-%s.gguf", cn_data(), config, config, dt);
}

static inline void cn_golden_path(char *buf, size_t n, const char *config, const char *file) {
    snprintf(buf, n, "%s/%s/%s", cn_data(), config, file);
}

static inline bool cn_file_exists(const char *path) {
    return tr_test_file_exists(path);
}

/* Whole file as a NUL-terminated string with trailing newlines removed. */
static inline char *cn_read_text(const char *path) {
    size_t r = 0;
    char *s = tr_test_read_text(path, &r);
    if (!s) return NULL;
    while (r > 0 && (s[r - 1] == '\n' || s[r - 1] == '\r')) r--;
    s[r] = 0;
    return s;
}

typedef struct cn_loaded {
    gguf_file *g;
    cn_model *m;
    cn_session *s;
} cn_loaded;

static inline bool cn_load_internal(const char *path, transcribe_kv_type kv, int n_ctx,
                                    cn_loaded *L) {
    memset(L, 0, sizeof *L);
    if (tr_gguf_open(path, &L->g) != TRANSCRIBE_OK) return false;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    if (tr_cn_model_load(&lc, &L->m) != TRANSCRIBE_OK) return false;
    tr_session_cfg cfg = {.n_threads = 1, .kv_type = kv, .n_ctx = n_ctx};
    return tr_cn_session_create(L->m, &cfg, &L->s) == TRANSCRIBE_OK;
}

static inline void cn_unload_internal(cn_loaded *L) {
    tr_cn_session_free(L->s);
    tr_cn_model_free(L->m);
    tr_gguf_close(L->g);
    memset(L, 0, sizeof *L);
}

/* One internal run with the given params; the result's full text is copied
 * into text (may be NULL). */
static inline transcribe_status cn_run_internal(cn_loaded *L, const float *pcm, int n,
                                                const struct transcribe_run_params *p, char *text,
                                                size_t cap, bool *truncated) {
    tr_result res;
    tr_result_init(&res);
    tr_run_ctx ctx = {.params = p, .result = &res};
    transcribe_status st = tr_cn_run(L->s, pcm, n, &ctx);
    if (text && cap) snprintf(text, cap, "%s", tr_result_full_text(&res));
    if (truncated) *truncated = ctx.truncated;
    tr_result_free(&res);
    return st;
}

/* ids[0..n) equal to an int32 .npy golden. */
static inline bool cn_ids_equal(const char *npy, const int32_t *ids, int n) {
    npy_array a;
    if (npy_load(npy, &a) != 0) return false;
    bool ok = a.n == n && (n == 0 || memcmp(a.data, ids, (size_t)n * sizeof(int32_t)) == 0);
    if (!ok) {
        fprintf(stderr, "  ids differ from %s: got %d [", npy, n);
        for (int i = 0; i < n; i++) fprintf(stderr, "%s%d", i ? "," : "", ids[i]);
        fprintf(stderr, "], want %lld [", (long long)a.n);
        for (int64_t i = 0; i < a.n; i++)
            fprintf(stderr, "%s%d", i ? "," : "", ((const int32_t *)a.data)[i]);
        fprintf(stderr, "]\n");
    }
    npy_free(&a);
    return ok;
}

static inline double cn_max_abs_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        if (d < 0) d = -d;
        if (!(d <= m)) m = d; /* NaN propagates as a huge difference */
    }
    return m;
}

#endif
