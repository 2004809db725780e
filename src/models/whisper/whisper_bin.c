/* Legacy whisper.cpp .bin adapter (gguf-common.md §11.3): derived
 * hyperparameters, special ids, suppression lists, languages, front end and
 * tokenizer, on top of the .bin container parser. */
#include <stdlib.h>

#include "gguf/gguf.h"
#include "models/whisper/whisper_src.h"
#include "util/log.h"

const tr_tensor *wh_src_tensor(wh_src *src, const char *name, uint32_t types_mask, int n_dims,
                               const int64_t *ne) {
    if (src->gguf) return gguf_require_tensor(src->gguf, name, types_mask, n_dims, ne);
    TR_ERROR("whisper: tensor '%s' unavailable (no weight source)", name);
    return NULL;
}

transcribe_status wh_load_bin(const void *data, size_t size, wh_model *m) {
    (void)data;
    (void)size;
    (void)m;
    TR_ERROR("whisper: legacy .bin loading is not available yet");
    return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
}

void wh_bin_free(void *bin) {
    (void)bin;
}
