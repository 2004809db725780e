#include "util/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The log sink is the only global mutable state in the library. The state
 * word is written last so a reader never sees a half-configured sink. */
enum { SINK_DEFAULT = 0, SINK_CALLBACK = 1, SINK_DISABLED = 2 };
static _Atomic(transcribe_log_callback) g_cb;
static _Atomic(void *) g_userdata;
static atomic_int g_state;

void tr_log_set(transcribe_log_callback cb, void *userdata) {
    atomic_store(&g_cb, cb);
    atomic_store(&g_userdata, userdata);
    atomic_store(&g_state, cb ? SINK_CALLBACK : SINK_DISABLED);
}

static const char *level_tag(transcribe_log_level level) {
    switch (level) {
    case TRANSCRIBE_LOG_LEVEL_ERROR:
        return "error: ";
    case TRANSCRIBE_LOG_LEVEL_WARN:
        return "warning: ";
    case TRANSCRIBE_LOG_LEVEL_DEBUG:
        return "debug: ";
    default:
        return "";
    }
}

/* The error capture of the public call running on this thread: per thread,
 * so concurrent calls on different handles never see each other's text. */
static _Thread_local tr_log_capture t_capture;
/* The first error message since the last take, of the batch running on
 * this thread. */
static _Thread_local tr_log_capture t_latest;

/* Points *slot at buf (emptied); the capture it replaces is returned. */
static tr_log_capture capture_swap(tr_log_capture *slot, char *buf, size_t cap) {
    tr_log_capture enclosing = *slot;
    if (buf && cap > 0) buf[0] = '\0';
    *slot = (tr_log_capture){buf, cap};
    return enclosing;
}

tr_log_capture tr_log_capture_begin(char *buf, size_t cap) {
    return capture_swap(&t_capture, buf, cap);
}

void tr_log_capture_end(tr_log_capture enclosing) {
    t_capture = enclosing;
}

tr_log_capture tr_log_latest_begin(char *buf, size_t cap) {
    return capture_swap(&t_latest, buf, cap);
}

void tr_log_latest_end(tr_log_capture enclosing) {
    t_latest = enclosing;
}

void tr_log_latest_take(char *out, size_t cap) {
    if (out && cap > 0) out[0] = '\0';
    if (!t_latest.buf || t_latest.cap == 0) return;
    if (out && cap > 0) snprintf(out, cap, "%s", t_latest.buf);
    t_latest.buf[0] = '\0';
}

/* An error message into an empty capture (a full one keeps its first). */
static void capture_note(const tr_log_capture *c, const char *fmt, va_list ap) {
    if (!c->buf || c->cap == 0 || c->buf[0]) return;
    vsnprintf(c->buf, c->cap, fmt, ap);
}

void tr_log(transcribe_log_level level, const char *fmt, ...) {
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR) {
        va_list ap;
        va_start(ap, fmt);
        capture_note(&t_capture, fmt, ap);
        va_end(ap);
        va_start(ap, fmt);
        capture_note(&t_latest, fmt, ap);
        va_end(ap);
    }
    int state = atomic_load(&g_state);
    if (state == SINK_DISABLED) return;
    if (state == SINK_DEFAULT && level == TRANSCRIBE_LOG_LEVEL_DEBUG) {
        static atomic_int debug_env = -1;
        int d = atomic_load(&debug_env);
        if (d < 0) {
            const char *e = getenv("TRANSCRIBE_DEBUG");
            d = (e && *e && strcmp(e, "0") != 0) ? 1 : 0;
            atomic_store(&debug_env, d);
        }
        if (!d) return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = strlen(msg);
    if (len > 0 && msg[len - 1] == '\n') msg[len - 1] = '\0';
    if (state == SINK_CALLBACK) {
        transcribe_log_callback cb = atomic_load(&g_cb);
        if (cb) cb(level, msg, atomic_load(&g_userdata));
        return;
    }
    if (level == TRANSCRIBE_LOG_LEVEL_CONT) {
        fputs(msg, stderr);
    } else {
        fprintf(stderr, "transcribe: %s%s\n", level_tag(level), msg);
    }
}
