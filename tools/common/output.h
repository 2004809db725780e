/* Output shared by the command-line tool and the server: one file's
 * transcript copied out of a session (result.c) and printed as text, JSON,
 * SubRip or WebVTT (formats.c, json.c). Uses only the public API. */
#ifndef TR_TOOLS_COMMON_OUTPUT_H
#define TR_TOOLS_COMMON_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "transcribe.h"

typedef enum {
    CLI_FMT_TXT = 0, /* transcript only */
    CLI_FMT_JSON,    /* one JSON object per file */
    CLI_FMT_SRT,
    CLI_FMT_VTT,
    CLI_FMT_REPORT, /* transcribe-cli's verbose layout (docs/cli.md §4.2) */
} cli_format;

/* How subtitle cues are cut (0: the defaults in formats.c). */
typedef struct cli_cue_shape {
    int max_chars;  /* --max-line-chars */
    int max_cue_ms; /* --max-cue-ms */
} cli_cue_shape;

#define CLI_MAX_LINE_CHARS 1000 /* --max-line-chars range */

/* result.c: one file's transcript as the formats print it: copied from a
 * session (a single run, or row i of a batch; a long file the library split
 * into pieces included). Owns its strings. */
typedef struct cli_chunk {
    int64_t t0_ms, t1_ms; /* the piece of the file this call saw */
    int end_kind;         /* enum transcribe_span_end */
    transcribe_status status;
} cli_chunk;

typedef struct cli_result {
    char *text; /* full text; never NULL after cli_result_init */
    size_t text_len, text_cap;
    char language[16];
    char emotion[32], audio_event[32]; /* audio tags (SenseVoice); "" when none */
    transcribe_timestamp_kind kind;
    bool truncated;
    struct transcribe_segment *segs;
    struct transcribe_word *words;
    struct transcribe_token *toks;
    int n_segs, n_words, n_toks, cap_segs, cap_words, cap_toks;
    int n_speaker_segments;
    bool chunked;      /* split at pauses (even into zero pieces: no speech) */
    cli_chunk *chunks; /* the pieces of a split run */
    int n_chunks, cap_chunks;
    bool oom;            /* an append failed: the result is incomplete */
    cli_cue_shape shape; /* set by the caller before printing */
} cli_result;

void cli_result_init(cli_result *r);
void cli_result_free(cli_result *r);
/* Copies the session's result (batch row i, or the single run when i < 0)
 * into r (empty): text, rows, and the pieces of a split run. */
void cli_result_copy(cli_result *r, const struct transcribe_session *s, int i);
/* Keeps every row inside [0, end_ms] (the audio's length): a model's
 * timestamps can run past the end of the audio it was given. */
void cli_result_clamp(cli_result *r, int64_t end_ms);
void cli_result_add_chunk(cli_result *r, int64_t t0_ms, int64_t t1_ms, int end_kind,
                          transcribe_status st);

/* json.c */
void cli_json_str(FILE *f, const char *s);

/* formats.c: print one file's result. */
void cli_print_report_result(FILE *f, const cli_result *r);
/* What a file's output is printed from: the session's result (s: the
 * single run, or batch row `row`), which the library renders in the four
 * formats (transcribe_format_result); r carries the cue shape and the rows
 * the report layout prints. */
typedef struct cli_source {
    const struct transcribe_session *s;
    int row;
    const cli_result *r;
} cli_source;

/* Prints the result in format fmt (JSON also without a result: it carries
 * the error), flushes, and says whether every write reached f. */
bool cli_emit(FILE *f, cli_format fmt, const cli_source *src, bool have_result, const char *path,
              const char *model, double duration_s, transcribe_status st, bool tokens, bool header);

#endif
