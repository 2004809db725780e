/* Internal logging: every module reports through the one process-wide sink
 * that transcribe_log_set() configures (stderr until configured). */
#ifndef TR_UTIL_LOG_H
#define TR_UTIL_LOG_H

#include "transcribe.h"

#if defined(__GNUC__)
#define TR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TR_PRINTF(a, b)
#endif

void tr_log(transcribe_log_level level, const char *fmt, ...) TR_PRINTF(2, 3);

/* Debug messages are printed to stderr only when TRANSCRIBE_DEBUG is set in
 * the environment (they always reach a configured callback). */
#define TR_ERROR(...) tr_log(TRANSCRIBE_LOG_LEVEL_ERROR, __VA_ARGS__)
#define TR_WARN(...)  tr_log(TRANSCRIBE_LOG_LEVEL_WARN, __VA_ARGS__)
#define TR_INFO(...)  tr_log(TRANSCRIBE_LOG_LEVEL_INFO, __VA_ARGS__)
#define TR_DEBUG(...) tr_log(TRANSCRIBE_LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
