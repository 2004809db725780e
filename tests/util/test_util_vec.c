/* util/vec.h growth (doubling, exact, overflow refusal, failure leaves the
 * array owned) and util/argmax.h (ties → lowest index). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "util/argmax.h"
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

int main(void) {
    check_grow();
    check_strv();
    check_argmax();
    return TEST_DONE();
}
