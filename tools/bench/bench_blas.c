/* OpenBLAS as a run-time baseline: dlopen'ed so that neither the library
 * nor this tool needs it at build time. */
#include <dlfcn.h>
#include <stddef.h>

#include "bench.h"

bool bench_blas_open(int threads, bench_blas *b) {
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
