/* Runs the `transcribe` binary (path in argv[1]) on bad inputs and checks
 * exit codes and messages (docs/cli.md §1, §5); with the Whisper test model it
 * also checks every output format. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../api/fixtures.h"
#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

/* Runs `env bin args` through the shell; returns the exit code and leaves
 * stdout/stderr in g_out/g_err. */
static int run(const char *env, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env ? env : "", g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

#define EXPECT_RUN(env, args, code, stream, needle)                                                \
    do {                                                                                           \
        int rc_ = run(env, args);                                                                  \
        CHECK_MSG(rc_ == (code), "`%s`: exit %d, want %d; stderr: %s", args, rc_, code, g_err);    \
        CHECK_MSG(strstr(stream, needle) != NULL, "`%s`: missing \"%s\" in: %s", args, needle,     \
                  stream);                                                                         \
    } while (0)

static void bad_inputs(void) {
    EXPECT_RUN(NULL, "", 1, g_err, "error: missing audio file or --batch");
    EXPECT_RUN(NULL, "-h", 0, g_out, "usage: ");
    CHECK(strstr(g_out, "--detect-language") && strstr(g_out, "--print-progress"));
    /* The first options block is one table: a description starts at column
     * 28 wherever the option leaves room for it (a long option name pushes
     * its own line only). */
    for (const char *l = g_out; *l && strncmp(l, "  long audio:", 13) != 0;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len > 3 && (strncmp(l, "  -", 3) == 0 || strncmp(l, "      --", 8) == 0)) {
            size_t i = 2;
            while (i < len && l[i] == ' ') i++;
            while (i + 1 < len && !(l[i] == ' ' && l[i + 1] == ' ')) i++; /* the option */
            size_t j = i;
            while (j < len && l[j] == ' ') j++;
            if (i < 26 && j < len)
                CHECK_MSG(j == 28, "--help: description at column %zu: %.*s", j, (int)len, l);
        }
        l += len + (e ? 1 : 0);
    }
    EXPECT_RUN(NULL, "--bogus x.wav", 1, g_err, "error: unknown option '--bogus'");
    /* A bad option: one line and a hint, not the whole usage text. */
    CHECK(strstr(g_err, "--help' for the options") && !strstr(g_err, "usage:"));
    EXPECT_RUN(NULL, "--version", 0, g_out, "transcribe 0.");
    /* whisper.cpp / faster-whisper habits get the equivalent flag. */
    EXPECT_RUN(NULL, "-otxt x.wav", 1, g_err,
               "unknown option '-otxt'; here: --output-dir DIR --output-format txt");
    EXPECT_RUN(NULL, "--output_dir d x.wav", 1, g_err, "here: --output-dir DIR");
    EXPECT_RUN(NULL, "-pp x.wav", 1, g_err, "here: --print-progress");
    /* faster-whisper's VAD filter is our --vad, not the pause splitter. */
    EXPECT_RUN(NULL, "--vad_filter x.wav", 1, g_err, "here: --vad (transcribe only the speech");
    EXPECT_RUN(NULL, "-t 4 x.wav", 1, g_err,
               "-t means --translate here; for threads use --threads 4");
    EXPECT_RUN(NULL, "-f samples/jfk.wav", 1, g_err, "-f is --format here");
    /* -q: only error lines, not the model line (whichever model is found). */
    CHECK(run(NULL, "-q /nonexistent/a.wav") == 1 && !strstr(g_err, "using ") &&
          !strstr(g_err, "[info]"));
    /* Numbers are checked: junk, negative, zero and huge values are errors. */
    EXPECT_RUN(NULL, "--threads abc x.wav", 1, g_err, "--threads must be an integer from 1");
    EXPECT_RUN(NULL, "--threads -3 x.wav", 1, g_err, "(got '-3')");
    EXPECT_RUN(NULL, "--threads 0 x.wav", 1, g_err, "(got '0')");
    EXPECT_RUN(NULL, "--threads 100000 x.wav", 1, g_err, "(got '100000')");
    /* Empty standard input: said plainly, no temporary file named. */
    EXPECT_RUN(NULL, "-q - </dev/null", 1, g_err, "standard input is empty (0 bytes)");
    CHECK(strstr(g_err, "transcribe-stdin") == NULL && strstr(g_err, "invalid argument") == NULL);
    /* Too many threads are capped with a warning that -q silences. */
    CHECK(run(NULL, "--threads 999 /nonexistent/a.wav") == 1 &&
          strstr(g_err, "warning: --threads 999"));
    CHECK(run(NULL, "-q --threads 999 /nonexistent/a.wav") == 1 && !strstr(g_err, "warning"));
    EXPECT_RUN(NULL, "-r 2x x.wav", 1, g_err, "-r must be an integer from 1");
    EXPECT_RUN(NULL, "-r 0 x.wav", 1, g_err, "-r must be an integer from 1");
    EXPECT_RUN(NULL, "--batch-size -2 x.wav", 1, g_err, "--batch-size must be an integer");
    EXPECT_RUN(NULL, "--temperature hot x.wav", 1, g_err, "--temperature must be a number");
    EXPECT_RUN(NULL, "--spec-k-drafts -2 x.wav", 1, g_err, "--spec-k-drafts must be an integer");
    EXPECT_RUN(NULL, "--stream-buf-left-ms 1e3 x.wav", 1, g_err, "(got '1e3')");
    /* Subtitles of several inputs on one stream would restart their numbering. */
    EXPECT_RUN(NULL, "-f srt a.wav b.wav", 1, g_err, "use --output-dir DIR");
    EXPECT_RUN(NULL, "--output-format srt a.wav", 1, g_err, "--output-format needs --output-dir");
    EXPECT_RUN(NULL, "--output-dir . --output-format srt,doc a.wav", 1, g_err,
               "--output-format takes a comma list");
    EXPECT_RUN(NULL, "- -", 1, g_err, "standard input ('-') can be read only once");
    /* --flag=VALUE is --flag VALUE; a flag without a value takes none */
    EXPECT_RUN(NULL, "--threads=0 x.wav", 1, g_err, "--threads must be an integer from 1");
    EXPECT_RUN(NULL, "--quiet=1 x.wav", 1, g_err, "error: --quiet takes no value (got '1')");
    EXPECT_RUN(NULL, "--format=docx x.wav", 1, g_err, "unknown --format 'docx'");
    /* after --, words are audio files, whatever they look like */
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf -- --bogus", 1, g_err, "file not found");
    CHECK(strstr(g_err, "unknown option") == NULL);
    /* flags of one mode, refused outside it */
    EXPECT_RUN(NULL, "--realtime x.wav", 1, g_err, "--realtime paces a --stream input");
    EXPECT_RUN(NULL, "--batch-jsonl x.wav", 1, g_err, "--batch-jsonl prints a --batch list");
    EXPECT_RUN(NULL, "--stream -f report x.wav", 1, g_err, "-f report describes a whole-file run");
    EXPECT_RUN(NULL, "-q --backend cuda x.wav", 1, g_err,
               "--backend cuda is not available in this build");
    EXPECT_RUN(NULL, "x.wav -m", 1, g_err, "error: -m requires an argument");
    EXPECT_RUN(NULL, "--timestamps sometimes x.wav", 1, g_err, "--timestamps must be");
    EXPECT_RUN(NULL, "-f docx x.wav", 1, g_err, "unknown --format 'docx'");
    EXPECT_RUN(NULL, "--kv-type q4 x.wav", 1, g_err, "--kv-type must be");
    EXPECT_RUN(NULL, "--n-ctx -1 x.wav", 1, g_err, "--n-ctx must be an integer from 0");
    EXPECT_RUN(NULL, "--device abc x.wav", 1, g_err, "--device must be an integer index >= 0");
    EXPECT_RUN(NULL, "--stream-chunk-ms 0 x.wav", 1, g_err,
               "--stream-chunk-ms must be an integer from 1");
    EXPECT_RUN(NULL, "--stream-chunk-ms 100 -r 2 x.wav", 1, g_err, "cannot be combined");
    EXPECT_RUN(NULL, "--batch list.txt x.wav", 1, g_err, "cannot combine");
    EXPECT_RUN(NULL, "--list-devices", 0, g_out, "1 compute device(s):");
    /* It names the kernels in use: forced to the portable ones, those. */
    EXPECT_RUN("TRANSCRIBE_CPU=scalar", "--list-devices", 0, g_out, "(portable C kernels)");
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        EXPECT_RUN("TRANSCRIBE_CPU=avx2", "--list-devices", 0, g_out, "(AVX2 + FMA kernels)");
    }
