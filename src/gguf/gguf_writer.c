/* GGUF v3 writer. KVs are kept as their encoded bytes so that copying a KV
 * from another file is a byte copy; tensors are copied at add time. Output
 * depends only on the calls made (insertion order), so it is deterministic. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_internal.h"
#include "gguf/gguf_writer.h"
#include "util/log.h"
#include "util/vec.h"

#define WRITER_ALIGN 32

typedef struct {
    char *key;
    uint32_t type;
    uint8_t *val; /* encoded value */
    size_t len;
} wkv;

typedef struct {
    char *name;
    int type, n_dims;
    int64_t ne[4];
    void *data;
    size_t nbytes;
} wtensor;

struct gguf_writer {
    wkv *kvs;
    size_t n_kv, cap_kv;
    wtensor *ts;
    size_t n_t, cap_t;
};

gguf_writer *tr_gguf_writer_create(void) {
    return calloc(1, sizeof(gguf_writer));
}

void tr_gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].val);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->ts[i].name);
        free(w->ts[i].data);
    }
    free(w->kvs);
    free(w->ts);
    free(w);
}

/* Room for item n (0-based). */
static bool grow(void **arr, size_t *cap, size_t n, size_t elem) {
    void *p = tr_grow(*arr, cap, n + 1, elem, 16);
    if (!p) return false;
    *arr = p;
    return true;
}

/* Stores (or replaces) a KV; takes ownership of val. */
static bool put(gguf_writer *w, const char *key, uint32_t type, uint8_t *val, size_t len) {
    if (!w || !key || !*key || !val) {
        free(val);
        return false;
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kvs[i].key, key) == 0) { /* set twice: last value wins, order kept */
            free(w->kvs[i].val);
            w->kvs[i].type = type;
            w->kvs[i].val = val;
            w->kvs[i].len = len;
            return true;
        }
    }
    char *k = strdup(key);
    if (!k || !grow((void **)&w->kvs, &w->cap_kv, w->n_kv, sizeof(wkv))) {
        free(k);
        free(val);
        return false;
    }
    w->kvs[w->n_kv++] = (wkv){k, type, val, len};
    return true;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static bool put_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v, size_t n) {
    uint8_t *b = malloc(n);
    if (b) memcpy(b, v, n); /* host is little-endian, like the format */
    return put(w, key, type, b, n);
}

bool tr_gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    return put_scalar(w, key, GGUF_T_UINT32, &v, 4);
}
bool tr_gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    return put_scalar(w, key, GGUF_T_INT32, &v, 4);
}
bool tr_gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    return put_scalar(w, key, GGUF_T_UINT64, &v, 8);
}
bool tr_gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    return put_scalar(w, key, GGUF_T_FLOAT32, &v, 4);
}
bool tr_gguf_writer_set_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    return put_scalar(w, key, GGUF_T_BOOL, &b, 1);
}

bool tr_gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    if (!v) return false;
    size_t n = strlen(v);
    uint8_t *b = malloc(8 + n);
    if (b) {
        put_le(b, n, 8);
        memcpy(b + 8, v, n);
    }
    return put(w, key, GGUF_T_STRING, b, 8 + n);
}

static bool set_numeric_array(gguf_writer *w, const char *key, uint32_t et, const void *v, size_t n,
                              size_t esz) {
    if (!v && n) return false;
    if (n > (SIZE_MAX - 12) / esz) return false;
    uint8_t *b = malloc(12 + n * esz);
    if (b) {
        put_le(b, et, 4);
        put_le(b + 4, n, 8);
        if (n) memcpy(b + 12, v, n * esz);
    }
    return put(w, key, GGUF_T_ARRAY, b, 12 + n * esz);
}

bool tr_gguf_writer_set_arr_i32(gguf_writer *w, const char *key, const int32_t *v, size_t n) {
    return set_numeric_array(w, key, GGUF_T_INT32, v, n, 4);
}
bool tr_gguf_writer_set_arr_f32(gguf_writer *w, const char *key, const float *v, size_t n) {
    return set_numeric_array(w, key, GGUF_T_FLOAT32, v, n, 4);
}

bool tr_gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *v, size_t n) {
    if (!v && n) return false;
    size_t total = 12;
    for (size_t i = 0; i < n; i++) {
        if (!v[i]) return false;
        total += 8 + strlen(v[i]);
    }
    uint8_t *b = malloc(total);
    if (b) {
        put_le(b, GGUF_T_STRING, 4);
        put_le(b + 4, n, 8);
        size_t o = 12;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(v[i]);
            put_le(b + o, len, 8);
            memcpy(b + o + 8, v[i], len);
            o += 8 + len;
        }
    }
    return put(w, key, GGUF_T_ARRAY, b, total);
}

