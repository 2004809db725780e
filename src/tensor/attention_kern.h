/* Flash-attention style kernels, written once against ops_vec.h and compiled
 * per ISA by attention_generic.c / attention_avx2.c / attention_avx512.c.
 *
 * tile: one head and up to TR_ATTN_BQ query rows. Q is transposed once per
 * tile; keys are visited in blocks of TR_ATTN_BK, read from the head-major
 * copy tr_attention makes when many tiles share a long K/V, else in place
 * (V copied into a padded buffer, F16 rows converted). Scores come out
 * transposed, S^T = K Q^T, from a register-blocked outer-product kernel, so
 * the online softmax runs across queries in whole vectors; O += P V uses a
 * second register-blocked kernel. Only a BK x BQ score tile ever exists.
 *
 * rows: one query row at a time with dot products along head_dim; used for
 * decoder steps (n_q of 1..few) where packing would cost more than it saves.
 *
 * Both produce results that depend only on (head, row) and fixed block
 * boundaries, never on which thread runs them. */
#include <math.h>

#include "tensor/ops_simd.h"
#include "tensor/ops_vec.h"

#define AINLINE static inline __attribute__((always_inline))

/* Register blocks of the two tile kernels: RB rows (key rows of S^T, query
 * rows of O) by NVB vectors. AVX-512 (32 zmm): 4 x 4 = 16 accumulators.
 * AVX2 (16 ymm): 6 x 2 = 12 accumulators + 2 loaded vectors + 1 broadcast,
 * so each loaded vector stays in a register and serves 6 FMAs (8 loads per
 * 12 FMAs); the 2 x 4 block it replaces had GCC fold the loads into the FMAs
 * and read every vector twice (10 loads per 8 FMAs: load-bound on Zen 3).
 * Generic (4-lane vector extensions): 2 x 4. Row counts that RB does not
 * divide finish in blocks of 2 rows. The order of every sum is the same
 * for any block shape (dd, then j, ascending per accumulator), so the
 * geometry never changes a result bit. */
#if VW == 8
#define RB  6
#define NVB 2
#else
#define RB  (VW == 16 ? 4 : 2)
#define NVB 4
#endif
#define RB_TAIL 2

typedef struct {
    int kv_end; /* keys [0, kv_end) exist for this head */
    int off;    /* causal offset */
    int causal;
} kv_limits;

static kv_limits limits_of(const tr_attn_args *a) {
    kv_limits l;
    l.kv_end = (a->kv_valid > 0 && a->kv_valid < a->n_kv) ? a->kv_valid : a->n_kv;
    l.off = a->causal_offset;
    l.causal = a->causal;
    return l;
}

/* last key (exclusive) visible to query row i */
static inline int row_end(const kv_limits *l, int i) {
    if (!l->causal) return l->kv_end;
    long e = (long)i + l->off + 1;
    if (e < 0) e = 0;
    return e < l->kv_end ? (int)e : l->kv_end;
}

/* Scores, transposed: S^T[r][c..c+nv*VW) = sum_dd K[r][dd] * Q^T[dd][c..] for
 * RB key rows kr[0..RB) against query columns c..; qt and st point at
 * column c; rows have TR_ATTN_BQ floats. */
AINLINE void qkt_block(const float *qt, const float *const *kr, int d, float *st, int rb, int nv) {
    vf acc[RB][NVB];
    for (int r = 0; r < rb; r++)
        for (int k = 0; k < nv; k++) acc[r][k] = vzero();
    for (int dd = 0; dd < d; dd++) {
        vf b[NVB];
        for (int k = 0; k < nv; k++) b[k] = vload(qt + (long)dd * TR_ATTN_BQ + k * VW);
        for (int r = 0; r < rb; r++) {
            vf kv = vset1(kr[r][dd]);
            for (int k = 0; k < nv; k++) acc[r][k] = vfmadd(kv, b[k], acc[r][k]);
        }
    }
    for (int r = 0; r < rb; r++)
        for (int k = 0; k < nv; k++) vstore(st + (long)r * TR_ATTN_BQ + k * VW, acc[r][k]);
}

/* S^T rows for rb key rows (RB or RB_TAIL) against all nqv query vectors. */
AINLINE void qkt_rows(const float *qt, const float *const *kr, int d, float *st, int rb, int nqv) {
    int c = 0;
    for (; c + NVB <= nqv; c += NVB) qkt_block(qt + c * VW, kr, d, st + c * VW, rb, NVB);
    for (; c < nqv; c++) qkt_block(qt + c * VW, kr, d, st + c * VW, rb, 1);
}

/* O[r][c..c+nv*VW) = O[r][..] * cr[r] + sum_j P^T[j][r] * V[j][c..] for RB
 * query rows (the online softmax's rescale of the old accumulators rides
 * on their load instead of a pass of its own); pt points at the first
 * row's column of P^T, cr at its factor, v at column c of key row 0. */
