/* The `transcribe` binary (path in argv[1]) on the tiny Fun-ASR-Nano
 * reference files (tests/data/funasr_nano): every file prints the golden
 * text, JSON has one untimed cue over the clip and no timestamps, a hint and
 * --itn reach the prompt (same chain text), a language the model lacks
 * fails, and --spec-k-drafts gives the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

#define FN_DIR TR_SOURCE_DIR "/tests/data/funasr_nano"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *file, const char *flags) {
    char model[512];
    snprintf(model, sizeof model, "%s/%s", FN_DIR, file);
    return tr_cli_transcribe(g_bin, model, flags, FN_DIR "/clip.wav", g_out, sizeof g_out, g_err,
                             sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    /* tests/data/funasr_nano/README.md: the successor chain's text for every run and file */
    static const char want[] = "And so my fellow Americans, ask not what your country can do for "
                               "you. \xE5\xBC\x80\xE9\xA5\xAD\xE6\x97\xB6\xE9\x97\xB4\xE6\x97\xA9"
                               "\xE4\xB8\x8A\xE4\xB9\x9D\xE7\x82\xB9";
    static const char *const files[4] = {
        "fun-asr-nano-tiny-ref-F32.gguf", "fun-asr-nano-tiny-ref-F16.gguf",
        "fun-asr-nano-tiny-ref-Q8_0.gguf", "fun-asr-mlt-nano-tiny-ref-F16.gguf"};
    for (int i = 0; i < 4; i++) {
        int rc = run(files[i], "");
        CHECK_MSG(rc == 0 && !strcmp(g_out, want), "%s: exit %d [%s] %s", files[i], rc, g_out,
                  g_err);
    }
    int rc = run(files[0], "-f json");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"none\"") &&
                  strstr(g_out, "\"t0_ms\":0,\"t1_ms\":2500"),
              "json: exit %d %s", rc, g_out);
    rc = run(files[0], "-l ja --itn");
    CHECK_MSG(rc == 0 && !strcmp(g_out, want), "hint: exit %d [%s]", rc, g_out);
    rc = run(files[1], "--spec-k-drafts 8");
    CHECK_MSG(rc == 0 && !strcmp(g_out, want), "spec: exit %d [%s]", rc, g_out);
    CHECK(run(files[0], "-l de") != 0);
    CHECK(run(files[0], "-t") != 0);
    return TEST_DONE();
}
