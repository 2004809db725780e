/* A naive double-precision MedASR for tests, written straight from
 * docs/formats/medasr.md §4–§6 and reading the weights from the GGUF file itself (dequantized),
 * so it shares nothing with the family's loader or kernels: the unpadded mel with a direct
 * DFT, the subsampler as explicit sums, the blocks with unfused batch norm and an explicit
 * softmax, the head. */
#ifndef TR_TEST_MA_REF_H
#define TR_TEST_MA_REF_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tensor/dtype.h"

/* A tensor of the file widened to double (malloc'ed), NULL when absent. */
static inline double *ma_ref_w(const gguf_file *g, const char *name) {
    const tr_tensor *t = tr_gguf_find_tensor(g, name);
    if (!t) return NULL;
    int64_t n = tr_tensor_nelements(t);
    float *f = malloc(sizeof(float) * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n);
    if (!f || !d) {
        free(f);
        free(d);
        return NULL;
    }
    tr_dequantize_row(t->type, t->data, f, n);
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

static inline double *ma_ref_wl(const gguf_file *g, const char *fmt, int l) {
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return ma_ref_w(g, name);
}

typedef struct ma_ref_dims {
    int L, d, H, F, k, C, nm, sk, V;
    double eps, theta, ff0, ff1, cv0, cv1, clamp;
} ma_ref_dims;

/* docs/formats/medasr.md §4: [T_mel][nm] log-mel of n samples (frame-major); the count. */
static inline int ma_ref_mel(const gguf_file *g, const ma_ref_dims *D, const float *pcm, int n,
                             double **out) {
    const int win = 400, hop = 160, nfft = 512, nb = nfft / 2 + 1;
    int T = n < win ? 0 : (n - win) / hop + 1;
    double *fb = ma_ref_w(g, "frontend.mel_filterbank"), *w = ma_ref_w(g, "frontend.window");
    double *L = calloc((size_t)(T ? T : 1) * D->nm, sizeof(double));
    double *P = malloc(sizeof(double) * nb);
    for (int t = 0; t < T; t++) {
        for (int f = 0; f < nb; f++) {
            double re = 0, im = 0;
            for (int j = 0; j < win; j++) {
                double x = pcm[t * hop + j] * w[j], a = -2.0 * M_PI * f * j / nfft;
                re += x * cos(a);
                im += x * sin(a);
            }
            P[f] = re * re + im * im;
        }
        for (int m = 0; m < D->nm; m++) {
            double e = 0;
            for (int f = 0; f < nb; f++) e += fb[(size_t)f * D->nm + m] * P[f];
            L[(size_t)t * D->nm + m] = log(e > D->clamp ? e : D->clamp);
        }
    }
    free(fb);
    free(w);
    free(P);
    *out = L;
    return T;
}

/* y[r][o] = sum_i x[r][i] W[o][i] (+ b[o]) */
static inline void ma_ref_lin(const double *x, int R, int in, const double *W, const double *b,
                              int out, double *y) {
    for (int r = 0; r < R; r++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in; i++) s += x[(size_t)r * in + i] * W[(size_t)o * in + i];
            y[(size_t)r * out + o] = s;
        }
}

static inline void ma_ref_ln(double *x, int R, int d, const double *g, double eps) {
    for (int r = 0; r < R; r++) {
        double *v = x + (size_t)r * d, mu = 0, var = 0;
        for (int i = 0; i < d; i++) mu += v[i];
        mu /= d;
        for (int i = 0; i < d; i++) var += (v[i] - mu) * (v[i] - mu);
        var /= d;
        for (int i = 0; i < d; i++) v[i] = (v[i] - mu) / sqrt(var + eps) * g[i];
    }
}

static inline double ma_ref_silu(double v) {
    return v / (1.0 + exp(-v));
}