AINLINE void pvt_block(const float *pt, const float *cr, const float *v, long vstride, int nk,
                       float *o, long dp, int rb, int nv) {
    vf acc[RB][NVB];
    for (int r = 0; r < rb; r++) {
        const vf c = vset1(cr[r]);
        for (int k = 0; k < nv; k++) acc[r][k] = vmul(vload(o + r * dp + k * VW), c);
    }
    for (int j = 0; j < nk; j++) {
        vf b[NVB];
        for (int k = 0; k < nv; k++) b[k] = vload(v + (long)j * vstride + k * VW);
        for (int r = 0; r < rb; r++) {
            vf pv = vset1(pt[(long)j * TR_ATTN_BQ + r]);
            for (int k = 0; k < nv; k++) acc[r][k] = vfmadd(pv, b[k], acc[r][k]);
        }
    }
    for (int r = 0; r < rb; r++)
        for (int k = 0; k < nv; k++) vstore(o + r * dp + k * VW, acc[r][k]);
}

/* O rows [r, r + rb) (rb = RB or RB_TAIL) = O cr + P V over all dp columns. */
AINLINE void pvt_rows(const float *pt, const float *cr, const float *vbuf, long dp, int nk,
                      float *o, int rb) {
    long c = 0;
    for (; c + NVB * VW <= dp; c += NVB * VW)
        pvt_block(pt, cr, vbuf + c, dp, nk, o + c, dp, rb, NVB);
    for (; c < dp; c += VW) pvt_block(pt, cr, vbuf + c, dp, nk, o + c, dp, rb, 1);
}

/* 2^x, the tile kernel's softmax exponential: scores arrive pre-multiplied
 * by log2(e) (folded into the Q scale), so no range reduction by ln 2 is
 * needed; 2^f on [-1/2, 1/2] is a degree-6 fit (relative error 1e-7, about
 * an ulp, like vexp). About half the multiply-adds of vexp, which the P V
 * and Q K^T products compete for. Below -87.3 · log2(e) (and at -inf) the
 * result is 0, as vexp's is below -87.3. */
static inline vf vpow2(vf x) {
    const vf lo = vset1(-125.9f);
    vf xc = vmin(vmax(x, lo), vset1(127.0f));
    vf n = vround(xc);
    vf f = vsub(xc, n);
    vf p = vset1(1.5372408961e-4f);
    p = vfmadd(p, f, vset1(1.3397029834e-3f));
    p = vfmadd(p, f, vset1(9.6183689311e-3f));
    p = vfmadd(p, f, vset1(5.5503360927e-2f));
    p = vfmadd(p, f, vset1(2.4022647738e-1f));
    p = vfmadd(p, f, vset1(6.9314718246e-1f));
    p = vfmadd(p, f, vset1(1.0f));
    return vkeep_ge(x, lo, vmul(p, vpow2i(n)));
}

/* Online-softmax update of one score row s[0..BK) (already masked with
 * -INFINITY); turns s into probabilities relative to the new running max and
 * returns the factor the old accumulators must be scaled by. */
static inline float softmax_update(float *s, float *m_run, float *l_run) {
    vf mx = vload(s);
    for (int j = VW; j < TR_ATTN_BK; j += VW) mx = vmax(mx, vload(s + j));
    float m_blk = vhmax(mx);
    float m_new = m_blk > *m_run ? m_blk : *m_run;
    if (m_new == -INFINITY) { /* nothing visible yet */
        for (int j = 0; j < TR_ATTN_BK; j++) s[j] = 0.0f;
        return 1.0f;
    }
    vf mv = vset1(m_new), sum = vzero();
    for (int j = 0; j < TR_ATTN_BK; j += VW) {
        vf e = vexp(vsub(vload(s + j), mv));
        vstore(s + j, e);
        sum = vadd(sum, e);
    }
    float corr = (*m_run == -INFINITY) ? 0.0f : expf(*m_run - m_new);
    *l_run = *l_run * corr + vhsum(sum);
    *m_run = m_new;
    return corr;
}

static void write_out(const tr_attn_args *a, int h, int i, const float *o, float l) {
    float *dst = a->out + (long)i * a->out_stride + (long)h * a->head_dim;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int dd = 0; dd < a->head_dim; dd++) dst[dd] = o[dd] * inv;
}

/* Row j of head hk of K (or V): a pointer into the F32 cache, or the F16
 * row converted into tmp. */
static inline const float *kv_row(const tr_attn_job *job, bool is_v, long j, int hk, float *tmp) {
    const tr_attn_args *a = job->a;
    const long off = j * a->kv_stride + tr_attn_head_off(a, hk);
    const uint16_t *h16 = is_v ? job->v16 : job->k16;
    if (!h16) return (is_v ? a->v : a->k) + off;
    vcvt_f16(h16 + off, tmp, a->head_dim);
    return tmp;
}

