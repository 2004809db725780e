/* Voxtral Realtime native streams through the public API (docs/formats/voxtral_realtime.md §8)
 * against the reference's traces (tests/data/voxtral_realtime/stream.json): after every feed the
 * hypothesis text, and the final ids and text, at delays 6 and 2 and decode intervals 0, 200 ms
 * and the default. Then: committed text only grows and stays a prefix of the hypothesis; feeds of
 * 10 ms .. 2 s give the same final text, equal to the offline run's; bad extensions are
 * INVALID_ARG; abort mid-stream is ABORTED; an empty stream finalizes empty; a long stream keeps
 * the encoder's buffers and the decoder's cache at constant size (per-feed times are printed, not
 * asserted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/family.h"
#include "models/voxtral_realtime/vxr.h"
#include "golden_json.h"
#include "test_files.h"
#include "test_stream_params.h"
#include "test_util.h"
#include "transcribe.h"
#include "transcribe/voxtral_realtime.h"
#include "util/timer.h"
#include "vxr_test.h"

static char *g_js;

static transcribe_status begin(struct transcribe_session *s, int delay, int interval_ms) {
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    struct transcribe_voxtral_realtime_stream_ext ext;
    transcribe_voxtral_realtime_stream_ext_init(&ext);
    ext.num_delay_tokens = delay;
    ext.min_decode_interval_ms = interval_ms;
    sp.family = &ext.ext;
    return transcribe_stream_begin(s, NULL, &sp);
}

/* One stream.json case: every feed's hypothesis text, then the final ids and text. */
static void trace(struct transcribe_session *s, const float *pcm, int n, const char *name) {
    const char *o = tr_json_obj(g_js, name);
    CHECK_MSG(o != NULL, "stream.json has no %s", name);
    if (!o) return;
    const char *end = tr_json_obj_end(o);
    const int chunk = (int)tr_json_int(o, end, "chunk_samples", 0);
    const int delay = (int)tr_json_int(o, end, "num_delay_tokens", -1);
    const int ms = (int)tr_json_int(o, end, "min_decode_interval_ms", -1);
    int32_t final_ids[256];
    const int n_final = tr_json_ints(o, end, "final_ids", final_ids, 256);
    CHECK(begin(s, delay, ms) == TRANSCRIBE_OK);
    const char *ev = tr_json_val(o, end, "events");
    int mismatches = 0, checked = 0;
    char prev[2048] = "", cur[2048], full[2048], want[2048];
    for (int at = 0; at < n; at += chunk) {
        const int k = n - at < chunk ? n - at : chunk;
        CHECK(transcribe_stream_feed(s, pcm + at, k, NULL) == TRANSCRIBE_OK);
        tr_stream_texts(s, cur, sizeof cur, full, sizeof full);
        CHECK_MSG(!strncmp(cur, prev, strlen(prev)), "%s: committed text shrank", name);
        CHECK_MSG(!strncmp(full, cur, strlen(cur)), "%s: committed not a prefix", name);
        snprintf(prev, sizeof prev, "%s", cur);
        const char *e = ev ? strchr(ev, '{') : NULL;
        if (!e || e > end) continue;
        const char *ee = tr_json_obj_end(e);
        ev = ee;
        tr_json_str(e, ee, "text", want, sizeof want);
        checked++;
        if (strcmp(full, want) && mismatches++ < 3)
            printf("%s at %d: [%s] want [%s]\n", name, at + k, full, want);
    }
    CHECK_MSG(mismatches == 0, "%s: %d of %d feeds differ from the trace", name, mismatches,
              checked);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(!transcribe_was_truncated(s));
    char want_text[1024];
    tr_json_str(o, end, "final_text", want_text, sizeof want_text);
    tr_stream_texts(s, cur, sizeof cur, full, sizeof full);
    CHECK_MSG(!strcmp(cur, want_text), "%s: final committed [%s]", name, cur);
    CHECK_MSG(!strcmp(full, want_text), "%s: final text [%s]", name, full);
    /* the family's ids (token rows are the text ids; the controls are in the session) */
    const vxr_session *fs = tr_session_head_of(s)->fsession;
    bool same = fs->n_ids == n_final;
    for (int i = 0; same && i < n_final; i++) same = fs->ids[i] == final_ids[i];
    CHECK_MSG(same, "%s: final ids differ (%d, want %d)", name, fs->n_ids, n_final);
    printf("%-22s %d feeds checked, final: %.60s\n", name, checked, cur);
}

/* The same final text for every feed size, equal to the offline run's. */
static void sizes(struct transcribe_session *s, const float *pcm, int n) {
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    char offline[2048];
    snprintf(offline, sizeof offline, "%s", transcribe_full_text(s));
    static const int ms[] = {10, 30, 70, 240, 500, 1300, 2000};
    for (size_t j = 0; j < sizeof ms / sizeof *ms; j++) {
        const int chunk = ms[j] * 16;
        CHECK(begin(s, -1, j % 2 ? 0 : -1) == TRANSCRIBE_OK);
        char prev[2048] = "", c[2048];
        for (int at = 0; at < n; at += chunk) {
            CHECK(transcribe_stream_feed(s, pcm + at, n - at < chunk ? n - at : chunk, NULL) ==
                  TRANSCRIBE_OK);
            tr_stream_texts(s, c, sizeof c, NULL, 0);
            CHECK(!strncmp(c, prev, strlen(prev)));
            snprintf(prev, sizeof prev, "%s", c);
        }
        CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
        tr_stream_texts(s, c, sizeof c, NULL, 0);
        CHECK_MSG(!strcmp(c, offline), "%d ms feeds: [%s] vs offline [%s]", ms[j], c, offline);
    }
}

