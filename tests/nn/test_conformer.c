/* The rotary Conformer block (nn/conformer.h) and the LSTM cell
 * (nn/lstm.h) against a double-precision reference written here from the
 * formulas of docs/formats/gigaam.md §5.2 and §6.1: both rotation modes, packed
 * segments equal to their single runs bit for bit, results independent of
 * the thread count, and the block table loading a GGUF written here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "nn/conformer.h"
#include "nn/lstm.h"
#include "tensor/dtype.h"
#include "tensor/pool.h"
#include "test_util.h"

enum { D = 16, H = 2, DH = 8, F = 24, K = 5 };

static uint32_t g_seed = 12345;
static float rnd(float s) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return s * ((float)(g_seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
}

/* Owned weights with tensor views. */
typedef struct wts {
    float *buf;
    size_t used, cap;
    tr_tensor t[32];
    int nt;
} wts;

static float *alloc_f(wts *w, size_t n, float s) {
    float *p = w->buf + w->used;
    w->used += n;
    for (size_t i = 0; i < n; i++) p[i] = rnd(s);
    return p;
}

static const tr_tensor *mat(wts *w, int in, int out, float s) {
    tr_tensor *t = &w->t[w->nt++];
    float *p = alloc_f(w, (size_t)in * out, s);
    *t = (tr_tensor){.type = TR_F32,
                     .n_dims = 2,
                     .ne = {in, out, 1, 1},
                     .nb1 = sizeof(float) * (size_t)in,
                     .nbytes = sizeof(float) * (size_t)in * out,
                     .data = p};
    return t;
}

static tr_nn_linear lin(wts *w, int in, int out) {
    const tr_tensor *t = mat(w, in, out, 1.0f / sqrtf((float)in));
    return (tr_nn_linear){t, alloc_f(w, (size_t)out, 0.1f)};
}

static tr_nn_norm norm(wts *w) {
    tr_nn_norm n;
    float *g = alloc_f(w, D, 0.2f), *b = alloc_f(w, D, 0.1f);
    for (int i = 0; i < D; i++) g[i] += 1.0f;
    n.w = g;
    n.b = b;
    return n;
}

static void make_block(wts *w, tr_cf_block *b, const tr_cf_dims *dm) {
    memset(b, 0, sizeof *b);
    b->norm_ff1 = norm(w);
    b->ff1_up = lin(w, D, F);
    b->ff1_down = lin(w, F, D);
    b->norm_attn = norm(w);
    b->attn.q = lin(w, D, D);
    b->attn.k = lin(w, D, D);
    b->attn.v = lin(w, D, D);
    b->attn.o = lin(w, D, D);
    b->norm_conv = norm(w);
    tr_tensor *pw1 = &w->t[w->nt++];
    *pw1 = *mat(w, D, 2 * D, 0.25f);
    pw1->n_dims = 3;
    pw1->ne[0] = 1, pw1->ne[1] = D, pw1->ne[2] = 2 * D;
    b->pw1_w = pw1;
    b->pw1_b = alloc_f(w, 2 * D, 0.1f);
    tr_tensor *dw = &w->t[w->nt++];
    *dw = *mat(w, K, D, 0.4f);
    dw->n_dims = 3;
    dw->ne[0] = K, dw->ne[1] = 1, dw->ne[2] = D;
    b->dw_w = dw;
    b->dw_b = alloc_f(w, D, 0.1f);
    b->conv_ln = norm(w);
    tr_tensor *pw2 = &w->t[w->nt++];
    *pw2 = *mat(w, D, D, 0.25f);
    pw2->n_dims = 3;
    pw2->ne[0] = 1, pw2->ne[1] = D, pw2->ne[2] = D;
    b->pw2_w = pw2;
    b->pw2_b = alloc_f(w, D, 0.1f);
    b->norm_ff2 = norm(w);
    b->ff2_up = lin(w, D, F);
    b->ff2_down = lin(w, F, D);
    b->norm_out = norm(w);
    CHECK(tr_cf_block_prepare(b, dm));
}

