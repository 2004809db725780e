/* Greedy decoders of docs/formats/parakeet.md §8. The loops follow the spec's
 * pseudo-code literally (including the TDT blank-with-duration-0 repeat,
 * which costs nothing here because the joint is only recomputed when its
 * inputs change). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/pk_decode.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/argmax.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

bool tr_pk_toks_push(pk_toks *t, pk_tok k) {
    pk_tok *nv = tr_grow_int(t->v, &t->cap, t->n + 1, sizeof *nv, 256);
    if (!nv) return false;
    t->v = nv;
    t->v[t->n++] = k;
    return true;
}

void tr_pk_toks_free(pk_toks *t) {
    free(t->v);
    memset(t, 0, sizeof *t);
}

bool tr_pk_mat_alloc(pk_mat *m, int rows, int cols, const char *name) {
    memset(m, 0, sizeof *m);
    if (rows <= 0 || cols <= 0) return false;
    m->data = malloc((size_t)rows * (size_t)cols * sizeof(float));
    if (!m->data) return false;
    m->rows = rows;
    m->cols = cols;
    m->t.name = name;
    m->t.type = 0; /* TR_F32 */
    m->t.n_dims = 2;
    m->t.ne[0] = cols;
    m->t.ne[1] = rows;
    m->t.ne[2] = m->t.ne[3] = 1;
    m->t.nb1 = (size_t)cols * sizeof(float);
    m->t.nbytes = (size_t)rows * m->t.nb1;
    m->t.data = m->data;
    return true;
}

void tr_pk_mat_free(pk_mat *m) {
    free(m->data);
    memset(m, 0, sizeof *m);
}

void tr_pk_head_free(pk_head *h) {
    if (!h) return;
    tr_pk_mat_free(&h->ctc);
    TR_FREE_ALL(h->ctc_b, h->durations);
    tr_pk_mat_free(&h->embed);
    for (int l = 0; l < h->n_layers; l++) {
        if (h->wx) tr_pk_mat_free(&h->wx[l]);
        if (h->wh) tr_pk_mat_free(&h->wh[l]);
        if (h->lstm_b) free(h->lstm_b[l]);
    }
    TR_FREE_ALL(h->wx, h->wh, h->lstm_b);
    tr_pk_mat_free(&h->jenc);
    tr_pk_mat_free(&h->jpred);
    tr_pk_mat_free(&h->jout);
    TR_FREE_ALL(h->jenc_b, h->jpred_b, h->jout_b);
    memset(h, 0, sizeof *h);
}

/* ---- buffers ---- */

bool tr_pk_dec_work_init(pk_dec_work *w, const pk_head *h) {
    memset(w, 0, sizeof *w);
    w->head = h;
    if (h->kind == PK_HEAD_CTC) return true;
    size_t st = 2 * (size_t)h->n_layers * (size_t)h->hp;
    w->state = calloc(st, sizeof(float));
    w->pending = calloc(st, sizeof(float));
    w->x = calloc((size_t)h->hp, sizeof(float));
    w->gates = calloc(8 * (size_t)h->hp, sizeof(float));
    w->g = calloc((size_t)h->joint, sizeof(float));
    w->hid = calloc((size_t)h->joint, sizeof(float));
    w->logits = calloc((size_t)h->n_out, sizeof(float));
    if (!w->state || !w->pending || !w->x || !w->gates || !w->g || !w->hid || !w->logits) {
        tr_pk_dec_work_free(w);
        return false;
    }
    return true;
}

void tr_pk_dec_work_free(pk_dec_work *w) {
    TR_FREE_ALL(w->state, w->pending, w->x, w->gates, w->g, w->hid, w->logits, w->frames);
    memset(w, 0, sizeof *w);
}

size_t tr_pk_dec_work_bytes(const pk_dec_work *w) {
    const pk_head *h = w->head;
    size_t n = w->frames_cap;
    if (h && h->kind != PK_HEAD_CTC)
        n += 4 * (size_t)h->n_layers * h->hp + 9 * (size_t)h->hp + 2 * (size_t)h->joint +
             (size_t)h->n_out;
    return n * sizeof(float);
}

static bool frames_reserve(pk_dec_work *w, size_t n) {
    float *p = tr_grow(w->frames, &w->frames_cap, n, sizeof(float), 0);
    if (!p) return false;
    w->frames = p;
    return true;
}

/* ---- small kernels ---- */

