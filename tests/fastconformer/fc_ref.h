/* Naive FastConformer reference for tests: the formulas of
 * docs/formats/parakeet.md §7 written as plain loops with double accumulation, the
 * rel_shift done by the pad / reshape procedure (and the local window by
 * padding with -inf columns, §7.6), batch norm unfolded. Reads the weights
 * by name from an open GGUF; slow, only for tiny models. */
#ifndef TR_TEST_FC_REF_H
#define TR_TEST_FC_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fc_synth.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"

/* Weight values as F32 (malloc'ed copy). */
static inline float *fcr_get(const gguf_file *g, const char *name) {
    const tr_tensor *t = tr_gguf_find_tensor(g, name);
    if (!t) return NULL;
    const int64_t n = tr_tensor_nelements(t);
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!v) return NULL;
    const int64_t rows = n / t->ne[0];
    for (int64_t r = 0; r < rows; r++)
        tr_dequantize_row(t->type, (const char *)t->data + (size_t)r * t->nb1, v + r * t->ne[0],
                          t->ne[0]);
    return v;
}

static inline float *fcr_getb(const gguf_file *g, int blk, const char *suffix) {
    char name[160];
    snprintf(name, sizeof name, "enc.blocks.%d.%s", blk, suffix);
    return fcr_get(g, name);
}

/* Conv2d, PyTorch semantics, asymmetric zero padding (before, after) on
 * both axes, stride 2 or 1, groups 1 or C. x [ci][h][w] -> y [co][ho][wo]. */
static inline void fcr_conv2d(const float *x, int ci, int h, int w, const float *wt, const float *b,
                              int co, int kk, int stride, int pb, int pa, bool depthwise, float *y,
                              int *ho, int *wo) {
    *ho = (h + pb + pa - kk) / stride + 1;
    *wo = (w + pb + pa - kk) / stride + 1;
    for (int o = 0; o < co; o++)
        for (int oy = 0; oy < *ho; oy++)
            for (int ox = 0; ox < *wo; ox++) {
                double s = b[o];
                int c0 = depthwise ? o : 0, c1 = depthwise ? o + 1 : ci;
                for (int c = c0; c < c1; c++)
                    for (int ky = 0; ky < kk; ky++)
                        for (int kx = 0; kx < kk; kx++) {
                            int iy = oy * stride - pb + ky, ix = ox * stride - pb + kx;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            int cw = depthwise ? 0 : c;
                            int cin = depthwise ? 1 : ci;
                            s += (double)wt[((o * cin + cw) * kk + ky) * kk + kx] *
                                 x[((long)c * h + iy) * w + ix];
                        }
                y[((long)o * *ho + oy) * *wo + ox] = (float)s;
            }
}

static inline void fcr_linear(const float *x, int rows, int in, const float *w, const float *b,
                              int out, float *y) {
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in; i++) s += (double)w[(long)o * in + i] * x[(long)r * in + i];
            y[(long)r * out + o] = (float)s;
        }
}

static inline void fcr_ln(float *x, int rows, int d, const float *g, const float *b) {
    for (int r = 0; r < rows; r++) {
        float *v = x + (long)r * d;
        double m = 0, var = 0;
        for (int i = 0; i < d; i++) m += v[i];
        m /= d;
        for (int i = 0; i < d; i++) var += (v[i] - m) * (v[i] - m);
        var /= d;
        double inv = 1.0 / sqrt(var + 1e-5);
        for (int i = 0; i < d; i++) v[i] = (float)((v[i] - m) * inv * g[i] + b[i]);
    }
}

static inline float fcr_silu(float v) {
    return (float)(v / (1.0 + exp(-(double)v)));
}

