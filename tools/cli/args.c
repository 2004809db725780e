/* Command-line parsing. Flags follow transcribe-cli (docs/cli.md §1–§2):
 * `--flag VALUE`, left to right, later flags override earlier ones; our
 * additions are several audio files, '-' for standard input, `--flag=VALUE`
 * and `--` (the words after it are audio files), -f/--format, --tokens,
 * --output-dir/--output-format and --version.
 * Unlike transcribe-cli, numbers are checked (junk and out-of-range values
 * are errors) and a bad option prints one line and a --help hint. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_usage(const char *argv0, FILE *f) {
    fprintf(f,
            "usage: %s [options] audio.wav [more audio...]\n"
            "       %s [options] --batch file.list -m model.gguf\n"
            "       %s --list-devices\n"
            "\n"
            "Transcribes speech in audio files ('-' reads standard input): WAV, and FLAC, MP3,\n"
            "Ogg when built with libsndfile; any sample rate and channel count (audio is\n"
            "resampled to the model's rate).\n"
            "\n"
            "options:\n"
            "  -m, --model PATH          model file (GGUF or legacy whisper.cpp .bin); default:\n"
            "                            $TRANSCRIBE_MODEL, else the bundled demo model (an\n"
            "                            English number/phrase model, not for real speech);\n"
            "                            a name such as parakeet-tdt-0.6b-v3 takes that model\n"
            "                            from the model cache (fetch it with transcribe-download)\n"
            "  -f, --format FMT          output: txt (transcript, default), json, srt, vtt, or\n"
            "                            report (transcribe-cli's detailed layout)\n"
            "      --tokens              json: include per-token rows\n"
            "      --max-line-chars N    srt/vtt/json cues: at most N characters (1: one word\n"
            "                            per cue), cut between words where word times exist\n"
            "      --max-cue-ms N        cues: at most N ms, cut between words likewise\n"
            "      --split-on-word       accepted for whisper.cpp users: cues always end\n"
            "                            between words\n"
            "  -o, --output PATH         also write the output (in the -f format) to PATH\n"
            "      --output-dir DIR      also write DIR/<input name>.<ext> for each input\n"
            "      --output-format LIST  formats for --output-dir: comma list of txt, srt, vtt,\n"
            "                            json (default: the -f format)\n"
            "  -l, --language CODE       source language hint (default or 'auto': autodetect)\n"
            "      --detect-language     only detect the language of each input (its first\n"
            "                            30 s): prints the code and the model's probability\n"
            "  -t, --translate           translate instead of transcribe\n"
            "      --target-language C   translation target language (implies -t)\n"
            "      --timestamps KIND     auto|none|segment|word|token (default auto)\n"
            "      --threads N           CPU threads, 1 to 4x the cores (default: usable CPUs,\n"
            "                            at most 8)\n"
            "  -q, --quiet               only error messages on stderr (no info lines, progress)\n"
            "      --print-progress      progress lines on stderr even when it is not a terminal,\n"
            "                            the input is short, or -q is given\n"
            "  -r, --repeat N            run the same audio N times (benchmarking)\n"
            "      --n-ctx N             decoder context cap, 0 = model maximum\n"
            "      --kv-type T           auto|f32|f16 (attention K/V precision)\n"
            "      --backend B           auto|cpu|cpu_accel|metal|vulkan|cuda|rocm\n"
            "      --device N            exact device index from --list-devices\n"
            "      --list-devices        list compute devices and exit\n"
            "      --batch FILE          transcribe every path listed in FILE (one per line)\n"
            "      --batch-jsonl         batch mode: JSON Lines output\n"
            "      --batch-size N        N inputs (listed, or in --batch) per batched call\n"
            "      --raw-tokens          keep model control tags in the text\n"
            "      --pnc / --no-pnc      force punctuation+casing on/off (canary-style models)\n"
            "      --itn                 inverse text normalisation on\n"
            "      --diarize / --no-diarize  speaker attribution on/off\n"
            "      --diarizer FILE       label every word and segment with a speaker from this\n"
            "                            diarization model (Sortformer), run over the same audio\n"
            "      --spec-k-drafts N     speculative decoding: up to N drafted tokens per decoder\n"
            "                            step, same output (-1 = default, off; 0 = off)\n"
            "      --vocabulary \"a, b\"   names / jargon to expect (models with vocabulary\n"
            "                            hints)\n"
            "      --vocabulary-file F   the same from a file, one term per line (or\n"
            "                            comma-separated)\n"
            "  long audio:\n"
            "      --chunk MODE          auto (default): split a file at pauses when the model\n"
            "                            cannot take it in one call (a fixed output budget and\n"
            "                            no long-form mode, or longer than its input limit);\n"
            "                            on: always split; off: never\n"
            "      --chunk-max-s N       longest piece in seconds (default 30; pieces aim at\n"
            "                            2/3 of it and end in the best pause before that)\n"
            "%s"
            "  whisper:\n"
            "      --initial-prompt TEXT     text prompt that biases decoding\n"
            "      --temperature F           first sampling temperature (default 0 = greedy)\n"
            "      --condition-on-prev-tokens  carry text across 30 s windows\n"
            "      --prompt-condition first|all  prompt on the first window or every window\n"
            "  streaming API over a file (every model; the knobs below are family ones):\n"
            "      --stream-chunk-ms N       feed the file to the stream in N ms slices\n"
            "      --stream-att-right R      parakeet cache-aware right context\n"
            "      --stream-buf-left-ms N, --stream-buf-chunk-ms N, --stream-buf-right-ms N\n"
            "      --stream-voxtral-delay N  voxtral-realtime delay tokens\n"
            "  live (every model):\n"
            "      --stream                  transcribe one input as it arrives (a file, a FIFO\n"
            "                                or '-'): committed text + tentative tail\n"
            "      --realtime                feed at real-time pace (default: as it arrives)\n"
            "      --raw-format s16le|f32le  the input is raw mono PCM, not WAV\n"
            "      --rate N                  raw input sample rate (default 16000)\n"
            "  -h, --help                this text\n"
            "      --version             print the version and exit\n"
            "\n"
            "Environment: TRANSCRIBE_MODEL (default model), TRANSCRIBE_DEBUG=1 (debug log lines),\n"
            "TRANSCRIBE_MODEL_DIR (the model cache; else $XDG_CACHE_HOME/transcribe).\n"
            "Ctrl-C stops a run and prints the partial transcript.\n"
            "\n"
            "Exit status: 0 on success, 1 on any error (bad option, unreadable model or audio,\n"
            "a run that did not complete).\n",
            argv0, argv0, argv0, cli_vad_usage);
}

/* A bad command line: one line saying why, and where the options are. */
static int fail(const cli_opts *o, const char *fmt, const char *arg) {
    fprintf(stderr, "error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nrun '%s --help' for the options\n", o->argv0);
    return 1;
}

