/* Moonshine-streaming stream extension (STREAM slot, kind MSST). */
#ifndef TRANSCRIBE_MOONSHINE_STREAMING_H
#define TRANSCRIBE_MOONSHINE_STREAMING_H

#include "transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSCRIBE_EXT_KIND_MOONSHINE_STREAMING_STREAM 0x5453534Du /* "MSST" */

struct transcribe_moonshine_streaming_stream_ext {
    struct transcribe_ext ext;
    int32_t min_decode_interval_ms; /* -1 = family default */
};

TRANSCRIBE_API void transcribe_moonshine_streaming_stream_ext_init(
    struct transcribe_moonshine_streaming_stream_ext *ext);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_MOONSHINE_STREAMING_H */
