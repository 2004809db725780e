/* nn/conformer.h's MedASR options against a double-precision reference written here: weighted
 * residuals (x = w0·x + w1·y for the FFNs and the conv module), batch norm folded into the
 * depthwise taps instead of the LayerNorm, no biases anywhere, an even depthwise kernel (padding
 * (k-1)/2 before, the rest after), rotation of q and k; two packed segments. Then the zero
 * defaults: w0 / w1 of 0 behave as 1, bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/conformer.h"
#include "tensor/dtype.h"
#include "tensor/pool.h"
#include "test_util.h"

enum { D = 16, H = 2, DH = D / H, F = 24, K = 6, T0 = 9, T1 = 5 };

static uint32_t g_rng = 12345;
static float rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return (float)((g_rng >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static float *fill(size_t n, float scale, float offset) {
    float *v = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) v[i] = offset + scale * rnd();
    return v;
}

static tr_tensor mat(const float *data, int64_t in, int64_t out) {
    tr_tensor t = {.name = "w", .type = TR_F32, .n_dims = 2, .ne = {in, out, 1, 1}};
    t.nb1 = sizeof(float) * (size_t)in;
    t.nbytes = t.nb1 * (size_t)out;
    t.data = data;
    return t;
}

typedef struct weights {
    float *ln[5], *ff1u, *ff1d, *ff2u, *ff2d, *q, *k, *v, *o, *pw1, *pw2, *dw, *bn[4];
    tr_tensor t_ff1u, t_ff1d, t_ff2u, t_ff2d, t_q, t_k, t_v, t_o, t_pw1, t_pw2, t_dw;
} weights;

static void make(weights *w, tr_cf_block *b) {
    for (int i = 0; i < 5; i++) w->ln[i] = fill(D, 0.2f, 1.0f);
    w->ff1u = fill((size_t)D * F, 0.25f, 0);
    w->ff1d = fill((size_t)F * D, 0.2f, 0);
    w->ff2u = fill((size_t)D * F, 0.25f, 0);
    w->ff2d = fill((size_t)F * D, 0.2f, 0);
    w->q = fill(D * D, 0.25f, 0);
    w->k = fill(D * D, 0.25f, 0);
    w->v = fill(D * D, 0.25f, 0);
    w->o = fill(D * D, 0.25f, 0);
    w->pw1 = fill(2 * D * D, 0.25f, 0);
    w->pw2 = fill(D * D, 0.25f, 0);
    w->dw = fill(D * K, 0.4f, 0);
    w->bn[0] = fill(D, 0.2f, 1.0f);
    w->bn[1] = fill(D, 0.1f, 0);
    w->bn[2] = fill(D, 0.1f, 0);
    w->bn[3] = fill(D, 0.4f, 1.0f);
    w->t_ff1u = mat(w->ff1u, D, F);
    w->t_ff1d = mat(w->ff1d, F, D);
    w->t_ff2u = mat(w->ff2u, D, F);
    w->t_ff2d = mat(w->ff2d, F, D);
    w->t_q = mat(w->q, D, D);
    w->t_k = mat(w->k, D, D);
    w->t_v = mat(w->v, D, D);
    w->t_o = mat(w->o, D, D);
    w->t_pw1 = mat(w->pw1, D, 2 * D);
    w->t_pw1.n_dims = 3, w->t_pw1.ne[0] = 1, w->t_pw1.ne[1] = D, w->t_pw1.ne[2] = 2 * D;
    w->t_pw2 = mat(w->pw2, D, D);
    w->t_pw2.n_dims = 3, w->t_pw2.ne[0] = 1, w->t_pw2.ne[1] = D, w->t_pw2.ne[2] = D;
    w->t_dw = mat(w->dw, K, D);
    w->t_dw.n_dims = 3, w->t_dw.ne[1] = 1, w->t_dw.ne[2] = D;
    memset(b, 0, sizeof *b);
    b->norm_ff1.w = w->ln[0];
    b->norm_attn.w = w->ln[1];
    b->norm_conv.w = w->ln[2];
    b->norm_ff2.w = w->ln[3];
    b->norm_out.w = w->ln[4];
    b->ff1_up.w = &w->t_ff1u;
    b->ff1_down.w = &w->t_ff1d;
    b->ff2_up.w = &w->t_ff2u;
    b->ff2_down.w = &w->t_ff2d;
    b->attn.q.w = &w->t_q;
    b->attn.k.w = &w->t_k;
    b->attn.v.w = &w->t_v;
    b->attn.o.w = &w->t_o;
    b->pw1_w = &w->t_pw1;
    b->pw2_w = &w->t_pw2;
    b->dw_w = &w->t_dw;
    b->bn_w = w->bn[0];
    b->bn_b = w->bn[1];
    b->bn_mean = w->bn[2];
    b->bn_var = w->bn[3];
}

static void unmake(weights *w) {
    float **all[] = {&w->ff1u, &w->ff1d, &w->ff2u, &w->ff2d,  &w->q,     &w->k,     &w->v,    &w->o,
                     &w->pw1,  &w->pw2,  &w->dw,   &w->bn[0], &w->bn[1], &w->bn[2], &w->bn[3]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(*all[i]);
    for (int i = 0; i < 5; i++) free(w->ln[i]);
}

/* ---- reference (double) ---- */

