/* The SAN-M block (docs/formats/sensevoice.md §5.2–§5.3). Where the time
 * goes is the four projections (tr_matmul, any weight type) and the
 * attention (tr_attention's online softmax: no T×T matrix, so long inputs
 * cost O(T) memory); the FSMN memory reads v in place from the qkv rows,
 * and each residual add runs in one pass with the LayerNorm after it. Everything accumulates in
 * F32: SenseVoice has no norm between the blocks of a tier and its residuals reach ~4.5e4
 * (docs/formats/sensevoice.md §5.3). */
#include "nn/sanm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_keys.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define TYPES_F32_F16 ((1u << TR_F32) | (1u << TR_F16))

enum { N_PARTS = 6 };

bool tr_sanm_block_load(const tr_nn_wsrc *src, const char *prefix, const tr_sanm_dims *d, int din,
                        bool attn_residual, tr_sanm_block *out) {
    memset(out, 0, sizeof *out);
    out->din = din;
    out->attn_residual = attn_residual;
    const int64_t D = d->d_model, F = d->d_ff, K = d->kernel;
    static const char *const part[N_PARTS] = {"norm_attn", "attn.qkv", "attn.out",
                                              "ffn.fc1",   "ffn.fc2",  "norm_ffn"};
    char names[N_PARTS + 1][160];
    for (int i = 0; i < N_PARTS; i++)
        if (snprintf(names[i], sizeof names[i], "%s.%s", prefix, part[i]) >= (int)sizeof names[i])
            return false;
    if (snprintf(names[N_PARTS], sizeof names[0], "%s.attn.fsmn.weight", prefix) >=
        (int)sizeof names[0])
        return false;
    const tr_nn_wspec spec[N_PARTS] = {
        {names[0], TR_NN_W_NORM, {din}, 0, 0, offsetof(tr_sanm_block, ln_attn)},
        {names[1], TR_NN_W_LINEAR, {din, 3 * D}, 0, 0, offsetof(tr_sanm_block, qkv)},
        {names[2], TR_NN_W_LINEAR, {D, D}, 0, 0, offsetof(tr_sanm_block, out)},
        {names[3], TR_NN_W_LINEAR, {D, F}, 0, 0, offsetof(tr_sanm_block, fc1)},
        {names[4], TR_NN_W_LINEAR, {F, D}, 0, 0, offsetof(tr_sanm_block, fc2)},
        {names[5], TR_NN_W_NORM, {D}, 0, 0, offsetof(tr_sanm_block, ln_ffn)},
    };
    bool ok = tr_nn_load_weights(src, spec, N_PARTS, NULL, 0, true, out);
    const int64_t kne[3] = {K, 1, D};
    const tr_tensor *kw = src->find(src->ctx, names[N_PARTS], TYPES_F32_F16, 3, kne);
    if (!ok || !kw) return false;
    /* the file's kernel is PyTorch (d, 1, k): element (c, 0, j) at c·k + j;
     * depthwise.h wants tap-major [k][d] */
    float *row = malloc(sizeof(float) * (size_t)K);
    out->fsmn.w = malloc(sizeof(float) * (size_t)(K * D));
    out->fsmn.b = calloc((size_t)D, sizeof(float));
    if (!row || !out->fsmn.w || !out->fsmn.b) {
        free(row);
        TR_ERROR("sanm: out of memory for the FSMN taps of %s", prefix);
        return false;
    }
    for (int64_t c = 0; c < D; c++) {
        tr_dequantize_row(kw->type, (const char *)kw->data + (size_t)c * kw->nb1, row, K);
        for (int64_t j = 0; j < K; j++) out->fsmn.w[j * D + c] = row[j];
    }
    free(row);
    return true;
}

void tr_sanm_block_free(tr_sanm_block *b) {
    if (!b) return;
    free(b->fsmn.w);
    free(b->fsmn.b);
    b->fsmn.w = b->fsmn.b = NULL;
}

/* y: LN rows (max(din, d) wide), qkv: 3d, f / o / p: d each, h: F */
size_t tr_sanm_scratch(const tr_sanm_dims *d, int din_max, int T) {
    size_t D = (size_t)d->d_model, wide = (size_t)din_max > D ? (size_t)din_max : D;
    return (size_t)T * (wide + 3 * D + 3 * D + (size_t)d->d_ff);
}

/* The FSMN memory straight from the v columns of qkv (row stride 3d):
 * f[t] = sum_j w[j] · v[t + j - pad] (zero outside [0, T)), then f[t] += v[t]
 * — per element the sums of tr_nn_depthwise with its zero bias followed by
 * tr_ew_add, so the same bits, without the copy of v or a second pass. The
 * channels go in blocks of FSMN_CB, each summed over every tap in
 * registers. */
