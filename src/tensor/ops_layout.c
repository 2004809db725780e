/* Layout ops: blocked transpose and embedding-row gather. */
#include "tensor/dtype.h"
#include "tensor/ops.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

void tr_transpose(const float *x, float *y, int rows, int cols) {
    /* 32x32 tiles keep both the read and the write side within a few
     * cache lines per row. */
    enum { B = 32 };
    if (rows <= 0 || cols <= 0) return;
    const size_t bytes = sizeof(float) * (size_t)rows * (size_t)cols;
    if ((uintptr_t)x < (uintptr_t)y + bytes && (uintptr_t)y < (uintptr_t)x + bytes) {
        /* in place (or overlapping): transpose from a copy */
        float *copy = malloc(bytes);
        if (!copy) {
            TR_ERROR("transpose: out of memory for an in-place copy (%d x %d)", rows, cols);
            return;
        }
        memcpy(copy, x, bytes);
        tr_transpose(copy, y, rows, cols);
        free(copy);
        return;
    }
    for (long r0 = 0; r0 < rows; r0 += B) {
        long r1 = r0 + B < rows ? r0 + B : rows;
        for (long c0 = 0; c0 < cols; c0 += B) {
            long c1 = c0 + B < cols ? c0 + B : cols;
            for (long r = r0; r < r1; r++)
                for (long c = c0; c < c1; c++) y[c * rows + r] = x[r * cols + c];
        }
    }
}

void tr_get_rows(const tr_tensor *emb, const int32_t *ids, int n, float *out) {
    const int64_t d = emb->ne[0], vocab = emb->ne[1];
    if (n <= 0) return;
    const size_t rb = tr_type_valid(emb->type) ? tr_row_bytes(emb->type, d) : 0;
    if (rb == 0 || rb > emb->nb1) {
        TR_ERROR("get_rows: %s rows of %lld %s elements do not fit %zu bytes",
                 emb->name ? emb->name : "?", (long long)d, tr_type_name(emb->type), emb->nb1);
        memset(out, 0, sizeof(float) * (size_t)d * (size_t)n);
        return;
    }
    for (int i = 0; i < n; i++) {
        float *o = out + (long)i * d;
        int32_t id = ids[i];
        if (id < 0 || id >= vocab || (size_t)(id + 1) * emb->nb1 > emb->nbytes) {
            memset(o, 0, (size_t)d * sizeof(float));
            continue;
        }
        const char *row = (const char *)emb->data + (size_t)id * emb->nb1;
        if (emb->type == TR_F32)
            memcpy(o, row, (size_t)d * sizeof(float));
        else
            tr_dequantize_row(emb->type, row, o, d);
    }
}

float *tr_rows_f32(const tr_tensor *t, int n) {
    float *out = malloc((size_t)n * (size_t)t->ne[0] * sizeof(float));
    int32_t *ids = malloc((size_t)n * sizeof(int32_t));
    if (out && ids) {
        for (int r = 0; r < n; r++) ids[r] = r;
        tr_get_rows(t, ids, n, out);
    } else {
        free(out);
        out = NULL;
    }
    free(ids);
    return out;
}
