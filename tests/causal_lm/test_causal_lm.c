/* The shared causal-LM decoder (src/nn/causal_lm.h) against a naive
 * reference written as straight loops in double, without a KV cache (each
 * position recomputes the whole prefix): prefill logits (one chunk and
 * several), greedy tokens, F16 KV, quantized weights, the greedy loop's
 * stop rules (EOS, budget, window, abort), the batched loop giving
 * every row its single-run tokens, and the additive input rows with the
 * sliding-window ring (Voxtral Realtime's options). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clm_wire.h"
#include "nn/causal_lm.h"
#include "nn/causal_lm_internal.h"
#include "tensor/dtype.h"
#include "test_util.h"

enum { L = 2, D = 32, NH = 4, NKV = 2, HD = 16, F = 64, V = 61 };
#define QD (NH * HD)
#define KD (NKV * HD)

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    return tu_clm_frand(&rng);
}

typedef struct model {
    tr_clm_hparams hp;
    tr_clm_weights w;
    tr_clm_block blk[L];
    tr_tensor t[L * 7 + 1];
    float *f32[L * 7 + 1]; /* the F32 values (reference) */
    void *data[L * 7 + 1]; /* the stored values (any type) */
    float norms[L][4][QD > D ? QD : D];
    float out_norm[D];
} model;

static void make_tensor(model *m, int i, const char *name, int64_t in, int64_t out, int type,
                        float amp) {
    float *f = malloc((size_t)(in * out) * sizeof(float));
    for (int64_t j = 0; j < in * out; j++) f[j] = amp * frand();
    size_t rb = tr_row_bytes(type, in);
    void *d = malloc(rb * (size_t)out);
    for (int64_t r = 0; r < out; r++) tr_quantize_row(type, f + r * in, (char *)d + r * rb, in);
    /* the reference sees the stored (rounded) values */
    for (int64_t r = 0; r < out; r++) tr_dequantize_row(type, (char *)d + r * rb, f + r * in, in);
    m->f32[i] = f;
    m->data[i] = d;
    m->t[i] = (tr_tensor){.name = name,
                          .type = type,
                          .n_dims = 2,
                          .ne = {in, out, 1, 1},
                          .nb1 = rb,
                          .nbytes = rb * (size_t)out,
                          .data = d};
}

static void model_init(model *m, int type) {
    memset(m, 0, sizeof *m);
    m->hp = (tr_clm_hparams){.n_layer = L,
                             .d_model = D,
                             .n_head = NH,
                             .n_head_kv = NKV,
                             .head_dim = HD,
                             .d_ffn = F,
                             .n_vocab = V,
                             .eps = 1e-6f,
                             .rope_theta = 10000.0f,
                             .qk_norm = true};
    tr_clm_hparams_defaults(&m->hp);
    rng = 88172645463325252ull;
    for (int l = 0; l < L; l++) {
        make_tensor(m, l * 7 + 0, "q", D, QD, type, 0.4f);
        make_tensor(m, l * 7 + 1, "k", D, KD, type, 0.4f);
        make_tensor(m, l * 7 + 2, "v", D, KD, type, 0.4f);
        make_tensor(m, l * 7 + 3, "o", QD, D, type, 0.3f);
        make_tensor(m, l * 7 + 4, "gate", D, F, type, 0.4f);
        make_tensor(m, l * 7 + 5, "up", D, F, type, 0.4f);
        make_tensor(m, l * 7 + 6, "down", F, D, type, 0.3f);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < D; i++) m->norms[l][j][i] = 1.0f + 0.2f * frand();
        tu_clm_wire(&m->blk[l], &m->t[l * 7], m->norms[l][0], m->norms[l][1], m->norms[l][2],
                    m->norms[l][3]);
    }
    make_tensor(m, L * 7, "emb", D, V, type, 1.0f);
    for (int i = 0; i < D; i++) m->out_norm[i] = 1.0f + 0.2f * frand();
    m->w = (tr_clm_weights){
        .tok_emb = &m->t[L * 7], .out_norm = m->out_norm, .head = &m->t[L * 7], .blocks = m->blk};
}

static void model_free(model *m) {
    for (int i = 0; i < L * 7 + 1; i++) {
        free(m->f32[i]);
        free(m->data[i]);
    }
}

/* ---- naive reference (double, no cache) ---- */

