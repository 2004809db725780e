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
 * AVX2 uses the BLIS loop order instead, with block sizes taken from the
 * host's cache sizes (see "blocking" below): per KC×NC block of W (packed
 * once), X is packed MC rows at a time into an L2-resident buffer, and each
 * KC×NR W panel stays in L1 while every MR tile of that X block passes it.
 * The k order per output is still fixed. (AVX-512 and scalar keep the
 * order above with their fixed TR_MM_KC × nc blocks.)
 *
 * Q4_K / Q5_K weights on a level with an integer GEMM (AVX-512, AVX2, NEON
 * dot product), and Q8_0 on AVX-512, NEON dot product and AVX2 with
 * AVX-VNNI, take that instead
 * (matmul_qgemm.c): X quantized to int8 once per call (two codes per
 * element for Q8_0), the codes packed as bytes, several times the F32
 * GEMM's multiply-adds per instruction.
 *
 * Matrix-vector (M == 1): threads claim chunks of weight rows and stream
 * each row once through a fused dequantize+dot kernel. Small M (up to
 * TR_MM_SMALL_M): the level's few-row integer dots, or blocks of weight
 * rows through the matrix-vector path once per row of X while in cache;
 * either way each row of the product has the bits of that row alone. */
#include "tensor/matmul.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- blocking ---- */

/* Block sizes of one GEMM call. */
typedef struct {
    int kc; /* K block: a multiple of every block size, at most TR_MM_KC */
    int mc; /* X rows per packed block, a multiple of MR; 0: X-tile-outer order */
    int nc; /* W columns per packed block, a multiple of NR */
} mm_blocking;

/* One cache level's size in bytes as the C library reports it, else `dflt`
 * (also where the report is implausible: some hypervisors claim 256 MiB of
 * L3). */
static long cache_bytes(int level, long dflt, long most) {
    long v = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) &&                           \
    defined(_SC_LEVEL3_CACHE_SIZE)
    v = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                             : _SC_LEVEL3_CACHE_SIZE);
#endif
    if (v <= 0) return dflt;
    return v < most ? v : most;
}

/* AVX2 (16 ymm registers, a 6×16 tile): BLIS-style
 * sizes: a KC×NR W panel fills half of L1d (the other half holds the X
 * tile streaming past it and the output tile), an MC×KC block of packed X
 * half of L2, and a KC×NC block of W at most a thread's share of half of
 * L3. KC is rounded down to a multiple of 256 (the K-quant block) and kept
 * at most TR_MM_KC; but a K that fits a panel of up to 3/4 of L1d runs as
 * one block: a short second K block (384 = 256 + 128) costs another pass
 * that reads and rewrites all of Y for little work (measured: 3000×384×1536
 * F32 about 10% faster in one pass). Defaults where the host says nothing:
 * 32 KiB L1d, 512 KiB L2, 8 MiB L3. */
static mm_blocking blocking_cache(const tr_mm_isa *isa, int nth, long K, int type) {
    long l1 = cache_bytes(1, 32L << 10, 1L << 20), l2 = cache_bytes(2, 512L << 10, 8L << 20);
    long l3 = cache_bytes(3, 8L << 20, 32L << 20);
    long panel_k = (long)isa->nr * (long)sizeof(float);
    long kc = l1 / 2 / panel_k / 256 * 256;
    kc = kc < 256 ? 256 : kc > TR_MM_KC ? TR_MM_KC : kc;
    long unit = tr_type_block(type) < 16 ? 16 : tr_type_block(type); /* pack depth, type block */
    long k_one = (K + unit - 1) / unit * unit;
    if (K > kc && k_one <= l1 * 3 / 4 / panel_k && k_one <= TR_MM_KC) kc = k_one;
    long mc = l2 / 2 / (kc * (long)sizeof(float)) / isa->mr * isa->mr;
    if (mc < isa->mr) mc = isa->mr;
    long nc = l3 / 2 / (nth > 0 ? nth : 1) / (kc * (long)sizeof(float)) / isa->nr * isa->nr;
    nc = nc < 4L * isa->nr ? 4L * isa->nr : nc > 4096 ? 4096 : nc;
    return (mm_blocking){(int)kc, (int)mc, (int)nc};
}

/* Which tables take the cache-sized blocks: by name, so this file needs no
 * symbol of a table that another architecture's build leaves out. */
static mm_blocking blocking_for(const tr_mm_isa *isa, int nth, const tr_mm_w *w) {
    if (strcmp(isa->name, "avx2") == 0) return blocking_cache(isa, nth, (long)w->K, w->type);
    return (mm_blocking){TR_MM_KC, 0, isa->nc}; /* AVX-512, scalar: fixed blocks */
}

/* ---- GEMM ---- */

/* Packed W a part holds at once (256 KiB: half an L2): bounds a chunk's
 * panels (run_matmul). */
#define GEMM_PANEL_FLOATS (64L * 1024)

typedef struct {
    const tr_mm_isa *isa;
    const tr_mm_w *w;
    const float *bias, *X;
    long M, ldx, ldy;
    float *Y;
    atomic_int failed; /* set by a thread that could not get scratch memory */
    atomic_long next;  /* first panel of the next unclaimed column chunk */
    long chunk;        /* panels per chunk */
    mm_blocking blk;
    const float *xpre; /* X packed once for the call (prepack_x), or NULL */
    long mpad;         /* rows of xpre: M rounded up to MR */
    float *panels;     /* per-part scratch kept by the pool (panel_floats each), or NULL */
    size_t panel_floats;
    long kb, ke; /* the K range of this pass (all of K, or one K block: see run_matmul) */
    long kx;     /* first K column xpre holds */
} gemm_ctx;

static void *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* Row pitch of the pack staging buffer: 17 cache lines, so the staged rows
 * spread over L1 sets instead of aliasing (weight rows are often exactly
 * 4 KiB apart). */
#define TMP_PITCH (TR_MM_KC + 16)

#define PACK_AHEAD 8 /* rows of W prefetched ahead of the cache-blocked packing */

