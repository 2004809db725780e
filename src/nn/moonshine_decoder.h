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
#include "nn/encdec_greedy.h"
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
    const float *ck, *cv;        /* cross K/V: layer l's block at + l·cross_stride (nn.h) */
    const uint16_t *ck16, *cv16; /* half-float cross K/V: replace ck / cv when set */
    int n_src;
    size_t cross_stride;         /* floats; 0 = n_src·D */
    size_t cross_rows;           /* the blocks' row capacity; 0 = n_src */
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
    /* Speculative drafts per verify step (nn/greedy.h tr_greedy_loop_spec;
     * 0: plain steps): verified in passes of 4 rows, whose bits are one-row
     * steps', so the ids never change. */
    int spec_k;
} tr_msd_greedy_args;

/* out (capacity gen_cap) gets the ids after the prefix without EOS: OK
 * (EOS), OUTPUT_TRUNCATED (cap), ABORTED (out holds the ids so far) or
 * INVALID_ARG (a position or id outside the decoder, or a prefix of gen_cap
 * ids or more, logged). */
transcribe_status tr_msd_greedy(const tr_msd_greedy_args *a, int32_t *out, int *n_out);

/* ---- batches ----
 * What the run_batch of both families does around its own encoder: per
 * utterance its cross K/V, cache and ids; the group closed up around the
 * utterances whose encoder failed; one lockstep greedy decode for the group
 * (nn/encdec_greedy.h: the start token prefilled for every utterance, then
 * one token per unfinished utterance per tr_ed_step, each stopping at its
 * EOS or cap as tr_msd_greedy does). Written once here instead of in each
 * family; the result rows stay the family's. */

/* One utterance of a batch group. */
typedef struct tr_msd_utt {
    int idx;               /* batch index */
    int T;                 /* encoder frames */
    int max_new;           /* its token cap (counting the first and a final EOS); 0: max_pos */
    float *ck, *cv;        /* cross K/V: layer l's [T][D] at + l·T·D */
    uint16_t *ck16, *cv16; /* the same as half floats (tr_msd_utt_alloc's cross_f16) */
    tr_nn_kv kv;
    int32_t *out; /* [max_pos]: ids after the start token, EOS excluded */
    /* results of tr_msd_greedy_group */
    int n_out;
    bool eos;  /* stopped at EOS (else at its cap: truncated) */
    bool live; /* still decoding when an abort stopped the group */
} tr_msd_utt;

/* u's buffers for u->T frames: cross K/V (ck / cv, or ck16 / cv16 when
 * cross_f16), a cache of max_pos positions (F16 when kv_f16) and max_pos
 * ids; false on OOM (free with tr_msd_utts_free either way). */
bool tr_msd_utt_alloc(tr_msd_utt *u, const tr_msd *d, int max_pos, bool kv_f16, bool cross_f16);
/* Frees and zeroes u[0, n). */
void tr_msd_utts_free(tr_msd_utt *u, int n);

/* The k utterances idx (batch indices; T and the rest zero) made, handed
 * to run(user, u, k) and freed again (tr_msd_utts_free): the group hook
 * both families hand core's tr_run_batch_groups comes down to this call.
 * OOM when they cannot be made, else run's status. */
transcribe_status tr_msd_group_run(const int *idx, int k,
                                   transcribe_status (*run)(void *user, tr_msd_utt *u, int n),
                                   void *user);

/* The encoders of a group: encode(user, u) fills utterance u->idx (its T
 * and cross K/V, through tr_msd_utt_alloc). OOM or ABORTED ends the group
 * (returned); another failure frees the utterance, hands it to
 * drop(drop_user, idx, status) and the rest close up (*n shrinks). */
transcribe_status tr_msd_group_encode(tr_msd_utt *u, int *n,
                                      transcribe_status (*encode)(void *user, tr_msd_utt *u),
                                      void *user,
                                      void (*drop)(void *drop_user, int idx, transcribe_status st),
                                      void *drop_user);

/* The lockstep greedy decode of n encoded utterances (start token, EOS,
 * positions max_pos; should_abort polled before every step, may be NULL):
 * OK, ABORTED (utterances with live set were cut short) or OOM. */
transcribe_status tr_msd_greedy_group(tr_pool *pool, const tr_msd *d, int32_t start, int32_t eos,
                                      int max_pos, bool (*should_abort)(void *user),
                                      void *abort_user, tr_msd_utt *u, int n);

#endif
