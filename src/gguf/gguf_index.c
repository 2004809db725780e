/* Open-addressing hash index from names to item indices. Models carry
 * ~1000 tensors and ~50 keys; lookups happen per tensor at load time, so a
 * linear scan would be quadratic. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_internal.h"

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

bool tr_gguf_index_init(gguf_index *ix, int64_t n, gguf_name_fn name, const void *ctx) {
    uint64_t cap = 8;
    while (cap < (uint64_t)n * 2) {
        if (cap > (SIZE_MAX / sizeof(int64_t)) / 2) return false;
        cap *= 2;
    }
    ix->slots = malloc(cap * sizeof(int64_t));
    if (!ix->slots) return false;
    memset(ix->slots, 0xff, cap * sizeof(int64_t)); /* all -1 */
    ix->mask = cap - 1;
    ix->name = name;
    ix->ctx = ctx;
    return true;
}

int64_t tr_gguf_index_add(gguf_index *ix, int64_t i) {
    const char *name = ix->name(ix->ctx, i);
    for (uint64_t s = hash_name(name) & ix->mask;; s = (s + 1) & ix->mask) {
        int64_t j = ix->slots[s];
        if (j < 0) {
            ix->slots[s] = i;
            return -1;
        }
        if (strcmp(ix->name(ix->ctx, j), name) == 0) return j;
    }
}

int64_t tr_gguf_index_find(const gguf_index *ix, const char *name) {
    if (!ix->slots || !name) return -1;
    for (uint64_t s = hash_name(name) & ix->mask;; s = (s + 1) & ix->mask) {
        int64_t j = ix->slots[s];
        if (j < 0) return -1;
        if (strcmp(ix->name(ix->ctx, j), name) == 0) return j;
    }
}

void tr_gguf_index_free(gguf_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
}
