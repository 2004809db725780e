/* Source-compatibility check: written only against the transcribe.cpp
 * 0.2.1 core API (docs/c-api.md §21) and compiled both as strict C99 and as C++.
 * Without a model it drives the error paths; with the Whisper test model it
 * runs the exact call sequence of upstream examples/hello. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "transcribe.h"

#ifdef __cplusplus
#define LANG "c++"
#else
#define LANG "c99"
#endif

static int n_pass, n_fail;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (cond) {                                                                                \
            n_pass++;                                                                              \
        } else {                                                                                   \
            n_fail++;                                                                              \
            fprintf(stderr, "%s:%d: [" LANG "] expected: %s\n", __FILE__, __LINE__, #cond);        \
        }                                                                                          \
    } while (0)

static void fixture_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/api_compat_%s_%s", TR_BINARY_DIR, LANG, name);
}

/* transcribe_open on a file must fail with `want` and leave *out NULL. */
static void expect_open_fails(const char *path, transcribe_status want) {
    struct transcribe_session *session = (struct transcribe_session *)&n_pass; /* garbage */
    transcribe_status st = transcribe_open(path, NULL, NULL, &session);
    if (st != want) {
        fprintf(stderr, "open(%s): got %d (%s), want %d (%s)\n", path, (int)st,
                transcribe_status_string(st), (int)want, transcribe_status_string(want));
    }
    EXPECT(st == want);
    EXPECT(session == NULL);
    transcribe_close(session);
}

static void error_paths(void) {
    char path[1024];

    EXPECT(strcmp(transcribe_status_string(TRANSCRIBE_OK), "ok") == 0);
    EXPECT(strcmp(transcribe_status_string(TRANSCRIBE_ERR_FILE_NOT_FOUND), "file not found") == 0);
    EXPECT(strcmp(transcribe_status_string(12345), "unknown status") == 0);

    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    EXPECT(caps.struct_size == sizeof caps);
    EXPECT(caps.native_sample_rate == 0 && !caps.supports_streaming);

    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    EXPECT(rp.struct_size == sizeof rp);
    EXPECT(rp.timestamps == TRANSCRIBE_TIMESTAMPS_AUTO);
    EXPECT(rp.task == TRANSCRIBE_TASK_TRANSCRIBE);
    EXPECT(rp.language == NULL && rp.family == NULL && rp.spec_k_drafts == -1);

    /* NULL-safe core calls. */
    EXPECT(strcmp(transcribe_full_text(NULL), "") == 0);
    EXPECT(transcribe_get_model(NULL) == NULL);
    EXPECT(transcribe_model_get_capabilities(NULL, &caps) == TRANSCRIBE_ERR_INVALID_ARG);
    float pcm[16] = {0};
    EXPECT(transcribe_run(NULL, pcm, 16, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    EXPECT(transcribe_open("x", NULL, NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_close(NULL);
    transcribe_session_free(NULL);

    fixture_path(path, sizeof path, "does-not-exist.gguf");
    remove(path);
    expect_open_fails(path, TRANSCRIBE_ERR_FILE_NOT_FOUND);

    fixture_path(path, sizeof path, "nope.gguf");
    EXPECT(tr_fixture_write_gguf(path, "nope") == 0);
    expect_open_fails(path, TRANSCRIBE_ERR_UNSUPPORTED_ARCH);
    remove(path);

    /* every published architecture has a loader: a file that names one but holds none of its
     * keys is a GGUF error (NOT_IMPLEMENTED is left to known architectures without a loader) */
    fixture_path(path, sizeof path, "voxtral_realtime.gguf");
    EXPECT(tr_fixture_write_gguf(path, "voxtral_realtime") == 0);
    expect_open_fails(path, TRANSCRIBE_ERR_GGUF);
    remove(path);

    /* Every short prefix of a valid file is a load error, never a crash. */
    static const long cuts[] = {0, 3, 4, 8, 20, 40, 60};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        fixture_path(path, sizeof path, "truncated.gguf");
        EXPECT(tr_fixture_write_truncated_gguf(path, "whisper", cuts[i]) == 0);
        expect_open_fails(path, TRANSCRIBE_ERR_GGUF);
        remove(path);
    }
}

/* docs/c-api.md §21.1, call for call. Returns 0 = ran, 1 = skipped. */
static int hello(const char *model_path, const char *wav_path, const char *golden) {
    int n_samples = 0;
    float *pcm = tr_fixture_load_audio(wav_path, &n_samples);
    if (!pcm) {
        printf("[" LANG "] hello: SKIP (cannot read %s)\n", wav_path);
        return 1;
    }
    struct transcribe_session *session = NULL;
    transcribe_status st = transcribe_open(model_path, NULL, NULL, &session);
    if (st == TRANSCRIBE_ERR_NOT_IMPLEMENTED) {
        printf("[" LANG "] hello: SKIP (whisper family not implemented yet)\n");
        free(pcm);
        return 1;
    }
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "failed to open model: %s\n", transcribe_status_string(st));
        EXPECT(st == TRANSCRIBE_OK);
        free(pcm);
        return 0;
    }
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    EXPECT(transcribe_model_get_capabilities(transcribe_get_model(session), &caps) ==
           TRANSCRIBE_OK);
    EXPECT(caps.native_sample_rate == 16000);
    /* As in 0.2.1, Whisper does not stream natively; here it streams through
     * the window driver when a stream asks for it (window_fallback). */
    EXPECT(!caps.supports_streaming && caps.supports_window_streaming);

    st = transcribe_run(session, pcm, n_samples, NULL);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcription failed: %s\n", transcribe_status_string(st));
        EXPECT(st == TRANSCRIBE_OK);
        transcribe_close(session);
        free(pcm);
        return 0;
    }
    const char *text = transcribe_full_text(session);
    printf("[" LANG "] hello: %s\n", text);
    EXPECT(*text != '\0');
    /* The reference model's golden transcript for these exact defaults. */
    if (golden && *golden) {
        if (strcmp(text, golden) != 0) fprintf(stderr, "golden:   %s\n", golden);
        EXPECT(strcmp(text, golden) == 0);
    }
    transcribe_close(session);
    free(pcm);
    return 0;
}

/* Reads a small text file, trailing whitespace removed ("" if absent). */
static void read_text(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    buf[n] = '\0';
}

int main(void) {
    error_paths();
    char model[1024], wav[1024], golden_path[1024];
    static char golden[8192];
    const char *dir = TR_SOURCE_DIR "/tests/data/whisper/tiny";
    snprintf(model, sizeof model, "%s/whisper-tiny-ref-F16.gguf", dir);
    snprintf(golden_path, sizeof golden_path, "%s/jfk.auto.text.txt", dir);
    snprintf(wav, sizeof wav, "%s/samples/jfk.wav", TR_CORPUS_DIR);
    read_text(golden_path, golden, sizeof golden);
    FILE *f = fopen(model, "rb");
    if (f) {
        fclose(f);
        hello(model, wav, golden);
    } else {
        printf("[" LANG "] hello: SKIP (no test model %s)\n", model);
    }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
