/* The `transcribe` command-line tool: option model and the pieces main.c
 * ties together. Uses only the public API (transcribe.h + extensions). */
#ifndef TR_TOOLS_CLI_H
#define TR_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "transcribe/extensions.h"

typedef enum {
    CLI_FMT_TXT = 0, /* transcript only */
    CLI_FMT_JSON,    /* one JSON object per file */
    CLI_FMT_SRT,
    CLI_FMT_VTT,
    CLI_FMT_REPORT, /* transcribe-cli's verbose layout (cli.md §4.2) */
} cli_format;

typedef enum {
    CLI_CHUNK_AUTO = 0, /* split at pauses when the model cannot take the file in one call */
    CLI_CHUNK_ON,       /* always split (above one piece's length) */
    CLI_CHUNK_OFF,      /* never: one library call per file */
} cli_chunk_mode;

#define CLI_MAX_THREADS_FLAG 1024 /* --threads range; main caps it at 4x the cores */
#define CLI_CHUNK_MAX_S      30   /* default hard cap of one piece; the target is 2/3 of it */

/* How subtitle cues are cut (0: the defaults in formats.c). */
typedef struct cli_cue_shape {
    int max_chars;  /* --max-line-chars */
    int max_cue_ms; /* --max-cue-ms */
} cli_cue_shape;

#define CLI_MAX_LINE_CHARS 1000 /* --max-line-chars range */

typedef struct cli_opts {
    const char *argv0;
    const char *model; /* NULL: bundled model lookup */
    const char **audio;
    int n_audio;
    const char *batch_file;
    bool batch_jsonl;
    int batch_size;
    const char *output;      /* -o: a copy of the output in the -f format */
    const char *output_dir;  /* --output-dir: DIR/<stem>.<ext> per input */
    unsigned output_formats; /* bit set of (1 << cli_format), txt/json/srt/vtt */
    bool version;
    bool detect_language; /* --detect-language: print the language, do not transcribe */
    bool print_progress;
    cli_cue_shape shape; /* progress also when stderr is not a TTY / short input */
    cli_format format;
    bool format_given;
    bool quiet;
    bool list_devices;
    bool json_tokens;
    int repeat;
    /* library parameters */
    int threads; /* 0: library default */
    int32_t n_ctx;
    transcribe_kv_type kv_type;
    transcribe_backend_request backend;
    int device; /* -1: automatic */
    transcribe_timestamp_kind timestamps;
    const char *language; /* NULL: autodetect */
    bool language_auto;   /* -l auto given */
    const char *target_language;
    bool translate;
    enum transcribe_pnc_mode pnc;
    enum transcribe_itn_mode itn;
    enum transcribe_diarize_mode diarize;
    bool raw_tokens;
    int32_t spec_k_drafts;
    /* whisper extension */
    bool whisper_any;
    const char *initial_prompt;
    bool temperature_given;
    float temperature;
    bool condition_on_prev;
    enum transcribe_whisper_prompt_condition prompt_condition;
    /* streaming */
    int stream_chunk_ms;  /* 0: offline */
    int stream_att_right; /* -1: unset */
    int stream_buf_left_ms, stream_buf_chunk_ms, stream_buf_right_ms;
    int stream_voxtral_delay;
    /* long audio */
    cli_chunk_mode chunk;
    int chunk_max_s; /* 0: default (CLI_CHUNK_MAX_S) */
} cli_opts;

/* args.c: parses argv; returns -1 to continue, otherwise the exit code. */
int cli_parse(int argc, char **argv, cli_opts *o);
void cli_usage(const char *argv0, FILE *f);

/* result.c: one file's transcript as the formats print it: copied from a
 * session (a single run, or row i of a batch), or stitched from pieces of a
 * long file with their times moved to the file's clock. Owns its strings. */
typedef struct cli_chunk {
    int64_t t0_ms, t1_ms; /* the piece of the file this call saw */
    int end_kind;         /* enum transcribe_span_end */
    transcribe_status status;
} cli_chunk;

