/* tr_matmul for every weight type against a double-precision reference on
 * awkward shapes; every ISA path; bit-identical results for 1/2/3 threads;
 * bias on/off; row strides larger than K/N (the gaps must stay untouched);
 * the cache-blocked driver's block edges; tr_matmul_f32_nt, with A packed
 * once (tr_matmul_lhs_pack). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kref.h"
#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "test_util.h"

#define SENTINEL 12345.0f

static const int k_types[] = {TR_F32,  TR_F16,  TR_BF16, TR_Q4_0, TR_Q4_1, TR_Q5_0, TR_Q5_1,
                              TR_Q8_0, TR_Q2_K, TR_Q3_K, TR_Q4_K, TR_Q5_K, TR_Q6_K};
/* Every CPU level this host runs, scalar first (filled in main). */
static tr_cpu_level k_levels[3];
static int k_n_levels;

typedef struct {
    int type;
    long K, N;
    uint8_t *data;
    size_t row_bytes;
    double *ref; /* [N][K] decoded by the reference decoder */
} wmat;

static wmat make_w(int type, long K, long N) {
    wmat w = {type, K, N, NULL, tr_row_bytes(type, K), NULL};
    w.data = malloc(w.row_bytes * (size_t)N + 1);
    float *row = malloc(sizeof(float) * (size_t)(K ? K : 1));
    for (long n = 0; n < N; n++) {
        uint8_t *dst = w.data + (size_t)n * w.row_bytes;
        /* quantized from random floats, except K-quants at N == 5: random
         * bytes there, so every scale/min bit pattern gets exercised */
        bool raw = N == 5 && tr_type_block(type) == 256;
        if (tr_type_can_quantize(type) && !raw) {
            for (long k = 0; k < K; k++) row[k] = kref_uniform();
            tr_quantize_row(type, row, dst, K);
        } else {
            kref_random_blocks(type, dst, K);
        }
    }
    free(row);
    w.ref = malloc(sizeof(double) * (size_t)(N * K + 1));
    for (long n = 0; n < N; n++)
        for (long k = 0; k < K; k++)
            w.ref[n * K + k] = kref_row_elem(type, w.data + (size_t)n * w.row_bytes, k);
    return w;
}

/* Runs one product; Y has row stride ldy with sentinel gaps. */
static float *run(tr_pool *pool, const wmat *w, const float *bias, const float *X, int M, int ldx,
                  int ldy) {
    tr_tensor t = {"w", w->type, 2, {w->K, w->N, 1, 1}, w->row_bytes, w->row_bytes * w->N, w->data};
    float *Y = malloc(sizeof(float) * (size_t)(M * ldy + 1));
    for (int i = 0; i < M * ldy + 1; i++) Y[i] = SENTINEL;
    tr_matmul(pool, &t, bias, X, M, ldx, Y, ldy);
    return Y;
}

/* Whether a path may quantize x to 8 bits (~1/254 of each group's max per
 * element): the Q8_0 and K-quant rows of one or a few rows of X
 * (TR_MM_SMALL_M), and the integer GEMM (Q4_K and Q5_K on AVX-512, AVX2
 * and NEON dot product, Q8_0 on AVX-512, NEON dot product and AVX2 with
 * AVX-VNNI) at any M;
 * everything else is float-exact. */
static bool x_quantized(int type, int M) {
    const tr_cpu_level lv = tr_cpu_level_active();
    if ((type == TR_Q4_K || type == TR_Q5_K) &&
        (lv == TR_CPU_AVX512 || lv == TR_CPU_AVX2 || lv == TR_CPU_NEON_DOTPROD))
        return true;
    if (type == TR_Q8_0 && (lv == TR_CPU_AVX512 || lv == TR_CPU_NEON_DOTPROD ||
                            (lv == TR_CPU_AVX2 && tr_cpu_get_features()->avx_vnni)))
        return true;
    return (type == TR_Q8_0 || type == TR_Q4_K || type == TR_Q5_K || type == TR_Q6_K) && M <= 4;
}

