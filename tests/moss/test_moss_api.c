/* MOSS through the public API on the reference tiny model: speaker rows
 * and segment speaker ids through the single and batch accessors, the
 * batch giving each utterance its single-run result, the docs/formats/moss.md §9 input gate at
 * the exact session context (tests/data/moss/tiny/limits.txt), and the
 * capability / run-parameter gates, vocabulary hints. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/moss"

static float *g_pcm[2];
static int g_n[2];

static struct transcribe_session *open_ctx(int n_ctx) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    sp.n_ctx = n_ctx;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(DATA "/tiny/moss-tiny-ref-F16.gguf", NULL, &sp, &s) == TRANSCRIBE_OK);
    return s;
}

static void test_single_and_batch(void) {
    struct transcribe_session *s = open_ctx(0);
    if (!s) return;
    const struct transcribe_model *m = transcribe_get_model(s);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_DIARIZATION));
    CHECK(strcmp(transcribe_model_arch_string(m), "moss") == 0);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_SEGMENT);
    CHECK(transcribe_n_segments(s) == 4 && transcribe_n_speaker_segments(s) == 4);
    struct transcribe_speaker_segment row;
    transcribe_speaker_segment_init(&row);
    CHECK(transcribe_get_speaker_segment(s, 1, &row) == TRANSCRIBE_OK);
    CHECK(row.t0_ms == 3120 && row.t1_ms == 5750 && row.speaker_id == 2 && isnan(row.p));
    CHECK(transcribe_get_speaker_segment(s, 4, &row) == TRANSCRIBE_OK);
    CHECK(row.speaker_id == 0 && row.p == 0.0f && row.t0_ms == 0);
    CHECK(transcribe_get_speaker_segment(s, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 2, &seg) == TRANSCRIBE_OK);
    CHECK(seg.speaker_id == 1 && seg.t0_ms == 6020 && seg.t1_ms == 9400 &&
          strcmp(seg.text, "So tell us about your new project?") == 0);
    char *single = strdup(transcribe_full_text(s));
    CHECK(strcmp(single, "Welcome back to the show. Thanks, it is great to be here. So tell us "
                         "about your new project? We built a tiny model that listens.") == 0);

    /* DEFAULT diarize: segments kept, no speaker ids or rows (docs/formats/moss.md §10.3) */
    rp.diarize = TRANSCRIBE_DIARIZE_MODE_DEFAULT;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_n_segments(s) == 4 && transcribe_n_speaker_segments(s) == 0);

    rp.diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    const float *pcm[3] = {g_pcm[0], NULL, g_pcm[1]};
    int n[3] = {g_n[0], 0, g_n[1]};
    CHECK(transcribe_run_batch(s, pcm, n, 3, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_batch_full_text(s, 0), single) == 0);
    CHECK(transcribe_batch_n_speaker_segments(s, 0) == 4);
    CHECK(transcribe_batch_get_speaker_segment(s, 0, 3, &row) == TRANSCRIBE_OK);
    CHECK(row.t0_ms == 9660 && row.t1_ms == 13100 && row.speaker_id == 2);
    CHECK(transcribe_batch_n_speaker_segments(s, 2) >= 1);
    free(single);

    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) != TRANSCRIBE_OK);
    rp.task = TRANSCRIBE_TASK_TRANSCRIBE;
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_session_free(s);
}

/* limits.txt rows without terms: INPUT_TOO_LONG exactly below the gate
 * (the whole clip: chunking off); by default the library splits a clip
 * past the gate at its pauses instead. */
