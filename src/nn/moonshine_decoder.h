/* The Moonshine decoder (docs/formats/moonshine.md §3.2, §6), shared by the
 * moonshine and moonshine_streaming families (docs/formats/moonshine_streaming.md
 * §3, §6): the token embedding `dec.token_embd.weight`, `dec.blocks.i.*`
 * (LayerNorms without beta, attention without biases, partial GPT-J rotary
 * self-attention, cross-attention, a fused SwiGLU fc1 of 2F), the final
 * LayerNorm `dec.final_norm.weight` (no beta) and a head that is either the
 * tied embedding or `dec.lm_head.weight`; loaded through nn/weights.h and
 * configured as an nn/encdec_decoder.h decoder. Plus the greedy loop both
 * families decode with (from the start token to EOS or a token cap). */
#ifndef TR_NN_MOONSHINE_DECODER_H
#define TR_NN_MOONSHINE_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/encdec_decoder.h"
#include "nn/nn.h"
#include "nn/weights.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe.h"

typedef struct tr_msd_cfg {
    int d_model, n_heads, head_dim, d_ffn, n_layers, n_vocab;
    float rot_factor, rope_theta; /* rotary dims: tr_msd_rot_dims(head_dim, rot_factor) */
    bool untied;                  /* the head is dec.lm_head.weight, not the embedding */
} tr_msd_cfg;

typedef struct tr_msd {
    const tr_tensor *tok_emb; /* ne {D, V} */
    const tr_tensor *lm_head; /* ne {D, V}: the untied head, or tok_emb */
    const float *norm;        /* final LayerNorm gamma */
    tr_nn_dec_block *blocks;  /* owned array of borrowed views */
    int rot;                  /* rotary dims per head */
    tr_ed_decoder dec;        /* the configured step */
} tr_msd;

/* Rotary dims per head in single precision as upstream computes them, bit 0
 * cleared (docs/formats/moonshine.md §5.3). */
int tr_msd_rot_dims(int head_dim, float factor);

/* Loads and configures the decoder (every tensor shape- and type-checked,
 * each failure logged naming it): OK, TRANSCRIBE_ERR_GGUF or OOM. Requires
 * d_model == n_heads · head_dim and at least one rotary pair (the caller
 * checks its keys). Free with tr_msd_free (also after a failure). */
transcribe_status tr_msd_load(const tr_nn_wsrc *src, const tr_msd_cfg *cfg, tr_msd *out);
void tr_msd_free(tr_msd *d);

/* One greedy decode of a single sequence (docs/formats/moonshine.md §6.2,
 * docs/formats/moonshine_streaming.md §6): the start token at position 0,
 * then one token per step until EOS or gen_cap tokens (counting the first
 * and a final EOS); the cache must hold gen_cap positions. */
typedef struct tr_msd_greedy_args {
    tr_pool *pool;
    const tr_ed_decoder *dec;
    tr_nn_kv *kv;
    const float *ck, *cv; /* cross K/V: layer l's [n_src][D] at + l·cross_stride */
    int n_src;
    size_t cross_stride;         /* floats; 0 = n_src·D */
    float *x, *scratch, *logits; /* one row: [D], tr_ed_step_scratch(dec, 1, 1), [V] */
    int32_t start, eos;
    int gen_cap;
    /* Forced ids after the start token (a stream's committed tokens; NULL /
     * 0: none): prefilled in one step, never re-decided; they count in
     * gen_cap and are not written to out. */
    const int32_t *prefix;
    int n_prefix;
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
    void (*on_step)(void *user, int n_gen, int n_most); /* may be NULL */
    void *step_user;
} tr_msd_greedy_args;

/* out (capacity gen_cap) gets the ids after the prefix without EOS: OK
 * (EOS), OUTPUT_TRUNCATED (cap), ABORTED (out holds the ids so far) or
 * INVALID_ARG (a position or id outside the decoder, or a prefix of gen_cap
 * ids or more, logged). */
transcribe_status tr_msd_greedy(const tr_msd_greedy_args *a, int32_t *out, int *n_out);

#endif
