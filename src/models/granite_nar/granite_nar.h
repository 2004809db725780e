/* Granite Speech NAR editor internals (docs/formats/granite_nar.md): the loaded model, the
 * per-session state and the entry points the vtable and the tests use. The Conformer is the
 * shared nn/granite_conformer.h, the LM the shared causal LM run once bidirectionally
 * (tr_clm_bidi). Weights are borrowed views into the mapped file except the tables widened or
 * folded at load (relative-position rows, depthwise taps, the projector's query and window
 * positions). */
#ifndef TR_MODELS_GRANITE_NAR_H
#define TR_MODELS_GRANITE_NAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "nn/granite_conformer.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define GN_MAX_CAP  8 /* encoder.layer_indices entries we accept */
#define GN_MIN_TEXT 8 /* docs/formats/granite_nar.md §6.2: text slots at least */

typedef struct gn_proj_hparams {
    int n_layer, d, d_ffn, n_head, enc_d, n_enc_layers, block, downsample, n_query, llm_dim;
    float eps;
} gn_proj_hparams;

/* One cross-attention + MLP layer of the projector (docs/formats/granite_nar.md §3.3). */
typedef struct gn_proj_layer {
    tr_nn_norm norm_attn, norm_ffn;
    tr_nn_linear q, k, v, o, fc1, fc2;
} gn_proj_layer;

typedef struct gn_model {
    tr_gc_hparams enc; /* the shared Conformer */
    tr_gc_weights enc_w;
    int bpe_dim, pool_window, bpe_blank; /* docs/formats/granite_nar.md §2.4, §6.1 */
    tr_nn_linear ctc_bpe;                /* w NULL when bpe_dim == 0 */
    int n_cap, cap_block[GN_MAX_CAP];    /* capture blocks (0-based) of layer_indices */

    gn_proj_hparams proj;
    tr_nn_norm prj_ln[GN_MAX_CAP];
    tr_nn_linear layer_projector, out_linear;
    tr_nn_norm out_norm;
    float *query;   /* [n_query][d] F32, owned */
    float *win_pos; /* [block][d] F32, owned */
    gn_proj_layer *pl;

    tr_clm_hparams lm; /* Granite-4 multipliers as the causal LM's hooks */
    int max_pos;       /* text.max_position_embeddings: the context ceiling */
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;
    int eos; /* tokenizer.ggml.eos_token_id: slot filler, dropped from the output */

    tr_mel_config mel;
    struct tr_tokenizer *tok;
    char *variant;
    int n_lang;
    char **lang;
    int64_t max_audio_ms;
} gn_model;

typedef struct gn_session {
    const gn_model *m;
    tr_pool *pool;
    int ceiling; /* min(max_pos, session n_ctx when > 0) */
    /* the latest run, for tests and transcribe-bench */
    int32_t *hyp, *out; /* first-pass hypothesis, final ids (owned, grown) */
    int n_hyp, n_out, cap_ids;
    int n_audio, n_text;
    double mel_ms, encode_ms, proj_ms, lm_ms;
} gn_session;

/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(gn);

/* Encoder frames of n samples (docs/formats/granite_nar.md §4): floor(floor(n/hop) / 2), 0 when
 * the reflect padding cannot be done. */
int64_t tr_gn_enc_frames(const gn_model *m, int64_t n_samples);
/* Audio rows the projector keeps for T_enc frames: min(floor(T_enc / downsample),
 * n_query · ceil(T_enc / block)) (docs/formats/granite_nar.md §5.2). */
int tr_gn_audio_rows(const gn_model *m, int64_t T_enc);
/* Log-mel, normalised, stacked → x [T_enc][in_dim] (malloc'ed). */
transcribe_status tr_gn_features(const gn_model *m, tr_pool *pool, const float *pcm, int n,
                                 float **x, int *T_enc);

/* What the encoder stage gives (gn_encode.c): the captured hidden states concatenated
 * [T][n_cap·d], the char-CTC blank probability [T] and the final hidden state [T][d]. */
typedef struct gn_enc_out {
    float *cat, *blank, *last;
} gn_enc_out;
void tr_gn_enc_out_free(gn_enc_out *o);
/* Conformer of docs/formats/granite_nar.md §5.1 on x [T][in_dim]. abort (may be NULL) is polled
 * between blocks. */
transcribe_status tr_gn_encode(const gn_model *m, tr_pool *pool, const float *x, int T,
                               bool (*abort)(void *), void *abort_user, gn_enc_out *out);
/* The first-pass BPE-CTC hypothesis of docs/formats/granite_nar.md §6.1 from the blank
 * probabilities and the final hidden state: ids (malloc'ed, *n of them, possibly 0). */
transcribe_status tr_gn_hypothesis(const gn_model *m, tr_pool *pool, const gn_enc_out *e, int T,
                                   int32_t **ids, int *n);
/* The projector of docs/formats/granite_nar.md §5.2 on cat [T][n_cap·enc_d] → audio
 * [n_audio][llm_dim] (malloc'ed). */
transcribe_status tr_gn_project(const gn_model *m, tr_pool *pool, const float *cat, int T,
                                float **audio, int *n_audio);
/* docs/formats/granite_nar.md §6.2: n_text = max(2n + 1, 8) slots of EOS with hyp[i] at 2i+1
 * (text has room for max(2n + 1, 8) ids). Returns n_text. */
int tr_gn_slots(const int32_t *hyp, int n, int eos, int32_t *text);
/* docs/formats/granite_nar.md §6.4: EOS dropped, adjacent repeats merged → out; returns the
 * count. */
int tr_gn_collapse(const int32_t *argmax, int n, int eos, int32_t *out);
/* The editing pass (docs/formats/granite_nar.md §5.3, §6.3, §6.4): fusion of audio rows and the
 * slotted hypothesis, one bidirectional LM pass, the final ids into out (capacity n_text).
 * logits (optional) gets [n_text][vocab]. */
transcribe_status tr_gn_edit(const gn_model *m, tr_pool *pool, const float *audio, int n_audio,
                             const int32_t *text, int n_text, bool (*abort)(void *),
                             void *abort_user, float *logits, int32_t *out, int *n_out);

#endif
