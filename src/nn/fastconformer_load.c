/* FastConformer weights: every tensor of docs/formats/parakeet.md §4.1 / §4.2
 * (docs/formats/canary.md §3.1 / §3.2) looked up with its exact shape and type
 * class. Matmul weights stay borrowed from the mapping; the depthwise taps
 * are widened to F32 once, with the batch norm folded into them. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "nn/fastconformer_internal.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "util/log.h"

#define ERR_GGUF  TRANSCRIBE_ERR_GGUF
#define FC_BN_EPS 1e-5f

/* Name builder and lookups for one block (blk >= 0), the pre-encode (-1) or
 * other "enc.*" tensors (-2). */
typedef struct {
    const gguf_file *g;
    int blk;
    char name[96];
    bool bad;
} finder;

static const char *tname(finder *f, const char *suffix) {
    if (f->blk == -2)
        snprintf(f->name, sizeof f->name, "enc.%s", suffix);
    else if (f->blk < 0)
        snprintf(f->name, sizeof f->name, "enc.pre_encode.%s", suffix);
    else
        snprintf(f->name, sizeof f->name, "enc.blocks.%d.%s", f->blk, suffix);
    return f->name;
}

static const tr_tensor *need(finder *f, const char *suffix, uint32_t types, int n_dims, int64_t n0,
                             int64_t n1, int64_t n2, int64_t n3) {
    if (f->bad) return NULL;
    const int64_t ne[4] = {n0, n1, n2, n3};
    const tr_tensor *t = tr_gguf_require_tensor(f->g, tname(f, suffix), types, n_dims, ne);
    if (!t) f->bad = true;
    return t;
}

static const float *need_vec(finder *f, const char *suffix, int64_t n) {
    const tr_tensor *t = need(f, suffix, TR_TYPES_F32, 1, n, 1, 1, 1);
    return t ? (const float *)t->data : NULL;
}

/* Table-driven lookups (nn/weights.h) through the same failure flag. */
static void need_table(finder *f, const tr_nn_wspec *specs, size_t n, const int64_t *dims,
                       bool with_bias, void *dst) {
    if (f->bad) return;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(f->g);
    if (!tr_nn_load_weights(&src, specs, n, dims, f->blk, with_bias, dst)) f->bad = true;
}

/* A {1, in, out} pointwise conv seen as the {in, out} linear it is. */
static void pointwise_view(const tr_tensor *t, tr_tensor *view, int64_t in, int64_t out) {
    *view = *t;
    view->n_dims = 2;
    view->ne[0] = in;
    view->ne[1] = out;
    view->ne[2] = view->ne[3] = 1;
    view->nb1 = tr_row_bytes(t->type, in);
}

