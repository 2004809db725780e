/* Argument order of every public entry: what an entry can judge without its
 * handle (NULL pointers, counts, a caller struct's struct_size, an enum out
 * of range) is answered before the handle is touched. Each call here passes
 * a made-up handle (an address no object lives at) beside one bad plain
 * argument: the expected status comes back, and neither the check nor the
 * per-handle error message (transcribe_session_last_error) dereferences the
 * handle; a crash here is the bug. A rejection of that kind is also not kept
 * on a real handle (it may not be one), while the log sink still hears it. */
#include <limits.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"
#include "transcribe/whisper.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"

/* Never dereferenced: the point of the test. */
#define FAKE(type) ((type *)(void *)(uintptr_t)0x10)

static int n_logged;
static void count_errors(transcribe_log_level level, const char *text, void *user) {
    (void)text;
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR) n_logged++;
}

static void session_entries(void) {
    struct transcribe_session *s = FAKE(struct transcribe_session);
    float pcm[8] = {0};
    struct transcribe_run_params rp, rp0 = {0};
    transcribe_run_params_init(&rp);

    CHECK(transcribe_run(s, NULL, 8, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, 0, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, -1, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, 8, &rp0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    const float *batch[1] = {pcm};
    int counts[1] = {8};
    CHECK(transcribe_run_batch(s, NULL, counts, 1, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run_batch(s, batch, NULL, 1, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run_batch(s, batch, counts, 0, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run_batch(s, batch, counts, 1, &rp0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    const char *code = "stale";
    CHECK(transcribe_detect_language(s, NULL, 8, &code, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(code == NULL);
    CHECK(transcribe_detect_language(s, pcm, 0, &code, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_detect_language(s, pcm, 8, NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);

    struct transcribe_stream_params sp, sp0 = {0};
    transcribe_stream_params_init(&sp);
    CHECK(transcribe_stream_begin(s, &rp0, &sp) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_stream_begin(s, &rp, &sp0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    sp.commit_policy = (transcribe_stream_commit_policy)99;
    CHECK(transcribe_stream_begin(s, &rp, &sp) == TRANSCRIBE_ERR_INVALID_ARG);

    struct transcribe_stream_update up, up0 = {0};
    transcribe_stream_update_init(&up);
    CHECK(transcribe_stream_feed(s, NULL, 8, &up) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_feed(s, pcm, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_feed(s, pcm, 8, &up0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_stream_finalize(s, &up0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    struct transcribe_stream_text text0 = {0};
    CHECK(transcribe_stream_get_text(s, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_get_text(s, &text0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    struct transcribe_session_limits lim0 = {0};
    CHECK(transcribe_session_get_limits(s, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_session_get_limits(s, &lim0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    struct transcribe_timings tm0 = {0};
    CHECK(transcribe_get_timings(s, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_timings(s, &tm0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_get_timings(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_get_timings(s, 0, &tm0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    struct transcribe_segment seg0 = {0};
    struct transcribe_word word0 = {0};
    struct transcribe_token tok0 = {0};
    struct transcribe_speaker_segment spk0 = {0};
    CHECK(transcribe_get_segment(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_segment(s, 0, &seg0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_get_word(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_word(s, 0, &word0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_get_token(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_token(s, 0, &tok0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_get_speaker_segment(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_speaker_segment(s, 0, &spk0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_get_segment(s, 0, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_get_segment(s, 0, 0, &seg0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_get_word(s, 0, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_get_word(s, 0, 0, &word0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_get_token(s, 0, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_get_token(s, 0, 0, &tok0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(transcribe_batch_get_speaker_segment(s, 0, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_get_speaker_segment(s, 0, 0, &spk0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    struct transcribe_whisper_chunk_trace tr0 = {0};
    CHECK(transcribe_get_whisper_chunk_trace(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_get_whisper_chunk_trace(s, 0, &tr0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
}

static void model_entries(void) {
    struct transcribe_model *m = FAKE(struct transcribe_model);
    struct transcribe_session *out = FAKE(struct transcribe_session);
    struct transcribe_session_params cp, cp0 = {0};
    transcribe_session_params_init(&cp);

    CHECK(transcribe_session_init(m, &cp, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_session_init(m, &cp0, &out) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(out == NULL);
    cp.n_threads = -1;
    out = FAKE(struct transcribe_session);
    CHECK(transcribe_session_init(m, &cp, &out) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(out == NULL);
    transcribe_session_params_init(&cp);
    cp.kv_type = (transcribe_kv_type)99;
    CHECK(transcribe_session_init(m, &cp, &out) == TRANSCRIBE_ERR_INVALID_ARG);

    struct transcribe_capabilities caps0 = {0};
    CHECK(transcribe_model_get_capabilities(m, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_model_get_capabilities(m, &caps0) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    int32_t toks[4];
    CHECK(transcribe_tokenize(m, NULL, toks, 4) == INT_MIN);
    CHECK(!transcribe_model_supports(m, (transcribe_feature)9999));
    CHECK(!transcribe_model_supports(m, (transcribe_feature)-1));
    CHECK(!transcribe_model_accepts_ext_kind(m, (transcribe_ext_slot)7, 1u));
    CHECK(strcmp(transcribe_model_meta_val_str(m, NULL), "") == 0);
}

static void vad_entries(void) {
    struct transcribe_vad *v = FAKE(struct transcribe_vad);
    float pcm[8] = {0};
    CHECK(transcribe_vad_init(FAKE(const struct transcribe_vad_model), 16000, NULL, NULL) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_run(v, NULL, 8) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_run(v, pcm, -1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_feed(v, NULL, 8) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_feed(v, pcm, -1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_get_segment(v, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
}

/* On a real handle a plain-argument rejection leaves the handle's message as
 * it was; the sink hears it. */
static void real_handles_unchanged(void) {
    struct transcribe_model *m = NULL;
    CHECK(transcribe_model_load_file(MODEL, NULL, &m) == TRANSCRIBE_OK);
    if (!m) return;
    struct transcribe_session_params cp;
    transcribe_session_params_init(&cp);
    cp.struct_size = 1;
    struct transcribe_session *s = NULL;
    n_logged = 0;
    CHECK(transcribe_session_init(m, &cp, &s) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(n_logged == 1);
    CHECK(strcmp(transcribe_model_last_error(m), "") == 0);

    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    if (s) {
        float pcm[8] = {0};
        struct transcribe_stream_update up;
        transcribe_stream_update_init(&up);
        /* a failure that needs the session is kept on it ... */
        CHECK(transcribe_stream_finalize(s, &up) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(strstr(transcribe_session_last_error(s), "no active stream") != NULL);
        /* ... a plain-argument one is not */
        n_logged = 0;
        CHECK(transcribe_run(s, pcm, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(n_logged == 1);
        CHECK(strstr(transcribe_session_last_error(s), "no active stream") != NULL);
        CHECK(transcribe_stream_feed(s, NULL, 8, &up) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(strstr(transcribe_session_last_error(s), "no active stream") != NULL);
        transcribe_session_free(s);
    }
    transcribe_model_free(m);
}

int main(void) {
    transcribe_log_set(count_errors, NULL);
    session_entries();
    model_entries();
    vad_entries();
    real_handles_unchanged();
    transcribe_log_set(NULL, NULL);
    return TEST_DONE();
}
