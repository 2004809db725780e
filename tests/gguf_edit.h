/* Test kit for the per-family errors tests: a copy of a GGUF fixture with one
 * edit (a key left out, retyped or given another value, a tensor left out,
 * misshaped or of another type), written to a file or to memory, and
 * expect_load, which loads such a copy and checks its status (and,
 * optionally, that the error log names the key or tensor). Each field of
 * tr_gguf_edit names the key or tensor it acts on (NULL: no such edit); a
 * test fills only what it needs: `&(tr_gguf_edit){.drop_kv = "..."}`.
 * Include after test_util.h. */
#ifndef TR_TESTS_GGUF_EDIT_H
#define TR_TESTS_GGUF_EDIT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

typedef struct tr_gguf_edit {
    /* keys */
    const char *drop_kv;    /* left out */
    const char *retype_kv;  /* UINT32 → INT32 of the same value, any other type → UINT32 1 */
    const char *kv_i32;     /* written as INT32 of its UINT32 value (0 when not UINT32) */
    const char *mistype_kv; /* a STRING → UINT32 7, any other type → STRING "x" */
    const char *kv_as_i32;  /* replaced by the INT32 kv_as_i32_value */
    int32_t kv_as_i32_value;
    const char *kv_u32; /* replaced by the UINT32 kv_u32_value */
    uint32_t kv_u32_value;
    const char *kv_str; /* replaced by the STRING kv_str_value */
    const char *kv_str_value;
    const char *kv_f32; /* replaced by the FLOAT32 kv_f32_value */
    float kv_f32_value;
    const char *kv_bool; /* replaced by the BOOL kv_bool_value */
    bool kv_bool_value;
    const char *kv_arr_i32; /* replaced by the INT32 array kv_arr (kv_arr_n values) */
    const int32_t *kv_arr;
    int kv_arr_n;
    const char *short_arr; /* array (STRING, FLOAT32 or INT32) with its last element dropped */
    bool add_absent;       /* kv_u32 / kv_str / kv_bool / mistype_kv also written when the
                              source lacks the key */
    /* tensors */
    const char *drop_tensor; /* left out */
    const char *bad_shape;   /* last dim one shorter (a 1 becomes 2), same type */
    const char *shorter;     /* last dim one shorter (a 1 becomes 0), same bytes and type */
    const char *longer;      /* last dim one longer, written as F32 (zero padded) */
    const char *to_f16;      /* written as F16 */
    const char *to_q8;       /* written as Q8_0 (as F16 where ne0 is not a multiple of 32) */
    const char *to_type;     /* written as the type to_type_id */
    int to_type_id;
    const char *negate; /* written as F32 −2 everywhere */
    bool extra_tensor;  /* one unknown tensor more, "enc.unknown.extra" */
    /* a family's own rewrite of tensor t (called first for every tensor): returns
       true when it wrote t (setting *ok), false to leave t to the fields above */
    bool (*tensor_hook)(gguf_writer *w, const tr_tensor *t, bool *ok, void *user);
    void *hook_user;
} tr_gguf_edit;

static inline bool tr_edit_is(const char *field, const char *name) {
    return field && strcmp(field, name) == 0;
}

/* t written as type in shape ne (n_dims as t): each row dequantized, cut or
 * zero-padded to ne[0], rows past the source's zero. */
static inline bool tr_edit_add_as(gguf_writer *w, const tr_tensor *t, int type, const int64_t *ne) {
    int64_t n = ne[0] * ne[1] * ne[2] * ne[3], rows = n / ne[0];
    int64_t n_src = tr_tensor_nelements(t);
    float *f = calloc((size_t)n, sizeof(float));
    for (int64_t r = 0; f && r < n_src / t->ne[0] && r < rows; r++)
        tr_dequantize_row(t->type, (const char *)t->data + r * t->nb1, f + r * ne[0],
                          ne[0] < t->ne[0] ? ne[0] : t->ne[0]);
    size_t rb = tr_row_bytes(type, ne[0]);
    char *q = calloc((size_t)rows, rb ? rb : 1);
    bool ok = f && q && rb;
    for (int64_t r = 0; ok && r < rows; r++)
        ok = tr_quantize_row(type, f + r * ne[0], q + r * rb, ne[0]);
    ok = ok && tr_gguf_writer_add_tensor(w, t->name, type, t->n_dims, ne, q);
    free(q);
    free(f);
    return ok;
}

