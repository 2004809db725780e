/* tr_matmul driver: ISA selection, blocking, packing and threading.
 *
 * GEMM (M > 1), BLIS-style: threads claim chunks of output columns (weight
 * rows, whole NR panels, at most one NC block) from an atomic counter. For
 * each NC×KC block of W a thread dequantizes and transposes the rows once
 * into an F32 panel buffer [panel][k][NR] that stays in L2, then sweeps all
 * M rows in MR tiles (each tile packed [k][MR], L1-resident) through the
 * microkernel. Every output is summed in the same k order whichever thread
 * computes it, so results are bit-identical for any thread count. When
 * there are fewer panels than threads the rows of X are split instead.
 *
 * Matrix-vector (M == 1): threads claim chunks of weight rows and stream
 * each row once through a fused dequantize+dot kernel. Small M (up to
 * TR_MM_SMALL_M, where the ISA has it): each weight row is dequantized once
 * into L1 and dotted with every row of X, which beats packing W for a
 * handful of rows. */
#include "tensor/matmul.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"
#include "util/log.h"

/* Kernel table for the active CPU level (tensor/cpu.h). */
static const tr_mm_isa *select_isa(void) {
    switch (tr_cpu_level_active()) {
#if defined(TR_CPU_X86)
    case TR_CPU_AVX512:
        return &tr_mm_isa_avx512;
    case TR_CPU_AVX2:
        return &tr_mm_isa_avx2;
#elif defined(TR_CPU_ARM64)
    case TR_CPU_NEON_DOTPROD:
        return &tr_mm_isa_neon_dotprod;
    case TR_CPU_NEON:
        return &tr_mm_isa_neon;
#endif
    default:
        return &tr_mm_isa_scalar;
    }
}

const char *tr_matmul_isa(void) {
    return select_isa()->name;
}

bool tr_matmul_force_isa(const char *isa) {
    tr_cpu_level level;
    if (!isa) {
        tr_cpu_unforce();
        return true;
    }
    return tr_cpu_level_parse(isa, &level) && tr_cpu_force(level);
}

/* ---- GEMM ---- */

typedef struct {
    const tr_mm_isa *isa;
    const tr_mm_w *w;
    const float *bias, *X;
    long M, ldx, ldy;
    float *Y;
    atomic_int failed; /* set by a thread that could not get scratch memory */
    atomic_long next;  /* first panel of the next unclaimed column chunk */
    long chunk;        /* panels per chunk */
} gemm_ctx;

static void *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* Row pitch of the pack staging buffer: 17 cache lines, so the staged rows
 * spread over L1 sets instead of aliasing (weight rows are often exactly
 * 4 KiB apart). */
#define TMP_PITCH (TR_MM_KC + 16)

/* Dequantize rows [n0, n0+nr) × k [k0, k0+kc) of W into panel layout
 * wp[k][NR], zero-padding columns nr..NR-1. Rows are first streamed
 * sequentially into tmp (nr × TMP_PITCH floats; F32 is copied too, for the
 * same aliasing reason) and then transposed in 16-deep k tiles so reads
 * and writes both stay within L1. */
static void pack_w(const gemm_ctx *c, long n0, int nr, long k0, int kc, float *wp, float *tmp) {
    const tr_mm_isa *isa = c->isa;
    const tr_mm_w *w = c->w;
    int NR = isa->nr;
    size_t off = tr_row_bytes(w->type, k0);
    for (int r = 0; r < nr; r++) {
        const uint8_t *p = w->data + (size_t)(n0 + r) * w->stride + off;
        if (w->type == TR_F32)
            memcpy(tmp + (size_t)r * TMP_PITCH, p, (size_t)kc * sizeof(float));
        else
            isa->deq(w->type, p, tmp + (size_t)r * TMP_PITCH, kc);
    }
    if (isa->transpose16 && NR % 16 == 0) {
        for (int kb = 0; kb < kc; kb += 16) {
            int kn = kc - kb < 16 ? kc - kb : 16;
            for (int rb = 0; rb < NR; rb += 16) {
                int rn = nr - rb < 0 ? 0 : nr - rb > 16 ? 16 : nr - rb;
                isa->transpose16(tmp + (size_t)rb * TMP_PITCH + kb, TMP_PITCH, rn, kn,
                                 wp + (size_t)kb * NR + rb, NR);
            }
        }
        return;
    }
    for (int kb = 0; kb < kc; kb += 16) {
        int ke = kb + 16 < kc ? kb + 16 : kc;
        for (int r = 0; r < nr; r++) {
            const float *v = tmp + (size_t)r * TMP_PITCH;
            for (int k = kb; k < ke; k++) wp[(size_t)k * NR + r] = v[k];
        }
        for (int r = nr; r < NR; r++)
            for (int k = kb; k < ke; k++) wp[(size_t)k * NR + r] = 0.0f;
    }
}