void TR_VSUF(tr_attn_tile)(const tr_attn_job *job, int h, int q0, int q1, float *scratch) {
    const tr_attn_args *a = job->a;
    const int d = a->head_dim, nq = q1 - q0;
    const long dp = tr_attn_dpad(d);
    const int hk = h / (a->n_head / a->n_head_kv);
    const kv_limits lim = limits_of(a);
    float *qt = scratch;                     /* [dp][BQ]  Q^T, scaled */
    float *st = qt + dp * TR_ATTN_BQ;        /* [BK][BQ]  S^T, then P^T */
    float *o = st + TR_ATTN_BK * TR_ATTN_BQ; /* [BQ][dp]  output accumulators */
    float *kbuf = o + TR_ATTN_BQ * dp;       /* [BK][dp]  converted K block (F16) */
    float *vbuf = kbuf + TR_ATTN_BK * dp;    /* [BK][dp]  padded / converted V block */
    float *m_run = vbuf + TR_ATTN_BK * dp;   /* [BQ] */
    float *l_run = m_run + TR_ATTN_BQ;       /* [BQ] */
    float *corr = l_run + TR_ATTN_BQ;        /* [BQ] */
    float *zrow = corr + TR_ATTN_BQ;         /* [dp] zeros: key rows past the block */
    const int nq_pad = (nq + RB_TAIL - 1) / RB_TAIL * RB_TAIL; /* <= BQ: BQ is even */
    const int nqv = (nq + VW - 1) / VW;                        /* query vectors per score row */

    memset(qt, 0, sizeof(float) * TR_ATTN_BQ * dp);
    memset(o, 0, sizeof(float) * TR_ATTN_BQ * dp);
    memset(zrow, 0, sizeof(float) * dp);
    for (int r = 0; r < TR_ATTN_BQ; r++) m_run[r] = -INFINITY, l_run[r] = 0.0f;
    /* scores in base 2: log2(e) folded into the Q scale (see vpow2) */
    const float log2e = 1.44269504088896341f, qscale = a->scale * log2e;
    for (int r = 0; r < nq; r++) {
        const float *src = a->q + (long)(q0 + r) * a->q_stride + (long)h * d;
        for (int dd = 0; dd < d; dd++) qt[(long)dd * TR_ATTN_BQ + r] = src[dd] * qscale;
    }
    const int kv_hi = row_end(&lim, q1 - 1); /* the last row sees the most keys */
    const int kv_lo = row_end(&lim, q0);     /* every row sees the keys below this */
    const float *pb = a->pos_bias ? a->pos_bias + (long)h * a->n_q * a->n_kv : NULL;
    /* per block, unless K/V are packed already, V rows are copied (F16:
     * converted) into a contiguous, zero-padded buffer: the P V kernel sweeps
     * all of them per output chunk and, read in place at a power-of-two cache
     * stride, they would thrash a few L1 sets. F32 K rows are read in place
     * (RB rows at a time, once); F16 K rows are converted. No transpose is
     * needed either way. */
    for (int kb = 0; kb < kv_hi; kb += TR_ATTN_BK) {
        const int nk = kv_hi - kb < TR_ATTN_BK ? kv_hi - kb : TR_ATTN_BK;
        const long kv_off = (long)kb * a->kv_stride + tr_attn_head_off(a, hk);
        /* packed (contiguous, zero padded) rows need no copy at all */
        const float *kpb = job->kp ? job->kp + ((long)hk * job->kv_rows + kb) * dp : NULL;
        const float *vb = job->vp ? job->vp + ((long)hk * job->kv_rows + kb) * dp : vbuf;
        for (int j = 0; j < nk && !job->vp; j++) {
            const long src = kv_off + (long)j * a->kv_stride;
            float *kd = kbuf + j * dp, *vd = vbuf + j * dp;
            if (job->k16) {
                vcvt_f16(job->k16 + src, kd, d);
                vcvt_f16(job->v16 + src, vd, d);
            } else { /* inline: a libc memcpy call per 256-byte row cost 17 % here */
                const float *vs = a->v + src;
                int dd = 0;
                for (; dd + VW <= d; dd += VW) vstore(vd + dd, vload(vs + dd));
                for (; dd < d; dd++) vd[dd] = vs[dd];
            }
            for (long dd = d; dd < dp; dd++) vd[dd] = 0.0f;
        }

        /* S^T = K Q^T for key rows [0, nk): blocks of RB, then of RB_TAIL
         * (the last one padded with zero rows; BK is even) */
        for (int j = 0; j < nk;) {
            const int rb = nk - j >= RB ? RB : RB_TAIL;
            const float *kr[RB];
            for (int r = 0; r < rb; r++)
                kr[r] = j + r >= nk ? zrow
                        : kpb       ? kpb + (j + r) * dp
                        : job->k16  ? kbuf + (j + r) * dp
                                    : a->k + kv_off + (long)(j + r) * a->kv_stride;
            float *srow = st + (long)j * TR_ATTN_BQ;
            if (rb == RB)
                qkt_rows(qt, kr, d, srow, RB, nqv);
            else
                qkt_rows(qt, kr, d, srow, RB_TAIL, nqv);
            j += rb;
        }
        if (pb)
            for (int i = 0; i < nq; i++) {
                const float *br = pb + (long)(q0 + i) * a->n_kv + kb;
                for (int j = 0; j < nk; j++) st[(long)j * TR_ATTN_BQ + i] += br[j] * log2e;
            }
        if (kb + nk > kv_lo) /* block crosses the causal diagonal: mask per row */
            for (int i = 0; i < nq; i++) {
                int vis = row_end(&lim, q0 + i) - kb;
                for (int j = vis < 0 ? 0 : vis; j < nk; j++)
                    st[(long)j * TR_ATTN_BQ + i] = -INFINITY;
            }

        /* online softmax, vectorised across queries (columns) */
        for (int c = 0; c < nqv; c++) {
            float *col = st + c * VW;
            vf mx = vload(col);
            for (int j = 1; j < nk; j++) mx = vmax(mx, vload(col + (long)j * TR_ATTN_BQ));
            vf m_old = vload(m_run + c * VW);
            vf m_new = vmax(m_old, mx);
            /* a column with nothing visible yet keeps max -inf; exponents
             * are then taken against 0 so that every term is exp(-inf) = 0 */
            vf m_use = vkeep_ge(m_new, vset1(-3.0e38f), m_new);
            vf sum = vzero();
            for (int j = 0; j < nk; j++) {
                vf e = vpow2(vsub(vload(col + (long)j * TR_ATTN_BQ), m_use));
                vstore(col + (long)j * TR_ATTN_BQ, e);
                sum = vadd(sum, e);
            }
            vf cr = vpow2(vsub(m_old, m_use));
            vstore(corr + c * VW, cr);
            vstore(l_run + c * VW, vfmadd(vload(l_run + c * VW), cr, sum));
            vstore(m_run + c * VW, m_new);
        }

        /* O = O corr + P V (corr is set for every column below nq_pad) */
        for (int r = 0; r < nq_pad;) {
            if (nq_pad - r >= RB) {
                pvt_rows(st + r, corr + r, vb, dp, nk, o + r * dp, RB);
                r += RB;
            } else {
                pvt_rows(st + r, corr + r, vb, dp, nk, o + r * dp, RB_TAIL);
                r += RB_TAIL;
            }
        }
    }
    for (int r = 0; r < nq; r++) write_out(a, h, q0 + r, o + r * dp, l_run[r]);
}

