/* Voxtral through the `transcribe` binary (path in argv[1]) on the reference tiny
 * model (tests/data/voxtral): plain text, a language hint in the prompt, translation
 * to German, one segment in SRT and JSON, a hint outside the file's list, timestamps
 * finer than none, and a context too small for the clip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

#define DATA  TR_SOURCE_DIR "/tests/data/voxtral"
#define MODEL DATA "/voxtral-tiny-ref-F16.gguf"
#define CLIP  DATA "/clip.wav"
#define TEXT  "And so, my fellow Americans: ask not what your country can do for you. Voxtral 2507"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' %s '%s'", g_bin, MODEL, args, CLIP);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

static void expect(const char *args, int rc_want, const char *needle) {
    int rc = run(args);
    CHECK_MSG(rc == rc_want && strstr(g_out, needle), "%s: rc %d, out '%s', err '%s'", args, rc,
              g_out, g_err);
}

static void expect_fail(const char *args, const char *err_needle) {
    int rc = run(args);
    CHECK_MSG(rc != 0 && strstr(g_err, err_needle), "%s: rc %d, err '%s'", args, rc, g_err);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_voxtral_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    expect("", 0, TEXT "\n");
    expect("-l fr", 0, TEXT "\n");
    expect("--target-language de", 0, "Bonjour tout le monde!\n");
    expect("-f srt", 0, "1\n00:00:00,000 --> 00:00:02,500\n" TEXT "\n");
    expect("-f json", 0, "\"t0_ms\":0,\"t1_ms\":2500");
    expect_fail("-l ja", "languages are: en, fr, de, es, it, pt, nl, hi");
    expect_fail("--target-language ja", "translates into: en, fr, de, es, it, pt, nl, hi");
    expect_fail("--timestamps word", "timestamp");
    expect_fail("--n-ctx 827 --chunk off", "too long");
    expect("--n-ctx 828 --chunk off", 0, TEXT "\n");
    return TEST_DONE();
}
