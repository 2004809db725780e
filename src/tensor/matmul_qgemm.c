/* The integer GEMM of quantized weights (Q4_K, Q5_K; Q8_0 where the level
 * has kernel8) at M > TR_MM_SMALL_M, on a level that has one
 * (tr_mm_isa.qgemm: AVX-512, AVX2, NEON dot product): the F32 GEMM widens
 * every weight to float and runs FMAs (16 multiply-adds an AVX-512
 * instruction); VNNI byte products do 64, on codes that stay 4-8 bits wide
 * plus a scale (and a min) per 32 (the arithmetic: tr_mm_qgemm in
 * matmul_internal.h).
 *
 * X is quantized once per call, its rows split over the pool. Threads then
 * claim chunks of QG_CHUNK panels (nr weight rows each) from an atomic
 * counter; per K block of QG_KC a thread packs the chunk's panels (about
 * 20 KiB each: one stays in L1 while every MR tile of X passes it, the
 * block of X stays in L2) and runs all of X's tiles past each panel. An
 * output's groups are summed in K order by one thread whatever the thread
 * count, so the bits do not depend on it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/dtype.h"
#include "tensor/matmul_internal.h"
#include "tensor/quant_internal.h"
#include "util/log.h"

#define QG_KC    512 /* K block: a multiple of 256 (the K-quant block; Q8_0 K: of 32) */
#define QG_CHUNK 4   /* panels per claim: ~80 KiB of packed W, reused by every tile */

void tr_mm_qgemm_pack_block(int type, const uint8_t *src, size_t stride, int nr, int nr_panel,
                            long b, const uint8_t **blk, uint8_t *gd) {
    static const uint8_t zero[176]; /* a missing row's block: codes, scales and mins 0 */
    const size_t bsz = type == TR_Q5_K ? 176 : 144;
    for (int c = 0; c < nr_panel; c++) blk[c] = c < nr ? src + (size_t)c * stride + b * bsz : zero;
    for (int c = 0; c < nr_panel; c++) {
        uint16_t hd, hm;
        memcpy(&hd, blk[c], 2);
        memcpy(&hm, blk[c] + 2, 2);
        const float d = tr_f16_to_f32(hd), dmin = tr_f16_to_f32(hm);
        /* all 8 scales and mins in one pass rather than one call per
         * group: at prefill sizes (39 rows) the packing is a large share of
         * the product */
        uint8_t sc[8], mn[8];
        tr_kq_scales_mins(blk[c] + 4, sc, mn);
        for (int j = 0; j < 8; j++) {
            float *f =
                (float *)(gd + (size_t)j * TR_MM_QG_GROUP_BYTES(nr_panel) + 32 * (size_t)nr_panel);
            f[c] = d * (float)sc[j];
            f[nr_panel + c] = dmin * (float)mn[j];
        }
    }
}

const tr_mm_qgemm *tr_mm_qgemm_of(const tr_mm_isa *isa) {
    if (isa->qgemm_vnni && tr_cpu_get_features()->avx_vnni) return isa->qgemm_vnni;
    return isa->qgemm;
}

bool tr_mm_qgemm_takes(const tr_mm_isa *isa, int type) {
    const tr_mm_qgemm *qg = tr_mm_qgemm_of(isa);
    return qg && (type == TR_Q4_K || (type == TR_Q5_K && qg->q5k) ||
                  (type == TR_Q8_0 && qg->kernel8 && qg->quant_row8));
}

typedef struct {
    const tr_mm_qgemm *qg;
    const tr_mm_w *w;
    const float *bias;
    const float *(*x_row)(const void *xctx, long m, float *tmp);
    const void *xctx;
    long M, ldy;
    float *Y;
    int8_t *xq;    /* [M][K] codes ([M][2K] for Q8_0: two per element) */
    float *xsc;    /* [M][K / 32][2]: xs, -xsum (Q8_0: xs, the level's second value) */
    uint8_t *pack; /* per part: part_bytes, or NULL (each part allocates) */
    size_t part_bytes;
    atomic_int failed;
    atomic_long next; /* first panel of the next unclaimed chunk */
} qg_ctx;

static void quant_task(void *arg, int ith, int nth) {
    qg_ctx *c = (qg_ctx *)arg;
    const long K = (long)c->w->K;
    long m0, m1;
    tr_split_range(c->M, ith, nth, &m0, &m1);
    if (m0 >= m1) return;
    float *tmp = malloc(sizeof(float) * (size_t)K);
    if (!tmp) {
        atomic_store(&c->failed, 1);
        return;
    }
    const bool q8 = c->w->type == TR_Q8_0;
    void (*quant_row)(const float *, long, int8_t *, float *) =
        q8 ? c->qg->quant_row8 : c->qg->quant_row;
    for (long m = m0; m < m1; m++)
        quant_row(c->x_row(c->xctx, m, tmp), K, c->xq + (size_t)m * (size_t)K * (q8 ? 2 : 1),
                  c->xsc + (size_t)m * (size_t)(K / 16));
    free(tmp);
}

/* W's bytes of panels [p0, p1) over the K block at k0 fetched into L2
 * ahead of their packing: a block's segment of a row is a few cache lines
 * far from the next row's, which the hardware prefetcher does not follow,
 * and the packing otherwise waits on each row's first line in turn (perf:
 * most of its time at the first scale byte). */