/* A whole decimal integer in [lo, hi] (no junk, no overflow). */
static bool parse_int(const char *s, long lo, long hi, int *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* An integer flag: a bad value names the flag, the range and the value. */
static int int_flag(const cli_opts *o, const char *flag, const char *val, long lo, long hi,
                    int *out) {
    if (parse_int(val, lo, hi, out)) return -1;
    fprintf(stderr, "error: %s must be an integer from %ld to %ld (got '%s')\n", flag, lo, hi, val);
    fprintf(stderr, "run '%s --help' for the options\n", o->argv0);
    return 1;
}

/* What whisper.cpp / faster-whisper users type, and ours: a bad option
 * that is one of theirs gets the equivalent in its error line. */
static const char *foreign_hint(const char *arg) {
    static const struct {
        const char *theirs, *ours;
    } k_map[] = {
        {"-otxt", "--output-dir DIR --output-format txt (or -f txt -o FILE)"},
        {"-osrt", "--output-dir DIR --output-format srt (or -f srt -o FILE)"},
        {"-ovtt", "--output-dir DIR --output-format vtt (or -f vtt -o FILE)"},
        {"-oj", "--output-dir DIR --output-format json (or -f json -o FILE)"},
        {"-ojf", "-f json --tokens"},
        {"-of", "-o FILE (the whole file name) or --output-dir DIR"},
        {"--output-file", "-o FILE (the whole file name) or --output-dir DIR"},
        {"--output_dir", "--output-dir DIR"},
        {"--output_format", "--output-format LIST"},
        {"-tr", "-t (--translate)"},
        {"--task", "-t for translation (transcription is the default)"},
        {"-pp", "--print-progress"},
        {"-ml", "--max-line-chars N"},
        {"--max-len", "--max-line-chars N"},
        {"-sow", "--split-on-word"},
        {"-np", "-q"},
        {"--no-prints", "-q"},
        {"-nt", "--timestamps none"},
        {"--no-timestamps", "--timestamps none"},
        {"-dl", "--detect-language"},
        {"-di", "--diarize"},
        {"-tdrz", "--diarize"},
        {"-tp", "--temperature F"},
        {"--prompt", "--initial-prompt TEXT"},
        {"--initial_prompt", "--initial-prompt TEXT"},
        {"-p", "--threads N (one process, several threads)"},
        {"--processors", "--threads N (one process, several threads)"},
        {"-bs", "nothing: decoding is greedy with temperature fallback"},
        {"--beam-size", "nothing: decoding is greedy with temperature fallback"},
        {"--beam_size", "nothing: decoding is greedy with temperature fallback"},
        {"--vad_filter", "--vad (transcribe only the speech the VAD finds)"},
        {"--word_timestamps", "--timestamps word"},
    };
    for (size_t i = 0; i < sizeof k_map / sizeof k_map[0]; i++) {
        if (strcmp(arg, k_map[i].theirs) == 0) return k_map[i].ours;
    }
    return NULL;
}

/* Whether s is a plain non-negative integer (e.g. whisper.cpp's `-t 4`). */
static bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
    }
    return true;
}

