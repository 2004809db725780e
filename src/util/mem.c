/* util/mem.h */
#include "util/mem.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if TR_MEM_BIG_MAPS
#include <sys/mman.h>
#endif

void tr_free_each(void *const *ps, size_t n) {
    for (size_t i = 0; i < n; i++) free(ps[i]);
}

void tr_mem_release_free(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* Below the mapping threshold (or without mappings): 64-byte aligned, as
 * a mapping is (aligned_alloc wants a multiple of the alignment). */
static void *small_alloc(size_t n) {
    if (n > SIZE_MAX - 63) return NULL;
    return aligned_alloc(64, n ? (n + 63) / 64 * 64 : 64);
}

#if TR_MEM_BIG_MAPS
#define HUGE_ALIGN ((uintptr_t)2 << 20)

void *tr_mem_big_alloc(size_t n) {
    if (n < TR_MEM_BIG_MIN) return small_alloc(n);
    const size_t len = (n + 4095) / 4096 * 4096;
    if (len > SIZE_MAX - HUGE_ALIGN) return NULL;
    char *raw =
        mmap(NULL, len + HUGE_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    /* keep the 2 MiB-aligned len bytes, unmap the rest */
    char *p = (char *)(((uintptr_t)raw + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    const size_t tail = (size_t)(raw + len + HUGE_ALIGN - (p + len));
    if (tail) munmap(p + len, tail);
#if defined(MADV_HUGEPAGE)
    madvise(p, len, MADV_HUGEPAGE); /* advice only: small pages where refused */
#endif
    return p;
}

void tr_mem_big_free(void *p, size_t n) {
    if (!p) return;
    if (n < TR_MEM_BIG_MIN) {
        free(p);
        return;
    }
    munmap(p, (n + 4095) / 4096 * 4096);
}
#else
void *tr_mem_big_alloc(size_t n) {
    return small_alloc(n);
}

void tr_mem_big_free(void *p, size_t n) {
    (void)n;
    free(p);
}
#endif
