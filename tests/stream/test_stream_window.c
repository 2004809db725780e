/* The generic window driver (src/api/stream_window.c) against a fake family
 * whose run() is a perfect recogniser of synthetic audio: each "word" is a
 * stretch of samples at an amplitude that names it (k / 100 -> "wk"), words
 * are separated by silence or, in one long stretch, follow each other with
 * no pause at all. Because decoding is exact (but for a word cut off by
 * the end of the input, which it mishears), the stream must commit
 * exactly the spoken words, in order, once each, through window trims at
 * pauses and forced trims inside speech, for a stream of many windows; the
 * window must stay bounded; the result keeps the rows of every part. Also: the stream_native hook
 * chooses between a family's own stream hooks and the generic driver. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "stream/stream_harness.h"
#include "test_util.h"
#include "test_stream_params.h"

#define RATE 16000
#define HOP  160 /* 10 ms: the fake recogniser's frame */

static int g_native_begins;

static transcribe_status fake_session_init(void *model, const tr_session_cfg *cfg, void **out) {
    (void)model;
    (void)cfg;
    *out = calloc(1, 1);
    return *out ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

static void fake_session_free(void *s) {
    free(s);
}

/* Word id of a 10 ms frame (0: silence). */
static int frame_word(const float *x) {
    float a = fabsf(x[0]);
    return a < 0.001f ? 0 : (int)lroundf(a * 100.0f);
}

static transcribe_status fake_run(void *s, const float *pcm, int n, tr_run_ctx *ctx) {
    (void)s;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    char text[8192] = "";
    size_t len = 0;
    int prev = 0;
    for (int f = 0; f + HOP <= n; f += HOP) {
        int w = frame_word(pcm + f);
        if (w && w != prev && len + 8 < sizeof text) {
            len += (size_t)snprintf(text + len, sizeof text - len, "%sw%d", len ? " " : "", w);
        }
        prev = w;
    }
    /* A word cut off by the end of the input is misheard (as a real model
     * would): "wk~". Cuts inside speech then disagree with the committed
     * text and must be forced. */
    if (n >= HOP && prev && len + 2 < sizeof text) strcat(text, "~");
    tr_result_add_segment(ctx->result, 0, (int64_t)n * 1000 / RATE, text);
    return TRANSCRIBE_OK;
}

static transcribe_status native_begin(void *s, tr_stream_ctx *ctx) {
    (void)s;
    (void)ctx;
    g_native_begins++;
    return TRANSCRIBE_OK;
}

static transcribe_status native_feed(void *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    (void)s;
    (void)pcm;
    (void)n;
    tr_result_clear(ctx->result);
    tr_result_set_full_text(ctx->result, "native");
    return TRANSCRIBE_OK;
}

static transcribe_status native_finalize(void *s, tr_stream_ctx *ctx) {
    return native_feed(s, NULL, 0, ctx);
}

static bool g_native_for_model;
static bool stream_native(void *model) {
    (void)model;
    return g_native_for_model;
}

static const tr_family k_plain = {
    .arch = "fake",
    .session_init = fake_session_init,
    .session_free = fake_session_free,
    .run = fake_run,
};

static const tr_family k_hooked = {
    .arch = "fake",
    .session_init = fake_session_init,
    .session_free = fake_session_free,
    .run = fake_run,
    .stream_begin = native_begin,
    .stream_feed = native_feed,
    .stream_finalize = native_finalize,
    .stream_native = stream_native,
};

static struct transcribe_model *fake_model(const tr_family *f) {
    struct transcribe_model *m = calloc(1, sizeof *m);
    m->family = f;
    m->arch = strdup("fake");
    m->desc.variant = "";
    m->desc.caps.native_sample_rate = RATE;
    m->desc.caps.supports_streaming = true; /* what the family says of its native streaming */
    m->desc.caps.supports_window_streaming = true;
    return m;
}

/* The synthetic talk: `n_words` words (ids cycling 1..60) of 0.4 s, each
 * followed by 0.3 s of silence, except words [run_from, run_to), which
 * follow each other with no pause. expect gets the words' text. */
static float *make_audio(int n_words, int run_from, int run_to, int *n_out, char *expect,
                         size_t cap) {
    int word = 4 * RATE / 10, gap = 3 * RATE / 10;
    float *pcm = calloc((size_t)n_words * (size_t)(word + gap), sizeof *pcm);
    int n = 0;
    size_t len = 0;
    expect[0] = 0;
    for (int i = 0; pcm && i < n_words; i++) {
        int id = 1 + i % 60;
        for (int k = 0; k < word; k++) pcm[n++] = (k & 1 ? -1.0f : 1.0f) * (float)id / 100.0f;
        if (i < run_from || i >= run_to - 1) n += gap;
        if (len + 8 < cap)
            len += (size_t)snprintf(expect + len, cap - len, "%sw%d", i ? " " : "", id);
    }
    *n_out = n;
    return pcm;
}

static void test_exact(void) {
    struct transcribe_model *m = fake_model(&k_plain);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    static char expect[65536];
    int n = 0;
    /* 800 words, about 9 minutes; words 300..400 are 40 s without a pause. */
    float *pcm = make_audio(800, 300, 400, &n, expect, sizeof expect);
    if (!s || !pcm) return;
    static const int feeds[] = {160, 317, 4801, 32000};
    for (int f = 0; f < 4; f++) {
        CHECK(transcribe_stream_begin(s, NULL, TU_WINDOW) == TRANSCRIBE_OK);
        tr_stream_window *w = &s->stream.win;
        char *prev = sh_dup("");
        int grows = 1, bounded = 1;
        for (int pos = 0; pos < n; pos += feeds[f]) {
            int take = n - pos < feeds[f] ? n - pos : feeds[f];
            CHECK(transcribe_stream_feed(s, pcm + pos, take, NULL) == TRANSCRIBE_OK);
            const char *c = sh_committed(s);
            if (strncmp(c, prev, strlen(prev)) != 0) grows = 0;
            if (w->n > w->hard + w->step) bounded = 0;
            free(prev);
            prev = sh_dup(c);
        }
        free(prev);
        CHECK(grows && bounded);
        CHECK(w->n_trims > 10 && w->n_forced > 0); /* the forced path ran */
        printf("feed %5d: %d decodes, %d trims (%d forced)\n", feeds[f], w->n_decodes, w->n_trims,
               w->n_forced);
        CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
        /* Every word once, in order. A word that a cut inside speech split
         * in two may keep its misheard form (as with a real model): at most
         * one per trim made inside speech. */
        const char *c = sh_committed(s);
        CHECK(strcmp(c, transcribe_full_text(s)) == 0);
        static char clean[sizeof expect];
        int misheard = 0;
        size_t k = 0;
        for (const char *p = c; *p && k + 1 < sizeof clean; p++) {
            if (*p == '~')
                misheard++;
            else
                clean[k++] = *p;
        }
        clean[k] = 0;
        CHECK_MSG(strcmp(clean, expect) == 0, "feed %d:\n got  %s\n want %s", feeds[f], clean,
                  expect);
        CHECK(misheard <= 3);
        if (f == 0) printf("%d misheard words at cuts inside speech\n", misheard);
        /* Every row is kept: one segment per trimmed part and one for the
         * last window (the fake's one segment per decode), end to end from
         * the stream's start to its end, on the stream's clock. */
        int n_segs = transcribe_n_segments(s), gaps = 0;
        int64_t end = 0;
        for (int i = 0; i < n_segs; i++) {
            struct transcribe_segment sg;
            transcribe_segment_init(&sg);
            CHECK(transcribe_get_segment(s, i, &sg) == TRANSCRIBE_OK);
            if (llabs(sg.t0_ms - end) > 1) gaps++; /* times are whole ms */
            end = sg.t1_ms;
        }
        CHECK_MSG(n_segs == w->n_trims + 1 && gaps == 0 &&
                      llabs(end - (int64_t)n * 1000 / RATE) <= 1,
                  "%d segments for %d trims, %d gaps, end %lld ms", n_segs, w->n_trims, gaps,
                  (long long)end);
    }
    free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* Native hooks stream when stream_native says so (or is NULL); otherwise
 * the generic driver does, over run(). */
static void test_native_hook(void) {
    struct transcribe_model *m = fake_model(&k_hooked);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    static char expect[1024];
    int n = 0;
    float *pcm = make_audio(5, 0, 0, &n, expect, sizeof expect);
    if (!s || !pcm) return;
    g_native_for_model = true;
    g_native_begins = 0;
    sh_outcome o = sh_stream(s, pcm, n, 1600, TRANSCRIBE_STREAM_COMMIT_AUTO, 0);
    CHECK(o.status == TRANSCRIBE_OK && g_native_begins == 1);
    CHECK(o.full && strcmp(o.full, "native") == 0);
    sh_outcome_free(&o);
    g_native_for_model = false;
    o = sh_stream(s, pcm, n, 1600, TRANSCRIBE_STREAM_COMMIT_AUTO, 0);
    CHECK(o.status == TRANSCRIBE_OK && g_native_begins == 1);
    CHECK(o.full && strcmp(o.full, expect) == 0);
    sh_outcome_free(&o);
    free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

static void quiet_log(transcribe_log_level level, const char *msg, void *ud) {
    (void)level;
    (void)msg;
    (void)ud;
}

int main(void) {
    transcribe_log_set(quiet_log, NULL);
    test_exact();
    test_native_hook();
    return TEST_DONE();
}
