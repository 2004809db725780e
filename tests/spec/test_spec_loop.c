/* Speculative decoding's pieces without a model: the n-gram lookup of
 * nn/spec_draft.h on hand-made id sequences, and tr_greedy_loop_spec on
 * constructed "models" (a next-token rule over the fed history) giving the
 * ids and status of tr_greedy_loop for every draft length, through EOS,
 * the budget and the window reached mid-draft, the repetition guard firing
 * mid-draft, drafts wrong at their first token, and abort. */
#include <string.h>

#include "nn/greedy.h"
#include "nn/spec_draft.h"
#include "test_util.h"

static void test_draft(void) {
    int32_t d[8];
    /* last 3 (1 2 3) recur at 0: what followed is 4 5 1 2 3 */
    const int32_t a[] = {1, 2, 3, 4, 5, 1, 2, 3};
    CHECK(tr_spec_draft(a, 8, 4, d) == 4 && d[0] == 4 && d[1] == 5 && d[2] == 1 && d[3] == 2);
    CHECK(tr_spec_draft(a, 8, 8, d) == 5 && d[4] == 3); /* up to the end of the ids */
    CHECK(tr_spec_draft(a, 8, 1, d) == 1 && d[0] == 4);
    CHECK(tr_spec_draft(a, 8, 0, d) == 0);
    /* the most recent occurrence wins: 7 8 recurs at 0 (then 1) and 3 (then 2) */
    const int32_t b[] = {7, 8, 1, 7, 8, 2, 9, 7, 8};
    CHECK(tr_spec_draft(b, 9, 2, d) == 2 && d[0] == 2 && d[1] == 9);
    /* no 3-gram or 2-gram recurs, the 1-gram 5 does */
    const int32_t c[] = {5, 6, 7, 8, 5};
    CHECK(tr_spec_draft(c, 5, 3, d) == 3 && d[0] == 6 && d[1] == 7 && d[2] == 8);
    /* a 3-gram is preferred over a more recent 1-gram */
    const int32_t e[] = {4, 5, 6, 10, 6, 11, 4, 5, 6};
    CHECK(tr_spec_draft(e, 9, 1, d) == 1 && d[0] == 10);
    /* nothing recurs */
    const int32_t f[] = {1, 2, 3, 4};
    CHECK(tr_spec_draft(f, 4, 4, d) == 0);
    /* a run of one id: the latest earlier occurrence is one back */
    const int32_t g[] = {9, 9, 9, 9};
    CHECK(tr_spec_draft(g, 4, 4, d) == 1 && d[0] == 9);
    CHECK(tr_spec_draft(g, 1, 4, d) == 0 && tr_spec_draft(g, 0, 4, d) == 0);
    CHECK(tr_spec_draft(NULL, 4, 4, d) == 0);
}

/* A model whose next token is rule(history of fed tokens): the verify
 * callback feeds its rows one by one through the same rule, as a real
 * verify step is bit for bit its single steps. */
typedef struct toy {
    int32_t hist[4096];
    int n_hist;
    int kind;
    int calls, verifies, rows_fed, abort_after;
} toy;

static int32_t rule(const toy *t) {
    const int n = t->n_hist;
    const int32_t last = t->hist[n - 1];
    switch (t->kind) {
    case 0: /* a cycle of 5 after a prefix: drafts match */
        return n < 6 ? 30 + n : 40 + (n % 5);
    case 1: /* counts up, never repeats an n-gram: drafts never found */
        return 100 + n;
    case 2: /* repeats 1-grams with a changing successor: drafts wrong at once */
        return n % 2 ? 7 : 50 + n;
    case 3: /* a cycle, then EOS (0) mid-cycle at n == 23 */
        return n == 23 ? 0 : 60 + (n % 4);
    default: /* a cycle of 3 that later changes to a cycle of 2 */
        return n < 20 ? 70 + (n % 3) : 80 + (n % 2);
    }
    (void)last;
}

static transcribe_status toy_step(void *user, int32_t tok, int pos, int32_t *next) {
    toy *t = user;
    t->calls++;
    t->rows_fed++;
    t->n_hist = pos + 1;
    t->hist[pos] = tok;
    *next = rule(t);
    return TRANSCRIBE_OK;
}

static transcribe_status toy_verify(void *user, const int32_t *toks, int n, int pos,
                                    int32_t *next) {
    toy *t = user;
    t->calls++;
    t->verifies++;
    for (int i = 0; i < n; i++) {
        t->rows_fed++;
        t->n_hist = pos + i + 1;
        t->hist[pos + i] = toks[i];
        next[i] = rule(t);
    }
    return TRANSCRIBE_OK;
}

static bool toy_abort(void *user) {
    toy *t = user;
    return t->calls >= t->abort_after;
}

