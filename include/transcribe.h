/* transcribe — offline speech-to-text inference library (C API).
 *
 * Source-compatible with the transcribe.cpp 0.2.1 public C surface: same
 * names, enum values, struct layouts and semantics. Conventions:
 *  - every caller-allocated struct starts with `uint64_t struct_size`, filled
 *    by its *_init() function; a NULL params pointer means "defaults";
 *  - returned strings are never freed by the caller (static, model-owned or
 *    session-owned, see each function);
 *  - audio is mono float PCM at the model's native rate (16 kHz).
 *
 * Lifetime and threads (docs/c-api.md §1.6):
 *  - a model must outlive every session made from it: free the sessions
 *    first, then the model (transcribe_open's session owns its model);
 *  - model functions (queries, metadata, tokenize, session creation) are
 *    thread-safe: one model may be shared by many threads;
 *  - session functions are not: one thread at a time per session (a session
 *    may move between threads when uses never overlap);
 *  - compute (transcribe_run, transcribe_run_batch, stream feed/finalize) runs
 *    one at a time per model, across all its sessions: take turns (e.g. one
 *    mutex per model) or load one model per worker thread;
 *  - the log callback may run on any thread; set it once at startup. The
 *    abort callback runs on the thread executing the run;
 *  - the library's only process-wide state is the log sink; everything else
 *    hangs off a handle. */
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

#define TRANSCRIBE_VERSION_MAJOR         0
#define TRANSCRIBE_VERSION_MINOR         2
#define TRANSCRIBE_VERSION_PATCH         1
#define TRANSCRIBE_VERSION_STRINGIZE_(x) #x
#define TRANSCRIBE_VERSION_STRINGIZE(x)  TRANSCRIBE_VERSION_STRINGIZE_(x)
#define TRANSCRIBE_VERSION                                                                         \
    TRANSCRIBE_VERSION_STRINGIZE(TRANSCRIBE_VERSION_MAJOR)                                         \
    "." TRANSCRIBE_VERSION_STRINGIZE(TRANSCRIBE_VERSION_MINOR) "." TRANSCRIBE_VERSION_STRINGIZE(   \
        TRANSCRIBE_VERSION_PATCH)
#define TRANSCRIBE_VERSION_NUMBER                                                                  \
    (TRANSCRIBE_VERSION_MAJOR * 10000 + TRANSCRIBE_VERSION_MINOR * 100 + TRANSCRIBE_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- enumerations (values are ABI; never renumber) ---- */

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

/* Ids for transcribe_abi_struct_size/_align (append-only). */
typedef enum {
    TRANSCRIBE_ABI_MODEL_LOAD_PARAMS = 0,
    TRANSCRIBE_ABI_SESSION_PARAMS = 1,
    TRANSCRIBE_ABI_RUN_PARAMS = 2,
    TRANSCRIBE_ABI_STREAM_PARAMS = 3,
    TRANSCRIBE_ABI_CAPABILITIES = 4,
    TRANSCRIBE_ABI_TIMINGS = 5,
    TRANSCRIBE_ABI_SEGMENT = 6,
    TRANSCRIBE_ABI_WORD = 7,
    TRANSCRIBE_ABI_TOKEN = 8,
    TRANSCRIBE_ABI_STREAM_UPDATE = 9,
    TRANSCRIBE_ABI_STREAM_TEXT = 10,
    TRANSCRIBE_ABI_SESSION_LIMITS = 11,
    TRANSCRIBE_ABI_EXT = 12,
    TRANSCRIBE_ABI_DEVICE_INFO = 13,
    TRANSCRIBE_ABI_SPEAKER_SEGMENT = 14,
    TRANSCRIBE_ABI_BACKEND_DEVICE = 15,
} transcribe_abi_struct;

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
    TRANSCRIBE_FEATURE_VOCABULARY = 7,
} transcribe_feature;

typedef enum {
    TRANSCRIBE_EXT_SLOT_RUN = 0,
    TRANSCRIBE_EXT_SLOT_STREAM = 1,
} transcribe_ext_slot;

typedef enum {
    TRANSCRIBE_BACKEND_AUTO = 0,
    TRANSCRIBE_BACKEND_CPU = 1,
    TRANSCRIBE_BACKEND_METAL = 2,
    TRANSCRIBE_BACKEND_VULKAN = 3,
    TRANSCRIBE_BACKEND_CPU_ACCEL = 4,
    TRANSCRIBE_BACKEND_CUDA = 5,
    TRANSCRIBE_BACKEND_ROCM = 6,
} transcribe_backend_request;

typedef enum {
    TRANSCRIBE_DEVICE_TYPE_CPU = 0,
    TRANSCRIBE_DEVICE_TYPE_GPU = 1,
    TRANSCRIBE_DEVICE_TYPE_IGPU = 2,
    TRANSCRIBE_DEVICE_TYPE_ACCEL = 3,
} transcribe_device_type;

enum transcribe_stream_state {
    TRANSCRIBE_STREAM_IDLE = 0,
    TRANSCRIBE_STREAM_ACTIVE = 1,
    TRANSCRIBE_STREAM_FINISHED = 2,
    TRANSCRIBE_STREAM_FAILED = 3,
};

typedef enum {
    TRANSCRIBE_STREAM_COMMIT_AUTO = 0,
    TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE = 1,
    TRANSCRIBE_STREAM_COMMIT_STABLE_PREFIX = 2,
} transcribe_stream_commit_policy;

typedef bool (*transcribe_abort_callback)(void *user_data);

/* ---- opaque handles ---- */

struct transcribe_model;
struct transcribe_session;
struct transcribe_device;
typedef struct transcribe_device *transcribe_device_t;

/* ---- caller-allocated structs (layouts are ABI, see docs/c-api.md §19) ---- */

struct transcribe_ext {
    uint64_t size; /* caller's sizeof of the whole typed extension */
    uint32_t kind; /* TRANSCRIBE_EXT_KIND_* */
};

