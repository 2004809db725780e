/* The `transcribe` binary (path in argv[1]) on the tiny GigaAM reference
 * files: every variant and dtype prints the golden text of decode.json,
 * JSON carries the token-level timestamps, words and raw pieces (U+2581
 * kept), SRT cues split at words, `-l ru` runs and `-l en` fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "ga_test.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const ga_case *c, const char *flags) {
    char path[512];
    ga_case_path(GA_DIR, "tiny", c, path, sizeof path);
    return tr_cli_transcribe(g_bin, path, flags, GA_CLIP, g_out, sizeof g_out, g_err, sizeof g_err);
}

int main(int argc, char **argv) {
    g_bin = tr_cli_binary(argc, argv);
    if (!g_bin) return 2;
    for (int i = 0; i < GA_N_CASES; i++) {
        const ga_case *c = &k_ga_cases[i];
        char stem[64];
        snprintf(stem, sizeof stem, "%s_%s", c->variant, c->dtype);
        ga_golden g;
        CHECK(ga_golden_load(GA_DIR, stem, &g));
        /* the txt output ends the text at its last non-space (rnnt_F32 ends in a space) */
        size_t len = strlen(g.text);
        while (len > 0 && g.text[len - 1] == ' ') g.text[--len] = 0;
        int rc = run(c, "");
        CHECK_MSG(rc == 0 && !strcmp(g_out, g.text), "%s: exit %d [%s] want [%s] %s", stem, rc,
                  g_out, g.text, g_err);
    }
    const ga_case *e2e = &k_ga_cases[5], *chr = &k_ga_cases[3]; /* e2e-rnnt F16, rnnt F32 */
    int rc = run(e2e, "-f json --tokens");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"token\"") &&
                  strstr(g_out, "{\"t0_ms\":40,\"t1_ms\":80,\"text\":\"Важно\"}") &&
                  strstr(g_out, "\"t0_ms\":40,\"t1_ms\":80,\"text\":\"▁Важно\"}"),
              "json: exit %d %s", rc, g_out);
    rc = run(chr, "-f srt --max-line-chars 1");
    CHECK_MSG(rc == 0 && strstr(g_out, "1\n00:00:00,040 --> 00:00:00,280\nважно\n") &&
                  strstr(g_out, "\nразличать\n") && strstr(g_out, "\nглаголы"),
              "srt: exit %d [%s]", rc, g_out);
    CHECK(run(chr, "-l ru") == 0);
    CHECK(run(chr, "-l en") != 0);
    return TEST_DONE();
}
