/* util/vec.h growth (doubling, exact, overflow refusal, failure leaves the
 * array owned), util/argmax.h (ties → lowest index) and util/mem.h's big
 * buffers (either side of TR_MEM_BIG_MIN: writable whole, 64-byte aligned,
 * 2 MiB-aligned when mapped, freed by size). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "util/argmax.h"
#include "util/mem.h"
#include "util/vec.h"

static void check_grow(void) {
    int *v = NULL;
    size_t cap = 0;
    for (size_t n = 0; n < 1000; n++) {
        int *p = tr_grow(v, &cap, n + 1, sizeof *p, 16);
        CHECK(p != NULL);
        if (!p) break;
        v = p;
        v[n] = (int)n;
    }
    CHECK(cap >= 1000 && cap == 1024); /* 16 doubled */
    long sum = 0;
    for (int i = 0; i < 1000; i++) sum += v[i];
    CHECK(sum == 999L * 1000 / 2);
    /* room already there: same pointer, same capacity */
    CHECK(tr_grow(v, &cap, 10, sizeof *v, 16) == v && cap == 1024);
    /* an impossible size fails and leaves the array to the caller */
    CHECK(tr_grow(v, &cap, SIZE_MAX / 2, sizeof *v, 16) == NULL && cap == 1024);
    free(v);

    float *f = NULL;
    size_t fc = 0;
    f = tr_grow(f, &fc, 37, sizeof *f, 0); /* exact */
    CHECK(f != NULL && fc == 37);
    free(f);

    char *c = NULL;
    int ic = 0;
    c = tr_grow_int(c, &ic, 5, 1, 8);
    CHECK(c != NULL && ic == 8);
    char *c2 = tr_grow_int(c, &ic, 9, 1, 8);
    CHECK(c2 != NULL && ic == 16);
    if (c2) c = c2;
    CHECK(tr_grow_int(c, &ic, INT_MAX, SIZE_MAX / 4, 8) == NULL && ic == 16);
    free(c);
}

static void check_strv(void) {
    char **v = calloc(3, sizeof *v);
    CHECK(v != NULL);
    if (!v) return;
    v[0] = malloc(4);
    v[1] = malloc(4);
    tr_strv_free(v, 2); /* a list filled partly: the sanitizer build checks no leak */
    tr_strv_free(NULL, 5);
    CHECK(1);
}

static void check_argmax(void) {
    const float a[] = {1.0f, 3.0f, 2.0f, 3.0f};
    CHECK(tr_argmax(a, 4) == 1);
    CHECK(tr_argmax(a, 1) == 0);
    const float b[] = {-5.0f, -5.0f};
    CHECK(tr_argmax(b, 2) == 0);
}

static void check_big(void) {
    const size_t sizes[] = {
        0, 1000, TR_MEM_BIG_MIN - 1, TR_MEM_BIG_MIN, TR_MEM_BIG_MIN + 4097, (size_t)5 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const size_t n = sizes[i];
        unsigned char *p = tr_mem_big_alloc(n);
        CHECK_MSG(p != NULL, "tr_mem_big_alloc(%zu) failed", n);
        if (!p) continue;
        for (size_t k = 0; k < n; k++) p[k] = (unsigned char)k;
        size_t bad = 0;
        for (size_t k = 0; k < n; k++) bad += p[k] != (unsigned char)k;
        CHECK_MSG(bad == 0, "%zu of %zu bytes changed", bad, n);
        CHECK_MSG(((uintptr_t)p & 63) == 0, "%zu bytes at %p: not 64-byte aligned", n, (void *)p);
#if defined(__linux__)
        if (TR_MEM_BIG_MAPS && n >= TR_MEM_BIG_MIN)
            CHECK_MSG(((uintptr_t)p & (((uintptr_t)2 << 20) - 1)) == 0, "%zu bytes at %p", n,
                      (void *)p);
#endif
        tr_mem_big_free(p, n);
    }
    tr_mem_big_free(NULL, (size_t)8 << 20);
}

int main(void) {
    check_big();
    check_grow();
    check_strv();
    check_argmax();
    return TEST_DONE();
}
