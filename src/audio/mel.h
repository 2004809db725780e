/* Log-mel and fbank front ends (docs/formats/gguf.md §7–§8). One configuration
 * struct covers every family; tr_mel_config_from_gguf reads the
 * stt.frontend.* keys and the baked frontend.* tensors. */
#ifndef TR_AUDIO_MEL_H
#define TR_AUDIO_MEL_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/pool.h"
#include "transcribe.h"

struct gguf_file;

typedef enum {
    TR_FRONTEND_MEL = 0,
    TR_FRONTEND_KALDI_FBANK_LFR = 1,
    TR_FRONTEND_RAW = 2
} tr_frontend_type;
typedef enum { TR_PAD_REFLECT = 0, TR_PAD_CONSTANT = 1, TR_PAD_NONE = 2 } tr_pad_mode;
typedef enum {
    TR_WIN_HANN_PERIODIC = 0,
    TR_WIN_HANN_SYMMETRIC = 1,
    TR_WIN_HAMMING = 2
} tr_window_type;
typedef enum {
    TR_NORM_NONE = 0,
    TR_NORM_PER_FEATURE = 1,
    TR_NORM_PER_UTTERANCE = 2, /* also Whisper's "whisper_logmel" */
    TR_NORM_GLOBAL = 3,
} tr_norm_type;
typedef enum { TR_MELSCALE_SLANEY = 0, TR_MELSCALE_HTK = 1 } tr_mel_scale;

typedef struct tr_mel_config {
    tr_frontend_type type;
    int sample_rate, n_mels, n_fft, win_length, hop_length;
    tr_window_type window;
    tr_pad_mode pad_mode;
    tr_norm_type normalize;
    tr_mel_scale mel_scale;
    bool mel_area_norm; /* Slaney area normalisation of each filter */
    float pre_emphasis, f_min, f_max;
    float global_log_mel_max; /* TR_NORM_GLOBAL */
    float log_clamp_min;      /* > 0: ln(max(E, clamp)); else default log rule */
    bool log;                 /* false: no log compression (canary stt.frontend.log) */
    bool ceil_frames;         /* NeMo "ceil" frame-count flag */
    /* Baked buffers (borrowed, e.g. from the mapped model): filterbank is
     * [n_mels][n_fft/2+1], window [win_length]. NULL = compute. */
    const float *filterbank;
    const float *baked_window;
    /* Kaldi fbank + LFR */
    int lfr_m, lfr_n;
    bool snip_edges, upscale_samples, apply_cmvn;
    const float *cmvn_shift, *cmvn_scale;
} tr_mel_config;

/* Defaults for the named variants (no file needed).
 * - whisper: n_fft 400, periodic Hann, reflect padding, log10 with the
 *   per-utterance "whisper_logmel" normalisation (n_frames-1 outputs).
 * - nemo: the Parakeet front end: pre-emphasis 0.97, symmetric Hann 400
 *   centred in n_fft 512, ZERO (constant) padding, ln(E + 2^-24),
 *   per-feature normalisation over the first n_frames-1 frames (unbiased
 *   std + 1e-5) with the last frame set to 0. Canary is the same with
 *   pad_mode = TR_PAD_REFLECT, which makes per_feature use all n_frames
 *   frames and keep the last one (docs/formats/canary.md §5); nemotron-style
 *   files set normalize = TR_NORM_NONE (raw log, last frame zeroed).
 *   dither is never applied.
 * - kaldi: 80-bin Kaldi fbank (Hamming 400, snip edges, ×32768, DC
 *   removal, per-frame pre-emphasis, HTK filters 20 Hz..Nyquist,
 *   ln(max(E, FLT_EPSILON))) + LFR m=7 n=6 (sensevoice), no CMVN. */
void tr_mel_config_whisper(tr_mel_config *c, int n_mels);
void tr_mel_config_nemo(tr_mel_config *c, int n_mels);
void tr_mel_config_kaldi(tr_mel_config *c, int n_mels);
/* Reads stt.frontend.* and frontend.* tensors over the defaults in *c.
 * Returns GGUF on a wrongly typed key, an unknown enum string or a
 * misshaped baked tensor. Absent keys keep the defaults, so families set
 * their defaults first and their overrides after:
 * - Whisper: tr_mel_config_whisper, then this (the baked periodic window
 *   and filterbank win over the "hann" string, as upstream).
 * - Parakeet: tr_mel_config_nemo, this, then force pad_mode =
 *   TR_PAD_CONSTANT (docs/formats/parakeet.md §6 ignores the file).
 * - Canary: tr_mel_config_nemo, pad_mode = TR_PAD_REFLECT (the default
 *   when the key is absent), then this.
 * stt.frontend.center = false maps to TR_PAD_NONE; dither is read for its
 * type only and never applied; "whisper_logmel" = TR_NORM_PER_UTTERANCE. */
transcribe_status tr_mel_config_from_gguf(tr_mel_config *c, const struct gguf_file *f);

