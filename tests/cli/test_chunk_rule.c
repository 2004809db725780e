/* When the CLI splits a file (tools/cli/chunked.c, cli_chunk_rule), for the
 * families it knows and for ones it does not, without any model: families
 * with a fixed output budget and no long-form mode above one piece's length;
 * families with their own long-form mode, or a stated input limit, only past
 * that limit; a family stating neither above one piece's length; --chunk on
 * and off; the piece length kept under a model's limit. */
#include <string.h>

#include "../../tools/cli/cli.h"
#include "test_util.h"

/* chunked.c logs through main.c's cli_log; this test has no main.c. */
void cli_log(transcribe_log_level level, const char *fmt, ...) {
    (void)level, (void)fmt;
}

#define MIN_MS (60LL * 1000)

static bool split(cli_chunk_mode mode, const char *arch, bool long_form, int64_t limit_ms,
                  int64_t dur_ms) {
    return cli_chunk_rule(mode, 0, arch, long_form, limit_ms, dur_ms).split;
}

int main(void) {
    const cli_chunk_mode A = CLI_CHUNK_AUTO;
    /* budget families: Qwen3-ASR advertises 87 min of input, yet stops after
     * 256 tokens; Granite and MOSS likewise */
    const char *budget[] = {"qwen3_asr", "granite_speech", "moss"};
    for (int i = 0; i < 3; i++) {
        CHECK(!split(A, budget[i], false, 5218560, 25000));
        CHECK(!split(A, budget[i], false, 5218560, 30000));
        CHECK(split(A, budget[i], false, 5218560, 31000));
        CHECK(split(A, budget[i], false, 0, 10 * MIN_MS));
        cli_chunk_plan p = cli_chunk_rule(A, 0, budget[i], false, 5218560, 10 * MIN_MS);
        CHECK(p.max_ms == 30000 && p.target_ms == 20000 && strstr(p.why, budget[i]));
    }
    /* their own long form: never, unless past a stated limit */
    CHECK(!split(A, "whisper", true, 0, 120 * MIN_MS));
    CHECK(!split(A, "parakeet", true, 0, 120 * MIN_MS));
    CHECK(split(A, "parakeet", true, 600000, 11 * MIN_MS));
    /* Canary: an input gate (e.g. 40 s), no long form: whole up to the gate */
    CHECK(!split(A, "canary", false, 40000, 39000));
    cli_chunk_plan c = cli_chunk_rule(A, 0, "canary", false, 40000, 41000);
    CHECK(c.split && c.max_ms == 30000 && strstr(c.why, "input limit"));
    c = cli_chunk_rule(A, 0, "canary", false, 20000, 41000);
    CHECK(c.split && c.max_ms == 18000 && c.target_ms == 12000); /* 90 % of the gate */
    /* a family stating neither: above one piece */
    CHECK(split(A, "somenewarch", false, 0, 31000) && !split(A, "somenewarch", false, 0, 29000));
    CHECK(split(A, NULL, false, 0, 31000));
    /* on / off; --chunk-max-s */
    CHECK(split(CLI_CHUNK_ON, "whisper", true, 0, 5000));
    CHECK(!split(CLI_CHUNK_OFF, "qwen3_asr", false, 0, 120 * MIN_MS));
    c = cli_chunk_rule(A, 12, "qwen3_asr", false, 0, 13000);
    CHECK(c.split && c.max_ms == 12000 && c.target_ms == 8000);
    c = cli_chunk_rule(A, 12, "qwen3_asr", false, 0, 11000);
    CHECK(!c.split);
    c = cli_chunk_rule(CLI_CHUNK_ON, 30, "canary", false, 1000, 5000);
    CHECK(c.max_ms == 2000); /* never below 2 s */
    return TEST_DONE();
}
