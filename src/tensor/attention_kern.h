/* Flash-attention style kernels, written once against ops_vec.h and compiled
 * per ISA by attention_generic.c / attention_avx2.c / attention_avx512.c.
 *
 * tile: one head and up to TR_ATTN_BQ query rows. Keys are visited in blocks
 * of TR_ATTN_BK; each block is packed (K transposed, V zero-padded to dp
 * columns), scores S = Q K^T come from a register-blocked outer-product
 * kernel, an online softmax rescales the running output, and O += P V uses a
 * second register-blocked kernel. Only a BQ x BK score tile ever exists.
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

/* Rows per register block: 4 rows x 4 vectors = 16 accumulators fit the 32
 * zmm registers; with 16 registers (AVX2, SSE) use 2 rows. */
#define RB (VW == 16 ? 4 : 2)

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

/* S[r][c..c+NV*VW) = sum_dd Q[r][dd] * KT[dd][c..] for RB rows starting at q. */
AINLINE void qk_block(const float *q, long dp, const float *kt, int d, float *s, int nv) {
    vf acc[RB][4];
    for (int r = 0; r < RB; r++)
        for (int k = 0; k < 4; k++) acc[r][k] = vzero();
    for (int dd = 0; dd < d; dd++) {
        vf b[4];
        for (int k = 0; k < nv; k++) b[k] = vload(kt + (long)dd * TR_ATTN_BK + k * VW);
        for (int r = 0; r < RB; r++) {
            vf qv = vset1(q[r * dp + dd]);
            for (int k = 0; k < nv; k++) acc[r][k] = vfmadd(qv, b[k], acc[r][k]);
        }
    }
    for (int r = 0; r < RB; r++)
        for (int k = 0; k < nv; k++) vstore(s + (long)r * TR_ATTN_BK + k * VW, acc[r][k]);
}

