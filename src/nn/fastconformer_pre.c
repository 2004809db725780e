/* dw_striding pre-encode (docs/formats/parakeet.md §7.1): the mel image (height =
 * time, width = frequency) goes through conv0 (full 3x3 stride 2) + ReLU,
 * then per further stride-2 stage a depthwise 3x3 stride 2 and a pointwise
 * + ReLU (log2(subsampling_factor) stages in all: 3 at factor 8, NeMo's
 * ConvSubsampling), is flattened channel-major per frame and projected to
 * d_model. Activations between stages are channel-major [C][rows][F], the
 * layout tr_conv2d works in.
 *
 * Time chunks: the whole-input conv0 output alone is C * T_mel/2 * n_mels/2
 * floats (346 MB for a 102 s window at 128 mels), so the stack runs on
 * chunks of encoder frames instead, each stage computing just the rows the
 * next one reads (plus one or two rows of overlap). A 4-frame chunk keeps
 * the conv0 output at C * 19 rows * n_mels/2 (1.3 MB at 128 mels, where 32
 * frames took 8.7 MB) for 12 % more rows in the second stage's pointwise
 * conv, the pre-encode's largest product (well under 1 % of a run). The chunks'
 * flattened frames are projected to d_model every TR_FC_PRE_PROJ frames,
 * so the flat buffer does not grow with the input either.
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
#include <limits.h>
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

#define NS (TR_FC_MAX_SUB_STAGES + 1) /* the mel and each stage */

typedef struct {
    const tr_fc_encoder *enc;
    bool causal;
    int S;            /* stride-2 stages */
    int pb;           /* time / frequency padding before each stride-2 conv */
    int T[NS], F[NS]; /* rows and width of the mel (0) and of each stage */
} pre_geom;

/* Stage row ranges feeding encoder frames [t0, t1). */
static void chunk_ranges(const pre_geom *g, int t0, int t1, row_range r[NS]) {
    r[g->S] = (row_range){t0, t1};
    for (int s = g->S; s > 0; s--) r[s - 1] = input_rows(r[s], g->pb);
}

/* Buffer a holds the image and every depthwise output, b every stage's
 * output (uncropped widths: padding 2 yields at most one extra column). */
static void chunk_sizes(const pre_geom *g, int n_frames, size_t *na, size_t *nb) {
    row_range r[NS];
    chunk_ranges(g, 0, n_frames, r);
    const size_t C = (size_t)g->enc->hp.sub_channels;
    size_t a = (size_t)(r[0].hi - r[0].lo) * (size_t)g->F[0], b = 0;
    for (int s = 1; s <= g->S; s++) {
        const size_t n = C * (size_t)(r[s].hi - r[s].lo) * ((size_t)g->F[s] + 1);
        if (s > 1 && n > a) a = n;
        if (n > b) b = n;
    }
    *na = a;
    *nb = b;
}

/* Encoder frames [t0, t1) of the flattened pre-encode into flat rows. Stage
 * 1 (conv.0, full) reads the image in a and writes b; each further stage
 * runs its depthwise conv b -> a and its pointwise conv a -> b, so the last
 * stage's output is in b. */
static bool run_chunk(const pre_geom *g, tr_pool *pool, const float *mel, int t0, int t1, float *a,
                      float *b, float *flat) {
    const tr_fc_encoder *enc = g->enc;
    const int C = enc->hp.sub_channels, n_mels = enc->hp.n_mels, S = g->S;
    row_range r[NS];
    chunk_ranges(g, t0, t1, r);
    int n[NS];
    for (int s = 0; s <= S; s++) n[s] = r[s].hi - r[s].lo;
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
    tr_ew_relu(pool, b, (long)C * n[1] * g->F[1]);
    for (int s = 2; s <= S; s++) {
        /* the rows the next stage reads as padding are zero */
        zero_outside(b, C, r[s - 1], g->F[s - 1], g->T[s - 1]);
        if (!stride2(pool, enc->pre_w[2 * s - 3], enc->pre_b[2 * s - 3], b, C, C, n[s - 1],
                     g->F[s - 1], g->pb, n[s], g->F[s], a))
            return false;
        tr_conv2d(pool, a, C, n[s], g->F[s], enc->pre_w[2 * s - 2], enc->pre_b[2 * s - 2], 1, 1, 0,
                  0, 1, b, NULL, NULL);
        tr_ew_relu(pool, b, (long)C * n[s] * g->F[s]);
    }
    /* flatten: frame t gets feature c*F' + f from plane c (flat row 0 is frame t0) */
    const size_t FS = (size_t)g->F[S], plane = (size_t)n[S] * FS, row = (size_t)C * FS;
    for (size_t t = 0; t < (size_t)n[S]; t++)
        for (size_t c = 0; c < (size_t)C; c++)
            memcpy(flat + t * row + c * FS, b + c * plane + t * FS, sizeof(float) * FS);
    return true;
}

