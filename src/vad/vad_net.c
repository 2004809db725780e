/* The Silero VAD v4 network on one window of samples.
 *
 * window (n samples) → reflect pad 96 → 256-point windowed DFT every 64
 * samples (one GEMM against the stored basis) → magnitude |X| and
 * log(1 + 2^20 |X|) minus its smoothed mean (adaptive normalisation) → 258
 * channels → four depthwise-separable residual blocks, each followed by a
 * pointwise conv (stride 2 or 1) → 2-layer LSTM (width 64) over the
 * remaining frames → ReLU, linear, sigmoid per frame → mean over frames.
 * Activations are channel-major [C][T] as tr_conv1d takes them; the LSTM
 * works on [T][64] rows. */
#include <math.h>
#include <string.h>

#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "vad/vad.h"

static int n_frames(int n) {
    return (n + 2 * TR_VAD_PAD - TR_VAD_N_FFT) / TR_VAD_HOP + 1;
}

size_t tr_vad_scratch_floats(int n) {
    size_t t = (size_t)n_frames(n);
    size_t s = 2 * TR_VAD_BINS * t; /* one [258][T] activation */
    return (size_t)n + 2 * TR_VAD_PAD + 256 * t + 6 * s + 4 * TR_VAD_HIDDEN * t + 2 * 64 * t + 512;
}

static void relu(float *x, long n) {
    tr_relu(x, n);
}

/* x [c_in][t] → out [c_out][t_out]; a, b: [c][t] temporaries. */
static int block_fwd(tr_pool *pool, const tr_vad_block *b, const float *x, int t, float *a,
                     float *y, float *out) {
    tr_conv1d(pool, x, b->c_in, t, b->dw_w, b->dw_b, 1, 2, 2, 1, b->c_in, a);
    relu(a, (long)b->c_in * t);
    tr_conv1d(pool, a, b->c_in, t, b->pw_w, b->pw_b, 1, 0, 0, 1, 1, y);
    if (b->proj_w) {
        tr_conv1d(pool, x, b->c_in, t, b->proj_w, b->proj_b, 1, 0, 0, 1, 1, a);
        tr_ew_add(NULL, y, a, (long)b->c_out * t);
    } else {
        tr_ew_add(NULL, y, x, (long)b->c_out * t);
    }
    relu(y, (long)b->c_out * t);
    int t_out = tr_conv1d_out_len(t, 1, b->rp_stride, 0, 0, 1);
    tr_conv1d(pool, y, b->c_out, t, b->rp_w, b->rp_b, b->rp_stride, 0, 0, 1, 1, out);
    relu(out, (long)b->c_out * t_out);
    return t_out;
}

/* One LSTM layer over t steps: x [t][64] → y [t][64]; gates [t][256]. */
static void lstm_layer(tr_pool *pool, const tr_vad_net *net, int l, const float *x, int t,
                       float *gates, float *y, float *h, float *c) {
    enum { H = TR_VAD_HIDDEN };
    float rec[4 * H];
    tr_matmul(pool, net->w_ih[l], net->lstm_b[l], x, t, H, gates, 4 * H);
    for (int s = 0; s < t; s++) {
        float *g = gates + (size_t)s * 4 * H;
        tr_matmul(pool, net->w_hh[l], NULL, h, 1, H, rec, 4 * H);
        for (int k = 0; k < 4 * H; k++) g[k] += rec[k];
        tr_sigmoid(g, 3 * H); /* i, o, f */
        tr_tanh(g + 3 * H, H);
        for (int k = 0; k < H; k++) c[k] = g[2 * H + k] * c[k] + g[k] * g[3 * H + k];
        for (int k = 0; k < H; k++) h[k] = c[k];
        tr_tanh(h, H);
        for (int k = 0; k < H; k++) h[k] *= g[H + k];
        memcpy(y + (size_t)s * H, h, sizeof(float) * H);
    }
}

