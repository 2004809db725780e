/* The work-claiming scheme of the one-pool-run decode steps: the causal
 * LM's (causal_lm_step.c) and the encoder-decoder's (encdec_step1.c).
 *
 * A decode step is memory-bound: it streams every weight once and does
 * little else. Run as a sequence of kernel calls it pays a pool dispatch
 * per product and the serial work in between (norms, rotation, cache
 * writes, activations, residual adds) while the other threads wait. These
 * steps run as one pool run through a fixed list of phases. Each phase is
 * cut into units of TR_SP_UNIT_ROWS weight rows (or one attention head).
 * Each thread owns an equal contiguous share of a phase's units and
 * claims them from its front, a share of what it has left at a time
 * (half, between 64 KiB and 1 MiB of weights): its claims follow one
 * another in memory, so the hardware prefetcher streams the whole share
 * as one run. A thread whose share is used up takes half of what another
 * has left, from that share's back. (Claimed from one counter for the
 * whole phase, the threads' claims interleaved and every claim restarted
 * the prefetcher: a loop over 1.1 MB phases of Q8_0 rows, 2 threads on the
 * Zen 5 host, read 10-30 % below two fixed contiguous halves; with owned
 * shares, within ~4 % of them. The Cohere decode step took 0.9 of the
 * time.) A thread that finds nothing left
 * waits until every unit of the phase is done: a barrier on work, not on
 * threads, so a descheduled thread holds up only the units it has claimed
 * (the others take the rest of its share) and a thread that starts late
 * finds the early phases done and catches up; the parts of a pool run
 * never wait for one another's arrival, as tr_pool_run requires.
 *
 * Every weight row is computed by tr_matvec_rows, the M == 1 path of
 * tr_matmul, so a step's values do not depend on which thread takes which
 * unit. */
#ifndef TR_NN_STEP_PHASE_H
#define TR_NN_STEP_PHASE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tensor/matmul.h"
#include "tensor/pool.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

/* Claims are whole units of TR_SP_UNIT_ROWS rows, of at least
 * TR_SP_CHUNK_MIN of weights (the tail a share can end on) and at most
 * TR_SP_CHUNK_MAX. */
#define TR_SP_UNIT_ROWS 16
#define TR_SP_CHUNK_MIN (64 << 10)
#define TR_SP_CHUNK_MAX (1 << 20)
/* With several input rows, a claim is swept in blocks of about this many
 * bytes of weights (whole units), each block for every row before the
 * next, so the weights are streamed once for all rows. */
#define TR_SP_ROWS_BLOCK (256 << 10)

/* A phase: its unit count, claim bounds and finished count, and each
 * thread's share: slot t (at share[t * share_stride]) holds the share's
 * unclaimed units [front, back) as front | back << 32. The slots of one
 * thread for consecutive phases lie together (tr_sp_phase_bind), apart
 * from other threads' slots, so a thread's claims do not contend for a
 * line. */
typedef struct tr_sp_phase {
    _Alignas(64) atomic_int done; /* units finished */
    int n;                        /* units */
    int min_u, max_u;             /* bounds of one claim, in units */
    int nth;                      /* shares */
    long share_stride;
    _Atomic uint64_t *share;
} tr_sp_phase;

/* The share slots of n_ph phases for nth threads take tr_sp_shares_size
 * bytes (64-byte aligned); phase i (of n_ph) is bound to its slots in
 * them by tr_sp_phase_bind before its first tr_sp_phase_set. */
static inline size_t tr_sp_shares_stride(int n_ph) {
    return ((size_t)n_ph + 7) / 8 * 8;
}
static inline size_t tr_sp_shares_size(int n_ph, int nth) {
    return sizeof(uint64_t) * tr_sp_shares_stride(n_ph) * (size_t)nth;
}
static inline void tr_sp_phase_bind(tr_sp_phase *p, void *shares, int n_ph, int i, int nth) {
    p->share = (_Atomic uint64_t *)shares + i;
    p->share_stride = (long)tr_sp_shares_stride(n_ph);
    p->nth = nth;
}

/* The units of a weight: TR_SP_UNIT_ROWS rows each (the last may be
 * short); unit_bytes counts every weight read per unit. */
typedef struct tr_sp_split {
    long n_units, unit_bytes;
} tr_sp_split;

/* w's units when n_weights matrices of its shape are read per row. */
static inline tr_sp_split tr_sp_split_of(const tr_tensor *w, int n_weights) {
    long row_bytes = (long)tr_row_bytes(w->type, w->ne[0]) * n_weights, n = (long)w->ne[1];
    return (tr_sp_split){(n + TR_SP_UNIT_ROWS - 1) / TR_SP_UNIT_ROWS, row_bytes * TR_SP_UNIT_ROWS};
}

static inline uint64_t tr_sp_range(long front, long back) {
    return (uint64_t)front | (uint64_t)back << 32;
}

/* A bound phase (tr_sp_phase_bind) of n units of sp's size; sp.unit_bytes
 * 0: one unit a claim. */
