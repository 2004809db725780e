/* A Conformer block with rotary self-attention, shared by the families
 * whose encoder has no relative-position table (GigaAM today,
 * docs/formats/gigaam.md §5.2; MedASR-style files next):
 *
 *   x += s_ff · FF1(LN(x))            FF(y) = W2 · silu(W1 y + b1) + b2
 *   x += ATTN(LN(x))                  rotary multi-head attention, no mask
 *   x += CONV(LN(x))                  pointwise → GLU → depthwise → LN → SiLU → pointwise
 *   x += s_ff · FF2(LN(x))
 *   x  = LN(x)                        (norm_out)
 *
 * (MedASR weights the FFN and conv residuals, x = w0·x + w1·y, and folds a
 * batch norm into the depthwise conv instead of the LayerNorm; tr_cf_dims.)
 *
 * Rotary positions (NeoX rotate-half pairs (i, i + dh/2) inside each head,
 * angle p · theta^(-2i/dh), p = 0 .. T-1 per utterance) are applied either
 * to the normalised block input before the Q and K projections (the values
 * read the unrotated input: TR_CF_ROT_INPUT, GigaAM) or to q and k after
 * them (TR_CF_ROT_QK).
 *
 * Several utterances run packed (segment i's rows follow segment i-1's, no
 * padding): norms, projections and element-wise passes run once over all
 * rows, attention and the depthwise conv per segment, so a segment's rows
 * equal its single run's. Weights are borrowed views (any tr_matmul type
 * for projections); the depthwise taps (batch norm folded in) are made from
 * the file's kernel in the scratch at every call, so a block owns nothing.
 * Results do not depend on the thread count.
 *
 * Working memory is bounded: every row-wise stage runs in row blocks of at
 * most block_rows rows (TR_CF_BLOCK_ROWS by default; the feed-forward's
 * hidden columns in blocks of at most 2·d_model, each weight read once per
 * row block), attention a group of heads at a time (as many as keep the
 * group's keys and values within 512 KiB: their rows for the whole segment,
 * then every query block into the group's columns of the context rows), the
 * depthwise conv per row block, so only the context (then GLU) rows of the
 * longest segment ([T][d_model]) and one group's keys and values grow with
 * the input (tr_cf_scratch). */
#ifndef TR_NN_CONFORMER_H
#define TR_NN_CONFORMER_H

#include <stdbool.h>
#include <stddef.h>

#include "nn/depthwise.h"
#include "nn/nn.h"
#include "nn/weights.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

typedef enum {
    TR_CF_ROT_NONE = 0,  /* no positions in the block */
    TR_CF_ROT_INPUT = 1, /* rotate LN(x) before W_q / W_k (GigaAM) */
    TR_CF_ROT_QK = 2,    /* rotate q and k after the projections */
} tr_cf_rot;

typedef struct tr_cf_dims {
    int d_model, n_head, d_ff, kernel; /* padding (k-1)/2 before, k-1-(k-1)/2 after */
    float ln_eps;                      /* every LayerNorm of the block */
    float ff_scale;                    /* s_ff, 0.5 for the macaron halves */
    tr_cf_rot rot;
    float rot_theta; /* rotary base (GigaAM 5000) */
    /* Weighted residuals x = w0·x + w1·y (MedASR: FFN 1.5·x + 0.5·y, conv 2·x + y): the FFN's
     * w0 and the conv module's w0 / w1, where 0 means 1 (the plain residual); the FFN's w1 is
     * ff_scale. */
    float ff_w0, conv_w0, conv_w1;
    bool conv_bn;   /* batch norm folded into the depthwise taps instead of conv.ln */
    int block_rows; /* rows per block of the row-wise stages; 0 = TR_CF_BLOCK_ROWS */
} tr_cf_dims;

/* Default row block: one block up to 20 s at 25 frames/s (each weight read
 * once per stage); above that each weight is widened once per block.
 * MedASR Q8_0 at 84 s in one pass (T = 2106), 2 threads: one block peaks at
 * 173 MiB and encodes in 4.9 s, blocks of 512 rows at 157 MiB in 5.1-5.3 s
 * (+4-5 %). */
#define TR_CF_BLOCK_ROWS 512

typedef struct tr_cf_block {
    tr_nn_norm norm_ff1, norm_attn, norm_conv, norm_ff2, norm_out;
    tr_nn_linear ff1_up, ff1_down, ff2_up, ff2_down;
    tr_nn_attn attn;
    tr_nn_linear pw1, pw2; /* pointwise convs as linears {d, 2d} / {d, d} */
    tr_nn_norm conv_ln;    /* LayerNorm after the depthwise conv */
    /* file tensors the loader fills; tr_cf_block_prepare reads them */
    const tr_tensor *pw1_w, *pw2_w; /* {1, d, 2d} / {1, d, d} */
    const float *pw1_b, *pw2_b;
    const tr_tensor *dw_w; /* {k, 1, d}, F32 or F16 */
    const float *dw_b;     /* [d] or NULL (no conv bias) */
    /* conv_bn: the batch norm's gamma, beta, running mean and variance [d] (eps 1e-5) */
    const float *bn_w, *bn_b, *bn_mean, *bn_var;
    /* set by prepare */
    tr_tensor pw1_view, pw2_view;
} tr_cf_block;

/* The loader table of one block for tr_nn_load_layers: names relative to a
 * prefix pattern with the layer index ("enc.blocks.%d."), parts named as
 * GigaAM's files name them (norm_ff1, ff1.linear1, attn.linear_q, ...,
 * conv.pointwise1, conv.depthwise, conv.ln, norm_out). Sizes: dims[0] = d,
 * dims[1] = d_ff, dims[2] = kernel, dims[3] = 2·d. TR_CF_NSPECS entries are
 * written into specs, their names into the caller's buffer (TR_CF_NSPECS
 * rows of 96 chars). Returns the count. */
#define TR_CF_NSPECS 20
size_t tr_cf_block_specs(const char *prefix, tr_nn_wspec *specs, char (*names)[96]);

/* Sets the pointwise views of a loaded block (pointwise and depthwise biases
 * may be NULL; with conv_bn the caller has checked var + 1e-5 > 0). Always
 * true: nothing is allocated (the depthwise taps are folded per call); kept,
 * with tr_cf_block_free, so that a block may own something again. */
bool tr_cf_block_prepare(tr_cf_block *b, const tr_cf_dims *d);
void tr_cf_block_free(tr_cf_block *b);

/* Scratch floats the block needs for the packed segments seg_T[0 .. n_seg):
 * max(T_max·d_model, B·ff column block) + 3·B·d_model + one head group's
 * keys and values (at most max(2·T·head_dim, 128 Ki floats)) + the
 * depthwise taps ((2k + 1)·d_model), with T_max the longest segment and B
 * the largest row block the splits make (at most block_rows: 625 rows in
 * blocks of at most 512 are 313 + 312). */
size_t tr_cf_scratch(const tr_cf_dims *d, int n_seg, const int *seg_T);

/* One block in place on x [rows][d_model], rows = sum of seg_T[0 .. n_seg). */
void tr_cf_block_fwd(tr_pool *pool, const tr_cf_block *b, const tr_cf_dims *d, float *x, int n_seg,
                     const int *seg_T, float *scratch);

/* The rotation alone, in place on x [T][n_head·head_dim] at positions
 * 0 .. T-1 (exposed for tests). */
void tr_cf_rotate(float *x, int T, int n_head, int head_dim, float theta);

#endif
