/* Parakeet through the public API on the reference tiny models: broken
 * model files (made here by rewriting a good one), capabilities and limits,
 * run-parameter rejections, degenerate audio, non-finite samples,
 * timestamp granularities, abort. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_test.h"
#include "test_util.h"

static char g_ctc[2048], g_tdt[2048];

static transcribe_status load_status(const char *path) {
    struct transcribe_model *m = NULL;
    transcribe_status st = transcribe_model_load_file(path, NULL, &m);
    transcribe_model_free(m);
    return st;
}

static void check_rewrite(const char *src, const pk_rewrite *o, transcribe_status want,
                          const char *what) {
    char dst[2048];
    snprintf(dst, sizeof dst, "%s/pk_bad_model.gguf", TR_BINARY_DIR);
    CHECK_MSG(pk_rewrite_file(src, dst, o), "%s: rewrite failed", what);
    transcribe_status st = load_status(dst);
    CHECK_MSG(st == want, "%s: status %d (%s), want %d", what, st, transcribe_status_string(st),
              want);
    remove(dst);
}

static void test_bad_models(void) {
    pk_rewrite o;
    /* the untouched rewrite still loads (the helper itself is sound) */
    memset(&o, 0, sizeof o);
    check_rewrite(g_ctc, &o, TRANSCRIBE_OK, "plain copy (ctc)");
    check_rewrite(g_tdt, &o, TRANSCRIBE_OK, "plain copy (tdt)");

    memset(&o, 0, sizeof o);
    o.set_str_key = "general.architecture";
    o.set_str_val = "parakeet9";
    check_rewrite(g_ctc, &o, TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "wrong architecture");

    memset(&o, 0, sizeof o);
    o.drop_tensor = "head.ctc.bias";
    check_rewrite(g_ctc, &o, TRANSCRIBE_ERR_GGUF, "missing head.ctc.bias");
    memset(&o, 0, sizeof o);
    o.drop_tensor = "joint.out.weight";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "missing joint.out.weight");
    memset(&o, 0, sizeof o);
    o.drop_tensor = "pred.lstm.0.Wh";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "missing pred.lstm.0.Wh");
    memset(&o, 0, sizeof o);
    o.drop_tensor = "enc.blocks.0.norm_out.weight";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "missing encoder tensor");

    memset(&o, 0, sizeof o);
    o.shrink_tensor = "head.ctc.bias";
    check_rewrite(g_ctc, &o, TRANSCRIBE_ERR_GGUF, "misshaped head.ctc.bias");
    memset(&o, 0, sizeof o);
    o.shrink_tensor = "pred.lstm.0.bias";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "misshaped pred.lstm.0.bias");

    /* UINT32 keys written as INT32 are rejected (docs/formats/parakeet.md §2) */
    const char *u32_keys[] = {"stt.parakeet.predictor.hidden", "stt.parakeet.joint.hidden",
                              "stt.parakeet.tdt.max_symbols", "stt.frontend.hop_length",
                              "stt.parakeet.encoder.n_layers"};
    for (size_t i = 0; i < sizeof u32_keys / sizeof u32_keys[0]; i++) {
        memset(&o, 0, sizeof o);
        o.set_i32_key = u32_keys[i];
        o.set_i32_val = 4;
        check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, u32_keys[i]);
    }
    /* a string where an int array belongs */
    memset(&o, 0, sizeof o);
    o.set_str_key = "stt.parakeet.tdt.durations";
    o.set_str_val = "0,1,2,3,4";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "durations as a string");
    memset(&o, 0, sizeof o);
    o.set_str_key = "stt.parakeet.head_kind";
    o.set_str_val = "lstm";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "unknown head_kind");
    memset(&o, 0, sizeof o);
    o.set_str_key = "stt.parakeet.joint.activation";
    o.set_str_val = "gelu";
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "unknown joint activation");
    /* required keys */
    const char *req[] = {"stt.frontend.f_max", "stt.parakeet.predictor.vocab",
                         "stt.parakeet.tdt.durations", "tokenizer.ggml.tokens"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        memset(&o, 0, sizeof o);
        o.drop_key = req[i];
        check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, req[i]);
    }
    /* optional keys: absent → defaults */
    memset(&o, 0, sizeof o);
    o.drop_key = "stt.parakeet.tdt.max_symbols";
    check_rewrite(g_tdt, &o, TRANSCRIBE_OK, "max_symbols absent");
    memset(&o, 0, sizeof o);
    o.drop_key = "general.languages";
    check_rewrite(g_tdt, &o, TRANSCRIBE_OK, "languages absent");

    /* truncated files: header only, half, all but the last byte */
    char dst[2048];
    snprintf(dst, sizeof dst, "%s/pk_trunc.gguf", TR_BINARY_DIR);
    FILE *f = fopen(g_ctc, "rb");
    long size = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    long cuts[] = {24, size / 2, size - 64}; /* the end may be alignment padding */
    for (int i = 0; i < 3; i++) {
        CHECK(pk_truncate_file(g_ctc, dst, cuts[i]));
        CHECK_MSG(load_status(dst) == TRANSCRIBE_ERR_GGUF, "truncated to %ld", cuts[i]);
    }
    remove(dst);
}