/* Checks Y against the double reference; returns the number of bad values. */
static int check_ref(const wmat *w, const float *bias, const float *X, int M, int ldx,
                     const float *Y, int ldy) {
    int bad = 0;
    for (int m = 0; m < M; m++) {
        for (long n = 0; n < w->N; n++) {
            double s = bias ? bias[n] : 0.0, mag = fabs(s);
            for (long k = 0; k < w->K; k++) {
                double v = w->ref[n * w->K + k] * X[(long)m * ldx + k];
                s += v;
                mag += fabs(v);
            }
            double got = Y[(long)m * ldy + n];
            /* the Q8_0/Q4_K/Q5_K/Q6_K decode paths may quantize x to 8 bits (~1/254 of each
             * group's max per element); everything else is float-exact */
            double tol = x_quantized(w->type, M) ? 8e-3 * mag : 2e-6 * mag + 1e-6;
            if (!(fabs(got - s) <= tol)) {
                if (bad++ < 3)
                    fprintf(stderr, "%s M=%d K=%ld N=%ld [%d][%ld]: %g vs %g\n",
                            tr_type_name(w->type), M, w->K, w->N, m, n, got, s);
            }
        }
        for (int n = (int)w->N; n < ldy; n++)
            if (Y[(long)m * ldy + n] != SENTINEL) bad++;
    }
    if (Y[(long)M * ldy] != SENTINEL) bad++;
    return bad;
}

/* SIMD result vs scalar result, within the same tolerance as check_ref. */
static int check_close(const wmat *w, const float *X, int M, int ldx, const float *Ya,
                       const float *Yb, int ldy) {
    int bad = 0;
    for (int m = 0; m < M; m++) {
        for (long n = 0; n < w->N; n++) {
            double mag = 0;
            for (long k = 0; k < w->K; k++)
                mag += fabs(w->ref[n * w->K + k] * X[(long)m * ldx + k]);
            double tol = x_quantized(w->type, M) ? 8e-3 * mag : 4e-6 * mag + 2e-6;
            if (!(fabs((double)Ya[(long)m * ldy + n] - Yb[(long)m * ldy + n]) <= tol)) bad++;
        }
    }
    return bad;
}

static void test_type(int type, tr_pool *pools[3]) {
    int blk = tr_type_block(type);
    long Ks[3];
    if (blk == 1) {
        Ks[0] = 7, Ks[1] = 96, Ks[2] = 300;
    } else if (blk == 32) {
        Ks[0] = 32, Ks[1] = 160, Ks[2] = 544; /* not multiples of 256 */
    } else {
        Ks[0] = 256, Ks[1] = 512, Ks[2] = 768;
    }
    const int Ms[] = {0, 1, 3, 17};
    const long Ns[] = {1, 5, 33};
    for (int ki = 0; ki < 3; ki++) {
        for (int ni = 0; ni < 3; ni++) {
            long K = Ks[ki], N = Ns[ni];
            wmat w = make_w(type, K, N);
            float *bias = malloc(sizeof(float) * N);
            for (long n = 0; n < N; n++) bias[n] = kref_uniform();
            for (int mi = 0; mi < 4; mi++) {
                int M = Ms[mi];
                int strided = (ki + ni + mi) % 2, ldx = (int)K + (strided ? 3 : 0);
                int ldy = (int)N + (strided ? 5 : 0);
                float *X = malloc(sizeof(float) * (size_t)(M * ldx + 1));
                for (int i = 0; i < M * ldx; i++) X[i] = kref_uniform();
                const float *b = (mi % 2) ? bias : NULL;
                float *Ys = NULL; /* the scalar result */
                for (int ii = 0; ii < k_n_levels; ii++) {
                    CHECK(tr_cpu_force(k_levels[ii]));
                    float *Y1 = run(pools[0], &w, b, X, M, ldx, ldy);
                    int bad = check_ref(&w, b, X, M, ldx, Y1, ldy);
                    CHECK_MSG(bad == 0, "%s %s M=%d K=%ld N=%ld: %d bad", tr_type_name(type),
                              tr_cpu_level_name(k_levels[ii]), M, K, N, bad);
                    if (Ys) {
                        bad = check_close(&w, X, M, ldx, Ys, Y1, ldy);
                        CHECK_MSG(bad == 0, "%s %s vs scalar M=%d K=%ld N=%ld: %d differ",
                                  tr_type_name(type), tr_cpu_level_name(k_levels[ii]), M, K, N,
                                  bad);
                    }
                    /* thread-count independence: bit-identical for 1, 2, 3 */
                    for (int p = 1; p < 3; p++) {
                        float *Yp = run(pools[p], &w, b, X, M, ldx, ldy);
                        CHECK_MSG(memcmp(Y1, Yp, sizeof(float) * (size_t)(M * ldy)) == 0,
                                  "%s %s M=%d K=%ld N=%ld: %d threads differ", tr_type_name(type),
                                  tr_cpu_level_name(k_levels[ii]), M, K, N, p + 1);
                        free(Yp);
                    }
                    if (!Ys)
                        Ys = Y1;
                    else
                        free(Y1);
                }
                free(Ys);
                tr_cpu_unforce();
                free(X);
            }
            free(bias);
            free(w.data);
            free(w.ref);
        }
    }
}

