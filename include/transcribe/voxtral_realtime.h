/* Voxtral-realtime stream extension (STREAM slot, kind VRST). */
#ifndef TRANSCRIBE_VOXTRAL_REALTIME_H
#define TRANSCRIBE_VOXTRAL_REALTIME_H

#include "transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM 0x54535256u /* "VRST" */

struct transcribe_voxtral_realtime_stream_ext {
    struct transcribe_ext ext;
    int32_t num_delay_tokens;       /* -1 = model default (6 = 480 ms) */
    int32_t min_decode_interval_ms; /* -1 = family default */
};

TRANSCRIBE_API void
transcribe_voxtral_realtime_stream_ext_init(struct transcribe_voxtral_realtime_stream_ext *ext);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_VOXTRAL_REALTIME_H */
