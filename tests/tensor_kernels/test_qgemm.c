/* The integer GEMM of Q4_K / Q5_K weights (AVX-512, AVX2 and NEON
 * dot-product levels) and Q8_0 weights (AVX-512 and NEON dot product), M
 * above the few-row path: every output bit for bit against a scalar
 * reference of the arithmetic tr_mm_qgemm documents (x quantized per 32
 * with even ties, for Q8_0 as two codes per element, exact integer group
 * dots, then per group one FMA for the scale and, K-quants only, one for
 * the min, in K order), on odd M / N / K
 * edges (partial tiles and panels, several K blocks and claimed chunks,
 * strided X and Y, bias or none, weights quantized from floats or random
 * bytes), at 1, 2 and 3 threads; tr_matmul_lhs (X gathered from its packed
 * copy) gives the same bits. A level the host lacks is skipped with a note. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/matmul_internal.h"
#include "test_util.h"

#define SENTINEL 12345.0f

/* Code (0..15 or 0..31), d * sc and dmin * m of element i of a Q4_K / Q5_K
 * row; of a Q8_0 row, the signed code and d (min 0). */
static void elem(int type, const uint8_t *row, long i, int *q, float *wsc, float *wmin) {
    if (type == TR_Q8_0) {
        const uint8_t *b = row + (size_t)(i / 32) * 34;
        *q = (int8_t)b[2 + i % 32];
        *wsc = (float)kref_half(b);
        *wmin = 0.0f;
        return;
    }
    const uint8_t *b = row + (size_t)(i / 256) * kref_block_bytes(type);
    int e = (int)(i % 256), sub = e / 32, c = e / 64, l = e % 32, sc, mn;
    kref_k_scale_min(b + 4, sub, &sc, &mn);
    const uint8_t *qs = b + (type == TR_Q4_K ? 16 : 48);
    *q = (sub % 2 == 0) ? (qs[32 * c + l] & 15) : (qs[32 * c + l] >> 4);
    if (type == TR_Q5_K) *q += 16 * ((b[16 + l] >> sub) & 1);
    *wsc = (float)kref_half(b) * (float)sc;
    *wmin = (float)kref_half(b + 2) * (float)mn;
}

/* x * 127 / amax per element of a group (scaled up by 2^64 first where
 * amax < 2^-100, as the kernels do); returns amax. */
static float group_u(const float *x, float u[32]) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float up = 1.0f, a = amax;
    if (a < 0x1p-100f) {
        up = 0x1p64f;
        a *= up;
    }
    const float id = a > 0.0f ? 127.0f / a : 0.0f;
    for (int j = 0; j < 32; j++) u[j] = x[j] * up * id;
    return amax;
}

/* One group of x: codes, scale and -sum as the kernels make them. */
static void quant_group(const float *x, int8_t *q, float *xs, float *nsum) {
    float u[32], s = 0.0f;
    *xs = group_u(x, u) / 127.0f;
    for (int j = 0; j < 32; j++) {
        float v = nearbyintf(u[j]);
        q[j] = (int8_t)(v > 127.0f ? 127.0f : v < -128.0f ? -128.0f : v);
        s += x[j];
    }
    *nsum = -s;
}

/* Q8_0's two codes per element: high round(u), u = x * 127 / amax; low
 * round((u - high) * 254); xs = amax / 32258. */
static void quant_group2(const float *x, int8_t *h, int8_t *l, float *xs) {
    float u[32];
    *xs = group_u(x, u) / 32258.0f;
    for (int j = 0; j < 32; j++) {
        const float v = nearbyintf(u[j]);
        h[j] = (int8_t)v;
        l[j] = (int8_t)nearbyintf((u[j] - v) * 254.0f);
    }
}

static float ref_out(int type, const uint8_t *row, const float *x, long K, const float *bias,
                     long n) {
    float acc = bias ? bias[n] : 0.0f;
    for (long g = 0; g < K / 32; g++) {
        int8_t xq[32], xl[32];
        float xs, nsum = 0.0f, wsc = 0.0f, wmin = 0.0f;
        if (type == TR_Q8_0)
            quant_group2(x + 32 * g, xq, xl, &xs);
        else
            quant_group(x + 32 * g, xq, &xs, &nsum);
        int32_t isum = 0, lsum = 0;
        for (int t = 0; t < 32; t++) {
            int q;
            elem(type, row, 32 * g + t, &q, &wsc, &wmin);
            isum += q * xq[t];
            if (type == TR_Q8_0) lsum += q * xl[t];
        }
        if (type == TR_Q8_0) isum = 254 * isum + lsum;
        acc = fmaf((float)isum, wsc * xs, acc);
        if (type != TR_Q8_0) acc = fmaf(wmin, nsum, acc);
    }
    return acc;
}

