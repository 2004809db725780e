/* Persistent worker pool. A pool of n threads runs tasks on the caller plus
 * n-1 workers. Work is split by the task itself from (ith, nth), so results
 * never depend on scheduling. Not re-entrant: one tr_pool_run at a time.
 * Each part runs exactly once, on any of the threads (the caller included,
 * which takes parts a busy or descheduled worker has not started), so parts
 * must never wait for one another. */
#ifndef TR_TENSOR_POOL_H
#define TR_TENSOR_POOL_H

#include <sched.h>
#include <stddef.h>

typedef struct tr_pool tr_pool;
typedef void (*tr_pool_fn)(void *ctx, int ith, int nth);

tr_pool *tr_pool_create(int n_threads);     /* n_threads <= 0: 1 */
void tr_pool_free(tr_pool *pool);           /* NULL ok */
int tr_pool_n_threads(const tr_pool *pool); /* NULL pool: 1 */
/* Runs fn(ctx, i, n) for i in [0, n) and returns when all are done. A NULL
 * pool runs fn(ctx, 0, 1) on the caller. */
void tr_pool_run(tr_pool *pool, tr_pool_fn fn, void *ctx);

/* Failure record. Kernels keep a void signature (the model code calls
 * hundreds of them per run); one that cannot finish logs why and notes the
 * kind here, and whoever owns the run takes the record when the run ends
 * and turns it into a status. Safe from any thread; a NULL pool keeps only
 * the log line. */
enum { TR_POOL_FAIL_OOM = 1, TR_POOL_FAIL_INVALID = 2 };
void tr_pool_note_failure(tr_pool *pool, int kind);
/* Kinds noted since the last take (bit mask, 0 = none); clears them. */
int tr_pool_take_failures(tr_pool *pool);

/* Scratch that lives with the pool, for kernels called hundreds of times a
 * run (a decoder step's attention): `floats` floats, 64-byte aligned, kept
 * and reused until a larger request or tr_pool_free, so a step does not map,
 * fault in and unmap fresh pages every call. Only the thread that submits
 * runs may ask, between runs; the buffer is the caller's until its next
 * request (split it by part index: parts never overlap in time on one
 * index). NULL on OOM or for a NULL pool (then allocate yourself). */
float *tr_pool_scratch(tr_pool *pool, size_t floats);
/* The same with a slot per kernel that keeps scratch between calls, so
 * kernels that run one after another never hand each other's buffers
 * around (attention, the GEMM's packed X, attention's packed K/V, the
 * GEMM's per-part panels). The panels slot is split by part index (a
 * part's share, not a thread's: parts never overlap in time on one index);
 * the submitting thread allocates it, so workers do not fill per-thread
 * malloc arenas with freed panels; the slot is idle outside a GEMM, so a
 * pool task's own single-thread products may take their panels from it
 * (tr_matmul_f32_nt_buf). TR_POOL_SCRATCH_MODEL: a model's own activations
 * across the kernel calls of one forward pass (an encoder's block
 * scratch), which no kernel touches. */
enum {
    TR_POOL_SCRATCH_ATTENTION = 0,
    TR_POOL_SCRATCH_GEMM_X = 1,
    TR_POOL_SCRATCH_ATTN_KV = 2,
    TR_POOL_SCRATCH_GEMM_PANELS = 3,
    TR_POOL_SCRATCH_MODEL = 4,
    TR_POOL_SCRATCH_SLOTS = 5
};
float *tr_pool_scratch_slot(tr_pool *pool, int slot, size_t floats);
/* Frees every slot's scratch (the next request allocates again, at once
 * the most the slot held so far): for a model whose encoder needed large
 * scratch that its decoder does not. Only the thread that submits runs,
 * between runs. */
void tr_pool_scratch_release(tr_pool *pool);

/* Default thread count: CPUs in the affinity mask, capped at 8. */
int tr_default_n_threads(void);
/* The most threads a session starts: 4x the CPUs in the affinity mask (as
 * the CLI caps --threads); more only cost memory and switches, and a
 * careless count (threads=10**6) would start threads until memory ran out. */
int tr_max_n_threads(void);

/* Busy-wait step i: pause at first, then yield so an oversubscribed or
 * shared machine still runs the thread being waited for. */
static inline void tr_cpu_relax(int i) {
    if (i >= 256) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Split [0, n) into nth nearly equal contiguous ranges; range of part ith. */
static inline void tr_split_range(long n, int ith, int nth, long *begin, long *end) {
    long base = n / nth, rem = n % nth;
    *begin = ith * base + (ith < rem ? ith : rem);
    *end = *begin + base + (ith < rem ? 1 : 0);
}

#endif
