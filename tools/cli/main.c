/* transcribe: command-line speech-to-text over the public C API.
 *
 *   transcribe -m model.gguf [options] audio.wav [more.wav ...]
 *
 * Flags, log lines and exit codes follow transcribe-cli (docs/cli.md); on top of
 * it the tool reads any audio format the library decodes (resampling to
 * the model's rate), accepts several files, prints txt/json/srt/vtt or the
 * detailed report layout, finds a bundled model when -m is omitted, shows
 * progress for long files and turns Ctrl-C into a clean abort. */
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "lang_code.h"
#include "reason.h"
#include "same_file.h"

static volatile sig_atomic_t g_interrupted; /* set by SIGINT, read by the abort callback */
static volatile sig_atomic_t g_abortable;   /* a run is under way: Ctrl-C aborts it */
static char *volatile g_partial;            /* -o's temporary file, while it exists */

/* The first Ctrl-C of a run aborts it (the run ends and says so); a second
 * one, Ctrl-C before the run, SIGTERM and SIGHUP end the process at once,
 * and -o's temporary file goes with it (unlink is async-signal-safe). */
static void on_signal(int sig) {
    if (sig == SIGINT && g_abortable && !g_interrupted) {
        g_interrupted = 1;
        return;
    }
    char *partial = g_partial;
    if (partial) unlink(partial);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

bool cli_interrupted(void) {
    return g_interrupted != 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- logging and progress ---- */

typedef struct progress {
    bool enabled; /* --print-progress, or not -q, stderr a TTY and the input long */
    bool lines;   /* not a TTY: one line per report instead of redrawing one line */
    bool forced;  /* --print-progress: report from the start, in steps of 5 % */
    bool shown;   /* a progress line is on screen */
    const char *name;
    const struct transcribe_session *s; /* partial result: segments decoded so far */
    double audio_s, t0, last;
    double fraction; /* the library's progress callback: share of the input done */
    int last_pct;    /* the percentage last printed (-1: none yet) */
    bool chunked;    /* long audio in pieces: the library reports per piece */
} progress;

static progress *g_progress_line; /* the line to clear before a log message (CLI-only state) */

static void clear_progress(void) {
    if (g_progress_line && g_progress_line->shown) {
        fputs("\r\033[K", stderr);
        g_progress_line->shown = false;
    }
}

/* Which library messages reach stderr. */
typedef struct log_filter {
    bool errors_only; /* -q */
    bool debug;       /* TRANSCRIBE_DEBUG set */
} log_filter;

/* The capture of cli_load_capture: the first error message the library
 * logs while a file loads (the CLI loads on one thread). The caller prints
 * it on its own error line, so captured errors are not printed here: one
 * line per failure, with or without -q. */
static char *g_capture;
static size_t g_capture_cap;

static void log_cb(transcribe_log_level level, const char *msg, void *ud) {
    const log_filter *lf = ud;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && g_capture && g_capture_cap) {
        if (!g_capture[0]) snprintf(g_capture, g_capture_cap, "%s", msg);
        return;
    }
    if (lf->errors_only && level != TRANSCRIBE_LOG_LEVEL_ERROR) return;
    if (level == TRANSCRIBE_LOG_LEVEL_DEBUG && !lf->debug) return;
    const char *prefix;
    switch (level) {
    case TRANSCRIBE_LOG_LEVEL_INFO:
        prefix = "[info] ";
        break;
    case TRANSCRIBE_LOG_LEVEL_WARN:
        prefix = "[warn] ";
        break;
    case TRANSCRIBE_LOG_LEVEL_ERROR:
        prefix = "[error] ";
        break;
    case TRANSCRIBE_LOG_LEVEL_DEBUG:
        prefix = "[debug] ";
        break;
    case TRANSCRIBE_LOG_LEVEL_CONT:
        fputs(msg, stderr);
        return; /* continuation fragment */
    default:
        return;
    }
    clear_progress();
    size_t n = strlen(msg);
    fprintf(stderr, "%s%s%s", prefix, msg, (n && msg[n - 1] == '\n') ? "" : "\n");
}

static const log_filter *g_log_filter; /* the CLI's own messages obey it too */

void cli_log(transcribe_log_level level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_filter none = {false, false};
    log_cb(level, msg, (void *)(g_log_filter ? g_log_filter : &none));
}

void cli_load_capture(char *why, size_t cap) {
    if (cap) why[0] = '\0';
    g_capture = why;
    g_capture_cap = cap;
}

void cli_load_reason(char *why, size_t cap, const char *path, transcribe_status st) {
    g_capture = NULL;
    if (!cap) return;
    size_t len = strlen(why);
    while (len && why[len - 1] == '\n') why[--len] = '\0';
    /* the module's tag says nothing to a reader; the path is on the line already */
    static const char *const tags[] = {
        "audio: ", "wav: ", "model load: ", "gguf: ", "silero-vad: "};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        size_t t = strlen(tags[i]);
        if (strncmp(why, tags[i], t) == 0) memmove(why, why + t, strlen(why + t) + 1);
    }
    len = strlen(why);
    size_t pl = strlen(path);
    if (len > pl + 2 && strcmp(why + len - pl, path) == 0 && why[len - pl - 2] == ':')
        why[len - pl - 2] = '\0';
    if (!why[0]) snprintf(why, cap, "%s", transcribe_status_string(st));
}

void cli_load_error(const char *what, const char *path, const char *why, transcribe_status st) {
    if (st == TRANSCRIBE_ERR_UNSUPPORTED_ARCH && strstr(why, "'silero-vad'")) {
        fprintf(stderr,
                "error: cannot load %s %s: it is a voice-activity model; give it with "
                "--vad --vad-model %s\n",
                what, path, path);
        return;
    }
    const char *status = transcribe_status_string(st);
    const char *sep = strcmp(why, status) ? " (" : "";
    const char *end = *sep ? ")" : "";
    if (!*sep) status = "";
    if (strstr(why, path)) /* the reason names the file already */
        fprintf(stderr, "error: cannot load %s: %s%s%s%s\n", what, why, sep, status, end);
    else
        fprintf(stderr, "error: cannot load %s %s: %s%s%s%s\n", what, path, why, sep, status, end);
}

bool cli_input_cut_short(const char *path) {
    /* a header the parser refuses is logged here, and again by the load
     * that follows, which reports it: held back once */
    char ignored[8];
    cli_load_capture(ignored, sizeof ignored);
    const bool cut = cli_wav_cut_short(path);
    cli_load_reason(ignored, sizeof ignored, path, TRANSCRIBE_OK);
    return cut;
}

transcribe_status cli_audio_load(const char *path, int rate, float **pcm, int *n, char *why,
                                 size_t cap) {
    cli_load_capture(why, cap);
    transcribe_status st = transcribe_audio_load_file(path, rate, pcm, n);
    if (st == TRANSCRIBE_OK) {
        g_capture = NULL;
        return st;
    }
    cli_load_reason(why, cap, path, st);
    return st;
}

/* How far the run is, in seconds of audio: the library's progress
 * fraction (encoder and decoder of every window; for a file split into
 * pieces, the end of the last finished piece) or the end of the last
 * segment decoded so far, whichever is furthest. */
