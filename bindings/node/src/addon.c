/* The Node-API addon of the Node.js package (bindings/node): plain C over
 * the public C API (include/transcribe.h) and nothing else of the library.
 * index.js is the API; this file gives it handles and asynchronous work:
 *
 *  - a model handle (an external) owns a transcribe_model, a pool of idle
 *    sessions and one mutex that makes the compute of one model run one call
 *    at a time (the library's rule, docs/c-api.md §1.6);
 *  - transcribe / stream feed / stream finish / async load run as napi async
 *    work on libuv's thread pool, never on the event loop; their callbacks
 *    get (error, payload) on the main thread;
 *  - results travel as the library's own JSON (transcribe_format_result: the
 *    bytes of the CLI's -f json), rendered on the worker thread and parsed by
 *    index.js, so a result has the CLI's fields by construction;
 *  - counts of owners (refs) are touched on the main thread only: a model is
 *    freed when its handle is closed or collected and no job or stream uses
 *    it; a job when its work completed and its JS handle was collected. */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* stat, pthreads under -std=c11 */
#endif
#define NAPI_VERSION 8
#include <node_api.h>

#include <transcribe.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the log sink: stderr by level, and the first error of a call ---- */

/* Printed levels: 0 none, 1 error, 2 warn (default), 3 info, 4 debug. */
static atomic_int g_print_level = 2;
static _Thread_local char *t_capture;
static _Thread_local size_t t_capture_cap;

static int level_rank(transcribe_log_level level) {
    switch (level) {
    case TRANSCRIBE_LOG_LEVEL_ERROR:
        return 1;
    case TRANSCRIBE_LOG_LEVEL_WARN:
        return 2;
    case TRANSCRIBE_LOG_LEVEL_DEBUG:
        return 4;
    default:
        return 3;
    }
}

static void on_log(transcribe_log_level level, const char *msg, void *ud) {
    (void)ud;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && t_capture && t_capture_cap && !t_capture[0])
        snprintf(t_capture, t_capture_cap, "%s", msg ? msg : "");
    if (level_rank(level) > atomic_load(&g_print_level)) return;
    const char *tag = level == TRANSCRIBE_LOG_LEVEL_ERROR  ? "error: "
                      : level == TRANSCRIBE_LOG_LEVEL_WARN ? "warning: "
                                                           : "";
    fprintf(stderr, "transcribe: %s%s\n", tag, msg ? msg : "");
}

static void capture_begin(char *buf, size_t cap) {
    buf[0] = '\0';
    t_capture = buf;
    t_capture_cap = cap;
}

static void capture_end(void) {
    t_capture = NULL;
    t_capture_cap = 0;
}

/* ---- per-environment data: the error class index.js registers ---- */

typedef struct {
    napi_ref error_ctor;
} addon_data;

/* new TranscribeError(message, status), or a plain Error before it is set. */
static napi_value make_error(napi_env env, int status, const char *msg) {
    addon_data *d = NULL;
    napi_get_instance_data(env, (void **)&d);
    if (!msg || !msg[0]) msg = transcribe_status_string(status);
    napi_value argv[2], out = NULL;
    napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &argv[0]);
    napi_create_int32(env, status, &argv[1]);
    napi_value ctor = NULL;
    if (d && d->error_ctor && napi_get_reference_value(env, d->error_ctor, &ctor) == napi_ok &&
        ctor && napi_new_instance(env, ctor, 2, argv, &out) == napi_ok)
        return out;
    napi_create_error(env, NULL, argv[0], &out);
    napi_set_named_property(env, out, "status", argv[1]);
    return out;
}

static napi_value throw_status(napi_env env, int status, const char *msg) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending) napi_throw(env, make_error(env, status, msg));
    return NULL;
}

static napi_value invalid(napi_env env, const char *msg) {
    return throw_status(env, TRANSCRIBE_ERR_INVALID_ARG, msg);
}

static napi_value undefined(napi_env env) {
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
}

/* ---- reading arguments ---- */

static bool is_nullish(napi_env env, napi_value v) {
    napi_valuetype t;
    return !v || napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null;
}

/* A malloc'ed UTF-8 copy of a JS string; NULL (and an exception) otherwise. */
static char *dup_string(napi_env env, napi_value v, const char *what) {
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a string", what);
        invalid(env, msg);
        return NULL;
    }
    char *s = malloc(len + 1);
    if (!s) {
        throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
        return NULL;
    }
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    if (strlen(s) != len) { /* an embedded NUL would cut a path or a code short */
        free(s);
        char msg[160];
        snprintf(msg, sizeof msg, "%s must not contain NUL characters", what);
        invalid(env, msg);
        return NULL;
    }
    return s;
}

static napi_value prop(napi_env env, napi_value obj, const char *name) {
    napi_value v = NULL;
    if (is_nullish(env, obj) || napi_get_named_property(env, obj, name, &v) != napi_ok) return NULL;
    return is_nullish(env, v) ? NULL : v;
}

/* An optional string property: true and *out NULL when absent. */
static bool opt_string(napi_env env, napi_value obj, const char *name, char **out) {
    *out = NULL;
    napi_value v = prop(env, obj, name);
    if (!v) return true;
    *out = dup_string(env, v, name);
    return *out != NULL;
}

static bool opt_int64(napi_env env, napi_value obj, const char *name, int64_t lo, int64_t hi,
                      int64_t *out) {
    napi_value v = prop(env, obj, name);
    if (!v) return true;
    double d = 0;
    if (napi_get_value_double(env, v, &d) != napi_ok || d != d) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s must be a number", name);
        invalid(env, msg);
        return false;
    }
    if (d < (double)lo || d > (double)hi || d != (double)(int64_t)d) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s must be an integer from %lld to %lld", name, (long long)lo,
                 (long long)hi);
        invalid(env, msg);
        return false;
    }
    *out = (int64_t)d;
    return true;
}

static bool opt_bool(napi_env env, napi_value obj, const char *name, bool *out) {
    napi_value v = prop(env, obj, name);
    if (!v) return true;
    if (napi_get_value_bool(env, v, out) != napi_ok) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a boolean", name);
        invalid(env, msg);
        return false;
    }
    return true;
}

/* ---- models ---- */

typedef struct {
    struct transcribe_model *model;
    pthread_mutex_t compute; /* one compute call at a time per model */
    pthread_mutex_t pool_mu; /* guards idle / n_idle */
    struct transcribe_session **idle;
    int n_idle, cap_idle;
    struct transcribe_session_params sp;
    atomic_uint abort_gen; /* model.abort() aborts every job made before it */
    int sample_rate;
    int64_t file_bytes; /* told to V8 as external memory while the handle lives */
    int refs;           /* main thread: the handle, each job, each stream */
    bool closed;        /* main thread: close() ran */
} node_model;

