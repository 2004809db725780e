/* The synthetic causal-LM test models' block wiring, shared by
 * tests/causal_lm and tests/spec: a block's seven matrices from t[0..6]
 * (q, k, v, o, gate, up, down) and its four norms. */
#ifndef TR_TEST_CLM_WIRE_H
#define TR_TEST_CLM_WIRE_H

#include "nn/causal_lm.h"

static inline void tu_clm_wire(tr_clm_block *b, const tr_tensor *t, const float *norm_attn,
                               const float *norm_ffn, const float *q_norm, const float *k_norm) {
    b->wq = &t[0];
    b->wk = &t[1];
    b->wv = &t[2];
    b->wo = &t[3];
    b->gate = &t[4];
    b->up = &t[5];
    b->down = &t[6];
    b->norm_attn = norm_attn;
    b->norm_ffn = norm_ffn;
    b->q_norm = q_norm;
    b->k_norm = k_norm;
}

#endif
