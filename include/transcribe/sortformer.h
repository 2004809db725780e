/* Sortformer diarization extension (RUN slot, kind SFST). */
#ifndef TRANSCRIBE_SORTFORMER_H
#define TRANSCRIBE_SORTFORMER_H

#include "transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSCRIBE_EXT_KIND_SORTFORMER_STREAM 0x54534653u /* "SFST" */

typedef enum {
    TRANSCRIBE_SORTFORMER_PRESET_DEFAULT = 0,
    TRANSCRIBE_SORTFORMER_PRESET_VERY_HIGH_LATENCY = 1,
    TRANSCRIBE_SORTFORMER_PRESET_HIGH_LATENCY = 2,
    TRANSCRIBE_SORTFORMER_PRESET_LOW_LATENCY = 3,
} transcribe_sortformer_preset;

struct transcribe_sortformer_stream_ext {
    struct transcribe_ext ext;
    transcribe_sortformer_preset preset; /* DEFAULT = configuration shipped in the file */
};

TRANSCRIBE_API void
transcribe_sortformer_stream_ext_init(struct transcribe_sortformer_stream_ext *ext);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_SORTFORMER_H */
