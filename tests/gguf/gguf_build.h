/* Byte-level GGUF image builder for tests: lets a test write exactly the
 * (possibly malformed) bytes it wants, which the writer would refuse. */
#ifndef TR_TEST_GGUF_BUILD_H
#define TR_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *p;
    size_t len, cap;
} gbuf;

static inline void gb_bytes(gbuf *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + n) nc *= 2;
        b->p = realloc(b->p, nc);
        if (!b->p) abort();
        b->cap = nc;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void gb_le(gbuf *b, uint64_t v, int n) {
    uint8_t t[8];
    for (int i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
    gb_bytes(b, t, (size_t)n);
}

static inline void gb_u8(gbuf *b, uint8_t v) {
    gb_le(b, v, 1);
}
static inline void gb_u32(gbuf *b, uint32_t v) {
    gb_le(b, v, 4);
}
static inline void gb_u64(gbuf *b, uint64_t v) {
    gb_le(b, v, 8);
}
static inline void gb_str(gbuf *b, const char *s) {
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}
static inline void gb_header(gbuf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
static inline void gb_pad(gbuf *b, size_t align) {
    while (b->len % align) gb_u8(b, 0);
}
/* A tensor info record (offset relative to the data section). */
static inline void gb_tensor(gbuf *b, const char *name, uint32_t n_dims, const int64_t *ne,
                             uint32_t type, uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, (uint64_t)ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}
static inline void gb_free(gbuf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#endif
