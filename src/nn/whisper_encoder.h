/* The Whisper audio encoder (docs/formats/whisper.md §6, docs/formats/moss.md §6.1,
 * docs/formats/voxtral.md §5), shared by the Whisper family, MOSS (whose encoder is
 * Whisper-medium's) and Voxtral (Whisper-large-v3's):
 * conv stem (k3 s1 → GELU → k3 s2 → GELU), learned positional table,
 * pre-LN blocks, final LayerNorm. Tensor names are the published ones
 * ("enc.conv.0.weight", "enc.blocks.N.attn.q.weight", ...) in every family
 * that uses it. Weights are borrowed views; only the block array is owned. */
#ifndef TR_NN_WHISPER_ENCODER_H
#define TR_NN_WHISPER_ENCODER_H

#include <stdbool.h>

#include "nn/nn.h"
#include "nn/weights.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

typedef struct tr_whenc {
    /* geometry, set by the caller before tr_whenc_load */
    int n_layers, d_model, n_head, d_ffn, n_mels;
    int n_pos; /* positional table rows (max_source_positions) */
    /* final LayerNorm's name stem (".weight" / ".bias" appended); NULL =
     * "enc.final_norm" (Whisper, MOSS); Voxtral's is "enc.ln_post" */
    const char *ln_name;
    /* weights (filled by tr_whenc_load) */
    tr_nn_dims dims;
    const tr_tensor *conv0_w, *conv1_w; /* ne {3, in, out} */
    const float *conv0_b, *conv1_b;
    const float *pos;        /* [n_pos][d_model] */
    tr_nn_norm ln;           /* final LayerNorm */
    tr_nn_enc_block *blocks; /* owned, n_layers */
} tr_whenc;

/* The names a Whisper block's feed-forward half and attention output carry
 * in the published files, encoder and decoder alike (every .bias present
 * but the key projections'): the shared part of a tr_nn_enc_names /
 * tr_nn_dec_names initializer. */
#define TR_WHISPER_BLOCK_NAMES                                                                     \
    .ln_ffn = "norm_ffn", .out = "out", .ffn_up = "ffn.fc1", .ffn_down = "ffn.fc2", .k_bias = false

/* Loads every encoder tensor from src (each failure logged; false if any
 * failed or on OOM). The geometry fields must be set and positive. */
bool tr_whenc_load(const tr_nn_wsrc *src, tr_whenc *e);
void tr_whenc_free(tr_whenc *e);

/* Scratch for one forward of up to n_frames mel frames. */
typedef struct tr_whenc_work {
    int n_frames;
    float *conv_a;  /* [D][n_frames], inside scratch */
    float *conv_b;  /* [D][n_frames/2], inside scratch after conv_a */
    float *scratch; /* block scratch */
} tr_whenc_work;

bool tr_whenc_work_init(tr_whenc_work *w, const tr_whenc *e, int n_frames);
void tr_whenc_work_free(tr_whenc_work *w);

/* mel [n_mels][n_frames] (n_frames even, <= w->n_frames, n_frames/2 <=
 * n_pos) → out [n_frames/2][d_model]. */
void tr_whenc_forward(tr_pool *pool, const tr_whenc *e, tr_whenc_work *w, const float *mel,
                      int n_frames, float *out);

#endif
