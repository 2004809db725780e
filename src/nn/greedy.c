/* The shared greedy step loop (greedy.h). */
#include "nn/greedy.h"

transcribe_status tr_greedy_loop(const tr_greedy_cfg *cfg, tr_greedy_step_fn step, void *user,
                                 int first_tok, int T_prompt, int32_t *out, int *n_out) {
    *n_out = 0;
    if (cfg->max_new < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    int32_t tok = first_tok;
    int n_gen = 1, n_past = T_prompt;
    if (tok != cfg->eos) out[(*n_out)++] = tok;
    while (tok != cfg->eos && n_gen < cfg->max_new && n_past + 1 <= cfg->max_n_kv) {
        if (cfg->should_abort && cfg->should_abort(cfg->abort_user)) return TRANSCRIBE_ERR_ABORTED;
        int32_t next = -1;
        transcribe_status st = step(user, tok, n_past, &next);
        if (st != TRANSCRIBE_OK) return st;
        tok = next;
        n_gen++;
        n_past++;
        if (tok != cfg->eos) out[(*n_out)++] = tok;
    }
    return tok == cfg->eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
}
