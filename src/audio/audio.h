/* Audio file decoding to mono float PCM at a requested rate. WAV is parsed
 * here (PCM 8/16/24/32, float 32/64, WAVE_FORMAT_EXTENSIBLE); FLAC, MP3, Ogg
 * Vorbis and Opus go through libsndfile when the build has it. Files are
 * untrusted: every header field is bounds-checked. */
#ifndef TR_AUDIO_AUDIO_H
#define TR_AUDIO_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "transcribe.h"

/* Interleaved-free decoded audio: mono after downmix, at `rate` Hz. */
typedef struct tr_audio {
    float *pcm; /* malloc'ed, n samples */
    int64_t n;
    int rate;
} tr_audio;

/* Decodes `path`, downmixes to mono and resamples to target_rate (0 keeps
 * the file's rate). Errors: FILE_NOT_FOUND, INVALID_ARG (unreadable or
 * malformed audio, unsupported format; logged), OOM. */
transcribe_status tr_audio_load_file(const char *path, int target_rate, tr_audio *out);
/* The same, refusing audio longer than max_s seconds (<= 0: no limit) with
 * INPUT_TOO_LONG before it is decoded or resampled past that length. */
transcribe_status tr_audio_load_file_max(const char *path, int target_rate, double max_s,
                                         tr_audio *out);
/* Decodes a WAV image in memory (no resampling; mono downmix). */
transcribe_status tr_audio_decode_wav(const void *data, size_t size, tr_audio *out);
/* The same, refusing audio over max_s seconds (> 0) from its header, before
 * anything is decoded: INPUT_TOO_LONG, logged. */
transcribe_status tr_audio_decode_wav_max(const void *data, size_t size, double max_s,
                                          tr_audio *out);
void tr_audio_free(tr_audio *a);

/* Band-limited resampling of mono PCM (libsoxr when built with it, else a
 * windowed-sinc resampler). *out is malloc'ed. */
transcribe_status tr_resample(const float *in, int64_t n_in, int rate_in, int rate_out, float **out,
                              int64_t *n_out);

/* Non-finite input samples (family-independent policy): NaN → 0, ±Inf → ±1,
 * so one bad sample cannot poison a whole-signal or per-feature
 * normalisation. tr_pcm_count_nonfinite counts them; tr_pcm_sanitize_copy
 * writes the cleaned samples to out (out may equal in). tr_pcm_sanitized
 * returns pcm itself when it is clean, else a cleaned malloc'ed copy stored
 * in *owned (the caller frees it) after one WARN naming `who`; NULL when
 * out of memory. */
int64_t tr_pcm_count_nonfinite(const float *pcm, int64_t n);
void tr_pcm_sanitize_copy(const float *in, int64_t n, float *out);
const float *tr_pcm_sanitized(const float *pcm, int64_t n, const char *who, float **owned);

#endif
