/* MOSS output parsing (docs/formats/moss.md §10) on canonical and hostile model
 * outputs: segment texts / times / speaker ids, speaker rows, full text,
 * raw text, result kind, the §10.3 policy and the plain fallback. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "models/moss/moss_parse.h"
#include "test_util.h"

static const moss_out_policy k_on = {true, true};

static tr_result parse(const char *raw, int64_t audio_ms, const moss_out_policy *pol) {
    tr_result r;
    tr_result_init(&r);
    CHECK(tr_moss_fill_result(raw, strlen(raw), audio_ms, pol, &r) == TRANSCRIBE_OK);
    return r;
}

static void check_seg(const tr_result *r, int i, int64_t t0, int64_t t1, int spk,
                      const char *text) {
    CHECK_MSG(i < r->n_segs, "segment %d of %d", i, r->n_segs);
    if (i >= r->n_segs) return;
    const tr_result_segment *s = &r->segs[i];
    const char *got = tr_result_str(r, s->text_off);
    CHECK_MSG(s->t0_ms == t0 && s->t1_ms == t1 && s->speaker_id == spk && !strcmp(got, text),
              "seg %d: got [%lld, %lld] S%d '%s', want [%lld, %lld] S%d '%s'", i,
              (long long)s->t0_ms, (long long)s->t1_ms, s->speaker_id, got, (long long)t0,
              (long long)t1, spk, text);
}

static void test_canonical(void) {
    const char *raw = "[0.48][S01]Welcome.[1.66][1.70][S02]Thanks for having me.[3.20]";
    tr_result r = parse(raw, 4000, &k_on);
    CHECK(r.n_segs == 2 && r.n_spk == 2);
    check_seg(&r, 0, 480, 1660, 1, "Welcome.");
    check_seg(&r, 1, 1700, 3200, 2, "Thanks for having me.");
    CHECK(!strcmp(tr_result_full_text(&r), "Welcome. Thanks for having me."));
    CHECK(!strcmp(tr_result_raw_text(&r), raw));
    CHECK(r.ts_kind == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    CHECK(r.spk[1].t0_ms == 1700 && r.spk[1].t1_ms == 3200 && r.spk[1].speaker_id == 2 &&
          isnan(r.spk[1].p));
    tr_result_free(&r);

    /* TIME SPK shared boundary; ms rounding on the 4th fraction digit */
    r = parse("[1][S3] a [2.0005][S1] b [7.12349]", 9000, &k_on);
    check_seg(&r, 0, 1000, 2001, 3, "a");
    check_seg(&r, 1, 2001, 7123, 1, "b");
    tr_result_free(&r);
    r = parse("[0.1234][S1]x[0.99999]", 9000, &k_on);
    check_seg(&r, 0, 123, 1000, 1, "x");
    tr_result_free(&r);
}

