/* The `transcribe` binary (path in argv[1]) on a tiny synthetic Granite NAR file (gn_synth.h)
 * and jfk.wav: the plain text is the library's for F32, F16 and Q8_0 weights; SRT has one cue
 * over the clip; -l fr runs (a valid hint is ignored), -l ja, translation and word timestamps
 * fail before any audio is decoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "gn_synth.h"
#include "test_util.h"
#include "transcribe.h"

#define GN_CLIP TR_CORPUS_DIR "/samples/jfk.wav"

static const char *g_bin;
static char g_model[512];
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *flags) {
    return tr_cli_transcribe(g_bin, g_model, flags, GN_CLIP, g_out, sizeof g_out, g_err,
                             sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    snprintf(g_model, sizeof g_model, "%s/gn_cli_%d.gguf", TR_BINARY_DIR, (int)getpid());
    const int types[3] = {TR_F32, TR_F16, TR_Q8_0};
    for (int f = 0; f < 3; f++) {
        gn_synth_cfg c = gn_synth_default();
        c.lin_type = types[f];
        CHECK(gn_synth_write(g_model, &c));
        char *want = tr_cli_library_text(g_model, GN_CLIP);
        CHECK_MSG(want != NULL, "%s: no library text", tr_type_name(types[f]));
        int rc = run("");
        CHECK_MSG(rc == 0 && want && !strcmp(g_out, want), "%s: exit %d [%s] want [%s] %s",
                  tr_type_name(types[f]), rc, g_out, want ? want : "", g_err);
        if (f == 0) {
            printf("text: %s\n", g_out);
            rc = run("-f srt");
            CHECK_MSG(rc == 0 && !strncmp(g_out, "1\n", 2) && strstr(g_out, "00:00:11,000") &&
                          !strstr(g_out, "\n2\n"),
                      "srt: exit %d %.400s", rc, g_out);
            rc = run("-l fr");
            CHECK_MSG(rc == 0 && want && !strcmp(g_out, want), "-l fr: exit %d", rc);
            CHECK(run("-l ja") != 0);
            CHECK(run("-l en --target-language de") != 0);
            CHECK(run("-f json --timestamps word") != 0);
        }
        free(want);
    }
    remove(g_model);
    return TEST_DONE();
}
