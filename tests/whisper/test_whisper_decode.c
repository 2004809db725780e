/* Whisper decoding rules without a model: docs/formats/whisper.md §8.5 logit processing, §8.6
 * selection, §8.8 segment retrieval / seek advance, compression ratio, and the estimated token
 * times of §13 (timestamp evidence, voicing weights, anchors and the proportional split). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/whisper/whisper_decode.h"
#include "test_util.h"

#define V   51865
#define TB  50364
#define EOT 50257

static wh_model g_m;

static void init_model(void) {
    memset(&g_m, 0, sizeof g_m);
    g_m.hp.n_vocab = V;
    g_m.eot = EOT;
    g_m.sot = 50258;
    g_m.no_ts = TB - 1;
    g_m.ts_begin = TB;
    g_m.no_speech = TB - 2;
    static int32_t sup[2] = {50258, 50361};
    static int32_t bsup[2] = {220, EOT};
    g_m.suppress = sup;
    g_m.n_suppress = 2;
    g_m.begin_suppress = bsup;
    g_m.n_begin_suppress = 2;
}

static void test_process(void) {
    float *l = malloc(V * sizeof(float));
    wh_proc pc = {.m = &g_m, .want_ts = true, .max_init_idx = 50};
    /* first step: only timestamps <= TB+50 survive, suppressions applied */
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    tr_wh_process_logits(&pc, l, NULL, 0);
    CHECK(isinf(l[440]) && isinf(l[EOT]) && isinf(l[220]) && isinf(l[TB - 1]));
    CHECK(l[TB] == 0.0f && l[TB + 50] == 0.0f && isinf(l[TB + 51]));
    /* after a single opening timestamp: text allowed, earlier timestamps masked */
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[440] = 10.0f; /* strong text token so rule e does not fire */
    int32_t G1[1] = {TB + 10};
    tr_wh_process_logits(&pc, l, G1, 1);
    CHECK(l[440] == 10.0f);
    CHECK(isinf(l[TB + 10]) && isinf(l[TB + 11])); /* penult_ts true (len<2): mask all ts */
    /* text then timestamp (closing): next must be timestamp or EOT; ts >= last allowed */
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[EOT] = 10.0f; /* keep rule e quiet */
    int32_t G2[3] = {TB + 10, 440, TB + 20};
    tr_wh_process_logits(&pc, l, G2, 3);
    CHECK(isinf(l[440]) && l[EOT] == 10.0f);
    CHECK(isinf(l[TB + 19]) && l[TB + 20] == 0.0f && l[TB + 21] == 0.0f);
    /* two timestamps in a row: no timestamp may follow */
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[440] = 5.0f;
    int32_t G3[4] = {TB + 10, 440, TB + 20, TB + 20};
    tr_wh_process_logits(&pc, l, G3, 4);
    CHECK(l[440] == 5.0f && isinf(l[TB + 30]));
    /* rule e: timestamp mass beats the best text token → text masked */
    for (int i = 0; i < V; i++) l[i] = -5.0f;
    l[440] = 1.0f;
    l[TB + 30] = 2.0f;
    int32_t G4[2] = {TB + 10, 440};
    tr_wh_process_logits(&pc, l, G4, 2);
    CHECK(isinf(l[440]) && l[TB + 30] == 2.0f);
    /* no timestamps: only suppressions */
    wh_proc pn = {.m = &g_m, .want_ts = false, .max_init_idx = -1};
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    tr_wh_process_logits(&pn, l, G4, 2);
    CHECK(l[TB + 5] == 0.0f && l[TB - 1] == 0.0f && isinf(l[50258]) && l[EOT] == 0.0f);

    /* selection */
    for (int i = 0; i < V; i++) l[i] = -INFINITY;
    l[7] = 1.0f;
    l[9] = 1.0f;
    l[11] = 0.0f;
    float lp, p;
    wh_rng rng;
    tr_wh_rng_seed(&rng, 5489u);
    CHECK(tr_wh_select(l, V, 0.0f, &rng, &lp, &p) == 7); /* first maximum */
    double z = 2 * exp(1.0) + 1.0;
    CHECK_NEAR(p, exp(1.0) / z, 1e-6);
    CHECK_NEAR(lp, 1.0 - log(z), 1e-6);
    int counts[3] = {0};
    for (int k = 0; k < 3000; k++) {
        int id = tr_wh_select(l, V, 1.0f, &rng, &lp, &p);
        counts[id == 7 ? 0 : id == 9 ? 1 : 2]++;
    }
    CHECK(counts[2] > 200 && counts[2] < 500 && counts[0] > 1000 && counts[1] > 1000);
    free(l);

    /* mt19937 seeded 5489 starts 3499211612, 581869302 */
    tr_wh_rng_seed(&rng, 5489u);
    double u = tr_wh_rng_uniform(&rng);
    CHECK_NEAR(u, 0.8147236863931789, 1e-15);
}

