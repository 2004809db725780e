/* Private definitions of the public handles and helpers shared by the
 * dispatcher's translation units (model.c, session.c, run.c, stream.c,
 * accessors.c, ...). Nothing here is visible to families. */
#ifndef TR_API_INTERNAL_H
#define TR_API_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"
#include "core/family.h"
#include "core/result.h"
#include "tensor/pool.h"
#include "transcribe.h"
#include "util/strbuf.h"

struct gguf_file;

typedef struct tr_meta_kv {
    char *key;
    char *val;
} tr_meta_kv;

/* Longest per-handle error message kept (longer ones are cut). */
#define TR_LAST_ERROR_CAP 512

struct transcribe_model {
    const tr_family *family;
    void *fmodel; /* family model */
    tr_model_desc desc;
    struct gguf_file *gguf; /* GGUF files: kept open (tensors are used in place) */
    void *bin_map;          /* legacy .bin: read-only mapping */
    size_t bin_size;
    char *arch;
    char *variant;    /* stt.variant copy: used when the family reports none */
    tr_meta_kv *meta; /* top-level STRING KVs (gguf-common.md §3.3) */
    int n_meta;
    float load_ms;
    /* transcribe_model_last_error: model calls may run on several threads
     * (c-api.md §1.6), so writers take error_lock. */
    atomic_flag error_lock;
    char last_error[TR_LAST_ERROR_CAP];
};

/* Streaming bookkeeping owned by the dispatcher (c-api.md §14). */
#define TR_STREAM_MAX_AGREE 32
typedef struct tr_stream_state {
    enum transcribe_stream_state state;
    transcribe_status last_status;
    int revision;
    transcribe_stream_commit_policy policy;
    uint32_t agree_n;
    struct transcribe_run_params params; /* copy; strings below */
    char *language, *target_language;
    void *ext_copy; /* copy of the stream extension */
    tr_strbuf committed;
    uint64_t tentative_start;        /* byte offset of the tentative suffix in full_text */
    char *hist[TR_STREAM_MAX_AGREE]; /* last raw hypotheses (generic agreement) */
    int n_hist;
    int64_t input_received_ms;
    int64_t samples_received;
    int64_t audio_committed_ms;
    int64_t buffered_ms;
    int n_committed_segs, n_committed_words, n_committed_toks;
} tr_stream_state;

struct transcribe_session {
    tr_session_head head; /* first: family and family session (core/family.h) */
    struct transcribe_model *model;
    bool owns_model; /* created by transcribe_open */
    tr_pool *pool;
    tr_session_cfg cfg;
    transcribe_abort_callback abort_cb;
    void *abort_user_data;
    transcribe_progress_callback progress_cb; /* transcribe_set_progress_callback */
    void *progress_user_data;
    /* results[0..n_results): index 0 is the single-run result */
    tr_result *results;
    int n_results, cap_results;
    bool aborted, truncated;
    float mel_ms, encode_ms, decode_ms;
    tr_stream_state stream;
    char last_error[TR_LAST_ERROR_CAP]; /* transcribe_session_last_error */
};

/* Per-handle errors (last_error.c): after a failed call on the handle, keep
 * the first error message the call logged (captured through
 * tr_log_capture_begin), else the status string. No-ops on success or NULL. */
void tr_api_note_session_error(struct transcribe_session *s, transcribe_status st,
                               const char *captured);
void tr_api_note_model_error(struct transcribe_model *m, transcribe_status st,
                             const char *captured);

/* Minimum struct_size each entry point accepts (c-api.md §19). */
#define TR_MIN_LOAD_PARAMS     24u
#define TR_MIN_SESSION_PARAMS  16u
#define TR_MIN_RUN_PARAMS      68u
#define TR_MIN_STREAM_PARAMS   16u
#define TR_MIN_CAPABILITIES    31u
#define TR_MIN_TIMINGS         24u
#define TR_MIN_ROW             48u
#define TR_MIN_STREAM_UPDATE   40u
#define TR_MIN_STREAM_TEXT     64u
#define TR_MIN_SESSION_LIMITS  32u
#define TR_MIN_DEVICE_INFO     32u
#define TR_MIN_SPEAKER_SEGMENT 32u

/* Ensures results[0..n) exist (empty); false on OOM. */
bool tr_session_reserve_results(struct transcribe_session *s, int n);
/* Clears results, batch slots, timings and outcome flags (a committed run). */
void tr_session_clear_results(struct transcribe_session *s);
/* The single result (index 0) or NULL when there is none. */
const tr_result *tr_session_result(const struct transcribe_session *s);
/* Batch slot i or NULL when out of range. */
const tr_result *tr_session_batch_result(const struct transcribe_session *s, int i);
/* After a family call: a kernel that failed inside it (tr_pool_note_failure)
 * turns an otherwise successful status into ERR_OOM or ERR_BACKEND, logged
 * with `where`; other statuses pass through. Clears the record. */
transcribe_status tr_session_kernel_status(struct transcribe_session *s, transcribe_status st,
                                           const char *where);

/* Shared run-parameter validation, c-api.md §10.1 steps 5–9 (enums,
 * timestamps, language gates, advisory warnings, task). `streaming` applies
 * the streaming rules (TRANSLATE always rejected, after the language gates). */
transcribe_status tr_validate_run_params(const struct transcribe_model *m,
                                         const struct transcribe_run_params *p, bool streaming);
/* Extension pointer shape check at an entry point (c-api.md §7.2). */
transcribe_status tr_validate_ext_ptr(const struct transcribe_model *m,
                                      const struct transcribe_ext *ext, transcribe_ext_slot slot,
                                      const char *where);
/* Load-time backend/device rules (device.c, c-api.md §5.3). */
transcribe_status tr_api_check_backend(transcribe_backend_request backend,
                                       transcribe_device_t device);
/* Stream teardown helpers (stream.c). */
void tr_stream_clear(struct transcribe_session *s);
void tr_stream_free(struct transcribe_session *s);

#endif
