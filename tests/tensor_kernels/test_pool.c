/* Thread pool: every part runs exactly once per run, across many runs
 * (exercising both the spin and the sleep paths), for several sizes; the
 * scratch slots and their release. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "tensor/pool.h"
#include "test_util.h"

typedef struct {
    atomic_int hits[8];
    atomic_int calls;
    atomic_int nth_seen;
} ctx_t;

static void task(void *arg, int ith, int nth) {
    ctx_t *c = (ctx_t *)arg;
    atomic_fetch_add(&c->hits[ith], 1);
    atomic_fetch_add(&c->calls, 1);
    atomic_store(&c->nth_seen, nth); /* same value from every thread */
}

int main(void) {
    CHECK(tr_default_n_threads() >= 1 && tr_default_n_threads() <= 8);
    CHECK(tr_pool_n_threads(NULL) == 1);
    for (int n = 0; n <= 4; n++) {
        tr_pool *pool = tr_pool_create(n);
        CHECK(pool != NULL);
        int nn = n <= 0 ? 1 : n;
        CHECK(tr_pool_n_threads(pool) == nn);
        ctx_t c = {0};
        /* more threads than cores is slow by nature: fewer runs there */
        int runs = nn <= 2 ? 2000 : 100;
        for (int r = 0; r < runs; r++) {
            if (r == runs / 2) { /* let workers fall asleep, then wake them */
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            tr_pool_run(pool, task, &c);
        }
        CHECK(atomic_load(&c.calls) == runs * nn);
        for (int i = 0; i < nn; i++) CHECK(atomic_load(&c.hits[i]) == runs);
        CHECK(atomic_load(&c.nth_seen) == nn);
        tr_pool_free(pool);
    }
    /* scratch slots: kept while requests fit, grown past them, and
     * released (then allocated again) */
    {
        tr_pool *pool = tr_pool_create(2);
        float *a = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, 1000);
        CHECK(a != NULL);
        a[999] = 1.0f;
        CHECK(tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, 500) == a);
        float *g = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_GEMM_X, 10);
        CHECK(g != NULL && g != a);
        tr_pool_scratch_release(pool);
        float *b2 = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, 2000);
        CHECK(b2 != NULL);
        b2[1999] = 2.0f;
        tr_pool_scratch_release(pool);
        /* a released slot comes back at the most it held (2000 floats): a
         * smaller request, then the old size again, take one buffer */
        float *b3 = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, 10);
        CHECK(b3 != NULL);
        if (b3) b3[1999] = 3.0f;
        CHECK(tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_ATTN_KV, 2000) == b3);
        /* 64-byte aligned on either side of the huge-page threshold */
        const size_t big = ((size_t)3 << 20) / sizeof(float);
        float *h = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_MODEL, big);
        CHECK(h != NULL && ((uintptr_t)h & 63) == 0 && ((uintptr_t)b3 & 63) == 0);
        if (h) h[big - 1] = 4.0f;
        tr_pool_scratch_release(pool);
        tr_pool_scratch_release(NULL);
        CHECK(tr_pool_scratch_slot(NULL, TR_POOL_SCRATCH_GEMM_X, 10) == NULL);
        tr_pool_free(pool);
    }
    ctx_t c = {0};
    tr_pool_run(NULL, task, &c);
    CHECK(atomic_load(&c.hits[0]) == 1 && atomic_load(&c.nth_seen) == 1);
    tr_pool_free(NULL);
    long b, e, total = 0;
    for (int i = 0; i < 3; i++) {
        tr_split_range(10, i, 3, &b, &e);
        total += e - b;
    }
    CHECK(total == 10);
    return TEST_DONE();
}
