/* Per-handle errors: a failed call leaves its message on its own handle (and
 * still reaches the log sink), a successful call leaves it unchanged, and
 * each handle keeps its own text. */
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"

static int n_logged;
static void count_errors(transcribe_log_level level, const char *text, void *user) {
    (void)text;
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR) n_logged++;
}

int main(void) {
    transcribe_log_set(count_errors, NULL);
    CHECK(strcmp(transcribe_session_last_error(NULL), "") == 0);
    CHECK(strcmp(transcribe_model_last_error(NULL), "") == 0);

    struct transcribe_model *m = NULL;
    CHECK(transcribe_model_load_file(MODEL, NULL, &m) == TRANSCRIBE_OK);
    if (!m) return TEST_DONE();
    CHECK(strcmp(transcribe_model_last_error(m), "") == 0);

    /* a model call that fails: session params with a too-small struct_size */
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.struct_size = 1;
    struct transcribe_session *bad = NULL;
    n_logged = 0;
    CHECK(transcribe_session_init(m, &sp, &bad) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    CHECK(bad == NULL);
    CHECK(n_logged == 1); /* the sink still hears it */
    /* a call rejected for its own arguments is answered before the handle is
     * touched, so nothing is kept on it (test_api_arg_order.c) */
    CHECK(strcmp(transcribe_model_last_error(m), "") == 0);

    struct transcribe_session *s = NULL;
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_model_last_error(m), "") == 0);
    if (s) {
        CHECK(strcmp(transcribe_session_last_error(s), "") == 0);
        float pcm[16] = {0};
        /* a failure that needs the session: this model cannot translate */
        struct transcribe_run_params rp;
        transcribe_run_params_init(&rp);
        rp.task = TRANSCRIBE_TASK_TRANSLATE;
        n_logged = 0;
        CHECK(transcribe_run(s, pcm, 16, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
        CHECK(n_logged >= 1);
        CHECK_MSG(strstr(transcribe_session_last_error(s), "translate") != NULL,
                  "session error '%s'", transcribe_session_last_error(s));
        /* the session's failure is not the model's */
        CHECK(strstr(transcribe_model_last_error(m), "translate") == NULL);
        /* a successful run leaves it as it was */
        CHECK(transcribe_run(s, pcm, 16, NULL) == TRANSCRIBE_OK);
        CHECK(strstr(transcribe_session_last_error(s), "translate") != NULL);
        /* a finalize without a stream fails with its own message */
        struct transcribe_stream_update up;
        transcribe_stream_update_init(&up);
        CHECK(transcribe_stream_finalize(s, &up) != TRANSCRIBE_OK);
        CHECK(strstr(transcribe_session_last_error(s), "translate") == NULL);
        CHECK(transcribe_session_last_error(s)[0] != '\0');
        transcribe_session_free(s);
    }
    transcribe_model_free(m);
    transcribe_log_set(NULL, NULL);
    return TEST_DONE();
}
