/* The interface between the public API (dispatcher, sessions, results) and a
 * model family. A family is one folder under src/models/ that exports one
 * `const tr_family` and is listed once in src/models/registry.c. The
 * dispatcher does all public argument validation (docs/c-api.md §10.1 steps 1–9)
 * before calling in, so families see validated, defaults-filled parameters.
 * Nothing here names a family: family-specific formats and public entry
 * points reach the generic layers through the probe_file and ext_query hooks
 * and the session head below. */
#ifndef TR_CORE_FAMILY_H
#define TR_CORE_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "tensor/pool.h"
#include "transcribe.h"
#include "util/log.h"
#include "util/timer.h"

struct gguf_file;
struct tr_enc_cost;         /* nn/enc_cost.h (tool hooks) */
struct tr_clm_stages;       /* nn/causal_lm.h (tool hooks) */
struct tr_ed_probe;         /* nn/encdec_decoder.h (tool hooks) */
struct tr_ggml_bin_hparams; /* gguf/ggml_bin.h (tool hooks) */
struct tr_tokenizer;
struct transcribe_session;

/* What the loader hands a family. Exactly one of gguf / bin is set. */
typedef struct tr_load_ctx {
    const char *path;
    const struct gguf_file *gguf; /* owned by the model object; outlives the family model */
    const void *bin_data; /* a non-GGUF file the family's probe_file claimed, mapped read-only */
    size_t bin_size;
} tr_load_ctx;

#define TR_N_FEATURES 8

/* What a family reports about a loaded model. Pointers are owned by the
 * family model (valid until its free). */
typedef struct tr_model_desc {
    struct transcribe_capabilities caps;  /* struct_size ignored */
    bool features[TR_N_FEATURES];         /* indexed by transcribe_feature */
    const char *variant;                  /* stt.variant or family default; "" ok */
    const struct tr_tokenizer *tokenizer; /* for transcribe_tokenize; NULL = cannot encode */
    /* translation pairs "src>tgt" (optional; empty = not advertised) */
    int n_translate_pairs;
    const char *const *translate_pairs;
    /* Long audio (src/api/chunk.c): the family decodes a bounded number of
     * output tokens per call (a fixed budget, about a minute of speech) and
     * has no long-form mode of its own, so the dispatcher splits an input
     * longer than one piece at its pauses, and runs the pieces through
     * run_batch, several a call. A family without it is split only past
     * caps.max_audio_ms (or, stating neither that nor
     * TRANSCRIBE_FEATURE_LONG_FORM, past one piece), one piece a call. */
    bool bounded_output;
    /* The model transcribes nothing: its result is speaker turns only (a
     * diarizer such as Sortformer). A run on it takes no separate diarizer
     * (src/api/diarize.c). */
    bool speakers_only;
} tr_model_desc;

/* Starts a description: zeroes *desc (every capability off, no features,
 * no tokenizer) and sets what every family reports — native rate,
 * languages (borrowed from the family model), variant, timestamp kind and
 * cancellation (every family polls the abort callback). Returns the
 * capabilities for the rest. */
static inline struct transcribe_capabilities *
tr_model_desc_begin(tr_model_desc *desc, int sample_rate, int n_languages, char *const *languages,
                    const char *variant, transcribe_timestamp_kind timestamps) {
    memset(desc, 0, sizeof *desc);
    desc->caps.native_sample_rate = sample_rate;
    desc->caps.n_languages = n_languages;
    desc->caps.languages = (const char *const *)languages;
    desc->caps.max_timestamp_kind = timestamps;
    desc->features[TRANSCRIBE_FEATURE_CANCELLATION] = true;
    desc->variant = variant;
    return &desc->caps;
}

/* Fills a GGUF-only family's model: given the whole file, leaves *model
 * loaded (logging what it loaded) or returns the error, possibly with
 * *model half-filled. */
typedef transcribe_status (*tr_gguf_model_fill)(const struct gguf_file *f, void *model);

