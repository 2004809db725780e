/* Qwen3-ASR family internals (docs/formats/qwen3_asr.md): the loaded model, the
 * per-session state and the entry points the vtable and the tests use.
 * Weights are borrowed views into the mapped file; the text LM is the shared
 * decoder of src/nn/causal_lm.h, the encoder blocks the pre-LN blocks of
 * src/nn/nn.h. */
#ifndef TR_MODELS_QWEN3_ASR_H
#define TR_MODELS_QWEN3_ASR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define QA_MAX_NEW      256 /* docs/formats/qwen3_asr.md §9.2 budget (prefill token, EOS counted) */
#define QA_PROMPT_FIXED 15  /* prompt tokens besides audio (docs/formats/qwen3_asr.md §7.1) */
#define QA_AUDIO_AT     9   /* first audio placeholder position */
#define QA_MAX_LANG_IDS 32  /* longest "language <Name>" prefix + <asr_text> */
#define QA_N_LANGS      30

typedef struct qa_enc_hparams {
    int n_layer, d_model, n_head, d_ffn, n_mels, conv_ch, out_dim, n_window;
} qa_enc_hparams;

/* Special ids resolved at load (docs/formats/qwen3_asr.md §2.5, §4). */
typedef struct qa_special {
    int im_start, im_end, newline, system, user, assistant, asr_text;
    int audio_pad, audio_start, audio_end, eos;
} qa_special;

typedef struct qa_model {
    qa_enc_hparams enc;
    tr_clm_hparams lm;
    int max_pos; /* decoder.max_position_embeddings: the context ceiling */
    bool tied;   /* tie_word_embeddings (false needs dec.output.weight) */

    /* encoder (docs/formats/qwen3_asr.md §3.3) */
    const tr_tensor *conv_w[3];
    const float *conv_b[3];
    const tr_tensor *conv_out; /* ne {conv_ch * M3, d_model} */
    int m3;                    /* mel bins after three stride-2 convs */
    tr_nn_enc_block *enc_blocks;
    tr_nn_dims enc_dims;
    tr_nn_norm ln_post;
    tr_nn_linear proj1, proj2;
    float *pos_emb; /* [13][d_model] sinusoids of docs/formats/qwen3_asr.md §6.3, owned */
    int per_chunk;  /* encoder rows per full 100-frame chunk (13) */

    /* text LM (docs/formats/qwen3_asr.md §3.4) */
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;

    tr_mel_config mel;
    struct tr_tokenizer *tok;
    qa_special sp;
    /* languages (docs/formats/qwen3_asr.md §9.1): codes from general.languages, publisher names */
    int n_lang;
    char **lang;
    const char **lang_name; /* static strings; NULL when the code has no name */
    bool lang_detect;
    char *variant;
    int64_t max_audio_ms;
} qa_model;

typedef struct qa_session {
    const qa_model *m;
    tr_clm_session dec; /* pool, ceiling, KV type, LM state, logits, prefill / step timings */
    /* the latest run's generated ids (EOS excluded), for tests */
    int32_t last_ids[QA_MAX_NEW];
    int n_last;
} qa_session;

/* Loading (qwen3_asr_load.c). */
/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(qa);
/* Publisher name of a language code (docs/formats/qwen3_asr.md §9.1), NULL when unknown. */
const char *tr_qa_lang_name(const char *code);
/* Code of a publisher name (exact), NULL when unknown. */
const char *tr_qa_lang_code(const qa_model *m, const char *name);

/* Front end and encoder (qwen3_asr_encoder.c). */
/* T_mel = floor(n/hop); T_enc of docs/formats/qwen3_asr.md §6.1. */
int64_t tr_qa_enc_frames(const qa_model *m, int64_t n_samples);
transcribe_status tr_qa_log_mel(const qa_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel);
/* Encoder of docs/formats/qwen3_asr.md §6 on mel [n_mels][T_mel] → out [T_enc][out_dim]
 * (malloc'ed). progress (may be NULL) is filled after the conv front end and each layer. */
transcribe_status tr_qa_encode(const qa_model *m, tr_pool *pool, const float *mel, int T_mel,
                               float **out, int *T_enc, tr_run_span *progress);

/* Prompt (qwen3_asr_run.c): ids of docs/formats/qwen3_asr.md §7 for T_enc audio rows and an
 * optional language code; *n gets the length (ids must hold T_enc + 15 + 32). */
transcribe_status tr_qa_build_prompt(const qa_model *m, int T_enc, const char *lang, int32_t *ids,
                                     int *n);
int tr_qa_lang_prefix_len(const qa_model *m, const char *lang);

/* Sessions and runs (qwen3_asr_run.c). */
transcribe_status tr_qa_run_batch(qa_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);
/* Output parsing of docs/formats/qwen3_asr.md §10 into the result. */
transcribe_status tr_qa_fill_result(const qa_model *m, const int32_t *ids, int n, bool forced,
                                    int n_samples, tr_result *res);

#endif
