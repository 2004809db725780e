/* tr_result_join_piece (long audio): pieces' rows on the input's clock,
 * kept inside each piece and monotonic; untimed pieces and pieces without
 * rows; speakers of different pieces kept apart; texts joined with a space,
 * none between two CJK characters; the first language wins; raw texts one
 * a line. */
#include <string.h>

#include "core/result.h"
#include "test_util.h"

/* A piece's result: one segment [t0, t1) with one word, speaker spk. */
static void piece(tr_result *r, const char *text, int64_t t0, int64_t t1, int32_t spk,
                  transcribe_timestamp_kind kind, const char *lang) {
    tr_result_clear(r);
    int s = tr_result_add_segment(r, t0, t1, text);
    tr_result_add_word(r, t0, t1, s, text);
    tr_result_add_token(r, 7, 0.5f, t0, t1, s, 0, text);
    if (spk > 0) {
        tr_result_set_segment_speaker(r, s, spk);
        tr_result_add_speaker(r, t0, t1, spk, 0.9f);
    }
    tr_result_set_timestamp_kind(r, kind);
    tr_result_set_full_text(r, text);
    tr_result_set_raw_text(r, text);
    if (lang) tr_result_set_language(r, lang);
}

int main(void) {
    tr_result out, p;
    tr_result_init(&out);
    tr_result_init(&p);
    tr_result_joiner j;
    tr_result_joiner_init(&j);

    /* piece 1 at [1000, 5000): speakers 1 and 2 (2 in a second segment) */
    piece(&p, " hello ", 100, 900, 1, TRANSCRIBE_TIMESTAMPS_WORD, "en");
    int s = tr_result_add_segment(&p, 900, 9000, "there"); /* runs past the piece */
    tr_result_set_segment_speaker(&p, s, 2);
    CHECK(tr_result_join_piece(&out, &j, &p, 1000, 5000));
    /* piece 2 at [6000, 9000): its speaker 1 is a new voice; a time before
     * the previous row's end stays behind it */
    piece(&p, "world", -500, 200, 1, TRANSCRIBE_TIMESTAMPS_WORD, "fr");
    CHECK(tr_result_join_piece(&out, &j, &p, 6000, 9000));
    /* piece 3: untimed, CJK after ASCII; piece 4: CJK after CJK */
    piece(&p, "你好", 0, 0, 0, TRANSCRIBE_TIMESTAMPS_NONE, NULL);
    CHECK(tr_result_join_piece(&out, &j, &p, 9000, 12000));
    piece(&p, "世界", 0, 0, 0, TRANSCRIBE_TIMESTAMPS_NONE, NULL);
    CHECK(tr_result_join_piece(&out, &j, &p, 12000, 15000));
    /* piece 5: text but no rows */
    tr_result_clear(&p);
    tr_result_set_full_text(&p, "tail");
    CHECK(tr_result_join_piece(&out, &j, &p, 15000, 16000));
    CHECK(tr_result_joiner_finish(&out, &j));

    /* the pieces' own full texts (piece 1's says " hello "), trimmed */
    CHECK_MSG(strcmp(tr_result_full_text(&out), "hello world 你好世界 tail") == 0, "%s",
              tr_result_full_text(&out));
    CHECK(strcmp(tr_result_language(&out), "en") == 0);
    CHECK(out.ts_kind == TRANSCRIBE_TIMESTAMPS_WORD);
    CHECK(out.n_segs == 6 && out.n_words == 4 && out.n_toks == 4 && out.n_spk == 2);
    if (out.n_segs == 6) {
        CHECK(out.segs[0].t0_ms == 1100 && out.segs[0].t1_ms == 1900);
        CHECK(out.segs[1].t0_ms == 1900 && out.segs[1].t1_ms == 5000); /* kept in the piece */
        CHECK(out.segs[2].t0_ms == 6000 && out.segs[2].t1_ms == 6200);
        CHECK(out.segs[3].t0_ms == 9000 && out.segs[3].t1_ms == 12000);  /* untimed: the piece */
        CHECK(out.segs[5].t0_ms == 15000 && out.segs[5].t1_ms == 16000); /* no rows: the piece */
        CHECK(strcmp(tr_result_str(&out, out.segs[5].text_off), "tail") == 0);
        /* speakers apart: piece 1 took ids 1 and 2, piece 2's 1 is 3 */
        CHECK(out.segs[0].speaker_id == 1 && out.segs[1].speaker_id == 2 &&
              out.segs[2].speaker_id == 3 && out.segs[3].speaker_id == 0);
        CHECK(out.spk[1].speaker_id == 3 && out.spk[1].t0_ms == 6000);
        /* rows link across pieces */
        CHECK(out.segs[2].first_word == 1 && out.words[1].seg_index == 2 &&
              out.toks[1].seg_index == 2 && out.toks[1].word_index == 1);
    }
    for (int i = 1; i < out.n_segs; i++) {
        CHECK(out.segs[i].t0_ms >= out.segs[i - 1].t0_ms &&
              out.segs[i].t1_ms >= out.segs[i - 1].t1_ms);
    }
    CHECK(strcmp(tr_result_raw_text(&out), " hello \nworld\n你好\n世界") == 0);
    tr_result_clamp(&out, 15500);
    CHECK(out.segs[5].t0_ms == 15000 && out.segs[5].t1_ms == 15500);
    CHECK(!out.oom);

    /* words of one transducer frame: the earlier word ends where the next
     * starts; words sharing a start (Whisper's segment times) and words of
     * another segment keep their times */
    tr_result_clear(&p);
    int a = tr_result_add_segment(&p, 0, 1000, "a b c d");
    CHECK(tr_result_add_word(&p, 240, 320, a, "a") == 0);
    CHECK(tr_result_add_word(&p, 280, 320, a, "b") == 1);
    CHECK(tr_result_add_word(&p, 280, 320, a, "c") == 2);
    CHECK(tr_result_add_word(&p, 300, 900, a, "d") == 3);
    int b = tr_result_add_segment(&p, 1000, 2000, "e");
    CHECK(tr_result_add_word(&p, 800, 1200, b, "e") == 4);
    tr_result_untangle_words(&p);
    CHECK(p.words[0].t0_ms == 240 && p.words[0].t1_ms == 280);
    CHECK(p.words[1].t0_ms == 280 && p.words[1].t1_ms == 320); /* same start as c: kept */
    CHECK(p.words[2].t0_ms == 280 && p.words[2].t1_ms == 300);
    CHECK(p.words[3].t0_ms == 300 && p.words[3].t1_ms == 900); /* e is another segment's */

    tr_result_joiner_free(&j);
    tr_result_free(&p);
    tr_result_free(&out);
    return TEST_DONE();
}
