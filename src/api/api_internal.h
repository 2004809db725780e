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
    tr_meta_kv *meta; /* top-level STRING KVs (docs/formats/gguf.md §3.3) */
    int n_meta;
    float load_ms;
    /* transcribe_model_last_error: model calls may run on several threads
     * (docs/c-api.md §1.6), so writers take error_lock. */
    atomic_flag error_lock;
    char last_error[TR_LAST_ERROR_CAP];
};

/* Streaming bookkeeping owned by the dispatcher (docs/c-api.md §14). */
#define TR_STREAM_MAX_AGREE 32

/* The generic streaming driver (stream_window.c): every family without
 * native streaming hooks streams through its offline run path by
 * re-decoding a window of recent audio. pcm[0..n) is the audio from
 * absolute sample win_start on; frozen is the text of the audio already
 * trimmed off the window (always consistent with the committed text). */
typedef struct tr_stream_window {
    float *pcm;
    int64_t n, cap;
    int64_t win_start;  /* absolute sample of pcm[0] */
    int64_t decoded_to; /* absolute sample end of the last window decode (0: none) */
    tr_strbuf frozen;
    tr_strbuf composed; /* scratch: frozen + window hypothesis */
    tr_result hyp;      /* scratch: the last window decode */
    tr_result cut;      /* scratch: the decode of the part being trimmed */
    /* The rows of the frozen text lead the session's result (on the
     * stream's clock): how many of each, and the arena length after their
     * strings; a publish keeps them and replaces what follows. */
    int frozen_segs, frozen_words, frozen_toks;
    uint64_t frozen_mark;
    uint64_t rows_mark; /* the arena length after the last publish's rows */
    /* Fixed at begin from the model's limits (samples). */
    int rate;
    int64_t step, soft, hard;
    int n_decodes, n_trims, n_forced;
    /* Set by the VAD glue (stream_vad.c): when gated, step boundaries
     * decode only while speech_live (the detector hears speech or holds a
     * region not yet committed). */
    bool gated, speech_live;
} tr_stream_window;
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
    /* Native commits of a family whose hypothesis only grows
     * (tr_stream_ctx.grows_only): the text bytes of token rows
     * [0, native_counted) summed so far, so a call adds only its new rows. */
    bool native_grows;
    int native_counted;
    size_t native_bytes;
    bool generic; /* this stream runs through the generic driver */
    tr_stream_window win;
    struct transcribe_vad *vad; /* run params' vad_model: commits at each region end; else NULL */
    int vad_done;               /* the detector's regions already committed */
    int64_t vad_hold;  /* samples after the detector last heard speech in which a region may
                        * still be published (its end waits for min_silence and 2 pads) */
    int64_t vad_heard; /* absolute sample end of the last piece heard as speech (-1: none) */
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
    /* run_params.diarizer (diarize.c): the diarizer's family session while
     * a call runs it (released before the call returns: the caller may free
     * the diarizer model right after) */
    const struct transcribe_model *diar_model;
    void *diar_fsession;
};

/* Speaker attribution by run_params.diarizer (diarize.c). check: the
 * diarizer is a diarization model at the session's rate (INVALID_ARG /
 * SAMPLE_RATE, before anything changes). result: runs it over pcm and labels
 * r's words and segments, its speaker rows becoming r's (the diarizer's
 * status on failure: ABORTED, OOM, ...). batch: the same for every
 * utterance that ended OK or truncated (an abort marks the rest ABORTED and
 * is returned; OOM is returned; other failures are the utterance's status).
 * Both release the diarizer's session before they return. release: frees
 * it (also at session free, for a call cut short). */
transcribe_status tr_diarize_check(const struct transcribe_session *s,
                                   const struct transcribe_run_params *p, const char *where);
transcribe_status tr_diarize_result(struct transcribe_session *s,
                                    const struct transcribe_run_params *p, const float *pcm, int n,
                                    tr_result *r, const char *where);
transcribe_status tr_diarize_batch(struct transcribe_session *s,
                                   const struct transcribe_run_params *p, const float *const *pcm,
                                   const int *n_samples, int n);
