/* Private to src/gguf: the parsed-file layout shared by the reader's files,
 * a name index used for O(1) key/tensor lookup, and the container-level
 * tensor type table (block geometry of docs/formats/gguf.md §9.1). */
#ifndef TR_GGUF_INTERNAL_H
#define TR_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* ---- name index: open addressing over names owned by someone else ---- */
typedef const char *(*gguf_name_fn)(const void *ctx, int64_t i);

typedef struct gguf_index {
    int64_t *slots; /* -1 = empty, else item index */
    uint64_t mask;
    gguf_name_fn name;
    const void *ctx;
} gguf_index;

bool tr_gguf_index_init(gguf_index *ix, int64_t n, gguf_name_fn name, const void *ctx);
/* Adds item i. Returns -1 when added, or the index of an item already
 * present under the same name (i is then not added). */
int64_t tr_gguf_index_add(gguf_index *ix, int64_t i);
int64_t tr_gguf_index_find(const gguf_index *ix, const char *name);
void tr_gguf_index_free(gguf_index *ix);

/* ---- tensor types as the container sees them ---- */
/* Block geometry of a ggml type id: false when the id is unknown. Q8_1 and
 * Q8_K are known here (the legacy .bin container lists Q8_K) even though
 * GGUF files with them are rejected by tr_gguf_type_loadable(). */
bool tr_gguf_type_geometry(int type, int *block, size_t *block_bytes);
bool tr_gguf_type_loadable(int type);     /* ids accepted in a GGUF tensor table */
const char *tr_gguf_type_label(int type); /* "F32", "Q4_K", ...; "?" unknown */
/* Payload bytes of a tensor, or 0 when ne[0] is not a block multiple or the
 * size overflows size_t. *nb1 receives the row size. */
size_t tr_gguf_tensor_bytes(int type, const int64_t ne[4], size_t *nb1);

/* ---- the parsed file ---- */
typedef struct gguf_kv {
    char *key;
    gguf_vtype type;
    gguf_vtype arr_type; /* ARRAY only */
    uint64_t arr_n;      /* ARRAY only */
    const uint8_t *raw;  /* encoded value in the image (after the type field) */
    size_t raw_len;
    const uint8_t *elems; /* ARRAY: first element in the image */
    char *str;            /* STRING: NUL-terminated copy */
    char **strs;          /* STRING ARRAY: arr_n copies in one block */
    void *decoded;        /* INT32 / FLOAT32 ARRAY: aligned copy */
} gguf_kv;

struct gguf_file {
    void *map; /* mmap'ed image (NULL for tr_gguf_open_memory) */
    size_t map_size;
    const uint8_t *data;
    size_t size;
    uint32_t version;
    size_t alignment;
    size_t data_offset; /* start of the data section */
    int64_t n_kv;
    gguf_kv *kvs;
    gguf_index kv_index;
    int64_t n_tensors;
    tr_tensor *tensors; /* names are malloc'ed copies */
    gguf_index tensor_index;
    bool oom; /* set by the parser when an allocation failed */
};

transcribe_status tr_gguf_parse(gguf_file *f);

#endif
