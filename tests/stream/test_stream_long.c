/* A long stream (a few bundled utterances repeated) fed as fast as the
 * tiny random-weight Parakeet CTC model decodes it, through the generic
 * window driver: the cost of a feed and the process's memory must stay flat
 * however long the stream runs. Both are printed per five minutes of audio
 * and bounded loosely (no timing assertion beyond "does not grow
 * several-fold": the machine is shared). 30 minutes by default (about 40 s
 * of CPU); TR_STREAM_LONG_MIN=60 runs the full hour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stream/stream_harness.h"
#include "test_files.h"
#include "test_clock.h"
#include "test_util.h"
#include "test_stream_params.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/tests/data/parakeet/tiny-ctc/parakeet-tiny-ctc-F16.gguf"

static void quiet_log(transcribe_log_level level, const char *msg, void *ud) {
    (void)ud;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR) fprintf(stderr, "%s\n", msg);
}

int main(void) {
    transcribe_log_set(quiet_log, NULL);
    if (!tr_test_file_exists(MODEL)) {
        printf("SKIP: bundled model missing\n");
        return 0;
    }
    /* The loop: five bundled utterances with a short pause after each. */
    static const char *const files[] = {"t000-m7", "t001-f4", "t002-klatt3", "t003-benjamin",
                                        "t004-en-gb-x-gbcwmd"};
    float *loop = NULL;
    int n_loop = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, TR_SOURCE_DIR "/tests/data/bundled/%s.wav", files[i]);
        float *pcm = NULL;
        int n = 0;
        if (transcribe_audio_load_file(path, 16000, &pcm, &n) != TRANSCRIBE_OK) {
            printf("SKIP: %s not readable\n", path);
            free(loop);
            return 0;
        }
        float *grown = realloc(loop, (size_t)(n_loop + n + 4000) * sizeof *loop);
        CHECK(grown != NULL);
        if (!grown) return TEST_DONE();
        loop = grown;
        memcpy(loop + n_loop, pcm, (size_t)n * sizeof *pcm);
        memset(loop + n_loop + n, 0, 4000 * sizeof *loop);
        n_loop += n + 4000;
        transcribe_audio_free(pcm);
    }
    const char *env = getenv("TR_STREAM_LONG_MIN");
    int minutes = env && atoi(env) > 0 ? atoi(env) : 30;
    int64_t total = (int64_t)minutes * 60 * 16000;

    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 1;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(MODEL, NULL, &sp, &s) == TRANSCRIBE_OK);
    if (!s) return TEST_DONE();
    CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);

    enum { FEED = 16000, BLOCK_S = 300 };
    float *feed = malloc(FEED * sizeof *feed);
    CHECK(feed != NULL);
    int n_blocks = (int)((total / 16000 + BLOCK_S - 1) / BLOCK_S);
    double *block_ms = calloc((size_t)n_blocks + 1, sizeof *block_ms);
    double *block_max = calloc((size_t)n_blocks + 1, sizeof *block_max);
    double *block_rss = calloc((size_t)n_blocks + 1, sizeof *block_rss);
    int *block_feeds = calloc((size_t)n_blocks + 1, sizeof *block_feeds);
    size_t prev_committed = 0;
    bool grows = true;
    int64_t loop_pos = 0;
    transcribe_status st = TRANSCRIBE_OK;
    double t_start = tr_test_now_ms();
    for (int64_t fed = 0; fed < total && st == TRANSCRIBE_OK; fed += FEED) {
        for (int i = 0; i < FEED; i++) {
            feed[i] = loop[loop_pos];
            loop_pos = (loop_pos + 1) % n_loop;
        }
        double t0 = tr_test_now_ms();
        st = transcribe_stream_feed(s, feed, FEED, NULL);
        double dt = tr_test_now_ms() - t0;
        int b = (int)(fed / 16000 / BLOCK_S);
        block_ms[b] += dt;
        if (dt > block_max[b]) block_max[b] = dt;
        block_feeds[b]++;
        block_rss[b] = tr_test_rss_mib();
        struct transcribe_stream_text t;
        transcribe_stream_text_init(&t);
        transcribe_stream_get_text(s, &t);
        if (t.committed_text_bytes < prev_committed) grows = false;
        prev_committed = t.committed_text_bytes;
    }
    CHECK_MSG(st == TRANSCRIBE_OK, "feed: %s", transcribe_status_string(st));
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(grows);
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    printf("%d min of audio streamed in %.1f s; %llu bytes committed (%.40s ...)\n", minutes,
           (tr_test_now_ms() - t_start) / 1e3, (unsigned long long)t.committed_text_bytes,
           t.committed_text);
    printf("block   feeds  mean ms/feed  max ms  RSS MiB\n");
    for (int b = 0; b < n_blocks; b++) {
        printf("%3d-%3d min %5d  %10.2f  %6.1f  %7.1f\n", b * BLOCK_S / 60, (b + 1) * BLOCK_S / 60,
               block_feeds[b], block_feeds[b] ? block_ms[b] / block_feeds[b] : 0.0, block_max[b],
               block_rss[b]);
    }
    /* Loose flatness: the last block's mean feed costs at most 3x the
     * first's (plus 5 ms for a noisy machine); memory grows by at most
     * 16 MiB after the first block (the committed text itself, tens of KiB
     * an hour, is the only thing that should grow). */
    if (n_blocks >= 2 && block_feeds[0] && block_feeds[n_blocks - 1]) {
        double first = block_ms[0] / block_feeds[0];
        double last = block_ms[n_blocks - 1] / block_feeds[n_blocks - 1];
        CHECK_MSG(last <= 3.0 * first + 5.0, "feed cost grew: %.2f -> %.2f ms", first, last);
        if (block_rss[0] > 0) {
            CHECK_MSG(block_rss[n_blocks - 1] - block_rss[0] <= 16.0, "RSS grew: %.1f -> %.1f MiB",
                      block_rss[0], block_rss[n_blocks - 1]);
        }
    }
    free(block_ms);
    free(block_max);
    free(block_rss);
    free(block_feeds);
    free(feed);
    free(loop);
    transcribe_session_free(s);
    return TEST_DONE();
}
