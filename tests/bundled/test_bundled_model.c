/* The model shipped in models/ through the public API and the CLI (path of
 * the `transcribe` binary in argv[1]): it is an ordinary Parakeet CTC file,
 * it transcribes the bundled held-out synthetic sample to its reference
 * sentence, it runs on real speech without failing, and the CLI picks it up
 * (saying so on stderr) when -m is omitted. */
#include <stdio.h>
#include <string.h>

#include "bundled_path.h"
#include "cli_run.h"
#include "test_util.h"
#include "transcribe.h"

#define SAMPLE   TR_SOURCE_DIR "/samples/synth-heldout-klatt3.wav"
#define EXPECTED "it costs two thousand eight hundred and fifty nine dollars and fifty one cents"

static char g_out[1 << 16], g_err[1 << 16];

static void transcribe_file(struct transcribe_session *s, const char *wav, char *text, size_t cap) {
    float *pcm = NULL;
    int n = 0;
    text[0] = '\0';
    CHECK(transcribe_audio_load_file(wav, 16000, &pcm, &n) == TRANSCRIBE_OK);
    if (!pcm) return;
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    snprintf(text, cap, "%s", transcribe_full_text(s));
    transcribe_audio_free(pcm);
}

int main(int argc, char **argv) {
    char path[1024], text[4096];
    CHECK(tr_bundled_model_path(path, sizeof path));
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return TEST_DONE();
    CHECK(strcmp(transcribe_model_arch_string(transcribe_get_model(s)), "parakeet") == 0);

    transcribe_file(s, SAMPLE, text, sizeof text);
    CHECK_MSG(strcmp(text, EXPECTED) == 0, "got \"%s\"", text);
    CHECK(transcribe_n_words(s) == 14);
    transcribe_file(s, TR_SOURCE_DIR "/samples/jfk.wav", text, sizeof text);
    CHECK(text[0] != '\0'); /* real speech: runs, words are poor (README) */
    transcribe_session_free(s);

    if (argc > 1) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' '%s'", argv[1], SAMPLE);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        CHECK_MSG(strstr(g_err, "using bundled model") != NULL, "stderr: %s", g_err);
        CHECK_MSG(strncmp(g_out, EXPECTED "\n", strlen(EXPECTED) + 1) == 0, "stdout: %s", g_out);
    }
    return TEST_DONE();
}
