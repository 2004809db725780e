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

typedef enum {
    TRANSCRIBE_TASK_TRANSCRIBE = 0,
    TRANSCRIBE_TASK_TRANSLATE = 1,
} transcribe_task;

typedef enum {
    TRANSCRIBE_TIMESTAMPS_NONE = 0,
    TRANSCRIBE_TIMESTAMPS_AUTO = 1,
    TRANSCRIBE_TIMESTAMPS_SEGMENT = 2,
    TRANSCRIBE_TIMESTAMPS_WORD = 3,
    TRANSCRIBE_TIMESTAMPS_TOKEN = 4,
} transcribe_timestamp_kind;

typedef enum {
    TRANSCRIBE_KV_TYPE_AUTO = 0,
    TRANSCRIBE_KV_TYPE_F32 = 1,
    TRANSCRIBE_KV_TYPE_F16 = 2,
} transcribe_kv_type;

enum transcribe_pnc_mode {
    TRANSCRIBE_PNC_MODE_DEFAULT = 0,
    TRANSCRIBE_PNC_MODE_OFF = 1,
    TRANSCRIBE_PNC_MODE_ON = 2,
};

enum transcribe_itn_mode {
    TRANSCRIBE_ITN_MODE_DEFAULT = 0,
    TRANSCRIBE_ITN_MODE_OFF = 1,
    TRANSCRIBE_ITN_MODE_ON = 2,
};

enum transcribe_diarize_mode {
    TRANSCRIBE_DIARIZE_MODE_DEFAULT = 0,
    TRANSCRIBE_DIARIZE_MODE_OFF = 1,
    TRANSCRIBE_DIARIZE_MODE_ON = 2,
};

typedef enum {
    TRANSCRIBE_FEATURE_INITIAL_PROMPT = 0,
    TRANSCRIBE_FEATURE_TEMPERATURE_FALLBACK = 1,
    TRANSCRIBE_FEATURE_LONG_FORM = 2,
    TRANSCRIBE_FEATURE_CANCELLATION = 3,
    TRANSCRIBE_FEATURE_PNC = 4,
    TRANSCRIBE_FEATURE_ITN = 5,
    TRANSCRIBE_FEATURE_DIARIZATION = 6,
} transcribe_feature;

typedef enum {
    TRANSCRIBE_EXT_SLOT_RUN = 0,
    TRANSCRIBE_EXT_SLOT_STREAM = 1,
} transcribe_ext_slot;

typedef bool (*transcribe_abort_callback)(void *user_data);

struct transcribe_model;
struct transcribe_session;

struct transcribe_ext {
    uint64_t size; /* caller's sizeof of the whole typed extension */
    uint32_t kind; /* TRANSCRIBE_EXT_KIND_* */
};

struct transcribe_session_params {
    uint64_t struct_size;
    int n_threads;              /* default 0 = library chooses */
    transcribe_kv_type kv_type; /* default AUTO */
    int32_t n_ctx;              /* default 0 = model maximum; optional trailing field */
};

struct transcribe_run_params {
    uint64_t struct_size;
    transcribe_task task;                 /* default TRANSCRIBE */
    transcribe_timestamp_kind timestamps; /* default AUTO */
    enum transcribe_pnc_mode pnc;         /* default DEFAULT */
    enum transcribe_itn_mode itn;         /* default DEFAULT */
    enum transcribe_diarize_mode diarize; /* default DEFAULT (= off) */
    const char *language;                 /* default NULL = autodetect */
    const char *target_language;          /* default NULL */
    bool keep_special_tags;               /* default false */
    const struct transcribe_ext *family;  /* default NULL = family defaults */
    int32_t spec_k_drafts;                /* default -1 = family default */
};

struct transcribe_capabilities {
    uint64_t struct_size;
    int32_t native_sample_rate;
    int n_languages;
    const char *const *languages;
    transcribe_timestamp_kind max_timestamp_kind;
    bool supports_language_detect;
    bool supports_translate;
    bool supports_streaming;
    bool supports_spec_decode;
    int64_t max_audio_ms;
    int n_translate_target_languages;
    const char *const *translate_target_languages;
};

struct transcribe_session_limits {
    uint64_t struct_size;
    int32_t effective_n_ctx;
    int64_t effective_max_audio_ms;
    int64_t max_kv_bytes;
};

typedef void (*transcribe_log_callback)(transcribe_log_level level, const char *msg,
                                        void *userdata);

TRANSCRIBE_API const char *transcribe_status_string(int status);
TRANSCRIBE_API void transcribe_log_set(transcribe_log_callback cb, void *userdata);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_H */
