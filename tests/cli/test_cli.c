/* Runs the `transcribe` binary (path in argv[1]) on bad inputs and checks
 * exit codes and messages (cli.md §1, §5); with the Whisper test model it
 * also checks every output format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../api/fixtures.h"
#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16];

/* Runs `env bin args` through the shell; returns the exit code and leaves
 * stdout/stderr in g_out/g_err. */
static int run(const char *env, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env ? env : "", g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

#define EXPECT_RUN(env, args, code, stream, needle)                                                \
    do {                                                                                           \
        int rc_ = run(env, args);                                                                  \
        CHECK_MSG(rc_ == (code), "`%s`: exit %d, want %d; stderr: %s", args, rc_, code, g_err);    \
        CHECK_MSG(strstr(stream, needle) != NULL, "`%s`: missing \"%s\" in: %s", args, needle,     \
                  stream);                                                                         \
    } while (0)

static void bad_inputs(void) {
    EXPECT_RUN(NULL, "", 1, g_err, "error: missing audio file or --batch");
    EXPECT_RUN(NULL, "-h", 0, g_err, "usage: ");
    EXPECT_RUN(NULL, "--bogus x.wav", 1, g_err, "error: unknown option '--bogus'");
    EXPECT_RUN(NULL, "- ", 1, g_err, "error: unknown option '-'");
    EXPECT_RUN(NULL, "x.wav -m", 1, g_err, "error: -m requires an argument");
    EXPECT_RUN(NULL, "--timestamps sometimes x.wav", 1, g_err, "--timestamps must be");
    EXPECT_RUN(NULL, "-f docx x.wav", 1, g_err, "unknown --format 'docx'");
    EXPECT_RUN(NULL, "--kv-type q4 x.wav", 1, g_err, "--kv-type must be");
    EXPECT_RUN(NULL, "--n-ctx -1 x.wav", 1, g_err, "--n-ctx must be >= 0");
    EXPECT_RUN(NULL, "--device abc x.wav", 1, g_err, "--device must be an integer index >= 0");
    EXPECT_RUN(NULL, "--stream-chunk-ms 0 x.wav", 1, g_err, "--stream-chunk-ms must be > 0");
    EXPECT_RUN(NULL, "--stream-chunk-ms 100 -r 2 x.wav", 1, g_err, "cannot be combined");
    EXPECT_RUN(NULL, "--batch list.txt x.wav", 1, g_err, "cannot combine");
    EXPECT_RUN(NULL, "--list-devices", 0, g_out, "1 compute device(s):");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf x.wav", 1, g_err, "file not found");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf --device 7 x.wav", 1, g_err,
               "error: --device index 7 is not available");
    EXPECT_RUN("TRANSCRIBE_MODEL=/nonexistent/env.gguf", "x.wav", 1, g_err,
               "using model /nonexistent/env.gguf (from TRANSCRIBE_MODEL)");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf -o /nonexistent-dir/out.txt x.wav", 1, g_err,
               "error: cannot open /nonexistent-dir/out.txt for writing");
    EXPECT_RUN(NULL, "-m /nonexistent/model.gguf --batch /nonexistent/list.txt", 1, g_err,
               "model load");

    char model[512], args[1200];
    snprintf(model, sizeof model, "%s/cli_test_moss.gguf", TR_BINARY_DIR);
    CHECK(tr_fixture_write_gguf(model, "moss") == 0);
    snprintf(args, sizeof args, "-m '%s' x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_err, "not implemented");
    snprintf(args, sizeof args, "-m '%s' -f report x.wav", model);
    EXPECT_RUN(NULL, args, 1, g_out, "-> not implemented");
    remove(model);
}