static inline bool tr_edit_short_arr(gguf_writer *w, const gguf_file *g, const char *k) {
    const char *const *s = NULL;
    const float *f = NULL;
    const int32_t *i = NULL;
    uint64_t n = 0;
    if (tr_gguf_get_arr_str(g, k, &s, &n) == 1) return tr_gguf_writer_set_arr_str(w, k, s, n - 1);
    if (tr_gguf_get_arr_f32(g, k, &f, &n) == 1) return tr_gguf_writer_set_arr_f32(w, k, f, n - 1);
    if (tr_gguf_get_arr_i32(g, k, &i, &n) == 1) return tr_gguf_writer_set_arr_i32(w, k, i, n - 1);
    return false;
}

static inline bool tr_edit_kv(gguf_writer *w, const gguf_file *g, int64_t i,
                              const tr_gguf_edit *e) {
    const char *k = tr_gguf_key_name(g, i);
    uint32_t v = 0;
    if (tr_edit_is(e->retype_kv, k)) {
        if (tr_gguf_get_u32(g, k, &v) == 1) return tr_gguf_writer_set_i32(w, k, (int32_t)v);
        return tr_gguf_writer_set_u32(w, k, 1);
    }
    if (tr_edit_is(e->kv_i32, k)) {
        tr_gguf_get_u32(g, k, &v);
        return tr_gguf_writer_set_i32(w, k, (int32_t)v);
    }
    if (tr_edit_is(e->mistype_kv, k))
        return tr_gguf_kv_type(g, i) == GGUF_T_STRING ? tr_gguf_writer_set_u32(w, k, 7)
                                                      : tr_gguf_writer_set_str(w, k, "x");
    if (tr_edit_is(e->kv_as_i32, k)) return tr_gguf_writer_set_i32(w, k, e->kv_as_i32_value);
    if (tr_edit_is(e->kv_u32, k)) return tr_gguf_writer_set_u32(w, k, e->kv_u32_value);
    if (tr_edit_is(e->kv_str, k)) return tr_gguf_writer_set_str(w, k, e->kv_str_value);
    if (tr_edit_is(e->kv_f32, k)) return tr_gguf_writer_set_f32(w, k, e->kv_f32_value);
    if (tr_edit_is(e->kv_bool, k)) return tr_gguf_writer_set_bool(w, k, e->kv_bool_value);
    if (tr_edit_is(e->kv_arr_i32, k))
        return tr_gguf_writer_set_arr_i32(w, k, e->kv_arr, (size_t)e->kv_arr_n);
    if (tr_edit_is(e->short_arr, k)) return tr_edit_short_arr(w, g, k);
    return tr_gguf_writer_copy_kv(w, g, i);
}

static inline bool tr_edit_tensor(gguf_writer *w, const tr_tensor *t, const tr_gguf_edit *e) {
    bool ok = true;
    if (e->tensor_hook && e->tensor_hook(w, t, &ok, e->hook_user)) return ok;
    int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    int64_t *last = &ne[t->n_dims - 1];
    if (tr_edit_is(e->bad_shape, t->name)) {
        *last -= 1;
        if (*last < 1) *last = 2;
        if (*last > t->ne[t->n_dims - 1]) return tr_edit_add_as(w, t, t->type, ne);
    } else if (tr_edit_is(e->shorter, t->name)) {
        *last -= 1;
    } else if (tr_edit_is(e->longer, t->name)) {
        *last += 1;
        return tr_edit_add_as(w, t, TR_F32, ne);
    }
    if (tr_edit_is(e->to_f16, t->name)) return tr_edit_add_as(w, t, TR_F16, ne);
    if (tr_edit_is(e->to_q8, t->name))
        return tr_edit_add_as(w, t, ne[0] % 32 == 0 ? TR_Q8_0 : TR_F16, ne);
    if (tr_edit_is(e->to_type, t->name)) return tr_edit_add_as(w, t, e->to_type_id, ne);
    if (tr_edit_is(e->negate, t->name)) {
        int64_t n = tr_tensor_nelements(t);
        float *v = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; v && i < n; i++) v[i] = -2.0f;
        ok = v && tr_gguf_writer_add_tensor(w, t->name, TR_F32, t->n_dims, ne, v);
        free(v);
        return ok;
    }
    return tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, t->data);
}

