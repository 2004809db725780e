/* Table-driven weight loading (weights.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nn/weights.h"
#include "util/log.h"

static const tr_tensor *gguf_find(void *ctx, const char *name, uint32_t types, int n_dims,
                                  const int64_t *ne) {
    return tr_gguf_require_tensor((const gguf_file *)ctx, name, types, n_dims, ne);
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
    case TR_NN_W_NORM:
    case TR_NN_W_NORM_NOBIAS: {
        tr_nn_norm *nm = field;
        nm->w = get_f32(src, base, ".weight", 1, ne, &ok);
        nm->b = s->kind == TR_NN_W_NORM ? get_f32(src, base, ".bias", 1, ne, &ok) : NULL;
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

/* ---- block tables built from a family's part names ---- */

enum { BLK_D, BLK_F, BLK_F2 };
#define BLK_MAX 16

typedef struct {
    tr_nn_wspec spec[BLK_MAX];
    char name[BLK_MAX][128];
    size_t n;
    bool ok;
} blk_table;

static void blk_add(blk_table *t, const char *prefix, const char *part, const char *sub,
                    tr_nn_wkind kind, int64_t in, int64_t out, size_t offset) {
    if (t->n == BLK_MAX) {
        t->ok = false;
        return;
    }
    char *name = t->name[t->n];
    int w = snprintf(name, sizeof t->name[0], "%s%s%s", prefix, part, sub ? sub : "");
    if (w < 0 || (size_t)w >= sizeof t->name[0]) {
        TR_ERROR("nn: block tensor name '%s%s' is too long", prefix, part);
        t->ok = false;
        return;
    }
    t->spec[t->n++] = (tr_nn_wspec){name, kind, {in, out}, 0, 0, offset};
}

static void blk_attn(blk_table *t, const char *prefix, const char *attn, const char *out,
                     bool k_bias, bool no_bias, size_t offset) {
    char sub[48];
    const int64_t D = TR_NN_DIM(BLK_D);
    const char *const parts[4] = {".q", ".k", ".v", NULL};
    const size_t offs[4] = {offsetof(tr_nn_attn, q), offsetof(tr_nn_attn, k),
                            offsetof(tr_nn_attn, v), offsetof(tr_nn_attn, o)};
    for (int i = 0; i < 4; i++) {
        snprintf(sub, sizeof sub, ".%s", out);
        const tr_nn_wkind kind =
            no_bias || (i == 1 && !k_bias) ? TR_NN_W_LINEAR_NOBIAS : TR_NN_W_LINEAR;
        blk_add(t, prefix, attn, parts[i] ? parts[i] : sub, kind, D, D, offset + offs[i]);
    }
}

static void blk_ffn(blk_table *t, const char *prefix, const char *up, const char *down,
                    bool fused_glu, size_t offset) {
    const int64_t D = TR_NN_DIM(BLK_D), F = TR_NN_DIM(BLK_F);
    const int64_t up_out = fused_glu ? TR_NN_DIM(BLK_F2) : F;
    blk_add(t, prefix, up, NULL, TR_NN_W_LINEAR, D, up_out, offset + offsetof(tr_nn_ffn, fc1));
    blk_add(t, prefix, down, NULL, TR_NN_W_LINEAR, F, D, offset + offsetof(tr_nn_ffn, fc2));
}

static void blk_norm(blk_table *t, const char *prefix, const char *part, bool no_bias,
                     size_t offset) {
    blk_add(t, prefix, part, NULL, no_bias ? TR_NN_W_NORM_NOBIAS : TR_NN_W_NORM, TR_NN_DIM(BLK_D),
            0, offset);
}

bool tr_nn_load_enc_blocks(const tr_nn_wsrc *src, const tr_nn_enc_names *nm, int64_t d,
                           int64_t d_ff, int n_layers, tr_nn_enc_block *out) {
    return tr_nn_load_enc_blocks_opt(src, nm, NULL, d, d_ff, n_layers, out);
}

bool tr_nn_load_dec_blocks(const tr_nn_wsrc *src, const tr_nn_dec_names *nm, int64_t d,
                           int64_t d_ff, int n_layers, tr_nn_dec_block *out) {
    return tr_nn_load_dec_blocks_opt(src, nm, NULL, d, d_ff, n_layers, out);
}

bool tr_nn_load_enc_blocks_opt(const tr_nn_wsrc *src, const tr_nn_enc_names *nm,
                               const tr_nn_block_opts *opts, int64_t d, int64_t d_ff, int n_layers,
                               tr_nn_enc_block *out) {
    static const tr_nn_block_opts none = {0};
    if (!opts) opts = &none;
    blk_table t = {.ok = true};
    const bool nb = opts->no_ln_bias;
    blk_norm(&t, nm->prefix, nm->ln_attn, nb, offsetof(tr_nn_enc_block, ln_attn));
    blk_attn(&t, nm->prefix, nm->attn, nm->out, nm->k_bias, opts->no_attn_bias,
             offsetof(tr_nn_enc_block, attn));
    blk_norm(&t, nm->prefix, nm->ln_ffn, nb, offsetof(tr_nn_enc_block, ln_ffn));
    blk_ffn(&t, nm->prefix, nm->ffn_up, nm->ffn_down, false, offsetof(tr_nn_enc_block, ffn));
    const int64_t dims[3] = {[BLK_D] = d, [BLK_F] = d_ff, [BLK_F2] = 2 * d_ff};
    return t.ok && tr_nn_load_layers(src, t.spec, t.n, dims, n_layers, true, out, sizeof *out);
}

bool tr_nn_load_dec_blocks_opt(const tr_nn_wsrc *src, const tr_nn_dec_names *nm,
                               const tr_nn_block_opts *opts, int64_t d, int64_t d_ff, int n_layers,
                               tr_nn_dec_block *out) {
    static const tr_nn_block_opts none = {0};
    if (!opts) opts = &none;
    blk_table t = {.ok = true};
    const bool nb = opts->no_ln_bias, na = opts->no_attn_bias;
    blk_norm(&t, nm->prefix, nm->ln_self, nb, offsetof(tr_nn_dec_block, ln_self));
    blk_attn(&t, nm->prefix, nm->self_attn, nm->out, nm->k_bias, na,
             offsetof(tr_nn_dec_block, self));
    blk_norm(&t, nm->prefix, nm->ln_cross, nb, offsetof(tr_nn_dec_block, ln_cross));
    blk_attn(&t, nm->prefix, nm->cross_attn, nm->out, nm->k_bias, na,
             offsetof(tr_nn_dec_block, cross));
    blk_norm(&t, nm->prefix, nm->ln_ffn, nb, offsetof(tr_nn_dec_block, ln_ffn));
    blk_ffn(&t, nm->prefix, nm->ffn_up, nm->ffn_down, opts->fused_glu,
            offsetof(tr_nn_dec_block, ffn));
    const int64_t dims[3] = {[BLK_D] = d, [BLK_F] = d_ff, [BLK_F2] = 2 * d_ff};
    if (!t.ok || !tr_nn_load_layers(src, t.spec, t.n, dims, n_layers, true, out, sizeof *out))
        return false;
    if (opts->fused_glu)
        for (int i = 0; i < n_layers; i++) out[i].ffn.glu = TR_NN_GLU_FUSED;
    return true;
}