/* Matrix-vector products whose x the Q8_0 / K-quant paths quantize to int8
 * (per 32 or per 256 elements, level-dependent): x all zero, x tiny (group
 * maxima below 2^-100, where 127/max needs care), x huge, and scales that
 * differ by 60 orders of magnitude from one 32-element group to the next,
 * at every level against the double reference. */
static void test_x_scales(tr_pool *pool) {
    const int types[] = {TR_Q8_0, TR_Q4_K, TR_Q5_K, TR_Q6_K};
    const long K = 768, N = 7; /* N != 5: weights quantized from [-1, 1) */
    float *X = malloc(sizeof(float) * K), *bias = malloc(sizeof(float) * N);
    for (long n = 0; n < N; n++) bias[n] = kref_uniform();
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        wmat w = make_w(types[t], K, N);
        for (int pattern = 0; pattern < 5; pattern++) {
            static const float group_scale[4] = {1e-33f, 1.0f, 1e27f, 3e-31f};
            for (long k = 0; k < K; k++) {
                float u = kref_uniform();
                X[k] = pattern == 0   ? 0.0f
                       : pattern == 1 ? u * 1e-33f
                       : pattern == 2 ? u * 1e30f
                       : pattern == 3 ? u * group_scale[(k / 32) % 4]
                                      : u * 1e-38f; /* below the ~4e-37 where 127/max overflows */
            }
            for (int ii = 0; ii < k_n_levels; ii++) {
                CHECK(tr_cpu_force(k_levels[ii]));
                float *Y =
                    run(pool, &w, pattern == 1 || pattern == 4 ? NULL : bias, X, 1, (int)K, (int)N);
                int bad = check_ref(&w, pattern == 1 || pattern == 4 ? NULL : bias, X, 1, (int)K, Y,
                                    (int)N);
                CHECK_MSG(bad == 0, "%s %s x pattern %d: %d bad", tr_type_name(types[t]),
                          tr_cpu_level_name(k_levels[ii]), pattern, bad);
                free(Y);
            }
            tr_cpu_unforce();
        }
        free(w.data);
        free(w.ref);
    }
    free(X);
    free(bias);
}

/* Bigger than one N block and several K blocks, so all blocking loops run. */
static void test_large(tr_pool *pool) {
    const int types[] = {TR_F32, TR_F16, TR_Q8_0, TR_Q4_K};
    for (int t = 0; t < 4; t++) {
        wmat w = make_w(types[t], 768, 1100);
        int M = 29;
        float *X = malloc(sizeof(float) * M * 768);
        for (int i = 0; i < M * 768; i++) X[i] = kref_uniform();
        for (int ii = 0; ii < k_n_levels; ii++) {
            CHECK(tr_cpu_force(k_levels[ii]));
            for (int m = 1; m <= M; m += M - 1) {
                float *Y = run(pool, &w, NULL, X, m, 768, 1100);
                CHECK_MSG(check_ref(&w, NULL, X, m, 768, Y, 1100) == 0, "large %s %s M=%d",
                          tr_type_name(types[t]), tr_cpu_level_name(k_levels[ii]), m);
                free(Y);
            }
        }
        free(X);
        free(w.data);
        free(w.ref);
    }
}

/* The cache-blocked (AVX2) driver's edges: several K blocks with a short
 * last one, M over one packed X block (MC is half of L2 over KC: 252 rows
 * with 512 KiB, 1008 with 2 MiB) with a partial last tile, N in partial
 * W panels, and 1, 2, 3 threads (N = 17 with 3 threads splits the rows
 * instead). Every weight dtype the kernels benchmark, every ISA. */