/* The model-load wrapper GGUF-only families share (family_load.c): refuses
 * a file that is not GGUF (INVALID_ARG, logged with who), allocates a zeroed
 * model of size bytes, fills it, and on failure frees the partial model
 * with free_model. *out gets the model on OK, NULL otherwise. */
transcribe_status tr_family_load_gguf(const tr_load_ctx *lc, const char *who, size_t size,
                                      tr_gguf_model_fill fill, void (*free_model)(void *model),
                                      void **out);

/* Defines P_model_load (declared by TR_FAMILY_DECLARE) for a GGUF-only
 * family through tr_family_load_gguf: fill is the family's static
 * tr_gguf_model_fill, who its log prefix. */
#define TR_FAMILY_GGUF_LOAD(P, who, fill)                                                          \
    static void tr_##P##_model_free_any(void *m) {                                                 \
        tr_##P##_model_free(m);                                                                    \
    }                                                                                              \
    transcribe_status tr_##P##_model_load(const tr_load_ctx *lc, P##_model **out) {                \
        void *m = NULL;                                                                            \
        transcribe_status st =                                                                     \
            tr_family_load_gguf(lc, who, sizeof(P##_model), fill, tr_##P##_model_free_any, &m);    \
        *out = m;                                                                                  \
        return st;                                                                                 \
    }

/* Defines P_session_create / P_session_free (declared by TR_FAMILY_DECLARE)
 * for a family whose session starts {const P_model *m; ...} and is set up in
 * one step: setup(s, cfg) fills the rest of a zeroed session whose m is set
 * (cfg is never NULL: a NULL one arrives as all defaults), release(s) frees
 * what setup made (also after a failed setup). The session itself is
 * allocated and freed here. */
#define TR_FAMILY_SESSION(P, setup, release)                                                       \
    transcribe_status tr_##P##_session_create(const P##_model *m, const tr_session_cfg *cfg,       \
                                              P##_session **out) {                                 \
        *out = NULL;                                                                               \
        P##_session *s = calloc(1, sizeof *s);                                                     \
        if (!s) return TRANSCRIBE_ERR_OOM;                                                         \
        s->m = m;                                                                                  \
        static const tr_session_cfg defaults = {0};                                                \
        transcribe_status st = setup(s, cfg ? cfg : &defaults);                                    \
        if (st != TRANSCRIBE_OK) {                                                                 \
            tr_##P##_session_free(s);                                                              \
            return st;                                                                             \
        }                                                                                          \
        *out = s;                                                                                  \
        return TRANSCRIBE_OK;                                                                      \
    }                                                                                              \
    void tr_##P##_session_free(P##_session *s) {                                                   \
        if (!s) return;                                                                            \
        release(s);                                                                                \
        free(s);                                                                                   \
    }

/* TR_FAMILY_SESSION for a family whose session is {const P_model *m;
 * tr_pool *pool;} and nothing else: an encoder-only run keeps no cache, so
 * the session's n_ctx and kv_type mean nothing and only the pool is kept
 * (GigaAM, SenseVoice, MedASR). One definition so that those families do
 * not each write the same empty setup / release pair. */
