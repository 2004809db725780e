/* Parakeet stream extensions (STREAM slot): cache-aware (PKST) and
 * buffered chunked-attention (PKBS) variants. */
#ifndef TRANSCRIBE_PARAKEET_H
#define TRANSCRIBE_PARAKEET_H

#include "transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSCRIBE_EXT_KIND_PARAKEET_STREAM          0x54534B50u /* "PKST" */
#define TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM 0x53424B50u /* "PKBS" */

struct transcribe_parakeet_stream_ext {
    struct transcribe_ext ext;
    int32_t att_context_right; /* -1 = model default; 80 ms encoder frames */
};

TRANSCRIBE_API void transcribe_parakeet_stream_ext_init(struct transcribe_parakeet_stream_ext *ext);

struct transcribe_parakeet_buffered_stream_ext {
    struct transcribe_ext ext;
    int32_t left_ms;  /* -1 = model default */
    int32_t chunk_ms; /* -1 */
    int32_t right_ms; /* -1 */
};

TRANSCRIBE_API void
transcribe_parakeet_buffered_stream_ext_init(struct transcribe_parakeet_buffered_stream_ext *ext);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_PARAKEET_H */
