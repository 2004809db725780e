/* GigaAM family internals (docs/formats/gigaam.md): the loaded model (HTK
 * mel front end with the file's filterbank and window, two stride-2 Conv1d,
 * rotary Conformer blocks from nn/conformer.h, a CTC head or an LSTM
 * transducer), the session, and the entry points the vtable and the tests
 * use. Encoder weights are borrowed views of the mapped file; the head runs
 * in F32 as the spec's host decoder does: the predictor's LSTM and the
 * joint's predictor and output matrices (read every step) widened at load
 * (owned), the CTC kernel, the joint's encoder projection and the
 * embedding widened at use from the file's tensors. */
#ifndef TR_MODELS_GIGAAM_H
#define TR_MODELS_GIGAAM_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/conformer.h"
#include "nn/lstm.h"

struct tr_tokenizer;

/* docs/formats/gigaam.md §8: the soft window; longer audio runs whole with a warning. */
#define GA_MAX_AUDIO_MS 25000
/* docs/formats/gigaam.md §6.1 / §7 */
#define GA_MAX_SYMBOLS 10
#define GA_FRAME_MS    40
#define GA_ROPE_BASE   5000.0f
#define GA_LOG_MIN     1e-9f
#define GA_LOG_MAX     1e9f

typedef enum { GA_HEAD_CTC = 0, GA_HEAD_RNNT = 1 } ga_head_kind;

typedef struct ga_hparams {
    int n_layers, d_model, n_heads, d_ff, conv_kernel, subs_kernel, feat_in;
    int n_classes, blank; /* blank = n_classes - 1 */
    int pred_hidden, joint_hidden;
} ga_hparams;

/* An owned F32 matrix with its tensor view (ne {in, out}); or, where data is NULL, the
 * file's tensor src to widen at use (tr_ga_widen), so that a matrix read once per run (the
 * CTC kernel, the joint's encoder projection) or a row at a time (the embedding) is not kept
 * widened beside its mapped copy. */
typedef struct ga_mat {
    float *data;
    tr_tensor t;
    const tr_tensor *src;
    int64_t in, out;
} ga_mat;

/* src's first out rows of in elements widened into dst (owned; free dst->data): false on
 * OOM. With fill false, dst only gets the room and its view, for tr_ga_widen_rows. */
bool tr_ga_widen(const tr_tensor *src, int64_t in, int64_t out, bool fill, ga_mat *dst);
/* dst's rows 0 .. n - 1 = rows r0 .. r0 + n - 1 of dst->src, widened (n <= dst->out). */
void tr_ga_widen_rows(ga_mat *dst, int64_t r0, int64_t n);

typedef struct ga_model {
    ga_hparams hp;
    ga_head_kind head;
    tr_mel_config mel; /* borrowed filterbank and window */
    tr_cf_dims dims;
    const tr_tensor *sub0_w, *sub2_w; /* {k, feat_in, d}, {k, d, d} */
    const float *sub0_b, *sub2_b;
    tr_cf_block *blocks;
    int n_prepared; /* blocks whose taps need freeing */
    /* ctc */
    ga_mat ctc_w; /* {d, C} */
    float *ctc_b; /* [C] */
    /* rnnt */
    ga_mat embed;            /* {h, C}: row k = embedding of class k */
    ga_mat lstm_wx, lstm_wh; /* {h, 4h} */
    float *lstm_b;           /* [4h] */
    ga_mat j_enc, j_pred, j_out;
    float *j_enc_b, *j_pred_b, *j_out_b;
    tr_nn_lstm lstm;
    struct tr_tokenizer *tok;
    bool spm; /* SentencePiece pieces (▁ opens a word); else charwise */
    char **lang;
    int n_lang;
    const char *variant;
} ga_model;

typedef struct ga_session {
    const ga_model *m;
    tr_pool *pool;
} ga_session;

/* Intermediate outputs a test can ask the encoder for (NULL or a buffer of
 * the size given; row-major). */
typedef struct ga_taps {
    float *sub_out;  /* [T_enc][d] after the two convs */
    float **blk_out; /* NULL or n_layers pointers (each NULL or [T_enc][d]) */
} ga_taps;

/* One emitted token: class id and encoder frame. */
typedef struct ga_tok {
    int32_t id;
    int32_t frame;
} ga_tok;

TR_FAMILY_DECLARE(ga);

/* Frame counts of docs/formats/gigaam.md §4 / §5.1 (0 when n < one window). */
int tr_ga_mel_frames(const ga_model *m, int64_t n);
int tr_ga_enc_frames(int T_mel);

/* Front end (docs/formats/gigaam.md §4): *mel is malloc'ed [n_mels][*T_mel].
 * INVALID_ARG under one window, OOM. */
transcribe_status tr_ga_mel(const ga_model *m, tr_pool *pool, const float *pcm, int64_t n,
                            float **mel, int *T_mel);

/* Encoder (docs/formats/gigaam.md §5) of n utterances packed: mel[i]
 * [n_mels][T_mel[i]] → out rows of utterance i after those of i-1
 * ([sum T_enc][d]). abort (may be NULL) is polled before each block. */
transcribe_status tr_ga_encode(const ga_model *m, tr_pool *pool, int n, const float *const *mel,
                               const int *T_mel, float *out, const ga_taps *taps,
                               bool (*abort)(void *), void *abort_user);
/* The same without taps, taking the mels (malloc'ed): each freed and cleared once subsampled
 * (so they are not resident beside the blocks' working memory), whatever the outcome. */
transcribe_status tr_ga_encode_take(const ga_model *m, tr_pool *pool, int n, float **mel,
                                    const int *T_mel, float *out, bool (*abort)(void *),
                                    void *abort_user);

/* CTC head (docs/formats/gigaam.md §6.2): log-probs [T][C] of enc [T][d]. */
transcribe_status tr_ga_ctc_logprobs(const ga_model *m, tr_pool *pool, const float *enc, int T,
                                     float *logits, float *logp);
/* Greedy CTC over log-probs: tokens (capacity T), their count. */
int tr_ga_ctc_greedy(const ga_model *m, const float *logp, int T, ga_tok *toks);
/* What a test can ask the transducer to record (capacities in rows; rows
 * past them are counted, not stored): the projected encoder e_t [T][hj]
 * (NULL or T rows), every predictor output g [pred_cap][h], and every joint
 * evaluation's logits [step_cap][C] with its (frame, argmax). */
typedef struct ga_rnnt_trace {
    float *enc_proj;
    float *pred;
    int pred_cap, n_pred;
    float *logits;
    int32_t *steps; /* [step_cap][2] */
    int step_cap, n_steps;
} ga_rnnt_trace;

/* Greedy RNN-T (docs/formats/gigaam.md §6.1) over enc [T][d]: *toks malloc'ed, *n its
 * count. abort polled every frame; trace NULL or filled. */
transcribe_status tr_ga_rnnt_greedy(const ga_model *m, tr_pool *pool, const float *enc, int T,
                                    ga_tok **toks, int *n, ga_rnnt_trace *trace,
                                    bool (*abort)(void *), void *abort_user);

/* Result rows (docs/formats/gigaam.md §6.3, §7). */
transcribe_status tr_ga_build_result(const ga_model *m, const ga_tok *toks, int n,
                                     const struct transcribe_run_params *p, tr_result *res);

#endif
