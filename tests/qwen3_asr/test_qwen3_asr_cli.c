/* Qwen3-ASR through the `transcribe` binary (path in argv[1]) on the
 * reference tiny model: the printed transcript equals the reference text
 * with auto-detection and with -l en, the json output reports the detected
 * language, and the language / task gates surface as errors. With
 * `transcribe-quantize` (argv[2]) every published preset of the F32 file
 * loads and gives the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

#define DATA  TR_SOURCE_DIR "/tests/data/qwen3_asr/tiny"
#define MODEL DATA "/qwen3-asr-tiny-ref-F16.gguf"
#define JFK   TR_SOURCE_DIR "/samples/jfk.wav"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

/* The `text:` line of a golden. */
static void golden_text(const char *stem, char *buf, size_t cap) {
    char path[512], line[2048];
    snprintf(path, sizeof path, "%s/%s.text.txt", DATA, stem);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "text: ", 6) == 0) {
            snprintf(buf, cap, "%s", line + 6);
            tr_cli_chomp(buf);
        }
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_qwen3_asr_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    char want[2048], args[2048];
    const char *flags[2] = {"", "-l en"}, *stems[2] = {"jfk.auto", "jfk.en"};
    for (int i = 0; i < 2; i++) {
        golden_text(stems[i], want, sizeof want);
        snprintf(args, sizeof args, "-q -m '%s' %s '%s'", MODEL, flags[i], JFK);
        int rc = run(args);
        tr_cli_chomp(g_out);
        /* the CLI may trim the leading space the transcript keeps */
        const char *w = want[0] == ' ' ? want + 1 : want, *o = g_out[0] == ' ' ? g_out + 1 : g_out;
        CHECK_MSG(rc == 0 && want[0] && strcmp(o, w) == 0, "`%s`: printed '%s' want '%s' (%s)",
                  flags[i], g_out, want, g_err);
    }
    snprintf(args, sizeof args, "-q -m '%s' -f json '%s'", MODEL, JFK);
    CHECK(run(args) == 0 && strstr(g_out, "\"en\""));
    snprintf(args, sizeof args, "-q -m '%s' -l xx '%s'", MODEL, JFK);
    CHECK_MSG(run(args) != 0 && strstr(g_err, "language"), "-l xx: %s", g_err);
    snprintf(args, sizeof args, "-q -m '%s' -t '%s'", MODEL, JFK);
    CHECK_MSG(run(args) != 0, "-t: %s", g_err);

    if (argc > 2) {
        static const char *const presets[] = {"F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M"};
        golden_text("jfk.auto", want, sizeof want);
        for (int i = 0; i < 5; i++) {
            char out[512], cmd[4096];
            snprintf(out, sizeof out, "%s/qa_tiny_%s.gguf", TR_BINARY_DIR, presets[i]);
            snprintf(cmd, sizeof cmd, "'%s' '%s/qwen3-asr-tiny-ref-F32.gguf' '%s' --quant %s",
                     argv[2], DATA, out, presets[i]);
            CHECK_MSG(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0,
                      "quantize %s: %s", presets[i], g_err);
            snprintf(args, sizeof args, "-q -m '%s' '%s'", out, JFK);
            int rc = run(args);
            tr_cli_chomp(g_out);
            CHECK_MSG(rc == 0 && strcmp(g_out, want) == 0, "%s: printed '%s' (%s)", presets[i],
                      g_out, g_err);
            remove(out);
        }
    }
    return TEST_DONE();
}
