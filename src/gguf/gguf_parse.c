/* GGUF v2/v3 parsing and validation. The image is hostile: every read goes
 * through a bounds-checked cursor, every count is checked against the bytes
 * that remain before anything is allocated for it, and every failure logs
 * one line naming the problem. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_internal.h"
#include "tensor/dtype.h"
#include "util/log.h"

#define GGUF_MAGIC         0x46554747u /* "GGUF" little-endian */
#define GGUF_MAX_DEPTH     4           /* nested array levels accepted */
#define GGUF_MAX_NAME      1024        /* tensor name bytes */
#define GGUF_MAX_ALIGNMENT (1u << 20)
/* Smallest encodings, used to bound counts by the remaining bytes. */
#define MIN_KV_BYTES     (8 + 1 + 4 + 1)
#define MIN_TENSOR_BYTES (8 + 1 + 4 + 8 + 4 + 8)

typedef struct {
    const uint8_t *p;
    size_t size, pos;
} cursor;

static size_t remaining(const cursor *c) {
    return c->size - c->pos;
}

static bool rd(cursor *c, void *dst, size_t n) {
    if (n > remaining(c)) return false;
    memcpy(dst, c->p + c->pos, n);
    c->pos += n;
    return true;
}

static bool rd_u32(cursor *c, uint32_t *v) {
    uint8_t b[4];
    if (!rd(c, b, 4)) return false;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

static bool rd_u64(cursor *c, uint64_t *v) {
    uint32_t lo, hi;
    if (!rd_u32(c, &lo) || !rd_u32(c, &hi)) return false;
    *v = (uint64_t)hi << 32 | lo;
    return true;
}

static bool skip(cursor *c, uint64_t n) {
    if (n > remaining(c)) return false;
    c->pos += (size_t)n;
    return true;
}

static const char *vtype_name(uint32_t t) {
    static const char *names[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                  "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                  "UINT64", "INT64",   "FLOAT64"};
    return t < sizeof names / sizeof names[0] ? names[t] : "?";
}

size_t tr_gguf_vtype_size(gguf_vtype t) {
    switch (t) {
    case GGUF_T_UINT8:
    case GGUF_T_INT8:
    case GGUF_T_BOOL:
        return 1;
    case GGUF_T_UINT16:
    case GGUF_T_INT16:
        return 2;
    case GGUF_T_UINT32:
    case GGUF_T_INT32:
    case GGUF_T_FLOAT32:
        return 4;
    case GGUF_T_UINT64:
    case GGUF_T_INT64:
    case GGUF_T_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* Reads a gguf_string header and returns its bytes in place. */
static bool rd_str(cursor *c, const char *what, const uint8_t **s, uint64_t *len) {
    size_t at = c->pos;
    if (!rd_u64(c, len)) {
        TR_ERROR("gguf: truncated string length of %s at offset %zu (file size %zu)", what, at,
                 c->size);
        return false;
    }
    if (*len > remaining(c)) {
        TR_ERROR("gguf: %s length %" PRIu64 " at offset %zu exceeds file size %zu", what, *len, at,
                 c->size);
        return false;
    }
    *s = c->p + c->pos;
    c->pos += (size_t)*len;
    return true;
}

static char *dup_bytes(const uint8_t *s, uint64_t len) {
    char *d = malloc((size_t)len + 1);
    if (!d) return NULL;
    if (len) memcpy(d, s, (size_t)len);
    d[len] = 0;
    return d;
}

/* Skips one encoded value of type t, validating it. */
static bool skip_value(cursor *c, uint32_t t, int depth, const char *key) {
    size_t sz = tr_gguf_vtype_size((gguf_vtype)t);
    if (sz) {
        if (!skip(c, sz)) {
            TR_ERROR("gguf: value of key '%s' truncated at offset %zu (file size %zu)", key, c->pos,
                     c->size);
            return false;
        }
        return true;
    }
    if (t == GGUF_T_STRING) {
        const uint8_t *s;
        uint64_t len;
        return rd_str(c, "string value", &s, &len);
    }
    if (t != GGUF_T_ARRAY) {
        TR_ERROR("gguf: key '%s' has unknown value type %" PRIu32, key, t);
        return false;
    }
    if (depth >= GGUF_MAX_DEPTH) {
        TR_ERROR("gguf: key '%s' nests arrays deeper than %d levels", key, GGUF_MAX_DEPTH);
        return false;
    }
    uint32_t et;
    uint64_t n;
    if (!rd_u32(c, &et) || !rd_u64(c, &n)) {
        TR_ERROR("gguf: array header of key '%s' truncated (file size %zu)", key, c->size);
        return false;
    }
    size_t esz = tr_gguf_vtype_size((gguf_vtype)et);
    if (esz) {
        if (n > remaining(c) / esz) {
            TR_ERROR("gguf: array '%s' of %" PRIu64 " %s elements exceeds file size %zu", key, n,
                     vtype_name(et), c->size);
            return false;
        }
        c->pos += (size_t)n * esz;
        return true;
    }
    if (et != GGUF_T_STRING && et != GGUF_T_ARRAY) {
        TR_ERROR("gguf: array '%s' has unknown element type %" PRIu32, key, et);
        return false;
    }
    /* Each STRING element takes >= 8 bytes, each nested ARRAY >= 12. */
    size_t min_elem = et == GGUF_T_STRING ? 8 : 12;
    if (n > remaining(c) / min_elem) {
        TR_ERROR("gguf: array '%s' of %" PRIu64 " %s elements exceeds file size %zu", key, n,
                 vtype_name(et), c->size);
        return false;
    }
    for (uint64_t j = 0; j < n; j++)
        if (!skip_value(c, et, depth + 1, key)) return false;
    return true;
}

/* Decoded copies the typed getters hand out. */
static bool materialize(gguf_kv *kv) {
    if (kv->type == GGUF_T_STRING) {
        uint64_t len = 0;
        memcpy(&len, kv->raw, 8); /* validated by skip_value; host is little-endian */
        kv->str = dup_bytes(kv->raw + 8, len);
        return kv->str != NULL;
    }
    if (kv->type != GGUF_T_ARRAY) return true;
    if (kv->arr_type == GGUF_T_INT32 || kv->arr_type == GGUF_T_FLOAT32) {
        size_t bytes = (size_t)kv->arr_n * 4;
        kv->decoded = malloc(bytes ? bytes : 1);
        if (!kv->decoded) return false;
        if (bytes) memcpy(kv->decoded, kv->elems, bytes);
        return true;
    }
    if (kv->arr_type != GGUF_T_STRING) return true;
    /* One block: pointer table, then the NUL-terminated strings. The element
     * walk was validated, so total string bytes < file size. */
    size_t chars = 0;
    cursor c = {kv->elems, (size_t)(kv->raw + kv->raw_len - kv->elems), 0};
    for (uint64_t j = 0; j < kv->arr_n; j++) {
        uint64_t len = 0;
        rd_u64(&c, &len);
        c.pos += (size_t)len;
        chars += (size_t)len + 1;
    }
    size_t table = (size_t)kv->arr_n * sizeof(char *);
    char *block = malloc(table + chars + 1);
    if (!block) return false;
    kv->strs = (char **)(void *)block;
    char *w = block + table;
    c.pos = 0;
    for (uint64_t j = 0; j < kv->arr_n; j++) {
        uint64_t len = 0;
        rd_u64(&c, &len);
        if (len) memcpy(w, c.p + c.pos, (size_t)len);
        w[len] = 0;
        kv->strs[j] = w;
        w += len + 1;
        c.pos += (size_t)len;
    }
    return true;
}

static const char *kv_name_of(const void *ctx, int64_t i) {
    return ((const gguf_file *)ctx)->kvs[i].key;
}

static const char *tensor_name_of(const void *ctx, int64_t i) {
    return ((const gguf_file *)ctx)->tensors[i].name;
}

static bool parse_kvs(gguf_file *f, cursor *c) {
    if (!tr_gguf_index_init(&f->kv_index, f->n_kv, kv_name_of, f)) goto oom;
    for (int64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kvs[i];
        const uint8_t *s;
        uint64_t len;
        if (!rd_str(c, "key", &s, &len)) return false;
        if (len == 0 || memchr(s, 0, (size_t)len)) {
            TR_ERROR("gguf: key %" PRId64 " is empty or contains a NUL byte", i);
            return false;
        }
        if (!(kv->key = dup_bytes(s, len))) goto oom;
        uint32_t t;
        if (!rd_u32(c, &t)) {
            TR_ERROR("gguf: type of key '%s' truncated (file size %zu)", kv->key, c->size);
            return false;
        }
        /* Written before the duplicate check so the index can compare names. */
        int64_t dup = tr_gguf_index_add(&f->kv_index, i);
        if (dup >= 0) {
            TR_ERROR("gguf: duplicate key '%s'", kv->key);
            return false;
        }
        kv->type = (gguf_vtype)t;
        kv->raw = c->p + c->pos;
        if (t == GGUF_T_ARRAY && remaining(c) >= 12) {
            uint32_t et;
            uint64_t n;
            cursor h = *c;
            rd_u32(&h, &et);
            rd_u64(&h, &n);
            kv->arr_type = (gguf_vtype)et;
            kv->arr_n = n;
            kv->elems = h.p + h.pos;
        }
        if (!skip_value(c, t, 0, kv->key)) return false;
        kv->raw_len = (size_t)(c->p + c->pos - kv->raw);
        if (!materialize(kv)) goto oom;
    }
    return true;
oom:
    TR_ERROR("gguf: out of memory reading metadata");
    f->oom = true;
    return false;
}

static bool read_alignment(gguf_file *f) {
    f->alignment = 32;
    int64_t i = tr_gguf_index_find(&f->kv_index, "general.alignment");
    if (i < 0) return true;
    const gguf_kv *kv = &f->kvs[i];
    if (kv->type != GGUF_T_UINT32) {
        TR_ERROR("gguf: key 'general.alignment' has type %s, expected UINT32",
                 vtype_name(kv->type));
        return false;
    }
    uint32_t a;
    memcpy(&a, kv->raw, 4);
    if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGNMENT) {
        TR_ERROR("gguf: general.alignment %" PRIu32 " is not a power of two <= %u", a,
                 GGUF_MAX_ALIGNMENT);
        return false;
    }
    f->alignment = a;
    return true;
}

/* Element alignment the kernels may assume for a tensor's first byte. */
static size_t elem_align(int type) {
    return type == TR_F32 ? 4 : (type == TR_F16 || type == TR_BF16) ? 2 : 1;
}

static bool parse_tensor_infos(gguf_file *f, cursor *c, uint64_t *offsets) {
    if (!tr_gguf_index_init(&f->tensor_index, f->n_tensors, tensor_name_of, f)) {
        TR_ERROR("gguf: out of memory reading the tensor table");
        f->oom = true;
        return false;
    }
    for (int64_t i = 0; i < f->n_tensors; i++) {
        tr_tensor *t = &f->tensors[i];
        const uint8_t *s;
        uint64_t len;
        if (!rd_str(c, "tensor name", &s, &len)) return false;
        if (len == 0 || len > GGUF_MAX_NAME || memchr(s, 0, (size_t)len)) {
            TR_ERROR("gguf: tensor %" PRId64 " name is empty, longer than %d bytes or has a NUL", i,
                     GGUF_MAX_NAME);
            return false;
        }
        char *name = dup_bytes(s, len);
        if (!name) {
            TR_ERROR("gguf: out of memory reading the tensor table");
            f->oom = true;
            return false;
        }
        t->name = name;
        if (tr_gguf_index_add(&f->tensor_index, i) >= 0) {
            TR_ERROR("gguf: duplicate tensor name '%s'", name);
            return false;
        }
        uint32_t nd, type;
        if (!rd_u32(c, &nd)) goto trunc;
        if (nd < 1 || nd > 4) {
            TR_ERROR("gguf: tensor '%s' has n_dims %" PRIu32 " (expected 1..4)", name, nd);
            return false;
        }
        t->n_dims = (int)nd;
        for (int d = 0; d < 4; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t v;
            if (!rd_u64(c, &v)) goto trunc;
            /* Zero-sized dims are rejected: no model tensor is empty, and a
             * zero would make every size check vacuous. */
            if (v == 0 || v > (uint64_t)INT64_MAX) {
                TR_ERROR("gguf: tensor '%s' ne[%" PRIu32 "] = %" PRIu64 " is out of range", name, d,
                         v);
                return false;
            }
            t->ne[d] = (int64_t)v;
        }
        if (!rd_u32(c, &type) || !rd_u64(c, &offsets[i])) goto trunc;
        if (!tr_gguf_type_loadable((int)type)) {
            TR_ERROR("gguf: tensor '%s' has unsupported ggml type %" PRIu32, name, type);
            return false;
        }
        t->type = (int)type;
        int block;
        size_t bb;
        tr_gguf_type_geometry(t->type, &block, &bb);
        if (t->ne[0] % block) {
            TR_ERROR("gguf: tensor '%s' ne[0] = %" PRId64 " is not a multiple of the %s block "
                     "size %d",
                     name, t->ne[0], tr_gguf_type_label(t->type), block);
            return false;
        }
        t->nbytes = tr_gguf_tensor_bytes(t->type, t->ne, &t->nb1);
        if (t->nbytes == 0 || t->nbytes > f->size) {
            TR_ERROR("gguf: tensor '%s' size overflows or exceeds file size %zu", name, f->size);
            return false;
        }
        continue;
    trunc:
        TR_ERROR("gguf: tensor info of '%s' truncated (file size %zu)", name, f->size);
        return false;
    }
    return true;
}

static bool place_tensors(gguf_file *f, const uint64_t *offsets) {
    size_t data_size = f->size - f->data_offset;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        tr_tensor *t = &f->tensors[i];
        uint64_t off = offsets[i];
        if (off % f->alignment) {
            TR_ERROR("gguf: tensor '%s' offset %" PRIu64 " is not a multiple of the alignment %zu",
                     t->name, off, f->alignment);
            return false;
        }
        if (off > data_size || t->nbytes > data_size - off) {
            TR_ERROR("gguf: tensor '%s' data [offset %" PRIu64 ", size %zu] exceeds file size %zu",
                     t->name, (uint64_t)f->data_offset + off, t->nbytes, f->size);
            return false;
        }
        t->data = f->data + f->data_offset + off;
        if ((uintptr_t)t->data % elem_align(t->type)) {
            TR_ERROR("gguf: tensor '%s' data is not aligned for %s", t->name,
                     tr_gguf_type_label(t->type));
            return false;
        }
    }
    return true;
}

transcribe_status tr_gguf_parse(gguf_file *f) {
    cursor c = {f->data, f->size, 0};
    uint32_t magic;
    if (!rd_u32(&c, &magic) || magic != GGUF_MAGIC) {
        TR_ERROR("gguf: bad magic (not a GGUF file)");
        return TRANSCRIBE_ERR_GGUF;
    }
    uint64_t nt, nkv;
    if (!rd_u32(&c, &f->version)) {
        TR_ERROR("gguf: header truncated (file size %zu)", f->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (f->version != 2 && f->version != 3) {
        TR_ERROR("gguf: unsupported version %" PRIu32 " (expected 2 or 3)", f->version);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (!rd_u64(&c, &nt) || !rd_u64(&c, &nkv)) {
        TR_ERROR("gguf: header truncated (file size %zu)", f->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (nkv > remaining(&c) / MIN_KV_BYTES) {
        TR_ERROR("gguf: n_kv %" PRIu64 " cannot fit in file size %zu", nkv, f->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (nt > remaining(&c) / MIN_TENSOR_BYTES) {
        TR_ERROR("gguf: n_tensors %" PRIu64 " cannot fit in file size %zu", nt, f->size);
        return TRANSCRIBE_ERR_GGUF;
    }
    f->n_kv = (int64_t)nkv;
    f->n_tensors = (int64_t)nt;
    f->kvs = calloc(nkv ? nkv : 1, sizeof *f->kvs);
    f->tensors = calloc(nt ? nt : 1, sizeof *f->tensors);
    uint64_t *offsets = calloc(nt ? nt : 1, sizeof *offsets);
    transcribe_status st = TRANSCRIBE_ERR_GGUF;
    if (!f->kvs || !f->tensors || !offsets) {
        TR_ERROR("gguf: out of memory");
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (!parse_kvs(f, &c) || !read_alignment(f)) goto done;
    if (!parse_tensor_infos(f, &c, offsets)) goto done;
    /* The data section starts at the next alignment boundary. */
    size_t pad = (f->alignment - c.pos % f->alignment) % f->alignment;
    if (f->n_tensors > 0 && pad > remaining(&c)) {
        TR_ERROR("gguf: data section start %zu exceeds file size %zu", c.pos + pad, f->size);
        goto done;
    }
    f->data_offset = f->n_tensors > 0 ? c.pos + pad : c.pos;
    if (!place_tensors(f, offsets)) goto done;
    st = TRANSCRIBE_OK;
done:
    if (f->oom) st = TRANSCRIBE_ERR_OOM;
    free(offsets);
    return st;
}