typedef struct {
    const float *X;
    long ldx;
} x_rows;

static const float *x_row(const void *ctx, long m, float *tmp) {
    (void)tmp;
    return ((const x_rows *)ctx)->X + m * ((const x_rows *)ctx)->ldx;
}

/* direct: run that level table's integer GEMM itself (tr_mm_qgemm_run)
 * instead of tr_matmul, which picks the table for this CPU */
static void test_shape(tr_pool *pools[3], int type, int M, long K, long N, bool raw, bool biased,
                       const tr_mm_isa *direct) {
    const size_t rb = tr_row_bytes(type, K);
    const int ldx = (int)K + 5, ldy = (int)N + 3;
    uint8_t *W = malloc(rb * (size_t)N);
    float *row = malloc(sizeof(float) * (size_t)K), *X = malloc(sizeof(float) * (size_t)M * ldx);
    float *bias = malloc(sizeof(float) * (size_t)N), *R = malloc(sizeof(float) * (size_t)M * N);
    for (long n = 0; n < N; n++) {
        if (raw) {
            kref_random_blocks(type, W + (size_t)n * rb, K);
        } else {
            for (long k = 0; k < K; k++) row[k] = kref_uniform();
            tr_quantize_row(type, row, W + (size_t)n * rb, K);
        }
        bias[n] = kref_uniform();
    }
    for (long i = 0; i < (long)M * ldx; i++) X[i] = kref_uniform() * (i % 7 == 0 ? 8.0f : 1.0f);
    for (int m = 0; m < M; m++)
        for (long n = 0; n < N; n++)
            R[(long)m * N + n] =
                ref_out(type, W + (size_t)n * rb, X + (long)m * ldx, K, biased ? bias : NULL, n);
    tr_tensor t = {"w", type, 2, {K, N, 1, 1}, rb, rb * (size_t)N, W};
    const size_t lf = tr_matmul_lhs_floats(M, (int)K);
    float *pk = aligned_alloc(64, (lf * sizeof(float) + 63) / 64 * 64);
    float *Y = malloc(sizeof(float) * (size_t)(M * ldy + 1));
    for (int p = 0; p < 3; p++) {
        for (int via_lhs = 0; via_lhs < (direct ? 1 : 2); via_lhs++) {
            for (int i = 0; i < M * ldy + 1; i++) Y[i] = SENTINEL;
            if (direct) {
                const tr_mm_w w = {type, W, rb, K, N};
                const x_rows xr = {X, ldx};
                tr_mm_qgemm_run(pools[p], direct, &w, biased ? bias : NULL, x_row, &xr, M, Y, ldy);
            } else if (via_lhs) {
                tr_mm_lhs *h = tr_matmul_lhs_pack_into(pools[p], X, ldx, M, (int)K, type, pk);
                CHECK(h != NULL);
                if (h) tr_matmul_lhs(pools[p], &t, biased ? bias : NULL, h, Y, ldy);
                tr_matmul_lhs_free(h);
            } else {
                tr_matmul(pools[p], &t, biased ? bias : NULL, X, M, ldx, Y, ldy);
            }
            int bad = 0, gaps = 0;
            for (int m = 0; m < M; m++) {
                for (long n = 0; n < N; n++) {
                    float got = Y[(long)m * ldy + n], want = R[(long)m * N + n];
                    if (memcmp(&got, &want, sizeof got) != 0 && bad++ < 3)
                        fprintf(stderr, "%s M=%d K=%ld N=%ld [%d][%ld]: %.9g vs %.9g\n",
                                tr_type_name(type), M, K, N, m, n, got, want);
                }
                for (long n = N; n < ldy; n++) gaps += Y[(long)m * ldy + n] != SENTINEL;
            }
            gaps += Y[(long)M * ldy] != SENTINEL;
            CHECK_MSG(
                bad == 0 && gaps == 0,
                "%s M=%d K=%ld N=%ld raw %d bias %d, %d threads%s: %d differ, %d gaps written",
                tr_type_name(type), M, K, N, raw, biased, p + 1, via_lhs ? ", lhs" : "", bad, gaps);
        }
    }
    free(W);
    free(row);
    free(X);
    free(bias);
    free(R);
    free(pk);
    free(Y);
}