static void test_segments(void) {
    /* docs/formats/whisper.md §8.8 worked example */
    int32_t G[6] = {TB + 0, 1000, TB + 60, TB + 60, 2000, TB + 120};
    wh_seg segs[8];
    int adv = 0;
    int n = tr_wh_retrieve_segments(&g_m, G, 6, 0, 3000, true, segs, &adv);
    CHECK(n == 2);
    CHECK(segs[0].t0_ms == 0 && segs[0].t1_ms == 1200 && segs[0].start == 0 && segs[0].end == 3);
    CHECK(segs[1].t0_ms == 1200 && segs[1].t1_ms == 2400 && segs[1].end == 6);
    CHECK(adv == 3000);
    /* trailing text after the last pair → seek back to the last closed timestamp */
    int32_t H[6] = {TB + 0, 1000, TB + 60, TB + 60, 2000, 3000};
    n = tr_wh_retrieve_segments(&g_m, H, 6, 5000, 3000, true, segs, &adv);
    CHECK(n == 1 && segs[0].t0_ms == 5000 && segs[0].t1_ms == 6200);
    CHECK(adv == 120);
    /* ends with a double timestamp */
    int32_t K[4] = {TB + 0, 1000, TB + 60, TB + 60};
    n = tr_wh_retrieve_segments(&g_m, K, 4, 0, 3000, true, segs, &adv);
    CHECK(n == 1 && segs[0].t1_ms == 1200 && adv == 120);
    /* no pairs: one segment to the last timestamp */
    int32_t P[3] = {TB + 0, 1000, TB + 75};
    n = tr_wh_retrieve_segments(&g_m, P, 3, 30000, 1100, true, segs, &adv);
    CHECK(n == 1 && segs[0].t0_ms == 30000 && segs[0].t1_ms == 31500 && adv == 1100);
    /* no timestamps at all */
    int32_t Q[2] = {1000, 2000};
    n = tr_wh_retrieve_segments(&g_m, Q, 2, 0, 1100, true, segs, &adv);
    CHECK(n == 1 && segs[0].t1_ms == 11000 && adv == 1100);
    n = tr_wh_retrieve_segments(&g_m, Q, 0, 0, 1100, true, segs, &adv);
    CHECK(n == 0 && adv == 1100);
    /* timestamps not requested: pairs are not cut, full advance */
    n = tr_wh_retrieve_segments(&g_m, H, 6, 0, 3000, false, segs, &adv);
    CHECK(n == 1 && segs[0].start == 0 && segs[0].end == 6 && adv == 3000);
}

static void test_compression(void) {
    int32_t rep[200], var[200];
    for (int i = 0; i < 200; i++) {
        rep[i] = 1000 + (i % 4);
        var[i] = (int32_t)((i * 7919u + 13u) % 50000u);
    }
    double cr = tr_wh_compression_ratio(rep, 200), cv = tr_wh_compression_ratio(var, 200);
    printf("compression ratio: repetitive %.2f, varied %.2f\n", cr, cv);
    CHECK(cr > 2.4);
    CHECK(cv < 2.4 && cv > 0.5);
    CHECK(tr_wh_compression_ratio(rep, 0) == 0.0);
    /* zlib gives 11 bytes for one 2-byte token (2 hdr + 3 block + 4 adler ... ) */
    double one = tr_wh_compression_ratio(rep, 1);
    CHECK(one > 0.15 && one < 0.25);
}

/* docs/formats/whisper.md §13.1: the evidence comes from the selection's own softmax. */
static void test_ts_evidence(void) {
    float *l = malloc(V * sizeof(float));
    for (int i = 0; i < V; i++) l[i] = -INFINITY;
    l[1000] = 2.0f;   /* the text token selected */
    l[TB + 7] = 1.0f; /* the best timestamp */
    l[TB + 9] = 0.0f; /* another one */
    l[TB + 3] = -INFINITY;
    wh_rng rng;
    tr_wh_rng_seed(&rng, 1);
    float lp = 0, p = 0, lp2 = 0, p2 = 0;
    wh_tsp ts;
    int id = tr_wh_select_ts(l, V, TB, 0.0f, &rng, &lp, &p, &ts);
    CHECK(id == 1000 && tr_wh_select(l, V, 0.0f, &rng, &lp2, &p2) == 1000);
    CHECK(lp == lp2 && p == p2); /* the evidence does not change the selection */
    double z = exp(2.0) + exp(1.0) + exp(0.0);
    CHECK(ts.tid == TB + 7);
    CHECK(fabs(ts.ptsum - (exp(1.0) + 1.0) / z) < 1e-6);
    CHECK(fabs(ts.pt - exp(1.0) / (exp(1.0) + 1.0)) < 1e-6);
    /* every timestamp masked: no evidence */
    l[TB + 7] = l[TB + 9] = -INFINITY;
    tr_wh_select_ts(l, V, TB, 0.0f, &rng, &lp, &p, &ts);
    CHECK(ts.tid == -1 && ts.pt == 0.0f && ts.ptsum == 0.0f);
    free(l);
}