#endif
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf x.wav", 1, g_err, "file not found");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf --device 7 x.wav", 1, g_err,
               "error: --device index 7 is not available");
    EXPECT_RUN("TRANSCRIBE_MODEL=/nonexistent/env.gguf", "x.wav", 1, g_err,
               "using model /nonexistent/env.gguf (from TRANSCRIBE_MODEL)");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf -o /nonexistent-dir/out.txt x.wav", 1, g_err,
               "error: cannot open /nonexistent-dir/out.txt for writing");
    EXPECT_RUN(
        NULL, "-m /nonexistent/model.gguf --batch /nonexistent/list.txt", 1, g_err,
        "error: cannot load model: '/nonexistent/model.gguf' does not exist (file not found)");
    /* one line per failed load: the library's reason on the CLI's line, not both */
    CHECK(strstr(g_err, "[error]") == NULL);

    char model[512], args[1200];
    snprintf(model, sizeof model, "%s/cli_test_voxtral_realtime.gguf", TR_BINARY_DIR);
    CHECK(tr_fixture_write_gguf(model, "voxtral_realtime") == 0);
    /* every published architecture has a loader: one without its keys is a load error */
    snprintf(args, sizeof args, "-m '%s' x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_err, "gguf load error");
    CHECK(strstr(g_err, "[error]") == NULL && strstr(g_err, "error: cannot load model") != NULL);
    snprintf(args, sizeof args, "-m '%s' -f report x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_out, "-> gguf load error");
    remove(model);
}

/* The last "t1_ms":N or "HH:MM:SS,mmm" end time in s, in ms (-1: none). */
static long last_json_t1(const char *s) {
    long t = -1;
    for (const char *p = strstr(s, "\"t1_ms\":"); p; p = strstr(p + 1, "\"t1_ms\":")) {
        t = atol(p + 8);
    }
    return t;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* -o, --output-dir/--output-format, write errors, standard input, and one
 * set of cues behind SRT, VTT and JSON, inside the audio's length. */
static void outputs(const char *model, const char *wav) {
    char args[4096], dir[512], file[700];
    static char srt[1 << 16], body[1 << 16];
    snprintf(args, sizeof args, "-q -m '%s' -f srt '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, " --> ");
    snprintf(srt, sizeof srt, "%s", g_out);
    /* jfk.wav is 11 s: no cue may end after it. */
    const char *last = strrchr(srt, '>');
    CHECK_MSG(last && strncmp(last + 2, "00:00:1", 7) == 0 && atoi(last + 8) <= 11,
              "srt ends past the audio: %s", srt);

    snprintf(dir, sizeof dir, "%s/cli_test_out_%d", TR_BINARY_DIR, (int)getpid());
    snprintf(file, sizeof file, "%s.srt", dir);
    snprintf(args, sizeof args, "-q -m '%s' -f srt -o '%s' '%s'", model, file, wav);
    EXPECT_RUN(NULL, args, 0, g_out, " --> ");
    tr_cli_slurp(file, body, sizeof body);
    CHECK_MSG(strcmp(body, srt) == 0, "-o wrote: %s", body); /* -o writes the -f format */
    remove(file);

    snprintf(args, sizeof args, "mkdir -p '%s'", dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args,
             "-q -m '%s' --output-dir '%s' --output-format txt,srt,vtt,json '%s'", model, dir, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\n"); /* stdout: the default txt */
    snprintf(file, sizeof file, "%s/jfk.srt", dir);
    tr_cli_slurp(file, body, sizeof body);
    CHECK_MSG(strcmp(body, srt) == 0, "jfk.srt: %s", body);
    snprintf(file, sizeof file, "%s/jfk.txt", dir);
    tr_cli_slurp(file, body, sizeof body);
    CHECK(strcmp(body, g_out) == 0);
    snprintf(file, sizeof file, "%s/jfk.vtt", dir);
    tr_cli_slurp(file, body, sizeof body);
    CHECK(strncmp(body, "WEBVTT\n\n", 8) == 0 && count(body, " --> ") == count(srt, " --> "));
    snprintf(file, sizeof file, "%s/jfk.json", dir);
    tr_cli_slurp(file, body, sizeof body);
    /* JSON carries the same cues as the subtitles, inside the audio. */
    const char *cues = strstr(body, "\"cues\":[");
    const char *segs = strstr(body, "\"segments\":[");
    CHECK_MSG(cues && segs && cues < segs, "json: %s", body);
    if (cues && segs) {
        char only[1 << 15];
        size_t n = (size_t)(segs - cues) < sizeof only ? (size_t)(segs - cues) : sizeof only - 1;
        memcpy(only, cues, n);
        only[n] = '\0';
        CHECK_MSG(count(only, "\"t0_ms\":") == count(srt, " --> "), "cues: %s", only);
    }
    CHECK_MSG(last_json_t1(body) >= 0 && last_json_t1(body) <= 11000, "json: %s", body);
    /* Several inputs, on the command line or in a --batch list: one set of
     * files per input, named by its stem. */
    char list[700], wav2[1024];
    snprintf(wav2, sizeof wav2, "%s/samples/ja.wav", TR_CORPUS_DIR);
    snprintf(list, sizeof list, "%s/inputs.list", dir);
    FILE *lf = fopen(list, "w");
    CHECK(lf != NULL);
    if (lf) {
        fprintf(lf, "%s\n%s\n", wav, wav2);
        fclose(lf);
    }
    static const char *const modes[] = {"'%s' '%s'", "--batch '%s'"};
    for (int mode = 0; mode < 2; mode++) {
        snprintf(file, sizeof file, "%s/ja.srt", dir);
        remove(file);
        char inputs[2200];
        if (mode == 0)
            snprintf(inputs, sizeof inputs, modes[0], wav, wav2);
        else
            snprintf(inputs, sizeof inputs, modes[1], list);
        snprintf(args, sizeof args, "-q -m '%s' --output-dir '%s' --output-format srt,json %s",
                 model, dir, inputs);
        EXPECT_RUN(NULL, args, 0, g_out, "");
        tr_cli_slurp(file, body, sizeof body);
        CHECK_MSG(strncmp(body, "1\n00:00:0", 9) == 0, "mode %d: ja.srt: %s", mode, body);
        snprintf(file, sizeof file, "%s/jfk.srt", dir);
        tr_cli_slurp(file, body, sizeof body);
        CHECK_MSG(strcmp(body, srt) == 0, "mode %d: jfk.srt: %s", mode, body);
        snprintf(file, sizeof file, "%s/ja.json", dir);
        tr_cli_slurp(file, body, sizeof body);
        CHECK_MSG(strstr(body, "\"cues\":[") != NULL, "mode %d: ja.json: %s", mode, body);
    }
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    CHECK(system(args) == 0);

    /* A failed write to stdout is an error, with a message. */
    snprintf(args, sizeof args, "{ '%s' -q -m '%s' '%s' >/dev/full; }", g_bin, model, wav);
    int rc = tr_cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK_MSG(rc == 1 && strstr(g_err, "cannot write to standard output"), "rc %d: %s", rc, g_err);
    /* '-' reads the audio from standard input. */
    snprintf(args, sizeof args, "{ '%s' -q -m '%s' -f json - <'%s'; }", g_bin, model, wav);
    rc = tr_cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK_MSG(rc == 0 && strstr(g_out, "\"duration\":11.000"), "rc %d: %s", rc, g_err);
    /* More threads than 4x the cores are capped, with a warning. */
    if (sysconf(_SC_NPROCESSORS_ONLN) * 4 < 1000) {
        snprintf(args, sizeof args, "-m '%s' --threads 1000 '%s'", model, wav);
        EXPECT_RUN(NULL, args, 0, g_err, "warning: --threads 1000 is more than 4x");
    }
}

/* A 16 kHz mono 16-bit WAV of n silent samples. */
static void write_wav(const char *path, int n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char h[44] =
        "RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0\x02\0\x10\0data";
    unsigned data = (unsigned)n * 2, riff = 36 + data;
    for (int i = 0; i < 4; i++) {
        h[4 + i] = (unsigned char)(riff >> (8 * i));
        h[40 + i] = (unsigned char)(data >> (8 * i));
    }
    fwrite(h, 1, 44, f);
    for (int i = 0; i < n; i++) fwrite("\0\0", 1, 2, f);
    fclose(f);
}

/* The input rule (README): a directory, an empty file or audio with no
 * samples is an error with a reason; any sample at all is transcribed. And
 * options checked against the model before any audio is read. */
static void input_rule(const char *model) {
    char path[512], args[2048];
    snprintf(path, sizeof path, "%s/cli_test_in_%d", TR_BINARY_DIR, (int)getpid());
    snprintf(args, sizeof args, "mkdir -p '%s'", path);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "-q -m '%s' '%s'", model, path);
    EXPECT_RUN(NULL, args, 1, g_err, "it is a directory");
    rmdir(path);
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
    EXPECT_RUN(NULL, args, 1, g_err, "the file is empty (0 bytes)");
    write_wav(path, 0);
    EXPECT_RUN(NULL, args, 1, g_err, "cannot read audio");
    /* the library's reason is on the error line itself, not only on a log line above it */
    char line[1024];
    snprintf(line, sizeof line,
             "error: cannot read audio '%s': WAV file is empty (no sample frames)\n", path);
    CHECK_MSG(strstr(g_err, line) != NULL, "%s", g_err);
    write_wav(path, 100);
    CHECK(truncate(path, 30) == 0); /* cut inside its header (the fmt chunk) */
    EXPECT_RUN(NULL, args, 1, g_err, "cannot read audio");
    const char *cut = "the WAV header is cut short (its fmt chunk runs past the end of the file)";
    snprintf(line, sizeof line, "error: cannot read audio '%s': %s\n", path, cut);
    CHECK_MSG(strstr(g_err, line) != NULL, "%s", g_err);
    /* the same from stdin (a subshell: its own redirection wins over the helper's /dev/null) */
    snprintf(args, sizeof args, "( '%s' -q -m '%s' - < '%s' )", g_bin, model, path);
    CHECK(tr_cli_run(args, g_out, sizeof g_out, g_err, sizeof g_err) == 1);
    snprintf(line, sizeof line, "error: cannot read audio '-': %s\n", cut);
    CHECK_MSG(strstr(g_err, line) != NULL, "%s", g_err);
    char list[600];
    snprintf(list, sizeof list, "%s.list", path); /* and in a batch's JSON line */
    FILE *lf = fopen(list, "w");
    CHECK(lf != NULL);
    if (lf) {
        fprintf(lf, "%s\n", path);
        fclose(lf);
    }
    snprintf(args, sizeof args, "-q -m '%s' --batch '%s' --batch-jsonl", model, list);
    EXPECT_RUN(NULL, args, 1, g_out, "\"error\":\"wav: the WAV header is cut short (");
    remove(list);
    snprintf(args, sizeof args, "-q -m '%s' '%s'", model, path);
    write_wav(path, 1);
    snprintf(args, sizeof args, "-m '%s' '%s'", model, path);
    EXPECT_RUN(NULL, args, 0, g_err, "only 1 sample (");
    remove(path);

    snprintf(args, sizeof args, "-q -m '%s' -l xx x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_err,
               "error: -l xx: unsupported language; this model's languages are: ");
    CHECK(strstr(g_err, " en, ") != NULL);
    /* a code in another case is the model's code (the library's match is exact) */
    snprintf(args, sizeof args, "-q -m '%s' -l EN --target-language DE x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_err,
               "--target-language DE: unsupported language; this model translates into: en");
    CHECK(strstr(g_err, "-l EN") == NULL); /* EN passed as en */
    snprintf(args, sizeof args, "-q -m '%s' -l en --target-language de x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_err,
               "--target-language de: unsupported language; this model translates into: en");
}

/* A --batch input the library refuses says why (transcribe_batch_error),
 * in a batched group as after a single run: Moonshine's gate on 50 samples. */
static void batch_reason(const char *wav) {
    char model[1024], tiny[512], list[600], args[2048];
    snprintf(model, sizeof model, "%s/tests/data/moonshine/tiny/moonshine-tiny-ref-F16.gguf",
             TR_SOURCE_DIR);
    if (access(model, R_OK) != 0) {
        printf("SKIP batch reasons: no %s\n", model);
        return;
    }
    snprintf(tiny, sizeof tiny, "%s/cli_test_short_%d.wav", TR_BINARY_DIR, (int)getpid());
    write_wav(tiny, 50);
    snprintf(list, sizeof list, "%s.list", tiny);
    FILE *f = fopen(list, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "%s\n%s\n%s\n", wav, tiny, wav);
    fclose(f);
    const char *why = "moonshine: input too short: 50 samples (3.12 ms); the conv stem needs";
    for (int size = 1; size <= 3; size += 2) {
        snprintf(args, sizeof args, "-q -m '%s' --batch '%s' --batch-size %d", model, list, size);
        EXPECT_RUN(NULL, args, 1, g_err, "batch: 2 ok, 0 truncated, 1 failed out of 3");
        char line[1024];
        snprintf(line, sizeof line, "[2/3] %s  ERROR: invalid argument: %s", tiny, why);
        CHECK_MSG(strstr(g_out, line) != NULL, "--batch-size %d: %s", size, g_out);
        snprintf(args, sizeof args, "-q -m '%s' --batch '%s' --batch-size %d --batch-jsonl", model,
                 list, size);
        EXPECT_RUN(NULL, args, 1, g_out, "\"error\":\"invalid argument\",\"reason\":\"");
        const char *r = strstr(g_out, "\"reason\""); /* on the failed line only */
        CHECK_MSG(strstr(g_out, why) != NULL && r && !strstr(r + 1, "\"reason\""), "%s", g_out);
    }
    remove(list);
    remove(tiny);
}

/* --detect-language: code and probability where the family scores its
 * detection (Whisper), the code alone where it only names it (Qwen3-ASR),
 * a clear error where the model cannot detect (the bundled English-only
 * Parakeet), and what it does not combine with. */
static void detect_language(const char *whisper, const char *wav) {
    char args[4096], golden[64] = "";
    EXPECT_RUN(NULL, "--detect-language -l en x.wav", 1, g_err, "drop -l en");
    EXPECT_RUN(NULL, "--detect-language -o out.txt x.wav", 1, g_err, "does not combine");
    /* The reference model's detection on jfk.wav (a random-weight model:
     * its language is whatever the golden says). */
    tr_cli_slurp(TR_SOURCE_DIR "/tests/data/whisper/tiny/jfk.auto.language.txt", golden,
                 sizeof golden);
    char *sp = strchr(golden, ' ');
    if (sp) *sp = '\0';
    snprintf(args, sizeof args, "-q -m '%s' --detect-language '%s'", whisper, wav);
    EXPECT_RUN(NULL, args, 0, g_out, " (p = 0.");
    CHECK_MSG(golden[0] && strncmp(g_out, golden, strlen(golden)) == 0 &&
                  g_out[strlen(golden)] == ' ',
              "detected: %s, golden %s", g_out, golden);
    CHECK(!strstr(g_out, "\n") || strchr(g_out, '\n') == g_out + strlen(g_out) - 1);
    snprintf(args, sizeof args, "-q -m '%s' --detect-language -f json '%s' '%s'", whisper, wav,
             wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\",\"language\":\"");
    CHECK_MSG(count(g_out, "\"probability\":0.") == 2, "%s", g_out);
    EXPECT_RUN(NULL, "-q --detect-language x.wav", 1, g_err,
               "error: --detect-language: this model cannot detect the language; it transcribes "
               "one language: en");
    /* The bundled CTC model decodes no tokens one by one: --spec-k-drafts is said to be
     * ignored, and the run goes on. */
    snprintf(args, sizeof args, "--spec-k-drafts 4 '%s'", wav);
    EXPECT_RUN(NULL, args, 0, g_err,
               "--spec-k-drafts 4: this model does not decode token by token");
    char qwen[1024];
    snprintf(qwen, sizeof qwen, "%s/tests/data/qwen3_asr/tiny/qwen3-asr-tiny-ref-F16.gguf",
             TR_SOURCE_DIR);
    if (access(qwen, R_OK) != 0) {
        printf("SKIP qwen3-asr detection: no %s\n", qwen);
        return;
    }
    snprintf(args, sizeof args, "-q -m '%s' --detect-language '%s'", qwen, wav);
    EXPECT_RUN(NULL, args, 0, g_out, " (probability n/a: ");
}

/* Progress from the library (encoder layers and windows), forced by
 * --print-progress when stderr is a file, rising to 100 %, for Parakeet
 * (the bundled model: one window) and Whisper (several 30 s windows). */
static void progress_lines(const char *whisper, const char *wav, const char *long_wav) {
    char args[4096];
    snprintf(args, sizeof args, "-q --print-progress '%s'", wav);
    EXPECT_RUN(NULL, args, 0, g_err, "progress: jfk.wav: ");
    CHECK_MSG(count(g_err, "progress: ") >= 3 && strstr(g_err, "11.0 / 11.0 s (100%)"), "%s",
              g_err);
    int last = -1;
    bool rising = true;
    for (const char *p = strstr(g_err, "progress: "); p; p = strstr(p + 1, "progress: ")) {
        const char *pct = strchr(p, '(');
        int v = pct ? atoi(pct + 1) : -1;
        rising = rising && v > last;
        last = v;
    }
    CHECK_MSG(rising && last == 100, "%s", g_err);
    /* Without the flag and with stderr not a terminal: no progress. */
    snprintf(args, sizeof args, "'%s'", wav);
    EXPECT_RUN(NULL, args, 0, g_err, "total=");
    CHECK(!strstr(g_err, "progress: "));
    snprintf(args, sizeof args, "-q -m '%s' --print-progress '%s'", whisper, long_wav);
    EXPECT_RUN(NULL, args, 0, g_err, "progress: whole-earth.wav: ");
    CHECK_MSG(count(g_err, "progress: ") >= 3 && strstr(g_err, "(100%)"), "%s", g_err);
}

/* Progress from inside the encoder and the decoder steps of the Canary and
 * causal-LM families (the tiny models of tests/data on a committed clip):
 * more than two distinct percentages, rising, ending at 100 %. */
static void family_progress(void) {
    static const char *const models[] = {
        "canary/tiny-canary/tiny-canary-ref-F16.gguf",
        "qwen3_asr/tiny/qwen3-asr-tiny-ref-F16.gguf",
        "granite/tiny-1b/granite-tiny-1b-ref-F16.gguf",
        "moss/tiny/moss-tiny-ref-F16.gguf",
    };
    char wav[1024], model[1024], args[4096];
    snprintf(wav, sizeof wav, "%s/tests/data/moss/mix.wav", TR_SOURCE_DIR);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        snprintf(model, sizeof model, "%s/tests/data/%s", TR_SOURCE_DIR, models[i]);
        snprintf(args, sizeof args, "-q -m '%s' --print-progress '%s'", model, wav);
        EXPECT_RUN(NULL, args, 0, g_err, "progress: mix.wav: ");
        int last = -1, n_values = 0;
        bool rising = true;
        for (const char *p = strstr(g_err, "progress: "); p; p = strstr(p + 1, "progress: ")) {
            const char *pct = strchr(p, '(');
            int v = pct ? atoi(pct + 1) : -1;
            rising = rising && v > last;
            last = v;
            n_values++;
        }
        CHECK_MSG(rising && n_values > 2 && last == 100, "%s: %s", models[i], g_err);
    }
}

/* Canary: a model without segment times still gives JSON the cue SRT has
 * (not t0 = t1 = 0), and the Whisper-only flags get one warning. */
static void canary(const char *wav) {
    char model[1024], args[4096];
    snprintf(model, sizeof model, "%s/tests/data/canary/tiny-canary/tiny-canary-ref-F16.gguf",
             TR_SOURCE_DIR);
    if (access(model, R_OK) != 0) {
        printf("SKIP canary checks: no %s\n", model);
        return;
    }
    snprintf(args, sizeof args, "-q -m '%s' -f json '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\"cues\":[{\"t0_ms\":0,\"t1_ms\":11000,");
    snprintf(args, sizeof args, "-m '%s' --temperature 0.5 --target-language de '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_err, "are Whisper options; this model ignores them");
    CHECK(strstr(g_err, "translating (as with -t)") != NULL);
    /* Canary cannot detect: without -l it says it used its default, and
     * never that it detected anything. */
    snprintf(args, sizeof args, "-m '%s' '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_err, "using en (model default)");
    CHECK(strstr(g_err, "detected language") == NULL);
}

/* Subtitle shaping on a model with word times (Parakeet TDT): one word per
 * cue with --max-line-chars 1, the same cues in SRT and JSON, and cues of
 * several words no longer than --max-cue-ms. */
static void shaping(const char *wav) {
    char model[1024], args[4096];
    snprintf(model, sizeof model, "%s/tests/data/parakeet/tiny-tdt/parakeet-tiny-tdt-F32.gguf",
             TR_SOURCE_DIR);
    if (access(model, R_OK) != 0) {
        printf("SKIP shaping checks: no %s\n", model);
        return;
    }
    snprintf(args, sizeof args, "-q -m '%s' -f json --max-line-chars 1 '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\"words\":[");
    const char *cues = strstr(g_out, "\"cues\":["), *segs = strstr(g_out, "\"segments\":[");
    const char *words = strstr(g_out, "\"words\":[");
    CHECK(cues && segs && words);
    if (!cues || !segs || !words) return;
    int n_cues = 0, n_words = count(words, "\"t0_ms\":");
    for (const char *p = strstr(cues, "\"t0_ms\":"); p && p < segs;
         p = strstr(p + 1, "\"t0_ms\":")) {
        n_cues++;
    }
    CHECK_MSG(n_cues == n_words && n_words > 2, "%d cues, %d words", n_cues, n_words);
    snprintf(args, sizeof args, "-q -m '%s' -f srt --max-line-chars 1 '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, " --> ");
    CHECK_MSG(count(g_out, " --> ") == n_words, "%s", g_out);

    snprintf(args, sizeof args, "-q -m '%s' -f json --max-cue-ms 2000 '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\"cues\":[");
    cues = strstr(g_out, "\"cues\":[");
    segs = strstr(g_out, "\"segments\":[");
    for (const char *p = strstr(cues, "{\"t0_ms\":"); p && p < segs;
         p = strstr(p + 1, "{\"t0_ms\":")) {
        long t0 = atol(p + 9);
        const char *q = strstr(p, "\"t1_ms\":"), *text = strstr(p, "\"text\":\"");
        long t1 = q ? atol(q + 8) : 0;
        const char *end = text ? strchr(text + 8, '"') : NULL;
        bool one_word = text && end && !memchr(text + 8, ' ', (size_t)(end - text - 8));
        CHECK_MSG(t1 - t0 <= 2000 || one_word, "cue %ld..%ld", t0, t1);
    }
    EXPECT_RUN(NULL, "--max-cue-ms 10 x.wav", 1, g_err, "--max-cue-ms must be an integer");
    EXPECT_RUN(NULL, "--max-line-chars x x.wav", 1, g_err, "--max-line-chars must be an integer");
}

static void with_model(const char *model, const char *wav) {
    char args[4096], txt[512];
    snprintf(txt, sizeof txt, "%s/cli_test_%d.txt", TR_BINARY_DIR, (int)getpid());

    snprintf(args, sizeof args, "-q -m '%s' '%s' -o '%s'", model, wav, txt);
    EXPECT_RUN(NULL, args, 0, g_out, "\n");
    static char file[1 << 16], golden[1 << 16];
    tr_cli_slurp(txt, file, sizeof file);
    CHECK(strcmp(file, g_out) == 0); /* -o gets the same transcript */
    remove(txt);
    /* The reference model's transcript of jfk.wav with default parameters. */
    tr_cli_slurp(TR_SOURCE_DIR "/tests/data/whisper/tiny/jfk.auto.text.txt", golden, sizeof golden);
    if (golden[0] && !getenv("TR_TEST_WHISPER_MODEL")) {
        size_t n = strlen(golden);
        while (n > 0 && (golden[n - 1] == '\n' || golden[n - 1] == ' ')) golden[--n] = '\0';
        CHECK_MSG(strncmp(g_out, golden, n) == 0 && g_out[n] == '\n', "txt: %s", g_out);
    }

    outputs(model, wav);
    snprintf(args, sizeof args, "-q -m '%s' -f json '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "{\"file\":");
    CHECK(strstr(g_out, "\"segments\":[{\"t0_ms\":") && strstr(g_out, "\"duration\":11.000"));
    snprintf(args, sizeof args, "-q -m '%s' -f srt '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "1\n00:00:");
    CHECK(strstr(g_out, ",") && strstr(g_out, " --> "));
    snprintf(args, sizeof args, "-q -m '%s' -f vtt --timestamps none '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "WEBVTT\n\n00:00:00.000 --> 00:00:11.000\n");
    snprintf(args, sizeof args, "-m '%s' -f report '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "run: ok\ntext: ");
    CHECK(strstr(g_out, "  max audio:  unbounded") && strstr(g_err, "timings: load="));
    CHECK_MSG(strstr(g_err, " ms  total=") && strstr(g_err, " ms  rtf="), "%s", g_err);
    snprintf(args, sizeof args, "-q -m '%s' --print-progress -r 2 '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "\n");
    snprintf(args, sizeof args, "-q -m '%s' '%s' /nonexistent/audio.wav", model, wav);
    EXPECT_RUN(NULL, args, 1, g_err, "cannot read audio '/nonexistent/audio.wav'");
    /* --diarize on a model that cannot: one warning, naming --diarizer */
    snprintf(args, sizeof args, "-m '%s' --diarize '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_err,
               "--diarize: this model does not tell speakers apart; "
               "--diarizer FILE");
    CHECK_MSG(!strstr(g_err, "diarize ignored"), "%s", g_err);
    /* word times (estimated, docs/formats/whisper.md §13): JSON words with their times */
    snprintf(args, sizeof args, "-q -m '%s' --timestamps word -f json '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "{\"file\":");
    CHECK_MSG(strstr(g_out, "\"timestamps\":\"word\"") && strstr(g_out, "\"words\":[{\"t0_ms\":") &&
                  strstr(g_out, "\"t1_ms\":"),
              "%s", g_out);

    char list[512];
    snprintf(list, sizeof list, "%s/cli_test_%d.list", TR_BINARY_DIR, (int)getpid());
    FILE *f = fopen(list, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "%s\r\n\n/nonexistent/b.wav  \n", wav);
    fclose(f);
    snprintf(args, sizeof args, "-q -m '%s' --batch '%s' --batch-jsonl", model, list);
    EXPECT_RUN(NULL, args, 1, g_out, "{\"type\":\"batch_header\",\"load_ms\":");
    CHECK(strstr(g_out, "{\"file\":\"/nonexistent/b.wav\",\"text\":\"\",\"error\":\"wav: "));
    snprintf(args, sizeof args, "-q -m '%s' --batch '%s'", model, list);
    EXPECT_RUN(NULL, args, 1, g_err, "batch: 1 ok, 0 truncated, 1 failed out of 2");
    CHECK(strstr(g_out, "[1/2] ") && strstr(g_out, "  text: "));
    remove(list);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PATH-TO-transcribe\n");
        return 2;
    }
    g_bin = argv[1];
    bad_inputs();
    family_progress();
    char model[1024], wav[1024];
    snprintf(model, sizeof model, "%s/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf",
             TR_SOURCE_DIR);
    snprintf(wav, sizeof wav, "%s/samples/jfk.wav", TR_CORPUS_DIR);
    const char *env = getenv("TR_TEST_WHISPER_MODEL"); /* local runs with another model */
    if (env && *env) snprintf(model, sizeof model, "%s", env);
    if (access(model, R_OK) == 0) input_rule(model);
    if (access(model, R_OK) == 0 && access(wav, R_OK) == 0) {
        with_model(model, wav);
        detect_language(model, wav);
        char long_wav[1024];
        snprintf(long_wav, sizeof long_wav, "%s/samples/whole-earth.wav", TR_CORPUS_DIR);
        progress_lines(model, wav, long_wav);
        canary(wav);
        shaping(wav);
        batch_reason(wav);
    } else {
        printf("SKIP output-format checks: no %s\n", model);
    }
    return TEST_DONE();
}
