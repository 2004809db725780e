/* FastConformer encoder shared by the Parakeet and Canary families
 * (docs/formats/parakeet.md §7, docs/formats/canary.md §6): dw_striding pre-encode
 * (factor 2, 4, 8 or 16: one stride-2 stage per factor of two), optional
 * x-scaling, Conformer blocks with macaron half-residual
 * feed-forwards, relative-position MHSA (pos_bias_u / pos_bias_v, rel-shift;
 * full, local or chunked-limited context), and the convolution module with
 * batch norm folded at load (or LayerNorm). Weights are read from the GGUF
 * under the names "enc.pre_encode.*" and "enc.blocks.{i}.*"; activations are
 * F32 [frames][d_model]. */
#ifndef TR_NN_FASTCONFORMER_H
#define TR_NN_FASTCONFORMER_H

#include <stdbool.h>
#include <stddef.h>

#include "tensor/pool.h"
#include "transcribe.h"

struct gguf_file;

typedef enum {
    TR_FC_STYLE_REGULAR = 0,           /* full (-1/-1) or local (both >= 0) */
    TR_FC_STYLE_CHUNKED_LIMITED = 1,   /* chunk mask + causal pre-encode */
    TR_FC_STYLE_CHUNKED_LIMITED_RC = 2 /* offline: plain full attention */
} tr_fc_att_style;

/* Hyper-parameters, resolved (defaults applied). */
/* The largest subsampling factor (4 stride-2 pre-encode stages). */
#define TR_FC_MAX_SUB_FACTOR 16
#define TR_FC_MAX_SUB_STAGES 4

typedef struct tr_fc_hparams {
    int n_layers, d_model, n_heads, d_ff, conv_kernel;
    /* sub_factor: the file's subsampling_factor (2, 4, 8 or 16), which times
     * encoder frames (sub_factor hops each); sub_stages: the stride-2 stages
     * of the pre-encode, log2(sub_factor) as read, then the count the file's
     * weights hold (tr_fc_load; they differ only in a file whose key and
     * weights disagree, which loads with a warning). Audio geometry (samples
     * per encoder frame) is 2^sub_stages hops. */
    int sub_factor, sub_stages, sub_channels, n_mels;
    bool use_bias;           /* the 11 per-block biases are required (and used) */
    bool xscaling;           /* x *= sqrt(d_model) after the pre-encode */
    int att_left, att_right; /* -1/-1 = full attention */
    tr_fc_att_style att_style;
    int conv_pad_left, conv_pad_right; /* depthwise padding, resolved */
    bool conv_layer_norm;              /* conv module norm: LayerNorm instead of BN */
    /* buffered streaming (chunked_limited_with_rc, tr_fc_forward_buffered):
     * (left, chunk, right) in encoder frames; rc_chunk == 0 (as loaded) =
     * no mask, the offline full attention */
    int rc_left, rc_chunk, rc_right;
} tr_fc_hparams;

typedef enum {
    TR_FC_KEYS_PARAKEET = 0, /* every stt.parakeet.encoder.* key of docs/formats/parakeet.md §3.3 */
    TR_FC_KEYS_CANARY = 1,   /* biases always required; no xscaling / context / conv keys */
    /* Sortformer (docs/formats/sortformer.md §2.3): the sizes only; biases,
     * x-scaling, full attention, centred depthwise padding and batch norm
     * are fixed; conv_norm_type is type-checked and ignored */
    TR_FC_KEYS_SORTFORMER = 2
} tr_fc_key_flavor;

/* Reads "<key_prefix>n_layers" etc. (key_prefix e.g. "stt.parakeet.encoder.")
 * and n_mels from stt.frontend.num_mels; validates them (logs and returns
 * TRANSCRIBE_ERR_GGUF naming the key on a missing / mistyped / bad value). */
transcribe_status tr_fc_read_hparams(const struct gguf_file *g, const char *key_prefix,
                                     tr_fc_key_flavor flavor, tr_fc_hparams *hp);

typedef struct tr_fc_encoder tr_fc_encoder;

/* Looks up and validates every encoder tensor (names, shapes, type classes;
 * a problem → TRANSCRIBE_ERR_GGUF naming the tensor), folds batch norm,
 * converts what the kernels need. Weights stay borrowed from the mapping
 * where possible, so g must outlive the encoder. */
