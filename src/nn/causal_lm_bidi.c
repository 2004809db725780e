/* The causal LM's blocks run once bidirectionally (docs/formats/granite_nar.md §6.3): the
 * block math of causal_lm.c without the causal mask and without a KV cache, for an editor that
 * reads every position at once; the head only on the rows asked for, in chunks so the logits
 * of a long text span never need one buffer of rows × vocabulary. */
#include "nn/causal_lm.h"

#include "nn/causal_lm_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/argmax.h"
#include "util/log.h"

/* Head rows per chunk: logits of 32 × vocabulary floats at a time. */
#define BIDI_HEAD_ROWS 32

transcribe_status tr_clm_bidi(const tr_clm_hparams *hp, const tr_clm_weights *w, tr_pool *pool,
                              float *x, int n, int head_from, int32_t *argmax, float *logits,
                              bool (*should_abort)(void *user), void *abort_user) {
    if (!hp || !w || !x || !argmax || n < 1 || head_from < 0 || head_from >= n) {
        TR_ERROR("causal_lm: bidirectional pass of %d rows with head from row %d", n, head_from);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const size_t D = (size_t)hp->d_model, V = (size_t)hp->n_vocab;
    const int n_head_rows = n - head_from,
              HR = n_head_rows < BIDI_HEAD_ROWS ? n_head_rows : BIDI_HEAD_ROWS;
    float *scratch = malloc(tr_clm_scratch_floats(hp, n) * sizeof(float));
    int32_t *pos = malloc((size_t)n * sizeof(int32_t));
    float *lg = logits ? NULL : malloc((size_t)HR * V * sizeof(float));
    transcribe_status st = TRANSCRIBE_OK;
    if (!scratch || !pos || (!logits && !lg)) {
        TR_ERROR("causal_lm: out of memory for a bidirectional pass of %d rows", n);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    const clm_pass ps = {hp, w, NULL, scratch, pos, should_abort, abort_user};
    const clm_seg seg = {0, 0, n};
    if (!tr_clm_blocks_fwd(&ps, pool, x, n, &seg, 1)) {
        st = TRANSCRIBE_ERR_ABORTED;
        goto done;
    }
    for (int r0 = 0; r0 < n_head_rows; r0 += HR) {
        const int R = n_head_rows - r0 < HR ? n_head_rows - r0 : HR;
        float *out = logits ? logits + (size_t)r0 * V : lg;
        tr_clm_head_fwd(hp, w, pool, x + (size_t)(head_from + r0) * D, R, out);
        for (int i = 0; i < R; i++) argmax[r0 + i] = tr_argmax(out + (size_t)i * V, (int)V);
    }
done:
    free(scratch);
    free(pos);
    free(lg);
    return st;
}
