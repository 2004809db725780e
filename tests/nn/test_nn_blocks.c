/* The shared transformer blocks' options (nn/nn.h) and the configurable
 * encoder-decoder step (nn/encdec_decoder.h) against a double-precision
 * reference written here from the math: partial rotary positions, NeoX
 * (rotate-half) and GPT-J (interleaved) pairing, gated FFNs (SwiGLU with a
 * fused fc1, GEGLU with a separate gate weight) and the plain FFN, in the
 * encoder block and in a decoder run over a KV cache (prefill, then single
 * steps, then two sequences in one step); and the lockstep batched greedy
 * decode (nn/encdec_greedy.h) against one-sequence steps, with rows that
 * stop at EOS, at the budget and at the window, and an abort. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/encdec_decoder.h"
#include "nn/encdec_greedy.h"
#include "nn/moonshine_decoder.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_util.h"

enum { D = 16, H = 2, HD = 8, F = 12, V = 11, NSRC = 5, L = 2, CTX = 8 };

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 40) / (double)(1ull << 23) - 1.0);
}

/* ---- weights: F32 tensors and their values ---- */

typedef struct lin {
    tr_tensor t;
    float *w, *b; /* [out][in], [out] */
    int in, out;
} lin;

static void lin_init(lin *l, int in, int out, float amp) {
    l->in = in, l->out = out;
    l->w = malloc(sizeof(float) * (size_t)(in * out));
    l->b = malloc(sizeof(float) * (size_t)out);
    for (int i = 0; i < in * out; i++) l->w[i] = amp * frand();
    for (int i = 0; i < out; i++) l->b[i] = 0.1f * frand();
    l->t = (tr_tensor){.name = "w",
                       .type = 0,
                       .n_dims = 2,
                       .ne = {in, out, 1, 1},
                       .nb1 = sizeof(float) * (size_t)in,
                       .nbytes = sizeof(float) * (size_t)(in * out),
                       .data = l->w};
}

static tr_nn_linear lin_view(const lin *l) {
    return (tr_nn_linear){&l->t, l->b};
}

static void lin_free(lin *l) {
    free(l->w);
    free(l->b);
}

static void ref_lin(const lin *l, const double *x, double *y) {
    for (int o = 0; o < l->out; o++) {
        double s = l->b[o];
        for (int i = 0; i < l->in; i++) s += (double)l->w[(size_t)o * l->in + i] * x[i];
        y[o] = s;
    }
}

typedef struct norm {
    float g[D], b[D];
} norm;

static void norm_init(norm *n) {
    for (int i = 0; i < D; i++) n->g[i] = 1.0f + 0.2f * frand(), n->b[i] = 0.1f * frand();
}

static void ref_ln(const norm *n, const double *x, double *y) {
    double m = 0, v = 0;
    for (int i = 0; i < D; i++) m += x[i];
    m /= D;
    for (int i = 0; i < D; i++) v += (x[i] - m) * (x[i] - m);
    v /= D;
    for (int i = 0; i < D; i++) y[i] = (x[i] - m) / sqrt(v + 1e-5) * n->g[i] + n->b[i];
}

static double ref_act(tr_nn_act a, double x) {
    if (a == TR_NN_ACT_SILU) return x / (1 + exp(-x));
    if (a == TR_NN_ACT_RELU) return x > 0 ? x : 0;
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

/* Rotary on one row's heads at position p. */
static void ref_rope(const tr_nn_rope *r, double *x, int p) {
    if (r->n_rot <= 0) return;
    const int half = r->n_rot / 2;
    for (int h = 0; h < H; h++) {
        double *q = x + h * HD;
        for (int i = 0; i < half; i++) {
            double ang = p * pow(r->theta, -2.0 * i / r->n_rot), c = cos(ang), s = sin(ang);
            int a = r->neox ? i : 2 * i, b = r->neox ? i + half : 2 * i + 1;
            double u = q[a], w = q[b];
            q[a] = u * c - w * s;
            q[b] = u * s + w * c;
        }
    }
}

/* softmax(q k^T / sqrt(HD)) v per head for one query row over n keys. */
static void ref_attend(const double *q, const double *k, const double *v, int n, double *out) {
    for (int h = 0; h < H; h++) {
        double sc[64], mx = -1e300, z = 0;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < HD; i++) s += q[h * HD + i] * k[j * D + h * HD + i];
            sc[j] = s / sqrt((double)HD);
            if (sc[j] > mx) mx = sc[j];
        }
        for (int j = 0; j < n; j++) z += (sc[j] = exp(sc[j] - mx));
        for (int i = 0; i < HD; i++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += sc[j] * v[j * D + h * HD + i];
            out[h * HD + i] = s / z;
        }
    }
}

