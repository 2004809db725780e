/* GGUF reader (versions 2 and 3). The file is memory-mapped and every
 * tensor's data is used in place. Model files are untrusted input: every
 * count, length, offset, type and shape is validated against the file size
 * before use, and failures return TRANSCRIBE_ERR_GGUF with a log line naming
 * the problem.
 *
 * Choices where the format leaves room (documented here for loaders):
 * - every ne[d] must be >= 1 (empty tensors are rejected: no model has one,
 *   and a zero would make every size check vacuous); n_dims is 1..4;
 * - tensor types are the dequantizable ggml ids (tr_type_valid: not Q8_1 /
 *   Q8_K) and ne[0] must be a multiple of the type's block size;
 * - offsets must be multiples of the alignment (general.alignment: UINT32,
 *   a power of two <= 1 MiB; default 32) and lie inside the data section;
 *   tensors need not be in file order and may not share a name;
 * - keys are non-empty, NUL-free and unique; arrays nest at most 4 deep;
 *   tensor names are 1..1024 bytes, NUL-free;
 * - F32 / F16 / BF16 data must be 4 / 2 / 2-byte aligned in memory (always
 *   true for mapped files with alignment >= 4), so kernels may load them
 *   directly. */
#ifndef TR_GGUF_GGUF_H
#define TR_GGUF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/tensor.h"
#include "transcribe.h"

typedef enum {
    GGUF_T_UINT8 = 0,
    GGUF_T_INT8 = 1,
    GGUF_T_UINT16 = 2,
    GGUF_T_INT16 = 3,
    GGUF_T_UINT32 = 4,
    GGUF_T_INT32 = 5,
    GGUF_T_FLOAT32 = 6,
    GGUF_T_BOOL = 7,
    GGUF_T_STRING = 8,
    GGUF_T_ARRAY = 9,
    GGUF_T_UINT64 = 10,
    GGUF_T_INT64 = 11,
    GGUF_T_FLOAT64 = 12,
} gguf_vtype;

/* Returned by the per-index accessors for an out-of-range index or a
 * non-array KV. */
#define GGUF_T_NONE ((gguf_vtype)-1)
const char *tr_gguf_vtype_name(gguf_vtype t); /* "UINT32", ...; "?" unknown */
/* Bytes of one value of a fixed-size type; 0 for STRING, ARRAY and unknown types. */
size_t tr_gguf_vtype_size(gguf_vtype t);

typedef struct gguf_file gguf_file;

/* Opens and validates a file: FILE_NOT_FOUND when it does not exist, GGUF for
 * anything unreadable or malformed. */
transcribe_status tr_gguf_open(const char *path, gguf_file **out);
/* Parses an in-memory image (borrowed; must outlive the gguf_file). Used by
 * tests and the fuzzer. */
transcribe_status tr_gguf_open_memory(const void *data, size_t size, gguf_file **out);
void tr_gguf_close(gguf_file *f); /* NULL ok */

uint32_t tr_gguf_version(const gguf_file *f);
size_t tr_gguf_alignment(const gguf_file *f);

/* ---- key/value metadata ---- */
int64_t tr_gguf_n_kv(const gguf_file *f);
int64_t tr_gguf_find_key(const gguf_file *f, const char *key); /* -1 when absent */
const char *tr_gguf_key_name(const gguf_file *f, int64_t i);   /* NUL-terminated copy */
gguf_vtype tr_gguf_kv_type(const gguf_file *f, int64_t i);
gguf_vtype tr_gguf_kv_arr_type(const gguf_file *f, int64_t i); /* element type of an ARRAY */
uint64_t tr_gguf_kv_arr_n(const gguf_file *f, int64_t i);      /* element count of an ARRAY */
/* Raw element pointer of a numeric ARRAY (little-endian, packed, possibly
 * unaligned: read with memcpy or the typed getters below). */
