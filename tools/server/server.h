/* transcribe-server: the OpenAI audio API (/v1/audio/transcriptions,
 * /v1/audio/translations) over libtranscribe, on libmicrohttpd. The pieces:
 * main.c (options, start, graceful stop), http.c (routing, uploads,
 * responses), pool.c (loaded models, their sessions, the queue), job.c (a
 * request's form fields -> run parameters -> one run), reply.c (the OpenAI
 * response formats and error bodies), metrics.c (counters for /metrics),
 * guard.c (deadlines for slow clients, slots kept for new ones).
 * Uses only the public API and tools/common. */
#ifndef TR_TOOLS_SERVER_H
#define TR_TOOLS_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output.h"
#include "wav_cut.h"
#include "transcribe/extensions.h"

/* ---- options (main.c) ---- */

#define SRV_MAX_MODELS 16
#define SRV_VAD_FILE   "silero-vad-v4.gguf" /* the bundled VAD model's name */

typedef struct srv_opts {
    const char *model_path[SRV_MAX_MODELS];
    const char *model_id[SRV_MAX_MODELS]; /* -m ID=PATH, else the file's stem */
    int n_models;
    const char *host; /* default 127.0.0.1 */
    int port;         /* default 8080; 0: any free port (printed) */
    int parallel;     /* sessions per model */
    int queue;        /* requests that may wait for a session, per model */
    const char *api_key;
    bool insecure_no_auth;
    int64_t max_upload_bytes;
    double max_audio_s;
    int timeout_s;        /* a whole request: upload, wait, run */
    int idle_timeout_s;   /* a connection with no traffic (outside runs) */
    int header_timeout_s; /* a request's line and headers (guard.c) */
    int body_timeout_s;   /* a request's body after its headers (guard.c) */
    int max_connections;  /* open connections (each holds a thread) */
    int threads;          /* per session; 0: library default */
    int shutdown_grace_s;
    int drain_delay_s;          /* after SIGTERM: /health 503 while serving, before refusing */
    const char *vad_model_path; /* --vad-model; NULL: the bundled one if present */
    const char *diarizer_path;  /* --diarizer; NULL: none */
    bool quiet;
} srv_opts;

/* ---- models and their sessions (pool.c) ---- */

typedef struct srv_model {
    char id[128];
    struct transcribe_model *model;
    struct transcribe_capabilities caps;
    bool whisper_ext; /* takes the whisper run extension (prompt, temperature) */
    /* The pool: `parallel` sessions; requests beyond them wait, up to
     * `queue` of them. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_waiter *head, *tail; /* waiting requests, first come first served */
    struct transcribe_session **free_sessions;
    int n_free, n_sessions;
    int waiting, queue_cap;
    /* docs/c-api.md §1.6: compute runs one at a time per model, across all its
     * sessions. Sessions still let requests decode audio, wait and format in
     * parallel; the gate is the one place to drop when the library allows
     * overlapping runs on one model. */
    pthread_mutex_t compute;
    bool sync_ready; /* mu, cv and compute initialised */
} srv_model;

typedef struct srv_pool {
    srv_model *models;
    int n;
    struct transcribe_vad_model *vad; /* for requests with vad=true; NULL: none */
    /* --diarizer: speaker attribution for diarize=true on a model that cannot
     * tell speakers itself (run_params.diarizer); NULL: none. It is a model
     * too (docs/c-api.md §1.6): runs that use it take diar_compute as well
     * (after their model's compute), one at a time over all models. */
    struct transcribe_model *diarizer;
    pthread_mutex_t diar_compute;
} srv_pool;

/* Whether diarize=true gives speakers on m: its own diarization, else the
 * server's --diarizer. */
bool srv_model_diarizes(const srv_pool *p, const srv_model *m);

/* Loads every model and creates its sessions; false (logged) on failure. */
bool srv_pool_open(srv_pool *p, const srv_opts *o);
void srv_pool_close(srv_pool *p);
/* The model with this id ("" or NULL: the first; "whisper-1", the id the
 * OpenAI examples use, also names the first unless a model has that id). */
srv_model *srv_pool_find(srv_pool *p, const char *id);

typedef enum {
    SRV_ACQ_OK = 0,
    SRV_ACQ_FULL,    /* queue full: 503 + Retry-After */
    SRV_ACQ_GONE,    /* the client disconnected while waiting */
    SRV_ACQ_TIMEOUT, /* the request's deadline passed while waiting */
    SRV_ACQ_CLOSING, /* shutting down */
} srv_acquire;

struct srv_request;
/* Takes a free session of m, waiting in m's queue when none is free. */
srv_acquire srv_model_acquire(srv_model *m, struct srv_request *rq,
                              struct transcribe_session **out);
