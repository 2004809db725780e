/* transcribe — offline speech-to-text inference library (C API).
 *
 * PROVISIONAL: only the pieces every module needs are declared here so far
 * (status codes, log levels, log sink). The full API of c-api.md is being
 * written in this file next; keep these declarations exactly as they are. */
#ifndef TRANSCRIBE_H
#define TRANSCRIBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef TRANSCRIBE_API
#if defined(_WIN32) && !defined(__GNUC__)
#if defined(TRANSCRIBE_STATIC)
#define TRANSCRIBE_API
#elif defined(TRANSCRIBE_BUILD)
#define TRANSCRIBE_API __declspec(dllexport)
#else
#define TRANSCRIBE_API __declspec(dllimport)
#endif
#else
#define TRANSCRIBE_API __attribute__((visibility("default")))
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TRANSCRIBE_OK = 0,
    TRANSCRIBE_ERR_INVALID_ARG = 1,
    TRANSCRIBE_ERR_NOT_IMPLEMENTED = 2,
    TRANSCRIBE_ERR_FILE_NOT_FOUND = 3,
    TRANSCRIBE_ERR_GGUF = 4,
    TRANSCRIBE_ERR_UNSUPPORTED_ARCH = 5,
    TRANSCRIBE_ERR_UNSUPPORTED_VARIANT = 6,
    TRANSCRIBE_ERR_OOM = 7,
    TRANSCRIBE_ERR_BACKEND = 8,
    TRANSCRIBE_ERR_SAMPLE_RATE = 9,
    TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE = 10,
    TRANSCRIBE_ERR_UNSUPPORTED_TASK = 11,
    TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS = 12,
    TRANSCRIBE_ERR_ABORTED = 13,
    TRANSCRIBE_ERR_BAD_STRUCT_SIZE = 14,
    TRANSCRIBE_ERR_UNSUPPORTED_PNC = 15,
    TRANSCRIBE_ERR_UNSUPPORTED_ITN = 16,
    TRANSCRIBE_ERR_INPUT_TOO_LONG = 17,
    TRANSCRIBE_ERR_OUTPUT_TRUNCATED = 18,
} transcribe_status;

typedef enum {
    TRANSCRIBE_LOG_LEVEL_NONE = 0,
    TRANSCRIBE_LOG_LEVEL_INFO = 1,
    TRANSCRIBE_LOG_LEVEL_WARN = 2,
    TRANSCRIBE_LOG_LEVEL_ERROR = 3,
    TRANSCRIBE_LOG_LEVEL_DEBUG = 4,
    TRANSCRIBE_LOG_LEVEL_CONT = 5,
} transcribe_log_level;

typedef void (*transcribe_log_callback)(transcribe_log_level level, const char *msg,
                                        void *userdata);

TRANSCRIBE_API const char *transcribe_status_string(int status);
TRANSCRIBE_API void transcribe_log_set(transcribe_log_callback cb, void *userdata);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_H */
