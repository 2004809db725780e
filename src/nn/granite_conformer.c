/* Granite's Conformer encoder (docs/formats/granite_speech.md §6.1, docs/formats/granite_nar.md
 * §5.1): keys, tensors, BatchNorm fold and the forward pass shared by both Granite families. */
#include "nn/granite_conformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define GC_LN_EPS 1e-5f
#define GC_BN_EPS 1e-5f

const tr_gc_names tr_gc_names_granite_speech = {
    "ff1.up",          "ff1.down",        "ff2.up",         "ff2.down",
    "attn.q",          "attn.kv",         "attn.out",       "attn.rel_pos_emb",
    "conv.pointwise1", "conv.pointwise2", "conv.depthwise", "conv.bn"};
const tr_gc_names tr_gc_names_granite_nar = {
    "ff1_up",          "ff1_down",        "ff2_up",         "ff2_down",
    "attn_q",          "attn_kv",         "attn_out",       "attn_rel_pos_emb",
    "conv_pointwise1", "conv_pointwise2", "conv_depthwise", "conv_bn"};

/* ---- keys ---- */

transcribe_status tr_gc_read_keys(const struct gguf_file *f, const char *prefix, const char *who,
                                  tr_gc_hparams *e) {
    transcribe_status st;
    int mult, exp;
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 256, &e->n_layer},     {"hidden", 1, 1 << 16, &e->d},
        {"n_heads", 1, 1024, &e->n_head},      {"head_dim", 1, 4096, &e->head_dim},
        {"input_dim", 2, 1 << 14, &e->in_dim}, {"output_dim", 1, 1 << 16, &e->out_dim},
        {"feedforward_mult", 1, 64, &mult},    {"conv_kernel_size", 1, 255, &e->kernel},
        {"conv_expansion", 1, 64, &exp},       {"max_pos_emb", 1, 1 << 20, &e->max_pos},
        {"context_size", 1, 1 << 20, &e->ctx},
    };
    if ((st = tr_gguf_req_u32_keys(f, prefix, sizes, sizeof sizes / sizeof *sizes))) return st;
    e->d_ffn = e->d * mult;
    e->d_conv = e->d * exp;
    if (e->n_head * e->head_dim != e->d) {
        TR_ERROR("%s: encoder n_heads %d x head_dim %d != hidden %d", who, e->n_head, e->head_dim,
                 e->d);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (e->ctx > e->max_pos) {
        TR_ERROR("%s: encoder context_size %d exceeds max_pos_emb %d", who, e->ctx, e->max_pos);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (e->kernel % 2 == 0) {
        TR_ERROR("%s: conv_kernel_size %d must be odd (symmetric padding)", who, e->kernel);
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- tensors ---- */

typedef struct finder {
    const struct gguf_file *f;
    char name[192];
    bool bad;
} finder;

static const char *nm(finder *fd, int l, const char *stem, const char *what) {
    if (l < 0)
        snprintf(fd->name, sizeof fd->name, "enc.%s%s", stem, what);
    else
        snprintf(fd->name, sizeof fd->name, "enc.blocks.%d.%s%s", l, stem, what);
    return fd->name;
}

static const tr_tensor *need(finder *fd, const char *name, uint32_t types, int n_dims,
                             const int64_t *ne) {
    const tr_tensor *t = tr_gguf_require_tensor(fd->f, name, types, n_dims, ne);
    if (!t) fd->bad = true;
    return t;
}

static const float *vec(finder *fd, int l, const char *stem, const char *what, int64_t n) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = need(fd, nm(fd, l, stem, what), TR_TYPES_F32, 1, ne);
    return t ? (const float *)t->data : NULL;
}

static void lin(finder *fd, tr_nn_linear *o, int l, const char *stem, int64_t in, int64_t out,
                bool bias) {
    const int64_t ne[2] = {in, out};
    o->w = need(fd, nm(fd, l, stem, ".weight"), TR_TYPES_LINEAR, 2, ne);
    o->b = bias ? vec(fd, l, stem, ".bias", out) : NULL;
}

static void norm(finder *fd, tr_nn_norm *n, int l, const char *stem, int64_t d) {
    n->w = vec(fd, l, stem, ".weight", d);
    n->b = vec(fd, l, stem, ".bias", d);
}

/* A {1, in, out} pointwise conv kernel viewed as the {in, out} linear. */
static void pointwise(finder *fd, tr_tensor *view, tr_nn_linear *o, int l, const char *stem,
                      int64_t in, int64_t out) {
    const int64_t ne[3] = {1, in, out};
    const tr_tensor *t = need(fd, nm(fd, l, stem, ".weight"), TR_TYPES_CONV, 3, ne);
    o->b = vec(fd, l, stem, ".bias", out);
    if (!t) return;
    *view = *t;
    view->n_dims = 2;
    view->ne[0] = in;
    view->ne[1] = out;
    view->ne[2] = view->ne[3] = 1;
    view->nb1 = tr_row_bytes(t->type, in);
    o->w = view;
}

/* Depthwise taps [k][d_conv] F32 with BatchNorm folded in, and the folded shift as bias
 * (docs/formats/granite_speech.md §6.1.2). */
static transcribe_status depthwise(finder *fd, const char *who, const tr_gc_names *nms,
                                   const tr_gc_hparams *e, int i, tr_gc_block *b) {
    const int k = e->kernel, c = e->d_conv;
    const int64_t ne[3] = {k, 1, c};
    const tr_tensor *w = need(fd, nm(fd, i, nms->dw, ".weight"), TR_TYPES_CONV, 3, ne);
    const float *g = vec(fd, i, nms->bn, ".weight", c);
    const float *be = vec(fd, i, nms->bn, ".bias", c);
    const float *mu = vec(fd, i, nms->bn, ".running_mean", c);
    const float *var = vec(fd, i, nms->bn, ".running_var", c);
    if (!w || fd->bad) return TRANSCRIBE_ERR_GGUF;
    for (int j = 0; j < c; j++)
        if (!(var[j] + GC_BN_EPS > 0.0f)) {
            TR_ERROR("%s: block %d %s.running_var[%d] = %g is not a variance", who, i, nms->bn, j,
                     (double)var[j]);
            return TRANSCRIBE_ERR_GGUF;
        }
    float *taps = malloc(sizeof(float) * (size_t)(k + 3) * (size_t)c);
    if (!taps) return TRANSCRIBE_ERR_OOM;
    b->dw.w = taps;
    b->dw.b = taps + (size_t)k * c;
    float *scale = b->dw.b + c, *shift = scale + c;
    tr_nn_bn_fold(g, be, mu, var, c, GC_BN_EPS, scale, shift);
    for (int ch = 0; ch < c; ch++) {
        for (int j = 0; j < k; j++) {
            size_t at = (size_t)ch * k + j;
            float v = w->type == TR_F16 ? tr_f16_to_f32(((const uint16_t *)w->data)[at])
                                        : ((const float *)w->data)[at];
            taps[(size_t)j * c + ch] = v * scale[ch];
        }
        b->dw.b[ch] = shift[ch];
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_gc_load(const struct gguf_file *f, const char *who, const tr_gc_names *nms,
                             const tr_gc_hparams *e, tr_gc_weights *w) {
    memset(w, 0, sizeof *w);
    finder fd = {.f = f};
    const int64_t d = e->d;
    lin(&fd, &w->input_linear, -1, "input_linear", e->in_dim, d, true);
    lin(&fd, &w->ctc_proj, -1, "ctc_proj", d, e->out_dim, true);
    lin(&fd, &w->ctc_bypass, -1, "ctc_bypass", e->out_dim, d, true);
    if (fd.bad) return TRANSCRIBE_ERR_GGUF;
    w->blocks = calloc((size_t)e->n_layer, sizeof *w->blocks);
    if (!w->blocks) return TRANSCRIBE_ERR_OOM;
    const int rows = 2 * e->max_pos + 1;
    for (int i = 0; i < e->n_layer; i++) {
        tr_gc_block *b = &w->blocks[i];
        norm(&fd, &b->norm_ff1, i, "norm_ff1", d);
        lin(&fd, &b->ff1_up, i, nms->ff1_up, d, e->d_ffn, true);
        lin(&fd, &b->ff1_down, i, nms->ff1_down, e->d_ffn, d, true);
        norm(&fd, &b->norm_attn, i, "norm_attn", d);
        lin(&fd, &b->q, i, nms->q, d, d, false);
        lin(&fd, &b->kv, i, nms->kv, d, 2 * d, false);
        lin(&fd, &b->out, i, nms->out, d, d, true);
        const int64_t rne[2] = {e->head_dim, rows};
        const tr_tensor *rp =
            need(&fd, nm(&fd, i, nms->rel_pos, ".weight"), TR_TYPES_LINEAR, 2, rne);
        norm(&fd, &b->norm_conv, i, "norm_conv", d);
        pointwise(&fd, &b->pw1_view, &b->pw1, i, nms->pw1, d, 2 * e->d_conv);
        pointwise(&fd, &b->pw2_view, &b->pw2, i, nms->pw2, e->d_conv, d);
        norm(&fd, &b->norm_ff2, i, "norm_ff2", d);
        lin(&fd, &b->ff2_up, i, nms->ff2_up, d, e->d_ffn, true);
        lin(&fd, &b->ff2_down, i, nms->ff2_down, e->d_ffn, d, true);
        norm(&fd, &b->norm_post, i, "norm_post", d);
        if (fd.bad) return TRANSCRIBE_ERR_GGUF;
        transcribe_status st = depthwise(&fd, who, nms, e, i, b);
        if (st) return st;
        b->rel_pos = tr_rows_f32(rp, rows);
        if (!b->rel_pos) return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

void tr_gc_free(const tr_gc_hparams *e, tr_gc_weights *w) {
    for (int i = 0; w->blocks && i < e->n_layer; i++) {
        free(w->blocks[i].rel_pos);
        free(w->blocks[i].dw.w);
    }
    free(w->blocks);
    w->blocks = NULL;
}

/* ---- forward ---- */

/* Work buffers of one forward pass. */
typedef struct enc_work {
    float *h, *mid, *a, *b, *bias, *rel;
} enc_work;

static void ff_half(tr_pool *pool, const tr_nn_norm *ln, const tr_nn_linear *up,
                    const tr_nn_linear *down, int d, int d_ffn, float *x, int T, enc_work *w) {
    tr_layer_norm(pool, x, w->h, T, d, ln->w, ln->b, GC_LN_EPS);
    tr_nn_linear_fwd(pool, up, w->h, T, w->mid);
    tr_ew_silu(pool, w->mid, (long)T * d_ffn);
    tr_nn_linear_fwd(pool, down, w->mid, T, w->a);
    tr_ew_axpy(pool, x, w->a, 0.5f, (long)T * d);
}

/* Shaw block-local attention (docs/formats/granite_speech.md §6.1.1). Padded rows of the last
 * block are neither queried nor attended, so each block runs on its real rows only. */
static void shaw_attn(const tr_gc_hparams *e, const tr_gc_block *b, tr_pool *pool, float *x, int T,
                      enc_work *w) {
    const int d = e->d, H = e->n_head, dh = e->head_dim, C = e->ctx;
    const float scale = 1.0f / sqrtf((float)dh);
    tr_layer_norm(pool, x, w->h, T, d, b->norm_attn.w, b->norm_attn.b, GC_LN_EPS);
    float *q = w->a, *kv = w->mid, *att = w->b;
    tr_nn_linear_fwd(pool, &b->q, w->h, T, q);
    tr_nn_linear_fwd(pool, &b->kv, w->h, T, kv);
    for (int r0 = 0; r0 < T; r0 += C) {
        const int n = T - r0 < C ? T - r0 : C, span = 2 * n - 1;
        /* E rows for offsets -(n-1) .. n-1 (|i - j| < n <= context: no clamp) */
        const float *E = b->rel_pos + (size_t)(e->max_pos - (n - 1)) * dh;
        /* The block's query rows split into heads are n·H rows of dh
         * ((i, h) at row i·H + h), so one pooled GEMM gives every head's
         * rel[i][c] = q_i,h · E[c − (n−1)]; then bias_h[i][j] =
         * scale · rel_h[i][i − j + n − 1]. */
        tr_matmul_f32_nt(pool, q + (size_t)r0 * d, dh, E, dh, w->rel, span, n * H, span, dh);
        for (int hd = 0; hd < H; hd++) {
            float *bh = w->bias + (size_t)hd * n * n;
            for (int i = 0; i < n; i++) {
                const float *ri = w->rel + ((size_t)i * H + hd) * span + i + n - 1;
                for (int j = 0; j < n; j++) bh[(size_t)i * n + j] = scale * ri[-j];
            }
        }
        tr_attn_args a = {.q = q + (size_t)r0 * d,
                          .q_stride = d,
                          .k = kv + (size_t)r0 * 2 * d,
                          .v = kv + (size_t)r0 * 2 * d + d,
                          .kv_stride = 2 * d,
                          .out = att + (size_t)r0 * d,
                          .out_stride = d,
                          .n_q = n,
                          .n_kv = n,
                          .kv_valid = n,
                          .n_head = H,
                          .n_head_kv = H,
                          .head_dim = dh,
                          .scale = scale,
                          .pos_bias = w->bias};
        tr_attention(pool, &a);
    }
    tr_nn_linear_fwd(pool, &b->out, att, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

/* Conv module (docs/formats/granite_speech.md §6.1.2): LN, pointwise 1 + GLU, depthwise (BN
 * folded), SiLU, pointwise 2. */
static void conv_module(const tr_gc_hparams *e, const tr_gc_block *b, tr_pool *pool, float *x,
                        int T, enc_work *w) {
    const int d = e->d, c = e->d_conv;
    tr_layer_norm(pool, x, w->h, T, d, b->norm_conv.w, b->norm_conv.b, GC_LN_EPS);
    tr_nn_linear_fwd(pool, &b->pw1, w->h, T, w->mid); /* [T][2c] */
    tr_ew_glu(pool, w->mid, w->a, T, c);
    tr_nn_depthwise(pool, &b->dw, c, e->kernel, e->kernel / 2, w->a, w->b, T);
    tr_ew_silu(pool, w->b, (long)T * c);
    tr_nn_linear_fwd(pool, &b->pw2, w->b, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

/* Self-conditioned CTC bypass: x += softmax(x·ctc_proj + b)·ctc_bypass + b; blank (optional)
 * gets the softmax's channel 0. */
static void ctc_bypass(const tr_gc_hparams *e, const tr_gc_weights *cw, tr_pool *pool, float *x,
                       int T, float *blank, enc_work *w) {
    const int d = e->d, V = e->out_dim;
    tr_nn_linear_fwd(pool, &cw->ctc_proj, x, T, w->mid);
    tr_softmax(w->mid, T, V, NULL);
    if (blank)
        for (int t = 0; t < T; t++) blank[t] = w->mid[(size_t)t * V];
    tr_nn_linear_fwd(pool, &cw->ctc_bypass, w->mid, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

static size_t max3(size_t a, size_t b, size_t c) {
    size_t r = a > b ? a : b;
    return r > c ? r : c;
}

static void capture(const tr_gc_hparams *e, const tr_gc_run *run, int l, const float *x, int T) {
    for (int j = 0; j < run->n_cap; j++)
        if (run->cap_block[j] == l)
            for (int t = 0; t < T; t++)
                memcpy(run->cap_out + (size_t)t * run->cap_stride + (size_t)j * e->d,
                       x + (size_t)t * e->d, (size_t)e->d * sizeof(float));
}

transcribe_status tr_gc_encode(const tr_gc_hparams *e, const tr_gc_weights *cw, tr_pool *pool,
                               const char *who, const float *in, int T, const tr_gc_run *run) {
    const int d = e->d, C = e->ctx;
    const int nb_rows = T < C ? T : C;
    enc_work w = {0};
    const size_t Td = (size_t)T * d;
    const size_t mid = (size_t)T * max3((size_t)e->d_ffn, 2 * (size_t)e->d_conv,
                                        (size_t)(e->out_dim > 2 * d ? e->out_dim : 2 * d));
    const size_t wide = (size_t)T * (e->d_conv > d ? e->d_conv : d);
    float *x = malloc(Td * sizeof(float));
    w.h = malloc(wide * sizeof(float));
    w.mid = malloc(mid * sizeof(float));
    w.a = malloc(wide * sizeof(float));
    w.b = malloc(wide * sizeof(float));
    w.bias = malloc((size_t)e->n_head * nb_rows * nb_rows * sizeof(float));
    w.rel = malloc((size_t)nb_rows * e->n_head * (2 * nb_rows) * sizeof(float));
    transcribe_status st = TRANSCRIBE_OK;
    if (!x || !w.h || !w.mid || !w.a || !w.b || !w.bias || !w.rel) {
        TR_ERROR("%s: out of memory encoding %d frames", who, T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (run->should_abort && run->should_abort(run->abort_user)) {
        st = TRANSCRIBE_ERR_ABORTED;
        goto done;
    }
    tr_nn_linear_fwd(pool, &cw->input_linear, in, T, x);
    for (int l = 0; l < e->n_layer; l++) {
        const tr_gc_block *b = &cw->blocks[l];
        ff_half(pool, &b->norm_ff1, &b->ff1_up, &b->ff1_down, d, e->d_ffn, x, T, &w);
        shaw_attn(e, b, pool, x, T, &w);
        conv_module(e, b, pool, x, T, &w);
        ff_half(pool, &b->norm_ff2, &b->ff2_up, &b->ff2_down, d, e->d_ffn, x, T, &w);
        tr_layer_norm(pool, x, x, T, d, b->norm_post.w, b->norm_post.b, GC_LN_EPS);
        const bool bypass = l + 1 == e->n_layer / 2;
        if (!(bypass && run->cap_after_bypass)) capture(e, run, l, x, T);
        if (bypass) ctc_bypass(e, cw, pool, x, T, run->blank, &w);
        if (bypass && run->cap_after_bypass) capture(e, run, l, x, T);
        if (run->on_block) run->on_block(run->block_user, l + 1, e->n_layer);
        if (run->should_abort && run->should_abort(run->abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            goto done;
        }
    }
    if (run->out)
        for (int t = 0; t < T; t++)
            memcpy(run->out + (size_t)t * run->out_stride, x + (size_t)t * d,
                   (size_t)d * sizeof(float));
done:
    free(x);
    free(w.h);
    free(w.mid);
    free(w.a);
    free(w.b);
    free(w.bias);
    free(w.rel);
    return st;
}
