/* Moonshine Streaming native streams through the public API
 * (docs/formats/moonshine_streaming.md §8.1) against the reference's traces
 * (tests/data/moonshine_streaming/tiny/stream.json): after every call the
 * frames emitted (audio_committed_ms), the hypothesis' token count and the
 * committed token count; the final ids and text. Then: committed text only
 * grows and stays a prefix of the hypothesis; feeds of 10 ms .. 2 s give the
 * same final committed text, equal to the one-shot run's; a bad extension
 * is INVALID_ARG; abort mid-stream is ABORTED; a long stream (many adapter
 * tables' worth of audio) keeps its buffers bounded and its text growing.
 *
 * One decision differs from upstream (family README): finalize encodes the
 * one-shot frames (ceil), so the 1-sample stream gives the one-shot result
 * (24 tokens, truncated) where upstream's floor gives an empty one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/family.h"
#include "models/moonshine_streaming/mss.h"
#include "mss_json.h"
#include "test_stream_params.h"
#include "test_util.h"
#include "transcribe.h"
#include "transcribe/moonshine_streaming.h"
#include "util/timer.h"

static char *g_js;
static struct transcribe_model *g_model;

static float *load_clip(const char *file, int *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.wav", MSS_DATA, file);
    float *pcm = NULL;
    *n = 0;
    CHECK_MSG(transcribe_audio_load_file(path, 16000, &pcm, n) == TRANSCRIBE_OK, "%s", path);
    return pcm;
}

static transcribe_status begin(struct transcribe_session *s, int interval_ms, uint32_t agree) {
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    struct transcribe_moonshine_streaming_stream_ext ext;
    transcribe_moonshine_streaming_stream_ext_init(&ext);
    ext.min_decode_interval_ms = interval_ms;
    sp.family = &ext.ext;
    sp.stable_prefix_agreement_n = agree;
    return transcribe_stream_begin(s, NULL, &sp);
}

/* One stream.json case: every event of its trace. */
static void trace(struct transcribe_session *s, const float *pcm, int n, const char *name) {
    const char *o = tr_json_obj(g_js, name);
    CHECK_MSG(o != NULL, "stream.json has no %s", name);
    if (!o) return;
    const char *end = tr_json_obj_end(o);
    const int chunk = (int)tr_json_int(o, end, "chunk_samples", 0);
    const int ms = (int)tr_json_int(o, end, "min_decode_interval_ms", -1);
    const int agree = (int)tr_json_int(o, end, "stable_prefix_agreement_n", 0);
    const bool filtered = tr_json_int(o, end, "events_filtered", 0) != 0;
    int32_t final_ids[64];
    const int n_final = tr_json_ints(o, end, "final_ids", final_ids, 64);
    CHECK(begin(s, ms, (uint32_t)agree) == TRANSCRIBE_OK);
    const char *ev = tr_json_val(o, end, "events");
    int mismatches = 0, checked = 0;
    char prev[2048] = "", cur[2048], full[2048];
    for (int i = 0, at = 0; at < n; i++, at += chunk) {
        const int k = n - at < chunk ? n - at : chunk;
        struct transcribe_stream_update u;
        memset(&u, 0, sizeof u);
        u.struct_size = sizeof u;
        CHECK(transcribe_stream_feed(s, pcm + at, k, &u) == TRANSCRIBE_OK);
        tr_stream_texts(s, cur, sizeof cur, full, sizeof full);
        CHECK_MSG(!strncmp(cur, prev, strlen(prev)), "%s: committed text shrank", name);
        CHECK_MSG(!strncmp(full, cur, strlen(cur)), "%s: committed not a prefix", name);
        snprintf(prev, sizeof prev, "%s", cur);
        /* the event of this call */
        const char *e = ev ? strchr(ev, '{') : NULL;
        if (!e || e > end) continue;
        const char *ee = tr_json_obj_end(e);
        if (filtered && tr_json_int(e, ee, "i", -1) != i) continue;
        if (tr_json_int(e, ee, "T_emitted", -1) < 0) continue;
        ev = ee;
        checked++;
        const long T = tr_json_int(e, ee, "T_emitted", -1), nid = tr_json_int(e, ee, "n_ids", -1),
                   com = tr_json_int(e, ee, "committed", -1);
        const bool ok = u.audio_committed_ms == T * 20 && transcribe_n_tokens(s) == nid &&
                        transcribe_stream_n_committed_tokens(s) == com;
        if (!ok && mismatches++ < 3)
            printf("%s call %d: T %lld/%ld ids %d/%ld committed %d/%ld\n", name, i,
                   (long long)u.audio_committed_ms / 20, T, transcribe_n_tokens(s), nid,
                   transcribe_stream_n_committed_tokens(s), com);
    }
    CHECK_MSG(mismatches == 0, "%s: %d of %d calls differ from the trace", name, mismatches,
              checked);
    struct transcribe_stream_update u;
    memset(&u, 0, sizeof u);
    u.struct_size = sizeof u;
    CHECK(transcribe_stream_finalize(s, &u) == TRANSCRIBE_OK);
    CHECK(u.is_final);
    /* partial decodes stop at their budgets; the final one reaches EOS */
    CHECK_MSG(!transcribe_was_truncated(s), "%s: truncated", name);
    bool same = transcribe_n_tokens(s) == n_final;
    for (int k = 0; same && k < n_final; k++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        same = transcribe_get_token(s, k, &t) == TRANSCRIBE_OK && t.id == final_ids[k];
    }
    CHECK_MSG(same, "%s: final ids differ (%d tokens)", name, transcribe_n_tokens(s));
    char want[1024];
    tr_json_str(o, end, "final_text", want, sizeof want);
    tr_stream_texts(s, cur, sizeof cur, NULL, 0);
    CHECK_MSG(!strcmp(cur, want), "%s: final committed [%s]", name, cur);
    printf("%-20s %d calls checked, final: %.60s\n", name, checked, cur);
}

