/* Moonshine Streaming family internals (docs/formats/moonshine_streaming.md):
 * the loaded model, the incremental encoder every path runs (offline,
 * batch and native streaming share it, so a stream's encoder frames are the
 * offline run's), the per-session state, and the entry points the vtable
 * and the tests use. Weights are borrowed views into the mapped file; the
 * decoder is nn/moonshine_decoder.h with the untied head. */
#ifndef TR_MODELS_MOONSHINE_STREAMING_H
#define TR_MODELS_MOONSHINE_STREAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/family.h"
#include "nn/moonshine_decoder.h"
#include "nn/nn.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define MSS_SAMPLE_RATE 16000
#define MSS_CONV_K                                                                                 \
    5 /* the two causal stride-2 convolutions (docs/formats/moonshine_streaming.md §5.1) */

typedef struct mss_hparams {
    int n_enc_layers, enc_d, enc_heads, enc_hd, enc_ffn; /* enc attention width = heads·hd */
    int frame_len;                                       /* samples per front-end frame (80) */
    int *win; /* [2·n_enc_layers]: L0, R0, L1, R1, ... */
    int L_total,
        R_total; /* Σ max(0, L−1), Σ max(0, R−1) (docs/formats/moonshine_streaming.md §5.2) */
    int n_dec_layers, dec_d, dec_heads, dec_hd, dec_ffn, n_vocab, max_pos;
    float rot_factor, rope_theta, cmvn_eps;
    bool has_proj;
    int start_id, eos;
    int spf; /* samples per encoder frame: 4·frame_len */
} mss_hparams;

typedef struct mss_enc_block {
    const float *ln_attn, *ln_ffn; /* gains (the +1 folded in by the converter) */
    tr_nn_linear q, k, v, o;       /* no biases */
    tr_nn_linear fc1, fc2;
} mss_enc_block;

typedef struct mss_model {
    mss_hparams hp;
    /* front end and convolutions (docs/formats/moonshine_streaming.md §3,
     * docs/formats/moonshine_streaming.md §4, docs/formats/moonshine_streaming.md §5.1) */
    float k_scale;            /* exp(comp.log_k) */
    const tr_tensor *lin;     /* ne {w, e} */
    tr_tensor conv1v, conv2v; /* the kernels viewed as ne {5·c_in, c_out} */
    const tr_tensor *conv1, *conv2;
    const float *conv1_b, *conv2_b, *log_k;
    const float *enc_norm;
    mss_enc_block *enc;
    /* adapter (docs/formats/moonshine_streaming.md §5.3) */
    const tr_tensor *pos_emb; /* ne {e, P} */
    const tr_tensor *proj;    /* ne {e, D} or NULL */
    /* decoder (docs/formats/moonshine_streaming.md §6) */
    tr_msd msd;

    struct tr_tokenizer *tok;
    int n_lang;
    char **lang;
    const char *variant;
    int64_t max_audio_ms;
} mss_model;

/* ---- the incremental encoder (mss_enc.c) ----
 * PCM in, final-normed encoder rows out, each stage computing only the rows
 * its new input completes: front-end frames of frame_len samples, the two
 * causal convolutions (4 rows of history each), the blocks (each keeps the
 * rows its window still reads: L−1 back, and waits R−1 rows ahead). With
 * final set, the tail is zero-padded to a whole frame and every block
 * finishes with its window clipped at the end, which is the offline
 * computation (docs/formats/moonshine_streaming.md §5): pushing a whole input at once, or in
 * pieces, gives the same rows. */
typedef struct mss_rows {
    float *v;
    int width;
    int64_t base; /* global index of row 0 */
    int n, cap;
} mss_rows;

typedef struct mss_enc {
    const mss_model *m;
    float pend[4096]; /* samples of the unfinished front-end frame (< frame_len) */
    int n_pend;
    int64_t n_samples;     /* pushed so far (without padding) */
    mss_rows c1_in, c2_in; /* conv inputs from row 2t−4 of the next output t */
    int64_t c1_next, c2_next;
    mss_rows *x;    /* per block: input rows kept (residual + window) */
    mss_rows *qkv;  /* per block: q, k, v of those rows [3a] */
    int64_t *next;  /* per block: next output row */
    mss_rows out;   /* final-normed rows not yet taken */
    float *scratch; /* grown work area */
    size_t scratch_cap;
    bool finished;
    /* tests: 0 runs everything; 1 stops after the front end (rows in
     * c1_in), 2 after conv1 (c2_in), 3 + k after k blocks (x[k]) */
    int stop;
} mss_enc;