void srv_model_release(srv_model *m, struct transcribe_session *s);
/* Requests waiting for a session, over all models (for /metrics). */
int srv_pool_waiting(srv_pool *p);

/* ---- metrics (metrics.c) ---- */

typedef enum {
    SRV_ERR_BAD_REQUEST = 0, /* 400 */
    SRV_ERR_AUTH,            /* 401 */
    SRV_ERR_NOT_FOUND,       /* 404 (route or model) */
    SRV_ERR_METHOD,          /* 405 */
    SRV_ERR_TIMEOUT,         /* 408 / 504 */
    SRV_ERR_TOO_LARGE,       /* 413 */
    SRV_ERR_MEDIA,           /* 415 */
    SRV_ERR_OVERLOADED,      /* 503 (queue full, shutting down) */
    SRV_ERR_INTERNAL,        /* 500 */
    SRV_ERR_ABORTED,         /* the client went away during its run */
    SRV_ERR_KINDS
} srv_err_kind;

typedef struct srv_metrics {
    atomic_llong requests[4]; /* transcriptions, translations, other api, pages/health */
    atomic_llong errors[SRV_ERR_KINDS];
    atomic_int running;
    atomic_llong audio_ms;   /* audio transcribed */
    atomic_llong compute_us; /* wall time of the runs */
    atomic_llong ok;
} srv_metrics;

/* Prometheus text exposition of m (malloc'ed, *len set). */
/* state: 0 serving, 1 draining (SIGTERM seen, /health fails), 2 refusing */
char *srv_metrics_text(const srv_metrics *m, int queue_depth, int in_flight, int state,
                       size_t *len);
const char *srv_err_kind_name(srv_err_kind k);

/* ---- the connection guard (guard.c) ---- */

typedef enum {
    SRV_CONN_HEADERS = 0, /* waiting for a request's line and headers */
    SRV_CONN_BODY,        /* waiting for its body */
    SRV_CONN_ACTIVE,      /* the server's turn (run, answer): not watched */
} srv_conn_phase;

typedef struct srv_guard srv_guard;
typedef struct srv_conn srv_conn;

/* Starts the guard's thread; NULL (out of memory) leaves connections
 * unwatched. */
srv_guard *srv_guard_start(const srv_opts *o);
void srv_guard_stop(srv_guard *g);
/* A new connection on socket fd (waiting for its headers); may close the
 * connection that has waited longest to keep slots for newcomers. */
srv_conn *srv_guard_open(srv_guard *g, int fd);
/* The connection enters phase (HEADERS again: kept alive after a request). */
void srv_guard_phase(srv_guard *g, srv_conn *c, srv_conn_phase phase);
/* The daemon closes the connection (before its socket is closed). */
void srv_guard_close(srv_guard *g, srv_conn *c);
/* Connections whose next request is on the way: bytes of it wait in the
 * socket, or the connection is younger than settle_s and has had no request
 * yet (a balancer sends one on every new connection). A stopping server
 * waits for these, so that their requests are answered (503 or served)
 * instead of the connection closing under an upload. */
int srv_guard_arriving(srv_guard *g, double settle_s);
/* How many connections the guard has ever been told of (srv_guard_open,
 * also those it could not watch for want of memory). */
long long srv_guard_opened(srv_guard *g);
/* Those not closed yet. */
long long srv_guard_live(srv_guard *g);
/* Connections closed for a passed deadline, or to make room (evicted). */
long long srv_guard_cut(const srv_guard *g, bool evicted);

/* ---- the server (http.c) ---- */

typedef struct srv_server {
    const srv_opts *opts;
    srv_pool pool;
    srv_metrics metrics;
    char tmp_dir[256];    /* uploads land here (one private folder per server) */
    atomic_int closing;   /* 0 serving, 1 stopping (refuse new), 2 stop runs now */
    atomic_int draining;  /* SIGTERM seen: /health fails, requests still served */
    atomic_int in_flight; /* requests past their headers */
    struct MHD_Daemon *daemon;
    srv_guard *guard;
    int port;
} srv_server;

bool srv_http_start(srv_server *s);
/* Refuses new connections and requests, waits up to grace_s for running
 * ones (also those queued for a session), then stops the daemon. */
void srv_http_stop(srv_server *s, int grace_s);

/* ---- one request (job.c, http.c) ---- */

#define SRV_MAX_FIELDS    64
#define SRV_MAX_FIELD_LEN 8192
#define SRV_MAX_GRANULAR  4

typedef enum {
    SRV_FMT_JSON = 0,
    SRV_FMT_TEXT,
    SRV_FMT_SRT,
    SRV_FMT_VTT,
    SRV_FMT_VERBOSE_JSON,
} srv_format;