/* A writer holding g with edit e (NULL on failure); the caller frees it. */
static inline gguf_writer *tr_gguf_edit_writer(const gguf_file *g, const tr_gguf_edit *e) {
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++) {
        if (tr_edit_is(e->drop_kv, tr_gguf_key_name(g, i))) continue;
        ok = tr_edit_kv(w, g, i, e);
    }
    /* keys the source lacks (optional ones) */
    if (ok && e->add_absent && e->kv_u32 && tr_gguf_find_key(g, e->kv_u32) < 0)
        ok = tr_gguf_writer_set_u32(w, e->kv_u32, e->kv_u32_value);
    if (ok && e->add_absent && e->kv_str && tr_gguf_find_key(g, e->kv_str) < 0)
        ok = tr_gguf_writer_set_str(w, e->kv_str, e->kv_str_value);
    if (ok && e->add_absent && e->kv_bool && tr_gguf_find_key(g, e->kv_bool) < 0)
        ok = tr_gguf_writer_set_bool(w, e->kv_bool, e->kv_bool_value);
    if (ok && e->add_absent && e->mistype_kv && tr_gguf_find_key(g, e->mistype_kv) < 0)
        ok = tr_gguf_writer_set_str(w, e->mistype_kv, "x");
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (tr_edit_is(e->drop_tensor, t->name)) continue;
        ok = tr_edit_tensor(w, t, e);
    }
    if (ok && e->extra_tensor) {
        const float z[4] = {0};
        const int64_t ne[1] = {4};
        ok = tr_gguf_writer_add_tensor(w, "enc.unknown.extra", TR_F32, 1, ne, z);
    }
    if (!ok) {
        tr_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

/* g with edit e as a malloc'ed GGUF image. */
static inline bool tr_gguf_edit_memory(const gguf_file *g, const tr_gguf_edit *e, void **buf,
                                       size_t *size) {
    gguf_writer *w = tr_gguf_edit_writer(g, e);
    bool ok = w && tr_gguf_writer_to_memory(w, buf, size) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

/* g with edit e, written to dst. */
static inline bool tr_gguf_edit_write(const gguf_file *g, const char *dst, const tr_gguf_edit *e) {
    gguf_writer *w = tr_gguf_edit_writer(g, e);
    bool ok = w && tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

/* The file src with edit e, written to dst. */
static inline bool tr_gguf_edit_file(const char *src, const char *dst, const tr_gguf_edit *e) {
    gguf_file *g = NULL;
    if (tr_gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    bool ok = tr_gguf_edit_write(g, dst, e);
    tr_gguf_close(g);
    return ok;
}

/* A scratch path in the build tree for this process's edited copies. */
static inline const char *tr_edit_path(void) {
    static char p[512];
    if (!p[0]) snprintf(p, sizeof p, "%s/tr_edit_%d.gguf", TR_BINARY_DIR, (int)getpid());
    return p;
}

/* Error lines logged (each followed by '|') while tr_test_on_log is the
 * log callback: tr_expect_load_file sets it around a load; a test may set it
 * around a run to check what the run logged. */
static char tr_test_log[4096];

static inline void tr_test_on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    const size_t used = strlen(tr_test_log);
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && used + 2 < sizeof tr_test_log)
        snprintf(tr_test_log + used, sizeof tr_test_log - used, "%s|", msg);
}

/* Loads the file at path: a CHECK that its status is want and, when
 * want_log is not NULL and want is not OK, one that an error logged while
 * loading contains want_log. what names the case. */
static inline void tr_expect_load_file(const char *path, transcribe_status want, const char *what,
                                       const char *want_log) {
    struct transcribe_model *m = NULL;
    tr_test_log[0] = 0;
    if (want_log) transcribe_log_set(tr_test_on_log, NULL);
    transcribe_status st = transcribe_model_load_file(path, NULL, &m);
    if (want_log) transcribe_log_set(NULL, NULL);
    if (!what) what = "";
    CHECK_MSG(st == want, "%s: got %s, want %s", what, transcribe_status_string(st),
              transcribe_status_string(want));
    if (want_log && want != TRANSCRIBE_OK)
        CHECK_MSG(strstr(tr_test_log, want_log) != NULL, "%s: log '%s'", what, tr_test_log);
    transcribe_model_free(m);
}

/* src with edit e must load with status want (what names the case). */
static inline void tr_expect_load(const char *src, const tr_gguf_edit *e, transcribe_status want,
                                  const char *what) {
    const char *dst = tr_edit_path();
    CHECK_MSG(tr_gguf_edit_file(src, dst, e), "rewrite for %s", what);
    tr_expect_load_file(dst, want, what, NULL);
    remove(dst);
}

/* Each required key of keys (n): left out ("missing K") and retyped with
 * retype_kv ("mistyped K"), src must refuse both with TRANSCRIBE_ERR_GGUF;
 * keys containing no_retype (when not NULL) are only left out. */
static inline void tr_expect_required_keys(const char *src, const char *const *keys, size_t n,
                                           const char *no_retype) {
    char what[200];
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "missing %s", keys[i]);
        tr_expect_load(src, &(tr_gguf_edit){.drop_kv = keys[i]}, TRANSCRIBE_ERR_GGUF, what);
        if (no_retype && strstr(keys[i], no_retype)) continue;
        snprintf(what, sizeof what, "mistyped %s", keys[i]);
        tr_expect_load(src, &(tr_gguf_edit){.retype_kv = keys[i]}, TRANSCRIBE_ERR_GGUF, what);
    }
}