static void ref_rms(const double *x, double *y, int n, const float *g) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    double r = 1.0 / sqrt(s / n + 1e-6);
    for (int i = 0; i < n; i++) y[i] = x[i] * r * g[i];
}

static void ref_lin(const float *W, int in, int out, const double *x, double *y) {
    for (int o = 0; o < out; o++) {
        double s = 0;
        for (int i = 0; i < in; i++) s += (double)W[(size_t)o * in + i] * x[i];
        y[o] = s;
    }
}

static void ref_rope(double *v, int pos) {
    for (int i = 0; i < HD / 2; i++) {
        double th = pos * pow(10000.0, -2.0 * i / HD);
        double a = v[i], b = v[i + HD / 2];
        v[i] = a * cos(th) - b * sin(th);
        v[i + HD / 2] = a * sin(th) + b * cos(th);
    }
}

/* Logits of rows row0..n-1 of n positions whose input rows are x0 [n][D], causal or
 * bidirectional (every position attends to all n). */
static int g_ref_window; /* > 0: causal attention over the last g_ref_window positions only */

static void ref_forward_ex(const model *m, const double *x0, int n, bool causal, int row0,
                           double *logits) {
    double *x = malloc(sizeof(double) * (size_t)n * D);
    double *K = malloc(sizeof(double) * (size_t)n * KD),
           *Vv = malloc(sizeof(double) * (size_t)n * KD);
    double *Qm = malloc(sizeof(double) * (size_t)n * QD);
    memcpy(x, x0, sizeof(double) * (size_t)n * D);
    double h[QD], o[QD], t[F], u[F], sc[4096];
    for (int l = 0; l < L; l++) {
        const float *const *W = (const float *const *)&m->f32[l * 7];
        for (int p = 0; p < n; p++) {
            ref_rms(x + p * D, h, D, m->norms[l][0]);
            ref_lin(W[0], D, QD, h, Qm + p * QD);
            ref_lin(W[1], D, KD, h, K + p * KD);
            ref_lin(W[2], D, KD, h, Vv + p * KD);
            for (int hh = 0; hh < NH; hh++) {
                ref_rms(Qm + p * QD + hh * HD, Qm + p * QD + hh * HD, HD, m->norms[l][2]);
                ref_rope(Qm + p * QD + hh * HD, p);
            }
            for (int g = 0; g < NKV; g++) {
                ref_rms(K + p * KD + g * HD, K + p * KD + g * HD, HD, m->norms[l][3]);
                ref_rope(K + p * KD + g * HD, p);
            }
        }
        for (int p = 0; p < n; p++) {
            for (int hh = 0; hh < NH; hh++) {
                int g = hh / (NH / NKV);
                double mx = -1e300, sum = 0;
                const int kn = causal ? p : n - 1;
                const int k0 =
                    causal && g_ref_window > 0 && p + 1 > g_ref_window ? p + 1 - g_ref_window : 0;
                for (int k = k0; k <= kn; k++) {
                    double s = 0;
                    for (int d = 0; d < HD; d++)
                        s += Qm[p * QD + hh * HD + d] * K[k * KD + g * HD + d];
                    sc[k] = s / sqrt((double)HD);
                    if (sc[k] > mx) mx = sc[k];
                }
                for (int k = k0; k <= kn; k++) sum += (sc[k] = exp(sc[k] - mx));
                for (int d = 0; d < HD; d++) {
                    double a = 0;
                    for (int k = k0; k <= kn; k++) a += sc[k] * Vv[k * KD + g * HD + d];
                    o[hh * HD + d] = a / sum;
                }
            }
            double y[D];
            ref_lin(W[3], QD, D, o, y);
            for (int i = 0; i < D; i++) x[p * D + i] += y[i];
            ref_rms(x + p * D, h, D, m->norms[l][1]);
            ref_lin(W[4], D, F, h, t);
            ref_lin(W[5], D, F, h, u);
            for (int i = 0; i < F; i++) t[i] = t[i] / (1 + exp(-t[i])) * u[i];
            ref_lin(W[6], F, D, t, y);
            for (int i = 0; i < D; i++) x[p * D + i] += y[i];
        }
    }
    for (int r = row0; r < n; r++) {
        ref_rms(x + r * D, h, D, m->out_norm);
        ref_lin(m->f32[L * 7], D, V, h, logits + (size_t)(r - row0) * V);
    }
    free(x);
    free(K);
    free(Vv);
    free(Qm);
}

