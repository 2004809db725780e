/* Silero VAD v4 inside the library: the network (weights from a GGUF that
 * tools/convert_silero_vad.py writes), one window at a time with the LSTM
 * state carried, and Silero's get_speech_timestamps rules as an incremental
 * state machine (so the offline run and the streaming feed are one code
 * path). The public face is the VAD section of include/transcribe.h, thin
 * wrappers in src/api/vad_api.c over the tr_vad_* detector below
 * (vad_detect.c); src/api uses these internals to run a family on the
 * speech regions only, and to plan pause splits at the VAD's pauses. */
#ifndef TR_VAD_VAD_H
#define TR_VAD_VAD_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/fft.h"
#include "gguf/gguf.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"
#include "transcribe.h"

enum {
    TR_VAD_N_BLOCKS = 4,
    TR_VAD_HIDDEN = 64,
    TR_VAD_N_FFT = 256,
    TR_VAD_HOP = 64,
    TR_VAD_PAD = 96,
    TR_VAD_BINS = 129,
    TR_VAD_NORM_K = 7,
    TR_VAD_BATCH = 32 /* windows whose spectra share one GEMM */
};

typedef struct tr_vad_block {
    const tr_tensor *dw_w, *pw_w, *proj_w, *rp_w; /* proj_w NULL: the block adds its input */
    const float *dw_b, *pw_b, *proj_b, *rp_b;
    tr_tensor pw, proj, rp; /* the pointwise weights viewed as 2-D {c_in, c_out} for tr_matmul */
    int c_in, c_out, rp_stride;
} tr_vad_block;

/* The weights of one sample rate. */
typedef struct tr_vad_net {
    tr_vad_block blocks[TR_VAD_N_BLOCKS];
    const tr_tensor *w_ih[2], *w_hh[2]; /* ne {64, 256}: gates i, o, f, c */
    const float *lstm_b[2];             /* [256] = input + recurrent bias */
    const tr_tensor *dec_w;             /* ne {64, 1} */
    float dec_b;
} tr_vad_net;

struct transcribe_vad_model {
    gguf_file *gguf;
    const tr_tensor *basis; /* ne {256, 258}: windowed DFT, re rows then im rows */
    const float *norm_filter;
    /* When the stored basis is the Hann-windowed DFT (checked at load, as in
     * every Silero v4 file), the spectra come from an FFT of the windowed
     * frame: the same numbers in double precision at ~5 % of the work. */
    tr_fft *fft;
    double hann[TR_VAD_N_FFT];
    tr_vad_net net16, net8;
};

/* The segment rules (Silero get_speech_timestamps, v4 behaviour). All
 * positions are in samples of the detector's rate. */
typedef struct tr_vad_rules {
    double threshold, neg_threshold;
    double min_speech, max_speech, min_silence, min_silence_at_max; /* samples */
    int64_t pad, win;
    /* state of the single pass over the probabilities */
    bool triggered;
    int64_t cur_start, temp_end, prev_end, next_start;
    int64_t n_probs; /* windows seen */
    /* closed regions before padding, [start, end) pairs */
    int64_t *raw;
    size_t n_raw, cap_raw;
} tr_vad_rules;

struct transcribe_vad {
    const struct transcribe_vad_model *model;
    const tr_vad_net *net;
    int rate, win;
    struct transcribe_vad_params params;
    tr_pool *pool; /* NULL: the calling thread */
    float h[2][TR_VAD_HIDDEN], c[2][TR_VAD_HIDDEN];
    float *pending; /* samples not yet run: up to TR_VAD_BATCH windows */
    int n_pending;
    float *frames, *spec; /* stage-one buffers of TR_VAD_BATCH windows */
    double *fft_buf;      /* tr_vad_fft_doubles() */
    int64_t n_fed;        /* samples fed since the last reset */
    bool flushed;
    float *probs; /* one per window */
    size_t n_probs, cap_probs;
    tr_vad_rules rules;
    float *scratch; /* network buffers */
};

/* Loads and checks every tensor; logs why and returns NULL on failure. */
transcribe_status tr_vad_model_load(const char *path, struct transcribe_vad_model **out);

/* The network in two stages. Spectra: the DFT of every frame of `count`
 * consecutive windows of n samples at x, in one GEMM (frames holds
 * count·tr_vad_frames(n)·256 floats, spec count·tr_vad_frames(n)·258).
 * (By FFT instead when m->fft: frames is then unused, fft_buf is scratch.)
 * Batch: the rest of the network on the spectra of count consecutive
 * windows (the encoder runs on all of them at once, the LSTM steps through
 * them in order), updating h/c and writing count probabilities; scratch
 * holds tr_vad_scratch_floats(n, count). */
void tr_vad_net_spectra(const struct transcribe_vad_model *m, tr_pool *pool, const float *x, int n,
                        int count, float *frames, float *spec, double *fft_buf);
size_t tr_vad_fft_doubles(const struct transcribe_vad_model *m);
size_t tr_vad_frames(int n);
void tr_vad_net_batch(const struct transcribe_vad_model *m, const tr_vad_net *net, tr_pool *pool,
                      const float *spec, int n, int count, float h[2][TR_VAD_HIDDEN],
                      float c[2][TR_VAD_HIDDEN], float *scratch, float *probs);
size_t tr_vad_scratch_floats(int n, int count);

/* Rules: init from validated params; feed one probability; finish at the
 * audio's end; padded segment i of the first n_final ones. */
void tr_vad_rules_init(tr_vad_rules *r, const struct transcribe_vad_params *p, int rate, int win);
void tr_vad_rules_free(tr_vad_rules *r);
bool tr_vad_rules_push(tr_vad_rules *r, float prob);          /* false: out of memory */
bool tr_vad_rules_finish(tr_vad_rules *r, int64_t n_samples); /* closes an open region */
/* Regions whose padded bounds can no longer change once `n_seen` samples
 * were processed (all of them after finish); fills start/end of region i. */
size_t tr_vad_rules_n_final(const tr_vad_rules *r, int64_t n_seen, bool finished);
void tr_vad_rules_padded(const tr_vad_rules *r, size_t i, int64_t n_samples, int64_t *start,
                         int64_t *end);

/* The detector (vad_detect.c), one function per public transcribe_vad_*
 * entry point, with the same argument checks and log messages (they name
 * the public entry point a caller reached them through). */
void tr_vad_params_default(struct transcribe_vad_params *p);
void tr_vad_model_free(struct transcribe_vad_model *m);
transcribe_status tr_vad_create(const struct transcribe_vad_model *model, int sample_rate,
                                const struct transcribe_vad_params *params,
                                struct transcribe_vad **out);
void tr_vad_free(struct transcribe_vad *v);
void tr_vad_reset(struct transcribe_vad *v);
transcribe_status tr_vad_feed(struct transcribe_vad *v, const float *pcm, int64_t n);
transcribe_status tr_vad_finish(struct transcribe_vad *v);
transcribe_status tr_vad_run(struct transcribe_vad *v, const float *pcm, int64_t n);
bool tr_vad_in_speech(const struct transcribe_vad *v);
int tr_vad_n_segments(const struct transcribe_vad *v);
transcribe_status tr_vad_get_segment(const struct transcribe_vad *v, int i,
                                     struct transcribe_vad_segment *out);
const float *tr_vad_probs(const struct transcribe_vad *v, int64_t *n_windows);

/* Checks params (threshold ranges, durations) for `rate`; logs why. */
transcribe_status tr_vad_params_check(const struct transcribe_vad_params *p, int rate,
                                      const char *where);

#endif
