/* Contracts a caller of the reference implementation relies on, on tiny
 * Parakeet files rewritten from the committed goldens:
 *  - a subsampling_factor key that disagrees with the pre-encode weights
 *    (the reference's toy fixtures declare 2 and carry three stages): the
 *    file loads, the weights' network runs (same tokens as the consistent
 *    file), and frames are timed by the key (factor x 10 ms);
 *  - stt.capability.translate (shared key, docs/formats/gguf.md §5) turns translation
 *    on for a Parakeet file: capabilities list the translation targets, and
 *    the target and pair gates answer UNSUPPORTED_LANGUAGE;
 *  - streaming as the reference gates it (docs/c-api.md §14): a plain file
 *    does not advertise streaming and begin is NOT_IMPLEMENTED before
 *    anything changes, a run afterwards is not stranded; a file whose
 *    stt.capability.streaming key claims streaming advertises it, and begin
 *    still refuses (its encoder cannot stream), the same way; either file
 *    streams when the stream asks for the window driver (window_fallback);
 *  - buffered-stream extension fields below -1 are refused before anything
 *    changes (state IDLE, last status OK, nothing recorded), each field on
 *    its own; 0 is a real value (right context 0 is in the menu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_test.h"
#include "test_stream_params.h"
#include "test_util.h"
#include "transcribe/parakeet.h"

static int read_ids(const char *path, int *id, int *frame, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, dur;
    while (n < cap && fscanf(f, "%d %d %d", &id[n], &frame[n], &dur) == 3) n++;
    fclose(f);
    return n;
}

static void test_factor_key_mismatch(const float *pcm, int n) {
    char src[2048], dst[2048], tok[2048];
    if (!pk_model_file("tiny-ctc", "F16", src, sizeof src)) return;
    pk_path(tok, sizeof tok, "tiny-ctc", "jfk.tokens.txt");
    snprintf(dst, sizeof dst, "%s/pk-contracts-factor-key.gguf", TR_BINARY_DIR);
    pk_rewrite o = {.set_u32_key = "stt.parakeet.encoder.subsampling_factor", .set_u32_val = 2};
    CHECK(pk_rewrite_file(src, dst, &o));
    enum { CAP = 4096 };
    int *id = malloc(CAP * sizeof *id), *frame = malloc(CAP * sizeof *frame);
    const int ng = read_ids(tok, id, frame, CAP);
    CHECK(ng > 0);
    struct transcribe_session *s = NULL;
    CHECK(pk_open(dst, 1, &s) == TRANSCRIBE_OK);
    if (s && ng > 0) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.keep_special_tags = true;
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
        const int nt = transcribe_n_tokens(s);
        CHECK_MSG(nt == ng, "%d tokens vs %d", nt, ng);
        int bad = 0;
        for (int i = 0; i < nt && i < ng; i++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            transcribe_get_token(s, i, &t);
            /* frames of 2 hops: 20 ms */
            if (t.id != id[i] || t.t0_ms != (int64_t)frame[i] * 20) bad++;
        }
        CHECK_MSG(bad == 0, "%d tokens differ from the factor-8 goldens", bad);
    }
    transcribe_session_free(s);
    free(id);
    free(frame);
    remove(dst);
}

