/* Normalisation, affine, activation, softmax, layout, RoPE and get_rows ops
 * against double-precision references, on awkward sizes, in place, and for
 * every SIMD kernel family the CPU has. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

static void test_norms(tr_pool *pool) {
    const int shapes[][2] = {{1, 1}, {3, 7}, {5, 64}, {2, 1000}, {0, 8}, {40, 511}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], dim = shapes[s][1];
        long n = (long)rows * dim;
        float *x = rnd_vec(n, 3.0f), *g = rnd_vec(dim, 1.0f), *b = rnd_vec(dim, 1.0f);
        for (long i = 0; i < n; i++) x[i] += 10.0f; /* large mean: two-pass matters */
        float *y = malloc(sizeof(float) * (size_t)(n + 1)),
              *yi = malloc(sizeof(float) * (size_t)(n + 1));
        double *ref = malloc(sizeof(double) * (size_t)(n + 1));
        for (int variant = 0; variant < 4; variant++) {
            const float *gg = (variant & 1) ? g : NULL, *bb = (variant & 2) ? b : NULL;
            for (int r = 0; r < rows; r++) {
                const float *xr = x + (long)r * dim;
                double mean = 0, var = 0;
                for (int i = 0; i < dim; i++) mean += xr[i];
                mean /= dim;
                for (int i = 0; i < dim; i++) var += (xr[i] - mean) * (xr[i] - mean);
                var /= dim;
                for (int i = 0; i < dim; i++)
                    ref[(long)r * dim + i] =
                        (xr[i] - mean) / sqrt(var + 1e-5) * (gg ? gg[i] : 1.0) + (bb ? bb[i] : 0.0);
            }
            tr_layer_norm(pool, x, y, rows, dim, gg, bb, 1e-5f);
            CHECK_MSG(err_ratio(y, ref, n, 1e-5, 1e-5) <= 1, "layer_norm %dx%d v%d", rows, dim,
                      variant);
            memcpy(yi, x, sizeof(float) * (size_t)n);
            tr_layer_norm(pool, yi, yi, rows, dim, gg, bb, 1e-5f);
            CHECK(n == 0 || memcmp(yi, y, sizeof(float) * (size_t)n) == 0);
            /* tr_add_layer_norm: the bits of tr_ew_add (twice, or once) then
             * tr_layer_norm, into y or in place */
            for (int two = 0; two < 2; two++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    float *xa = malloc(sizeof(float) * (size_t)(n + 1)),
                          *xb = malloc(sizeof(float) * (size_t)(n + 1)),
                          *ya = malloc(sizeof(float) * (size_t)(n + 1));
                    memcpy(xa, x, sizeof(float) * (size_t)n);
                    memcpy(xb, x, sizeof(float) * (size_t)n);
                    const float *a2 = two ? yi : NULL;
                    tr_ew_add(pool, xa, y, n);
                    if (a2) tr_ew_add(pool, xa, a2, n);
                    tr_layer_norm(pool, xa, ya, rows, dim, gg, bb, 1e-5f);
                    float *out = malloc(sizeof(float) * (size_t)(n + 1));
                    float *dst = inplace ? xb : out;
                    tr_add_layer_norm(pool, xb, y, a2, dst, rows, dim, gg, bb, 1e-5f);
                    CHECK_MSG(n == 0 || memcmp(dst, ya, sizeof(float) * (size_t)n) == 0,
                              "add_layer_norm %dx%d v%d two %d in place %d", rows, dim, variant,
                              two, inplace);
                    if (!inplace) CHECK(n == 0 || memcmp(xb, xa, sizeof(float) * (size_t)n) == 0);
                    free(xa), free(xb), free(ya), free(out);
                }

            for (int r = 0; r < rows; r++) {
                const float *xr = x + (long)r * dim;
                double ms = 0;
                for (int i = 0; i < dim; i++) ms += (double)xr[i] * xr[i];
                ms /= dim;
                for (int i = 0; i < dim; i++)
                    ref[(long)r * dim + i] = xr[i] / sqrt(ms + 1e-6) * (gg ? gg[i] : 1.0);
            }
            tr_rms_norm(pool, x, y, rows, dim, gg, 1e-6f);
            CHECK_MSG(err_ratio(y, ref, n, 1e-5, 1e-5) <= 1, "rms_norm %dx%d", rows, dim);
        }
        /* scale_bias / add_bias / add_scaled */
        for (int variant = 0; variant < 4; variant++) {
            const float *sc = (variant & 1) ? g : NULL, *bb = (variant & 2) ? b : NULL;
            memcpy(y, x, sizeof(float) * (size_t)n);
            tr_scale_bias(y, rows, dim, sc, bb);
            for (long i = 0; i < n; i++)
                ref[i] = (double)x[i] * (sc ? sc[i % dim] : 1.0) + (bb ? bb[i % dim] : 0.0);
            CHECK(err_ratio(y, ref, n, 1e-6, 1e-6) <= 1);
        }
        memcpy(y, x, sizeof(float) * (size_t)n);
        tr_add_bias(y, rows, dim, b);
        for (long i = 0; i < n; i++) ref[i] = (double)x[i] + b[i % dim];
        CHECK(err_ratio(y, ref, n, 1e-6, 1e-6) <= 1);
        memcpy(y, x, sizeof(float) * (size_t)n);
        tr_add_scaled(y, y, x, -0.5f, n); /* in place */
        for (long i = 0; i < n; i++) ref[i] = 0.5 * x[i];
        CHECK(err_ratio(y, ref, n, 1e-6, 1e-6) <= 1);
        free(x), free(g), free(b), free(y), free(yi), free(ref);
    }
}

