/* Loaded models, each with a pool of sessions and a bounded queue of
 * requests waiting for one (server.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bundled_dir.h"
#include "server.h"

static void model_id_from_path(char *id, size_t n, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(id, n, "%s", base);
    char *dot = strrchr(id, '.');
    if (dot && dot != id && (!strcmp(dot, ".gguf") || !strcmp(dot, ".bin"))) *dot = '\0';
}

static bool open_model(srv_model *m, const srv_opts *o, int i) {
    if (o->model_id[i])
        snprintf(m->id, sizeof m->id, "%s", o->model_id[i]);
    else
        model_id_from_path(m->id, sizeof m->id, o->model_path[i]);
    transcribe_status st = transcribe_model_load_file(o->model_path[i], NULL, &m->model);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-server: model %s: %s\n", o->model_path[i],
                transcribe_status_string(st));
        return false;
    }
    transcribe_capabilities_init(&m->caps);
    transcribe_model_get_capabilities(m->model, &m->caps);
    m->whisper_ext = transcribe_model_accepts_ext_kind(m->model, TRANSCRIBE_EXT_SLOT_RUN,
                                                       TRANSCRIBE_EXT_KIND_WHISPER_RUN);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->compute, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    m->sync_ready = true;
    m->queue_cap = o->queue;
    m->free_sessions = calloc((size_t)o->parallel, sizeof *m->free_sessions);
    if (!m->free_sessions) return false;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = o->threads;
    for (int k = 0; k < o->parallel; k++) {
        struct transcribe_session *s = NULL;
        st = transcribe_session_init(m->model, &sp, &s);
        if (st != TRANSCRIBE_OK) {
            fprintf(stderr, "transcribe-server: model %s: session: %s\n", m->id,
                    transcribe_status_string(st));
            return false;
        }
        m->free_sessions[m->n_free++] = s;
        m->n_sessions++;
    }
    return true;
}

/* The VAD model for vad=true requests: the one --vad-model names (it must
 * load), else the bundled one when it is there (quietly none otherwise). */
static bool open_vad(srv_pool *p, const srv_opts *o) {
    char path[4096];
    if (o->vad_model_path)
        snprintf(path, sizeof path, "%s", o->vad_model_path);
    else
        snprintf(path, sizeof path, "%s/%s", tr_cli_bundled_model_dir(), SRV_VAD_FILE);
    if (!o->vad_model_path && access(path, R_OK) != 0) return true;
    transcribe_status st = transcribe_vad_model_load(path, &p->vad);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-server: cannot load the VAD model %s: %s\n", path,
                transcribe_status_string(st));
        return false;
    }
    return true;
}

/* --diarizer: it must load and be a diarization model (else the server
 * does not start). */
static bool open_diarizer(srv_pool *p, const srv_opts *o) {
    if (!o->diarizer_path) return true;
    transcribe_status st = transcribe_model_load_file(o->diarizer_path, NULL, &p->diarizer);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-server: --diarizer %s: %s\n", o->diarizer_path,
                transcribe_status_string(st));
        return false;
    }
    if (!transcribe_model_supports(p->diarizer, TRANSCRIBE_FEATURE_DIARIZATION)) {
        fprintf(stderr, "transcribe-server: --diarizer %s is not a diarization model (%s)\n",
                o->diarizer_path, transcribe_model_arch_string(p->diarizer));
        transcribe_model_free(p->diarizer);
        p->diarizer = NULL;
        return false;
    }
    pthread_mutex_init(&p->diar_compute, NULL);
    return true;
}

bool srv_model_diarizes(const srv_pool *p, const srv_model *m) {
    return transcribe_model_supports(m->model, TRANSCRIBE_FEATURE_DIARIZATION) || p->diarizer;
}

bool srv_pool_open(srv_pool *p, const srv_opts *o) {
    if (!open_vad(p, o)) return false;
    if (!open_diarizer(p, o)) return false;
    p->models = calloc((size_t)o->n_models, sizeof *p->models);
    if (!p->models) return false;
    for (int i = 0; i < o->n_models; i++) {
        p->n = i + 1;
        if (!open_model(&p->models[i], o, i)) return false;
        for (int j = 0; j < i; j++) {
            if (!strcmp(p->models[j].id, p->models[i].id)) {
                fprintf(stderr,
                        "transcribe-server: two models named '%s' (name them: -m ID=PATH)\n",
                        p->models[i].id);
                return false;
            }
        }
    }
    return true;
}

