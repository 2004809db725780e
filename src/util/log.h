/* Internal logging: every module reports through the one process-wide sink
 * that tr_log_set() configures (stderr until configured; the public
 * transcribe_log_set in src/api/log_api.c is its wrapper). */
#ifndef TR_UTIL_LOG_H
#define TR_UTIL_LOG_H

#include "transcribe.h"

#if defined(__GNUC__)
#define TR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TR_PRINTF(a, b)
#endif

void tr_log(transcribe_log_level level, const char *fmt, ...) TR_PRINTF(2, 3);

/* Sets the sink: cb (with userdata) receives every message; NULL silences
 * the library. */
void tr_log_set(transcribe_log_callback cb, void *userdata);

/* Per-handle error messages (transcribe_session_last_error and friends):
 * between tr_log_capture_begin and tr_log_capture_end, the first error-level
 * message this thread logs is also copied into buf (NUL-terminated, cut to
 * cap), whatever the log sink does with it. Captures nest: begin returns the
 * enclosing capture, which end restores. */
typedef struct tr_log_capture {
    char *buf;
    size_t cap;
} tr_log_capture;
tr_log_capture tr_log_capture_begin(char *buf, size_t cap);
void tr_log_capture_end(tr_log_capture enclosing);

/* Per-utterance errors of a batch (transcribe_batch_error): between
 * tr_log_latest_begin and tr_log_latest_end, the first error-level message
 * this thread logs after buf was last emptied goes into buf (alongside any
 * capture above); tr_log_latest_take copies it out (or "" when none; out
 * may be NULL) and empties buf. Each utterance takes it as it finishes
 * (core/family.h's tr_run_settle), so a failed one's reason is the first
 * error logged since the one before it finished: the specific message,
 * not a caller's summary after it. Returns and restores the enclosing one
 * as the capture does. */
tr_log_capture tr_log_latest_begin(char *buf, size_t cap);
void tr_log_latest_end(tr_log_capture enclosing);
void tr_log_latest_take(char *out, size_t cap);

/* Debug messages are printed to stderr only when TRANSCRIBE_DEBUG is set in
 * the environment (they always reach a configured callback). */
#define TR_ERROR(...) tr_log(TRANSCRIBE_LOG_LEVEL_ERROR, __VA_ARGS__)
#define TR_WARN(...)  tr_log(TRANSCRIBE_LOG_LEVEL_WARN, __VA_ARGS__)
#define TR_INFO(...)  tr_log(TRANSCRIBE_LOG_LEVEL_INFO, __VA_ARGS__)
#define TR_DEBUG(...) tr_log(TRANSCRIBE_LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