bool tr_mss_enc_init(mss_enc *e, const mss_model *m);
void tr_mss_enc_reset(mss_enc *e);
void tr_mss_enc_free(mss_enc *e);
/* Pushes n samples (finite; n may be 0 with final). OK, OOM, or ABORTED
 * (polled before every block). Rows land in e->out. */
transcribe_status tr_mss_enc_push(mss_enc *e, tr_pool *pool, const float *pcm, int n, bool final,
                                  bool (*should_abort)(void *), void *abort_user);
/* Drops e->out rows before global row `upto`. */
void tr_mss_rows_drop(mss_rows *r, int64_t upto);

/* Encoder frames of an n-sample one-shot input: ceil(n / spf) (docs/formats/moonshine_streaming.md
 * §5.1). */
int64_t tr_mss_enc_frames(const mss_hparams *hp, int64_t n);
/* The decode budget for T encoder frames (docs/formats/moonshine_streaming.md §6): gen_cap. */
int tr_mss_gen_cap(const mss_hparams *hp, int64_t T);

/* Adapter and cross K/V (docs/formats/moonshine_streaming.md §5.3,
 * docs/formats/moonshine_streaming.md §6) of n encoder rows at segment positions pos0..: into layer
 * l's rows [row0, row0 + n) of ck / cv, head-major blocks of cap rows each (nn.h's tr_nn_cross_kv,
 * layer stride cap · D floats). Uses `scratch` of n·(e + D) floats; false on OOM (logged). */
bool tr_mss_cross(tr_pool *pool, const mss_model *m, const float *enc, int n, int pos0, float *ck,
                  float *cv, size_t cap, int row0, float *scr);

/* ---- the session ---- */
struct mss_stream;

typedef struct mss_session {
    const mss_model *m;
    tr_pool *pool;
    bool kv_f16;
    tr_nn_kv kv;
    mss_enc enc;
    float *ck, *cv; /* [L][cap_frames][D] */
    size_t cap_frames;
    float *adapt; /* adapter scratch */
    size_t adapt_cap;
    float *dec_x, *dec_scratch, *logits;
    int32_t *ids; /* [max_pos] */
    int n_ids;    /* generated by the latest single run (tests) */
    struct mss_stream *stream;
} mss_session;

TR_FAMILY_DECLARE(mss);

/* Grows s->ck / s->cv to `frames` rows per layer, keeping the first `keep`. */
bool tr_mss_grow_cross(mss_session *s, size_t frames, size_t keep);
/* Adapter and cross K/V of the encoder rows [g0, g1) held in s->enc.out,
 * at positions g − seg0, into cross rows g − seg0 (grown as needed). */
transcribe_status tr_mss_cross_rows(mss_session *s, int64_t seg0, int64_t g0, int64_t g1);
/* The whole utterance through the encoder, adapter and cross K/V into the
 * session's buffers; *T gets the frames. */
transcribe_status tr_mss_encode(mss_session *s, const float *pcm, int n, int *T,
                                bool (*should_abort)(void *), void *abort_user);
/* Greedy decode over the session's first T cross rows (forced prefix as
 * nn/moonshine_decoder.h says; spec_k drafts per verify step, 0 = none);
 * ids into s->ids. */
transcribe_status tr_mss_decode(mss_session *s, int T, const int32_t *prefix, int n_prefix,
                                bool (*should_abort)(void *), void *abort_user, int spec_k,
                                int *n_out);

/* Input gates (docs/formats/moonshine_streaming.md §9 and the family README). */
transcribe_status tr_mss_gate(const mss_model *m, const float *pcm, int n);
/* Appends one segment [t0_ms, t1_ms] of ids to res (token rows, texts) —
 * first: the segment opens the text (its leading space dropped). */
bool tr_mss_add_segment(const mss_model *m, tr_result *res, const int32_t *ids, int n, bool first,
                        int64_t t0_ms, int64_t t1_ms);

/* ---- streaming (mss_stream.c) ---- */
transcribe_status tr_mss_validate_stream(const mss_model *m, const struct transcribe_ext *ext);
transcribe_status tr_mss_stream_begin(mss_session *s, tr_stream_ctx *ctx);
transcribe_status tr_mss_stream_feed(mss_session *s, const float *pcm, int n, tr_stream_ctx *ctx);
transcribe_status tr_mss_stream_finalize(mss_session *s, tr_stream_ctx *ctx);
void tr_mss_stream_reset(mss_session *s);
void tr_mss_stream_free(struct mss_stream *st);

#endif
