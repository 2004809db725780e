/* Helpers shared by the mel and Kaldi-fbank front ends (internal). */
#ifndef TR_AUDIO_MEL_INTERNAL_H
#define TR_AUDIO_MEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "audio/mel.h"

/* Window of win_length samples (docs/formats/gguf.md §8.2; Hamming is Kaldi's symmetric one). */
void tr_mel_window(tr_window_type type, int win_length, double *w);

/* Triangular filterbank [n_mels][n_fft/2+1] (docs/formats/gguf.md §8.3): edges equally spaced on
 * the Slaney or HTK mel scale, optional Slaney area normalisation. */
void tr_mel_filterbank(int sample_rate, int n_fft, int n_mels, double f_min, double f_max,
                       tr_mel_scale scale, bool area_norm, double *fb);

/* Kaldi fbank filters [n_mels][n_fft/2+1] (docs/formats/gguf.md §8.7): HTK mel edges
 * (1127·ln(1+f/700)), triangles linear in Hz between their edges, peak 1. */
void tr_mel_filterbank_kaldi(int sample_rate, int n_fft, int n_mels, double f_min, double f_max,
                             double *fb);

/* Non-zero column range [lo, hi) of each filterbank row, so the mel sum
 * skips the zeros (each filter covers only a few FFT bins). */
void tr_mel_fb_ranges(const double *fb, int n_mels, int n_bins, int *lo, int *hi);

/* Kaldi fbank + LFR (mel.c dispatches here for TR_FRONTEND_KALDI_FBANK_LFR). */
transcribe_status tr_kaldi_fbank_compute(const tr_mel_config *c, const float *pcm, int64_t n,
                                         tr_pool *pool, float **out, int *n_frames);

#endif
