/* Batched greedy decoding for the encoder-decoder families (the batch
 * analogue of greedy.h): every utterance of a batch gets the same prompt,
 * one prefill step for all, then lockstep steps that feed one token per
 * unfinished utterance through tr_ed_step (each decoder weight read once
 * per pass for the whole batch; attention per utterance over its own cache
 * and encoder output). Each utterance stops at its own EOS, budget or
 * window exactly as tr_greedy_loop stops a single run, so its tokens are
 * its single run's (its logits may differ in the last bits: the batched
 * products take other matmul paths). A family that decodes greedily
 * batches by filling one tr_ed_greedy_row per utterance. */
#ifndef TR_NN_ENCDEC_GREEDY_H
#define TR_NN_ENCDEC_GREEDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/encdec_decoder.h"
#include "tensor/pool.h"
#include "transcribe.h"

/* One utterance: its cache and cross K/V in, its ids out. */
typedef struct tr_ed_greedy_row {
    tr_nn_kv *kv; /* empty cache of at least max_n_kv positions */
    const float *ck, *cv;
    const uint16_t *ck16, *cv16; /* half-float cross K/V: replace ck / cv when set */
    size_t cross_stride;
    size_t cross_rows; /* the cross blocks' row capacity (nn.h); 0 = n_src */
    int n_src;
    int32_t *out; /* capacity max_new: generated ids, EOS excluded */
    int max_new;  /* this row's budget when > 0 (Moonshine Streaming's grows with the
                   * audio); 0: cfg->max_new */
    /* results */
    int n_out;
    int32_t last; /* the last token produced: eos when it stopped there */
    bool live;    /* still decoding when an abort stopped the loop */
    /* loop state */
    int n_gen, n_past;
} tr_ed_greedy_row;

typedef struct tr_ed_greedy_cfg {
    const int32_t *prompt; /* the same prompt for every row */
    int n_prompt;
    int eos;
    int max_new;                      /* tokens counting the prefill token and a final EOS */
    int max_n_kv;                     /* window: a step needs n_past + 1 <= max_n_kv */
    bool (*should_abort)(void *user); /* polled before every lockstep step; may be NULL */
    void *abort_user;
} tr_ed_greedy_cfg;

/* Decodes rows[0, n): OK (every row stopped: EOS when last == eos, else
 * budget or window), ABORTED (rows with live set were cut short) or OOM
 * (logged; nothing decoded). */
transcribe_status tr_ed_greedy_batch(tr_pool *pool, const tr_ed_decoder *dec,
                                     const tr_ed_greedy_cfg *cfg, tr_ed_greedy_row *rows, int n);

#endif