transcribe_status tr_fc_load(const struct gguf_file *g, const tr_fc_hparams *hp,
                             tr_fc_encoder **out);
void tr_fc_free(tr_fc_encoder *enc);
const tr_fc_hparams *tr_fc_get_hparams(const tr_fc_encoder *enc);

/* Encoder frames for T_mel mel frames (ceil(T_mel/2^stages) for the
 * non-causal stack, the causal recurrence for chunked_limited). 0 if T_mel < 1. */
int tr_fc_out_frames(const tr_fc_encoder *enc, int T_mel);

/* Per-session working memory: one arena that every stage carves; grows on
 * demand, reused across runs. */
typedef struct tr_fc_work tr_fc_work;
tr_fc_work *tr_fc_work_new(void);
void tr_fc_work_free(tr_fc_work *w);
size_t tr_fc_work_bytes(const tr_fc_work *w);
/* Sizes the arena up front for passes over at most T_max encoder frames
 * (one utterance; the pool the passes use) and the pre-encode of any
 * window, and for at least `floats` floats a borrower needs, so the passes
 * allocate nothing. false on OOM or bad arguments. */
bool tr_fc_work_reserve(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w, int T_max,
                        size_t floats);
/* The arena lent to the caller between encoder calls: at least `floats`
 * floats, 64-byte aligned, whose contents any tr_fc_* call on w (and the
 * next borrow) overwrites. NULL on OOM. */
float *tr_fc_work_borrow(tr_fc_work *w, size_t floats);

typedef bool (*tr_fc_abort_fn)(void *user);

/* Memory and length limits (T = tr_fc_out_frames(), d = d_model, H heads):
 * the work area (one arena) holds the positional table (about 2T * d
 * floats, packed once per pass), h [T][d] and the largest stage: the
 * feed-forward's hidden block and sum ((max(d_ff block, 2d) + d) * T
 * floats) or one group of heads' attention (h packed, T * d; their q, k, v
 * and biased q, 4 * T * g * dh; positional rows 2T * g * dh; the [g][T][T]
 * position bias, with as many heads g as fit in 1 MiB, never less than
 * one: 4 * T^2 bytes, i.e. 400 MB at T = 10 000 frames / 800 s); the
 * pre-encode's chunk buffers share it.
 * Inputs over 40 000 encoder frames return TRANSCRIBE_ERR_INPUT_TOO_LONG;
 * a failed allocation returns TRANSCRIBE_ERR_OOM (the work area stays
 * usable). Families window long audio well below these limits.
 *
 * Runs the encoder on mel [n_mels][T_mel] (bin-major, as tr_mel_compute
 * writes it) into out [tr_fc_out_frames()][d_model]. should_abort (may be
 * NULL) is polled between blocks → TRANSCRIBE_ERR_ABORTED. pre_out (may be
 * NULL) receives the pre-encode output after x-scaling, [T_enc][d_model],
 * for parity tests. */
transcribe_status tr_fc_forward(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                const float *mel, int T_mel, float *out, float *pre_out,
                                tr_fc_abort_fn should_abort, void *abort_user);

/* One pass over n utterances (the batch API's encoder): mel[i] [n_mels]
 * [T_mel[i]] -> out packed without padding, utterance i at rows
 * [sum_{j<i} T_j, + T_i) with T_i = tr_fc_out_frames(T_mel[i]). The
 * row-wise stages (norms, every projection, element-wise passes) run once
 * over all rows, so each weight is read once per batch; pre-encode,
 * attention and the depthwise conv run per utterance on its own frames, and
 * the positional projection once for the longest. Every utterance's rows
 * equal tr_fc_forward's for it (same kernels on the same rows; a
 * single-run product of <= 4 rows takes the small-M path and may differ in
 * the last bit). The work area holds about the memory of one forward over
 * sum T_i frames (attention scratch only for the longest), so callers
 * bound the batch's total frames. An utterance with no frames ->
 * INVALID_ARG; over the frame limit -> INPUT_TOO_LONG (nothing run). */