typedef struct {
    node_model *m; /* NULL once closed */
    int64_t external_bytes;
} model_box;

static void model_unref(node_model *m) {
    if (--m->refs > 0) return;
    for (int i = 0; i < m->n_idle; i++) transcribe_session_free(m->idle[i]);
    free(m->idle);
    transcribe_model_free(m->model);
    pthread_mutex_destroy(&m->compute);
    pthread_mutex_destroy(&m->pool_mu);
    free(m);
}

/* The collector learns what a handle holds, so that models dropped without
 * close() are collected before they pile up. */
static void model_box_close(napi_env env, model_box *b) {
    if (!b->m) return;
    int64_t unused;
    napi_adjust_external_memory(env, -b->external_bytes, &unused);
    node_model *m = b->m;
    b->m = NULL;
    m->closed = true;
    model_unref(m);
}

static void model_box_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    model_box_close(env, data);
    free(data);
}

/* The model of a handle argument, or NULL with an exception. */
static node_model *get_model(napi_env env, napi_value v) {
    model_box *b = NULL;
    if (napi_get_value_external(env, v, (void **)&b) != napi_ok || !b) {
        invalid(env, "not a model handle");
        return NULL;
    }
    if (!b->m) {
        invalid(env, "the model is closed");
        return NULL;
    }
    return b->m;
}

/* A session for one call: an idle one, else a new one. Worker threads. */
static transcribe_status session_take(node_model *m, struct transcribe_session **out, char *msg,
                                      size_t cap) {
    pthread_mutex_lock(&m->pool_mu);
    if (m->n_idle > 0) {
        *out = m->idle[--m->n_idle];
        pthread_mutex_unlock(&m->pool_mu);
        return TRANSCRIBE_OK;
    }
    pthread_mutex_unlock(&m->pool_mu);
    capture_begin(msg, cap);
    transcribe_status st = transcribe_session_init(m->model, &m->sp, out);
    capture_end();
    return st;
}

static void session_give(node_model *m, struct transcribe_session *s) {
    transcribe_set_abort_callback(s, NULL, NULL);
    pthread_mutex_lock(&m->pool_mu);
    if (m->n_idle == m->cap_idle) {
        int cap = m->cap_idle ? 2 * m->cap_idle : 4;
        struct transcribe_session **p = realloc(m->idle, (size_t)cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&m->pool_mu);
            transcribe_session_free(s);
            return;
        }
        m->idle = p;
        m->cap_idle = cap;
    }
    m->idle[m->n_idle++] = s;
    pthread_mutex_unlock(&m->pool_mu);
}

/* Load settings from the options object: threads, nCtx, kvType (0 auto, 1 f32, 2 f16). */
static bool read_session_params(napi_env env, napi_value opts,
                                struct transcribe_session_params *sp) {
    transcribe_session_params_init(sp);
    int64_t threads = 0, n_ctx = 0, kv = 0;
    if (!opt_int64(env, opts, "threads", 0, 4096, &threads) ||
        !opt_int64(env, opts, "nCtx", 0, INT32_MAX, &n_ctx) ||
        !opt_int64(env, opts, "kvType", 0, 2, &kv))
        return false;
    sp->n_threads = (int)threads;
    sp->n_ctx = (int32_t)n_ctx;
    sp->kv_type = (transcribe_kv_type)kv;
    return true;
}

static transcribe_status model_open(const char *path, const struct transcribe_session_params *sp,
                                    node_model **out, char *msg, size_t cap) {
    *out = NULL;
    node_model *m = calloc(1, sizeof *m);
    if (!m) return TRANSCRIBE_ERR_OOM;
    capture_begin(msg, cap);
    transcribe_status st = transcribe_model_load_file(path, NULL, &m->model);
    capture_end();
    if (st != TRANSCRIBE_OK) {
        free(m);
        return st;
    }
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    m->sample_rate = 16000;
    if (transcribe_model_get_capabilities(m->model, &caps) == TRANSCRIBE_OK &&
        caps.native_sample_rate > 0)
        m->sample_rate = caps.native_sample_rate;
    struct stat stbuf;
    m->file_bytes = stat(path, &stbuf) == 0 ? (int64_t)stbuf.st_size : 0;
    m->sp = *sp;
    pthread_mutex_init(&m->compute, NULL);
    pthread_mutex_init(&m->pool_mu, NULL);
    m->refs = 1;
    *out = m;
    return TRANSCRIBE_OK;
}

static napi_value wrap_model(napi_env env, node_model *m) {
    model_box *b = malloc(sizeof *b);
    napi_value out = NULL;
    if (!b || napi_create_external(env, b, model_box_finalize, NULL, &out) != napi_ok) {
        free(b);
        model_unref(m);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    }
    b->m = m;
    b->external_bytes = m->file_bytes;
    int64_t unused;
    napi_adjust_external_memory(env, b->external_bytes, &unused);
    return out;
}

/* modelLoad(path, options) -> handle (synchronous) */
static napi_value js_model_load(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    struct transcribe_session_params sp;
    if (argc < 1 || !read_session_params(env, argc > 1 ? argv[1] : NULL, &sp)) return NULL;
    char *path = dup_string(env, argv[0], "the model path");
    if (!path) return NULL;
    char msg[512];
    node_model *m = NULL;
    transcribe_status st = model_open(path, &sp, &m, msg, sizeof msg);
    free(path);
    if (st != TRANSCRIBE_OK) return throw_status(env, st, msg);
    return wrap_model(env, m);
}

/* modelClose(handle): frees the model once no job or stream uses it. */
static napi_value js_model_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    model_box *b = NULL;
    if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&b) != napi_ok || !b)
        return invalid(env, "not a model handle");
    model_box_close(env, b);
    return undefined(env);
}

/* modelAbort(handle): every job started before it stops. */
static napi_value js_model_abort(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    node_model *m = argc ? get_model(env, argv[0]) : NULL;
    if (!m) return argc ? NULL : invalid(env, "not a model handle");
    atomic_fetch_add(&m->abort_gen, 1);
    return undefined(env);
}

static void set_str(napi_env env, napi_value obj, const char *name, const char *s) {
    napi_value v;
    napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, obj, name, v);
}

static void set_bool(napi_env env, napi_value obj, const char *name, bool b) {
    napi_value v;
    napi_get_boolean(env, b, &v);
    napi_set_named_property(env, obj, name, v);
}

static void set_num(napi_env env, napi_value obj, const char *name, double d) {
    napi_value v;
    napi_create_double(env, d, &v);
    napi_set_named_property(env, obj, name, v);
}