static void test_blocking(tr_pool *pools[3]) {
    const int types[] = {TR_F32, TR_F16, TR_Q8_0, TR_Q4_K};
    /* 256 + 256 + a short block (K-quants: 3 × 256); then Ks an AVX2 host
     * with 32 KiB of L1d runs as one block (up to 384, not multiples of 16) */
    const long Ks[2][4] = {{600, 600, 608, 768}, {371, 383, 352, 512}};
    const int M = 1031;
    const long Ns[] = {17, 40};
    for (int t = 0; t < 8; t++) {
        for (int ni = t / 4; ni < 2; ni++) { /* the one-block Ks: N = 40 only */
            long K = Ks[t / 4][t % 4], N = Ns[ni];
            wmat w = make_w(types[t % 4], K, N);
            float *X = malloc(sizeof(float) * (size_t)(M * K));
            float *bias = malloc(sizeof(float) * (size_t)N);
            for (long i = 0; i < M * K; i++) X[i] = kref_uniform();
            for (long n = 0; n < N; n++) bias[n] = kref_uniform();
            for (int ii = 0; ii < k_n_levels; ii++) {
                CHECK(tr_cpu_force(k_levels[ii]));
                float *Y1 = run(pools[0], &w, bias, X, M, (int)K, (int)N + 3);
                CHECK_MSG(check_ref(&w, bias, X, M, (int)K, Y1, (int)N + 3) == 0,
                          "blocking %s %s M=%d K=%ld N=%ld", tr_type_name(types[t % 4]),
                          tr_cpu_level_name(k_levels[ii]), M, K, N);
                for (int p = 1; p < 3; p++) {
                    float *Yp = run(pools[p], &w, bias, X, M, (int)K, (int)N + 3);
                    CHECK_MSG(memcmp(Y1, Yp, sizeof(float) * (size_t)(M * (N + 3))) == 0,
                              "blocking %s %s N=%ld: %d threads differ", tr_type_name(types[t % 4]),
                              tr_cpu_level_name(k_levels[ii]), N, p + 1);
                    free(Yp);
                }
                free(Y1);
            }
            tr_cpu_unforce();
            free(X);
            free(bias);
            free(w.data);
            free(w.ref);
        }
    }
}

static void test_nt(tr_pool *pool) {
    const int M = 19, N = 37, K = 45, lda = 50, ldb = 47, ldc = 40;
    float *A = malloc(sizeof(float) * M * lda), *B = malloc(sizeof(float) * N * ldb);
    float *C = malloc(sizeof(float) * M * ldc);
    for (int i = 0; i < M * lda; i++) A[i] = kref_uniform();
    for (int i = 0; i < N * ldb; i++) B[i] = kref_uniform();
    for (int ii = 0; ii < k_n_levels; ii++) {
        CHECK(tr_cpu_force(k_levels[ii]));
        for (int i = 0; i < M * ldc; i++) C[i] = SENTINEL;
        tr_matmul_f32_nt(pool, A, lda, B, ldb, C, ldc, M, N, K);
        int bad = 0;
        for (int m = 0; m < M; m++) {
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++) s += (double)A[m * lda + k] * B[n * ldb + k];
                if (fabs(s - C[m * ldc + n]) > 1e-5) bad++;
            }
            for (int n = N; n < ldc; n++) bad += C[m * ldc + n] != SENTINEL;
        }
        CHECK_MSG(bad == 0, "f32_nt %s: %d bad", tr_cpu_level_name(k_levels[ii]), bad);
        /* on the calling thread with the caller's scratch: the same bits */
        const size_t nf = tr_matmul_f32_nt_scratch_floats(M, N, K);
        CHECK(nf > 0);
        float *scr = aligned_alloc(64, (nf * sizeof(float) + 63) / 64 * 64);
        float *C2 = malloc(sizeof(float) * M * ldc);
        for (int i = 0; i < M * ldc; i++) C2[i] = SENTINEL;
        tr_matmul_f32_nt_buf(A, lda, B, ldb, C2, ldc, M, N, K, scr, nf);
        CHECK_MSG(memcmp(C, C2, sizeof(float) * (size_t)(M * ldc)) == 0, "f32_nt_buf %s differs",
                  tr_cpu_level_name(k_levels[ii]));
        for (int i = 0; i < M * ldc; i++) C2[i] = SENTINEL;
        tr_matmul_f32_nt_buf(A, lda, B, ldb, C2, ldc, M, N, K, NULL, 0); /* allocates */
        CHECK(memcmp(C, C2, sizeof(float) * (size_t)(M * ldc)) == 0);
        free(scr);
        free(C2);
    }
    CHECK(tr_matmul_f32_nt_scratch_floats(4, N, K) == 0);
    free(A);
    free(B);
    free(C);
}

