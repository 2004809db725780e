/* Internal pieces of the audio module, exposed for tests and the fuzzer. */
#ifndef TR_AUDIO_AUDIO_INTERNAL_H
#define TR_AUDIO_AUDIO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audio/audio.h"

/* Plausibility limits for untrusted headers. */
#define TR_AUDIO_MAX_CHANNELS 64
#define TR_AUDIO_MIN_RATE     1000
#define TR_AUDIO_MAX_RATE     1536000
/* Decoded length cap for compressed input (a tiny FLAC of constant
 * subframes can expand to any length): the public API's INT_MAX. */
#define TR_AUDIO_MAX_SAMPLES ((int64_t)2147483647)

typedef enum {
    TR_AUDIO_FMT_UNKNOWN = 0,
    TR_AUDIO_FMT_WAV,
    TR_AUDIO_FMT_FLAC,
    TR_AUDIO_FMT_OGG, /* Vorbis, Opus or FLAC in Ogg */
    TR_AUDIO_FMT_MP3,
    TR_AUDIO_FMT_AIFF,
} tr_audio_format;

/* Container detected from the first bytes (never from a file name). */
tr_audio_format tr_audio_detect(const void *data, size_t size);
const char *tr_audio_format_name(tr_audio_format f);

/* Decodes an in-memory image of any format by content (WAV here, the rest
 * through libsndfile when built with it). No resampling. */
transcribe_status tr_audio_decode_memory(const void *data, size_t size, tr_audio *out);
/* The same, refusing (INPUT_TOO_LONG, logged) audio longer than max_s
 * seconds (<= 0: no limit) before it is decoded when the header tells its
 * length, and as soon as the decoded part passes it otherwise: a small
 * compressed upload cannot expand to gigabytes first. */
transcribe_status tr_audio_decode_memory_max(const void *data, size_t size, double max_s,
                                             tr_audio *out);

/* libsndfile decoder (mono downmix); NOT_IMPLEMENTED-free: without
 * libsndfile it logs which format needs it and returns INVALID_ARG. */
transcribe_status tr_audio_decode_sndfile(const void *data, size_t size, tr_audio_format fmt,
                                          tr_audio *out);
/* With a length limit, as tr_audio_decode_memory_max. */
transcribe_status tr_audio_decode_sndfile_max(const void *data, size_t size, tr_audio_format fmt,
                                              double max_s, tr_audio *out);
/* Whether n samples at rate Hz last longer than max_s seconds (<= 0: no
 * limit); logs the refusal naming what. */
bool tr_audio_too_long(int64_t n, int rate, double max_s, const char *what);
bool tr_audio_have_sndfile(void);

/* Output length of resampling n_in samples: round(n_in·rate_out/rate_in). */
int64_t tr_resample_out_len(int64_t n_in, int rate_in, int rate_out);
/* The two resampler back ends; tr_resample picks soxr when available. */
transcribe_status tr_resample_builtin(const float *in, int64_t n_in, int rate_in, int rate_out,
                                      float **out, int64_t *n_out);
transcribe_status tr_resample_soxr(const float *in, int64_t n_in, int rate_in, int rate_out,
                                   float **out, int64_t *n_out);
bool tr_resample_have_soxr(void);

#endif
