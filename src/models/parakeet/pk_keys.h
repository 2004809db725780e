/* Parakeet head loading, and the shared typed key readers
 * (gguf/gguf_keys.h) every Parakeet loader file uses. */
#ifndef TR_MODELS_PARAKEET_KEYS_H
#define TR_MODELS_PARAKEET_KEYS_H

#include <stdbool.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/parakeet/pk_decode.h"
#include "transcribe.h"

/* Head keys of docs/formats/parakeet.md §3.4 and tensors of §4.3, dequantized to owned F32. */
transcribe_status tr_pk_head_load(const gguf_file *g, int d_model, pk_head *h);

#endif
