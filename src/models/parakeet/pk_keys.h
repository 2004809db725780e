/* Typed GGUF key readers shared by the Parakeet loader files. Every reader
 * logs the key it rejects and returns TRANSCRIBE_ERR_GGUF: a missing
 * required key, a key of the wrong type (gguf-common.md §3.1 tri-state), or
 * a value out of range. */
#ifndef TR_MODELS_PARAKEET_KEYS_H
#define TR_MODELS_PARAKEET_KEYS_H

#include <stdbool.h>

#include "gguf/gguf.h"
#include "models/parakeet/pk_decode.h"
#include "transcribe.h"

/* Required UINT32 in [lo, hi]. */
transcribe_status pk_req_u32(const gguf_file *g, const char *key, int lo, int hi, int *out);
/* Optional UINT32 in [lo, hi] (def when absent). */
transcribe_status pk_opt_u32(const gguf_file *g, const char *key, int def, int lo, int hi,
                             int *out);
transcribe_status pk_opt_bool(const gguf_file *g, const char *key, bool def, bool *out);
/* Required (req) or optional string; *out NULL when absent. */
transcribe_status pk_get_str(const gguf_file *g, const char *key, bool req, const char **out);

/* Head keys of §3.4 and tensors of §4.3, dequantized to owned F32. */
transcribe_status pk_head_load(const gguf_file *g, int d_model, pk_head *h);

#endif