/* ---- one block's weights ---- */

typedef struct blk {
    norm n1, n2, n3;
    lin q, k, v, o, cq, ck, cv, co, fc1, fc2, gate;
    tr_nn_act act;
    tr_nn_glu glu;
} blk;

static void blk_init(blk *b, tr_nn_act act, tr_nn_glu glu) {
    norm_init(&b->n1), norm_init(&b->n2), norm_init(&b->n3);
    lin *att[] = {&b->q, &b->k, &b->v, &b->o, &b->cq, &b->ck, &b->cv, &b->co};
    for (int i = 0; i < 8; i++) lin_init(att[i], D, D, 0.4f);
    lin_init(&b->fc1, D, glu == TR_NN_GLU_FUSED ? 2 * F : F, 0.4f);
    lin_init(&b->gate, D, F, 0.4f);
    lin_init(&b->fc2, F, D, 0.4f);
    b->act = act, b->glu = glu;
}

static void blk_free(blk *b) {
    lin *all[] = {&b->q,  &b->k,  &b->v,   &b->o,   &b->cq,  &b->ck,
                  &b->cv, &b->co, &b->fc1, &b->fc2, &b->gate};
    for (int i = 0; i < 11; i++) lin_free(all[i]);
}

static tr_nn_ffn ffn_view(const blk *b) {
    return (tr_nn_ffn){.fc1 = lin_view(&b->fc1),
                       .fc2 = lin_view(&b->fc2),
                       .act = b->act,
                       .glu = b->glu,
                       .gate = lin_view(&b->gate)};
}

static tr_nn_enc_block enc_view(const blk *b) {
    return (tr_nn_enc_block){
        .ln_attn = {b->n1.g, b->n1.b},
        .attn = {lin_view(&b->q), lin_view(&b->k), lin_view(&b->v), lin_view(&b->o)},
        .ln_ffn = {b->n2.g, b->n2.b},
        .ffn = ffn_view(b)};
}

static tr_nn_dec_block dec_view(const blk *b) {
    return (tr_nn_dec_block){
        .ln_self = {b->n1.g, b->n1.b},
        .self = {lin_view(&b->q), lin_view(&b->k), lin_view(&b->v), lin_view(&b->o)},
        .ln_cross = {b->n2.g, b->n2.b},
        .cross = {lin_view(&b->cq), lin_view(&b->ck), lin_view(&b->cv), lin_view(&b->co)},
        .ln_ffn = {b->n3.g, b->n3.b},
        .ffn = ffn_view(b)};
}

/* x += FFN(LN(x)) for one row. */
static void ref_ffn(const blk *b, const norm *n, double *x) {
    double h[D], u[2 * F], g[F], y[D];
    ref_ln(n, x, h);
    ref_lin(&b->fc1, h, u);
    if (b->glu == TR_NN_GLU_SPLIT) ref_lin(&b->gate, h, u + F);
    if (b->glu == TR_NN_GLU_NONE) {
        for (int i = 0; i < F; i++) g[i] = ref_act(b->act, u[i]);
    } else {
        for (int i = 0; i < F; i++) g[i] = u[i] * ref_act(b->act, u[F + i]);
    }
    ref_lin(&b->fc2, g, y);
    for (int i = 0; i < D; i++) x[i] += y[i];
}

/* ---- encoder block ---- */

