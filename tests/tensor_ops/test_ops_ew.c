/* tr_ew_* (element-wise passes on the pool): bit-identical to the serial
 * kernels (tr_gelu / tr_silu / tr_relu, plain x += y, x += s·y, x *= s, and
 * tr_glu over whole rows) for 1, 2 and 3
 * threads, on every SIMD family, for lengths below and above the pool
 * threshold, with and without a scalar tail and a partial last block. */
#include <stdlib.h>
#include <string.h>

#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

enum { OP_GELU, OP_SILU, OP_RELU, OP_ADD, OP_AXPY, OP_SCALE, N_OPS };
static const char *const op_names[N_OPS] = {"gelu", "silu", "relu", "add", "axpy", "scale"};
static const float S = 0.37f; /* axpy / scale factor: not a power of two */

static void serial(int op, float *x, const float *y, long n) {
    switch (op) {
    case OP_GELU:
        tr_gelu(x, n);
        break;
    case OP_SILU:
        tr_silu(x, n);
        break;
    case OP_RELU:
        tr_relu(x, n);
        break;
    case OP_ADD:
        for (long i = 0; i < n; i++) x[i] += y[i];
        break;
    case OP_AXPY:
        for (long i = 0; i < n; i++) x[i] += S * y[i];
        break;
    default:
        for (long i = 0; i < n; i++) x[i] *= S;
        break;
    }
}

static void pooled(int op, tr_pool *pool, float *x, const float *y, long n) {
    switch (op) {
    case OP_GELU:
        tr_ew_gelu(pool, x, n);
        break;
    case OP_SILU:
        tr_ew_silu(pool, x, n);
        break;
    case OP_RELU:
        tr_ew_relu(pool, x, n);
        break;
    case OP_ADD:
        tr_ew_add(pool, x, y, n);
        break;
    case OP_AXPY:
        tr_ew_axpy(pool, x, y, S, n);
        break;
    default:
        tr_ew_scale(pool, x, S, n);
        break;
    }
}

/* tr_ew_glu against tr_glu over all rows at once, for row widths that cut
 * the pool's blocks unevenly. */
static void check_glu(tr_pool *const *pools) {
    static const int shapes[][2] = {{3, 5}, {40, 1000}, {17, 8192}, {100, 333}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int rows = shapes[k][0], half = shapes[k][1];
        const size_t n = (size_t)rows * (size_t)half;
        float *x = rnd_vec((long)(2 * n), 4.0f);
        float *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
        tr_glu(x, want, rows, half);
        for (int t = 0; t < 3; t++) {
            memset(got, 0, sizeof(float) * n);
            tr_ew_glu(pools[t], x, got, rows, half);
            CHECK_MSG(memcmp(got, want, sizeof(float) * n) == 0,
                      "glu %dx%d threads %d differs from tr_glu", rows, half, t + 1);
        }
        free(x), free(want), free(got);
    }
}

int main(void) {
    tr_pool *pools[3] = {NULL, tr_pool_create(2), tr_pool_create(3)};
    static const long lengths[] = {1, 7, 8191, 32768, 32775, 40000 + 13, 3 * 8192 * 5 + 5};
    static const char *const isas[] = {"generic", "avx2", "avx512"};
    for (int isa = 0; isa < 3; isa++) {
        setenv("TR_OPS_ISA", isas[isa], 1);
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const long n = lengths[li];
            float *x0 = rnd_vec(n, 6.0f), *y = rnd_vec(n, 3.0f);
            float *want = malloc(sizeof(float) * (size_t)n),
                  *got = malloc(sizeof(float) * (size_t)n);
            for (int op = 0; op < N_OPS; op++) {
                memcpy(want, x0, sizeof(float) * (size_t)n);
                serial(op, want, y, n);
                for (int t = 0; t < 3; t++) {
                    memcpy(got, x0, sizeof(float) * (size_t)n);
                    pooled(op, pools[t], got, y, n);
                    CHECK_MSG(memcmp(got, want, sizeof(float) * (size_t)n) == 0,
                              "%s %s n %ld threads %d differs from the serial call", op_names[op],
                              isas[isa], n, t + 1);
                }
            }
            free(x0), free(y), free(want), free(got);
        }
    }
    unsetenv("TR_OPS_ISA");
    check_glu(pools);
    /* n <= 0 is a no-op */
    tr_ew_gelu(pools[1], NULL, 0);
    tr_ew_add(pools[1], NULL, NULL, -3);
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    return TEST_DONE();
}
