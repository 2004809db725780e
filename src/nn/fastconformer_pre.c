/* dw_striding pre-encode (docs/formats/parakeet.md §7.1): the mel image (height =
 * time, width = frequency) goes through conv0 (full 3x3 stride 2) + ReLU,
 * depthwise 3x3 stride 2, pointwise + ReLU, depthwise 3x3 stride 2,
 * pointwise + ReLU, is flattened channel-major per frame and projected to
 * d_model. Activations between stages are channel-major [C][rows][F], the
 * layout tr_conv2d works in.
 *
 * Time chunks: the whole-input conv0 output alone is C * T_mel/2 * n_mels/2
 * floats (346 MB for a 102 s window at 128 mels), so the stack runs on
 * chunks of encoder frames instead, each stage computing just the rows the
 * next one reads (plus one or two rows of overlap; a 32-frame chunk
 * recomputes ~3% of the work and keeps the stage buffers cache-sized).
 * Zero padding along time is made explicit: every stride-2 conv runs with
 * no time padding on a row range that extends past the input, and the rows
 * that lie outside the input are set to zero first, which is exactly what
 * the padded convolution reads there. Frequency padding stays with
 * tr_conv2d.
 *
 * Causal variant (chunked_limited): the stride-2 convs pad 2 before and 1
 * after. Along time that is just another row range; along frequency
 * tr_conv2d pads symmetrically, so it pads 2 and the extra trailing column
 * (present when the width is odd) is cropped: the kept outputs read exactly
 * the taps of the asymmetric padding. */
#include <string.h>

#include "nn/fastconformer_internal.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

/* Rows [lo, hi) of one stage, in that stage's own (global) row numbering. */
typedef struct {
    int lo, hi;
} row_range;

/* Input rows a 3-tap stride-2 conv with `pad_before` reads for output rows r. */
static row_range input_rows(row_range r, int pad_before) {
    row_range in = {2 * r.lo - pad_before, 2 * (r.hi - 1) - pad_before + 3};
    return in;
}

/* Zeroes the rows of y [C][n][w] (rows lo .. lo+n-1) that fall outside [0, T). */
static void zero_outside(float *y, int C, row_range r, int w, int T) {
    const int n = r.hi - r.lo;
    for (int i = 0; i < n; i++) {
        const int g = r.lo + i;
        if (g >= 0 && g < T) continue;
        for (long c = 0; c < C; c++) memset(y + (c * n + i) * w, 0, sizeof(float) * (size_t)w);
    }
}

/* Keeps the first w of each row's w_full columns, in place (forward-safe). */
static void crop_cols(float *y, long rows, int w_full, int w) {
    if (w == w_full) return;
    for (long r = 0; r < rows; r++) memmove(y + r * w, y + r * w_full, sizeof(float) * (size_t)w);
}

/* One stride-2 3x3 conv (full when groups == 1, else depthwise) on x
 * [c_in][n_in][w_in] with no time padding: y [C][n_out][w_out]. */
static bool stride2(tr_pool *pool, const tr_tensor *wt, const float *bias, const float *x, int c_in,
                    int groups, int n_in, int w_in, int pad_w, int n_out, int w_out, float *y) {
    const int C = (int)wt->ne[3];
    int ho = 0, wo = 0;
    tr_conv2d(pool, x, c_in, n_in, w_in, wt, bias, 2, 2, 0, pad_w, groups, y, &ho, &wo);
    if (ho != n_out || wo < w_out) {
        TR_ERROR("fastconformer: pre-encode conv gave %dx%d, expected %dx%d", ho, wo, n_out, w_out);
        return false;
    }
    crop_cols(y, (long)C * ho, wo, w_out);
    return true;
}

typedef struct {
    const tr_fc_encoder *enc;
    bool causal;
    int pb;         /* time / frequency padding before each stride-2 conv */
    int T[4], F[4]; /* rows and width of the mel (0) and of each stage */
} pre_geom;

/* Stage row ranges feeding encoder frames [t0, t1). */
static void chunk_ranges(const pre_geom *g, int t0, int t1, row_range r[4]) {
    r[3] = (row_range){t0, t1};
    for (int s = 3; s > 0; s--) r[s - 1] = input_rows(r[s], g->pb);
}

static void chunk_sizes(const pre_geom *g, int n_frames, size_t *na, size_t *nb) {
    row_range r[4];
    chunk_ranges(g, 0, n_frames, r);
    const size_t C = (size_t)g->enc->hp.sub_channels;
    size_t n[4];
    for (int s = 0; s < 4; s++) n[s] = (size_t)(r[s].hi - r[s].lo);
    /* uncropped widths: padding 2 yields at most one extra column */
    const size_t w1 = (size_t)g->F[1] + 1, w2 = (size_t)g->F[2] + 1, w3 = (size_t)g->F[3] + 1;
    size_t a = n[0] * (size_t)g->F[0]; /* image */
    if (C * n[2] * w2 > a) a = C * n[2] * w2;
    if (C * n[3] * w3 > a) a = C * n[3] * w3;
    size_t b = C * n[1] * w1;
    if (C * n[2] * w2 > b) b = C * n[2] * w2;
    *na = a;
    *nb = b;
}

