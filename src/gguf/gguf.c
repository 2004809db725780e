/* GGUF file lifetime (mmap / in-memory image) and metadata accessors. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf_internal.h"
#include "util/log.h"

static transcribe_status finish_open(gguf_file *f, gguf_file **out) {
    transcribe_status st = tr_gguf_parse(f);
    if (st != TRANSCRIBE_OK) {
        tr_gguf_close(f);
        return st;
    }
    *out = f;
    return TRANSCRIBE_OK;
}

transcribe_status tr_gguf_open_memory(const void *data, size_t size, gguf_file **out) {
    if (!out) return TRANSCRIBE_ERR_INVALID_ARG;
    *out = NULL;
    if (!data && size) return TRANSCRIBE_ERR_INVALID_ARG;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return TRANSCRIBE_ERR_OOM;
    f->data = data;
    f->size = size;
    return finish_open(f, out);
}

transcribe_status tr_gguf_open(const char *path, gguf_file **out) {
    if (!out || !path) return TRANSCRIBE_ERR_INVALID_ARG;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        TR_ERROR("gguf: cannot open '%s': %s", path, strerror(e));
        return e == ENOENT ? TRANSCRIBE_ERR_FILE_NOT_FOUND : TRANSCRIBE_ERR_GGUF;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        TR_ERROR("gguf: '%s' is not a regular file", path);
        close(fd);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (sb.st_size < 24 || (uint64_t)sb.st_size > SIZE_MAX) {
        TR_ERROR("gguf: '%s' is too small (%lld bytes) to be a GGUF file", path,
                 (long long)sb.st_size);
        close(fd);
        return TRANSCRIBE_ERR_GGUF;
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd); /* the mapping keeps the file alive */
    if (map == MAP_FAILED) {
        TR_ERROR("gguf: cannot map '%s': %s", path, strerror(errno));
        return TRANSCRIBE_ERR_GGUF;
    }
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) {
        munmap(map, size);
        return TRANSCRIBE_ERR_OOM;
    }
    f->map = map;
    f->map_size = size;
    f->data = map;
    f->size = size;
    return finish_open(f, out);
}

void tr_gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->kvs) {
        for (int64_t i = 0; i < f->n_kv; i++) {
            free(f->kvs[i].key);
            free(f->kvs[i].str);
            free(f->kvs[i].strs);
            free(f->kvs[i].decoded);
        }
        free(f->kvs);
    }
    if (f->tensors) {
        for (int64_t i = 0; i < f->n_tensors; i++) free((char *)f->tensors[i].name);
        free(f->tensors);
    }
    tr_gguf_index_free(&f->kv_index);
    tr_gguf_index_free(&f->tensor_index);
    if (f->map) munmap(f->map, f->map_size);
    free(f);
}

uint32_t tr_gguf_version(const gguf_file *f) {
    return f->version;
}

size_t tr_gguf_alignment(const gguf_file *f) {
    return f->alignment;
}

/* ---- key/value metadata ---- */

static const gguf_kv *kv_at(const gguf_file *f, int64_t i) {
    return (f && i >= 0 && i < f->n_kv) ? &f->kvs[i] : NULL;
}

int64_t tr_gguf_n_kv(const gguf_file *f) {
    return f->n_kv;
}

int64_t tr_gguf_find_key(const gguf_file *f, const char *key) {
    return tr_gguf_index_find(&f->kv_index, key);
}

const char *tr_gguf_key_name(const gguf_file *f, int64_t i) {
    const gguf_kv *kv = kv_at(f, i);
    return kv ? kv->key : NULL;
}

gguf_vtype tr_gguf_kv_type(const gguf_file *f, int64_t i) {
    const gguf_kv *kv = kv_at(f, i);
    return kv ? kv->type : GGUF_T_NONE;
}

gguf_vtype tr_gguf_kv_arr_type(const gguf_file *f, int64_t i) {
    const gguf_kv *kv = kv_at(f, i);
    return kv && kv->type == GGUF_T_ARRAY ? kv->arr_type : GGUF_T_NONE;
}

uint64_t tr_gguf_kv_arr_n(const gguf_file *f, int64_t i) {
    const gguf_kv *kv = kv_at(f, i);
    return kv && kv->type == GGUF_T_ARRAY ? kv->arr_n : 0;
}

const void *tr_gguf_kv_arr_data(const gguf_file *f, int64_t i) {
    const gguf_kv *kv = kv_at(f, i);
    if (!kv || kv->type != GGUF_T_ARRAY || kv->arr_type == GGUF_T_STRING) return NULL;
    return kv->elems;
}

const char *tr_gguf_kv_arr_str(const gguf_file *f, int64_t i, uint64_t j) {
    const gguf_kv *kv = kv_at(f, i);
    if (!kv || !kv->strs || j >= kv->arr_n) return NULL;
    return kv->strs[j];
}

const void *tr_gguf_kv_raw(const gguf_file *f, int64_t i, size_t *len) {
    const gguf_kv *kv = kv_at(f, i);
    if (!kv) return NULL;
    *len = kv->raw_len;
    return kv->raw;
}