static void ln(double *x, int T, const float *g) {
    for (int t = 0; t < T; t++) {
        double *v = x + t * D, mu = 0, var = 0;
        for (int i = 0; i < D; i++) mu += v[i];
        mu /= D;
        for (int i = 0; i < D; i++) var += (v[i] - mu) * (v[i] - mu);
        var /= D;
        for (int i = 0; i < D; i++) v[i] = (v[i] - mu) / sqrt(var + 1e-6) * g[i];
    }
}

static void lin(const double *x, int T, const float *W, int in, int out, double *y) {
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < in; i++) s += x[t * in + i] * W[o * in + i];
            y[t * out + o] = s;
        }
}

static double silu(double v) {
    return v / (1 + exp(-v));
}

static void ref_ffn(double *x, int T, const float *g, const float *up, const float *down) {
    double h[T0 * D], m[T0 * F], y[T0 * D];
    memcpy(h, x, sizeof(double) * T * D);
    ln(h, T, g);
    lin(h, T, up, D, F, m);
    for (int i = 0; i < T * F; i++) m[i] = silu(m[i]);
    lin(m, T, down, F, D, y);
    for (int i = 0; i < T * D; i++) x[i] = 1.5 * x[i] + 0.5 * y[i];
}

static void rope(double *u, int T) {
    for (int p = 0; p < T; p++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < DH / 2; i++) {
                double *r = u + p * D + h * DH, th = p * pow(10000.0, -2.0 * i / DH);
                double a = r[i], b = r[i + DH / 2];
                r[i] = a * cos(th) - b * sin(th);
                r[i + DH / 2] = a * sin(th) + b * cos(th);
            }
}

static void ref_block(const weights *w, double *x, int T) {
    ref_ffn(x, T, w->ln[0], w->ff1u, w->ff1d);
    double h[T0 * D], q[T0 * D], k[T0 * D], v[T0 * D], o[T0 * D] = {0}, y[T0 * D];
    memcpy(h, x, sizeof(double) * T * D);
    ln(h, T, w->ln[1]);
    lin(h, T, w->q, D, D, q);
    lin(h, T, w->k, D, D, k);
    lin(h, T, w->v, D, D, v);
    rope(q, T);
    rope(k, T);
    for (int hh = 0; hh < H; hh++)
        for (int i = 0; i < T; i++) {
            double s[T0], mx = -1e300, z = 0;
            for (int j = 0; j < T; j++) {
                s[j] = 0;
                for (int e = 0; e < DH; e++)
                    s[j] += q[i * D + hh * DH + e] * k[j * D + hh * DH + e];
                s[j] /= sqrt((double)DH);
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < T; j++) z += (s[j] = exp(s[j] - mx));
            for (int j = 0; j < T; j++)
                for (int e = 0; e < DH; e++)
                    o[i * D + hh * DH + e] += s[j] / z * v[j * D + hh * DH + e];
        }
    lin(o, T, w->o, D, D, y);
    for (int i = 0; i < T * D; i++) x[i] += y[i];
    /* conv module: pointwise, GLU, depthwise (even kernel), batch norm, SiLU, pointwise */
    double z2[T0 * 2 * D], g[T0 * D], u[T0 * D];
    memcpy(h, x, sizeof(double) * T * D);
    ln(h, T, w->ln[2]);
    lin(h, T, w->pw1, D, 2 * D, z2);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++)
            g[t * D + c] = z2[t * 2 * D + c] / (1 + exp(-z2[t * 2 * D + D + c]));
    const int pl = (K - 1) / 2;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++) {
            double s = 0;
            for (int j = 0; j < K; j++) {
                int tt = t + j - pl;
                if (tt >= 0 && tt < T) s += w->dw[c * K + j] * g[tt * D + c];
            }
            s = (s - w->bn[2][c]) / sqrt(w->bn[3][c] + 1e-5) * w->bn[0][c] + w->bn[1][c];
            u[t * D + c] = silu(s);
        }
    lin(u, T, w->pw2, D, D, y);
    for (int i = 0; i < T * D; i++) x[i] = 2.0 * x[i] + y[i];
    ref_ffn(x, T, w->ln[3], w->ff2u, w->ff2d);
    ln(x, T, w->ln[4]);
}