static void ref_forward(const model *m, const double *x0, int n, double *logits) {
    ref_forward_ex(m, x0, n, true, n - 1, logits);
}

static void ref_embed(const model *m, const int32_t *ids, int n, double *x) {
    for (int p = 0; p < n; p++)
        for (int i = 0; i < D; i++) x[p * D + i] = m->f32[L * 7][(size_t)ids[p] * D + i];
}

static int ref_argmax(const double *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Greedy reference: n_gen tokens after the prompt. */
static void ref_greedy(const model *m, const int32_t *prompt, int n, int n_gen, int32_t *out) {
    int32_t ids[600];
    memcpy(ids, prompt, sizeof(int32_t) * (size_t)n);
    double *x = malloc(sizeof(double) * (size_t)(n + n_gen) * D), lg[V];
    for (int g = 0; g < n_gen; g++) {
        ref_embed(m, ids, n + g, x);
        ref_forward(m, x, n + g, lg);
        out[g] = ids[n + g] = ref_argmax(lg, V);
    }
    free(x);
}

static void make_prompt(int32_t *ids, int n, int seed) {
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 7 + seed * 13 + (i * i) % 11) % V);
}

/* ---- tests ---- */

static void test_prefill(int type, bool kv16, int n, double tol) {
    model m;
    model_init(&m, type);
    CHECK(tr_clm_check(&m.hp, &m.w));
    int32_t ids[600];
    make_prompt(ids, n, 1);
    double *xr = malloc(sizeof(double) * (size_t)n * D), lr[V];
    ref_embed(&m, ids, n, xr);
    ref_forward(&m, xr, n, lr);

    tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
    CHECK(tr_clm_reserve(st, 1, tr_clm_ctx_pow2(n + 8, 0)) == TRANSCRIBE_OK);
    float *x = malloc(sizeof(float) * (size_t)n * D), lg[V];
    tr_clm_embed(&m.hp, &m.w, ids, n, NULL, 0, 0, x);
    int tok = tr_clm_prefill(st, NULL, x, n, 0, lg);
    double err = 0;
    for (int i = 0; i < V; i++) { /* written out: GCC 12 aarch64 cannot vectorise fmax(fabs) */
        double d = fabs(lg[i] - lr[i]);
        if (d > err) err = d;
    }
    CHECK_MSG(err <= tol, "type %s kv16 %d n %d: max |logit diff| %g > %g", tr_type_name(type),
              kv16, n, err, tol);
    CHECK(tok == ref_argmax(lr, V) || err > 0);
    free(x);
    free(xr);
    tr_clm_state_free(st);
    model_free(&m);
}

/* Additive input rows (tr_clm_set_input_rows) and the sliding window (tr_clm_set_window): the
 * sequence whose input at position p is E[id_p] + R[p], decoded as a prefill of the first NP rows
 * (R added by hand) and then one-row steps, one verify step (tr_clm_step_seq) or batched steps of
 * the same rows in two slots, or verify steps of the row and three rejected drafts each (their
 * rows overwrite live ring rows, which the next step must find as they were), against the
 * reference's last-row logits; with a window of W < the positions, the cache holds W rows (a ring)
 * and the reference attends to the last W positions.
 * The table is given from position NP (offset arithmetic); cleared, the step differs. */