static napi_value string_array(napi_env env, const char *const *s, int n) {
    napi_value arr;
    napi_create_array_with_length(env, n > 0 ? (size_t)n : 0, &arr);
    for (int i = 0; s && i < n; i++) {
        napi_value v;
        napi_create_string_utf8(env, s[i] ? s[i] : "", NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, arr, (uint32_t)i, v);
    }
    return arr;
}

static const char *const k_timestamp_names[] = {"none", "auto", "segment", "word", "token"};
static const char *const k_feature_names[] = {"initial_prompt",
                                              "temperature_fallback",
                                              "long_form",
                                              "cancellation",
                                              "pnc",
                                              "itn",
                                              "diarization",
                                              "vocabulary"};

/* modelInfo(handle) -> { family, variant, name, backend, sampleRate, ... } */
static napi_value js_model_info(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    node_model *m = argc ? get_model(env, argv[0]) : NULL;
    if (!m) return argc ? NULL : invalid(env, "not a model handle");
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_status st = transcribe_model_get_capabilities(m->model, &caps);
    if (st != TRANSCRIBE_OK) return throw_status(env, st, "cannot read the model's capabilities");
    napi_value out, c, feats;
    napi_create_object(env, &out);
    set_str(env, out, "family", transcribe_model_arch_string(m->model));
    set_str(env, out, "variant", transcribe_model_variant_string(m->model));
    set_str(env, out, "name", transcribe_model_meta_val_str(m->model, "general.name"));
    set_str(env, out, "backend", transcribe_model_backend(m->model));
    set_num(env, out, "sampleRate", m->sample_rate);
    napi_set_named_property(env, out, "languages",
                            string_array(env, caps.languages, caps.n_languages));
    napi_set_named_property(
        env, out, "translateTargets",
        string_array(env, caps.translate_target_languages, caps.n_translate_target_languages));
    napi_create_object(env, &c);
    int ts = (int)caps.max_timestamp_kind;
    set_str(env, c, "maxTimestamps", ts >= 0 && ts <= 4 ? k_timestamp_names[ts] : "none");
    set_bool(env, c, "languageDetect", caps.supports_language_detect);
    set_bool(env, c, "translate", caps.supports_translate);
    set_bool(env, c, "streaming", caps.supports_streaming || caps.supports_window_streaming);
    set_bool(env, c, "nativeStreaming", caps.supports_streaming);
    set_bool(env, c, "specDecode", caps.supports_spec_decode);
    set_num(env, c, "maxAudioMs", (double)caps.max_audio_ms);
    napi_create_array(env, &feats);
    uint32_t nf = 0;
    for (int f = 0; f < (int)(sizeof k_feature_names / sizeof *k_feature_names); f++) {
        if (!transcribe_model_supports(m->model, (transcribe_feature)f)) continue;
        napi_value v;
        napi_create_string_utf8(env, k_feature_names[f], NAPI_AUTO_LENGTH, &v);
        napi_set_element(env, feats, nf++, v);
    }
    napi_set_named_property(env, c, "features", feats);
    napi_set_named_property(env, out, "capabilities", c);
    return out;
}

/* ---- VAD models (Silero), shared by the runs and streams that use them ---- */

typedef struct {
    struct transcribe_vad_model *vm;
    int refs; /* main thread: the handle, each job or stream options using it */
} node_vad;

static void vad_unref(node_vad *v) {
    if (!v || --v->refs > 0) return;
    transcribe_vad_model_free(v->vm);
    free(v);
}

static void vad_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    vad_unref(data);
}

/* vadLoad(path) -> handle (synchronous: a small file) */
static napi_value js_vad_load(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], h;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 1) return invalid(env, "vadLoad(path)");
    char *path = dup_string(env, argv[0], "the VAD model path");
    if (!path) return NULL;
    node_vad *v = calloc(1, sizeof *v);
    if (!v) {
        free(path);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    }
    char msg[512];
    capture_begin(msg, sizeof msg);
    transcribe_status st = transcribe_vad_model_load(path, &v->vm);
    capture_end();
    free(path);
    if (st != TRANSCRIBE_OK) {
        free(v);
        return throw_status(env, st, msg);
    }
    v->refs = 1;
    if (napi_create_external(env, v, vad_finalize, NULL, &h) != napi_ok) {
        vad_unref(v);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    }
    return h;
}

static bool opt_double(napi_env env, napi_value obj, const char *name, double lo, double hi,
                       double *out) {
    napi_value v = prop(env, obj, name);
    if (!v) return true;
    double d = 0;
    if (napi_get_value_double(env, v, &d) != napi_ok || d != d) {
        char msg[200]; /* the type: the range is the library's to judge (a wide one here) */
        snprintf(msg, sizeof msg, "%s must be a number", name);
        invalid(env, msg);
        return false;
    }
    if (d < lo || d > hi) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s must be a number from %g to %g", name, lo, hi);
        invalid(env, msg);
        return false;
    }
    *out = d;
    return true;
}

/* ---- run parameters (index.js has already turned names into numbers) ---- */

typedef struct {
    struct transcribe_run_params rp;
    char *language, *target_language;
    char **vocab;
    int n_vocab;
    node_vad *vad; /* a reference, when the run uses a VAD model */
    struct transcribe_vad_params vp;
} run_opts;

static void run_opts_free(run_opts *o) {
    free(o->language);
    free(o->target_language);
    for (int i = 0; i < o->n_vocab; i++) free(o->vocab[i]);
    free(o->vocab);
    vad_unref(o->vad);
    memset(o, 0, sizeof *o);
}

