/* MOSS Transcribe-Diarize family internals (docs/formats/moss.md): the loaded
 * model, the per-session state and the entry points the vtable and the
 * tests use. The encoder is the shared Whisper encoder (nn/whisper_encoder.h),
 * the LM the shared causal decoder (nn/causal_lm.h); weights are borrowed
 * views into the mapped file. */
#ifndef TR_MODELS_MOSS_H
#define TR_MODELS_MOSS_H

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

struct gguf_file;
struct tr_tokenizer;

#define MS_GEN_RESERVE   256  /* docs/formats/moss.md §9: output reserve of the input gate */
#define MS_PREFILL_CHUNK 2048 /* docs/formats/moss.md §9 / docs/formats/causal-lm.md §6.3 */

typedef struct ms_model {
    tr_whenc enc;          /* docs/formats/moss.md §3.3, §6.1 */
    int merge;             /* stt.moss.audio_merge_size */
    tr_nn_linear fc1, fc2; /* adaptor docs/formats/moss.md §3.4 */
    tr_nn_norm norm_out;
    tr_clm_hparams lm; /* docs/formats/moss.md §3.5, §8 */
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;
    int max_pos; /* decoder.max_position_embeddings */

    /* prompt (docs/formats/moss.md §7) */
    int32_t *prefix, *suffix;
    int n_prefix, n_suffix;
    int32_t digits[10];
    int audio_tok, eos;
    float tokens_per_s;
    int marker_every; /* seconds */
    bool markers;

    /* vocabulary hints (moss_hotwords.c): the instruction text whose ids are
     * suffix[instr_off .. instr_off + instr_n); NULL when the file has no
     * usable split (hints off) */
    char *instruction;
    int instr_off, instr_n;
    bool instr_zh; /* CJK instruction: the Chinese separator */

    int n_chunk; /* samples per chunk (stt.frontend.n_samples) */
    tr_mel_config mel;
    struct tr_tokenizer *tok;
    int n_lang;
    char **lang;
    char *variant;
} ms_model;

typedef struct ms_session {
    const ms_model *m;
    tr_clm_session dec; /* pool, ceiling, KV type, LM state, logits, prefill / step timings */
    bool repeat_guard;  /* nn/greedy.h guard, on by default (README) */
    /* phases of the latest tr_ms_encode, ms: front end and Whisper encoder
     * summed over the chunks, then the merge + adaptor (transcribe-bench) */
    double mel_ms, enc_ms, adaptor_ms;
    /* the latest single run, for the tests */
    int32_t *last_ids;
    int n_last, cap_last;
} ms_session;

TR_FAMILY_DECLARE(ms);

/* Encoder frames of a clip: sum over 30 s chunks of (real_len-1)//(hop*2*merge)+1
 * (docs/formats/moss.md §5). */
int64_t tr_ms_audio_tokens(const ms_model *m, int64_t n_samples);
/* Prompt of docs/formats/moss.md §7 for T_enc audio rows: ids (malloc'ed, *n long) and the
 * absolute position of each audio row (malloc'ed, T_enc long). */
transcribe_status tr_ms_build_prompt(const ms_model *m, int T_enc, int32_t **ids, int *n,
                                     int **audio_pos);
/* The same with vocabulary hints: terms (n_terms, may be 0) re-render the
 * instruction where the file allows it, fitted so that the prompt plus the
 * docs/formats/moss.md §9 wanted budget max(256, 2·T_enc + 128) stays within ceiling; *n_used
 * (optional) gets the number of terms kept. */
transcribe_status tr_ms_build_prompt_hot(const ms_model *m, int T_enc, const char *const *terms,
                                         int n_terms, int ceiling, int32_t **ids, int *n,
                                         int **audio_pos, int *n_used);
/* Reads the optional instruction split (hints stay off, with a warning, when
 * it is malformed or does not reproduce the baked ids). */
transcribe_status tr_ms_hotwords_load(const struct gguf_file *f, ms_model *m);
/* The suffix for terms fitted to room suffix ids: malloc'ed in *suffix with
 * *n_used terms, or NULL (use the baked suffix) when no term fits, the
 * hints are off or there are no terms. */
transcribe_status tr_ms_hotword_suffix(const ms_model *m, const char *const *terms, int n_terms,
                                       int64_t room, int32_t **suffix, int *n_suffix, int *n_used);
/* Chunked front end + encoder + trim + merge + adaptor (docs/formats/moss.md §5, §6):
 * out [T_enc][hidden] malloc'ed. enc_trim (optional) receives the
 * concatenated trimmed encoder rows [4·T_enc][d] malloc'ed. progress
 * (may be NULL) is filled after each chunk. */
transcribe_status tr_ms_encode(ms_session *s, const float *pcm, int n_samples, float **out,
                               int *T_enc, float **enc_trim, tr_run_span *progress);

/* Batched run (docs/c-api.md §11, docs/formats/causal-lm.md §8): per-utterance statuses in
 * ctxs[i].result (partial text kept on OUTPUT_TRUNCATED); returns the
 * whole-batch status. */
transcribe_status tr_ms_run_batch(ms_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);

#endif