/* ---- double reference ---- */
static void r_ln(const double *x, double *y, int T, const tr_nn_norm *n) {
    for (int t = 0; t < T; t++) {
        double mu = 0, var = 0;
        for (int i = 0; i < D; i++) mu += x[t * D + i];
        mu /= D;
        for (int i = 0; i < D; i++) var += (x[t * D + i] - mu) * (x[t * D + i] - mu);
        var /= D;
        for (int i = 0; i < D; i++)
            y[t * D + i] = (x[t * D + i] - mu) / sqrt(var + 1e-5) * n->w[i] + n->b[i];
    }
}

/* y[t][o] = b[o] + sum_i W[o][i] x[t][i] */
static void r_lin(const double *x, double *y, int T, int in, int out, const float *W,
                  const float *b) {
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in; i++) s += (double)W[(size_t)o * in + i] * x[t * in + i];
            y[t * out + o] = s;
        }
}

static double r_silu(double v) {
    return v / (1.0 + exp(-v));
}

static double r_sig(double v) {
    return 1.0 / (1.0 + exp(-v));
}

static void r_rotate(double *x, int T) {
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < DH / 2; i++) {
                double th = t * pow(5000.0, -2.0 * i / DH);
                double *p = x + t * D + h * DH, a = p[i], b = p[i + DH / 2];
                p[i] = a * cos(th) - b * sin(th);
                p[i + DH / 2] = b * cos(th) + a * sin(th);
            }
}

#define LW(l) (const float *)(l).w->data, (l).b

static void r_ff(double *x, int T, const tr_nn_norm *n, const tr_nn_linear *up,
                 const tr_nn_linear *down, double *h, double *m, double *o) {
    r_ln(x, h, T, n);
    r_lin(h, m, T, D, F, LW(*up));
    for (int i = 0; i < T * F; i++) m[i] = r_silu(m[i]);
    r_lin(m, o, T, F, D, LW(*down));
    for (int i = 0; i < T * D; i++) x[i] += 0.5 * o[i];
}

/* One block on x [T][D] in double. */
static void r_block(const tr_cf_block *b, tr_cf_rot rot, double *x, int T) {
    double *h = calloc((size_t)T * D, sizeof(double)), *r = calloc((size_t)T * D, sizeof(double));
    double *q = calloc((size_t)T * D, sizeof(double)), *k = calloc((size_t)T * D, sizeof(double));
    double *v = calloc((size_t)T * D, sizeof(double)), *o = calloc((size_t)T * D, sizeof(double));
    double *m = calloc((size_t)T * 2 * (F > 2 * D ? F : 2 * D), sizeof(double));
    r_ff(x, T, &b->norm_ff1, &b->ff1_up, &b->ff1_down, h, m, o);
    /* attention */
    r_ln(x, h, T, &b->norm_attn);
    memcpy(r, h, sizeof(double) * T * D);
    if (rot == TR_CF_ROT_INPUT) r_rotate(r, T);
    r_lin(r, q, T, D, D, LW(b->attn.q));
    r_lin(r, k, T, D, D, LW(b->attn.k));
    r_lin(h, v, T, D, D, LW(b->attn.v));
    if (rot == TR_CF_ROT_QK) {
        r_rotate(q, T);
        r_rotate(k, T);
    }
    for (int hh = 0; hh < H; hh++)
        for (int a = 0; a < T; a++) {
            double sc[64], mx = -INFINITY, sum = 0;
            for (int c = 0; c < T; c++) {
                double s = 0;
                for (int i = 0; i < DH; i++) s += q[a * D + hh * DH + i] * k[c * D + hh * DH + i];
                sc[c] = s / sqrt((double)DH);
                if (sc[c] > mx) mx = sc[c];
            }
            for (int c = 0; c < T; c++) sum += sc[c] = exp(sc[c] - mx);
            for (int i = 0; i < DH; i++) {
                double s = 0;
                for (int c = 0; c < T; c++) s += sc[c] / sum * v[c * D + hh * DH + i];
                r[a * D + hh * DH + i] = s;
            }
        }
    r_lin(r, o, T, D, D, LW(b->attn.o));
    for (int i = 0; i < T * D; i++) x[i] += o[i];
    /* conv module */
    r_ln(x, h, T, &b->norm_conv);
    r_lin(h, m, T, D, 2 * D, (const float *)b->pw1_w->data, b->pw1_b);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++) r[t * D + c] = m[t * 2 * D + c] * r_sig(m[t * 2 * D + D + c]);
    const float *wd = b->dw_w->data;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < D; c++) {
            double s = b->dw_b[c];
            for (int j = 0; j < K; j++) {
                int tt = t + j - (K - 1) / 2;
                if (tt >= 0 && tt < T) s += (double)wd[c * K + j] * r[tt * D + c];
            }
            q[t * D + c] = s;
        }
    r_ln(q, h, T, &b->conv_ln);
    for (int i = 0; i < T * D; i++) h[i] = r_silu(h[i]);
    r_lin(h, o, T, D, D, (const float *)b->pw2_w->data, b->pw2_b);
    for (int i = 0; i < T * D; i++) x[i] += o[i];
    r_ff(x, T, &b->norm_ff2, &b->ff2_up, &b->ff2_down, h, m, o);
    r_ln(x, h, T, &b->norm_out);
    memcpy(x, h, sizeof(double) * T * D);
    free(h), free(r), free(q), free(k), free(v), free(o), free(m);
}

