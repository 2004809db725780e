/* Greedy decoding of docs/formats/causal-lm.md §7 (one utterance, on the shared loop of
 * nn/greedy.h) and §8.5 (a batch, one GEMM-shaped step for all live rows).
 * Both stop a row at EOS, at the token budget (counting the prefill token)
 * or when the next step would leave the window; abort is polled between
 * steps. */
#include <stdlib.h>

#include "nn/causal_lm.h"
#include "nn/greedy.h"
#include "util/log.h"
#include "util/timer.h"

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

static transcribe_status verify_step(void *user, const int32_t *toks, int n, int pos,
                                     int32_t *next) {
    const step_ctx *c = user;
    return tr_clm_step_seq(c->st, c->pool, toks, n, pos, 0, next) ? TRANSCRIBE_OK
                                                                  : TRANSCRIBE_ERR_OOM;
}

transcribe_status tr_clm_greedy(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                int first_tok, int T_prompt, int32_t *out, int *n_out) {
    step_ctx c = {st, pool};
    tr_greedy_cfg g = {
        .eos = cfg->eos,
        .max_new = cfg->max_new,
        .max_n_kv = cfg->max_n_kv,
        .should_abort = cfg->should_abort,
        .abort_user = cfg->abort_user,
        .repeat = {cfg->repeat_max_period, cfg->repeat_min_repeats, cfg->repeat_min_tokens},
        .on_step = cfg->on_step,
        .step_user = cfg->step_user};
    const int k = cfg->spec_k < TR_CLM_SPEC_ROWS - 1 ? cfg->spec_k : TR_CLM_SPEC_ROWS - 1;
    transcribe_status rc =
        tr_greedy_loop_spec(&g, one_step, verify_step, k, &c, first_tok, T_prompt, out, n_out);
    if (rc == TRANSCRIBE_ERR_ABORTED)
        TR_WARN("causal_lm: aborted after %d generated tokens", *n_out);
    else if (rc == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        TR_WARN("causal_lm: decoding stopped after %d tokens without end-of-turn (budget %d, "
                "window %d, prompt %d); the text is truncated",
                *n_out, cfg->max_new, cfg->max_n_kv, T_prompt);
    return rc;
}

static int row_budget(const tr_clm_greedy_cfg *cfg, const tr_clm_batch_row *r) {
    return r->max_new > 0 ? r->max_new : cfg->max_new;
}

static int row_window(const tr_clm_greedy_cfg *cfg, const tr_clm_batch_row *r) {
    return r->max_n_kv > 0 ? r->max_n_kv : cfg->max_n_kv;
}

/* Takes row r's newest token: appends it (not an EOS), applies the guard,
 * and says whether the row is finished. */
static bool take_token(const tr_clm_greedy_cfg *cfg, const tr_repeat_guard *guard,
                       tr_clm_batch_row *r, int32_t tok, int n_gen, int n_past, int b) {
    if (tok == cfg->eos) {
        r->status = TRANSCRIBE_OK;
        return true;
    }
    r->out[r->n_out++] = tok;
    int keep = tr_repeat_keep(guard, r->out, r->n_out, NULL);
    if (n_gen > 1 && keep < r->n_out) {
        TR_WARN("causal_lm: batch row %d repeats itself; stopped after %d tokens, kept %d", b,
                r->n_out, keep);
        r->n_out = keep;
        r->status = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        return true;
    }
    if (n_gen >= row_budget(cfg, r) || n_past + 1 > row_window(cfg, r)) {
        r->status = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        return true;
    }
    return false;
}

transcribe_status tr_clm_greedy_batch(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                      tr_clm_batch_row *rows, int B) {
    if (B < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    for (int b = 0; b < B; b++)
        if (rows[b].slot >= 0 && (row_budget(cfg, &rows[b]) < 1 || !rows[b].out))
            return TRANSCRIBE_ERR_INVALID_ARG;
    const tr_repeat_guard guard = {cfg->repeat_max_period, cfg->repeat_min_repeats,
                                   cfg->repeat_min_tokens};
    int *n_past = malloc((size_t)B * sizeof(int)), *n_gen = malloc((size_t)B * sizeof(int));
    int *pos = malloc((size_t)B * sizeof(int)), *slot = malloc((size_t)B * sizeof(int));
    int *row_of = malloc((size_t)B * sizeof(int));
    int32_t *last = malloc((size_t)B * sizeof(int32_t)), *ids = malloc((size_t)B * sizeof(int32_t));
    int32_t *next = malloc((size_t)B * sizeof(int32_t));
    bool *done = malloc((size_t)B * sizeof(bool));
    transcribe_status rc = TRANSCRIBE_OK;
    if (!n_past || !n_gen || !pos || !slot || !row_of || !last || !ids || !next || !done) {
        rc = TRANSCRIBE_ERR_OOM;
        goto out;
    }
    for (int b = 0; b < B; b++) {
        tr_clm_batch_row *r = &rows[b];
        done[b] = r->slot < 0;
        if (done[b]) continue;
        r->n_out = 0;
        last[b] = r->first;
        n_past[b] = r->T;
        n_gen[b] = 1;
        done[b] = take_token(cfg, &guard, r, last[b], n_gen[b], n_past[b], b);
    }
    for (;;) {
        int R = 0;
        for (int b = 0; b < B; b++) {
            if (done[b]) continue;
            ids[R] = last[b];
            pos[R] = n_past[b];
            slot[R] = rows[b].slot;
            row_of[R] = b;
            R++;
        }
        if (R == 0) break;
        if (aborted(cfg)) {
            TR_WARN("causal_lm: batch aborted with %d rows unfinished", R);
            for (int i = 0; i < R; i++) rows[row_of[i]].status = TRANSCRIBE_ERR_ABORTED;
            rc = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        if (!tr_clm_step(st, pool, ids, pos, slot, R, next)) {
            rc = TRANSCRIBE_ERR_OOM;
            goto out;
        }
        for (int i = 0; i < R; i++) {
            int b = row_of[i];
            last[b] = next[i];
            n_gen[b]++;
            n_past[b]++;
            done[b] = take_token(cfg, &guard, &rows[b], last[b], n_gen[b], n_past[b], b);
        }
    }
out:
    free(n_past);
    free(n_gen);
    free(pos);
    free(slot);
    free(row_of);
    free(last);
    free(ids);
    free(next);
    free(done);
    return rc;
}

transcribe_status tr_clm_run_batch(tr_clm_state *st, tr_pool *pool, const tr_clm_greedy_cfg *cfg,
                                   tr_clm_batch_row *rows, int B, int n_ctx, double *prefill_ms) {
    if (prefill_ms) *prefill_ms = 0;
    if (B < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    float **x = malloc((size_t)B * sizeof *x);
    int *T = malloc((size_t)B * sizeof *T), *slots = malloc((size_t)B * sizeof *slots);
    int32_t *first = malloc((size_t)B * sizeof *first);
    transcribe_status rc = TRANSCRIBE_OK;
    if (!x || !T || !slots || !first) {
        rc = TRANSCRIBE_ERR_OOM;
        goto out;
    }
    int n = 0;
    for (int b = 0; b < B; b++) {
        rows[b].slot = -1;
        rows[b].n_out = 0;
        if (!rows[b].x) continue;
        rows[b].slot = n;
        x[n] = rows[b].x;
        T[n] = rows[b].T;
        slots[n] = n;
        n++;
    }
    if (n == 0) goto out;
    if ((rc = tr_clm_reserve(st, n, n_ctx)) != TRANSCRIBE_OK) goto out;
    double t0 = tr_time_ms();
    if (!tr_clm_prefill_batch(st, pool, x, T, slots, n, first)) {
        rc = TRANSCRIBE_ERR_OOM;
        goto out;
    }
    if (prefill_ms) *prefill_ms = tr_time_ms() - t0;
    for (int b = 0; b < B; b++)
        if (rows[b].slot >= 0) rows[b].first = first[rows[b].slot];
    rc = tr_clm_greedy_batch(st, pool, cfg, rows, B);
out:
    free(x);
    free(T);
    free(slots);
    free(first);
    return rc;
}
