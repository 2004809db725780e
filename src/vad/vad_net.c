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

size_t tr_vad_scratch_floats(int n, int count) {
    size_t t = (size_t)n_frames(n) * (size_t)count;
    size_t s = 2 * TR_VAD_BINS * t; /* one [count·T][258] activation */
    return 5 * s + 4 * TR_VAD_HIDDEN * t + 2 * 64 * t + 3 * t + 64;
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

/* count windows of t rows each: x [count·t][c_in] → out [count·t_out][c_out]
 * (time-major); a, y: temporaries. The depthwise conv pads each window on
 * its own; the pointwise convs are GEMMs over the frames of every window; a
 * stride-2 one reads every second row (row stride 2·c_out). */
static int block_fwd(tr_pool *pool, const tr_vad_block *b, const float *x, int t, int count,
                     float *a, float *y, float *out) {
    const long rows = (long)t * count;
    for (int w = 0; w < count; w++) {
        depthwise5(x + (size_t)w * t * b->c_in, t, b->c_in, (const float *)b->dw_w->data, b->dw_b,
                   a + (size_t)w * t * b->c_in);
    }
    relu(a, (long)b->c_in * rows);
    tr_matmul(pool, &b->pw, b->pw_b, a, (int)rows, b->c_in, y, b->c_out);
    if (b->proj_w) {
        tr_matmul(pool, &b->proj, b->proj_b, x, (int)rows, b->c_in, a, b->c_out);
        tr_ew_add(NULL, y, a, (long)b->c_out * rows);
    } else {
        tr_ew_add(NULL, y, x, (long)b->c_out * rows);
    }
    relu(y, (long)b->c_out * rows);
    const int st = b->rp_stride, t_out = (t - 1) / st + 1;
    if (t % st == 0) { /* every window starts on a kept row */
        tr_matmul(pool, &b->rp, b->rp_b, y, t_out * count, st * b->c_out, out, b->c_out);
    } else {
        for (int w = 0; w < count; w++)
            tr_matmul(pool, &b->rp, b->rp_b, y + (size_t)w * t * b->c_out, t_out, st * b->c_out,
                      out + (size_t)w * t_out * b->c_out, b->c_out);
    }
    relu(out, (long)b->c_out * t_out * count);
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

/* Sample i of the reflect-padded window (i in [-P, n + P)). */
static inline float padded(const float *xw, int n, int i) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return xw[i];
}

size_t tr_vad_fft_doubles(const struct transcribe_vad_model *m) {
    return m->fft ? 2 * TR_VAD_N_FFT + 2 + tr_fft_scratch_len(m->fft) : 0;
}

void tr_vad_net_spectra(const struct transcribe_vad_model *m, tr_pool *pool, const float *x, int n,
                        int count, float *frames, float *spec, double *fft_buf) {
    enum { P = TR_VAD_PAD, NF = TR_VAD_N_FFT, B = TR_VAD_BINS, C2 = 2 * TR_VAD_BINS };
    const int t = n_frames(n);
    if (m->fft) {
        double *in = fft_buf, *out = in + NF, *scratch = out + NF + 2;
        for (int w = 0; w < count; w++) {
            const float *xw = x + (size_t)w * n;
            for (int f = 0; f < t; f++) {
                for (int k = 0; k < NF; k++)
                    in[k] = m->hann[k] * padded(xw, n, f * TR_VAD_HOP + k - P);
                tr_fft_real(m->fft, in, out, scratch);
                float *row = spec + ((size_t)w * t + f) * C2;
                for (int k = 0; k < B; k++) {
                    row[k] = (float)out[2 * k];
                    row[B + k] = (float)out[2 * k + 1];
                }
            }
        }
        return;
    }
    for (int w = 0; w < count; w++) {
        /* the frames of a window read its reflect-padded samples */
        const float *xw = x + (size_t)w * n;
        for (int f = 0; f < t; f++) {
            float *row = frames + ((size_t)w * t + f) * NF;
            for (int k = 0; k < NF; k++) row[k] = padded(xw, n, f * TR_VAD_HOP + k - P);
        }
    }
    /* one GEMM for every frame of every window: the basis is packed once */
    tr_matmul(pool, m->basis, NULL, frames, count * t, NF, spec, C2);
}

size_t tr_vad_frames(int n) {
    return (size_t)n_frames(n);
}

void tr_vad_net_batch(const struct transcribe_vad_model *m, const tr_vad_net *net, tr_pool *pool,
                      const float *spec, int n, int count, float h[2][TR_VAD_HIDDEN],
                      float c[2][TR_VAD_HIDDEN], float *scratch, float *probs) {
    enum { B = TR_VAD_BINS, C2 = 2 * TR_VAD_BINS };
    const int t = n_frames(n);
    const size_t rows = (size_t)t * count, s = (size_t)C2 * rows;
    float *x1 = scratch, *ta = x1 + s, *tb = ta + s, *tc = tb + s, *td = tc + s;
    float *gates = td + s;                                 /* [rows][256] */
    float *seq = gates + (size_t)4 * TR_VAD_HIDDEN * rows; /* [rows][64] x2 */
    float *seq2 = seq + (size_t)64 * rows;
    float *logit = seq2 + (size_t)64 * rows; /* rows */
    float *mpad = logit + rows;              /* t + 6 */

    /* x1 columns 0..128: magnitude; 129..257: log spectrum, normalised per
     * window by the mean over its frames of the smoothed mean over bins */
    const int r = TR_VAD_NORM_K / 2;
    for (int w = 0; w < count; w++) {
        float *xw = x1 + (size_t)w * t * C2;
        const float *sw = spec + (size_t)w * t * C2;
        for (int f = 0; f < t; f++) {
            const float *re = sw + (size_t)f * C2, *im = re + B;
            float *row = xw + (size_t)f * C2;
            double acc = 0.0;
            for (int k = 0; k < B; k++) {
                float mag = sqrtf(re[k] * re[k] + im[k] * im[k]);
                float lg = logf(1.0f + mag * 1048576.0f);
                row[k] = mag;
                row[B + k] = lg;
                acc += lg;
            }
            mpad[r + f] = (float)(acc / B);
        }
        for (int k = 1; k <= r; k++) { /* reflect padding of the means */
            mpad[r - k] = mpad[r + k];
            mpad[r + t - 1 + k] = mpad[r + t - 1 - k];
        }
        double mm = 0.0;
        for (int f = 0; f < t; f++) {
            float acc = 0.0f;
            for (int k = 0; k < TR_VAD_NORM_K; k++) acc += m->norm_filter[k] * mpad[f + k];
            mm += acc;
        }
        const float mmf = (float)(mm / t);
        for (int f = 0; f < t; f++)
            for (int k = B; k < C2; k++) xw[(size_t)f * C2 + k] -= mmf;
    }

    /* encoder, all windows at once */
    const float *cur = x1;
    int tt = t;
    for (int bi = 0; bi < TR_VAD_N_BLOCKS; bi++) {
        float *out = (bi & 1) ? td : tc;
        tt = block_fwd(pool, &net->blocks[bi], cur, tt, count, ta, tb, out);
        cur = out;
    }

    /* LSTM over the frames of every window in order: the state runs on */
    const int steps = tt * count;
    lstm_layer(pool, net, 0, cur, steps, gates, seq2, h[0], c[0]);
    lstm_layer(pool, net, 1, seq2, steps, gates, seq, h[1], c[1]);

    /* decoder: sigmoid(w · relu(h_t) + b), averaged over each window's frames */
    relu(seq, (long)64 * steps);
    tr_matmul(pool, net->dec_w, NULL, seq, steps, TR_VAD_HIDDEN, logit, 1);
    for (int f = 0; f < steps; f++) logit[f] += net->dec_b;
    tr_sigmoid(logit, steps);
    for (int w = 0; w < count; w++) {
        float acc = 0.0f;
        for (int f = 0; f < tt; f++) acc += logit[w * tt + f];
        probs[w] = acc / (float)tt;
    }
}
