/* OpenBLAS as a run-time baseline: dlopen'ed so that neither the library
 * nor this tool needs it at build time. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "bench.h"

bool bench_blas_open(int threads, bench_blas *b) {
    /* OpenBLAS's workers busy-wait for about 2^28 cycles (~0.1 s) after
     * each call. The bench alternates its calls with ours, so those
     * spinning workers took one of the two cores from the call that
     * followed: whole cases of ours ran at exactly half speed (2-core Zen
     * 3 host: F16 GEMM 19 ms or 38 ms, OpenBLAS 20 ms either way). The
     * shortest wait (2^4 cycles) ends that; OpenBLAS's own times do not
     * change. Read when the library initialises, so set before dlopen. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    b->handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!b->handle) b->handle = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    b->sgemm = NULL;
    if (!b->handle) return false;
    *(void **)&b->sgemm = dlsym(b->handle, "cblas_sgemm");
    void (*set_threads)(int) = NULL;
    *(void **)&set_threads = dlsym(b->handle, "openblas_set_num_threads");
    if (set_threads && threads > 0) set_threads(threads);
    if (!b->sgemm) {
        dlclose(b->handle);
        b->handle = NULL;
        return false;
    }
    return true;
}

void bench_blas_close(bench_blas *b) {
    if (b->handle) dlclose(b->handle);
    b->handle = NULL;
    b->sgemm = NULL;
}
