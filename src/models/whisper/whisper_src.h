/* Where Whisper weights come from: a GGUF file or a legacy whisper.cpp .bin
 * (docs/formats/gguf.md §11) exposed under the canonical GGUF tensor names. */
#ifndef TR_MODELS_WHISPER_SRC_H
#define TR_MODELS_WHISPER_SRC_H

#include <stddef.h>
#include <stdint.h>

#include "models/whisper/whisper.h"

struct gguf_file;

typedef struct wh_src {
    const struct gguf_file *gguf; /* one of gguf / bin */
    void *bin;
} wh_src;

/* Looks up a tensor by canonical name and checks dtype mask and shape
 * (logs an error naming it and returns NULL on failure). */
const tr_tensor *tr_wh_src_tensor(wh_src *src, const char *name, uint32_t types_mask, int n_dims,
                                  const int64_t *ne);

/* Legacy .bin: parses the image, fills hparams, front end, tokenizer, special
 * ids, suppression lists, languages and capabilities (docs/formats/gguf.md §11.3) and stores the
 * parser state in m->bin. */
transcribe_status tr_wh_load_bin(const void *data, size_t size, wh_model *m);
void tr_wh_bin_free(void *bin);

#endif
