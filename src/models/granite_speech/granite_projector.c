/* Granite Speech Q-Former projector (docs/formats/granite_speech.md §6.2): the learned queries,
 * normalised once, attend to themselves and then to the 15 encoder frames of their window
 * (zero-padded at the end) through the BLIP-2 post-LN layers; each window yields 3 rows lifted to
 * the LM width. Windows are independent, so every projection runs over all windows at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/granite_speech/granite.h"
#include "tensor/ops.h"
#include "util/log.h"

/* y = LN(a + y) over rows of d. */
static void add_norm(tr_pool *pool, float *y, const float *a, int rows, int d, const tr_nn_norm *n,
                     float eps) {
    for (size_t i = 0; i < (size_t)rows * d; i++) y[i] += a[i];
    tr_layer_norm(pool, y, y, rows, d, n->w, n->b, eps);
}

transcribe_status tr_gs_project(const gs_model *m, tr_pool *pool, const float *enc, int T,
                                float **audio, int *n_audio) {
    *audio = NULL;
    *n_audio = 0;
    const gs_proj_hparams *p = &m->proj;
    const int d = p->d, W = p->window, nq = p->n_query, e = p->enc_d;
    const int nb = (T + W - 1) / W, rows = nb * nq, frames = nb * W;
    const int big = p->d_ffn > d ? p->d_ffn : d;
    float *src = calloc((size_t)frames * e, sizeof(float));
    float *Q = malloc((size_t)rows * d * sizeof(float));
    float *q = malloc((size_t)rows * d * sizeof(float));
    float *k = malloc((size_t)frames * d * sizeof(float));
    float *v = malloc((size_t)frames * d * sizeof(float));
    float *t = malloc((size_t)rows * big * sizeof(float));
    float *o = malloc((size_t)rows * d * sizeof(float));
    float *res = malloc((size_t)rows * m->lm.d_model * sizeof(float));
    transcribe_status st = TRANSCRIBE_OK;
    if (!src || !Q || !q || !k || !v || !t || !o || !res) {
        TR_ERROR("granite_speech: out of memory projecting %d frames", T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    memcpy(src, enc, (size_t)T * e * sizeof(float)); /* zero frames pad the last window */
    /* the input LayerNorm (named final_norm) on the learned queries */
    tr_layer_norm(pool, m->query, Q, nq, d, m->qf_norm.w, m->qf_norm.b, p->eps);
    for (int b = 1; b < nb; b++) memcpy(Q + (size_t)b * nq * d, Q, (size_t)nq * d * sizeof(float));
    for (int l = 0; l < p->n_layer; l++) {
        const gs_qf_layer *L = &m->qf[l];
        tr_nn_linear_fwd(pool, &L->sq, Q, rows, q);
        tr_nn_linear_fwd(pool, &L->sk, Q, rows, k);
        tr_nn_linear_fwd(pool, &L->sv, Q, rows, v);
        tr_nn_window_attn(pool, q, k, v, nb, nq, nq, p->d, p->n_head, t);
        tr_nn_linear_fwd(pool, &L->so, t, rows, o);
        add_norm(pool, Q, o, rows, d, &L->n_self, p->eps);

        tr_nn_linear_fwd(pool, &L->cq, Q, rows, q);
        tr_nn_linear_fwd(pool, &L->ck, src, frames, k);
        tr_nn_linear_fwd(pool, &L->cv, src, frames, v);
        tr_nn_window_attn(pool, q, k, v, nb, nq, W, p->d, p->n_head, t);
        tr_nn_linear_fwd(pool, &L->co, t, rows, o);
        add_norm(pool, Q, o, rows, d, &L->n_cross, p->eps);

        tr_nn_linear_fwd(pool, &L->up, Q, rows, t);
        tr_gelu(t, (long)rows * p->d_ffn);
        tr_nn_linear_fwd(pool, &L->down, t, rows, o);
        add_norm(pool, Q, o, rows, d, &L->n_ffn, p->eps);
    }
    tr_nn_linear_fwd(pool, &m->proj_out, Q, rows, res);
    *audio = res;
    res = NULL;
    *n_audio = rows;
done:
    free(src);
    free(Q);
    free(q);
    free(k);
    free(v);
    free(t);
    free(o);
    free(res);
    return st;
}
