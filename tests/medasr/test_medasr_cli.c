/* The `transcribe` binary (path in argv[1]) on a tiny synthetic MedASR file (ma_synth.h) and
 * jfk.wav: the plain text is the library's for F32, F16 and Q8_0 weights; JSON says token
 * timestamps and lists 40 ms token rows with --tokens; SRT has the one cue; -l en runs and
 * -l fr and translation fail before any audio is decoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "ma_synth.h"
#include "test_util.h"
#include "transcribe.h"

#define MA_CLIP TR_CORPUS_DIR "/samples/jfk.wav"

static const char *g_bin;
static char g_model[512];
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *flags) {
    return tr_cli_transcribe(g_bin, g_model, flags, MA_CLIP, g_out, sizeof g_out, g_err,
                             sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    snprintf(g_model, sizeof g_model, "%s/ma_cli_%d.gguf", TR_BINARY_DIR, (int)getpid());
    const struct {
        const char *tag;
        int lin, conv;
    } files[] = {{"F32", TR_F32, TR_F32}, {"F16", TR_F16, TR_F16}, {"Q8_0", TR_Q8_0, TR_F16}};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        ma_synth_cfg c = ma_synth_default();
        c.max_pos = 10000; /* the 11 s clip in one pass */
        c.lin_type = files[f].lin;
        c.conv_type = files[f].conv;
        CHECK(ma_synth_write(g_model, &c));
        char *want = tr_cli_library_text(g_model, MA_CLIP);
        CHECK_MSG(want && *want, "%s: no library text", files[f].tag);
        int rc = run("");
        CHECK_MSG(rc == 0 && want && !strcmp(g_out, want), "%s: exit %d [%s] want [%s] %s",
                  files[f].tag, rc, g_out, want ? want : "", g_err);
        if (f == 0) {
            printf("text: %s\n", g_out);
            rc = run("-f json --tokens");
            CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"token\"") &&
                          strstr(g_out, "\"tokens\"") && strstr(g_out, "\xE2\x96\x81"),
                      "json: exit %d %.400s", rc, g_out);
            rc = run("-f srt");
            CHECK_MSG(rc == 0 && !strncmp(g_out, "1\n", 2) && strstr(g_out, " --> "),
                      "srt: exit %d %.400s", rc, g_out);
            rc = run("-l en");
            CHECK_MSG(rc == 0 && want && !strcmp(g_out, want), "-l en: exit %d", rc);
            CHECK(run("-l fr") != 0);
            CHECK(run("-l en --target-language de") != 0);
        }
        free(want);
    }
    remove(g_model);
    return TEST_DONE();
}
