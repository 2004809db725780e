/* util/mem.h */
#include <stdlib.h>

#include "util/mem.h"

void tr_free_each(void *const *ps, size_t n) {
    for (size_t i = 0; i < n; i++) free(ps[i]);
}