static void test_input_rows(int type, bool kv16, int window, double tol) {
    enum { NP = 12, NS = 8 };
    model m;
    model_init(&m, type);
    int32_t ids[NP + NS];
    make_prompt(ids, NP + NS, 3);
    float R[(NP + NS) * D];
    for (int i = 0; i < (NP + NS) * D; i++) R[i] = 0.5f * frand();
    double xr[(NP + NS) * D], lr[V];
    ref_embed(&m, ids, NP + NS, xr);
    for (int i = 0; i < (NP + NS) * D; i++) xr[i] += R[i];
    g_ref_window = window;
    ref_forward(&m, xr, NP + NS, lr);
    g_ref_window = 0;
    for (int path = 0; path < 4; path++) {
        tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
        CHECK(tr_clm_set_window(st, window));
        const int slots = path == 2 ? 2 : 1;
        CHECK(tr_clm_reserve(st, slots, window > 0 ? window : NP + NS) == TRANSCRIBE_OK);
        CHECK(tr_clm_cache(st)->n_ctx == (window > 0 ? window : NP + NS));
        float x[NP * D], lg[V];
        const float *got = NULL;
        for (int sl = 0; sl < slots; sl++) {
            tr_clm_embed(&m.hp, &m.w, ids, NP, NULL, 0, 0, x);
            for (int i = 0; i < NP * D; i++) x[i] += R[i];
            CHECK(tr_clm_prefill(st, NULL, x, NP, sl, NULL) >= 0);
            CHECK(tr_clm_set_input_rows(st, sl, R + NP * D, NP, NS));
        }
        if (path == 0) {
            int32_t next;
            for (int k = 0; k < NS; k++) {
                int pos = NP + k, slot = 0;
                CHECK(tr_clm_step(st, NULL, &ids[NP + k], &pos, &slot, 1, &next));
            }
            got = tr_clm_step_logits(st, 0);
        } else if (path == 1) {
            int32_t next[NS];
            CHECK(tr_clm_step_seq(st, NULL, ids + NP, NS, NP, 0, next));
            got = tr_clm_step_logits(st, NS - 1);
        } else if (path == 2) {
            int32_t next[2];
            for (int k = 0; k < NS; k++) {
                const int32_t two[2] = {ids[NP + k], ids[NP + k]};
                int pos[2] = {NP + k, NP + k}, sl[2] = {1, 0};
                CHECK(tr_clm_step(st, NULL, two, pos, sl, 2, next));
            }
            got = tr_clm_step_logits(st, 1); /* slot 0 */
        } else {
            int32_t next[4];
            for (int k = 0; k < NS; k++) {
                const int32_t four[4] = {ids[NP + k], (ids[NP + k] + 1) % V, 2, 5};
                const int n = k + 4 <= NS ? 4 : NS - k; /* inside the cache without a window */
                CHECK(tr_clm_step_seq(st, NULL, four, n, NP + k, 0, next));
            }
            got = tr_clm_step_logits(st, 0);
        }
        double err = 0;
        for (int i = 0; got && i < V; i++) {
            lg[i] = got[i];
            double d = fabs(lg[i] - lr[i]);
            if (d > err) err = d;
        }
        CHECK_MSG(got && err <= tol, "input rows %s kv16 %d window %d path %d: %g > %g",
                  tr_type_name(type), kv16, window, path, err, tol);
        /* cleared rows add nothing: the same step differs */
        tr_clm_clear_input_rows(st);
        int pos = NP + NS - 1, slot = 0;
        int32_t next;
        CHECK(tr_clm_step(st, NULL, &ids[NP + NS - 1], &pos, &slot, 1, &next));
        const float *plain = tr_clm_step_logits(st, 0);
        bool differs = false;
        for (int i = 0; plain && i < V; i++) differs |= plain[i] != lg[i];
        CHECK(differs);
        CHECK(!tr_clm_set_input_rows(st, -1, R, 0, 1));
        if (window > 0) { /* a prefill longer than the window is refused */
            float big[(NP + NS) * D];
            tr_clm_embed(&m.hp, &m.w, ids, window + 1, NULL, 0, 0, big);
            CHECK(tr_clm_prefill(st, NULL, big, window + 1, 0, NULL) < 0);
        }
        tr_clm_state_free(st);
    }
    model_free(&m);
}

static int n_abort_calls;
static bool abort_after_3(void *u) {
    (void)u;
    return ++n_abort_calls >= 3;
}

