/* Shared helpers of the Parakeet tests: golden paths, text files, audio,
 * public-API sessions, and GGUF rewriting (to make broken model files from
 * a good tiny one). */
#ifndef TR_TEST_PK_TEST_H
#define TR_TEST_PK_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test_files.h"
#include "tensor/dtype.h"
#include "transcribe.h"

/* Goldens of tools/ref/parakeet.py; PK_DATA_DIR overrides (development). */
static inline const char *pk_data_dir(void) {
    const char *e = getenv("PK_DATA_DIR");
    return e && *e ? e : TR_SOURCE_DIR "/tests/data/parakeet";
}

static inline void pk_path(char *buf, size_t n, const char *cfg, const char *file) {
    snprintf(buf, n, "%s/%s/%s", pk_data_dir(), cfg, file);
}

/* The keys a test rewrites when it turns an offline file into a streaming
 * one (attention / convolution context, normalisation, capability). */
static inline bool pk_test_streaming_key(const char *k) {
    static const char *const keys[] = {"stt.parakeet.encoder.att_context_style",
                                       "stt.parakeet.encoder.att_context_left",
                                       "stt.parakeet.encoder.att_context_right",
                                       "stt.parakeet.encoder.att_context_size_choices",
                                       "stt.parakeet.encoder.conv_context_left",
                                       "stt.parakeet.encoder.conv_context_right",
                                       "stt.frontend.normalize",
                                       "stt.capability.streaming"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i])) return true;
    return false;
}

static inline bool pk_exists(const char *path) {
    return tr_test_file_exists(path);
}

static inline char *pk_read_text(const char *path) {
    return tr_test_read_text(path, NULL);
}

/* Strips one trailing newline (golden text files end with one). */
static inline void pk_chomp(char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n && s[n - 1] == '\n') s[n - 1] = 0;
}

static inline float *pk_load_wav(const char *name, int *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s.wav", TR_CORPUS_DIR, name);
    tr_audio a;
    if (tr_audio_load_file(path, 16000, &a) != TRANSCRIBE_OK) return NULL;
    *n = (int)a.n;
    return a.pcm;
}

static inline transcribe_status pk_open(const char *path, int n_threads,
                                        struct transcribe_session **s) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = n_threads;
    return transcribe_open(path, NULL, &sp, s);
}

/* ---- GGUF rewriting ---- */

typedef struct pk_rewrite {
    const char *drop_key;      /* KV left out */
    const char *drop_tensor;   /* tensor left out */
    const char *shrink_tensor; /* 1-D F32 tensor written one element short */
    const char *set_str_key;   /* KV (re)written as a string ... */
    const char *set_str_val;   /* ... with this value */
    const char *set_i32_key;   /* KV (re)written as INT32 (a type mismatch for UINT32 keys) */
    int32_t set_i32_val;
    const char *set_true_key; /* KV (re)written as BOOL true */
    const char *arr_keys[3];  /* KVs (re)written as the INT32 array {1, 2} */
    const char *set_u32_key;  /* KV (re)written as UINT32 ... */
    uint32_t set_u32_val;     /* ... with this value */
    const char *strv_keys[2]; /* KVs (re)written as STRING arrays ... */
    const char *const *strv_vals[2];
    int strv_n[2]; /* ... of these values */
} pk_rewrite;

static inline bool pk_rewritten(const pk_rewrite *o, const char *k) {
    if ((o->drop_key && !strcmp(k, o->drop_key)) ||
        (o->set_str_key && !strcmp(k, o->set_str_key)) ||
        (o->set_i32_key && !strcmp(k, o->set_i32_key)) ||
        (o->set_true_key && !strcmp(k, o->set_true_key)))
        return true;
    for (int i = 0; i < 3; i++)
        if (o->arr_keys[i] && !strcmp(k, o->arr_keys[i])) return true;
    if (o->set_u32_key && !strcmp(k, o->set_u32_key)) return true;
    for (int i = 0; i < 2; i++)
        if (o->strv_keys[i] && !strcmp(k, o->strv_keys[i])) return true;
    return false;
}

static inline bool pk_rewrite_file(const char *src, const char *dst, const pk_rewrite *o) {
    gguf_file *g = NULL;
    if (tr_gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++) {
        if (pk_rewritten(o, tr_gguf_key_name(g, i))) continue;
        ok = tr_gguf_writer_copy_kv(w, g, i);
    }
    const int32_t arr[2] = {1, 2};
    for (int i = 0; ok && i < 3; i++)
        if (o->arr_keys[i]) ok = tr_gguf_writer_set_arr_i32(w, o->arr_keys[i], arr, 2);
    if (ok && o->set_true_key) ok = tr_gguf_writer_set_bool(w, o->set_true_key, true);
    if (ok && o->set_str_key) ok = tr_gguf_writer_set_str(w, o->set_str_key, o->set_str_val);
    if (ok && o->set_i32_key) ok = tr_gguf_writer_set_i32(w, o->set_i32_key, o->set_i32_val);
    if (ok && o->set_u32_key) ok = tr_gguf_writer_set_u32(w, o->set_u32_key, o->set_u32_val);
    for (int i = 0; ok && i < 2; i++)
        if (o->strv_keys[i])
            ok = tr_gguf_writer_set_arr_str(w, o->strv_keys[i], o->strv_vals[i],
                                            (size_t)o->strv_n[i]);
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (o->drop_tensor && !strcmp(t->name, o->drop_tensor)) continue;
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (o->shrink_tensor && !strcmp(t->name, o->shrink_tensor) && t->n_dims == 1 &&
            t->type == TR_F32 && ne[0] > 1)
            ne[0]--;
        ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, t->data);
    }
    if (ok) ok = tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