float tr_vad_net_window(const struct transcribe_vad_model *m, const tr_vad_net *net, tr_pool *pool,
                        const float *x, int n, float h[2][TR_VAD_HIDDEN], float c[2][TR_VAD_HIDDEN],
                        float *scratch) {
    enum { P = TR_VAD_PAD, NF = TR_VAD_N_FFT, B = TR_VAD_BINS, C2 = 2 * TR_VAD_BINS };
    const int t = n_frames(n);
    const size_t s = (size_t)C2 * t;
    float *xp = scratch;                   /* n + 2P */
    float *frames = xp + n + 2 * P;        /* [t][256] */
    float *spec = frames + (size_t)NF * t; /* [t][258] */
    float *x1 = spec + s, *ta = x1 + s, *tb = ta + s, *tc = tb + s, *td = tc + s;
    float *gates = td + s;                              /* [t][256] */
    float *seq = gates + (size_t)4 * TR_VAD_HIDDEN * t; /* [t][64] x2 */
    float *seq2 = seq + (size_t)64 * t;
    float *small = seq2 + (size_t)64 * t; /* 512 */

    /* reflect padding (n > P is guaranteed by the window sizes) */
    memcpy(xp + P, x, sizeof(float) * (size_t)n);
    for (int k = 1; k <= P; k++) {
        xp[P - k] = x[k];
        xp[P + n - 1 + k] = x[n - 1 - k];
    }
    for (int f = 0; f < t; f++)
        memcpy(frames + (size_t)f * NF, xp + (size_t)f * TR_VAD_HOP, sizeof(float) * NF);
    tr_matmul(pool, m->basis, NULL, frames, t, NF, spec, C2);

    /* x1 rows 0..128: magnitude; rows 129..257: log spectrum, normalised */
    float *mean = small, *mpad = small + 64;
    for (int f = 0; f < t; f++) {
        const float *re = spec + (size_t)f * C2, *im = re + B;
        double acc = 0.0;
        for (int k = 0; k < B; k++) {
            float mag = sqrtf(re[k] * re[k] + im[k] * im[k]);
            float lg = logf(1.0f + mag * 1048576.0f);
            x1[(size_t)k * t + f] = mag;
            x1[(size_t)(B + k) * t + f] = lg;
            acc += lg;
        }
        mean[f] = (float)(acc / B);
    }
    const int r = TR_VAD_NORM_K / 2;
    for (int f = 0; f < t; f++) mpad[r + f] = mean[f];
    for (int k = 1; k <= r; k++) {
        mpad[r - k] = mean[k];
        mpad[r + t - 1 + k] = mean[t - 1 - k];
    }
    double mm = 0.0;
    for (int f = 0; f < t; f++) {
        float acc = 0.0f;
        for (int k = 0; k < TR_VAD_NORM_K; k++) acc += m->norm_filter[k] * mpad[f + k];
        mm += acc;
    }
    const float mmf = (float)(mm / t);
    for (size_t i = (size_t)B * t; i < s; i++) x1[i] -= mmf;

    /* encoder */
    const float *cur = x1;
    int tt = t;
    for (int bi = 0; bi < TR_VAD_N_BLOCKS; bi++) {
        float *out = (bi & 1) ? td : tc;
        tt = block_fwd(pool, &net->blocks[bi], cur, tt, ta, tb, out);
        cur = out;
    }

    /* LSTM over the remaining tt frames */
    tr_transpose(cur, seq, TR_VAD_HIDDEN, tt);
    lstm_layer(pool, net, 0, seq, tt, gates, seq2, h[0], c[0]);
    lstm_layer(pool, net, 1, seq2, tt, gates, seq, h[1], c[1]);

    /* decoder: sigmoid(w · relu(h_t) + b), averaged over the frames */
    relu(seq, (long)64 * tt);
    float *logit = small;
    tr_matmul(pool, net->dec_w, NULL, seq, tt, TR_VAD_HIDDEN, logit, 1);
    for (int f = 0; f < tt; f++) logit[f] += net->dec_b;
    tr_sigmoid(logit, tt);
    float acc = 0.0f;
    for (int f = 0; f < tt; f++) acc += logit[f];
    return acc / (float)tt;
}
