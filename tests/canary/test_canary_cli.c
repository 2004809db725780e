/* The CLI flags of a Canary run end to end (path of the `transcribe` binary
 * in argv[1]) on the reference tiny models: -l, -t / --target-language and
 * --pnc / --no-pnc reach the prompt (the printed text equals the reference
 * decode of that prompt), and the language gates surface as errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cn_test.h"
#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

/* stdout (one line per file) must equal the golden text of `stem`. */
static void expect_text(const char *config, const char *flags, const char *stem) {
    char model[512], gold[512], name[128], args[2048];
    cn_model_path(model, sizeof model, config, "F32");
    snprintf(name, sizeof name, "%s.text.txt", stem);
    cn_golden_path(gold, sizeof gold, config, name);
    char *want = cn_read_text(gold);
    CHECK(want != NULL);
    snprintf(args, sizeof args, "-q -m '%s' %s '%s'", model, flags,
             TR_CORPUS_DIR "/samples/jfk.wav");
    int rc = run(args);
    /* a decode that hit its cap still prints its text (exit status per docs/cli.md) */
    size_t n = strlen(g_out);
    while (n > 0 && (g_out[n - 1] == '\n' || g_out[n - 1] == '\r')) g_out[--n] = 0;
    CHECK_MSG(want && strcmp(g_out, want) == 0, "%s `%s`: printed '%s' want '%s' (exit %d: %s)",
              config, flags, g_out, want ? want : "", rc, g_err);
    free(want);
}

static void expect_error(const char *config, const char *flags, const char *needle) {
    char model[512], args[2048];
    cn_model_path(model, sizeof model, config, "F32");
    snprintf(args, sizeof args, "-q -m '%s' %s '%s'", model, flags,
             TR_CORPUS_DIR "/samples/jfk.wav");
    int rc = run(args);
    CHECK_MSG(rc != 0 && strstr(g_err, needle), "%s `%s`: exit %d, stderr: %s", config, flags, rc,
              g_err);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_canary_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    for (int c = 0; c < CN_N_CONFIGS; c++) {
        const char *cfg = cn_configs[c];
        char model[512];
        cn_model_path(model, sizeof model, cfg, "F32");
        if (!cn_file_exists(model)) {
            printf("%s: reference model missing: skipped\n", cfg);
            continue;
        }
        expect_text(cfg, "", "jfk.transcribe");
        expect_text(cfg, "-l en --pnc", "jfk.transcribe");
        expect_text(cfg, "-l en --target-language de -t", "jfk.translate");
        expect_text(cfg, "--translate --target-language de", "jfk.translate");
        expect_text(cfg, "--language en --no-pnc", "jfk.nopnc");
        expect_error(cfg, "-l xx", "unsupported language");
        expect_error(cfg, "-t -l de --target-language fr", "unsupported language");
    }
    expect_error("tiny-canary2", "-t -l en --target-language lv", "unsupported language");
    return TEST_DONE();
}