/* The multipart form as received. */
typedef struct srv_form {
    char *model, *language, *prompt, *temperature, *response_format, *stream, *vad, *diarize;
    char *granularities[SRV_MAX_GRANULAR];
    int n_granularities;
    int n_fields;
    bool have_file;
    int64_t file_bytes;
} srv_form;

/* A response under construction: status, body, headers. */
typedef struct srv_reply {
    int status;
    char *body; /* malloc'ed */
    size_t len;
    const char *content_type;
    int retry_after_s; /* > 0: a Retry-After header */
} srv_reply;

typedef struct srv_request {
    srv_server *srv;
    struct MHD_Connection *conn;
    struct MHD_PostProcessor *pp;
    struct srv_multipart *mp; /* instead of pp: a valid form pp refuses (multipart.h) */
    int route;                /* enum in http.c */
    char method[8];           /* for the log line: the method and path, cut short */
    char path[96];
    bool translate; /* /v1/audio/translations */
    srv_form form;
    char field_key[64]; /* the field being received (values come in pieces) */
    uint64_t last_end;  /* where its last piece ended */
    char delim[80];     /* "CRLF--BOUNDARY--": the body ends there (http.c) */
    char tail[80];      /* the last bytes of the body so far, to find it */
    size_t tail_len;
    bool epilogue;  /* past the closing delimiter */
    int delim_crlf; /* bytes of the CRLF after it seen (2: done) */
    int file_fd;    /* the upload, in srv->tmp_dir */
    char file_path[320];
    int64_t body_bytes;
    bool failed; /* reply already holds an error */
    srv_reply reply;
    double t_start;   /* monotonic seconds */
    double deadline;  /* monotonic seconds */
    double last_poll; /* the disconnect check's last look */
    bool client_gone;
    bool counted; /* in srv->in_flight */
} srv_request;

/* Sets rq->reply to an OpenAI error body. param/code may be NULL. */
void srv_reply_error(srv_request *rq, int status, srv_err_kind kind, const char *param,
                     const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Validates the form, loads the audio, runs it and fills rq->reply. */
void srv_job_run(srv_request *rq);
/* decode.c: an upload at `rate` Hz, refused past max_ms (ERR_INPUT_TOO_LONG);
 * WAV in this process, any other container in a short-lived child process
 * (codec leaks and crashes end with it) given at most timeout_s (0: no
 * limit). *pcm is freed with free(). ERR_BACKEND: no child could be
 * started; a child that crashed, hung or sent garbage: ERR_INVALID_ARG.
 * A failure leaves in why (cap bytes) the library's reason, its first error
 * message ("" when it gave none). */
transcribe_status srv_decode_upload(const char *path, int rate, int64_t max_ms, int timeout_s,
                                    float **pcm, int *n, char *why, size_t why_cap);
/* main.c: from now on this thread's first error-level library message is
 * copied into buf (cleared now); NULL ends it. */
void srv_log_capture(char *buf, size_t cap);
/* Whether the client of rq is gone or its deadline passed (polled at most
 * every 20 ms); the run's abort callback and the queue wait use it. */
bool srv_request_should_stop(srv_request *rq);

/* reply.c: the response formats of a finished run. `extra` carries what
 * verbose_json shows beyond the rows. */
typedef struct srv_run_info {
    bool translate;
    double duration_s;
    bool words;       /* timestamp_granularities[] has "word" */
    float *no_speech; /* per whisper window, or NULL */
    int64_t *window_t0, *window_t1;
    int n_windows;
    float temperature;
    /* detected, else asked for, else the model's only one where the run
     * gave text; NULL: unknown (verbose_json says null) */
    const char *language;
    /* text / srt / vtt: the body as the library renders the result
     * (transcribe_format_result, the CLI's bytes); verbose_json: the
     * library's JSON, whose cues it carries; malloc'ed, or NULL */
    char *rendered;
    size_t rendered_len;
} srv_run_info;

bool srv_format_body(srv_format fmt, const cli_result *r, const srv_run_info *info, srv_reply *out);
bool srv_format_sse(const cli_result *r, srv_reply *out);

/* Monotonic clock in seconds. */
double srv_now(void);
/* A string appended to with printf (open_memstream behind). */
typedef struct srv_buf {
    FILE *f;
    char *data;
    size_t len;
} srv_buf;
bool srv_buf_open(srv_buf *b);
/* Closes the stream; the data moves to reply (status/content type set). */
bool srv_buf_to_reply(srv_buf *b, srv_reply *out, int status, const char *content_type);

#endif