void tr_diarize_release(struct transcribe_session *s);
/* Progress of a run with a diarizer: between begin and end the session's
 * progress callback (if any) sees the transcription's fractions scaled into
 * [0, TR_DIAR_PROGRESS_AT]; tr_diarize_result then fills the rest, so 1 is
 * reported once the speakers are in, not before the diarizer's pass. */
#define TR_DIAR_PROGRESS_AT 0.9f
typedef struct tr_progress_span {
    transcribe_progress_callback cb; /* the caller's */
    void *user_data;
    float base, span;
    bool hold_end; /* the scaled pass's own 1 is not passed on: the caller reports the end */
} tr_progress_span;
void tr_diarize_progress_begin(struct transcribe_session *s, tr_progress_span *ps);
void tr_diarize_progress_end(struct transcribe_session *s, const tr_progress_span *ps);

/* Per-handle errors (last_error.c): after a failed call on the handle, keep
 * the first error message the call logged (captured through
 * tr_log_capture_begin), else the status string. No-ops on success or NULL. */
void tr_api_note_session_error(struct transcribe_session *s, transcribe_status st,
                               const char *captured);
void tr_api_note_model_error(struct transcribe_model *m, transcribe_status st,
                             const char *captured);

/* Runs over the speech regions only (vad_run.c): the joined audio and
 * where each region came from, to map result times back. */
typedef struct tr_vad_piece {
    int64_t orig, joined, len; /* samples */
} tr_vad_piece;
typedef struct tr_vad_join {
    float *pcm; /* the regions joined (NULL when there are none) */
    int n, rate, n_pieces;
    tr_vad_piece *pieces;
} tr_vad_join;
transcribe_status tr_vad_join_plan(const struct transcribe_vad_model *vm,
                                   const struct transcribe_vad_params *vp, int rate,
                                   const float *pcm, int n, tr_vad_join *out);
void tr_vad_join_remap(const tr_vad_join *j, tr_result *r);
void tr_vad_join_free(tr_vad_join *j);
/* No speech found: the family runs on a short silence (*n samples of 0),
 * so the result still says which timestamp kind a run returns; then
 * tr_vad_empty_result drops its text and rows (status, kind, timings kept). */
const float *tr_vad_quiet_pcm(int *n);
void tr_vad_empty_result(tr_result *r);
/* The same for a batch: per utterance the joined regions (an utterance
 * without speech runs on a short silence whose result is then emptied;
 * invalid utterances pass through for the usual checks). finish remaps and
 * empties the results (NULL: none) and frees everything. */
typedef struct tr_vad_batch {
    const float **pcm;
    int *n;
    tr_vad_join *joins;
    int count;
} tr_vad_batch;
transcribe_status tr_vad_batch_plan(const struct transcribe_vad_model *vm,
                                    const struct transcribe_vad_params *vp, int rate,
                                    const float *const *pcm, const int *n_samples, int count,
                                    tr_vad_batch *out);
void tr_vad_batch_finish(tr_vad_batch *b, tr_result *results);

/* Minimum struct_size each entry point accepts (docs/c-api.md §19). */
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
#define TR_MIN_PIECE           32u

/* results.c: the session's result slots. Ensures results[0..n) exist
 * (empty); false on OOM. */
bool tr_session_reserve_results(struct transcribe_session *s, int n);
/* Clears results, batch slots, timings and outcome flags (a committed run). */
void tr_session_clear_results(struct transcribe_session *s);
/* The single result (index 0) or NULL when there is none. */
const tr_result *tr_session_result(const struct transcribe_session *s);
/* Batch slot i or NULL when out of range. */
const tr_result *tr_session_batch_result(const struct transcribe_session *s, int i);
/* run_family.c: after a family call, a kernel that failed inside it (tr_pool_note_failure)
 * turns an otherwise successful status into ERR_OOM or ERR_BACKEND, logged
 * with `where`; other statuses pass through. Clears the record. */
transcribe_status tr_session_kernel_status(struct transcribe_session *s, transcribe_status st,
                                           const char *where);

