/* The one-row encoder-decoder step as one pool run (encdec_step1.c), used by
 * tr_ed_step (encdec_decoder.c) for a step that feeds one token to each of
 * up to TR_ED_STEP1_MAX sequences: a single run's decode steps and a small
 * lockstep batch's. */
#ifndef TR_NN_ENCDEC_STEP1_H
#define TR_NN_ENCDEC_STEP1_H

#include <stdbool.h>

#include "nn/encdec_decoder.h"

#define TR_ED_STEP1_MAX 4 /* the rows of dec_pass.h's small pass */

/* The blocks, the final LayerNorm and (logits non-NULL) the head for the
 * R sequences seqs (one row each, 1 <= R <= TR_ED_STEP1_MAX) whose
 * embedded rows are x [R][D]; x receives the final-normed rows and logits
 * [R][V] the head. scratch: tr_ed_step_scratch(dec, R, R) floats. false,
 * with nothing written, when this path cannot take the step (a weight
 * type without a matrix-vector kernel, out of memory): the caller runs
 * the general path. */
bool tr_ed_step1(tr_pool *pool, const tr_ed_decoder *dec, int R, const tr_ed_seq *seqs, float *x,
                 float *scratch, float *logits);

#endif
