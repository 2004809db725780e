/* Voxtral Realtime family internals (docs/formats/voxtral_realtime.md): the loaded model, the
 * incremental causal encoder every path runs (offline, batch and native streaming share it, so a
 * stream's audio rows are the offline run's), the per-session state and the entry points the
 * vtable and the tests use. Weights are borrowed views into the mapped file; the LM is the shared
 * decoder of src/nn/causal_lm.h with the delay-scaled FFN norms (§6.1) and the additive audio
 * rows (§6.3, tr_clm_set_input_rows). */
#ifndef TR_MODELS_VOXTRAL_REALTIME_H
#define TR_MODELS_VOXTRAL_REALTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/causal_lm.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

struct tr_tokenizer;

#define VXR_LEFT_PAD_TOK 32 /* docs/formats/voxtral_realtime.md §4: left zero tokens */
#define VXR_RIGHT_EXTRA                                                                            \
    11 /* docs/formats/voxtral_realtime.md §4: 10 buffer tokens + the BOS slot, after the delay */
#define VXR_ENC_CHUNK                                                                              \
    512 /* encoder frames per pass (docs/formats/voxtral_realtime.md §8 streaming: at most 512) */

typedef struct vxr_hparams {
    /* encoder (docs/formats/voxtral_realtime.md §2.2) */
    int enc_layers, enc_d, enc_heads, enc_hd, enc_ffn, n_mels, enc_window;
    float enc_theta, enc_eps;
    /* projector (docs/formats/voxtral_realtime.md §2.3) */
    int ds, per_tok; /* downsample factor (4), mel frames per audio token (8) */
    /* decoder (docs/formats/voxtral_realtime.md §2.4) */
    int max_pos, dec_window;
    /* time conditioning (docs/formats/voxtral_realtime.md §2.4, §6.1) */
    int default_delay, ada_hidden;
    /* tokens (docs/formats/voxtral_realtime.md §2.1) */
    int bos, eos, pad;
} vxr_hparams;

typedef struct vxr_enc_block {
    const float *norm_attn, *norm_ffn;
    const tr_tensor *wq, *wk, *wv, *wo;
    const float *bq, *bv, *bo;
    const tr_tensor *gate, *up, *down;
    const float *bd;
} vxr_enc_block;

typedef struct vxr_model {
    vxr_hparams hp;
    tr_mel_config mel;
    /* encoder (docs/formats/voxtral_realtime.md §3, §5) */
    tr_tensor conv0v, conv1v; /* kernels viewed as ne {3·c_in, c_out} */
    const float *conv0_b, *conv1_b, *enc_norm;
    vxr_enc_block *enc;
    const tr_tensor *proj1, *proj2;
    /* LM (docs/formats/voxtral_realtime.md §6) */
    tr_clm_hparams lm;
    tr_clm_block *lm_blocks;
    tr_clm_weights lm_w;
    const float *inv_freq;          /* [embed_dim / 2] */
    const tr_tensor **ada1, **ada2; /* per layer: ne {d_model, ada_hidden}, {ada_hidden, d_model} */

    struct tr_tokenizer *tok;
    int n_lang;
    char **lang;
    char *variant;
} vxr_model;

/* ---- the incremental encoder (vxr_enc.c; docs/formats/voxtral_realtime.md §4, §5) ----
 * PCM in, audio rows (projector outputs) out. The signal is the left-padded one of §4
 * (32·1280 zeros, then the samples); every stage is causal, so each push computes only what its
 * samples complete: mel frames in groups of per_tok·... (8) whose windows are whole, the two
 * causal convolutions with their carried left context, every block over the new frames with a
 * ring of the last window keys, the final norm and one projector row per 4 frames. finish()
 * appends the offline right padding for `delay` and completes every frame, which is the offline
 * computation: pushing an input at once or in pieces gives the same rows. */
typedef struct vxr_enc {
    const vxr_model *m;
    float *buf; /* samples [buf0, buf0 + n_buf) of the left-padded signal */
    int64_t buf0;
    int n_buf, buf_cap;
    int64_t n_total;   /* samples of the left-padded signal so far (right padding included) */
    int64_t mel_next;  /* next mel frame */
    int64_t mel_end;   /* mel frames of the finished signal (-1: not finished) */
    float *mel_hist;   /* mel frames mel_next-2, mel_next-1 [2][n_mels] */
    float *c0_hist;    /* conv0 frame mel_next-1 [enc_d] */
    float *kr, *vr;    /* per layer key / value ring [L][ring][A] (F32 sessions) */
    uint16_t *kh, *vh; /* the same rings in half floats (F16 sessions; kr / vr NULL) */
    int ring, kv_n;    /* rows per layer, rows held (positions kv0 .. kv0 + kv_n - 1) */
    int64_t kv0, enc_next;
    float *audio; /* rows [audio0, audio0 + n_audio) [d_model] */
    int64_t audio0;
    int n_audio, audio_cap;
    float *work; /* grown scratch */
    size_t work_cap;
    bool finished;
} vxr_enc;

