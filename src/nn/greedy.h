/* The one greedy step loop of the autoregressive decoders (docs/formats/causal-lm.md §7;
 * Canary's docs/formats/canary.md §8.3 has the same shape): from the prefill's token, step until
 * EOS, the token budget (counting the prefill token) or the window, polling
 * abort before every step. The model side is a callback that feeds one
 * token at one position and returns the argmax of the next. */
#ifndef TR_NN_GREEDY_H
#define TR_NN_GREEDY_H

#include <stdbool.h>
#include <stdint.h>

#include "transcribe.h"

/* Feeds `tok` at position `pos`; *next gets the greedy token. A non-OK
 * status ends the loop with that status (the callback logs why). */
typedef transcribe_status (*tr_greedy_step_fn)(void *user, int32_t tok, int pos, int32_t *next);

/* Speculative verification: feeds toks[0..n) at positions pos ..
 * pos + n - 1 in one step; next[i] gets the greedy token after toks[i],
 * exactly (bit for bit in the logits) what n single steps would give. */
typedef transcribe_status (*tr_greedy_verify_fn)(void *user, const int32_t *toks, int n, int pos,
                                                 int32_t *next);

/* Drafts one verify step takes at most (so it feeds <= TR_GREEDY_SPEC_MAX + 1
 * rows). */
#define TR_GREEDY_SPEC_MAX 15

/* Repetition guard: decoding stops once the generated ids end with a cycle
 * of 1..max_period tokens repeated at least min_repeats times and covering
 * at least min_tokens ids; the repeats are trimmed (one cycle kept) and
 * the run reports OUTPUT_TRUNCATED as a budget stop does. max_period 0 =
 * off (the zero value). */
typedef struct tr_repeat_guard {
    int max_period, min_repeats, min_tokens;
} tr_repeat_guard;

/* The defaults families opt into: cycles up to 32 tokens, 8 repeats, 64
 * tokens — far past anything natural speech repeats. */
#define TR_REPEAT_GUARD_DEFAULT ((tr_repeat_guard){32, 8, 64})

/* Ids to keep of out[0..n) when it ends in a guarded loop (the prefix plus
 * one cycle, < n; *period, if given, gets the cycle length); n when it
 * does not. */
int tr_repeat_keep(const tr_repeat_guard *g, const int32_t *out, int n, int *period);

typedef struct tr_greedy_cfg {
    int eos;
    int max_new;                      /* tokens counting the prefill token and a final EOS */
    int max_n_kv;                     /* window: a step needs pos + 1 <= max_n_kv */
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
    tr_repeat_guard repeat; /* zero = off */
    /* Optional progress hook (NULL = none): after every step, with the
     * tokens generated so far (counting the prefill token) and the most the
     * loop can generate (budget or window, whichever is smaller). */
    void (*on_step)(void *user, int n_gen, int n_most);
    void *step_user;
} tr_greedy_cfg;

/* out (capacity max_new) receives the generated ids without a trailing
 * EOS. Returns OK (EOS reached), OUTPUT_TRUNCATED (budget, window or the
 * repetition guard; out holds the partial ids), ABORTED (out holds the ids so far) or the step's
 * failure status. */
transcribe_status tr_greedy_loop(const tr_greedy_cfg *cfg, tr_greedy_step_fn step, void *user,
                                 int first_tok, int T_prompt, int32_t *out, int *n_out);

/* tr_greedy_loop with speculative decoding: before a step, up to spec_k
 * (<= TR_GREEDY_SPEC_MAX) drafts from the n-gram lookup of nn/spec_draft.h
 * over the ids generated so far, never past the budget or the window, go
 * through `verify` with the current token as one step; the predictions are
 * then taken one by one exactly as single steps' (EOS, budget, guard,
 * on_step after each), up to the first draft that differs from the
 * prediction before it. So out, n_out and the status equal
 * tr_greedy_loop's always; only the number of model calls changes. The
 * draft length follows the acceptance (doubling up to spec_k after a
 * wholly accepted draft, one past the accepted ones otherwise). Where no
 * n-gram recurs (or a recent draft was wholly rejected: drafting pauses
 * for 1, 2, 4 .. 32 steps) the step is the plain one. Abort is polled
 * before every call. spec_k <= 0 or verify NULL: tr_greedy_loop. */
transcribe_status tr_greedy_loop_spec(const tr_greedy_cfg *cfg, tr_greedy_step_fn step,
                                      tr_greedy_verify_fn verify, int spec_k, void *user,
                                      int first_tok, int T_prompt, int32_t *out, int *n_out);

#endif
