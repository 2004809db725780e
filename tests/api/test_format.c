/* transcribe_format_result: every argument checked with its status (and
 * *out_text NULL after a refusal), a result with no run yet, after a failed
 * run (only JSON prints, with the error), the single run and a batch row in
 * all four formats, times clamped into duration_s, JSON escaping. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"
#define WAV   TR_SOURCE_DIR "/samples/jfk.wav"

static void quiet(transcribe_log_level level, const char *text, void *user) {
    (void)level, (void)text, (void)user;
}

/* The rendering of session s (row i) in format fmt; "" (and a failed
 * check) when refused. Freed by the next call. */
static const char *render(const struct transcribe_session *s, int i,
                          struct transcribe_format_params *p, int fmt) {
    static char *last;
    transcribe_format_free(last);
    last = NULL;
    p->format = fmt;
    size_t n = 0;
    transcribe_status st = transcribe_format_result(s, i, p, &last, &n);
    CHECK_MSG(st == TRANSCRIBE_OK && last && strlen(last) == n, "format %d: %s", fmt,
              transcribe_status_string(st));
    return last ? last : "";
}

static transcribe_status refused(const struct transcribe_session *s, int i,
                                 const struct transcribe_format_params *p) {
    char *out = (char *)"sentinel";
    size_t n = 7;
    transcribe_status st = transcribe_format_result(s, i, p, &out, &n);
    CHECK(out == NULL && n == 0);
    return st;
}

int main(void) {
    transcribe_log_set(quiet, NULL);
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(MODEL, NULL, &m) == TRANSCRIBE_OK);
    if (!m) return TEST_DONE();
    CHECK(transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return TEST_DONE();
    struct transcribe_format_params p;
    transcribe_format_params_init(&p);
    CHECK(p.struct_size == sizeof p && p.format == TRANSCRIBE_FORMAT_TXT && p.run_status == 0);

    /* arguments */
    char *out = NULL;
    CHECK(transcribe_format_result(NULL, -1, &p, &out, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_format_result(s, -1, &p, NULL, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    struct transcribe_format_params bad = p;
    bad.struct_size = 8;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
    bad = p, bad.format = 4;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.format = -1;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.max_line_chars = 1001;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.max_cue_ms = 99;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.duration_s = -1.0;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.duration_s = NAN;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.run_status = 99; /* not a status (it printed "unknown status") */
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    bad = p, bad.run_status = -1;
    CHECK(refused(s, -1, &bad) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(refused(s, 0, &p) == TRANSCRIBE_ERR_INVALID_ARG); /* no batch yet */

    /* no run yet: an empty result (NULL params = defaults: txt) */
    CHECK(transcribe_format_result(s, -1, NULL, &out, NULL) == TRANSCRIBE_OK && out && !*out);
    transcribe_format_free(out);
    p.file = "a\"b\\c\n.wav";
    p.model = "m";
    CHECK_MSG(!strcmp(render(s, -1, &p, TRANSCRIBE_FORMAT_JSON),
                      "{\"file\":\"a\\\"b\\\\c\\n.wav\",\"model\":\"m\",\"text\":\"\","
                      "\"language\":\"\",\"duration\":0.000,\"timestamps\":\"none\",\"cues\":[],"
                      "\"segments\":[]}\n"),
              "%s", render(s, -1, &p, TRANSCRIBE_FORMAT_JSON));

    int n = 0;
    float *pcm = NULL;
    CHECK(transcribe_audio_load_file(WAV, 16000, &pcm, &n) == TRANSCRIBE_OK);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    p.duration_s = n / 16000.0;
    p.file = "jfk.wav";
    const char *text = transcribe_full_text(s);
    char want[4096];
    snprintf(want, sizeof want, "%s\n", text);
    CHECK_MSG(!strcmp(render(s, -1, &p, TRANSCRIBE_FORMAT_TXT), want), "txt: %s",
              render(s, -1, &p, TRANSCRIBE_FORMAT_TXT));
    p.txt_header = true;
    snprintf(want, sizeof want, "# jfk.wav\n%s\n", text);
    CHECK(!strcmp(render(s, -1, &p, TRANSCRIBE_FORMAT_TXT), want));
    CHECK(!strncmp(render(s, -1, &p, TRANSCRIBE_FORMAT_SRT), "1\n00:00:00,", 11));
    CHECK(!strncmp(render(s, -1, &p, TRANSCRIBE_FORMAT_VTT), "WEBVTT\n\n00:00:00.", 17));
    const char *json = render(s, -1, &p, TRANSCRIBE_FORMAT_JSON);
    CHECK_MSG(strstr(json, "\"duration\":11.000,\"timestamps\":\"token\"") &&
                  strstr(json, "\"words\":[{") && !strstr(json, "\"tokens\"") &&
                  !strstr(json, "\"error\""),
              "%s", json);
    p.json_tokens = true;
    CHECK(strstr(render(s, -1, &p, TRANSCRIBE_FORMAT_JSON), "\"tokens\":[{\"id\":") != NULL);

    /* every time clamped into a shorter duration_s */
    p.duration_s = 1.0;
    const char *srt = render(s, -1, &p, TRANSCRIBE_FORMAT_SRT);
    for (const char *q = strstr(srt, " --> "); q; q = strstr(q + 5, " --> "))
        CHECK_MSG(strncmp(q + 5, "00:00:01,000", 12) <= 0, "%.30s", q);

    /* a failed run: JSON carries the error, the other formats are empty */
    p.duration_s = 0.5;
    p.run_status = TRANSCRIBE_ERR_SAMPLE_RATE;
    CHECK(!*render(s, -1, &p, TRANSCRIBE_FORMAT_TXT) && !*render(s, -1, &p, TRANSCRIBE_FORMAT_SRT));
    json = render(s, -1, &p, TRANSCRIBE_FORMAT_JSON);
    CHECK_MSG(strstr(json, "\"text\":\"\"") && strstr(json, "\"error\":\""), "%s", json);

    /* a batch row renders as the single run of the same audio */
    p.run_status = TRANSCRIBE_OK;
    p.duration_s = n / 16000.0;
    char single[1 << 14];
    snprintf(single, sizeof single, "%s", render(s, -1, &p, TRANSCRIBE_FORMAT_JSON));
    const float *pcms[2] = {pcm, pcm};
    int ns[2] = {n, n};
    CHECK(transcribe_run_batch(s, pcms, ns, 2, NULL) == TRANSCRIBE_OK);
    CHECK(!strcmp(render(s, 1, &p, TRANSCRIBE_FORMAT_JSON), single));
    CHECK(refused(s, 2, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    render(s, -1, &p, TRANSCRIBE_FORMAT_TXT);
    transcribe_format_free(NULL);

    transcribe_audio_free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
    return TEST_DONE();
}
