/* When the library splits long audio (src/api/chunk.c, tr_chunk_rule), from
 * what a family states, without any model: a fixed output budget and no
 * long-form mode (tr_model_desc.bounded_output) above one piece's length;
 * a long-form mode, or a stated input limit, only past that limit; a
 * family stating neither above one piece's length; chunking on and off;
 * the piece length kept under a model's limit. No family name decides. */
#include <string.h>

#include "api/api_internal.h"
#include "test_util.h"

#define MIN_MS (60LL * 1000)

static bool split(enum transcribe_chunking mode, bool bounded, bool long_form, int64_t limit_ms,
                  int64_t dur_ms) {
    return tr_chunk_rule(mode, 0, "somearch", bounded, long_form, limit_ms, dur_ms).split;
}

int main(void) {
    const enum transcribe_chunking A = TRANSCRIBE_CHUNKING_AUTO;
    /* budget families: Qwen3-ASR advertises 87 min of input, yet stops after
     * 256 tokens; Granite and MOSS likewise */
    CHECK(!split(A, true, false, 5218560, 25000));
    CHECK(!split(A, true, false, 5218560, 30000));
    CHECK(split(A, true, false, 5218560, 31000));
    CHECK(split(A, true, false, 0, 10 * MIN_MS));
    tr_chunk_plan p = tr_chunk_rule(A, 0, "qwen3_asr", true, false, 5218560, 10 * MIN_MS);
    CHECK(p.max_ms == 30000 && p.target_ms == 20000 && strstr(p.why, "qwen3_asr") &&
          strstr(p.why, "fixed output budget"));
    /* their own long form: never, unless past a stated limit */
    CHECK(!split(A, false, true, 0, 120 * MIN_MS));
    CHECK(split(A, false, true, 600000, 11 * MIN_MS));
    /* an input gate (Canary, e.g. 40 s), no long form: whole up to the gate */
    CHECK(!split(A, false, false, 40000, 39000));
    tr_chunk_plan c = tr_chunk_rule(A, 0, "canary", false, false, 40000, 41000);
    CHECK(c.split && c.max_ms == 30000 && strstr(c.why, "input limit"));
    c = tr_chunk_rule(A, 0, "canary", false, false, 20000, 41000);
    CHECK(c.split && c.max_ms == 18000 && c.target_ms == 12000); /* 90 % of the gate */
    /* a family stating neither: above one piece */
    CHECK(split(A, false, false, 0, 31000) && !split(A, false, false, 0, 29000));
    CHECK(tr_chunk_rule(A, 0, NULL, false, false, 0, 31000).split);
    /* on / off; chunk_max_ms */
    CHECK(split(TRANSCRIBE_CHUNKING_ON, false, true, 0, 5000));
    CHECK(!split(TRANSCRIBE_CHUNKING_OFF, true, false, 0, 120 * MIN_MS));
    c = tr_chunk_rule(A, 12000, "x", true, false, 0, 13000);
    CHECK(c.split && c.max_ms == 12000 && c.target_ms == 8000);
    c = tr_chunk_rule(A, 12000, "x", true, false, 0, 11000);
    CHECK(!c.split);
    c = tr_chunk_rule(TRANSCRIBE_CHUNKING_ON, 30000, "x", false, false, 1000, 5000);
    CHECK(c.max_ms == 2000); /* never below 2 s */
    return TEST_DONE();
}
