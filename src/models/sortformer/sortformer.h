/* Sortformer family internals (docs/formats/sortformer.md): the loaded
 * diarizer (NeMo mel front end, the shared FastConformer of nn/fastconformer.h,
 * a 512 -> 192 projection, post-LN Transformer blocks, the speaker head), the
 * streaming state (speaker cache, FIFO, silence profile) and the entry points
 * the vtable and the tests use. Weights are borrowed views of the mapped
 * file; owned: the encoder's folded taps, the block array, the language list. */
#ifndef TR_MODELS_SORTFORMER_H
#define TR_MODELS_SORTFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/mel.h"
#include "core/family.h"
#include "nn/fastconformer.h"
#include "nn/nn.h"

/* docs/formats/sortformer.md §6.1: the fixed scoring constants. */
#define SF_SIL_FRAMES_PER_SPK 3
#define SF_SIL_THRESHOLD      0.2f
#define SF_PRED_SCORE_THRESH  0.25f
#define SF_BOOST_LATEST       0.05f
#define SF_STRONG_BOOST_RATE  0.75f
#define SF_WEAK_BOOST_RATE    1.5f
#define SF_MIN_POS_RATE       0.5f
#define SF_MAX_INDEX          99999
/* the built-in operating point where a stream key is 0 (docs/formats/sortformer.md §2.3) */
#define SF_DEFAULT_LEN 188

typedef struct sf_hparams {
    int max_spk, frame_hop;
    int tf_layers, tf_d, tf_heads, tf_ff;
    int chunk_len, spkcache_len, fifo_len,
        update_period; /* docs/formats/sortformer.md §2.3 stream block */
} sf_hparams;

/* One post-LN Transformer block (docs/formats/sortformer.md §5.3). */
typedef struct sf_tf_block {
    tr_nn_norm norm1, norm2;
    tr_nn_linear q, k, v, o;
    tr_nn_linear ff_in, ff_out;
} sf_tf_block;

typedef struct sf_model {
    sf_hparams hp;
    tr_fc_hparams enc_hp;
    tr_fc_encoder *enc;
    tr_mel_config mel;
    sf_tf_block *tf; /* tf_layers */
    tr_nn_linear proj, fc1, spk_head, single;
    char **lang;
    int n_lang;
    const char *variant;
    double ms_per_frame; /* 1000 · frame_hop / sample_rate (80) */
} sf_model;

/* The streaming operating point (docs/formats/sortformer.md §6.1), in
 * diarization frames. */
typedef struct sf_stream_cfg {
    int chunk_len, lc, rc, fifo_len, update_period, spkcache_len;
} sf_stream_cfg;

/* The streaming state of docs/formats/sortformer.md §6.2–§6.4: the speaker cache (rows of d floats)
 * with its predictions, the FIFO, the silence profile and the frames'
 * output probabilities. */
typedef struct sf_state {
    int d, S; /* embedding width, speakers */
    float *sc, *sc_p;
    int sc_n, sc_cap, scp_cap;
    bool sc_p_init;
    float *ff, *ff_p;
    int ff_n, ff_cap, ffp_cap;
    float *msil; /* [d] */
    int n_sil;
    float *out_p; /* [out_n][S] */
    int out_n, out_cap;
    /* memory lent by the caller for a compression's new cache (lend_floats
     * floats; NULL or too small: allocated), valid during one update */
    float *lend;
    size_t lend_floats;
} sf_state;

typedef struct sf_session {
    const sf_model *m;
    tr_pool *pool;
    tr_fc_work *work;
    sf_state st;
    /* per-chunk buffers, grown on demand: X the mel window and then cache ++
     * FIFO ++ chunk, pr the probabilities (the chunk's pre-encoded rows wait
     * in the FIFO's spare rows, the head's buffers are borrowed from the
     * encoder's work arena) */
    float *X, *pr;
    size_t cap_x, cap_pr; /* floats */
} sf_session;

TR_FAMILY_DECLARE(sf);

/* docs/formats/sortformer.md §6.1: the operating point of a preset (0..3); false for an unknown
 * one. */
bool tr_sf_stream_cfg(const sf_model *m, int preset, sf_stream_cfg *out);

/* The state (docs/formats/sortformer.md §6.2): init for width d and S speakers, reset to empty,
 * free. */
bool tr_sf_state_init(sf_state *st, int d, int S);
void tr_sf_state_reset(sf_state *st);
void tr_sf_state_free(sf_state *st);
/* Room for sc_rows cache and ff_rows FIFO rows up front (the most a run
 * holds), so the updates allocate nothing. false on OOM. */
bool tr_sf_state_reserve(sf_state *st, int sc_rows, int ff_rows);

/* docs/formats/sortformer.md §6.3: folds one chunk into the state: E [T_diar][d] its pre-encoded
 * rows (may be the FIFO's own spare rows, st->ff + ff_n * d), pr [sc_n + ff_n + T_diar][S] the
 * chunk's probabilities, lcf / rcf the context frames. false on OOM. */
bool tr_sf_state_update(sf_state *st, const sf_stream_cfg *cfg, const float *E, int T_diar,
                        const float *pr, int lcf, int rcf);

/* docs/formats/sortformer.md §6.4: compresses a cache of sc_n > spkcache_len rows to spkcache_len
 * (sc_p must be initialised). false on OOM. */
bool tr_sf_compress(sf_state *st, int spkcache_len);

/* docs/formats/sortformer.md §5.2 after the Conformer: X [T][d_model] encoder rows -> pr [T][S]
 * (projection, Transformer blocks, head). */
transcribe_status tr_sf_head(sf_session *s, const float *X, int T, float *pr);

/* docs/formats/sortformer.md §6.2: the whole streaming diarization of mel [n_mels][T_mel]: the
 * frame probabilities (*probs malloc'ed [*n_frames][S]). abort polled before every chunk. */
transcribe_status tr_sf_diarize(sf_session *s, const float *mel, int T_mel,
                                const sf_stream_cfg *cfg, tr_run_ctx *ctx, float **probs,
                                int *n_frames);

/* tr_sf_diarize from the PCM (n samples): where the front end allows it (no normalisation, ceil
 * framing, zero padding: docs/formats/sortformer.md §4) each chunk computes just its own mel
 * window, the same bits as the whole mel's; otherwise the whole mel first. *mel_ms (may be NULL)
 * gets the front end's time. */
transcribe_status tr_sf_diarize_pcm(sf_session *s, const float *pcm, int64_t n,
                                    const sf_stream_cfg *cfg, tr_run_ctx *ctx, float **probs,
                                    int *n_frames, double *mel_ms);

/* docs/formats/sortformer.md §6.5: runs of probability > 0.5 per speaker, as rows (t0, t1 in ms,
 * speaker 1-based); *rows malloc'ed, 3 int64 each, sorted by start time,
 * then speaker. Returns the count or -1 on OOM. */
int tr_sf_segments(const float *probs, int n_frames, int S, double ms_per_frame, int64_t **rows);

#endif