/* tr_matmul_f32_nt_lhs: A packed once gives tr_matmul_f32_nt's outputs bit
 * for bit over several B, at every level and 1-3 threads, with strides
 * wider than K; shapes where the call splits rows (few output columns)
 * read A unpacked; the gaps of C stay untouched. */
static void test_nt_lhs(tr_pool *pools[3]) {
    const int M = 70, K = 600, lda = 611, ldb = 603, ldc = 650;
    const int Ns[3] = {640, 33, 5}; /* many panels, a few, fewer than threads */
    float *A = malloc(sizeof(float) * M * lda), *B = malloc(sizeof(float) * 640 * ldb);
    float *C0 = malloc(sizeof(float) * M * ldc), *C1 = malloc(sizeof(float) * M * ldc);
    for (int i = 0; i < M * lda; i++) A[i] = kref_uniform();
    for (int i = 0; i < 640 * ldb; i++) B[i] = kref_uniform();
    for (int ii = 0; ii < k_n_levels; ii++) {
        CHECK(tr_cpu_force(k_levels[ii]));
        for (int p = 0; p < 3; p++) {
            tr_mm_lhs *h = tr_matmul_lhs_pack(pools[p], A, lda, M, K);
            CHECK(h != NULL);
            for (int t = 0; t < 3 && h; t++) {
                for (int i = 0; i < M * ldc; i++) C0[i] = C1[i] = SENTINEL;
                tr_matmul_f32_nt(pools[p], A, lda, B, ldb, C0, ldc, M, Ns[t], K);
                tr_matmul_f32_nt_lhs(pools[p], h, B, ldb, C1, ldc, Ns[t]);
                CHECK_MSG(memcmp(C0, C1, sizeof(float) * (size_t)(M * ldc)) == 0,
                          "f32_nt_lhs %s N=%d %d threads differ", tr_cpu_level_name(k_levels[ii]),
                          Ns[t], p + 1);
            }
            tr_matmul_lhs_free(h);
        }
    }
    tr_cpu_unforce();
    CHECK(tr_matmul_lhs_pack(pools[0], A, lda, 0, K) == NULL);
    tr_matmul_lhs_free(NULL);
    free(A);
    free(B);
    free(C0);
    free(C1);
}

/* tr_matmul_lhs_pack_into / tr_matmul_lhs: X packed into the caller's
 * memory for one weight type, then overwritten, gives tr_matmul's outputs
 * (bias included) bit for bit at every level and 1-3 threads, for column
 * counts that split rows (fewer panels than threads) or not; too few rows
 * to pack and a weight of another K are refused. */
