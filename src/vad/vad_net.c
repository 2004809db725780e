/* The Silero VAD v4 network on one window of samples.
 *
 * window (n samples) → reflect pad 96 → 256-point windowed DFT every 64
 * samples (one GEMM against the stored basis) → magnitude |X| and
 * log(1 + 2^20 |X|) minus its smoothed mean (adaptive normalisation) → 258
 * channels → four depthwise-separable residual blocks, each followed by a
 * pointwise conv (stride 2 or 1) → 2-layer LSTM (width 64) over the
 * remaining frames → ReLU, linear, sigmoid per frame → mean over frames.
 * Activations are time-major [T][C] rows throughout, so every pointwise
 * conv and the LSTM input projection is one tr_matmul over the frames. */
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
    return 5 * s + 4 * TR_VAD_HIDDEN * t + 2 * 64 * t + 512;
}

static void relu(float *x, long n) {
    tr_relu(x, n);
}

/* Depthwise conv, kernel 5, zero padding 2, on time-major rows: y[t][c]. */
static void depthwise5(const float *x, int t, int ch, const float *w, const float *bias, float *y) {
    for (int f = 0; f < t; f++) {
        float *yr = y + (size_t)f * ch;
        for (int c = 0; c < ch; c++) yr[c] = bias[c];
        for (int k = 0; k < 5; k++) {
            int src = f + k - 2;
            if (src < 0 || src >= t) continue;
            const float *xr = x + (size_t)src * ch;
            for (int c = 0; c < ch; c++) yr[c] += w[c * 5 + k] * xr[c];
        }
    }
}

/* x [t][c_in] → out [t_out][c_out] (time-major); a, y: temporaries. The
 * pointwise convs are GEMMs over the frames; a stride-2 one reads every
 * second row (row stride 2·c_in). */
static int block_fwd(tr_pool *pool, const tr_vad_block *b, const float *x, int t, float *a,
                     float *y, float *out) {
    depthwise5(x, t, b->c_in, (const float *)b->dw_w->data, b->dw_b, a);
    relu(a, (long)b->c_in * t);
    tr_matmul(pool, &b->pw, b->pw_b, a, t, b->c_in, y, b->c_out);
    if (b->proj_w) {
        tr_matmul(pool, &b->proj, b->proj_b, x, t, b->c_in, a, b->c_out);
        tr_ew_add(NULL, y, a, (long)b->c_out * t);
    } else {
        tr_ew_add(NULL, y, x, (long)b->c_out * t);
    }
    relu(y, (long)b->c_out * t);
    int t_out = (t - 1) / b->rp_stride + 1;
    tr_matmul(pool, &b->rp, b->rp_b, y, t_out, b->rp_stride * b->c_out, out, b->c_out);
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

void tr_vad_net_spectra(const struct transcribe_vad_model *m, tr_pool *pool, const float *x, int n,
                        int count, float *frames, float *spec) {
    enum { P = TR_VAD_PAD, NF = TR_VAD_N_FFT, C2 = 2 * TR_VAD_BINS };
    const int t = n_frames(n);
    for (int w = 0; w < count; w++) {
        /* the frames of a window read its reflect-padded samples */
        const float *xw = x + (size_t)w * n;
        for (int f = 0; f < t; f++) {
            float *row = frames + ((size_t)w * t + f) * NF;
            for (int k = 0; k < NF; k++) {
                int i = f * TR_VAD_HOP + k - P; /* index into the window */
                if (i < 0) i = -i;
                if (i >= n) i = 2 * (n - 1) - i;
                row[k] = xw[i];
            }
        }
    }
    /* one GEMM for every frame of every window: the basis is packed once */
    tr_matmul(pool, m->basis, NULL, frames, count * t, NF, spec, C2);
}

size_t tr_vad_frames(int n) {
    return (size_t)n_frames(n);
}

float tr_vad_net_window(const struct transcribe_vad_model *m, const tr_vad_net *net, tr_pool *pool,
                        const float *spec, int n, float h[2][TR_VAD_HIDDEN],
                        float c[2][TR_VAD_HIDDEN], float *scratch) {
    enum { B = TR_VAD_BINS, C2 = 2 * TR_VAD_BINS };
    const int t = n_frames(n);
    const size_t s = (size_t)C2 * t;
    float *x1 = scratch, *ta = x1 + s, *tb = ta + s, *tc = tb + s, *td = tc + s;
    float *gates = td + s;                              /* [t][256] */
    float *seq = gates + (size_t)4 * TR_VAD_HIDDEN * t; /* [t][64] x2 */
    float *seq2 = seq + (size_t)64 * t;
    float *small = seq2 + (size_t)64 * t; /* 512 */

    /* x1 rows 0..128: magnitude; rows 129..257: log spectrum, normalised */
    float *mean = small, *mpad = small + 64;
    for (int f = 0; f < t; f++) {
        const float *re = spec + (size_t)f * C2, *im = re + B;
        double acc = 0.0;
        for (int k = 0; k < B; k++) {
            float mag = sqrtf(re[k] * re[k] + im[k] * im[k]);
            float lg = logf(1.0f + mag * 1048576.0f);
            x1[(size_t)f * C2 + k] = mag;
            x1[(size_t)f * C2 + B + k] = lg;
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
    for (int f = 0; f < t; f++)
        for (int k = B; k < C2; k++) x1[(size_t)f * C2 + k] -= mmf;

    /* encoder */
    const float *cur = x1;
    int tt = t;
    for (int bi = 0; bi < TR_VAD_N_BLOCKS; bi++) {
        float *out = (bi & 1) ? td : tc;
        tt = block_fwd(pool, &net->blocks[bi], cur, tt, ta, tb, out);
        cur = out;
    }

    /* LSTM over the remaining tt frames (rows of cur) */
    lstm_layer(pool, net, 0, cur, tt, gates, seq2, h[0], c[0]);
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
