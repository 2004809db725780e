/* Size-versioned copy-out and the extension check (abi.h). */
#include <stdint.h>
#include <string.h>

#include "core/abi.h"

void tr_copy_out(void *dst, const void *src, size_t lib_size) {
    uint64_t caller;
    memcpy(&caller, dst, sizeof caller);
    size_t n = caller < lib_size ? (size_t)caller : lib_size;
    if (n > sizeof caller) {
        memcpy((char *)dst + sizeof caller, (const char *)src + sizeof caller, n - sizeof caller);
    }
}

transcribe_status tr_ext_check(const struct transcribe_ext *ext, uint32_t expected_kind,
                               uint64_t min_size) {
    if (!ext) return TRANSCRIBE_OK;
    if (ext->size < sizeof(struct transcribe_ext)) return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    if (ext->kind != expected_kind) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ext->size < min_size) return TRANSCRIBE_ERR_BAD_STRUCT_SIZE;
    return TRANSCRIBE_OK;
}
