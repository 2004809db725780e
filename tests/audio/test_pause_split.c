/* Pause detection and chunk planning on synthetic signals whose pauses are
 * known: tone bursts (amplitude-modulated like syllables) separated by
 * silences over a noise floor, a floor that jumps by 25 dB, continuous sound
 * with no pause (forced cuts at the quietest frame), very short audio,
 * silence only, stationary loud noise, and bad arguments. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audio/pause_split.h"
#include "test_util.h"
#include "transcribe.h"

#define RATE 16000
#define PI   3.14159265358979323846

static uint32_t g_rng = 12345u;

static float noise(void) { /* uniform in [-1, 1) */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((double)(g_rng >> 8) / 8388608.0 - 1.0);
}

/* A burst of "speech": a 300 Hz + 1.1 kHz tone under a 4 Hz syllable
 * envelope that never falls below 40 % (so no false pause inside). */
static void burst(float *x, int64_t a, int64_t b, float amp) {
    for (int64_t i = a; i < b; i++) {
        double t = (double)(i - a) / RATE;
        double env = 0.7 + 0.3 * sin(2 * PI * 4.0 * t);
        x[i] +=
            (float)(amp * env * (0.7 * sin(2 * PI * 300.0 * t) + 0.3 * sin(2 * PI * 1100.0 * t)));
    }
}

static void add_noise(float *x, int64_t a, int64_t b, float amp) {
    for (int64_t i = a; i < b; i++) x[i] += amp * noise();
}

typedef struct {
    int64_t a, b; /* silence [a, b) in samples */
} gap;

/* Bursts and gaps laid out from lengths in ms; returns the signal length. */
static int64_t layout(float *x, int64_t cap, const int *burst_ms, const int *gap_ms, int n_bursts,
                      float amp, gap *gaps) {
    int64_t pos = 0;
    for (int k = 0; k < n_bursts; k++) {
        int64_t len = (int64_t)burst_ms[k] * RATE / 1000;
        if (pos + len > cap) break;
        burst(x, pos, pos + len, amp);
        pos += len;
        if (k + 1 < n_bursts) {
            int64_t g = (int64_t)gap_ms[k] * RATE / 1000;
            gaps[k] = (gap){pos, pos + g};
            pos += g;
        }
    }
    return pos;
}

static bool in_some_gap(int64_t s, const gap *g, int n, int64_t tol) {
    for (int k = 0; k < n; k++)
        if (s >= g[k].a - tol && s <= g[k].b + tol) return true;
    return false;
}

/* Spans are ordered, disjoint, non-empty, within [0, n], each at most max. */
static void check_spans(const struct transcribe_audio_span *sp, int ns, int64_t n, int64_t max) {
    for (int i = 0; i < ns; i++) {
        CHECK_MSG(sp[i].start >= 0 && sp[i].end <= n && sp[i].start < sp[i].end, "span %d", i);
        CHECK_MSG(sp[i].end - sp[i].start <= max, "span %d: %lld samples > %lld", i,
                  (long long)(sp[i].end - sp[i].start), (long long)max);
        if (i > 0) CHECK(sp[i].start >= sp[i - 1].end);
    }
}

/* 40 bursts of 1.5..6 s with gaps of 0.3..1.6 s over a -60 dBFS floor,
 * optionally the second half with a -35 dBFS floor (a noisy room). */