static void test_greedy(bool kv16) {
    model m;
    model_init(&m, TR_F32);
    enum { NP = 9, NG = 12 };
    int32_t prompt[NP], ref[NG];
    make_prompt(prompt, NP, 2);
    ref_greedy(&m, prompt, NP, NG, ref);

    tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
    float x[NP * D];
    int32_t out[64];
    int n_out = 0;
    /* free run of the budget */
    CHECK(tr_clm_reserve(st, 1, 1024) == TRANSCRIBE_OK);
    tr_clm_embed(&m.hp, &m.w, prompt, NP, NULL, 0, 0, x);
    int first = tr_clm_prefill(st, NULL, x, NP, 0, NULL);
    tr_clm_greedy_cfg cfg = {.eos = -1, .max_new = NG, .max_n_kv = 1024};
    transcribe_status rc = tr_clm_greedy(st, NULL, &cfg, first, NP, out, &n_out);
    CHECK(rc == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(n_out == NG);
    int same = 0;
    for (int i = 0; i < NG && i < n_out; i++) same += out[i] == ref[i];
    CHECK_MSG(same == NG, "kv16 %d: %d of %d greedy tokens match the reference", kv16, same, NG);

    /* EOS: the 6th reference token stops the loop and is not returned */
    int eos_at = 5;
    bool earlier = false;
    for (int i = 0; i < eos_at; i++) earlier |= ref[i] == ref[eos_at];
    if (!earlier) {
        CHECK(tr_clm_reserve(st, 1, 1024) == TRANSCRIBE_OK);
        tr_clm_embed(&m.hp, &m.w, prompt, NP, NULL, 0, 0, x);
        first = tr_clm_prefill(st, NULL, x, NP, 0, NULL);
        cfg.eos = ref[eos_at];
        rc = tr_clm_greedy(st, NULL, &cfg, first, NP, out, &n_out);
        CHECK(rc == TRANSCRIBE_OK);
        CHECK(n_out == eos_at);
    }
    /* window: max_n_kv = NP + 4 allows 4 steps → 5 tokens */
    cfg.eos = -1;
    cfg.max_n_kv = NP + 4;
    tr_clm_embed(&m.hp, &m.w, prompt, NP, NULL, 0, 0, x);
    first = tr_clm_prefill(st, NULL, x, NP, 0, NULL);
    rc = tr_clm_greedy(st, NULL, &cfg, first, NP, out, &n_out);
    CHECK(rc == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_out == 5);
    /* abort at the 3rd poll (before the 3rd step) keeps 3 tokens */
    cfg.max_n_kv = 1024;
    cfg.should_abort = abort_after_3;
    n_abort_calls = 0;
    tr_clm_embed(&m.hp, &m.w, prompt, NP, NULL, 0, 0, x);
    first = tr_clm_prefill(st, NULL, x, NP, 0, NULL);
    rc = tr_clm_greedy(st, NULL, &cfg, first, NP, out, &n_out);
    CHECK(rc == TRANSCRIBE_ERR_ABORTED && n_out == 3);
    for (int i = 0; i < n_out; i++) CHECK(out[i] == ref[i]);
    tr_clm_state_free(st);
    model_free(&m);
}

/* Batched prefill + loop: prompts of different lengths (one longer than a
 * prefill pass, one not run), per-row budgets and windows; every subset of
 * 1..4 rows gives each row its single-run first-token logits (within
 * rounding), tokens and status. */
enum { BB = 5, BNG = 12, BMAXP = 300 };
static const int k_len[BB] = {7, 12, BMAXP, 5, 9};
static const int k_budget[BB] = {BNG, 4, BNG, BNG, BNG};         /* row 1 stops at its budget */
static const int k_window[BB] = {1024, 1024, 1024, 1024, 9 + 3}; /* row 4 at its window */

static void test_batch(bool kv16, int type, double tol) {
    model m;
    model_init(&m, type);
    int32_t *prompts[BB], single[BB][BNG];
    float single_lg[BB][V];
    int n_single[BB];
    transcribe_status st_single[BB];
    tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
    float *x = malloc(sizeof(float) * BMAXP * D);
    for (int b = 0; b < BB; b++) {
        prompts[b] = malloc(sizeof(int32_t) * (size_t)k_len[b]);
        make_prompt(prompts[b], k_len[b], 10 + b);
        tr_clm_greedy_cfg cfg = {.eos = 3, .max_new = k_budget[b], .max_n_kv = k_window[b]};
        CHECK(tr_clm_reserve(st, 1, 1024) == TRANSCRIBE_OK);
        tr_clm_embed(&m.hp, &m.w, prompts[b], k_len[b], NULL, 0, 0, x);
        int first = tr_clm_prefill(st, NULL, x, k_len[b], 0, single_lg[b]);
        st_single[b] = tr_clm_greedy(st, NULL, &cfg, first, k_len[b], single[b], &n_single[b]);
    }
    CHECK(st_single[1] == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_single[1] == 4);
    CHECK(st_single[4] == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_single[4] == 4);
    /* batches: rows {0}, {0,1}, {0,1,2}, {0..3}, {1..4} and all with row 3 not run */
    static const int sets[][BB + 1] = {{1, 0},          {2, 0, 1},       {3, 0, 1, 2},
                                       {4, 0, 1, 2, 3}, {4, 1, 2, 3, 4}, {5, 0, 1, 2, 3, 4}};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        const int n = sets[k][0];
        const bool skip3 = k == 5;
        tr_clm_batch_row rows[BB];
        int32_t out[BB][BNG];
        float *xs[BB] = {0};
        for (int i = 0; i < n; i++) {
            int b = sets[k][1 + i];
            xs[i] = skip3 && b == 3 ? NULL : malloc(sizeof(float) * (size_t)k_len[b] * D);
            if (xs[i]) tr_clm_embed(&m.hp, &m.w, prompts[b], k_len[b], NULL, 0, 0, xs[i]);
            rows[i] = (tr_clm_batch_row){.x = xs[i],
                                         .T = k_len[b],
                                         .max_new = k_budget[b],
                                         .max_n_kv = k_window[b],
                                         .out = out[i]};
        }
        tr_clm_greedy_cfg cfg = {.eos = 3, .max_new = 1, .max_n_kv = 1};
        CHECK(tr_clm_run_batch(st, NULL, &cfg, rows, n, 1024, NULL) == TRANSCRIBE_OK);
        for (int i = 0; i < n; i++) {
            int b = sets[k][1 + i];
            if (!xs[i]) {
                CHECK(rows[i].slot < 0 && rows[i].n_out == 0);
                continue;
            }
            CHECK_MSG(rows[i].n_out == n_single[b], "set %zu row %d: %d vs %d tokens", k, b,
                      rows[i].n_out, n_single[b]);
            CHECK(memcmp(out[i], single[b], sizeof(int32_t) * (size_t)n_single[b]) == 0);
            CHECK(rows[i].status == st_single[b]);
            free(xs[i]);
        }
    }
    /* batched prefill alone: logits of each row as its single prefill */
    {
        float *xs[BB];
        int T[BB], slots[BB];
        int32_t first[BB];
        for (int b = 0; b < BB; b++) {
            xs[b] = malloc(sizeof(float) * (size_t)k_len[b] * D);
            tr_clm_embed(&m.hp, &m.w, prompts[b], k_len[b], NULL, 0, 0, xs[b]);
            T[b] = k_len[b];
            slots[b] = BB - 1 - b;
        }
        CHECK(tr_clm_reserve(st, BB, 1024) == TRANSCRIBE_OK);
        CHECK(tr_clm_prefill_batch(st, NULL, xs, T, slots, BB, first));
        for (int b = 0; b < BB; b++) {
            const float *lg = tr_clm_step_logits(st, b);
            double err = 0;
            for (int i = 0; lg && i < V; i++) {
                double d = fabs(lg[i] - single_lg[b][i]);
                if (d > err) err = d;
            }
            CHECK_MSG(lg && err <= tol, "row %d: batched prefill logits differ by %g", b, err);
            CHECK(first[b] == (n_single[b] ? single[b][0] : 3));
            free(xs[b]);
        }
        /* a prompt longer than the cache is refused */
        T[0] = 2000;
        CHECK(!tr_clm_prefill_batch(st, NULL, xs, T, slots, 1, first));
    }
    /* abort before the 3rd step: unfinished rows say ABORTED and keep 3 ids */
    {
        tr_clm_batch_row rows[2];
        int32_t out[2][BNG];
        for (int i = 0; i < 2; i++) {
            float *xi = malloc(sizeof(float) * (size_t)k_len[i * 2] * D);
            tr_clm_embed(&m.hp, &m.w, prompts[i * 2], k_len[i * 2], NULL, 0, 0, xi);
            rows[i] = (tr_clm_batch_row){.x = xi, .T = k_len[i * 2], .out = out[i]};
        }
        tr_clm_greedy_cfg cfg = {
            .eos = -1, .max_new = BNG, .max_n_kv = 1024, .should_abort = abort_after_3};
        n_abort_calls = 0;
        CHECK(tr_clm_run_batch(st, NULL, &cfg, rows, 2, 1024, NULL) == TRANSCRIBE_ERR_ABORTED);
        for (int i = 0; i < 2; i++) {
            CHECK(rows[i].status == TRANSCRIBE_ERR_ABORTED && rows[i].n_out == 3);
            CHECK(memcmp(out[i], single[i * 2], 3 * sizeof(int32_t)) == 0);
            free(rows[i].x);
        }
    }
    for (int b = 0; b < BB; b++) free(prompts[b]);
    free(x);
    tr_clm_state_free(st);
    model_free(&m);
}

