/* The `transcribe` binary (path in argv[1]) on the Moonshine reference
 * files (tests/data/moonshine): every dtype prints the golden text; JSON
 * says "timestamps":"none" and carries the one segment spanning the clip;
 * SRT has one cue over the clip; the 894-sample clip fails with the
 * reason; a language outside general.languages fails; a batch of two
 * files through --batch-size prints both texts; the 194-token clip says it
 * was truncated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_files.h"
#include "test_util.h"

#define MN_DATA TR_SOURCE_DIR "/tests/data/moonshine"
#define GOLDEN  "And so my fellow Americans, ask not what your country can do for you café."

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *dtype, const char *flags, const char *clip) {
    char model[512], audio[512];
    snprintf(model, sizeof model, "%s/tiny/moonshine-tiny-ref-%s.gguf", MN_DATA, dtype);
    snprintf(audio, sizeof audio, "%s/%s.wav", MN_DATA, clip);
    return tr_cli_transcribe(g_bin, model, flags, audio, g_out, sizeof g_out, g_err, sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    if (!tr_test_file_exists(MN_DATA "/tiny/moonshine-tiny-ref-F32.gguf")) {
        printf("skipped: the Moonshine reference files are missing\n");
        return 0;
    }
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    for (int d = 0; d < 3; d++) {
        int rc = run(dtypes[d], "", "clip");
        CHECK_MSG(rc == 0 && !strcmp(g_out, GOLDEN), "%s: exit %d [%s] %s", dtypes[d], rc, g_out,
                  g_err);
    }
    int rc = run("F32", "-f json", "clip");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"none\"") &&
                  strstr(g_out, "\"segments\":[{\"t0_ms\":0,\"t1_ms\":2500,\"text\":\"" GOLDEN),
              "json: exit %d %s", rc, g_out);
    rc = run("Q8_0", "-f srt", "clip");
    CHECK_MSG(rc == 0 && strstr(g_out, "00:00:00,000 --> 00:00:02,500\n" GOLDEN), "srt: exit %d %s",
              rc, g_out);
    rc = run("F32", "", "clip_short");
    CHECK_MSG(rc != 0 && strstr(g_err, "too short") && strstr(g_err, "895"), "short: %d %s", rc,
              g_err);
    CHECK(run("F32", "-l de", "clip") != 0);
    CHECK(run("F32", "-l en", "clip") == 0 && !strcmp(g_out, GOLDEN));
    /* two files decoded as one batch */
    char flags[1024];
    snprintf(flags, sizeof flags, "--batch-size 2 '%s/clip.wav'", MN_DATA);
    rc = run("F16", flags, "clip");
    const char *second = strstr(g_out, GOLDEN);
    CHECK_MSG(rc == 0 && second && strstr(second + 1, GOLDEN), "batch: exit %d [%s] %s", rc, g_out,
              g_err);
    /* a truncated decode is reported (the CLI's rule for OUTPUT_TRUNCATED) */
    rc = run("F32", "", "clip_min");
    CHECK_MSG(strstr(g_err, "truncated"), "clip_min: exit %d %s", rc, g_err);
    return TEST_DONE();
}
