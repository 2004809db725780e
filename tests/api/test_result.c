/* tr_result building blocks: row linking, arena growth, full-text join. */
#include <string.h>

#include "core/result.h"
#include "test_util.h"

int main(void) {
    tr_result r;
    tr_result_init(&r);
    CHECK(strcmp(tr_result_full_text(&r), "") == 0);
    CHECK(strcmp(tr_result_str(&r, 0), "") == 0);
    CHECK(tr_result_add_word(&r, 0, 1, 0, "x") == -1); /* no segment yet */
    int s0 = tr_result_add_segment(&r, 0, 500, " Hello");
    CHECK(s0 == 0);
    int w0 = tr_result_add_word(&r, 0, 200, s0, "Hello");
    CHECK(tr_result_add_token(&r, 1, 0.9f, 0, 100, s0, w0, " Hel") == 0);
    CHECK(tr_result_add_token(&r, 2, 0.8f, 100, 200, s0, w0, "lo") == 1);
    CHECK(tr_result_add_token(&r, 3, 0.7f, 200, 210, s0, -1, ",") == 2);
    int s1 = tr_result_add_segment(&r, 500, 900, "world!");
    CHECK(tr_result_add_token(&r, 4, 0.5f, 0, 0, s0, -1, "bad") == -1); /* not the last segment */
    CHECK(tr_result_add_word(&r, 500, 900, s1, "world!") == 1);
    CHECK(r.segs[0].first_word == 0 && r.segs[0].n_words == 1);
    CHECK(r.segs[0].first_token == 0 && r.segs[0].n_tokens == 3);
    CHECK(r.words[0].first_token == 0 && r.words[0].n_tokens == 2);
    CHECK(r.toks[2].word_index == -1 && r.segs[1].first_word == 1 && r.segs[1].n_tokens == 0);
    /* many rows force arena and array growth; earlier rows stay intact */
    for (int i = 0; i < 2000; i++) tr_result_add_token(&r, i, 0, 0, 0, s1, 1, "abcdefgh");
    CHECK(!r.oom && r.n_toks == 2003 && r.words[1].n_tokens == 2000);
    CHECK(strcmp(tr_result_str(&r, r.segs[0].text_off), " Hello") == 0);
    CHECK(tr_result_build_full_text(&r));
    CHECK(strcmp(tr_result_full_text(&r), "Hello world!") == 0);
    CHECK(tr_result_set_segment_text(&r, 1, " there"));
    CHECK(!tr_result_set_segment_text(&r, 5, "x"));
    CHECK(tr_result_build_full_text(&r) && strcmp(tr_result_full_text(&r), "Hello there") == 0);
    CHECK(tr_result_set_language(&r, "de") && strcmp(tr_result_language(&r), "de") == 0);
    tr_result_clear(&r);
    CHECK(r.n_segs == 0 && r.n_toks == 0 && strcmp(tr_result_full_text(&r), "") == 0);
    CHECK(strcmp(tr_result_language(&r), "") == 0);
    tr_result_free(&r);
    tr_result_free(&r); /* idempotent */
    return TEST_DONE();
}