transcribe_status tr_fc_forward_batch(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w, int n,
                                      const float *const *mel, const int *T_mel, float *out,
                                      tr_fc_abort_fn should_abort, void *abort_user);

/* tr_fc_forward with the chunked_limited_with_rc mask of buffered
 * streaming (docs/formats/parakeet.md §3.3 menus; NeMo's unified models): chunks
 * of `chunk` frames counted from the input's first frame; frame i, in
 * chunk c = floor(i / chunk), sees frames [max(0, c*chunk - left),
 * c*chunk + chunk - 1 + right]. Only for a CHUNKED_LIMITED_RC encoder
 * (INVALID_ARG otherwise); left, right >= 0, chunk >= 1. */
transcribe_status tr_fc_forward_buffered(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                         const float *mel, int T_mel, int left, int chunk,
                                         int right, float *out, tr_fc_abort_fn should_abort,
                                         void *abort_user);

/* The two halves of tr_fc_forward, for a caller that assembles the
 * encoder's input itself (Sortformer, docs/formats/sortformer.md §5: a
 * speaker cache and FIFO of earlier pre-encoded rows before each chunk's).
 * tr_fc_pre_encode_rows: the pre-encode alone, mel [n_mels][T_mel] ->
 * out [tr_fc_out_frames()][d_model], before x-scaling.
 * tr_fc_forward_rows: x-scaling (when the encoder has it) and every block,
 * in place on x [T][d_model] (T >= 1). Together on one input they give
 * tr_fc_forward's rows. Errors as tr_fc_forward. */
transcribe_status tr_fc_pre_encode_rows(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                        const float *mel, int T_mel, float *out);
transcribe_status tr_fc_forward_rows(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                     float *x, int T, tr_fc_abort_fn should_abort,
                                     void *abort_user);

/* ---- cache-aware streaming (docs/formats/parakeet.md §7.8), fastconformer_stream.c ----
 * For chunked_limited encoders with att_left, att_right >= 0 and a causal
 * depthwise conv (conv_pad_right == 0): mel frames are pushed as they
 * arrive; every chunk of R + 1 encoder frames is computed once, as soon as
 * its last frame no longer depends on the end of the input, against per-layer
 * caches of the left-context keys/values (floor(L / chunk) chunks) and of
 * the last conv_pad_left GLU rows. The past is never re-encoded. Rows equal
 * tr_fc_forward's rows of the whole input within float rounding (the mask
 * hides exactly the keys the cache drops; the causal pre-encode is re-run
 * over a 16-frame mel overlap, which reproduces its interior exactly). */
typedef struct tr_fc_stream tr_fc_stream;

/* TRANSCRIBE_ERR_NOT_IMPLEMENTED (logged) when the encoder cannot stream. */
/* Whether enc can stream with caches (chunked_limited attention with
 * contexts >= 0 and a causal convolution). */
bool tr_fc_stream_supported(const tr_fc_encoder *enc);
/* A stream with attention context (att_left, att_right) (-1 each = the
 * file's att_context_left / _right): one of the (L, R) pairs the model was
 * trained on (att_context_size_choices; the caller checks the menu), so
 * the rows equal tr_fc_forward's with that context in place of the
 * file's. */
transcribe_status tr_fc_stream_new(const tr_fc_encoder *enc, int att_left, int att_right,
                                   tr_fc_stream **out);
void tr_fc_stream_free(tr_fc_stream *s);
/* Back to the empty stream (caches cleared, memory kept). */
void tr_fc_stream_reset(tr_fc_stream *s);
/* Encoder frames per native chunk (the stream's att_right + 1). */
int tr_fc_stream_chunk(const tr_fc_stream *s);
/* Encoder frames emitted so far. */
int tr_fc_stream_frames_out(const tr_fc_stream *s);

/* Appends n mel frames (time-major [n][n_mels]) and runs every chunk that
 * became complete; with last = true the input ends here and the remaining
 * frames (the causal pre-encode's zero-padded tail included, as offline)
 * are emitted. The new encoder rows land in *rows ([*n_rows][d_model],
 * valid until the next call). No pushes after last until reset. */
transcribe_status tr_fc_stream_push(tr_fc_stream *s, tr_pool *pool, const float *mel, int n,
                                    bool last, const float **rows, int *n_rows);

#endif