#define FSMN_CB 32

typedef struct {
    const float *v, *w; /* v: qkv + 2d, row stride 3d; w: [k][d] taps */
    float *f;
    int d, k, pad, T;
} fsmn_ctx;

static void fsmn_task(void *vctx, int ith, int nth) {
    const fsmn_ctx *c = vctx;
    const int d = c->d, k = c->k;
    const long ld = 3L * d;
    long t0, t1;
    tr_split_range(c->T, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++) {
        const int j0 = t - c->pad < 0 ? (int)(c->pad - t) : 0;
        const int j1 = t - c->pad + k > c->T ? (int)(c->T - t + c->pad) : k;
        float *restrict f = c->f + t * d;
        const float *restrict vt = c->v + t * ld;
        int i0 = 0;
        for (; i0 + FSMN_CB <= d; i0 += FSMN_CB) {
            float acc[FSMN_CB] = {0};
            for (int j = j0; j < j1; j++) {
                const float *restrict g = c->v + (t + j - c->pad) * ld + i0;
                const float *restrict w = c->w + (long)j * d + i0;
                for (int i = 0; i < FSMN_CB; i++) acc[i] += w[i] * g[i];
            }
            for (int i = 0; i < FSMN_CB; i++) f[i0 + i] = acc[i] + vt[i0 + i];
        }
        for (int i = i0; i < d; i++) {
            float a = 0.0f;
            for (int j = j0; j < j1; j++)
                a += c->w[(long)j * d + i] * c->v[(t + j - c->pad) * ld + i];
            f[i] = a + vt[i];
        }
    }
}

/* One block. When ln_done, y already holds LN_attn(in) (the previous
 * block's tail computed it with its residual add). With next_ln the tail
 * is x += FFN, then next_y = LN_next(x) in the same pass; otherwise x += FFN
 * alone. */
static void block_fwd(tr_pool *pool, const tr_sanm_block *blk, const tr_sanm_dims *d,
                      const float *in, float *x, int T, float *scratch, bool ln_done,
                      const tr_nn_norm *next_ln, float *next_y) {
    const int D = d->d_model, H = d->n_head, hd = D / H, F = d->d_ff, din = blk->din;
    const size_t wide = (size_t)(din > D ? din : D);
    float *y = scratch, *qkv = y + (size_t)T * wide, *f = qkv + (size_t)T * 3 * D;
    float *o = f + (size_t)T * D, *p = o + (size_t)T * D, *h = p + (size_t)T * D;

    /* attention half: qkv = LN(in)·Wqkv + b */
    if (!ln_done) tr_layer_norm(pool, in, y, T, din, blk->ln_attn.w, blk->ln_attn.b, d->ln_eps);
    tr_nn_linear_fwd(pool, &blk->qkv, y, T, qkv);
    /* FSMN memory on v (before the head split): f = dwconv(v) + v, zero padded
     * (k-1)/2 each side */
    fsmn_ctx fc = {qkv + 2 * D, blk->fsmn.w, f, D, d->kernel, (d->kernel - 1) / 2, T};
    tr_pool_run(T > 1 ? pool : NULL, fsmn_task, &fc);
    tr_attn_args a = {
        .q = qkv,
        .q_stride = 3 * D,
        .k = qkv + D,
        .v = qkv + 2 * D,
        .kv_stride = 3 * D,
        .kv_head_stride = 0,
        .out = o,
        .out_stride = D,
        .n_q = T,
        .n_kv = T,
        .kv_valid = T,
        .n_head = H,
        .n_head_kv = H,
        .head_dim = hd,
        .scale = (float)(1.0 / sqrt((double)hd)),
    };
    tr_attention(pool, &a);
    /* x = (x + out(o)) + f, or out(o) + f for the projection block; then
     * y = LN_ffn(x), all in one pass */
    if (blk->attn_residual) {
        tr_nn_linear_fwd(pool, &blk->out, o, T, p);
        tr_add_layer_norm(pool, x, p, f, y, T, D, blk->ln_ffn.w, blk->ln_ffn.b, d->ln_eps);
    } else {
        tr_nn_linear_fwd(pool, &blk->out, o, T, x);
        tr_add_layer_norm(pool, x, f, NULL, y, T, D, blk->ln_ffn.w, blk->ln_ffn.b, d->ln_eps);
    }

    /* FFN half: x += fc2(relu(fc1(LN(x)))) */
    tr_nn_linear_fwd(pool, &blk->fc1, y, T, h);
    tr_ew_relu(pool, h, (long)T * F);
    tr_nn_linear_fwd(pool, &blk->fc2, h, T, o);
    if (next_ln)
        tr_add_layer_norm(pool, x, o, NULL, next_y, T, D, next_ln->w, next_ln->b, d->ln_eps);
    else
        tr_ew_add(pool, x, o, (long)T * D);
}