int main(void) {
    tr_pool *pools[3] = {tr_pool_create(1), tr_pool_create(2), tr_pool_create(3)};
    /* M: one partial tile, whole tiles and a tail; N: one row, partial
     * panels, more than one 4-panel chunk (161); K: one block, exactly the
     * 512 K block, 512 + 256, and 5 blocks; Q8_0 also K of 3 groups, and
     * one 512 block with a 96 tail (its K is a multiple of 32 only) */
    static const struct {
        int M;
        long K, N;
    } shapes[] = {{5, 256, 1},   {6, 512, 17},  {7, 768, 33},  {13, 256, 161}, {31, 1280, 40},
                  {5, 2560, 32}, {19, 768, 16}, {8, 512, 129}, {9, 96, 40},    {7, 608, 33}};
    const size_t n_kquant_shapes = 8;
    /* every level takes the K-quants: AVX-512 (VNNI), AVX2 (byte products
     * summed in int16, Q5_K in shorter runs so that its codes cannot
     * saturate there; with AVX-VNNI, vpdpbusd) and NEON dot product (SDOT
     * into int32); Q8_0 all but plain AVX2 (its byte products take one
     * unsigned side, and full-range signed codes on both would saturate the
     * int16 pair sums). tr_matmul takes the table for the CPU (on AVX2, the
     * AVX-VNNI one where the CPU has it); the plain AVX2 table is also run
     * directly, so both are tested on a host with AVX-VNNI */
    const bool vnni = tr_cpu_get_features()->avx_vnni;
    static const struct {
        tr_cpu_level level;
        const char *name;
        int n_types;
    } levels[] = {{TR_CPU_AVX512, "AVX-512", 3},
                  {TR_CPU_AVX2, "AVX2", 2},
                  {TR_CPU_NEON_DOTPROD, "NEON dot product", 3}};
    const int types[3] = {TR_Q4_K, TR_Q5_K, TR_Q8_0};
    for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
        if (!tr_cpu_force(levels[l].level)) {
            printf("no %s level on this host: its integer GEMM is not tested\n", levels[l].name);
            continue;
        }
        const bool avx2 = levels[l].level == TR_CPU_AVX2;
        int n_types = levels[l].n_types + (avx2 && vnni);
        if (avx2) printf("AVX2 with%s AVX-VNNI through tr_matmul\n", vnni ? "" : "out");
        for (int ty = 0; ty < n_types; ty++)
            for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
                if (types[ty] == TR_Q8_0 || s < n_kquant_shapes)
                    test_shape(pools, types[ty], shapes[s].M, shapes[s].K, shapes[s].N, s % 2 == 1,
                               s % 3 != 0, NULL);
#if defined(TR_CPU_X86)
        if (avx2) { /* the plain table, and the AVX-VNNI one, each run directly */
            tr_mm_isa plain = tr_mm_isa_avx2, with = tr_mm_isa_avx2;
            plain.qgemm_vnni = NULL;
            with.qgemm = &tr_mm_qgemm_avx_vnni;
            with.qgemm_vnni = NULL;
            for (int ty = 0; ty < 2; ty++)
                for (size_t s = 0; s < n_kquant_shapes; s++)
                    test_shape(pools, types[ty], shapes[s].M, shapes[s].K, shapes[s].N, s % 2 == 1,
                               s % 3 != 0, &plain);
            if (!vnni) printf("no AVX-VNNI on this host: its integer GEMM is not tested\n");
            for (int ty = 0; vnni && ty < 3; ty++)
                for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
                    if (types[ty] == TR_Q8_0 || s < n_kquant_shapes)
                        test_shape(pools, types[ty], shapes[s].M, shapes[s].K, shapes[s].N,
                                   s % 2 == 0, s % 3 != 1, &with);
        }
#endif
        tr_cpu_unforce();
    }
    for (int p = 0; p < 3; p++) tr_pool_free(pools[p]);
    return TEST_DONE();
}