const void *tr_gguf_kv_arr_data(const gguf_file *f, int64_t i);
/* String element j of a STRING ARRAY: NUL-terminated copy owned by the file. */
const char *tr_gguf_kv_arr_str(const gguf_file *f, int64_t i, uint64_t j);
/* The encoded value of KV i as stored in the file (everything after its
 * 4-byte type field; arrays include their element type and count). Used by
 * the writer to copy any KV verbatim. NULL for an out-of-range index. */
const void *tr_gguf_kv_raw(const gguf_file *f, int64_t i, size_t *len);

/* Tri-state typed reads (docs/formats/gguf.md §3.1): return 0 when the key is
 * absent (out untouched), 1 when present with exactly the expected type (out
 * set), and -1 when present with another type (an error is logged; callers
 * turn it into TRANSCRIBE_ERR_GGUF). */
int tr_gguf_get_u8(const gguf_file *f, const char *key, uint8_t *out);
int tr_gguf_get_i8(const gguf_file *f, const char *key, int8_t *out);
int tr_gguf_get_u16(const gguf_file *f, const char *key, uint16_t *out);
int tr_gguf_get_i16(const gguf_file *f, const char *key, int16_t *out);
int tr_gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
int tr_gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);
int tr_gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
int tr_gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
int tr_gguf_get_f32(const gguf_file *f, const char *key, float *out);
int tr_gguf_get_f64(const gguf_file *f, const char *key, double *out);
int tr_gguf_get_bool(const gguf_file *f, const char *key, bool *out);
int tr_gguf_get_str(const gguf_file *f, const char *key, const char **out);
/* UINT32 or INT32 (special-token ids, docs/formats/gguf.md §3.2); negative INT32 counts as
 * absent-id -1. */
int tr_gguf_get_token_id(const gguf_file *f, const char *key, int32_t *out);
/* Arrays: element type must match exactly; *out points into file-owned
 * storage (decoded, aligned copies for numeric arrays), *n is the count. */
int tr_gguf_get_arr_i32(const gguf_file *f, const char *key, const int32_t **out, uint64_t *n);
int tr_gguf_get_arr_f32(const gguf_file *f, const char *key, const float **out, uint64_t *n);
int tr_gguf_get_arr_str(const gguf_file *f, const char *key, const char *const **out, uint64_t *n);

/* ---- tensors ---- */
int64_t tr_gguf_n_tensors(const gguf_file *f);
const tr_tensor *tr_gguf_tensor_at(const gguf_file *f, int64_t i);
const tr_tensor *tr_gguf_find_tensor(const gguf_file *f, const char *name); /* NULL when absent */

/* Looks up a tensor a model needs and checks it: present, type allowed by
 * `types_mask` (bit t set for each accepted tr_type), and ne[0..n_dims-1]
 * equal to `ne` with every higher ne equal to 1. Logs a clear error naming
 * the tensor on failure and returns NULL. */
const tr_tensor *tr_gguf_require_tensor(const gguf_file *f, const char *name, uint32_t types_mask,
                                        int n_dims, const int64_t *ne);
/* The checks of tr_gguf_require_tensor on a tensor already found (also used
 * for legacy .bin tensors); logs and returns false on a mismatch. */
bool tr_gguf_tensor_check(const tr_tensor *t, uint32_t types_mask, int n_dims, const int64_t *ne);
/* Same but absence is not an error (returns NULL silently); a present tensor
 * that fails the checks sets *bad = true. */
const tr_tensor *tr_gguf_optional_tensor(const gguf_file *f, const char *name, uint32_t types_mask,
                                         int n_dims, const int64_t *ne, bool *bad);

/* Masks for the slot classes of docs/formats/gguf.md §9.3. */
#define TR_TYPES_F32  (1u << 0)
#define TR_TYPES_CONV ((1u << 0) | (1u << 1))
#define TR_TYPES_LINEAR                                                                            \
    ((1u << 0) | (1u << 1) | (1u << 30) | (1u << 2) | (1u << 3) | (1u << 6) | (1u << 7) |          \
     (1u << 8) | (1u << 12) | (1u << 13) | (1u << 14))

#endif
