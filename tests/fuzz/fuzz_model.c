/* libFuzzer harness for whole model files: the input is written to a file
 * and opened through the public API, so the GGUF reader, every family
 * loader's key and tensor checks, and (when a file loads) a 0.5 s run of
 * the front end, encoder and decoder see hostile bytes. Seeds are the tiny
 * reference models under tests/data/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "transcribe.h"

static void quiet(transcribe_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    static float pcm[8000];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/fuzz_model_%d.gguf", (int)getpid());
        transcribe_log_set(quiet, NULL);
        for (int i = 0; i < 8000; i++) pcm[i] = (float)((i * 7919) % 2001 - 1000) / 4000.0f;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t w = fwrite(data, 1, size, f);
    fclose(f);
    if (w != size) return 0;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 1;
    struct transcribe_session *s = NULL;
    if (transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK) {
        transcribe_run(s, pcm, 8000, NULL);
        (void)transcribe_full_text(s);
        transcribe_session_free(s);
    }
    return 0;
}