/* Rows [m0, m0+mr) × k [k0, k0+kc) of X into xp[k][MR], zero-padded. */
static void pack_x(const gemm_ctx *c, long m0, int mr, long k0, int kc, float *xp) {
    int MR = c->isa->mr;
    for (int i = 0; i < mr; i++) {
        const float *x = c->X + (m0 + i) * c->ldx + k0;
        for (int k = 0; k < kc; k++) xp[(size_t)k * MR + i] = x[k];
    }
    for (int i = mr; i < MR; i++)
        for (int k = 0; k < kc; k++) xp[(size_t)k * MR + i] = 0.0f;
}

/* Outputs rows [mb, me) × columns [nb, ne). */
static void gemm_range(const gemm_ctx *c, long mb, long me, long nb, long ne, float *wp, float *xp,
                       float *row) {
    const tr_mm_isa *isa = c->isa;
    int MR = isa->mr, NR = isa->nr;
    long K = c->w->K;
    for (long n0 = nb; n0 < ne; n0 += isa->nc) {
        long n1 = n0 + isa->nc < ne ? n0 + isa->nc : ne;
        for (long k0 = 0; k0 < K; k0 += TR_MM_KC) {
            int kc = (int)(K - k0 < TR_MM_KC ? K - k0 : TR_MM_KC);
            int np = 0;
            for (long p = n0; p < n1; p += NR, np++) {
                int nr = (int)(n1 - p < NR ? n1 - p : NR);
                pack_w(c, p, nr, k0, kc, wp + (size_t)np * kc * NR, row);
            }
            const float *bias = k0 == 0 ? c->bias : NULL;
            for (long m0 = mb; m0 < me; m0 += MR) {
                int mr = (int)(me - m0 < MR ? me - m0 : MR);
                pack_x(c, m0, mr, k0, kc, xp);
                int ip = 0;
                for (long p = n0; p < n1; p += NR, ip++) {
                    int nr = (int)(n1 - p < NR ? n1 - p : NR);
                    isa->kernel(xp, wp + (size_t)ip * kc * NR, kc, c->Y + m0 * c->ldy + p, c->ldy,
                                mr, nr, bias ? bias + p : NULL, k0 != 0);
                }
            }
        }
    }
}

/* Columns are handed out in chunks of whole panels (at most one N block)
 * claimed from an atomic counter, so a descheduled thread does not stall
 * the call; with few panels and many rows the rows are split statically
 * instead. Either way every output is computed the same way. */
