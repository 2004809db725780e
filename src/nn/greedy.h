/* The one greedy step loop of the autoregressive decoders (causal-lm.md §7;
 * Canary's §8.3 has the same shape): from the prefill's token, step until
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

typedef struct tr_greedy_cfg {
    int eos;
    int max_new;                      /* tokens counting the prefill token and a final EOS */
    int max_n_kv;                     /* window: a step needs pos + 1 <= max_n_kv */
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
} tr_greedy_cfg;

/* out (capacity max_new) receives the generated ids without a trailing
 * EOS. Returns OK (EOS reached), OUTPUT_TRUNCATED (budget or window; out
 * holds the partial ids), ABORTED (out holds the ids so far) or the step's
 * failure status. */
transcribe_status tr_greedy_loop(const tr_greedy_cfg *cfg, tr_greedy_step_fn step, void *user,
                                 int first_tok, int T_prompt, int32_t *out, int *n_out);

#endif