static bool parse_index(const char *s, int *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > 1000000) return false;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
    }
    *out = (int)v;
    return true;
}

static void defaults(cli_opts *o, const char *argv0) {
    memset(o, 0, sizeof *o);
    o->argv0 = argv0;
    o->format = CLI_FMT_TXT;
    o->repeat = 1;
    o->kv_type = TRANSCRIBE_KV_TYPE_AUTO;
    o->backend = TRANSCRIBE_BACKEND_AUTO;
    o->device = -1;
    o->timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
    o->spec_k_drafts = -1;
    o->stream_att_right = -1;
    o->stream_buf_left_ms = o->stream_buf_chunk_ms = o->stream_buf_right_ms = -1;
    o->stream_voxtral_delay = -1;
}

/* "txt,srt,vtt,json" (any subset, any order) as a bit set of cli_format. */
static bool parse_format_list(const char *val, unsigned *out) {
    static const char *const names[] = {"txt", "json", "srt", "vtt"};
    unsigned set = 0;
    const char *p = val;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < 4 && !(strlen(names[k]) == n && strncmp(p, names[k], n) == 0)) k++;
        if (k == 4) return false;
        set |= 1u << k;
        p += n;
        if (*p == ',') p++;
    }
    if (!set) return false;
    *out = set;
    return true;
}

#define IS(a, b) (strcmp(arg, a) == 0 || strcmp(arg, b) == 0)
#define INT_FLAG(lo, hi, dst)                                                                      \
    do {                                                                                           \
        int rc_ = int_flag(o, arg, val, (lo), (hi), &(dst));                                       \
        if (rc_ >= 0) return rc_;                                                                  \
    } while (0)
#define IS1(a) (strcmp(arg, a) == 0)