/* dot products of q (dp floats, zero padded) with nk key rows */
AINLINE float dot_row(const float *q, const float *k, int d) {
    vf acc = vzero();
    int dd = 0;
    for (; dd + VW <= d; dd += VW) acc = vfmadd(vload(q + dd), vload(k + dd), acc);
    float s = vhsum(acc);
    for (; dd < d; dd++) s += q[dd] * k[dd];
    return s;
}

/* dot_row for 4 consecutive key rows at once: the same operations in the
 * same order per key (so the same bits), but 4 independent FMA chains
 * instead of one, which alone waits on the FMA latency (a decoder step's
 * cross-attention over 1500 keys spends most of its time here). */
AINLINE void dot_rows4(const float *q, const float *k, long kst, int d, float *s) {
    vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
    const float *k1 = k + kst, *k2 = k + 2 * kst, *k3 = k + 3 * kst;
    int dd = 0;
    for (; dd + VW <= d; dd += VW) {
        const vf qv = vload(q + dd);
        a0 = vfmadd(qv, vload(k + dd), a0);
        a1 = vfmadd(qv, vload(k1 + dd), a1);
        a2 = vfmadd(qv, vload(k2 + dd), a2);
        a3 = vfmadd(qv, vload(k3 + dd), a3);
    }
    float s0 = vhsum(a0), s1 = vhsum(a1), s2 = vhsum(a2), s3 = vhsum(a3);
    for (; dd < d; dd++) {
        s0 += q[dd] * k[dd];
        s1 += q[dd] * k1[dd];
        s2 += q[dd] * k2[dd];
        s3 += q[dd] * k3[dd];
    }
    s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

/* Which rows prefetch_kv asks for. */
enum { FETCH_K = 1, FETCH_V = 2 };

/* Asks for the K and/or V rows (what: FETCH_K, FETCH_V) of keys [j0, j1)
 * of KV head hk ahead of use. A head's part of a cache row (head_dim
 * values) lies kv_stride values from the next one's, a pattern the
 * hardware prefetchers follow poorly; left to them, a decoder step's
 * attention waited on memory for nearly every row (three quarters of its
 * time, measured: its K/V are far from the cache after a step's weights
 * have streamed through). */
AINLINE void prefetch_kv(const tr_attn_job *job, int hk, int j0, int j1, int what) {
    const tr_attn_args *a = job->a;
    const long es = job->k16 ? 2 : 4, bytes = (long)a->head_dim * es;
    const char *k = job->k16 ? (const char *)job->k16 : (const char *)a->k;
    const char *v = job->k16 ? (const char *)job->v16 : (const char *)a->v;
    for (int j = j0; j < j1; j++) {
        const long off = ((long)j * a->kv_stride + tr_attn_head_off(a, hk)) * es;
        for (long b = 0; b < bytes; b += 64) {
            if (what & FETCH_K) __builtin_prefetch(k + off + b);
            if (what & FETCH_V) __builtin_prefetch(v + off + b);
        }
    }
}

/* One query row of one head: q scaled into qp, state reset. */
typedef struct {
    float *qp, *o, *s; /* [dp], [dp], [BK] */
    const float *br;   /* positional bias row of this head, or NULL */
    float m_run, l_run;
} row_state;

/* a[i] += p * x[i] and b[i] += q * x[i] for four vectors x: the register
 * block of both F16 row kernels (scores: x four key rows, p and q two
 * heads' query vectors; values: x four columns of one row, p and q two
 * heads' probabilities). */
AINLINE void fma_2x4(vf p, vf q, const vf x[4], vf a[4], vf b[4]) {
    for (int i = 0; i < 4; i++) {
        a[i] = vfmadd(p, x[i], a[i]);
        b[i] = vfmadd(q, x[i], b[i]);
    }
}

/* How many key rows ahead of itself the F16 score loop fetches. Fetching
 * as it goes (K ahead, and the block's V rows as their scores are made)
 * rather than a block of 64 rows of both at a time: a decode step's head
 * with K/V cold (Qwen3-ASR's shape, 190 positions) 10.7 -> 7.4 us on the
 * 2-core Zen 3 host; 4 to 32 rows ahead all measured alike. */
#define KV_AHEAD 16

/* s plus q[dd] * k[dd - dv] for dd in [dv, d), in order: the scalar tail
 * of dot_row / dot_rows4 over a row whose last d - dv values were widened
 * into k, so the same bits. */
AINLINE float tail_dot(float s, const float *q, const float *k, int dv, int d) {
    for (int dd = dv; dd < d; dd++) s += q[dd] * k[dd - dv];
    return s;
}

/* Scores of the G heads of rs against F16 key rows [kb, kb + nk) of KV
 * head hk, converted in registers (each K vector once for all heads):
 * per key the operations of dot_rows4, so the same bits. With fetch, asks
 * as it goes for the K rows KV_AHEAD on (below lim) and for the block's V
 * rows, which pv_f16 reads next. */
AINLINE void scores_f16(const tr_attn_job *job, int hk, int kb, int nk, row_state *rs, int G,
                        bool fetch, int lim) {
    const tr_attn_args *a = job->a;
    const int d = a->head_dim, dv = d / VW * VW; /* the vector part */
    const uint16_t *kr = job->k16 + (long)kb * a->kv_stride + tr_attn_head_off(a, hk);
    const long st = a->kv_stride;
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        const uint16_t *k0 = kr + (long)j * st;
        if (fetch) {
            const int f0 = kb + j + KV_AHEAD;
            prefetch_kv(job, hk, f0, f0 + 4 < lim ? f0 + 4 : lim, FETCH_K);
            prefetch_kv(job, hk, kb + j, kb + j + 4, FETCH_V);
        }
        /* one head (a KV head per query head: Cohere, Whisper, Canary): its
         * four chains alone; the two-head block below would also run a
         * second set for the same head and drop it. The same FMAs per key,
         * so the same bits. The last d % VW values of the four rows are
         * widened once for every head (dot_rows4's scalar tail). */
        float kt[4][VW];
        if (dv < d)
            for (int r = 0; r < 4; r++) vcvt_f16_short(k0 + r * st + dv, kt[r], d - dv);
        if (G == 1) {
            const float *qa = rs[0].qp;
            vf ac[4] = {vzero(), vzero(), vzero(), vzero()};
            for (int dd = 0; dd < dv; dd += VW) {
                const vf qv = vload(qa + dd);
                ac[0] = vfmadd(qv, vload_f16(k0 + dd), ac[0]);
                ac[1] = vfmadd(qv, vload_f16(k0 + st + dd), ac[1]);
                ac[2] = vfmadd(qv, vload_f16(k0 + 2 * st + dd), ac[2]);
                ac[3] = vfmadd(qv, vload_f16(k0 + 3 * st + dd), ac[3]);
            }
            for (int r = 0; r < 4; r++) rs[0].s[j + r] = tail_dot(vhsum(ac[r]), qa, kt[r], dv, d);
            continue;
        }
        for (int g0 = 0; g0 < G; g0 += 2) {
            const int two = G - g0 >= 2;
            const float *qa = rs[g0].qp, *qb = rs[g0 + two].qp;
            vf ac[4] = {vzero(), vzero(), vzero(), vzero()}, bc[4] = {ac[0], ac[1], ac[2], ac[3]};
            for (int dd = 0; dd < dv; dd += VW) {
                const vf x[4] = {vload_f16(k0 + dd), vload_f16(k0 + st + dd),
                                 vload_f16(k0 + 2 * st + dd), vload_f16(k0 + 3 * st + dd)};
                fma_2x4(vload(qa + dd), vload(qb + dd), x, ac, bc);
            }
            float *sa = rs[g0].s + j, *sb = rs[g0 + two].s + j;
            for (int r = 0; r < 4; r++) sa[r] = tail_dot(vhsum(ac[r]), qa, kt[r], dv, d);
            if (two)
                for (int r = 0; r < 4; r++) sb[r] = tail_dot(vhsum(bc[r]), qb, kt[r], dv, d);
        }
    }
    if (fetch) prefetch_kv(job, hk, kb + j, kb + nk, FETCH_V);
    for (; j < nk; j++) {
        const uint16_t *k0 = kr + (long)j * st;
        float kt[VW];
        if (dv < d) vcvt_f16_short(k0 + dv, kt, d - dv);
        for (int g = 0; g < G; g++) {
            vf acc = vzero();
            for (int dd = 0; dd < dv; dd += VW)
                acc = vfmadd(vload(rs[g].qp + dd), vload_f16(k0 + dd), acc);
            rs[g].s[j] = tail_dot(vhsum(acc), rs[g].qp, kt, dv, d); /* dot_row's tail */
        }
    }
}

