/* What the synthetic causal-LM test models of tests/causal_lm and
 * tests/spec share: their random numbers, and a block's wiring (its seven
 * matrices from t[0..6]: q, k, v, o, gate, up, down; its four norms). */
#ifndef TR_TEST_CLM_WIRE_H
#define TR_TEST_CLM_WIRE_H

#include "nn/causal_lm.h"

/* xorshift64: a uniform float in [-1, 1) from *s (never 0). */
static inline float tu_clm_frand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

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
