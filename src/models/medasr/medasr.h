/* MedASR family internals (docs/formats/medasr.md): the loaded model
 * (unpadded log-mel front end, 1-D subsampler, rotary Conformer blocks from
 * nn/conformer.h with scaled residuals, CTC head), the session, and the
 * entry points the vtable and the tests use. Weights are borrowed views of
 * the mapped file; owned: the transposed filterbank, the blocks' depthwise
 * taps (batch norm folded in) and the language list. */
#ifndef TR_MODELS_MEDASR_H
#define TR_MODELS_MEDASR_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/conformer.h"
#include "nn/nn.h"

struct tr_tokenizer;

/* docs/formats/medasr.md §7: every encoder frame is 40 ms, whatever the
 * front-end keys say (upstream hard-codes it). */
#define MA_FRAME_MS 40

typedef struct ma_hparams {
    int n_layers, d_model, n_heads, d_ff, kernel;
    int n_mels;            /* num_mel_bins = stt.frontend.num_mels */
    int sub_kernel, sub_c; /* subsampler conv width and second conv's channels */
    int max_pos;           /* max_pos_emb: the length warning and max_audio_ms */
    int n_vocab;           /* ctc.vocab_size: the head's width */
    int blank;             /* ctc.blank_id */
    int n_pieces;          /* tokenizer pieces (ids at or past it decode to nothing) */
    float ln_eps, rope_theta;
    float ff_res[2], conv_res[2]; /* x <- w0·x + w1·y */
} ma_hparams;

typedef struct ma_model {
    ma_hparams hp;
    tr_cf_dims dims;
    tr_mel_config mel; /* no padding, clamped natural log, baked window */
    float *fb;         /* owned filterbank [n_mels][n_fft/2 + 1] (the file stores it transposed) */
    /* subsampler (docs/formats/medasr.md §5.1) */
    tr_nn_linear dense0, dense1;
    const tr_tensor *conv0_w, *conv1_w; /* {k, d, d} / {k, d, C} */
    const float *conv0_b, *conv1_b;
    tr_tensor conv0_view, conv1_view; /* the same bytes as {k·d, out} matrices */
    tr_cf_block *blocks;
    int n_blocks_ready; /* blocks whose taps need freeing */
    tr_nn_norm out_norm;
    const tr_tensor *ctc_w; /* {1, d, V} */
    tr_tensor ctc_view;
    tr_nn_linear ctc;
    struct tr_tokenizer *tok;
    char **lang;
    int n_lang;
    const char *variant;
} ma_model;

typedef struct ma_session {
    const ma_model *m;
    tr_pool *pool;
} ma_session;

/* Intermediate outputs a test can ask the encoder for (each NULL or a
 * buffer of the size given; row-major). block_out[i] is taken after block
 * i for i < 4 only when block_idx[i] names the block (-1: none). */
typedef struct ma_taps {
    float *sub_out; /* [T_enc][d]: enc.subsampling.out */
    int block_idx[4];
    float *block_out[4]; /* [T_enc][d]: enc.block.N.out */
    float *norm_out;     /* [T_enc][d]: enc.out_norm.out */
} ma_taps;

TR_FAMILY_DECLARE(ma);

/* docs/formats/medasr.md §4–§5.1: mel frames of n samples (0 when n < 400) and the encoder
 * frames they give (<= 0 when too short). */
int tr_ma_mel_frames(const ma_model *m, int64_t n);
int tr_ma_enc_frames(const ma_model *m, int T_mel);

/* Front end (docs/formats/medasr.md §4): *feats is malloc'ed [*T_mel][n_mels] (frame-major).
 * INVALID_ARG under one window of samples, OOM. */
transcribe_status tr_ma_features(const ma_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                 float **feats, int *T_mel);

/* Encoder + CTC head of n_seg utterances packed one after another
 * (docs/formats/medasr.md §5–§6.1): feats holds seg_T_mel[i] frames each, logits gets
 * tr_ma_enc_frames(seg_T_mel[i]) rows each (every one >= 1, the caller checks). abort
 * (may be NULL) is polled before the subsampler and every block: ABORTED. OOM. Taps only
 * for n_seg == 1. */
transcribe_status tr_ma_encode(const ma_model *m, tr_pool *pool, const float *feats, int n_seg,
                               const int *seg_T_mel, float *logits, const ma_taps *taps,
                               bool (*abort)(void *), void *abort_user);
/* The same without taps, taking feats (malloc'ed): freed once the subsampler has read them (so
 * they are not resident beside the blocks' working memory), whatever the outcome; and instead
 * of the logits each frame's argmax (tr_ma_argmax) into best, the head run in row blocks, so
 * the logits of the whole input ([T][V], 4.3 MB at 84 s) are never resident beside the
 * encoder rows. */
transcribe_status tr_ma_encode_take(const ma_model *m, tr_pool *pool, float *feats, int n_seg,
                                    const int *seg_T_mel, int32_t *best, bool (*abort)(void *),
                                    void *abort_user);

/* The argmax of one row of logits, ties to the lowest id. */
int tr_ma_argmax(const float *row, int V);

/* Greedy CTC (docs/formats/medasr.md §6.2): ids and their frames (capacity T) and the count;
 * from the logits, or from each frame's argmax. */
int tr_ma_greedy(const float *logits, int T, int V, int blank, int32_t *ids, int32_t *frames);
int tr_ma_greedy_best(const int32_t *best, int T, int blank, int32_t *ids, int32_t *frames);

/* Result rows (docs/formats/medasr.md §6.3, §7). */
transcribe_status tr_ma_build_result(const ma_model *m, const int32_t *ids, const int32_t *frames,
                                     int n, const struct transcribe_run_params *p, tr_result *res);

#endif
