/* Table-driven weight loading (weights.h). */
#include <stdio.h>
#include <string.h>

#include "nn/weights.h"
#include "util/log.h"

static const tr_tensor *gguf_find(void *ctx, const char *name, uint32_t types, int n_dims,
                                  const int64_t *ne) {
    return gguf_require_tensor((const gguf_file *)ctx, name, types, n_dims, ne);
}

tr_nn_wsrc tr_nn_wsrc_gguf(const gguf_file *g) {
    return (tr_nn_wsrc){gguf_find, (void *)g};
}

static int64_t dim(int64_t v, const int64_t *dims) {
    return v < 0 ? dims[-1 - v] : v;
}

/* One tensor "<base><suffix>" of the given class and shape. */
static const tr_tensor *get(const tr_nn_wsrc *src, const char *base, const char *suffix,
                            uint32_t types, int n_dims, const int64_t *ne, bool *ok) {
    char name[192];
    int w = snprintf(name, sizeof name, "%s%s", base, suffix);
    if (w < 0 || (size_t)w >= sizeof name) {
        TR_ERROR("nn: tensor name '%s%s' is too long", base, suffix);
        *ok = false;
        return NULL;
    }
    const tr_tensor *t = src->find(src->ctx, name, types, n_dims, ne);
    if (!t) *ok = false;
    return t;
}

static const float *get_f32(const tr_nn_wsrc *src, const char *base, const char *suffix, int n_dims,
                            const int64_t *ne, bool *ok) {
    const tr_tensor *t = get(src, base, suffix, TR_TYPES_F32, n_dims, ne, ok);
    return t ? (const float *)t->data : NULL;
}

/* The pattern with its "%d" (if any) replaced by the layer index. */
static bool expand(const char *pattern, int layer, char *out, size_t cap) {
    const char *at = strstr(pattern, "%d");
    int w = at ? snprintf(out, cap, "%.*s%d%s", (int)(at - pattern), pattern, layer, at + 2)
               : snprintf(out, cap, "%s", pattern);
    return w >= 0 && (size_t)w < cap;
}

static bool load_one(const tr_nn_wsrc *src, const tr_nn_wspec *s, const int64_t *dims, int layer,
                     bool with_bias, char *dst) {
    char base[160];
    if (!expand(s->name, layer, base, sizeof base)) {
        TR_ERROR("nn: tensor name pattern '%s' is too long", s->name);
        return false;
    }
    int64_t ne[4];
    for (int d = 0; d < 4; d++) ne[d] = dim(s->ne[d], dims);
    for (int d = 0; d < 4; d++)
        if (ne[d] == 0) ne[d] = 1; /* unused trailing sizes */
    bool ok = true;
    void *field = dst + s->offset;
    switch (s->kind) {
    case TR_NN_W_LINEAR:
    case TR_NN_W_LINEAR_NOBIAS:
    case TR_NN_W_LINEAR_OPTB: {
        tr_nn_linear *l = field;
        l->w = get(src, base, ".weight", TR_TYPES_LINEAR, 2, ne, &ok);
        bool bias = s->kind == TR_NN_W_LINEAR || (s->kind == TR_NN_W_LINEAR_OPTB && with_bias);
        l->b = bias ? get_f32(src, base, ".bias", 1, &ne[1], &ok) : NULL;
        break;
    }
    case TR_NN_W_NORM: {
        tr_nn_norm *nm = field;
        nm->w = get_f32(src, base, ".weight", 1, ne, &ok);
        nm->b = get_f32(src, base, ".bias", 1, ne, &ok);
        break;
    }
    case TR_NN_W_VEC:
        *(const float **)field = get_f32(src, base, "", s->n_dims ? s->n_dims : 1, ne, &ok);
        break;
    case TR_NN_W_TENSOR:
        *(const tr_tensor **)field = get(src, base, "", s->types, s->n_dims, ne, &ok);
        break;
    default:
        TR_ERROR("nn: weight spec '%s' has an unknown kind", s->name);
        ok = false;
    }
    return ok;
}

bool tr_nn_load_weights(const tr_nn_wsrc *src, const tr_nn_wspec *specs, size_t n,
                        const int64_t *dims, int layer, bool with_bias, void *dst) {
    bool ok = true;
    for (size_t i = 0; i < n; i++)
        if (!load_one(src, &specs[i], dims, layer, with_bias, dst)) ok = false;
    return ok;
}

bool tr_nn_load_layers(const tr_nn_wsrc *src, const tr_nn_wspec *specs, size_t n,
                       const int64_t *dims, int n_layers, bool with_bias, void *base,
                       size_t stride) {
    for (int i = 0; i < n_layers; i++)
        if (!tr_nn_load_weights(src, specs, n, dims, i, with_bias,
                                (char *)base + (size_t)i * stride))
            return false;
    return true;
}
