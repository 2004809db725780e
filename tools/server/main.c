/* transcribe-server: options, model loading, listening, and the graceful
 * stop on SIGTERM / SIGINT (drain: fail /health for --drain-delay while still
 * serving; then refuse new requests, finish running ones). */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bundled_dir.h"
#include "catalog.h"
#include "server.h"

static void usage(FILE *f, const char *argv0) {
    fprintf(f,
            "usage: %s [-m MODEL [-m MODEL2 ...]] [options]\n"
            "The OpenAI audio API (/v1/audio/transcriptions, /v1/audio/translations,\n"
            "/v1/models) and a page to try it at /, over libtranscribe.\n"
            "options:\n"
            "  -m, --model [ID=]PATH     a model to serve (repeatable); its id is ID, else\n"
            "                            the file name without .gguf; the first is the default\n"
            "                            (none: $TRANSCRIBE_MODEL, else the bundled model);\n"
            "                            a catalogue NAME (parakeet-tdt-0.6b-v3) takes the\n"
            "                            model cache's file (transcribe-download fetches it)\n"
            "  --host ADDR               address to bind (default 127.0.0.1)\n"
            "  --port N                  port (default 8080; 0 = any free port, printed)\n"
            "  --parallel N              sessions per model (default 2)\n"
            "  --queue N                 requests that may wait per model (default 16);\n"
            "                            beyond that: 503 with Retry-After\n"
            "  --api-key KEY             require Authorization: Bearer KEY on /v1/*\n"
            "                            (also read from TRANSCRIBE_API_KEY)\n"
            "  --insecure-no-auth        allow a non-loopback --host without --api-key\n"
            "  --max-upload-mb N         largest request body (default 25)\n"
            "  --max-audio-s N           longest audio after decoding (default 3600)\n"
            "  --timeout N               seconds for a whole request (default 300)\n"
            "  --idle-timeout N          seconds a connection may send nothing (default 30)\n"
            "  --header-timeout N        seconds for a request's line and headers (default 15)\n"
            "  --body-timeout N          seconds for a request's body (default: --timeout)\n"
            "  --max-connections N       open connections (default 64); a quarter of them\n"
            "                            is kept for new clients (the connection that has\n"
            "                            waited longest for its client's request is closed)\n"
            "  --threads N               compute threads per run (default: library's)\n"
            "  --shutdown-grace N        seconds running requests get on SIGTERM (default 30)\n"
            "  --drain-delay N           on SIGTERM, first N seconds (default 0) in which\n"
            "                            /health answers 503 while requests are still served,\n"
            "                            so that a load balancer moves new ones elsewhere;\n"
            "                            then new requests are refused (503, Retry-After) and\n"
            "                            running ones get --shutdown-grace; a second signal\n"
            "                            ends the delay\n"
            "  --vad-model FILE          Silero VAD model for requests with vad=true\n"
            "                            (default: the bundled silero-vad-v4.gguf if present)\n"
            "  --diarizer FILE           a diarization model (e.g. Sortformer), loaded once:\n"
            "                            diarize=true on a model that cannot tell speakers\n"
            "                            itself labels every word and segment with one\n"
            "                            (verbose_json \"speaker\"; text, srt and vtt as the\n"
            "                            CLI's --diarizer); requests without it get none\n"
            "  -q, --quiet               no request log, no library log\n"
            "  -h, --help                this text\n"
            "      --version             print the version and exit\n",
            argv0);
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool is_loopback(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* The options that take a value: any other word starting with '-' is
 * unknown, whether or not something follows it. */
static bool takes_value(const char *a) {
    static const char *const k[] = {"-m",
                                    "--model",
                                    "--host",
                                    "--port",
                                    "--parallel",
                                    "--queue",
                                    "--api-key",
                                    "--max-upload-mb",
                                    "--max-audio-s",
                                    "--timeout",
                                    "--idle-timeout",
                                    "--max-connections",
                                    "--header-timeout",
                                    "--body-timeout",
                                    "--threads",
                                    "--shutdown-grace",
                                    "--drain-delay",
                                    "--vad-model",
                                    "--diarizer"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (!strcmp(a, k[i])) return true;
    }
    return false;
}

/* No -m: $TRANSCRIBE_MODEL, else the bundled model, as the CLI does. */
static bool default_model(srv_opts *o) {
    static char bundled[PATH_MAX + 300];
    const char *env = getenv("TRANSCRIBE_MODEL");
    if (env && *env) {
        o->model_path[o->n_models++] = env;
        fprintf(stderr, "using model %s (from TRANSCRIBE_MODEL)\n", env);
        return true;
    }
    if (!tr_cli_bundled_model(bundled, sizeof bundled)) return false;
    o->model_path[o->n_models++] = bundled;
    fprintf(stderr, "using bundled model %s\n", bundled);
    return true;
}

/* -m NAME: a catalogue name that is not a file comes from the model cache
 * (tools/download/catalog.h; `transcribe-download NAME` fetches it), offline,
 * and is served under that name. */
static bool model_by_name(srv_opts *o, int i) {
    static char resolved[SRV_MAX_MODELS][TDL_PATH_MAX + 600];
    const char *p = o->model_path[i];
    struct stat st;
    if (stat(p, &st) == 0 || strchr(p, '/')) return true;
    char msg[1200];
    int r = tdl_resolve_cached(p, NULL, resolved[i], sizeof resolved[i], msg, sizeof msg);
    if (r == 1) {
        if (!o->model_id[i]) o->model_id[i] = p;
        o->model_path[i] = resolved[i];
        fprintf(stderr, "using %s from the model cache: %s\n", p, resolved[i]);
        return true;
    }
    size_t n = strlen(p);
    if (r == 0 &&
        ((n > 5 && !strcasecmp(p + n - 5, ".gguf")) || (n > 4 && !strcasecmp(p + n - 4, ".bin"))))
        return true; /* a missing file: loading it says so */
    fprintf(stderr, "error: %s\n", msg);
    return false;
}

/* Returns -1 to continue, else the exit code. */
static int parse(int argc, char **argv, srv_opts *o) {
    o->host = "127.0.0.1";
    o->port = 8080;
    o->parallel = 2;
    o->queue = 16;
    o->max_upload_bytes = 25; /* MB, as --max-upload-mb gives it: shifted once below */
    o->max_audio_s = 3600;
    o->timeout_s = 300;
    o->idle_timeout_s = 30;
    o->header_timeout_s = 15;
    o->max_connections = 64;
    o->shutdown_grace_s = 30;
    const char *env_key = getenv("TRANSCRIBE_API_KEY");
    if (env_key && *env_key) o->api_key = env_key;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, argv[0]);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!strcmp(a, "--insecure-no-auth")) {
            o->insecure_no_auth = true;
            continue;
        }
        if (!strcmp(a, "--version")) {
            printf("transcribe-server %s (library %s, commit %s)\n", TRANSCRIBE_VERSION,
                   transcribe_version(), transcribe_version_commit());
            return 0;
        }
        if (a[0] != '-') {
            fprintf(stderr, "error: unexpected argument '%s'\n", a);
            return 1;
        }
        if (!takes_value(a)) {
            fprintf(stderr, "error: unknown option '%s' (see --help)\n", a);
            return 1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s requires an argument\n", a);
            return 1;
        }
        const char *v = argv[++i];
        long n = 0;
#define INT_OPT(name, lo, hi, dst)                                                                 \
    if (!strcmp(a, name)) {                                                                        \
        if (!parse_int(v, lo, hi, &n)) {                                                           \
            fprintf(stderr, "error: %s takes an integer in %ld..%ld, not '%s'\n", name, (long)lo,  \
                    (long)hi, v);                                                                  \
            return 1;                                                                              \
        }                                                                                          \
        dst = n;                                                                                   \
        continue;                                                                                  \
    }
        INT_OPT("--port", 0, 65535, o->port)
        INT_OPT("--parallel", 1, 64, o->parallel)
        INT_OPT("--queue", 0, 100000, o->queue)
        INT_OPT("--max-upload-mb", 1, 4096, o->max_upload_bytes)
        INT_OPT("--max-audio-s", 1, 24 * 3600, o->max_audio_s)
        INT_OPT("--timeout", 1, 86400, o->timeout_s)
        INT_OPT("--idle-timeout", 1, 86400, o->idle_timeout_s)
        INT_OPT("--header-timeout", 1, 86400, o->header_timeout_s)
        INT_OPT("--body-timeout", 1, 86400, o->body_timeout_s)
        INT_OPT("--max-connections", 1, 10000, o->max_connections)
        INT_OPT("--threads", 0, 1024, o->threads)
        INT_OPT("--shutdown-grace", 0, 3600, o->shutdown_grace_s)
        INT_OPT("--drain-delay", 0, 3600, o->drain_delay_s)
#undef INT_OPT
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (o->n_models >= SRV_MAX_MODELS) {
                fprintf(stderr, "error: at most %d models\n", SRV_MAX_MODELS);
                return 1;
            }
            const char *eq = strchr(v, '=');
            if (eq && eq != v && !memchr(v, '/', (size_t)(eq - v))) {
                static char ids[SRV_MAX_MODELS][128];
                snprintf(ids[o->n_models], sizeof ids[0], "%.*s", (int)(eq - v), v);
                o->model_id[o->n_models] = ids[o->n_models];
                o->model_path[o->n_models++] = eq + 1;
            } else {
                o->model_path[o->n_models++] = v;
            }
        } else if (!strcmp(a, "--host")) {
            o->host = v;
        } else if (!strcmp(a, "--vad-model")) {
            o->vad_model_path = v;
        } else if (!strcmp(a, "--diarizer")) {
            o->diarizer_path = v;
        } else if (!strcmp(a, "--api-key")) {
            o->api_key = *v ? v : NULL;
        }
    }
    o->max_upload_bytes <<= 20;
    if (o->body_timeout_s == 0) o->body_timeout_s = o->timeout_s;
    for (int i = 0; i < o->n_models; i++)
        if (!model_by_name(o, i)) return 1;
    if (o->n_models == 0 && !default_model(o)) {
        fprintf(stderr,
                "error: no model: pass -m MODEL.gguf, set TRANSCRIBE_MODEL, or put a "
                ".gguf file in %s\n",
                tr_cli_bundled_model_dir());
        usage(stderr, argv[0]);
        return 1;
    }
    struct in6_addr any;
    if (inet_pton(AF_INET, o->host, &any) != 1 && inet_pton(AF_INET6, o->host, &any) != 1) {
        fprintf(stderr, "error: --host takes an IP address (127.0.0.1, ::1, 0.0.0.0), not '%s'\n",
                o->host);
        return 1;
    }
    if (!is_loopback(o->host) && !o->api_key && !o->insecure_no_auth) {
        fprintf(stderr,
                "error: refusing to listen on %s without --api-key (anyone who can "
                "reach it could use it); give --api-key KEY, or --insecure-no-auth\n",
                o->host);
        return 1;
    }
    return -1;
}