const char *tr_gguf_vtype_name(gguf_vtype t) {
    static const char *names[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                  "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                  "UINT64", "INT64",   "FLOAT64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* Shared tri-state lookup: the kv when present with type `want`. */
static int typed(const gguf_file *f, const char *key, gguf_vtype want, const gguf_kv **out) {
    int64_t i = tr_gguf_find_key(f, key);
    if (i < 0) return 0;
    const gguf_kv *kv = &f->kvs[i];
    if (kv->type != want) {
        TR_ERROR("gguf: key '%s' has type %s, expected %s", key, tr_gguf_vtype_name(kv->type),
                 tr_gguf_vtype_name(want));
        return -1;
    }
    *out = kv;
    return 1;
}

#define SCALAR_GETTER(fn, ctype, vt)                                                               \
    int fn(const gguf_file *f, const char *key, ctype *out) {                                      \
        const gguf_kv *kv;                                                                         \
        int r = typed(f, key, vt, &kv);                                                            \
        if (r == 1) memcpy(out, kv->raw, sizeof(ctype));                                           \
        return r;                                                                                  \
    }

SCALAR_GETTER(tr_gguf_get_u8, uint8_t, GGUF_T_UINT8)
SCALAR_GETTER(tr_gguf_get_i8, int8_t, GGUF_T_INT8)
SCALAR_GETTER(tr_gguf_get_u16, uint16_t, GGUF_T_UINT16)
SCALAR_GETTER(tr_gguf_get_i16, int16_t, GGUF_T_INT16)
SCALAR_GETTER(tr_gguf_get_u32, uint32_t, GGUF_T_UINT32)
SCALAR_GETTER(tr_gguf_get_i32, int32_t, GGUF_T_INT32)
SCALAR_GETTER(tr_gguf_get_u64, uint64_t, GGUF_T_UINT64)
SCALAR_GETTER(tr_gguf_get_i64, int64_t, GGUF_T_INT64)
SCALAR_GETTER(tr_gguf_get_f32, float, GGUF_T_FLOAT32)
SCALAR_GETTER(tr_gguf_get_f64, double, GGUF_T_FLOAT64)

int tr_gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
    const gguf_kv *kv;
    int r = typed(f, key, GGUF_T_BOOL, &kv);
    if (r == 1) *out = kv->raw[0] != 0; /* any nonzero byte is true; never memcpy into bool */
    return r;
}

int tr_gguf_get_str(const gguf_file *f, const char *key, const char **out) {
    const gguf_kv *kv;
    int r = typed(f, key, GGUF_T_STRING, &kv);
    if (r == 1) *out = kv->str;
    return r;
}

int tr_gguf_get_token_id(const gguf_file *f, const char *key, int32_t *out) {
    int64_t i = tr_gguf_find_key(f, key);
    if (i < 0) return 0;
    const gguf_kv *kv = &f->kvs[i];
    if (kv->type == GGUF_T_INT32) {
        int32_t v;
        memcpy(&v, kv->raw, 4);
        *out = v < 0 ? -1 : v;
        return 1;
    }
    if (kv->type == GGUF_T_UINT32) {
        uint32_t v;
        memcpy(&v, kv->raw, 4);
        if (v > INT32_MAX) {
            TR_WARN("gguf: token id '%s' = %" PRIu32 " is out of range; treated as absent", key, v);
            *out = -1;
        } else {
            *out = (int32_t)v;
        }
        return 1;
    }
    TR_ERROR("gguf: key '%s' has type %s, expected UINT32 or INT32", key,
             tr_gguf_vtype_name(kv->type));
    return -1;
}

static int typed_array(const gguf_file *f, const char *key, gguf_vtype elem, const gguf_kv **out) {
    const gguf_kv *kv;
    int r = typed(f, key, GGUF_T_ARRAY, &kv);
    if (r != 1) return r;
    if (kv->arr_type != elem) {
        TR_ERROR("gguf: key '%s' is an array of %s, expected %s", key,
                 tr_gguf_vtype_name(kv->arr_type), tr_gguf_vtype_name(elem));
        return -1;
    }
    *out = kv;
    return 1;
}

int tr_gguf_get_arr_i32(const gguf_file *f, const char *key, const int32_t **out, uint64_t *n) {
    const gguf_kv *kv;
    int r = typed_array(f, key, GGUF_T_INT32, &kv);
    if (r == 1) {
        *out = kv->decoded;
        *n = kv->arr_n;
    }
    return r;
}

int tr_gguf_get_arr_f32(const gguf_file *f, const char *key, const float **out, uint64_t *n) {
    const gguf_kv *kv;
    int r = typed_array(f, key, GGUF_T_FLOAT32, &kv);
    if (r == 1) {
        *out = kv->decoded;
        *n = kv->arr_n;
    }
    return r;
}

int tr_gguf_get_arr_str(const gguf_file *f, const char *key, const char *const **out, uint64_t *n) {
    const gguf_kv *kv;
    int r = typed_array(f, key, GGUF_T_STRING, &kv);
    if (r == 1) {
        *out = (const char *const *)kv->strs;
        *n = kv->arr_n;
    }
    return r;
}
