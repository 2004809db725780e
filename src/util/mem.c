/* util/mem.h */
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "util/mem.h"

void tr_free_each(void *const *ps, size_t n) {
    for (size_t i = 0; i < n; i++) free(ps[i]);
}

void tr_mem_release_free(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