static double progress_done_s(const progress *p) {
    double done = p->fraction * p->audio_s;
    int n = p->chunked ? 0 : transcribe_n_segments(p->s);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    /* The library lets the callbacks read the result being built. */
    if (n > 0 && transcribe_get_segment(p->s, n - 1, &seg) == TRANSCRIBE_OK &&
        (double)seg.t1_ms / 1000.0 > done) {
        done = (double)seg.t1_ms / 1000.0;
    }
    return done > p->audio_s ? p->audio_s : done;
}

/* One progress report: on a terminal the line is redrawn (at most 4 times a
 * second, after the first second); otherwise a line each time, with
 * --print-progress from the start and in steps of at least 5 %. */
static void show_progress(progress *p, bool final) {
    if (!p || !p->enabled) return;
    double t = now_s();
    double done = final ? p->audio_s : progress_done_s(p);
    int pct = p->audio_s > 0 ? (int)(100.0 * done / p->audio_s) : 100;
    if (p->forced && p->lines) {
        if (pct == p->last_pct || (pct < p->last_pct + 5 && pct < 100)) return;
    } else if (final || t - p->last < 0.25 || t - p->t0 < 1.0 || pct == p->last_pct) {
        return; /* a short run shows no progress; the final report is --print-progress's */
    }
    p->last = t;
    p->last_pct = pct;
    fprintf(stderr, "%s%s: %.1f / %.1f s (%d%%), %.1f s elapsed%s",
            p->lines ? "progress: " : "\r\033[K", p->name, done, p->audio_s, pct, t - p->t0,
            p->lines ? "\n" : "");
    p->shown = !p->lines;
}

/* Polled by the library between decode steps: reports progress and turns
 * Ctrl-C into a clean abort (the partial result is still printed). */
static bool abort_cb(void *ud) {
    if (g_interrupted) return true;
    show_progress(ud, false);
    return false;
}

/* The library's progress callback (encoder layers, windows). */
static void progress_cb(float fraction, void *ud) {
    progress *p = ud;
    p->fraction = fraction;
    show_progress(p, false);
}

bool cli_write_text_file(FILE *f, const char *path, const char *text) {
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    if (n == 0 || text[n - 1] != '\n') ok = ok && fputc('\n', f) != EOF;
    ok = ok && fflush(f) == 0;
    if (!ok) fprintf(stderr, "error: cannot write %s\n", path);
    return ok;
}

/* ---- model lookup ---- */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* -m NAME: a path that exists is a file; otherwise a name in the model
 * catalogue (tools/download/catalog.h) is looked up in the model cache,
 * offline. A missing path that is not a catalogued name goes on to the
 * library, which says why it cannot open it. */
static char *model_by_name(const char *arg, bool quiet) {
    struct stat st;
    if (stat(arg, &st) == 0 || strchr(arg, '/')) return dup_str(arg);
    char path[TDL_PATH_MAX + 600], msg[1200];
    int r = tdl_resolve_cached(arg, NULL, path, sizeof path, msg, sizeof msg);
    if (r == 1) {
        if (!quiet) fprintf(stderr, "using %s from the model cache: %s\n", arg, path);
        return dup_str(path);
    }
    size_t n = strlen(arg);
    bool file_like =
        (n > 5 && !strcasecmp(arg + n - 5, ".gguf")) || (n > 4 && !strcasecmp(arg + n - 4, ".bin"));
    if (r == 0 && file_like) return dup_str(arg);
    fprintf(stderr, "error: %s\n", msg);
    return NULL;
}

/* -m, else $TRANSCRIBE_MODEL, else the first (by name) .gguf file in models/ of the
 * source tree this binary was built from. */
/* -o names none of the audio inputs, the diarizer or the VAD model (an
 * error line when it does: writing there would destroy an input). */
static bool output_not_input(const cli_opts *o) {
    const char *what = NULL, *path = NULL;
    for (int i = 0; i < o->n_audio && !what; i++)
        if (tool_same_file(o->output, o->audio[i]))
            what = "an input audio file", path = o->audio[i];
    if (!what && o->diarizer && tool_same_file(o->output, o->diarizer))
        what = "the --diarizer model";
    if (!what && o->vad_model && tool_same_file(o->output, o->vad_model)) what = "the --vad model";
    if (!what && o->batch_file && tool_same_file(o->output, o->batch_file))
        what = "the --batch list";
    if (!what) return true;
    fprintf(stderr, "error: -o %s is %s%s%s; choose another output file\n", o->output, what,
            path ? " " : "", path ? path : "");
    return false;
}

/* Where -o goes: a temporary file beside a regular (or new) file, renamed
 * over it by out_target_finish when keep is set; else the path itself. */
typedef struct {
    char *tmp; /* the temporary file's path, or NULL: write o->output in place */
    int fd;    /* the temporary file, open until out_target_stream takes it */
    bool keep;
    bool existed;  /* the path named a file before the run */
    bool live_end; /* Ctrl-C ends a live input (--stream of a pipe): the output is whole */
} out_target;

static bool out_target_open(out_target *t, const char *path) {
    t->fd = -1;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* /dev/stdout, a FIFO: in place */
        FILE *f = fopen(path, "a");
        if (!f) {
            fprintf(stderr, "error: cannot open %s for writing: %s\n", path, strerror(errno));
            return false;
        }
        fclose(f);
        return true;
    }
    const size_t n = strlen(path) + sizeof ".partial-XXXXXX";
    t->tmp = malloc(n);
    if (!t->tmp) return false;
    snprintf(t->tmp, n, "%s.partial-XXXXXX", path);
    t->fd = mkstemp(t->tmp);
    if (t->fd < 0) {
        fprintf(stderr, "error: cannot open %s for writing: %s\n", path, strerror(errno));
        free(t->tmp);
        t->tmp = NULL;
        return false;
    }
    /* the mode a plain fopen would give (mkstemp's is 0600), or the old file's */
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = (mode_t)(0666 & ~mask);
    if (stat(path, &st) == 0) {
        mode = st.st_mode & 07777;
        t->existed = true;
    }
    (void)fchmod(t->fd, mode); /* a failure leaves 0600: the file is still the user's */
    return true;
}

/* The stream the output goes to: the temporary file, or path itself. */
static FILE *out_target_stream(out_target *t, const char *path) {
    if (!t->tmp) return fopen(path, "w");
    FILE *f = fdopen(t->fd, "w");
    if (f) t->fd = -1;
    return f;
}

/* Renames the temporary file over path (keep) or removes it; false when
 * the rename fails (reported). */
static bool out_target_finish(out_target *t, const char *path) {
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    if (!t->tmp) return true;
    g_partial = NULL;
    bool ok = true;
    if (t->keep && g_interrupted && t->existed && !t->live_end) {
        /* Ctrl-C: the run's partial text does not replace a whole file;
         * it stays beside it, and the exit status says -o was not written */
        fprintf(stderr, "interrupted: %s is kept as it was; the partial output is in %s\n", path,
                t->tmp);
        ok = false;
    } else if (t->keep) {
        if (rename(t->tmp, path) != 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno));
            ok = false;
            remove(t->tmp);
        }
    } else {
        remove(t->tmp);
    }
    free(t->tmp);
    t->tmp = NULL;
    return ok;
}

