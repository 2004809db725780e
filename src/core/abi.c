/* Size-versioned copy-out (abi.h). */
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