/* vadModel (a vadLoad handle) and vadOptions; the library judges the values. */
static bool read_vad_opts(napi_env env, napi_value opts, run_opts *o) {
    napi_value h = prop(env, opts, "vadModel");
    napi_value vo = prop(env, opts, "vadOptions");
    if (!h) {
        if (vo) invalid(env, "vadOptions without vad");
        return !vo;
    }
    node_vad *v = NULL;
    if (napi_get_value_external(env, h, (void **)&v) != napi_ok || !v) {
        invalid(env, "vadModel is not a VAD model handle");
        return false;
    }
    transcribe_vad_params_init(&o->vp);
    double thr = o->vp.threshold, neg = o->vp.neg_threshold, max_s = o->vp.max_speech_s;
    int64_t speech = o->vp.min_speech_ms, silence = o->vp.min_silence_ms;
    int64_t pad = o->vp.speech_pad_ms, window = o->vp.window_samples;
    if (!opt_double(env, vo, "threshold", -1e9, 1e9, &thr) ||
        !opt_double(env, vo, "negThreshold", -1e9, 1e9, &neg) ||
        !opt_double(env, vo, "maxSpeechS", -1e9, 1e9, &max_s) ||
        !opt_int64(env, vo, "minSpeechMs", INT32_MIN, INT32_MAX, &speech) ||
        !opt_int64(env, vo, "minSilenceMs", INT32_MIN, INT32_MAX, &silence) ||
        !opt_int64(env, vo, "speechPadMs", INT32_MIN, INT32_MAX, &pad) ||
        !opt_int64(env, vo, "windowSamples", INT32_MIN, INT32_MAX, &window))
        return false;
    o->vp.threshold = (float)thr;
    o->vp.neg_threshold = (float)neg;
    o->vp.max_speech_s = (float)max_s;
    o->vp.min_speech_ms = (int32_t)speech;
    o->vp.min_silence_ms = (int32_t)silence;
    o->vp.speech_pad_ms = (int32_t)pad;
    o->vp.window_samples = (int32_t)window;
    o->vad = v;
    v->refs++;
    o->rp.vad_model = v->vm;
    o->rp.vad_params = &o->vp;
    return true;
}

static bool read_run_opts(napi_env env, napi_value opts, run_opts *o) {
    memset(o, 0, sizeof *o);
    transcribe_run_params_init(&o->rp);
    int64_t task = 0, ts = TRANSCRIBE_TIMESTAMPS_AUTO, pnc = 0, itn = 0, dia = 0, chunking = 0;
    int64_t chunk_max_ms = 0, spec = -1;
    bool keep = false;
    if (!opt_int64(env, opts, "task", 0, 1, &task) ||
        !opt_int64(env, opts, "timestamps", 0, 4, &ts) ||
        !opt_int64(env, opts, "pnc", 0, 2, &pnc) || !opt_int64(env, opts, "itn", 0, 2, &itn) ||
        !opt_int64(env, opts, "diarize", 0, 2, &dia) ||
        !opt_int64(env, opts, "chunking", 0, 2, &chunking) ||
        !opt_int64(env, opts, "chunkMaxMs", 0, 3600000, &chunk_max_ms) ||
        !opt_int64(env, opts, "specKDrafts", -1, 64, &spec) ||
        !opt_bool(env, opts, "keepSpecialTags", &keep) ||
        !opt_string(env, opts, "language", &o->language) ||
        !opt_string(env, opts, "targetLanguage", &o->target_language) ||
        !read_vad_opts(env, opts, o)) {
        run_opts_free(o);
        return false;
    }
    napi_value voc = prop(env, opts, "vocabulary");
    if (voc) {
        bool is_arr = false;
        uint32_t n = 0;
        if (napi_is_array(env, voc, &is_arr) != napi_ok || !is_arr ||
            napi_get_array_length(env, voc, &n) != napi_ok || n > 10000) {
            run_opts_free(o);
            invalid(env, "vocabulary must be an array of at most 10000 strings");
            return false;
        }
        o->vocab = calloc(n ? n : 1, sizeof *o->vocab);
        if (!o->vocab) {
            run_opts_free(o);
            throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
            return false;
        }
        for (uint32_t i = 0; i < n; i++) {
            napi_value e;
            napi_get_element(env, voc, i, &e);
            o->vocab[i] = dup_string(env, e, "a vocabulary term");
            if (!o->vocab[i]) {
                run_opts_free(o);
                return false;
            }
            o->n_vocab = (int)i + 1;
        }
        o->rp.vocabulary = (const char *const *)o->vocab;
        o->rp.n_vocabulary = o->n_vocab;
    }
    o->rp.task = (transcribe_task)task;
    o->rp.timestamps = (transcribe_timestamp_kind)ts;
    o->rp.pnc = (enum transcribe_pnc_mode)pnc;
    o->rp.itn = (enum transcribe_itn_mode)itn;
    o->rp.diarize = (enum transcribe_diarize_mode)dia;
    o->rp.chunking = (enum transcribe_chunking)chunking;
    o->rp.chunk_max_ms = chunk_max_ms;
    o->rp.spec_k_drafts = (int32_t)spec;
    o->rp.keep_special_tags = keep;
    o->rp.language = o->language;
    o->rp.target_language = o->target_language;
    return true;
}

/* ---- jobs: async work items ---- */

enum job_kind { JOB_RUN, JOB_FEED, JOB_FINISH, JOB_LOAD };
enum { N_FORMATS = 4 };

typedef struct node_stream node_stream;

typedef struct {
    enum job_kind kind;
    napi_async_work work;
    napi_ref cb;
    node_model *m;     /* JOB_RUN, JOB_FEED, JOB_FINISH */
    node_stream *strm; /* JOB_FEED, JOB_FINISH */
    unsigned gen;
    atomic_bool abort;
    int refs; /* main thread: the work, and the JS handle when there is one */
    /* input: a path, PCM, or the bytes of a WAV file */
    char *path;
    float *pcm;
    int64_t n;
    unsigned char *bytes;
    size_t n_bytes;
    run_opts opts;
    bool json_tokens;
    unsigned formats;                    /* bit i: render transcribe_output_format i */
    struct transcribe_session_params sp; /* JOB_LOAD */
    /* outcome */
    transcribe_status st;
    char msg[512];
    char *json;
    char *formatted[N_FORMATS];
    struct transcribe_timings timings;
    bool have_timings;
    node_model *loaded;                  /* JOB_LOAD */
    struct transcribe_stream_update upd; /* JOB_FEED, JOB_FINISH */
    char *s_full, *s_committed, *s_tentative;
} job;

struct node_stream {
    node_model *m;
    struct transcribe_session *s;
    run_opts opts; /* the terms must outlive the stream */
    atomic_bool abort;
    atomic_uint gen; /* the model's abort generation when the current op started */
    int64_t fed;     /* samples fed so far (worker of the one op in flight) */
    int refs;        /* main thread: the handle and the op in flight */
    bool closed;
};

static void job_unref(job *j) {
    if (--j->refs > 0) return;
    free(j->path);
    free(j->pcm);
    free(j->bytes);
    run_opts_free(&j->opts);
    free(j->json);
    for (int i = 0; i < N_FORMATS; i++) transcribe_format_free(j->formatted[i]);
    free(j->s_full);
    free(j->s_committed);
    free(j->s_tentative);
    free(j);
}

static void job_handle_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    job_unref(data);
}

