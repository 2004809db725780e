/* Parakeet heads and greedy decoders (docs/formats/parakeet.md §8): CTC with
 * repeat collapse, RNN-T and TDT over an LSTM predictor and a joint network.
 * All weights are owned F32 (dequantized at load); decoding runs on the
 * encoder output [T][d] of one window and reports window-local frames. The
 * per-step predictor / joint matvecs use only preallocated buffers. */
#ifndef TR_MODELS_PARAKEET_DECODE_H
#define TR_MODELS_PARAKEET_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe.h"

typedef enum { PK_HEAD_TDT = 0, PK_HEAD_RNNT = 1, PK_HEAD_CTC = 2 } pk_head_kind;
typedef enum { PK_ACT_RELU = 0, PK_ACT_SIGMOID = 1, PK_ACT_TANH = 2 } pk_act;

/* An owned F32 matrix [rows][cols] with a tensor view (ne = {cols, rows})
 * so the GEMM paths can use it. */
typedef struct pk_mat {
    tr_tensor t;
    float *data;
    int rows, cols;
} pk_mat;

typedef struct pk_head {
    pk_head_kind kind;
    int d_enc;   /* encoder width */
    int n_vocab; /* classes incl. blank (V + 1); blank = n_vocab - 1 */
    /* CTC */
    pk_mat ctc; /* [n_vocab][d_enc] */
    float *ctc_b;
    /* transducers */
    int hp, n_layers, joint, n_out, n_dur; /* n_out = n_vocab + n_dur */
    int *durations;
    int max_symbols; /* TDT per-frame cap (0 = none); RNN-T always 10 */
    pk_act act;
    pk_mat embed;       /* [n_vocab][hp] */
    pk_mat *wx, *wh;    /* [n_layers] × [4hp][hp] */
    float **lstm_b;     /* [n_layers] × [4hp] (b_ih + b_hh) */
    pk_mat jenc, jpred; /* [joint][d_enc], [joint][hp] */
    float *jenc_b, *jpred_b;
    pk_mat jout; /* [n_out][joint] */
    float *jout_b;
} pk_head;

/* One emitted token (frame is window-local in the decoder, global after
 * stitching). */
typedef struct pk_tok {
    int id, frame, dur;
    float p;
} pk_tok;

typedef struct pk_toks {
    pk_tok *v;
    int n, cap;
} pk_toks;

bool tr_pk_toks_push(pk_toks *t, pk_tok k);
void tr_pk_toks_free(pk_toks *t);

/* Per-session decoder buffers. Sized once for the head; the per-frame
 * buffer (joint encoder projection or CTC logits) grows with T. */
typedef struct pk_dec_work {
    float *state, *pending; /* [2][n_layers][hp]: h then c */
    float *x, *gates, *g, *hid, *logits;
    float *frames; /* [T][joint] or [T][n_vocab] */
    size_t frames_cap;
    const pk_head *head;
} pk_dec_work;

bool tr_pk_mat_alloc(pk_mat *m, int rows, int cols, const char *name);
void tr_pk_mat_free(pk_mat *m);
void tr_pk_head_free(pk_head *h);

bool tr_pk_dec_work_init(pk_dec_work *w, const pk_head *h);
void tr_pk_dec_work_free(pk_dec_work *w);
size_t tr_pk_dec_work_bytes(const pk_dec_work *w);

typedef bool (*pk_abort_fn)(void *user);

/* Greedy decode of enc [T][d_enc] (docs/formats/parakeet.md §8.3–§8.5), appending to out with
 * window-local frames. TRANSCRIBE_ERR_BACKEND past the §8.3 safety cap,
 * OOM, or ABORTED (polled every few hundred frames). */
transcribe_status tr_pk_decode(const pk_head *h, tr_pool *pool, pk_dec_work *w, const float *enc,
                               int T, pk_toks *out, pk_abort_fn should_abort, void *abort_user);

/* Decoder state carried between the chunks of a stream: the next frame
 * to decode (a TDT duration may point past the chunk just decoded), the
 * symbols emitted at it, the previous CTC argmax. The predictor's LSTM
 * state and output live in the pk_dec_work, which the stream owns. */
typedef struct pk_dec_carry {
    int t, sym, prev_ctc;
    bool started;
} pk_dec_carry;
void tr_pk_dec_carry_reset(pk_dec_carry *c);

/* Greedy decode of the stream frames [f0, f0 + T) held in enc [T][d_enc],
 * resumed from (and updating) *c; token frames are stream frames. Chunks
 * decoded in order give exactly tr_pk_decode's tokens of the whole sequence. */
transcribe_status tr_pk_decode_resume(const pk_head *h, tr_pool *pool, pk_dec_work *w,
                                      const float *enc, int f0, int T, pk_toks *out,
                                      pk_dec_carry *c, pk_abort_fn should_abort, void *abort_user);

/* y[N] = W[N][K] · x[K] (+ b): tr_matmul's matrix-vector path, rows split
 * over the pool; a failure is noted on the pool like any kernel's. */
void tr_pk_matvec(tr_pool *pool, const pk_mat *W, const float *b, const float *x, float *y);

/* docs/formats/parakeet.md §8.6: 1 − H(softmax(l[0..n))) / ln(n). */
float tr_pk_confidence(const float *l, int n);

#endif
