/* One hour of audio (a bundled utterance and a pause, repeated) streamed
 * natively through a cache-aware rewrite of the tiny CTC model (chunked
 * limited attention 4 / 13, causal conv, normalize none): the cost of a
 * feed and the process's memory must not grow with the stream's length
 * (native streaming keeps caches of fixed size and extends the result rows
 * in place). Per-feed cost of the first and last ten minutes and RSS are
 * printed and bounded loosely (the machine is shared: no timing assertion
 * beyond "does not grow several-fold"). Slow under emulation: excluded by
 * scripts/test-aarch64. TR_PK_STREAM_LONG_MIN overrides the 60 minutes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pk_test.h"
#include "test_clock.h"
#include "test_util.h"

#define SRC TR_SOURCE_DIR "/tests/data/parakeet/tiny-ctc/parakeet-tiny-ctc-F16.gguf"

/* The tiny CTC model (k 9, C 16, 80 mels, d 64) as a cache-aware file. */
static bool make_streaming(const char *dst) {
    gguf_file *g = NULL;
    if (tr_gguf_open(SRC, &g) != TRANSCRIBE_OK) return false;
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++)
        if (!pk_test_streaming_key(tr_gguf_key_name(g, i))) ok = tr_gguf_writer_copy_kv(w, g, i);
    ok = ok &&
         tr_gguf_writer_set_str(w, "stt.parakeet.encoder.att_context_style", "chunked_limited") &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_left", 4) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_right", 13) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_left", 8) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_right", 0) &&
         tr_gguf_writer_set_str(w, "stt.frontend.normalize", "none") &&
         tr_gguf_writer_set_bool(w, "stt.capability.streaming", true);
    const int64_t in = 16 * 11, d = 64; /* 80 mels -> 41 -> 21 -> 11 */
    float *pw = malloc(sizeof(float) * (size_t)(in * d));
    uint32_t seed = 4242;
    for (int64_t i = 0; pw && i < in * d; i++) {
        seed = seed * 1664525u + 1013904223u;
        pw[i] = ((float)((seed >> 8) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * 10.0f /
                sqrtf((float)in);
    }
    ok = ok && pw;
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (!strcmp(t->name, "enc.pre_encode.out.weight")) {
            const int64_t ne[4] = {in, d, 1, 1};
            ok = tr_gguf_writer_add_tensor(w, t->name, TR_F32, 2, ne, pw);
        } else {
            ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
        }
    }
    if (ok) ok = tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    free(pw);
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

int main(void) {
    if (!pk_exists(SRC)) {
        printf("SKIP: %s missing\n", SRC);
        return 0;
    }
    char dst[2048];
    snprintf(dst, sizeof dst, "%s/pk_stream_long.gguf", TR_BINARY_DIR);
    CHECK(make_streaming(dst));
    float *pcm = NULL;
    int n_pcm = 0;
    if (transcribe_audio_load_file(TR_SOURCE_DIR "/tests/data/bundled/t001-f4.wav", 16000, &pcm,
                                   &n_pcm) != TRANSCRIBE_OK) {
        printf("SKIP: bundled sample not readable\n");
        return TEST_DONE();
    }
    const int n_loop = n_pcm + 8000; /* half a second of pause after it */
    const char *env = getenv("TR_PK_STREAM_LONG_MIN");
    const int minutes = env && atoi(env) > 0 ? atoi(env) : 60;
    const int64_t total = (int64_t)minutes * 60 * 16000;
    struct transcribe_session *s = NULL;
    CHECK(pk_open(dst, 1, &s) == TRANSCRIBE_OK);
    if (!s) return TEST_DONE();
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_OK);
    enum { FEED = 32000, BLOCK_S = 600 };
    float *feed = malloc(FEED * sizeof *feed);
    const int n_blocks = (int)((total / 16000 + BLOCK_S - 1) / BLOCK_S);
    double *bms = calloc((size_t)n_blocks + 1, sizeof *bms),
           *brss = calloc((size_t)n_blocks + 1, 8);
    int *bn = calloc((size_t)n_blocks + 1, sizeof *bn);
    CHECK(feed && bms && brss && bn);
    int64_t pos = 0;
    transcribe_status st = TRANSCRIBE_OK;
    const double t_start = tr_test_now_ms();
    for (int64_t fed = 0; feed && bms && brss && bn && fed < total && st == TRANSCRIBE_OK;
         fed += FEED) {
        for (int i = 0; i < FEED; i++, pos = (pos + 1) % n_loop)
            feed[i] = pos < n_pcm ? pcm[pos] : 0;
        const double t0 = tr_test_now_ms();
        st = transcribe_stream_feed(s, feed, FEED, NULL);
        const int b = (int)(fed / 16000 / BLOCK_S);
        bms[b] += tr_test_now_ms() - t0;
        bn[b]++;
        brss[b] = tr_test_rss_mib();
    }
    CHECK_MSG(st == TRANSCRIBE_OK, "feed: %s", transcribe_status_string(st));
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    printf("%d min streamed natively in %.1f s: %d tokens, %zu bytes of text\n", minutes,
           (tr_test_now_ms() - t_start) / 1e3, transcribe_n_tokens(s),
           strlen(transcribe_full_text(s)));
    printf("block       feeds  ms/feed  RSS MiB\n");
    for (int b = 0; b < n_blocks; b++)
        printf("%3d-%3d min %5d  %7.2f  %7.1f\n", b * BLOCK_S / 60, (b + 1) * BLOCK_S / 60, bn[b],
               bn[b] ? bms[b] / bn[b] : 0.0, brss[b]);
    if (n_blocks >= 2 && bn[0] && bn[n_blocks - 1]) {
        const double first = bms[0] / bn[0], last = bms[n_blocks - 1] / bn[n_blocks - 1];
        CHECK_MSG(last <= 2.0 * first + 5.0, "feed cost grew: %.2f -> %.2f ms", first, last);
        /* the rows and text themselves grow (tens of bytes a second) */
        if (brss[0] > 0)
            CHECK_MSG(brss[n_blocks - 1] - brss[0] <= 16.0, "RSS grew: %.1f -> %.1f MiB", brss[0],
                      brss[n_blocks - 1]);
    }
    CHECK(transcribe_n_tokens(s) > 0);
    free(bms);
    free(brss);
    free(bn);
    free(feed);
    transcribe_audio_free(pcm);
    transcribe_session_free(s);
    remove(dst);
    return TEST_DONE();
}
