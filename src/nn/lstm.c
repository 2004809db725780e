/* One LSTM cell step (nn/lstm.h). */
#include "nn/lstm.h"

#include <math.h>

#include "tensor/matmul.h"

static float sigm(float v) {
    return 1.0f / (1.0f + expf(-v));
}

void tr_nn_lstm_step(const tr_nn_lstm *l, const float *x, const float *h, const float *c,
                     float *h_out, float *c_out, float *scratch) {
    const int H = l->hidden;
    float *gx = scratch, *gh = scratch + 4 * H;
    tr_matmul(NULL, l->wx, l->b, x, 1, l->n_in, gx, 4 * H);
    tr_matmul(NULL, l->wh, NULL, h, 1, H, gh, 4 * H);
    for (int j = 0; j < 4 * H; j++) gx[j] += gh[j];
    for (int j = 0; j < H; j++) {
        float i = sigm(gx[j]), f = sigm(gx[H + j]), g = tanhf(gx[2 * H + j]),
              o = sigm(gx[3 * H + j]);
        float cn = f * c[j] + i * g;
        c_out[j] = cn;
        h_out[j] = o * tanhf(cn);
    }
}