static double max_rel(const float *got, const double *want, int n) {
    double e = 0, s = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= e)) e = d;
        if (fabs(want[i]) > s) s = fabs(want[i]);
    }
    return e / (s > 0 ? s : 1);
}

static void block_vs_reference(tr_cf_rot rot) {
    const tr_cf_dims dm = {.d_model = D,
                           .n_head = H,
                           .d_ff = F,
                           .kernel = K,
                           .ln_eps = 1e-5f,
                           .ff_scale = 0.5f,
                           .rot = rot,
                           .rot_theta = 5000.0f};
    wts w = {.cap = 1 << 16};
    w.buf = malloc(sizeof(float) * w.cap);
    tr_cf_block b;
    make_block(&w, &b, &dm);
    enum { T1 = 9, T2 = 6, R = T1 + T2 };
    float x[R * D], x1[T1 * D], x2[T2 * D], x3[R * D];
    double ref[R * D], ref_in[R * D];
    for (int i = 0; i < R * D; i++) ref_in[i] = ref[i] = x[i] = rnd(1.5f);
    memcpy(x1, x, sizeof x1);
    memcpy(x2, x + T1 * D, sizeof x2);
    memcpy(x3, x, sizeof x3);
    float *scratch = malloc(sizeof(float) * tr_cf_scratch(&dm, 2, (const int[]){T1, T2}));
    tr_pool *p1 = tr_pool_create(1), *p3 = tr_pool_create(3);
    int seg1 = T1, seg2 = T2, segs[2] = {T1, T2};
    tr_cf_block_fwd(p1, &b, &dm, x1, 1, &seg1, scratch);
    tr_cf_block_fwd(p1, &b, &dm, x2, 1, &seg2, scratch);
    tr_cf_block_fwd(p1, &b, &dm, x, 2, segs, scratch);
    tr_cf_block_fwd(p3, &b, &dm, x3, 2, segs, scratch);
    r_block(&b, rot, ref, T1); /* each utterance from position 0 */
    r_block(&b, rot, ref + T1 * D, T2);
    double e1 = max_rel(x1, ref, T1 * D), e2 = max_rel(x2, ref + T1 * D, T2 * D);
    printf("rot %d: block vs double reference: %.3g, %.3g\n", (int)rot, e1, e2);
    CHECK_MSG(e1 < 2e-5 && e2 < 2e-5, "rot %d: block err %g / %g", (int)rot, e1, e2);
    CHECK_MSG(!memcmp(x, x3, sizeof x), "rot %d: 1 vs 3 threads differ", (int)rot);
    CHECK_MSG(!memcmp(x, x1, sizeof x1) && !memcmp(x + T1 * D, x2, sizeof x2),
              "rot %d: packed segments differ from single runs", (int)rot);
    /* row blocks of at most 4 rows (3 + 3 + 3, 3 + 3 and 5 + 5 + 5 packed):
     * keys of every row before any row's residual, rotations at the block's
     * positions; the same values up to the GEMM's rounding per block */
    tr_cf_dims small = dm;
    small.block_rows = 4;
    float *sc4 = malloc(sizeof(float) * tr_cf_scratch(&small, 2, (const int[]){T1, T2}));
    float x4[R * D];
    for (int i = 0; i < R * D; i++) x4[i] = (float)ref_in[i];
    tr_cf_block_fwd(p3, &b, &small, x4, 2, segs, sc4);
    double e4 = max_rel(x4, ref, R * D);
    printf("rot %d: row blocks of 4 vs double reference: %.3g\n", (int)rot, e4);
    CHECK_MSG(e4 < 2e-5, "rot %d: row-block err %g", (int)rot, e4);
    free(sc4);
    tr_pool_free(p1);
    tr_pool_free(p3);
    free(scratch);
    tr_cf_block_free(&b);
    free(w.buf);
}