/* Each optional key of keys (n): retyped ("mistyped K") src must refuse with
 * TRANSCRIBE_ERR_GGUF; left out ("absent K") it must load. */
static inline void tr_expect_optional_keys(const char *src, const char *const *keys, size_t n) {
    char what[200];
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "mistyped %s", keys[i]);
        tr_expect_load(src, &(tr_gguf_edit){.retype_kv = keys[i]}, TRANSCRIBE_ERR_GGUF, what);
        snprintf(what, sizeof what, "absent %s", keys[i]);
        tr_expect_load(src, &(tr_gguf_edit){.drop_kv = keys[i]}, TRANSCRIBE_OK, what);
    }
}

/* A UINT32 key and a value the family refuses. */
typedef struct tr_kv_u32 {
    const char *key;
    uint32_t value;
} tr_kv_u32;

/* Each key given its refused value ("K = V"): src must refuse it with TRANSCRIBE_ERR_GGUF. */
static inline void tr_expect_refused_u32(const char *src, const tr_kv_u32 *kv, size_t n) {
    char what[200];
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "%s = %u", kv[i].key, (unsigned)kv[i].value);
        tr_expect_load(src, &(tr_gguf_edit){.kv_u32 = kv[i].key, .kv_u32_value = kv[i].value},
                       TRANSCRIBE_ERR_GGUF, what);
    }
}

/* Each tensor of names (n): left out ("missing T") and misshaped with
 * bad_shape ("misshaped T"), src must refuse both with TRANSCRIBE_ERR_GGUF. */
static inline void tr_expect_required_tensors(const char *src, const char *const *names, size_t n) {
    char what[200];
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "missing %s", names[i]);
        tr_expect_load(src, &(tr_gguf_edit){.drop_tensor = names[i]}, TRANSCRIBE_ERR_GGUF, what);
        snprintf(what, sizeof what, "misshaped %s", names[i]);
        tr_expect_load(src, &(tr_gguf_edit){.bad_shape = names[i]}, TRANSCRIBE_ERR_GGUF, what);
    }
}

/* Cuts of the valid file at path (its first 100 bytes, a third, a half, all
 * but 4), written next to it as PATH.cut: opening each must fail with
 * TRANSCRIBE_ERR_GGUF, never crash. One CHECK that path reads, one a cut. */
static inline void tr_expect_truncations_refused(const char *path) {
    size_t size = 0;
    char *buf = tr_test_read_text(path, &size);
    CHECK(buf != NULL && size > 0);
    char cut[600];
    snprintf(cut, sizeof cut, "%s.cut", path);
    const long n = (long)size, cuts[] = {100, n / 3, n / 2, n - 4};
    for (int i = 0; buf && i < 4; i++) {
        if (!tr_test_write_file(cut, buf, (size_t)cuts[i]))
            fprintf(stderr, "cannot write %s\n", cut);
        struct transcribe_session *s = NULL;
        CHECK_MSG(transcribe_open(cut, NULL, NULL, &s) == TRANSCRIBE_ERR_GGUF, "cut at %ld",
                  cuts[i]);
        transcribe_session_free(s);
    }
    free(buf);
    remove(cut);
}

#endif