#define TR_FAMILY_POOL_SESSION(P)                                                                  \
    static transcribe_status P##_pool_session_setup(P##_session *s, const tr_session_cfg *cfg) {   \
        s->pool = cfg->pool;                                                                       \
        return TRANSCRIBE_OK;                                                                      \
    }                                                                                              \
    static void P##_pool_session_release(P##_session *s) {                                         \
        (void)s;                                                                                   \
    }                                                                                              \
    TR_FAMILY_SESSION(P, P##_pool_session_setup, P##_pool_session_release)

typedef struct tr_session_cfg {
    int n_threads;              /* resolved (>= 1) */
    transcribe_kv_type kv_type; /* validated */
    int32_t n_ctx;              /* 0 = model maximum */
    tr_pool *pool;              /* session-owned worker pool of n_threads */
} tr_session_cfg;

/* Per-run context: validated params plus what the family needs to report. */
typedef struct tr_run_ctx {
    const struct transcribe_run_params *params; /* never NULL; defaults filled */
    tr_pool *pool;
    transcribe_abort_callback abort_cb; /* may be NULL */
    void *abort_user_data;
    tr_result *result; /* empty on entry; the family fills it */
    bool truncated;    /* set by the family when it returns OUTPUT_TRUNCATED */
    /* Progress sink (transcribe_set_progress_callback; may be NULL). */
    transcribe_progress_callback progress_cb;
    void *progress_user_data;
    double progress_reported; /* the highest fraction reported so far */
    /* transcribe_detect_language: the family may stop once result->language
     * is set, and puts the detection's probability in language_prob (it
     * stays NaN where the family has none). */
    bool detect_only;
    float language_prob;
} tr_run_ctx;

/* Polls the abort callback (between chunks / after each decode step). */
static inline bool tr_run_should_abort(const tr_run_ctx *ctx) {
    return ctx->abort_cb && ctx->abort_cb(ctx->abort_user_data);
}

/* The same poll shaped for loops that take a bool (*)(void *user) hook
 * (nn/greedy, nn/causal_lm, encoders): pass the tr_run_ctx as user. */
static inline bool tr_run_abort_poll(void *run_ctx) {
    return tr_run_should_abort(run_ctx);
}

/* The speculative draft length a family's greedy loop takes from the run
 * params (nn/greedy.h): spec_k_drafts when positive; -1 (the default) and
 * 0 are off. */
static inline int tr_run_spec_k(const tr_run_ctx *ctx) {
    return ctx->params->spec_k_drafts > 0 ? ctx->params->spec_k_drafts : 0;
}

/* The run checks of a transcription-only family that takes no run
 * extension: a run extension → INVALID_ARG, translation →
 * UNSUPPORTED_TASK, each logged with who (family_load.c). */
transcribe_status tr_family_check_transcribe_only(const char *who,
                                                  const struct transcribe_run_params *p);

/* The single-run input gate of a family that encodes any length in one
 * pass (GigaAM, SenseVoice): no pcm, or fewer than min_samples (one
 * front-end frame) → INVALID_ARG; past max_ms (its training window) only a
 * warning, as the run goes on whole. Logged with who (family_load.c). */
transcribe_status tr_family_gate_whole(const char *who, const float *pcm, int n_samples,
                                       int min_samples, int sample_rate, int max_ms);

/* A decode that ended OK, OUTPUT_TRUNCATED or ABORTED has ids for the
 * result (partial ones too). */
static inline bool tr_run_has_ids(transcribe_status st) {
    return st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
           st == TRANSCRIBE_ERR_ABORTED;
}

/* The status of an utterance whose decode ended with st and whose result
 * fill returned fill_st: a failed fill wins. */
static inline transcribe_status tr_run_filled(transcribe_status st, transcribe_status fill_st) {
    return fill_st != TRANSCRIBE_OK ? fill_st : st;
}

/* Ends a single run's decode stage that began at t0_ms (tr_time_ms):
 * the result's decode time, and the truncation flag for OUTPUT_TRUNCATED. */
static inline void tr_run_end_decode(tr_run_ctx *ctx, transcribe_status st, double t0_ms) {
    ctx->result->decode_ms = (float)(tr_time_ms() - t0_ms);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
}

/* Records an utterance's outcome in its context: the result's status, and
 * the truncation flag for OUTPUT_TRUNCATED. */
static inline void tr_run_settle(tr_run_ctx *ctx, transcribe_status st) {
    ctx->result->status = st;
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    /* a failed utterance keeps the first error logged since the one before
     * finished as its reason (a batch's, util/log.h); a finished one drops
     * it, so it is never another utterance's */
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        tr_result_take_error(ctx->result);
    else
        tr_log_latest_take(NULL, 0);
}

/* Batch bookkeeping of run_batch hooks that finish utterances one at a
 * time with a done[] flag each (family_batch.c). */
/* Finishes utterance i with st (a failed one's rows are cleared; a truncated one keeps
 * them, as its single run does). */
void tr_run_batch_finish(tr_run_ctx *ctxs, bool *done, int i, transcribe_status st);
/* false (utterance i finished as INVALID_ARG, logged with who) when it has
 * no samples. */
bool tr_run_batch_input_ok(const char *who, const float *const *pcm, const int *n_samples, int i,
                           tr_run_ctx *ctxs, bool *done);
/* The settle hook of nn's batched LLM run (causal_lm_batch.h), with the
 * tr_run_ctx array as its user: utterance i's status (tr_run_settle) and,
 * when decode_ms >= 0, its decode time. */
void tr_run_batch_settle(void *ctxs, int i, transcribe_status st, float decode_ms);
/* docs/c-api.md §11: every utterance of n not done when the batch aborted
 * finishes ABORTED. */
void tr_run_batch_abort_rest(tr_run_ctx *ctxs, bool *done, int n);

/* One group of a batch as a family's group hook sees it (tr_run_batch_groups). */
typedef struct tr_run_group {
    const float *const *pcm;
    const int *n_samples;
    tr_run_ctx *ctxs;
    bool *done;     /* [n]: set (tr_run_batch_finish / settle) as utterances finish */
    const int *idx; /* the group's batch indices, in input order */
    int k;
} tr_run_group;

/* How a family's run_batch gates its utterances and cuts them into groups
 * that share one encoder and lockstep-decoder pass. */
typedef struct tr_run_groups {
    int max_n;      /* utterances a group holds at most */
    int max_frames; /* encoder frames a group holds at most (its first utterance joins anyway) */
    /* utterance i's gate (NULL: none): not OK finishes it with that status */
    transcribe_status (*gate)(void *user, int i, const float *pcm, int n_samples);
    int (*frames)(void *user, int n_samples); /* encoder frames of an utterance */
    transcribe_status (*run)(void *user, const tr_run_group *grp);
    /* Optional (NULL: none; GigaAM, Parakeet): alone(user, n_samples) says
     * an utterance bypasses the groups (too short or too long for the
     * grouped path); right after its gate it runs through run_alone (its
     * single run), its abort polled first. OOM or BACKEND from it ends the
     * batch with that status (the utterance left unfinished), ABORTED ends
     * it after finishing the utterance, anything else finishes the
     * utterance. */
    bool (*alone)(void *user, int n_samples);
    transcribe_status (*run_alone)(void *user, const float *pcm, int n_samples, tr_run_ctx *ctx);
} tr_run_groups;

/* tr_run_batch_finish of utterance i of a group, with the tr_run_group as
 * user: the hook through which nn's group helpers (nn/fc_encdec.h,
 * nn/moonshine_decoder.h) finish an utterance whose front end or encoder
 * failed, so no family writes that hook itself. */
void tr_run_group_finish(void *grp, int i, transcribe_status st);

/* A family's whole run_batch around its group hook: every utterance gated
 * (in order; one that runs alone runs then), then the ones not yet done run in groups, in input
 * order: a group takes the next undone utterances while it holds fewer than max_n and their frames
 * stay within max_frames. Before each group the abort of its first utterance is polled (ABORTED
 * without running it); a group whose hook returns anything but OK ends the loop with that status.
 * What an abort left unfinished ends ABORTED (tr_run_batch_abort_rest). One driver instead of one
 * loop per batching family (Canary, Cohere, Moonshine, Moonshine Streaming, GigaAM, Parakeet):
 * gating order, grouping rule and abort handling are the same there, only the group's work is
 * the family's. */
transcribe_status tr_run_batch_groups(const tr_run_groups *g, void *user, const float *const *pcm,
                                      const int *n_samples, int n, tr_run_ctx *ctxs);

/* Reports the fraction of the input processed (0..1; the callback sees it
 * clamped and never decreasing within a run). */
static inline void tr_run_report_progress(tr_run_ctx *ctx, double fraction) {
    if (!ctx->progress_cb) return;
    if (fraction > 1.0) fraction = 1.0;
    if (!(fraction >= ctx->progress_reported)) fraction = ctx->progress_reported;
    ctx->progress_reported = fraction;
    ctx->progress_cb((float)fraction, ctx->progress_user_data);
}

/* After a decode step loop that ended with st: a finished loop (OK or
 * OUTPUT_TRUNCATED) has processed the whole input. */
static inline void tr_run_report_decoded(tr_run_ctx *ctx, transcribe_status st) {
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        tr_run_report_progress(ctx, 1.0);
}

/* A share [lo, hi] of a run's progress filled by a step loop: pass
 * tr_run_span_step as nn/greedy's on_step with the span as its user. */
typedef struct tr_run_span {
    tr_run_ctx *ctx;
    double lo, hi;
} tr_run_span;

static inline void tr_run_span_report(tr_run_span *span, int done, int total) {
    double f = total > 0 ? (double)done / total : 1.0;
    if (f > 1.0) f = 1.0;
    if (f < 0.0) f = 0.0;
    tr_run_report_progress(span->ctx, span->lo + (span->hi - span->lo) * f);
}

static inline void tr_run_span_step(void *span, int n_gen, int n_most) {
    tr_run_span_report(span, n_gen, n_most);
}

/* A span that also counts the steps a greedy loop took: pass
 * tr_run_span_count as on_step with it as its user. on_step sees every
 * token the loop steps to (also the tokens one speculative call yields), so
 * n_gen - 1 (the prefill token is not a step) is the step count, which the
 * kept ids understate after a repetition-guard stop (transcribe-bench reads
 * the decoder's n_steps). MOSS and Voxtral count this way. */
typedef struct tr_run_step_count {
    tr_run_span *span;
    int n;
} tr_run_step_count;

static inline void tr_run_span_count(void *user, int n_gen, int n_most) {
    tr_run_step_count *c = user;
    c->n = n_gen - 1;
    tr_run_span_step(c->span, n_gen, n_most);
}

/* The split the encoder-decoder LLM families share: audio front end and
 * encoder up to TR_RUN_ENCODED, the prompt prefill up to 0.5, the greedy
 * steps the rest (a step loop that ends early jumps to 1.0). */
#define TR_RUN_ENCODED          0.4
#define TR_RUN_DECODE_SPAN(ctx) ((tr_run_span){(ctx), 0.5, 1.0})

/* Per-call context of a stream (ADDED for streaming families; see the
 * stream_* hooks below). The dispatcher owns the commit policy and the
 * committed/tentative views; the family only maintains the raw hypothesis. */
typedef struct tr_stream_ctx {
    const struct transcribe_run_params *params; /* validated copy; strings owned by the session */
    const struct transcribe_ext *ext;           /* validated copy of the stream extension or NULL */
    tr_pool *pool;
    transcribe_abort_callback abort_cb;
    void *abort_user_data;
    tr_result *result;           /* current raw hypothesis: the family rewrites it on every call */
    uint32_t agree_n;            /* stream_params.stable_prefix_agreement_n (0 = the default) for a
                                  * family that finds its native commit by agreement */
    int64_t audio_committed_ms;  /* family progress hint (out) */
    int64_t buffered_ms;         /* audio held inside the family (out) */
    int n_native_committed_toks; /* native commit boundary in token rows, -1 = none (out) */
    bool truncated;              /* hit the context/generation cap (out) */
    /* (out) the family only ever appends to the hypothesis (rows and text
     * before this call are unchanged): the dispatcher then extends its
     * native commit from where it stopped instead of re-reading every
     * committed row. */
    bool grows_only;
} tr_stream_ctx;

/* A stream call's abort callback shaped for loops that take a
 * bool (*)(void *user) hook (encoders, greedy loops): pass the
 * tr_stream_ctx as user. Parakeet, Moonshine Streaming and Voxtral Realtime
 * each wrote this poll. */
static inline bool tr_stream_abort_poll(void *stream_ctx) {
    const tr_stream_ctx *c = stream_ctx;
    return c->abort_cb && c->abort_cb(c->abort_user_data);
}

typedef struct tr_family {
    const char *arch; /* general.architecture value, e.g. "whisper" */
    transcribe_status (*load)(const tr_load_ctx *lc, void **out_model, tr_model_desc *desc);
    void (*free_model)(void *model);
    transcribe_status (*session_init)(void *model, const tr_session_cfg *cfg, void **out_session);
    void (*session_free)(void *session);
    /* Optional family pre-validation of run params / extension (docs/c-api.md §10.1 step 10). */
    transcribe_status (*validate_run)(void *model, const struct transcribe_run_params *params);
    /* Offline run of one utterance into ctx->result. */
    transcribe_status (*run)(void *session, const float *pcm, int n_samples, tr_run_ctx *ctx);
    /* Optional: extension kinds accepted per slot (NULL = none). */
    bool (*accepts_ext_kind)(uint32_t kind, int slot);
    /* Optional session limits (docs/c-api.md §13.2); NULL = zeros / caps.max_audio_ms. */
    void (*get_limits)(void *session, struct transcribe_session_limits *out);

    /* ---- ADDED optional hooks (NULL when the family has none) ---- */

    /* Batched offline path: ctxs[i].result receives utterance i; the family
     * sets ctxs[i].result->status per utterance and returns the whole-batch
     * status (docs/c-api.md §11). NULL = the dispatcher calls run() per utterance. */
    transcribe_status (*run_batch)(void *session, const float *const *pcm, const int *n_samples,
                                   int n, tr_run_ctx *ctxs);
    /* Family-extension queries behind a family's own public entry points
     * (include/transcribe/<family>.h, implemented in the family folder):
     * `what` is a TR_EXT_QUERY code the family defines, `index` and `out`
     * are what that code says. Returns the count for counting queries, 1 / 0
     * (found / not) for lookups, and -1 for a code the family does not know. */
    int (*ext_query)(void *session, uint32_t what, int index, void *out);
    /* Claims a non-GGUF file format: `head` is the file's first n bytes
     * (n >= 4). The claiming family's load() gets the mapped file as
     * tr_load_ctx.bin_data; general.architecture is the family's arch. */
    bool (*probe_file)(const void *head, size_t n);
    /* Streaming (all of begin/feed/finalize, or none; needs caps.supports_streaming). */
    transcribe_status (*validate_stream)(void *model, const struct transcribe_ext *ext);
    transcribe_status (*stream_begin)(void *session, tr_stream_ctx *ctx);
    transcribe_status (*stream_feed)(void *session, const float *pcm, int n_samples,
                                     tr_stream_ctx *ctx);
    transcribe_status (*stream_finalize)(void *session, tr_stream_ctx *ctx);
    void (*stream_reset)(void *session);
    /* Optional: whether this model streams through the hooks above (e.g.
     * only a family's cache-aware files). NULL = every model of a family
     * with the hooks does. A model that does not streams through the
     * dispatcher's generic window driver (re-decoding recent audio with
     * run()), which every family with a run path gets for free. */
    bool (*stream_native)(void *model);
    /* Optional: accepts_ext_kind for one loaded model, where acceptance
     * depends on the variant (docs/c-api.md §7.2: e.g. Parakeet's cache-aware
     * and buffered stream kinds). Consulted instead of accepts_ext_kind
     * when set. */
    bool (*model_accepts_ext_kind)(void *model, uint32_t kind, int slot);

    /* ---- tool hooks: what the internal tools (transcribe-bench) ask a
     * family, through src/api/tool_hooks.h only; never the public API, and
     * never called by the library itself. Optional. ---- */

    /* The encoder's analytic work on n_samples of input, from the model
     * file's hyper-parameters (nn/enc_cost.h). false with *why (a short
     * phrase) when the file cannot be counted. */
    bool (*enc_cost)(const struct gguf_file *f, int64_t n_samples, struct tr_enc_cost *out,
                     const char **why);
    /* The causal-LM decoder of a session and the stage timings of its
     * latest single run (nn/causal_lm.h tr_clm_stages): families that
     * decode with nn's causal LM. false: none. */
    bool (*lm_stages)(void *session, struct tr_clm_stages *out);
    /* The encoder-decoder step of a session after its latest single run
     * (nn/encdec_decoder.h tr_ed_probe), for the bench's step probe:
     * families that decode with tr_ed_step. false: none (or no run yet). */
    bool (*ed_probe)(void *session, struct tr_ed_probe *out);
    /* What a legacy ggml .bin file this family claims (probe_file) implies
     * but does not store, in one line for transcribe-inspect (variant,
     * special ids, ...). false: nothing to add. */
    bool (*bin_summary)(const struct tr_ggml_bin_hparams *hp, char *out, size_t cap);
} tr_family;

/* Declares, in a family's header (after its P_model and P_session types),
 * the functions TR_FAMILY_ADAPTERS(P) wires into the vtable. */
#define TR_FAMILY_DECLARE(P)                                                                       \
    transcribe_status tr_##P##_model_load(const tr_load_ctx *lc, P##_model **out);                 \
    void tr_##P##_model_free(P##_model *m);                                                        \
    void tr_##P##_model_describe(const P##_model *m, tr_model_desc *desc);                         \
    transcribe_status tr_##P##_session_create(const P##_model *m, const tr_session_cfg *cfg,       \
                                              P##_session **out);                                  \
    void tr_##P##_session_free(P##_session *s);                                                    \
    transcribe_status tr_##P##_validate_run(const P##_model *m,                                    \
                                            const struct transcribe_run_params *p);                \
    transcribe_status tr_##P##_run(P##_session *s, const float *pcm, int n_samples,                \
                                   tr_run_ctx *ctx);                                               \
    transcribe_status tr_##P##_run_batch(P##_session *s, const float *const *pcm,                  \
                                         const int *n_samples, int n, tr_run_ctx *ctxs)