static void gemm_task(void *arg, int ith, int nth) {
    gemm_ctx *c = (gemm_ctx *)arg;
    const tr_mm_isa *isa = c->isa;
    long N = c->w->N, M = c->M;
    long panels = (N + isa->nr - 1) / isa->nr;
    bool split_rows = panels < nth && M > isa->mr;
    long mb = 0, me = M;
    if (split_rows) {
        long t0, t1, tiles = (M + isa->mr - 1) / isa->mr;
        tr_split_range(tiles, ith, nth, &t0, &t1);
        mb = t0 * isa->mr;
        me = t1 * isa->mr < M ? t1 * isa->mr : M;
        if (mb >= me) return;
    }
    /* scratch sized to the problem: small products stay small */
    long kc_max = c->w->K < TR_MM_KC ? (long)c->w->K : TR_MM_KC;
    long nc_max = panels * isa->nr < isa->nc ? panels * isa->nr : isa->nc;
    float *wp = alloc_floats((size_t)(nc_max * kc_max));
    float *xp = alloc_floats((size_t)(isa->mr * kc_max));
    float *row = alloc_floats((size_t)isa->nr * TMP_PITCH);
    if (!wp || !xp || !row) {
        atomic_store(&c->failed, 1);
    } else if (split_rows) {
        gemm_range(c, mb, me, 0, N, wp, xp, row);
    } else {
        for (;;) {
            long p0 = atomic_fetch_add(&c->next, c->chunk);
            if (p0 >= panels) break;
            long p1 = p0 + c->chunk < panels ? p0 + c->chunk : panels;
            gemm_range(c, 0, M, p0 * isa->nr, p1 * isa->nr < N ? p1 * isa->nr : N, wp, xp, row);
        }
    }
    free(wp);
    free(xp);
    free(row);
}

/* ---- matrix-vector ---- */

typedef struct {
    const tr_mm_isa *isa;
    const tr_mm_w *w;
    const float *bias, *x, *xsum;
    float *y;
    atomic_int failed;
    atomic_long next; /* first row of the next unclaimed chunk */
    long chunk;
} gemv_ctx;

/* Row chunks are claimed dynamically, so a thread that the OS deschedules
 * (the cores are often shared) does not hold up the others; each row's
 * result does not depend on which thread computes it. A few chunks per
 * thread keep the per-chunk setup (x quantization for K-quants) small. */
static long row_chunk(long N, int nth) {
    long c = N / ((long)nth * 4);
    return c < 64 ? 64 : c;
}

/* Portable fallback row dot, used for types a kernel table does not fuse. */
static void rows_generic(const tr_mm_isa *isa, const tr_mm_w *w, const float *x, float *y, long n0,
                         long n1, const float *bias, float *scratch) {
    long K = (long)w->K;
    for (long n = n0; n < n1; n++) {
        const float *v = (const float *)(w->data + (size_t)n * w->stride);
        if (w->type != TR_F32) {
            isa->deq(w->type, w->data + (size_t)n * w->stride, scratch, K);
            v = scratch;
        }
        float s[8] = {0};
        long k = 0;
        for (; k + 8 <= K; k += 8)
            for (int j = 0; j < 8; j++) s[j] += v[k + j] * x[k + j];
        for (; k < K; k++) s[0] += v[k] * x[k];
        float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
        y[n - n0] = t + (bias ? bias[n] : 0.0f);
    }
}

typedef struct {
    const tr_mm_isa *isa;
    const tr_mm_w *w;
    const float *bias, *X;
    long M, ldx, ldy;
    float *Y;
    atomic_int failed;
    atomic_long next;
    long chunk;
} multi_ctx;

static void multi_task(void *arg, int ith, int nth) {
    multi_ctx *c = (multi_ctx *)arg;
    long N = (long)c->w->N;
    float *scratch = NULL;
    for (;;) {
        long n0 = atomic_fetch_add(&c->next, c->chunk);
        if (n0 >= N) break;
        long n1 = n0 + c->chunk < N ? n0 + c->chunk : N;
        if (!scratch && !(scratch = alloc_floats((size_t)c->w->K))) {
            atomic_store(&c->failed, 1);
            return;
        }
        c->isa->rows_multi(c->w, c->X, c->M, c->ldx, c->Y, c->ldy, n0, n1, c->bias, scratch);
    }
    free(scratch);
}