/* docs/formats/parakeet.md §4.5 F16 column: Linear and pointwise-conv weights are F16, everything
 * else (biases, norms, BN stats, pos_bias, the other conv kernels) F32. */
static inline bool pk_f16_bucket(const char *n) {
    size_t l = strlen(n);
    if ((l >= 5 && !strcmp(n + l - 5, ".bias")) || strstr(n, ".norm_") || strstr(n, ".bn.") ||
        strstr(n, "running_") || strstr(n, "pos_bias_"))
        return false;
    if (strstr(n, ".conv.pointwise1.weight") || strstr(n, ".conv.pointwise2.weight")) return true;
    if (strstr(n, ".conv.") && l >= 7 && !strcmp(n + l - 7, ".weight")) return false;
    return true;
}

/* Copy of src with every tensor stored as F32 (to_f16 false) or per the docs/formats/parakeet.md
 * §4.5 F16 column (to_f16 true). The reference files hold F16-representable values, so both
 * directions are exact. */
static inline bool pk_convert_file(const char *src, const char *dst, bool to_f16) {
    gguf_file *g = NULL;
    if (tr_gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++) {
        if (!strcmp(tr_gguf_key_name(g, i), "general.file_type")) continue;
        ok = tr_gguf_writer_copy_kv(w, g, i);
    }
    if (ok) ok = tr_gguf_writer_set_u32(w, "general.file_type", to_f16 ? 1 : 0);
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        int64_t n = tr_tensor_nelements(t);
        float *f = malloc((size_t)n * sizeof(float));
        uint16_t *h = malloc((size_t)n * sizeof(uint16_t));
        ok = f && h && (t->type == TR_F32 || t->type == TR_F16);
        if (ok) {
            tr_dequantize_row(t->type, t->data, f, n);
            bool half = to_f16 && pk_f16_bucket(t->name);
            for (int64_t j = 0; half && j < n; j++) h[j] = tr_f32_to_f16(f[j]);
            ok = tr_gguf_writer_add_tensor(w, t->name, half ? TR_F16 : TR_F32, t->n_dims, t->ne,
                                           half ? (const void *)h : (const void *)f);
        }
        free(f);
        free(h);
    }
    if (ok) ok = tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

/* The model file of `cfg` in `dtype` ("F32" / "F16"): the committed one, or
 * a conversion of the other dtype written under TR_BINARY_DIR. Tests run in
 * parallel share that conversion: it is written to a file of this process's
 * own and renamed into place (atomic), so a test never maps a file another
 * is still writing (which ended in SIGBUS), and one already there and not
 * older than its source is used. */
static inline bool pk_model_file(const char *cfg, const char *dtype, char *out, size_t n) {
    char name[256], other[2048];
    snprintf(name, sizeof name, "parakeet-%s-%s.gguf", cfg, dtype);
    pk_path(out, n, cfg, name);
    if (pk_exists(out)) return true;
    bool want16 = !strcmp(dtype, "F16");
    snprintf(name, sizeof name, "parakeet-%s-%s.gguf", cfg, want16 ? "F32" : "F16");
    pk_path(other, sizeof other, cfg, name);
    if (!pk_exists(other)) return false;
    snprintf(out, n, "%s/parakeet-%s-%s.gguf", TR_BINARY_DIR, cfg, dtype);
    struct stat so, sc;
    if (stat(out, &sc) == 0 && stat(other, &so) == 0 && sc.st_mtime >= so.st_mtime)
        return true; /* converted (whole: renamed into place) since the source changed */
    char tmp[2300];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", out, (long)getpid());
    if (!pk_convert_file(other, tmp, want16)) {
        remove(tmp);
        return false;
    }
    return rename(tmp, out) == 0;
}

/* The first `keep` bytes of src. */
static inline bool pk_truncate_file(const char *src, const char *dst, long keep) {
    FILE *f = fopen(src, "rb");
    if (!f) return false;
    char *buf = malloc((size_t)keep);
    size_t r = buf ? fread(buf, 1, (size_t)keep, f) : 0;
    fclose(f);
    FILE *o = fopen(dst, "wb");
    bool ok = o && buf && fwrite(buf, 1, r, o) == r;
    if (o) fclose(o);
    free(buf);
    return ok;
}

#endif