/* srv_log_capture's buffer: per thread (requests run on their own). */
static _Thread_local char *t_capture;
static _Thread_local size_t t_capture_cap;

void srv_log_capture(char *buf, size_t cap) {
    if (buf && cap) buf[0] = '\0';
    t_capture = buf;
    t_capture_cap = buf ? cap : 0;
}

static void capture(transcribe_log_level level, const char *msg) {
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && t_capture && t_capture_cap && !t_capture[0])
        snprintf(t_capture, t_capture_cap, "%s", msg);
}

static void log_sink(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    capture(level, msg);
    static const char *const prefix[] = {"", "[info] ", "[warn] ", "[error] ", "[debug] ", ""};
    if (level == TRANSCRIBE_LOG_LEVEL_NONE || level == TRANSCRIBE_LOG_LEVEL_DEBUG) return;
    int l = (int)level;
    fprintf(stderr, "%s%s\n", (l >= 0 && l <= 5) ? prefix[l] : "", msg);
}

static void log_quiet(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    capture(level, msg);
}

int main(int argc, char **argv) {
    srv_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    transcribe_log_set(o.quiet ? log_quiet : log_sink, NULL);

    /* SIGTERM / SIGINT are taken by sigwait below: block them before any
     * thread starts so that every thread inherits the mask */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_server s;
    memset(&s, 0, sizeof s);
    s.opts = &o;
    const char *tmp = getenv("TMPDIR");
    snprintf(s.tmp_dir, sizeof s.tmp_dir, "%s/transcribe-server-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s.tmp_dir)) {
        fprintf(stderr, "transcribe-server: cannot create a folder for uploads in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return 1;
    }
    rc = 1;
    if (!srv_pool_open(&s.pool, &o)) goto done;
    if (!srv_http_start(&s)) goto done;
    for (int i = 0; i < s.pool.n; i++) {
        fprintf(stderr, "model %s: %s (%s), %d session%s\n", s.pool.models[i].id,
                transcribe_model_arch_string(s.pool.models[i].model), o.model_path[i], o.parallel,
                o.parallel == 1 ? "" : "s");
    }
    if (s.pool.diarizer) {
        fprintf(stderr, "diarizer: %s (%s), for diarize=true\n",
                transcribe_model_arch_string(s.pool.diarizer), o.diarizer_path);
    }
    bool v6 = strchr(o.host, ':') != NULL;
    fprintf(stderr, "listening on http://%s%s%s:%d/\n", v6 ? "[" : "", o.host, v6 ? "]" : "",
            s.port);
    fflush(stderr);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    const char *signame = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (o.drain_delay_s > 0) {
        /* drain: /health fails, requests are still served, until the delay
         * ends or a second signal comes */
        atomic_store(&s.draining, 1);
        fprintf(stderr,
                "transcribe-server: %s: draining: /health answers 503, requests are still "
                "served for %d s\n",
                signame, o.drain_delay_s);
        fflush(stderr);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += o.drain_delay_s;
        for (;;) {
            struct timespec now, left;
            clock_gettime(CLOCK_MONOTONIC, &now);
            left.tv_sec = until.tv_sec - now.tv_sec;
            left.tv_nsec = until.tv_nsec - now.tv_nsec;
            if (left.tv_nsec < 0) left.tv_sec--, left.tv_nsec += 1000000000L;
            if (left.tv_sec < 0) break;
            int got = sigtimedwait(&sigs, NULL, &left);
            if (got > 0) break;
            if (got < 0 && errno == EAGAIN) break;
        }
    }
    fprintf(stderr,
            "transcribe-server: %s: refusing new requests, finishing running ones (at most %d "
            "s)\n",
            signame, o.shutdown_grace_s);
    srv_http_stop(&s, o.shutdown_grace_s);
    rc = 0;
done:
    if (s.daemon) srv_http_stop(&s, 0);
    srv_pool_close(&s.pool);
    rmdir(s.tmp_dir);
    if (rc == 0) fprintf(stderr, "transcribe-server: stopped\n");
    return rc;
}