static float tap(const tr_tensor *t, long i) {
    if (t->type == TR_F16) return tr_f16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

/* Depthwise taps → F32 [k][d] (tap-major), BN folded when present. The
 * block owns the memory (taps, then biases, then two load-time rows); it is
 * allocated only once the tensors proved to exist, so a file that claims
 * huge sizes fails on the tensor check, not on memory. */
static transcribe_status load_depthwise(finder *f, const tr_fc_hparams *hp, tr_fc_block *b) {
    const int d = hp->d_model, k = hp->conv_kernel;
    const tr_tensor *w = need(f, "conv.depthwise.weight", TR_TYPES_CONV, 3, k, 1, d, 1);
    const float *bias = hp->use_bias ? need_vec(f, "conv.depthwise.bias", d) : NULL;
    const float *gamma = need_vec(f, "conv.bn.weight", d);
    const float *beta = need_vec(f, "conv.bn.bias", d);
    const float *mean = NULL, *var = NULL;
    if (!hp->conv_layer_norm) {
        mean = need_vec(f, "conv.bn.running_mean", d);
        var = need_vec(f, "conv.bn.running_var", d);
    }
    if (f->bad) return ERR_GGUF;
    b->dw.w = malloc(sizeof(float) * (size_t)(k + 3) * (size_t)d);
    if (!b->dw.w) {
        TR_ERROR("fastconformer: out of memory for %s", tname(f, "conv.depthwise.weight"));
        return TRANSCRIBE_ERR_OOM;
    }
    b->dw.b = b->dw.w + (size_t)k * d;
    float *scale = b->dw.b + d, *shift = scale + d; /* load-time temporaries */
    if (hp->conv_layer_norm) {
        b->cln_w = gamma;
        b->cln_b = beta;
        for (int c = 0; c < d; c++) scale[c] = 1.0f, shift[c] = 0.0f;
    } else {
        for (int c = 0; c < d; c++)
            if (!(var[c] + FC_BN_EPS > 0.0f)) {
                TR_ERROR("fastconformer: %s[%d] = %g is not a valid variance",
                         tname(f, "conv.bn.running_var"), c, (double)var[c]);
                return ERR_GGUF;
            }
        tr_nn_bn_fold(gamma, beta, mean, var, d, FC_BN_EPS, scale, shift);
    }
    for (int c = 0; c < d; c++) {
        for (int j = 0; j < k; j++) b->dw.w[(size_t)j * d + c] = tap(w, (long)c * k + j) * scale[c];
        b->dw.b[c] = (bias ? bias[c] : 0.0f) * scale[c] + shift[c];
    }
    return TRANSCRIBE_OK;
}

/* Sizes a block table refers to. */
enum { FC_D, FC_FF, FC_DH, FC_H, FC_NDIMS };

#define FC_BLK(n) "enc.blocks.%d." n
#define FC_OFF(m) offsetof(tr_fc_block, m)
static const tr_nn_wspec fc_block_specs[] = {
    {FC_BLK("norm_ff1"), TR_NN_W_NORM, {TR_NN_DIM(FC_D)}, 0, 0, FC_OFF(norm_ff1)},
    {FC_BLK("ff1.linear1"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_FF)},
     0,
     0,
     FC_OFF(ff1_w1)},
    {FC_BLK("ff1.linear2"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_FF), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(ff1_w2)},
    {FC_BLK("norm_attn"), TR_NN_W_NORM, {TR_NN_DIM(FC_D)}, 0, 0, FC_OFF(norm_attn)},
    {FC_BLK("attn.linear_q"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(q)},
    {FC_BLK("attn.linear_k"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(k)},
    {FC_BLK("attn.linear_v"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(v)},
    {FC_BLK("attn.linear_out"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(o)},
    {FC_BLK("attn.pos_bias_u"),
     TR_NN_W_VEC,
     {TR_NN_DIM(FC_DH), TR_NN_DIM(FC_H)},
     2,
     0,
     FC_OFF(pos_bias_u)},
    {FC_BLK("attn.pos_bias_v"),
     TR_NN_W_VEC,
     {TR_NN_DIM(FC_DH), TR_NN_DIM(FC_H)},
     2,
     0,
     FC_OFF(pos_bias_v)},
    {FC_BLK("norm_conv"), TR_NN_W_NORM, {TR_NN_DIM(FC_D)}, 0, 0, FC_OFF(norm_conv)},
    {FC_BLK("norm_ff2"), TR_NN_W_NORM, {TR_NN_DIM(FC_D)}, 0, 0, FC_OFF(norm_ff2)},
    {FC_BLK("ff2.linear1"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_D), TR_NN_DIM(FC_FF)},
     0,
     0,
     FC_OFF(ff2_w1)},
    {FC_BLK("ff2.linear2"),
     TR_NN_W_LINEAR_OPTB,
     {TR_NN_DIM(FC_FF), TR_NN_DIM(FC_D)},
     0,
     0,
     FC_OFF(ff2_w2)},
    {FC_BLK("norm_out"), TR_NN_W_NORM, {TR_NN_DIM(FC_D)}, 0, 0, FC_OFF(norm_out)},
};
#undef FC_BLK
#undef FC_OFF

static transcribe_status load_block(const gguf_file *g, const tr_fc_hparams *hp, int i,
                                    tr_fc_block *b) {
    const int64_t d = hp->d_model, ff = hp->d_ff, H = hp->n_heads, dh = d / H;
    const bool ub = hp->use_bias;
    const int64_t dims[FC_NDIMS] = {[FC_D] = d, [FC_FF] = ff, [FC_DH] = dh, [FC_H] = H};
    finder f = {.g = g, .blk = i};
    need_table(&f, fc_block_specs, sizeof fc_block_specs / sizeof fc_block_specs[0], dims, ub, b);
    const tr_tensor *pos = need(&f, "attn.linear_pos.weight", TR_TYPES_LINEAR, 2, d, d, 1, 1);
    const tr_tensor *pw1 = need(&f, "conv.pointwise1.weight", TR_TYPES_CONV, 3, 1, d, 2 * d, 1);
    const float *pw1_b = ub ? need_vec(&f, "conv.pointwise1.bias", 2 * d) : NULL;
    const tr_tensor *pw2 = need(&f, "conv.pointwise2.weight", TR_TYPES_CONV, 3, 1, d, d, 1);
    const float *pw2_b = ub ? need_vec(&f, "conv.pointwise2.bias", d) : NULL;
    if (f.bad) return ERR_GGUF;
    transcribe_status st = load_depthwise(&f, hp, b);
    if (st) return st;
    b->pos = *pos;
    pointwise_view(pw1, &b->pw1_view, d, 2 * d);
    pointwise_view(pw2, &b->pw2_view, d, d);
    b->pw1 = (tr_nn_linear){&b->pw1_view, pw1_b};
    b->pw2 = (tr_nn_linear){&b->pw2_view, pw2_b};
    return TRANSCRIBE_OK;
}

/* Stride-2 stages the file's pre-encode holds: conv.0, then a depthwise
 * conv.{3s-4} per further stage s (NeMo's dw_striding numbering, activations
 * at the indices between). */
static int file_stages(const gguf_file *g) {
    int s = 1;
    char name[64];
    while (s < TR_FC_MAX_SUB_STAGES) {
        snprintf(name, sizeof name, "enc.pre_encode.conv.%d.weight", 3 * (s + 1) - 4);
        if (!tr_gguf_find_tensor(g, name)) break;
        s++;
    }
    return s;
}

static bool load_pre_encode(const gguf_file *g, tr_fc_encoder *e) {
    const int64_t C = e->hp.sub_channels, d = e->hp.d_model;
    finder f = {.g = g, .blk = -1};
    char w[32], b[32];
    for (int i = 0; i < 2 * e->hp.sub_stages - 1; i++) {
        /* i = 0: conv.0; then per stage s = (i + 3) / 2: depthwise (odd i)
         * conv.{3s-4}, pointwise (even i) conv.{3s-3} */
        const int s = (i + 3) / 2, idx = i == 0 ? 0 : (i % 2 ? 3 * s - 4 : 3 * s - 3);
        const bool pointwise = i > 0 && i % 2 == 0;
        snprintf(w, sizeof w, "conv.%d.weight", idx);
        snprintf(b, sizeof b, "conv.%d.bias", idx);
        e->pre_w[i] = pointwise ? need(&f, w, TR_TYPES_CONV, 4, 1, 1, C, C)
                                : need(&f, w, TR_TYPES_CONV, 4, 3, 3, 1, C);
        e->pre_b[i] = need_vec(&f, b, C);
    }
    static const tr_nn_wspec out_spec = {
        "enc.pre_encode.out", TR_NN_W_LINEAR, {TR_NN_DIM(0), TR_NN_DIM(1)}, 0, 0, 0};
    const int64_t dims[2] = {C * e->f_out, d};
    need_table(&f, &out_spec, 1, dims, true, &e->pre_out);
    return !f.bad;
}

/* The speaker kernel is configured by Parakeet keys only (multitalker files;
 * no Canary file has them), so they are read here by their full names. */
static bool load_speaker_kernel(const gguf_file *g, tr_fc_encoder *e) {
    const int64_t d = e->hp.d_model;
    const int32_t *layers = NULL;
    int64_t n = 0;
    bool bg = false;
    if (tr_gguf_opt_arr_i32(g, "stt.parakeet.encoder.spk_kernel_layers", 0, INT64_MAX, &layers,
                            &n) ||
        tr_gguf_opt_bool(g, "stt.parakeet.encoder.add_bg_spk_kernel", false, &bg))
        return false;
    if (n == 0) return true;
    finder f = {.g = g, .blk = -2};
    /* {W0, W3} of a kernel: two d × d linears with bias */
    static const tr_nn_wspec spk[2] = {
        {"enc.spk_kernel.0.0", TR_NN_W_LINEAR, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, 0},
        {"enc.spk_kernel.0.3",
         TR_NN_W_LINEAR,
         {TR_NN_DIM(0), TR_NN_DIM(0)},
         0,
         0,
         sizeof(tr_nn_linear)},
    };
    static const tr_nn_wspec bg_spk[2] = {
        {"enc.bg_spk_kernel.0.0", TR_NN_W_LINEAR, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, 0},
        {"enc.bg_spk_kernel.0.3",
         TR_NN_W_LINEAR,
         {TR_NN_DIM(0), TR_NN_DIM(0)},
         0,
         0,
         sizeof(tr_nn_linear)},
    };
    const int64_t dims[1] = {d};
    tr_nn_linear k[2];
    need_table(&f, spk, 2, dims, true, k);
    if (f.bad) return false;
    e->spk0 = k[0];
    e->spk3 = k[1];
    e->spk = true;
    if (!bg) return true;
    need_table(&f, bg_spk, 2, dims, true, k);
    if (f.bad) return false;
    const tr_nn_linear b0 = k[0], b3 = k[1];
    float *h = malloc(sizeof(float) * (size_t)d);
    e->spk_bg = malloc(sizeof(float) * (size_t)d);
    if (!h || !e->spk_bg) {
        free(h);
        TR_ERROR("fastconformer: out of memory for the background speaker kernel");
        return false;
    }
    /* W0 . 0 + b0 = b0 */
    for (int64_t i = 0; i < d; i++) h[i] = b0.b[i] > 0.0f ? b0.b[i] : 0.0f;
    tr_nn_linear_fwd(NULL, &b3, h, 1, e->spk_bg);
    free(h);
    return true;
}

transcribe_status tr_fc_load(const struct gguf_file *g, const tr_fc_hparams *hp,
                             tr_fc_encoder **out) {
    if (!g || !hp || !out) {
        TR_ERROR("fastconformer: load: invalid argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (hp->n_layers < 1 || hp->d_model < 2 || hp->n_heads < 1 || hp->d_model % hp->n_heads ||
        hp->d_model % 2 || hp->d_ff < 1 || hp->conv_kernel < 1 || hp->sub_channels < 1 ||
        hp->n_mels < 1 || hp->sub_stages < 1 || hp->sub_stages > TR_FC_MAX_SUB_STAGES ||
        hp->sub_factor < 2 || hp->conv_pad_left < 0 || hp->conv_pad_right < 0 ||
        hp->conv_pad_left + hp->conv_pad_right != hp->conv_kernel - 1) {
        TR_ERROR("fastconformer: load: inconsistent hyper-parameters");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_fc_encoder *e = calloc(1, sizeof *e);
    if (!e) return TRANSCRIBE_ERR_OOM;
    e->hp = *hp;
    /* The weights decide the network: a file whose subsampling_factor key
     * disagrees with its pre-encode (upstream's toy fixtures declare 2 and
     * carry three stages) runs the stages it holds; its frames keep the
     * key's duration, as the reference implementation times them. */
    const int held = file_stages(g);
    if (held != hp->sub_stages) {
        TR_WARN("fastconformer: subsampling_factor %d but the pre-encode holds %d stride-2 "
                "stages (factor %d): running the %d stages",
                hp->sub_factor, held, 1 << held, held);
        e->hp.sub_stages = held;
    }
    const bool causal = hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED;
    e->f_out = hp->n_mels;
    for (int s = 0; s < e->hp.sub_stages; s++) e->f_out = tr_fc_stage_len(e->f_out, causal);
    e->blocks = calloc((size_t)hp->n_layers, sizeof *e->blocks);
    if (!e->blocks) {
        TR_ERROR("fastconformer: out of memory loading %d blocks", hp->n_layers);
        tr_fc_free(e);
        return TRANSCRIBE_ERR_OOM;
    }
    if (!load_pre_encode(g, e) || !load_speaker_kernel(g, e)) {
        tr_fc_free(e);
        return ERR_GGUF;
    }
    for (int i = 0; i < hp->n_layers; i++) {
        transcribe_status st = load_block(g, hp, i, &e->blocks[i]);
        if (st) {
            tr_fc_free(e);
            return st;
        }
    }
    *out = e;
    return TRANSCRIBE_OK;
}

void tr_fc_free(tr_fc_encoder *enc) {
    if (!enc) return;
    if (enc->blocks)
        for (int i = 0; i < enc->hp.n_layers; i++) free(enc->blocks[i].dw.w);
    free(enc->blocks);
    free(enc->spk_bg);
    free(enc);
}

const tr_fc_hparams *tr_fc_get_hparams(const tr_fc_encoder *enc) {
    return enc ? &enc->hp : NULL;
}

int tr_fc_out_frames(const tr_fc_encoder *enc, int T_mel) {
    if (!enc || T_mel < 1) return 0;
    const bool causal = enc->hp.att_style == TR_FC_STYLE_CHUNKED_LIMITED;
    int T = T_mel;
    for (int s = 0; s < enc->hp.sub_stages; s++) T = tr_fc_stage_len(T, causal);
    return T;
}
