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

typedef struct cli_opts {
    const char *argv0;
    const char *model; /* NULL: bundled model lookup */
    const char **audio;
    int n_audio;
    const char *batch_file;
    bool batch_jsonl;
    int batch_size;
    const char *output; /* -o: plain-text copy */
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
    const char *language;
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
} cli_opts;

/* args.c: parses argv; returns -1 to continue, otherwise the exit code. */
int cli_parse(int argc, char **argv, cli_opts *o);
void cli_usage(const char *argv0, FILE *f);

/* json.c */
void cli_json_str(FILE *f, const char *s);

/* formats.c: print the session's current result for one file. */
void cli_print_txt(FILE *f, const struct transcribe_session *s, const char *header);
void cli_print_json(FILE *f, const struct transcribe_session *s, const char *path,
                    const char *model, double duration_s, transcribe_status st, bool tokens);
void cli_print_srt(FILE *f, const struct transcribe_session *s, double duration_s);
void cli_print_vtt(FILE *f, const struct transcribe_session *s, double duration_s);
void cli_print_report_result(FILE *f, const struct transcribe_session *s);

/* batch.c: --batch mode (cli.md §4.4/§4.5). Returns the exit code. */
int cli_run_batch(const cli_opts *o, struct transcribe_session *s,
                  const struct transcribe_run_params *rp, FILE *out_file);

/* Shared helpers (main.c). */
bool cli_write_text_file(FILE *f, const char *path, const char *text);
#endif
