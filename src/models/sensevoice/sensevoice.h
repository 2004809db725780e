/* SenseVoice family internals (docs/formats/sensevoice.md): the loaded model
 * (Kaldi fbank + LFR front end, prefix table, SAN-M encoder from
 * nn/sanm.h in two tiers, CTC head), the session, and the entry points the
 * vtable and the tests use. Weights are borrowed views of the mapped file;
 * only the FSMN taps are owned (nn/sanm.h). */
#ifndef TR_MODELS_SENSEVOICE_H
#define TR_MODELS_SENSEVOICE_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/sanm.h"

struct tr_tokenizer;

#define SV_PREFIX_ROWS 16 /* rows of enc.embed.weight (docs/formats/sensevoice.md §3) */
/* The soft window of docs/formats/sensevoice.md §7: longer input runs whole
 * with a warning (attention is O(T²)). */
#define SV_MAX_AUDIO_MS 30000

/* Row indices into the prefix table (docs/formats/sensevoice.md §2). */
typedef struct sv_special {
    int lang_auto, lang_zh, lang_en, lang_yue, lang_ja, lang_ko, lang_nospeech;
    int withitn, woitn;
} sv_special;

typedef struct sv_hparams {
    int n_blocks, tp_blocks; /* n_blocks includes the projection block encoders0.0 */
    int d_model, d_input, n_heads, d_ff, kernel;
    int n_vocab; /* tokenizer pieces = CTC classes */
} sv_hparams;

typedef struct sv_model {
    sv_hparams hp;
    sv_special sp;
    tr_mel_config mel;   /* Kaldi fbank + LFR + CMVN (borrowed CMVN vectors) */
    const float *embed;  /* enc.embed.weight [16][d_input] */
    tr_sanm_encoder enc; /* the two-tier SAN-M stack (nn/sanm.h) */
    tr_nn_linear ctc;
    struct tr_tokenizer *tok;
    char **lang; /* general.languages (or the five defaults) */
    int n_lang;
    bool lang_detect;
    const char *variant;
} sv_model;

typedef struct sv_session {
    const sv_model *m;
    tr_pool *pool;
} sv_session;

/* Intermediate outputs a test can ask the encoder for (each NULL or a
 * buffer of the size given; row-major). */
typedef struct sv_taps {
    float *embed_out;     /* [T][d_input]: prefix + features, scaled, with positions */
    float *encoders0_out; /* [T][d_model] */
    float *encoders_out;  /* [T][d_model] */
    float *after_norm_out;
    float *tp_norm_out;
} sv_taps;

TR_FAMILY_DECLARE(sv);

/* Front end (docs/formats/sensevoice.md §4): *feats is malloc'ed
 * [*T_lfr][d_input] (frame-major, CMVN applied). INVALID_ARG under one
 * window of samples, OOM. */
transcribe_status tr_sv_features(const sv_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                 float **feats, int *T_lfr);

/* The prefix rows for a language hint and ITN mode (docs/formats/sensevoice.md §6.2). */
void tr_sv_prompt_rows(const sv_model *m, const char *language, enum transcribe_itn_mode itn,
                       int *lid, int *textnorm);

/* Encoder + CTC head (docs/formats/sensevoice.md §5): logits [T_lfr + 4][n_vocab]. abort (may be
 * NULL) is polled before each block: ABORTED. OOM. */
transcribe_status tr_sv_encode(const sv_model *m, tr_pool *pool, const float *feats, int T_lfr,
                               int lid, int textnorm, float *logits, const sv_taps *taps,
                               bool (*abort)(void *), void *abort_user);

/* Greedy CTC (docs/formats/sensevoice.md §6.1): ids (capacity T) and their count. */
int tr_sv_greedy(const float *logits, int T, int V, int32_t *ids);

/* Result rows (docs/formats/sensevoice.md §6.3): text, raw text, detected language, one untimed
 * segment over n_samples. */
transcribe_status tr_sv_build_result(const sv_model *m, const int32_t *ids, int n,
                                     const struct transcribe_run_params *p, int64_t n_samples,
                                     tr_result *res);

#endif
