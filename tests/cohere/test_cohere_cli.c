/* A Cohere run end to end through the `transcribe` binary (argv[1]) on a
 * tiny synthetic file (ch_synth.h): the printed text equals the library's
 * text for the same prompt language, -l selects the prompt's language tag,
 * JSON carries the segment and token rows, and the language / task /
 * missing-piece gates surface as errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ch_synth.h"
#include "cli_run.h"
#include "test_util.h"
#include "transcribe.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];
#define JFK TR_CORPUS_DIR "/samples/jfk.wav"

static int run(const char *model, const char *flags) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' %s '%s'", g_bin, model, flags, JFK);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

/* The library's text for jfk with language lang. */
static char *api_text(const char *model, const char *lang) {
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(JFK, 16000, &pcm, &n) != TRANSCRIBE_OK) return NULL;
    struct transcribe_session *s = NULL;
    char *text = NULL;
    if (transcribe_open(model, NULL, NULL, &s) == TRANSCRIBE_OK) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.language = lang;
        transcribe_status st = transcribe_run(s, pcm, n, &p);
        if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            text = strdup(transcribe_full_text(s));
    }
    transcribe_close(s);
    transcribe_audio_free(pcm);
    return text;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_cohere_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    char model[512], nopnc[512];
    snprintf(model, sizeof model, "%s/cohere_cli_%d.gguf", TR_BINARY_DIR, (int)getpid());
    snprintf(nopnc, sizeof nopnc, "%s/cohere_cli_nopnc_%d.gguf", TR_BINARY_DIR, (int)getpid());
    ch_synth_cfg cfg = ch_synth_default();
    cfg.eos_bias = 2.5f; /* stops at end-of-text: exit 0 */
    CHECK(ch_synth_write(&cfg, model));
    cfg.drop_piece = "<|pnc|>";
    CHECK(ch_synth_write(&cfg, nopnc));

    char *en = api_text(model, "en"), *de = api_text(model, "de");
    CHECK(en && de && strcmp(en, de) != 0);
    int rc = run(model, "");
    tr_cli_chomp(g_out);
    CHECK_MSG(rc == 0 && en && strcmp(g_out, en) == 0, "default: exit %d '%s' want '%s' (%s)", rc,
              g_out, en ? en : "", g_err);
    rc = run(model, "-l de");
    tr_cli_chomp(g_out);
    CHECK_MSG(rc == 0 && de && strcmp(g_out, de) == 0, "-l de: exit %d '%s' (%s)", rc, g_out,
              g_err);
    rc = run(model, "-f json --tokens");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"segments\"") && strstr(g_out, "\"tokens\""),
              "json: exit %d %s", rc, g_out);
    rc = run(model, "-l xx");
    CHECK_MSG(rc != 0 && strstr(g_err, "unsupported language"), "-l xx: exit %d %s", rc, g_err);
    rc = run(model, "-l es"); /* listed, but the vocabulary has no <|es|> */
    CHECK_MSG(rc != 0 && strstr(g_err, "<|es|>"), "-l es: exit %d %s", rc, g_err);
    rc = run(model, "-t");
    CHECK_MSG(rc != 0, "-t: exit %d %s", rc, g_err);
    rc = run(nopnc, "");
    CHECK_MSG(rc != 0 && strstr(g_err, "<|pnc|>"), "no <|pnc|>: exit %d %s", rc, g_err);
    free(en);
    free(de);
    remove(model);
    remove(nopnc);
    return TEST_DONE();
}