/* run_params.c: the one copy-in of a caller's run params (NULL = defaults;
 * struct_size decides which appended fields are read) with the checks of
 * the fields themselves (vocabulary terms, chunking); `where` names the
 * entry point in messages. */
transcribe_status tr_run_params_load(const struct transcribe_run_params *params,
                                     struct transcribe_run_params *out, const char *where);
/* The checks of loaded run params against a session's model shared by run
 * and run_batch: the extension, tr_validate_run_params and the family's
 * validate_run. */
transcribe_status tr_run_params_check(const struct transcribe_session *s,
                                      const struct transcribe_run_params *p, const char *where);
/* limits.c: the session's limits (the family's get_limits, else the
 * model's input limit), what transcribe_session_get_limits copies out. */
void tr_session_limits(const struct transcribe_session *s, struct transcribe_session_limits *out);

/* run_family.c: the family's run paths with validated params into results
 * the caller hands in (nothing else of the session changes). tr_run_family:
 * one utterance through family->run (detect_prob: language detection);
 * tr_run_family_joined: the same over a VAD join's speech regions, result
 * times mapped back; tr_run_family_batch: utterances through run_batch (or
 * run one by one), each row's status in rs[i].status, the whole-call status
 * returned. */
transcribe_status tr_run_family(struct transcribe_session *s, const float *pcm, int n,
                                const struct transcribe_run_params *p, tr_result *r,
                                float *detect_prob, const char *where);
transcribe_status tr_run_family_joined(struct transcribe_session *s, const tr_vad_join *vj,
                                       const struct transcribe_run_params *p, tr_result *r,
                                       float *detect_prob, const char *where);
transcribe_status tr_run_family_batch(struct transcribe_session *s, const float *const *pcm,
                                      const int *n_samples, int n,
                                      const struct transcribe_run_params *p, tr_result *rs);

/* chunk.c: long audio (transcribe_run_params.chunking). */
#define TR_CHUNK_DEFAULT_MS 30000   /* longest piece by default */
#define TR_CHUNK_MIN_MS     2000    /* shortest chunk_max_ms */
#define TR_CHUNK_MAX_MS     3600000 /* longest chunk_max_ms */
#define TR_CHUNK_MAX_BATCH  4096    /* most chunk_batch */
typedef struct tr_chunk_plan {
    bool split;
    int64_t max_ms, target_ms; /* pause_split's limits for the pieces */
    int batch;                 /* pieces per call */
    char why[160];             /* for the log: why the input is split */
} tr_chunk_plan;
/* The rule alone (no model needed): whether an input of duration_ms is
 * split under mode, given what the family states (bounded_output,
 * TRANSCRIBE_FEATURE_LONG_FORM, its input limit; arch only for the log). */
tr_chunk_plan tr_chunk_rule(enum transcribe_chunking mode, int64_t chunk_max_ms, const char *arch,
                            bool bounded_output, bool long_form, int64_t limit_ms,
                            int64_t duration_ms);
/* The rule for a session's model and limits, with the batch size. */
tr_chunk_plan tr_chunk_plan_for(const struct transcribe_session *s,
                                const struct transcribe_run_params *p, int64_t n_samples);
/* Cuts pcm into the plan's pieces (at the VAD's pauses with p->vad_model);
 * *spans as transcribe_pause_split gives them. Changes nothing else. */
transcribe_status tr_chunk_cut(const struct transcribe_session *s, const float *pcm, int n,
                               const struct transcribe_run_params *p, const tr_chunk_plan *plan,
                               struct transcribe_audio_span **spans, int *n_spans);
/* Runs the pieces (takes spans) and joins their results into out (empty;
 * left chunked, with its piece list, whatever the status): the first piece
 * error, else OUTPUT_TRUNCATED where a piece kept partial text, else OK
 * (ABORTED on abort). Progress goes to the session's callback per piece. */
transcribe_status tr_chunk_run(struct transcribe_session *s, const float *pcm, int n,
                               const struct transcribe_run_params *rp, const tr_chunk_plan *plan,
                               struct transcribe_audio_span *spans, int ns, tr_result *out);