/* Encoder frames [t0, t1) of the flattened pre-encode into flat rows. */
static bool run_chunk(const pre_geom *g, tr_pool *pool, const float *mel, int t0, int t1, float *a,
                      float *b, float *flat) {
    const tr_fc_encoder *enc = g->enc;
    const int C = enc->hp.sub_channels, n_mels = enc->hp.n_mels;
    row_range r[4];
    chunk_ranges(g, t0, t1, r);
    int n[4];
    for (int s = 0; s < 4; s++) n[s] = r[s].hi - r[s].lo;
    /* image rows (mel frames) r[0], zero outside the input */
    for (int i = 0; i < n[0]; i++) {
        const int t = r[0].lo + i;
        float *row = a + (long)i * n_mels;
        if (t < 0 || t >= g->T[0])
            memset(row, 0, sizeof(float) * (size_t)n_mels);
        else
            for (int f = 0; f < n_mels; f++) row[f] = mel[(long)f * g->T[0] + t];
    }
    if (!stride2(pool, enc->pre_w[0], enc->pre_b[0], a, 1, 1, n[0], g->F[0], g->pb, n[1], g->F[1],
                 b))
        return false;
    tr_fc_ew_relu(pool, b, (long)C * n[1] * g->F[1]);
    zero_outside(b, C, r[1], g->F[1], g->T[1]);
    if (!stride2(pool, enc->pre_w[1], enc->pre_b[1], b, C, C, n[1], g->F[1], g->pb, n[2], g->F[2],
                 a))
        return false;
    tr_conv2d(pool, a, C, n[2], g->F[2], enc->pre_w[2], enc->pre_b[2], 1, 1, 0, 0, 1, b, NULL,
              NULL);
    tr_fc_ew_relu(pool, b, (long)C * n[2] * g->F[2]);
    zero_outside(b, C, r[2], g->F[2], g->T[2]);
    if (!stride2(pool, enc->pre_w[3], enc->pre_b[3], b, C, C, n[2], g->F[2], g->pb, n[3], g->F[3],
                 a))
        return false;
    tr_conv2d(pool, a, C, n[3], g->F[3], enc->pre_w[4], enc->pre_b[4], 1, 1, 0, 0, 1, b, NULL,
              NULL);
    tr_fc_ew_relu(pool, b, (long)C * n[3] * g->F[3]);
    /* flatten: frame t gets feature c*F' + f from plane c */
    const size_t F3 = (size_t)g->F[3], plane = (size_t)n[3] * F3, row = (size_t)C * F3;
    for (size_t t = 0; t < (size_t)n[3]; t++)
        for (size_t c = 0; c < (size_t)C; c++)
            memcpy(flat + ((size_t)t0 + t) * row + c * F3, b + c * plane + t * F3,
                   sizeof(float) * F3);
    return true;
}

bool tr_fc_pre_encode(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                      float *x, int T_enc, tr_fc_pre_scratch *s) {
    const tr_fc_hparams *hp = &enc->hp;
    pre_geom g = {.enc = enc, .causal = hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED};
    g.pb = g.causal ? 2 : 1;
    g.T[0] = T_mel;
    g.F[0] = hp->n_mels;
    for (int st = 1; st < 4; st++) {
        g.T[st] = tr_fc_stage_len(g.T[st - 1], g.causal);
        g.F[st] = tr_fc_stage_len(g.F[st - 1], g.causal);
    }
    if (g.T[3] != T_enc || g.F[3] != enc->f_out) {
        TR_ERROR("fastconformer: pre-encode geometry %d x %d, expected %d x %d", g.T[3], g.F[3],
                 T_enc, enc->f_out);
        return false;
    }
    const int chunk = s->chunk > 0 ? s->chunk : TR_FC_PRE_CHUNK;
    const int n_max = T_enc < chunk ? T_enc : chunk;
    size_t na, nb;
    chunk_sizes(&g, n_max, &na, &nb);
    const size_t nflat = (size_t)T_enc * (size_t)hp->sub_channels * (size_t)enc->f_out;
    if (!tr_fc_buf_reserve(&s->a, na) || !tr_fc_buf_reserve(&s->b, nb) ||
        !tr_fc_buf_reserve(&s->flat, nflat)) {
        TR_ERROR("fastconformer: out of memory for the pre-encode of %d mel frames", T_mel);
        return false;
    }
    for (int t0 = 0; t0 < T_enc; t0 += chunk) {
        const int t1 = t0 + chunk < T_enc ? t0 + chunk : T_enc;
        if (!run_chunk(&g, pool, mel, t0, t1, s->a.p, s->b.p, s->flat.p)) return false;
    }
    tr_nn_linear_fwd(pool, &enc->pre_out, s->flat.p, T_enc, x);
    return true;
}