static double ref_act(int which, double x) {
    switch (which) {
    case 0:
        return 0.5 * x * erfc(-x / sqrt(2.0)); /* no cancellation for x << 0 */
    case 1: /* 0.5 x (1 + tanh u) == x / (1 + exp(-2u)), exact in double */
        return x / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case 2:
        return x / (1.0 + exp(-x));
    case 3:
        return x > 0 ? x : 0;
    case 4:
        return 1.0 / (1.0 + exp(-x));
    default:
        return tanh(x);
    }
}

static void run_act(int which, float *x, long n) {
    switch (which) {
    case 0:
        tr_gelu(x, n);
        break;
    case 1:
        tr_gelu_tanh(x, n);
        break;
    case 2:
        tr_silu(x, n);
        break;
    case 3:
        tr_relu(x, n);
        break;
    case 4:
        tr_sigmoid(x, n);
        break;
    default:
        tr_tanh(x, n);
        break;
    }
}

static void test_activations(void) {
    static const char *const names[] = {"gelu", "gelu_tanh", "silu", "relu", "sigmoid", "tanh"};
    const long n = 2000 + 13; /* tail not a multiple of any vector width */
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    double *ref = malloc(sizeof(double) * n);
    for (long i = 0; i < n; i++) x[i] = (float)(-12.0 + 24.0 * i / (n - 1)); /* sweep */
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 1e-6f, x[3] = -1e-6f, x[4] = -30.0f, x[5] = 30.0f;
    x[6] = -100.0f, x[7] = 100.0f, x[8] = -INFINITY, x[9] = INFINITY;
    for (int which = 0; which < 6; which++) {
        for (long i = 0; i < n; i++) ref[i] = ref_act(which, x[i]);
        tr_cpu_level levels[3];
        const int n_levels = tr_cpu_levels(levels); /* every level this CPU runs */
        for (int isa = 0; isa < n_levels; isa++) {
            CHECK(tr_cpu_force(levels[isa]));
            memcpy(y, x, sizeof(float) * n);
            run_act(which, y, n);
            /* relative 2e-6 plus a tiny absolute floor for the far tails */
            double e = err_ratio(y, ref, n, 1e-30, 2e-6);
            if (which == 1) { /* float evaluation of the cubic: arg error ~ |u| ulp */
                e = 0;
                for (long i = 0; i < n; i++)
                    e = fmax(e, err_ratio(y + i, ref + i, 1, 1e-30,
                                          2e-6 * fmax(1.0, fabs(x[i]) * fabs(x[i]))));
            }
            CHECK_MSG(e <= 1, "%s (%s) err ratio %g", names[which], tr_cpu_level_name(levels[isa]),
                      e);
            for (long len = 0; len < 20; len++) { /* short lengths and n = 0 */
                memcpy(y, x + 100, sizeof(float) * (size_t)len);
                y[len] = 42.0f;
                run_act(which, y, len);
                CHECK(y[len] == 42.0f);
                CHECK(len == 0 || err_ratio(y, ref + 100, len, 1e-30, 2e-6) <= 1);
            }
        }
    }
    tr_cpu_unforce();
    /* GLU, separate output and in place */
    const int rows = 5, half = 300;
    float *g = rnd_vec(2L * rows * half, 4.0f), *o = malloc(sizeof(float) * rows * half);
    double *gr = malloc(sizeof(double) * rows * half);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < half; i++) {
            const float *a = g + (long)r * 2 * half;
            gr[r * half + i] = a[i] / (1.0 + exp(-(double)a[half + i]));
        }
    tr_glu(g, o, rows, half);
    CHECK(err_ratio(o, gr, (long)rows * half, 1e-7, 2e-6) <= 1);
    tr_glu(g, g, rows, half);
    CHECK(memcmp(g, o, sizeof(float) * rows * half) == 0);
    free(g), free(o), free(gr), free(x), free(y), free(ref);
}