/* Shared run-parameter validation, c-api.md §10.1 steps 5–9 (enums,
 * timestamps, language gates, advisory warnings, task). `streaming` applies
 * the streaming rules (TRANSLATE always rejected, after the language gates). */
transcribe_status tr_validate_run_params(const struct transcribe_model *m,
                                         const struct transcribe_run_params *p, bool streaming);
/* Extension pointer shape check at an entry point (docs/c-api.md §7.2). */
transcribe_status tr_validate_ext_ptr(const struct transcribe_model *m,
                                      const struct transcribe_ext *ext, transcribe_ext_slot slot,
                                      const char *where);
/* Load-time backend/device rules (device.c, docs/c-api.md §5.3). */
transcribe_status tr_api_check_backend(transcribe_backend_request backend,
                                       transcribe_device_t device);
/* The index-based GPU choice (c-api.md §5.4): 0, automatic, is the only
 * value a CPU-only build takes. Checked with the device rules, after the
 * file is found (a missing file is FILE_NOT_FOUND whatever gpu_device). */
transcribe_status tr_api_check_gpu_device(int gpu_device);
/* Stream teardown helpers (stream.c). */
void tr_stream_clear(struct transcribe_session *s);
void tr_stream_free(struct transcribe_session *s);
/* The commit policy applied to one new raw hypothesis `full` (stream_commit.c,
 * c-api.md §14.2): native_toks >= 0 is a native commit boundary in token
 * rows, -1 means generic text agreement. Returns whether the committed text
 * grew. */
bool tr_stream_commit(struct transcribe_session *s, const char *full, int native_toks);
/* The final commit at a successful finalize (stream_commit.c, docs/c-api.md §14.2):
 * everything in full is committed. */
void tr_stream_commit_final(struct transcribe_session *s, const char *full);
/* Frees the hypotheses kept for agreement (stream_commit.c). */
void tr_stream_forget_hypotheses(tr_stream_state *st);
/* Whether a model streams through its family's own stream_* hooks (else
 * through the generic driver, when the family has a run path). */
bool tr_stream_is_native(const struct transcribe_model *m);

/* The generic driver (stream_window.c), with the family hooks' contract:
 * begin sizes the window from the session's limits; feed buffers audio and
 * re-decodes the window at every step boundary (committing each hypothesis
 * through tr_stream_commit); finalize decodes what is left. clear forgets
 * the stream but keeps buffers; free releases them. */
transcribe_status tr_stream_window_begin(struct transcribe_session *s, tr_stream_ctx *ctx);
transcribe_status tr_stream_window_feed(struct transcribe_session *s, const float *pcm, int n,
                                        tr_stream_ctx *ctx);
transcribe_status tr_stream_window_finalize(struct transcribe_session *s, tr_stream_ctx *ctx);
/* VAD hooks of the generic driver. commit_region decodes the window's
 * audio of [start, end) (absolute samples) alone, appends its text to the
 * frozen text, commits everything up to there and drops the window's audio
 * before end. drop_silence drops the audio before keep_from and withdraws
 * any tentative text past the frozen text (audio outside speech gives none). */
transcribe_status tr_stream_window_commit_region(struct transcribe_session *s, tr_stream_ctx *ctx,
                                                 int64_t start, int64_t end);
transcribe_status tr_stream_window_drop_silence(struct transcribe_session *s, tr_stream_ctx *ctx,
                                                int64_t keep_from);
/* The VAD glue (stream_vad.c): runs the stream's detector beside the
 * generic driver; same contract as tr_stream_window_feed / _finalize. */
transcribe_status tr_stream_vad_feed(struct transcribe_session *s, const float *pcm, int n,
                                     tr_stream_ctx *ctx);
transcribe_status tr_stream_vad_finalize(struct transcribe_session *s, tr_stream_ctx *ctx);
void tr_stream_window_clear(tr_stream_window *w);
void tr_stream_window_free(tr_stream_window *w);

#endif
