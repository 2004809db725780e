/* The shared greedy step loop (greedy.h). */
#include "nn/greedy.h"

#include "util/log.h"

int tr_repeat_keep(const tr_repeat_guard *g, const int32_t *out, int n, int *period) {
    if (!g || g->max_period <= 0) return n;
    const int reps = g->min_repeats > 1 ? g->min_repeats : 2;
    for (int p = 1; p <= g->max_period && p * reps <= n; p++) {
        /* run = ids from the end that equal the id p before them: the tail
         * of run + p ids has period p */
        int run = 0;
        while (run < n - p && out[n - 1 - run] == out[n - 1 - run - p]) run++;
        if (run + p >= p * reps && run + p >= g->min_tokens) {
            if (period) *period = p;
            return n - run;
        }
    }
    return n;
}

transcribe_status tr_greedy_loop(const tr_greedy_cfg *cfg, tr_greedy_step_fn step, void *user,
                                 int first_tok, int T_prompt, int32_t *out, int *n_out) {
    *n_out = 0;
    if (cfg->max_new < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    int32_t tok = first_tok;
    int n_gen = 1, n_past = T_prompt;
    const int64_t window_most = (int64_t)cfg->max_n_kv - T_prompt + 1;
    const int n_most =
        window_most < cfg->max_new ? (int)(window_most > 1 ? window_most : 1) : cfg->max_new;
    if (tok != cfg->eos) out[(*n_out)++] = tok;
    while (tok != cfg->eos && n_gen < cfg->max_new && n_past + 1 <= cfg->max_n_kv) {
        if (cfg->should_abort && cfg->should_abort(cfg->abort_user)) return TRANSCRIBE_ERR_ABORTED;
        int32_t next = -1;
        transcribe_status st = step(user, tok, n_past, &next);
        if (st != TRANSCRIBE_OK) return st;
        tok = next;
        n_gen++;
        n_past++;
        if (cfg->on_step) cfg->on_step(cfg->step_user, n_gen, n_most);
        if (tok != cfg->eos) {
            out[(*n_out)++] = tok;
            int period = 0, keep = tr_repeat_keep(&cfg->repeat, out, *n_out, &period);
            if (keep < *n_out) {
                TR_WARN("greedy: the output repeats a cycle of %d tokens; stopped after %d tokens "
                        "and kept %d",
                        period, *n_out, keep);
                *n_out = keep;
                return TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
            }
        }
    }
    return tok == cfg->eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
}