/* stride-2 unpadded conv over time, relu: x [Tin][cin] → y [Tout][cout] */
static inline int ma_ref_conv(const double *x, int Tin, int cin, const double *W, const double *b,
                              int cout, int k, double *y) {
    int Tout = (Tin - k) / 2 + 1;
    for (int t = 0; t < Tout; t++)
        for (int o = 0; o < cout; o++) {
            double s = b[o];
            for (int i = 0; i < cin; i++)
                for (int j = 0; j < k; j++)
                    s += W[((size_t)o * cin + i) * k + j] * x[(size_t)(2 * t + j) * cin + i];
            y[(size_t)t * cout + o] = s > 0 ? s : 0;
        }
    return Tout;
}

typedef struct ma_ref_out {
    int T;
    double *sub, *block[8], *norm, *logits; /* [T][d] / [T][V]; block[l] for l < 8 */
} ma_ref_out;

static inline void ma_ref_out_free(ma_ref_out *o) {
    free(o->sub);
    for (int i = 0; i < 8; i++) free(o->block[i]);
    free(o->norm);
    free(o->logits);
    memset(o, 0, sizeof *o);
}

/* x = w0·x + w1·y */
static inline void ma_ref_res(double *x, const double *y, size_t n, double w0, double w1) {
    for (size_t i = 0; i < n; i++) x[i] = w0 * x[i] + w1 * y[i];
}

static inline void ma_ref_ffn(const gguf_file *g, const ma_ref_dims *D, int l, int which, double *x,
                              int T) {
    const int d = D->d, F = D->F;
    char nn[64], un[64], dn[64];
    snprintf(nn, sizeof nn, "enc.blocks.%%d.norm_ff%d.weight", which);
    snprintf(un, sizeof un, "enc.blocks.%%d.ff%d_up.weight", which);
    snprintf(dn, sizeof dn, "enc.blocks.%%d.ff%d_down.weight", which);
    double *gn = ma_ref_wl(g, nn, l), *up = ma_ref_wl(g, un, l), *dw = ma_ref_wl(g, dn, l);
    double *h = malloc(sizeof(double) * (size_t)T * d), *m = malloc(sizeof(double) * (size_t)T * F);
    memcpy(h, x, sizeof(double) * (size_t)T * d);
    ma_ref_ln(h, T, d, gn, D->eps);
    ma_ref_lin(h, T, d, up, NULL, F, m);
    for (size_t i = 0; i < (size_t)T * F; i++) m[i] = ma_ref_silu(m[i]);
    ma_ref_lin(m, T, F, dw, NULL, d, h);
    ma_ref_res(x, h, (size_t)T * d, D->ff0, D->ff1);
    free(gn);
    free(up);
    free(dw);
    free(h);
    free(m);
}

static inline void ma_ref_rope(double *q, int T, int H, int dh, double theta) {
    for (int p = 0; p < T; p++)
        for (int h = 0; h < H; h++) {
            double *u = q + (size_t)p * H * dh + (size_t)h * dh;
            for (int i = 0; i < dh / 2; i++) {
                double th = p * pow(theta, -2.0 * i / dh), a = u[i], b = u[i + dh / 2];
                u[i] = a * cos(th) - b * sin(th);
                u[i + dh / 2] = a * sin(th) + b * cos(th);
            }
        }
}

