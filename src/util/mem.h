/* Releasing several owned buffers at once: a struct's free function lists
 * what it owns in one TR_FREE_ALL(a, b, c) instead of a free() a line. */
#ifndef TR_UTIL_MEM_H
#define TR_UTIL_MEM_H

#include <stddef.h>

/* free() of each of the n pointers of ps (NULL entries are fine). */
void tr_free_each(void *const *ps, size_t n);

/* free(a); free(b); ... for object pointers a, b, ... */
#define TR_FREE_ALL(...)                                                                           \
    tr_free_each((void *const[]){__VA_ARGS__},                                                     \
                 sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* Hands the allocator's free pages back to the system (glibc's malloc_trim;
 * nothing elsewhere). glibc keeps buffers freed below its dynamic mmap
 * threshold (up to 32 MiB) resident in its heap, so a run's transients
 * would otherwise still be resident when the next run allocates its own. */
void tr_mem_release_free(void);

#endif
