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
/* Decodes a WAV image in memory (no resampling; mono downmix). */
transcribe_status tr_audio_decode_wav(const void *data, size_t size, tr_audio *out);
void tr_audio_free(tr_audio *a);

/* Band-limited resampling of mono PCM (libsoxr when built with it, else a
 * windowed-sinc resampler). *out is malloc'ed. */
transcribe_status tr_resample(const float *in, int64_t n_in, int rate_in, int rate_out, float **out,
                              int64_t *n_out);

#endif