static void check_enc(tr_pool *pool, tr_nn_act act, tr_nn_glu glu, tr_nn_rope rope) {
    enum { T = 7 };
    blk b;
    blk_init(&b, act, glu);
    const tr_nn_enc_block eb = enc_view(&b);
    const tr_nn_dims dims = {.d_model = D,
                             .n_head = H,
                             .head_dim = HD,
                             .d_ffn = F,
                             .ln_eps = 1e-5f,
                             .rope = rope,
                             .glu = glu != TR_NN_GLU_NONE};
    float x[T * D];
    double xr[T * D], hq[T * D], hk[T * D], hv[T * D];
    for (int i = 0; i < T * D; i++) xr[i] = x[i] = frand();
    float *scratch = malloc(sizeof(float) * tr_nn_enc_block_scratch(&dims, T));
    tr_nn_enc_block_fwd(pool, &eb, &dims, x, T, scratch);
    for (int t = 0; t < T; t++) {
        double h[D];
        ref_ln(&b.n1, xr + t * D, h);
        ref_lin(&b.q, h, hq + t * D), ref_lin(&b.k, h, hk + t * D), ref_lin(&b.v, h, hv + t * D);
        ref_rope(&rope, hq + t * D, t), ref_rope(&rope, hk + t * D, t);
    }
    for (int t = 0; t < T; t++) {
        double a[D], y[D];
        ref_attend(hq + t * D, hk, hv, T, a);
        ref_lin(&b.o, a, y);
        for (int i = 0; i < D; i++) xr[t * D + i] += y[i];
        ref_ffn(&b, &b.n2, xr + t * D);
    }
    double worst = 0;
    for (int i = 0; i < T * D; i++) {
        double e = fabs(x[i] - xr[i]) / (1e-4 + 1e-4 * fabs(xr[i]));
        if (!(e <= worst)) worst = e;
    }
    CHECK_MSG(worst <= 1, "encoder block act %d glu %d rot %d neox %d: error ratio %g", act, glu,
              rope.n_rot, rope.neox, worst);
    free(scratch);
    blk_free(&b);
}

/* ---- decoder (tr_ed_step) ---- */

typedef struct dec {
    blk b[L];
    tr_nn_dec_block db[L];
    norm out;
    lin emb; /* [V][D] as a linear {D, V}: the tied head */
    tr_ed_decoder cfg;
} dec;

static void dec_init_ffn(dec *m, tr_nn_rope rope, tr_nn_act act, tr_nn_glu glu) {
    for (int l = 0; l < L; l++) {
        blk_init(&m->b[l], act, glu);
        m->db[l] = dec_view(&m->b[l]);
    }
    norm_init(&m->out);
    lin_init(&m->emb, D, V, 1.0f);
    m->cfg = (tr_ed_decoder){.tok_emb = &m->emb.t,
                             .pos = TR_ED_POS_NONE,
                             .blocks = m->db,
                             .n_layers = L,
                             .dims = {.d_model = D,
                                      .n_head = H,
                                      .head_dim = HD,
                                      .d_ffn = F,
                                      .ln_eps = 1e-5f,
                                      .rope = rope,
                                      .glu = glu != TR_NN_GLU_NONE},
                             .out_norm = {m->out.g, m->out.b},
                             .norm_eps = 1e-5f,
                             .head = {&m->emb.t, NULL},
                             .n_vocab = V};
}

static void dec_init(dec *m, tr_nn_rope rope) {
    dec_init_ffn(m, rope, TR_NN_ACT_SILU, TR_NN_GLU_FUSED);
}

/* Reference logits of the last of n tokens (no cache: the whole prefix). */
static void ref_dec(const dec *m, const int32_t *ids, int n, const float *src, double *logits) {
    double x[CTX * D], q[CTX * D], k[CTX * D], v[CTX * D], ck[NSRC * D], cv[NSRC * D];
    double s[NSRC * D];
    for (int i = 0; i < NSRC * D; i++) s[i] = src[i];
    for (int t = 0; t < n; t++)
        for (int i = 0; i < D; i++) x[t * D + i] = m->emb.w[(size_t)ids[t] * D + i];
    const tr_nn_rope *rope = &m->cfg.dims.rope;
    for (int l = 0; l < L; l++) {
        const blk *b = &m->b[l];
        for (int t = 0; t < n; t++) {
            double h[D];
            ref_ln(&b->n1, x + t * D, h);
            ref_lin(&b->q, h, q + t * D), ref_lin(&b->k, h, k + t * D),
                ref_lin(&b->v, h, v + t * D);
            ref_rope(rope, q + t * D, t), ref_rope(rope, k + t * D, t);
        }
        for (int j = 0; j < NSRC; j++) ref_lin(&b->ck, s + j * D, ck + j * D);
        for (int j = 0; j < NSRC; j++) ref_lin(&b->cv, s + j * D, cv + j * D);
        for (int t = 0; t < n; t++) {
            double a[D], y[D], h[D], cq[D];
            ref_attend(q + t * D, k, v, t + 1, a); /* causal */
            ref_lin(&b->o, a, y);
            for (int i = 0; i < D; i++) x[t * D + i] += y[i];
            ref_ln(&b->n2, x + t * D, h);
            ref_lin(&b->cq, h, cq);
            ref_attend(cq, ck, cv, NSRC, a);
            ref_lin(&b->co, a, y);
            for (int i = 0; i < D; i++) x[t * D + i] += y[i];
            ref_ffn(b, &b->n3, x + t * D);
        }
    }
    double y[D];
    ref_ln(&m->out, x + (n - 1) * D, y);
    ref_lin(&m->emb, y, logits);
    for (int i = 0; i < V; i++) logits[i] -= m->emb.b[i]; /* the tied head has no bias */
}