static void with_model(const char *model, const char *wav) {
    char args[4096], txt[512];
    snprintf(txt, sizeof txt, "%s/cli_test_%d.txt", TR_BINARY_DIR, (int)getpid());

    snprintf(args, sizeof args, "-q -m '%s' '%s' -o '%s'", model, wav, txt);
    EXPECT_RUN(NULL, args, 0, g_out, "\n");
    static char file[1 << 16], golden[1 << 16];
    tr_cli_slurp(txt, file, sizeof file);
    CHECK(strcmp(file, g_out) == 0); /* -o gets the same transcript */
    remove(txt);
    /* The reference model's transcript of jfk.wav with default parameters. */
    tr_cli_slurp(TR_SOURCE_DIR "/tests/data/whisper/tiny/jfk.auto.text.txt", golden, sizeof golden);
    if (golden[0] && !getenv("TR_TEST_WHISPER_MODEL")) {
        size_t n = strlen(golden);
        while (n > 0 && (golden[n - 1] == '\n' || golden[n - 1] == ' ')) golden[--n] = '\0';
        CHECK_MSG(strncmp(g_out, golden, n) == 0 && g_out[n] == '\n', "txt: %s", g_out);
    }

    snprintf(args, sizeof args, "-q -m '%s' -f json '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "{\"file\":");
    CHECK(strstr(g_out, "\"segments\":[{\"t0_ms\":") && strstr(g_out, "\"duration\":11.000"));
    snprintf(args, sizeof args, "-q -m '%s' -f srt '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "1\n00:00:");
    CHECK(strstr(g_out, ",") && strstr(g_out, " --> "));
    snprintf(args, sizeof args, "-q -m '%s' -f vtt --timestamps none '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "WEBVTT\n\n00:00:00.000 --> 00:00:11.000\n");
    snprintf(args, sizeof args, "-m '%s' -f report '%s'", model, wav);
    EXPECT_RUN(NULL, args, 0, g_out, "run: ok\ntext: ");
    CHECK(strstr(g_out, "  max audio:  unbounded") && strstr(g_err, "timings: load="));
    snprintf(args, sizeof args, "-q -m '%s' '%s' /nonexistent/audio.wav", model, wav);
    EXPECT_RUN(NULL, args, 1, g_err, "cannot read audio '/nonexistent/audio.wav'");
    snprintf(args, sizeof args, "-q -m '%s' --timestamps word '%s'", model, wav);
    EXPECT_RUN(NULL, args, 1, g_err, "unsupported timestamp granularity");

    char list[512];
    snprintf(list, sizeof list, "%s/cli_test_%d.list", TR_BINARY_DIR, (int)getpid());
    FILE *f = fopen(list, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "%s\r\n\n/nonexistent/b.wav  \n", wav);
    fclose(f);
    snprintf(args, sizeof args, "-q -m '%s' --batch '%s' --batch-jsonl", model, list);
    EXPECT_RUN(NULL, args, 1, g_out, "{\"type\":\"batch_header\",\"load_ms\":");
    CHECK(strstr(g_out, "{\"file\":\"/nonexistent/b.wav\",\"text\":\"\",\"error\":\"wav: "));
    snprintf(args, sizeof args, "-q -m '%s' --batch '%s'", model, list);
    EXPECT_RUN(NULL, args, 1, g_err, "batch: 1 ok, 0 truncated, 1 failed out of 2");
    CHECK(strstr(g_out, "[1/2] ") && strstr(g_out, "  text: "));
    remove(list);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PATH-TO-transcribe\n");
        return 2;
    }
    g_bin = argv[1];
    bad_inputs();
    char model[1024], wav[1024];
    snprintf(model, sizeof model, "%s/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf",
             TR_SOURCE_DIR);
    snprintf(wav, sizeof wav, "%s/samples/jfk.wav", TR_SHARED_DIR);
    const char *env = getenv("TR_TEST_WHISPER_MODEL"); /* local runs with another model */
    if (env && *env) snprintf(model, sizeof model, "%s", env);
    if (access(model, R_OK) == 0 && access(wav, R_OK) == 0) {
        with_model(model, wav);
    } else {
        printf("SKIP output-format checks: no %s\n", model);
    }
    return TEST_DONE();
}