static void bursts_and_pauses(bool noisy_second_half) {
    enum { NB = 40 };
    int burst_ms[NB], gap_ms[NB];
    for (int k = 0; k < NB; k++) {
        burst_ms[k] = 1500 + (int)((noise() + 1.0f) * 2250.0f);
        gap_ms[k] = 300 + (int)((noise() + 1.0f) * 650.0f);
    }
    int64_t cap = (int64_t)RATE * 300;
    float *x = calloc((size_t)cap, sizeof *x);
    gap gaps[NB];
    int64_t n = layout(x, cap, burst_ms, gap_ms, NB, 0.3f, gaps);
    add_noise(x, 0, n, 0.001f * 1.73f); /* uniform: rms = amp / sqrt(3) */
    if (noisy_second_half) add_noise(x, gaps[NB / 2].b, n, 0.0178f * 1.73f); /* from a burst on */

    tr_pause_track t;
    CHECK(tr_pause_find(x, n, RATE, 250, &t) == TRANSCRIBE_OK);
    CHECK(t.has_speech && t.speech_start < RATE / 50 && t.speech_end > n - RATE / 50);
    /* Every gap is found within 40 ms at each side, and nothing else. */
    /* After the floor steps up 25 dB, the floor estimate takes up to 9.4 s
     * (97 % of its ±10 s window) to follow: those gaps may be missed. */
    int64_t lag_a = gaps[NB / 2].b, lag_b = lag_a + RATE * 94 / 10;
    int found = 0, exempt = 0;
    for (int k = 0; k < NB - 1; k++) {
        int before = found;
        if (noisy_second_half && gaps[k].a >= lag_a && gaps[k].a < lag_b) {
            exempt++;
            for (int j = 0; j < t.n_pauses; j++)
                if (t.pauses[j].end > gaps[k].a && t.pauses[j].start < gaps[k].b) found++;
            continue;
        }
        for (int j = 0; j < t.n_pauses; j++) {
            const tr_pause *p = &t.pauses[j];
            if (p->end <= gaps[k].a || p->start >= gaps[k].b) continue;
            found++;
            CHECK_MSG(llabs(p->start - gaps[k].a) <= RATE / 25 &&
                          llabs(p->end - gaps[k].b) <= RATE / 25,
                      "gap %d [%lld, %lld) found as [%lld, %lld)", k, (long long)gaps[k].a,
                      (long long)gaps[k].b, (long long)p->start, (long long)p->end);
            CHECK(p->depth_db > 3.0f);
        }
        CHECK_MSG(found == before + 1, "gap %d [%.3f, %.3f) s found %d times", k,
                  (double)gaps[k].a / RATE, (double)gaps[k].b / RATE, found - before);
    }
    CHECK_MSG(found >= NB - 1 - exempt && found <= NB - 1, "%d of %d gaps found", found, NB - 1);
    CHECK_MSG(t.n_pauses == found, "%d pauses for %d gaps found", t.n_pauses, found);
    tr_pause_track_free(&t);

    struct transcribe_audio_span *sp = NULL;
    int ns = 0;
    CHECK(transcribe_pause_split(x, n, RATE, NULL, &sp, &ns) == TRANSCRIBE_OK);
    int64_t max = 30 * RATE;
    CHECK_MSG(ns >= (int)(n / max) + 1 && ns <= (int)(n / (5 * RATE)) + 1, "%d spans", ns);
    check_spans(sp, ns, n, max);
    for (int i = 0; i + 1 < ns; i++) {
        CHECK(sp[i].end_kind == TRANSCRIBE_SPAN_END_PAUSE);
        /* Both sides of every cut are in a gap (these are all short enough
         * to be cut, not dropped). */
        CHECK_MSG(in_some_gap(sp[i].end, gaps, NB - 1, 0) &&
                      in_some_gap(sp[i + 1].start, gaps, NB - 1, 0),
                  "cut %d at %.3f / %.3f s is not in a gap", i, (double)sp[i].end / RATE,
                  (double)sp[i + 1].start / RATE);
        CHECK(sp[i + 1].start == sp[i].end);
    }
    CHECK(ns > 0 && sp[ns - 1].end_kind == TRANSCRIBE_SPAN_END_SPEECH && sp[0].start == 0 &&
          sp[ns - 1].end == n);
    transcribe_pause_split_free(sp);
    free(x);
}