void tr_sanm_block_fwd(tr_pool *pool, const tr_sanm_block *blk, const tr_sanm_dims *d,
                       const float *in, float *x, int T, float *scratch) {
    block_fwd(pool, blk, d, in, x, T, scratch, false, NULL, NULL);
}

void tr_sanm_add_positions(float *x, int T, int D) {
    const int half = D / 2;
    const double inc = log(10000.0) / (double)(half - 1);
    for (int t = 0; t < T; t++) {
        float *r = x + (size_t)t * D;
        for (int j = 0; j < half; j++) {
            double a = (double)(t + 1) * exp(-(double)j * inc);
            r[j] += (float)sin(a);
            r[half + j] += (float)cos(a);
        }
    }
}

/* ---- the two-tier stack (docs/formats/sensevoice.md §5.3) ---- */

transcribe_status tr_sanm_read_hparams(const gguf_file *g, const char *prefix, const char *who,
                                       bool strict, tr_sanm_encoder *enc) {
    int d_model = 0, n_heads = 0, d_ff = 0, kernel = 0;
    const tr_gguf_u32_key keys[] = {
        {"n_blocks", 2, 4096, &enc->n_blocks}, {"tp_blocks", 0, 4096, &enc->tp_blocks},
        {"d_model", 1, 65536, &d_model},       {"d_input", 1, 65536, &enc->d_input},
        {"n_heads", 1, 4096, &n_heads},        {"d_ff", 1, 1 << 20, &d_ff},
        {"kernel_size", 1, 4095, &kernel},
    };
    transcribe_status st = tr_gguf_req_u32_keys(g, prefix, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    char k_shift[256], k_type[256], k_before[256], k_kernel[256], k_heads[256];
    snprintf(k_shift, sizeof k_shift, "%ssanm_shift", prefix);
    snprintf(k_type, sizeof k_type, "%sattention_type", prefix);
    snprintf(k_before, sizeof k_before, "%snormalize_before", prefix);
    snprintf(k_kernel, sizeof k_kernel, "%skernel_size", prefix);
    snprintf(k_heads, sizeof k_heads, "%sn_heads", prefix);
    int shift = 0;
    bool before = true;
    if ((st = tr_gguf_req_u32(g, k_shift, 0, 4095, &shift)) ||
        (st = tr_gguf_req_str_is(g, k_type, "sanm", NULL)) ||
        (st = tr_gguf_opt_bool(g, k_before, true, &before)))
        return st;
    if (kernel % 2 == 0)
        return tr_gguf_key_error(k_kernel, "UINT32", "%d is even (must be odd)", kernel);
    if (d_model % n_heads != 0)
        return tr_gguf_key_error(k_heads, "UINT32", "%d does not divide d_model %d", n_heads,
                                 d_model);
    /* read but not computed: the padding is always symmetric and the blocks
     * always pre-norm */
    if (shift != 0) {
        if (strict)
            return tr_gguf_key_error(k_shift, "UINT32", "%d is not supported (only 0)", shift);
        TR_WARN("%s: sanm_shift %d ignored (padding is symmetric)", who, shift);
    }
    if (!before) {
        if (strict)
            return tr_gguf_key_error(k_before, "BOOL", "false is not supported (pre-norm only)");
        TR_WARN("%s: normalize_before false ignored (blocks are pre-norm)", who);
    }
    enc->dims = (tr_sanm_dims){d_model, n_heads, d_ff, kernel, 1e-12f};
    return TRANSCRIBE_OK;
}

bool tr_sanm_encoder_load(const tr_nn_wsrc *src, tr_sanm_encoder *enc) {
    const int64_t D = enc->dims.d_model;
    const tr_nn_wspec norms[] = {
        {"enc.after_norm", TR_NN_W_NORM, {D}, 0, 0, offsetof(tr_sanm_encoder, after_norm)},
        {"enc.tp_norm", TR_NN_W_NORM, {D}, 0, 0, offsetof(tr_sanm_encoder, tp_norm)},
    };
    if (!tr_nn_load_weights(src, norms, 2, NULL, 0, true, enc)) return false;
    enc->blocks = calloc((size_t)enc->n_blocks, sizeof *enc->blocks);
    enc->tp = calloc((size_t)(enc->tp_blocks ? enc->tp_blocks : 1), sizeof *enc->tp);
    if (!enc->blocks || !enc->tp) {
        TR_ERROR("sanm: out of memory for %d + %d blocks", enc->n_blocks, enc->tp_blocks);
        return false;
    }
    char name[64];
    for (int i = 0; i < enc->n_blocks; i++) {
        if (i == 0)
            snprintf(name, sizeof name, "enc.encoders0.0");
        else
            snprintf(name, sizeof name, "enc.encoders.%d", i - 1);
        bool ok = tr_sanm_block_load(src, name, &enc->dims, i == 0 ? enc->d_input : (int)D, i > 0,
                                     &enc->blocks[i]);
        enc->n_loaded = i + 1;
        if (!ok) return false;
    }
    for (int i = 0; i < enc->tp_blocks; i++) {
        snprintf(name, sizeof name, "enc.tp_encoders.%d", i);
        bool ok = tr_sanm_block_load(src, name, &enc->dims, (int)D, true, &enc->tp[i]);
        enc->n_tp_loaded = i + 1;
        if (!ok) return false;
    }
    return true;
}

void tr_sanm_encoder_free(tr_sanm_encoder *enc) {
    if (!enc) return;
    for (int i = 0; enc->blocks && i < enc->n_loaded; i++) tr_sanm_block_free(&enc->blocks[i]);
    for (int i = 0; enc->tp && i < enc->n_tp_loaded; i++) tr_sanm_block_free(&enc->tp[i]);
    free(enc->blocks);
    free(enc->tp);
    enc->blocks = enc->tp = NULL;
    enc->n_loaded = enc->n_tp_loaded = 0;
}

static void tap(float *dst, const float *src, size_t n) {
    if (dst) memcpy(dst, src, n * sizeof(float));
}

transcribe_status tr_sanm_encoder_fwd(tr_pool *pool, const tr_sanm_encoder *enc, float *in, int T,
                                      float *x, const tr_sanm_taps *taps, bool (*abort)(void *),
                                      void *abort_user) {
    static const tr_sanm_taps none = {0};
    if (!taps) taps = &none;
    const int D = enc->dims.d_model, di = enc->d_input;
    const size_t need = tr_sanm_scratch(&enc->dims, di > D ? di : D, T);
    /* the pool's model slot: kept between runs, so a run does not fault in
     * fresh pages for its activations */
    float *own = NULL, *scratch = tr_pool_scratch_slot(pool, TR_POOL_SCRATCH_MODEL, need);
    if (!scratch) scratch = own = malloc(sizeof(float) * need);
    if (!scratch) {
        TR_ERROR("sanm: out of memory for %d encoder rows", T);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = TRANSCRIBE_OK;
    const size_t n = (size_t)T * (size_t)D;
    const tr_sanm_dims *dm = &enc->dims;
    /* each block's tail adds its FFN and computes the next LayerNorm in one
     * pass (into the scratch's LN rows, where the next block reads them);
     * the last block's tail computes after_norm in place unless the
     * pre-norm rows are tapped */
    bool ln_done = false;
    for (int i = 0; i < enc->n_blocks; i++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            goto done;
        }
        const bool last = i + 1 == enc->n_blocks;
        const tr_nn_norm *next = NULL;
        float *next_y = scratch;
        if (!last && !(i == 0 && taps->encoders0_out)) {
            next = &enc->blocks[i + 1].ln_attn;
        } else if (last && !taps->encoders_out) {
            next = &enc->after_norm;
            next_y = x;
        }
        block_fwd(pool, &enc->blocks[i], dm, i == 0 ? in : x, x, T, scratch, ln_done, next, next_y);
        ln_done = next && !last;
        if (i == 0) tap(taps->encoders0_out, x, n);
    }
    if (taps->encoders_out) {
        tap(taps->encoders_out, x, n);
        tr_layer_norm(pool, x, x, T, D, enc->after_norm.w, enc->after_norm.b, dm->ln_eps);
    }
    tap(taps->after_norm_out, x, n);
    for (int i = 0; i < enc->tp_blocks; i++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            goto done;
        }
        const bool last = i + 1 == enc->tp_blocks;
        block_fwd(pool, &enc->tp[i], dm, x, x, T, scratch, i > 0,
                  last ? &enc->tp_norm : &enc->tp[i + 1].ln_attn, last ? x : scratch);
    }
    if (enc->tp_blocks == 0)
        tr_layer_norm(pool, x, x, T, D, enc->tp_norm.w, enc->tp_norm.b, dm->ln_eps);
    tap(taps->tp_norm_out, x, n);
done:
    free(own);
    return st;
}