/* Audio rows replace placeholder rows; the multiplier scales everything. */
/* The one-run step (causal_lm_step.c) against the general path: equal
 * logits bit for bit, on a NULL pool and pools of 2 and 3 threads (the
 * chunks land on different threads each time), F32 and F16 caches, float
 * and quantized weights, a Granite-style multiplier set. */
static void test_step_paths(int type, bool kv16, bool granite) {
    model m;
    model_init(&m, type);
    if (granite) {
        m.hp.residual_mult = 0.22f;
        m.hp.attention_mult = 0.0625f;
        m.hp.logits_scale = 8.0f;
        m.hp.qk_norm = false;
    }
    enum { NP = 13, NS = 6 };
    int32_t prompt[NP];
    make_prompt(prompt, NP, 3);
    tr_pool *pools[3] = {NULL, tr_pool_create(2), tr_pool_create(3)};
    float ref[NS][V];
    for (int run = 0; run < 4; run++) {
        tr_pool *pool = pools[run == 0 ? 0 : run - 1];
        const bool one_run = run > 0;
        tr_clm_state *st = tr_clm_state_new(&m.hp, &m.w, kv16);
        CHECK(tr_clm_reserve(st, 1, 1024) == TRANSCRIBE_OK);
        float x[NP * D];
        tr_clm_embed(&m.hp, &m.w, prompt, NP, NULL, 0, 0, x);
        int32_t tok = tr_clm_prefill(st, pool, x, NP, 0, NULL);
        int mism = 0;
        for (int i = 0; i < NS; i++) {
            int pos = NP + i, slot = 0;
            int32_t next = -1;
            CHECK(tr_clm_step_path(st, pool, &tok, &pos, &slot, 1, &next, one_run));
            const float *lg = tr_clm_step_logits(st, 0);
            if (run == 0)
                memcpy(ref[i], lg, sizeof ref[i]);
            else
                mism += memcmp(ref[i], lg, sizeof ref[i]) != 0;
            tok = next;
        }
        CHECK(!one_run || st->step1); /* the one-run path ran */
        CHECK_MSG(mism == 0, "type %s kv16 %d granite %d: %d of %d one-run steps differ (run %d)",
                  tr_type_name(type), kv16, granite, mism, NS, run);
        tr_clm_state_free(st);
    }
    tr_pool_free(pools[1]);
    tr_pool_free(pools[2]);
    model_free(&m);
}