/* Short quiet runs between bursts (150 ms) are not pauses at 250 ms. */
static void short_gaps_are_not_pauses(void) {
    int burst_ms[] = {3000, 3000, 3000};
    int gap_ms[] = {150, 600};
    float *x = calloc((size_t)RATE * 10, sizeof *x);
    gap gaps[2];
    int64_t n = layout(x, (int64_t)RATE * 10, burst_ms, gap_ms, 3, 0.2f, gaps);
    add_noise(x, 0, n, 0.002f);
    tr_pause_track t;
    CHECK(tr_pause_find(x, n, RATE, 250, &t) == TRANSCRIBE_OK);
    CHECK_MSG(t.n_pauses == 1, "%d pauses", t.n_pauses);
    if (t.n_pauses == 1) CHECK(t.pauses[0].start >= gaps[1].a - RATE / 25);
    tr_pause_track_free(&t);
    CHECK(tr_pause_find(x, n, RATE, 100, &t) == TRANSCRIBE_OK);
    CHECK_MSG(t.n_pauses == 2, "%d pauses at min 100 ms", t.n_pauses);
    tr_pause_track_free(&t);
    free(x);
}

/* One long silence (10 s) between two bursts is left out of the spans. */
static void long_silence_left_out(void) {
    int burst_ms[] = {8000, 8000};
    int gap_ms[] = {10000};
    int64_t cap = (int64_t)RATE * 30;
    float *x = calloc((size_t)cap, sizeof *x);
    gap gaps[1];
    int64_t n = layout(x, cap, burst_ms, gap_ms, 2, 0.3f, gaps);
    add_noise(x, 0, n, 0.001f);
    struct transcribe_pause_split_params p;
    transcribe_pause_split_params_init(&p);
    p.target_ms = 10000;
    p.max_ms = 15000;
    struct transcribe_audio_span *sp = NULL;
    int ns = 0;
    CHECK(transcribe_pause_split(x, n, RATE, &p, &sp, &ns) == TRANSCRIBE_OK);
    CHECK_MSG(ns == 2, "%d spans", ns);
    if (ns == 2) {
        CHECK(sp[0].start == 0 && sp[0].end <= gaps[0].a + RATE * 11 / 10);
        CHECK(sp[1].start >= gaps[0].b - RATE * 11 / 10 && sp[1].end == n);
    }
    transcribe_pause_split_free(sp);
    free(x);
}

/* 70 s of continuous sound: cuts are forced, contiguous, never past the
 * cap; a 60 ms dip (shorter than a pause) at 25 s is where the first one
 * lands. */
static void no_pause_forced_cuts(void) {
    int64_t n = (int64_t)RATE * 70;
    float *x = calloc((size_t)n, sizeof *x);
    burst(x, 0, n, 0.3f);
    for (int64_t i = 25 * RATE; i < 25 * RATE + RATE * 6 / 100; i++) x[i] *= 0.05f;
    add_noise(x, 0, n, 0.001f);
    struct transcribe_audio_span *sp = NULL;
    int ns = 0;
    CHECK(transcribe_pause_split(x, n, RATE, NULL, &sp, &ns) == TRANSCRIBE_OK);
    CHECK_MSG(ns == 3, "%d spans", ns);
    check_spans(sp, ns, n, 30 * RATE);
    for (int i = 0; i + 1 < ns; i++) {
        CHECK(sp[i].end_kind == TRANSCRIBE_SPAN_END_FORCED);
        CHECK(sp[i].end == sp[i + 1].start);
    }
    if (ns > 1) {
        CHECK_MSG(sp[0].end >= 25 * RATE && sp[0].end <= 25 * RATE + RATE * 6 / 100,
                  "first forced cut at %.3f s", (double)sp[0].end / RATE);
    }
    CHECK(ns > 0 && sp[0].start == 0 && sp[ns - 1].end == n);
    transcribe_pause_split_free(sp);
    free(x);
}