static void errors(struct transcribe_session *s, const float *pcm, int n) {
    static const int bad_delay[] = {0, 16, 29, 31, -2};
    for (size_t i = 0; i < sizeof bad_delay / sizeof *bad_delay; i++)
        CHECK_MSG(begin(s, bad_delay[i], -1) == TRANSCRIBE_ERR_INVALID_ARG, "delay %d",
                  bad_delay[i]);
    CHECK(begin(s, 30, -1) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    CHECK(begin(s, 15, -1) == TRANSCRIBE_OK);
    transcribe_stream_reset(s);
    CHECK(begin(s, -1, -2) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    struct transcribe_voxtral_realtime_stream_ext ext;
    transcribe_voxtral_realtime_stream_ext_init(&ext);
    ext.ext.kind = 0x12345678u;
    sp.family = &ext.ext;
    CHECK(transcribe_stream_begin(s, NULL, &sp) != TRANSCRIBE_OK);
    /* abort mid-stream (polled per encoder pass and decoder step) */
    CHECK(begin(s, -1, 0) == TRANSCRIBE_OK);
    tr_stream_expect_abort(s, pcm, n, 20);
    /* an empty stream finalizes to an empty text */
    CHECK(begin(s, -1, -1) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_n_tokens(s) == 0);
}

/* A long stream in 100 ms feeds: the encoder's buffers and the decoder's cache (the window's
 * ring) keep their size. */
static void long_stream(struct transcribe_session *s, const float *clip, int n_clip) {
    const int reps = 24, gap = 8000, per = n_clip + gap, n = reps * per;
    float *pcm = calloc((size_t)n, sizeof *pcm);
    if (!pcm) return;
    for (int r = 0; r < reps; r++) memcpy(pcm + (size_t)r * per, clip, sizeof(float) * n_clip);
    CHECK(begin(s, -1, 0) == TRANSCRIBE_OK);
    const vxr_session *fs = tr_session_head_of(s)->fsession;
    double t_first = 0, t_last = 0;
    size_t cap_first = 0, prev_len = 0;
    const int chunk = 1600, feeds = n / chunk;
    for (int i = 0; i < feeds; i++) {
        const double t0 = tr_time_ms();
        CHECK(transcribe_stream_feed(s, pcm + (size_t)i * chunk, chunk, NULL) == TRANSCRIBE_OK);
        const double dt = tr_time_ms() - t0;
        if (i < feeds / 4) t_first += dt;
        if (i >= feeds - feeds / 4) t_last += dt;
        const size_t cap = (size_t)fs->enc.buf_cap + (size_t)fs->enc.audio_cap + fs->enc.work_cap +
                           (size_t)tr_clm_cache(fs->dec.lm)->n_ctx;
        if (i == feeds / 4) cap_first = cap;
        if (i > feeds / 4)
            CHECK_MSG(cap == cap_first, "feed %d: buffers %zu -> %zu", i, cap_first, cap);
        /* rows wait for the 39-row prompt, then each is consumed as it arrives */
        CHECK(fs->enc.n_audio <= 39 + 8);
        char c[1 << 14];
        tr_stream_texts(s, c, sizeof c, NULL, 0);
        CHECK(strlen(c) >= prev_len);
        prev_len = strlen(c);
    }
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    printf("long stream: %d s, %d feeds, %zu committed bytes; per-feed ms first quarter %.3f, "
           "last quarter %.3f\n",
           n / 16000, feeds, prev_len, t_first / (feeds / 4), t_last / (feeds / 4));
    free(pcm);
}

int main(void) {
    const char *path = VXR_DIR "/voxtral-realtime-tiny-ref-F32.gguf";
    if (!tr_test_file_exists(path)) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    g_js = tr_test_read_text(VXR_DIR "/stream.json", NULL);
    CHECK(g_js != NULL);
    struct transcribe_model *model = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &model) == TRANSCRIBE_OK);
    CHECK(model && transcribe_session_init(model, NULL, &s) == TRANSCRIBE_OK);
    int n = 0;
    float *pcm = vxr_load_clip(&n);
    if (s && pcm && g_js) {
        struct transcribe_capabilities caps;
        memset(&caps, 0, sizeof caps);
        caps.struct_size = sizeof caps;
        CHECK(transcribe_model_get_capabilities(model, &caps) == TRANSCRIBE_OK);
        CHECK(caps.supports_streaming);
        static const char *const cases[] = {"d6_chunk500ms_int0", "d6_chunk320ms_default",
                                            "d6_chunk100ms_int200", "d6_whole",
                                            "d2_chunk250ms_int0"};
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) trace(s, pcm, n, cases[c]);
        sizes(s, pcm, n);
        sizes(s, pcm, 20480);
        sizes(s, pcm, 1);
        errors(s, pcm, n);
        long_stream(s, pcm, n);
    }
    transcribe_audio_free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(model);
    free(g_js);
    return TEST_DONE();
}