static char *resolve_model(const cli_opts *o) {
    if (o->model) return model_by_name(o->model, o->quiet);
    const char *env = getenv("TRANSCRIBE_MODEL");
    if (env && *env) {
        if (!o->quiet) fprintf(stderr, "using model %s (from TRANSCRIBE_MODEL)\n", env);
        return dup_str(env);
    }
#ifdef TR_BUNDLED_MODEL_DIR
    char bundled[PATH_MAX + 300];
    if (tr_cli_bundled_model(bundled, sizeof bundled)) {
        if (!o->quiet) fprintf(stderr, "using bundled model %s\n", bundled);
        return dup_str(bundled);
    }
#endif
    fprintf(stderr,
            "error: no model: pass -m MODEL.gguf, set TRANSCRIBE_MODEL, or put a .gguf file in "
            "%s\n",
#ifdef TR_BUNDLED_MODEL_DIR
            TR_BUNDLED_MODEL_DIR
#else
            "models/"
#endif
    );
    return NULL;
}

/* ---- devices ---- */

static int list_devices(void) {
    transcribe_status st = transcribe_init_backends_default();
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr,
                "warning: transcribe_init_backends_default() returned %d; listing whatever "
                "registered\n",
                (int)st);
    }
    int n = transcribe_device_count();
    if (n <= 0) {
        fprintf(stderr, "no compute devices registered\n");
        return 1;
    }
    printf("%d compute device(s):\n", n);
    static const char *const types[] = {"cpu", "gpu", "igpu", "accel"};
    for (int i = 0; i < n; i++) {
        struct transcribe_device_info info;
        transcribe_device_info_init(&info);
        if (transcribe_device_get_info(transcribe_device_get(i), &info) != TRANSCRIBE_OK) continue;
        int t = (int)info.device_type;
        printf("  [%d] %s\n", i,
               (info.description && *info.description) ? info.description : info.name);
        printf("      name=%s  kind=%s  type=%s  id=%s\n", info.name, info.kind,
               (t >= 0 && t <= 3) ? types[t] : "?", info.device_id ? info.device_id : "(none)");
        printf("      memory: %.2f GiB total, %.2f GiB free\n",
               (double)info.memory_total / (1024.0 * 1024.0 * 1024.0),
               (double)info.memory_free / (1024.0 * 1024.0 * 1024.0));
    }
    return 0;
}

/* ---- one file ---- */

typedef struct ctx {
    const cli_opts *o;
    const char *model_path;
    struct transcribe_session *s;
    const struct transcribe_run_params *rp;
    FILE *out_file;
    int rate;
    bool supports_streaming;
    /* --batch-size over the inputs: audio already decoded by the batch
     * (owned by do_file from then on) and its row, or -1 */
    float *pcm;
    int n, batch_row;
    /* the group's batch call: its wall time, audio and size (the timings of
     * a row are the group's, shared out by audio length) */
    double group_ms;
    int64_t group_samples;
    int group_k;
} ctx;

static void print_limits(const struct transcribe_session *s) {
    struct transcribe_session_limits l;
    transcribe_session_limits_init(&l);
    if (transcribe_session_get_limits(s, &l) != TRANSCRIBE_OK) return;
    if (l.effective_max_audio_ms > 0) {
        printf("  max audio:  %.1f s", (double)l.effective_max_audio_ms / 1000.0);
        if (l.effective_n_ctx > 0) {
            printf("  (context %d tok, ~%lld MiB KV max)", (int)l.effective_n_ctx,
                   (long long)(l.max_kv_bytes >> 20));
        }
        printf("\n");
    } else if (l.effective_n_ctx > 0) {
        printf("  max audio:  ~0 s (context %d tok too small for audio + prompt)\n",
               (int)l.effective_n_ctx);
    } else {
        printf("  max audio:  unbounded (long audio chunked internally)\n");
    }
}

/* Stream extension per docs/cli.md §2.1 (first match wins). */
typedef union {
    struct transcribe_ext ext;
    struct transcribe_parakeet_stream_ext pk;
    struct transcribe_parakeet_buffered_stream_ext pb;
    struct transcribe_voxtral_realtime_stream_ext vx;
} stream_ext;

static const struct transcribe_ext *
pick_stream_ext(const cli_opts *o, const struct transcribe_model *m, stream_ext *x, bool report) {
    if (o->stream_att_right >= 0 &&
        transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_STREAM,
                                          TRANSCRIBE_EXT_KIND_PARAKEET_STREAM)) {
        transcribe_parakeet_stream_ext_init(&x->pk);
        x->pk.att_context_right = o->stream_att_right;
        if (report) printf("stream: att_context_right=%d\n", o->stream_att_right);
        return &x->pk.ext;
    }
    if ((o->stream_buf_left_ms >= 0 || o->stream_buf_chunk_ms >= 0 ||
         o->stream_buf_right_ms >= 0) &&
        transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_STREAM,
                                          TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM)) {
        transcribe_parakeet_buffered_stream_ext_init(&x->pb);
        x->pb.left_ms = o->stream_buf_left_ms;
        x->pb.chunk_ms = o->stream_buf_chunk_ms;
        x->pb.right_ms = o->stream_buf_right_ms;
        if (report) {
            printf("stream: buffered (L,C,R)_ms=(%d,%d,%d)\n", o->stream_buf_left_ms,
                   o->stream_buf_chunk_ms, o->stream_buf_right_ms);
        }
        return &x->pb.ext;
    }
    if (o->stream_voxtral_delay != -1 &&
        transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_STREAM,
                                          TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM)) {
        transcribe_voxtral_realtime_stream_ext_init(&x->vx);
        x->vx.num_delay_tokens = o->stream_voxtral_delay;
        if (report) printf("stream: voxtral num_delay_tokens=%d\n", o->stream_voxtral_delay);
        return &x->vx.ext;
    }
    return NULL;
}

static transcribe_status run_stream(const ctx *c, const float *pcm, int n, bool report) {
    const cli_opts *o = c->o;
    int chunk = o->stream_chunk_ms * (c->rate / 1000);
    if (chunk < 1) chunk = 1;
    if (report) printf("stream: chunk=%d ms (%d samples)\n", o->stream_chunk_ms, chunk);
    stream_ext x;
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.family = pick_stream_ext(o, transcribe_get_model(c->s), &x, report);
    sp.window_fallback = true; /* any model: natively, else through the window driver */
    transcribe_status st = transcribe_stream_begin(c->s, c->rp, &sp);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "stream_begin: %s\n", transcribe_status_string(st));
        return st;
    }
    for (int pos = 0, i = 0; pos < n; pos += chunk, i++) {
        int take = n - pos < chunk ? n - pos : chunk;
        struct transcribe_stream_update u;
        transcribe_stream_update_init(&u);
        st = transcribe_stream_feed(c->s, pcm + pos, take, &u);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "stream_feed[%d]: %s\n", i, transcribe_status_string(st));
            return st;
        }
        if (report) {
            printf("  feed[%2d]: input=%lld ms buffered=%lld ms", i, (long long)u.input_received_ms,
                   (long long)u.buffered_ms);
            if (u.result_changed) printf("  partial=\"%s\"", transcribe_full_text(c->s));
            printf("\n");
        }
    }
    struct transcribe_stream_update fin;
    transcribe_stream_update_init(&fin);
    st = transcribe_stream_finalize(c->s, &fin);
    if (report) {
        printf("  finalize: status=%s revision=%d input=%lld ms committed=%lld ms\n",
               transcribe_status_string(st), (int)fin.revision, (long long)fin.input_received_ms,
               (long long)fin.audio_committed_ms);
    }
    return st;
}

