/* Private layout of the FastConformer encoder, shared by the loader
 * (fastconformer_load.c), the pre-encode, attention and convolution stages
 * and the forward driver. Nothing here is part of the contract in
 * fastconformer.h. */
#ifndef TR_NN_FASTCONFORMER_INTERNAL_H
#define TR_NN_FASTCONFORMER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "nn/depthwise.h"
#include "nn/fastconformer.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

typedef struct tr_fc_block {
    tr_nn_norm norm_ff1, norm_attn, norm_conv, norm_ff2, norm_out;
    tr_nn_linear ff1_w1, ff1_w2, ff2_w1, ff2_w2;
    tr_nn_linear q, k, v, o;
    tr_tensor pos;                        /* linear_pos, no bias */
    const float *pos_bias_u, *pos_bias_v; /* [H][dh] */
    /* pointwise convs as linear views (ne {d, 2d} and {d, d}) of the
     * {1, d, 2d} / {1, d, d} tensors: same bytes, no copy */
    tr_tensor pw1_view, pw2_view;
    tr_nn_linear pw1, pw2;
    /* depthwise taps (nn/depthwise.h), F32, tap-major [k][d] so the
     * time-major conv loop runs along contiguous channels; with batch norm
     * its scale is folded in; owned (taps then bias in one allocation) */
    tr_nn_dw dw;
    const float *cln_w, *cln_b; /* conv LayerNorm gamma/beta (layer_norm only) */
} tr_fc_block;

struct tr_fc_encoder {
    tr_fc_hparams hp;
    int f_out; /* F' = frequency bins after the stride-2 stages */
    /* conv.0 (full, stage 1), then per further stage s (2..) the depthwise
     * conv.{3s-4} and the pointwise conv.{3s-3}: pre_w[2s-3], pre_w[2s-2] */
    const tr_tensor *pre_w[2 * TR_FC_MAX_SUB_STAGES - 1];
    const float *pre_b[2 * TR_FC_MAX_SUB_STAGES - 1];
    tr_nn_linear pre_out; /* [C*F'] -> d */
    tr_fc_block *blocks;  /* n_layers */
    /* multitalker speaker kernel (single-speaker mode, docs/formats/parakeet.md §7.8), after
     * x-scaling: x += W3 ReLU(W0 x + b0) + b3, then x += bg (a constant: the background kernel's
     * input is all zeros, so it is evaluated once at load) */
    bool spk;
    tr_nn_linear spk0, spk3;
    float *spk_bg; /* [d] or NULL; owned */
};

/* Frames after one stride-2 stage (non-causal ceil(L/2), causal L/2 + 1). */
static inline int tr_fc_stage_len(int L, bool causal) {
    return causal ? L / 2 + 1 : (L + 1) / 2;
}

/* Growable per-session buffers; see fastconformer_fwd.c. */
typedef struct tr_fc_buf {
    float *p;
    size_t n; /* floats */
} tr_fc_buf;

bool tr_fc_buf_reserve(tr_fc_buf *b, size_t n);

/* ---- stages (each logs and returns false on failure) ---- */

/* Pre-encode scratch (one buffer: the stage buffers of one time chunk and
 * the flattened frames [TR_FC_PRE_PROJ rounded up to whole chunks][C*F']
 * fed to the output projection). */
typedef struct tr_fc_pre_scratch {
    tr_fc_buf a;
    int chunk; /* encoder frames per chunk; 0 = TR_FC_PRE_CHUNK */
} tr_fc_pre_scratch;

#define TR_FC_PRE_CHUNK 4
#define TR_FC_PRE_PROJ  64

/* Pre-encode: mel [n_mels][T_mel] -> x [T_enc][d] (before x-scaling). */
bool tr_fc_pre_encode(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                      float *x, int T_enc, tr_fc_pre_scratch *s);
/* The same in the caller's scratch of tr_fc_pre_floats() floats (0: the
 * geometry does not give T_enc frames, logged; T_mel 0: the most any input
 * needs); chunk 0 = TR_FC_PRE_CHUNK. */
size_t tr_fc_pre_floats(const tr_fc_encoder *enc, int T_mel, int T_enc, int chunk);
bool tr_fc_pre_encode_into(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                           float *x, int T_enc, int chunk, float *scratch);

/* Tests: encoder frames per pre-encode chunk (0 = default). */
void tr_fc_work_set_pre_chunk(tr_fc_work *w, int frames);

/* Sinusoidal relative-position table [P][d]: row i holds position pos0 - i. */
void tr_fc_pos_table(tr_pool *pool, float *pe, int P, int d, int pos0);

/* Default bias budget: 1 MiB, one head of a 512-frame input (Sortformer's
 * cache + FIFO + chunk is under 400). Heads go through the attention in
 * groups of as many as fit (at least one): their q, k, v and positional
 * rows are projected per group, so a long input holds one head's
 * [T][dh] rows and [T][T] bias, not every head's; per group the work is
 * the same as for all heads at once, and a head's outputs are the same
 * bits either way. */
#define TR_FC_BIAS_BUDGET ((size_t)1 << 20)

/* Tests: shrink the bias budget to exercise the head-group path. */
void tr_fc_work_set_bias_budget(tr_fc_work *w, size_t bytes);

/* One group of heads [h0, h0 + g) of the rel-pos MHSA over T frames: qg,
 * kg, vg [T][ld] (ld = g * dh: the group's columns; qg biased in place by
 * pos_bias_u), pg [P][ld] the group's projected positional rows, qv [T][ld]
 * and bias [g][T][T], bd (bd_floats each thread) and pack (pack_floats,
 * tr_attention's K/V copy; NULL: allocated) scratch -> att columns
 * [h0 * dh, (h0 + g) * dh) of att [T][d] (before linear_out). */
void tr_fc_rel_attention_group(const tr_fc_hparams *hp, const tr_fc_block *blk, tr_pool *pool,
                               int h0, int g, float *qg, const float *kg, const float *vg,
                               const float *pg, int P, int T, float *att, float *qv, float *bias,
                               float *bd, float *pack, size_t pack_floats);
/* Scratch floats per thread that tr_fc_rel_attention_group needs (bd) for
 * T frames and P positional rows. */
size_t tr_fc_bd_floats(const tr_fc_hparams *hp, int T, int P);

/* Rows of the positional table for T frames under the configured attention. */
int tr_fc_pos_rows(const tr_fc_hparams *hp, int T);
/* Position of table row 0 (T - 1 for the full table, W_L for local). */
int tr_fc_pos_first(const tr_fc_hparams *hp, int T);

/* The closed-form rel_shift of one query block [a0, a1) (full table,
 * P = 2T - 1): bias[a][b] = scale * c[a - a0][b + (a1 - 1 - a)], where row
 * r of c (stride ldc) holds q_v[a0 + r] . p[j] for j = T - a1 ...
 * T - a1 + T + (a1 - a0) - 2, i.e. BDr columns [T - a1, 2T - 1 - a0).
 * bias rows have T floats (row a at bias + a * T). */
void tr_fc_shift_rows(const float *c, int ldc, int a0, int a1, int T, float scale, float *bias);

#endif