static void test_softmax(void) {
    const int rows = 6, n = 37;
    float *x = rnd_vec((long)rows * n, 8.0f), *mask = calloc((size_t)rows * n, sizeof(float));
    float *y = malloc(sizeof(float) * rows * n);
    double *ref = malloc(sizeof(double) * rows * n);
    for (int i = 0; i < n; i++) {
        mask[1 * n + i] = (i % 3 == 0) ? -INFINITY : 0.5f; /* partly masked */
        mask[2 * n + i] = -INFINITY;                       /* all masked */
        mask[3 * n + i] = i > 0 ? -INFINITY : 0.0f;        /* one survivor */
        mask[4 * n + i] = (float)i * -0.25f;               /* additive bias */
    }
    x[5 * n + 7] = 1e30f; /* dominant entry */
    tr_cpu_level levels[3];
    const int n_levels = tr_cpu_levels(levels); /* every level this CPU runs */
    for (int isa = 0; isa < n_levels; isa++) {
        CHECK(tr_cpu_force(levels[isa]));
        for (int use_mask = 0; use_mask < 2; use_mask++) {
            for (int r = 0; r < rows; r++) {
                double m = -INFINITY, s = 0;
                double v[64];
                for (int i = 0; i < n; i++) {
                    v[i] = (double)x[r * n + i] + (use_mask ? mask[r * n + i] : 0.0);
                    if (v[i] > m) m = v[i];
                }
                for (int i = 0; i < n; i++) s += (m == -INFINITY) ? 0 : exp(v[i] - m);
                for (int i = 0; i < n; i++) ref[r * n + i] = s > 0 ? exp(v[i] - m) / s : 0.0;
            }
            memcpy(y, x, sizeof(float) * rows * n);
            tr_softmax(y, rows, n, use_mask ? mask : NULL);
            CHECK_MSG(err_ratio(y, ref, (long)rows * n, 1e-7, 2e-6) <= 1, "softmax %s mask %d",
                      tr_cpu_level_name(levels[isa]), use_mask);
            if (use_mask) {
                for (int i = 0; i < n; i++) CHECK(y[2 * n + i] == 0.0f);
                CHECK(y[1 * n + 0] == 0.0f && y[3 * n] == 1.0f);
            }
        }
        /* log-softmax */
        for (int r = 0; r < 2; r++) {
            const int len = r ? 1 : n;
            double m = -INFINITY, s = 0;
            for (int i = 0; i < len; i++) m = x[i] > m ? x[i] : m;
            for (int i = 0; i < len; i++) s += exp(x[i] - m);
            for (int i = 0; i < len; i++) ref[i] = x[i] - m - log(s);
            memcpy(y, x, sizeof(float) * len);
            tr_log_softmax(y, len);
            CHECK(err_ratio(y, ref, len, 1e-5, 1e-6) <= 1);
        }
    }
    tr_cpu_unforce();
    tr_softmax(y, 0, n, NULL);
    tr_softmax(y, 3, 0, NULL);
    free(x), free(mask), free(y), free(ref);
}

static void test_transpose(void) {
    const int shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {33, 65}, {100, 7}, {0, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int r = shapes[s][0], c = shapes[s][1];
        float *x = rnd_vec((long)r * c, 1.0f), *y = malloc(sizeof(float) * (size_t)(r * c + 1));
        tr_transpose(x, y, r, c);
        int ok = 1;
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++) ok &= y[j * r + i] == x[i * c + j];
        CHECK_MSG(ok, "transpose %dx%d", r, c);
        float *io = malloc(sizeof(float) * (size_t)(r * c + 1));
        memcpy(io, x, sizeof(float) * (size_t)(r * c));
        tr_transpose(io, io, r, c); /* in place */
        CHECK(memcmp(io, y, sizeof(float) * (size_t)(r * c)) == 0);
        free(io);
        free(x), free(y);
    }
}

static void test_rope(void) {
    const int n_tok = 5, n_head = 3, head_dim = 20, stride = 3 * 20 + 4;
    const int32_t pos[5] = {0, 1, 7, 1500, 40000};
    for (int variant = 0; variant < 4; variant++) {
        const bool neox = variant & 1;
        const int n_rot = (variant & 2) ? 12 : head_dim; /* partial rotation */
        float *x = rnd_vec((long)n_tok * stride, 1.0f), *y = malloc(sizeof(float) * n_tok * stride);
        memcpy(y, x, sizeof(float) * n_tok * stride);
        tr_rope(y, n_tok, n_head, head_dim, stride, pos, n_rot, 10000.0f, neox);
        double worst = 0;
        int untouched = 1;
        for (int t = 0; t < n_tok; t++) {
            for (int h = 0; h < n_head; h++) {
                const float *a = x + (long)t * stride + h * head_dim;
                const float *b = y + (long)t * stride + h * head_dim;
                for (int i = 0; i < n_rot / 2; i++) {
                    double th = pos[t] * pow(10000.0, -2.0 * i / n_rot);
                    int i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
                    double r0 = a[i0] * cos(th) - a[i1] * sin(th);
                    double r1 = a[i0] * sin(th) + a[i1] * cos(th);
                    worst = fmax(worst, fmax(fabs(b[i0] - r0), fabs(b[i1] - r1)));
                }
                for (int i = n_rot; i < head_dim; i++) untouched &= a[i] == b[i];
            }
            for (int i = n_head * head_dim; i < stride; i++)
                untouched &= x[(long)t * stride + i] == y[(long)t * stride + i];
        }
        CHECK_MSG(worst < 2e-6, "rope variant %d err %g", variant, worst);
        CHECK(untouched);
        free(x), free(y);
    }
}