static bool run_abort_cb(void *ud) {
    job *j = ud;
    return atomic_load(&j->abort) || atomic_load(&j->m->abort_gen) != j->gen;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* PCM from the bytes of a WAV file, at the model's rate (worker thread). */
static transcribe_status wav_bytes_to_pcm(job *j, int rate) {
    struct transcribe_wav_info info;
    transcribe_wav_info_init(&info);
    size_t need = 0;
    capture_begin(j->msg, sizeof j->msg);
    transcribe_status st = transcribe_wav_read_header(j->bytes, j->n_bytes, true, &info, &need);
    capture_end();
    if (st != TRANSCRIBE_OK) return st;
    if (need > j->n_bytes || info.data_offset < 0 || (size_t)info.data_offset > j->n_bytes) {
        snprintf(j->msg, sizeof j->msg, "the WAV bytes end inside the header");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    size_t avail = j->n_bytes - (size_t)info.data_offset;
    if (info.data_bytes >= 0) {
        if ((uint64_t)info.data_bytes > avail) {
            snprintf(j->msg, sizeof j->msg,
                     "the WAV data chunk runs past the end of the bytes (%lld of %zu bytes: "
                     "cut short?)",
                     (long long)info.data_bytes, avail);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        avail = (size_t)info.data_bytes;
    }
    size_t frames = info.block_align > 0 ? avail / (size_t)info.block_align : 0;
    float *pcm = malloc((frames ? frames : 1) * sizeof *pcm);
    if (!pcm) return TRANSCRIBE_ERR_OOM;
    int64_t got = 0;
    st = transcribe_wav_decode_frames(&info, j->bytes + info.data_offset, avail, pcm, &got);
    if (st != TRANSCRIBE_OK) {
        free(pcm);
        return st;
    }
    if (info.sample_rate != rate) {
        struct transcribe_resampler *r = NULL;
        st = transcribe_resampler_init(info.sample_rate, rate, &r);
        if (st != TRANSCRIBE_OK) {
            free(pcm);
            return st;
        }
        int64_t cap = transcribe_resampler_max_out(r, got) + transcribe_resampler_max_out(r, 0);
        float *out = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *out);
        int64_t n1 = 0, n2 = 0;
        if (!out) st = TRANSCRIBE_ERR_OOM;
        if (st == TRANSCRIBE_OK) st = transcribe_resampler_feed(r, pcm, got, out, &n1);
        if (st == TRANSCRIBE_OK) st = transcribe_resampler_finish(r, out + n1, &n2);
        transcribe_resampler_free(r);
        free(pcm);
        if (st != TRANSCRIBE_OK) {
            free(out);
            return st;
        }
        pcm = out;
        got = n1 + n2;
    }
    j->pcm = pcm;
    j->n = got;
    return TRANSCRIBE_OK;
}

/* Renders the session's result as JSON and the formats asked for. */
static transcribe_status render(job *j, struct transcribe_session *s, transcribe_status run_st,
                                int64_t n_samples, int rate) {
    struct transcribe_format_params fp;
    transcribe_format_params_init(&fp);
    fp.format = TRANSCRIBE_FORMAT_JSON;
    fp.json_tokens = j->json_tokens;
    fp.duration_s = (double)n_samples / (double)rate;
    fp.run_status = run_st;
    transcribe_status st = transcribe_format_result(s, -1, &fp, &j->json, NULL);
    for (int f = 0; st == TRANSCRIBE_OK && f < N_FORMATS; f++) {
        if (!(j->formats & (1u << f))) continue;
        fp.format = f;
        fp.json_tokens = false;
        st = transcribe_format_result(s, -1, &fp, &j->formatted[f], NULL);
    }
    transcribe_timings_init(&j->timings);
    j->have_timings = transcribe_get_timings(s, &j->timings) == TRANSCRIBE_OK;
    return st;
}

static void run_execute(napi_env env, void *data) {
    (void)env;
    job *j = data;
    node_model *m = j->m;
    transcribe_status st = TRANSCRIBE_OK;
    if (j->path) {
        float *pcm = NULL;
        int n = 0;
        capture_begin(j->msg, sizeof j->msg);
        st = transcribe_audio_load_file(j->path, m->sample_rate, &pcm, &n);
        capture_end();
        if (st == TRANSCRIBE_OK) {
            /* into a buffer of our own: j->pcm is freed with free() */
            j->pcm = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
            if (j->pcm)
                memcpy(j->pcm, pcm, (size_t)n * sizeof(float));
            else
                st = TRANSCRIBE_ERR_OOM;
            j->n = n;
            transcribe_audio_free(pcm);
        }
    } else if (j->bytes) {
        st = wav_bytes_to_pcm(j, m->sample_rate);
    }
    if (st == TRANSCRIBE_OK && j->n > INT_MAX) {
        snprintf(j->msg, sizeof j->msg, "the audio is longer than %d samples", INT_MAX);
        st = TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    if (st == TRANSCRIBE_OK && run_abort_cb(j)) st = TRANSCRIBE_ERR_ABORTED;
    if (st != TRANSCRIBE_OK) {
        j->st = st;
        return;
    }
    struct transcribe_session *s = NULL;
    st = session_take(m, &s, j->msg, sizeof j->msg);
    if (st != TRANSCRIBE_OK) {
        j->st = st;
        return;
    }
    transcribe_set_abort_callback(s, run_abort_cb, j);
    pthread_mutex_lock(&m->compute);
    st = transcribe_run(s, j->pcm, (int)j->n, &j->opts.rp);
    pthread_mutex_unlock(&m->compute);
    transcribe_set_abort_callback(s, NULL, NULL);
    if (st != TRANSCRIBE_OK) {
        const char *e = transcribe_session_last_error(s);
        snprintf(j->msg, sizeof j->msg, "%s", e && e[0] ? e : transcribe_status_string(st));
    }
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
        st == TRANSCRIBE_ERR_ABORTED) {
        transcribe_status fs = render(j, s, st, j->n, m->sample_rate);
        if (fs != TRANSCRIBE_OK && st == TRANSCRIBE_OK) {
            st = fs;
            snprintf(j->msg, sizeof j->msg, "cannot render the result: %s",
                     transcribe_status_string(fs));
        }
    }
    session_give(m, s);
    j->st = st;
}

static napi_value timings_object(napi_env env, const job *j) {
    napi_value t;
    napi_create_object(env, &t);
    set_num(env, t, "loadMs", j->timings.load_ms);
    set_num(env, t, "melMs", j->timings.mel_ms);
    set_num(env, t, "encodeMs", j->timings.encode_ms);
    set_num(env, t, "decodeMs", j->timings.decode_ms);
    return t;
}

static const char *const k_format_names[N_FORMATS] = {"txt", "json", "srt", "vtt"};

/* { json, formatted: { srt: ... }, timings } for a run or a finished stream. */
static napi_value result_payload(napi_env env, const job *j) {
    napi_value p, f;
    napi_create_object(env, &p);
    if (j->json) set_str(env, p, "json", j->json);
    napi_create_object(env, &f);
    for (int i = 0; i < N_FORMATS; i++)
        if (j->formatted[i]) set_str(env, f, k_format_names[i], j->formatted[i]);
    napi_set_named_property(env, p, "formatted", f);
    if (j->have_timings) napi_set_named_property(env, p, "timings", timings_object(env, j));
    return p;
}

static napi_value stream_update_payload(napi_env env, const job *j) {
    napi_value p;
    napi_create_object(env, &p);
    set_str(env, p, "committed", j->s_committed);
    set_str(env, p, "tentative", j->s_tentative);
    set_str(env, p, "text", j->s_full);
    set_bool(env, p, "changed", j->upd.result_changed);
    set_bool(env, p, "isFinal", j->upd.is_final);
    set_num(env, p, "revision", j->upd.revision);
    set_num(env, p, "inputMs", (double)j->upd.input_received_ms);
    set_num(env, p, "committedMs", (double)j->upd.audio_committed_ms);
    set_num(env, p, "bufferedMs", (double)j->upd.buffered_ms);
    if (j->kind == JOB_FINISH && j->json)
        napi_set_named_property(env, p, "result", result_payload(env, j));
    return p;
}

static void stream_unref(node_stream *t);

static void job_complete(napi_env env, napi_status status, void *data) {
    job *j = data;
    napi_value cb = NULL, argv[2];
    napi_get_reference_value(env, j->cb, &cb);
    napi_get_undefined(env, &argv[0]);
    napi_get_undefined(env, &argv[1]);
    if (status != napi_ok) {
        argv[0] = make_error(env, TRANSCRIBE_ERR_ABORTED, "the work was cancelled");
    } else if (j->kind == JOB_LOAD) {
        if (j->st == TRANSCRIBE_OK) {
            argv[1] = wrap_model(env, j->loaded);
            j->loaded = NULL;
            if (!argv[1]) {
                bool pending = false;
                napi_is_exception_pending(env, &pending);
                if (pending) napi_get_and_clear_last_exception(env, &argv[0]);
                napi_get_undefined(env, &argv[1]);
            }
        } else {
            argv[0] = make_error(env, j->st, j->msg);
        }
    } else {
        bool ok = j->st == TRANSCRIBE_OK || j->st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (!ok) argv[0] = make_error(env, j->st, j->msg);
        if (j->kind == JOB_RUN && j->json) argv[1] = result_payload(env, j);
        if (j->kind != JOB_RUN && ok) argv[1] = stream_update_payload(env, j);
    }
    napi_delete_async_work(env, j->work);
    if (j->strm) stream_unref(j->strm);
    if (j->m) model_unref(j->m);
    j->strm = NULL;
    j->m = NULL;
    napi_ref cbref = j->cb;
    job_unref(j);
    napi_value global;
    napi_get_global(env, &global);
    if (cb) napi_call_function(env, global, cb, 2, argv, NULL);
    napi_delete_reference(env, cbref);
}

/* A job with its callback and async work; refs 1 (the work). */
static job *job_new(napi_env env, enum job_kind kind, napi_value cb, napi_async_execute_callback ex,
                    const char *name) {
    napi_valuetype t;
    if (napi_typeof(env, cb, &t) != napi_ok || t != napi_function) {
        invalid(env, "the callback must be a function");
        return NULL;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
        return NULL;
    }
    j->kind = kind;
    j->refs = 1;
    napi_value res_name;
    napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &res_name);
    if (napi_create_reference(env, cb, 1, &j->cb) != napi_ok ||
        napi_create_async_work(env, NULL, res_name, ex, job_complete, j, &j->work) != napi_ok) {
        if (j->cb) napi_delete_reference(env, j->cb);
        free(j);
        throw_status(env, TRANSCRIBE_ERR_OOM, "cannot create the async work");
        return NULL;
    }
    return j;
}

/* Undoes job_new before the work is queued (a JS handle, when one was made,
 * keeps its own reference). */
static void job_discard(napi_env env, job *j) {
    napi_delete_async_work(env, j->work);
    napi_delete_reference(env, j->cb);
    job_unref(j);
}

/* Copies a typed array of PCM (float32, float64, int16 scaled by 1/32768)
 * into a float buffer; bytes (Uint8Array, Buffer) and ArrayBuffers are the
 * bytes of a WAV file. */
static bool read_audio(napi_env env, napi_value v, job *j, bool allow_bytes) {
    bool is_ta = false, is_ab = false;
    napi_is_typedarray(env, v, &is_ta);
    napi_is_arraybuffer(env, v, &is_ab);
    void *data = NULL;
    size_t len = 0;
    napi_typedarray_type type = napi_uint8_array;
    if (is_ta) {
        napi_get_typedarray_info(env, v, &type, &len, &data, NULL, NULL);
    } else if (is_ab) {
        napi_get_arraybuffer_info(env, v, &data, &len);
    } else {
        invalid(env, "audio must be a path, a Float32Array, an Int16Array, a Float64Array or "
                     "the bytes of a WAV file");
        return false;
    }
    if (is_ab || type == napi_uint8_array) {
        if (!allow_bytes) {
            invalid(env, "a stream takes PCM samples (Float32Array, Int16Array, Float64Array)");
            return false;
        }
        j->bytes = malloc(len ? len : 1);
        if (!j->bytes) goto oom;
        if (len) memcpy(j->bytes, data, len);
        j->n_bytes = len;
        return true;
    }
    if (type != napi_float32_array && type != napi_float64_array && type != napi_int16_array) {
        invalid(env, "PCM must be a Float32Array, an Int16Array or a Float64Array");
        return false;
    }
    j->pcm = malloc((len ? len : 1) * sizeof(float));
    if (!j->pcm) goto oom;
    j->n = (int64_t)len;
    if (type == napi_float32_array) {
        if (len) memcpy(j->pcm, data, len * sizeof(float));
    } else if (type == napi_float64_array) {
        for (size_t i = 0; i < len; i++) j->pcm[i] = (float)((const double *)data)[i];
    } else {
        for (size_t i = 0; i < len; i++) j->pcm[i] = (float)((const int16_t *)data)[i] / 32768.0f;
    }
    return true;
oom:
    throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    return false;
}

/* A JS handle on a job (for abort): the job lives until both the work and
 * the handle are done with it. */
static napi_value job_handle(napi_env env, job *j) {
    napi_value h = NULL;
    if (napi_create_external(env, j, job_handle_finalize, NULL, &h) == napi_ok)
        j->refs++;
    else
        napi_get_null(env, &h);
    return h;
}

/* transcribe(model, audio, options, callback) -> job handle.
 * audio: a path string, PCM (Float32Array / Float64Array / Int16Array) at
 * the model's rate, or WAV bytes (Uint8Array / Buffer / ArrayBuffer).
 * options: the run parameters (read_run_opts), tokens (bool), formats (bit mask). */
static napi_value js_transcribe(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 4) return invalid(env, "transcribe(model, audio, options, callback)");
    node_model *m = get_model(env, argv[0]);
    if (!m) return NULL;
    job *j = job_new(env, JOB_RUN, argv[3], run_execute, "transcribe");
    if (!j) return NULL;
    napi_valuetype t;
    napi_typeof(env, argv[1], &t);
    int64_t formats = 0;
    bool ok = true;
    if (t == napi_string) {
        j->path = dup_string(env, argv[1], "the audio path");
        ok = j->path != NULL;
    } else {
        ok = read_audio(env, argv[1], j, true);
    }
    ok = ok && read_run_opts(env, argv[2], &j->opts) &&
         opt_bool(env, argv[2], "tokens", &j->json_tokens) &&
         opt_int64(env, argv[2], "formats", 0, (1 << N_FORMATS) - 1, &formats);
    if (!ok) {
        job_discard(env, j);
        return NULL;
    }
    j->formats = (unsigned)formats;
    j->m = m;
    m->refs++;
    j->gen = atomic_load(&m->abort_gen);
    napi_value h = job_handle(env, j);
    if (napi_queue_async_work(env, j->work) != napi_ok) {
        model_unref(m);
        j->m = NULL;
        job_discard(env, j); /* the handle's finalizer is the last owner */
        return throw_status(env, TRANSCRIBE_ERR_OOM, "cannot queue the work");
    }
    return h;
}

