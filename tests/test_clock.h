/* Wall time and resident memory for the long-running tests that print how
 * per-feed cost and memory evolve (no timing is asserted tightly). */
#ifndef TR_TEST_CLOCK_H
#define TR_TEST_CLOCK_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double tr_test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Resident set size in MiB (Linux), or -1. */
static inline double tr_test_rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long pages = 0, res = 0;
    int got = fscanf(f, "%ld %ld", &pages, &res);
    fclose(f);
    return got == 2 ? (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : -1;
}

#endif