/* o += P V for the G heads of rs over F16 value rows [kb, kb + nk) of KV
 * head hk: each output vector stays in a register over PV_JB keys (two
 * heads share each converted V vector), then the next PV_JB. Sweeping a
 * 32-value column chunk over all of a block's 64 rows instead touched one
 * cache line per row per sweep, four sweeps per row, and stalled on those
 * loads (Qwen3-ASR's step shape with K/V in cache: 8.5 -> 5.2 us a head);
 * PV_JB rows are 2 KiB, still in L1 for the next chunk's sweep. Per element
 * the same fused multiply-adds in the same key order as the converted-block
 * loop, so the same bits. */
#define PV_JB 8

/* o[0, d) += sum over keys j in [j0, j1) of p[j] * V row j (rows st
 * values apart: floats, or half floats when f16), each o[dd] summed over j
 * in order as one row at a time would. The vector columns are held in
 * registers across the keys, up to four at a time (pv_cols), and the
 * scalar tail's columns likewise (pv_tail): updated key by key in memory
 * instead, each column waited on a store and a reload per key (a decoder
 * step's cross-attention over F32 keys spent a quarter of its time there).
 * f16 is a constant at every call, so each form compiles on its own. */
AINLINE vf pv_load(const void *v, bool f16, long at) {
    return f16 ? vload_f16((const uint16_t *)v + at) : vload((const float *)v + at);
}

