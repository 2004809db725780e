/* The stream lifecycle table (docs/c-api.md §14.1, §12) on a real family through
 * the generic window driver (the bundled parakeet-ctc model): begin / feed /
 * finalize / reset, feed and finalize outside ACTIVE, runs during and after
 * a stream, abort, was_aborted, last_status, revisions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream_harness.h"
#include "test_files.h"
#include "test_util.h"
#include "test_stream_params.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"
#define AUDIO TR_SOURCE_DIR "/tests/data/bundled/t003-benjamin.wav"

static void quiet_log(transcribe_log_level level, const char *msg, void *ud) {
    (void)level;
    (void)msg;
    (void)ud;
}

typedef struct abort_after {
    int calls, limit;
} abort_after;

static bool abort_cb(void *ud) {
    abort_after *a = ud;
    return ++a->calls > a->limit;
}

static struct transcribe_stream_update upd(void) {
    struct transcribe_stream_update u;
    transcribe_stream_update_init(&u);
    return u;
}

int main(void) {
    transcribe_log_set(quiet_log, NULL);
    if (!tr_test_file_exists(MODEL) || !tr_test_file_exists(AUDIO)) {
        printf("SKIP: bundled model or audio missing\n");
        return 0;
    }
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(AUDIO, 16000, &pcm, &n) == TRANSCRIBE_OK);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(MODEL, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s || !pcm) return TEST_DONE();
    struct transcribe_stream_update u = upd();

    /* IDLE: feed / finalize rejected, state unchanged. */
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    CHECK(transcribe_stream_feed(s, pcm, 160, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);

    /* begin; begin again while ACTIVE is rejected; runs are rejected. */
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    const float *one[1] = {pcm};
    CHECK(transcribe_run_batch(s, one, &n, 1, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
    /* Bad feeds leave the stream ACTIVE. */
    CHECK(transcribe_stream_feed(s, NULL, 160, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_feed(s, pcm, 0, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
    /* A sub-step feed buffers; a full second decodes. */
    u = upd();
    CHECK(transcribe_stream_feed(s, pcm, 800, &u) == TRANSCRIBE_OK);
    CHECK(u.input_received_ms == 50 && u.buffered_ms == 50 && !u.result_changed);
    u = upd();
    CHECK(transcribe_stream_feed(s, pcm + 800, 16000, &u) == TRANSCRIBE_OK);
    CHECK(u.input_received_ms == 1050 && u.buffered_ms == 50);
    CHECK(u.result_changed == (*transcribe_full_text(s) != 0));
    int rev = transcribe_stream_revision(s);
    u = upd();
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_OK);
    CHECK(u.is_final && u.result_changed && u.revision == rev + 1 && u.buffered_ms == 0);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    CHECK(strcmp(sh_committed(s), transcribe_full_text(s)) == 0);

    /* FINISHED: feed / finalize rejected, result kept. */
    char *kept = sh_dup(transcribe_full_text(s));
    u = upd();
    CHECK(transcribe_stream_feed(s, pcm, 160, &u) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_ERR_INVALID_ARG && u.is_final);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    CHECK(strcmp(transcribe_full_text(s), kept) == 0);
    free(kept);

    /* reset: IDLE, everything cleared. */
    transcribe_stream_reset(s);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    CHECK(transcribe_stream_revision(s) == 0 && *transcribe_full_text(s) == 0);
    CHECK(*sh_committed(s) == 0);

    /* reset mid-stream, then a fresh stream gives the same text as a
     * stream that never saw the abandoned audio. */
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_feed(s, pcm + n / 2, n / 2, NULL) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    sh_outcome a = sh_stream(s, pcm, n, 1600, TRANSCRIBE_STREAM_COMMIT_AUTO, 0);
    CHECK(a.status == TRANSCRIBE_OK && a.n_shrink == 0);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK); /* FINISHED -> offline: IDLE */
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    printf("offline:  %s\nstreamed: %s\n", transcribe_full_text(s), a.full ? a.full : "");
    CHECK(a.full && strcmp(a.full, transcribe_full_text(s)) == 0); /* a short clip: exact */
    sh_outcome_free(&a);

    /* abort: the feed that decodes returns ABORTED; FAILED with the status
     * kept; feed rejected; was_aborted; a new begin clears it. */
    abort_after ab = {0, 0};
    transcribe_set_abort_callback(s, abort_cb, &ab);
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_feed(s, pcm, 8000, NULL) == TRANSCRIBE_OK); /* buffered only */
    u = upd();
    CHECK(transcribe_stream_feed(s, pcm, 16000, &u) == TRANSCRIBE_ERR_ABORTED);
    CHECK(u.result_changed);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FAILED);
    CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s));
    CHECK(transcribe_stream_feed(s, pcm, 160, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK); /* FAILED -> ACTIVE */
    CHECK(!transcribe_was_aborted(s) && transcribe_stream_last_status(s) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_feed(s, pcm, n, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);

    /* Abort during the final decode: finalize fails, FAILED. */
    ab.calls = 0;
    ab.limit = 0;
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_feed(s, pcm, 8000, NULL) == TRANSCRIBE_OK);
    transcribe_set_abort_callback(s, abort_cb, &ab);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FAILED);
    transcribe_set_abort_callback(s, NULL, NULL);
    transcribe_stream_reset(s);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE && !transcribe_was_aborted(s));

    /* Translation is never streamed. */
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_stream_begin(s, &rp, TU_WINDOW) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);

    transcribe_session_free(s);
    transcribe_audio_free(pcm);
    return TEST_DONE();
}
