/* dw_striding pre-encode (family-parakeet.md §7.1): the mel image (height =
 * time, width = frequency) goes through conv0 (full 3x3 stride 2) + ReLU,
 * depthwise 3x3 stride 2, pointwise + ReLU, depthwise 3x3 stride 2,
 * pointwise + ReLU, is flattened channel-major per frame and projected to
 * d_model. Activations between stages are channel-major [C][T][F], the
 * layout tr_conv2d works in.
 *
 * Causal variant (chunked_limited): each stride-2 conv sees its input padded
 * by 2 before and 1 after on both axes. tr_conv2d pads symmetrically, so it
 * runs with padding 2 and the extra trailing row / column (present when the
 * input length is odd) is cropped: the kept outputs read exactly the same
 * taps as with the asymmetric padding. */
#include <string.h>

#include "nn/fastconformer_internal.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

/* Keeps the first h x w of each channel's h_full x w_full plane, in place.
 * Destinations never pass their sources, so a forward sweep is safe. */
static void crop_planes(float *y, int C, int h_full, int w_full, int h, int w) {
    if (h == h_full && w == w_full) return;
    for (long c = 0; c < C; c++)
        for (long r = 0; r < h; r++)
            memmove(y + (c * h + r) * w, y + (c * h_full + r) * w_full, sizeof(float) * (size_t)w);
}

/* One stride-2 3x3 conv stage (full when groups == 1, else depthwise):
 * x [c_in][*h][*w] -> y [C][h'][w'], updating *h and *w. */
static bool stride2_stage(tr_pool *pool, const tr_tensor *wt, const float *bias, const float *x,
                          int c_in, int groups, bool causal, int *h, int *w, float *y) {
    const int C = (int)wt->ne[3];
    const int pad = causal ? 2 : 1;
    int ho = 0, wo = 0;
    tr_conv2d(pool, x, c_in, *h, *w, wt, bias, 2, 2, pad, pad, groups, y, &ho, &wo);
    const int want_h = tr_fc_stage_len(*h, causal), want_w = tr_fc_stage_len(*w, causal);
    if (ho < want_h || wo < want_w) {
        TR_ERROR("fastconformer: pre-encode stage gave %dx%d, expected %dx%d", ho, wo, want_h,
                 want_w);
        return false;
    }
    crop_planes(y, C, ho, wo, want_h, want_w);
    *h = want_h;
    *w = want_w;
    return true;
}

/* Floats the two pre-encode buffers need for T_mel frames. */
static void pre_sizes(const tr_fc_encoder *enc, int T_mel, size_t *na, size_t *nb) {
    const bool causal = enc->hp.att_style == TR_FC_STYLE_CHUNKED_LIMITED;
    const size_t C = (size_t)enc->hp.sub_channels;
    /* uncropped conv outputs: padding 2 gives one more row than needed at most */
    size_t h = (size_t)T_mel, w = (size_t)enc->hp.n_mels;
    size_t full[3];
    for (int s = 0; s < 3; s++) {
        full[s] = C * (h / 2 + 2) * (w / 2 + 2);
        h = (size_t)tr_fc_stage_len((int)h, causal);
        w = (size_t)tr_fc_stage_len((int)w, causal);
    }
    size_t a = (size_t)T_mel * (size_t)enc->hp.n_mels; /* the transposed image */
    if (full[1] > a) a = full[1];
    if (full[2] > a) a = full[2];
    if (C * h * w > a) a = C * h * w; /* the flattened frames */
    *na = a;
    *nb = full[0];
}

bool tr_fc_pre_encode(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                      float *x, int T_enc, tr_fc_buf *a, tr_fc_buf *b) {
    const tr_fc_hparams *hp = &enc->hp;
    const bool causal = hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED;
    const int C = hp->sub_channels;
    size_t na, nb;
    pre_sizes(enc, T_mel, &na, &nb);
    if (!tr_fc_buf_reserve(a, na) || !tr_fc_buf_reserve(b, nb)) {
        TR_ERROR("fastconformer: out of memory for the pre-encode of %d mel frames", T_mel);
        return false;
    }
    int h = T_mel, w = hp->n_mels;
    tr_transpose(mel, a->p, hp->n_mels, T_mel); /* [n_mels][T] -> image [T][n_mels] */
    if (!stride2_stage(pool, enc->pre_w[0], enc->pre_b[0], a->p, 1, 1, causal, &h, &w, b->p))
        return false;
    tr_relu(b->p, (long)C * h * w);
    if (!stride2_stage(pool, enc->pre_w[1], enc->pre_b[1], b->p, C, C, causal, &h, &w, a->p))
        return false;
    tr_conv2d(pool, a->p, C, h, w, enc->pre_w[2], enc->pre_b[2], 1, 1, 0, 0, 1, b->p, NULL, NULL);
    tr_relu(b->p, (long)C * h * w);
    if (!stride2_stage(pool, enc->pre_w[3], enc->pre_b[3], b->p, C, C, causal, &h, &w, a->p))
        return false;
    tr_conv2d(pool, a->p, C, h, w, enc->pre_w[4], enc->pre_b[4], 1, 1, 0, 0, 1, b->p, NULL, NULL);
    tr_relu(b->p, (long)C * h * w);
    if (h != T_enc || w != enc->f_out) {
        TR_ERROR("fastconformer: pre-encode produced %d x %d, expected %d x %d", h, w, T_enc,
                 enc->f_out);
        return false;
    }
    /* flatten: frame t gets feature c*F' + f from plane c */
    const size_t plane = (size_t)h * (size_t)w, row = (size_t)C * (size_t)w;
    for (size_t t = 0; t < (size_t)h; t++)
        for (size_t c = 0; c < (size_t)C; c++)
            memcpy(a->p + t * row + c * (size_t)w, b->p + c * plane + t * (size_t)w,
                   sizeof(float) * (size_t)w);
    tr_nn_linear_fwd(pool, &enc->pre_out, a->p, T_enc, x);
    return true;
}