static inline void ma_ref_attn(const gguf_file *g, const ma_ref_dims *D, int l, double *x, int T) {
    const int d = D->d, H = D->H, dh = d / H;
    double *gn = ma_ref_wl(g, "enc.blocks.%d.norm_attn.weight", l);
    double *Wq = ma_ref_wl(g, "enc.blocks.%d.attn_q.weight", l),
           *Wk = ma_ref_wl(g, "enc.blocks.%d.attn_k.weight", l),
           *Wv = ma_ref_wl(g, "enc.blocks.%d.attn_v.weight", l),
           *Wo = ma_ref_wl(g, "enc.blocks.%d.attn_o.weight", l);
    size_t Td = (size_t)T * d;
    double *h = malloc(sizeof(double) * Td), *q = malloc(sizeof(double) * Td),
           *k = malloc(sizeof(double) * Td), *v = malloc(sizeof(double) * Td),
           *o = calloc(Td, sizeof(double)), *s = malloc(sizeof(double) * (size_t)T);
    memcpy(h, x, sizeof(double) * Td);
    ma_ref_ln(h, T, d, gn, D->eps);
    ma_ref_lin(h, T, d, Wq, NULL, d, q);
    ma_ref_lin(h, T, d, Wk, NULL, d, k);
    ma_ref_lin(h, T, d, Wv, NULL, d, v);
    ma_ref_rope(q, T, H, dh, D->theta);
    ma_ref_rope(k, T, H, dh, D->theta);
    for (int hh = 0; hh < H; hh++)
        for (int i = 0; i < T; i++) {
            double mx = -INFINITY, z = 0;
            for (int j = 0; j < T; j++) {
                double a = 0;
                for (int e = 0; e < dh; e++)
                    a += q[(size_t)i * d + hh * dh + e] * k[(size_t)j * d + hh * dh + e];
                s[j] = a / sqrt((double)dh);
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < T; j++) z += (s[j] = exp(s[j] - mx));
            for (int j = 0; j < T; j++)
                for (int e = 0; e < dh; e++)
                    o[(size_t)i * d + hh * dh + e] += s[j] / z * v[(size_t)j * d + hh * dh + e];
        }
    ma_ref_lin(o, T, d, Wo, NULL, d, h);
    ma_ref_res(x, h, Td, 1.0, 1.0);
    free(gn);
    free(Wq);
    free(Wk);
    free(Wv);
    free(Wo);
    free(h);
    free(q);
    free(k);
    free(v);
    free(o);
    free(s);
}

static inline void ma_ref_convmod(const gguf_file *g, const ma_ref_dims *D, int l, double *x,
                                  int T) {
    const int d = D->d, K = D->k, pl = (K - 1) / 2;
    double *gn = ma_ref_wl(g, "enc.blocks.%d.norm_conv.weight", l);
    double *P1 = ma_ref_wl(g, "enc.blocks.%d.conv_pointwise1.weight", l),
           *DW = ma_ref_wl(g, "enc.blocks.%d.conv_depthwise.weight", l),
           *P2 = ma_ref_wl(g, "enc.blocks.%d.conv_pointwise2.weight", l),
           *bw = ma_ref_wl(g, "enc.blocks.%d.conv_bn.weight", l),
           *bb = ma_ref_wl(g, "enc.blocks.%d.conv_bn.bias", l),
           *bm = ma_ref_wl(g, "enc.blocks.%d.conv_bn.running_mean", l),
           *bv = ma_ref_wl(g, "enc.blocks.%d.conv_bn.running_var", l);
    size_t Td = (size_t)T * d;
    double *h = malloc(sizeof(double) * Td), *z = malloc(sizeof(double) * 2 * Td),
           *gl = malloc(sizeof(double) * Td), *u = malloc(sizeof(double) * Td);
    memcpy(h, x, sizeof(double) * Td);
    ma_ref_ln(h, T, d, gn, D->eps);
    ma_ref_lin(h, T, d, P1, NULL, 2 * d, z);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++)
            gl[(size_t)t * d + c] =
                z[(size_t)t * 2 * d + c] / (1.0 + exp(-z[(size_t)t * 2 * d + d + c]));
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++) {
            double s = 0;
            for (int j = 0; j < K; j++) {
                int tt = t + j - pl;
                if (tt >= 0 && tt < T) s += DW[(size_t)c * K + j] * gl[(size_t)tt * d + c];
            }
            s = (s - bm[c]) / sqrt(bv[c] + 1e-5) * bw[c] + bb[c];
            u[(size_t)t * d + c] = ma_ref_silu(s);
        }
    ma_ref_lin(u, T, d, P2, NULL, d, h);
    ma_ref_res(x, h, Td, D->cv0, D->cv1);
    free(gn);
    free(P1);
    free(DW);
    free(P2);
    free(bw);
    free(bb);
    free(bm);
    free(bv);
    free(h);
    free(z);
    free(gl);
    free(u);
}