/* '-': standard input, copied to a temporary file (the decoders read files);
 * why gets the reason of a failure (cli_audio_load). */
static transcribe_status load_stdin(int rate, float **pcm, int *n, size_t *n_bytes, char *why,
                                    size_t why_cap) {
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/transcribe-stdin-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "error: cannot create a temporary file for standard input: %s\n",
                strerror(errno));
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    char buf[65536];
    size_t got;
    bool ok = true;
    while (ok && (got = fread(buf, 1, sizeof buf, stdin)) > 0) {
        ok = write(fd, buf, got) == (ssize_t)got;
        *n_bytes += got;
    }
    if (ferror(stdin) || close(fd) != 0) ok = false;
    transcribe_status st = TRANSCRIBE_ERR_INVALID_ARG;
    if (ok && *n_bytes > 0) st = cli_audio_load(tmp, rate, pcm, n, why, why_cap);
    unlink(tmp);
    return st;
}

/* DIR/<input name without its extension>.<ext>; standard input is "stdin". */
static bool output_path(const char *dir, const char *input, cli_format fmt, char *buf, size_t cap) {
    static const char *const ext[] = {"txt", "json", "srt", "vtt"};
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    if (strcmp(input, "-") == 0) base = "stdin";
    const char *dot = strrchr(base, '.');
    int stem = (int)(dot && dot != base ? (size_t)(dot - base) : strlen(base));
    int n = snprintf(buf, cap, "%s/%.*s.%s", dir, stem, base, ext[fmt]);
    return n > 0 && (size_t)n < cap;
}

typedef struct named_input {
    char *file; /* DIR/<stem>.txt */
    int index;  /* in the caller's list */
} named_input;

static int by_file_then_index(const void *a, const void *b) {
    const named_input *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

typedef struct file_id {
    dev_t dev;
    ino_t ino;
    int index; /* in the inputs, or -1: a file the run reads besides them */
} file_id;

static int by_id(const void *a, const void *b) {
    const file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

/* Two inputs with one output name (neighbours once sorted: n log n for a
 * batch list of thousands). */
static bool names_clash(const char *dir, const char *const *inputs, int n) {
    named_input *v = calloc((size_t)n, sizeof *v);
    if (!v) {
        fprintf(stderr, "error: out of memory\n");
        return true;
    }
    char file[4096];
    int m = 0;
    bool clash = false;
    for (int i = 0; i < n && !clash; i++) {
        if (!output_path(dir, inputs[i], CLI_FMT_TXT, file, sizeof file)) continue;
        if (!(v[m].file = strdup(file))) {
            fprintf(stderr, "error: out of memory\n");
            clash = true;
            break;
        }
        v[m++].index = i;
    }
    if (!clash) qsort(v, (size_t)m, sizeof *v, by_file_then_index);
    for (int k = 1; k < m && !clash; k++) {
        if (strcmp(v[k - 1].file, v[k].file) != 0) continue;
        fprintf(stderr,
                "error: --output-dir: '%s' and '%s' would write the same files (%.*s.*); "
                "rename one or run them separately\n",
                inputs[v[k - 1].index], inputs[v[k].index], (int)(strlen(v[k].file) - 4),
                v[k].file);
        clash = true;
    }
    for (int k = 0; k < m; k++) free(v[k].file);
    free(v);
    return clash;
}

/* An output file that already exists and is a file the run reads (an
 * input, the model, the batch list...): DIR/x.json for the input x.json. */
static bool output_is_input(const cli_opts *o, const char *const *inputs, int n) {
    const char *others[] = {o->model, o->diarizer, o->vad_model, o->batch_file};
    const int n_others = (int)(sizeof others / sizeof others[0]);
    file_id *ids = calloc((size_t)n + (size_t)n_others, sizeof *ids);
    if (!ids) {
        fprintf(stderr, "error: out of memory\n");
        return true;
    }
    int m = 0;
    struct stat st;
    for (int i = 0; i < n + n_others; i++) {
        const char *p = i < n ? inputs[i] : others[i - n];
        if (p && stat(p, &st) == 0) ids[m++] = (file_id){st.st_dev, st.st_ino, i < n ? i : -1};
    }
    qsort(ids, (size_t)m, sizeof *ids, by_id);
    bool bad = false;
    char file[4096];
    for (int i = 0; i < n && !bad; i++) {
        for (int k = CLI_FMT_TXT; k <= CLI_FMT_VTT && !bad; k++) {
            if (!(o->output_formats & (1u << k)) ||
                !output_path(o->output_dir, inputs[i], (cli_format)k, file, sizeof file) ||
                stat(file, &st) != 0)
                continue;
            const file_id key = {st.st_dev, st.st_ino, 0};
            const file_id *hit = bsearch(&key, ids, (size_t)m, sizeof *ids, by_id);
            if (!hit) continue;
            fprintf(stderr,
                    "error: --output-dir: %s (the output of '%s') is %s%s%s, which the run reads; "
                    "choose another folder\n",
                    file, inputs[i],
                    hit->index >= 0 ? "the input '"
                                    : "a file given with -m, "
                                      "--diarizer, --vad-model or "
                                      "--batch",
                    hit->index >= 0 ? inputs[hit->index] : "", hit->index >= 0 ? "'" : "");
            bad = true;
        }
    }
    free(ids);
    return bad;
}

bool cli_output_dir_refused(const cli_opts *o, const char *const *inputs, int n) {
    if (!o->output_dir || n < 1) return false;
    return (n > 1 && names_clash(o->output_dir, inputs, n)) || output_is_input(o, inputs, n);
}

/* --output-dir before anything runs: the folder is made (with its parents)
 * when missing; two inputs whose files would take the same names
 * (a/x.wav, b/x.flac), and an output file that is a file the run reads
 * (the input x.json), are refused: no output overwrites an input or
 * another run's output. */
static bool prepare_output_dir(const cli_opts *o) {
    if (!o->output_dir) return true;
    if (cli_output_dir_refused(o, (const char *const *)o->audio, o->n_audio)) return false;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s", o->output_dir);
    if (n <= 0 || (size_t)n >= sizeof path) {
        fprintf(stderr, "error: --output-dir: path too long\n");
        return false;
    }
    for (char *p = path + 1;; p++) { /* each parent, then the folder itself */
        bool end = *p == '\0';
        if (*p != '/' && !end) continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "error: --output-dir: cannot create %s: %s\n", path, strerror(errno));
            return false;
        }
        if (end) break;
        *p = '/';
    }
    struct stat sb;
    if (stat(o->output_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "error: --output-dir: %s is not a folder\n", o->output_dir);
        return false;
    }
    return true;
}

/* Reads one input at the model's rate under the input rule (README): a
 * directory or an empty file is an error; a file that decodes to no samples
 * is an error; anything else is used, however short (a warning under
 * 0.1 s). Returns false (the reason printed) or *pcm / *n to free. */
