/* Granite NAR windowed query projector (docs/formats/granite_nar.md §5.2): per-layer LayerNorms
 * of the captured hidden states, a GELU linear to the projector width, then per window of
 * `block` frames (zero-padded at the end) n_query mean-pooled queries that cross-attend to the
 * window (with learned positions on K/V only) through pre-LN cross-attention + SiLU MLP layers,
 * and an output LayerNorm + linear to the LM width. Windows are independent, so every
 * projection runs over all windows at once; attention runs per window. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/granite_nar/granite_nar.h"
#include "tensor/ops.h"
#include "util/log.h"

transcribe_status tr_gn_project(const gn_model *m, tr_pool *pool, const float *cat, int T,
                                float **audio, int *n_audio) {
    *audio = NULL;
    *n_audio = 0;
    const gn_proj_hparams *p = &m->proj;
    const int P = p->d, W = p->block, nq = p->n_query, ds = p->downsample, e = p->enc_d;
    const int nc = m->n_cap, in_w = nc * e, H = m->lm.d_model;
    const int nb = (T + W - 1) / W, rows = nb * nq, frames = nb * W;
    const size_t big = (size_t)(p->d_ffn > P ? p->d_ffn : P);
    float *ln = malloc((size_t)T * in_w * sizeof(float));
    float *Z = calloc((size_t)frames * P, sizeof(float)); /* zero rows pad the last window */
    float *KV = malloc((size_t)frames * P * sizeof(float));
    float *k = malloc((size_t)frames * P * sizeof(float));
    float *v = malloc((size_t)frames * P * sizeof(float));
    float *Q = malloc((size_t)rows * P * sizeof(float));
    float *h = malloc((size_t)rows * big * sizeof(float));
    float *q = malloc((size_t)rows * P * sizeof(float));
    float *o = malloc((size_t)rows * P * sizeof(float));
    float *res = malloc((size_t)rows * H * sizeof(float));
    transcribe_status st = TRANSCRIBE_OK;
    if (!ln || !Z || !KV || !k || !v || !Q || !h || !q || !o || !res) {
        TR_ERROR("granite_nar: out of memory projecting %d frames", T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    /* E_j = LN(slice j) for every frame, then Z = gelu(E · W^T + b) */
    for (int t = 0; t < T; t++)
        for (int j = 0; j < nc; j++) {
            const size_t at = (size_t)t * in_w + (size_t)j * e;
            tr_layer_norm(NULL, cat + at, ln + at, 1, e, m->prj_ln[j].w, m->prj_ln[j].b, p->eps);
        }
    tr_nn_linear_fwd(pool, &m->layer_projector, ln, T, Z);
    tr_gelu_tanh(Z, (long)T * P);
    /* K/V source: Z + window positions; queries: the means of downsample rows + query */
    for (int f = 0; f < frames; f++) {
        const float *z = Z + (size_t)f * P, *wp = m->win_pos + (size_t)(f % W) * P;
        float *kv = KV + (size_t)f * P;
        for (int i = 0; i < P; i++) kv[i] = z[i] + wp[i];
    }
    for (int b = 0; b < nb; b++)
        for (int g = 0; g < nq; g++) {
            float *qr = Q + ((size_t)b * nq + g) * P;
            const float *qy = m->query + (size_t)g * P;
            for (int i = 0; i < P; i++) {
                float s = 0.0f;
                for (int r = 0; r < ds; r++) s += Z[((size_t)b * W + (size_t)g * ds + r) * P + i];
                qr[i] = s / (float)ds + qy[i];
            }
        }
    for (int l = 0; l < p->n_layer; l++) {
        const gn_proj_layer *L = &m->pl[l];
        tr_layer_norm(pool, Q, h, rows, P, L->norm_attn.w, L->norm_attn.b, p->eps);
        tr_nn_linear_fwd(pool, &L->q, h, rows, q);
        tr_nn_linear_fwd(pool, &L->k, KV, frames, k);
        tr_nn_linear_fwd(pool, &L->v, KV, frames, v);
        tr_nn_window_attn(pool, q, k, v, nb, nq, W, P, p->n_head, o);
        tr_nn_linear_fwd(pool, &L->o, o, rows, h);
        for (size_t i = 0; i < (size_t)rows * P; i++) Q[i] += h[i];
        tr_layer_norm(pool, Q, o, rows, P, L->norm_ffn.w, L->norm_ffn.b, p->eps);
        tr_nn_linear_fwd(pool, &L->fc1, o, rows, h);
        tr_ew_silu(pool, h, (long)rows * p->d_ffn);
        tr_nn_linear_fwd(pool, &L->fc2, h, rows, o);
        for (size_t i = 0; i < (size_t)rows * P; i++) Q[i] += o[i];
    }
    tr_layer_norm(pool, Q, h, rows, P, m->out_norm.w, m->out_norm.b, p->eps);
    tr_nn_linear_fwd(pool, &m->out_linear, h, rows, res);
    *audio = res;
    res = NULL;
    *n_audio = tr_gn_audio_rows(m, T);
done:
    free(ln);
    free(Z);
    free(KV);
    free(k);
    free(v);
    free(Q);
    free(h);
    free(q);
    free(o);
    free(res);
    return st;
}
