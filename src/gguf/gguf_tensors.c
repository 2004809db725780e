/* Tensor lookup and the per-slot checks models apply (docs/formats/gguf.md §9.2:
 * presence, type allowlist, exact shape with no extra rank). */
#include <inttypes.h>
#include <stdio.h>

#include "gguf/gguf_internal.h"
#include "util/log.h"

int64_t tr_gguf_n_tensors(const gguf_file *f) {
    return f->n_tensors;
}

const tr_tensor *tr_gguf_tensor_at(const gguf_file *f, int64_t i) {
    return (i >= 0 && i < f->n_tensors) ? &f->tensors[i] : NULL;
}

const tr_tensor *tr_gguf_find_tensor(const gguf_file *f, const char *name) {
    int64_t i = tr_gguf_index_find(&f->tensor_index, name);
    return i < 0 ? NULL : &f->tensors[i];
}

static void fmt_shape(char *buf, size_t cap, int n, const int64_t *ne) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < n && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, d ? ", %" PRId64 : "%" PRId64, ne[d]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

bool tr_gguf_tensor_check(const tr_tensor *t, uint32_t types_mask, int n_dims, const int64_t *ne) {
    if (t->type < 0 || t->type >= 32 || !(types_mask & (1u << t->type))) {
        TR_ERROR("gguf: tensor '%s' has type %s, which this slot does not accept", t->name,
                 tr_gguf_type_label(t->type));
        return false;
    }
    bool ok = n_dims >= 1 && n_dims <= 4;
    for (int d = 0; ok && d < 4; d++) ok = t->ne[d] == (d < n_dims ? ne[d] : 1);
    if (!ok) {
        char got[128], want[128];
        fmt_shape(got, sizeof got, t->n_dims, t->ne);
        fmt_shape(want, sizeof want, n_dims < 0 ? 0 : n_dims > 4 ? 4 : n_dims, ne);
        TR_ERROR("gguf: tensor '%s' has shape (ne) %s, expected %s", t->name, got, want);
        return false;
    }
    return true;
}

const tr_tensor *tr_gguf_require_tensor(const gguf_file *f, const char *name, uint32_t types_mask,
                                        int n_dims, const int64_t *ne) {
    const tr_tensor *t = tr_gguf_find_tensor(f, name);
    if (!t) {
        TR_ERROR("gguf: required tensor '%s' is missing", name);
        return NULL;
    }
    return tr_gguf_tensor_check(t, types_mask, n_dims, ne) ? t : NULL;
}

const tr_tensor *tr_gguf_optional_tensor(const gguf_file *f, const char *name, uint32_t types_mask,
                                         int n_dims, const int64_t *ne, bool *bad) {
    const tr_tensor *t = tr_gguf_find_tensor(f, name);
    if (!t) return NULL;
    if (tr_gguf_tensor_check(t, types_mask, n_dims, ne)) return t;
    if (bad) *bad = true;
    return NULL;
}