static bool load_input(const ctx *c, const char *path, float **out_pcm, int *out_n) {
    float *pcm = NULL;
    int n = 0;
    char why[512] = "";
    transcribe_status st;
    if (strcmp(path, "-") == 0) {
        size_t n_bytes = 0;
        st = load_stdin(c->rate, &pcm, &n, &n_bytes, why, sizeof why);
        if (n_bytes == 0) { /* nothing to decode: say so, as for an empty file */
            fprintf(stderr, "error: cannot read audio '-': standard input is empty (0 bytes)\n");
            return false;
        }
    } else {
        /* The input rule (README): a directory or an empty file is an error;
         * a file that decodes to no samples is an error; anything else is
         * transcribed, however short (a warning under 0.1 s). */
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "error: cannot read audio '%s': it is a directory\n", path);
            return false;
        }
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) {
            fprintf(stderr, "error: cannot read audio '%s': the file is empty (0 bytes)\n", path);
            return false;
        }
        if (cli_input_cut_short(path)) { /* the server's rule too (wav_cut.h) */
            fprintf(stderr, "error: cannot read audio '%s': %s\n", path, CLI_WAV_CUT_SHORT_MSG);
            return false;
        }
        st = cli_audio_load(path, c->rate, &pcm, &n, why, sizeof why);
    }
    if (st == TRANSCRIBE_OK && n <= 0) {
        transcribe_audio_free(pcm);
        fprintf(stderr, "error: cannot read audio '%s': no samples\n", path);
        return false;
    }
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "error: cannot read audio '%s': %s\n", path, why);
        return false;
    }
    if (n < c->rate / 10) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN, "%s: only %d sample%s (%.3f s) of audio", path, n,
                n == 1 ? "" : "s", (double)n / (double)c->rate);
    }
    *out_pcm = pcm;
    *out_n = n;
    return true;
}

/* --detect-language: the spoken language of the input's first 30 s and
 * the model's probability for it ("n/a" / null where the family gives
 * none), one line per input (or one JSON object with -f json). */
static int do_detect(const ctx *c, const char *path, bool several) {
    float *pcm = NULL;
    int n = 0;
    if (!load_input(c, path, &pcm, &n)) return 1;
    const char *code = NULL;
    float prob = NAN;
    transcribe_status st = transcribe_detect_language(c->s, pcm, n, &code, &prob);
    transcribe_audio_free(pcm);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "error: %s: language detection failed: %s\n", path,
                transcribe_status_string(st));
        return 1;
    }
    if (c->o->format == CLI_FMT_JSON) {
        printf("{\"file\":");
        cli_json_str(stdout, path);
        printf(",\"language\":");
        cli_json_str(stdout, code);
        if (isnan(prob))
            printf(",\"probability\":null}\n");
        else
            printf(",\"probability\":%.4f}\n", (double)prob);
        return 0;
    }
    if (several) printf("%s: ", path);
    if (isnan(prob))
        printf("%s (probability n/a: this model names the language without a score)\n", code);
    else
        printf("%s (p = %.4f)\n", code, (double)prob);
    return 0;
}

bool cli_write_output_dir(const cli_opts *o, const char *path, const cli_source *src,
                          bool have_result, const char *model, double duration_s,
                          transcribe_status st) {
    bool all_ok = true;
    for (int k = CLI_FMT_TXT; o->output_dir && k <= CLI_FMT_VTT; k++) {
        if (!(o->output_formats & (1u << k))) continue;
        char file[4096];
        if (!output_path(o->output_dir, path, (cli_format)k, file, sizeof file)) {
            fprintf(stderr, "error: output path too long for '%s'\n", path);
            all_ok = false;
            continue;
        }
        FILE *f = fopen(file, "w");
        bool ok = f && cli_emit(f, (cli_format)k, src, have_result, path, model, duration_s, st,
                                o->json_tokens, false);
        if (f && fclose(f) != 0) ok = false;
        if (!ok) {
            fprintf(stderr, "error: cannot write %s: %s\n", file, strerror(errno));
            all_ok = false;
        } else if (!o->quiet) {
            cli_log(TRANSCRIBE_LOG_LEVEL_INFO, "wrote %s", file);
        }
    }
    return all_ok;
}

/* Transcribes one file and prints it in the chosen format. Returns the
 * file's exit code (0 / 1). */