static inline void tr_sp_phase_set(tr_sp_phase *p, long n, tr_sp_split sp) {
    long lo = sp.unit_bytes > 0 ? TR_SP_CHUNK_MIN / sp.unit_bytes : 1,
         hi = sp.unit_bytes > 0 ? TR_SP_CHUNK_MAX / sp.unit_bytes : 1;
    if (lo < 1) lo = 1;
    if (hi < lo) hi = lo;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    p->n = (int)n;
    p->min_u = (int)lo;
    p->max_u = (int)hi;
    for (int t = 0; t < p->nth; t++)
        atomic_store_explicit(&p->share[t * p->share_stride],
                              tr_sp_range(n * t / p->nth, n * (t + 1) / p->nth),
                              memory_order_relaxed);
}

static inline void tr_sp_wait(tr_sp_phase *p) {
    for (int i = 0; atomic_load_explicit(&p->done, memory_order_acquire) < p->n; i++)
        tr_cpu_relax(i);
}

/* Takes part of share t of p: half of what is left (within the claim
 * bounds), from the front (own) or the back (another's); false when the
 * share is empty. */
static inline bool tr_sp_take(tr_sp_phase *p, int t, bool own, int *u0, int *u1) {
    _Atomic uint64_t *slot = &p->share[t * p->share_stride];
    uint64_t cur = atomic_load_explicit(slot, memory_order_relaxed);
    for (;;) {
        const long front = (long)(cur & 0xffffffffu), back = (long)(cur >> 32), left = back - front;
        if (left <= 0) return false;
        long size = left / 2;
        size = size < p->min_u ? p->min_u : size > p->max_u ? p->max_u : size;
        if (size > left) size = left;
        const uint64_t next =
            own ? tr_sp_range(front + size, back) : tr_sp_range(front, back - size);
        if (atomic_compare_exchange_weak_explicit(slot, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *u0 = (int)(own ? front : back - size);
            *u1 = (int)(own ? front + size : back);
            return true;
        }
    }
}

/* The next units [*u0, *u1) of phase p for thread ith: from its own share,
 * else from the back of the next share that has units left; false when
 * none is left. */
static inline bool tr_sp_claim(tr_sp_phase *p, int ith, int *u0, int *u1) {
    for (int v = 0; v < p->nth; v++)
        if (tr_sp_take(p, (ith + v) % p->nth, v == 0, u0, u1)) return true;
    return false;
}

static inline void tr_sp_finish(tr_sp_phase *p, int u0, int u1) {
    atomic_fetch_add_explicit(&p->done, u1 - u0, memory_order_release);
}

/* Whether some share of p has units left. */
static inline bool tr_sp_has_work(tr_sp_phase *p) {
    for (int t = 0; t < p->nth; t++) {
        const uint64_t r =
            atomic_load_explicit(&p->share[t * p->share_stride], memory_order_relaxed);
        if ((r & 0xffffffffu) < (r >> 32)) return true;
    }
    return false;
}

/* Rows of units [u0, u1) of W (clipped to its rows): [*n0, *n1). */
static inline void tr_sp_unit_rows(const tr_tensor *W, long u0, long u1, long *n0, long *n1) {
    *n0 = u0 * TR_SP_UNIT_ROWS;
    *n1 = u1 * TR_SP_UNIT_ROWS < W->ne[1] ? u1 * TR_SP_UNIT_ROWS : W->ne[1];
}

/* Rows [n0, n1) of W for each of R inputs (input r at x + r * xs,
 * prepared as prep[r], into y + r * ys at the row's index), in blocks of
 * about TR_SP_ROWS_BLOCK bytes, each block for every input before the next
 * (one input: one call). */
static inline void tr_sp_rows_range(int R, const tr_tensor *W, long n0, long n1, const float *x,
                                    long xs, const float *const *prep, float *y, long ys,
                                    float *mv) {
    if (n0 >= n1) return;
    if (R == 1) {
        tr_matvec_rows(W, x, prep[0], y + n0, n0, n1, mv);
        return;
    }
    long bu = TR_SP_ROWS_BLOCK / ((long)tr_row_bytes(W->type, W->ne[0]) * TR_SP_UNIT_ROWS);
    const long block = (bu < 1 ? 1 : bu) * TR_SP_UNIT_ROWS;
    for (long b0 = n0; b0 < n1; b0 += block) {
        const long b1 = b0 + block < n1 ? b0 + block : n1;
        for (int r = 0; r < R; r++)
            tr_matvec_rows(W, x + r * xs, prep[r], y + r * ys + b0, b0, b1, mv);
    }
}

/* The same over W's units [u0, u1). */
static inline void tr_sp_rows(int R, const tr_tensor *W, long u0, long u1, const float *x, long xs,
                              const float *const *prep, float *y, long ys, float *mv) {
    long n0, n1;
    tr_sp_unit_rows(W, u0, u1, &n0, &n1);
    tr_sp_rows_range(R, W, n0, n1, x, xs, prep, y, ys, mv);
}

/* x prepared for each of the n weights W (once per weight type: the int8
 * x of Q8_0 rows, the group sums of K-quants) into buf[i]
 * (tr_matvec_scratch_floats floats each); prep[i] is what tr_matvec_rows
 * takes for W[i]. */
static inline void tr_sp_prepare(const tr_tensor *const *W, int n, const float *x,
                                 float *const *buf, const float **prep) {
    for (int i = 0; i < n; i++) {
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (W[j]->type == W[i]->type && W[j]->ne[0] == W[i]->ne[0]) same = j;
        prep[i] = same >= 0 ? prep[same] : tr_matvec_prepare(W[i], x, buf[i]);
    }
}

#endif