/* The Kaldi fbank + LFR front end of docs/formats/sensevoice.md §2 / §4
 * (SenseVoice; Fun-ASR-Nano, docs/formats/funasr_nano.md §2.6): every key
 * required (but the two booleans), with the only values computed: type
 * "kaldi_fbank_lfr", window "hamming", fbank_style "kaldi_htk", normalize
 * equal to `normalize` ("per_feature" for SenseVoice's CMVN, "none" for
 * Fun-ASR-Nano); num_mels × lfr_m must equal d_input (the encoder's width,
 * checked against d_input_key). *c gets tr_mel_config_kaldi overridden by
 * the file, with snip_edges on, triangles 20 Hz .. Nyquist and apply_cmvn
 * as the file says (default false): the family decides what CMVN means.
 * GGUF (logged) otherwise. */
transcribe_status tr_mel_kaldi_lfr_from_gguf(const struct gguf_file *f, const char *normalize,
                                             int d_input, const char *d_input_key,
                                             tr_mel_config *c);

/* The STFT size keys a mel front end must declare, checked the one way the
 * audio-LLM families share: stt.frontend.type = "mel", num_mels in
 * [1, 4096] and equal to n_mels (what the family's encoder takes; 0 when
 * no mel count fits it), sample_rate = 16000, n_fft in [2, 65536],
 * win_length and hop_length in [1, 65536]. The values reach the config
 * through tr_mel_config_from_gguf. TRANSCRIBE_ERR_GGUF (logged, with who
 * for the encoder mismatch) otherwise. */
transcribe_status tr_mel_check_stft_keys(const struct gguf_file *f, const char *who, int n_mels);

/* A family's up-front length check for a reflect-padded front end: n
 * samples must be at least n_fft / 2 + 1 (INVALID_ARG, logged with who,
 * otherwise). */
transcribe_status tr_mel_check_reflect_len(const tr_mel_config *c, const char *who, int64_t n);

/* Computes features of n samples: *out is malloc'ed [n_mels][*n_frames]
 * row-major (for LFR: [n_mels*lfr_m][n_frames]). Frames are computed on the
 * pool's threads. Errors: INVALID_ARG (too short, bad config), OOM. */
transcribe_status tr_mel_compute(const tr_mel_config *c, const float *pcm, int64_t n, tr_pool *pool,
                                 float **out, int *n_frames);
/* tr_mel_compute into the caller's `out` of cap floats (the mel front end
 * only, not LFR): INVALID_ARG (logged) when the features do not fit, and
 * the same errors otherwise. For callers that compute many windows in a
 * buffer they keep. */
transcribe_status tr_mel_compute_into(const tr_mel_config *c, const float *pcm, int64_t n,
                                      tr_pool *pool, float *out, size_t cap, int *n_frames);
/* tr_mel_compute that also refuses fewer than min_frames frames
 * (INVALID_ARG, logged with who; nothing returned): the NeMo front ends of
 * Canary, Cohere and Canary-Qwen need 2, as the unbiased per-feature
 * deviation (docs/formats/gguf.md §8.5) needs more than one frame. One check
 * instead of one per family. */
transcribe_status tr_mel_compute_min(const tr_mel_config *c, const char *who, const float *pcm,
                                     int64_t n, tr_pool *pool, int min_frames, float **out,
                                     int *n_frames);
/* Features of a reflect-padded front end (tr_mel_check_reflect_len first)
 * with every two consecutive frames stacked into one row: *out is
 * malloc'ed [*n_rows][2·n_mels], row t frame 2t's bins then frame 2t+1's,
 * *n_rows = n_frames / 2 (a last odd frame dropped). INVALID_ARG (logged
 * with who) when not one row comes out, OOM. Granite Speech and Granite NAR
 * (docs/formats/granite_speech.md §5) feed their Conformer this way; one
 * copy instead of two. */
transcribe_status tr_mel_compute_stacked2(const tr_mel_config *c, const char *who, const float *pcm,
                                          int64_t n, tr_pool *pool, float **out, int *n_rows);
/* tr_mel_compute transposed: *out is malloc'ed [*n_frames][n_features]
 * frame-major (the row layout an encoder takes). Same errors. */
transcribe_status tr_mel_compute_rows(const tr_mel_config *c, const float *pcm, int64_t n,
                                      tr_pool *pool, float **out, int *n_frames);
/* Feature rows of the output (n_mels, or n_mels*lfr_m for LFR). */
int tr_mel_n_features(const tr_mel_config *c);

/* Whisper log-mel of docs/formats/whisper.md §5.2. Short form (n <= 30 s, i.e.
 * 30·sample_rate samples): the pcm is zero-padded to exactly 30 s and the
 * result has exactly 30·sample_rate/hop (3000) frames. Long form: the mel
 * of the whole unpadded signal with one global maximum, floor(n/hop)
 * frames. *out is malloc'ed [n_mels][*n_frames] (mel-major; the encoder
 * wants frame-major, transpose when uploading). Uses c as given (normally
 * tr_mel_config_whisper or a Whisper file's config). */
transcribe_status tr_mel_whisper(const tr_mel_config *c, const float *pcm, int64_t n, tr_pool *pool,
                                 float **out, int *n_frames);

#endif