static void prefetch_block(const qg_ctx *c, long p0, long p1, long k0) {
    const tr_mm_w *w = c->w;
    const long N = (long)w->N, K = (long)w->K;
    if (p0 >= p1 || k0 >= K) return;
    const long n1 = p1 * c->qg->nr < N ? p1 * c->qg->nr : N;
    const size_t off = tr_row_bytes(w->type, k0);
    const size_t seg = tr_row_bytes(w->type, K - k0 < QG_KC ? K - k0 : QG_KC);
    for (long n = p0 * c->qg->nr; n < n1; n++) {
        const uint8_t *r = w->data + (size_t)n * w->stride + off;
        for (size_t o = 0; o < seg; o += 64) __builtin_prefetch(r + o, 0, 2);
    }
}

static void gemm_task(void *arg, int ith, int nth) {
    qg_ctx *c = (qg_ctx *)arg;
    const tr_mm_qgemm *qg = c->qg;
    const tr_mm_w *w = c->w;
    const long K = (long)w->K, N = (long)w->N, NR = qg->nr, MR = qg->mr;
    const long panels = (N + NR - 1) / NR;
    const size_t pbytes = TR_MM_QG_GROUP_BYTES(NR) * (QG_KC / 32);
    const long qw = w->type == TR_Q8_0 ? 2 : 1; /* x codes per element */
    const tr_mm_qgemm_kernel_fn kernel = w->type == TR_Q8_0                  ? qg->kernel8
                                         : w->type == TR_Q5_K && qg->kernel5 ? qg->kernel5
                                                                             : qg->kernel;
    (void)nth;
    uint8_t *pack =
        c->pack ? c->pack + (size_t)ith * c->part_bytes : aligned_alloc(64, c->part_bytes);
    if (!pack) {
        atomic_store(&c->failed, 1);
        return;
    }
    long first = -1; /* the chunk whose first block was fetched ahead, if any */
    for (;;) {
        const long p0 = atomic_fetch_add(&c->next, QG_CHUNK);
        if (p0 >= panels) break;
        const long p1 = p0 + QG_CHUNK < panels ? p0 + QG_CHUNK : panels;
        if (p0 != first) prefetch_block(c, p0, p1, 0); /* else fetched during the last chunk */
        for (long k0 = 0; k0 < K; k0 += QG_KC) {
            const int kc = (int)(K - k0 < QG_KC ? K - k0 : QG_KC);
            for (long p = p0; p < p1; p++) {
                const long n0 = p * NR;
                const int nr = (int)(N - n0 < NR ? N - n0 : NR);
                qg->pack_w(w->type, w->data + (size_t)n0 * w->stride, w->stride, nr, k0, kc,
                           pack + (size_t)(p - p0) * pbytes);
            }
            /* the next block's W arrives while the kernels run: this chunk's
             * next K block, else the chunk this thread will probably claim
             * next (a guess: the counter may move on first; harmless) */
            if (k0 + QG_KC < K) {
                prefetch_block(c, p0, p1, k0 + QG_KC);
            } else {
                const long q0 = atomic_load(&c->next);
                prefetch_block(c, q0, q0 + QG_CHUNK < panels ? q0 + QG_CHUNK : panels, 0);
                first = q0;
            }
            for (long p = p0; p < p1; p++) {
                const long n0 = p * NR;
                const int nr = (int)(N - n0 < NR ? N - n0 : NR);
                const uint8_t *wp = pack + (size_t)(p - p0) * pbytes;
                for (long m0 = 0; m0 < c->M; m0 += MR) {
                    const int mr = (int)(c->M - m0 < MR ? c->M - m0 : MR);
                    kernel(c->xq + (size_t)(m0 * K + k0) * (size_t)qw, K * qw,
                           c->xsc + (size_t)m0 * (size_t)(K / 16) + (size_t)(k0 / 16), K / 16, wp,
                           kc / 32, c->Y + m0 * c->ldy + n0, c->ldy, mr, nr,
                           c->bias ? c->bias + n0 : NULL, k0 != 0);
                }
            }
        }
    }
    if (!c->pack) free(pack);
}

void tr_mm_qgemm_run(tr_pool *pool, const tr_mm_isa *isa, const tr_mm_w *w, const float *bias,
                     const float *(*x_row)(const void *xctx, long m, float *tmp), const void *xctx,
                     long M, float *Y, long ldy) {
    const size_t K = (size_t)w->K, m = (size_t)M, qw = w->type == TR_Q8_0 ? 2 : 1;
    qg_ctx c = {.qg = tr_mm_qgemm_of(isa),
                .w = w,
                .bias = bias,
                .x_row = x_row,
                .xctx = xctx,
                .M = M,
                .ldy = ldy,
                .Y = Y};
    const int nth = tr_pool_n_threads(pool);
    c.part_bytes = TR_MM_QG_GROUP_BYTES(c.qg->nr) * (QG_KC / 32) * QG_CHUNK;
    /* X's codes and group pairs: the pool's GEMM_X slot (idle here), else
     * an allocation of our own; the panels from the GEMM_PANELS slot */
    const size_t xbytes = m * K * qw + sizeof(float) * m * (K / 16);
    float *own = NULL, *xs = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_X, (xbytes + 3) / 4);
    if (!xs) xs = own = malloc(xbytes);
    c.pack = (uint8_t *)tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_PANELS,
                                             c.part_bytes / 4 * (size_t)nth);
    if (!xs) {
        TR_ERROR("matmul: out of memory for the quantized rows (%ld x %zu)", M, K);
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
        return;
    }
    c.xsc = xs; /* the floats first: the slot is 64-byte aligned */
    c.xq = (int8_t *)(xs + m * (K / 16));
    tr_pool_run(pool, quant_task, &c);
    if (!atomic_load(&c.failed)) tr_pool_run(pool, gemm_task, &c);
    free(own);
    if (atomic_load(&c.failed)) {
        TR_ERROR("matmul: out of memory for scratch");
        tr_pool_note_failure(pool, TR_POOL_FAIL_OOM);
    }
}
