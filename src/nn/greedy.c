/* The shared greedy step loop (greedy.h). */
#include "nn/greedy.h"

#include "nn/spec_draft.h"
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
    return tr_greedy_loop_spec(cfg, step, NULL, 0, user, first_tok, T_prompt, out, n_out);
}

/* Takes the newest token as a single step does: counts it, reports it,
 * appends it (not an EOS) and applies the guard. false when the guard
 * stopped the run (out trimmed). */
static bool take(const tr_greedy_cfg *cfg, int32_t tok, int *n_gen, int *n_past, int n_most,
                 int32_t *out, int *n_out) {
    ++*n_gen;
    ++*n_past;
    if (cfg->on_step) cfg->on_step(cfg->step_user, *n_gen, n_most);
    if (tok == cfg->eos) return true;
    out[(*n_out)++] = tok;
    int period = 0, keep = tr_repeat_keep(&cfg->repeat, out, *n_out, &period);
    if (keep < *n_out) {
        TR_WARN("greedy: the output repeats a cycle of %d tokens; stopped after %d tokens "
                "and kept %d",
                period, *n_out, keep);
        *n_out = keep;
        return false;
    }
    return true;
}

static int min_int(int a, int b) {
    return a < b ? a : b;
}

transcribe_status tr_greedy_loop_spec(const tr_greedy_cfg *cfg, tr_greedy_step_fn step,
                                      tr_greedy_verify_fn verify, int spec_k, void *user,
                                      int first_tok, int T_prompt, int32_t *out, int *n_out) {
    *n_out = 0;
    if (cfg->max_new < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    if (!verify) spec_k = 0;
    spec_k = min_int(spec_k, TR_GREEDY_SPEC_MAX);
    int32_t tok = first_tok;
    int n_gen = 1, n_past = T_prompt;
    const int64_t window_most = (int64_t)cfg->max_n_kv - T_prompt + 1;
    const int n_most =
        window_most < cfg->max_new ? (int)(window_most > 1 ? window_most : 1) : cfg->max_new;
    /* rows[0] = the current token, rows[1..m] = its drafts */
    int32_t rows[TR_GREEDY_SPEC_MAX + 1], next[TR_GREEDY_SPEC_MAX + 1];
    /* A verify call of R rows costs more than one step where the matrix-vector
     * products are not purely memory-bound (on a 2-core host a row adds
     * half to all of a step), so the draft length follows the acceptance:
     * it doubles (up to spec_k) while whole drafts are accepted and drops
     * to one past the accepted ones otherwise. */
    int k_now = spec_k;
    int pause = 0, backoff = 1; /* steps left without drafting; the next pause */
    if (tok != cfg->eos) out[(*n_out)++] = tok;
    while (tok != cfg->eos && n_gen < cfg->max_new && n_past + 1 <= cfg->max_n_kv) {
        if (cfg->should_abort && cfg->should_abort(cfg->abort_user)) return TRANSCRIBE_ERR_ABORTED;
        /* drafts only for steps the plain loop would take: draft i feeds
         * position n_past + 1 + i and makes token n_gen + 2 + i */
        int m = 0;
        if (spec_k > 0 && pause > 0) {
            pause--;
        } else if (spec_k > 0) {
            int room = min_int(cfg->max_new - n_gen - 1, cfg->max_n_kv - n_past - 1);
            m = tr_spec_draft(out, *n_out, min_int(room, k_now), rows + 1);
        }
        transcribe_status st;
        if (m == 0) {
            st = step(user, tok, n_past, &next[0]);
        } else {
            rows[0] = tok;
            st = verify(user, rows, m + 1, n_past, next);
        }
        if (st != TRANSCRIBE_OK) return st;
        int i = 0;
        for (;; i++) {
            tok = next[i];
            if (!take(cfg, tok, &n_gen, &n_past, n_most, out, n_out))
                return TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
            /* the next prediction stands only if it was fed this token */
            if (tok == cfg->eos || i == m || rows[i + 1] != tok) break;
        }
        if (m > 0 && i == 0) { /* every draft rejected: draft less often */
            pause = backoff;
            backoff = min_int(2 * backoff, 32);
            k_now = 1;
        } else if (m > 0) {
            backoff = 1;
            /* i drafts accepted of m */
            k_now = i == m ? min_int(2 * k_now, spec_k) : i + 1;
        }
    }
    return tok == cfg->eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
}
