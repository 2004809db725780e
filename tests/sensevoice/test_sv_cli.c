/* The `transcribe` binary (path in argv[1]) on the tiny SenseVoice reference
 * files: every dtype prints the golden text of decode.json (tags stripped),
 * JSON carries the detected language, the emotion and audio event, and no
 * timestamps, --raw-tokens keeps
 * the tags (with --itn and -l en: the withitn tag), and a language the
 * model lacks fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "sv_test.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *dtype, const char *flags) {
    char model[512];
    snprintf(model, sizeof model, "%s/sensevoice-tiny-ref-%s.gguf", SV_DIR, dtype);
    return tr_cli_transcribe(g_bin, model, flags, SV_CLIP, g_out, sizeof g_out, g_err,
                             sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    sv_golden g, gi;
    CHECK(sv_golden_load("F32_auto_woitn", &g));
    CHECK(sv_golden_load("F32_en_withitn", &gi));
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    for (int d = 0; d < 3; d++) {
        int rc = run(dtypes[d], "");
        CHECK_MSG(rc == 0 && !strcmp(g_out, g.text), "%s: exit %d [%s] want [%s] %s", dtypes[d], rc,
                  g_out, g.text, g_err);
    }
    int rc = run("F32", "-f json");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"language\":\"en\"") &&
                  strstr(g_out, "\"timestamps\":\"none\"") && !strstr(g_out, "<|") &&
                  strstr(g_out, "\"emotion\":\"NEUTRAL\",\"audio_event\":\"Speech\""),
              "json: exit %d %s", rc, g_out);
    rc = run("F32", "--itn -l en --raw-tokens");
    CHECK_MSG(rc == 0 && !strcmp(g_out, gi.raw), "raw tokens: exit %d [%s] want [%s]", rc, g_out,
              gi.raw);
    CHECK(run("F32", "-l fr") != 0);
    return TEST_DONE();
}