static void test_embed(void) {
    model m;
    model_init(&m, TR_F32);
    int32_t ids[6] = {1, 2, 9, 9, 9, 4};
    float audio[3 * D], x[6 * D];
    for (int i = 0; i < 3 * D; i++) audio[i] = (float)i;
    m.hp.embedding_mult = 2.0f;
    tr_clm_embed(&m.hp, &m.w, ids, 6, audio, 2, 3, x);
    CHECK(x[2 * D + 5] == 10.0f && x[4 * D + D - 1] == 2.0f * (3 * D - 1));
    CHECK(x[1 * D + 3] == 2.0f * m.f32[L * 7][2 * D + 3]);
    CHECK(tr_clm_ctx_pow2(10, 0) == 1024 && tr_clm_ctx_pow2(1025, 0) == 2048 &&
          tr_clm_ctx_pow2(5000, 4096) == 4096 && tr_clm_ctx_pow2(10, 512) == 512);
    /* a wrong shape is refused */
    m.blk[1].wk = &m.t[0];
    CHECK(!tr_clm_check(&m.hp, &m.w));
    model_free(&m);
}

/* The bidirectional pass (causal_lm_bidi.c) against the reference without a mask: logits of
 * the head rows, argmax, and an abort between blocks. */
static int n_bidi_polls;
static bool abort_first(void *u) {
    (void)u;
    n_bidi_polls++;
    return true;
}

