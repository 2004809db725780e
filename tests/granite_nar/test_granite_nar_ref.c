/* Granite NAR steps against naive double-precision references written from the spec, on the
 * tiny synthetic file (gn_synth.h, F32 weights): the first-pass hypothesis computed the spec's
 * way (frame logits pooled in t order, docs/formats/granite_nar.md §6.1) against the family's
 * pooled-hidden form, and the windowed projector (§5.2) row by row; the editing pass of §5.3
 * and §6.3 against the bidirectional LM fed the fused rows by hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/family.h"
#include "gn_synth.h"
#include "models/granite_nar/granite_nar.h"
#include "test_util.h"
#include "transcribe.h"

static uint32_t g_rng = 5;
static float rnd(void) {
    return tr_synth_rand32(&g_rng);
}

/* y[o] = b[o] + Σ_i W[o][i] x[i] on an F32 linear */
static void lin(const tr_nn_linear *l, const double *x, double *y) {
    const int in = (int)l->w->ne[0], out = (int)l->w->ne[1];
    const float *W = l->w->data;
    for (int o = 0; o < out; o++) {
        double s = l->b ? l->b[o] : 0.0;
        for (int i = 0; i < in; i++) s += (double)W[(size_t)o * in + i] * x[i];
        y[o] = s;
    }
}

static void ln(const double *x, double *y, int n, const tr_nn_norm *g, double eps) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    v /= n;
    for (int i = 0; i < n; i++) y[i] = (x[i] - m) / sqrt(v + eps) * g->w[i] + g->b[i];
}

static void test_hypothesis(const gn_model *m) {
    const int T = 41, d = m->enc.d, V = m->bpe_dim, P = m->pool_window;
    gn_enc_out e = {0};
    e.blank = malloc(sizeof(float) * T);
    e.last = malloc(sizeof(float) * T * d);
    for (int t = 0; t < T; t++) {
        /* frames 8..11 blank: one blank window */
        e.blank[t] = t >= 8 && t < 12 ? 1.0f : 0.5f + 0.4f * rnd();
        for (int i = 0; i < d; i++) e.last[t * d + i] = 2.0f * rnd();
    }
    int32_t *ids = NULL;
    int n = 0;
    CHECK(tr_gn_hypothesis(m, NULL, &e, T, &ids, &n) == TRANSCRIBE_OK);
    /* the spec's way */
    double *lg = malloc(sizeof(double) * T * V), *pooled = malloc(sizeof(double) * V), x[64];
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < d; i++) x[i] = e.last[t * d + i];
        lin(&m->ctc_bpe, x, lg + (size_t)t * V);
    }
    int32_t want[64];
    int nw = 0, prev = -1, blank_windows = 0;
    double margin = 1e9;
    for (int w = 0; w * P < T; w++) {
        const int t0 = w * P, t1 = t0 + P < T ? t0 + P : T;
        double tot = 0;
        for (int t = t0; t < t1; t++) tot += 1.0 - e.blank[t];
        int a = m->bpe_blank;
        if (tot > 1e-9) {
            for (int v = 0; v < V; v++) {
                pooled[v] = 0;
                for (int t = t0; t < t1; t++) pooled[v] += (1.0 - e.blank[t]) / tot * lg[t * V + v];
            }
            double best = pooled[0], second = -1e300;
            for (int v = 1; v < V; v++)
                if (pooled[v] > best) {
                    second = best;
                    best = pooled[v];
                    a = v;
                } else if (pooled[v] > second)
                    second = pooled[v];
            if (best - second < margin) margin = best - second;
        } else
            blank_windows++;
        if (a != m->bpe_blank && a != prev) want[nw++] = a;
        prev = a;
    }
    printf("hypothesis: %d ids (reference %d), %d blank window, smallest margin %.3g\n", n, nw,
           blank_windows, margin);
    CHECK(blank_windows == 1 && nw > 3);
    CHECK(n == nw && ids && memcmp(ids, want, sizeof(int32_t) * nw) == 0);
    free(ids);
    free(lg);
    free(pooled);
    tr_gn_enc_out_free(&e);
}

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static void test_projector(const gn_model *m) {
    const gn_proj_hparams *p = &m->proj;
    const int T = 37, e = p->enc_d, nc = m->n_cap, Pd = p->d, W = p->block, nq = p->n_query;
    const int nb = (T + W - 1) / W, H = m->lm.d_model, nh = p->n_head, dh = Pd / nh;
    float *cat = malloc(sizeof(float) * T * nc * e);
    for (int i = 0; i < T * nc * e; i++) cat[i] = 1.5f * rnd();
    float *audio = NULL;
    int n_audio = 0;
    CHECK(tr_gn_project(m, NULL, cat, T, &audio, &n_audio) == TRANSCRIBE_OK);
    CHECK(n_audio == tr_gn_audio_rows(m, T) && n_audio == 7); /* min(37/5, 9) */
    double *Z = calloc((size_t)nb * W * Pd, sizeof(double)), E[256], y[256];
    for (int t = 0; t < T; t++) {
        for (int j = 0; j < nc; j++) {
            double xs[128];
            for (int i = 0; i < e; i++) xs[i] = cat[(size_t)t * nc * e + j * e + i];
            ln(xs, E + j * e, e, &m->prj_ln[j], p->eps);
        }
        lin(&m->layer_projector, E, y);
        for (int i = 0; i < Pd; i++) Z[(size_t)t * Pd + i] = gelu(y[i]);
    }
    double err = 0, ref_max = 0;
    for (int b = 0; b < nb; b++) {
        double KV[15][64], Q[3][64], k[15][64], v[15][64], q[3][64], o[3][64], h[256], t2[256];
        for (int r = 0; r < W; r++)
            for (int i = 0; i < Pd; i++)
                KV[r][i] = Z[((size_t)b * W + r) * Pd + i] + m->win_pos[r * Pd + i];
        for (int g = 0; g < nq; g++)
            for (int i = 0; i < Pd; i++) {
                double s = 0;
                for (int r = 0; r < p->downsample; r++)
                    s += Z[((size_t)b * W + g * p->downsample + r) * Pd + i];
                Q[g][i] = s / p->downsample + m->query[g * Pd + i];
            }
        for (int l = 0; l < p->n_layer; l++) {
            const gn_proj_layer *L = &m->pl[l];
            for (int r = 0; r < W; r++) {
                lin(&L->k, KV[r], k[r]);
                lin(&L->v, KV[r], v[r]);
            }
            for (int g = 0; g < nq; g++) {
                ln(Q[g], h, Pd, &L->norm_attn, p->eps);
                lin(&L->q, h, q[g]);
            }
            for (int g = 0; g < nq; g++)
                for (int hh = 0; hh < nh; hh++) {
                    double sc[15], mx = -1e300, sum = 0;
                    for (int r = 0; r < W; r++) {
                        double s = 0;
                        for (int i = 0; i < dh; i++) s += q[g][hh * dh + i] * k[r][hh * dh + i];
                        sc[r] = s / sqrt((double)dh);
                        if (sc[r] > mx) mx = sc[r];
                    }
                    for (int r = 0; r < W; r++) sum += (sc[r] = exp(sc[r] - mx));
                    for (int i = 0; i < dh; i++) {
                        double a = 0;
                        for (int r = 0; r < W; r++) a += sc[r] * v[r][hh * dh + i];
                        o[g][hh * dh + i] = a / sum;
                    }
                }
            for (int g = 0; g < nq; g++) {
                lin(&L->o, o[g], h);
                for (int i = 0; i < Pd; i++) Q[g][i] += h[i];
                ln(Q[g], h, Pd, &L->norm_ffn, p->eps);
                lin(&L->fc1, h, t2);
                for (int i = 0; i < p->d_ffn; i++) t2[i] = t2[i] / (1.0 + exp(-t2[i]));
                lin(&L->fc2, t2, h);
                for (int i = 0; i < Pd; i++) Q[g][i] += h[i];
            }
        }
        for (int g = 0; g < nq; g++) {
            const int row = b * nq + g;
            if (row >= n_audio) continue;
            ln(Q[g], h, Pd, &m->out_norm, p->eps);
            lin(&m->out_linear, h, y);
            /* (comparisons, not fmax: Debian's aarch64 GCC 12 vectorizer fails
             * with an internal error on this double fmax reduction) */
            for (int i = 0; i < H; i++) {
                const double d = fabs(y[i] - audio[(size_t)row * H + i]), a = fabs(y[i]);
                if (d > err) err = d;
                if (a > ref_max) ref_max = a;
            }
        }
    }
    printf("projector: max |diff| %.3g (values up to %.3g)\n", err, ref_max);
    CHECK(ref_max > 0.1 && err < 2e-4 * (1.0 + ref_max));
    free(Z);
    free(cat);
    free(audio);
}

