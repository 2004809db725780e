/* Growable arrays (vec.h). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/vec.h"

void *tr_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap && p) return p;
    if (elem == 0 || need > SIZE_MAX / elem) return NULL;
    size_t nc = need;
    if (first > 0) {
        nc = *cap ? *cap : first;
        while (nc < need) nc = nc > SIZE_MAX / 2 ? need : nc * 2;
        if (nc > SIZE_MAX / elem) nc = need;
    }
    void *q = realloc(p, nc * elem);
    if (!q) return NULL;
    *cap = nc;
    return q;
}

void *tr_grow_int(void *p, int *cap, int need, size_t elem, int first) {
    if (need < 1) need = 1;
    size_t c = *cap > 0 ? (size_t)*cap : 0;
    size_t limit = (size_t)INT_MAX;
    if ((size_t)need > limit) return NULL;
    void *q = tr_grow(p, &c, (size_t)need, elem, first > 0 ? (size_t)first : 0);
    if (!q) return NULL;
    *cap = c > limit ? INT_MAX : (int)c;
    return q;
}

void tr_strv_free(char **v, int n) {
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}