/* A differing rotation must change the output (the test above would pass a
 * block that ignored positions only if the reference did too). */
static void rotation_matters(void) {
    float x[2 * 8];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    float y[16];
    memcpy(y, x, sizeof x);
    tr_cf_rotate(y, 2, 2, 4, 5000.0f);
    CHECK(!memcmp(x, y, 8 * sizeof(float))); /* position 0 is the identity */
    /* position 1, pair (0, 2) of head 0: angle 1 */
    CHECK_NEAR(y[8], 9.0 * cos(1.0) - 11.0 * sin(1.0), 1e-5);
    CHECK_NEAR(y[10], 11.0 * cos(1.0) + 9.0 * sin(1.0), 1e-5);
    /* pair (1, 3): angle 5000^(-1/2) */
    double th = pow(5000.0, -0.5);
    CHECK_NEAR(y[9], 10.0 * cos(th) - 12.0 * sin(th), 1e-5);
}

static void lstm_vs_reference(void) {
    enum { IN = 6, HID = 5 };
    wts w = {.cap = 1 << 12};
    w.buf = malloc(sizeof(float) * w.cap);
    tr_nn_lstm l = {mat(&w, IN, 4 * HID, 0.5f), mat(&w, HID, 4 * HID, 0.5f),
                    alloc_f(&w, 4 * HID, 0.3f), IN, HID};
    float x[IN], h[HID], c[HID], h2[HID], c2[HID];
    for (int i = 0; i < IN; i++) x[i] = rnd(1.0f);
    for (int i = 0; i < HID; i++) h[i] = rnd(0.8f), c[i] = rnd(1.0f);
    float *scratch = malloc(sizeof(float) * (size_t)tr_nn_lstm_scratch(&l));
    tr_nn_lstm_step(&l, x, h, c, h2, c2, scratch);
    const float *wx = l.wx->data, *wh = l.wh->data;
    double e = 0;
    for (int j = 0; j < HID; j++) {
        double g[4];
        for (int q = 0; q < 4; q++) {
            int r = q * HID + j;
            double s = l.b[r];
            for (int i = 0; i < IN; i++) s += (double)wx[r * IN + i] * x[i];
            for (int i = 0; i < HID; i++) s += (double)wh[r * HID + i] * h[i];
            g[q] = s;
        }
        double cn = r_sig(g[1]) * c[j] + r_sig(g[0]) * tanh(g[2]);
        double hn = r_sig(g[3]) * tanh(cn);
        e = fmax(e, fmax(fabs(cn - c2[j]), fabs(hn - h2[j])));
    }
    printf("lstm vs double reference: %.3g\n", e);
    CHECK_MSG(e < 1e-5, "lstm err %g", e);
    /* in place (h_out = h, c_out = c) gives the same values */
    tr_nn_lstm_step(&l, x, h, c, h, c, scratch);
    CHECK(!memcmp(h, h2, sizeof h) && !memcmp(c, c2, sizeof c));
    free(scratch);
    free(w.buf);
}

