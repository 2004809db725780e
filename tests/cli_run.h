/* Test helper: runs one shell command line with stdin from /dev/null and
 * captures its stdout and stderr (through temporary files in the build
 * tree) into caller buffers, NUL-terminated and truncated to fit. Returns
 * the exit status, or -1 when the command did not exit normally. */
#ifndef TR_TESTS_CLI_RUN_H
#define TR_TESTS_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void tr_cli_slurp(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static int tr_cli_run(const char *cmdline, char *out, size_t out_cap, char *err, size_t err_cap) {
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

#endif
