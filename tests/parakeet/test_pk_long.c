/* The long-audio path with the default window geometry (README.md "Long
 * audio") on a synthesized ~4 and ~5.6 minute input (whole-earth repeated)
 * and the tiny TDT model: the run succeeds, token times are monotone,
 * inside the audio and spread over every repetition (so window offsets
 * reach the original timeline), the token count tracks the single-pass
 * rate, and the session's buffers are the same size for both lengths.
 * Too slow for the sanitizer run (labelled nosan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_loaded.h"
#include "pk_test.h"
#include "test_util.h"

int main(void) {
    char path[2048];
    pk_path(path, sizeof path, "tiny-tdt", "parakeet-tiny-tdt-F32.gguf");
    pk_loaded L;
    CHECK_MSG(pk_load_internal(path, 2, &L), "%s", path);
    int n = 0;
    float *we = pk_load_wav("whole-earth", &n);
    CHECK(we != NULL);
    if (!L.s || !we) return TEST_DONE();
    tr_result r;
    tr_result_init(&r);
    CHECK(pk_run_internal(&L, we, n, NULL, &r) == TRANSCRIBE_OK); /* one pass */
    int single = r.n_toks;

    const int reps[2] = {3, 4};
    float *x = malloc((size_t)n * 4 * sizeof(float));
    for (int i = 0; i < 4; i++) memcpy(x + (size_t)i * n, we, (size_t)n * sizeof(float));
    size_t bytes[2];
    for (int k = 0; k < 2; k++) {
        int len = n * reps[k];
        CHECK(pk_run_internal(&L, x, len, NULL, &r) == TRANSCRIBE_OK);
        bytes[k] = tr_pk_session_bytes(L.s);
        int64_t end_ms = (int64_t)len * 1000 / 16000;
        int per[4] = {0};
        bool ok = true;
        for (int i = 0; i < r.n_toks; i++) {
            const tr_result_token *t = &r.toks[i];
            if (t->t1_ms < t->t0_ms || t->t0_ms > end_ms || (i && t->t0_ms < r.toks[i - 1].t0_ms))
                ok = false;
            int q = (int)(t->t0_ms * 16 / n); /* repetition index (n samples = n/16 ms) */
            if (q >= 0 && q < 4) per[q]++;
        }
        CHECK_MSG(ok, "%dx: token times not monotone / outside the audio", reps[k]);
        for (int q = 0; q < reps[k]; q++)
            CHECK_MSG(per[q] > single / 2 && per[q] < single * 2,
                      "%dx: repetition %d has %d tokens (single pass %d)", reps[k], q, per[q],
                      single);
        printf("%dx (%.0f s): %d tokens, session buffers %.1f MB\n", reps[k], len / 16000.0,
               r.n_toks, bytes[k] / 1048576.0);
    }
    CHECK_MSG(bytes[0] == bytes[1], "session bytes %zu vs %zu", bytes[0], bytes[1]);
    free(x);
    free(we);
    tr_result_free(&r);
    pk_unload_internal(&L);
    return TEST_DONE();
}
