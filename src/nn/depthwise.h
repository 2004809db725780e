/* The middle of a Conformer convolution module, shared by every family
 * with one (the FastConformer of Parakeet / Canary, Granite's Conformer;
 * later GigaAM and MedASR): a depthwise convolution over time on
 * time-major activations, with batch norm folded into its taps at load.
 * The element-wise passes around it (GLU, SiLU, residual adds) are
 * tensor/ops.h's tr_ew_*.
 *
 * Contract: the taps are F32 and owned by the caller (usually allocated at
 * load, k·d + d floats: taps then bias); activations are F32 row-major
 * [T][d]; results do not depend on the thread count. */
#ifndef TR_NN_DEPTHWISE_H
#define TR_NN_DEPTHWISE_H

#include "tensor/pool.h"

typedef struct tr_nn_dw {
    float *w; /* [k][d] tap-major (tap j of channel c at w[j·d + c]), BN scale folded in */
    float *b; /* [d] conv bias (+ folded BN shift), never NULL */
} tr_nn_dw;

/* Batch-norm fold: scale[i] = gamma[i] / sqrt(var[i] + eps),
 * shift[i] = beta[i] - mean[i]·scale[i], for n channels. A caller rejects
 * var + eps <= 0 (or NaN) before folding. Multiply the taps by scale and
 * set bias·scale + shift to get the BN output from the conv alone. */
void tr_nn_bn_fold(const float *gamma, const float *beta, const float *mean, const float *var,
                   int n, float eps, float *scale, float *shift);

/* u[t][c] = b[c] + sum_j w[j][c] · g[t + j - pad_l][c] for t in [0, T),
 * j in [0, k), with g zero outside [0, T) (so pad_l on the left and
 * k - 1 - pad_l on the right keep the frame count). g and u are [T][d] and
 * must not overlap. Frames are split over the pool; each output is
 * computed by one thread in a fixed order (thread-count independent). */
void tr_nn_depthwise(tr_pool *pool, const tr_nn_dw *dw, int d, int k, int pad_l, const float *g,
                     float *u, int T);

/* The same for the output frames [t0, t0 + n) alone, into u [n][d] (g still
 * the whole [T][d]): each row's bits are tr_nn_depthwise's, so a caller can
 * run the conv in row blocks without a second [T][d] buffer. */
void tr_nn_depthwise_rows(tr_pool *pool, const tr_nn_dw *dw, int d, int k, int pad_l,
                          const float *g, int T, int t0, int n, float *u);

#endif