static int do_file(const ctx *c, const char *path, bool several) {
    const cli_opts *o = c->o;
    bool report = o->format == CLI_FMT_REPORT;
    float *pcm = c->pcm; /* decoded and transcribed by a --batch-size group, or NULL */
    int n = c->n;
    transcribe_status st;
    if (!pcm && !load_input(c, path, &pcm, &n)) return 1;
    double duration = (double)n / (double)c->rate;
    if (report) {
        printf("audio: %s\n  samples:    %d\n  duration:   %.3f s\n  sample rate %d Hz mono "
               "float32\n",
               path, n, duration, c->rate);
        const struct transcribe_model *m = transcribe_get_model(c->s);
        printf("model: %s -> %s\n", c->model_path, transcribe_status_string(TRANSCRIBE_OK));
        printf("  backend:    %s\n", transcribe_model_backend(m));
        const char *name = transcribe_model_meta_val_str(m, "general.name");
        const char *lic = transcribe_model_meta_val_str(m, "general.license");
        if (*name) printf("  name:       %s\n", name);
        if (*lic) printf("  license:    %s\n", lic);
        print_limits(c->s);
    }
    if (o->stream_chunk_ms > 0 && !c->supports_streaming) {
        fprintf(stderr, "stream: model does not advertise supports_streaming; use a "
                        "streaming-capable model or drop --stream-chunk-ms\n");
        transcribe_audio_free(pcm);
        return 1;
    }
    /* Long audio: the library splits the file at pauses (run params
     * chunking, chunk_max_ms, chunk_batch from --chunk, --chunk-max-s,
     * --batch-size); a split file prints what its pieces gave. */
    bool split =
        o->stream_chunk_ms <= 0 && c->batch_row < 0 && transcribe_run_would_chunk(c->s, n, c->rp);
    progress prog = {0};
    prog.lines = !isatty(STDERR_FILENO);
    prog.forced = o->print_progress;
    prog.enabled = o->print_progress || (!o->quiet && !prog.lines && duration > 30.0);
    prog.last_pct = -1;
    prog.chunked = split;
    const char *base = strrchr(path, '/');
    prog.name = base ? base + 1 : path;
    prog.audio_s = duration;
    prog.s = c->s;
    prog.t0 = prog.last = now_s();
    g_progress_line = &prog;
    transcribe_set_abort_callback(c->s, abort_cb, &prog);
    transcribe_set_progress_callback(c->s, progress_cb, &prog);
    fflush(stdout);
    cli_result res;
    cli_result_init(&res);
    int runs = 1;
    if (c->batch_row >= 0) {
        st = transcribe_batch_status(c->s, c->batch_row);
    } else if (split) {
        st = transcribe_run(c->s, pcm, n, c->rp); /* once: --repeat times whole files */
    } else if (o->stream_chunk_ms > 0) {
        st = run_stream(c, pcm, n, report);
    } else {
        for (runs = 0; runs < o->repeat;) {
            st = transcribe_run(c->s, pcm, n, c->rp);
            runs++;
            if (st != TRANSCRIBE_OK) break;
        }
    }
    /* per run: over the runs made (Ctrl-C may have ended -r N early) */
    double run_ms = (now_s() - prog.t0) * 1000.0 / runs;
    if (st == TRANSCRIBE_OK) show_progress(&prog, true);
    clear_progress();
    g_progress_line = NULL;
    transcribe_set_abort_callback(c->s, NULL, NULL);
    transcribe_set_progress_callback(c->s, NULL, NULL);
    transcribe_audio_free(pcm);
    if (g_interrupted) fprintf(stderr, "interrupted: printing the partial transcript\n");

    /* A split file has a result (what its pieces gave) whatever the status. */
    bool have_result = split || st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
                       st == TRANSCRIBE_ERR_ABORTED;
    if (have_result) cli_result_copy(&res, c->s, c->batch_row);
    cli_result_clamp(&res, (int64_t)llround(duration * 1000.0));
    if (have_result && !o->language && res.language[0]) {
        /* A model that cannot detect did not detect: it used its default. */
        struct transcribe_capabilities lc;
        transcribe_capabilities_init(&lc);
        bool detects =
            transcribe_model_get_capabilities(transcribe_get_model(c->s), &lc) == TRANSCRIBE_OK &&
            lc.supports_language_detect;
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO,
                detects ? "%s: detected language: %s" : "%s: using %s (model default)", path,
                res.language);
    }
    if (have_result && !split && c->rp->vad_model && res.n_segs == 0 && !res.text[0])
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO, "%s: no speech found (--vad): nothing to transcribe",
                path);
    res.shape = o->shape;
    if (res.oom) {
        fprintf(stderr, "error: out of memory while collecting the result\n");
        if (st == TRANSCRIBE_OK) st = TRANSCRIBE_ERR_OOM;
    }
    if (report)
        printf("run: %s\n", transcribe_status_string(st));
    else if (st != TRANSCRIBE_OK) {
        /* the run's own reason on the last line too (it was logged above, but
         * the last line is what a user reads and a script greps) */
        const char *why = c->s ? tool_reason(transcribe_session_last_error(c->s)) : NULL;
        const char *what = transcribe_status_string(st);
        /* a run that logged no error of its own (a long file whose pieces
         * kept partial text) holds the status text itself: say it once */
        if (why && why[0] && strcmp(why, what) != 0)
            fprintf(stderr, "error: %s: %s: %s\n", path, what, why);
        else
            fprintf(stderr, "error: %s: %s\n", path, what);
    }
    int rc = st == TRANSCRIBE_OK ? 0 : 1;
    const char *model = c->model_path;
    cli_source src = {c->s, c->batch_row, &res}; /* a split file's too: joined by the library */
    if (!cli_emit(stdout, o->format, &src, have_result, path, model, duration, st, o->json_tokens,
                  several)) {
        rc = 1; /* reported once, at exit */
    }
    if (c->out_file && !cli_emit(c->out_file, o->format, &src, have_result, path, model, duration,
                                 st, o->json_tokens, several)) {
        fprintf(stderr, "error: cannot write %s: %s\n", o->output, strerror(errno));
        rc = 1;
    }
    if (!cli_write_output_dir(o, path, &src, have_result, model, duration, st)) rc = 1;
    fflush(stdout); /* keep stdout and the stderr timings line in order on a terminal */
    /* The stage timings (transcribe-cli's line), then the run's wall time
     * and its real-time factor (wall time / audio length; < 1 is faster
     * than real time). */
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    transcribe_get_timings(c->s, &tm);
    char pieces[64] = "";
    if (split) snprintf(pieces, sizeof pieces, "%d pieces: ", res.n_chunks);
    double mel = (double)tm.mel_ms, enc = (double)tm.encode_ms, dec = (double)tm.decode_ms;
    if (c->batch_row >= 0 && c->group_samples > 0) {
        /* One batch call ran the group: its stage times and wall time are
         * the group's, shared out by this file's part of the group's audio
         * (the files' lines add up to the group's figures). */
        double share = (double)n / (double)c->group_samples;
        mel *= share, enc *= share, dec *= share;
        run_ms = c->group_ms * share;
        snprintf(pieces, sizeof pieces, "batch of %d, shared by length: ", c->group_k);
    }
    if (!split || res.n_chunks > 0) {
        cli_log(TRANSCRIBE_LOG_LEVEL_INFO,
                "timings: %sload=%.2f ms  mel=%.2f ms  encode=%.2f ms  decode=%.2f ms  total=%.2f "
                "ms  rtf=%.4f",
                pieces, (double)tm.load_ms, mel, enc, dec, run_ms,
                duration > 0 ? run_ms / (duration * 1000.0) : 0.0);
    }
    cli_result_free(&res);
    if (report && !split) { /* a split file printed its summed timings */
        struct transcribe_timings t;
        transcribe_timings_init(&t);
        if (transcribe_get_timings(c->s, &t) == TRANSCRIBE_OK) {
            double total = (double)t.mel_ms + (double)t.encode_ms + (double)t.decode_ms;
            if (total > 0) {
                printf("  realtime:   %.0fx (%.1f ms for %.1f s)\n", duration * 1000.0 / total,
                       total, duration);
            }
        }
    }
    fflush(stdout);
    return rc;
}

/* --batch-size N: up to N inputs in one transcribe_run_batch call, each
 * then printed as do_file prints it. A group holding standard input, an
 * unreadable file or one the chunk rule would split runs file by file
 * instead (returns false, nothing done). */
static bool run_group(ctx *c, const char *const *paths, int k, int *rc) {
    float **pcm = calloc((size_t)k, sizeof *pcm);
    int *n = calloc((size_t)k, sizeof *n);
    bool ok = pcm && n;
    for (int i = 0; ok && i < k; i++) {
        ok = strcmp(paths[i], "-") != 0 && !cli_input_cut_short(paths[i]) &&
             transcribe_audio_load_file(paths[i], c->rate, &pcm[i], &n[i]) == TRANSCRIBE_OK &&
             n[i] > 0 && !transcribe_run_would_chunk(c->s, n[i], c->rp);
    }
    if (ok) {
        int64_t samples = 0;
        for (int i = 0; i < k; i++) samples += n[i];
        double t0 = now_s();
        transcribe_status st = transcribe_run_batch(c->s, (const float *const *)pcm, n, k, c->rp);
        double group_ms = (now_s() - t0) * 1000.0;
        if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) {
            fprintf(stderr, "error: batch of %d: %s\n", k, transcribe_status_string(st));
            *rc = 1;
        }
        for (int i = 0; i < k; i++) {
            ctx one = *c;
            one.pcm = pcm[i];
            one.n = n[i];
            one.batch_row = i;
            one.group_ms = group_ms;
            one.group_samples = samples;
            one.group_k = k;
            pcm[i] = NULL; /* do_file frees it */
            if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_ABORTED) {
                transcribe_audio_free(one.pcm);
                continue;
            }
            if (do_file(&one, paths[i], true) != 0) *rc = 1;
        }
    }
    for (int i = 0; pcm && i < k; i++) transcribe_audio_free(pcm[i]);
    free(pcm);
    free(n);
    return ok;
}

/* ---- main ---- */

static bool in_list(const char *code, const char *const *list, int n) {
    for (int i = 0; i < n; i++) {
        if (list[i] && strcmp(list[i], code) == 0) return true;
    }
    return false;
}

/* "en, de, fr, ..." on stderr: the codes a flag could have named. */
static void print_codes(const char *const *list, int n) {
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", list[i] ? list[i] : "");
    fputc('\n', stderr);
}

/* The options checked against what the model says it does, before any
 * audio is read: a bad language code is an error that lists the valid
 * ones; a flag the model would ignore gets one warning. Returns false on an
 * error. */