static const char *const with_value[] = {"-m",
                                         "--model",
                                         "-l",
                                         "--language",
                                         "--target-language",
                                         "-o",
                                         "--output",
                                         "-r",
                                         "--repeat",
                                         "--threads",
                                         "--n-ctx",
                                         "--kv-type",
                                         "--backend",
                                         "--device",
                                         "--timestamps",
                                         "--batch",
                                         "--batch-size",
                                         "--initial-prompt",
                                         "--vocabulary",
                                         "--vocabulary-file",
                                         "--diarizer",
                                         "--temperature",
                                         "--prompt-condition",
                                         "--stream-chunk-ms",
                                         "--stream-att-right",
                                         "--stream-buf-left-ms",
                                         "--stream-buf-chunk-ms",
                                         "--stream-buf-right-ms",
                                         "--stream-voxtral-delay",
                                         "--raw-format",
                                         "--rate",
                                         "--spec-k-drafts",
                                         "--chunk",
                                         "--chunk-max-s",
                                         "-f",
                                         "--format",
                                         "--output-dir",
                                         "--output-format",
                                         "--max-line-chars",
                                         "--max-cue-ms",
                                         "--vad-model",
                                         "--vad-threshold",
                                         "--vad-neg-threshold",
                                         "--vad-min-speech-ms",
                                         "--vad-min-silence-ms",
                                         "--vad-speech-pad-ms",
                                         "--vad-max-speech-s",
                                         "--vad-window"};

static bool takes_value(const char *arg) {
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
        if (strcmp(arg, with_value[k]) == 0) return true;
    return false;
}

/* The options and audio files of argv[1..argc), the words cli_parse made:
 * "--name=value" already cut in two, and from index first_positional on
 * (INT_MAX: none) the words that followed "--", all audio files. */