static void test_policy(void) {
    const char *raw = "[0.5][S01]hi[1.0][1.5][S02]yo[2.0]";
    const moss_out_policy off = {false, true}, none = {true, false}, both = {false, false};
    tr_result r = parse(raw, 3000, &off);
    CHECK(r.n_segs == 2 && r.n_spk == 0);
    check_seg(&r, 1, 1500, 2000, 0, "yo");
    CHECK(r.ts_kind == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    tr_result_free(&r);
    r = parse(raw, 3000, &none);
    CHECK(r.n_spk == 2 && r.spk[0].t0_ms == 0 && r.spk[0].t1_ms == 0);
    check_seg(&r, 0, 0, 0, 1, "hi");
    CHECK(r.ts_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    tr_result_free(&r);
    r = parse(raw, 3000, &both);
    check_seg(&r, 1, 0, 0, 0, "yo");
    CHECK(!strcmp(tr_result_full_text(&r), "hi yo"));
    tr_result_free(&r);
}

static void test_hostile(void) {
    /* no turn: plain fallback, raw text verbatim, kind NONE */
    tr_result r = parse("just words [1.0] and [S00] and [S1", 5000, &k_on);
    CHECK(r.n_segs == 1 && r.n_spk == 0 && r.ts_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    check_seg(&r, 0, 0, 5000, 0, "just words [1.0] and [S00] and [S1");
    CHECK(!strcmp(tr_result_full_text(&r), "just words [1.0] and [S00] and [S1"));
    tr_result_free(&r);
    r = parse("", 5000, &k_on);
    CHECK(r.n_segs == 1 && !strcmp(tr_result_full_text(&r), ""));
    tr_result_free(&r);

    /* leading text, [S00] literal, unclosed bracket, bare times inside speech */
    r = parse("  lead [0.5][S02]one [S00] [12] more [ x[3.0][4.0][S01]two [5", 10000, &k_on);
    CHECK(r.n_segs == 3 && r.n_spk == 2);
    check_seg(&r, 0, 0, 500, 0, "lead");
    check_seg(&r, 1, 500, 3000, 2, "one [S00] [12] more [ x");
    check_seg(&r, 2, 4000, 10000, 1, "two [5");
    CHECK(!strcmp(tr_result_full_text(&r), "lead one [S00] [12] more [ x two [5"));
    tr_result_free(&r);

    /* bare SPK: unknown times patched from neighbours; TIME TIME' SPK with no
     * open turn: first TIME literal */
    r = parse("[1.0][2.0][S1]a[S2]b[4.0][S3]c", 6000, &k_on);
    CHECK(r.n_segs == 4);
    check_seg(&r, 0, 0, 2000, 0, "[1.0]");
    check_seg(&r, 1, 2000, 2000, 1, "a");
    check_seg(&r, 2, 2000, 4000, 2, "b");
    check_seg(&r, 3, 4000, 6000, 3, "c");
    tr_result_free(&r);

    /* out-of-order times are kept (t1 clamped to t0), not reordered */
    r = parse("[5.0][S1]late[3.0][1.0][S2]early[0.5]", 6000, &k_on);
    check_seg(&r, 0, 5000, 5000, 1, "late");
    check_seg(&r, 1, 1000, 1000, 2, "early");
    tr_result_free(&r);

    /* final TIME followed by whitespace is literal (docs/formats/moss.md §12.4) */
    r = parse("[0][S1]x [2.5] ", 3000, &k_on);
    check_seg(&r, 0, 0, 3000, 1, "x [2.5]");
    tr_result_free(&r);

    /* absurd magnitudes and ids are literal text */
    r = parse("[0][S1]a[99999999999999999999.5][S99999999999]b", 3000, &k_on);
    CHECK(r.n_segs == 1);
    check_seg(&r, 0, 0, 3000, 1, "a[99999999999999999999.5][S99999999999]b");
    tr_result_free(&r);

    /* invalid UTF-8 passes through byte for byte */
    const char bad[] = "[0][S1]\xff\xfe\xc3[1]";
    r = parse(bad, 3000, &k_on);
    check_seg(&r, 0, 0, 1000, 1, "\xff\xfe\xc3");
    tr_result_free(&r);

    /* 10 000 markers */
    size_t cap = 10000 * 32;
    char *big = malloc(cap);
    size_t len = 0;
    for (int i = 0; i < 10000; i++)
        len +=
            (size_t)snprintf(big + len, cap - len, "[%d.%02d][S%d]w%d", i, i % 100, i % 7 + 1, i);
    r = parse(big, 20000000, &k_on);
    CHECK(r.n_segs == 10000 && r.n_spk == 10000);
    check_seg(&r, 9998, 9998980, 9999990, 9998 % 7 + 1, "w9998");
    check_seg(&r, 9999, 9999990, 20000000, 9999 % 7 + 1, "w9999");
    tr_result_free(&r);
    free(big);

    /* NULL raw text is the empty output */
    tr_result_init(&r);
    CHECK(tr_moss_fill_result(NULL, 5, 100, &k_on, &r) == TRANSCRIBE_OK && r.n_segs == 1);
    tr_result_free(&r);
}

int main(void) {
    test_canonical();
    test_policy();
    test_hostile();
    return TEST_DONE();
}