static void test_gate(void) {
    static const struct {
        int clip, n_ctx;
        transcribe_status want;
    } rows[] = {{0, 474, TRANSCRIBE_ERR_INPUT_TOO_LONG},
                {0, 475, TRANSCRIBE_OK},
                {1, 720, TRANSCRIBE_ERR_INPUT_TOO_LONG}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct transcribe_session *s = open_ctx(rows[i].n_ctx);
        if (!s) continue;
        struct transcribe_run_params whole;
        transcribe_run_params_init(&whole);
        whole.chunking = TRANSCRIBE_CHUNKING_OFF;
        transcribe_status st = transcribe_run(s, g_pcm[rows[i].clip], g_n[rows[i].clip], &whole);
        CHECK_MSG(st == rows[i].want, "clip %d n_ctx %d: %s", rows[i].clip, rows[i].n_ctx,
                  transcribe_status_string(st));
        st = transcribe_run(s, g_pcm[rows[i].clip], g_n[rows[i].clip], NULL);
        CHECK_MSG(st == TRANSCRIBE_OK &&
                      (rows[i].want == TRANSCRIBE_OK || transcribe_was_chunked(s)),
                  "clip %d n_ctx %d by default: %s", rows[i].clip, rows[i].n_ctx,
                  transcribe_status_string(st));
        struct transcribe_session_limits lim;
        transcribe_session_limits_init(&lim);
        CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
        CHECK(lim.effective_n_ctx == rows[i].n_ctx);
        transcribe_session_free(s);
    }
}

/* Log sink: counts the warnings that name ignored vocabulary terms. */
static int g_vocab_warnings;
static void count_warnings(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_WARN && strstr(msg, "vocabulary")) g_vocab_warnings++;
}

/* Vocabulary hints: the feature bit follows the file's instruction split;
 * the terms reach the run (the result holds the `hot` golden's text), an
 * older caller's struct without the trailing pair still runs, malformed
 * lists are refused, and a file without the split warns and ignores them. */
static void test_vocabulary(void) {
    static const char *const terms[] = {"Kubernetes", " Anthropic ", "", "Dr. Nguyen"};
    struct transcribe_session *s = open_ctx(0);
    if (!s) return;
    CHECK(transcribe_model_supports(transcribe_get_model(s), TRANSCRIBE_FEATURE_VOCABULARY));
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    CHECK(rp.vocabulary == NULL && rp.n_vocabulary == 0);
    rp.vocabulary = terms;
    rp.n_vocabulary = 4;
    transcribe_log_set(count_warnings, NULL);
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_OK);
    CHECK(g_vocab_warnings == 0);
    CHECK(strcmp(transcribe_full_text(s), "Welcome back to the show. Thanks, it is great to be "
                                          "here. So tell us about your new project? We built a "
                                          "tiny model that listens.") == 0);
    /* an older caller: struct_size ends before the pair, which is not read */
    rp.struct_size = offsetof(struct transcribe_run_params, vocabulary);
    rp.n_vocabulary = -5;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_OK);
    transcribe_run_params_init(&rp);
    rp.n_vocabulary = -1;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.n_vocabulary = 2; /* NULL list */
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    static const char *const holes[] = {"a", NULL};
    rp.vocabulary = holes;
    CHECK(transcribe_run(s, g_pcm[0], g_n[0], &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_session_free(s);

    struct transcribe_session *ns = NULL;
    CHECK(transcribe_open(DATA "/tiny/moss-tiny-loop-nosplit-F16.gguf", NULL, NULL, &ns) ==
          TRANSCRIBE_OK);
    if (ns) {
        CHECK(!transcribe_model_supports(transcribe_get_model(ns), TRANSCRIBE_FEATURE_VOCABULARY));
        rp.vocabulary = terms;
        rp.n_vocabulary = 4;
        g_vocab_warnings = 0;
        /* we33 decodes to its plain golden on this model (no loop) */
        CHECK(transcribe_run(ns, g_pcm[1], g_n[1], &rp) == TRANSCRIBE_OK);
        CHECK(g_vocab_warnings == 1);
        transcribe_session_free(ns);
    }
    transcribe_log_set(NULL, NULL);
}

int main(void) {
    static const char *const wav[2] = {DATA "/mix.wav", DATA "/we33.wav"};
    for (int c = 0; c < 2; c++)
        if (transcribe_audio_load_file(wav[c], 16000, &g_pcm[c], &g_n[c]) != TRANSCRIBE_OK) {
            fprintf(stderr, "cannot read %s\n", wav[c]);
            return 1;
        }
    test_single_and_batch();
    test_gate();
    test_vocabulary();
    for (int c = 0; c < 2; c++) transcribe_audio_free(g_pcm[c]);
    return TEST_DONE();
}
