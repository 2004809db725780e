/* The long-audio window path (README.md "Long audio"), kept fast enough for
 * the sanitizer run by shrinking the windows:
 *   - the cut rule on synthetic token lists: tokens both windows emit with a
 *     small frame jitter are kept exactly once, nothing is dropped;
 *   - jfk through 5 s windows on the tiny TDT model: times monotone, inside
 *     the audio, offset to the original timeline (the first window's
 *     tokens before the first cut equal the tokens that window produces on
 *     its own);
 *   - the session's buffers are the same size for 3× and 6× the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_loaded.h"
#include "pk_test.h"
#include "test_util.h"

static void push(pk_toks *t, int id, int frame) {
    pk_tok k = {id, frame, 1, 1.0f};
    tr_pk_toks_push(t, k);
}

static void test_cut_rule(void) {
    pk_window_cfg w = {
        .max_frames = 100, .win_frames = 100, .hop_frames = 60, .margin = 8, .gap = 2};
    /* P covers [0, 100), Q covers [60, 160); a word every 7 frames, Q sees
     * the overlap's tokens one frame later */
    pk_toks P = {0}, Q = {0}, all = {0};
    for (int f = 3, id = 0; f < 100; f += 7, id++) push(&P, id, f);
    for (int f = 3, id = 0; f < 160; f += 7, id++)
        if (f >= 60) push(&Q, id, f + 1);
    int c = tr_pk_choose_cut(&w, &P, &Q, 60, 100);
    CHECK(c >= 68 && c <= 92);
    for (int i = 0; i < P.n; i++) CHECK(abs(P.v[i].frame - c) > 2);
    for (int i = 0; i < Q.n; i++) CHECK(abs(Q.v[i].frame - c) > 2);
    CHECK(tr_pk_keep_range(&all, &P, 0, c) == TRANSCRIBE_OK);
    CHECK(tr_pk_keep_range(&all, &Q, c, 1 << 30) == TRANSCRIBE_OK);
    /* ids 0..22 exactly once each, in order */
    int n_ids = (160 - 3 + 6) / 7;
    CHECK_MSG(all.n == n_ids, "%d tokens, want %d", all.n, n_ids);
    for (int i = 0; i < all.n; i++) CHECK(all.v[i].id == i);

    /* a token at every frame: no clear cut, the middle is used */
    pk_toks D = {0};
    for (int f = 0; f < 100; f++) push(&D, f, f);
    CHECK(tr_pk_choose_cut(&w, &D, &D, 60, 100) == 80);
    tr_pk_toks_free(&P);
    tr_pk_toks_free(&Q);
    tr_pk_toks_free(&all);
    tr_pk_toks_free(&D);
}

static bool sorted_in(const tr_result *r, int64_t end_ms) {
    for (int i = 0; i < r->n_toks; i++) {
        const tr_result_token *t = &r->toks[i];
        /* t1 may pass the end: a TDT duration from the last frame */
        if (t->t1_ms < t->t0_ms || t->t0_ms < 0 || t->t0_ms > end_ms) return false;
        if (i && t->t0_ms < r->toks[i - 1].t0_ms) return false;
    }
    return true;
}

static void test_small_windows(void) {
    char path[2048];
    pk_path(path, sizeof path, "tiny-tdt", "parakeet-tiny-tdt-F32.gguf");
    pk_loaded L;
    CHECK_MSG(pk_load_internal(path, 2, &L), "%s", path);
    if (!L.s) return;
    int n = 0;
    float *jfk = pk_load_wav("jfk", &n);
    CHECK(jfk != NULL);
    if (!jfk) return;
    /* 5.12 s windows every 3.2 s (jfk: 138 frames → 3 windows) */
    pk_window_cfg w = {.max_frames = 64, .win_frames = 64, .hop_frames = 40, .margin = 6, .gap = 2};
    tr_pk_session_set_windows(L.s, &w);
    tr_result r, first;
    tr_result_init(&r);
    tr_result_init(&first);
    CHECK(pk_run_internal(&L, jfk, n, NULL, &r) == TRANSCRIBE_OK);
    int64_t end_ms = (int64_t)n * 1000 / 16000 + 80;
    CHECK(r.n_toks > 0 && sorted_in(&r, end_ms));
    CHECK(r.n_toks > 0 && r.toks[r.n_toks - 1].t0_ms > 64 * 80); /* beyond the first window */

    /* the first window alone (exactly its samples; a single pass) */
    pk_window_cfg big;
    tr_pk_window_cfg_default(&big);
    tr_pk_session_set_windows(L.s, &big);
    CHECK(pk_run_internal(&L, jfk, 64 * 1280, NULL, &first) == TRANSCRIBE_OK);
    /* rows before the earliest possible cut (40 + margin frames) agree */
    int64_t lim = (int64_t)(40 + w.margin) * 80;
    int k = 0, bad = 0;
    for (; k < first.n_toks && first.toks[k].t0_ms < lim; k++)
        if (k >= r.n_toks || r.toks[k].id != first.toks[k].id ||
            r.toks[k].t0_ms != first.toks[k].t0_ms || r.toks[k].t1_ms != first.toks[k].t1_ms)
            bad++;
    CHECK_MSG(k > 0 && bad == 0, "%d of %d early rows differ", bad, k);
    CHECK(k >= r.n_toks || r.toks[k].t0_ms >= lim);

    /* bounded: 3× and 6× jfk leave the same buffer sizes */
    tr_pk_session_set_windows(L.s, &w);
    float *x6 = malloc((size_t)n * 6 * sizeof(float));
    for (int i = 0; i < 6; i++) memcpy(x6 + (size_t)i * n, jfk, (size_t)n * sizeof(float));
    CHECK(pk_run_internal(&L, x6, 3 * n, NULL, &r) == TRANSCRIBE_OK);
    size_t b3 = tr_pk_session_bytes(L.s);
    CHECK(sorted_in(&r, (int64_t)3 * n * 1000 / 16000 + 80));
    CHECK(pk_run_internal(&L, x6, 6 * n, NULL, &r) == TRANSCRIBE_OK);
    size_t b6 = tr_pk_session_bytes(L.s);
    CHECK_MSG(b3 == b6, "session bytes %zu after 3x, %zu after 6x", b3, b6);
    CHECK(sorted_in(&r, (int64_t)6 * n * 1000 / 16000 + 80));
    CHECK(r.n_toks > 0 && r.toks[r.n_toks - 1].t0_ms > 5 * 11000);
    /* non-finite samples inside a later window only */
    x6[5 * n + 100] = NAN;
    CHECK(pk_run_internal(&L, x6, 6 * n, NULL, &r) == TRANSCRIBE_OK);
    free(x6);
    free(jfk);
    tr_result_free(&r);
    tr_result_free(&first);
    pk_unload_internal(&L);
}

int main(void) {
    test_cut_rule();
    test_small_windows();
    return TEST_DONE();
}