static void test_caps(struct transcribe_session *s) {
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);
    CHECK(!c.supports_translate && !c.supports_streaming && !c.supports_spec_decode);
    CHECK(c.supports_window_streaming); /* the window driver streams it when asked */
    CHECK(c.max_audio_ms == 0);
    CHECK(c.n_languages == 1 && c.languages && !strcmp(c.languages[0], "en"));
    CHECK(!strcmp(transcribe_model_arch_string(m), "parakeet"));
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_INITIAL_PROMPT));
    struct transcribe_session_limits l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    CHECK(transcribe_session_get_limits(s, &l) == TRANSCRIBE_OK);
    CHECK(l.effective_max_audio_ms == 0);
}

static bool streaming_of(const char *src, const pk_rewrite *o) {
    char dst[2048];
    snprintf(dst, sizeof dst, "%s/pk_stream_model.gguf", TR_BINARY_DIR);
    struct transcribe_model *m = NULL;
    bool streaming = false;
    if (pk_rewrite_file(src, dst, o) &&
        transcribe_model_load_file(dst, NULL, &m) == TRANSCRIBE_OK) {
        struct transcribe_capabilities c;
        transcribe_capabilities_init(&c);
        transcribe_model_get_capabilities(m, &c);
        streaming = c.supports_streaming;
    } else {
        CHECK_MSG(false, "streaming rewrite did not load");
    }
    transcribe_model_free(m);
    remove(dst);
    return streaming;
}

/* docs/formats/parakeet.md §3.1 / §7.8: the KV or the geometry marks a streaming file
 * (caps.supports_streaming, as transcribe.cpp reports it); a plain file does
 * not (it streams only through the window driver, when a stream asks). */
static void test_streaming_caps(void) {
    pk_rewrite o;
    memset(&o, 0, sizeof o);
    CHECK(!streaming_of(g_tdt, &o));
    o.set_true_key = "stt.capability.streaming";
    CHECK(streaming_of(g_tdt, &o));
    memset(&o, 0, sizeof o);
    o.set_str_key = "stt.parakeet.encoder.att_context_style";
    o.set_str_val = "chunked_limited_with_rc";
    o.arr_keys[0] = "stt.parakeet.encoder.att_chunk_left_choices";
    o.arr_keys[1] = "stt.parakeet.encoder.att_chunk_chunk_choices";
    o.arr_keys[2] = "stt.parakeet.encoder.att_chunk_right_choices";
    CHECK(streaming_of(g_tdt, &o));
    o.arr_keys[2] = NULL; /* docs/formats/parakeet.md §3.3: this style needs all three menus */
    check_rewrite(g_tdt, &o, TRANSCRIBE_ERR_GGUF, "chunked_limited_with_rc without a menu");
}