/* The whole encoder and head on mel [T_mel][nm]: *o gets every stage (o->T = 0 when the
 * input gives no frame). */
static inline void ma_ref_encode(const gguf_file *g, const ma_ref_dims *D, const double *mel,
                                 int T_mel, ma_ref_out *o) {
    memset(o, 0, sizeof *o);
    const int d = D->d, k = D->sk;
    if (T_mel < 3 * k - 2) return;
    double *W0 = ma_ref_w(g, "enc.subsampling.dense_0.weight"),
           *b0 = ma_ref_w(g, "enc.subsampling.dense_0.bias"),
           *C0 = ma_ref_w(g, "enc.subsampling.conv_0.weight"),
           *c0b = ma_ref_w(g, "enc.subsampling.conv_0.bias"),
           *C1 = ma_ref_w(g, "enc.subsampling.conv_1.weight"),
           *c1b = ma_ref_w(g, "enc.subsampling.conv_1.bias"),
           *W1 = ma_ref_w(g, "enc.subsampling.dense_1.weight"),
           *b1 = ma_ref_w(g, "enc.subsampling.dense_1.bias"),
           *on = ma_ref_w(g, "enc.out_norm.weight"), *Wc = ma_ref_w(g, "ctc.proj.weight"),
           *bc = ma_ref_w(g, "ctc.proj.bias");
    double *a = malloc(sizeof(double) * (size_t)T_mel * d);
    double *c0 = malloc(sizeof(double) * (size_t)T_mel * d);
    double *c1 = malloc(sizeof(double) * (size_t)T_mel * D->C);
    ma_ref_lin(mel, T_mel, D->nm, W0, b0, d, a);
    for (size_t i = 0; i < (size_t)T_mel * d; i++) a[i] = a[i] > 0 ? a[i] : 0;
    int T1 = ma_ref_conv(a, T_mel, d, C0, c0b, d, k, c0);
    int T = ma_ref_conv(c0, T1, d, C1, c1b, D->C, k, c1);
    double *x = malloc(sizeof(double) * (size_t)T * d);
    ma_ref_lin(c1, T, D->C, W1, b1, d, x);
    size_t Td = (size_t)T * d;
    o->T = T;
    o->sub = malloc(sizeof(double) * Td);
    memcpy(o->sub, x, sizeof(double) * Td);
    for (int l = 0; l < D->L; l++) {
        ma_ref_ffn(g, D, l, 1, x, T);
        ma_ref_attn(g, D, l, x, T);
        ma_ref_convmod(g, D, l, x, T);
        ma_ref_ffn(g, D, l, 2, x, T);
        double *gp = ma_ref_wl(g, "enc.blocks.%d.norm_post.weight", l);
        ma_ref_ln(x, T, d, gp, D->eps);
        free(gp);
        if (l < 8) {
            o->block[l] = malloc(sizeof(double) * Td);
            memcpy(o->block[l], x, sizeof(double) * Td);
        }
    }
    ma_ref_ln(x, T, d, on, D->eps);
    o->norm = malloc(sizeof(double) * Td);
    memcpy(o->norm, x, sizeof(double) * Td);
    o->logits = malloc(sizeof(double) * (size_t)T * D->V);
    ma_ref_lin(x, T, d, Wc, bc, D->V, o->logits);
    free(W0);
    free(b0);
    free(C0);
    free(c0b);
    free(C1);
    free(c1b);
    free(W1);
    free(b1);
    free(on);
    free(Wc);
    free(bc);
    free(a);
    free(c0);
    free(c1);
    free(x);
}

#endif
