/* The `transcribe` command-line tool: option model and the pieces main.c
 * ties together. Uses only the public API (transcribe.h + extensions). */
#ifndef TR_TOOLS_CLI_H
#define TR_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output.h"
#include "wav_cut.h"
#include "transcribe/extensions.h"

typedef enum {
    CLI_CHUNK_AUTO = 0, /* split at pauses when the model cannot take the file in one call */
    CLI_CHUNK_ON,       /* always split (above one piece's length) */
    CLI_CHUNK_OFF,      /* never: one library call per file */
} cli_chunk_mode;

#define CLI_MAX_THREADS_FLAG 1024 /* --threads range; main caps it at 4x the cores */
#define CLI_CHUNK_MAX_S      30   /* default hard cap of one piece; the target is 2/3 of it */

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
    const char *diarizer; /* --diarizer FILE: a diarization model for run_params.diarizer */
    bool raw_tokens;
    int32_t spec_k_drafts;
    /* vocabulary hints (vocab.c): the flags, then the parsed terms */
    const char *vocabulary, *vocabulary_file;
    const char **vocab; /* n_vocab terms pointing into vocab_arg / vocab_file */
    int n_vocab;
    char *vocab_arg, *vocab_file;
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
    /* live mode (stream.c) */
    bool live, realtime;
    const char *raw_format; /* NULL: WAV; "s16le" / "f32le" */
    int raw_rate;           /* 0: 16000 */
    /* long audio */
    cli_chunk_mode chunk;
    int chunk_max_s; /* 0: default (CLI_CHUNK_MAX_S) */
    /* voice activity detection (vad_opts.c) */
    bool vad;
    const char *vad_model; /* NULL: the bundled one */
    struct transcribe_vad_params vad_params;
} cli_opts;

/* vad_opts.c: a --vad* flag at argv[*i] (-2: not one; -1: taken, *i moved
 * past its value; else the exit code); loads the VAD model when --vad (0 or
 * exit code 1 with the reason printed); the help lines. */
int cli_vad_parse(cli_opts *o, int argc, char **argv, int *i);
int cli_vad_load(const cli_opts *o, struct transcribe_vad_model **out);
extern const char *const cli_vad_usage;

/* args.c: parses argv; returns -1 to continue, otherwise the exit code. */
int cli_parse(int argc, char **argv, cli_opts *o);
void cli_usage(const char *argv0, FILE *f);
/* vocab.c: the terms of --vocabulary and --vocabulary-file into o->vocab;
 * false (error printed) when the file cannot be read. */
bool cli_vocab_load(cli_opts *o);
void cli_vocab_free(cli_opts *o);

/* batch.c: --batch mode (cli.md §4.4/§4.5). Returns the exit code. */
int cli_run_batch(const cli_opts *o, struct transcribe_session *s,
                  const struct transcribe_run_params *rp, FILE *out_file, const char *model_path);

/* stream.c: --stream, live transcription of one input (a file, a FIFO or
 * '-') fed as it arrives; at the end its result goes to -o (out_file) and
 * --output-dir. Returns the exit code. */
int cli_run_live(const cli_opts *o, struct transcribe_session *s,
                 const struct transcribe_run_params *rp, const char *path, FILE *out_file,
                 const char *model_path);

/* Shared helpers (main.c). cli_log prints a message on stderr as the
 * library's log lines are printed (prefix, -q, TRANSCRIBE_DEBUG, progress
 * line cleared first). */
void cli_log(transcribe_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool cli_write_text_file(FILE *f, const char *path, const char *text);
/* A file load's reason: between cli_load_capture and cli_load_reason the
 * library's error lines are held back, and why (cap bytes) gets the first
 * (as the bindings report it), without the module's tag or a trailing path,
 * else the status text. cli_load_error prints the one line of a failed
 * load: "error: cannot load WHAT PATH: WHY (status)". */
void cli_load_capture(char *why, size_t cap);
void cli_load_reason(char *why, size_t cap, const char *path, transcribe_status st);
void cli_load_error(const char *what, const char *path, const char *why, transcribe_status st);
/* cli_wav_cut_short (wav_cut.h), the library's messages about a header
 * it refuses held back: the load that follows reports them. */
bool cli_input_cut_short(const char *path);
/* transcribe_audio_load_file, its reason in why as above. */
transcribe_status cli_audio_load(const char *path, int rate, float **pcm, int *n, char *why,
                                 size_t cap);
/* --output-dir: true (said on stderr) when two of the n inputs would
 * write the same DIR/<stem>.* files, or an output file is one the run
 * reads (an input, -m, --diarizer, --vad-model, --batch); false without
 * --output-dir. */
bool cli_output_dir_refused(const cli_opts *o, const char *const *inputs, int n);
/* Ctrl-C was pressed (SIGINT). */
bool cli_interrupted(void);
/* --output-dir: writes DIR/<input stem>.<ext> in each --output-format
 * (nothing without --output-dir); false after any failed write (said). */
bool cli_write_output_dir(const cli_opts *o, const char *path, const cli_source *src,
                          bool have_result, const char *model, double duration_s,
                          transcribe_status st);
#endif