static void check_logits(const float *got, const double *want, const char *what) {
    double worst = 0;
    for (int i = 0; i < V; i++) {
        double e = fabs(got[i] - want[i]) / (1e-4 + 1e-4 * fabs(want[i]));
        if (!(e <= worst)) worst = e;
    }
    CHECK_MSG(worst <= 1, "%s: logits error ratio %g", what, worst);
}

static void check_dec(tr_pool *pool, tr_nn_rope rope) {
    dec m;
    dec_init(&m, rope);
    const tr_ed_decoder *cfg = &m.cfg;
    float src[2][NSRC * D];
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < NSRC * D; i++) src[s][i] = frand();
    float ck[2][L * NSRC * D], cv[2][L * NSRC * D];
    tr_nn_kv kv[2];
    for (int s = 0; s < 2; s++) {
        tr_ed_cross_kv(pool, cfg, src[s], NSRC, ck[s], cv[s], NSRC * D);
        CHECK(tr_nn_kv_init(&kv[s], L, CTX, H, HD, false));
    }
    const int32_t ids[2][5] = {{3, 7, 1, 9, 4}, {10, 2, 5, 0, 8}};
    float x[2 * CTX * D], logits[2 * V];
    float *scratch = malloc(sizeof(float) * tr_ed_step_scratch(cfg, 2 * CTX, 2));
    double want[V];
    CHECK(!tr_ed_seq_ok(cfg, ids[0], 1, CTX, CTX));
    CHECK(tr_ed_seq_ok(cfg, ids[0], 3, 0, CTX));
    /* sequence 0: prefill 3, then one step at a time */
    tr_ed_seq s0 = {.rows = 3,
                    .n_past = 0,
                    .n_src = NSRC,
                    .kv = &kv[0],
                    .ck = ck[0],
                    .cv = cv[0],
                    .cross_stride = NSRC * D,
                    .ids = ids[0]};
    tr_ed_step(pool, cfg, 1, &s0, x, scratch, logits);
    ref_dec(&m, ids[0], 3, src[0], want);
    check_logits(logits, want, "prefill");
    s0.rows = 1;
    s0.n_past = 3;
    s0.ids = ids[0] + 3;
    tr_ed_step(pool, cfg, 1, &s0, x, scratch, logits);
    ref_dec(&m, ids[0], 4, src[0], want);
    check_logits(logits, want, "step");
    /* sequence 1 prefilled with 2 tokens; then both in one step */
    tr_ed_seq s1 = {.rows = 2,
                    .n_past = 0,
                    .n_src = NSRC,
                    .kv = &kv[1],
                    .ck = ck[1],
                    .cv = cv[1],
                    .cross_stride = NSRC * D,
                    .ids = ids[1]};
    tr_ed_step(pool, cfg, 1, &s1, x, scratch, logits);
    tr_ed_seq both[2] = {s0, s1};
    both[0].n_past = 4, both[0].ids = ids[0] + 4;
    both[1].rows = 1, both[1].n_past = 2, both[1].ids = ids[1] + 2;
    tr_ed_step(pool, cfg, 2, both, x, scratch, logits);
    ref_dec(&m, ids[0], 5, src[0], want);
    check_logits(logits, want, "batched step, sequence 0");
    ref_dec(&m, ids[1], 3, src[1], want);
    check_logits(logits + V, want, "batched step, sequence 1");
    /* the head alone on the final-normed rows equals the step's logits */
    float head[2 * V], last[2 * D];
    memcpy(last, x, sizeof(float) * D);
    memcpy(last + D, x + D, sizeof(float) * D);
    tr_ed_head(pool, cfg, last, 2, head);
    CHECK(memcmp(head, logits, sizeof head) == 0);
    free(scratch);
    for (int s = 0; s < 2; s++) tr_nn_kv_free(&kv[s]);
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

/* The verify step of speculative decoding: R rows of one sequence at
 * positions n_past.. in one tr_ed_step (causal within the rows), then the
 * head over all R final-normed rows, give each row the bits of R one-row
 * steps: logits and the K/V the rows leave in the cache. */