/* The vtable adapters every family would otherwise write by hand, for a
 * family whose functions follow one naming (prefix P: types P_model and
 * P_session; P_model_load(lc, &m), P_model_describe(m, desc),
 * P_model_free(m), P_session_create(m, cfg, &s), P_session_free(s),
 * P_run(s, pcm, n, ctx), P_run_batch(s, pcm, n_samples, n, ctxs)).
 * TR_FAMILY_SERIAL_ADAPTERS defines static fam_load, fam_free_model,
 * fam_session_init, fam_session_free, fam_validate_run and fam_run for the
 * family's tr_family initializer; TR_FAMILY_ADAPTERS also fam_run_batch. */
#define TR_FAMILY_SERIAL_ADAPTERS(P)                                                               \
    static transcribe_status fam_load(const tr_load_ctx *lc, void **out_model,                     \
                                      tr_model_desc *desc) {                                       \
        P##_model *m = NULL;                                                                       \
        transcribe_status st = tr_##P##_model_load(lc, &m);                                        \
        *out_model = m;                                                                            \
        if (st == TRANSCRIBE_OK) tr_##P##_model_describe(m, desc);                                 \
        return st;                                                                                 \
    }                                                                                              \
    static void fam_free_model(void *model) {                                                      \
        tr_##P##_model_free(model);                                                                \
    }                                                                                              \
    static transcribe_status fam_session_init(void *model, const tr_session_cfg *cfg,              \
                                              void **out) {                                        \
        P##_session *s = NULL;                                                                     \
        transcribe_status st = tr_##P##_session_create(model, cfg, &s);                            \
        *out = s;                                                                                  \
        return st;                                                                                 \
    }                                                                                              \
    static void fam_session_free(void *session) {                                                  \
        tr_##P##_session_free(session);                                                            \
    }                                                                                              \
    static transcribe_status fam_validate_run(void *model,                                         \
                                              const struct transcribe_run_params *p) {             \
        return tr_##P##_validate_run(model, p);                                                    \
    }                                                                                              \
    static transcribe_status fam_run(void *session, const float *pcm, int n_samples,               \
                                     tr_run_ctx *ctx) {                                            \
        return tr_##P##_run(session, pcm, n_samples, ctx);                                         \
    }