/* rel_shift by the pad / reshape procedure: bdr [T][2T-1] -> bd [T][T]. */
static inline void fcr_rel_shift(const float *bdr, int T, float *bd) {
    const int P = 2 * T - 1;
    float *pad = malloc(sizeof(float) * (size_t)T * (P + 1));
    for (int a = 0; a < T; a++) {
        pad[(long)a * (P + 1)] = 0.0f;
        memcpy(pad + (long)a * (P + 1) + 1, bdr + (long)a * P, sizeof(float) * P);
    }
    /* view [P+1][T], drop row 0, view the rest as [T][P], keep T columns */
    const float *rest = pad + T;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) bd[(long)a * T + b] = rest[(long)a * P + b];
    free(pad);
}

typedef struct {
    const gguf_file *g;
    const fc_synth_cfg *cfg;
    int T, P, d, H, dh, pos0;
    bool local, chunked;
    const float *pe;
} fcr_ctx;

static inline void fcr_attention(const fcr_ctx *c, int blk, const float *y, float *outv) {
    const int T = c->T, d = c->d, dh = c->dh, P = c->P;
    float *wq = fcr_getb(c->g, blk, "attn.linear_q.weight");
    float *wk = fcr_getb(c->g, blk, "attn.linear_k.weight");
    float *wv = fcr_getb(c->g, blk, "attn.linear_v.weight");
    float *wo = fcr_getb(c->g, blk, "attn.linear_out.weight");
    float *wp = fcr_getb(c->g, blk, "attn.linear_pos.weight");
    float *bq = fcr_getb(c->g, blk, "attn.linear_q.bias");
    float *bk = fcr_getb(c->g, blk, "attn.linear_k.bias");
    float *bv = fcr_getb(c->g, blk, "attn.linear_v.bias");
    float *bo = fcr_getb(c->g, blk, "attn.linear_out.bias");
    float *pu = fcr_getb(c->g, blk, "attn.pos_bias_u");
    float *pv = fcr_getb(c->g, blk, "attn.pos_bias_v");
    float *q = malloc(sizeof(float) * T * d), *k = malloc(sizeof(float) * T * d);
    float *v = malloc(sizeof(float) * T * d), *p = malloc(sizeof(float) * P * d);
    float *o = malloc(sizeof(float) * T * d);
    const int T2 = 2 * T - 1;
    float *bdr = malloc(sizeof(float) * T * T2), *bd = malloc(sizeof(float) * T * T);
    float *s = malloc(sizeof(float) * T);
    fcr_linear(y, T, d, wq, bq, d, q);
    fcr_linear(y, T, d, wk, bk, d, k);
    fcr_linear(y, T, d, wv, bv, d, v);
    fcr_linear(c->pe, P, d, wp, NULL, d, p);
    for (int h = 0; h < c->H; h++) {
        /* BDr over the table, laid out in the full [T][2T-1] form */
        for (int a = 0; a < T; a++)
            for (int jj = 0; jj < T2; jj++) {
                /* local: column jj of the padded form is table row
                 * jj - (T - 1 - W_L); outside the table it is -inf */
                int j = c->local ? jj - (T - 1 - c->pos0) : jj;
                double acc = 0;
                if (j < 0 || j >= P) {
                    bdr[(long)a * T2 + jj] = -INFINITY;
                    continue;
                }
                for (int e = 0; e < dh; e++)
                    acc += ((double)q[a * d + h * dh + e] + pv[h * dh + e]) * p[j * d + h * dh + e];
                bdr[(long)a * T2 + jj] = (float)acc;
            }
        fcr_rel_shift(bdr, T, bd);
        for (int a = 0; a < T; a++) {
            double mx = -INFINITY;
            for (int b = 0; b < T; b++) {
                double acc = 0;
                for (int e = 0; e < dh; e++)
                    acc += ((double)q[a * d + h * dh + e] + pu[h * dh + e]) * k[b * d + h * dh + e];
                double sc = (acc + bd[a * T + b]) / sqrt((double)dh);
                if (c->chunked) {
                    int chunk = c->cfg->att_right + 1;
                    int lc = c->cfg->att_left < 0 ? 1 << 28 : c->cfg->att_left / chunk;
                    int ca = a / chunk;
                    int lo = (ca - lc > 0 ? ca - lc : 0) * chunk, hi = (ca + 1) * chunk;
                    if (b < lo || b >= hi) sc = -INFINITY;
                }
                s[b] = (float)sc;
                if (sc > mx) mx = sc;
            }
            double sum = 0;
            for (int b = 0; b < T; b++) sum += exp(s[b] - mx);
            for (int e = 0; e < dh; e++) {
                double acc = 0;
                for (int b = 0; b < T; b++) acc += exp(s[b] - mx) / sum * v[b * d + h * dh + e];
                o[a * d + h * dh + e] = (float)acc;
            }
        }
    }
    fcr_linear(o, T, d, wo, bo, d, outv);
    float *all[] = {wq, wk, wv, wo, wp, bq, bk, bv, bo, pu, pv, q, k, v, p, o, bdr, bd, s};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static inline void fcr_conv_module(const fcr_ctx *c, int blk, const float *y, float *outv) {
    const int T = c->T, d = c->d, K = c->cfg->k;
    int pl = (K - 1) / 2;
    if (c->cfg->conv_left >= 0 && c->cfg->conv_right >= 0) pl = c->cfg->conv_left;
    float *w1 = fcr_getb(c->g, blk, "conv.pointwise1.weight");
    float *b1 = fcr_getb(c->g, blk, "conv.pointwise1.bias");
    float *wd = fcr_getb(c->g, blk, "conv.depthwise.weight");
    float *bdw = fcr_getb(c->g, blk, "conv.depthwise.bias");
    float *w2 = fcr_getb(c->g, blk, "conv.pointwise2.weight");
    float *b2 = fcr_getb(c->g, blk, "conv.pointwise2.bias");
    float *gm = fcr_getb(c->g, blk, "conv.bn.weight");
    float *bt = fcr_getb(c->g, blk, "conv.bn.bias");
    float *mu = fcr_getb(c->g, blk, "conv.bn.running_mean");
    float *vr = fcr_getb(c->g, blk, "conv.bn.running_var");
    float *z = malloc(sizeof(float) * T * 2 * d), *gl = malloc(sizeof(float) * T * d);
    float *u = malloc(sizeof(float) * T * d);
    fcr_linear(y, T, d, w1, b1, 2 * d, z);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < d; i++)
            gl[t * d + i] = (float)(z[t * 2 * d + i] / (1.0 + exp(-(double)z[t * 2 * d + d + i])));
    for (int t = 0; t < T; t++)
        for (int i = 0; i < d; i++) {
            double acc = bdw ? bdw[i] : 0.0;
            for (int j = 0; j < K; j++) {
                int src = t + j - pl;
                if (src >= 0 && src < T) acc += (double)wd[i * K + j] * gl[src * d + i];
            }
            u[t * d + i] = (float)acc;
        }
    if (c->cfg->layer_norm)
        fcr_ln(u, T, d, gm, bt);
    else
        for (int t = 0; t < T; t++)
            for (int i = 0; i < d; i++)
                u[t * d + i] =
                    (float)((u[t * d + i] - mu[i]) / sqrt((double)vr[i] + 1e-5) * gm[i] + bt[i]);
    for (long i = 0; i < (long)T * d; i++) u[i] = fcr_silu(u[i]);
    fcr_linear(u, T, d, w2, b2, d, outv);
    float *all[] = {w1, b1, wd, bdw, w2, b2, gm, bt, mu, vr, z, gl, u};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static inline void fcr_ff(const fcr_ctx *c, int blk, const char *pre, const float *y, float *outv) {
    char n[64];
    const int T = c->T, d = c->d, ff = c->cfg->d_ff;
    snprintf(n, sizeof n, "%s.linear1.weight", pre);
    float *w1 = fcr_getb(c->g, blk, n);
    snprintf(n, sizeof n, "%s.linear1.bias", pre);
    float *b1 = fcr_getb(c->g, blk, n);
    snprintf(n, sizeof n, "%s.linear2.weight", pre);
    float *w2 = fcr_getb(c->g, blk, n);
    snprintf(n, sizeof n, "%s.linear2.bias", pre);
    float *b2 = fcr_getb(c->g, blk, n);
    float *mid = malloc(sizeof(float) * T * ff);
    fcr_linear(y, T, d, w1, b1, ff, mid);
    for (long i = 0; i < (long)T * ff; i++) mid[i] = fcr_silu(mid[i]);
    fcr_linear(mid, T, ff, w2, b2, d, outv);
    free(w1), free(b1), free(w2), free(b2), free(mid);
}

static inline void fcr_norm(const fcr_ctx *c, int blk, const char *name, float *x) {
    char n[64];
    snprintf(n, sizeof n, "%s.weight", name);
    float *g = fcr_getb(c->g, blk, n);
    snprintf(n, sizeof n, "%s.bias", name);
    float *b = fcr_getb(c->g, blk, n);
    fcr_ln(x, c->T, c->d, g, b);
    free(g), free(b);
}

/* Returns T_enc; out / pre_out must hold T_enc * d floats. */
static inline int fcr_forward(const gguf_file *g, const fc_synth_cfg *cfg, const float *mel,
                              int T_mel, float *out, float *pre_out) {
    const bool causal = cfg->style && strcmp(cfg->style, "chunked_limited") == 0;
    const int C = cfg->C, d = cfg->d, pb = causal ? 2 : 1, pa = 1;
    int h = T_mel, w = cfg->n_mels, ho, wo;
    size_t big = (size_t)C * (T_mel + 4) * (cfg->n_mels + 4);
    float *a = malloc(sizeof(float) * big), *b = malloc(sizeof(float) * big);
    for (int t = 0; t < T_mel; t++)
        for (int f = 0; f < w; f++) a[t * w + f] = mel[(long)f * T_mel + t];
    /* NeMo dw_striding: conv.0 (full, stride 2), then per further stage k
     * a depthwise stride-2 conv.{3k-4} and a pointwise conv.{3k-3}; ReLU
     * after conv.0 and after each pointwise */
    const int n_convs = 2 * fc_synth_stages(cfg) - 1;
    for (int s = 0; s < n_convs; s++) {
        const int k = (s + 3) / 2, idx = s == 0 ? 0 : s % 2 ? 3 * k - 4 : 3 * k - 3;
        char n[64];
        snprintf(n, sizeof n, "enc.pre_encode.conv.%d.weight", idx);
        float *wt = fcr_get(g, n);
        snprintf(n, sizeof n, "enc.pre_encode.conv.%d.bias", idx);
        float *bs = fcr_get(g, n);
        const bool pw = s > 0 && s % 2 == 0;
        fcr_conv2d(a, s == 0 ? 1 : C, h, w, wt, bs, C, pw ? 1 : 3, pw ? 1 : 2, pw ? 0 : pb,
                   pw ? 0 : pa, s % 2 == 1, b, &ho, &wo);
        h = ho, w = wo;
        if (s % 2 == 0)
            for (long i = 0; i < (long)C * h * w; i++) b[i] = b[i] > 0 ? b[i] : 0.0f;
        float *tmp = a;
        a = b, b = tmp;
        free(wt), free(bs);
    }
    const int T = h, F = w;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            for (int f = 0; f < F; f++)
                b[(long)t * C * F + c * F + f] = a[((long)c * T + t) * F + f];
    float *wo_ = fcr_get(g, "enc.pre_encode.out.weight"),
          *bo = fcr_get(g, "enc.pre_encode.out.bias");
    fcr_linear(b, T, C * F, wo_, bo, d, out);
    free(wo_), free(bo), free(a), free(b);
    if (cfg->xscaling)
        for (long i = 0; i < (long)T * d; i++) out[i] *= sqrtf((float)d);
    if (pre_out) memcpy(pre_out, out, sizeof(float) * T * d);
    if (cfg->spk) {
        static const char *const nm[2][4] = {
            {"enc.spk_kernel.0.0.weight", "enc.spk_kernel.0.0.bias", "enc.spk_kernel.0.3.weight",
             "enc.spk_kernel.0.3.bias"},
            {"enc.bg_spk_kernel.0.0.weight", "enc.bg_spk_kernel.0.0.bias",
             "enc.bg_spk_kernel.0.3.weight", "enc.bg_spk_kernel.0.3.bias"}};
        float *in = calloc((size_t)T * d, sizeof(float)), *hid = malloc(sizeof(float) * T * d);
        float *res = malloc(sizeof(float) * T * d);
        for (int s = 0; s < (cfg->spk_bg ? 2 : 1); s++) {
            float *w0 = fcr_get(g, nm[s][0]), *b0 = fcr_get(g, nm[s][1]);
            float *w3 = fcr_get(g, nm[s][2]), *b3 = fcr_get(g, nm[s][3]);
            /* speaker kernel reads x; the background kernel reads zeros */
            if (s == 0)
                memcpy(in, out, sizeof(float) * T * d);
            else
                memset(in, 0, sizeof(float) * T * d);
            fcr_linear(in, T, d, w0, b0, d, hid);
            for (long i = 0; i < (long)T * d; i++) hid[i] = hid[i] > 0 ? hid[i] : 0.0f;
            fcr_linear(hid, T, d, w3, b3, d, res);
            for (long i = 0; i < (long)T * d; i++) out[i] += res[i];
            free(w0), free(b0), free(w3), free(b3);
        }
        free(in), free(hid), free(res);
    }

    fcr_ctx c = {g, cfg, T, 0, d, cfg->H, d / cfg->H, 0, false, causal, NULL};
    c.local = (!cfg->style || strcmp(cfg->style, "regular") == 0) && cfg->att_left >= 0 &&
              cfg->att_right >= 0;
    c.P = c.local ? cfg->att_left + cfg->att_right + 1 : 2 * T - 1;
    c.pos0 = c.local ? cfg->att_left : T - 1;
    float *pe = malloc(sizeof(float) * c.P * d);
    for (int i = 0; i < c.P; i++)
        for (int j = 0; j < d / 2; j++) {
            double arg = (double)(c.pos0 - i) * exp(-(2.0 * j) * log(10000.0) / d);
            pe[i * d + 2 * j] = (float)sin(arg);
            pe[i * d + 2 * j + 1] = (float)cos(arg);
        }
    c.pe = pe;
    float *y = malloc(sizeof(float) * T * d), *r = malloc(sizeof(float) * T * d);
    for (int blk = 0; blk < cfg->n_layers; blk++) {
        memcpy(y, out, sizeof(float) * T * d);
        fcr_norm(&c, blk, "norm_ff1", y);
        fcr_ff(&c, blk, "ff1", y, r);
        for (long i = 0; i < (long)T * d; i++) out[i] += 0.5f * r[i];
        memcpy(y, out, sizeof(float) * T * d);
        fcr_norm(&c, blk, "norm_attn", y);
        fcr_attention(&c, blk, y, r);
        for (long i = 0; i < (long)T * d; i++) out[i] += r[i];
        memcpy(y, out, sizeof(float) * T * d);
        fcr_norm(&c, blk, "norm_conv", y);
        fcr_conv_module(&c, blk, y, r);
        for (long i = 0; i < (long)T * d; i++) out[i] += r[i];
        memcpy(y, out, sizeof(float) * T * d);
        fcr_norm(&c, blk, "norm_ff2", y);
        fcr_ff(&c, blk, "ff2", y, r);
        for (long i = 0; i < (long)T * d; i++) out[i] += 0.5f * r[i];
        fcr_norm(&c, blk, "norm_out", out);
    }
    free(pe), free(y), free(r);
    return T;
}

#endif