static void test_lhs_into(tr_pool *pools[3]) {
    const int M = 45, K = 256, ldx = 270, ldy = 300;
    const int types[4] = {TR_F32, TR_F16, TR_Q8_0, TR_Q4_K}; /* Q4_K: the integer GEMM's gather */
    const int Ns[3] = {290, 64, 16};
    float *X = malloc(sizeof(float) * M * ldx), *bias = malloc(sizeof(float) * 290);
    for (int i = 0; i < M * ldx; i++) X[i] = kref_uniform();
    for (int i = 0; i < 290; i++) bias[i] = kref_uniform();
    const size_t nf = tr_matmul_lhs_floats(M, K);
    CHECK(nf >= (size_t)M * K);
    CHECK(tr_matmul_lhs_floats(4, K) == 0);
    float *data = aligned_alloc(64, (nf * sizeof(float) + 63) / 64 * 64);
    float *Xc = malloc(sizeof(float) * M * ldx);
    for (int ty = 0; ty < 4; ty++) {
        for (int t = 0; t < 3; t++) {
            wmat w = make_w(types[ty], K, Ns[t]);
            tr_tensor wt = {"w",   w.type, 2, {w.K, w.N, 1, 1}, w.row_bytes, w.row_bytes * w.N,
                            w.data};
            for (int ii = 0; ii < k_n_levels; ii++) {
                CHECK(tr_cpu_force(k_levels[ii]));
                for (int p = 0; p < 3; p++) {
                    float *Y0 = run(pools[p], &w, bias, X, M, ldx, ldy);
                    memcpy(Xc, X, sizeof(float) * M * ldx);
                    tr_mm_lhs *h = tr_matmul_lhs_pack_into(pools[p], Xc, ldx, M, K, w.type, data);
                    CHECK(h != NULL);
                    for (int i = 0; i < M * ldx; i++) Xc[i] = NAN; /* not read again */
                    float *Y1 = malloc(sizeof(float) * (size_t)(M * ldy + 1));
                    for (int i = 0; i < M * ldy + 1; i++) Y1[i] = SENTINEL;
                    if (h) tr_matmul_lhs(pools[p], &wt, bias, h, Y1, ldy);
                    CHECK_MSG(memcmp(Y0, Y1, sizeof(float) * (size_t)(M * ldy + 1)) == 0,
                              "lhs_into %s %s N=%d %d threads differ", tr_type_name(w.type),
                              tr_cpu_level_name(k_levels[ii]), Ns[t], p + 1);
                    tr_matmul_lhs_free(h);
                    free(Y0);
                    free(Y1);
                }
            }
            tr_cpu_unforce();
            free(w.data);
            free(w.ref);
        }
    }
    CHECK(tr_matmul_lhs_pack_into(pools[0], X, ldx, 4, K, TR_F32, data) == NULL);
    wmat w2 = make_w(TR_F32, 128, 8);
    tr_tensor wt2 = {"w2",   w2.type, 2, {w2.K, w2.N, 1, 1}, w2.row_bytes, w2.row_bytes * w2.N,
                     w2.data};
    tr_mm_lhs *h = tr_matmul_lhs_pack_into(pools[1], X, ldx, M, K, TR_F32, data);
    float *Y = malloc(sizeof(float) * M * 8);
    tr_pool_take_failures(pools[1]);
    tr_matmul_lhs(pools[1], &wt2, NULL, h, Y, 8);
    CHECK(tr_pool_take_failures(pools[1]) == TR_POOL_FAIL_INVALID);
    tr_matmul_lhs_free(h);
    free(Y);
    free(w2.data);
    free(w2.ref);
    free(data);
    free(Xc);
    free(X);
    free(bias);
}

/* A few rows of X (a batched decode step, or the verify step of
 * speculative decoding): each row of the product has the bits of that row
 * alone (M == 1), so a batched utterance decodes exactly as it would by
 * itself; on every level and for every weight type (the integer dots of
 * Q8_0 and the K-quants where a level has them, the matrix-vector path per
 * row otherwise), with and without bias, for K with an odd block count, at
 * 1-3 threads. */
static void test_rows_match_single(tr_pool *pools[3], int type) {
    const bool kq = tr_type_block(type) == 256;
    const long Ks[2] = {1024, kq ? 768 : 544}, N = 333;
    /* the integer-dot types take both K (an odd block count too); the
     * others, whose few-row path is the one-row path, one (under qemu the
     * whole test takes minutes) */
    const bool int8 = kq || type == TR_Q8_0;
    for (int ki = 0; ki < (int8 ? 2 : 1); ki++) {
        const long K = Ks[ki];
        wmat w = make_w(type, K, N);
        tr_tensor t = {"q", type, 2, {K, N, 1, 1}, w.row_bytes, w.row_bytes * (size_t)N, w.data};
        float *X = malloc(sizeof(float) * 4 * (size_t)K), *bias = malloc(sizeof(float) * N);
        float *Y = malloc(sizeof(float) * 4 * (size_t)N), *R = malloc(sizeof(float) * (size_t)N);
        for (long i = 0; i < 4 * K; i++) X[i] = kref_uniform();
        for (long n = 0; n < N; n++) bias[n] = kref_uniform();
        for (int ii = 0; ii < k_n_levels; ii++) {
            CHECK(tr_cpu_force(k_levels[ii]));
            for (int p = 0; p < 3; p++)
                for (int M = 2; M <= 4; M++)
                    for (int b = 0; b < 2; b++) {
                        const float *bp = b ? bias : NULL;
                        tr_linear(pools[p], &t, bp, X, M, Y);
                        for (int m = 0; m < M; m++) {
                            tr_linear(pools[p], &t, bp, X + m * K, 1, R);
                            CHECK_MSG(memcmp(Y + m * N, R, sizeof(float) * (size_t)N) == 0,
                                      "%s %s K %ld, %d threads, M %d row %d%s: differs from the "
                                      "row alone",
                                      tr_type_name(type), tr_cpu_level_name(k_levels[ii]), K, p + 1,
                                      M, m, b ? " (bias)" : "");
                        }
                    }
        }
        CHECK(tr_cpu_force(k_levels[k_n_levels - 1]));
        free(w.data);
        free(w.ref);
        free(X);
        free(bias);
        free(Y);
        free(R);
    }
}