/* jobAbort(handle): the job's run stops at its next abort check. */
static napi_value js_job_abort(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    job *j = NULL;
    if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&j) != napi_ok || !j)
        return invalid(env, "not a job handle");
    atomic_store(&j->abort, true);
    return undefined(env);
}

static void load_execute(napi_env env, void *data) {
    (void)env;
    job *j = data;
    j->st = model_open(j->path, &j->sp, &j->loaded, j->msg, sizeof j->msg);
}

/* modelLoadAsync(path, options, callback): the load off the event loop. */
static napi_value js_model_load_async(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 3) return invalid(env, "modelLoadAsync(path, options, callback)");
    job *j = job_new(env, JOB_LOAD, argv[2], load_execute, "transcribe.load");
    if (!j) return NULL;
    j->path = dup_string(env, argv[0], "the model path");
    if (!j->path || !read_session_params(env, argv[1], &j->sp)) {
        job_discard(env, j);
        return NULL;
    }
    if (napi_queue_async_work(env, j->work) != napi_ok) {
        job_discard(env, j);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "cannot queue the work");
    }
    return undefined(env);
}

/* ---- streams ---- */

static bool stream_abort_cb(void *ud) {
    node_stream *t = ud;
    return atomic_load(&t->abort) || atomic_load(&t->m->abort_gen) != atomic_load(&t->gen);
}

