/* One LSTM cell step (PyTorch's nn.LSTM layer for one time step), shared
 * by the transducer predictors that use one (GigaAM today,
 * docs/formats/gigaam.md §6.1):
 *
 *   gates = Wx·x + Wh·h + b          [4H], gate order i, f, g, o
 *   c' = σ(f)⊙c + σ(i)⊙tanh(g)
 *   h' = σ(o)⊙tanh(c')
 *
 * Weights are tr_tensor views (any tr_matmul type; a family that wants
 * F32 arithmetic widens them at load); b is the sum of PyTorch's bias_ih
 * and bias_hh. Single-threaded (a predictor step is a few hundred
 * thousand multiply-adds: a pool dispatch would cost more). */
#ifndef TR_NN_LSTM_H
#define TR_NN_LSTM_H

#include "tensor/tensor.h"

typedef struct tr_nn_lstm {
    const tr_tensor *wx; /* ne {n_in, 4H} */
    const tr_tensor *wh; /* ne {H, 4H} */
    const float *b;      /* [4H] */
    int n_in, hidden;
} tr_nn_lstm;

/* Scratch floats one step needs. */
static inline long tr_nn_lstm_scratch(const tr_nn_lstm *l) {
    return 8L * l->hidden;
}

/* (h_out, c_out) = cell(x, (h, c)). h_out / c_out may alias h / c. */
void tr_nn_lstm_step(const tr_nn_lstm *l, const float *x, const float *h, const float *c,
                     float *h_out, float *c_out, float *scratch);

#endif