static int parse_words(int argc, char **argv, cli_opts *o, int first_positional) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        if (i >= first_positional) { /* after "--": audio, whatever it looks like */
            o->audio[o->n_audio++] = arg;
            continue;
        }
        int vad_rc = cli_vad_parse(o, argc, argv, &i);
        if (vad_rc != -2) {
            if (vad_rc >= 0) return vad_rc;
            continue;
        }
        if (takes_value(arg)) {
            if (i + 1 >= argc) return fail(o, "%s requires an argument", arg);
            val = argv[++i];
        }
        if (IS("-h", "--help")) {
            cli_usage(o->argv0, stdout); /* asked for: stdout, so it pipes into a pager */
            return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
        } else if (IS("-m", "--model")) {
            o->model = val;
        } else if (IS("-l", "--language")) {
            o->language_auto = strcmp(val, "auto") == 0;
            o->language = o->language_auto ? NULL : val; /* auto: the model detects */
        } else if (IS("-t", "--translate")) {
            /* whisper.cpp's -t is its thread count: `-t 4` here would
             * translate a file named 4. */
            if (strcmp(arg, "-t") == 0 && i + 1 < argc && all_digits(argv[i + 1]) &&
                access(argv[i + 1], F_OK) != 0) {
                return fail(o, "-t means --translate here; for threads use --threads %s",
                            argv[i + 1]);
            }
            o->translate = true;
        } else if (IS1("--target-language")) {
            o->target_language = val;
        } else if (IS("-q", "--quiet")) {
            o->quiet = true;
        } else if (IS("-r", "--repeat")) {
            INT_FLAG(1, 1000000, o->repeat);
        } else if (IS("-o", "--output")) {
            o->output = val;
        } else if (IS("-f", "--format")) {
            static const char *const names[] = {"txt", "json", "srt", "vtt", "report"};
            int k = 0;
            while (k < 5 && strcmp(val, names[k]) != 0) k++;
            if (k == 5 && access(val, F_OK) == 0) {
                return fail(o,
                            "-f is --format here (txt|json|srt|vtt|report); give audio files as "
                            "plain arguments: %s",
                            val);
            }
            if (k == 5) return fail(o, "unknown --format '%s' (txt|json|srt|vtt|report)", val);
            o->format = (cli_format)k;
            o->format_given = true;
        } else if (IS1("--tokens")) {
            o->json_tokens = true;
        } else if (IS1("--threads")) {
            INT_FLAG(1, CLI_MAX_THREADS_FLAG, o->threads); /* capped by the cores in main */
        } else if (IS1("--n-ctx")) {
            int v = 0;
            INT_FLAG(0, 1 << 24, v); /* 0 = model maximum */
            o->n_ctx = v;
        } else if (IS1("--kv-type")) {
            if (!strcmp(val, "auto"))
                o->kv_type = TRANSCRIBE_KV_TYPE_AUTO;
            else if (!strcmp(val, "f32"))
                o->kv_type = TRANSCRIBE_KV_TYPE_F32;
            else if (!strcmp(val, "f16"))
                o->kv_type = TRANSCRIBE_KV_TYPE_F16;
            else
                return fail(o, "--kv-type must be auto, f32 or f16 (got '%s')", val);
        } else if (IS1("--backend")) {
            static const char *const names[] = {"auto",      "cpu",  "metal", "vulkan",
                                                "cpu_accel", "cuda", "rocm"};
            int k = 0;
            while (k < 7 && strcmp(val, names[k]) != 0) k++;
            if (k == 7) {
                return fail(
                    o, "--backend must be auto|cpu|cpu_accel|metal|vulkan|cuda|rocm (got '%s')",
                    val);
            }
            o->backend = (transcribe_backend_request)k;
        } else if (IS1("--device")) {
            if (!parse_index(val, &o->device)) {
                return fail(o, "--device must be an integer index >= 0%s", "");
            }
        } else if (IS1("--timestamps")) {
            if (!strcmp(val, "auto"))
                o->timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
            else if (!strcmp(val, "none"))
                o->timestamps = TRANSCRIBE_TIMESTAMPS_NONE;
            else if (!strcmp(val, "segment"))
                o->timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
            else if (!strcmp(val, "word"))
                o->timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
            else if (!strcmp(val, "token"))
                o->timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN;
            else
                return fail(o, "--timestamps must be auto|none|segment|word|token (got '%s')", val);
        } else if (IS1("--batch")) {
            o->batch_file = val;
        } else if (IS1("--batch-jsonl")) {
            o->batch_jsonl = true;
        } else if (IS1("--batch-size")) {
            INT_FLAG(0, 4096, o->batch_size);
        } else if (IS1("--vocabulary")) {
            o->vocabulary = val;
        } else if (IS1("--vocabulary-file")) {
            o->vocabulary_file = val;
        } else if (IS1("--diarizer")) {
            o->diarizer = val;
        } else if (IS1("--initial-prompt")) {
            o->initial_prompt = val;
            o->whisper_any = true;
        } else if (IS1("--temperature")) {
            char *end = NULL;
            double t = strtod(val, &end);
            if (end == val || *end || !(t >= 0.0 && t <= 2.0)) {
                return fail(o, "--temperature must be a number from 0 to 2 (got '%s')", val);
            }
            o->temperature = (float)t;
            o->temperature_given = true;
            o->whisper_any = true;
        } else if (IS1("--condition-on-prev-tokens")) {
            o->condition_on_prev = true;
            o->whisper_any = true;
        } else if (IS1("--prompt-condition")) {
            if (!strcmp(val, "first"))
                o->prompt_condition = TRANSCRIBE_WHISPER_PROMPT_FIRST_SEGMENT;
            else if (!strcmp(val, "all"))
                o->prompt_condition = TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS;
            else
                return fail(o, "--prompt-condition must be first or all (got '%s')", val);
            o->whisper_any = true;
        } else if (IS1("--itn")) {
            o->itn = TRANSCRIBE_ITN_MODE_ON;
        } else if (IS1("--pnc")) {
            o->pnc = TRANSCRIBE_PNC_MODE_ON;
        } else if (IS1("--no-pnc")) {
            o->pnc = TRANSCRIBE_PNC_MODE_OFF;
        } else if (IS1("--diarize")) {
            o->diarize = TRANSCRIBE_DIARIZE_MODE_ON;
        } else if (IS1("--no-diarize")) {
            o->diarize = TRANSCRIBE_DIARIZE_MODE_OFF;
        } else if (IS1("--raw-tokens")) {
            o->raw_tokens = true;
        } else if (IS1("--stream-chunk-ms")) {
            INT_FLAG(1, 3600000, o->stream_chunk_ms);
        } else if (IS1("--stream-att-right")) {
            INT_FLAG(0, 1000000, o->stream_att_right);
        } else if (IS1("--stream-buf-left-ms")) {
            INT_FLAG(-1, 3600000, o->stream_buf_left_ms);
        } else if (IS1("--stream-buf-chunk-ms")) {
            INT_FLAG(-1, 3600000, o->stream_buf_chunk_ms);
        } else if (IS1("--stream-buf-right-ms")) {
            INT_FLAG(-1, 3600000, o->stream_buf_right_ms);
        } else if (IS1("--stream-voxtral-delay")) {
            INT_FLAG(-1, 1000000, o->stream_voxtral_delay);
        } else if (IS1("--stream")) {
            o->live = true;
        } else if (IS1("--realtime")) {
            o->realtime = true;
        } else if (IS1("--raw-format")) {
            if (strcmp(val, "s16le") && strcmp(val, "f32le")) {
                return fail(o, "--raw-format must be s16le or f32le (got '%s')", val);
            }
            o->raw_format = val;
        } else if (IS1("--rate")) {
            INT_FLAG(1000, 1536000, o->raw_rate); /* the rates a WAV header may give */
        } else if (IS1("--spec-k-drafts")) {
            int v = 0;
            INT_FLAG(-1, 1024, v);
            o->spec_k_drafts = v;
        } else if (IS1("--chunk")) {
            if (!strcmp(val, "auto"))
                o->chunk = CLI_CHUNK_AUTO;
            else if (!strcmp(val, "on"))
                o->chunk = CLI_CHUNK_ON;
            else if (!strcmp(val, "off"))
                o->chunk = CLI_CHUNK_OFF;
            else
                return fail(o, "--chunk must be auto, on or off (got '%s')", val);
        } else if (IS1("--chunk-max-s")) {
            if (!parse_index(val, &o->chunk_max_s) || o->chunk_max_s < 2 || o->chunk_max_s > 3600) {
                return fail(o, "--chunk-max-s must be an integer from 2 to 3600 (got '%s')", val);
            }
        } else if (IS1("--output-dir")) {
            o->output_dir = val;
        } else if (IS1("--output-format")) {
            if (!parse_format_list(val, &o->output_formats)) {
                return fail(
                    o, "--output-format takes a comma list of txt, srt, vtt, json (got '%s')", val);
            }
        } else if (IS1("--max-line-chars")) {
            INT_FLAG(1, CLI_MAX_LINE_CHARS, o->shape.max_chars);
        } else if (IS1("--max-cue-ms")) {
            INT_FLAG(100, 3600000, o->shape.max_cue_ms);
        } else if (IS1("--split-on-word")) {
            /* whisper.cpp's flag: cues here always break between words */
        } else if (IS1("--detect-language")) {
            o->detect_language = true;
        } else if (IS1("--print-progress")) {
            o->print_progress = true;
        } else if (IS1("--version")) {
            o->version = true;
            return -1;
        } else if (IS1("-")) {
            o->audio[o->n_audio++] = arg; /* standard input */
        } else if (IS1("--list-devices")) {
            o->list_devices = true;
        } else if (arg[0] == '-') {
            const char *hint = foreign_hint(arg);
            if (hint) {
                fprintf(stderr, "error: unknown option '%s'; here: %s\n", arg, hint);
                fprintf(stderr, "run '%s --help' for the options\n", o->argv0);
                return 1;
            }
            return fail(o, "unknown option '%s'", arg);
        } else {
            o->audio[o->n_audio++] = arg;
        }
    }
    if (o->list_devices) return -1;
    int n_stdin = 0;
    for (int i = 0; i < o->n_audio; i++) n_stdin += strcmp(o->audio[i], "-") == 0;
    if (n_stdin > 1) return fail(o, "standard input ('-') can be read only once%s", "");
    if (o->output_formats && !o->output_dir) {
        return fail(o, "--output-format needs --output-dir DIR%s", "");
    }
    if (o->output_dir && !o->output_formats) {
        o->output_formats = o->format == CLI_FMT_REPORT ? 1u << CLI_FMT_TXT : 1u << o->format;
    }
    /* Subtitles are one file's cues, numbered from 1: several inputs on one
     * stream would restart the numbering mid-file. */
    if ((o->format == CLI_FMT_SRT || o->format == CLI_FMT_VTT) && o->n_audio > 1) {
        return fail(o,
                    o->format == CLI_FMT_SRT
                        ? "-f %s prints one input's cues; for several inputs use --output-dir DIR "
                          "--output-format srt (one DIR/<name>.srt per input)"
                        : "-f %s prints one input's cues; for several inputs use --output-dir DIR "
                          "--output-format vtt (one DIR/<name>.vtt per input)",
                    o->format == CLI_FMT_SRT ? "srt" : "vtt");
    }
    if (o->n_audio == 0 && !o->batch_file) return fail(o, "missing audio file or --batch%s", "");
    if (o->n_audio > 0 && o->batch_file) {
        return fail(o, "cannot combine positional audio files with --batch%s", "");
    }
    if (o->live && (o->n_audio != 1 || o->batch_file)) {
        return fail(o, "--stream transcribes exactly one input (a file, a FIFO or '-')%s", "");
    }
    if ((o->raw_format || o->raw_rate) && !o->live) {
        return fail(o, "--raw-format / --rate describe a --stream input%s", "");
    }
    /* flags of one mode, refused outside it rather than ignored */
    if (o->realtime && !o->live) return fail(o, "--realtime paces a --stream input%s", "");
    if (o->batch_jsonl && !o->batch_file) {
        return fail(o, "--batch-jsonl prints a --batch list's results; add --batch FILE%s", "");
    }
    if (o->live && o->format == CLI_FMT_REPORT) {
        return fail(
            o, "-f report describes a whole-file run; --stream prints txt, json, srt or vtt%s", "");
    }
    if (o->detect_language && (o->batch_file || o->output_dir || o->output || o->live ||
                               o->stream_chunk_ms > 0 || o->translate || o->target_language)) {
        return fail(o,
                    "--detect-language prints the language of each input on stdout; it does not "
                    "combine with --batch, -o, --output-dir, streaming or translation%s",
                    "");
    }
    if (o->detect_language && o->language) {
        return fail(o, "--detect-language detects the language: drop -l %s", o->language);
    }
    if (o->stream_chunk_ms > 0 && o->repeat > 1) {
        return fail(o, "--stream-chunk-ms cannot be combined with --repeat%s", "");
    }
    return -1;
}

