/* Voxtral 2507 family internals (docs/formats/voxtral.md): the loaded model,
 * the per-session state and the entry points the vtable and the tests use.
 * The encoder is the shared Whisper encoder (nn/whisper_encoder.h) per 30 s
 * chunk, the LM the shared causal decoder (nn/causal_lm.h: no q/k norm,
 * untied head, Q width n_heads·head_dim ≠ hidden); weights are borrowed
 * views into the mapped file. */
#ifndef TR_MODELS_VOXTRAL_H
#define TR_MODELS_VOXTRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "nn/nn.h"
#include "nn/whisper_encoder.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define VX_GEN_RESERVE  448 /* docs/formats/voxtral.md §6.5: output reserve of the input gate */
#define VX_PROMPT_SLACK 16  /* docs/formats/voxtral.md §8: prompt overhead of max_audio_ms */
#define VX_AUDIO_AT     3   /* docs/formats/voxtral.md §6.2: [BOS] [INST] [BEGIN_AUDIO] */
#define VX_MAX_TEXT_IDS 64  /* language / instruction ids of a prompt, at most */
#define VX_MAX_STRS     4096

/* Special ids resolved at load (docs/formats/voxtral.md §6.1). */
typedef struct vx_special {
    int bos, eos, inst, inst_end, begin_audio, transcribe, audio;
} vx_special;

typedef struct vx_model {
    tr_whenc enc;            /* docs/formats/voxtral.md §3.3, §5 */
    int downsample;          /* projector.downsample_factor */
    tr_nn_linear lin1, lin2; /* projector, no biases (docs/formats/voxtral.md §3.4) */
    tr_clm_hparams lm;       /* docs/formats/voxtral.md §2.5, §6.3 */
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;
    int max_pos; /* decoder.max_position_embeddings */

    int n_chunk;         /* samples per chunk (stt.frontend.n_samples) */
    int chunk_mel;       /* mel frames per chunk (stt.frontend.nb_max_frames) */
    int audio_per_chunk; /* max_source_positions / downsample_factor (375) */
    bool nb_frames_key;  /* nb_max_frames present and > 0: max_audio_ms published */
    tr_mel_config mel;
    struct tr_tokenizer *tok;
    vx_special sp;
    int n_lang, n_targets;
    char **lang, **targets;
    bool translate;
    char *variant;
    int64_t max_audio_ms;
} vx_model;

typedef struct vx_session {
    const vx_model *m;
    tr_clm_session dec; /* pool, ceiling, KV type, LM state, logits, prefill / step timings */
    bool repeat_guard;  /* nn/greedy.h guard, on by default (README) */
    /* phases of the latest tr_vx_encode, ms (transcribe-bench) */
    double mel_ms, enc_ms, proj_ms;
    /* the latest single run, for the tests */
    int32_t *last_ids;
    int n_last, cap_last;
} vx_session;

TR_FAMILY_DECLARE(vx);

/* Chunks of a clip: max(1, ceil(n / n_chunk)) (docs/formats/voxtral.md §4). */
int64_t tr_vx_n_chunks(const vx_model *m, int64_t n_samples);

/* Log-mel of docs/formats/voxtral.md §4 over the chunk-padded clip: *mel malloc'ed
 * [n_mels][n_chunks·chunk_mel], one normalisation maximum for all of it. */
transcribe_status tr_vx_log_mel(const vx_model *m, tr_pool *pool, const float *pcm,
                                int64_t n_samples, float **mel, int *n_frames);

/* docs/formats/voxtral.md §5: every chunk of the mel through the encoder and the
 * projector: *out [n_chunks·audio_per_chunk][hidden] malloc'ed. enc_out (optional)
 * receives the encoder rows [n_chunks·max_source_positions][d_model] malloc'ed.
 * should_abort (may be NULL) is polled before each chunk; progress (may be NULL) is
 * reported after each. */
transcribe_status tr_vx_encode(vx_session *s, const float *mel, int n_frames, float **out,
                               int *n_audio, float **enc_out, tr_run_ctx *abort_ctx,
                               tr_run_span *progress);

/* Prompt of docs/formats/voxtral.md §6.2 for n_audio placeholders and the run's task /
 * language / target: *ids malloc'ed, *n long. */
transcribe_status tr_vx_build_prompt(const vx_model *m, const struct transcribe_run_params *p,
                                     int n_audio, int32_t **ids, int *n);
/* The text ids a prompt adds besides the audio (T_prompt − n_audio), or -1
 * when the text cannot be encoded. */
int tr_vx_prompt_extra(const vx_model *m, const struct transcribe_run_params *p);

/* Prompt embeddings (docs/formats/voxtral.md §6.2): out [n][hidden] = token rows, the one
 * contiguous run of n_audio placeholders replaced by audio rows. INVALID_ARG (logged)
 * when the prompt's placeholders are not exactly one run of n_audio ids. */
transcribe_status tr_vx_splice(const vx_model *m, const int32_t *ids, int n, const float *audio,
                               int n_audio, float *out);

/* Batched run (docs/c-api.md §11, docs/formats/causal-lm.md §8): per-utterance statuses in
 * ctxs[i].result (partial text kept on OUTPUT_TRUNCATED); returns the whole-batch status. */
transcribe_status tr_vx_run_batch(vx_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);

#endif