/* TR_FAMILY_SERIAL_ADAPTERS plus fam_run_batch, for a family with its own
 * P_run_batch. */
#define TR_FAMILY_ADAPTERS(P)                                                                      \
    TR_FAMILY_SERIAL_ADAPTERS(P)                                                                   \
    static transcribe_status fam_run_batch(void *session, const float *const *pcm,                 \
                                           const int *n_samples, int n, tr_run_ctx *ctxs) {        \
        return tr_##P##_run_batch(session, pcm, n_samples, n, ctxs);                               \
    }

/* The tr_family fields TR_FAMILY_SERIAL_ADAPTERS defines (a family without
 * run_batch: the dispatcher runs a batch's utterances one after another;
 * Granite NAR, SenseVoice), and those of TR_FAMILY_ADAPTERS, for the
 * initializer: {.arch = "x", TR_FAMILY_ADAPTED_HOOKS, .get_limits = ...}. */
#define TR_FAMILY_SERIAL_HOOKS                                                                     \
    .load = fam_load, .free_model = fam_free_model, .session_init = fam_session_init,              \
    .session_free = fam_session_free, .validate_run = fam_validate_run, .run = fam_run
#define TR_FAMILY_ADAPTED_HOOKS TR_FAMILY_SERIAL_HOOKS, .run_batch = fam_run_batch