static bool check_model_options(const cli_opts *o, const struct transcribe_model *m,
                                const struct transcribe_capabilities *caps) {
    if (o->language && caps->n_languages > 0 &&
        !in_list(o->language, caps->languages, caps->n_languages)) {
        fprintf(stderr,
                "error: -l %s: unsupported language; this model's languages are: ", o->language);
        print_codes(caps->languages, caps->n_languages);
        return false;
    }
    if (o->detect_language && !caps->supports_language_detect) {
        fprintf(stderr, "error: --detect-language: this model cannot detect the language");
        if (caps->n_languages == 1) {
            fprintf(stderr, "; it transcribes one language: %s\n", caps->languages[0]);
        } else if (caps->n_languages > 1) {
            fprintf(stderr, "; it is told one with -l CODE, from: ");
            print_codes(caps->languages, caps->n_languages);
        } else {
            fputc('\n', stderr);
        }
        return false;
    }
    if (o->language_auto && !caps->supports_language_detect && caps->n_languages > 1) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "-l auto: this model cannot detect the language; it uses its default (pass -l "
                "CODE to choose)");
    }
    if (o->translate && !caps->supports_translate) {
        fprintf(stderr, "error: %s: this model does not translate\n",
                o->target_language ? "--target-language" : "-t");
        return false;
    }
    if (o->target_language && caps->n_translate_target_languages > 0 &&
        !in_list(o->target_language, caps->translate_target_languages,
                 caps->n_translate_target_languages)) {
        fprintf(stderr,
                "error: --target-language %s: unsupported language; this model translates into: ",
                o->target_language);
        print_codes(caps->translate_target_languages, caps->n_translate_target_languages);
        return false;
    }
    if (o->target_language && caps->n_translate_target_languages == 0) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--target-language %s: this model has one fixed translation target; the flag is "
                "ignored",
                o->target_language);
    }
    if (o->diarize == TRANSCRIBE_DIARIZE_MODE_ON && !o->diarizer &&
        !transcribe_model_supports(m, TRANSCRIBE_FEATURE_DIARIZATION)) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--diarize: this model does not tell speakers apart; --diarizer FILE (a "
                "diarization model such as Sortformer) labels any model's words and segments");
    }
    if (o->n_vocab > 0 && !transcribe_model_supports(m, TRANSCRIBE_FEATURE_VOCABULARY)) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--vocabulary: this model takes no vocabulary hints; the %d term%s ignored",
                o->n_vocab, o->n_vocab == 1 ? " is" : "s are");
    }
    if (o->spec_k_drafts > 0 && !caps->supports_spec_decode) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--spec-k-drafts %d: this model does not decode token by token; the flag is "
                "ignored",
                (int)o->spec_k_drafts);
    }
    if (o->whisper_any && !transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_RUN,
                                                             TRANSCRIBE_EXT_KIND_WHISPER_RUN)) {
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--initial-prompt/--temperature/--condition-on-prev-tokens/--prompt-condition "
                "are Whisper options; this model ignores them");
    }
    return true;
}

/* Every write to stdout is buffered: the final flush says whether all of it
 * arrived (a full disk, a closed pipe). */
static int check_stdout(int rc) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "error: cannot write to standard output: %s\n",
                errno ? strerror(errno) : "write error");
        return 1;
    }
    return rc;
}

static const char *backend_name(transcribe_backend_request b) {
    static const char *const names[] = {"auto",      "cpu",  "metal", "vulkan",
                                        "cpu_accel", "cuda", "rocm"};
    int k = (int)b;
    return k >= 0 && k < 7 ? names[k] : "?";
}

static void build_params(const cli_opts *o, const struct transcribe_model *m,
                         struct transcribe_run_params *rp, struct transcribe_whisper_run_ext *wx) {
    transcribe_run_params_init(rp);
    rp->task = o->translate ? TRANSCRIBE_TASK_TRANSLATE : TRANSCRIBE_TASK_TRANSCRIBE;
    rp->timestamps = o->timestamps;
    rp->pnc = o->pnc;
    rp->itn = o->itn;
    /* a model without diarization was warned about (check_model_options):
     * the run need not say it again */
    rp->diarize = transcribe_model_supports(m, TRANSCRIBE_FEATURE_DIARIZATION)
                      ? o->diarize
                      : TRANSCRIBE_DIARIZE_MODE_DEFAULT;
    rp->language = o->language;
    rp->target_language = o->target_language;
    rp->keep_special_tags = o->raw_tokens;
    rp->spec_k_drafts = o->spec_k_drafts;
    rp->chunking = o->chunk == CLI_CHUNK_ON    ? TRANSCRIBE_CHUNKING_ON
                   : o->chunk == CLI_CHUNK_OFF ? TRANSCRIBE_CHUNKING_OFF
                                               : TRANSCRIBE_CHUNKING_AUTO;
    rp->chunk_max_ms = (int64_t)o->chunk_max_s * 1000; /* 0: the library's 30 s */
    rp->chunk_batch = o->batch_size;                   /* 0: the family's */
    /* hints only where the model honours them (one warning above, not one per run) */
    if (o->n_vocab > 0 && transcribe_model_supports(m, TRANSCRIBE_FEATURE_VOCABULARY)) {
        rp->vocabulary = o->vocab;
        rp->n_vocabulary = o->n_vocab;
    }
    /* Whisper knobs attach only where the model takes them (docs/cli.md §2.1). */
    if (o->whisper_any && transcribe_model_accepts_ext_kind(m, TRANSCRIBE_EXT_SLOT_RUN,
                                                            TRANSCRIBE_EXT_KIND_WHISPER_RUN)) {
        transcribe_whisper_run_ext_init(wx);
        if (o->initial_prompt && *o->initial_prompt) wx->initial_prompt = o->initial_prompt;
        wx->condition_on_prev_tokens = o->condition_on_prev;
        if (o->temperature_given) wx->temperature = o->temperature;
        wx->prompt_condition = o->prompt_condition;
        rp->family = &wx->ext;
    }
}

