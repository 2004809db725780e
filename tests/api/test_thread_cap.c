/* A careless thread count (n_threads = 1 000 000) is capped at 4x the CPUs
 * (as the CLI caps --threads) instead of starting threads until memory runs
 * out: the session is created, runs, and the process holds a bounded number
 * of threads. */
#include <stdio.h>
#include <string.h>

#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"

static int process_threads(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8)) sscanf(line + 8, "%d", &n);
    fclose(f);
    return n;
}

int main(void) {
    struct transcribe_model *m = NULL;
    CHECK(transcribe_model_load_file(MODEL, NULL, &m) == TRANSCRIBE_OK);
    if (!m) return TEST_DONE();
    int before = process_threads();
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 1000000;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    int after = process_threads();
    printf("threads: %d before the session, %d with it (cap %d)\n", before, after,
           tr_max_n_threads());
    if (before >= 0) CHECK(after - before <= tr_max_n_threads());
    static float pcm[16000];
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    if (s) CHECK(transcribe_run(s, pcm, 16000, &rp) == TRANSCRIBE_OK);
    transcribe_session_free(s);
    transcribe_model_free(m);
    return TEST_DONE();
}