static void stream_unref(node_stream *t) {
    if (--t->refs > 0) return;
    transcribe_session_free(t->s);
    run_opts_free(&t->opts);
    model_unref(t->m);
    free(t);
}

typedef struct {
    node_stream *t; /* NULL once closed */
} stream_box;

static void stream_box_close(stream_box *b) {
    if (!b->t) return;
    node_stream *t = b->t;
    b->t = NULL;
    t->closed = true;
    atomic_store(&t->abort, true); /* an op in flight stops early */
    stream_unref(t);
}

static void stream_box_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    stream_box_close(data);
    free(data);
}

/* streamOpen(model, options) -> stream handle. options: the run options,
 * commit (0 auto, 1 on finalize, 2 stable prefix), agreement, windowFallback. */
static napi_value js_stream_open(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 2) return invalid(env, "streamOpen(model, options)");
    node_model *m = get_model(env, argv[0]);
    if (!m) return NULL;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    int64_t commit = 0, agreement = 0;
    bool fallback = true;
    if (!opt_int64(env, argv[1], "commit", 0, 2, &commit) ||
        !opt_int64(env, argv[1], "agreement", 0, 32, &agreement) ||
        !opt_bool(env, argv[1], "windowFallback", &fallback))
        return NULL;
    sp.commit_policy = (transcribe_stream_commit_policy)commit;
    sp.stable_prefix_agreement_n = (uint32_t)agreement;
    sp.window_fallback = fallback;
    node_stream *t = calloc(1, sizeof *t);
    stream_box *b = malloc(sizeof *b);
    if (!t || !b) {
        free(t);
        free(b);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    }
    if (!read_run_opts(env, argv[1], &t->opts)) {
        free(t);
        free(b);
        return NULL;
    }
    char msg[512];
    capture_begin(msg, sizeof msg);
    transcribe_status st = transcribe_session_init(m->model, &m->sp, &t->s);
    capture_end();
    if (st == TRANSCRIBE_OK) {
        /* begin is no compute call (docs/c-api.md §1.6): no turn to wait for */
        st = transcribe_stream_begin(t->s, &t->opts.rp, &sp);
        if (st != TRANSCRIBE_OK) {
            const char *e = transcribe_session_last_error(t->s);
            snprintf(msg, sizeof msg, "%s", e && e[0] ? e : transcribe_status_string(st));
        }
    }
    if (st != TRANSCRIBE_OK) {
        transcribe_session_free(t->s);
        run_opts_free(&t->opts);
        free(t);
        free(b);
        return throw_status(env, st, msg);
    }
    transcribe_set_abort_callback(t->s, stream_abort_cb, t);
    t->m = m;
    m->refs++;
    t->refs = 1;
    b->t = t;
    napi_value h;
    if (napi_create_external(env, b, stream_box_finalize, NULL, &h) != napi_ok) {
        stream_box_close(b);
        free(b);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "out of memory");
    }
    return h;
}

static void stream_text(job *j, struct transcribe_session *s) {
    struct transcribe_stream_text tx;
    transcribe_stream_text_init(&tx);
    if (transcribe_stream_get_text(s, &tx) != TRANSCRIBE_OK) return;
    j->s_full = dup_n(tx.full_text ? tx.full_text : "", tx.full_text ? tx.full_text_bytes : 0);
    j->s_committed = dup_n(tx.committed_text ? tx.committed_text : "",
                           tx.committed_text ? tx.committed_text_bytes : 0);
    j->s_tentative = dup_n(tx.tentative_text ? tx.tentative_text : "",
                           tx.tentative_text ? tx.tentative_text_bytes : 0);
}

