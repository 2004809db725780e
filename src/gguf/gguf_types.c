/* Container-level knowledge of ggml tensor types: enough to size and
 * validate a tensor's payload without depending on the kernels' dtype code
 * (docs/formats/gguf.md §9.1, plus the K-quant ids §11.2 lets a .bin file carry). */
#include "gguf/gguf_internal.h"
#include "tensor/dtype.h"

typedef struct {
    int id;
    const char *name;
    int block;
    int bytes;
} type_row;

static const type_row k_types[] = {
    {TR_F32, "F32", 1, 4},       {TR_F16, "F16", 1, 2},       {TR_Q4_0, "Q4_0", 32, 18},
    {TR_Q4_1, "Q4_1", 32, 20},   {TR_Q5_0, "Q5_0", 32, 22},   {TR_Q5_1, "Q5_1", 32, 24},
    {TR_Q8_0, "Q8_0", 32, 34},   {TR_Q8_1, "Q8_1", 32, 36},   {TR_Q2_K, "Q2_K", 256, 84},
    {TR_Q3_K, "Q3_K", 256, 110}, {TR_Q4_K, "Q4_K", 256, 144}, {TR_Q5_K, "Q5_K", 256, 176},
    {TR_Q6_K, "Q6_K", 256, 210}, {TR_Q8_K, "Q8_K", 256, 292}, {TR_BF16, "BF16", 1, 2},
};

static const type_row *find_type(int type) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].id == type) return &k_types[i];
    return NULL;
}

bool tr_gguf_type_geometry(int type, int *block, size_t *block_bytes) {
    const type_row *r = find_type(type);
    if (!r) return false;
    *block = r->block;
    *block_bytes = (size_t)r->bytes;
    return true;
}

bool tr_gguf_type_loadable(int type) {
    /* Q8_1 / Q8_K are intermediate formats of ggml's dot products and have no
     * dequantizer here; a GGUF tensor of those types cannot be used. */
    return find_type(type) && type != TR_Q8_1 && type != TR_Q8_K;
}

const char *tr_gguf_type_label(int type) {
    const type_row *r = find_type(type);
    return r ? r->name : "?";
}

size_t tr_gguf_tensor_bytes(int type, const int64_t ne[4], size_t *nb1) {
    int block;
    size_t bb;
    if (!tr_gguf_type_geometry(type, &block, &bb)) return 0;
    for (int d = 0; d < 4; d++)
        if (ne[d] <= 0) return 0;
    if (ne[0] % block) return 0;
    uint64_t row = (uint64_t)(ne[0] / block);
    if (row > SIZE_MAX / bb) return 0;
    size_t total = (size_t)row * bb;
    *nb1 = total;
    for (int d = 1; d < 4; d++) {
        if ((uint64_t)ne[d] > SIZE_MAX / total) return 0;
        total *= (size_t)ne[d];
    }
    return total;
}
