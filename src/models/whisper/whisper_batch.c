/* The batch run (docs/c-api.md §11, docs/formats/whisper.md §12 item 8). Whisper's
 * decoding (§8: language detection, prompt, temperature fallback, no-speech
 * gate, seek windows, long form) is a long sequential algorithm; rather
 * than a second, lockstep copy of it, every utterance runs the unchanged
 * tr_wh_run on its own worker thread and member session (own self-attention
 * cache, cross K/V, mel window, logits), and every heavy call of it —
 * window encode, decoder pass, logits row — is a request to a hub on the
 * caller's thread. The hub waits until every running member is blocked on
 * a request, then serves the round at once on the session's pool: all
 * decoder requests as one tr_ed_step (nn/encdec_decoder.h: packed passes,
 * each weight read once per pass) and all logits rows as tr_ed_head
 * products, so each decoder weight is read once per step for the batch; encodes one after
 * another (a window is already a 1500-row GEMM). Each member sees exactly
 * the calls of a single run, so its decisions are the single run's (its
 * logits may differ from a single run's in the last bits: the batched
 * products take a different matmul path than one row does).
 *
 * Only the hub touches the pool; members run their element-wise work
 * (mel, logit rules, deflate) on their own threads without it. The abort
 * callback is polled by the hub on the caller's thread before every round
 * and relayed to the members through a flag. Members at a time are capped
 * by the memory of their cross K/V (WH_BATCH_BYTES); a finished member's
 * slot takes the next utterance. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "models/whisper/whisper.h"
#include "util/log.h"
#include "util/vec.h"

#define WH_BATCH_BYTES ((size_t)1 << 30) /* member cross K/V + caches at once */
#define WH_BATCH_MAX   16

typedef enum { REQ_NONE = 0, REQ_ENCODE, REQ_DECODE, REQ_LOGITS } req_kind;

typedef struct wh_req {
    req_kind kind;
    const float *window;
    const int32_t *ids;
    int n, n_past;
    int row;
    float *out;
} wh_req;

typedef struct slot {
    wh_session *s; /* member session (hub set, no pool) */
    wh_req req;
    pthread_t th;
    bool started, busy;
    int idx; /* utterance */
    tr_run_ctx ctx;
    transcribe_status st;
    struct wh_hub *hub;
    const float *pcm;
    int n;
} slot;

struct wh_hub {
    pthread_mutex_t mu;
    pthread_cond_t to_hub, to_members;
    int n_active, n_waiting;
    atomic_bool abort;
    slot *slots;
    int n_slots;
    wh_session *main; /* the caller's session: pool, encoder scratch */
    /* round buffers, grown on demand */
    float *x, *scratch, *rows, *logits;
    size_t cap_x, cap_scratch, cap_rows, cap_logits;
    tr_ed_seq *segs;
    int *seg_slot;
};

/* ---- member side (worker threads) ---- */

