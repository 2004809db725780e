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

/* A RIFF/WAVE (or RF64) header, read by wav.c for files, uploads and live
 * streams alike. */
typedef struct tr_wav_header {
    int tag; /* 1 PCM, 3 float, 6 A-law, 7 mu-law (EXTENSIBLE's sub-format) */
    int channels, bits, block_align;
    uint32_t rate;
    size_t data_off;     /* first byte of the samples */
    uint64_t data_len;   /* the data chunk's declared length (RF64: ds64's) */
    uint32_t data_field; /* the raw 32-bit size field of the data chunk */
} tr_wav_header;
#define TR_WAV_MAX_HEADER ((size_t)16 << 20) /* a live stream's header bytes */
/* The data chunk's length is not known: its size field is 0 or from
 * 0x7FFFF000 up (what writers that cannot seek back leave there), so the
 * samples run to the end of the file or stream. */
static inline bool tr_wav_length_open(const tr_wav_header *h) {
    return h->data_field == 0 || (h->data_field >= 0x7FFFF000u && h->data_len == h->data_field);
}
/* Reads the header from the first size bytes of a WAV. complete: that is
 * the whole file (a missing chunk is an error); else OK with *need > 0 asks
 * for at least *need bytes in all before it can tell. A header that cannot
 * describe audio is INVALID_ARG, logged with the reason. */
transcribe_status tr_wav_read_header(const void *data, size_t size, bool complete,
                                     tr_wav_header *out, size_t *need);
/* frames whole frames of data to mono (channels averaged); non-finite
 * samples become 0 and are counted into *nonfinite. */
void tr_wav_to_mono(const tr_wav_header *h, const void *data, size_t frames, float *out,
                    size_t *nonfinite);

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

/* The built-in resampler's filter (resample_sinc.c), shared by the
 * whole-buffer path and the streaming one (resample_stream.c) so that both
 * give the same bits: for the reduced ratio L/M, output j sits at input time
 * j·M/L; its weights are row (j·M mod L) over inputs i0-K+1 .. i0+K,
 * i0 = j·M / L. */
typedef struct sinc_design {
    double fc;   /* cutoff, cycles per input sample */
    double half; /* filter half-length in input samples */
    double beta, i0_beta;
} sinc_design;
typedef struct tr_sinc_plan {
    long L, M;
    int K, taps;
    sinc_design d;
    double *tab; /* L rows of taps weights, or NULL: rows computed into row */
    double *row;
} tr_sinc_plan;
bool tr_sinc_plan_init(tr_sinc_plan *pl, int rate_in, int rate_out); /* false: OOM */
void tr_sinc_plan_free(tr_sinc_plan *pl);
const double *tr_sinc_row(tr_sinc_plan *pl, long phase);
/* sum r[k]·x[k], k < n, in the resampler's fixed order */
float tr_sinc_dot(const double *r, const float *x, int n);

/* Streaming resampler: input fed in pieces of any size, output equal to
 * tr_resample_builtin on the whole input. */
typedef struct tr_resampler {
    tr_sinc_plan pl;
    int rate_in, rate_out;
    float *hist; /* inputs from absolute index hist_start on */
    int64_t hist_start, hist_n, hist_cap;
    int64_t n_in; /* inputs fed so far */
    int64_t j;    /* next output index */
    bool finished;
} tr_resampler;
transcribe_status tr_resampler_init(tr_resampler *r, int rate_in, int rate_out);
void tr_resampler_free(tr_resampler *r);
/* Most outputs one feed of n_in samples (or the finish, n_in = 0) writes. */
int64_t tr_resampler_max_out(const tr_resampler *r, int64_t n_in);
transcribe_status tr_resampler_feed(tr_resampler *r, const float *in, int64_t n_in, float *out,
                                    int64_t *n_out);
transcribe_status tr_resampler_finish(tr_resampler *r, float *out, int64_t *n_out);

#endif