static void test_get_rows(void) {
    const int d = 64, vocab = 9;
    float *src = rnd_vec((long)d * vocab, 2.0f);
    const int types[] = {TR_F32, TR_F16, TR_BF16, TR_Q8_0, TR_Q4_0, TR_Q4_K, TR_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        int type = types[ti];
        if (type != TR_F32 && !tr_type_can_quantize(type)) continue;
        long dd = d;
        if (tr_type_block(type) > d) dd = tr_type_block(type);
        size_t rb = tr_row_bytes(type, dd);
        unsigned char *data = calloc(vocab, rb);
        float *rowsrc = rnd_vec(dd, 1.0f);
        for (int r = 0; r < vocab; r++) {
            for (long i = 0; i < dd; i++) rowsrc[i] = src[(r * 7 + i) % (d * vocab)];
            if (type == TR_F32)
                memcpy(data + r * rb, rowsrc, rb);
            else
                CHECK(tr_quantize_row(type, rowsrc, data + r * rb, dd));
        }
        tr_tensor t = {.name = "emb",
                       .type = type,
                       .n_dims = 2,
                       .ne = {dd, vocab, 1, 1},
                       .nb1 = rb,
                       .nbytes = rb * vocab,
                       .data = data};
        const int32_t ids[5] = {3, 0, 8, -1, 9}; /* last two out of range */
        float *out = malloc(sizeof(float) * 5 * dd), *exp_row = malloc(sizeof(float) * dd);
        tr_get_rows(&t, ids, 5, out);
        for (int i = 0; i < 5; i++) {
            if (ids[i] >= 0 && ids[i] < vocab) {
                if (type == TR_F32)
                    memcpy(exp_row, data + ids[i] * rb, rb);
                else
                    tr_dequantize_row(type, data + ids[i] * rb, exp_row, dd);
            } else {
                memset(exp_row, 0, sizeof(float) * dd);
            }
            CHECK_MSG(memcmp(out + i * dd, exp_row, sizeof(float) * dd) == 0, "get_rows %s id %d",
                      tr_type_name(type), ids[i]);
        }
        free(out), free(exp_row), free(data), free(rowsrc);
    }
    /* a row length that is not a whole number of blocks: zeros, no crash */
    unsigned char blk[64] = {0};
    tr_tensor bad = {.name = "bad",
                     .type = TR_Q8_0,
                     .n_dims = 2,
                     .ne = {20, 1, 1, 1},
                     .nb1 = 34,
                     .nbytes = 34,
                     .data = blk};
    float o20[20];
    const int32_t id0 = 0;
    for (int i = 0; i < 20; i++) o20[i] = 1.0f;
    tr_get_rows(&bad, &id0, 1, o20);
    CHECK(o20[0] == 0.0f && o20[19] == 0.0f);
    free(src);
}

int main(void) {
    tr_pool *pool = tr_pool_create(3);
    test_norms(NULL);
    test_norms(pool);
    { /* rows are never split: any thread count gives the same bits */
        const int rows = 300, dim = 384;
        float *x = rnd_vec((long)rows * dim, 2.0f), *g = rnd_vec(dim, 1.0f);
        float *y1 = malloc(sizeof(float) * rows * dim), *y3 = malloc(sizeof(float) * rows * dim);
        tr_layer_norm(NULL, x, y1, rows, dim, g, g, 1e-5f);
        tr_layer_norm(pool, x, y3, rows, dim, g, g, 1e-5f);
        CHECK(memcmp(y1, y3, sizeof(float) * rows * dim) == 0);
        tr_rms_norm(NULL, x, y1, rows, dim, g, 1e-5f);
        tr_rms_norm(pool, x, y3, rows, dim, g, 1e-5f);
        CHECK(memcmp(y1, y3, sizeof(float) * rows * dim) == 0);
        free(x), free(g), free(y1), free(y3);
    }
    test_activations();
    test_softmax();
    test_transpose();
    test_rope();
    test_get_rows();
    tr_pool_free(pool);
    return TEST_DONE();
}