/* The matrix-vector product (M == 1) of the integer-dot types, whose x a
 * level may quantize once per call, has the bits of the same rows computed
 * in chunks through tr_matvec_rows (x prepared per chunk), on every level,
 * at 1-3 threads, with and without bias. */
static void test_matvec_chunks(tr_pool *pools[3]) {
    const int types[4] = {TR_Q8_0, TR_Q4_K, TR_Q5_K, TR_Q6_K};
    const long N = 301;
    for (int ti = 0; ti < 4; ti++) {
        const long K = types[ti] == TR_Q8_0 ? 544 : 768;
        wmat w = make_w(types[ti], K, N);
        tr_tensor t = {"v",   types[ti], 2, {K, N, 1, 1}, w.row_bytes, w.row_bytes * (size_t)N,
                       w.data};
        float *x = malloc(sizeof(float) * (size_t)K), *bias = malloc(sizeof(float) * N);
        float *Y = malloc(sizeof(float) * N), *R = malloc(sizeof(float) * N);
        float *buf = malloc(sizeof(float) * (size_t)tr_matvec_scratch_floats(&t));
        float *scratch = malloc(sizeof(float) * (size_t)tr_matvec_scratch_floats(&t));
        for (long i = 0; i < K; i++) x[i] = kref_uniform();
        for (long n = 0; n < N; n++) bias[n] = kref_uniform();
        for (int ii = 0; ii < k_n_levels; ii++) {
            CHECK(tr_cpu_force(k_levels[ii]));
            const float *prep = tr_matvec_prepare(&t, x, buf);
            for (long n0 = 0; n0 < N; n0 += 37) /* odd chunks: Q4_K/Q5_K rows in fours */
                tr_matvec_rows(&t, x, prep, R + n0, n0, n0 + 37 < N ? n0 + 37 : N, scratch);
            /* the multi-row form (where the level has it): row i of m is x's rows' bits when
             * x is row i, here every row x scaled by i + 1 against its own one-row product */
            for (int m = 1; m <= TR_MATVEC_MULTI_MAX; m++) {
                float X4[TR_MATVEC_MULTI_MAX][768], Y4[TR_MATVEC_MULTI_MAX][301], R1[301];
                float *mb = malloc(sizeof(float) * (size_t)m * tr_matvec_scratch_floats(&t));
                for (int i = 0; i < m; i++)
                    for (long k = 0; k < K; k++) X4[i][k] = x[k] * (float)(i + 1) - 0.01f * i;
                if (!tr_matvec_prepare_multi(&t, X4[0], 768, m, mb)) {
                    free(mb);
                    continue;
                }
                for (long n0 = 0; n0 < N; n0 += 37)
                    tr_matvec_rows_multi(&t, mb, m, Y4[0], 301, n0, n0 + 37 < N ? n0 + 37 : N);
                for (int i = 0; i < m; i++) {
                    const float *pr = tr_matvec_prepare(&t, X4[i], buf);
                    tr_matvec_rows(&t, X4[i], pr, R1, 0, N, scratch);
                    CHECK_MSG(memcmp(Y4[i], R1, sizeof(float) * (size_t)N) == 0,
                              "%s %s: multi-row %d of %d differs from its one-row product",
                              tr_type_name(types[ti]), tr_cpu_level_name(k_levels[ii]), i, m);
                }
                free(mb);
            }
            for (int p = 0; p < 3; p++) {
                tr_linear(pools[p], &t, NULL, x, 1, Y);
                CHECK_MSG(memcmp(Y, R, sizeof(float) * (size_t)N) == 0,
                          "%s %s, %d threads: matrix-vector differs from its rows in chunks",
                          tr_type_name(types[ti]), tr_cpu_level_name(k_levels[ii]), p + 1);
                tr_linear(pools[p], &t, bias, x, 1, Y);
                for (long n = 0; n < N; n++)
                    CHECK_MSG(Y[n] == R[n] + bias[n], "%s %s, %d threads, bias: row %ld",
                              tr_type_name(types[ti]), tr_cpu_level_name(k_levels[ii]), p + 1, n);
            }
        }
        CHECK(tr_cpu_force(k_levels[k_n_levels - 1]));
        free(w.data);
        free(w.ref);
        free(x);
        free(bias);
        free(Y);
        free(R);
        free(buf);
        free(scratch);
    }
}