/* The edit: audio rows (÷12 then ×12), slotted text, one bidirectional pass, the decode. */
static void test_edit(const gn_model *m) {
    const int n_audio = 5, H = m->lm.d_model;
    float *audio = malloc(sizeof(float) * n_audio * H);
    for (int i = 0; i < n_audio * H; i++) audio[i] = rnd();
    const int32_t hyp[4] = {260, 261, 261, 100};
    int32_t text[16], out[16];
    const int n_text = tr_gn_slots(hyp, 4, m->eos, text);
    CHECK(n_text == 9);
    float *lg = malloc(sizeof(float) * n_text * m->lm.n_vocab);
    int n_out = 0;
    CHECK(tr_gn_edit(m, NULL, audio, n_audio, text, n_text, NULL, NULL, lg, out, &n_out) ==
          TRANSCRIBE_OK);
    /* by hand: fused rows through tr_clm_bidi */
    const int n = n_audio + n_text;
    float *x = malloc(sizeof(float) * n * H);
    int32_t ids[32] = {0}, am[16], want[16];
    memcpy(ids + n_audio, text, sizeof(int32_t) * n_text);
    tr_clm_embed(&m->lm, &m->lm_w, ids, n, NULL, 0, 0, x);
    for (int i = 0; i < n_audio * H; i++) x[i] = audio[i] * (1.0f / 12.0f) * 12.0f;
    CHECK(tr_clm_bidi(&m->lm, &m->lm_w, NULL, x, n, n_audio, am, NULL, NULL, NULL) ==
          TRANSCRIBE_OK);
    const int nw = tr_gn_collapse(am, n_text, m->eos, want);
    CHECK(n_out == nw && memcmp(out, want, sizeof(int32_t) * nw) == 0);
    /* the weak residual of the synthetic LM reads each slot's own token back: the
     * hypothesis, the repeat kept (an EOS slot lies between its two copies) */
    CHECK(n_out == 4 && memcmp(out, hyp, sizeof hyp) == 0);
    printf("edit: %d ids:", n_out);
    for (int i = 0; i < n_out; i++) printf(" %d", out[i]);
    printf("\n");
    free(audio);
    free(lg);
    free(x);
}

int main(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/gn_ref_%d.gguf", TR_BINARY_DIR, (int)getpid());
    gn_synth_cfg c = gn_synth_default();
    CHECK(gn_synth_write(path, &c));
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (s) {
        const gn_session *fs = tr_session_head_of(s)->fsession;
        test_hypothesis(fs->m);
        test_projector(fs->m);
        test_edit(fs->m);
    }
    transcribe_session_free(s);
    remove(path);
    return TEST_DONE();
}