typedef struct cli_result {
    char *text; /* full text; never NULL after cli_result_init */
    size_t text_len, text_cap;
    char language[16];
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
    double mel_ms, encode_ms, decode_ms; /* summed over the pieces */
    bool oom;                            /* an append failed: the result is incomplete */
    cli_cue_shape shape;                 /* set by the caller before printing */
} cli_result;

void cli_result_init(cli_result *r);
void cli_result_free(cli_result *r);
/* Appends the session's result (batch row i, or the single run when i < 0).
 * With shift, rows move by offset_ms and are clamped into [lo_ms, hi_ms] and
 * behind the rows already there (times stay monotonic); the text is joined
 * to what is there with a space (none between two CJK characters). */
void cli_result_append(cli_result *r, const struct transcribe_session *s, int i, bool shift,
                       int64_t offset_ms, int64_t lo_ms, int64_t hi_ms);
/* Keeps every row inside [0, end_ms] (the audio's length): a model's
 * timestamps can run past the end of the audio it was given. */
void cli_result_clamp(cli_result *r, int64_t end_ms);
void cli_result_add_chunk(cli_result *r, int64_t t0_ms, int64_t t1_ms, int end_kind,
                          transcribe_status st);

/* chunked.c: long audio split at pauses (README "Long audio"). */
typedef struct cli_chunk_plan {
    bool split;
    int64_t target_ms, max_ms;
    char why[160]; /* for the log line */
} cli_chunk_plan;

/* Whether and how to split a file of duration_ms: the rule, from the
 * model's family name, its LONG_FORM feature and its input limit (0: none),
 * and cli_chunk_decide, which asks the session for those. */
cli_chunk_plan cli_chunk_rule(cli_chunk_mode mode, int chunk_max_s, const char *arch,
                              bool long_form, int64_t limit_ms, int64_t duration_ms);
cli_chunk_plan cli_chunk_decide(const cli_opts *o, const struct transcribe_session *s,
                                int64_t duration_ms);
/* Splits pcm (n samples at rate), transcribes the pieces (run_batch groups
 * where the family decodes a batch together, else one by one; a truncated
 * piece is split again, up to three times) and stitches them into out.
 * *done_s follows the progress. Returns OK, ABORTED, OUTPUT_TRUNCATED (a
 * piece kept partial text) or the first error; out holds what was done. */
transcribe_status cli_run_chunked(const cli_opts *o, struct transcribe_session *s,
                                  const struct transcribe_run_params *rp, const float *pcm, int n,
                                  int rate, const cli_chunk_plan *plan, volatile double *done_s,
                                  cli_result *out);

/* json.c */
void cli_json_str(FILE *f, const char *s);

/* formats.c: print one file's result. */
void cli_print_txt(FILE *f, const cli_result *r, const char *header);
void cli_print_json(FILE *f, const cli_result *r, const char *path, const char *model,
                    double duration_s, transcribe_status st, bool tokens);
void cli_print_srt(FILE *f, const cli_result *r, double duration_s);
void cli_print_vtt(FILE *f, const cli_result *r, double duration_s);
void cli_print_report_result(FILE *f, const cli_result *r);
/* Prints r in format fmt (JSON also without a result: it carries the
 * error), flushes, and says whether every write reached f. */
bool cli_emit(FILE *f, cli_format fmt, const cli_result *r, bool have_result, const char *path,
              const char *model, double duration_s, transcribe_status st, bool tokens, bool header);

/* batch.c: --batch mode (cli.md §4.4/§4.5). Returns the exit code. */
int cli_run_batch(const cli_opts *o, struct transcribe_session *s,
                  const struct transcribe_run_params *rp, FILE *out_file);

/* Shared helpers (main.c). cli_log prints a message on stderr as the
 * library's log lines are printed (prefix, -q, TRANSCRIBE_DEBUG, progress
 * line cleared first). */
void cli_log(transcribe_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool cli_write_text_file(FILE *f, const char *path, const char *text);
/* --output-dir: writes DIR/<input stem>.<ext> in each --output-format
 * (nothing without --output-dir); false after any failed write (said). */
bool cli_write_output_dir(const cli_opts *o, const char *path, const cli_result *res,
                          bool have_result, const char *model, double duration_s,
                          transcribe_status st);
#endif
