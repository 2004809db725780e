/* Size-versioned output structs (docs/c-api.md §19): every public out-struct
 * starts with a uint64_t struct_size the caller set; the library copies no
 * more than both sides know. Used by the dispatcher and by families' own
 * public entry points. */
#ifndef TR_CORE_ABI_H
#define TR_CORE_ABI_H

#include <stddef.h>

/* Copies src (lib_size bytes, starting with struct_size) into dst, keeping
 * dst's struct_size and copying at most the caller's size. */
void tr_copy_out(void *dst, const void *src, size_t lib_size);

#endif