static void test_bidi(int type, int n, int row0, double tol) {
    model m;
    model_init(&m, type);
    int32_t ids[600];
    make_prompt(ids, n, 3);
    const int R = n - row0;
    double *xr = malloc(sizeof(double) * (size_t)n * D), *lr = malloc(sizeof(double) * R * V);
    ref_embed(&m, ids, n, xr);
    ref_forward_ex(&m, xr, n, false, row0, lr);
    float *x = malloc(sizeof(float) * (size_t)n * D), *lg = malloc(sizeof(float) * R * V);
    int32_t *am = malloc(sizeof(int32_t) * R), *am2 = malloc(sizeof(int32_t) * R);
    tr_clm_embed(&m.hp, &m.w, ids, n, NULL, 0, 0, x);
    CHECK(tr_clm_bidi(&m.hp, &m.w, NULL, x, n, row0, am, lg, NULL, NULL) == TRANSCRIBE_OK);
    double err = 0;
    for (int i = 0; i < R * V; i++) {
        double d = fabs(lg[i] - lr[i]);
        if (d > err) err = d;
    }
    CHECK_MSG(err <= tol, "bidi type %s n %d: max |logit diff| %g > %g", tr_type_name(type), n, err,
              tol);
    int same = 0;
    for (int r = 0; r < R; r++) same += am[r] == ref_argmax(lr + (size_t)r * V, V);
    CHECK_MSG(same == R || err > 0, "bidi argmax %d of %d rows", same, R);
    /* the causal prefill of the same rows differs (the mask matters) */
    double lc[V];
    ref_forward(&m, xr, n, lc);
    double diff = 0;
    for (int i = 0; i < V; i++) diff = fmax(diff, fabs(lc[i] - lr[(size_t)(R - 1) * V + i]));
    CHECK(n == 1 || diff > 1e-3);
    /* without a logits buffer: the same argmax */
    tr_clm_embed(&m.hp, &m.w, ids, n, NULL, 0, 0, x);
    CHECK(tr_clm_bidi(&m.hp, &m.w, NULL, x, n, row0, am2, NULL, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(memcmp(am, am2, sizeof(int32_t) * R) == 0);
    /* abort between blocks, bad arguments */
    n_bidi_polls = 0;
    tr_clm_embed(&m.hp, &m.w, ids, n, NULL, 0, 0, x);
    CHECK(tr_clm_bidi(&m.hp, &m.w, NULL, x, n, row0, am2, NULL, abort_first, NULL) ==
          TRANSCRIBE_ERR_ABORTED);
    CHECK(n_bidi_polls == 1);
    CHECK(tr_clm_bidi(&m.hp, &m.w, NULL, x, n, n, am2, NULL, NULL, NULL) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    free(xr);
    free(lr);
    free(x);
    free(lg);
    free(am);
    free(am2);
    model_free(&m);
}

int main(void) {
    test_bidi(TR_F32, 13, 5, 2e-4);
    test_bidi(TR_F32, 70, 20, 5e-4); /* 50 head rows: two head chunks */
    test_bidi(TR_F16, 9, 0, 2e-4);
    test_embed();
    test_prefill(TR_F32, false, 11, 2e-4);
    test_prefill(TR_F32, false, 300, 5e-4); /* two prefill chunks */
    test_prefill(TR_F32, true, 11, 3e-2);   /* K/V rounded to F16 */
    test_prefill(TR_F16, false, 11, 2e-4);  /* reference uses the rounded weights */
    /* the one-row head product quantizes the hidden row to int8 per 32 values
     * (as ggml's Q8_0 dot does): ~0.3 % of the logit range */
    test_prefill(TR_Q8_0, false, 11, 1e-1);
    test_greedy(false);
    test_greedy(true);
    test_input_rows(TR_F32, false, 0, 2e-4);
    test_input_rows(TR_F32, false, 14, 2e-4); /* the ring wraps after two steps */
    test_input_rows(TR_F16, true, 14, 3e-2);
    /* int8 activations over 20 positions: ~1 % of the logit range, with or without the ring */
    test_input_rows(TR_Q8_0, true, 13, 3e-1);
    test_step_paths(TR_F32, false, false);
    test_step_paths(TR_F16, true, false);
    test_step_paths(TR_Q8_0, true, true);
    /* the batched prefill's GEMM rows group differently from a single
     * prompt's: equal up to float rounding */
    test_batch(false, TR_F32, 1e-4);
    test_batch(true, TR_Q8_0, 1e-3);
    return TEST_DONE();
}