/* Dequantize rows [n0, n0+nr) × k [k0, k0+kc) of W into panel layout
 * wp[k][NR], zero-padding columns nr..NR-1. Rows are first streamed
 * sequentially into tmp (nr × TMP_PITCH floats; F32 is copied too, for the
 * same aliasing reason) and then transposed in 16-deep k tiles so reads
 * and writes both stay within L1. Where the level widens a type inside its
 * transpose (pack16: F16 and Q8_0 on AVX-512), the rows go straight from
 * the weight into the panel instead (no staging pass: 183-row products spent
 * a fifth of their kernel time packing). */
static void pack_w(const gemm_ctx *c, long n0, int nr, long k0, int kc, float *wp, float *tmp,
                   long pf_end) {
    const tr_mm_isa *isa = c->isa;
    const tr_mm_w *w = c->w;
    int NR = isa->nr;
    size_t off = tr_row_bytes(w->type, k0), seg = tr_row_bytes(w->type, kc);
    if (isa->pack16 && NR % 16 == 0 && k0 % 16 == 0 &&
        (w->type == TR_F16 || w->type == TR_Q8_0)) { /* widened inside the transpose */
        for (int rb = 0; rb < NR; rb += 16) {
            int rn = nr - rb < 0 ? 0 : nr - rb > 16 ? 16 : nr - rb;
            const uint8_t *src = w->data + (size_t)(n0 + rb) * w->stride;
            for (int kb = 0; kb < kc; kb += 16) {
                int kn = kc - kb < 16 ? kc - kb : 16;
                if (!isa->pack16(w->type, src, w->stride, k0 + kb, rn, kn,
                                 wp + (size_t)kb * NR + rb, NR))
                    break; /* not reached: the types are checked above */
            }
        }
        return;
    }
    for (int r = 0; r < nr; r++) {
        const uint8_t *p = w->data + (size_t)(n0 + r) * w->stride + off;
        /* A KC segment of a row is only a few cache lines, too short for
         * the hardware prefetcher to pick up: fetch the segment PACK_AHEAD
         * rows on while this one converts (rows below pf_end only). */
        if (n0 + r + PACK_AHEAD < pf_end)
            for (size_t o = 0; o < seg; o += 64)
                __builtin_prefetch(p + PACK_AHEAD * w->stride + o, 0, 3);
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
    if (mr == 6 && MR == 6) { /* full AVX2 tile: contiguous writes, six read streams */
        const float *x0 = c->X + m0 * c->ldx + k0;
        long ld = c->ldx;
        for (int k = 0; k < kc; k++, xp += 6) {
            xp[0] = x0[k];
            xp[1] = x0[ld + k];
            xp[2] = x0[2 * ld + k];
            xp[3] = x0[3 * ld + k];
            xp[4] = x0[4 * ld + k];
            xp[5] = x0[5 * ld + k];
        }
        return;
    }
    /* the AVX-512 tile: 16-deep k blocks transposed in registers (rows past
     * mr come out zero), then 12 floats per k (a fixed-size copy) */
    if (c->isa->transpose16 && MR == 12) {
        _Alignas(64) float t[16 * 16];
        const float *x0 = c->X + m0 * c->ldx + k0;
        for (int kb = 0; kb < kc; kb += 16) {
            int kn = kc - kb < 16 ? kc - kb : 16;
            c->isa->transpose16(x0 + kb, c->ldx, mr, kn, t, 16);
            for (int k = 0; k < kn; k++)
                memcpy(xp + (size_t)(kb + k) * 12, t + k * 16, sizeof(float) * 12);
        }
        return;
    }
    for (int i = 0; i < mr; i++) {
        const float *x = c->X + (m0 + i) * c->ldx + k0;
        for (int k = 0; k < kc; k++) xp[(size_t)k * MR + i] = x[k];
    }
    for (int i = mr; i < MR; i++)
        for (int k = 0; k < kc; k++) xp[(size_t)k * MR + i] = 0.0f;
}

/* X packed once per call when several column chunks would each pack it
 * again (one pass of M×K instead of one per chunk): layout [K block][tile]
 * [kc][MR], the K blocks of the range functions (kstep deep), so the tiles
 * of one block are contiguous exactly as pack_x leaves them in xp. */
static const float *xpre_block(const gemm_ctx *c, long m0, long k0, int kc) {
    return c->xpre + (size_t)(k0 - c->kx) * (size_t)c->mpad +
           (size_t)(m0 / c->isa->mr) * kc * c->isa->mr;
}

typedef struct {
    const gemm_ctx *c;
    float *dst;
    long kstep;
    long kb, ke; /* columns packed (ke 0: to K) */
} prepack_ctx;

/* Packs X's columns [kb, ke) (whole K blocks from kb) into dst. */
static void prepack_task(void *arg, int ith, int nth) {
    const prepack_ctx *p = (const prepack_ctx *)arg;
    const gemm_ctx *c = p->c;
    long K = (long)c->w->K, MR = c->isa->mr, tiles = c->mpad / MR;
    long ke = p->ke > 0 ? p->ke : K;
    long kblocks = (ke - p->kb + p->kstep - 1) / p->kstep, u0, u1;
    tr_split_range(kblocks * tiles, ith, nth, &u0, &u1);
    for (long u = u0; u < u1; u++) {
        long k0 = p->kb + u / tiles * p->kstep, m0 = u % tiles * MR;
        int kc = (int)(ke - k0 < p->kstep ? ke - k0 : p->kstep);
        int mr = (int)(c->M - m0 < MR ? c->M - m0 : MR);
        pack_x(c, m0, mr, k0, kc,
               p->dst + (size_t)(k0 - p->kb) * (size_t)c->mpad + (size_t)(m0 / MR) * kc * MR);
    }
}

/* BLIS order, outputs rows [mb, me) × columns [nb, ne): xp holds MC rows
 * as MR tiles [tile][k][MR]. */
static void gemm_range_blis(const gemm_ctx *c, long mb, long me, long nb, long ne, float *wp,
                            float *xp, float *row) {
    const tr_mm_isa *isa = c->isa;
    int MR = isa->mr, NR = isa->nr, KC = c->blk.kc, MC = c->blk.mc, NC = c->blk.nc;
    long K = c->w->K;
    for (long n0 = nb; n0 < ne; n0 += NC) {
        long n1 = n0 + NC < ne ? n0 + NC : ne;
        for (long k0 = c->kb; k0 < c->ke; k0 += KC) {
            int kc = (int)(K - k0 < KC ? K - k0 : KC);
            int np = 0;
            for (long p = n0; p < n1; p += NR, np++) {
                int nr = (int)(n1 - p < NR ? n1 - p : NR);
                pack_w(c, p, nr, k0, kc, wp + (size_t)np * kc * NR, row, n1);
            }
            const float *bias = k0 == 0 ? c->bias : NULL;
            for (long m0 = mb; m0 < me; m0 += MC) {
                long m1 = m0 + MC < me ? m0 + MC : me;
                if (c->xpre) {
                    xp = (float *)xpre_block(c, m0, k0, kc);
                } else {
                    int nt = 0;
                    for (long t = m0; t < m1; t += MR, nt++)
                        pack_x(c, t, (int)(m1 - t < MR ? m1 - t : MR), k0, kc,
                               xp + (size_t)nt * kc * MR);
                }
                int ip = 0;
                for (long p = n0; p < n1; p += NR, ip++) {
                    int nr = (int)(n1 - p < NR ? n1 - p : NR);
                    const float *wpp = wp + (size_t)ip * kc * NR;
                    const float *bp = bias ? bias + p : NULL;
                    int it = 0;
                    for (long t = m0; t < m1; t += MR, it++) {
                        int mr = (int)(m1 - t < MR ? m1 - t : MR);
                        isa->kernel(xp + (size_t)it * kc * MR, wpp, kc, c->Y + t * c->ldy + p,
                                    c->ldy, mr, nr, bp, k0 != 0);
                    }
                }
            }
        }
    }
}

/* Outputs rows [mb, me) × columns [nb, ne). */
static void gemm_range(const gemm_ctx *c, long mb, long me, long nb, long ne, float *wp, float *xp,
                       float *row) {
    const tr_mm_isa *isa = c->isa;
    int MR = isa->mr, NR = isa->nr;
    long K = c->w->K;
    for (long n0 = nb; n0 < ne; n0 += isa->nc) {
        long n1 = n0 + isa->nc < ne ? n0 + isa->nc : ne;
        for (long k0 = c->kb; k0 < c->ke; k0 += TR_MM_KC) {
            int kc = (int)(K - k0 < TR_MM_KC ? K - k0 : TR_MM_KC);
            int np = 0;
            for (long p = n0; p < n1; p += NR, np++) {
                int nr = (int)(n1 - p < NR ? n1 - p : NR);
                pack_w(c, p, nr, k0, kc, wp + (size_t)np * kc * NR, row, 0);
            }
            const float *bias = k0 == 0 ? c->bias : NULL;
            for (long m0 = mb; m0 < me; m0 += MR) {
                int mr = (int)(me - m0 < MR ? me - m0 : MR);
                if (c->xpre)
                    xp = (float *)xpre_block(c, m0, k0, kc);
                else
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

/* Scratch of one part over `rows` rows of X, in floats (each a multiple of
 * 16, so carved pieces stay 64-byte aligned): the W panels, X's tiles
 * (none when X is packed for the call) and the pack staging rows. Sized to
 * the problem: small products stay small. */
static void panel_sizes(const gemm_ctx *c, bool split_rows, long rows, size_t *nw, size_t *nx,
                        size_t *nrow) {
    const tr_mm_isa *isa = c->isa;
    /* a part packs at most one claimed chunk of panels at a time (all of
     * them where rows are split), never more than one N block */
    long panels = ((long)c->w->N + isa->nr - 1) / isa->nr;
    long cols = (split_rows || c->chunk > panels ? panels : c->chunk) * isa->nr;
    long kc_max = c->w->K < c->blk.kc ? (long)c->w->K : c->blk.kc;
    long nc_max = cols < c->blk.nc ? cols : c->blk.nc;
    long m_pad = (rows + isa->mr - 1) / isa->mr * isa->mr;
    long mc_max = c->blk.mc <= 0 ? isa->mr : m_pad < c->blk.mc ? m_pad : c->blk.mc;
    *nw = (size_t)(nc_max * kc_max + 15) / 16 * 16;
    *nx = c->xpre ? 0 : (size_t)(mc_max * kc_max + 15) / 16 * 16;
    *nrow = ((size_t)isa->nr * TMP_PITCH + 15) / 16 * 16;
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
    bool blis = c->blk.mc > 0;
    size_t nw, nx, nrow;
    panel_sizes(c, split_rows, me - mb, &nw, &nx, &nrow);
    float *wp, *xp, *row;
    if (c->panels) { /* the pool's, carved per part */
        wp = c->panels + (size_t)ith * c->panel_floats;
        xp = nx ? wp + nw : NULL;
        row = wp + nw + nx;
    } else {
        wp = alloc_floats(nw);
        xp = nx ? alloc_floats(nx) : NULL;
        row = alloc_floats(nrow);
    }
    void (*range)(const gemm_ctx *, long, long, long, long, float *, float *, float *) =
        blis ? gemm_range_blis : gemm_range;
    if (!wp || (!xp && !c->xpre) || !row) {
        atomic_store(&c->failed, 1);
    } else if (split_rows) {
        range(c, mb, me, 0, N, wp, xp, row);
    } else {
        for (;;) {
            long p0 = atomic_fetch_add(&c->next, c->chunk);
            if (p0 >= panels) break;
            long p1 = p0 + c->chunk < panels ? p0 + c->chunk : panels;
            range(c, 0, M, p0 * isa->nr, p1 * isa->nr < N ? p1 * isa->nr : N, wp, xp, row);
        }
    }
    if (!c->panels) {
        free(wp);
        free(xp);
        free(row);
    }
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
    const tr_mm_xq *xq; /* x prepared once for the level's integer rows (else NULL) */
} gemv_ctx;

/* Row chunks are claimed dynamically, so a thread that the OS deschedules
 * (the cores are often shared) does not hold up the others; each row's
 * result does not depend on which thread computes it. A few chunks per
 * thread keep the per-chunk setup small. A multiple of 16 rows: two
 * threads never write one cache line of y, and the AVX-512 K-quant dots
 * (four rows at a time) get no short tail inside the matrix. */
static long row_chunk(long N, int nth) {
    long c = N / ((long)nth * 4);
    return c < 64 ? 64 : (c + 15) / 16 * 16;
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
    const float *bias, *X, *xsum; /* xsum: row i's group sums at xsum + i * (K / 32) */
    long M, ldx, ldy;
    float *Y;
    atomic_int failed;
    atomic_long next;
    long chunk;
    const tr_mm_xq *xq; /* the level's integer rows: X quantized once (else NULL) */
} multi_ctx;

/* Weight rows per block of the few-row path: about 16 KiB, so a block is
 * still in L1 when the next row of X reads it. */
static long multi_block_rows(const tr_mm_w *w) {
    long r = (long)(16384 / (w->stride ? w->stride : 1));
    return r < 1 ? 1 : r;
}

/* A few rows of X: the level's integer dots (each weight row read once for
 * all rows of X), or else each block of weight rows through the one-row
 * path once per row of X while the block is in cache. Either way row i of
 * the product has the bits tr_matmul gives X's row i alone, on every level
 * and for every type, so a batched step (or the verify step of
 * speculative decoding) decodes exactly as its rows would one by one. */
static void multi_task(void *arg, int ith, int nth) {
    multi_ctx *c = (multi_ctx *)arg;
    const long N = (long)c->w->N, K = (long)c->w->K, blk = multi_block_rows(c->w);
    float *scratch = NULL;
    for (;;) {
        long n0 = atomic_fetch_add(&c->next, c->chunk);
        if (n0 >= N) break;
        long n1 = n0 + c->chunk < N ? n0 + c->chunk : N;
        if (c->xq) {
            c->isa->rows_int8_multi(c->w, c->xq, (int)c->M, c->Y, c->ldy, n0, n1, c->bias);
            continue;
        }
        /* F16 where the level dots a row as its widening: a block widened
         * once (blk rows, then the rows' own K floats of scratch) and dotted
         * as F32 by every row of X */
        const bool widen = c->isa->f16_widen && c->w->type == TR_F16;
        if (!scratch && !(scratch = alloc_floats((size_t)K * (widen ? (size_t)blk + 1 : 1)))) {
            atomic_store(&c->failed, 1);
            return;
        }
        for (long b0 = n0; b0 < n1; b0 += blk) {
            const long b1 = b0 + blk < n1 ? b0 + blk : n1;
            if (widen) {
                for (long r = b0; r < b1; r++)
                    c->isa->deq(TR_F16, c->w->data + (size_t)r * c->w->stride,
                                scratch + (r - b0) * K, K);
                const tr_mm_w fw = {TR_F32, (const uint8_t *)scratch, (size_t)K * sizeof(float), K,
                                    b1 - b0};
                for (long i = 0; i < c->M; i++)
                    c->isa->rows(&fw, c->X + i * c->ldx, NULL, c->Y + i * c->ldy + b0, 0, b1 - b0,
                                 c->bias ? c->bias + b0 : NULL, scratch + blk * K);
                continue;
            }
            for (long i = 0; i < c->M; i++) {
                const float *x = c->X + i * c->ldx, *xs = c->xsum ? c->xsum + i * (K / 32) : NULL;
                float *y = c->Y + i * c->ldy + b0;
                if (!c->isa->rows(c->w, x, xs, y, b0, b1, c->bias, scratch))
                    rows_generic(c->isa, c->w, x, y, b0, b1, c->bias, scratch);
            }
        }
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
        if (c->xq) {
            c->isa->rows_int8(c->w, c->xq, c->y + n0, n0, n1, c->bias);
            continue;
        }
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

/* Sums of x over each 32-element group, which feed the K-quant min terms
 * (*xsum stays NULL when no K-quant weight reads x). False on OOM. */
static bool x_group_sums(tr_pool *pool, const float *X, long M, long ldx, long K, bool kquant,
                         float **xsum) {
    long groups = K / 32;
    *xsum = NULL;
    if (!kquant || groups <= 0) return true;
    if (!(*xsum = malloc((size_t)(M * groups) * sizeof(float)))) {
        oom(pool, "matmul: out of memory");
        return false;
    }
    for (long i = 0; i < M; i++)
        for (long g = 0; g < groups; g++) {
            float s = 0.0f;
            for (int j = 0; j < 32; j++) s += X[i * ldx + g * 32 + j];
            (*xsum)[i * groups + g] = s;
        }
    return true;
}

/* The M rows of X quantized once for the level's integer dots
 * (tr_mm_isa.quant_x_rows) into one allocation that *buf takes (free it);
 * false where the type or level has none, or on OOM (the caller then takes
 * its float path, which quantizes per chunk if at all). */
static bool prepare_xq(const tr_mm_isa *isa, const tr_mm_w *w, const float *X, long ldx, long M,
                       tr_mm_xq *xq, void **buf) {
    const bool int8 =
        w->type == TR_Q8_0 || w->type == TR_Q4_K || w->type == TR_Q5_K || w->type == TR_Q6_K;
    *buf = NULL;
    if (!int8 || !isa->quant_x_rows) return false;
    const size_t K = (size_t)w->K, m = (size_t)M; /* K: a multiple of the type block */
    /* scales: up to K / 16 floats per row (tr_mm_xq) */
    void *p = malloc(sizeof(float) * m * (K / 16) + m * K + sizeof(int16_t) * m * (K / 16));
    if (!p) return false;
    xq->s = (float *)p;
    xq->q = (int8_t *)(xq->s + m * (K / 16));
    xq->bsum = (int16_t *)(xq->q + m * K);
    if (!isa->quant_x_rows(w->type, X, ldx, M, (long)K, xq)) {
        free(p);
        return false;
    }
    *buf = p;
    return true;
}

/* A single-threaded GEMM's scratch from its caller (tr_matmul_f32_nt_buf):
 * buf of n floats, or (buf NULL) a query: need gets the floats it takes. */
typedef struct {
    float *buf;
    size_t n, need;
} mm_scratch;

/* X of a GEMM packed once for several calls (tr_matmul_lhs_pack). */
struct tr_mm_lhs {
    const tr_mm_isa *isa; /* the table it was packed for */
    const float *A;       /* unpacked, for calls that split rows (NULL: the packed copy) */
    long M, K, lda, mpad;
    int kc;      /* K block of the layout */
    float *data; /* [K block][tile][kc][MR], as prepack_task writes */
    bool owned;  /* data is freed with the handle */
};

/* Rows of X for the integer GEMM (tr_mm_qgemm_run): in place, or gathered
 * from a packed copy ([K block][tile][kc][MR], as prepack_task writes). */
typedef struct {
    const float *X;
    long ldx;
} x_plain;

static const float *x_row_plain(const void *ctx, long m, float *tmp) {
    const x_plain *x = (const x_plain *)ctx;
    (void)tmp;
    return x->X + m * x->ldx;
}

static const float *x_row_packed(const void *ctx, long m, float *tmp) {
    const tr_mm_lhs *A = (const tr_mm_lhs *)ctx;
    const long MR = A->isa->mr;
    for (long k0 = 0; k0 < A->K; k0 += A->kc) {
        const long kc = A->K - k0 < A->kc ? A->K - k0 : A->kc;
        const float *src =
            A->data + (size_t)k0 * (size_t)A->mpad + (size_t)(m / MR * kc * MR) + (size_t)(m % MR);
        for (long k = 0; k < kc; k++) tmp[k0 + k] = src[k * MR];
    }
    return tmp;
}

static void run_matmul(tr_pool *pool, const tr_mm_w *w, const float *bias, const float *X, long M,
                       long ldx, float *Y, long ldy, const tr_mm_lhs *pre, mm_scratch *scr) {
    if (M <= 0 || w->N <= 0) return;
    const tr_mm_isa *isa = select_isa();
    if (w->K == 0) {
        for (long m = 0; m < M; m++)
            for (long n = 0; n < w->N; n++) Y[m * ldy + n] = bias ? bias[n] : 0.0f;
        return;
    }
    if (M == 1) {
        gemv_ctx c = {
            isa, w, bias, X, NULL, Y, 0, 0, row_chunk((long)w->N, tr_pool_n_threads(pool)), NULL};
        /* the integer-dot types: x quantized once for the call (by the
         * caller, before the dispatch) rather than once per claimed chunk */
        tr_mm_xq xqv;
        void *xq = NULL;
        float *xsum = NULL;
        if (isa->rows_int8 && prepare_xq(isa, w, X, ldx, 1, &xqv, &xq))
            c.xq = &xqv;
        else if (!x_group_sums(pool, X, 1, ldx, (long)w->K,
                               w->type == TR_Q4_K || w->type == TR_Q5_K, &xsum))
            return;
        c.xsum = xsum;
        tr_pool_run(pool, gemv_task, &c);
        free(xq);
        free(xsum);
        if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
        return;
    }
    if (M <= TR_MM_SMALL_M) {
        multi_ctx c = {isa, w,   bias, X, NULL, M,
                       ldx, ldy, Y,    0, 0,    row_chunk((long)w->N, tr_pool_n_threads(pool)),
                       NULL};
        void *xq = NULL;
        float *xsum = NULL;
        /* the integer-dot types where the level has few-row dots: the rows
         * of X quantized once for the call, then dots that read each weight
         * row once for all of them (the one-row path per row of X made a
         * batched LLM step compute-bound: no faster than one row at a time) */
        tr_mm_xq xqv;
        if (prepare_xq(isa, w, X, ldx, M, &xqv, &xq)) c.xq = &xqv;
        if (!c.xq && !x_group_sums(pool, X, M, ldx, (long)w->K,
                                   w->type == TR_Q4_K || w->type == TR_Q5_K, &xsum)) {
            free(xq);
            return;
        }
        c.xsum = xsum;
        tr_pool_run(pool, multi_task, &c);
        free(xq);
        free(xsum);
        if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
        return;
    }
    /* the K-quants where the level has an integer GEMM: X's rows read
     * where they are, or gathered from the caller's packed copy (the same
     * values, so tr_matmul_lhs gives tr_matmul's bits) */
    if (tr_mm_qgemm_takes(isa, w->type) && !scr) {
        const bool packed = !X && pre && pre->isa == isa && pre->M == M && pre->K == (long)w->K;
        if (X || (packed && pre->A)) {
            const x_plain xp = {X ? X : pre->A, X ? ldx : pre->lda};
            tr_mm_qgemm_run(pool, isa, w, bias, x_row_plain, &xp, M, Y, ldy);
            return;
        }
        if (packed) {
            tr_mm_qgemm_run(pool, isa, w, bias, x_row_packed, pre, M, Y, ldy);
            return;
        }
    }
    /* about two chunks per thread, at most one N block each, and at most
     * GEMM_PANEL_FLOATS of packed W (a part's panels: more chunks for a
     * wide W cost one more pass over X's packed tiles each, from cache) */
    int nth = tr_pool_n_threads(pool);
    mm_blocking blk = blocking_for(isa, nth, w);
    long panels = (w->N + isa->nr - 1) / isa->nr, per = (panels + 2L * nth - 1) / (2L * nth);
    long chunk = per < blk.nc / isa->nr ? per : blk.nc / isa->nr;
    const long cap = GEMM_PANEL_FLOATS / ((long)isa->nr * blk.kc);
    if (chunk > cap) chunk = cap;
    gemm_ctx c = {isa, w,    bias, X,    M, ldx, ldy,        Y, 0, 0, chunk < 1 ? 1 : chunk,
                  blk, NULL, 0,    NULL, 0, 0,   (long)w->K, 0};
    bool split_rows = panels < nth && M > isa->mr; /* as gemm_task decides */
    /* packed by the caller, in this call's layout (rows split at whole MR
     * tiles read it as well, where the caller no longer keeps A) */
    const bool use_pre = pre && (!split_rows || !pre->A) && pre->isa == isa && pre->kc == blk.kc &&
                         pre->M == M && pre->K == (long)w->K;
    if (!X && !use_pre && !(scr && !scr->buf)) { /* packed for another layout, nothing to read */
        TR_ERROR("matmul: packed rows do not fit this product (K %lld)", (long long)w->K);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    /* more than one chunk packs X: pack it once per K block instead, and
     * run the block's products before packing the next (each output sees
     * the same K blocks in the same order, so the same bits; the pool's
     * copy is M x KC, not M x K) */
    float *kblock = NULL;
    const long K = (long)w->K, kstep = blk.kc;
    if (use_pre) {
        c.mpad = pre->mpad;
        c.xpre = pre->data;
    } else if (!split_rows && panels > c.chunk) {
        c.mpad = (M + isa->mr - 1) / isa->mr * isa->mr;
        kblock = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_X,
                                      (size_t)c.mpad * (size_t)(K < kstep ? K : kstep));
        c.xpre = kblock; /* else each chunk packs its own, as before */
    }
    /* every part's panels from the pool's slot (sized for all M rows, the
     * most a part takes); else each part allocates its own */
    size_t nw, nx, nrow;
    panel_sizes(&c, split_rows, M, &nw, &nx, &nrow);
    c.panel_floats = nw + nx + nrow;
    if (scr) { /* the caller's (one part: no pool), or just the size asked */
        scr->need = c.panel_floats;
        if (!scr->buf) return;
        if (!pool && scr->n >= c.panel_floats) c.panels = scr->buf;
    } else {
        c.panels =
            tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_PANELS, c.panel_floats * (size_t)nth);
    }
    if (!kblock) {
        tr_pool_run(pool, gemm_task, &c);
    } else {
        for (long kb = 0; kb < K; kb += kstep) {
            c.kb = c.kx = kb;
            c.ke = kb + kstep < K ? kb + kstep : K;
            prepack_ctx p = {&c, kblock, kstep, kb, c.ke};
            tr_pool_run(pool, prepack_task, &p);
            atomic_store(&c.next, 0);
            tr_pool_run(pool, gemm_task, &c);
        }
    }
    if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
}

/* The kernel view of a weight tensor; false (logged, noted on the pool) when
 * the type or layout is not one the kernels take. */
static bool weight_view(tr_pool *pool, const tr_tensor *W, tr_mm_w *w) {
    if (!W || !tr_type_valid(W->type) || W->ne[0] % tr_type_block(W->type) != 0) {
        TR_ERROR("matmul: unsupported weight %s (type %s)", W && W->name ? W->name : "?",
                 W ? tr_type_name(W->type) : "?");
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return false;
    }
    *w = (tr_mm_w){W->type, (const uint8_t *)W->data, W->nb1, W->ne[0], W->ne[1]};
    size_t rb = tr_row_bytes(W->type, W->ne[0]);
    if (w->stride == 0) w->stride = rb;
    if (w->stride < rb || !W->data) {
        TR_ERROR("matmul: weight %s has row stride %zu < row size %zu or no data",
                 W->name ? W->name : "?", w->stride, rb);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return false;
    }
    return true;
}

void tr_matmul(tr_pool *pool, const tr_tensor *W, const float *bias, const float *X, int M, int ldx,
               float *Y, int ldy) {
    tr_mm_w w;
    if (weight_view(pool, W, &w)) run_matmul(pool, &w, bias, X, M, ldx, Y, ldy, NULL, NULL);
}

/* ---- grouped matrix-vector ---- */

typedef struct {
    const tr_mm_isa *isa;
    tr_mm_w w[TR_LINEAR_GROUP_MAX];
    float *y[TR_LINEAR_GROUP_MAX];
    long chunk[TR_LINEAR_GROUP_MAX], first[TR_LINEAR_GROUP_MAX + 1]; /* chunk ids per weight */
    int n;
    const float *x, *xsum;
    const tr_mm_xq *xq[TR_LINEAR_GROUP_MAX]; /* x prepared once per weight type, or NULL */
    atomic_int failed;
    atomic_long next; /* next unclaimed chunk id over all weights */
} group_ctx;

static void group_task(void *arg, int ith, int nth) {
    group_ctx *c = (group_ctx *)arg;
    float *scratch = NULL;
    (void)ith;
    (void)nth;
    for (;;) {
        long id = atomic_fetch_add(&c->next, 1);
        if (id >= c->first[c->n]) break;
        int i = 0;
        while (id >= c->first[i + 1]) i++;
        const tr_mm_w *w = &c->w[i];
        long n0 = (id - c->first[i]) * c->chunk[i], n1 = n0 + c->chunk[i];
        if (n1 > (long)w->N) n1 = (long)w->N;
        if (c->xq[i]) {
            c->isa->rows_int8(w, c->xq[i], c->y[i] + n0, n0, n1, NULL);
            continue;
        }
        if (!scratch && !(scratch = alloc_floats((size_t)w->K))) {
            atomic_store(&c->failed, 1);
            return;
        }
        if (!c->isa->rows(w, c->x, c->xsum, c->y[i] + n0, n0, n1, NULL, scratch))
            rows_generic(c->isa, w, c->x, c->y[i] + n0, n0, n1, NULL, scratch);
    }
    free(scratch);
}

void tr_linear_group(tr_pool *pool, const tr_tensor *const *W, int n, const float *X, int M,
                     float *const *Y) {
    if (n < 1 || n > TR_LINEAR_GROUP_MAX || M < 1) {
        TR_ERROR("matmul: a group of %d weights over %d rows is not supported", n, M);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    if (M > 1) { /* the GEMM paths are already one dispatch per weight */
        for (int i = 0; i < n; i++) tr_linear(pool, W[i], NULL, X, M, Y[i]);
        return;
    }
    group_ctx c = {.isa = select_isa(), .n = n, .x = X};
    const int nth = tr_pool_n_threads(pool);
    c.first[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!weight_view(pool, W[i], &c.w[i])) return;
        if (c.w[i].K != c.w[0].K || c.w[i].K == 0) {
            TR_ERROR("matmul: grouped weights %s and %s differ in input width (%lld, %lld)",
                     W[0]->name ? W[0]->name : "?", W[i]->name ? W[i]->name : "?",
                     (long long)c.w[0].K, (long long)c.w[i].K);
            tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
            return;
        }
        c.y[i] = Y[i];
        c.chunk[i] = row_chunk((long)c.w[i].N, nth);
        c.first[i + 1] = c.first[i] + ((long)c.w[i].N + c.chunk[i] - 1) / c.chunk[i];
    }
    /* the integer-dot types: x quantized once per type for the call, as
     * tr_matmul's M == 1 path does (the same rows, the same bits) */
    tr_mm_xq xqv[TR_LINEAR_GROUP_MAX];
    void *xbuf[TR_LINEAR_GROUP_MAX] = {NULL};
    bool kquant = false; /* group sums for K-quant rows that take the float x */
    for (int i = 0; i < n && c.isa->rows_int8; i++) {
        for (int j = 0; j < i && !c.xq[i]; j++)
            if (c.xq[j] && c.w[j].type == c.w[i].type) c.xq[i] = c.xq[j];
        if (!c.xq[i] && prepare_xq(c.isa, &c.w[i], X, (long)c.w[i].K, 1, &xqv[i], &xbuf[i]))
            c.xq[i] = &xqv[i];
    }
    for (int i = 0; i < n; i++)
        kquant |= !c.xq[i] && (c.w[i].type == TR_Q4_K || c.w[i].type == TR_Q5_K);
    float *xsum = NULL;
    if (kquant && !x_group_sums(pool, X, 1, (long)c.w[0].K, (long)c.w[0].K, true, &xsum)) {
        for (int i = 0; i < n; i++) free(xbuf[i]);
        return;
    }
    c.xsum = xsum;
    tr_pool_run(pool, group_task, &c);
    for (int i = 0; i < n; i++) free(xbuf[i]);
    free(xsum);
    if (atomic_load(&c.failed)) oom(pool, "matmul: out of memory for scratch");
}

/* ---- caller-threaded matrix-vector rows ---- */

bool tr_matvec_check(tr_pool *pool, const tr_tensor *W) {
    tr_mm_w w;
    return weight_view(pool, W, &w);
}

/* x quantized once for the level's one-row integer dots (rows_int8), laid
 * out in buf as prepare_xq lays out one row: K / 16 scale floats, K codes,
 * K / 16 group sums (well within tr_matvec_scratch_floats); the view of
 * it in *xq. */
static void xq_view(float *buf, long K, tr_mm_xq *xq) {
    xq->s = buf;
    xq->q = (int8_t *)(buf + K / 16);
    xq->bsum = (int16_t *)(xq->q + K);
}

static bool int8_type(int type) {
    return type == TR_Q8_0 || type == TR_Q4_K || type == TR_Q5_K || type == TR_Q6_K;
}

/* Whether tr_matvec_prepare gives W's rows the level's pre-quantized x
 * (everywhere the level has rows_int8 but the AVX2 Q8_0 path below). */
static bool prep_int8(const tr_mm_isa *isa, const tr_tensor *W) {
#if defined(TR_CPU_X86)
    if (W->type == TR_Q8_0 && tr_cpu_level_active() == TR_CPU_AVX2) return false;
#endif
    return int8_type(W->type) && isa->rows_int8 && isa->quant_x_rows;
}

const float *tr_matvec_prepare(const tr_tensor *W, const float *x, float *buf) {
    const long K = (long)W->ne[0];
    const tr_mm_isa *isa = select_isa();
    if (prep_int8(isa, W)) { /* as run_matmul's M == 1 path: quantized once */
        tr_mm_xq xq;
        xq_view(buf, K, &xq);
        if (isa->quant_x_rows(W->type, x, K, 1, K, &xq)) return buf;
    }
    if (W->type == TR_Q4_K || W->type == TR_Q5_K) { /* group sums, as x_group_sums */
        for (long g = 0; g < K / 32; g++) {
            float s = 0.0f;
            for (int j = 0; j < 32; j++) s += x[g * 32 + j];
            buf[g] = s;
        }
        return buf;
    }
#if defined(TR_CPU_X86)
    if (W->type == TR_Q8_0 && tr_cpu_level_active() == TR_CPU_AVX2) {
        tr_mm_quant_x_avx2(x, K, (int8_t *)buf, buf + (K + 3) / 4);
        return buf;
    }
#endif
    return NULL;
}

/* m rows of x quantized once, laid out as prepare_xq lays them out (row i's scales at s + i *
 * (K / 16), codes at q + i * K, group sums at bsum + i * (K / 16)); m = 1 is xq_view's layout. */
static void xq_multi_view(float *buf, long K, int m, tr_mm_xq *xq) {
    xq->s = buf;
    xq->q = (int8_t *)(buf + (size_t)m * (K / 16));
    xq->bsum = (int16_t *)(xq->q + (size_t)m * K);
}

bool tr_matvec_prepare_multi(const tr_tensor *W, const float *X, long ldx, int m, float *buf) {
    const long K = (long)W->ne[0];
    const tr_mm_isa *isa = select_isa();
    if (m < 1 || m > TR_MATVEC_MULTI_MAX || m > TR_MM_SMALL_M || !prep_int8(isa, W) ||
        !isa->rows_int8_multi)
        return false;
    tr_mm_xq xq;
    xq_multi_view(buf, K, m, &xq);
    return isa->quant_x_rows(W->type, X, ldx, m, K, &xq);
}

void tr_matvec_rows_multi(const tr_tensor *W, const float *buf, int m, float *Y, long ldy, long n0,
                          long n1) {
    size_t rb = tr_row_bytes(W->type, W->ne[0]);
    tr_mm_w w = {W->type, (const uint8_t *)W->data, W->nb1 ? W->nb1 : rb, W->ne[0], W->ne[1]};
    if (n0 >= n1) return;
    tr_mm_xq xq;
    xq_multi_view((float *)(uintptr_t)buf, (long)W->ne[0], m, &xq);
    if (m == 1) /* the levels' multi-row dots take 2..4 rows; one is xq_view's one-row layout */
        select_isa()->rows_int8(&w, &xq, Y + n0, n0, n1, NULL);
    else
        select_isa()->rows_int8_multi(&w, &xq, m, Y, ldy, n0, n1, NULL);
}

void tr_matvec_rows(const tr_tensor *W, const float *x, const float *prep, float *y, long n0,
                    long n1, float *scratch) {
    size_t rb = tr_row_bytes(W->type, W->ne[0]);
    tr_mm_w w = {W->type, (const uint8_t *)W->data, W->nb1 ? W->nb1 : rb, W->ne[0], W->ne[1]};
    const tr_mm_isa *isa = select_isa();
    if (n0 >= n1) return;
#if defined(TR_CPU_X86)
    /* prep holds the int8 x only where tr_matvec_prepare made it: AVX2 */
    if (prep && W->type == TR_Q8_0 && tr_cpu_level_active() == TR_CPU_AVX2) {
        tr_mm_rows_q8_avx2(&w, (const int8_t *)prep, prep + (W->ne[0] + 3) / 4, y, n0, n1);
        return;
    }
#endif
    if (prep && prep_int8(isa, W)) {
        tr_mm_xq xq;
        xq_view((float *)(uintptr_t)prep, (long)W->ne[0], &xq);
        isa->rows_int8(&w, &xq, y, n0, n1, NULL);
        return;
    }
    const float *xsum = W->type == TR_Q4_K || W->type == TR_Q5_K ? prep : NULL;
    if (!isa->rows(&w, x, xsum, y, n0, n1, NULL, scratch))
        rows_generic(isa, &w, x, y, n0, n1, NULL, scratch);
}

void tr_matmul_f32_nt(tr_pool *pool, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc, int M, int N, int K) {
    tr_mm_w w = {TR_F32, (const uint8_t *)B, (size_t)ldb * sizeof(float), K, N};
    run_matmul(pool, &w, NULL, A, M, lda, C, ldc, NULL, NULL);
}

size_t tr_matmul_f32_nt_scratch_floats(int M, int N, int K) {
    if (M <= TR_MM_SMALL_M || N < 1 || K < 1) return 0; /* the few-row paths: K floats, allocated */
    tr_mm_w w = {TR_F32, NULL, (size_t)K * sizeof(float), K, N};
    mm_scratch q = {NULL, 0, 0};
    run_matmul(NULL, &w, NULL, NULL, M, K, NULL, N, NULL, &q);
    return q.need;
}

void tr_matmul_f32_nt_buf(const float *A, int lda, const float *B, int ldb, float *C, int ldc,
                          int M, int N, int K, float *scratch, size_t floats) {
    tr_mm_w w = {TR_F32, (const uint8_t *)B, (size_t)ldb * sizeof(float), K, N};
    mm_scratch q = {scratch, floats, 0};
    run_matmul(NULL, &w, NULL, A, M, lda, C, ldc, NULL, scratch ? &q : NULL);
}

tr_mm_lhs *tr_matmul_lhs_pack(tr_pool *pool, const float *A, int lda, int M, int K) {
    const tr_mm_isa *isa = select_isa();
    if (M < 1 || K < 1) return NULL;
    tr_mm_w w = {TR_F32, NULL, 0, K, 1}; /* blocking reads only K and the type */
    mm_blocking blk = blocking_for(isa, tr_pool_n_threads(pool), &w);
    tr_mm_lhs *h = malloc(sizeof *h);
    long mpad = ((long)M + isa->mr - 1) / isa->mr * isa->mr;
    float *data = h ? alloc_floats((size_t)mpad * (size_t)K) : NULL;
    if (!data) {
        free(h);
        return NULL; /* the caller keeps A unpacked */
    }
    *h = (tr_mm_lhs){isa, A, M, K, lda, mpad, blk.kc, data, true};
    gemm_ctx c = {.isa = isa, .w = &w, .X = A, .M = M, .ldx = lda, .blk = blk, .mpad = mpad};
    prepack_ctx p = {&c, data, blk.kc, 0, 0};
    tr_pool_run(pool, prepack_task, &p);
    return h;
}

void tr_matmul_f32_nt_lhs(tr_pool *pool, const tr_mm_lhs *A, const float *B, int ldb, float *C,
                          int ldc, int N) {
    tr_mm_w w = {TR_F32, (const uint8_t *)B, (size_t)ldb * sizeof(float), A->K, N};
    run_matmul(pool, &w, NULL, A->A, A->M, A->lda, C, ldc, A, NULL);
}

void tr_matmul_lhs_free(tr_mm_lhs *A) {
    if (!A) return;
    if (A->owned) free(A->data);
    free(A);
}

size_t tr_matmul_lhs_floats(int M, int K) {
    if (M <= TR_MM_SMALL_M || K < 1) return 0;
    const long mr = select_isa()->mr;
    return (size_t)(((long)M + mr - 1) / mr * mr) * (size_t)K;
}

tr_mm_lhs *tr_matmul_lhs_pack_into(tr_pool *pool, const float *A, int lda, int M, int K, int type,
                                   float *data) {
    const tr_mm_isa *isa = select_isa();
    if (!data || !tr_matmul_lhs_floats(M, K) || !tr_type_valid(type)) return NULL;
    tr_mm_w w = {type, NULL, 0, K, 1}; /* blocking reads only K and the type */
    mm_blocking blk = blocking_for(isa, tr_pool_n_threads(pool), &w);
    tr_mm_lhs *h = malloc(sizeof *h);
    if (!h) return NULL;
    long mpad = ((long)M + isa->mr - 1) / isa->mr * isa->mr;
    *h = (tr_mm_lhs){isa, NULL, M, K, lda, mpad, blk.kc, data, false};
    gemm_ctx c = {.isa = isa, .w = &w, .X = A, .M = M, .ldx = lda, .blk = blk, .mpad = mpad};
    prepack_ctx p = {&c, data, blk.kc, 0, 0};
    tr_pool_run(pool, prepack_task, &p);
    return h;
}

void tr_matmul_lhs(tr_pool *pool, const tr_tensor *W, const float *bias, const tr_mm_lhs *A,
                   float *Y, int ldy) {
    tr_mm_w w;
    if (!weight_view(pool, W, &w)) return;
    if (w.K != A->K || A->A || A->M <= TR_MM_SMALL_M) {
        TR_ERROR("matmul: packed rows of %ld columns for weight %s of %lld", A->K,
                 W->name ? W->name : "?", (long long)w.K);
        tr_pool_note_failure(pool, TR_POOL_FAIL_INVALID);
        return;
    }
    run_matmul(pool, &w, bias, NULL, A->M, A->lda, Y, ldy, A, NULL);
}
