/* Whisper encoder: loading from the published tensor names and the forward
 * pass (docs/formats/whisper.md §6, docs/formats/moss.md §6.1). */
#include "nn/whisper_encoder.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/ops.h"
#include "util/log.h"

static const tr_nn_enc_names k_names = {
    .prefix = "enc.blocks.%d.",
    .ln_attn = "norm_attn",
    .attn = "attn",
    TR_WHISPER_BLOCK_NAMES,
};

enum { WE_D, WE_M, WE_P, WE_NDIMS };
#define DD(k) TR_NN_DIM(WE_##k)
#define WE(f) offsetof(tr_whenc, f)
static const tr_nn_wspec k_top[] = {
    {"enc.conv.0.weight", TR_NN_W_TENSOR, {3, DD(M), DD(D)}, 3, TR_TYPES_CONV, WE(conv0_w)},
    {"enc.conv.1.weight", TR_NN_W_TENSOR, {3, DD(D), DD(D)}, 3, TR_TYPES_CONV, WE(conv1_w)},
    {"enc.conv.0.bias", TR_NN_W_VEC, {DD(D)}, 1, 0, WE(conv0_b)},
    {"enc.conv.1.bias", TR_NN_W_VEC, {DD(D)}, 1, 0, WE(conv1_b)},
    {"enc.pos_emb.weight", TR_NN_W_VEC, {DD(D), DD(P)}, 2, 0, WE(pos)},
    {"enc.final_norm", TR_NN_W_NORM, {DD(D)}, 0, 0, WE(ln)},
};
#undef WE
#undef DD

bool tr_whenc_load(const tr_nn_wsrc *src, tr_whenc *e) {
    e->blocks = NULL;
    if (e->n_layers <= 0 || e->d_model <= 0 || e->n_head <= 0 || e->d_model % e->n_head ||
        e->d_ffn <= 0 || e->n_mels <= 0 || e->n_pos <= 0) {
        TR_ERROR("whisper encoder: bad geometry (layers %d, d %d, heads %d, ffn %d, mels %d, "
                 "positions %d)",
                 e->n_layers, e->d_model, e->n_head, e->d_ffn, e->n_mels, e->n_pos);
        return false;
    }
    const int64_t dims[WE_NDIMS] = {[WE_D] = e->d_model, [WE_M] = e->n_mels, [WE_P] = e->n_pos};
    tr_nn_wspec top[sizeof k_top / sizeof k_top[0]];
    memcpy(top, k_top, sizeof top);
    if (e->ln_name) top[sizeof top / sizeof top[0] - 1].name = e->ln_name;
    bool ok = tr_nn_load_weights(src, top, sizeof top / sizeof top[0], dims, 0, true, e);
    e->blocks = calloc((size_t)e->n_layers, sizeof *e->blocks);
    if (!e->blocks) {
        TR_ERROR("whisper encoder: out of memory");
        return false;
    }
    if (ok && !tr_nn_load_enc_blocks(src, &k_names, e->d_model, e->d_ffn, e->n_layers, e->blocks))
        ok = false;
    e->dims = (tr_nn_dims){.d_model = e->d_model,
                           .n_head = e->n_head,
                           .head_dim = e->d_model / e->n_head,
                           .d_ffn = e->d_ffn,
                           .ln_eps = 1e-5f};
    return ok;
}

void tr_whenc_free(tr_whenc *e) {
    if (!e) return;
    free(e->blocks);
    e->blocks = NULL;
}

bool tr_whenc_work_init(tr_whenc_work *w, const tr_whenc *e, int n_frames) {
    const size_t D = (size_t)e->d_model, T = (size_t)n_frames, S = T / 2;
    /* the conv stem's buffers live in the blocks' scratch, which is idle
     * until the stem's output is transposed into the residual stream
     * (18 MiB less at Whisper-medium size) */
    size_t n = tr_nn_enc_block_scratch(&e->dims, (int)S);
    if (n < D * (T + S)) n = D * (T + S);
    w->n_frames = n_frames;
    w->scratch = malloc(n * sizeof(float));
    if (!w->scratch) return false;
    w->conv_a = w->scratch;
    w->conv_b = w->scratch + D * T;
    return true;
}

void tr_whenc_work_free(tr_whenc_work *w) {
    free(w->scratch);
    w->conv_a = w->conv_b = w->scratch = NULL;
}

void tr_whenc_forward(tr_pool *pool, const tr_whenc *e, tr_whenc_work *w, const float *mel,
                      int n_frames, float *out) {
    const int D = e->d_model, T = n_frames, S = T / 2;
    tr_conv1d(pool, mel, e->n_mels, T, e->conv0_w, e->conv0_b, 1, 1, 1, 1, 1, w->conv_a);
    tr_ew_gelu(pool, w->conv_a, (long)D * T);
    tr_conv1d(pool, w->conv_a, D, T, e->conv1_w, e->conv1_b, 2, 1, 1, 1, 1, w->conv_b);
    tr_ew_gelu(pool, w->conv_b, (long)D * S);
    tr_transpose(w->conv_b, out, D, S);
    tr_add_scaled(out, out, e->pos, 1.0f, (long)S * D);
    for (int l = 0; l < e->n_layers; l++)
        tr_nn_enc_block_fwd(pool, &e->blocks[l], &e->dims, out, S, w->scratch);
    tr_layer_norm(pool, out, out, S, D, e->ln.w, e->ln.b, 1e-5f);
}
