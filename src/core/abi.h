/* Size-versioned structs (c-api.md §19): every public out-struct starts
 * with a uint64_t struct_size the caller set; the library copies no more
 * than both sides know. Extensions (struct transcribe_ext) carry their own
 * size and kind, checked by tr_ext_check. Used by the dispatcher and by the
 * families. */
#ifndef TR_CORE_ABI_H
#define TR_CORE_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "transcribe.h"

/* Copies src (lib_size bytes, starting with struct_size) into dst, keeping
 * dst's struct_size and copying at most the caller's size. */
void tr_copy_out(void *dst, const void *src, size_t lib_size);

/* The one extension check (the public transcribe_ext_check is its
 * wrapper): OK for NULL; BAD_STRUCT_SIZE when ext->size is below the
 * extension header; INVALID_ARG when the kind is not expected_kind;
 * BAD_STRUCT_SIZE when ext->size is below min_size. Logs nothing: callers
 * say why in their own words. */
transcribe_status tr_ext_check(const struct transcribe_ext *ext, uint32_t expected_kind,
                               uint64_t min_size);

#endif