static void check_dec_rows_exact(tr_pool *pool, tr_nn_rope rope, bool f16_cache) {
    dec m;
    dec_init(&m, rope);
    const tr_ed_decoder *cfg = &m.cfg;
    float src[NSRC * D], ck[L * NSRC * D], cv[L * NSRC * D];
    for (int i = 0; i < NSRC * D; i++) src[i] = frand();
    tr_ed_cross_kv(pool, cfg, src, NSRC, ck, cv, NSRC * D);
    const int32_t ids[6] = {3, 7, 1, 9, 4, 11};
    enum { P = 2, R = 4 };
    float x[CTX * D], logits[R * V], one[R * V], first[V];
    float *scratch = malloc(sizeof(float) * tr_ed_step_scratch(cfg, CTX, 1));
    tr_nn_kv kv[2];
    for (int c = 0; c < 2; c++) {
        CHECK(tr_nn_kv_init(&kv[c], L, CTX, H, HD, f16_cache));
        tr_ed_seq sq = {.rows = P,
                        .n_past = 0,
                        .n_src = NSRC,
                        .kv = &kv[c],
                        .ck = ck,
                        .cv = cv,
                        .cross_stride = NSRC * D,
                        .ids = ids};
        tr_ed_step(pool, cfg, 1, &sq, x, scratch, first);
        if (c == 0) { /* all R rows in one step, then the head over them */
            sq.rows = R, sq.n_past = P, sq.ids = ids + P;
            tr_ed_step(pool, cfg, 1, &sq, x, scratch, NULL);
            tr_ed_head(pool, cfg, x, R, logits);
        } else { /* one row at a time */
            for (int r = 0; r < R; r++) {
                sq.rows = 1, sq.n_past = P + r, sq.ids = ids + P + r;
                tr_ed_step(pool, cfg, 1, &sq, x, scratch, one + r * V);
            }
        }
    }
    for (int r = 0; r < R; r++)
        CHECK_MSG(memcmp(logits + r * V, one + r * V, sizeof(float) * V) == 0,
                  "verify row %d: logits differ from its one-row step", r);
    const size_t kv_bytes = (f16_cache ? 2 : 4) * (size_t)L * CTX * D;
    CHECK_MSG(memcmp(kv[0].k, kv[1].k, kv_bytes) == 0 && memcmp(kv[0].v, kv[1].v, kv_bytes) == 0,
              "the verify step's cached K/V differ from the one-row steps'");
    free(scratch);
    for (int c = 0; c < 2; c++) tr_nn_kv_free(&kv[c]);
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

/* One row decoded alone with tr_ed_step and the stopping rules of
 * tr_greedy_loop: the ids the batch must reproduce. */
static int single_greedy(tr_pool *pool, const tr_ed_decoder *cfg, const tr_ed_greedy_cfg *gc,
                         const float *ck, const float *cv, int32_t *out, int32_t *last) {
    tr_nn_kv kv;
    CHECK(tr_nn_kv_init(&kv, L, CTX, H, HD, false));
    float x[CTX * D], logits[V];
    float *scratch = malloc(sizeof(float) * tr_ed_step_scratch(cfg, CTX, 1));
    tr_ed_seq sq = {.rows = gc->n_prompt,
                    .n_past = 0,
                    .n_src = NSRC,
                    .kv = &kv,
                    .ck = ck,
                    .cv = cv,
                    .cross_stride = NSRC * D,
                    .ids = gc->prompt};
    int n_out = 0, n_gen = 0, pos = gc->n_prompt;
    int32_t tok;
    for (;;) {
        tr_ed_step(pool, cfg, 1, &sq, x, scratch, logits);
        tok = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[tok]) tok = i;
        n_gen++;
        if (tok != gc->eos) out[n_out++] = tok;
        if (tok == gc->eos || n_gen >= gc->max_new || pos + 1 > gc->max_n_kv) break;
        sq.rows = 1, sq.n_past = pos++, sq.ids = &out[n_out - 1];
    }
    *last = tok;
    free(scratch);
    tr_nn_kv_free(&kv);
    return n_out;
}

static int abort_after;
static bool abort_countdown(void *user) {
    (void)user;
    return abort_after-- <= 0;
}

/* tr_ed_step_weight_bytes: the self q/k/v/out, cross q/out, the FFN and the
 * head of every layer, not the cross keys / values (F32 test weights). */