static int split_count(const float *x, int64_t n, struct transcribe_audio_span *first) {
    struct transcribe_audio_span *sp = NULL;
    int ns = -1;
    if (transcribe_pause_split(x, n, RATE, NULL, &sp, &ns) != TRANSCRIBE_OK) return -1;
    if (ns > 0 && first) *first = sp[0];
    check_spans(sp, ns, n, 30 * RATE);
    transcribe_pause_split_free(sp);
    return ns;
}

static void short_and_silent(void) {
    int64_t n = (int64_t)RATE * 80;
    float *x = calloc((size_t)n, sizeof *x);
    struct transcribe_audio_span s0;
    /* very short: one span around the sound */
    burst(x, RATE / 10, RATE * 6 / 10, 0.3f);
    CHECK(split_count(x, RATE * 7 / 10, &s0) == 1);
    CHECK(s0.start == 0 && s0.end == RATE * 7 / 10 && s0.end_kind == TRANSCRIBE_SPAN_END_SPEECH);
    CHECK(split_count(x + RATE / 5, 5, &s0) == 1); /* 5 samples of tone */
    CHECK(split_count(x, 0, NULL) == 0);
    /* silence: digital zero, then a -70 dBFS hiss */
    memset(x, 0, (size_t)n * sizeof *x);
    CHECK(split_count(x, n, NULL) == 0);
    add_noise(x, 0, n, 0.0005f);
    CHECK(split_count(x, n, NULL) == 0);
    /* one word in a minute of hiss: one short span */
    burst(x, 40 * RATE, 41 * RATE, 0.3f);
    CHECK(split_count(x, n, &s0) == 1);
    CHECK(s0.start >= 40 * RATE - RATE * 11 / 10 && s0.end <= 41 * RATE + RATE * 11 / 10);
    /* loud stationary noise: no structure, so kept whole and force-cut */
    memset(x, 0, (size_t)n * sizeof *x);
    add_noise(x, 0, n, 0.3f);
    int ns = split_count(x, n, &s0);
    CHECK_MSG(ns >= 3 && ns <= 8 && s0.start == 0 && s0.end_kind == TRANSCRIBE_SPAN_END_FORCED,
              "%d spans", ns);
    /* non-finite samples do not break the analysis */
    x[100] = NAN;
    x[200] = INFINITY;
    ns = split_count(x, n, NULL);
    CHECK(ns >= 3 && ns <= 8);
    free(x);
}

static void bad_arguments(void) {
    float x[16] = {0};
    struct transcribe_audio_span *sp = (void *)1;
    int ns = 7;
    struct transcribe_pause_split_params p;
    transcribe_pause_split_params_init(&p);
    CHECK(p.struct_size == sizeof p && p.target_ms == 20000 && p.max_ms == 30000 &&
          p.min_pause_ms == 250);
    CHECK(transcribe_pause_split(NULL, 16, RATE, NULL, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(sp == NULL && ns == 0);
    CHECK(transcribe_pause_split(x, -1, RATE, NULL, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_pause_split(x, 16, 0, NULL, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_pause_split(x, 16, RATE, NULL, NULL, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_pause_split(x, 16, RATE, NULL, &sp, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    p.target_ms = 500;
    CHECK(transcribe_pause_split(x, 16, RATE, &p, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_pause_split_params_init(&p);
    p.max_ms = 10000;
    CHECK(transcribe_pause_split(x, 16, RATE, &p, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_pause_split_params_init(&p);
    p.min_pause_ms = 5;
    CHECK(transcribe_pause_split(x, 16, RATE, &p, &sp, &ns) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_pause_split_params_init(&p);
    p.struct_size = 8;
    CHECK(transcribe_pause_split(x, 16, RATE, &p, &sp, &ns) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    transcribe_pause_split_params_init(NULL); /* no-op */
    transcribe_pause_split_free(NULL);
}

int main(void) {
    bursts_and_pauses(false);
    bursts_and_pauses(true);
    short_gaps_are_not_pauses();
    long_silence_left_out();
    no_pause_forced_cuts();
    short_and_silent();
    bad_arguments();
    return TEST_DONE();
}