struct transcribe_model_load_params {
    uint64_t struct_size;
    transcribe_backend_request backend; /* default AUTO */
    transcribe_device_t device;         /* default NULL = automatic */
    /* Later transcribe.cpp releases choose a GPU by registry index: 0 (the
     * default) is automatic; any other value names a GPU, and there is none
     * here, so it is INVALID_ARG. Read when struct_size covers it. */
    int gpu_device;
};

struct transcribe_session_params {
    uint64_t struct_size;
    int n_threads;              /* default 0 = library chooses; at most 4x the CPUs */
    transcribe_kv_type kv_type; /* default AUTO */
    int32_t n_ctx;              /* default 0 = model maximum; optional trailing field */
};

struct transcribe_vad_model; /* voice activity detection: see its section below */
struct transcribe_vad_params;

/* When a run cuts long audio into pieces (transcribe_run_params.chunking). */
enum transcribe_chunking {
    TRANSCRIBE_CHUNKING_AUTO = 0, /* where one call cannot take the input (see below) */
    TRANSCRIBE_CHUNKING_ON = 1,   /* always, even a short input (at its pauses) */
    TRANSCRIBE_CHUNKING_OFF = 2,  /* never: the family sees the whole input */
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
    /* Appended (an addition): transcribe only the speech regions this VAD
     * model finds (NULL = the whole audio), for transcribe_run and each
     * utterance of transcribe_run_batch. The regions are joined with 100 ms
     * pauses for the model and every time in the result is mapped back to
     * the input's clock; audio without speech gives an empty result.
     * vad_params NULL = defaults; bad settings fail the call (INVALID_ARG,
     * SAMPLE_RATE) before anything changes. A stream with a VAD model runs
     * the detector over the fed audio (through the generic window driver,
     * whatever the family): audio outside speech is never decoded, and
     * each region's text is committed as soon as the detector closes the
     * region (at the pause after it). The vad_model (and the vocabulary
     * terms below) must outlive the stream; vad_params is copied. */
    const struct transcribe_vad_model *vad_model;
    const struct transcribe_vad_params *vad_params;
    /* Vocabulary hints (names, jargon), optional trailing: n_vocabulary terms,
     * used where TRANSCRIBE_FEATURE_VOCABULARY is set, else ignored with a
     * warning. Default NULL / 0. */
    const char *const *vocabulary;
    int32_t n_vocabulary;
    /* Appended (an addition): long audio. transcribe_run, each utterance of
     * transcribe_run_batch and a stream's finalize take audio of any length:
     * where one call cannot (the input is longer than the model's input
     * limit, or the family decodes a bounded number of output tokens and
     * has no long-form mode of its own, e.g. Qwen3-ASR, Granite Speech,
     * MOSS: about a minute of speech), the library cuts the audio at pauses
     * (transcribe_pause_split; at the vad_model's pauses when one is set)
     * into pieces of at most chunk_max_ms, runs them (through the family's
     * batched decode, chunk_batch pieces a call, where it decodes pieces
     * together), runs a piece whose output was truncated again in smaller
     * pieces (at most 3 times, not below 4 s), and joins their rows into
     * one result on the input's clock: times monotonic and inside the
     * audio, the texts joined with a space (none between two CJK
     * characters), every piece's speakers kept apart (piece k's speaker n
     * is numbered after the ids earlier pieces took: nothing ties speakers
     * of two pieces together). The pieces are listed by transcribe_n_pieces
     * / transcribe_get_piece; the progress callback is told after each;
     * timings are summed over them. A split run keeps what its pieces gave
     * whatever its status (a failed piece is listed with its status, its
     * text is missing); it returns the first piece error, else
     * OUTPUT_TRUNCATED where a piece kept partial text, else OK.
     * chunk_max_ms comes first: it is 8-byte aligned, so a caller built
     * before these fields never covers them with its struct's padding. */
    int64_t chunk_max_ms; /* default 0 = 30000 (>= 2000), kept under 90 % of the input limit */
    enum transcribe_chunking chunking; /* default AUTO */
    int32_t chunk_batch; /* default 0 = 4 where the family decodes pieces together, else 1 */
    /* Appended (an addition): speaker attribution by a separate diarization
     * model (a loaded model with TRANSCRIBE_FEATURE_DIARIZATION whose runs
     * give speaker rows: Sortformer). NULL = none (default). When set, the
     * library runs it over the same audio after the transcription (whole
     * input, so speaker slots stay the same across the pieces of long audio)
     * and labels every word and segment with the speaker whose activity
     * overlaps its times most (a word in a pause gets the nearest active
     * speaker); its speaker rows become the result's speaker rows. The model
     * must outlive the call and run at the session model's sample rate
     * (else SAMPLE_RATE); a model without diarization is INVALID_ARG, and
     * so is a diarizer on a session whose model is a diarization model
     * itself (Sortformer: its turns would only be relabelled).
     * transcribe_run and each utterance of transcribe_run_batch; streams
     * ignore it. */
    const struct transcribe_model *diarizer;
};

struct transcribe_stream_params {
    uint64_t struct_size;
    const struct transcribe_ext *family;           /* default NULL */
    transcribe_stream_commit_policy commit_policy; /* default AUTO; optional trailing */
    uint32_t stable_prefix_agreement_n; /* default 0 = library default (3); optional trailing */
    /* An addition beside the 0.2.1 API (optional trailing, default false).
     * false: only a model that streams natively (caps.supports_streaming)
     * streams; any other begin is NOT_IMPLEMENTED, as in transcribe.cpp.
     * true: a model without native streaming streams through the library's
     * window driver, which re-decodes the recent audio with the model's
     * offline path (caps.supports_window_streaming says which models can);
     * a model that streams natively still does so. */
    bool window_fallback;
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
    /* An addition beside the 0.2.1 API: the model streams when a stream asks
     * for the window driver (transcribe_stream_params.window_fallback):
     * every model with an offline run path. */
    bool supports_window_streaming;
};

struct transcribe_session_limits {
    uint64_t struct_size;
    int32_t effective_n_ctx;
    int64_t effective_max_audio_ms;
    int64_t max_kv_bytes;
};