/* The stream hooks of a natively streaming family whose functions follow
 * the same naming (P_stream_begin(s, ctx), P_stream_feed(s, pcm, n, ctx),
 * P_stream_finalize(s, ctx), P_stream_reset(s)): defines static
 * fam_stream_begin, fam_stream_feed, fam_stream_finalize and
 * fam_stream_reset (Parakeet, Moonshine Streaming, Voxtral Realtime each
 * wrote the same four). */
#define TR_FAMILY_STREAM_ADAPTERS(P)                                                               \
    static transcribe_status fam_stream_begin(void *session, tr_stream_ctx *ctx) {                 \
        return tr_##P##_stream_begin(session, ctx);                                                \
    }                                                                                              \
    static transcribe_status fam_stream_feed(void *session, const float *pcm, int n_samples,       \
                                             tr_stream_ctx *ctx) {                                 \
        return tr_##P##_stream_feed(session, pcm, n_samples, ctx);                                 \
    }                                                                                              \
    static transcribe_status fam_stream_finalize(void *session, tr_stream_ctx *ctx) {              \
        return tr_##P##_stream_finalize(session, ctx);                                             \
    }                                                                                              \
    static void fam_stream_reset(void *session) {                                                  \
        tr_##P##_stream_reset(session);                                                            \
    }

