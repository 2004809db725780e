/* Granite Speech family internals (docs/formats/granite_speech.md): the loaded model, the
 * per-session state and the entry points the vtable and the tests use.
 * Weights are borrowed views into the mapped file except the few tables
 * widened or folded at load (relative-position rows, the query tensor,
 * depthwise taps with BatchNorm folded in). The text LM is the shared
 * decoder of src/nn/causal_lm.h with Granite's multipliers. */
#ifndef TR_MODELS_GRANITE_H
#define TR_MODELS_GRANITE_H

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

#define GS_MAX_NEW     256 /* docs/formats/granite_speech.md §9 token budget (EOS excluded) */
#define GS_MAX_CAT     8   /* cat_hidden_layers entries we accept */
#define GS_PROMPT_CAP  512 /* text tokens of a prompt besides the audio span */
#define GS_N_QUERY     3   /* docs/formats/granite_speech.md §3.4 learned queries per window */
#define GS_MAX_SPEAKER 64  /* speaker rows kept per result */

typedef struct gs_proj_hparams {
    int n_layer, d, d_ffn, n_head, enc_d;
    float eps;
    int window, downsample, n_query;
} gs_proj_hparams;

typedef struct gs_qf_layer {
    tr_nn_linear sq, sk, sv, so, cq, ck, cv, co, up, down;
    tr_nn_norm n_self, n_cross, n_ffn;
} gs_qf_layer;

typedef struct gs_special {
    int audio, eos, pad, start_role, end_role; /* role ids -1 when absent */
} gs_special;

typedef struct gs_model {
    tr_gc_hparams enc;          /* the shared Conformer (nn/granite_conformer.h) */
    int n_cat, cat[GS_MAX_CAT]; /* 1-based block counts whose output is concatenated */
    gs_proj_hparams proj;
    tr_clm_hparams lm;
    int max_pos; /* decoder.max_position_embeddings: the context ceiling */
    bool tied;

    tr_gc_weights enc_w;
    float *query; /* [n_query][proj.d] F32, owned */
    tr_nn_norm qf_norm;
    gs_qf_layer *qf;
    tr_nn_linear proj_out;

    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;

    tr_mel_config mel;
    struct tr_tokenizer *tok;
    gs_special sp;
    bool role_template; /* docs/formats/granite_speech.md §7.1 */
    char *variant;
    /* capabilities (docs/formats/granite_speech.md §2.1, §9) */
    bool translate, word_ts, diarize;
    int n_lang;
    char **lang;
    int n_targets;
    char **targets;
    int n_pairs;
    char **pairs;
    int64_t max_audio_ms;
} gs_model;

typedef struct gs_session {
    const gs_model *m;
    tr_clm_session dec; /* pool, ceiling, KV type, LM state, logits, prefill / step timings */
    /* the latest run's generated ids (EOS excluded), for tests */
    int32_t last_ids[GS_MAX_NEW + 1];
    int n_last;
    double mel_ms, encode_ms, proj_ms; /* phase timings of the latest run, ms (transcribe-bench) */
    int budget; /* emitted-token budget when in 1..GS_MAX_NEW (tests); else GS_MAX_NEW */
} gs_session;

/* Loading (granite_load.c). */
/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(gs);

/* Front end (granite_encoder.c): stacked frames of docs/formats/granite_speech.md §5 for n
 * samples. */
int64_t tr_gs_enc_frames(const gs_model *m, int64_t n_samples);
/* Audio tokens for T_enc encoder frames: 3 · ceil(T_enc / 15). */
int tr_gs_audio_tokens(const gs_model *m, int64_t T_enc);
/* Log-mel, normalised, stacked → x [T_enc][in_dim] (malloc'ed). */
transcribe_status tr_gs_stacked_mel(const gs_model *m, tr_pool *pool, const float *pcm, int n,
                                    float **x, int *T_enc);
/* Conformer of docs/formats/granite_speech.md §6.1 on x [T_enc][in_dim] → out [T_enc][proj.enc_d]
 * (malloc'ed). progress (may be NULL) is filled after each layer. */
transcribe_status tr_gs_encode(const gs_model *m, tr_pool *pool, const float *x, int T_enc,
                               float **out, tr_run_span *progress);
/* Q-Former of docs/formats/granite_speech.md §6.2 on enc [T_enc][enc_d] → audio
 * [n_audio][lm.d_model] (malloc'ed). */
transcribe_status tr_gs_project(const gs_model *m, tr_pool *pool, const float *enc, int T_enc,
                                float **audio, int *n_audio);

/* Prompt (granite_prompt.c). */
typedef struct gs_prompt {
    int32_t pre[GS_PROMPT_CAP], post[GS_PROMPT_CAP];
    int n_pre, n_post;
} gs_prompt;
transcribe_status tr_gs_build_prompt(const gs_model *m, const struct transcribe_run_params *p,
                                     gs_prompt *out);
/* The instruction text of docs/formats/granite_speech.md §7.2 (static or written into buf). */
transcribe_status tr_gs_instruction(const gs_model *m, const struct transcribe_run_params *p,
                                    char *buf, size_t cap, const char **out);

/* Output parsing of docs/formats/granite_speech.md §10 (granite_output.c). */
/* Batched run (docs/c-api.md §11, docs/formats/causal-lm.md §8): per-utterance statuses in
 * ctxs[i].result; returns the whole-batch status. */
transcribe_status tr_gs_run_batch(gs_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);
transcribe_status tr_gs_fill_result(const gs_model *m, const struct transcribe_run_params *p,
                                    const int32_t *ids, int n, int n_samples, tr_result *res);
transcribe_status tr_gs_parse_text(const char *raw, bool words, bool speakers, int64_t audio_ms,
                                   tr_result *res);

#endif
