/* Draft tokens for speculative decoding by n-gram lookup ("prompt
 * lookup"): the generated ids often repeat a stretch they already hold
 * (names, repeated phrases, a looping output), so the ids that followed
 * the latest earlier occurrence of the last few ids are a cheap guess of
 * what comes next. A guess costs nothing to check beyond the verify step
 * (nn/greedy.h), and a wrong one is simply not accepted. */
#ifndef TR_NN_SPEC_DRAFT_H
#define TR_NN_SPEC_DRAFT_H

#include <stdint.h>

/* Longest n-gram the lookup matches; shorter ones are tried after it. */
#define TR_SPEC_NGRAM_MAX 3

/* For n = TR_SPEC_NGRAM_MAX down to 1: finds the most recent earlier
 * occurrence of the last n ids of ids[0..n_ids) (one starting before
 * n_ids - n) and copies the up-to-k ids that followed it into draft.
 * Returns how many were copied (0: no n-gram recurs, or k <= 0). */
int tr_spec_draft(const int32_t *ids, int n_ids, int k, int32_t *draft);

#endif