static void gemv_task(void *arg, int ith, int nth) {
    gemv_ctx *c = (gemv_ctx *)arg;
    long N = (long)c->w->N;
    float *scratch = NULL;
    for (;;) {
        long n0 = atomic_fetch_add(&c->next, c->chunk);
        if (n0 >= N) break;
        long n1 = n0 + c->chunk < N ? n0 + c->chunk : N;
        if (!scratch && !(scratch = alloc_floats((size_t)c->w->K))) {
            atomic_store(&c->failed, 1);
            return;
        }
        if (!c->isa->rows(c->w, c->x, c->xsum, c->y + n0, n0, n1, c->bias, scratch))
            rows_generic(c->isa, c->w, c->x, c->y + n0, n0, n1, c->bias, scratch);
    }
    free(scratch);
}

/* ---- entry points ---- */

static void oom(tr_pool *pool, const char *what) {
    TR_ERROR("%s", what);
    tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
}

static void run_matmul(tr_pool *pool, const tr_mm_w *w, const float *bias, const float *X, long M,
                       long ldx, float *Y, long ldy) {
    if (M <= 0 || w->N <= 0) return;
    const tr_mm_isa *isa = select_isa();
    if (w->K == 0) {
        for (long m = 0; m < M; m++)
            for (long n = 0; n < w->N; n++) Y[m * ldy + n] = bias ? bias[n] : 0.0f;
        return;
    }
    if (M == 1) {
        float *xsum = NULL;
        long groups = (long)(w->K / 32); /* x sums feed the K-quant min terms */
        if (groups > 0 && (w->type == TR_Q4_K || w->type == TR_Q5_K)) {
            xsum = malloc((size_t)groups * sizeof(float));
            if (!xsum) {
                oom(pool, "matmul: out of memory");
                return;
            }
            for (long g = 0; g < groups; g++) {
                float s = 0.0f;
                for (int j = 0; j < 32; j++) s += X[g * 32 + j];
                xsum[g] = s;
            }
        }
        gemv_ctx c = {
            isa, w, bias, X, xsum, Y, 0, 0, row_chunk((long)w->N, tr_pool_n_threads(pool))};
        tr_pool_run(pool, gemv_task, &c);
        free(xsum);
        if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
        return;
    }
    if (M <= TR_MM_SMALL_M && isa->rows_multi) {
        multi_ctx c = {
            isa, w, bias, X, M, ldx, ldy, Y, 0, 0, row_chunk((long)w->N, tr_pool_n_threads(pool))};
        tr_pool_run(pool, multi_task, &c);
        if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
        return;
    }
    /* about two chunks per thread, at most one N block each */
    int nth = tr_pool_n_threads(pool);
    long panels = (w->N + isa->nr - 1) / isa->nr, per = (panels + 2L * nth - 1) / (2L * nth);
    long chunk = per < isa->nc / isa->nr ? per : isa->nc / isa->nr;
    gemm_ctx c = {isa, w, bias, X, M, ldx, ldy, Y, 0, 0, chunk < 1 ? 1 : chunk};
    tr_pool_run(pool, gemm_task, &c);
    if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
}

void tr_matmul(tr_pool *pool, const tr_tensor *W, const float *bias, const float *X, int M, int ldx,
               float *Y, int ldy) {
    if (!W || !tr_type_valid(W->type) || W->ne[0] % tr_type_block(W->type) != 0) {
        TR_ERROR("matmul: unsupported weight %s (type %s)", W && W->name ? W->name : "?",
                 W ? tr_type_name(W->type) : "?");
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    tr_mm_w w = {W->type, (const uint8_t *)W->data, W->nb1, W->ne[0], W->ne[1]};
    size_t rb = tr_row_bytes(W->type, W->ne[0]);
    if (w.stride == 0) w.stride = rb;
    if (w.stride < rb || !W->data) {
        TR_ERROR("matmul: weight %s has row stride %zu < row size %zu or no data",
                 W->name ? W->name : "?", w.stride, rb);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    run_matmul(pool, &w, bias, X, M, ldx, Y, ldy);
}

void tr_matmul_f32_nt(tr_pool *pool, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc, int M, int N, int K) {
    tr_mm_w w = {TR_F32, (const uint8_t *)B, (size_t)ldb * sizeof(float), K, N};
    run_matmul(pool, &w, NULL, A, M, lda, C, ldc);
}