static void stream_execute(napi_env env, void *data) {
    (void)env;
    job *j = data;
    node_stream *t = j->strm;
    node_model *m = t->m;
    transcribe_stream_update_init(&j->upd);
    transcribe_status st;
    if (j->n > INT_MAX) {
        snprintf(j->msg, sizeof j->msg, "feed at most %d samples at a time", INT_MAX);
        j->st = TRANSCRIBE_ERR_INVALID_ARG;
        return;
    }
    pthread_mutex_lock(&m->compute);
    if (j->kind == JOB_FEED)
        st = transcribe_stream_feed(t->s, j->pcm, (int)j->n, &j->upd);
    else
        st = transcribe_stream_finalize(t->s, &j->upd);
    pthread_mutex_unlock(&m->compute);
    if (st == TRANSCRIBE_OK && j->kind == JOB_FEED) t->fed += j->n;
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        const char *e = transcribe_session_last_error(t->s);
        snprintf(j->msg, sizeof j->msg, "%s", e && e[0] ? e : transcribe_status_string(st));
    } else {
        stream_text(j, t->s);
        if (j->kind == JOB_FINISH) {
            transcribe_status fs = render(j, t->s, st, t->fed, m->sample_rate);
            if (fs != TRANSCRIBE_OK) {
                st = fs;
                snprintf(j->msg, sizeof j->msg, "cannot render the result: %s",
                         transcribe_status_string(fs));
            }
        }
    }
    j->st = st;
}

/* streamFeed(stream, pcm, callback) / streamFinish(stream, options, callback).
 * index.js runs one op of a stream at a time. */
static napi_value stream_op(napi_env env, napi_callback_info info, enum job_kind kind) {
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 3) return invalid(env, "streamFeed(stream, pcm|options, callback)");
    stream_box *b = NULL;
    if (napi_get_value_external(env, argv[0], (void **)&b) != napi_ok || !b)
        return invalid(env, "not a stream handle");
    if (!b->t) return invalid(env, "the stream is closed");
    node_stream *t = b->t;
    job *j = job_new(env, kind, argv[2], stream_execute,
                     kind == JOB_FEED ? "transcribe.feed" : "transcribe.finish");
    if (!j) return NULL;
    int64_t formats = 0;
    bool ok = kind == JOB_FEED
                  ? read_audio(env, argv[1], j, false)
                  : opt_bool(env, argv[1], "tokens", &j->json_tokens) &&
                        opt_int64(env, argv[1], "formats", 0, (1 << N_FORMATS) - 1, &formats);
    if (!ok) {
        job_discard(env, j);
        return NULL;
    }
    j->formats = (unsigned)formats;
    j->strm = t;
    t->refs++;
    atomic_store(&t->gen, atomic_load(&t->m->abort_gen));
    if (napi_queue_async_work(env, j->work) != napi_ok) {
        j->strm = NULL;
        stream_unref(t);
        job_discard(env, j);
        return throw_status(env, TRANSCRIBE_ERR_OOM, "cannot queue the work");
    }
    return undefined(env);
}

static napi_value js_stream_feed(napi_env env, napi_callback_info info) {
    return stream_op(env, info, JOB_FEED);
}

static napi_value js_stream_finish(napi_env env, napi_callback_info info) {
    return stream_op(env, info, JOB_FINISH);
}

/* streamAbort(stream): the op in flight and every later one fail ABORTED. */
static napi_value js_stream_abort(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    stream_box *b = NULL;
    if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&b) != napi_ok || !b)
        return invalid(env, "not a stream handle");
    if (b->t) atomic_store(&b->t->abort, true);
    return undefined(env);
}

static napi_value js_stream_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    stream_box *b = NULL;
    if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&b) != napi_ok || !b)
        return invalid(env, "not a stream handle");
    stream_box_close(b);
    return undefined(env);
}

/* ---- module-level functions ---- */

static napi_value js_set_error_class(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    addon_data *d = NULL;
    napi_get_instance_data(env, (void **)&d);
    if (!d || argc < 1) return invalid(env, "setErrorClass(ctor)");
    if (d->error_ctor) napi_delete_reference(env, d->error_ctor);
    d->error_ctor = NULL;
    napi_create_reference(env, argv[0], 1, &d->error_ctor);
    return undefined(env);
}

static napi_value js_status_string(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], out;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    int32_t st = 0;
    if (argc < 1 || napi_get_value_int32(env, argv[0], &st) != napi_ok)
        return invalid(env, "statusString(code)");
    napi_create_string_utf8(env, transcribe_status_string(st), NAPI_AUTO_LENGTH, &out);
    return out;
}

static napi_value js_set_log_level(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    int32_t lv = 0;
    if (argc < 1 || napi_get_value_int32(env, argv[0], &lv) != napi_ok || lv < 0 || lv > 4)
        return invalid(env, "the log level must be 0..4");
    atomic_store(&g_print_level, lv);
    return undefined(env);
}

static napi_value js_version(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value out;
    napi_create_string_utf8(env, transcribe_version(), NAPI_AUTO_LENGTH, &out);
    return out;
}

static void addon_data_free(napi_env env, void *data, void *hint) {
    (void)hint;
    addon_data *d = data;
    if (d->error_ctor) napi_delete_reference(env, d->error_ctor);
    free(d);
}

NAPI_MODULE_INIT() {
    addon_data *d = calloc(1, sizeof *d);
    if (!d || napi_set_instance_data(env, d, addon_data_free, NULL) != napi_ok) {
        free(d);
        return NULL;
    }
    transcribe_log_set(on_log, NULL);
    static const struct {
        const char *name;
        napi_callback fn;
    } fns[] = {
        {"modelLoad", js_model_load},
        {"modelLoadAsync", js_model_load_async},
        {"modelClose", js_model_close},
        {"modelAbort", js_model_abort},
        {"modelInfo", js_model_info},
        {"transcribe", js_transcribe},
        {"jobAbort", js_job_abort},
        {"vadLoad", js_vad_load},
        {"streamOpen", js_stream_open},
        {"streamFeed", js_stream_feed},
        {"streamFinish", js_stream_finish},
        {"streamAbort", js_stream_abort},
        {"streamClose", js_stream_close},
        {"setErrorClass", js_set_error_class},
        {"statusString", js_status_string},
        {"setLogLevel", js_set_log_level},
        {"version", js_version},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        napi_value f;
        if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f) !=
                napi_ok ||
            napi_set_named_property(env, exports, fns[i].name, f) != napi_ok)
            return NULL;
    }
    return exports;
}
