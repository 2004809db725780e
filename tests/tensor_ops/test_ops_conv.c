/* conv1d / conv2d against naive double loops over stride, padding, dilation,
 * groups (dense, grouped, depthwise, pointwise), F32 and F16 weights, an
 * im2col large enough to be chunked, empty outputs, and bit-identical
 * results for 1, 2 and 3 threads and for conv2d weights prepared once
 * (tr_conv2d_weight_prepare). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/cpu.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

/* Weights of n elements as a tensor of type F32 or F16; *wf gets the values
 * the op will see (F16-rounded) for the reference. */
static tr_tensor make_weights(int type, const int64_t ne[4], float **wf, void **storage) {
    long n = (long)(ne[0] * ne[1] * ne[2] * ne[3]);
    *wf = rnd_vec(n, 0.5f);
    if (type == TR_F16) {
        uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n + 1));
        for (long i = 0; i < n; i++) {
            h[i] = tr_f32_to_f16((*wf)[i]);
            (*wf)[i] = tr_f16_to_f32(h[i]);
        }
        *storage = h;
    } else {
        *storage = NULL;
    }
    size_t es = type == TR_F16 ? 2 : 4;
    tr_tensor t = {.name = "w",
                   .type = type,
                   .n_dims = 4,
                   .ne = {ne[0], ne[1], ne[2], ne[3]},
                   .nb1 = (size_t)ne[0] * es,
                   .nbytes = (size_t)n * es,
                   .data = type == TR_F16 ? *storage : (void *)*wf};
    return t;
}

typedef struct {
    int c_in, t_in, k, c_out, stride, pad_l, pad_r, dil, groups, type;
} c1_case;

static void run_conv1d(const c1_case *c, tr_pool *pools[3]) {
    const int cin_g = c->c_in / c->groups, cout_g = c->c_out / c->groups;
    const int64_t ne[4] = {c->k, cin_g, c->c_out, 1};
    float *wf;
    void *st;
    tr_tensor w = make_weights(c->type, ne, &wf, &st);
    float *x = rnd_vec((long)c->c_in * c->t_in, 1.0f), *bias = rnd_vec(c->c_out, 1.0f);
    const int t_out = tr_conv1d_out_len(c->t_in, c->k, c->stride, c->pad_l, c->pad_r, c->dil);
    long want = (long)c->t_in + c->pad_l + c->pad_r - (long)c->dil * (c->k - 1) - 1;
    CHECK(t_out == (want < 0 ? 0 : want / c->stride + 1));
    const long n = (long)c->c_out * t_out;
    double *ref = malloc(sizeof(double) * (size_t)(n + 1));
    for (int co = 0; co < c->c_out; co++) {
        const int g = co / cout_g;
        for (int t = 0; t < t_out; t++) {
            double acc = co % 2 ? bias[co] : 0.0; /* odd channels: with bias */
            for (int ci = 0; ci < cin_g; ci++)
                for (int kk = 0; kk < c->k; kk++) {
                    long ti = (long)t * c->stride - c->pad_l + (long)kk * c->dil;
                    if (ti < 0 || ti >= c->t_in) continue;
                    acc += (double)wf[((long)co * cin_g + ci) * c->k + kk] *
                           x[(long)(g * cin_g + ci) * c->t_in + ti];
                }
            ref[(long)co * t_out + t] = acc;
        }
    }
    float *bsel = malloc(sizeof(float) * (size_t)c->c_out);
    for (int co = 0; co < c->c_out; co++) bsel[co] = co % 2 ? bias[co] : 0.0f;
    float *y[3];
    for (int p = 0; p < 3; p++) {
        y[p] = malloc(sizeof(float) * (size_t)(n + 1));
        y[p][n] = 777.0f; /* guard */
        tr_conv1d(pools[p], x, c->c_in, c->t_in, &w, bsel, c->stride, c->pad_l, c->pad_r, c->dil,
                  c->groups, y[p]);
        CHECK(y[p][n] == 777.0f);
    }
    double e = err_ratio(y[0], ref, n, 2e-5, 2e-5);
    CHECK_MSG(e <= 1, "conv1d cin %d t %d k %d cout %d s %d pad %d/%d dil %d g %d %s: %g", c->c_in,
              c->t_in, c->k, c->c_out, c->stride, c->pad_l, c->pad_r, c->dil, c->groups,
              tr_type_name(c->type), e);
    CHECK(memcmp(y[0], y[1], sizeof(float) * (size_t)n) == 0);
    CHECK(memcmp(y[0], y[2], sizeof(float) * (size_t)n) == 0);
    { /* in place: y == x */
        long nx = (long)c->c_in * c->t_in, nb = n > nx ? n : nx;
        float *io = malloc(sizeof(float) * (size_t)(nb + 1));
        memcpy(io, x, sizeof(float) * (size_t)nx);
        tr_conv1d(pools[1], io, c->c_in, c->t_in, &w, bsel, c->stride, c->pad_l, c->pad_r, c->dil,
                  c->groups, io);
        CHECK(memcmp(io, y[0], sizeof(float) * (size_t)n) == 0);
        free(io);
    }
    /* NULL bias == zero bias */
    if (n > 0) {
        float *z = calloc((size_t)c->c_out, sizeof(float));
        tr_conv1d(NULL, x, c->c_in, c->t_in, &w, z, c->stride, c->pad_l, c->pad_r, c->dil,
                  c->groups, y[1]);
        tr_conv1d(NULL, x, c->c_in, c->t_in, &w, NULL, c->stride, c->pad_l, c->pad_r, c->dil,
                  c->groups, y[2]);
        CHECK(memcmp(y[1], y[2], sizeof(float) * (size_t)n) == 0);
        free(z);
    }
    for (int p = 0; p < 3; p++) free(y[p]);
    free(wf), free(st), free(x), free(bias), free(bsel), free(ref);
}

