/* The heads and their greedy decoding (docs/formats/gigaam.md §6), on the host in F32
 * with the head weights widened at load: CTC log-probs and collapse
 * (§6.2), the transducer with its one-layer LSTM predictor (§6.1).
 * Blank is the last class; argmax ties go to the lowest index. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gigaam/gigaam.h"
#include "tensor/matmul.h"
#include "util/log.h"

static int argmax(const float *x, int n) {
    int a = 0;
    for (int j = 1; j < n; j++)
        if (x[j] > x[a]) a = j;
    return a;
}

/* Output columns per widened piece of lazy_linear: a multiple of every GEMM's panel width. */
#define GA_LAZY_COLS 128

/* Y [M][out] = X W^T + b for a matrix kept as the file's tensor (ga_mat.src): GA_LAZY_COLS
 * rows of W widened at a time and their columns of Y computed (each column's bits are the
 * whole product's), so at most 128 widened rows are resident. False on OOM. */
static bool lazy_linear(tr_pool *pool, const ga_mat *w, const float *b, const float *X, int M,
                        float *Y) {
    const int out = (int)w->out;
    ga_mat piece;
    const int rows = out < GA_LAZY_COLS ? out : GA_LAZY_COLS;
    if (!tr_ga_widen(w->src, w->in, rows, false, &piece)) return false;
    for (int c0 = 0; c0 < out; c0 += rows) {
        const int n = out - c0 < rows ? out - c0 : rows;
        tr_ga_widen_rows(&piece, c0, n);
        tr_tensor v = piece.t;
        v.ne[1] = n;
        tr_matmul(pool, &v, b ? b + c0 : NULL, X, M, (int)w->in, Y + c0, out);
    }
    free(piece.data);
    return true;
}

transcribe_status tr_ga_ctc_logprobs(const ga_model *m, tr_pool *pool, const float *enc, int T,
                                     float *logits, float *logp) {
    const int C = m->hp.n_classes;
    if (!lazy_linear(pool, &m->ctc_w, m->ctc_b, enc, T, logp)) {
        TR_ERROR("gigaam: out of memory for the CTC head");
        return TRANSCRIBE_ERR_OOM;
    }
    if (logits) memcpy(logits, logp, sizeof(float) * (size_t)T * (size_t)C);
    for (int t = 0; t < T; t++) {
        float *z = logp + (size_t)t * C;
        float mx = z[argmax(z, C)];
        double sum = 0.0;
        for (int j = 0; j < C; j++) sum += exp((double)z[j] - (double)mx);
        const float lse = (float)((double)mx + log(sum));
        for (int j = 0; j < C; j++) z[j] -= lse;
    }
    return TRANSCRIBE_OK;
}

int tr_ga_ctc_greedy(const ga_model *m, const float *logp, int T, ga_tok *toks) {
    const int C = m->hp.n_classes;
    int n = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        const int a = argmax(logp + (size_t)t * C, C);
        if (a == prev) continue;
        prev = a;
        if (a == m->hp.blank) continue;
        toks[n++] = (ga_tok){a, t};
    }
    return n;
}

/* The transducer's state: the predictor output g (its LSTM's h) and cell
 * c, the joint's predictor term, and scratch. */
typedef struct rnnt {
    const ga_model *m;
    ga_rnnt_trace *tr;
    float *g, *c, *pred, *z, *logits, *x, *emb, *scratch;
} rnnt;

/* row k of the embedding, widened from the file's tensor into r->emb */
static const float *embed_row(rnnt *r, int k) {
    ga_mat row = r->m->embed;
    row.data = r->emb;
    tr_ga_widen_rows(&row, k, 1);
    return r->emb;
}

/* (g, c) = LSTM(x, (g, c)); pred = W_pred g + b_pred. */
static void predict(rnnt *r, const float *x) {
    const ga_model *m = r->m;
    tr_nn_lstm_step(&m->lstm, x, r->g, r->c, r->g, r->c, r->scratch);
    tr_linear(NULL, &m->j_pred.t, m->j_pred_b, r->g, 1, r->pred);
    ga_rnnt_trace *tr = r->tr;
    if (tr && tr->pred && tr->n_pred < tr->pred_cap)
        memcpy(tr->pred + (size_t)tr->n_pred * m->hp.pred_hidden, r->g,
               sizeof(float) * (size_t)m->hp.pred_hidden);
    if (tr) tr->n_pred++;
}

