/* Minimal test harness: CHECK records failures and keeps going; finish with
 * TEST_DONE(), which prints "N passed, N failed" and returns the exit code. */
#ifndef TR_TEST_UTIL_H
#define TR_TEST_UTIL_H

#include <math.h>
#include <stdio.h>

static int tr_test_pass, tr_test_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            tr_test_pass++;                                                                        \
        } else {                                                                                   \
            tr_test_fail++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            tr_test_pass++;                                                                        \
        } else {                                                                                   \
            tr_test_fail++;                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%g vs %g", (double)(a), (double)(b))

#define TEST_DONE()                                                                                \
    (printf("%d passed, %d failed\n", tr_test_pass, tr_test_fail), tr_test_fail ? 1 : 0)

#endif