/* The stage geometry of T_mel mel frames; false (logged) unless it ends in
 * T_enc frames of F' bins. */
static bool pre_geometry(const tr_fc_encoder *enc, int T_mel, int T_enc, pre_geom *g) {
    const tr_fc_hparams *hp = &enc->hp;
    *g = (pre_geom){.enc = enc, .causal = hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED};
    g->pb = g->causal ? 2 : 1;
    g->S = hp->sub_stages;
    g->T[0] = T_mel;
    g->F[0] = hp->n_mels;
    for (int st = 1; st <= g->S; st++) {
        g->T[st] = tr_fc_stage_len(g->T[st - 1], g->causal);
        g->F[st] = tr_fc_stage_len(g->F[st - 1], g->causal);
    }
    if (T_enc < 0) return true; /* sizes only */
    if (g->T[g->S] != T_enc || g->F[g->S] != enc->f_out) {
        TR_ERROR("fastconformer: pre-encode geometry %d x %d, expected %d x %d", g->T[g->S],
                 g->F[g->S], T_enc, enc->f_out);
        return false;
    }
    return true;
}

/* Scratch floats of one pass: the two stage buffers of a chunk and the
 * flattened frames of one projection group (each rounded to 16 floats). */
typedef struct {
    int chunk, group;
    size_t na, nb, nflat;
} pre_plan;

static pre_plan plan_of(const pre_geom *g, int T_enc, int chunk) {
    pre_plan p = {.chunk = chunk > 0 ? chunk : TR_FC_PRE_CHUNK};
    const int n_max = T_enc < p.chunk ? T_enc : p.chunk;
    /* frames flattened before one projection: whole chunks, at least TR_FC_PRE_PROJ */
    p.group = (TR_FC_PRE_PROJ + p.chunk - 1) / p.chunk * p.chunk;
    const int n_proj = T_enc < p.group ? T_enc : p.group;
    chunk_sizes(g, n_max, &p.na, &p.nb);
    p.nflat = (size_t)n_proj * (size_t)g->enc->hp.sub_channels * (size_t)g->enc->f_out;
    p.na = (p.na + 15) / 16 * 16;
    p.nb = (p.nb + 15) / 16 * 16;
    return p;
}

size_t tr_fc_pre_floats(const tr_fc_encoder *enc, int T_mel, int T_enc, int chunk) {
    pre_geom g;
    if (T_mel < 1) { /* the most any input needs: the buffers stop growing at one group */
        pre_geometry(enc, 1, -1, &g);
        const pre_plan p = plan_of(&g, INT_MAX / 2, chunk);
        return p.na + p.nb + p.nflat;
    }
    if (!pre_geometry(enc, T_mel, T_enc, &g)) return 0;
    const pre_plan p = plan_of(&g, T_enc, chunk);
    return p.na + p.nb + p.nflat;
}

bool tr_fc_pre_encode_into(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                           float *x, int T_enc, int chunk, float *scratch) {
    const tr_fc_hparams *hp = &enc->hp;
    pre_geom g;
    if (!pre_geometry(enc, T_mel, T_enc, &g)) return false;
    const pre_plan p = plan_of(&g, T_enc, chunk);
    float *a = scratch, *b = scratch + p.na, *flat = b + p.nb;
    const size_t row = (size_t)hp->sub_channels * (size_t)enc->f_out;
    for (int g0 = 0; g0 < T_enc; g0 += p.group) {
        const int g1 = g0 + p.group < T_enc ? g0 + p.group : T_enc;
        for (int t0 = g0; t0 < g1; t0 += p.chunk) {
            const int t1 = t0 + p.chunk < g1 ? t0 + p.chunk : g1;
            if (!run_chunk(&g, pool, mel, t0, t1, a, b, flat + (size_t)(t0 - g0) * row))
                return false;
        }
        tr_nn_linear_fwd(pool, &enc->pre_out, flat, g1 - g0, x + (size_t)g0 * hp->d_model);
    }
    return true;
}

bool tr_fc_pre_encode(const tr_fc_encoder *enc, tr_pool *pool, const float *mel, int T_mel,
                      float *x, int T_enc, tr_fc_pre_scratch *s) {
    const size_t n = tr_fc_pre_floats(enc, T_mel, T_enc, s->chunk);
    if (!n) return false;
    if (!tr_fc_buf_reserve(&s->a, n)) {
        TR_ERROR("fastconformer: out of memory for the pre-encode of %d mel frames", T_mel);
        return false;
    }
    return tr_fc_pre_encode_into(enc, pool, mel, T_mel, x, T_enc, s->chunk, s->a.p);
}