int main(void) {
    tr_pool *pool = tr_pool_create(2);
    weights w;
    tr_cf_block b;
    make(&w, &b);
    tr_cf_dims dm = {.d_model = D,
                     .n_head = H,
                     .d_ff = F,
                     .kernel = K,
                     .ln_eps = 1e-6f,
                     .ff_scale = 0.5f,
                     .ff_w0 = 1.5f,
                     .conv_w0 = 2.0f,
                     .conv_w1 = 1.0f,
                     .conv_bn = true,
                     .rot = TR_CF_ROT_QK,
                     .rot_theta = 10000.0f};
    CHECK(tr_cf_block_prepare(&b, &dm));
    const int seg[2] = {T0, T1}, R = T0 + T1;
    float *x = fill((size_t)R * D, 1.0f, 0), *x2 = malloc(sizeof(float) * R * D);
    memcpy(x2, x, sizeof(float) * R * D);
    double ref[2][T0 * D];
    for (int s = 0, off = 0; s < 2; off += seg[s], s++) {
        for (int i = 0; i < seg[s] * D; i++) ref[s][i] = x[off * D + i];
        ref_block(&w, ref[s], seg[s]);
    }
    float *scratch = malloc(sizeof(float) * tr_cf_scratch(&dm, 2, seg));
    tr_cf_block_fwd(pool, &b, &dm, x, 2, seg, scratch);
    double err = 0;
    for (int s = 0, off = 0; s < 2; off += seg[s], s++)
        for (int i = 0; i < seg[s] * D; i++) {
            double e = fabs(x[off * D + i] - ref[s][i]);
            if (!(e <= err)) err = e;
        }
    printf("weighted residuals + folded batch norm, even kernel: max abs err %.3g\n", err);
    CHECK_MSG(err <= 1e-4, "err %g", err);

    /* 0 means 1: explicit unit weights equal the zero defaults bit for bit */
    tr_cf_dims d1 = dm, d0 = dm;
    d1.ff_w0 = d1.conv_w0 = d1.conv_w1 = 1.0f;
    d0.ff_w0 = d0.conv_w0 = d0.conv_w1 = 0.0f;
    float *y1 = malloc(sizeof(float) * R * D), *y0 = malloc(sizeof(float) * R * D);
    memcpy(y1, x2, sizeof(float) * R * D);
    memcpy(y0, x2, sizeof(float) * R * D);
    tr_cf_block_fwd(pool, &b, &d1, y1, 2, seg, scratch);
    tr_cf_block_fwd(pool, &b, &d0, y0, 2, seg, scratch);
    CHECK(!memcmp(y0, y1, sizeof(float) * R * D));
    CHECK(memcmp(y0, x, sizeof(float) * R * D) != 0); /* and the weights do matter */
    tr_cf_block_free(&b);
    unmake(&w);
    free(x);
    free(x2);
    free(y0);
    free(y1);
    free(scratch);
    tr_pool_free(pool);
    return TEST_DONE();
}
