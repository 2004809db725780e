/* Fun-ASR-Nano family internals (docs/formats/funasr_nano.md): the loaded
 * model (Kaldi fbank + LFR front end without CMVN, the SAN-M encoder stack of
 * nn/sanm.h shared with SenseVoice, the two-block transformer adaptor, the
 * Qwen3 LM on the shared causal-LM decoder of nn/causal_lm.h), the session,
 * and the entry points the vtable and the tests use. Weights are borrowed
 * views into the mapped file (only the FSMN taps are owned). */
#ifndef TR_MODELS_FUNASR_NANO_H
#define TR_MODELS_FUNASR_NANO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "nn/nn.h"
#include "nn/sanm.h"

struct tr_tokenizer;

#define FN_MAX_NEW        256 /* docs/formats/funasr_nano.md §6.4 budget (prefill token, EOS counted) */
#define FN_PROMPT_RESERVE 48  /* docs/formats/funasr_nano.md §8: prompt overhead of the limits */
#define FN_MAX_PROMPT_IDS 512 /* the text parts of a prompt (tokens), at most */

/* Special ids resolved by piece at load (docs/formats/funasr_nano.md §2.2). */
typedef struct fn_special {
    int im_start, im_end, newline, system, user, assistant, eos;
} fn_special;

typedef struct fn_adaptor_hp {
    int n_blocks, encoder_dim, llm_dim, pre_ffn_dim, block_ffn_dim, n_heads, d_head;
    float eps;
    bool low_frame_rate; /* docs/formats/funasr_nano.md §6.1: T_audio = ceil(T_lfr / 8) */
} fn_adaptor_hp;

typedef struct fn_model {
    tr_sanm_encoder enc; /* docs/formats/funasr_nano.md §5.1 */
    tr_mel_config mel;   /* Kaldi fbank + LFR, no CMVN (docs/formats/funasr_nano.md §4) */

    fn_adaptor_hp ad; /* docs/formats/funasr_nano.md §2.4, §5.2 */
    tr_nn_linear lin1, lin2;
    tr_nn_enc_block *ad_blocks;
    tr_nn_dims ad_dims;

    tr_clm_hparams lm; /* docs/formats/funasr_nano.md §2.5, §6.3 */
    int max_pos;
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;

    struct tr_tokenizer *tok;
    fn_special sp;
    char **lang;
    int n_lang;
    const char *variant;
    int64_t max_audio_ms;
} fn_model;

typedef struct fn_session {
    const fn_model *m;
    tr_clm_session dec;
    bool repeat_guard; /* nn/greedy.h guard, on by default (README) */
    double enc_ms, adaptor_ms;
    int32_t last_ids[FN_MAX_NEW];
    int n_last;
} fn_session;

TR_FAMILY_DECLARE(fn);

/* The prompt of docs/formats/funasr_nano.md §6.2 for n_audio placeholders:
 * ids [0, audio_at) are the prefix, [audio_at, audio_at + n_audio) the
 * placeholders (id 0), then the 5-id suffix. */
typedef struct fn_prompt {
    int32_t *ids; /* malloc'ed */
    int n, audio_at, n_audio;
} fn_prompt;

/* Front-end arithmetic (docs/formats/funasr_nano.md §4, §6.1) from the sample count: LFR rows and
 * audio tokens (0 when shorter than one window). */
int64_t tr_fn_lfr_rows(const fn_model *m, int64_t n_samples);
int64_t tr_fn_audio_tokens(const fn_model *m, int64_t T_lfr);

/* Builds the prompt for a language code (NULL / "" = none) and ITN mode;
 * OOM, or INVALID_ARG when the text cannot be encoded. */
transcribe_status tr_fn_build_prompt(const fn_model *m, int n_audio, const char *lang,
                                     enum transcribe_itn_mode itn, fn_prompt *p);
void tr_fn_prompt_free(fn_prompt *p);

/* Prompt embeddings (docs/formats/causal-lm.md §6.1 concat form): out
 * [p->n][llm_dim]; audio [n_audio][llm_dim] fills the placeholder rows.
 * INVALID_ARG (logged) when n_audio differs from the prompt's placeholder
 * count. */
transcribe_status tr_fn_embed(const fn_model *m, const fn_prompt *p, const float *audio,
                              int n_audio, float *out);

/* Intermediate outputs a test can ask for (NULL or the size given). */
typedef struct fn_taps {
    float *features;    /* [T_lfr][d_input] */
    float *enc_in;      /* [T_lfr][d_input]: scaled, positions added */
    tr_sanm_taps sanm;  /* [T_lfr][d_model] each */
    float *adaptor_lin; /* [T_lfr][llm_dim] after linear2 */
    float *adaptor_out; /* [T_lfr][llm_dim] after the blocks (all rows) */
} fn_taps;

/* Front end + encoder + adaptor (docs/formats/funasr_nano.md §4–§6.1) of n samples: *audio is
 * malloc'ed
 * [*n_audio][llm_dim] (the first T_audio adaptor rows). INVALID_ARG under one
 * window, ABORTED (abort polled per block), OOM. */
transcribe_status tr_fn_encode(const fn_model *m, tr_pool *pool, const float *pcm, int64_t n,
                               float **audio, int *n_audio, int *T_lfr, const fn_taps *taps,
                               bool (*abort)(void *), void *abort_user, double *enc_ms,
                               double *adaptor_ms);

/* Result rows (docs/formats/funasr_nano.md §6.5). */
transcribe_status tr_fn_fill_result(const fn_model *m, const int32_t *ids, int n, int n_samples,
                                    tr_result *res);

#endif
