/* transcribe-bench kernels: GEMM and decode matrix-vector timings.
 *
 * GEMM cases compare tr_matmul (per weight dtype) against OpenBLAS
 * cblas_sgemm on the same problem with F32 weights, the two alternating;
 * OpenBLAS is dlopen'ed so neither the library nor this tool needs it at
 * build time (baseline null when absent). Decode (M = 1) cases report achieved GB/s of weight
 * bytes against a STREAM-style copy bandwidth measured in the same run,
 * interleaved with that case's calls (one copy, then a block of calls, and
 * so on): on a shared host the memory bandwidth drifts by tens of percent
 * within a minute, so a baseline taken once at the start can be measured
 * under other conditions than the case it divides. Weights are cycled
 * through enough copies to exceed the last-level cache, so the figure is a
 * from-memory one. Every time is a median. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/pool.h"
#include "util/timer.h"

#define MAX_REPS   64
#define COLD_BYTES ((size_t)256 << 20) /* > any LLC here: decode reads come from DRAM */

static void fill(float *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* Weight rows of W (F32 [N][K]) converted to `type`. */
static void *make_weights(int type, const float *W, long K, long N, size_t *bytes) {
    size_t rb = tr_row_bytes(type, K);
    uint8_t *q = malloc(rb * (size_t)N);
    if (!q) return NULL;
    for (long n = 0; n < N; n++) tr_quantize_row(type, W + (size_t)n * K, q + (size_t)n * rb, K);
    *bytes = rb * (size_t)N;
    return q;
}

/* GEMM: Q5_K beside Q4_K (the K-quants the integer GEMM takes) */
static const int k_types[] = {TR_F32, TR_F16, TR_Q8_0, TR_Q4_K, TR_Q5_K};
/* decode: Q6_K too (the output and FFN-down type of ggml's Q4_K_M files), and Q5_K (Q5_K_M) */
static const int k_gemv_types[] = {TR_F16, TR_Q8_0, TR_Q4_K, TR_Q5_K, TR_Q6_K};

/* The GEMM weight type named `name` ("Q4_K"), or -1. */
static int type_by_name(const char *name) {
    for (size_t i = 0; i < sizeof(k_types) / sizeof(k_types[0]); i++)
        if (strcmp(tr_type_name(k_types[i]), name) == 0) return k_types[i];
    return -1;
}

/* OpenBLAS and tr_matmul alternate call by call and the ratio is the
 * median of the per-pair ratios: on a shared host the load drifts within
 * seconds, so a baseline timed once before all dtypes can be measured under
 * other conditions than the case it divides. */
static void bench_gemm(tr_pool *pool, bench_sgemm_fn sgemm, int M, int K, int N, int reps,
                       int threads, int only_type) {
    float *X = malloc(sizeof(float) * (size_t)M * K), *W = malloc(sizeof(float) * (size_t)N * K);
    float *Y = malloc(sizeof(float) * (size_t)M * N);
    if (!X || !W || !Y) goto done;
    fill(X, (size_t)M * K, 1);
    fill(W, (size_t)N * K, 2);
    if (sgemm) /* warm-up: OpenBLAS threads started, buffers touched */
        sgemm(BENCH_CBLAS_ROW_MAJOR, BENCH_CBLAS_NO_TRANS, BENCH_CBLAS_TRANS, M, N, K, 1.0f, X, K,
              W, K, 0.0f, Y, N);
    for (size_t ti = 0; ti < sizeof(k_types) / sizeof(k_types[0]); ti++) {
        int type = k_types[ti];
        if (only_type >= 0 && type != only_type) continue;
        if (K % tr_type_block(type) != 0) { /* models store such tensors in another type */
            printf("{\"bench\":\"kernels\",\"case\":\"gemm %dx%dx%d\",\"dtype\":\"%s\","
                   "\"skipped\":\"K is not a multiple of the block size\"}\n",
                   M, K, N, tr_type_name(type));
            continue;
        }
        size_t bytes;
        void *q = make_weights(type, W, K, N, &bytes);
        if (!q) continue;
        tr_tensor tw = {"w", type, 2, {K, N, 1, 1}, tr_row_bytes(type, K), bytes, q};
        tr_matmul(pool, &tw, NULL, X, M, K, Y, N);
        double t[MAX_REPS], tb[MAX_REPS], ratio[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            double t0 = tr_time_ms();
            if (sgemm)
                sgemm(BENCH_CBLAS_ROW_MAJOR, BENCH_CBLAS_NO_TRANS, BENCH_CBLAS_TRANS, M, N, K, 1.0f,
                      X, K, W, K, 0.0f, Y, N);
            double t1 = tr_time_ms();
            tr_matmul(pool, &tw, NULL, X, M, K, Y, N);
            t[r] = tr_time_ms() - t1;
            tb[r] = t1 - t0;
            ratio[r] = tb[r] > 0 ? t[r] / tb[r] : 0.0;
        }
        double ms = bench_median(t, reps);
        printf(
            "{\"bench\":\"kernels\",\"case\":\"gemm %dx%dx%d\",\"dtype\":\"%s\",\"ours_ms\":%.3f,"
            "\"baseline\":\"openblas_sgemm_f32\",",
            M, K, N, tr_type_name(type), ms);
        if (sgemm)
            printf("\"baseline_ms\":%.3f,\"ratio\":%.3f,", bench_median(tb, reps),
                   bench_median(ratio, reps));
        else
            printf("\"baseline_ms\":null,\"ratio\":null,");
        printf("\"threads\":%d,\"isa\":\"%s\"}\n", threads, tr_matmul_isa());
        fflush(stdout);
        free(q);
    }
done:
    free(X);
    free(W);
    free(Y);
}

#define GEMV_BLOCKS 16 /* copy samples per case, each followed by a block of calls */

static void bench_gemv(tr_pool *pool, bench_copy *stream, int K, int N, int reps, int threads) {
    float *W = malloc(sizeof(float) * (size_t)N * K), *x = malloc(sizeof(float) * K);
    float *y = malloc(sizeof(float) * N);
    if (!W || !x || !y) goto done;
    fill(W, (size_t)N * K, 3);
    fill(x, (size_t)K, 4);
    for (size_t ti = 0; ti < sizeof(k_gemv_types) / sizeof(k_gemv_types[0]); ti++) {
        int type = k_gemv_types[ti];
        size_t bytes;
        void *q0 = make_weights(type, W, K, N, &bytes);
        if (!q0) continue;
        int copies = (int)(COLD_BYTES / bytes) + 1;
        if (copies > 64) copies = 64;
        void *q[64] = {q0};
        for (int c = 1; c < copies; c++) {
            q[c] = malloc(bytes);
            if (!q[c]) {
                copies = c;
                break;
            }
            memcpy(q[c], q0, bytes);
        }
        int runs = reps * copies < 200 ? reps * copies : 200;
        if (runs < reps) runs = reps;
        int block = (runs + GEMV_BLOCKS - 1) / GEMV_BLOCKS, nbw = 0;
        double *all = malloc(sizeof(double) * (size_t)runs), bws[GEMV_BLOCKS];
        if (!all) runs = 0;
        bench_copy_sample(pool, stream); /* warm-up: pages touched, threads awake */
        for (int r = 0; r < runs; r++) {
            if (r % block == 0) bws[nbw++] = bench_copy_sample(pool, stream);
            tr_tensor tw = {"w",   type,         2, {K, N, 1, 1}, tr_row_bytes(type, K),
                            bytes, q[r % copies]};
            double t0 = tr_time_ms();
            tr_matmul(pool, &tw, NULL, x, 1, K, y, N);
            all[r] = tr_time_ms() - t0;
        }
        double ms = runs ? bench_median(all, runs) : 0;
        double gbps = ms > 0 ? (double)bytes / (ms * 1e6) : 0;
        double bw = nbw ? bench_median(bws, nbw) : 0;
        printf("{\"bench\":\"kernels\",\"case\":\"gemv 1x%dx%d\",\"dtype\":\"%s\",\"ours_ms\":%.4f,"
               "\"gbps\":%.2f,\"baseline\":\"stream_copy\",\"baseline_gbps\":%.2f,"
               "\"ratio\":%.3f,\"threads\":%d,\"isa\":\"%s\"}\n",
               K, N, tr_type_name(type), ms, gbps, bw, bw > 0 ? gbps / bw : 0.0, threads,
               tr_matmul_isa());
        fflush(stdout);
        free(all);
        for (int c = 0; c < copies; c++) free(q[c]);
    }
done:
    free(W);
    free(x);
    free(y);
}

int bench_kernels(int argc, char **argv) {
    int threads = 2, reps = 5, only_gemv = 0, only_gemm = 0, only_type = -1, ncase = 0;
    int user_cases[8][3];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            if (!tr_matmul_force_isa(argv[++i])) {
                fprintf(stderr, "kernels: ISA %s not available\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--gemv") == 0)
            only_gemv = 1;
        else if (strcmp(argv[i], "--gemm") == 0)
            only_gemm = 1;
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            only_type = type_by_name(argv[++i]);
            if (only_type < 0) {
                fprintf(stderr, "kernels: unknown dtype %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && ncase < 8) {
            int *c = user_cases[ncase];
            if (sscanf(argv[++i], "%dx%dx%d", &c[0], &c[1], &c[2]) != 3 || c[0] < 1 || c[1] < 1 ||
                c[2] < 1) {
                fprintf(stderr, "kernels: --shape takes MxKxN, got %s\n", argv[i]);
                return 2;
            }
            ncase++;
        } else {
            fprintf(stderr,
                    "kernels: unknown option %s\n"
                    "options: --threads N --reps N --isa scalar|avx2|avx512 --gemm --gemv\n"
                    "         --dtype NAME (GEMM cases of one weight type) --shape MxKxN (GEMM\n"
                    "         cases instead of the default ones, up to 8)\n",
                    argv[i]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    bench_blas blas;
    bench_blas_open(threads, &blas); /* blas.sgemm NULL when absent */
    bench_sgemm_fn sgemm = blas.sgemm;
    tr_pool *pool = tr_pool_create(threads);
    if (!pool) return 1;
    if (!only_gemv) {
        /* whisper-base / -small encoder shapes, then Voxtral Realtime's encoder FFN (K a
         * multiple of 256, so the K-quants run: the shapes of its Q4_K_M file) */
        static const int cases[][3] = {{1500, 512, 2048},
                                       {1500, 1024, 4096},
                                       {3000, 384, 1536},
                                       {748, 1280, 5120},
                                       {748, 5120, 1280}};
        const int(*run)[3] = ncase ? (const int(*)[3])user_cases : cases;
        int nrun = ncase ? ncase : (int)(sizeof(cases) / sizeof(cases[0]));
        for (int c = 0; c < nrun; c++)
            bench_gemm(pool, sgemm, run[c][0], run[c][1], run[c][2], reps, threads, only_type);
    }
    bench_copy stream;
    if (!only_gemm && bench_copy_init(&stream)) {
        bench_gemv(pool, &stream, 1024, 4096, reps, threads);
        bench_gemv(pool, &stream, 1280, 51866, reps, threads);
        bench_copy_free(&stream);
    }
    tr_pool_free(pool);
    bench_blas_close(&blas);
    return 0;
}
