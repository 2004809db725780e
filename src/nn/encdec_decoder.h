/* The decoder of an encoder-decoder family, configured instead of written:
 * token embedding + position → the decoder blocks of nn.h (causal
 * self-attention with a KV cache, cross-attention over the sequence's own
 * encoder output, FFN) → final norm → vocabulary head. Whisper and Canary
 * are two configurations of it; a new encoder-decoder family fills a
 * tr_ed_decoder at load and calls tr_ed_step for its single run and for its
 * batch (one sequence per utterance), so neither the step nor the way a
 * batched step is cut into passes is written again.
 *
 * Weights are borrowed (the model file's views); nothing here allocates.
 * Results do not depend on the thread count. */
#ifndef TR_NN_ENCDEC_DECODER_H
#define TR_NN_ENCDEC_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

/* What is added to the token embedding of the row at position p. */
typedef enum {
    TR_ED_POS_TABLE = 0, /* row p of pos_table: learned absolute (Whisper), or a sinusoid
                          * table the file stores (Canary) */
    TR_ED_POS_NONE = 1,  /* nothing: rotary positions (dims.rope) or none at all */
} tr_ed_pos;

typedef struct tr_ed_decoder {
    const tr_tensor *tok_emb; /* ne {D, V}, any type tr_get_rows reads */
    tr_ed_pos pos;
    const float *pos_table; /* [n_pos][D] with TR_ED_POS_TABLE (n_pos >= the caches' n_ctx) */
    tr_nn_norm emb_norm;    /* LayerNorm on embedding + position; w NULL: none (Whisper) */
    const tr_nn_dec_block *blocks;
    int n_layers;
    tr_nn_dims dims;     /* d_model, heads, FFN, block eps, rotary, gated FFN */
    tr_nn_norm out_norm; /* final LayerNorm; w NULL: none */
    float norm_eps;      /* of emb_norm and out_norm */
    tr_nn_linear head;   /* ne {D, V}; a tied head is {tok_emb, NULL} */
    int n_vocab;
} tr_ed_decoder;

/* One sequence of a step (nn.h's tr_nn_dec_seg): `rows` tokens `ids` at
 * positions n_past.. with its own self-attention cache `kv` and its own
 * encoder output's cross K/V (layer l's head-major block of n_src rows at
 * ck / cv + l * cross_stride values, as tr_ed_cross_kv lays them out). */
typedef tr_nn_dec_seg tr_ed_seq;

/* True when `rows` ids lie in the vocabulary and positions n_past..
 * n_past+rows-1 fit a context of n_ctx. */
bool tr_ed_seq_ok(const tr_ed_decoder *dec, const int32_t *ids, int rows, int n_past, int n_ctx);

/* Cross K/V of every layer from one encoder output src [n_src][D]: layer
 * l's into ck / cv + l * stride floats (a head-major block of n_src rows,
 * nn.h's tr_nn_cross_kv); false on OOM (logged). */
bool tr_ed_cross_kv(tr_pool *pool, const tr_ed_decoder *dec, const float *src, int n_src, float *ck,
                    float *cv, size_t stride);

/* The same rounded to half floats (a session with an F16 cache: the step
 * reads half the bytes); false on OOM (logged). A sequence over them sets
 * ck16 / cv16. */
bool tr_ed_cross_kv16(tr_pool *pool, const tr_ed_decoder *dec, const float *src, int n_src,
                      uint16_t *ck16, uint16_t *cv16, size_t stride);

/* Scratch floats tr_ed_step needs for `rows` rows in all over n_seq
 * sequences. */
size_t tr_ed_step_scratch(const tr_ed_decoder *dec, int rows, int n_seq);

/* One decoder step over n_seq sequences packed in x ([total rows][D],
 * sequence after sequence). The sequences run as passes of whole
 * sequences sized by tr_nn_dec_pass_rows (nn/dec_pass.h); in a pass every
 * projection is one product over all its rows, so each weight is read once
 * per pass, and attention runs per sequence over its own cache and source.
 * A single sequence is always one pass. x receives every row's final-normed
 * hidden state. logits (NULL: none) receives the head of each sequence's
 * last row, [n_seq][V], one head product per pass. A sequence's values do
 * not depend on the other sequences of its pass; they may differ from a
 * different grouping's in the last bits (the matmul path depends on the
 * row count). */
void tr_ed_step(tr_pool *pool, const tr_ed_decoder *dec, int n_seq, const tr_ed_seq *seqs, float *x,
                float *scratch, float *logits);

/* Bytes of the weights one single-row step reads: every block's
 * self-attention q/k/v/out, cross-attention q/out (its keys and values are
 * the per-utterance cross K/V, not weights), FFN (and a split gate), and the head
 * (the embedding's one row and the norms are left out). */
size_t tr_ed_step_weight_bytes(const tr_ed_decoder *dec);

/* A session's decoder as a tool (transcribe-bench's step probe) sees it:
 * the configuration and one sequence of its latest run (cache, cross K/V,
 * n_src; n_past = the position a probe step writes, < the cache's n_ctx),
 * with buffers for one row (x [D], scratch tr_ed_step_scratch(dec, 1, 1),
 * logits [V]). */
typedef struct tr_ed_probe {
    const tr_ed_decoder *dec;
    tr_ed_seq seq;
    float *x, *scratch, *logits;
} tr_ed_probe;

/* The head over n final-normed rows [n][D] → logits [n][V], in products of
 * tr_nn_dec_pass_rows rows (a single row is one matrix-vector product). */
void tr_ed_head(tr_pool *pool, const tr_ed_decoder *dec, const float *rows, int n, float *logits);

#endif