static void check_step_bytes(void) {
    dec m;
    dec_init(&m, (tr_nn_rope){0, 0, false});
    const size_t want =
        sizeof(float) * ((size_t)D * V + (size_t)L * (6 * D * D + 2 * F * D + F * D));
    CHECK_MSG(tr_ed_step_weight_bytes(&m.cfg) == want, "%zu vs %zu",
              tr_ed_step_weight_bytes(&m.cfg), want);
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

static void check_greedy_batch(tr_pool *pool) {
    enum { R = 3 };
    dec m;
    dec_init(&m, (tr_nn_rope){6, 10000.0f, false});
    const tr_ed_decoder *cfg = &m.cfg;
    float src[R][NSRC * D], ck[R][L * NSRC * D], cv[R][L * NSRC * D];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < NSRC * D; i++) src[r][i] = frand();
        tr_ed_cross_kv(pool, cfg, src[r], NSRC, ck[r], cv[r], NSRC * D);
    }
    const int32_t prompt[2] = {3, 7};
    tr_ed_greedy_cfg gc = {
        .prompt = prompt, .n_prompt = 2, .eos = -1, .max_new = 4, .max_n_kv = CTX};
    /* pick as EOS a later token row 0 produces alone (the first that
     * differs from its first): row 0 then stops there, the others most
     * likely run to the budget or the window */
    int32_t want[R][CTX], last[R], tmp[CTX];
    const int n_tmp = single_greedy(pool, cfg, &gc, ck[0], cv[0], tmp, &last[0]);
    gc.eos = tmp[0];
    for (int i = 1; i < n_tmp; i++)
        if (tmp[i] != tmp[0]) {
            gc.eos = tmp[i];
            break;
        }
    for (int pass = 0; pass < 2; pass++) {
        gc.max_new = pass == 0 ? 4 : CTX; /* budget, then the window */
        int n_want[R];
        for (int r = 0; r < R; r++)
            n_want[r] = single_greedy(pool, cfg, &gc, ck[r], cv[r], want[r], &last[r]);
        tr_nn_kv kv[R];
        int32_t out[R][CTX];
        tr_ed_greedy_row rows[R];
        for (int r = 0; r < R; r++) {
            CHECK(tr_nn_kv_init(&kv[r], L, CTX, H, HD, false));
            rows[r] = (tr_ed_greedy_row){.kv = &kv[r],
                                         .ck = ck[r],
                                         .cv = cv[r],
                                         .cross_stride = NSRC * D,
                                         .n_src = NSRC,
                                         .out = out[r]};
        }
        CHECK(tr_ed_greedy_batch(pool, cfg, &gc, rows, R) == TRANSCRIBE_OK);
        for (int r = 0; r < R; r++) {
            CHECK_MSG(rows[r].n_out == n_want[r] &&
                          memcmp(out[r], want[r], sizeof(int32_t) * (size_t)n_want[r]) == 0,
                      "greedy batch row %d: %d ids, alone %d", r, rows[r].n_out, n_want[r]);
            CHECK(rows[r].last == last[r] && !rows[r].live);
        }
        CHECK(rows[0].last == gc.eos);
        /* an abort before the second lockstep step: rows still going are live */
        for (int r = 0; r < R; r++) tr_nn_kv_free(&kv[r]);
        for (int r = 0; r < R; r++) CHECK(tr_nn_kv_init(&kv[r], L, CTX, H, HD, false));
        abort_after = 1;
        gc.should_abort = abort_countdown;
        const transcribe_status st = tr_ed_greedy_batch(pool, cfg, &gc, rows, R);
        gc.should_abort = NULL;
        bool any_live = false;
        for (int r = 0; r < R; r++) {
            /* a row outlives the first lockstep step when it generates
             * more than 2 tokens (the prefill's and one step's) alone */
            const bool live = n_want[r] + (last[r] == gc.eos) > 2;
            any_live |= live;
            CHECK(rows[r].live == live);
            CHECK(rows[r].n_out <= n_want[r] &&
                  memcmp(out[r], want[r], sizeof(int32_t) * (size_t)rows[r].n_out) == 0);
            tr_nn_kv_free(&kv[r]);
        }
        CHECK(st == (any_live ? TRANSCRIBE_ERR_ABORTED : TRANSCRIBE_OK));
    }
    /* no EOS: every row outlives the first step, so the abort cuts all */
    gc.eos = -1, gc.max_new = CTX, gc.should_abort = abort_countdown, abort_after = 1;
    tr_nn_kv kv[R];
    int32_t out[R][CTX];
    tr_ed_greedy_row rows[R];
    for (int r = 0; r < R; r++) {
        CHECK(tr_nn_kv_init(&kv[r], L, CTX, H, HD, false));
        rows[r] = (tr_ed_greedy_row){.kv = &kv[r],
                                     .ck = ck[r],
                                     .cv = cv[r],
                                     .cross_stride = NSRC * D,
                                     .n_src = NSRC,
                                     .out = out[r]};
    }
    CHECK(tr_ed_greedy_batch(pool, cfg, &gc, rows, R) == TRANSCRIBE_ERR_ABORTED);
    for (int r = 0; r < R; r++) {
        CHECK(rows[r].live && rows[r].n_out == 2);
        tr_nn_kv_free(&kv[r]);
    }
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