struct transcribe_timings {
    uint64_t struct_size;
    float load_ms;   /* model load wall time */
    float mel_ms;    /* latest run: front end */
    float encode_ms; /* latest run: encoder */
    float decode_ms; /* latest run: decoder */
};

struct transcribe_segment {
    uint64_t struct_size;
    int64_t t0_ms;
    int64_t t1_ms;
    int first_word;
    int n_words;
    int first_token;
    int n_tokens;
    const char *text;
    int32_t speaker_id; /* 1-based; 0 = unattributed; optional trailing */
};

struct transcribe_word {
    uint64_t struct_size;
    int64_t t0_ms;
    int64_t t1_ms;
    int seg_index;
    int first_token;
    int n_tokens;
    const char *text;
    /* Appended (an addition): 1-based speaker when the run was diarized
     * (transcribe_run_params.diarizer), 0 = unattributed. */
    int32_t speaker_id;
};

struct transcribe_token {
    uint64_t struct_size;
    int id;
    float p; /* confidence hint or NaN */
    int64_t t0_ms;
    int64_t t1_ms;
    int seg_index;
    int word_index; /* -1 when the token belongs to no word */
    const char *text;
};

struct transcribe_speaker_segment {
    uint64_t struct_size;
    int64_t t0_ms;
    int64_t t1_ms;
    int32_t speaker_id; /* 1-based; 0 = row not present */
    float p;            /* confidence or NaN */
};

struct transcribe_stream_update {
    uint64_t struct_size;
    bool result_changed;
    bool is_final;
    int32_t revision;
    int64_t input_received_ms;  /* audio fed since begin */
    int64_t audio_committed_ms; /* progress hint: audio the stream is done with (the window
                                   driver: dropped from its window; committed text may run
                                   ahead of it); 0 during feeds under COMMIT_ON_FINALIZE */
    int64_t buffered_ms;        /* audio held and not decoded yet (a drain hint) */
    bool committed_changed;     /* optional trailing */
    bool tentative_changed;     /* optional trailing */
};

struct transcribe_stream_text {
    uint64_t struct_size;
    const char *full_text;
    uint64_t full_text_bytes;
    const char *committed_text;
    uint64_t committed_text_bytes;
    const char *tentative_text;
    uint64_t tentative_text_bytes;
    uint64_t raw_tentative_start_bytes;
};

struct transcribe_device_info {
    uint64_t struct_size;
    const char *name;
    const char *description;
    const char
        *kind; /* "cpu", "accel", "metal", "vulkan", "cuda", "rocm", "sycl", "gpu", "unknown" */
    const char *device_id; /* PCI bus id or NULL */
    uint64_t memory_total;
    uint64_t memory_free;
    transcribe_device_type device_type;
};

/* The device facts by index, as later transcribe.cpp releases name them
 * (transcribe_backend_device_count / transcribe_get_backend_device): the
 * same fields as struct transcribe_device_info. */
struct transcribe_backend_device {
    uint64_t struct_size;
    const char *name;
    const char *description;
    const char *kind;
    const char *device_id;
    uint64_t memory_total;
    uint64_t memory_free;
    transcribe_device_type device_type;
};

typedef void (*transcribe_log_callback)(transcribe_log_level level, const char *msg,
                                        void *userdata);

/* ---- status, version, ABI metadata (static strings) ---- */

TRANSCRIBE_API const char *transcribe_status_string(int status);
TRANSCRIBE_API const char *transcribe_version(void);
TRANSCRIBE_API const char *transcribe_version_commit(void);
/* sizeof / alignof of a public struct as compiled into the library; 0 for an unknown id. */
TRANSCRIBE_API size_t transcribe_abi_struct_size(transcribe_abi_struct which);
TRANSCRIBE_API size_t transcribe_abi_struct_align(transcribe_abi_struct which);

/* ---- logging: one process-wide sink; call once at startup ---- */

TRANSCRIBE_API void transcribe_log_set(transcribe_log_callback cb, void *userdata);

/* ---- family extensions ---- */

TRANSCRIBE_API transcribe_status transcribe_ext_check(const struct transcribe_ext *ext,
                                                      uint32_t expected_kind, uint64_t min_size);
TRANSCRIBE_API bool transcribe_model_accepts_ext_kind(const struct transcribe_model *model,
                                                      transcribe_ext_slot slot, uint32_t kind);

/* ---- backends and devices (this library computes on the CPU only) ---- */

TRANSCRIBE_API transcribe_status transcribe_init_backends(const char *artifact_dir);
TRANSCRIBE_API transcribe_status transcribe_init_backends_default(void);
TRANSCRIBE_API int transcribe_device_count(void);
TRANSCRIBE_API transcribe_device_t transcribe_device_get(int index);
TRANSCRIBE_API void transcribe_device_info_init(struct transcribe_device_info *p);
TRANSCRIBE_API transcribe_status transcribe_device_get_info(transcribe_device_t device,
                                                            struct transcribe_device_info *out);
TRANSCRIBE_API bool transcribe_backend_available(transcribe_backend_request kind);
TRANSCRIBE_API transcribe_device_t transcribe_model_device(const struct transcribe_model *model);
/* The same by index (later transcribe.cpp releases): index in [0, count). */
TRANSCRIBE_API int transcribe_backend_device_count(void);
TRANSCRIBE_API void transcribe_backend_device_init(struct transcribe_backend_device *p);
TRANSCRIBE_API transcribe_status
transcribe_get_backend_device(int index, struct transcribe_backend_device *out);
TRANSCRIBE_API transcribe_status transcribe_model_get_device(const struct transcribe_model *model,
                                                             struct transcribe_backend_device *out);

/* ---- parameter init (zero-fill, defaults, struct_size); no-ops on NULL ---- */