void srv_pool_close(srv_pool *p) {
    for (int i = 0; i < p->n; i++) {
        srv_model *m = &p->models[i];
        /* every session is back in the pool once the daemon has stopped */
        for (int k = 0; k < m->n_free; k++) transcribe_session_free(m->free_sessions[k]);
        free(m->free_sessions);
        transcribe_model_free(m->model);
        if (m->sync_ready) {
            pthread_mutex_destroy(&m->mu);
            pthread_mutex_destroy(&m->compute);
            pthread_cond_destroy(&m->cv);
        }
    }
    free(p->models);
    transcribe_vad_model_free(p->vad);
    if (p->diarizer) {
        transcribe_model_free(p->diarizer);
        pthread_mutex_destroy(&p->diar_compute);
    }
    memset(p, 0, sizeof *p);
}

srv_model *srv_pool_find(srv_pool *p, const char *id) {
    if (p->n == 0) return NULL;
    if (!id || !*id) return &p->models[0];
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->models[i].id, id)) return &p->models[i];
    if (!strcmp(id, "whisper-1")) return &p->models[0];
    return NULL;
}

int srv_pool_waiting(srv_pool *p) {
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->models[i].mu);
        n += p->models[i].waiting;
        pthread_mutex_unlock(&p->models[i].mu);
    }
    return n;
}

/* A request waiting for a session; a released session is handed to the
 * first waiter, so that the queue is served in order (a newcomer cannot take
 * it first). */
typedef struct srv_waiter {
    struct srv_waiter *next;
    struct transcribe_session *session;
} srv_waiter;

static void unlink_waiter(srv_model *m, srv_waiter *w) {
    srv_waiter **pp = &m->head, *prev = NULL;
    while (*pp && *pp != w) prev = *pp, pp = &(*pp)->next;
    if (!*pp) return;
    *pp = w->next;
    if (m->tail == w) m->tail = prev;
}

srv_acquire srv_model_acquire(srv_model *m, srv_request *rq, struct transcribe_session **out) {
    *out = NULL;
    pthread_mutex_lock(&m->mu);
    if (m->n_free > 0 && !m->head) {
        *out = m->free_sessions[--m->n_free];
        pthread_mutex_unlock(&m->mu);
        return SRV_ACQ_OK;
    }
    if (m->waiting >= m->queue_cap) {
        pthread_mutex_unlock(&m->mu);
        return SRV_ACQ_FULL;
    }
    srv_waiter w = {NULL, NULL};
    if (m->tail)
        m->tail->next = &w;
    else
        m->head = &w;
    m->tail = &w;
    m->waiting++;
    srv_acquire res = SRV_ACQ_OK;
    while (!w.session) {
        /* wake every 100 ms to notice a client that left, the deadline or
         * a shutdown */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        if (w.session) break;
        if (atomic_load(&rq->srv->closing) == 2) { /* the grace is over */
            res = SRV_ACQ_CLOSING;
            break;
        }
        pthread_mutex_unlock(&m->mu);
        bool stop = srv_request_should_stop(rq);
        pthread_mutex_lock(&m->mu);
        if (stop && !w.session) {
            res = rq->client_gone ? SRV_ACQ_GONE : SRV_ACQ_TIMEOUT;
            break;
        }
    }
    m->waiting--;
    if (w.session) {
        res = SRV_ACQ_OK; /* handed over (perhaps just as it gave up) */
        *out = w.session;
    } else {
        unlink_waiter(m, &w);
    }
    pthread_mutex_unlock(&m->mu);
    return res;
}

void srv_model_release(srv_model *m, struct transcribe_session *s) {
    if (!s) return;
    pthread_mutex_lock(&m->mu);
    srv_waiter *w = m->head;
    if (w) {
        m->head = w->next;
        if (!m->head) m->tail = NULL;
        w->session = s;
        pthread_cond_broadcast(&m->cv);
    } else {
        m->free_sessions[m->n_free++] = s;
    }
    pthread_mutex_unlock(&m->mu);
}
