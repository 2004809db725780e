/* The work-claiming scheme of the one-pool-run decode steps: the causal
 * LM's (causal_lm_step.c) and the encoder-decoder's (encdec_step1.c).
 *
 * A decode step is memory-bound: it streams every weight once and does
 * little else. Run as a sequence of kernel calls it pays a pool dispatch
 * per product and the serial work in between (norms, rotation, cache
 * writes, activations, residual adds) while the other threads wait. These
 * steps run as one pool run through a fixed list of phases. Each phase is
 * cut into units of TR_SP_UNIT_ROWS weight rows (or one attention head);
 * a thread claims a share of what is left from the phase's counter
 * (guided: a 2·nth-th of the rest, between 64 KiB and 1 MiB of weights, so
 * a thread streams long runs while much is left and the phase still ends
 * on small claims; each claim restarts the hardware prefetcher, and a run
 * of 64 KiB claims reads ~8 % below one long stream at 25 GB/s). A thread
 * that finds nothing left waits until every unit of the phase is done: a
 * barrier on work, not on threads, so a descheduled thread holds up only
 * the units it has claimed and a thread that starts late finds the early
 * phases done and catches up; the parts of a pool run never wait for one
 * another's arrival, as tr_pool_run requires.
 *
 * Every weight row is computed by tr_matvec_rows, the M == 1 path of
 * tr_matmul, so a step's values do not depend on which thread takes which
 * unit. */
#ifndef TR_NN_STEP_PHASE_H
#define TR_NN_STEP_PHASE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "tensor/matmul.h"
#include "tensor/pool.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

/* Claims are whole units of TR_SP_UNIT_ROWS rows, of at least
 * TR_SP_CHUNK_MIN of weights (the tail a phase can end on) and at most
 * TR_SP_CHUNK_MAX. */
#define TR_SP_UNIT_ROWS 16
#define TR_SP_CHUNK_MIN (64 << 10)
#define TR_SP_CHUNK_MAX (1 << 20)
/* With several input rows, a claim is swept in blocks of about this many
 * bytes of weights (whole units), each block for every row before the
 * next, so the weights are streamed once for all rows. */
#define TR_SP_ROWS_BLOCK (256 << 10)

typedef struct tr_sp_phase {
    _Alignas(64) atomic_int claim; /* next unclaimed unit */
    atomic_int done;               /* units finished */
    int n;                         /* units */
    int min_u, max_u;              /* bounds of one claim, in units */
} tr_sp_phase;

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

/* A phase of n units of sp's size; sp.unit_bytes 0: one unit a claim. */
static inline void tr_sp_phase_set(tr_sp_phase *p, long n, tr_sp_split sp) {
    long lo = sp.unit_bytes > 0 ? TR_SP_CHUNK_MIN / sp.unit_bytes : 1,
         hi = sp.unit_bytes > 0 ? TR_SP_CHUNK_MAX / sp.unit_bytes : 1;
    if (lo < 1) lo = 1;
    if (hi < lo) hi = lo;
    atomic_store_explicit(&p->claim, 0, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    p->n = (int)n;
    p->min_u = (int)lo;
    p->max_u = (int)hi;
}

static inline void tr_sp_wait(tr_sp_phase *p) {
    for (int i = 0; atomic_load_explicit(&p->done, memory_order_acquire) < p->n; i++)
        tr_cpu_relax(i);
}

/* The next units [*u0, *u1) of phase p for one of nth threads; false when
 * none is left. A phase of fewer than 2·nth minimal claims (a small
 * model's matrices) is claimed in 2·nth-th shares of the whole, so one
 * thread does not take most of it while the others wait. */
static inline bool tr_sp_claim(tr_sp_phase *p, int nth, int *u0, int *u1) {
    int cur = atomic_load_explicit(&p->claim, memory_order_relaxed);
    const int fair = (p->n + 2 * nth - 1) / (2 * nth), lo = p->min_u < fair ? p->min_u : fair;
    while (cur < p->n) {
        int size = (p->n - cur) / (2 * nth);
        size = size < lo ? lo : size > p->max_u ? p->max_u : size;
        int end = size < p->n - cur ? cur + size : p->n;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &cur, end, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *u0 = cur;
            *u1 = end;
            return true;
        }
    }
    return false;
}

static inline void tr_sp_finish(tr_sp_phase *p, int u0, int u1) {
    atomic_fetch_add_explicit(&p->done, u1 - u0, memory_order_release);
}

static inline bool tr_sp_has_work(tr_sp_phase *p) {
    return atomic_load_explicit(&p->claim, memory_order_relaxed) < p->n;
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