AINLINE void pv_cols(const float *p, const void *v, bool f16, long st, int j0, int j1, float *o,
                     int nv) {
    vf ac[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        if (i < nv) ac[i] = vload(o + i * VW);
    for (int j = j0; j < j1; j++) {
        const vf pj = vset1(p[j]);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            if (i < nv) ac[i] = vfmadd(pj, pv_load(v, f16, (long)j * st + i * VW), ac[i]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        if (i < nv) vstore(o + i * VW, ac[i]);
}

/* The columns [dd, d) (fewer than a vector) of the same, key by key. */
AINLINE void pv_tail(const float *p, const void *v, bool f16, long st, int j0, int j1, float *o,
                     int dd, int d) {
    const int nt = d - dd;
    float t[VW], x[VW];
    for (int c = 0; c < nt; c++) t[c] = o[dd + c];
    for (int j = j0; j < j1; j++) {
        const float *vr = x;
        if (f16)
            vcvt_f16_short((const uint16_t *)v + (long)j * st + dd, x, nt);
        else
            vr = (const float *)v + (long)j * st + dd;
        for (int c = 0; c < nt; c++) t[c] += p[j] * vr[c];
    }
    for (int c = 0; c < nt; c++) o[dd + c] = t[c];
}

AINLINE void pv_rows(const float *p, const void *v, bool f16, long st, int j0, int j1, int d,
                     float *o) {
    const long esz = f16 ? 2 : 4; /* bytes a value */
    int dd = 0;
    for (; dd + 4 * VW <= d; dd += 4 * VW)
        pv_cols(p, (const char *)v + dd * esz, f16, st, j0, j1, o + dd, 4);
    switch ((d - dd) / VW) {
    case 3:
        pv_cols(p, (const char *)v + dd * esz, f16, st, j0, j1, o + dd, 3);
        break;
    case 2:
        pv_cols(p, (const char *)v + dd * esz, f16, st, j0, j1, o + dd, 2);
        break;
    case 1:
        pv_cols(p, (const char *)v + dd * esz, f16, st, j0, j1, o + dd, 1);
        break;
    default:
        break;
    }
    dd += (d - dd) / VW * VW;
    if (dd < d) pv_tail(p, v, f16, st, j0, j1, o, dd, d);
}

AINLINE void pv_f32(const float *p, const float *v, long kst, int nk, int d, float *o) {
    pv_rows(p, v, false, kst, 0, nk, d, o);
}

AINLINE void pv_f16(const tr_attn_job *job, int hk, int kb, int nk, row_state *rs, int G) {
    const tr_attn_args *a = job->a;
    const int d = a->head_dim;
    const long st = a->kv_stride;
    const uint16_t *vr = job->v16 + (long)kb * st + tr_attn_head_off(a, hk);
    for (int j0 = 0; j0 < nk; j0 += PV_JB) {
        const int j1 = nk - j0 < PV_JB ? nk : j0 + PV_JB;
        /* one head: eight output vectors at a time (a 128-value head in
         * one sweep, twice the independent chains of four), no second
         * head's; per element the same FMAs in the same key order */
        if (G == 1 && d % (8 * VW) == 0) {
            float *oa = rs[0].o;
            const float *pa = rs[0].s;
            for (int dd = 0; dd < d; dd += 8 * VW) {
                vf ac[8];
                for (int i = 0; i < 8; i++) ac[i] = vload(oa + dd + i * VW);
                for (int j = j0; j < j1; j++) {
                    const uint16_t *v = vr + (long)j * st + dd;
                    const vf p = vset1(pa[j]);
                    for (int i = 0; i < 8; i++) ac[i] = vfmadd(p, vload_f16(v + i * VW), ac[i]);
                }
                for (int i = 0; i < 8; i++) vstore(oa + dd + i * VW, ac[i]);
            }
            continue;
        }
        /* one head, any width: up to four output vectors at a time (the
         * two-head block below would run a second set for the same head),
         * then the scalar tail */
        if (G == 1) {
            pv_rows(rs[0].s, vr, true, st, j0, j1, d, rs[0].o);
            continue;
        }
        for (int g0 = 0; g0 < G; g0 += 2) {
            const int two = G - g0 >= 2;
            float *oa = rs[g0].o, *ob = rs[g0 + two].o;
            const float *pa = rs[g0].s, *pb = rs[g0 + two].s;
            int dd = 0;
            for (; dd + 4 * VW <= d; dd += 4 * VW) {
                vf ac[4], bc[4];
                for (int i = 0; i < 4; i++)
                    ac[i] = vload(oa + dd + i * VW), bc[i] = vload(ob + dd + i * VW);
                for (int j = j0; j < j1; j++) {
                    const uint16_t *v = vr + (long)j * st + dd;
                    const vf x[4] = {vload_f16(v), vload_f16(v + VW), vload_f16(v + 2 * VW),
                                     vload_f16(v + 3 * VW)};
                    fma_2x4(vset1(pa[j]), vset1(pb[j]), x, ac, bc);
                }
                for (int i = 0; i < 4; i++) vstore(oa + dd + i * VW, ac[i]);
                if (two)
                    for (int i = 0; i < 4; i++) vstore(ob + dd + i * VW, bc[i]);
            }
            for (; dd + VW <= d; dd += VW) {
                vf a0 = vload(oa + dd), b0 = vload(ob + dd);
                for (int j = j0; j < j1; j++) {
                    const vf x0 = vload_f16(vr + (long)j * st + dd);
                    a0 = vfmadd(vset1(pa[j]), x0, a0);
                    b0 = vfmadd(vset1(pb[j]), x0, b0);
                }
                vstore(oa + dd, a0);
                if (two) vstore(ob + dd, b0);
            }
            if (dd == d) continue;
            pv_tail(pa, vr, true, st, j0, j1, oa, dd, d); /* the last d % VW columns */
            if (two) pv_tail(pb, vr, true, st, j0, j1, ob, dd, d);
        }
    }
}

void TR_VSUF(tr_attn_rows)(const tr_attn_job *job, int h, int q0, int q1, float *scratch) {
    const tr_attn_args *a = job->a;
    const int d = a->head_dim, G = job->heads > 0 ? job->heads : 1;
    const long dp = tr_attn_dpad(d);
    const int hk = h / (a->n_head / a->n_head_kv);
    const kv_limits lim = limits_of(a);
    row_state rs[TR_ATTN_MAX_GROUP];
    float *kbuf = scratch + (long)G * (2 * dp + TR_ATTN_BK); /* [BK][dp]: F16 rows converted */
    float *vbuf = kbuf + TR_ATTN_BK * dp;
    for (int g = 0; g < G; g++) {
        rs[g].qp = scratch + (long)g * (2 * dp + TR_ATTN_BK);
        rs[g].o = rs[g].qp + dp;
        rs[g].s = rs[g].o + dp;
    }
    /* F16 K/V without a position bias: read in place, converted in
     * registers (converting each block into kbuf/vbuf first and reading it
     * back cost a decoder step's attention several times more); a head dim
     * that is not a multiple of the vector (Moonshine's 36 and 52) takes
     * the F32 loops' scalar tails, on its last values widened once per row */
    const bool f16_direct = job->k16 && !a->pos_bias;
    /* F32 K/V are read in place and fetched as the scores go, as F16 ones
     * are (Moonshine base's cross-attention over 457 F32 keys of head_dim
     * 52, a decode step: ~0.86 of the time of fetching each next block of
     * 64 keys' K and V at once, which held the loop until the block's
     * lines were in flight) */
    const bool f32_inplace = !job->k16;
    for (int i = q0; i < q1; i++) {
        for (int g = 0; g < G; g++) {
            row_state *r = &rs[g];
            const float *src = a->q + (long)i * a->q_stride + (long)(h + g) * d;
            for (int dd = 0; dd < d; dd++) r->qp[dd] = src[dd] * a->scale;
            memset(r->o, 0, sizeof(float) * dp);
            r->m_run = -INFINITY;
            r->l_run = 0.0f;
            r->br = a->pos_bias ? a->pos_bias + ((long)(h + g) * a->n_q + i) * a->n_kv : NULL;
        }
        const int end = row_end(&lim, i);
        /* K/V read in place (F16, or F32): the first KV_AHEAD keys, then the
         * score loops fetch as they go; converted F16 rows: a block of both
         * at a time */
        if (i == q0 && (f16_direct || f32_inplace))
            prefetch_kv(job, hk, 0, end < KV_AHEAD ? end : KV_AHEAD, FETCH_K);
        else if (i == q0)
            prefetch_kv(job, hk, 0, end < TR_ATTN_BK ? end : TR_ATTN_BK, FETCH_K | FETCH_V);
        for (int kb = 0; kb < end; kb += TR_ATTN_BK) {
            const int nk = end - kb < TR_ATTN_BK ? end - kb : TR_ATTN_BK;
            /* the next block's rows arrive while this one is computed */
            const int nx = kb + TR_ATTN_BK, nx_end = nx + TR_ATTN_BK < end ? nx + TR_ATTN_BK : end;
            if (i == q0 && nx < end && !f16_direct && !f32_inplace)
                prefetch_kv(job, hk, nx, nx_end, FETCH_K | FETCH_V);
            /* F32 rows are read in place (stride kv_stride); F16 rows are
             * converted block-wise into kbuf/vbuf (stride dp), once for
             * every head of the group */
            if (f16_direct) {
                scores_f16(job, hk, kb, nk, rs, G, i == q0, end);
                for (int g = 0; g < G; g++) {
                    row_state *r = &rs[g];
                    for (int jj = nk; jj < TR_ATTN_BK; jj++) r->s[jj] = -INFINITY;
                    float corr = softmax_update(r->s, &r->m_run, &r->l_run);
                    if (corr != 1.0f)
                        for (int dd = 0; dd < d; dd++) r->o[dd] *= corr;
                }
                pv_f16(job, hk, kb, nk, rs, G);
                continue;
            }
            const float *kbase, *vbase;
            long kst = a->kv_stride;
            if (job->k16) {
                for (int j = 0; j < nk; j++) kv_row(job, false, kb + j, hk, kbuf + j * dp);
                for (int j = 0; j < nk; j++) kv_row(job, true, kb + j, hk, vbuf + j * dp);
                kbase = kbuf;
                vbase = vbuf;
                kst = dp;
            } else {
                kbase = a->k + (long)kb * kst + tr_attn_head_off(a, hk);
                vbase = a->v + (long)kb * kst + tr_attn_head_off(a, hk);
            }
            for (int g = 0; g < G; g++) {
                row_state *r = &rs[g];
                float *s = r->s, *o = r->o;
                int j = 0;
                /* in place: K KV_AHEAD keys on, and the block's V (read
                 * after its softmax), as scores_f16 fetches them */
                const bool fetch = f32_inplace && i == q0 && g == 0;
                for (; j + 4 <= nk; j += 4) {
                    if (fetch) {
                        const int f0 = kb + j + KV_AHEAD;
                        if (f0 < end)
                            prefetch_kv(job, hk, f0, f0 + 4 < end ? f0 + 4 : end, FETCH_K);
                        prefetch_kv(job, hk, kb + j, kb + j + 4, FETCH_V);
                    }
                    dot_rows4(r->qp, kbase + (long)j * kst, kst, d, s + j);
                }
                if (fetch && j < nk) prefetch_kv(job, hk, kb + j, kb + nk, FETCH_V);
                for (; j < nk; j++) s[j] = dot_row(r->qp, kbase + (long)j * kst, d);
                if (r->br)
                    for (int jj = 0; jj < nk; jj++) s[jj] += r->br[kb + jj];
                for (int jj = nk; jj < TR_ATTN_BK; jj++) s[jj] = -INFINITY;
                float corr = softmax_update(s, &r->m_run, &r->l_run);
                if (corr != 1.0f)
                    for (int dd = 0; dd < d; dd++) o[dd] *= corr;
                pv_f32(s, vbase, kst, nk, d, o);
            }
        }
        for (int g = 0; g < G; g++) write_out(a, h + g, i, rs[g].o, rs[g].l_run);
    }
}
