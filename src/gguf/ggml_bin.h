/* Legacy whisper.cpp ggml `.bin` model files (docs/formats/gguf.md §11).
 *
 * The container has no alignment anywhere, so tensor payloads cannot be used
 * in place: they are copied once into a 64-byte-aligned arena owned by the
 * tr_ggml_bin (whisper.cpp also reads them into memory). Tensors are exposed
 * under their canonical GGUF names (§11.4), conv biases collapsed to 1-D, so
 * the family that reads these files runs the same code for both formats
 * (what the header implies about the model — special ids, languages — is
 * that family's business). Two front-end
 * tensors that do not exist in the file are synthesised, as a GGUF Whisper
 * file would carry them: `frontend.mel_filterbank` (F32, ne [n_freq, n_mel],
 * from the header) and `frontend.window` (F32 [400], periodic Hann).
 *
 * Validation follows §11.2 (the geometry gate returns UNSUPPORTED_ARCH; any
 * other defect GGUF) except that a file with no tensors is accepted here, so
 * that the weightless vocabulary files can be read: a model loader must
 * check tr_ggml_bin_n_file_tensors() > 0 itself. */
#ifndef TR_GGUF_GGML_BIN_H
#define TR_GGUF_GGML_BIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/tensor.h"
#include "transcribe.h"

#define TR_GGML_BIN_MAGIC 0x67676D6Cu /* bytes "lmgg" */

typedef struct tr_ggml_bin_hparams {
    int32_t n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype;
} tr_ggml_bin_hparams;

typedef struct tr_ggml_bin tr_ggml_bin;

/* true when the first bytes carry the .bin magic (needs n >= 4). */
bool tr_ggml_bin_sniff(const void *head, size_t n);

/* FILE_NOT_FOUND when the path does not exist, UNSUPPORTED_ARCH when the
 * geometry gate fails (e.g. a Silero VAD ggml file), OOM, else GGUF. */
transcribe_status tr_ggml_bin_open(const char *path, tr_ggml_bin **out);
/* Same from memory; the image is only read during the call (all data used
 * afterwards is copied). */
transcribe_status tr_ggml_bin_open_memory(const void *data, size_t size, tr_ggml_bin **out);
void tr_ggml_bin_close(tr_ggml_bin *b); /* NULL ok */

const tr_ggml_bin_hparams *tr_ggml_bin_hparams_of(const tr_ggml_bin *b);

/* Slaney filterbank from the header, row-major [n_mel][n_freq]. */
const float *tr_ggml_bin_filters(const tr_ggml_bin *b, int *n_mel, int *n_freq);

/* Vocabulary entries: raw bytes (not GPT-2 byte-mapped), NUL-terminated
 * copies (a token may itself contain NUL bytes: use *len). */
int32_t tr_ggml_bin_n_tokens(const tr_ggml_bin *b);
const char *tr_ggml_bin_token(const tr_ggml_bin *b, int32_t id,
                              size_t *len); /* NULL if out of range */
const char *const *tr_ggml_bin_tokens(const tr_ggml_bin *b);

/* Tensors: the file's tensors in file order, then the two synthesised
 * front-end tensors. Names are canonical. */
int64_t tr_ggml_bin_n_tensors(const tr_ggml_bin *b);
int64_t tr_ggml_bin_n_file_tensors(const tr_ggml_bin *b);
const tr_tensor *tr_ggml_bin_tensor_at(const tr_ggml_bin *b, int64_t i);
const tr_tensor *tr_ggml_bin_find_tensor(const tr_ggml_bin *b, const char *canonical_name);
/* The legacy name of tensor i as written in the file (NULL for synthesised). */
const char *tr_ggml_bin_legacy_name(const tr_ggml_bin *b, int64_t i);

/* docs/formats/gguf.md §11.4 mapping: writes the canonical name of a legacy tensor name into out
 * and returns true, or returns false for a name the table does not map.
 * Block indices must be plain decimal (no sign, no leading zeros). */
bool tr_ggml_bin_canonical_name(const char *legacy, char *out, size_t cap);

#endif
