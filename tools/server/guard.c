/* The connection guard: slow clients cannot hold the server.
 *
 * Each connection holds a thread and one of --max-connections slots, and
 * the daemon's --idle-timeout restarts at every byte: 64 clients that send
 * one header line every 10 s (or a body a byte at a time) used to hold
 * every slot for ever, so that nobody else got an answer. The guard bounds
 * the phases where the server waits for the client:
 *   - the request line and headers must be in within --header-timeout
 *     (counted from the accept; on a kept-alive connection from the end of
 *     the last request, plus --idle-timeout for the pause between requests);
 *   - the body must be in within --body-timeout of its headers;
 * and keeps a quarter of the slots for newcomers: when a new connection
 * arrives while three quarters of the slots wait for their clients, the
 * one that has waited longest is closed. A connection past both phases
 * (its request runs, or its answer is sent) is never touched.
 *
 * A connection is cut with shutdown(2) from the guard's thread: its own
 * thread then reads end-of-file and the daemon closes it as if the client
 * had left. The daemon reports a connection closed (NOTIFY_CLOSED) before
 * it closes the socket, and the guard drops the connection from its list
 * under the same lock it cuts with, so a socket number that is reused
 * later is never cut by mistake. */
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "server.h"

struct srv_conn {
    struct srv_conn *prev, *next; /* in the guard's list while waiting */
    int fd;
    srv_conn_phase phase;
    double deadline; /* monotonic seconds */
    double opened;   /* monotonic seconds of the accept */
    bool fresh;      /* no request has come in on it yet */
    bool listed;
    bool cut; /* shut down by the guard: closing, not watched any more */
};

struct srv_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the thread to stop */
    pthread_t thread;
    bool thread_started, stop;
    srv_conn *head, *tail; /* waiting connections, the longest waiting first */
    int n_waiting;
    int cap; /* waiting connections that may hold slots */
    double header_s, keepalive_s, body_s;
    atomic_llong cut_slow, cut_evicted;
    atomic_llong opened; /* connections ever registered */
    atomic_llong closed; /* ... and of those, closed */
};

static void unlist(srv_guard *g, srv_conn *c) {
    if (!c->listed) return;
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        g->tail = c->prev;
    c->prev = c->next = NULL;
    c->listed = false;
    g->n_waiting--;
}

static void list_at_tail(srv_guard *g, srv_conn *c) {
    c->prev = g->tail;
    c->next = NULL;
    if (g->tail)
        g->tail->next = c;
    else
        g->head = c;
    g->tail = c;
    c->listed = true;
    g->n_waiting++;
}

/* Under g->mu: closes the connection's socket for reading and writing (the
 * daemon's thread for it sees end-of-file) and stops watching it. */
static void cut(srv_guard *g, srv_conn *c) {
    unlist(g, c);
    c->cut = true;
    if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
}

static void *watch(void *arg) {
    srv_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200 * 1000 * 1000; /* deadlines are whole seconds */
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        double now = srv_now();
        for (srv_conn *c = g->head, *next; c; c = next) {
            next = c->next;
            if (now >= c->deadline) {
                cut(g, c);
                atomic_fetch_add(&g->cut_slow, 1);
            }
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

srv_guard *srv_guard_start(const srv_opts *o) {
    srv_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->header_s = o->header_timeout_s;
    g->keepalive_s = (double)o->header_timeout_s + o->idle_timeout_s;
    g->body_s = o->body_timeout_s;
    g->cap = o->max_connections - o->max_connections / 4;
    if (g->cap < 1) g->cap = 1;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, watch, g) != 0) {
        srv_guard_stop(g);
        return NULL;
    }
    g->thread_started = true;
    return g;
}

void srv_guard_stop(srv_guard *g) {
    if (!g) return;
    if (g->thread_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

srv_conn *srv_guard_open(srv_guard *g, int fd) {
    atomic_fetch_add(&g->opened, 1);
    srv_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL; /* unwatched: the daemon's own limits still hold */
    c->fd = fd;
    c->opened = srv_now();
    c->fresh = true;
    pthread_mutex_lock(&g->mu);
    /* a quarter of the slots stays for newcomers: the longest waiting
     * connection makes room */
    if (g->n_waiting >= g->cap && g->head) {
        cut(g, g->head);
        atomic_fetch_add(&g->cut_evicted, 1);
    }
    c->phase = SRV_CONN_HEADERS;
    c->deadline = srv_now() + g->header_s;
    list_at_tail(g, c);
    pthread_mutex_unlock(&g->mu);
    return c;
}

void srv_guard_phase(srv_guard *g, srv_conn *c, srv_conn_phase phase) {
    if (!g || !c) return;
    pthread_mutex_lock(&g->mu);
    if (!c->cut) {
        unlist(g, c);
        c->phase = phase;
        if (phase != SRV_CONN_HEADERS) c->fresh = false;
        if (phase != SRV_CONN_ACTIVE) {
            double wait = phase == SRV_CONN_BODY      ? g->body_s
                          : phase == SRV_CONN_HEADERS ? g->keepalive_s
                                                      : 0;
            c->deadline = srv_now() + wait;
            list_at_tail(g, c);
        }
    }
    pthread_mutex_unlock(&g->mu);
}

void srv_guard_close(srv_guard *g, srv_conn *c) {
    if (!g) return;
    atomic_fetch_add(&g->closed, 1);
    if (!c) return;
    pthread_mutex_lock(&g->mu);
    unlist(g, c);
    c->fd = -1;
    pthread_mutex_unlock(&g->mu);
    free(c);
}

long long srv_guard_opened(srv_guard *g) {
    return g ? atomic_load(&g->opened) : 0;
}

long long srv_guard_live(srv_guard *g) {
    return g ? atomic_load(&g->opened) - atomic_load(&g->closed) : 0;
}

int srv_guard_arriving(srv_guard *g, double settle_s) {
    if (!g) return 0;
    int n = 0;
    const double now = srv_now();
    pthread_mutex_lock(&g->mu);
    for (const srv_conn *c = g->head; c; c = c->next) {
        if (c->phase != SRV_CONN_HEADERS || c->fd < 0) continue;
        int unread = 0;
        if ((c->fresh && now - c->opened < settle_s) ||
            (ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0))
            n++;
    }
    pthread_mutex_unlock(&g->mu);
    return n;
}

long long srv_guard_cut(const srv_guard *g, bool evicted) {
    return g ? atomic_load(evicted ? &g->cut_evicted : &g->cut_slow) : 0;
}
