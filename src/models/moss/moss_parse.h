/* MOSS output parsing (docs/formats/moss.md §10): the model writes
 * "[t0][Sxx]text[t1]..." and this turns it into segments with times and
 * speaker ids, speaker rows and the marker-free full text. A byte scanner:
 * any input (unclosed brackets, invalid UTF-8, thousands of markers) parses
 * in one linear pass without failing but for OOM. */
#ifndef TR_MODELS_MOSS_PARSE_H
#define TR_MODELS_MOSS_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/result.h"
#include "transcribe.h"

/* How the run parameters shape the result (docs/formats/moss.md §10.3). */
typedef struct moss_out_policy {
    bool diarize;    /* diarize == ON: keep speaker ids and rows */
    bool timestamps; /* timestamps AUTO / SEGMENT: keep times, kind SEGMENT */
} moss_out_policy;

/* Fills res (assumed empty) from the raw text of n bytes for audio_ms of
 * audio: raw text verbatim, full text, segments, speaker rows, kind. Falls
 * back to one plain segment when no turn is recognised. OK or OOM. */
transcribe_status tr_moss_fill_result(const char *raw, size_t n, int64_t audio_ms,
                                      const moss_out_policy *pol, tr_result *res);

#endif