/* A decode step of one row for each of R sequences (the one-pool-run step,
 * nn/encdec_step1.h) gives the bits of the general path: the embedded rows
 * through tr_nn_dec_block_fwd_segs, the final LayerNorm and the head as
 * one product, for the logits, the final rows and the K/V left in each
 * cache; every FFN kind, rotary pairing, cache type and thread count, with
 * a source per sequence and one source for all (the cross-attention then
 * takes all rows of a head in one call). */
static void check_step1_exact(tr_pool *pool, tr_nn_rope rope, tr_nn_act act, tr_nn_glu glu,
                              bool f16_cache, bool shared_src) {
    enum { R = 3, P = 2 };
    dec m;
    dec_init_ffn(&m, rope, act, glu);
    const tr_ed_decoder *cfg = &m.cfg;
    float src[R][NSRC * D], ck[R][L * NSRC * D], cv[R][L * NSRC * D];
    const int32_t pre[R][P] = {{3, 7}, {10, 2}, {6, 6}}, next[R] = {1, 9, 4};
    tr_nn_kv kv[2][R];
    tr_ed_seq sq[2][R];
    float *scratch = malloc(sizeof(float) * tr_ed_step_scratch(cfg, R * P, R));
    float x[R * P * D], logits[2][R * V], rows[2][R * D];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < NSRC * D; i++) src[r][i] = frand();
        tr_ed_cross_kv(pool, cfg, src[r], NSRC, ck[r], cv[r], NSRC * D);
    }
    for (int c = 0; c < 2; c++) {
        for (int r = 0; r < R; r++) { /* a prefix of P rows, then one row */
            CHECK(tr_nn_kv_init(&kv[c][r], L, CTX, H, HD, f16_cache));
            sq[c][r] = (tr_ed_seq){.rows = P,
                                   .n_past = 0,
                                   .n_src = NSRC,
                                   .kv = &kv[c][r],
                                   .ck = ck[shared_src ? 0 : r],
                                   .cv = cv[shared_src ? 0 : r],
                                   .cross_stride = NSRC * D,
                                   .ids = pre[r]};
        }
        tr_ed_step(pool, cfg, R, sq[c], x, scratch, NULL);
        for (int r = 0; r < R; r++) sq[c][r].rows = 1, sq[c][r].n_past = P, sq[c][r].ids = &next[r];
    }
    tr_ed_step(pool, cfg, R, sq[0], rows[0], scratch, logits[0]);
    /* the general path by hand: embedding (no positions), blocks, norm, head */
    tr_get_rows(cfg->tok_emb, next, R, rows[1]);
    for (int l = 0; l < L; l++)
        tr_nn_dec_block_fwd_segs(pool, &cfg->blocks[l], &cfg->dims, rows[1], R, sq[1], l, scratch);
    tr_layer_norm(pool, rows[1], rows[1], R, D, cfg->out_norm.w, cfg->out_norm.b, cfg->norm_eps);
    tr_ed_head(pool, cfg, rows[1], R, logits[1]);
    CHECK_MSG(memcmp(logits[0], logits[1], sizeof logits[0]) == 0 &&
                  memcmp(rows[0], rows[1], sizeof rows[0]) == 0,
              "one-run step (glu %d, act %d, rot %d/%d, f16 %d): logits or rows differ", (int)glu,
              (int)act, rope.n_rot, (int)rope.neox, (int)f16_cache);
    const size_t kv_bytes = (f16_cache ? 2 : 4) * (size_t)L * CTX * D;
    for (int r = 0; r < R; r++) {
        CHECK(memcmp(kv[0][r].k, kv[1][r].k, kv_bytes) == 0);
        CHECK(memcmp(kv[0][r].v, kv[1][r].v, kv_bytes) == 0);
        tr_nn_kv_free(&kv[0][r]);
        tr_nn_kv_free(&kv[1][r]);
    }
    free(scratch);
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