static void test_params(struct transcribe_session *s, const float *pcm, int n) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&p);
    p.language = "de";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    p.language = "en";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    CHECK(!strcmp(transcribe_detected_language(s), ""));
    CHECK(transcribe_run(s, pcm, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
}

/* Degenerate lengths: < 2 hops gives OK with an empty result (docs/formats/parakeet.md §12.1). */
static void test_short(struct transcribe_session *s, const float *pcm) {
    int lens[] = {1, 159, 160, 319};
    for (int i = 0; i < 4; i++) {
        transcribe_status st = transcribe_run(s, pcm + 16000, lens[i], NULL);
        CHECK_MSG(st == TRANSCRIBE_OK, "%d samples: %d", lens[i], st);
        CHECK(!strcmp(transcribe_full_text(s), "") && transcribe_n_segments(s) == 0 &&
              transcribe_n_tokens(s) == 0);
    }
    int ok_lens[] = {320, 1280, 1281, 4000};
    for (int i = 0; i < 4; i++)
        CHECK_MSG(transcribe_run(s, pcm + 16000, ok_lens[i], NULL) == TRANSCRIBE_OK, "%d samples",
                  ok_lens[i]);
    float zero[4000] = {0};
    CHECK(transcribe_run(s, zero, 4000, NULL) == TRANSCRIBE_OK);
}

static char *tokens_sig(struct transcribe_session *s) {
    int n = transcribe_n_tokens(s);
    char *b = malloc((size_t)n * 32 + 1);
    size_t o = 0;
    b[0] = 0;
    for (int i = 0; i < n; i++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        transcribe_get_token(s, i, &t);
        o += (size_t)snprintf(b + o, 32, "%d@%lld,", t.id, (long long)t.t0_ms);
    }
    return b;
}

/* NaN → 0 and ±Inf → ±1 with a warning: same result as the cleaned input. */
static void test_nonfinite(struct transcribe_session *s, const float *pcm, int n) {
    float *dirty = malloc((size_t)n * sizeof *dirty), *clean = malloc((size_t)n * sizeof *clean);
    memcpy(dirty, pcm, (size_t)n * sizeof *dirty);
    memcpy(clean, pcm, (size_t)n * sizeof *clean);
    for (int i = 1000; i < n; i += 7919) {
        dirty[i] = NAN;
        clean[i] = 0.0f;
        dirty[i + 1] = INFINITY;
        clean[i + 1] = 1.0f;
        dirty[i + 2] = -INFINITY;
        clean[i + 2] = -1.0f;
    }
    CHECK(transcribe_run(s, clean, n, NULL) == TRANSCRIBE_OK);
    char *a = tokens_sig(s);
    CHECK(transcribe_run(s, dirty, n, NULL) == TRANSCRIBE_OK);
    char *b = tokens_sig(s);
    CHECK(!strcmp(a, b));
    free(a);
    free(b);
    for (int i = 0; i < n; i++) dirty[i] = NAN;
    CHECK(transcribe_run(s, dirty, n, NULL) == TRANSCRIBE_OK);
    free(dirty);
    free(clean);
}

static void test_granularity(struct transcribe_session *s, const float *pcm, int n) {
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    int nw = transcribe_n_words(s), nt = transcribe_n_tokens(s);
    CHECK(transcribe_n_segments(s) == 1 && nw > 0 && nt >= nw);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_TOKEN);
    char *full = strdup(transcribe_full_text(s));
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    transcribe_get_segment(s, 0, &seg);
    int64_t t0 = seg.t0_ms, t1 = seg.t1_ms;
    CHECK(t1 > t0 && !strcmp(seg.text, full));
    /* token rows: times monotone, words cover their tokens */
    int64_t last = -1;
    for (int i = 0; i < nt; i++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        transcribe_get_token(s, i, &t);
        CHECK(t.t0_ms >= last && t.t1_ms >= t.t0_ms && t.t0_ms % 80 == 0 && t.seg_index == 0);
        CHECK(t.word_index >= 0 && t.word_index < nw && t.p >= 0.0f && t.p <= 1.0f);
        last = t.t0_ms;
    }

    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_WORD);
    CHECK(transcribe_n_words(s) == nw && transcribe_n_tokens(s) == 0);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    CHECK(transcribe_n_segments(s) == 1 && transcribe_n_words(s) == 0 &&
          transcribe_n_tokens(s) == 0);
    transcribe_get_segment(s, 0, &seg);
    CHECK(seg.t0_ms == t0 && seg.t1_ms == t1 && !strcmp(transcribe_full_text(s), full));
    p.timestamps = TRANSCRIBE_TIMESTAMPS_NONE;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(transcribe_n_segments(s) == 1 && transcribe_n_words(s) == 0);
    transcribe_get_segment(s, 0, &seg);
    CHECK(seg.t0_ms == 0 && seg.t1_ms == 0 && !strcmp(seg.text, full));
    free(full);
}

