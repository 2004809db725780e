/* Granite's Conformer encoder (docs/formats/granite_speech.md §6.1), shared by the
 * autoregressive Granite Speech family and the NAR editor (docs/formats/granite_nar.md §5.1):
 * an input linear, per block macaron FFN halves (×0.5), block-local attention with the Shaw
 * relative-position bias, the conv module (pointwise + GLU, depthwise with BatchNorm folded,
 * SiLU, pointwise), the second FFN half and a final LayerNorm; after block n_layers/2 the
 * self-conditioning CTC bypass x += softmax(x·ctc_proj)·ctc_bypass.
 *
 * The families differ only in names and in what they take out of the pass: the tensor stems of
 * a block (tr_gc_names), which block outputs are captured and whether a capture at the bypass
 * block is taken before or after the bypass (tr_gc_run), and whether the bypass softmax's
 * channel 0 (the CTC blank probability) is kept. Weights are borrowed views into the file
 * except the relative-position rows (widened to F32) and the depthwise taps (BN folded). */
#ifndef TR_NN_GRANITE_CONFORMER_H
#define TR_NN_GRANITE_CONFORMER_H

#include <stdbool.h>

#include "nn/depthwise.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe.h"

struct gguf_file;

typedef struct tr_gc_hparams {
    int n_layer, d, n_head, head_dim, in_dim, out_dim, d_ffn, kernel, d_conv, max_pos, ctx;
} tr_gc_hparams;

/* One block. The depthwise taps (BatchNorm folded) live in `dw` for nn/depthwise.h. */
typedef struct tr_gc_block {
    tr_nn_norm norm_ff1, norm_attn, norm_conv, norm_ff2, norm_post;
    tr_nn_linear ff1_up, ff1_down, ff2_up, ff2_down;
    tr_nn_linear q, kv, out; /* q, kv without bias; kv rows 0..d-1 = K, d..2d-1 = V */
    float *rel_pos;          /* [2*max_pos+1][head_dim] F32, owned */
    tr_tensor pw1_view, pw2_view;
    tr_nn_linear pw1, pw2;
    tr_nn_dw dw; /* w [k][d_conv] then b [d_conv], one owned allocation */
} tr_gc_block;

typedef struct tr_gc_weights {
    tr_nn_linear input_linear, ctc_proj, ctc_bypass;
    tr_gc_block *blocks; /* [n_layer], owned (tr_gc_free) */
} tr_gc_weights;

/* The tensor stems of a block under "enc.blocks.N." (each + ".weight" / ".bias"); the LayerNorms
 * are norm_ff1, norm_attn, norm_conv, norm_ff2, norm_post in every file. bn is the BatchNorm
 * stem (+ .weight, .bias, .running_mean, .running_var). */
typedef struct tr_gc_names {
    const char *ff1_up, *ff1_down, *ff2_up, *ff2_down, *q, *kv, *out, *rel_pos, *pw1, *pw2, *dw,
        *bn;
} tr_gc_names;

/* The published stems: granite_speech ("ff1.up", "conv.bn", ...) and granite_nar ("ff1_up",
 * "conv_bn", ...). */
extern const tr_gc_names tr_gc_names_granite_speech, tr_gc_names_granite_nar;

/* Reads the size keys every Granite Conformer declares under prefix (n_layers, hidden, n_heads,
 * head_dim, input_dim, output_dim, feedforward_mult, conv_kernel_size, conv_expansion,
 * max_pos_emb, context_size; strict UINT32) and checks n_heads·head_dim = hidden,
 * context_size <= max_pos_emb and an odd kernel. GGUF (logged with who) otherwise. */
transcribe_status tr_gc_read_keys(const struct gguf_file *f, const char *prefix, const char *who,
                                  tr_gc_hparams *hp);

/* Loads enc.input_linear, enc.ctc_proj, enc.ctc_bypass and the blocks by exact shape and type
 * class (linears TR_TYPES_LINEAR, pointwise / depthwise kernels TR_TYPES_CONV, vectors F32),
 * folds BatchNorm (eps 1e-5) into the depthwise taps and widens the relative-position tables.
 * GGUF on a missing / misshaped / mistyped tensor or a non-positive variance (logged with who),
 * OOM. w is zeroed first; free it with tr_gc_free also on failure. */
transcribe_status tr_gc_load(const struct gguf_file *f, const char *who, const tr_gc_names *names,
                             const tr_gc_hparams *hp, tr_gc_weights *w);
void tr_gc_free(const tr_gc_hparams *hp, tr_gc_weights *w);

/* What one pass takes out besides the final hidden state. */
typedef struct tr_gc_run {
    /* captures: after block cap_block[j] (0-based; -1 never captures) x is copied into
     * cap_out + t·cap_stride + j·d for every frame t; cap_after_bypass decides which side of the
     * bypass a capture at the bypass block sees */
    int n_cap;
    const int *cap_block;
    bool cap_after_bypass;
    float *cap_out;
    long cap_stride;
    /* final x (after the last block) into out + t·out_stride */
    float *out;
    long out_stride;
    /* optional [T]: channel 0 of the bypass softmax (the CTC blank probability) */
    float *blank;
    /* optional: polled before the input linear and after every block; true stops with ABORTED */
    bool (*should_abort)(void *user);
    void *abort_user;
    /* optional: called after every block with (blocks done, n_layer) */
    void (*on_block)(void *user, int done, int total);
    void *block_user;
} tr_gc_run;

/* The encoder on x [T][in_dim]. OK, ABORTED (from the poll), OOM (logged with who). Results do
 * not depend on the thread count. */
transcribe_status tr_gc_encode(const tr_gc_hparams *hp, const tr_gc_weights *w, tr_pool *pool,
                               const char *who, const float *x, int T, const tr_gc_run *run);

#endif
