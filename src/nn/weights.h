/* Table-driven weight loading: a family describes the tensors of one block
 * (or of the model's top level) as a table of (name pattern, kind, shape,
 * destination field) and tr_nn_load_weights fills a struct from it. Every
 * tensor goes through one lookup (a GGUF file or a family's own source) and
 * one check (type class and exact shape, tr_gguf_tensor_check), so a malformed
 * file gets the same "tensor 'X' has shape ..., expected ..." message from
 * every family.
 *
 * Shapes may name run-time sizes: TR_NN_DIM(k) in a table stands for
 * dims[k] of the call. Names are printf patterns with at most one %d, the
 * layer index; a linear / norm spec names the base ("dec.layer.%d.ffn.up")
 * and loads "<base>.weight" and "<base>.bias". */
#ifndef TR_NN_WEIGHTS_H
#define TR_NN_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "nn/nn.h"
#include "tensor/tensor.h"

typedef enum {
    TR_NN_W_LINEAR,        /* tr_nn_linear: weight {in, out} (LINEAR class), F32 bias {out} */
    TR_NN_W_LINEAR_NOBIAS, /* tr_nn_linear: weight only, b = NULL */
    TR_NN_W_LINEAR_OPTB,   /* tr_nn_linear: bias loaded iff the call's with_bias */
    TR_NN_W_NORM,          /* tr_nn_norm: F32 weight and bias {ne0} */
    TR_NN_W_NORM_NOBIAS,   /* tr_nn_norm: F32 weight {ne0} only, b = NULL (no beta) */
    TR_NN_W_VEC,           /* const float *: F32 {ne0, ne1} used in place */
    TR_NN_W_TENSOR,        /* const tr_tensor *: `types`, n_dims, ne */
} tr_nn_wkind;

/* A size from the call's dims[] instead of a literal. */
#define TR_NN_DIM(k) (-1 - (int64_t)(k))

typedef struct tr_nn_wspec {
    const char *name; /* printf pattern; %d = layer index */
    tr_nn_wkind kind;
    int64_t ne[4];  /* LINEAR: {in, out}; NORM / VEC: {n[, m]}; TENSOR: up to 4 */
    int n_dims;     /* TENSOR / VEC only (0 → 1) */
    uint32_t types; /* TENSOR only: accepted tr_type mask */
    size_t offset;  /* offsetof the destination field in the filled struct */
} tr_nn_wspec;

/* Where tensors come from: a GGUF file, or a family's own lookup (e.g. a
 * legacy file exposed under canonical names). The lookup logs and returns
 * NULL when a tensor is missing or fails the checks. */
typedef struct tr_nn_wsrc {
    const tr_tensor *(*find)(void *ctx, const char *name, uint32_t types, int n_dims,
                             const int64_t *ne);
    void *ctx;
} tr_nn_wsrc;

/* A source over a GGUF file (tr_gguf_require_tensor). */
tr_nn_wsrc tr_nn_wsrc_gguf(const gguf_file *g);

/* Fills the struct at dst from n specs for layer `layer`. Every spec is
 * tried (each failure logged); returns false if any failed. */
bool tr_nn_load_weights(const tr_nn_wsrc *src, const tr_nn_wspec *specs, size_t n,
                        const int64_t *dims, int layer, bool with_bias, void *dst);

/* The same table for n_layers structs of `stride` bytes starting at base
 * (layer i fills base + i·stride); stops after the first failing layer. */
bool tr_nn_load_layers(const tr_nn_wsrc *src, const tr_nn_wspec *specs, size_t n,
                       const int64_t *dims, int n_layers, bool with_bias, void *base,
                       size_t stride);

/* ---- the shared transformer blocks of nn.h ----
 * Families name the parts of a block differently; these say how, and the
 * loader builds the table. A part "x" of layer i is "<prefix with i>x";
 * an attention's projections are "<attn>.q/.k/.v/.<out>"; LayerNorms and
 * every projection carry a bias except the key projection when !k_bias.
 * A family without some of those tensors says so in tr_nn_block_opts
 * (Moonshine: LayerNorms without beta, attention projections without
 * biases, a fused SwiGLU fc1). */
typedef struct tr_nn_enc_names {
    const char *prefix;         /* e.g. "enc.blocks.%d." */
    const char *ln_attn, *attn; /* "norm_attn", "attn" */
    const char *ln_ffn;         /* "norm_ffn" */
    const char *out;            /* attention output projection: "out" or "o" */
    const char *ffn_up, *ffn_down;
    bool k_bias;
} tr_nn_enc_names;

typedef struct tr_nn_dec_names {
    const char *prefix;
    const char *ln_self, *self_attn;
    const char *ln_cross, *cross_attn;
    const char *ln_ffn;
    const char *out;
    const char *ffn_up, *ffn_down;
    bool k_bias;
} tr_nn_dec_names;

/* Layout options of the *_opt loaders; the zero value is the layout above. */
typedef struct tr_nn_block_opts {
    bool no_ln_bias;   /* LayerNorms have a weight only (b = NULL) */
    bool no_attn_bias; /* no attention projection has a bias (k_bias ignored) */
    bool fused_glu;    /* decoder ffn_up is {d, 2·d_ff}: value then gate; sets
                        * ffn.glu = TR_NN_GLU_FUSED (encoder blocks: ignored) */
} tr_nn_block_opts;

/* n_layers blocks of width d and FFN width d_ff (ffn.act left as is; with
 * fused_glu, d_ff is the width of one half); stops after the first failing
 * layer. */
bool tr_nn_load_enc_blocks(const tr_nn_wsrc *src, const tr_nn_enc_names *names, int64_t d,
                           int64_t d_ff, int n_layers, tr_nn_enc_block *out);
bool tr_nn_load_dec_blocks(const tr_nn_wsrc *src, const tr_nn_dec_names *names, int64_t d,
                           int64_t d_ff, int n_layers, tr_nn_dec_block *out);
/* The same with layout options (opts NULL: the layout above). */
bool tr_nn_load_enc_blocks_opt(const tr_nn_wsrc *src, const tr_nn_enc_names *names,
                               const tr_nn_block_opts *opts, int64_t d, int64_t d_ff, int n_layers,
                               tr_nn_enc_block *out);
bool tr_nn_load_dec_blocks_opt(const tr_nn_wsrc *src, const tr_nn_dec_names *names,
                               const tr_nn_block_opts *opts, int64_t d, int64_t d_ff, int n_layers,
                               tr_nn_dec_block *out);

#endif