TRANSCRIBE_API void transcribe_model_load_params_init(struct transcribe_model_load_params *params);
TRANSCRIBE_API void transcribe_session_params_init(struct transcribe_session_params *params);
TRANSCRIBE_API void transcribe_run_params_init(struct transcribe_run_params *params);
TRANSCRIBE_API void transcribe_stream_params_init(struct transcribe_stream_params *params);

/* ---- models ---- */

TRANSCRIBE_API void transcribe_capabilities_init(struct transcribe_capabilities *out);
TRANSCRIBE_API transcribe_status transcribe_model_get_capabilities(
    const struct transcribe_model *model, struct transcribe_capabilities *out_caps);
TRANSCRIBE_API bool transcribe_model_supports(const struct transcribe_model *model,
                                              transcribe_feature feature);
TRANSCRIBE_API const char *transcribe_model_arch_string(const struct transcribe_model *model);
TRANSCRIBE_API const char *transcribe_model_variant_string(const struct transcribe_model *model);
TRANSCRIBE_API const char *transcribe_model_backend(const struct transcribe_model *model);
TRANSCRIBE_API const char *transcribe_model_meta_val_str(const struct transcribe_model *model,
                                                         const char *key);
TRANSCRIBE_API transcribe_status
transcribe_model_load_file(const char *path, const struct transcribe_model_load_params *params,
                           struct transcribe_model **out_model);
TRANSCRIBE_API void transcribe_model_free(struct transcribe_model *model);
/* N >= 0 ids written; -N: buffer too small (N needed); INT_MIN: cannot encode. */
TRANSCRIBE_API int transcribe_tokenize(const struct transcribe_model *model, const char *text,
                                       int32_t *tokens, size_t n_max);

/* ---- sessions ---- */

TRANSCRIBE_API transcribe_status transcribe_session_init(
    struct transcribe_model *model, const struct transcribe_session_params *params,
    struct transcribe_session **out_session);
TRANSCRIBE_API void transcribe_session_free(struct transcribe_session *session);
TRANSCRIBE_API transcribe_status
transcribe_open(const char *path, const struct transcribe_model_load_params *load_params,
                const struct transcribe_session_params *session_params,
                struct transcribe_session **out_session);
/* Deprecated alias of transcribe_session_free. */
TRANSCRIBE_API void transcribe_close(struct transcribe_session *session);
TRANSCRIBE_API const struct transcribe_model *
transcribe_get_model(const struct transcribe_session *session);

/* ---- offline runs ---- */

TRANSCRIBE_API transcribe_status transcribe_run(struct transcribe_session *session,
                                                const float *pcm, int n_samples,
                                                const struct transcribe_run_params *params);
TRANSCRIBE_API transcribe_status transcribe_run_batch(struct transcribe_session *session,
                                                      const float *const *pcm, const int *n_samples,
                                                      int n,
                                                      const struct transcribe_run_params *params);

/* ---- cancellation and outcome flags ---- */

TRANSCRIBE_API void transcribe_set_abort_callback(struct transcribe_session *session,
                                                  transcribe_abort_callback cb, void *user_data);
TRANSCRIBE_API bool transcribe_was_aborted(const struct transcribe_session *session);
TRANSCRIBE_API bool transcribe_was_truncated(const struct transcribe_session *session);

/* ---- limits ---- */

TRANSCRIBE_API void transcribe_session_limits_init(struct transcribe_session_limits *out);
TRANSCRIBE_API transcribe_status transcribe_session_get_limits(
    const struct transcribe_session *session, struct transcribe_session_limits *out);

/* ---- streaming ---- */

TRANSCRIBE_API void transcribe_stream_update_init(struct transcribe_stream_update *out);
TRANSCRIBE_API void transcribe_stream_text_init(struct transcribe_stream_text *out);
TRANSCRIBE_API transcribe_status transcribe_stream_get_text(
    const struct transcribe_session *session, struct transcribe_stream_text *out);
TRANSCRIBE_API transcribe_status transcribe_stream_begin(
    struct transcribe_session *session, const struct transcribe_run_params *run_params,
    const struct transcribe_stream_params *stream_params);
TRANSCRIBE_API transcribe_status transcribe_stream_feed(struct transcribe_session *session,
                                                        const float *pcm, int n_samples,
                                                        struct transcribe_stream_update *update);
TRANSCRIBE_API transcribe_status transcribe_stream_finalize(
    struct transcribe_session *session, struct transcribe_stream_update *update);