/* y = W x (+ b) through the shared matrix-vector kernels (tensor/matmul.h),
 * which follow the CPU level of tensor/cpu.h. */
void tr_pk_matvec(tr_pool *pool, const pk_mat *W, const float *b, const float *x, float *y) {
    tr_matmul(pool, &W->t, b, x, 1, W->cols, y, W->rows);
}

static inline float sigm(float x) {
    return 1.0f / (1.0f + expf(-x));
}

float tr_pk_confidence(const float *l, int n) {
    if (n < 2) return 1.0f;
    float mx = l[tr_argmax(l, n)];
    double z = 0.0;
    for (int i = 0; i < n; i++) z += exp((double)l[i] - mx);
    double H = 0.0;
    for (int i = 0; i < n; i++) {
        double p = exp((double)l[i] - mx) / z;
        H -= p * log(p + 1e-10);
    }
    return (float)(1.0 - H / log((double)n));
}

/* ---- transducer pieces ---- */

/* (pred_out, pending) = PRED(last, state) of docs/formats/parakeet.md §8.1, then g = Wpred·pred_out
 * + bpred (the joint's predictor half only changes with the predictor). */
static void pred_step(const pk_head *h, tr_pool *pool, pk_dec_work *w, int last) {
    int Hp = h->hp, L = h->n_layers;
    if (last >= 0)
        memcpy(w->x, h->embed.data + (size_t)last * Hp, (size_t)Hp * sizeof(float));
    else
        memset(w->x, 0, (size_t)Hp * sizeof(float));
    const float *x = w->x;
    float *ga = w->gates, *gb = w->gates + 4 * Hp;
    for (int l = 0; l < L; l++) {
        const float *h_in = w->state + (size_t)l * Hp;
        const float *c_in = w->state + (size_t)(L + l) * Hp;
        float *h_out = w->pending + (size_t)l * Hp;
        float *c_out = w->pending + (size_t)(L + l) * Hp;
        tr_pk_matvec(pool, &h->wx[l], h->lstm_b[l], x, ga);
        tr_pk_matvec(pool, &h->wh[l], NULL, h_in, gb);
        for (int j = 0; j < Hp; j++) {
            float gi = sigm(ga[j] + gb[j]);
            float gf = sigm(ga[Hp + j] + gb[Hp + j]);
            float gg = tanhf(ga[2 * Hp + j] + gb[2 * Hp + j]);
            float go = sigm(ga[3 * Hp + j] + gb[3 * Hp + j]);
            float c = gf * c_in[j] + gi * gg;
            c_out[j] = c;
            h_out[j] = go * tanhf(c);
        }
        x = h_out;
    }
    tr_pk_matvec(pool, &h->jpred, h->jpred_b, x, w->g);
}

static void joint(const pk_head *h, tr_pool *pool, pk_dec_work *w, int t) {
    const float *e = w->frames + (size_t)t * h->joint;
    for (int j = 0; j < h->joint; j++) {
        float v = e[j] + w->g[j];
        switch (h->act) {
        case PK_ACT_RELU:
            v = v > 0.0f ? v : 0.0f;
            break;
        case PK_ACT_SIGMOID:
            v = sigm(v);
            break;
        case PK_ACT_TANH:
            v = tanhf(v);
            break;
        }
        w->hid[j] = v;
    }
    tr_pk_matvec(pool, &h->jout, h->jout_b, w->hid, w->logits);
}

static void accept_pending(const pk_head *h, pk_dec_work *w) {
    memcpy(w->state, w->pending, 2 * (size_t)h->n_layers * h->hp * sizeof(float));
}

void tr_pk_dec_carry_reset(pk_dec_carry *c) {
    memset(c, 0, sizeof *c);
    c->prev_ctc = -1;
}

/* The greedy transducer loop over frames [f0, f0 + T) of a frame sequence
 * (frames [T][joint] hold the chunk), resumed from *c: a TDT duration that
 * jumps past the chunk carries over as c->t beyond it. */
