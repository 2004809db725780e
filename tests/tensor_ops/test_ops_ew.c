/* tr_ew_* (element-wise passes on the pool): bit-identical to the serial
 * kernels (tr_gelu / tr_silu / tr_relu, a plain x += y) for 1, 2 and 3
 * threads, on every SIMD family, for lengths below and above the pool
 * threshold, with and without a scalar tail and a partial last block. */
#include <stdlib.h>
#include <string.h>

#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_rng.h"
#include "test_util.h"

enum { OP_GELU, OP_SILU, OP_RELU, OP_ADD, N_OPS };
static const char *const op_names[N_OPS] = {"gelu", "silu", "relu", "add"};

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
    default:
        for (long i = 0; i < n; i++) x[i] += y[i];
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
    default:
        tr_ew_add(pool, x, y, n);
        break;
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
    /* n <= 0 is a no-op */
    tr_ew_gelu(pools[1], NULL, 0);
    tr_ew_add(pools[1], NULL, NULL, -3);
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    return TEST_DONE();
}