typedef struct {
    int c_in, h, w, kh, kw, c_out, sh, sw, ph, pw, groups, type;
} c2_case;

static void run_conv2d(const c2_case *c, tr_pool *pools[3]) {
    const int cin_g = c->c_in / c->groups, cout_g = c->c_out / c->groups;
    const int64_t ne[4] = {c->kw, c->kh, cin_g, c->c_out};
    float *wf;
    void *st;
    tr_tensor w = make_weights(c->type, ne, &wf, &st);
    float *x = rnd_vec((long)c->c_in * c->h * c->w, 1.0f), *bias = rnd_vec(c->c_out, 1.0f);
    const int ho = (c->h + 2 * c->ph - c->kh) / c->sh + 1,
              wo = (c->w + 2 * c->pw - c->kw) / c->sw + 1;
    const long n = (long)c->c_out * ho * wo;
    double *ref = malloc(sizeof(double) * (size_t)(n + 1));
    for (int co = 0; co < c->c_out; co++) {
        const int g = co / cout_g;
        for (int oy = 0; oy < ho; oy++)
            for (int ox = 0; ox < wo; ox++) {
                double acc = bias[co];
                for (int ci = 0; ci < cin_g; ci++)
                    for (int ky = 0; ky < c->kh; ky++)
                        for (int kx = 0; kx < c->kw; kx++) {
                            int iy = oy * c->sh - c->ph + ky, ix = ox * c->sw - c->pw + kx;
                            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                            acc += (double)wf[(((long)co * cin_g + ci) * c->kh + ky) * c->kw + kx] *
                                   x[((long)(g * cin_g + ci) * c->h + iy) * c->w + ix];
                        }
                ref[((long)co * ho + oy) * wo + ox] = acc;
            }
    }
    float *y[3];
    for (int p = 0; p < 3; p++) {
        int gh = -1, gw = -1;
        y[p] = malloc(sizeof(float) * (size_t)(n + 1));
        y[p][n] = 777.0f;
        tr_conv2d(pools[p], x, c->c_in, c->h, c->w, &w, bias, c->sh, c->sw, c->ph, c->pw, c->groups,
                  y[p], &gh, &gw);
        CHECK(gh == ho && gw == wo && y[p][n] == 777.0f);
    }
    { /* in place: y == x */
        long nx = (long)c->c_in * c->h * c->w, nb = n > nx ? n : nx;
        float *io = malloc(sizeof(float) * (size_t)(nb + 1));
        int gh, gw;
        memcpy(io, x, sizeof(float) * (size_t)nx);
        tr_conv2d(pools[2], io, c->c_in, c->h, c->w, &w, bias, c->sh, c->sw, c->ph, c->pw,
                  c->groups, io, &gh, &gw);
        CHECK(memcmp(io, y[0], sizeof(float) * (size_t)n) == 0);
        free(io);
    }
    { /* the weight prepared once: bit for bit tr_conv2d's output, twice over */
        tr_conv_weight *cw = tr_conv2d_weight_prepare(pools[1], &w, c->groups);
        const bool depthwise = cin_g == 1 && c->groups == c->c_out;
        CHECK(depthwise ? cw == NULL : cw != NULL);
        float *yp = malloc(sizeof(float) * (size_t)(n + 1));
        for (int rep = 0; rep < 2 && cw; rep++) {
            int gh = -1, gw = -1;
            yp[n] = 777.0f;
            tr_conv2d_prepared(pools[rep + 1], x, c->c_in, c->h, c->w, cw, bias, c->sh, c->sw,
                               c->ph, c->pw, yp, &gh, &gw);
            CHECK(gh == ho && gw == wo && yp[n] == 777.0f);
            CHECK_MSG(memcmp(yp, y[0], sizeof(float) * (size_t)n) == 0,
                      "prepared conv2d cin %d cout %d g %d differs", c->c_in, c->c_out, c->groups);
        }
        tr_conv_weight_free(cw);
        free(yp);
    }
    double e = err_ratio(y[0], ref, n, 2e-5, 2e-5);
    CHECK_MSG(e <= 1, "conv2d cin %d %dx%d k %dx%d cout %d s %d,%d pad %d,%d g %d %s: %g", c->c_in,
              c->h, c->w, c->kh, c->kw, c->c_out, c->sh, c->sw, c->ph, c->pw, c->groups,
              tr_type_name(c->type), e);
    CHECK(memcmp(y[0], y[1], sizeof(float) * (size_t)n) == 0);
    CHECK(memcmp(y[0], y[2], sizeof(float) * (size_t)n) == 0);
    for (int p = 0; p < 3; p++) free(y[p]);
    free(wf), free(st), free(x), free(bias), free(ref);
}

