/* Whisper properties a legacy whisper.cpp .bin file implies but does not
 * store (docs/formats/gguf.md §11.3): special token ids, languages, variant name
 * and the non-speech suppression list. */
#ifndef TR_MODELS_WHISPER_BIN_INFO_H
#define TR_MODELS_WHISPER_BIN_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/ggml_bin.h"

typedef struct tr_whisper_bin_info {
    bool multilingual;
    int num_languages; /* 99 / 100 multilingual, 1 (en) English-only */
    int32_t eot, sot, translate, transcribe, startoflm, startofprev, nospeech, notimestamps;
    int32_t timestamp_begin;
    const char *variant; /* "tiny.en", "large-v3-turbo", ...; "whisper" if unknown */
} tr_whisper_bin_info;

void tr_whisper_bin_info_from(const tr_ggml_bin_hparams *hp, tr_whisper_bin_info *out);
/* Language code i (0-based, whisper.cpp order: "en", "zh", ...), NULL past
 * the 100-entry table. Language i is token sot + 1 + i. */
const char *tr_whisper_bin_language(int i);
/* The non-speech part of the synthesised suppress list (docs/formats/gguf.md §11.3); the caller
 * appends sot, translate, transcribe, startoflm, startofprev, nospeech. */
const int32_t *tr_whisper_bin_nonspeech(bool multilingual, int *n);

#endif
