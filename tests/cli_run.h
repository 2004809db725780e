/* Test helper for the CLI tests: tr_cli_run runs one shell command line
 * with stdin from /dev/null and captures its stdout and stderr (through
 * temporary files in the build tree) into caller buffers, NUL-terminated
 * and truncated to fit; it returns the exit status, or -1 when the command
 * did not exit normally. tr_cli_transcribe runs the `transcribe` binary on
 * one model and one audio file; tr_cli_library_text is what the library
 * itself gives for that pair, to compare the binary's output with. */
#ifndef TR_TESTS_CLI_RUN_H
#define TR_TESTS_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transcribe.h"

static inline void tr_cli_slurp(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static inline int tr_cli_run(const char *cmdline, char *out, size_t out_cap, char *err,
                             size_t err_cap) {
    char fo[512], fe[512], cmd[16384];
    snprintf(fo, sizeof fo, "%s/cli_run_%d.out", TR_BINARY_DIR, (int)getpid());
    snprintf(fe, sizeof fe, "%s/cli_run_%d.err", TR_BINARY_DIR, (int)getpid());
    snprintf(cmd, sizeof cmd, "%s >'%s' 2>'%s' </dev/null", cmdline, fo, fe);
    int st = system(cmd);
    tr_cli_slurp(fo, out, out_cap);
    tr_cli_slurp(fe, err, err_cap);
    remove(fo);
    remove(fe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Trailing newlines (\n, \r) of s removed in place. */
static inline void tr_cli_chomp(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
}

/* `'bin' -q -m 'model' flags 'audio'` through tr_cli_run, stdout chomped. */
static inline int tr_cli_transcribe(const char *bin, const char *model, const char *flags,
                                    const char *audio, char *out, size_t out_cap, char *err,
                                    size_t err_cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' %s '%s'", bin, model, flags, audio);
    int rc = tr_cli_run(cmd, out, out_cap, err, err_cap);
    tr_cli_chomp(out);
    return rc;
}

/* The library's full text of audio (any rate, read as 16 kHz) on model with
 * default parameters, malloc'ed; NULL when any step fails. */
static inline char *tr_cli_library_text(const char *model, const char *audio) {
    float *pcm = NULL;
    int n = 0;
    char *text = NULL;
    struct transcribe_session *s = NULL;
    if (transcribe_audio_load_file(audio, 16000, &pcm, &n) == TRANSCRIBE_OK &&
        transcribe_open(model, NULL, NULL, &s) == TRANSCRIBE_OK &&
        transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK)
        text = strdup(transcribe_full_text(s));
    transcribe_session_free(s);
    transcribe_audio_free(pcm);
    return text;
}

/* The transcribe binary's path, the program's first argument; NULL (after a
 * usage line on stderr) when it has none: the test then exits with 2. */
static inline const char *tr_cli_binary(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/transcribe\n", argv[0]);
        return NULL;
    }
    return argv[1];
}

#endif
