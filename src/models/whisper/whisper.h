/* Whisper family internals (docs/formats/whisper.md): the loaded model, the
 * per-session state, and the entry points the family vtable and the tests
 * use. Weights are borrowed views into the mapped model file. */
#ifndef TR_MODELS_WHISPER_H
#define TR_MODELS_WHISPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/family.h"
#include "audio/mel.h"
#include "nn/encdec_decoder.h"
#include "nn/nn.h"
#include "nn/whisper_encoder.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe/whisper.h"

struct tr_tokenizer;

typedef struct wh_hparams {
    int n_enc_layers, n_dec_layers;
    int d_model, n_head, head_dim;
    int enc_ffn, dec_ffn;
    int n_mels, n_audio_ctx, n_text_ctx, n_vocab;
    int n_samples_window; /* 480000 */
    int n_frames_window;  /* 3000 */
} wh_hparams;

typedef struct wh_model {
    wh_hparams hp;

    tr_whenc enc; /* the shared Whisper encoder (nn/whisper_encoder.h) */
    /* decoder */
    const tr_tensor *tok_emb; /* ne {D, V}; also the tied output head */
    const float *dec_pos;     /* [n_text_ctx][D] */
    tr_nn_norm dec_ln;
    tr_nn_dec_block *dec;
    bool weights_f32; /* dec.blocks.0.self_attn.q.weight is F32 (KV AUTO rule) */
    /* the decoder as nn's configuration: learned positions, no embedding
     * norm, final LN, head tied to tok_emb */
    tr_ed_decoder decoder;

    /* front end */
    tr_mel_config mel;
    float *owned_fb, *owned_window; /* .bin models: synthesised buffers */

    /* tokenizer and generation contract */
    struct tr_tokenizer *tok;
    int n_tok_pieces;
    int sot, eot, no_ts, ts_begin, no_speech, transcribe, translate, prev_sot;
    int32_t *suppress, *begin_suppress;
    int n_suppress, n_begin_suppress;
    bool multilingual, can_translate;

    /* languages (general.languages) and their <|xx|> ids (-1 unresolved) */
    int n_lang;
    char **lang;
    int *lang_tok;
    char *variant;

    void *bin; /* legacy .bin parser state, when loaded from .bin */
} wh_model;

/* Per-window telemetry (transcribe_whisper_chunk_trace). */
typedef struct wh_trace {
    int64_t t0_ms, t1_ms;
    float temperature, compression_ratio, avg_logprob, no_speech_prob;
    bool no_speech;
    int n_fallbacks;
} wh_trace;

typedef struct wh_session {
    const wh_model *m;
    tr_pool *pool;
    tr_nn_kv kv;
    float *enc_x; /* [S][D] encoder activations / output */
    tr_whenc_work enc_work;
    float *cross_k, *cross_v; /* [L_dec][S][D]; NULL with an F16 cache: */
    uint16_t *ck16, *cv16;    /* the same as half floats (the step reads half) */
    float *dec_x;             /* [n_text_ctx][D] */
    float *dec_scratch;
    float *logits; /* [2][V] */
    float *work;   /* [V] logit processing */
    float *window; /* [n_mels][T_mel] one window of mel */
    wh_trace *traces;
    int n_traces, cap_traces;
    /* batch member (whisper_batch.c): heavy calls go to the hub; NULL otherwise */
    struct wh_hub *hub;
    int hub_slot;
} wh_session;

typedef struct wh_hub wh_hub;

/* Loading (whisper_load.c). */
/* load / describe / free, session create / free, run (core/family.h) */
TR_FAMILY_DECLARE(wh);

/* Log-mel (whisper_mel.c). Whole signal per docs/formats/whisper.md §5.2: *mel is malloc'ed
 * [n_mels][*n_frames]. */
transcribe_status tr_wh_log_mel(const wh_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                float **mel, int *n_frames);

/* Long form without holding the whole mel: pass 1 finds the global maximum
 * g over every frame (chunk by chunk), then any frame range is computed on
 * demand with that g — identical to slicing the whole-signal mel. */
typedef struct wh_mel_stream {
    const wh_model *m;
    tr_pool *pool;
    const float *pcm;
    int64_t n;
    int total; /* floor(n / hop) frames */
    double g;
    float *buf; /* padded-signal slice */
    size_t buf_cap;
} wh_mel_stream;
transcribe_status tr_wh_mel_stream_init(wh_mel_stream *ms, const wh_model *m, tr_pool *pool,
                                        const float *pcm, int64_t n);
/* Frames [a, a+N) into out (row stride ld floats): out[c*ld + t]. */
transcribe_status tr_wh_mel_stream_frames(wh_mel_stream *ms, int a, int N, float *out, int ld);
void tr_wh_mel_stream_free(wh_mel_stream *ms);
/* Encodes one window: mel [n_mels][n_frames_window] → s->enc_x [S][D]. */
void tr_wh_encode(wh_session *s, const float *mel_window);
/* Computes cross K/V of every decoder layer from s->enc_x. */
bool tr_wh_cross_kv(wh_session *s); /* false: out of memory (logged) */
/* s's cross K/V buffers, half floats when its cache is F16; false on OOM. */
bool tr_wh_cross_alloc(wh_session *s);
/* s's cross K/V from the encoder output enc_x [S][D]; false on OOM (logged). */
bool tr_wh_cross_fill(wh_session *s, tr_pool *pool, const float *enc_x);
/* Decoder pass over ids at positions n_past.. ; leaves final-LN hidden rows
 * in s->dec_x. Returns false when the positions exceed n_text_ctx. */
bool tr_wh_decode_tokens(wh_session *s, const int32_t *ids, int n, int n_past);
/* The decoder sequence of s (its cache and cross K/V) for n ids at n_past. */
tr_ed_seq tr_wh_seq(wh_session *s, const int32_t *ids, int n, int n_past);
/* logits = dec_x[row] · E^T into out [V]. */
void tr_wh_logits_row(wh_session *s, int row, float *out);
/* One token at n_past and the logits after it into out [V]: the decoder
 * pass and the head in one step (the one-run step of nn/encdec_step1.h;
 * the bits of tr_wh_decode_tokens then tr_wh_logits_row). false as
 * tr_wh_decode_tokens. */
bool tr_wh_step_logits(wh_session *s, int32_t id, int n_past, float *out);
/* Speculative verify (single runs, not a batch member): ids[0..n) at
 * n_past.. in passes of up to 4 rows (the few-row matmul path, exact to
 * one-row products), the head of every row into logits [n][V]: the bits n
 * tr_wh_decode_tokens + tr_wh_logits_row steps would give. */
bool tr_wh_verify_rows(wh_session *s, const int32_t *ids, int n, int n_past, float *logits);

/* Run (whisper_run.c). */

/* The batch run (whisper_batch.c, core/family.h run_batch): sets every
 * ctxs[i].result->status, returns the whole-batch status. */
transcribe_status tr_wh_run_batch(wh_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs);
/* A batch member's tr_wh_encode (+ cross K/V), tr_wh_decode_tokens (validated)
 * and tr_wh_logits_row, served by the hub on the caller's thread. */
void tr_wh_hub_encode(wh_session *s, const float *mel_window);
void tr_wh_hub_decode(wh_session *s, const int32_t *ids, int n, int n_past);
void tr_wh_hub_logits(wh_session *s, int row, float *out);

/* Zlib-compatible compressed size of a token sequence (2-byte LE ids), for
 * the compression-ratio gate (whisper_deflate.c). */
double tr_wh_compression_ratio(const int32_t *ids, int n);

#endif
