/* Speaker attribution of transcript rows from a diarizer's frame activity
 * (transcribe_run_params.diarizer): a pure function over an activity
 * matrix, so the rule is testable without a model. */
#ifndef TR_CORE_SPEAKER_LABEL_H
#define TR_CORE_SPEAKER_LABEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/result.h"

/* Speaker activity on a fixed frame grid: act[t * n_spk + s] is speaker
 * (s + 1)'s activity (a probability, or 0 / 1) over [t·frame_ms,
 * (t + 1)·frame_ms); > 0.5 means active. */
typedef struct tr_speaker_activity {
    const float *act;
    int n_frames, n_spk;
    double frame_ms;
} tr_speaker_activity;

/* The speaker (1-based) for the span [t0_ms, t1_ms): the active speaker
 * with the most overlap, each frame weighted by the time it shares with the
 * span and by its activity (overlapping speech: the stronger, longer
 * speaker wins; ties go to the lower id). A span with no active frame (a
 * pause, or past the grid) takes the speaker of the nearest active frame;
 * a zero-length span is the frame containing t0. 0 when no frame is
 * active at all. */
int32_t tr_speaker_for_span(const tr_speaker_activity *a, int64_t t0_ms, int64_t t1_ms);

/* A binary activity grid from speaker rows (t0, t1, speaker_id), e.g. a
 * diarizer's result: *act malloc'ed [*n_frames][*n_spk] (n_spk = the
 * largest id), frame t active for a row when the row covers the frame's
 * midpoint. false on OOM; an empty list gives 0 frames. */
bool tr_speaker_activity_from_rows(const tr_result_speaker *rows, int n, double frame_ms,
                                   float **act, int *n_frames, int *n_spk);

/* Labels every word of r, then every segment (its words' speakers weighted
 * by their durations; a segment without words by its own span). */
void tr_speaker_label_result(tr_result *r, const tr_speaker_activity *a);

#endif
