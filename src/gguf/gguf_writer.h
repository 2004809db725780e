/* GGUF v3 writer for tools and tests: collect KVs and tensors, then write
 * once. Data pointers passed in are copied at add time. */
#ifndef TR_GGUF_WRITER_H
#define TR_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

typedef struct gguf_writer gguf_writer;

gguf_writer *tr_gguf_writer_create(void);
void tr_gguf_writer_free(gguf_writer *w);

bool tr_gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
bool tr_gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
bool tr_gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
bool tr_gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
bool tr_gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
bool tr_gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
bool tr_gguf_writer_set_arr_i32(gguf_writer *w, const char *key, const int32_t *v, size_t n);
bool tr_gguf_writer_set_arr_f32(gguf_writer *w, const char *key, const float *v, size_t n);
bool tr_gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *v, size_t n);
/* Copies a KV (any type, arrays included) from an open file. */
bool tr_gguf_writer_copy_kv(gguf_writer *w, const gguf_file *src, int64_t i);

/* Adds a tensor of `type` with ggml-order dims; `data` holds
 * tr_row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3] bytes. */
bool tr_gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, int n_dims,
                            const int64_t *ne, const void *data);

/* Writes the file (version 3, alignment 32). */
transcribe_status tr_gguf_writer_write(const gguf_writer *w, const char *path);
/* Serialises to a malloc'ed buffer (tests, fuzz corpus). */
transcribe_status tr_gguf_writer_to_memory(const gguf_writer *w, void **out, size_t *size);

#endif