/* argmax of W_out relu(e_t + pred) + b_out */
static int joint(rnnt *r, const float *e, int t) {
    const ga_model *m = r->m;
    const int hj = m->hp.joint_hidden;
    for (int j = 0; j < hj; j++) {
        const float v = e[j] + r->pred[j];
        r->z[j] = v > 0.0f ? v : 0.0f;
    }
    tr_linear(NULL, &m->j_out.t, m->j_out_b, r->z, 1, r->logits);
    const int C = m->hp.n_classes, k = argmax(r->logits, C);
    ga_rnnt_trace *tr = r->tr;
    if (tr && tr->logits && tr->n_steps < tr->step_cap) {
        memcpy(tr->logits + (size_t)tr->n_steps * C, r->logits, sizeof(float) * (size_t)C);
        if (tr->steps) {
            tr->steps[2 * tr->n_steps] = t;
            tr->steps[2 * tr->n_steps + 1] = k;
        }
    }
    if (tr) tr->n_steps++;
    return k;
}

transcribe_status tr_ga_rnnt_greedy(const ga_model *m, tr_pool *pool, const float *enc, int T,
                                    ga_tok **toks, int *n, ga_rnnt_trace *trace,
                                    bool (*abort)(void *), void *abort_user) {
    const ga_hparams *hp = &m->hp;
    const int h = hp->pred_hidden, hj = hp->joint_hidden, C = hp->n_classes;
    *toks = NULL;
    *n = 0;
    float *E = malloc(sizeof(float) * (size_t)(T > 0 ? T : 1) * (size_t)hj);
    const size_t nf = (size_t)4 * h + hj + hj + C + (size_t)tr_nn_lstm_scratch(&m->lstm);
    float *buf = calloc(nf, sizeof(float));
    size_t cap = (size_t)(T > 0 ? T : 1);
    ga_tok *out = malloc(sizeof(ga_tok) * cap);
    if (!E || !buf || !out) {
        free(E);
        free(buf);
        free(out);
        TR_ERROR("gigaam: out of memory for the transducer over %d frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    rnnt r = {.m = m, .tr = trace};
    r.g = buf;
    r.c = r.g + h;
    r.x = r.c + h; /* the zero start input */
    r.pred = r.x + h;
    r.z = r.pred + hj;
    r.logits = r.z + hj;
    r.emb = r.logits + C;
    r.scratch = r.emb + h;
    /* docs/formats/gigaam.md §6.1: e_t for every frame at once, the projection widened a
     * piece at a time */
    if (!lazy_linear(pool, &m->j_enc, m->j_enc_b, enc, T, E)) {
        free(E);
        free(buf);
        free(out);
        TR_ERROR("gigaam: out of memory for the joint's encoder projection");
        return TRANSCRIBE_ERR_OOM;
    }
    if (trace && trace->enc_proj) memcpy(trace->enc_proj, E, sizeof(float) * (size_t)T * hj);
    predict(&r, r.x); /* zero input, zero state */
    transcribe_status st = TRANSCRIBE_OK;
    size_t cnt = 0;
    for (int t = 0; st == TRANSCRIBE_OK && t < T; t++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        const float *e = E + (size_t)t * hj;
        for (int s = 0; s < GA_MAX_SYMBOLS; s++) {
            const int k = joint(&r, e, t);
            if (k == hp->blank) break;
            if (cnt == cap) {
                ga_tok *grown = realloc(out, sizeof(ga_tok) * cap * 2);
                if (!grown) {
                    st = TRANSCRIBE_ERR_OOM;
                    break;
                }
                out = grown;
                cap *= 2;
            }
            out[cnt++] = (ga_tok){k, t};
            predict(&r, embed_row(&r, k));
        }
    }
    free(E);
    free(buf);
    if (st != TRANSCRIBE_OK) {
        free(out);
        return st;
    }
    *toks = out;
    *n = (int)cnt;
    return TRANSCRIBE_OK;
}