/* The same final committed text for every feed size, equal to one-shot. */
static void sizes(struct transcribe_session *s, const float *pcm, int n) {
    const transcribe_status st = transcribe_run(s, pcm, n, NULL);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    char offline[2048];
    snprintf(offline, sizeof offline, "%s", transcribe_full_text(s));
    static const int ms[] = {10, 30, 70, 240, 500, 1300, 2000};
    for (size_t j = 0; j < sizeof ms / sizeof *ms; j++) {
        const int chunk = ms[j] * 16;
        CHECK(begin(s, -1, 0) == TRANSCRIBE_OK);
        for (int at = 0; at < n; at += chunk)
            CHECK(transcribe_stream_feed(s, pcm + at, n - at < chunk ? n - at : chunk, NULL) ==
                  TRANSCRIBE_OK);
        CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
        CHECK(transcribe_was_truncated(s) == (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED));
        char c[2048];
        tr_stream_texts(s, c, sizeof c, NULL, 0);
        CHECK_MSG(!strcmp(c, offline), "%d ms feeds: [%s] vs one-shot [%s]", ms[j], c, offline);
    }
}

static void errors(struct transcribe_session *s, const float *pcm, int n) {
    /* an interval below -1, a wrong extension kind */
    CHECK(begin(s, -2, 0) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    struct transcribe_moonshine_streaming_stream_ext ext;
    transcribe_moonshine_streaming_stream_ext_init(&ext);
    ext.ext.kind = 0x12345678u;
    sp.family = &ext.ext;
    CHECK(transcribe_stream_begin(s, NULL, &sp) != TRANSCRIBE_OK);
    /* abort mid-stream */
    CHECK(begin(s, 0, 0) == TRANSCRIBE_OK);
    tr_stream_expect_abort(s, pcm, n, 40);
    /* an empty stream finalizes to an empty result */
    CHECK(begin(s, -1, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_n_tokens(s) == 0);
}

/* A long stream: ~100 adapter tables' worth of the clip (and silence)
 * in 100 ms feeds; segments close at quiet frames, so the family's
 * buffers stay bounded and the committed text keeps growing. */
static void long_stream(struct transcribe_session *s, const float *clip, int n_clip) {
    const int reps = 40, gap = 8000, per = n_clip + gap, n = reps * per;
    float *pcm = calloc((size_t)n, sizeof *pcm);
    for (int r = 0; r < reps; r++) memcpy(pcm + (size_t)r * per, clip, sizeof(float) * n_clip);
    CHECK(begin(s, -1, 0) == TRANSCRIBE_OK);
    const mss_session *fs = tr_session_head_of(s)->fsession;
    double t_first = 0, t_last = 0;
    size_t cap_first = 0;
    size_t prev_len = 0;
    const int chunk = 1600, feeds = n / chunk;
    for (int i = 0; i < feeds; i++) {
        const double t0 = tr_time_ms();
        CHECK(transcribe_stream_feed(s, pcm + (size_t)i * chunk, chunk, NULL) == TRANSCRIBE_OK);
        const double dt = tr_time_ms() - t0;
        if (i < feeds / 4) t_first += dt;
        if (i >= feeds - feeds / 4) t_last += dt;
        if (i == feeds / 4) cap_first = fs->cap_frames + (size_t)fs->enc.out.cap;
        char c[1 << 14];
        tr_stream_texts(s, c, sizeof c, NULL, 0);
        CHECK(strlen(c) >= prev_len);
        prev_len = strlen(c);
    }
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    const size_t cap_last = fs->cap_frames + (size_t)fs->enc.out.cap;
    CHECK_MSG(cap_last == cap_first, "buffers grew: %zu -> %zu rows", cap_first, cap_last);
    CHECK(fs->cap_frames <= 2 * (size_t)fs->m->hp.max_pos);
    CHECK(transcribe_n_segments(s) >= reps / 2);
    /* The closed segments sit on the stream's clock: the result is timed
     * per segment (the family itself times nothing finer), so subtitles get
     * one cue per segment, in order and inside the audio, not one cue over
     * the whole stream. */
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    int64_t prev_t1 = 0;
    for (int i = 0; i < transcribe_n_segments(s); i++) {
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        CHECK(transcribe_get_segment(s, i, &g) == TRANSCRIBE_OK);
        CHECK_MSG(g.t0_ms >= prev_t1 && g.t1_ms > g.t0_ms && g.t1_ms <= (int64_t)n * 1000 / 16000,
                  "segment %d: %lld - %lld ms after %lld", i, (long long)g.t0_ms,
                  (long long)g.t1_ms, (long long)prev_t1);
        prev_t1 = g.t1_ms;
    }
    struct transcribe_format_params fp;
    transcribe_format_params_init(&fp);
    fp.format = TRANSCRIBE_FORMAT_SRT;
    fp.duration_s = (double)n / 16000;
    char *srt = NULL;
    CHECK(transcribe_format_result(s, -1, &fp, &srt, NULL) == TRANSCRIBE_OK);
    int cues = 0;
    for (const char *p = srt; p && (p = strstr(p, " --> ")) != NULL; p += 5) cues++;
    CHECK_MSG(cues == transcribe_n_segments(s), "%d cues for %d segments", cues,
              transcribe_n_segments(s));
    transcribe_format_free(srt);
    /* the stream's stage times add up its feeds (a rebuilt result once
     * dropped them: the CLI printed encode=0.00 decode=0.00) */
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    CHECK(transcribe_get_timings(s, &tm) == TRANSCRIBE_OK);
    CHECK_MSG(tm.encode_ms > 0.0f && tm.decode_ms > 0.0f, "encode %.3f ms, decode %.3f ms",
              (double)tm.encode_ms, (double)tm.decode_ms);
    printf("long stream: %d s, %d feeds, %d segments, %zu committed bytes; per-feed ms first "
           "quarter %.3f, last quarter %.3f\n",
           n / 16000, feeds, transcribe_n_segments(s), prev_len, t_first / (feeds / 4),
           t_last / (feeds / 4));
    free(pcm);
}

int main(void) {
    const char *path = MSS_DIR "/moonshine-streaming-tiny-ref-F32.gguf";
    if (!tr_test_file_exists(path)) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    g_js = tr_test_read_text(MSS_DIR "/stream.json", NULL);
    CHECK(g_js != NULL);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &g_model) == TRANSCRIBE_OK);
    CHECK(g_model && transcribe_session_init(g_model, NULL, &s) == TRANSCRIBE_OK);
    int n = 0, n_min = 0;
    float *pcm = load_clip("clip", &n), *pmin = load_clip("clip_min", &n_min);
    if (s && pcm && pmin && g_js) {
        struct transcribe_capabilities caps;
        memset(&caps, 0, sizeof caps);
        caps.struct_size = sizeof caps;
        CHECK(transcribe_model_get_capabilities(g_model, &caps) == TRANSCRIBE_OK);
        CHECK(caps.supports_streaming);
        static const char *const cases[] = {
            "chunk20ms",   "chunk20ms_i0", "chunk20ms_i500", "chunk100ms",    "chunk500ms",
            "chunk1000ms", "chunk1ms_i0",  "chunk1234",      "chunk100ms_n1", "whole"};
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) trace(s, pcm, n, cases[c]);
        /* one segment: reported as the one-shot run reports it */
        CHECK(transcribe_n_segments(s) == 1 &&
              transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_NONE);
        sizes(s, pcm, n);
        sizes(s, pcm, 39900);
        sizes(s, pmin, n_min); /* one frame: the one-shot's truncated text (README) */
        errors(s, pcm, n);
        long_stream(s, pcm, n);
    }
    transcribe_audio_free(pcm);
    transcribe_audio_free(pmin);
    transcribe_session_free(s);
    transcribe_model_free(g_model);
    free(g_js);
    return TEST_DONE();
}