/* Runs kind under cfg plain and with k = 1, 4, 8, 15, 40: same ids and
 * status. Returns the verify calls of k = 8. */
static int same_as_plain(int kind, tr_greedy_cfg cfg, int T_prompt) {
    int32_t ref[4096], out[4096];
    int n_ref = 0, n_out = 0, verifies = 0;
    toy t = {.kind = kind};
    transcribe_status rc_ref = tr_greedy_loop(&cfg, toy_step, &t, 5, T_prompt, ref, &n_ref);
    const int plain_calls = t.calls;
    const int ks[] = {1, 4, 8, 15, 40};
    for (int i = 0; i < 5; i++) {
        memset(&t, 0, sizeof t);
        t.kind = kind;
        transcribe_status rc =
            tr_greedy_loop_spec(&cfg, toy_step, toy_verify, ks[i], &t, 5, T_prompt, out, &n_out);
        CHECK_MSG(rc == rc_ref && n_out == n_ref && !memcmp(out, ref, sizeof *out * n_ref),
                  "kind %d k %d: status %d/%d, %d/%d ids", kind, ks[i], rc, rc_ref, n_out, n_ref);
        CHECK(t.calls <= plain_calls);
        if (ks[i] == 8) verifies = t.verifies;
    }
    return verifies;
}

static void test_loop(void) {
    tr_greedy_cfg cfg = {.eos = 0, .max_new = 200, .max_n_kv = 100000};
    /* the cycle: drafts are used, to the budget */
    CHECK(same_as_plain(0, cfg, 3) > 0);
    {
        int32_t out[300];
        int n = 0;
        toy t = {.kind = 0};
        CHECK(tr_greedy_loop_spec(&cfg, toy_step, toy_verify, 8, &t, 5, 3, out, &n) ==
              TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        CHECK(n == 200 && t.calls < 60); /* ~9 tokens a call once the cycle is seen */
    }
    CHECK(same_as_plain(1, cfg, 3) == 0); /* no n-gram recurs: plain steps only */
    same_as_plain(2, cfg, 3);             /* drafts wrong at their first token */
    {
        int32_t out[300];
        int n = 0;
        toy t = {.kind = 2};
        tr_greedy_loop_spec(&cfg, toy_step, toy_verify, 8, &t, 5, 3, out, &n);
        /* every draft fails: drafting backs off, so verify calls stay few */
        CHECK(t.verifies > 0 && t.verifies < 20);
    }
    same_as_plain(3, cfg, 3); /* EOS mid-draft */
    same_as_plain(4, cfg, 3); /* the cycle changes: a draft wrong mid-way */
    /* budgets that end mid-draft, and the window */
    for (int b = 1; b <= 30; b++) {
        cfg.max_new = b;
        same_as_plain(0, cfg, 3);
        same_as_plain(4, cfg, 3);
    }
    cfg.max_new = 200;
    for (int w = 3; w <= 40; w += 3) {
        cfg.max_n_kv = w;
        same_as_plain(0, cfg, 3);
    }
    cfg.max_n_kv = 100000;
    /* the repetition guard fires mid-draft (cycle of 5 repeated 4 times) */
    cfg.repeat = (tr_repeat_guard){8, 4, 12};
    same_as_plain(0, cfg, 3);
    same_as_plain(4, cfg, 3);
    cfg.repeat = (tr_repeat_guard){0, 0, 0};
    /* abort, polled before every call: the ids so far are plain's first ones */
    {
        int32_t ref[300], out[300];
        int n_ref = 0, n = 0;
        toy t = {.kind = 0};
        tr_greedy_loop(&cfg, toy_step, &t, 5, 3, ref, &n_ref);
        memset(&t, 0, sizeof t);
        t.abort_after = 4;
        cfg.should_abort = toy_abort;
        cfg.abort_user = &t;
        CHECK(tr_greedy_loop_spec(&cfg, toy_step, toy_verify, 8, &t, 5, 3, out, &n) ==
              TRANSCRIBE_ERR_ABORTED);
        CHECK(t.calls == 4 && n >= 5 && n <= n_ref && !memcmp(out, ref, sizeof *out * n));
        cfg.should_abort = NULL;
    }
    /* the first token is EOS: nothing to do */
    {
        int32_t out[4];
        int n = 9;
        toy t = {.kind = 0};
        tr_greedy_cfg c2 = {.eos = 5, .max_new = 10, .max_n_kv = 100};
        CHECK(tr_greedy_loop_spec(&c2, toy_step, toy_verify, 4, &t, 5, 3, out, &n) ==
                  TRANSCRIBE_OK &&
              n == 0 && t.calls == 0);
    }
}

int main(void) {
    test_draft();
    test_loop();
    return TEST_DONE();
}
