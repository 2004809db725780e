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

/* A buffer of n bytes that is written whole soon after it is made (an
 * encoder's cross K/V): n >= TR_MEM_BIG_MIN takes a mapping of its own at
 * a 2 MiB boundary with transparent huge pages asked for (Linux's
 * MADV_HUGEPAGE, honoured where THP is "madvise" or "always"), so writing
 * it faults once per 2 MiB instead of once per 4 KiB page; the last
 * partial 2 MiB keeps small pages, so nothing beyond n becomes resident.
 * Smaller buffers, systems without mmap and sanitizer builds
 * (TR_MEM_BIG_MAPS 0) use aligned_alloc. Always 64-byte aligned. NULL on
 * OOM.
 * Free with tr_mem_big_free and the same n; the memory goes back to the
 * system at once. */
#define TR_MEM_BIG_MIN ((size_t)2 << 20)
/* 1 where big buffers are mapped as above; 0 where they are malloc'ed:
 * no mmap, or an AddressSanitizer build, which checks the bounds of
 * malloc'ed buffers only (a mapping of our own would go unchecked). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TR_MEM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TR_MEM_ASAN)
#define TR_MEM_ASAN 1
#endif
#if (defined(__unix__) || defined(__APPLE__)) && !defined(TR_MEM_ASAN)
#define TR_MEM_BIG_MAPS 1
#else
#define TR_MEM_BIG_MAPS 0
#endif
void *tr_mem_big_alloc(size_t n);
void tr_mem_big_free(void *p, size_t n);

#endif