bool tr_gguf_writer_copy_kv(gguf_writer *w, const gguf_file *src, int64_t i) {
    size_t len = 0;
    const void *raw = src ? tr_gguf_kv_raw(src, i, &len) : NULL;
    if (!raw) return false;
    uint8_t *b = malloc(len ? len : 1);
    if (b && len) memcpy(b, raw, len);
    return put(w, tr_gguf_key_name(src, i), (uint32_t)tr_gguf_kv_type(src, i), b, len);
}

bool tr_gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, int n_dims,
                            const int64_t *ne, const void *data) {
    if (!w || !name || !*name || !ne || !data || n_dims < 1 || n_dims > 4) return false;
    if (!tr_gguf_type_loadable(type)) {
        TR_ERROR("gguf writer: tensor '%s' has unsupported type %d", name, type);
        return false;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        if (strcmp(w->ts[i].name, name) == 0) {
            TR_ERROR("gguf writer: duplicate tensor '%s'", name);
            return false;
        }
    }
    wtensor t = {0};
    t.type = type;
    t.n_dims = n_dims;
    for (int d = 0; d < 4; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    size_t nb1;
    t.nbytes = tr_gguf_tensor_bytes(type, t.ne, &nb1);
    if (!t.nbytes) {
        TR_ERROR("gguf writer: tensor '%s' has an invalid shape for %s", name,
                 tr_gguf_type_label(type));
        return false;
    }
    t.name = strdup(name);
    t.data = malloc(t.nbytes);
    if (!t.name || !t.data || !grow((void **)&w->ts, &w->cap_t, w->n_t, sizeof(wtensor))) {
        free(t.name);
        free(t.data);
        return false;
    }
    memcpy(t.data, data, t.nbytes);
    w->ts[w->n_t++] = t;
    return true;
}

/* ---- serialisation: the same code feeds a FILE or a memory buffer ---- */

typedef struct {
    FILE *fp;
    uint8_t *buf;
    size_t len, cap;
    bool err;
} sink;

static void emit(sink *s, const void *p, size_t n) {
    if (s->err || !n) return;
    if (s->fp) {
        if (fwrite(p, 1, n, s->fp) != n) s->err = true;
        s->len += n;
        return;
    }
    uint8_t *b = tr_grow(s->buf, &s->cap, s->len + n, 1, 4096);
    if (!b) {
        s->err = true;
        return;
    }
    s->buf = b;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void emit_le(sink *s, uint64_t v, int n) {
    uint8_t b[8];
    put_le(b, v, n);
    emit(s, b, (size_t)n);
}

static void emit_str(sink *s, const char *str) {
    size_t n = strlen(str);
    emit_le(s, n, 8);
    emit(s, str, n);
}

static void emit_pad(sink *s) {
    static const uint8_t zeros[WRITER_ALIGN];
    emit(s, zeros, (WRITER_ALIGN - s->len % WRITER_ALIGN) % WRITER_ALIGN);
}

static size_t align_up(size_t v) {
    return (v + WRITER_ALIGN - 1) / WRITER_ALIGN * WRITER_ALIGN;
}

static void serialise(const gguf_writer *w, sink *s) {
    emit(s, "GGUF", 4);
    emit_le(s, 3, 4);
    emit_le(s, w->n_t, 8);
    emit_le(s, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        emit_str(s, w->kvs[i].key);
        emit_le(s, w->kvs[i].type, 4);
        emit(s, w->kvs[i].val, w->kvs[i].len);
    }
    size_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->ts[i];
        emit_str(s, t->name);
        emit_le(s, (uint64_t)t->n_dims, 4);
        for (int d = 0; d < t->n_dims; d++) emit_le(s, (uint64_t)t->ne[d], 8);
        emit_le(s, (uint64_t)t->type, 4);
        emit_le(s, off, 8);
        off += align_up(t->nbytes);
    }
    emit_pad(s);
    for (size_t i = 0; i < w->n_t; i++) {
        emit(s, w->ts[i].data, w->ts[i].nbytes);
        emit_pad(s);
    }
}

transcribe_status tr_gguf_writer_to_memory(const gguf_writer *w, void **out, size_t *size) {
    if (!w || !out || !size) return TRANSCRIBE_ERR_INVALID_ARG;
    sink s = {0};
    serialise(w, &s);
    if (s.err) {
        free(s.buf);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s.buf;
    *size = s.len;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_writer_write(const gguf_writer *w, const char *path) {
    if (!w || !path) return TRANSCRIBE_ERR_INVALID_ARG;
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        TR_ERROR("gguf writer: cannot create '%s'", path);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    sink s = {.fp = fp};
    serialise(w, &s);
    if (fclose(fp) != 0) s.err = true;
    if (s.err) {
        TR_ERROR("gguf writer: write to '%s' failed", path);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}
