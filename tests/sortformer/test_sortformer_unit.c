/* Sortformer pieces without a model file, and the speaker attribution rule
 * of core/speaker_label.h:
 * - speaker attribution on hand-made activity grids: a word inside one
 *   speaker's turn, words straddling a speaker change (the longer overlap
 *   wins), overlapping speech (the stronger / longer speaker wins, ties to
 *   the lower id), a word in a pause (the nearest active frame), a
 *   zero-length word, nothing active (0), segments by their words;
 * - rows to a grid (speaker_label.h) and back;
 * - docs/formats/sortformer.md §6.5 segments: runs of p > 0.5 per speaker, 80 ms, in time order;
 * - docs/formats/sortformer.md §6.3 state update: the FIFO and cache bookkeeping, the silence
 * profile;
 * - docs/formats/sortformer.md §6.4 compression: the cache shrinks to spkcache_len, keeps each
 *   speaker's confident frames, pads with the silence profile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "core/speaker_label.h"
#include "models/sortformer/sortformer.h"
#include "test_util.h"

/* ---- speaker_label ---- */

/* 10 frames of 100 ms, 3 speakers: speaker 1 on [0, 400), speaker 2 on
 * [400, 800) with speaker 3 overlapping [600, 1000) (weaker at 0.6), and
 * nothing anywhere else. */
static float g_act[10 * 3];

static void make_grid(void) {
    memset(g_act, 0, sizeof g_act);
    for (int t = 0; t < 4; t++) g_act[t * 3 + 0] = 0.9f;
    for (int t = 4; t < 8; t++) g_act[t * 3 + 1] = 0.8f;
    for (int t = 6; t < 10; t++) g_act[t * 3 + 2] = 0.6f;
}

