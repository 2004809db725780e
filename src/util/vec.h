/* Growable arrays: the one place that computes a new capacity and calls
 * realloc. Callers keep their own (pointer, count, capacity) fields and ask
 * for room before writing:
 *
 *     pk_tok *v = tr_grow(t->v, &t->cap, t->n + 1, sizeof *v, 256);
 *     if (!v) return false;   // t->v and t->cap untouched, still owned
 *     t->v = v;
 *
 * The capacity doubles from `first` until it holds `need` items; first == 0
 * grows to exactly `need` (buffers sized once per input). Overflowing sizes
 * fail like out-of-memory. need >= 1. */
#ifndef TR_UTIL_VEC_H
#define TR_UTIL_VEC_H

#include <stddef.h>

/* Returns the (possibly moved) array with room for need items of elem bytes
 * and updates *cap, or NULL on failure (p and *cap unchanged). */
void *tr_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first);
/* The same for int capacities (at most INT_MAX items). */
void *tr_grow_int(void *p, int *cap, int need, size_t elem, int first);

/* Frees the first n strings of v and v itself (v NULL ok: string lists a
 * loader filled partly before failing). */
void tr_strv_free(char **v, int n);

#endif
