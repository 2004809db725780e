/* Pause detection and chunk planning for long audio (the public
 * transcribe_pause_split is a thin wrapper in audio_api.c). Energy based:
 * 10 ms frames, log power smoothed over 30 ms, an adaptive noise floor (the
 * 10th percentile of the surrounding ±3 s), a threshold above it scaled by
 * the local dynamic range, hysteresis between entering and leaving speech,
 * and a minimum pause length. Only libc/libm. */
#ifndef TR_AUDIO_PAUSE_SPLIT_H
#define TR_AUDIO_PAUSE_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "transcribe.h"

/* One pause in samples, [start, end); depth_db is how far its mean frame
 * energy sits below the local pause threshold. */
typedef struct tr_pause {
    int64_t start, end;
    float depth_db;
} tr_pause;

/* The analysis of one signal. Pauses are in order and disjoint; those at
 * the very start and end of the signal are included. has_speech is false
 * when no frame rose above the threshold (silence, or stationary quiet
 * noise); speech_start/speech_end bound the frames that did. */
typedef struct tr_pause_track {
    int hop;          /* samples per frame */
    int64_t n_frames; /* ceil(n_samples / hop) */
    float *energy_db; /* n_frames: smoothed log power */
    tr_pause *pauses; /* n_pauses */
    int n_pauses;
    bool has_speech;
    int64_t speech_start, speech_end; /* samples; valid when has_speech */
} tr_pause_track;

/* Analyses pcm (n > 0, rate >= 1000). Errors: OOM. */
transcribe_status tr_pause_find(const float *pcm, int64_t n, int rate, int64_t min_pause_ms,
                                tr_pause_track *out);
void tr_pause_track_free(tr_pause_track *t);

/* Replaces the energy pauses of t with the gaps between speech regions
 * found by a VAD ([start, end) sample pairs, in order, within n): the
 * leading and trailing gaps and every inner gap of at least
 * min_pause_samples; the energy track stays for forced cuts. Errors: OOM
 * (t is freed). */
transcribe_status tr_pause_track_set_speech(tr_pause_track *t, int64_t n, const int64_t *regions,
                                            int n_regions, int64_t min_pause_samples);

/* Plans spans over a track of n samples with validated parameters (see
 * transcribe_pause_split in transcribe.h). *out is malloc'ed (NULL when
 * *n_out is 0). Errors: OOM. */
transcribe_status tr_pause_plan(const tr_pause_track *t, int64_t n, int rate, int64_t target_ms,
                                int64_t max_ms, struct transcribe_audio_span **out, int *n_out);

#endif
