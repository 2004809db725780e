/* N-gram lookup drafts (spec_draft.h). */
#include "nn/spec_draft.h"

#include <string.h>

int tr_spec_draft(const int32_t *ids, int n_ids, int k, int32_t *draft) {
    if (!ids || !draft || k <= 0) return 0;
    for (int n = TR_SPEC_NGRAM_MAX; n >= 1; n--) {
        if (n_ids <= n) continue;
        const int32_t *tail = ids + n_ids - n;
        /* latest start j < n_ids - n whose n ids equal the tail: what
         * followed it begins at j + n <= n_ids - 1, so at least one id */
        for (int j = n_ids - n - 1; j >= 0; j--) {
            if (memcmp(ids + j, tail, (size_t)n * sizeof *ids) != 0) continue;
            int avail = n_ids - (j + n), m = avail < k ? avail : k;
            memcpy(draft, ids + j + n, (size_t)m * sizeof *ids);
            return m;
        }
    }
    return 0;
}
