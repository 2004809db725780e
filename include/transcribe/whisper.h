/* Whisper family extension: run-time decoding knobs (RUN slot, kind WHRN)
 * and per-window telemetry of the latest run. */
#ifndef TRANSCRIBE_WHISPER_H
#define TRANSCRIBE_WHISPER_H

#include <math.h>

#include "transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSCRIBE_EXT_KIND_WHISPER_RUN     0x4E524857u /* "WHRN" */
#define TRANSCRIBE_WHISPER_THOLD_DISABLED   ((float)INFINITY)
#define TRANSCRIBE_WHISPER_LOGPROB_DISABLED ((float)-INFINITY)

enum transcribe_whisper_prompt_condition {
    TRANSCRIBE_WHISPER_PROMPT_FIRST_SEGMENT = 0,
    TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS = 1,
};

struct transcribe_whisper_run_ext {
    struct transcribe_ext ext;
    const char *initial_prompt;                                /* NULL */
    const int32_t *prompt_tokens;                              /* NULL */
    size_t n_prompt_tokens;                                    /* 0 */
    enum transcribe_whisper_prompt_condition prompt_condition; /* FIRST_SEGMENT */
    bool condition_on_prev_tokens;                             /* false */
    int32_t max_prev_context_tokens;                           /* 223 */
    float temperature;                                         /* 0.0 */
    float temperature_inc;                                     /* 0.2 */
    float compression_ratio_thold;                             /* 2.4 */
    float logprob_thold;                                       /* -1.0 */
    float no_speech_thold;                                     /* 0.6 */
    uint32_t seed;                                             /* 0 */
    float max_initial_timestamp;                               /* 1.0 (seconds) */
};

TRANSCRIBE_API void transcribe_whisper_run_ext_init(struct transcribe_whisper_run_ext *ext);

/* One entry per 30 s encoder window of the most recent successful run. */
struct transcribe_whisper_chunk_trace {
    uint64_t struct_size;
    int64_t t0_ms;
    int64_t t1_ms;
    float temperature_used;
    float compression_ratio;
    float avg_logprob;
    float no_speech_prob;
    bool no_speech_triggered;
    int32_t n_fallbacks; /* tiers tried before acceptance */
};

TRANSCRIBE_API void transcribe_whisper_chunk_trace_init(struct transcribe_whisper_chunk_trace *out);
TRANSCRIBE_API int transcribe_get_whisper_chunk_count(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_status
transcribe_get_whisper_chunk_trace(const struct transcribe_session *session, int i,
                                   struct transcribe_whisper_chunk_trace *out_trace);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_WHISPER_H */