/* The tr_family fields TR_FAMILY_STREAM_ADAPTERS defines. */
#define TR_FAMILY_STREAM_HOOKS                                                                     \
    .stream_begin = fam_stream_begin, .stream_feed = fam_stream_feed,                              \
    .stream_finalize = fam_stream_finalize, .stream_reset = fam_stream_reset

/* Family-owned query codes: a two-letter family tag and a number, so codes
 * of different families never collide. */
#define TR_EXT_QUERY(a, b, n) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | (uint32_t)(n))

/* The head every public session handle starts with (the dispatcher's
 * struct transcribe_session embeds it first), so a family's own public
 * entry points reach their family session without calling into src/api. */
typedef struct tr_session_head {
    const tr_family *family;
    void *fsession; /* the family session */
} tr_session_head;

static inline const tr_session_head *tr_session_head_of(const struct transcribe_session *s) {
    return (const tr_session_head *)(const void *)s;
}

/* The get_limits of a family with no context or KV limit to report: all
 * zeros (docs/c-api.md §13.2; family_batch.c). */
void tr_family_no_limits(void *session, struct transcribe_session_limits *out);

/* Registry (src/models/registry.c). NULL when no family has that
 * architecture. */
const tr_family *tr_family_find(const char *arch);
/* The family whose probe_file claims a file starting with head[0..n), or
 * NULL. */
const tr_family *tr_family_for_file(const void *head, size_t n);
/* true if the architecture is known to the project but has no loader yet
 * (→ TRANSCRIBE_ERR_NOT_IMPLEMENTED rather than UNSUPPORTED_ARCH). */
bool tr_family_is_known_arch(const char *arch);

#endif
