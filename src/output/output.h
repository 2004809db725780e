/* The four output formats of one transcription result: plain text, JSON,
 * SubRip and WebVTT (with subtitle cue shaping), rendered from a tr_result
 * into a string buffer. Every front end (the CLI, the server, the Python
 * package) prints these through transcribe_format_result (src/api/format.c),
 * so that the same result gives the same bytes everywhere. */
#ifndef TR_OUTPUT_OUTPUT_H
#define TR_OUTPUT_OUTPUT_H

#include <stdbool.h>

#include "core/result.h"
#include "transcribe.h"
#include "util/strbuf.h"

typedef struct tr_output_opts {
    transcribe_output_format format;
    int max_line_chars; /* subtitle cues: 0 = the defaults of output_cues.c */
    int max_cue_ms;
    bool tokens;              /* JSON: the token rows too */
    bool header;              /* txt: a "# <file>" line first */
    double duration_s;        /* rows are clamped into [0, duration]; an untimed cue spans it */
    const char *file;         /* JSON "file", the txt header (NULL: "") */
    const char *model;        /* JSON "model" (NULL: "") */
    transcribe_status status; /* JSON "error" when not OK */
    bool truncated;           /* JSON "truncated" */
    /* Names a status (JSON "error", the pieces' "status"): handed in by the
     * caller so that this layer calls no public entry point. */
    const char *(*status_name)(int status);
} tr_output_opts;

/* Appends r (NULL: an empty result, e.g. after a failed run: JSON still
 * names the file and the error, the other formats print nothing) in
 * o->format to out. False when out ran out of memory. */
bool tr_output_render(const tr_result *r, const tr_output_opts *o, tr_strbuf *out);

#endif