static void test_spans(void) {
    make_grid();
    const tr_speaker_activity a = {g_act, 10, 3, 100.0};
    CHECK(tr_speaker_for_span(&a, 50, 350) == 1);  /* inside speaker 1 */
    CHECK(tr_speaker_for_span(&a, 250, 550) == 1); /* straddles 400: 150 ms vs 150 ms, 0.9 > 0.8 */
    CHECK(tr_speaker_for_span(&a, 300, 700) == 2); /* 100 ms of 1 vs 300 ms of 2 */
    CHECK(tr_speaker_for_span(&a, 350, 450) == 1); /* 50·0.9 vs 50·0.8 */
    /* overlap [600, 800): 2 at 0.8 beats 3 at 0.6 on the same span */
    CHECK(tr_speaker_for_span(&a, 600, 800) == 2);
    /* [650, 950): 2 has 150 ms · 0.8 = 120, 3 has 300 ms · 0.6 = 180 */
    CHECK(tr_speaker_for_span(&a, 650, 950) == 3);
    /* equal scores go to the lower id */
    float tie[2 * 2] = {0.7f, 0.7f, 0.7f, 0.7f};
    const tr_speaker_activity at = {tie, 2, 2, 100.0};
    CHECK(tr_speaker_for_span(&at, 0, 200) == 1);
    /* past the grid: nearest active frame (t = 9, speaker 3) */
    CHECK(tr_speaker_for_span(&a, 1200, 1300) == 3);
    /* reversed and zero-length spans */
    CHECK(tr_speaker_for_span(&a, 350, 50) == 1);
    CHECK(tr_speaker_for_span(&a, 420, 420) == 2);
    /* a pause in the middle: 5 frames with speaker 1, 3 silent, 2 with speaker 2 */
    float gap[10 * 2] = {0};
    for (int t = 0; t < 5; t++) gap[t * 2] = 1.0f;
    for (int t = 8; t < 10; t++) gap[t * 2 + 1] = 1.0f;
    const tr_speaker_activity ag = {gap, 10, 2, 100.0};
    CHECK(tr_speaker_for_span(&ag, 520, 560) == 1); /* nearer frame 4 */
    CHECK(tr_speaker_for_span(&ag, 720, 780) == 2); /* nearer frame 8 */
    /* nothing active, or no grid */
    float none[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    const tr_speaker_activity an = {none, 2, 2, 100.0};
    CHECK(tr_speaker_for_span(&an, 0, 200) == 0);
    CHECK(tr_speaker_for_span(NULL, 0, 200) == 0);
}

static void test_result(void) {
    make_grid();
    const tr_speaker_activity a = {g_act, 10, 3, 100.0};
    tr_result r;
    tr_result_init(&r);
    int s0 = tr_result_add_segment(&r, 0, 700, "one two three");
    tr_result_add_word(&r, 0, 300, s0, "one");
    tr_result_add_word(&r, 300, 500, s0, "two"); /* straddles 400 */
    tr_result_add_word(&r, 500, 700, s0, "three");
    int s1 = tr_result_add_segment(&r, 700, 1000, "four");
    tr_result_add_word(&r, 700, 1000, s1, "four");
    tr_result_add_segment(&r, 50, 150, "no words");
    tr_speaker_label_result(&r, &a);
    CHECK(r.words[0].speaker_id == 1);
    CHECK(r.words[1].speaker_id == 1); /* 100 ms · 0.9 vs 100 ms · 0.8 */
    CHECK(r.words[2].speaker_id == 2);
    CHECK(r.words[3].speaker_id == 3); /* 100 · 0.8 vs 300 · 0.6 */
    CHECK(r.segs[0].speaker_id == 1);  /* words: 500 ms of 1, 200 ms of 2 */
    CHECK(r.segs[1].speaker_id == 3);
    CHECK(r.segs[2].speaker_id == 1); /* its own span */
    tr_result_free(&r);
}

static void test_rows_grid(void) {
    const tr_result_speaker rows[3] = {{0, 400, 1, NAN}, {400, 800, 2, NAN}, {560, 1000, 3, NAN}};
    float *act = NULL;
    int nf = 0, ns = 0;
    CHECK(tr_speaker_activity_from_rows(rows, 3, 80.0, &act, &nf, &ns));
    CHECK(nf == 13 && ns == 3); /* ceil(1000 / 80) */
    /* frame 4 (320..400) belongs to 1, frame 5 (400..480) to 2, frame 7 (560..640) to 2 and 3 */
    CHECK(act && act[4 * 3 + 0] == 1.0f && act[4 * 3 + 1] == 0.0f);
    CHECK(act && act[5 * 3 + 1] == 1.0f && act[5 * 3 + 0] == 0.0f);
    CHECK(act && act[7 * 3 + 1] == 1.0f && act[7 * 3 + 2] == 1.0f);
    free(act);
    CHECK(tr_speaker_activity_from_rows(rows, 0, 80.0, &act, &nf, &ns) && nf == 0 && !act);
}

/* ---- docs/formats/sortformer.md §6.5 segments ---- */

static void test_segments(void) {
    /* 6 frames, 2 speakers: speaker 1 on frames 0-1 and 4, speaker 2 on 1-3 */
    const float p[6 * 2] = {0.9f, 0.1f, 0.8f, 0.7f, 0.2f, 0.9f, 0.5f, 0.6f, 0.6f, 0.4f, 0.1f, 0.1f};
    int64_t *rows = NULL;
    const int n = tr_sf_segments(p, 6, 2, 80.0, &rows);
    CHECK(n == 3);
    if (n == 3) {
        /* time order: [0,160) spk 1, [80,320) spk 2, [320,400) spk 1 (0.5 is not > 0.5) */
        CHECK(rows[0] == 0 && rows[1] == 160 && rows[2] == 1);
        CHECK(rows[3] == 80 && rows[4] == 320 && rows[5] == 2);
        CHECK(rows[6] == 320 && rows[7] == 400 && rows[8] == 1);
    }
    free(rows);
}

/* ---- docs/formats/sortformer.md §6.3 / §6.4 state ---- */

static void test_update(void) {
    sf_state st;
    const int d = 3, S = 4;
    CHECK(tr_sf_state_init(&st, d, S));
    const sf_stream_cfg cfg = {
        .chunk_len = 4, .lc = 1, .rc = 1, .fifo_len = 2, .update_period = 3, .spkcache_len = 100};
    /* chunk 1: T_diar 5 (lcf 0, rcf 1): C = 4 frames; empty cache and FIFO */
    float E[6 * 3], pr[16 * 4];
    for (int i = 0; i < 6 * 3; i++) E[i] = (float)i;
    for (int i = 0; i < 16 * 4; i++) pr[i] = 0.01f * (float)(i % 7);
    CHECK(tr_sf_state_update(&st, &cfg, E, 5, pr, 0, 1));
    /* FIFO 0 + 4 > 2: pop max(3, 4 - 2 + 0) = 3 rows into the cache */
    CHECK(st.out_n == 4 && st.sc_n == 3 && st.ff_n == 1);
    CHECK(st.sc[0] == 0.0f && st.sc[2 * 3] == 6.0f && st.ff[0] == 9.0f);
    /* every popped row is silent (sum < 0.2): profile = their mean */
    CHECK(st.n_sil == 3);
    CHECK_NEAR(st.msil[0], (0.0 + 3.0 + 6.0) / 3, 1e-6);
    CHECK(!st.sc_p_init);
    /* chunk 2 (lcf 1, rcf 1): pr rows = 3 cache + 1 FIFO + 6 chunk */
    CHECK(tr_sf_state_update(&st, &cfg, E, 6, pr, 1, 1));
    CHECK(st.out_n == 8 && st.ff_n + st.sc_n == 3 + 1 + 4);
    CHECK(st.ff_n <= cfg.fifo_len);
    tr_sf_state_free(&st);
}

static void test_compress(void) {
    sf_state st;
    const int d = 2, S = 4, L = 24; /* per speaker 24/4 - 3 = 3 */
    CHECK(tr_sf_state_init(&st, d, S));
    const int N = 40;
    st.sc = malloc(sizeof(float) * N * d);
    st.sc_p = malloc(sizeof(float) * N * S);
    st.sc_cap = st.scp_cap = N;
    st.sc_n = N;
    st.sc_p_init = true;
    st.msil[0] = -1.0f, st.msil[1] = -2.0f;
    for (int i = 0; i < N; i++) {
        st.sc[i * d] = (float)i, st.sc[i * d + 1] = 0.0f;
        for (int s = 0; s < S; s++) st.sc_p[i * S + s] = 0.05f;
        /* speaker 1 on frames 0..19 (confidence rising), speaker 2 on 20..29 */
        if (i < 20) st.sc_p[i * S + 0] = 0.6f + 0.015f * (float)i;
        if (i >= 20 && i < 30) st.sc_p[i * S + 1] = 0.9f;
    }
    CHECK(tr_sf_compress(&st, L));
    CHECK(st.sc_n == L);
    int from1 = 0, from2 = 0, sil = 0;
    float last = -1e9f;
    for (int j = 0; j < L; j++) {
        const float v = st.sc[j * d];
        if (v == -1.0f) {
            sil++;
            CHECK(st.sc_p[j * S] == 0.0f && st.sc_p[j * S + 1] == 0.0f);
            continue;
        }
        CHECK(v > last); /* kept frames stay in time order */
        last = v;
        if (v < 20)
            from1++;
        else if (v < 30)
            from2++;
    }
    printf("compress: %d frames of speaker 1, %d of speaker 2, %d silence\n", from1, from2, sil);
    /* speakers 3 and 4 have no speech: their picks (and 3 sil rows each) are silence */
    CHECK(from1 >= 3 && from2 >= 3 && sil >= 2 * 3 + 2 * 3);
    CHECK(from1 + from2 + sil == L);
    /* frames with no speech at all (30..39) are never kept */
    for (int j = 0; j < L; j++) CHECK(!(st.sc[j * d] >= 30.0f));
    tr_sf_state_free(&st);
}

int main(void) {
    test_spans();
    test_result();
    test_rows_grid();
    test_segments();
    test_update();
    test_compress();
    return TEST_DONE();
}
