/* transcribe --vad end to end (the bundled models: Parakeet and Silero VAD)
 * on the two-speaker excerpt with 12 s of silence in front: every cue starts
 * after the silence, --chunk on cuts at the VAD's pauses, and bad VAD flags
 * are refused with their reason before any audio is read. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;

/* silence (12 s) + twospk_16k.wav as a PCM16 WAV in the build tree */
static const char *make_wav(void) {
    static char path[512];
    snprintf(path, sizeof path, "%s/vad_cli_input.wav", TR_BINARY_DIR);
    FILE *in = fopen(TR_SOURCE_DIR "/tests/data/vad/twospk_16k.wav", "rb");
    FILE *out = fopen(path, "wb");
    if (!in || !out) {
        if (in) fclose(in);
        if (out) fclose(out);
        return NULL;
    }
    unsigned char hdr[44];
    size_t got = fread(hdr, 1, 44, in);
    static unsigned char body[1 << 18];
    size_t nb = fread(body, 1, sizeof body, in);
    fclose(in);
    const unsigned zeros = 12 * 16000 * 2;
    unsigned data = (unsigned)nb + zeros, riff = data + 36;
    memcpy(hdr + 4, &riff, 4); /* little-endian host: x86-64, aarch64 */
    memcpy(hdr + 40, &data, 4);
    bool ok = got == 44 && fwrite(hdr, 1, 44, out) == 44;
    for (unsigned i = 0; ok && i < zeros; i++) ok = fputc(0, out) != EOF;
    ok = ok && fwrite(body, 1, nb, out) == nb;
    fclose(out);
    return ok ? path : NULL;
}

static char out[1 << 16], err[1 << 16];

static int run(const char *args, const char *wav) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s'", g_bin, args, wav);
    return tr_cli_run(cmd, out, sizeof out, err, sizeof err);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    g_bin = argv[1];
    const char *wav = make_wav();
    CHECK(wav != NULL);
    if (!wav) return TEST_DONE();

    CHECK(run("--vad -f srt", wav) == 0);
    CHECK_MSG(strstr(err, "silero-vad-v4.gguf") != NULL, "%s", err);
    /* every cue starts after the 12 s of silence */
    int cues = 0;
    for (const char *p = strstr(out, " --> "); p; p = strstr(p + 5, " --> ")) {
        int hh = atoi(p - 12), mm = atoi(p - 9), ss = atoi(p - 6);
        CHECK_MSG(hh * 3600 + mm * 60 + ss >= 11, "cue at %.12s", p - 12);
        cues++;
    }
    CHECK(cues > 0);

    CHECK(run("--vad --chunk on --chunk-max-s 4 -f json", wav) == 0);
    CHECK(strstr(out, "\"chunks\"") || strstr(out, "pieces") || strstr(out, "\"t0_ms\""));

    /* bad flags: a clear reason, exit 1 */
    CHECK(run("--vad-threshold 1.5", wav) == 1 && strstr(err, "[0, 1]"));
    CHECK(run("--vad-threshold abc", wav) == 1 && strstr(err, "--vad-threshold"));
    CHECK(run("--vad-min-speech-ms -3", wav) == 1);
    CHECK(run("--vad-window 500", wav) == 1 && strstr(err, "VAD settings rejected"));
    CHECK(run("--vad-threshold 0.3 --vad-neg-threshold 0.4", wav) == 1);
    CHECK(run("--vad-model /nonexistent/vad.gguf", wav) == 1 && strstr(err, "VAD model"));
    CHECK(run("--vad --vad-model " TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf", wav) == 1);
    CHECK(run("--vad-window", "") == 1 && strstr(err, "--vad-window"));
    if (!getenv("TR_KEEP")) remove(wav);
    return TEST_DONE();
}
