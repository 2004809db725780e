/* Shared helpers of the Parakeet tests: golden paths, text files, audio,
 * public-API sessions, and GGUF rewriting (to make broken model files from
 * a good tiny one). */
#ifndef TR_TEST_PK_TEST_H
#define TR_TEST_PK_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
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

static inline bool pk_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static inline char *pk_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t r = s ? fread(s, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    if (s) s[r] = 0;
    fclose(f);
    return s;
}

/* Strips one trailing newline (golden text files end with one). */
static inline void pk_chomp(char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n && s[n - 1] == '\n') s[n - 1] = 0;
}

static inline float *pk_load_wav(const char *name, int *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s.wav", TR_SHARED_DIR, name);
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
} pk_rewrite;

static inline bool pk_rewrite_file(const char *src, const char *dst, const pk_rewrite *o) {
    gguf_file *g = NULL;
    if (gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < gguf_n_kv(g); i++) {
        const char *k = gguf_key_name(g, i);
        if ((o->drop_key && !strcmp(k, o->drop_key)) ||
            (o->set_str_key && !strcmp(k, o->set_str_key)) ||
            (o->set_i32_key && !strcmp(k, o->set_i32_key)))
            continue;
        ok = gguf_writer_copy_kv(w, g, i);
    }
    if (ok && o->set_str_key) ok = gguf_writer_set_str(w, o->set_str_key, o->set_str_val);
    if (ok && o->set_i32_key) ok = gguf_writer_set_i32(w, o->set_i32_key, o->set_i32_val);
    for (int64_t i = 0; ok && i < gguf_n_tensors(g); i++) {
        const tr_tensor *t = gguf_tensor_at(g, i);
        if (o->drop_tensor && !strcmp(t->name, o->drop_tensor)) continue;
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (o->shrink_tensor && !strcmp(t->name, o->shrink_tensor) && t->n_dims == 1 &&
            t->type == TR_F32 && ne[0] > 1)
            ne[0]--;
        ok = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, t->data);
    }
    if (ok) ok = gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    gguf_writer_free(w);
    gguf_close(g);
    return ok;
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
