/* Greedy decoding of causal-lm.md §7 (one utterance, on the shared loop of
 * nn/greedy.h) and §8.5 (a batch, one GEMM-shaped step for all live rows).
 * Both stop a row at EOS, at the token budget (counting the prefill token)
 * or when the next step would leave the window; abort is polled between
 * steps. */
#include <stdlib.h>

#include "nn/causal_lm.h"
#include "nn/greedy.h"
#include "util/log.h"

static bool aborted(const tr_clm_greedy_cfg *cfg) {
    return cfg->should_abort && cfg->should_abort(cfg->abort_user);
}

typedef struct step_ctx {
    tr_clm_state *st;
    tr_pool *pool;
} step_ctx;

static transcribe_status one_step(void *user, int32_t tok, int pos, int32_t *next) {
    const step_ctx *c = user;
    int slot = 0;
    return tr_clm_step(c->st, c->pool, &tok, &pos, &slot, 1, next) ? TRANSCRIBE_OK
                                                                   : TRANSCRIBE_ERR_OOM;
}

transcribe_status tr_clm_greedy(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                int first_tok, int T_prompt, int32_t *out, int *n_out) {
    step_ctx c = {st, pool};
    tr_greedy_cfg g = {
        cfg->eos,        cfg->max_new,
        cfg->max_n_kv,   cfg->should_abort,
        cfg->abort_user, {cfg->repeat_max_period, cfg->repeat_min_repeats, cfg->repeat_min_tokens}};
    transcribe_status rc = tr_greedy_loop(&g, one_step, &c, first_tok, T_prompt, out, n_out);
    if (rc == TRANSCRIBE_ERR_ABORTED)
        TR_WARN("causal_lm: aborted after %d generated tokens", *n_out);
    else if (rc == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        TR_WARN("causal_lm: decoding stopped after %d tokens without end-of-turn (budget %d, "
                "window %d, prompt %d); the text is truncated",
                *n_out, cfg->max_new, cfg->max_n_kv, T_prompt);
    return rc;
}

transcribe_status tr_clm_greedy_batch(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                      int B, const int *first_tok, const int *T_prompt,
                                      const bool *valid, int32_t *out, int *n_out,
                                      transcribe_status *status) {
    if (B < 1 || cfg->max_new < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    const tr_repeat_guard guard = {cfg->repeat_max_period, cfg->repeat_min_repeats,
                                   cfg->repeat_min_tokens};
    int *n_past = malloc((size_t)B * sizeof(int)), *n_gen = malloc((size_t)B * sizeof(int));
    int *pos = malloc((size_t)B * sizeof(int)), *slot = malloc((size_t)B * sizeof(int));
    int32_t *last = malloc((size_t)B * sizeof(int32_t)), *ids = malloc((size_t)B * sizeof(int32_t));
    int32_t *next = malloc((size_t)B * sizeof(int32_t));
    bool *done = malloc((size_t)B * sizeof(bool));
    transcribe_status rc = TRANSCRIBE_OK;
    if (!n_past || !n_gen || !pos || !slot || !last || !ids || !next || !done) {
        rc = TRANSCRIBE_ERR_OOM;
        goto out;
    }
    for (int b = 0; b < B; b++) {
        n_out[b] = 0;
        status[b] = TRANSCRIBE_OK;
        done[b] = !valid[b];
        if (!valid[b]) continue;
        last[b] = first_tok[b];
        n_past[b] = T_prompt[b];
        n_gen[b] = 1;
        if (last[b] != cfg->eos) out[(size_t)b * cfg->max_new + n_out[b]++] = last[b];
        done[b] = last[b] == cfg->eos || n_gen[b] >= cfg->max_new || n_past[b] + 1 > cfg->max_n_kv;
    }
    for (;;) {
        int R = 0;
        for (int b = 0; b < B; b++) {
            if (done[b]) continue;
            ids[R] = last[b];
            pos[R] = n_past[b];
            slot[R] = b;
            R++;
        }
        if (R == 0) break;
        if (!tr_clm_step(st, pool, ids, pos, slot, R, next)) {
            rc = TRANSCRIBE_ERR_OOM;
            goto out;
        }
        for (int r = 0; r < R; r++) {
            int b = slot[r];
            last[b] = next[r];
            n_gen[b]++;
            n_past[b]++;
            if (last[b] != cfg->eos) out[(size_t)b * cfg->max_new + n_out[b]++] = last[b];
            done[b] =
                last[b] == cfg->eos || n_gen[b] >= cfg->max_new || n_past[b] + 1 > cfg->max_n_kv;
            int keep = tr_repeat_keep(&guard, out + (size_t)b * cfg->max_new, n_out[b], NULL);
            if (last[b] != cfg->eos && keep < n_out[b]) {
                TR_WARN("causal_lm: batch row %d repeats itself; stopped after %d tokens, kept %d",
                        b, n_out[b], keep);
                n_out[b] = keep;
                done[b] = true;
            }
        }
        if (aborted(cfg)) {
            TR_WARN("causal_lm: batch aborted");
            rc = TRANSCRIBE_ERR_ABORTED;
            break;
        }
    }
    for (int b = 0; b < B; b++)
        if (valid[b] && last[b] != cfg->eos) status[b] = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
out:
    free(n_past);
    free(n_gen);
    free(pos);
    free(slot);
    free(last);
    free(ids);
    free(next);
    free(done);
    return rc;
}