int main(void) {
    tr_pool *pools[3] = {NULL, tr_pool_create(2), tr_pool_create(3)};
    const c1_case c1[] = {
        {8, 50, 3, 12, 1, 1, 1, 1, 1, TR_F32},    /* Whisper conv1 shape, small */
        {12, 51, 3, 12, 2, 1, 1, 1, 1, TR_F16},   /* Whisper conv2: stride 2, F16 */
        {6, 33, 5, 9, 1, 8, 0, 2, 3, TR_F32},     /* grouped, dilated, causal pad */
        {6, 33, 5, 9, 3, 2, 3, 1, 3, TR_F16},     /* grouped, strided, uneven pad */
        {16, 40, 9, 16, 1, 4, 4, 1, 16, TR_F16},  /* depthwise, conformer style */
        {16, 41, 9, 16, 2, 4, 4, 1, 16, TR_F32},  /* depthwise, strided */
        {5, 30, 3, 5, 1, 6, 6, 3, 5, TR_F32},     /* depthwise, dilated, pad > span */
        {10, 17, 1, 7, 1, 0, 0, 1, 1, TR_F32},    /* pointwise */
        {3, 1, 3, 4, 1, 1, 1, 1, 1, TR_F32},      /* one frame */
        {3, 2, 5, 4, 1, 0, 0, 1, 1, TR_F32},      /* empty output */
        {4, 2, 5, 4, 1, 0, 0, 1, 4, TR_F32},      /* empty output, depthwise */
        {1000, 720, 3, 3, 1, 1, 1, 1, 1, TR_F16}, /* im2col chunked (K = 3000) */
    };
    const c2_case c2[] = {
        {1, 20, 16, 3, 3, 4, 2, 2, 1, 1, 1, TR_F32}, /* subsampling stem 1 -> C */
        {4, 10, 8, 3, 3, 4, 2, 2, 1, 1, 4, TR_F16},  /* depthwise 3x3 stride 2 */
        {4, 5, 8, 1, 1, 6, 1, 1, 0, 0, 1, TR_F32},   /* pointwise */
        {4, 7, 9, 2, 3, 6, 1, 2, 0, 1, 2, TR_F16},   /* grouped, asymmetric */
        {3, 9, 4, 3, 3, 3, 3, 1, 2, 0, 3, TR_F32},   /* depthwise, pad > stride */
        {2, 1, 1, 1, 1, 5, 1, 1, 0, 0, 1, TR_F32},   /* 1x1 image */
        {4, 3, 5, 1, 1, 6, 1, 1, 0, 0, 2, TR_F16},   /* grouped pointwise */
        /* im2col chunked (K = 2160, 1000 positions): the weight packed once */
        {240, 40, 100, 3, 3, 8, 2, 2, 1, 1, 1, TR_F16},
        {480, 63, 61, 3, 3, 6, 2, 2, 1, 1, 2, TR_F32}, /* the same, grouped, odd sizes */
    };
    /* every CPU level this host runs (the convolutions go through tr_matmul) */
    tr_cpu_level levels[3];
    const int n_levels = tr_cpu_levels(levels);
    for (int l = 0; l < n_levels; l++) {
        CHECK(tr_cpu_force(levels[l]));
        for (size_t i = 0; i < sizeof c1 / sizeof c1[0]; i++) run_conv1d(&c1[i], pools);
        for (size_t i = 0; i < sizeof c2 / sizeof c2[0]; i++) run_conv2d(&c2[i], pools);
    }
    tr_cpu_unforce();
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    return TEST_DONE();
}