/* O[r][c..c+nv*VW) += sum_j P[r][j] * V[j][c..] for RB rows. */
AINLINE void pv_block(const float *p, const float *v, long dp, int nk, float *o, int nv) {
    vf acc[RB][4];
    for (int r = 0; r < RB; r++)
        for (int k = 0; k < nv; k++) acc[r][k] = vload(o + r * dp + k * VW);
    for (int j = 0; j < nk; j++) {
        vf b[4];
        for (int k = 0; k < nv; k++) b[k] = vload(v + (long)j * dp + k * VW);
        for (int r = 0; r < RB; r++) {
            vf pv = vset1(p[(long)r * TR_ATTN_BK + j]);
            for (int k = 0; k < nv; k++) acc[r][k] = vfmadd(pv, b[k], acc[r][k]);
        }
    }
    for (int r = 0; r < RB; r++)
        for (int k = 0; k < nv; k++) vstore(o + r * dp + k * VW, acc[r][k]);
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
    const long off = j * a->kv_stride + (long)hk * a->head_dim;
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
    float *qt = scratch;                    /* [BQ][dp] */
    float *kt = qt + TR_ATTN_BQ * dp;       /* [dp][BK] */
    float *vt = kt + dp * TR_ATTN_BK;       /* [BK][dp] */
    float *s = vt + TR_ATTN_BK * dp;        /* [BQ][BK] */
    float *o = s + TR_ATTN_BQ * TR_ATTN_BK; /* [BQ][dp] */
    float *m_run = o + TR_ATTN_BQ * dp;     /* [BQ] */
    float *l_run = m_run + TR_ATTN_BQ;      /* [BQ] */
    float *tmp = l_run + TR_ATTN_BQ;        /* [dp] */
    const int nq_pad = (nq + RB - 1) / RB * RB;

    memset(qt, 0, sizeof(float) * TR_ATTN_BQ * dp);
    memset(o, 0, sizeof(float) * TR_ATTN_BQ * dp);
    for (int r = 0; r < nq; r++) {
        const float *src = a->q + (long)(q0 + r) * a->q_stride + (long)h * d;
        for (int dd = 0; dd < d; dd++) qt[r * dp + dd] = src[dd] * a->scale;
        m_run[r] = -INFINITY;
        l_run[r] = 0.0f;
    }
    const int kv_hi = row_end(&lim, q1 - 1); /* the last row sees the most keys */
    const float *pb = a->pos_bias ? a->pos_bias + (long)h * a->n_q * a->n_kv : NULL;

    for (int kb = 0; kb < kv_hi; kb += TR_ATTN_BK) {
        const int nk = kv_hi - kb < TR_ATTN_BK ? kv_hi - kb : TR_ATTN_BK;
        /* pack K^T and V for this key block; padding is zero so it cannot
         * inject NaN into the products */
        for (int j = 0; j < nk; j++) {
            const float *kr = kv_row(job, false, kb + j, hk, tmp);
            for (int dd = 0; dd < d; dd++) kt[(long)dd * TR_ATTN_BK + j] = kr[dd];
            if (job->v16)
                vcvt_f16(job->v16 + (long)(kb + j) * a->kv_stride + (long)hk * d, vt + j * dp, d);
            else
                memcpy(vt + j * dp, kv_row(job, true, kb + j, hk, tmp), sizeof(float) * d);
            for (long dd = d; dd < dp; dd++) vt[j * dp + dd] = 0.0f;
        }
        if (nk < TR_ATTN_BK) {
            for (int dd = 0; dd < d; dd++)
                for (int j = nk; j < TR_ATTN_BK; j++) kt[(long)dd * TR_ATTN_BK + j] = 0.0f;
            memset(vt + nk * dp, 0, sizeof(float) * (TR_ATTN_BK - nk) * dp);
        }

        for (int r = 0; r < nq_pad; r += RB)
            for (int c = 0; c < TR_ATTN_BK; c += 4 * VW)
                qk_block(qt + r * dp, dp, kt + c, d, s + (long)r * TR_ATTN_BK + c, 4);

        for (int r = 0; r < nq; r++) {
            float *sr = s + (long)r * TR_ATTN_BK;
            const int i = q0 + r;
            int vis = row_end(&lim, i) - kb; /* keys of this block the row sees */
            if (vis > nk) vis = nk;
            if (vis < 0) vis = 0;
            if (pb) {
                const float *br = pb + (long)i * a->n_kv + kb;
                for (int j = 0; j < vis; j++) sr[j] += br[j];
            }
            for (int j = vis; j < TR_ATTN_BK; j++) sr[j] = -INFINITY;
            float corr = softmax_update(sr, &m_run[r], &l_run[r]);
            if (corr != 1.0f) {
                vf cv = vset1(corr);
                for (long dd = 0; dd < dp; dd += VW)
                    vstore(o + r * dp + dd, vmul(vload(o + r * dp + dd), cv));
            }
        }
        /* rows in [nq, nq_pad) hold raw scores of zero queries; their output
         * is scratch and never written out */
        for (int r = 0; r < nq_pad; r += RB) {
            long c = 0;
            for (; c + 4 * VW <= dp; c += 4 * VW)
                pv_block(s + (long)r * TR_ATTN_BK, vt + c, dp, nk, o + r * dp + c, 4);
            for (; c < dp; c += VW)
                pv_block(s + (long)r * TR_ATTN_BK, vt + c, dp, nk, o + r * dp + c, 1);
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

void TR_VSUF(tr_attn_rows)(const tr_attn_job *job, int h, int q0, int q1, float *scratch) {
    const tr_attn_args *a = job->a;
    const int d = a->head_dim;
    const long dp = tr_attn_dpad(d);
    const int hk = h / (a->n_head / a->n_head_kv);
    const kv_limits lim = limits_of(a);
    float *qp = scratch;          /* [dp] */
    float *o = qp + dp;           /* [dp] */
    float *s = o + dp;            /* [BK] */
    float *kbuf = s + TR_ATTN_BK; /* [BK][dp]: F16 rows converted */
    float *vbuf = kbuf + TR_ATTN_BK * dp;
    for (int i = q0; i < q1; i++) {
        const float *src = a->q + (long)i * a->q_stride + (long)h * d;
        for (int dd = 0; dd < d; dd++) qp[dd] = src[dd] * a->scale;
        memset(o, 0, sizeof(float) * dp);
        float m_run = -INFINITY, l_run = 0.0f;
        const int end = row_end(&lim, i);
        const float *br = a->pos_bias ? a->pos_bias + ((long)h * a->n_q + i) * a->n_kv : NULL;
        for (int kb = 0; kb < end; kb += TR_ATTN_BK) {
            const int nk = end - kb < TR_ATTN_BK ? end - kb : TR_ATTN_BK;
            /* F32 rows are read in place (stride kv_stride); F16 rows are
             * converted block-wise into kbuf/vbuf (stride dp) */
            const float *kbase, *vbase;
            long kst = a->kv_stride;
            if (job->k16) {
                for (int j = 0; j < nk; j++) kv_row(job, false, kb + j, hk, kbuf + j * dp);
                for (int j = 0; j < nk; j++) kv_row(job, true, kb + j, hk, vbuf + j * dp);
                kbase = kbuf;
                vbase = vbuf;
                kst = dp;
            } else {
                kbase = a->k + (long)kb * kst + (long)hk * d;
                vbase = a->v + (long)kb * kst + (long)hk * d;
            }
            for (int j = 0; j < nk; j++) s[j] = dot_row(qp, kbase + (long)j * kst, d);
            if (br)
                for (int j = 0; j < nk; j++) s[j] += br[kb + j];
            for (int j = nk; j < TR_ATTN_BK; j++) s[j] = -INFINITY;
            float corr = softmax_update(s, &m_run, &l_run);
            if (corr != 1.0f)
                for (int dd = 0; dd < d; dd++) o[dd] *= corr;
            for (int j = 0; j < nk; j++) {
                const float *vr = vbase + (long)j * kst;
                vf pv = vset1(s[j]);
                int dd = 0;
                for (; dd + VW <= d; dd += VW)
                    vstore(o + dd, vfmadd(pv, vload(vr + dd), vload(o + dd)));
                for (; dd < d; dd++) o[dd] += s[j] * vr[dd];
            }
        }
        write_out(a, h, i, o, l_run);
    }
}