static void test_translate_key(const float *pcm, int n) {
    char src[2048], dst[2048];
    if (!pk_model_file("tiny-ctc", "F16", src, sizeof src)) return;
    snprintf(dst, sizeof dst, "%s/pk-contracts-translate.gguf", TR_BINARY_DIR);
    static const char *const targets[] = {"en", "de", "fr"};
    static const char *const pairs[] = {"en>de", "de>en"};
    pk_rewrite o = {.set_true_key = "stt.capability.translate",
                    .strv_keys = {"stt.translation.target_languages", "stt.translation.pairs"},
                    .strv_vals = {targets, pairs},
                    .strv_n = {3, 2}};
    CHECK(pk_rewrite_file(src, dst, &o));
    struct transcribe_session *s = NULL;
    CHECK(pk_open(dst, 1, &s) == TRANSCRIBE_OK);
    if (s) {
        struct transcribe_capabilities c;
        transcribe_capabilities_init(&c);
        CHECK(transcribe_model_get_capabilities(transcribe_get_model(s), &c) == TRANSCRIBE_OK);
        CHECK(c.supports_translate);
        CHECK(c.n_translate_target_languages == 3);
        if (c.n_translate_target_languages == 3)
            CHECK(strcmp(c.translate_target_languages[2], "fr") == 0);
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.task = TRANSCRIBE_TASK_TRANSLATE;
        p.target_language = "zz"; /* not a target */
        CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
        p.language = "en";        /* the file's one language */
        p.target_language = "fr"; /* a target, not a pair */
        CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
        p.target_language = "de"; /* admitted: this family transcribes */
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    }
    transcribe_session_free(s);
    remove(dst);

    /* without the key: the family default, no translation */
    CHECK(pk_open(src, 1, &s) == TRANSCRIBE_OK);
    if (s) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.task = TRANSCRIBE_TASK_TRANSLATE;
        CHECK(transcribe_run(s, pcm, 1600, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    }
    transcribe_session_free(s);
}

/* begin with the default stream parameters is refused before anything
 * changes; the window driver streams the file; an offline run works. */
static void check_stream_gate(const char *path, bool advertised, const float *pcm, int n) {
    struct transcribe_session *s = NULL;
    CHECK(pk_open(path, 1, &s) == TRANSCRIBE_OK);
    if (!s) return;
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(transcribe_get_model(s), &c) == TRANSCRIBE_OK);
    CHECK_MSG(c.supports_streaming == advertised, "%s: supports_streaming %d", path,
              c.supports_streaming);
    CHECK(c.supports_window_streaming);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    CHECK(transcribe_stream_begin(s, &rp, &sp) == TRANSCRIBE_ERR_NOT_IMPLEMENTED);
    CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_ERR_NOT_IMPLEMENTED);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_revision(s) == 0);
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK); /* not stranded */
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
    CHECK(transcribe_stream_begin(s, &rp, TU_WINDOW) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_feed(s, pcm, n, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
    transcribe_session_free(s);
}

static void test_streaming_gate(const float *pcm, int n) {
    char src[2048], dst[2048];
    if (!pk_model_file("tiny-ctc", "F16", src, sizeof src)) return;
    check_stream_gate(src, false, pcm, n);
    snprintf(dst, sizeof dst, "%s/pk-contracts-streaming-key.gguf", TR_BINARY_DIR);
    pk_rewrite o = {.set_true_key = "stt.capability.streaming"};
    CHECK(pk_rewrite_file(src, dst, &o));
    check_stream_gate(dst, true, pcm, n);
    remove(dst);
}

static transcribe_status begin_buffered(struct transcribe_session *s, int l, int c, int r) {
    struct transcribe_parakeet_buffered_stream_ext x;
    transcribe_parakeet_buffered_stream_ext_init(&x);
    x.left_ms = l, x.chunk_ms = c, x.right_ms = r;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = &x.ext;
    return transcribe_stream_begin(s, NULL, &sp);
}

static void test_buffered_sentinels(void) {
    char model[2048];
    if (!pk_model_file("tiny-unified", "F16", model, sizeof model)) return;
    struct transcribe_session *s = NULL;
    CHECK(pk_open(model, 1, &s) == TRANSCRIBE_OK);
    if (!s) return;
    static const int bad[][3] = {{-2, -1, -1}, {-1, -2, -1}, {-1, -1, -2}, {-99, -99, -99}};
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(begin_buffered(s, bad[i][0], bad[i][1], bad[i][2]) == TRANSCRIBE_ERR_INVALID_ARG,
                  "%d/%d/%d accepted", bad[i][0], bad[i][1], bad[i][2]);
        CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);
        CHECK(transcribe_stream_last_status(s) == TRANSCRIBE_OK);
        CHECK(transcribe_stream_revision(s) == 0);
    }
    /* menus left {6, 4}, chunk {1, 3}, right {0, 2} frames of 80 ms */
    CHECK(begin_buffered(s, 480, 80, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
    transcribe_stream_reset(s);
    CHECK(begin_buffered(s, -1, -1, -1) == TRANSCRIBE_OK); /* every field the default */
    transcribe_session_free(s);
}

int main(void) {
    int n = 0;
    float *pcm = pk_load_wav("jfk", &n);
    CHECK(pcm != NULL);
    if (!pcm) return TEST_DONE();
    test_factor_key_mismatch(pcm, n);
    test_translate_key(pcm, n);
    test_streaming_gate(pcm, n);
    test_buffered_sentinels();
    free(pcm);
    return TEST_DONE();
}