static void hub_call(wh_session *s, wh_req r) {
    wh_hub *h = s->hub;
    slot *sl = &h->slots[s->hub_slot];
    pthread_mutex_lock(&h->mu);
    sl->req = r;
    h->n_waiting++;
    pthread_cond_signal(&h->to_hub);
    while (sl->req.kind != REQ_NONE) pthread_cond_wait(&h->to_members, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

void tr_wh_hub_encode(wh_session *s, const float *mel_window) {
    hub_call(s, (wh_req){.kind = REQ_ENCODE, .window = mel_window});
}

void tr_wh_hub_decode(wh_session *s, const int32_t *ids, int n, int n_past) {
    hub_call(s, (wh_req){.kind = REQ_DECODE, .ids = ids, .n = n, .n_past = n_past});
}

void tr_wh_hub_logits(wh_session *s, int row, float *out) {
    hub_call(s, (wh_req){.kind = REQ_LOGITS, .row = row, .out = out});
}

static bool member_abort(void *user) {
    return atomic_load(&((wh_hub *)user)->abort);
}

static void *member_main(void *arg) {
    slot *sl = arg;
    wh_hub *h = sl->hub;
    sl->st = tr_wh_run(sl->s, sl->pcm, sl->n, &sl->ctx);
    pthread_mutex_lock(&h->mu);
    sl->busy = false;
    h->n_active--;
    pthread_cond_signal(&h->to_hub);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- hub side (caller's thread) ---- */

static bool grow_f(float **p, size_t *cap, size_t n) {
    float *q = tr_grow(*p, cap, n, sizeof(float), 0);
    if (!q) return false;
    *p = q;
    return true;
}

static bool serve_encode(wh_hub *h, slot *sl) {
    wh_session *m = h->main, *s = sl->s;
    /* the shared encoder output is consumed at once: cross K/V into the
     * member's own buffers (its tr_wh_cross_kv is then a no-op) */
    tr_whenc_forward(m->pool, &m->m->enc, &m->enc_work, sl->req.window, m->m->hp.n_frames_window,
                     m->enc_x);
    return tr_wh_cross_fill(s, m->pool, m->enc_x);
}

/* Every decoder request of the round as one tr_ed_step; each member's
 * final-LN rows land in its own dec_x as tr_wh_decode_tokens leaves them. */
static bool serve_decode(wh_hub *h) {
    const wh_model *m = h->main->m;
    const int D = m->hp.d_model;
    int n_seg = 0, rows = 0;
    for (int k = 0; k < h->n_slots; k++) {
        const wh_req *r = &h->slots[k].req;
        if (r->kind != REQ_DECODE) continue;
        h->seg_slot[n_seg] = k;
        h->segs[n_seg++] = tr_wh_seq(h->slots[k].s, r->ids, r->n, r->n_past);
        rows += r->n;
    }
    if (n_seg == 0) return true;
    if (!grow_f(&h->x, &h->cap_x, (size_t)rows * D) ||
        !grow_f(&h->scratch, &h->cap_scratch, tr_ed_step_scratch(&m->decoder, rows, n_seg)))
        return false;
    tr_ed_step(h->main->pool, &m->decoder, n_seg, h->segs, h->x, h->scratch, NULL);
    for (int q = 0, r0 = 0; q < n_seg; r0 += h->segs[q++].rows)
        memcpy(h->slots[h->seg_slot[q]].s->dec_x, h->x + (size_t)r0 * D,
               (size_t)h->segs[q].rows * D * sizeof(float));
    return true;
}

/* Every logits row of the round through the tied head (tr_ed_head). */
static bool serve_logits(wh_hub *h) {
    const wh_model *m = h->main->m;
    const int D = m->hp.d_model, V = m->hp.n_vocab;
    int k = 0;
    for (int i = 0; i < h->n_slots; i++) k += h->slots[i].req.kind == REQ_LOGITS;
    if (k == 0) return true;
    if (!grow_f(&h->rows, &h->cap_rows, (size_t)k * D) ||
        !grow_f(&h->logits, &h->cap_logits, (size_t)k * V))
        return false;
    for (int i = 0, q = 0; i < h->n_slots; i++) {
        const wh_req *r = &h->slots[i].req;
        if (r->kind != REQ_LOGITS) continue;
        memcpy(h->rows + (size_t)q++ * D, h->slots[i].s->dec_x + (size_t)r->row * D,
               (size_t)D * sizeof(float));
    }
    tr_ed_head(h->main->pool, &m->decoder, h->rows, k, h->logits);
    for (int i = 0, q = 0; i < h->n_slots; i++) {
        const wh_req *r = &h->slots[i].req;
        if (r->kind != REQ_LOGITS) continue;
        memcpy(r->out, h->logits + (size_t)q++ * V, (size_t)V * sizeof(float));
    }
    return true;
}

/* ---- members ---- */

/* A member session: the buffers tr_wh_run reads and writes for one
 * utterance; no encoder scratch (the hub's) and no pool. */
static wh_session *member_new(const wh_session *main, wh_hub *h, int slot_idx) {
    const wh_model *m = main->m;
    const wh_hparams *hp = &m->hp;
    const size_t D = (size_t)hp->d_model, Tm = (size_t)hp->n_frames_window,
                 Tt = (size_t)hp->n_text_ctx, V = (size_t)hp->n_vocab;
    wh_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->m = m;
    s->hub = h;
    s->hub_slot = slot_idx;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, hp->n_text_ctx, hp->n_head, hp->head_dim,
                            main->kv.f16);
    if (!tr_wh_cross_alloc(s)) ok = false;
    s->dec_x = malloc(Tt * D * sizeof(float));
    s->logits = malloc(2 * V * sizeof(float));
    s->work = malloc(V * sizeof(float));
    s->window = malloc((size_t)hp->n_mels * Tm * sizeof(float));
    if (!ok || !s->dec_x || !s->logits || !s->work || !s->window) {
        tr_wh_session_free(s);
        return NULL;
    }
    return s;
}

static size_t member_bytes(const wh_model *m) {
    const wh_hparams *hp = &m->hp;
    size_t D = (size_t)hp->d_model, S = (size_t)hp->n_frames_window / 2;
    return 2 * (size_t)hp->n_dec_layers * (S + (size_t)hp->n_text_ctx) * D * sizeof(float) +
           (size_t)hp->n_mels * hp->n_frames_window * sizeof(float);
}

static void hub_free(wh_hub *h) {
    for (int k = 0; k < h->n_slots; k++) tr_wh_session_free(h->slots[k].s);
    free(h->slots);
    free(h->x);
    free(h->scratch);
    free(h->rows);
    free(h->logits);
    free(h->segs);
    free(h->seg_slot);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->to_hub);
    pthread_cond_destroy(&h->to_members);
}

/* Starts utterance i in free slot k; false when the thread cannot start. */
static bool start(wh_hub *h, int k, int i, const float *const *pcm, const int *n_samples,
                  tr_run_ctx *ctxs) {
    slot *sl = &h->slots[k];
    sl->idx = i;
    sl->pcm = pcm[i];
    sl->n = n_samples[i];
    sl->ctx = ctxs[i];
    sl->ctx.pool = NULL; /* members never touch the pool */
    sl->ctx.abort_cb = member_abort;
    sl->ctx.abort_user_data = h;
    sl->busy = true;
    h->n_active++;
    if (pthread_create(&sl->th, NULL, member_main, sl) != 0) {
        sl->busy = false;
        h->n_active--;
        return false;
    }
    sl->started = true;
    return true;
}

/* Runs the hub until every utterance in todo[] has run; returns OOM when a
 * round could not get its buffers (members are then released with their
 * requests unserved and their utterances fail), else OK. */
static transcribe_status hub_run(wh_hub *h, const float *const *pcm, const int *n_samples,
                                 tr_run_ctx *ctxs, bool *done, const int *todo, int n_todo) {
    transcribe_status st = TRANSCRIBE_OK;
    int next = 0;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        /* fill free slots (not once aborted or failed) */
        for (int k = 0; k < h->n_slots && next < n_todo && st == TRANSCRIBE_OK; k++) {
            slot *sl = &h->slots[k];
            if (sl->busy) continue;
            if (sl->started) { /* its member has released the lock and is returning */
                pthread_join(sl->th, NULL);
                sl->started = false;
                tr_run_batch_finish(ctxs, done, sl->idx, sl->st);
                ctxs[sl->idx].truncated |= sl->ctx.truncated;
            }
            if (atomic_load(&h->abort)) break;
            if (!start(h, k, todo[next], pcm, n_samples, ctxs)) break; /* run serially later */
            next++;
        }
        if (h->n_active == 0) break;
        while (h->n_waiting < h->n_active) pthread_cond_wait(&h->to_hub, &h->mu);
        if (h->n_waiting == 0) continue; /* a member finished: refill */
        pthread_mutex_unlock(&h->mu);
        /* every running member is blocked: serve the round */
        const tr_run_ctx *any = &ctxs[0];
        if (any->abort_cb && any->abort_cb(any->abort_user_data)) atomic_store(&h->abort, true);
        if (st == TRANSCRIBE_OK) {
            bool ok = true;
            for (int k = 0; k < h->n_slots; k++)
                if (h->slots[k].req.kind == REQ_ENCODE && !serve_encode(h, &h->slots[k]))
                    ok = false;
            if (!ok || !serve_decode(h) || !serve_logits(h)) {
                TR_ERROR("whisper: out of memory for a batched encoder or decoder step");
                st = TRANSCRIBE_ERR_OOM;
                atomic_store(&h->abort, true); /* members stop at their next check */
            }
        }
        pthread_mutex_lock(&h->mu);
        for (int k = 0; k < h->n_slots; k++) h->slots[k].req.kind = REQ_NONE;
        h->n_waiting = 0;
        pthread_cond_broadcast(&h->to_members);
    }
    pthread_mutex_unlock(&h->mu);
    for (int k = 0; k < h->n_slots; k++) {
        slot *sl = &h->slots[k];
        if (!sl->started) continue;
        pthread_join(sl->th, NULL);
        sl->started = false;
        tr_run_batch_finish(ctxs, done, sl->idx, sl->st);
        ctxs[sl->idx].truncated |= sl->ctx.truncated;
    }
    return st;
}

transcribe_status tr_wh_run_batch(wh_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    bool *done = calloc((size_t)n, sizeof *done);
    int *todo = done ? calloc((size_t)n, sizeof *todo) : NULL;
    if (!todo) {
        free(done);
        return TRANSCRIBE_ERR_OOM;
    }
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    s->n_traces = 0; /* chunk traces describe single runs only */
    int n_todo = 0;
    for (int i = 0; i < n; i++) {
        if (tr_run_batch_input_ok("whisper", pcm, n_samples, i, ctxs, done)) todo[n_todo++] = i;
    }
    transcribe_status st = TRANSCRIBE_OK;
    size_t per = member_bytes(s->m);
    int slots = (int)(WH_BATCH_BYTES / (per ? per : 1));
    if (slots > WH_BATCH_MAX) slots = WH_BATCH_MAX;
    if (slots > n_todo) slots = n_todo;
    if (n_todo > 1 && slots > 1) {
        wh_hub h;
        memset(&h, 0, sizeof h);
        pthread_mutex_init(&h.mu, NULL);
        pthread_cond_init(&h.to_hub, NULL);
        pthread_cond_init(&h.to_members, NULL);
        atomic_init(&h.abort, false);
        h.main = s;
        h.slots = calloc((size_t)slots, sizeof *h.slots);
        h.segs = calloc((size_t)slots, sizeof *h.segs);
        h.seg_slot = calloc((size_t)slots, sizeof *h.seg_slot);
        bool ok = h.slots && h.segs && h.seg_slot;
        for (int k = 0; ok && k < slots; k++) {
            h.slots[k].hub = &h;
            h.slots[k].s = member_new(s, &h, k);
            if (!h.slots[k].s) ok = false;
            h.n_slots = k + 1;
        }
        if (ok) {
            st = hub_run(&h, pcm, n_samples, ctxs, done, todo, n_todo);
            if (st == TRANSCRIBE_OK && atomic_load(&h.abort)) st = TRANSCRIBE_ERR_ABORTED;
        }
        /* members that aborted did not complete (docs/formats/whisper.md §11) */
        hub_free(&h);
        if (!ok) TR_WARN("whisper: no memory for batch members; running the batch serially");
    }
    /* whatever the hub did not run: one by one on the caller's session */
    for (int j = 0; j < n_todo && st == TRANSCRIBE_OK; j++) {
        int i = todo[j];
        if (done[i]) continue;
        if (tr_run_should_abort(&ctxs[i])) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        transcribe_status u = tr_wh_run(s, pcm[i], n_samples[i], &ctxs[i]);
        if (u == TRANSCRIBE_ERR_OOM || u == TRANSCRIBE_ERR_BACKEND) {
            st = u;
            break;
        }
        tr_run_batch_finish(ctxs, done, i, u);
        if (u == TRANSCRIBE_ERR_ABORTED) st = u;
    }
    if (st == TRANSCRIBE_ERR_ABORTED) tr_run_batch_abort_rest(ctxs, done, n);
    free(done);
    free(todo);
    return st;
}