/* tr_linear_group: each output equals tr_linear's bit for bit, for a group
 * of mixed weight types sharing one dispatch (M == 1) and for M > 1; bad
 * groups are refused without touching the outputs. */
static void test_group(tr_pool *pools[3]) {
    const long K = 512;
    const int types[3] = {TR_F16, TR_Q8_0, TR_Q4_K}, Ns[3] = {300, 77, 1030};
    wmat w[3];
    tr_tensor t[3];
    const tr_tensor *tp[3];
    float *X = malloc(sizeof(float) * 3 * K);
    for (long i = 0; i < 3 * K; i++) X[i] = kref_uniform();
    for (int i = 0; i < 3; i++) {
        w[i] = make_w(types[i], K, Ns[i]);
        t[i] = (tr_tensor){
            "g",      types[i], 2, {K, Ns[i], 1, 1}, w[i].row_bytes, w[i].row_bytes * (size_t)Ns[i],
            w[i].data};
        tp[i] = &t[i];
    }
    for (int ii = 0; ii < k_n_levels; ii++) {
        CHECK(tr_cpu_force(k_levels[ii]));
        for (int p = 0; p < 3; p++) {
            for (int M = 1; M <= 3; M += 2) {
                float *Y[3], *R[3];
                for (int i = 0; i < 3; i++) {
                    Y[i] = malloc(sizeof(float) * (size_t)(M * Ns[i]));
                    R[i] = malloc(sizeof(float) * (size_t)(M * Ns[i]));
                    tr_linear(pools[p], tp[i], NULL, X, M, R[i]);
                }
                tr_linear_group(pools[p], tp, 3, X, M, Y);
                for (int i = 0; i < 3; i++) {
                    CHECK_MSG(memcmp(Y[i], R[i], sizeof(float) * (size_t)(M * Ns[i])) == 0,
                              "group %s, %d threads, M %d, weight %d differs from tr_linear",
                              tr_cpu_level_name(k_levels[ii]), p + 1, M, i);
                    free(Y[i]);
                    free(R[i]);
                }
            }
        }
    }
    /* a weight of another input width is refused and noted on the pool */
    tr_tensor narrow = t[0];
    narrow.ne[0] = K / 2;
    const tr_tensor *bad[2] = {tp[0], &narrow};
    float y0 = SENTINEL, y1 = SENTINEL;
    float *Yb[2] = {&y0, &y1};
    (void)tr_pool_take_failures(pools[1]);
    tr_linear_group(pools[1], bad, 2, X, 1, Yb);
    CHECK(tr_pool_take_failures(pools[1]) != 0);
    CHECK(y0 == SENTINEL && y1 == SENTINEL);
    tr_linear_group(pools[1], bad, 0, X, 1, Yb);
    CHECK(tr_pool_take_failures(pools[1]) != 0);
    CHECK(tr_cpu_force(k_levels[k_n_levels - 1]));
    for (int i = 0; i < 3; i++) {
        free(w[i].data);
        free(w[i].ref);
    }
    free(X);
}

int main(void) {
    tr_pool *pools[3] = {tr_pool_create(1), tr_pool_create(2), tr_pool_create(3)};
    k_n_levels = tr_cpu_levels(k_levels);
    CHECK(k_n_levels >= 1 && k_levels[0] == TR_CPU_SCALAR);
    CHECK(tr_matmul_force_isa("scalar"));
    CHECK(strcmp(tr_matmul_isa(), "scalar") == 0);
    CHECK(!tr_matmul_force_isa("sse9"));
    for (size_t t = 0; t < sizeof(k_types) / sizeof(k_types[0]); t++) test_type(k_types[t], pools);
    test_large(pools[1]);
    for (size_t t = 0; t < sizeof(k_types) / sizeof(k_types[0]); t++)
        test_rows_match_single(pools, k_types[t]);
    test_blocking(pools);
    test_nt(pools[1]);
    test_nt_lhs(pools);
    test_lhs_into(pools);
    test_x_scales(pools[1]);
    test_group(pools);
    test_matvec_chunks(pools);
    CHECK(tr_matmul_force_isa(NULL));
    printf("auto isa: %s; tested:", tr_matmul_isa());
    for (int i = 0; i < k_n_levels; i++) printf(" %s", tr_cpu_level_name(k_levels[i]));
    printf("\n");
    for (int p = 0; p < 3; p++) tr_pool_free(pools[p]);
    return TEST_DONE();
}
