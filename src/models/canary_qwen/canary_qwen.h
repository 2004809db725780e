/* Canary-Qwen family internals (docs/formats/canary_qwen.md): the loaded
 * model, the per-session state and the entry points the vtable and the
 * tests use. The encoder is the shared FastConformer of
 * src/nn/fastconformer.h (Canary's flavor), the LM the shared causal LM of
 * src/nn/causal_lm.h; weights are borrowed views into the mapped file. */
#ifndef TR_MODELS_CANARY_QWEN_H
#define TR_MODELS_CANARY_QWEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "nn/fastconformer.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define CQ_MAX_NEW      256 /* docs/formats/canary_qwen.md §6.3 budget (prefill token, EOS counted) */
#define CQ_MAX_SEGMENT  32 /* prefix / suffix ids (docs/formats/canary_qwen.md §6.1) at most */
#define CQ_PROMPT_SLACK 32 /* docs/formats/canary_qwen.md §8 representative prompt overhead */

/* Chat pieces resolved at load (docs/formats/canary_qwen.md §2.1). */
typedef struct cq_special {
    int im_start, im_end, user, assistant, eos, audio;
} cq_special;

typedef struct cq_model {
    tr_fc_hparams enc_hp;
    tr_fc_encoder *enc;
    int pos_emb_max_len; /* read, not a limit (docs/formats/canary_qwen.md §2.2) */
    tr_nn_linear proj;   /* enc.proj: d_enc → hidden (docs/formats/canary_qwen.md §3.4) */

    tr_clm_hparams lm;
    int max_pos; /* decoder.max_position_embeddings: the context ceiling */
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;

    tr_mel_config mel;
    struct tr_tokenizer *tok;
    cq_special sp;
    /* the static prompt segments of docs/formats/canary_qwen.md §6.1 */
    int32_t prefix[CQ_MAX_SEGMENT], suffix[CQ_MAX_SEGMENT];
    int n_prefix, n_suffix;

    int n_lang;
    char **lang;
    char *variant;
    int64_t max_audio_ms;
} cq_model;

typedef struct cq_session {
    const cq_model *m;
    tr_clm_session dec; /* pool, ceiling, KV type, LM state, logits, prefill / step timings */
    tr_fc_work *fc_work;
    double enc_ms, proj_ms; /* the latest single run's encoder / projection split */
    /* the latest run's generated ids (EOS excluded), for tests */
    int32_t last_ids[CQ_MAX_NEW];
    int n_last;
} cq_session;

/* Loading (canary_qwen_load.c). */
/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(cq);

/* Front end and encoder (canary_qwen_encoder.c). */
/* Encoder frames for n samples: ceil(T_mel / 8), T_mel = floor(n / hop) + 1. */
int64_t tr_cq_enc_frames(const cq_model *m, int64_t n_samples);
/* Log-mel of docs/formats/canary_qwen.md §4 (malloc'ed [n_mels][*T_mel]). */
transcribe_status tr_cq_log_mel(const cq_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel);
/* Encoder and projection of docs/formats/canary_qwen.md §5 on mel → *audio
 * (malloc'ed [*T_enc][hidden]); *enc_ms / *proj_ms (may be NULL) get the
 * split. abort_fn (may be NULL) is polled between encoder blocks. */
transcribe_status tr_cq_encode(const cq_model *m, tr_pool *pool, tr_fc_work *w, const float *mel,
                               int T_mel, float **audio, int *T_enc, tr_fc_abort_fn abort_fn,
                               void *abort_user, double *enc_ms, double *proj_ms);

/* Prompt (canary_qwen_run.c). */
/* ids of docs/formats/canary_qwen.md §6.1 for T_enc audio rows into ids
 * (capacity n_prefix + T_enc + n_suffix); returns the length. */
int tr_cq_build_prompt(const cq_model *m, int T_enc, int32_t *ids);
/* Prompt embeddings: token rows of ids with the placeholder rows replaced by
 * audio [n_audio][hidden] in order (docs/formats/canary_qwen.md §6.2). The
 * placeholders must be exactly n_audio and one contiguous run: otherwise
 * INVALID_ARG (logged) and nothing written. */
transcribe_status tr_cq_splice(const cq_model *m, const int32_t *ids, int n, const float *audio,
                               int n_audio, float *out);
/* Result rows of docs/formats/canary_qwen.md §6.4 from the generated ids. */
transcribe_status tr_cq_fill_result(const cq_model *m, const int32_t *ids, int n, int n_samples,
                                    tr_result *res);

#endif