TRANSCRIBE_API void transcribe_stream_reset(struct transcribe_session *session);
TRANSCRIBE_API enum transcribe_stream_state
transcribe_stream_get_state(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_stream_revision(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_stream_n_committed_segments(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_stream_n_committed_words(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_stream_n_committed_tokens(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_status
transcribe_stream_last_status(const struct transcribe_session *session);

/* ---- timings ---- */

TRANSCRIBE_API void transcribe_timings_init(struct transcribe_timings *out);
TRANSCRIBE_API transcribe_status transcribe_get_timings(const struct transcribe_session *session,
                                                        struct transcribe_timings *out_timings);
TRANSCRIBE_API void transcribe_print_timings(const struct transcribe_session *session);
TRANSCRIBE_API void transcribe_reset_timings(struct transcribe_session *session);

/* ---- results (session-owned; valid until the next run/begin/reset/free) ---- */

TRANSCRIBE_API const char *transcribe_full_text(const struct transcribe_session *session);
TRANSCRIBE_API const char *transcribe_raw_text(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_timestamp_kind
transcribe_returned_timestamp_kind(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_n_segments(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_n_words(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_n_tokens(const struct transcribe_session *session);
TRANSCRIBE_API const char *transcribe_detected_language(const struct transcribe_session *session);
TRANSCRIBE_API void transcribe_segment_init(struct transcribe_segment *out);
TRANSCRIBE_API void transcribe_word_init(struct transcribe_word *out);
TRANSCRIBE_API void transcribe_token_init(struct transcribe_token *out);
TRANSCRIBE_API transcribe_status transcribe_get_segment(const struct transcribe_session *session,
                                                        int i, struct transcribe_segment *out);
TRANSCRIBE_API transcribe_status transcribe_get_word(const struct transcribe_session *session,
                                                     int i, struct transcribe_word *out);
TRANSCRIBE_API transcribe_status transcribe_get_token(const struct transcribe_session *session,
                                                      int i, struct transcribe_token *out);
TRANSCRIBE_API void transcribe_speaker_segment_init(struct transcribe_speaker_segment *out);
TRANSCRIBE_API int transcribe_n_speaker_segments(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_status transcribe_get_speaker_segment(
    const struct transcribe_session *session, int i, struct transcribe_speaker_segment *out);

/* Long audio (an addition; transcribe_run_params.chunking): the pieces a
 * split run cut its input into, in time order, on the input's clock.
 * transcribe_was_chunked says whether the latest run was split (it may be
 * into zero pieces: no speech found). */
struct transcribe_piece {
    uint64_t struct_size;
    int64_t t0_ms;
    int64_t t1_ms;
    int32_t end_kind;         /* enum transcribe_span_end */
    transcribe_status status; /* its run's: OK, OUTPUT_TRUNCATED (partial text), an error */
};
TRANSCRIBE_API void transcribe_piece_init(struct transcribe_piece *out);
TRANSCRIBE_API bool transcribe_was_chunked(const struct transcribe_session *session);
TRANSCRIBE_API int transcribe_n_pieces(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_status transcribe_get_piece(const struct transcribe_session *session,
                                                      int i, struct transcribe_piece *out);
/* Whether transcribe_run would split n_samples of audio under params (NULL
 * = defaults); false for bad arguments. For front ends that group inputs:
 * an input that is split runs best alone. */
TRANSCRIBE_API bool transcribe_run_would_chunk(const struct transcribe_session *session,
                                               int64_t n_samples,
                                               const struct transcribe_run_params *params);

/* ---- batch results (utterance i, row j) ---- */

TRANSCRIBE_API int transcribe_batch_n_results(const struct transcribe_session *session);
TRANSCRIBE_API transcribe_status transcribe_batch_status(const struct transcribe_session *session,
                                                         int i);
/* Why utterance i of the last batch failed (an addition): the error the
 * library logged for it (for example "moonshine: input too short: 800
 * samples ..."), else its status's name; "" for an utterance that ended OK
 * or OUTPUT_TRUNCATED, or an index out of range. Valid until the next run
 * on the session. */
TRANSCRIBE_API const char *transcribe_batch_error(const struct transcribe_session *session, int i);
TRANSCRIBE_API const char *transcribe_batch_full_text(const struct transcribe_session *session,
                                                      int i);
TRANSCRIBE_API const char *transcribe_batch_raw_text(const struct transcribe_session *session,
                                                     int i);
TRANSCRIBE_API transcribe_timestamp_kind
transcribe_batch_returned_timestamp_kind(const struct transcribe_session *session, int i);
TRANSCRIBE_API const char *
transcribe_batch_detected_language(const struct transcribe_session *session, int i);
TRANSCRIBE_API int transcribe_batch_n_segments(const struct transcribe_session *session, int i);
TRANSCRIBE_API int transcribe_batch_n_words(const struct transcribe_session *session, int i);
TRANSCRIBE_API int transcribe_batch_n_tokens(const struct transcribe_session *session, int i);
TRANSCRIBE_API transcribe_status transcribe_batch_get_segment(
    const struct transcribe_session *session, int i, int j, struct transcribe_segment *out);
TRANSCRIBE_API transcribe_status transcribe_batch_get_word(const struct transcribe_session *session,
                                                           int i, int j,
                                                           struct transcribe_word *out);
TRANSCRIBE_API transcribe_status transcribe_batch_get_token(
    const struct transcribe_session *session, int i, int j, struct transcribe_token *out);
TRANSCRIBE_API int transcribe_batch_n_speaker_segments(const struct transcribe_session *session,
                                                       int i);
TRANSCRIBE_API transcribe_status transcribe_batch_get_speaker_segment(
    const struct transcribe_session *session, int i, int j, struct transcribe_speaker_segment *out);
TRANSCRIBE_API bool transcribe_batch_was_chunked(const struct transcribe_session *session, int i);
TRANSCRIBE_API int transcribe_batch_n_pieces(const struct transcribe_session *session, int i);
TRANSCRIBE_API transcribe_status transcribe_batch_get_piece(
    const struct transcribe_session *session, int i, int j, struct transcribe_piece *out);
TRANSCRIBE_API transcribe_status transcribe_batch_get_timings(
    const struct transcribe_session *session, int i, struct transcribe_timings *out);

/* ==== Additions of this library (not part of the transcribe.cpp 0.2.1 surface) ==== */

/* Audio tags: the emotion and the audio event a model labels an utterance
 * with, as the model names them (SenseVoice: "NEUTRAL", "HAPPY", "SAD",
 * "ANGRY", "FEARFUL", "DISGUSTED", "SURPRISED", "EMO_UNKNOWN"; "Speech",
 * "BGM", "Applause", "Laughter", "Cry", "Sneeze", "Breath", "Cough",
 * "Event_UNK"). "" when the model gives none (every other family). Valid
 * like the other result strings (until the next run / begin / reset /
 * free); for a long input cut into pieces, the first piece's. */
TRANSCRIBE_API const char *transcribe_detected_emotion(const struct transcribe_session *session);
TRANSCRIBE_API const char *
transcribe_detected_audio_event(const struct transcribe_session *session);
TRANSCRIBE_API const char *
transcribe_batch_detected_emotion(const struct transcribe_session *session, int i);
TRANSCRIBE_API const char *
transcribe_batch_detected_audio_event(const struct transcribe_session *session, int i);

/* Decodes an audio file (WAV; FLAC/MP3/Ogg/Opus when built with libsndfile)
 * to mono float PCM resampled to target_rate Hz (0 keeps the file's rate).
 * On success *out_pcm is malloc'ed (free with transcribe_audio_free) and
 * holds *out_n_samples samples. Errors: INVALID_ARG (NULL arguments,
 * unreadable or unsupported audio), FILE_NOT_FOUND, OOM. */
TRANSCRIBE_API transcribe_status transcribe_audio_load_file(const char *path, int target_rate,
                                                            float **out_pcm, int *out_n_samples);
/* The same for untrusted files: audio longer than max_ms milliseconds
 * (<= 0: no limit) is refused with INPUT_TOO_LONG before it is decoded
 * (when the header tells the length) or as soon as the decoded part passes
 * the limit, and before resampling, so that a small upload (hours of
 * compressed silence, a WAV at a low rate) cannot expand to gigabytes. */
TRANSCRIBE_API transcribe_status transcribe_audio_load_file_max(const char *path, int target_rate,
                                                                int64_t max_ms, float **out_pcm,
                                                                int *out_n_samples);
TRANSCRIBE_API void transcribe_audio_free(float *pcm);

/* Pause splitting for long audio (an addition; the run calls' contracts are
 * unchanged). Some families cannot take a long file in one call (Qwen3-ASR
 * stops after 256 output tokens, about a minute of speech); a front end cuts
 * the file with this planner, runs the pieces and offsets each piece's times
 * by its start. Silence is found by frame energy against an adaptive noise
 * floor (with hysteresis and a minimum pause length); each piece ends in the
 * best pause (long, deep, late) before target_ms, else before max_ms, else at
 * the quietest frame before max_ms, and never exceeds max_ms. Silence more
 * than 1 s from speech (inside a long pause, before the first and after the
 * last speech) is left out, so the spans need not be contiguous; audio with
 * no speech at all gives zero spans. */
struct transcribe_pause_split_params {
    uint64_t struct_size;
    int64_t target_ms;    /* default 20000: preferred longest piece (>= 1000) */
    int64_t max_ms;       /* default 30000: hard cap per piece (>= target_ms) */
    int64_t min_pause_ms; /* default 250: shorter quiet runs are not pauses (10..5000) */
    /* Appended: pauses are the gaps between this VAD model's speech regions
     * (default NULL = energy based); sample_rate must then be 16000 or 8000. */
    const struct transcribe_vad_model *vad_model;
    const struct transcribe_vad_params *vad_params; /* NULL = defaults */
};

/* How a span ends. */
enum transcribe_span_end {
    TRANSCRIBE_SPAN_END_SPEECH = 0, /* last span: after the last speech (or the audio's end) */
    TRANSCRIBE_SPAN_END_PAUSE = 1,  /* cut inside a pause */
    TRANSCRIBE_SPAN_END_FORCED = 2, /* no pause within max_ms: cut at the quietest frame */
};

/* One piece of the input, in samples: [start, end). Fixed layout (never
 * extended: it is returned as an array). */
struct transcribe_audio_span {
    int64_t start;
    int64_t end;
    int32_t end_kind; /* enum transcribe_span_end */
};

TRANSCRIBE_API void transcribe_pause_split_params_init(struct transcribe_pause_split_params *p);
/* Plans the spans of pcm (mono, sample_rate Hz; NULL params = defaults). On
 * success *out_spans is malloc'ed (free with transcribe_pause_split_free;
 * NULL when *out_n is 0) and holds *out_n spans in order. Errors:
 * INVALID_ARG (NULL pcm with n_samples > 0, n_samples < 0, sample_rate
 * outside 1000..384000, parameters out of range), BAD_STRUCT_SIZE, OOM. */
TRANSCRIBE_API transcribe_status
transcribe_pause_split(const float *pcm, int64_t n_samples, int sample_rate,
                       const struct transcribe_pause_split_params *params,
                       struct transcribe_audio_span **out_spans, int *out_n);
TRANSCRIBE_API void transcribe_pause_split_free(struct transcribe_audio_span *spans);

/* Voice activity detection (an addition): Silero VAD v4, its trained weights
 * converted to GGUF (models/silero-vad-v4.gguf, tools/convert_silero_vad.py).
 * A VAD model is read-only once loaded and may be shared by any number of
 * detectors on any threads; a detector is used by one thread at a time.
 * Rates: 16000 and 8000 Hz (resample anything else first, e.g. with
 * transcribe_audio_load_file). The network gives one speech probability per
 * window (512 samples at 16 kHz, 256 at 8 kHz by default) with its LSTM state
 * carried from window to window; segments follow Silero's
 * get_speech_timestamps rules with every parameter below. */
struct transcribe_vad_model;
struct transcribe_vad;

struct transcribe_vad_params {
    uint64_t struct_size;
    float threshold;        /* default 0.5: a window >= this starts speech; [0, 1] */
    float neg_threshold;    /* default -1 = max(threshold - 0.15, 0.01): below it is silence */
    int32_t min_speech_ms;  /* default 250: regions no longer than this are dropped */
    int32_t min_silence_ms; /* default 100: a shorter pause does not end a region */
    int32_t speech_pad_ms;  /* default 30: added on each side (half the gap when closer) */
    float max_speech_s;     /* default 0 = no limit: longer regions are cut at a pause */
    int32_t
        window_samples; /* default 0 = 512 at 16 kHz / 256 at 8 kHz; also 1024, 1536 / 512, 768 */
};

/* One speech region, [start, end) in samples of the detector's rate and ms. */
struct transcribe_vad_segment {
    int64_t start;
    int64_t end;
    int64_t t0_ms;
    int64_t t1_ms;
};

TRANSCRIBE_API void transcribe_vad_params_init(struct transcribe_vad_params *params);
/* Errors: INVALID_ARG (NULL), FILE_NOT_FOUND, GGUF (not GGUF, truncated,
 * missing or misshapen tensors), UNSUPPORTED_ARCH (another model), OOM. */
TRANSCRIBE_API transcribe_status transcribe_vad_model_load(const char *path,
                                                           struct transcribe_vad_model **out);
TRANSCRIBE_API void transcribe_vad_model_free(struct transcribe_vad_model *model);
/* A detector at sample_rate (16000 or 8000, else SAMPLE_RATE); NULL params =
 * defaults. INVALID_ARG names a parameter out of range (threshold outside
 * [0, 1], neg_threshold above threshold, a negative duration, a window size
 * the model does not take). */
TRANSCRIBE_API transcribe_status transcribe_vad_init(const struct transcribe_vad_model *model,
                                                     int sample_rate,
                                                     const struct transcribe_vad_params *params,
                                                     struct transcribe_vad **out);
TRANSCRIBE_API void transcribe_vad_free(struct transcribe_vad *vad);
/* Offline: forgets earlier input, runs over n_samples (0 is fine: no
 * segments) and finishes. Non-finite samples are read as 0 (with a warning). */
TRANSCRIBE_API transcribe_status transcribe_vad_run(struct transcribe_vad *vad, const float *pcm,
                                                    int64_t n_samples);
/* Streaming: feed any number of samples at a time; segments become readable
 * as soon as their bounds can no longer change; finish closes the stream (a
 * partial last window is zero-padded, an open region ends at the audio's
 * end). reset starts a new stream (LSTM state cleared). */
TRANSCRIBE_API transcribe_status transcribe_vad_feed(struct transcribe_vad *vad, const float *pcm,
                                                     int64_t n_samples);
TRANSCRIBE_API transcribe_status transcribe_vad_finish(struct transcribe_vad *vad);
TRANSCRIBE_API void transcribe_vad_reset(struct transcribe_vad *vad);
/* True while the last window processed is inside a speech region. */
TRANSCRIBE_API bool transcribe_vad_in_speech(const struct transcribe_vad *vad);
TRANSCRIBE_API int transcribe_vad_n_segments(const struct transcribe_vad *vad);
TRANSCRIBE_API transcribe_status transcribe_vad_get_segment(const struct transcribe_vad *vad, int i,
                                                            struct transcribe_vad_segment *out);
/* Probabilities of every window processed since the reset (owned by the
 * detector, valid until its next call); *n_windows gets their count. */
TRANSCRIBE_API const float *transcribe_vad_probs(const struct transcribe_vad *vad,
                                                 int64_t *n_windows);

/* Per-handle errors (an addition). The message of the last failed call on a
 * handle: the first error the call reported to the log sink (which still
 * receives every message), else its status string; "" until a call fails
 * and for NULL. A successful call leaves it unchanged.
 *  - session: transcribe_run, transcribe_run_batch, transcribe_stream_begin,
 *    transcribe_stream_feed, transcribe_stream_finalize. The string is owned
 *    by the session, valid until its next call or transcribe_session_free.
 *  - model: transcribe_session_init (and transcribe_open's session half).
 *    Owned by the model; sessions may be created on several threads at once,
 *    so read it when no other thread is creating a session on that model.
 * A failed transcribe_model_load_file returns no handle: its message goes to
 * the log sink only. So does a call rejected for its own arguments (a NULL
 * pointer, a count <= 0, a caller struct's struct_size): every entry judges
 * those before it touches the handle, which it leaves unchanged (the pointer
 * may be no handle at all). Values judged against the session (an enum out
 * of range, a setting or extension the model cannot take) are that call's
 * error on the handle. */
TRANSCRIBE_API const char *transcribe_session_last_error(const struct transcribe_session *session);
TRANSCRIBE_API const char *transcribe_model_last_error(const struct transcribe_model *model);

/* Progress (an addition). During transcribe_run, cb gets the fraction of
 * the input processed so far (0..1, never decreasing within a run), on the
 * thread executing the run, as often as the family can tell: Whisper after
 * each 30 s window, Parakeet per encoder layer and window; Canary, Qwen3-ASR,
 * Granite Speech and MOSS per encoder layer (MOSS: per encoder chunk) up to
 * about half, then per decoder step as the share of the step budget used,
 * 1 at the end. With a diarizer (transcribe_run_params.diarizer) the
 * transcription fills 0..0.9 and the diarizer's pass the rest, so 1 comes
 * once the speakers are in. NULL turns it off. Set it between runs, like
 * the abort callback. */
typedef void (*transcribe_progress_callback)(float fraction, void *user_data);
TRANSCRIBE_API void transcribe_set_progress_callback(struct transcribe_session *session,
                                                     transcribe_progress_callback cb,
                                                     void *user_data);

/* Language detection only (an addition). Detects the spoken language of
 * the first 30 s of pcm (16 kHz mono float, as transcribe_run) without
 * transcribing more than detection needs. *out_code (required) gets the
 * code, valid until the session's next run or free; *out_probability
 * (may be NULL) the model's probability for it, or NaN where the family
 * gives none (it then transcribed the 30 s to find the language).
 * UNSUPPORTED_LANGUAGE when the model cannot detect
 * (capabilities.supports_language_detect false); otherwise the statuses of
 * transcribe_run. The session's previous result is replaced. */
TRANSCRIBE_API transcribe_status transcribe_detect_language(struct transcribe_session *session,
                                                            const float *pcm, int n_samples,
                                                            const char **out_code,
                                                            float *out_probability);
/* WAV headers and live resampling (an addition): the parser and the
 * resampler behind transcribe_audio_load_file, for audio that arrives in
 * pieces (a pipe, a socket, an upload being checked).
 * transcribe_wav_read_header reads the header from the first `size` bytes of
 * a RIFF/WAVE or RF64 file: PCM 8/16/24/32-bit, IEEE float 32/64, A-law,
 * mu-law, WAVE_FORMAT_EXTENSIBLE of those. complete: the bytes are the
 * whole input (a missing chunk is then an error). Returns OK with
 * *out_need 0 and *info filled once the samples start; OK with *out_need >
 * size when it needs more bytes (at least *out_need in all) to tell; and
 * INVALID_ARG, with the reason logged, for a header that cannot describe
 * audio: not RIFF/WAVE, a sample rate outside 1000..1536000 Hz, 0 or more
 * than 64 channels, block_align other than channels x bits / 8, an
 * unsupported format, no data chunk (complete) or one before the fmt chunk
 * (not complete), more than 16 MiB of header. */
struct transcribe_wav_info {
    uint64_t struct_size;
    int32_t sample_rate;
    int32_t channels;
    int32_t bits_per_sample;
    int32_t format_tag;  /* 1 PCM, 3 IEEE float, 6 A-law, 7 mu-law */
    int32_t block_align; /* bytes per frame */
    int64_t data_offset; /* the first sample frame's byte offset */
    /* The data chunk's length in bytes, or -1 when the writer left it open
     * (0, or 0x7FFFF000 and up, as piping writers such as arecord do): the
     * samples run to the end of the input. */
    int64_t data_bytes;
};
TRANSCRIBE_API void transcribe_wav_info_init(struct transcribe_wav_info *info);
TRANSCRIBE_API transcribe_status transcribe_wav_read_header(const void *data, size_t size,
                                                            bool complete,
                                                            struct transcribe_wav_info *info,
                                                            size_t *out_need);
/* Converts the whole frames of data[0..n_bytes) (n_bytes / block_align of
 * them; a partial frame at the end is not read) to mono float, channels
 * averaged and scaled as the file decoder does (non-finite samples become
 * 0), into out (room for that many). *out_frames gets their count. */
TRANSCRIBE_API transcribe_status
transcribe_wav_decode_frames(const struct transcribe_wav_info *info, const void *data,
                             size_t n_bytes, float *out, int64_t *out_frames);

/* A streaming resampler: the library's built-in windowed-sinc resampler
 * fed in pieces of any size; its output equals that resampler run on the
 * whole input at once (libsoxr, where transcribe_audio_load_file uses it,
 * is not streamed). Rates 1000..1536000 Hz; equal rates pass through. Each
 * feed writes the outputs that no later input can change (at most
 * transcribe_resampler_max_out(r, n_in) of them); finish writes the rest
 * (at most transcribe_resampler_max_out(r, 0)), reading past the end as
 * silence. Errors: INVALID_ARG (rates, NULL, a feed after finish), OOM. */
struct transcribe_resampler;
TRANSCRIBE_API transcribe_status transcribe_resampler_init(int rate_in, int rate_out,
                                                           struct transcribe_resampler **out);
TRANSCRIBE_API int64_t transcribe_resampler_max_out(const struct transcribe_resampler *r,
                                                    int64_t n_in);
TRANSCRIBE_API transcribe_status transcribe_resampler_feed(struct transcribe_resampler *r,
                                                           const float *in, int64_t n_in,
                                                           float *out, int64_t *out_n);
TRANSCRIBE_API transcribe_status transcribe_resampler_finish(struct transcribe_resampler *r,
                                                             float *out, int64_t *out_n);
TRANSCRIBE_API void transcribe_resampler_free(struct transcribe_resampler *r);

/* Output formats (an addition): a result printed as plain text, JSON,
 * SubRip or WebVTT, the same bytes whichever front end asks (the CLI, the
 * server and the Python package all print through this).
 *  - txt: the transcript and a newline; a diarized result one line per
 *    speaker turn, "[S1] text".
 *  - json: one object on one line: file, model, text, language, duration,
 *    timestamps (the kind returned), error (when run_status is not OK),
 *    truncated, chunks (the pieces of a split run), cues (the subtitle
 *    cues), segments (with speaker_id / speaker), words, tokens (with
 *    json_tokens).
 *  - srt / vtt: one cue per timed segment ("[S1] " / "<v S1>" on a
 *    diarized one); a segment longer than 7 s (max_cue_ms) or with more
 *    than 84 characters (max_line_chars) whose words carry their own times
 *    is cut at word boundaries: after a pause of 800 ms, after a sentence's
 *    end once the cue is 1.5 s long, or before it would pass 7 s or 84
 *    characters. An untimed result is one cue over the audio (duration_s).
 *    A cue starts where the one before ended at the earliest (segments
 *    stitched from overlapping windows may overlap).
 * Every row's times are clamped into [0, duration_s]. */
typedef enum {
    TRANSCRIBE_FORMAT_TXT = 0,
    TRANSCRIBE_FORMAT_JSON = 1,
    TRANSCRIBE_FORMAT_SRT = 2,
    TRANSCRIBE_FORMAT_VTT = 3,
} transcribe_output_format;

struct transcribe_format_params {
    uint64_t struct_size;
    int32_t format;         /* transcribe_output_format; default TXT */
    int32_t max_line_chars; /* default 0 = 84; else 1..1000 */
    int32_t max_cue_ms;     /* default 0 = 7000; else 100..3600000 */
    bool json_tokens;       /* default false: json without token rows */
    bool txt_header;        /* default false: txt starts with "# <file>" when true */
    double duration_s;      /* the audio's length in seconds (>= 0, finite); default 0 */
    const char *file;       /* json "file", the txt header (NULL = "") */
    const char *model;      /* json "model" (NULL = "") */
    /* The status the run returned. After OK, OUTPUT_TRUNCATED or ABORTED
     * the session's result is printed; after any other status an empty one
     * (json still names the file and carries the error; the other formats
     * are empty). Default OK. */
    int32_t run_status;
};

TRANSCRIBE_API void transcribe_format_params_init(struct transcribe_format_params *params);
/* Renders the session's result (the single run when batch_index < 0, else
 * batch row batch_index) as params say (NULL = defaults). On success
 * *out_text is malloc'ed, NUL-terminated (free with transcribe_format_free)
 * and *out_len (may be NULL) gets its length. Errors: INVALID_ARG (NULL
 * session or out_text, batch_index out of range, a parameter out of range),
 * BAD_STRUCT_SIZE, OOM; *out_text is then NULL. */
TRANSCRIBE_API transcribe_status transcribe_format_result(
    const struct transcribe_session *session, int batch_index,
    const struct transcribe_format_params *params, char **out_text, size_t *out_len);
TRANSCRIBE_API void transcribe_format_free(char *text);
#ifdef __cplusplus
}
#endif

#endif /* TRANSCRIBE_H */
