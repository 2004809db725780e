/* Whisper decoding rules without a model: docs/formats/whisper.md §8.5 logit processing, §8.6
 * selection, §8.8 segment retrieval / seek advance, compression ratio. */
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

int main(void) {
    init_model();
    test_process();
    test_segments();
    test_compression();
    return TEST_DONE();
}