static transcribe_status decode_transducer(const pk_head *h, tr_pool *pool, pk_dec_work *w, int f0,
                                           int T, pk_toks *out, pk_dec_carry *c,
                                           pk_abort_fn should_abort, void *abort_user) {
    const bool tdt = h->kind == PK_HEAD_TDT;
    const int blank = h->n_vocab - 1;
    const int max_sym = tdt ? h->max_symbols : 10;
    const long cap = 16L * T + 1024;
    if (!c->started) {
        memset(w->state, 0, 2 * (size_t)h->n_layers * h->hp * sizeof(float));
        pred_step(h, pool, w, -1);
        c->started = true;
    }
    int t = c->t, sym = c->sym, logits_t = -1;
    long iter = 0;
    while (t < f0 + T) {
        if (++iter > cap) {
            TR_ERROR("parakeet: greedy %s decode exceeded %ld iterations for %d frames",
                     tdt ? "TDT" : "RNN-T", cap, T);
            return TRANSCRIBE_ERR_BACKEND;
        }
        if ((iter & 1023) == 0 && should_abort && should_abort(abort_user))
            return TRANSCRIBE_ERR_ABORTED;
        if (logits_t != t) {
            joint(h, pool, w, t - f0);
            logits_t = t;
        }
        int k = tr_argmax(w->logits, h->n_vocab);
        int d = 1;
        if (tdt) d = h->durations[tr_argmax(w->logits + h->n_vocab, h->n_dur)];
        if (k != blank) {
            pk_tok tk = {k, t, d, tr_pk_confidence(w->logits, h->n_vocab)};
            if (!tr_pk_toks_push(out, tk)) return TRANSCRIBE_ERR_OOM;
            accept_pending(h, w);
            pred_step(h, pool, w, k);
            logits_t = -1;
        }
        if (tdt) {
            t += d;
            sym++;
            if (d != 0) {
                sym = 0;
            } else if (max_sym > 0 && sym >= max_sym) {
                t++;
                sym = 0;
            }
        } else if (k == blank) {
            t++;
            sym = 0;
        } else if (++sym >= max_sym) {
            t++;
            sym = 0;
        }
    }
    c->t = t;
    c->sym = sym;
    return TRANSCRIBE_OK;
}

static transcribe_status decode_ctc(const pk_head *h, pk_dec_work *w, int f0, int T, pk_toks *out,
                                    pk_dec_carry *c) {
    const int V1 = h->n_vocab, blank = V1 - 1;
    int prev = c->prev_ctc;
    for (int t = 0; t < T; t++) {
        float *lp = w->frames + (size_t)t * V1;
        tr_log_softmax(lp, V1);
        int a = tr_argmax(lp, V1);
        if (a == prev) continue;
        prev = a;
        if (a == blank) continue;
        pk_tok tk = {a, f0 + t, 1, expf(lp[a])};
        if (!tr_pk_toks_push(out, tk)) return TRANSCRIBE_ERR_OOM;
    }
    c->prev_ctc = prev;
    c->t = f0 + T;
    return TRANSCRIBE_OK;
}

static transcribe_status decode_frames(const pk_head *h, tr_pool *pool, pk_dec_work *w,
                                       const float *enc, int f0, int T, pk_toks *out,
                                       pk_dec_carry *c, pk_abort_fn should_abort,
                                       void *abort_user) {
    if (T <= 0) return TRANSCRIBE_OK;
    const bool ctc = h->kind == PK_HEAD_CTC;
    const pk_mat *W = ctc ? &h->ctc : &h->jenc;
    /* one GEMM for every frame: CTC logits or the joint's encoder half */
    if (!frames_reserve(w, (size_t)T * W->rows)) {
        TR_ERROR("parakeet: out of memory for %d decoder frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_matmul(pool, &W->t, ctc ? h->ctc_b : h->jenc_b, enc, T, h->d_enc, w->frames, W->rows);
    if (ctc) return decode_ctc(h, w, f0, T, out, c);
    return decode_transducer(h, pool, w, f0, T, out, c, should_abort, abort_user);
}

transcribe_status tr_pk_decode_resume(const pk_head *h, tr_pool *pool, pk_dec_work *w,
                                      const float *enc, int f0, int T, pk_toks *out,
                                      pk_dec_carry *c, pk_abort_fn should_abort, void *abort_user) {
    return decode_frames(h, pool, w, enc, f0, T, out, c, should_abort, abort_user);
}

transcribe_status tr_pk_decode(const pk_head *h, tr_pool *pool, pk_dec_work *w, const float *enc,
                               int T, pk_toks *out, pk_abort_fn should_abort, void *abort_user) {
    pk_dec_carry c;
    tr_pk_dec_carry_reset(&c);
    return decode_frames(h, pool, w, enc, 0, T, out, &c, should_abort, abort_user);
}
