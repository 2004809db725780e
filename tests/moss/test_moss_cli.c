/* MOSS through the `transcribe` binary (path in argv[1]) on the reference
 * tiny model: speaker-tagged txt, and the vocabulary flags (--vocabulary,
 * --vocabulary-file with comments and commas, the warning on a file
 * without the instruction split, an unreadable file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "test_util.h"

#define DATA    TR_SOURCE_DIR "/tests/data/moss"
#define MODEL   DATA "/tiny/moss-tiny-ref-F16.gguf"
#define NOSPLIT DATA "/tiny/moss-tiny-loop-nosplit-F16.gguf"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *env, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env, g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_moss_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    char args[4096], list[512];
    snprintf(args, sizeof args, "-q -m '%s' --diarize '%s'", MODEL, DATA "/mix.wav");
    CHECK_MSG(run("", args) == 0 &&
                  strncmp(g_out, "[S1] Welcome back to the show.\n[S2] ", 36) == 0,
              "txt: %s", g_out);

    /* the info line names how many terms reached the instruction (3: the
     * empty one is dropped) */
    snprintf(args, sizeof args, "-m '%s' --vocabulary 'Kubernetes, Anthropic,,Dr. Nguyen' '%s'",
             MODEL, DATA "/mix.wav");
    CHECK_MSG(run("TRANSCRIBE_DEBUG=1", args) == 0 &&
                  strstr(g_err, "moss: 3 vocabulary terms in the instruction"),
              "--vocabulary: %s", g_err);
    snprintf(list, sizeof list, "%s/moss_cli_vocab_%d.txt", TR_BINARY_DIR, (int)getpid());
    FILE *f = fopen(list, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "# names\nKubernetes\r\n  Anthropic , Dr. Nguyen\n\n");
        fclose(f);
        snprintf(args, sizeof args, "-m '%s' --vocabulary-file '%s' --vocabulary extra '%s'", MODEL,
                 list, DATA "/mix.wav");
        CHECK_MSG(run("TRANSCRIBE_DEBUG=1", args) == 0 &&
                      strstr(g_err, "moss: 4 vocabulary terms in the instruction"),
                  "--vocabulary-file: %s", g_err);
        remove(list);
    }
    snprintf(args, sizeof args, "-m '%s' --vocabulary-file /nonexistent/v.txt '%s'", MODEL,
             DATA "/mix.wav");
    CHECK_MSG(run("", args) == 1 && strstr(g_err, "--vocabulary-file: cannot read"), "%s", g_err);
    snprintf(args, sizeof args, "-m '%s' --vocabulary 'a, b' '%s'", NOSPLIT, DATA "/we33.wav");
    CHECK_MSG(run("", args) == 0 && strstr(g_err, "takes no vocabulary hints; the 2 terms are "
                                                  "ignored"),
              "no split: %s", g_err);
    return TEST_DONE();
}
