/* The repetition guard of nn/greedy.h: tr_repeat_keep on hand-made id
 * sequences, and the greedy loop on a constructed "model" that falls into a
 * cycle after a prefix (stops early, one cycle kept, OUTPUT_TRUNCATED) or
 * never repeats (runs to EOS / budget as before). */
#include <string.h>

#include "nn/greedy.h"
#include "test_util.h"

static void test_keep(void) {
    const tr_repeat_guard g = {4, 3, 6};
    /* prefix 1 2, then (7 8) x 4 = 8 ids of period 2 */
    const int32_t a[] = {1, 2, 7, 8, 7, 8, 7, 8, 7, 8};
    int period = 0;
    CHECK(tr_repeat_keep(&g, a, 10, &period) == 4 && period == 2);
    /* (7 8) x 2 + 7: too few repeats and tokens */
    CHECK(tr_repeat_keep(&g, a, 7, NULL) == 7);
    /* one id 6 times: period 1 */
    const int32_t b[] = {3, 5, 5, 5, 5, 5, 5};
    CHECK(tr_repeat_keep(&g, b, 7, &period) == 2 && period == 1);
    CHECK(tr_repeat_keep(&g, b, 6, NULL) == 6); /* 5 ids: under min_tokens */
    /* no cycle */
    const int32_t c[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(tr_repeat_keep(&g, c, 10, NULL) == 10);
    /* period longer than max_period is not caught */
    const int32_t d[] = {1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5};
    CHECK(tr_repeat_keep(&g, d, 20, NULL) == 20);
    const tr_repeat_guard off = {0, 0, 0};
    CHECK(tr_repeat_keep(&off, b, 7, NULL) == 7);
    CHECK(tr_repeat_keep(NULL, b, 7, NULL) == 7);
    CHECK(tr_repeat_keep(&g, b, 0, NULL) == 0);
}

/* A model: ids 10, 11, ... for `prefix` steps, then the cycle 20 21 22
 * forever (or EOS 0 after `prefix` steps when cycle is false). */
typedef struct toy {
    int prefix, steps;
    bool cycle;
} toy;

static transcribe_status toy_step(void *user, int32_t tok, int pos, int32_t *next) {
    toy *t = user;
    (void)tok;
    (void)pos;
    int k = t->steps++;
    if (k < t->prefix)
        *next = 10 + k;
    else
        *next = t->cycle ? 20 + (k - t->prefix) % 3 : 0;
    return TRANSCRIBE_OK;
}

static void test_loop(void) {
    int32_t out[1000];
    int n = 0;
    toy t = {5, 0, true};
    tr_greedy_cfg cfg = {.eos = 0, .max_new = 1000, .max_n_kv = 100000};
    /* guard off: runs to the budget */
    CHECK(tr_greedy_loop(&cfg, toy_step, &t, 9, 10, out, &n) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(n == 1000);
    /* guard on: first id 9, prefix 10..14, then one cycle 20 21 22 */
    cfg.repeat = (tr_repeat_guard){8, 8, 30};
    t = (toy){5, 0, true};
    CHECK(tr_greedy_loop(&cfg, toy_step, &t, 9, 10, out, &n) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    const int32_t want[] = {9, 10, 11, 12, 13, 14, 20, 21, 22};
    CHECK_MSG(n == 9 && memcmp(out, want, sizeof want) == 0, "kept %d ids", n);
    CHECK_MSG(t.steps < 40, "%d steps: the guard stops early", t.steps);
    /* a model that ends: EOS as before */
    t = (toy){5, 0, false};
    CHECK(tr_greedy_loop(&cfg, toy_step, &t, 9, 10, out, &n) == TRANSCRIBE_OK);
    CHECK(n == 6);
}

int main(void) {
    test_keep();
    test_loop();
    return TEST_DONE();
}