static void test_weights(void) {
    CHECK(tr_wh_token_weight(" the", 4) == 3.0f);
    CHECK(tr_wh_token_weight("42", 2) == 6.0f);
    CHECK(tr_wh_token_weight(",", 1) == 2.0f);
    CHECK(tr_wh_token_weight(" ", 1) > 0.0f && tr_wh_token_weight(" ", 1) < 1.0f);
    CHECK(tr_wh_token_weight("\xc3\xa9t\xc3\xa9", 5) == 3.0f); /* "été": three characters */
    CHECK(tr_wh_token_weight("\x80", 1) > 0.0f);               /* a lone continuation byte */
}

/* Every text position's span: consecutive, non-decreasing, inside [a, b]. */
static bool spans_ok(const float *w, int n, const int64_t *t0, const int64_t *t1, int64_t a,
                     int64_t b) {
    int64_t at = a;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (t0[i] > t1[i] || t0[i] < a || t1[i] > b) return false;
        if (!(w[i] > 0.0f)) continue;
        if (t0[i] != at) return false;
        at = t1[i];
        any = true;
    }
    return !any || at == b;
}

static void test_token_times(void) {
    /* <|0.00|> " A" "BC" " D" "," <|2.00|> at a window offset of 30 s: times from 30000 */
    const float w[6] = {0.0f, 1.0f, 2.0f, 1.0f, 2.0f, 0.0f};
    wh_tsp ts[6] = {{-1, 0, 0},
                    {TB, 1.0f, 0.5f},
                    {TB + 20, 0.9f, 0.3f},
                    {TB + 80, 0.9f, 0.3f},
                    {TB + 90, 0.5f, 0.005f},
                    {-1, 0, 0}};
    int64_t t0[6], t1[6];
    /* "BC" anchored at 30 400, " D" at 31 600; "," not (ptsum 0.005 too small) */
    tr_wh_token_times(TB, ts, w, 6, 30000, 30000, 32000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 30000, 32000));
    CHECK(t0[1] == 30000 && t1[1] == 30400 && t0[2] == 30400 && t1[2] == 31600);
    /* " D" and "," split 31 600..32 000 as 1 : 2 */
    CHECK(t0[3] == 31600 && t1[3] == 31733 && t0[4] == 31733 && t1[4] == 32000);
    CHECK(t0[0] == 30000 && t1[0] == 30000 && t0[5] == 32000 && t1[5] == 32000);
    /* an unsure timestamp (pt 0.005) anchors nothing either */
    ts[2].pt = 0.005f;
    tr_wh_token_times(TB, ts, w, 6, 30000, 30000, 32000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 30000, 32000) && t0[2] == 30533 && t0[3] == 31600);
    /* no evidence: the whole segment split by weight (1 : 2 : 1 : 2) */
    tr_wh_token_times(TB, NULL, w, 6, 30000, 30000, 32000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 30000, 32000));
    CHECK(t1[1] == 30333 && t1[2] == 31000 && t1[3] == 31333 && t1[4] == 32000);
    /* an anchor on the first text token, one going backwards and one at the end are ignored */
    wh_tsp bad[6] = {{-1, 0, 0},
                     {TB + 50, 1.0f, 1.0f},
                     {TB + 40, 1.0f, 1.0f},
                     {TB + 5, 0.005f, 1.0f},
                     {TB + 100, 1.0f, 1.0f},
                     {-1, 0, 0}};
    tr_wh_token_times(TB, bad, w, 6, 30000, 30000, 32000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 30000, 32000));
    CHECK(t0[2] == 30800); /* TB + 40 is the only anchor kept */
    CHECK(t1[4] == 32000 && t0[4] > t0[3]);
    /* an empty segment: every span collapses onto it; t1 < t0 is treated as t1 = t0 */
    tr_wh_token_times(TB, ts, w, 6, 0, 5000, 5000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 5000, 5000));
    tr_wh_token_times(TB, ts, w, 6, 0, 5000, 4000, t0, t1);
    CHECK(spans_ok(w, 6, t0, t1, 5000, 5000));
    /* random evidence and weights: always consecutive and inside */
    uint32_t x = 12345;
    for (int trial = 0; trial < 2000; trial++) {
        float rw[40];
        wh_tsp rt[40];
        int64_t r0[40], r1[40];
        int n = 1 + (int)((x = x * 1664525u + 1013904223u) % 40u);
        int64_t a = (x >> 8) % 100000, b = a + (int64_t)((x = x * 1664525u + 1013904223u) % 8000u);
        for (int i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            rw[i] = (x % 5u == 0) ? 0.0f : tr_wh_token_weight(" ab,", 1 + (x >> 9) % 4);
            rt[i].tid = TB + (int)((x >> 12) % 1501u);
            rt[i].pt = (float)((x >> 4) % 100u) / 100.0f;
            rt[i].ptsum = (float)((x >> 16) % 100u) / 100.0f;
        }
        tr_wh_token_times(TB, rt, rw, n, a - (a % 30000), a, b, r0, r1);
        if (!spans_ok(rw, n, r0, r1, a, b)) {
            CHECK_MSG(false, "trial %d: spans not consecutive inside [%lld, %lld]", trial,
                      (long long)a, (long long)b);
            break;
        }
    }
}

int main(void) {
    init_model();
    test_process();
    test_segments();
    test_ts_evidence();
    test_weights();
    test_token_times();
    test_compression();
    return TEST_DONE();
}
