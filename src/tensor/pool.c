/* Persistent worker pool. Each tr_pool_run publishes the task, resets a
 * part counter and bumps a generation number; the workers spin on the
 * generation briefly (runs come in quick succession during inference) and
 * then sleep on a condition variable. The caller and the workers claim the
 * parts 0..n-1 from the counter, so when the OS deschedules a worker (the
 * cores are often shared) the caller simply runs that part itself instead
 * of waiting for the worker to wake up. Parts therefore run on any thread,
 * one at a time per thread; results do not depend on which. */
#include "tensor/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/mem.h"

#define SPIN_ITERS 384 /* ~0.1 ms of pause/yield before sleeping */

typedef struct {
    struct tr_pool *pool;
    int ith;
} worker_arg;

struct tr_pool {
    int n;
    pthread_t *threads;
    worker_arg *args;
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* generation changed or stop */
    pthread_cond_t done_cv; /* done reached n */
    atomic_uint gen;
    atomic_int next; /* next unclaimed part */
    atomic_int done; /* parts finished */
    atomic_int stop;
    atomic_int failures; /* TR_POOL_FAIL_* bits, see tr_pool_note_failure */
    tr_pool_fn fn;
    void *ctx;
    float *scratch[TR_POOL_SCRATCH_SLOTS]; /* tr_pool_scratch_slot */
    size_t scratch_floats[TR_POOL_SCRATCH_SLOTS];
    /* the most each slot held before its last release: a released slot
     * comes back at that size at once instead of growing through the same
     * steps again, each a fresh buffer faulted in anew (pages it does not
     * write are never resident) */
    size_t scratch_high[TR_POOL_SCRATCH_SLOTS];
};

/* Claims and runs parts until none is left; true if this thread finished
 * the last part of the run. */
static bool run_parts(tr_pool *pool) {
    bool last = false;
    for (;;) {
        int i = atomic_fetch_add_explicit(&pool->next, 1, memory_order_acq_rel);
        if (i >= pool->n) return last;
        pool->fn(pool->ctx, i, pool->n); /* read after the claim: see tr_pool_run */
        if (atomic_fetch_add_explicit(&pool->done, 1, memory_order_acq_rel) == pool->n - 1)
            last = true;
    }
}

static void *worker_main(void *p) {
    worker_arg *a = (worker_arg *)p;
    tr_pool *pool = a->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load_explicit(&pool->gen, memory_order_acquire);
        for (int i = 0; g == seen && i < SPIN_ITERS; i++) {
            if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) return NULL;
            tr_cpu_relax(i);
            g = atomic_load_explicit(&pool->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&pool->mu);
            while ((g = atomic_load_explicit(&pool->gen, memory_order_acquire)) == seen &&
                   !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mu);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop)) return NULL;
        seen = g;
        if (run_parts(pool)) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done_cv);
            pthread_mutex_unlock(&pool->mu);
        }
    }
}

tr_pool *tr_pool_create(int n_threads) {
    if (n_threads <= 0) n_threads = 1;
    tr_pool *pool = calloc(1, sizeof(*pool));
    if (!pool) {
        TR_ERROR("pool: out of memory");
        return NULL;
    }
    pool->n = n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    atomic_init(&pool->gen, 0);
    atomic_init(&pool->next, 0);
    atomic_init(&pool->done, 0);
    atomic_init(&pool->stop, 0);
    atomic_init(&pool->failures, 0);
    if (n_threads > 1) {
        pool->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        pool->args = calloc((size_t)n_threads - 1, sizeof(worker_arg));
        if (!pool->threads || !pool->args) {
            TR_ERROR("pool: out of memory");
            tr_pool_free(pool);
            return NULL;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            pool->args[i].pool = pool;
            pool->args[i].ith = i + 1;
            if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->args[i]) != 0) {
                TR_ERROR("pool: cannot start thread %d of %d", i + 1, n_threads);
                tr_pool_free(pool);
                return NULL;
            }
            pool->n_started++;
        }
    }
    return pool;
}

void tr_pool_free(tr_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->stop, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_started; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done_cv);
    free(pool->threads);
    free(pool->args);
    tr_pool_scratch_release(pool);
    free(pool);
}

int tr_pool_n_threads(const tr_pool *pool) {
    return pool ? pool->n : 1;
}

void tr_pool_run(tr_pool *pool, tr_pool_fn fn, void *ctx) {
    if (!pool || pool->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    /* The previous run is complete (done == n was observed), so no thread
     * reads fn/ctx now. A worker claims a part only through `next`, whose
     * reset below is ordered after these writes. */
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->next, 0, memory_order_release);
    /* Publishing the generation under the mutex means a worker that checked
     * it and is about to wait cannot miss the broadcast. */
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add_explicit(&pool->gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);

    run_parts(pool);

    for (int i = 0; i < SPIN_ITERS; i++) {
        if (atomic_load_explicit(&pool->done, memory_order_acquire) == pool->n) return;
        tr_cpu_relax(i);
    }
    pthread_mutex_lock(&pool->mu);
    while (atomic_load_explicit(&pool->done, memory_order_acquire) != pool->n)
        pthread_cond_wait(&pool->done_cv, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}

float *tr_pool_scratch_slot(tr_pool *pool, int slot, size_t floats) {
    if (!pool || slot < 0 || slot >= TR_POOL_SCRATCH_SLOTS) return NULL;
    if (floats > pool->scratch_floats[slot]) {
        if (floats > SIZE_MAX / sizeof(float)) return NULL;
        if (floats < pool->scratch_high[slot]) floats = pool->scratch_high[slot];
        /* a slot is written whole soon after it grows (packed X, packed
         * K/V, panels): in huge pages from 2 MiB up (util/mem.h), so a model
         * that hands its slots back after every encode (Moonshine) does not
         * fault them in again 4 KiB at a time */
        float *p = tr_mem_big_alloc(floats * sizeof(float));
        if (!p) return NULL;
        tr_mem_big_free(pool->scratch[slot], pool->scratch_floats[slot] * sizeof(float));
        pool->scratch[slot] = p;
        pool->scratch_floats[slot] = floats;
    }
    return pool->scratch[slot];
}

void tr_pool_scratch_release(tr_pool *pool) {
    if (!pool) return;
    for (int i = 0; i < TR_POOL_SCRATCH_SLOTS; i++) {
        if (pool->scratch_floats[i] > pool->scratch_high[i])
            pool->scratch_high[i] = pool->scratch_floats[i];
        tr_mem_big_free(pool->scratch[i], pool->scratch_floats[i] * sizeof(float));
        pool->scratch[i] = NULL;
        pool->scratch_floats[i] = 0;
    }
}

float *tr_pool_scratch(tr_pool *pool, size_t floats) {
    return tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTENTION, floats);
}

static int affinity_cpus(void) {
    int n = 1;
#ifdef CPU_COUNT
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
#endif
    return n < 1 ? 1 : n;
}

int tr_default_n_threads(void) {
    int n = affinity_cpus();
    return n > 8 ? 8 : n;
}

int tr_max_n_threads(void) {
    return 4 * affinity_cpus();
}

void tr_pool_note_failure(tr_pool *pool, int kind) {
    if (pool) atomic_fetch_or(&pool->failures, kind);
}

int tr_pool_take_failures(tr_pool *pool) {
    return pool ? atomic_exchange(&pool->failures, 0) : 0;
}
