/* A read-only view of a (usually memory-mapped) weight tensor. ne[] is in
 * ggml order: ne[0] is the contiguous dimension. A linear layer [out, in]
 * is stored with ne = {in, out}; row r (one output) starts at data + r*nb1. */
#ifndef TR_TENSOR_TENSOR_H
#define TR_TENSOR_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct tr_tensor {
    const char *name;
    int type;      /* tr_type */
    int n_dims;    /* 1..4 */
    int64_t ne[4]; /* unused dims are 1 */
    size_t nb1;    /* bytes per row of ne[0] elements */
    size_t nbytes; /* total payload bytes */
    const void *data;
} tr_tensor;

static inline int64_t tr_tensor_nelements(const tr_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

#endif