int main(int argc, char **argv) {
    /* A reader that goes away (| head) makes writes fail with EPIPE, which
     * check_stdout reports (message, exit 1), instead of a silent death by
     * SIGPIPE (exit 141). */
    signal(SIGPIPE, SIG_IGN);
    cli_opts o;
    int rc = cli_parse(argc, argv, &o);
    if (rc >= 0) {
        free(o.audio);
        return rc;
    }
    if (o.version) {
        printf("transcribe %s (library %s, commit %s)\n", TRANSCRIBE_VERSION, transcribe_version(),
               transcribe_version_commit());
        free(o.audio);
        return check_stdout(0);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (o.threads > 4 * cores) {
        if (!o.quiet)
            fprintf(stderr, "warning: --threads %d is more than 4x the %ld cores; using %ld\n",
                    o.threads, cores, 4 * cores);
        o.threads = (int)(4 * cores);
    }
    /* a target language only means something for translation; said once
     * the model has taken the target (check_model_options) */
    const bool translate_implied = o.target_language && !o.translate;
    if (translate_implied) o.translate = true;
    /* Unlike transcribe-cli, -q keeps only error lines: our formats are meant
     * to be piped, so the library's info lines should not interleave. */
    const char *dbg = getenv("TRANSCRIBE_DEBUG");
    log_filter lf = {o.quiet, dbg && *dbg && *dbg != '0'};
    transcribe_log_set(log_cb, &lf);
    g_log_filter = &lf;
    if (o.list_devices) {
        rc = list_devices();
        free(o.audio);
        return rc;
    }
    if (!prepare_output_dir(&o)) {
        free(o.audio);
        return 1;
    }
    /* -o: never one of the inputs; a regular file (or a new one) is written
     * as a temporary file beside it and renamed over it at the end, so a
     * run that fails leaves it as it was and a file being read (an input,
     * the mapped model) is never truncated under the reader; a device or
     * FIFO is written in place. */
    FILE *out_file = NULL;
    out_target ot = {0};
    if (o.output && (!output_not_input(&o) || !out_target_open(&ot, o.output))) {
        free(o.audio);
        return 1;
    }
    g_partial = ot.tmp;
    if (o.live && o.n_audio == 1) { /* a live input's Ctrl-C is its end, not a cut */
        struct stat in_st;
        const char *in = o.audio[0];
        ot.live_end = !strcmp(in, "-") || stat(in, &in_st) != 0 || !S_ISREG(in_st.st_mode);
    }
    catch_signals();
    char *model_path = cli_vocab_load(&o) ? resolve_model(&o) : NULL;
    if (model_path && o.output && tool_same_file(o.output, model_path)) {
        fprintf(stderr, "error: -o %s is the model file; choose another output file\n", o.output);
        free(model_path);
        model_path = NULL;
    }
    struct transcribe_model *model = NULL;
    struct transcribe_vad_model *vad_model = NULL;
    struct transcribe_model *diarizer = NULL;
    char *diarizer_path = NULL; /* --diarizer resolved: a file, or a cached catalogue name */
    struct transcribe_session *s = NULL;
    rc = 1;
    if (!model_path) goto done;

    if (o.backend != TRANSCRIBE_BACKEND_AUTO && !transcribe_backend_available(o.backend)) {
        fprintf(stderr, "error: --backend %s is not available in this build (try --backend cpu)\n",
                backend_name(o.backend));
        goto done;
    }
    struct transcribe_model_load_params lp;
    transcribe_model_load_params_init(&lp);
    lp.backend = o.backend;
    if (o.device >= 0) {
        lp.device = transcribe_device_get(o.device);
        if (!lp.device) {
            fprintf(stderr, "error: --device index %d is not available\n", o.device);
            goto done;
        }
    }
    char why[512];
    cli_load_capture(why, sizeof why);
    transcribe_status st = transcribe_model_load_file(model_path, &lp, &model);
    cli_load_reason(why, sizeof why, model_path, st);
    if (st != TRANSCRIBE_OK) {
        if (o.format == CLI_FMT_REPORT && !o.batch_file) {
            printf("model: %s -> %s\n", model_path, transcribe_status_string(st));
        }
        cli_load_error("model", model_path, why, st);
        goto done;
    }
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(model, &caps);
    if (o.language) o.language = tool_lang_code(o.language, caps.languages, caps.n_languages);
    if (o.target_language)
        o.target_language = tool_lang_code(o.target_language, caps.translate_target_languages,
                                           caps.n_translate_target_languages);
    if (!check_model_options(&o, model, &caps)) goto done;
    if (translate_implied && !o.quiet)
        fprintf(stderr, "[info] --target-language %s: translating (as with -t)\n",
                o.target_language);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = o.threads;
    sp.kv_type = o.kv_type;
    sp.n_ctx = o.n_ctx;
    st = transcribe_session_init(model, &sp, &s);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "context init: %s\n", transcribe_status_string(st));
        goto done;
    }
    struct transcribe_run_params rp;
    struct transcribe_whisper_run_ext wx;
    build_params(&o, model, &rp, &wx);
    if (cli_vad_load(&o, &vad_model) != 0) {
        rc = 1;
        goto done;
    }
    rp.vad_model = vad_model; /* NULL without --vad */
    rp.vad_params = o.vad ? &o.vad_params : NULL;
    if (o.diarizer && (o.live || o.stream_chunk_ms > 0)) {
        /* run_params.diarizer labels whole runs; streams ignore it */
        cli_log(TRANSCRIBE_LOG_LEVEL_WARN,
                "--diarizer: a streamed run (--stream, --stream-chunk-ms) has no speaker "
                "labels; the flag is ignored");
    } else if (o.diarizer) {
        /* a file, or a catalogue name in the model cache, as -m takes */
        if (!(diarizer_path = model_by_name(o.diarizer, o.quiet))) goto done;
        cli_load_capture(why, sizeof why);
        st = transcribe_model_load_file(diarizer_path, &lp, &diarizer);
        cli_load_reason(why, sizeof why, diarizer_path, st);
        if (st != TRANSCRIBE_OK) {
            cli_load_error("diarizer", diarizer_path, why, st);
            goto done;
        }
        if (!transcribe_model_supports(diarizer, TRANSCRIBE_FEATURE_DIARIZATION)) {
            fprintf(stderr, "error: --diarizer %s is not a diarization model\n", o.diarizer);
            goto done;
        }
        rp.diarizer = diarizer;
    }
    if (o.output && !(out_file = out_target_stream(&ot, o.output))) {
        fprintf(stderr, "error: cannot open %s for writing: %s\n", o.output, strerror(errno));
        goto done;
    }

    g_abortable = 1; /* from here the first Ctrl-C aborts the run (on_signal) */

    if (o.batch_file) {
        rc = cli_run_batch(&o, s, &rp, out_file, model_path);
        goto done;
    }
    if (o.live) {
        rc = cli_run_live(&o, s, &rp, o.audio[0], out_file, model_path);
        goto done;
    }
    ctx c = {&o,
             model_path,
             s,
             &rp,
             out_file,
             caps.native_sample_rate > 0 ? caps.native_sample_rate : 16000,
             caps.supports_streaming || caps.supports_window_streaming,
             NULL,
             0,
             -1,
             0,
             0,
             0};
    rc = 0;
    int group = o.batch_size > 1 && o.stream_chunk_ms <= 0 && o.n_audio > 1 && !o.detect_language
                    ? o.batch_size
                    : 1;
    for (int i = 0; i < o.n_audio && !g_interrupted; i += group) {
        if (group > 1 &&
            run_group(&c, o.audio + i, o.n_audio - i < group ? o.n_audio - i : group, &rc)) {
            continue;
        }
        int (*each)(const ctx *, const char *, bool) = o.detect_language ? do_detect : do_file;
        for (int k = i; k < i + group && k < o.n_audio && !g_interrupted; k++) {
            if (each(&c, o.audio[k], o.n_audio > 1) != 0) rc = 1;
        }
    }
    if (g_interrupted) rc = 1;

done:
    transcribe_session_free(s);
    transcribe_vad_model_free(vad_model);
    transcribe_model_free(diarizer);
    transcribe_model_free(model);
    free(model_path);
    free(diarizer_path);
    if (out_file) {
        const bool wrote = ftell(out_file) > 0;
        if (fclose(out_file) != 0) {
            fprintf(stderr, "error: cannot write %s: %s\n", o.output, strerror(errno));
            rc = 1;
            ot.keep = false;
        } else {
            ot.keep = rc == 0 || wrote; /* a partly failed run keeps what it wrote */
        }
    }
    if (o.output && !out_target_finish(&ot, o.output)) rc = 1;
    free(o.audio);
    cli_vocab_free(&o);
    return check_stdout(rc);
}