/* The block table finds every tensor of a GGUF named the GigaAM way and
 * refuses a misshaped one. */
static bool write_block_file(const char *path, bool bad) {
    gguf_writer *wr = tr_gguf_writer_create();
    tr_nn_wspec specs[TR_CF_NSPECS];
    char names[TR_CF_NSPECS][96];
    size_t n = tr_cf_block_specs("enc.blocks.%d.", specs, names);
    const int64_t dims[4] = {D, F, K, 2 * D};
    static float zeros[4 * D * F];
    bool ok = wr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        char base[128];
        snprintf(base, sizeof base, specs[i].name, 0);
        int64_t ne[4] = {1, 1, 1, 1};
        for (int k = 0; k < 4; k++)
            ne[k] = specs[i].ne[k] < 0 ? dims[-1 - specs[i].ne[k]]
                    : specs[i].ne[k]   ? specs[i].ne[k]
                                       : 1;
        if (specs[i].kind == TR_NN_W_LINEAR || specs[i].kind == TR_NN_W_NORM) {
            char wn[160], bn[160];
            snprintf(wn, sizeof wn, "%s.weight", base);
            snprintf(bn, sizeof bn, "%s.bias", base);
            bool lin_ = specs[i].kind == TR_NN_W_LINEAR;
            int64_t wne[2] = {ne[0], lin_ ? ne[1] : 1}, bne[1] = {lin_ ? ne[1] : ne[0]};
            if (bad && i == 1) wne[1] -= 1;
            ok = tr_gguf_writer_add_tensor(wr, wn, TR_F32, lin_ ? 2 : 1, wne, zeros) &&
                 tr_gguf_writer_add_tensor(wr, bn, TR_F32, 1, bne, zeros);
        } else {
            int nd = specs[i].n_dims ? specs[i].n_dims : 1;
            ok = tr_gguf_writer_add_tensor(wr, base, TR_F32, nd, ne, zeros);
        }
    }
    ok = ok && tr_gguf_writer_set_str(wr, "general.architecture", "test") &&
         tr_gguf_writer_write(wr, path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(wr);
    return ok;
}

static void block_table(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/cf_table_%d.gguf", TR_BINARY_DIR, (int)getpid());
    for (int bad = 0; bad < 2; bad++) {
        CHECK(write_block_file(path, bad));
        gguf_file *g = NULL;
        CHECK(tr_gguf_open(path, &g) == TRANSCRIBE_OK);
        tr_nn_wspec specs[TR_CF_NSPECS];
        char names[TR_CF_NSPECS][96];
        size_t n = tr_cf_block_specs("enc.blocks.%d.", specs, names);
        CHECK(n == TR_CF_NSPECS);
        const int64_t dims[4] = {D, F, K, 2 * D};
        tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
        tr_cf_block b;
        memset(&b, 0, sizeof b);
        bool ok = tr_nn_load_weights(&src, specs, n, dims, 0, true, &b);
        CHECK_MSG(ok == !bad, "table load %s", bad ? "accepted a misshaped tensor" : "failed");
        if (ok) CHECK(b.dw_w && b.pw1_w && b.pw2_w && b.conv_ln.w && b.attn.o.w && b.norm_out.b);
        tr_gguf_close(g);
        remove(path);
    }
}

int main(void) {
    block_vs_reference(TR_CF_ROT_INPUT);
    block_vs_reference(TR_CF_ROT_QK);
    block_vs_reference(TR_CF_ROT_NONE);
    rotation_matters();
    lstm_vs_reference();
    block_table();
    return TEST_DONE();
}