/* f16: hold the key / value ring in half floats (the session's F16 cache type): half the
 * memory, attention on the F16-rounded keys and values. */
bool tr_vxr_enc_init(vxr_enc *e, const vxr_model *m, bool f16);
void tr_vxr_enc_reset(vxr_enc *e);
void tr_vxr_enc_free(vxr_enc *e);
/* Pushes n samples (finite) and encodes what they complete. OK, OOM or ABORTED (polled between
 * passes). */
transcribe_status tr_vxr_enc_push(vxr_enc *e, tr_pool *pool, const float *pcm, int64_t n,
                                  bool (*should_abort)(void *), void *abort_user);
/* The two halves of a push: holding n samples without encoding them (a stream between decodes),
 * and encoding every frame the held samples complete (in passes of at most 512 frames). */
transcribe_status tr_vxr_enc_append(vxr_enc *e, const float *pcm, int64_t n);
transcribe_status tr_vxr_enc_run(vxr_enc *e, tr_pool *pool, bool (*should_abort)(void *),
                                 void *abort_user);
/* Appends the offline right padding for n_samples pushed samples and delay d
 * (docs/formats/voxtral_realtime.md §4) and encodes every remaining frame. */
transcribe_status tr_vxr_enc_finish(vxr_enc *e, tr_pool *pool, int64_t n_samples, int delay,
                                    bool (*should_abort)(void *), void *abort_user);
/* Drops audio rows before global row `upto`. */
void tr_vxr_enc_drop_audio(vxr_enc *e, int64_t upto);

/* Audio tokens of an n-sample input at delay d: 32 + ceil(n/1280) + d + 11
 * (docs/formats/voxtral_realtime.md §4). */
int64_t tr_vxr_n_audio(const vxr_model *m, int64_t n, int delay);
/* Whether a delay is allowed: 1..15 or 30 (docs/formats/voxtral_realtime.md §8). */
bool tr_vxr_delay_ok(int d);

/* ---- the session ---- */
struct vxr_stream;

typedef struct vxr_session {
    const vxr_model *m;
    tr_clm_session dec;
    tr_clm_block *blocks; /* the model's blocks with norm_ffn scaled for `delay`
                             (docs/formats/voxtral_realtime.md §6.1) */
    tr_clm_weights w;     /* the model's weights over these blocks */
    float *ffn_norm;      /* [n_layer][d_model] */
    int delay;            /* the delay the scales hold (-1 none) */
    vxr_enc enc;
    int32_t *ids; /* the latest run's generated ids (prefill token first, EOS excluded) */
    int n_ids, cap_ids;
    struct vxr_stream *stream;
} vxr_session;

TR_FAMILY_DECLARE(vxr);

/* Sets the session's FFN-norm scales for delay d (docs/formats/voxtral_realtime.md §6.1). */
void tr_vxr_set_delay(vxr_session *s, int d);
/* Input gate of one utterance at delay d (docs/formats/voxtral_realtime.md §6.3, §9): *n_audio gets
 * the audio tokens. */
transcribe_status tr_vxr_gate(const vxr_model *m, const float *pcm, int n, int d, int64_t *n_audio);
/* Prompt embeddings of docs/formats/voxtral_realtime.md §6.3 (T_prompt = 33 + d rows, audio rows
 * 0.. added) into x. */
void tr_vxr_prompt(const vxr_session *s, int d, const float *audio, float *x);
/* Result of ids (docs/formats/voxtral_realtime.md §6.5). */
transcribe_status tr_vxr_fill_result(const vxr_model *m, const int32_t *ids, int n,
                                     int64_t n_samples, tr_result *res);
bool tr_vxr_ids_reserve(vxr_session *s, int n);
/* The repetition guard over the text ids of ids[0..n) (control ids, such as the [STREAMING_PAD]
 * the model emits for every 80 ms without a new word, never trip it): how many of the ids to keep.
 * n when no guarded loop; else the ids before the first text id the guard drops, at the first
 * text prefix that trips it (every prefix when scan, else only the whole, as a stream checks it
 * after each id). */
int tr_vxr_guard_keep(const vxr_model *m, const int32_t *ids, int n, bool scan);

/* ---- streaming (vxr_stream.c) ---- */
transcribe_status tr_vxr_validate_stream(const vxr_model *m, const struct transcribe_ext *ext);
transcribe_status tr_vxr_stream_begin(vxr_session *s, tr_stream_ctx *ctx);
transcribe_status tr_vxr_stream_feed(vxr_session *s, const float *pcm, int n, tr_stream_ctx *ctx);
transcribe_status tr_vxr_stream_finalize(vxr_session *s, tr_stream_ctx *ctx);
void tr_vxr_stream_reset(vxr_session *s);
void tr_vxr_stream_free(struct vxr_stream *st);

#endif
