/* Granite NAR front end (docs/formats/granite_nar.md §4: per-utterance log-mel, 2-frame
 * stacking), the Conformer (§5.1, the shared nn/granite_conformer.h with captures after the
 * bypass and the blank probabilities kept) and the first-pass BPE-CTC hypothesis (§6.1). */
#include <stdlib.h>
#include <string.h>

#include "models/granite_nar/granite_nar.h"
#include "util/log.h"

/* Window rows of the BPE head per product: 32 × bpe_dim logits at a time. */
#define GN_BPE_ROWS 32

int64_t tr_gn_enc_frames(const gn_model *m, int64_t n_samples) {
    if (n_samples < m->mel.n_fft / 2 + 1) return 0;
    int64_t T_mel = n_samples / m->mel.hop_length; /* the last STFT frame is dropped */
    return T_mel / 2;                              /* an odd trailing frame is dropped */
}

int tr_gn_audio_rows(const gn_model *m, int64_t T_enc) {
    const int64_t nb = (T_enc + m->proj.block - 1) / m->proj.block;
    const int64_t a = T_enc / m->proj.downsample, b = nb * m->proj.n_query;
    return (int)(a < b ? a : b);
}

transcribe_status tr_gn_features(const gn_model *m, tr_pool *pool, const float *pcm, int n,
                                 float **x, int *T_enc) {
    return tr_mel_compute_stacked2(&m->mel, "granite_nar", pcm, n, pool, x, T_enc);
}

void tr_gn_enc_out_free(gn_enc_out *o) {
    free(o->cat);
    free(o->blank);
    free(o->last);
    o->cat = o->blank = o->last = NULL;
}

transcribe_status tr_gn_encode(const gn_model *m, tr_pool *pool, const float *x, int T,
                               bool (*abort)(void *), void *abort_user, gn_enc_out *out) {
    const int d = m->enc.d;
    out->cat = malloc((size_t)T * d * m->n_cap * sizeof(float));
    out->blank = malloc((size_t)T * sizeof(float));
    out->last = malloc((size_t)T * d * sizeof(float));
    if (!out->cat || !out->blank || !out->last) {
        tr_gn_enc_out_free(out);
        TR_ERROR("granite_nar: out of memory encoding %d frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    /* docs/formats/granite_nar.md §5.1: captures after the bypass, in layer_indices order; the
     * blank channel kept */
    const tr_gc_run run = {.n_cap = m->n_cap,
                           .cap_block = m->cap_block,
                           .cap_after_bypass = true,
                           .cap_out = out->cat,
                           .cap_stride = (long)d * m->n_cap,
                           .out = out->last,
                           .out_stride = d,
                           .blank = out->blank,
                           .should_abort = abort,
                           .abort_user = abort_user};
    transcribe_status st = tr_gc_encode(&m->enc, &m->enc_w, pool, "granite_nar", x, T, &run);
    if (st != TRANSCRIBE_OK) tr_gn_enc_out_free(out);
    return st;
}

/* docs/formats/granite_nar.md §6.1. The pooled logits of a window are Σ_t w_t·(x_t·W + b) with Σ_t
 * w_t = 1, computed as (Σ_t w_t·x_t)·W + b: the same sum in exact arithmetic with a quarter of the
 * head's work. */
transcribe_status tr_gn_hypothesis(const gn_model *m, tr_pool *pool, const gn_enc_out *e, int T,
                                   int32_t **ids_out, int *n_out) {
    *ids_out = NULL;
    *n_out = 0;
    if (m->bpe_dim <= 0 || T < 1) return TRANSCRIBE_OK; /* no BPE head: empty hypothesis */
    const int d = m->enc.d, V = m->bpe_dim, P = m->pool_window;
    const int n_win = (T + P - 1) / P, blank = m->bpe_blank, shift = blank == 0 ? 1 : 0;
    int32_t *win = malloc((size_t)n_win * sizeof(int32_t)); /* window → its row, -1 blank */
    float *pooled = malloc((size_t)n_win * d * sizeof(float));
    float *lg = malloc((size_t)GN_BPE_ROWS * V * sizeof(float));
    int32_t *ids = malloc((size_t)n_win * sizeof(int32_t));
    int32_t *arg = malloc((size_t)n_win * sizeof(int32_t));
    transcribe_status st = TRANSCRIBE_OK;
    if (!win || !pooled || !lg || !ids || !arg) {
        TR_ERROR("granite_nar: out of memory for the BPE-CTC head (%d windows)", n_win);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    int rows = 0;
    for (int w = 0; w < n_win; w++) {
        const int t0 = w * P, t1 = t0 + P < T ? t0 + P : T;
        float total = 0.0f;
        for (int t = t0; t < t1; t++) total += 1.0f - e->blank[t];
        if (total <= 1e-9f) {
            win[w] = -1;
            continue;
        }
        float *row = pooled + (size_t)rows * d;
        memset(row, 0, (size_t)d * sizeof(float));
        for (int t = t0; t < t1; t++) {
            const float wt = (1.0f - e->blank[t]) / total;
            const float *xt = e->last + (size_t)t * d;
            for (int i = 0; i < d; i++) row[i] += wt * xt[i];
        }
        win[w] = rows++;
    }
    for (int r0 = 0; r0 < rows; r0 += GN_BPE_ROWS) {
        const int R = rows - r0 < GN_BPE_ROWS ? rows - r0 : GN_BPE_ROWS;
        tr_nn_linear_fwd(pool, &m->ctc_bpe, pooled + (size_t)r0 * d, R, lg);
        for (int r = 0; r < R; r++) {
            const float *l = lg + (size_t)r * V;
            /* the upstream rule: the best starts at channel 0 with the blank id, so channel 0
             * winning reads as blank */
            int a = blank;
            float best = l[0];
            for (int v = 1; v < V; v++)
                if (l[v] > best) {
                    best = l[v];
                    a = v;
                }
            arg[r0 + r] = a;
        }
    }
    int n = 0, prev = -1;
    for (int w = 0; w < n_win; w++) {
        const int a = win[w] < 0 ? blank : arg[win[w]];
        if (a != blank && a != prev) ids[n++] = a - shift;
        prev = a;
    }
    *ids_out = ids;
    *n_out = n;
    ids = NULL;
done:
    free(win);
    free(pooled);
    free(lg);
    free(ids);
    free(arg);
    return st;
}