/* The Moonshine decoder's greedy loop (nn/moonshine_decoder.h) with
 * speculative drafts gives the ids of plain steps; the random decoder over
 * an 11-id vocabulary falls into a cycle, so the n-gram drafts are taken
 * (a repeated trigram in the output proves they were offered). */
static void check_msd_spec(tr_pool *pool) {
    enum { N_CTX = 48 };
    dec m;
    dec_init(&m, (tr_nn_rope){6, 10000.0f, true});
    float src[NSRC * D], ck[L * NSRC * D], cv[L * NSRC * D], x[D], logits[V];
    for (int i = 0; i < NSRC * D; i++) src[i] = frand();
    tr_ed_cross_kv(pool, &m.cfg, src, NSRC, ck, cv, NSRC * D);
    float *scratch = malloc(sizeof(float) * tr_ed_step_scratch(&m.cfg, 1, 1));
    int32_t out[2][N_CTX];
    int n_out[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        tr_nn_kv kv;
        CHECK(tr_nn_kv_init(&kv, L, N_CTX, H, HD, c == 1));
        const tr_msd_greedy_args a = {.pool = pool,
                                      .dec = &m.cfg,
                                      .kv = &kv,
                                      .ck = ck,
                                      .cv = cv,
                                      .n_src = NSRC,
                                      .x = x,
                                      .scratch = scratch,
                                      .logits = logits,
                                      .start = 1,
                                      .eos = V, /* never produced: runs to the cap */
                                      .gen_cap = N_CTX,
                                      .spec_k = 0};
        tr_msd_greedy_args sa = a;
        sa.spec_k = 4;
        CHECK(tr_msd_greedy(&a, out[0], &n_out[0]) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        tr_nn_kv_free(&kv);
        CHECK(tr_nn_kv_init(&kv, L, N_CTX, H, HD, c == 1));
        CHECK(tr_msd_greedy(&sa, out[1], &n_out[1]) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        tr_nn_kv_free(&kv);
        CHECK_MSG(n_out[0] == n_out[1] && !memcmp(out[0], out[1], sizeof(int32_t) * n_out[0]),
                  "spec drafts changed the ids (%d vs %d)", n_out[0], n_out[1]);
        bool repeat = false;
        for (int i = 3; i + 3 <= n_out[0] && !repeat; i++)
            for (int j = 0; j < i && !repeat; j++)
                repeat = !memcmp(out[0] + j, out[0] + i, 3 * sizeof(int32_t));
        CHECK_MSG(repeat, "no repeated trigram: no draft was offered");
    }
    free(scratch);
    for (int l = 0; l < L; l++) blk_free(&m.b[l]);
    lin_free(&m.emb);
}

int main(void) {
    tr_pool *pools[2] = {NULL, tr_pool_create(3)};
    const tr_nn_rope none = {0, 0, false}, neox = {6, 10000.0f, true}, gptj = {6, 500.0f, false},
                     full = {HD, 10000.0f, true};
    for (int p = 0; p < 2; p++) {
        check_enc(pools[p], TR_NN_ACT_GELU, TR_NN_GLU_NONE, none);
        check_enc(pools[p], TR_NN_ACT_GELU, TR_NN_GLU_NONE, neox);
        check_enc(pools[p], TR_NN_ACT_SILU, TR_NN_GLU_FUSED, gptj);
        check_enc(pools[p], TR_NN_ACT_GELU, TR_NN_GLU_SPLIT, full);
        check_dec(pools[p], gptj);
        check_dec(pools[p], neox);
        check_dec(pools[p], none);
        check_dec_rows_exact(pools[p], neox, false);
        check_dec_rows_exact(pools[p], none, true);
        check_greedy_batch(pools[p]);
        check_step1_exact(pools[p], none, TR_NN_ACT_GELU, TR_NN_GLU_NONE, false, false);
        check_step1_exact(pools[p], gptj, TR_NN_ACT_RELU, TR_NN_GLU_NONE, true, false);
        check_step1_exact(pools[p], neox, TR_NN_ACT_SILU, TR_NN_GLU_FUSED, true, true);
        check_step1_exact(pools[p], full, TR_NN_ACT_GELU, TR_NN_GLU_SPLIT, false, true);
        check_msd_spec(pools[p]);
    }
    check_step_bytes();
    tr_pool_free(pools[1]);
    return TEST_DONE();
}