/* Results do not depend on the thread count. */
static void test_threads(struct transcribe_session *s, const float *pcm, int n) {
    struct transcribe_session *s1 = NULL, *s3 = NULL;
    CHECK(pk_open(g_tdt, 1, &s1) == TRANSCRIBE_OK && pk_open(g_tdt, 3, &s3) == TRANSCRIBE_OK);
    if (s1 && s3) {
        CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
        CHECK(transcribe_run(s1, pcm, n, NULL) == TRANSCRIBE_OK);
        CHECK(transcribe_run(s3, pcm, n, NULL) == TRANSCRIBE_OK);
        char *a = tokens_sig(s), *b = tokens_sig(s1), *c = tokens_sig(s3);
        CHECK(!strcmp(a, b) && !strcmp(a, c));
        free(a);
        free(b);
        free(c);
    }
    transcribe_session_free(s1);
    transcribe_session_free(s3);
}

/* The batch API (serial fallback) gives each utterance its single-run result. */
static void test_batch(struct transcribe_session *s, const float *pcm, int n) {
    const float *ins[3] = {pcm, pcm + n / 2, pcm};
    int lens[3] = {n, n / 2, 100};
    char *want[3];
    for (int i = 0; i < 3; i++) {
        CHECK(transcribe_run(s, ins[i], lens[i], NULL) == TRANSCRIBE_OK);
        want[i] = strdup(transcribe_full_text(s));
    }
    CHECK(transcribe_run_batch(s, ins, lens, 3, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 3);
    for (int i = 0; i < 3; i++) {
        CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK);
        const char *got = transcribe_batch_full_text(s, i);
        CHECK_MSG(got && !strcmp(got, want[i]), "batch %d: [%s] vs [%s]", i, got ? got : "",
                  want[i]);
        free(want[i]);
    }
}

static bool abort_now(void *u) {
    (*(int *)u)++;
    return true;
}

static void test_abort(struct transcribe_session *s, const float *pcm, int n) {
    int calls = 0;
    transcribe_set_abort_callback(s, abort_now, &calls);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(calls > 0 && transcribe_was_aborted(s));
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK && !transcribe_was_aborted(s));
}

int main(void) {
    pk_path(g_ctc, sizeof g_ctc, "tiny-ctc", "parakeet-tiny-ctc-F16.gguf");
    pk_path(g_tdt, sizeof g_tdt, "tiny-tdt", "parakeet-tiny-tdt-F32.gguf");
    int n = 0;
    float *pcm = pk_load_wav("jfk", &n);
    CHECK(pcm != NULL && pk_exists(g_ctc) && pk_exists(g_tdt));
    if (!pcm || !pk_exists(g_ctc) || !pk_exists(g_tdt)) return TEST_DONE();

    test_bad_models();
    test_streaming_caps();
    struct transcribe_session *s = NULL;
    CHECK(pk_open(g_tdt, 2, &s) == TRANSCRIBE_OK);
    if (s) {
        test_caps(s);
        test_params(s, pcm, n);
        test_short(s, pcm);
        test_nonfinite(s, pcm, n);
        test_granularity(s, pcm, n);
        test_threads(s, pcm, n);
        test_batch(s, pcm, n);
        test_abort(s, pcm, n);
    }
    transcribe_session_free(s);
    free(pcm);
    return TEST_DONE();
}