int cli_parse(int argc, char **argv, cli_opts *o) {
    defaults(o, argc > 0 ? argv[0] : "transcribe");
    o->audio = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o->audio);
    char **words = malloc(sizeof *words * (2 * (size_t)(argc > 0 ? argc : 1) + 1));
    if (!o->audio || !words) {
        free(words);
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    /* "--name=value" (as argparse and GNU tools take it) is "--name value";
     * "--" ends the options. The words point into argv's strings, which
     * C lets a program write: '=' becomes the name's end. */
    int n = 0, first_positional = INT_MAX;
    if (argc > 0) words[n++] = argv[0];
    bool value_next = false; /* the word before was an option that takes the next one */
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        const bool is_value = value_next;
        value_next = false;
        if (is_value || first_positional != INT_MAX) {
            words[n++] = a; /* a value, whatever it looks like (--initial-prompt "--x=y") */
        } else if (strcmp(a, "--") == 0) {
            first_positional = n;
        } else if (eq && eq > a + 2) {
            *eq = '\0';
            if (!takes_value(a)) {
                fprintf(stderr, "error: %s takes no value (got '%s')\n", a, eq + 1);
                fprintf(stderr, "run '%s --help' for the options\n", o->argv0);
                free(words);
                return 1;
            }
            words[n++] = a;
            words[n++] = eq + 1;
        } else {
            words[n++] = a;
            value_next = takes_value(a);
        }
    }
    words[n] = NULL;
    int rc = parse_words(n, words, o, first_positional);
    free(words);
    return rc;
}
