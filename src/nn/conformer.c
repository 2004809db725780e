/* The rotary Conformer block of nn/conformer.h. Working memory per call
 * (d = d_model, T = the longest segment, B = the largest row block):
 * wide [T][d] (attention's context rows, then the conv module's GLU rows;
 * the feed-forward's hidden columns), one head group's keys and values
 * [T][g·dh] each, h, q and mid [B][d], the folded depthwise taps. Every
 * row-wise stage runs in row blocks of at most B rows, so only wide and the
 * group's keys and values grow with the input (before: keys and values of
 * every head, [2·T][d], beside a GLU and a depthwise output of [T][d]). */
#include "nn/conformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

static const struct {
    const char *part;
    tr_nn_wkind kind;
    int in, out; /* indices into dims: 0 = d, 1 = d_ff, 2 = kernel; -1 = none */
    size_t offset;
} k_parts[] = {
    {"norm_ff1", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_ff1)},
    {"ff1.linear1", TR_NN_W_LINEAR, 0, 1, offsetof(tr_cf_block, ff1_up)},
    {"ff1.linear2", TR_NN_W_LINEAR, 1, 0, offsetof(tr_cf_block, ff1_down)},
    {"norm_conv", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_conv)},
    {"conv.ln", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, conv_ln)},
    {"norm_attn", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_attn)},
    {"attn.linear_q", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.q)},
    {"attn.linear_k", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.k)},
    {"attn.linear_v", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.v)},
    {"attn.linear_out", TR_NN_W_LINEAR, 0, 0, offsetof(tr_cf_block, attn.o)},
    {"norm_ff2", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_ff2)},
    {"ff2.linear1", TR_NN_W_LINEAR, 0, 1, offsetof(tr_cf_block, ff2_up)},
    {"ff2.linear2", TR_NN_W_LINEAR, 1, 0, offsetof(tr_cf_block, ff2_down)},
    {"norm_out", TR_NN_W_NORM, 0, -1, offsetof(tr_cf_block, norm_out)},
};

size_t tr_cf_block_specs(const char *prefix, tr_nn_wspec *specs, char (*names)[96]) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof k_parts / sizeof k_parts[0]; i++, n++) {
        snprintf(names[n], 96, "%s%s", prefix, k_parts[i].part);
        tr_nn_wspec s = {names[n], k_parts[i].kind, {0}, 0, 0, k_parts[i].offset};
        s.ne[0] = TR_NN_DIM(k_parts[i].in);
        if (k_parts[i].out >= 0) s.ne[1] = TR_NN_DIM(k_parts[i].out);
        specs[n] = s;
    }
    /* the conv module's kernels: pointwise {1, d, 2d} / {1, d, d}, depthwise
     * {k, 1, d} (F32 or F16 like every conv slot), F32 biases */
    static const struct {
        const char *part;
        int64_t ne[3];
        int n_dims;
        uint32_t types;
        size_t offset;
    } conv[] = {
        {"conv.pointwise1.weight",
         {1, TR_NN_DIM(0), TR_NN_DIM(3)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, pw1_w)},
        {"conv.pointwise1.bias", {TR_NN_DIM(3)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, pw1_b)},
        {"conv.depthwise.weight",
         {TR_NN_DIM(2), 1, TR_NN_DIM(0)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, dw_w)},
        {"conv.depthwise.bias", {TR_NN_DIM(0)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, dw_b)},
        {"conv.pointwise2.weight",
         {1, TR_NN_DIM(0), TR_NN_DIM(0)},
         3,
         TR_TYPES_CONV,
         offsetof(tr_cf_block, pw2_w)},
        {"conv.pointwise2.bias", {TR_NN_DIM(0)}, 1, TR_TYPES_F32, offsetof(tr_cf_block, pw2_b)},
    };
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++, n++) {
        snprintf(names[n], 96, "%s%s", prefix, conv[i].part);
        bool vec = conv[i].types == TR_TYPES_F32;
        tr_nn_wspec s = {names[n],      vec ? TR_NN_W_VEC : TR_NN_W_TENSOR,
                         {0},           conv[i].n_dims,
                         conv[i].types, conv[i].offset};
        memcpy(s.ne, conv[i].ne, sizeof conv[i].ne);
        if (vec) s.ne[1] = 1;
        specs[n] = s;
    }
    return n;
}

static void pointwise_view(const tr_tensor *t, tr_tensor *view, int64_t in, int64_t out) {
    *view = *t;
    view->n_dims = 2;
    view->ne[0] = in;
    view->ne[1] = out;
    view->ne[2] = view->ne[3] = 1;
    view->nb1 = tr_row_bytes(t->type, in);
}

bool tr_cf_block_prepare(tr_cf_block *b, const tr_cf_dims *dm) {
    const int d = dm->d_model;
    pointwise_view(b->pw1_w, &b->pw1_view, d, 2 * (int64_t)d);
    pointwise_view(b->pw2_w, &b->pw2_view, d, d);
    b->pw1 = (tr_nn_linear){&b->pw1_view, b->pw1_b};
    b->pw2 = (tr_nn_linear){&b->pw2_view, b->pw2_b};
    return true;
}

void tr_cf_block_free(tr_cf_block *b) {
    (void)b;
}

/* The depthwise taps tap-major with the batch norm folded in (conv_bn), and the bias, into
 * taps ((k + 1)·d floats, then k more as the widening's temporary), from the file's [d][k]
 * kernel: once per block call, so no widened copy stays resident beside the mapped one (at
 * load this was 1.1 MB for MedASR's 17 blocks). */
static tr_nn_dw fold_taps(const tr_cf_block *b, const tr_cf_dims *dm, float *taps) {
    const int d = dm->d_model, k = dm->kernel;
    const tr_nn_dw dw = {taps, taps + (size_t)k * d};
    float *row = taps + (size_t)(k + 1) * d;
    for (int c = 0; c < d; c++) {
        float s = 1.0f, sh = 0.0f;
        if (dm->conv_bn)
            tr_nn_bn_fold(&b->bn_w[c], &b->bn_b[c], &b->bn_mean[c], &b->bn_var[c], 1, 1e-5f, &s,
                          &sh);
        tr_dequantize_row(
            b->dw_w->type,
            (const uint8_t *)b->dw_w->data + tr_row_bytes(b->dw_w->type, (int64_t)c * k), row, k);
        for (int j = 0; j < k; j++) dw.w[(size_t)j * d + c] = row[j] * s;
        dw.b[c] = (b->dw_b ? b->dw_b[c] : 0.0f) * s + sh;
    }
    return dw;
}

/* Hidden columns per pass of a feed-forward: d_ff in n equal blocks of at
 * most 2d, so the hidden activations are [B][2d] and not [B][d_ff]. Block j:
 * SiLU(h W1[j]^T + b1[j]) (rows j of W1), then its share of the output
 * through columns j of W2 (a strided view); the shares are summed, then added
 * into x. Each weight element is read once per row block, as unsplit. Block
 * widths are multiples of 256 so that they fall on the quantization blocks of
 * every weight type; one block where none fits. */
static int ff_cols(const tr_cf_dims *d) {
    const int w = 2 * d->d_model;
    for (int n = (d->d_ff + w - 1) / w; n > 1 && n <= d->d_ff; n++)
        if (d->d_ff % n == 0 && (d->d_ff / n) % 256 == 0) return n;
    return 1;
}

static int block_rows(const tr_cf_dims *d) {
    return d->block_rows > 0 ? d->block_rows : TR_CF_BLOCK_ROWS;
}

/* rows split into the fewest blocks of at most B rows, as even as possible */
static int n_blocks(int rows, int B) {
    return (rows + B - 1) / B;
}

static void block_at(int rows, int nb, int i, int *r0, int *n) {
    const int base = rows / nb, extra = rows % nb;
    *r0 = i * base + (i < extra ? i : extra);
    *n = base + (i < extra ? 1 : 0);
}

typedef struct cf_buf {
    float *wide;        /* [T_max][d]: attention's context rows, then the conv module's GLU rows;
                           the feed-forward's hidden column block (over kg and vg too: front) */
    float *kg, *vg;     /* one head group's keys and values over a segment, [T][g·dh] each */
    float *h, *q, *mid; /* [B][d] each, q and mid adjacent (the first pointwise's [B][2d]) */
    float *taps;        /* the depthwise taps, folded per call (fold_taps) */
    float *rot;         /* [T_max][dh]: the rotation's cos and sin per position (rot_table) */
    int B;              /* the row block limit (block_rows); buffers hold sizes()'s B rows */
} cf_buf;

/* Heads per attention group: each group's keys and values over the whole segment are
 * computed, then its attention for every query block, into the context rows; the kernel
 * packs them again (2·T·head_dim floats per head), so as many heads as keep one group within
 * CF_ATTN_PACK bytes, at least one (11 s of MedASR: 3 of its 8 heads; 84 s: one): the
 * keys and values of all heads ([2·T][d]) are never resident at once. */
#define CF_ATTN_PACK (512u << 10)
static int attn_heads(int T, int H, int dh) {
    const size_t per = 2 * (size_t)T * (size_t)dh * sizeof(float);
    const size_t g = per > 0 ? CF_ATTN_PACK / per : (size_t)H;
    return g < 1 ? 1 : g > (size_t)H ? H : (int)g;
}

static void sizes(const tr_cf_dims *d, int n_seg, const int *seg_T, int *T_max, int *B,
                  size_t *kv) {
    int R = 0, Tm = 0;
    size_t kvm = 0;
    const int H = d->n_head, dh = d->d_model / d->n_head;
    for (int i = 0; i < n_seg; i++) {
        R += seg_T[i];
        if (seg_T[i] > Tm) Tm = seg_T[i];
        const size_t f = 2 * (size_t)seg_T[i] * (size_t)dh * (size_t)attn_heads(seg_T[i], H, dh);
        if (f > kvm) kvm = f;
    }
    /* the largest block any split makes: 625 rows in blocks of at most 512
     * are 313 + 312, so the buffers hold 313 rows, not 512 */
    const int b = block_rows(d);
    int most = R > 0 ? (R + n_blocks(R, b) - 1) / n_blocks(R, b) : 0;
    for (int i = 0; i < n_seg; i++) {
        const int n =
            seg_T[i] > 0 ? (seg_T[i] + n_blocks(seg_T[i], b) - 1) / n_blocks(seg_T[i], b) : 0;
        if (n > most) most = n;
    }
    *T_max = Tm;
    *B = most;
    *kv = kvm;
}

/* floats of the front region: the context / GLU rows of the longest segment and one head
 * group's keys and values after them, or (outside attention and the conv module) a block of
 * the feed-forward's hidden columns over both: B rows of the column block, which at short
 * inputs is the larger */
static size_t front(const tr_cf_dims *d, int T_max, int B, size_t kv) {
    const size_t ff = (size_t)B * (size_t)(d->d_ff / ff_cols(d));
    const size_t att = (size_t)T_max * (size_t)d->d_model + kv;
    return att > ff ? att : ff;
}

size_t tr_cf_scratch(const tr_cf_dims *d, int n_seg, const int *seg_T) {
    int T_max, B;
    size_t kv;
    sizes(d, n_seg, seg_T, &T_max, &B, &kv);
    const size_t D = (size_t)d->d_model;
    return front(d, T_max, B, kv) + 3 * (size_t)B * D + (2 * (size_t)d->kernel + 1) * D +
           (size_t)T_max * (size_t)(d->d_model / d->n_head);
}

static cf_buf split(const tr_cf_dims *d, int n_seg, const int *seg_T, float *scratch) {
    int T_max, B;
    size_t kv;
    sizes(d, n_seg, seg_T, &T_max, &B, &kv);
    const size_t D = (size_t)d->d_model, BD = (size_t)B * D;
    cf_buf b;
    b.wide = scratch;
    b.kg = scratch + (size_t)T_max * D;
    b.vg = b.kg + kv / 2;
    b.h = scratch + front(d, T_max, B, kv);
    b.q = b.h + BD;
    b.mid = b.q + BD;
    b.taps = b.mid + BD;
    b.rot = b.taps + (2 * (size_t)d->kernel + 1) * D;
    b.B = block_rows(d);
    return b;
}

/* cos and sin of the rotation at position p for pair i: the angle in double,
 * then rounded once (position-exact for long inputs) */
static void rot_angle(int p, int i, int head_dim, float theta, float *c, float *s) {
    const double ang = (double)p * pow((double)theta, -2.0 * i / head_dim);
    *c = (float)cos(ang);
    *s = (float)sin(ang);
}

/* the rotation of rows at positions p0 .. p0 + n - 1; tab: NULL, or the cos and sin of every
 * position (rot_table), so that a head group's rows do not recompute them */
static void rotate_from(float *x, int p0, int n, int n_head, int head_dim, float theta,
                        const float *tab) {
    const int half = head_dim / 2;
    for (int t = 0; t < n; t++) {
        float *row = x + (size_t)t * n_head * head_dim;
        const float *ct = tab ? tab + (size_t)(p0 + t) * head_dim : NULL;
        for (int i = 0; i < half; i++) {
            float c, s;
            if (ct) {
                c = ct[i];
                s = ct[half + i];
            } else {
                rot_angle(p0 + t, i, head_dim, theta, &c, &s);
            }
            for (int h = 0; h < n_head; h++) {
                float *p = row + (size_t)h * head_dim;
                float a = p[i], b = p[i + half];
                p[i] = a * c - b * s;
                p[i + half] = b * c + a * s;
            }
        }
    }
}

/* tab [T][head_dim]: position p's cos for pairs 0 .. half - 1, then its sin */
static void rot_table(float *tab, int T, int head_dim, float theta) {
    const int half = head_dim / 2;
    for (int p = 0; p < T; p++)
        for (int i = 0; i < half; i++)
            rot_angle(p, i, head_dim, theta, &tab[(size_t)p * head_dim + i],
                      &tab[(size_t)p * head_dim + half + i]);
}

void tr_cf_rotate(float *x, int T, int n_head, int head_dim, float theta) {
    rotate_from(x, 0, T, n_head, head_dim, theta, NULL);
}

static float one_if_zero(float w) {
    return w == 0.0f ? 1.0f : w;
}

/* x = w0·x + w1·y (n floats); w0 == 1 is the plain x += w1·y. */
static void residual(tr_pool *pool, float *x, const float *y, float w0, float w1, long n) {
    if (w0 != 1.0f) tr_ew_scale(pool, x, w0, n);
    if (w1 == 1.0f)
        tr_ew_add(pool, x, y, n);
    else
        tr_ew_axpy(pool, x, y, w1, n);
}

/* x = w0·x + s · down(silu(up(LN(x)))), in row blocks: LN in h, the hidden
 * columns (ff_cols blocks) in k, free outside attention and the conv module,
 * their shares of down() in q, summed in mid before the residual */
static void ff_half(tr_pool *pool, const tr_cf_dims *d, const tr_nn_norm *ln,
                    const tr_nn_linear *up, const tr_nn_linear *down, float *x, int R,
                    const cf_buf *b) {
    const int D = d->d_model, nc = ff_cols(d), cw = d->d_ff / nc, nb = n_blocks(R, b->B);
    const float w0 = one_if_zero(d->ff_w0);
    for (int i = 0; i < nb; i++) {
        int r0, n;
        block_at(R, nb, i, &r0, &n);
        float *xb = x + (size_t)r0 * D;
        const long nD = (long)n * D;
        tr_layer_norm(pool, xb, b->h, n, D, ln->w, ln->b, d->ln_eps);
        if (nc == 1) {
            tr_nn_linear_fwd(pool, up, b->h, n, b->wide);
            tr_ew_silu(pool, b->wide, (long)n * d->d_ff);
            tr_nn_linear_fwd(pool, down, b->wide, n, b->q);
            residual(pool, xb, b->q, w0, d->ff_scale, nD);
            continue;
        }
        for (int j = 0; j < nc; j++) {
            tr_tensor v1 = *up->w, v2 = *down->w;
            v1.ne[1] = cw;
            v1.data = (const uint8_t *)up->w->data + (size_t)j * cw * up->w->nb1;
            v2.ne[0] = cw;
            v2.data = (const uint8_t *)down->w->data + tr_row_bytes(v2.type, (int64_t)j * cw);
            tr_matmul(pool, &v1, up->b ? up->b + (size_t)j * cw : NULL, b->h, n, D, b->wide, cw);
            tr_ew_silu(pool, b->wide, (long)n * cw);
            /* the blocks' shares summed in mid (as the GEMM sums its K panels), then one
             * residual */
            tr_matmul(pool, &v2, j == 0 ? down->b : NULL, b->wide, n, cw, j == 0 ? b->mid : b->q,
                      D);
            if (j > 0) tr_ew_add(pool, b->mid, b->q, nD);
        }
        residual(pool, xb, b->mid, w0, d->ff_scale, nD);
    }
}

/* Output columns [c0, c0 + n) of a linear (rows c0 .. of its weight): each column's bits
 * are the whole product's. */
static tr_nn_linear cols(const tr_nn_linear *l, int c0, int n, tr_tensor *view) {
    *view = *l->w;
    view->ne[1] = n;
    view->data = (const uint8_t *)l->w->data + (size_t)c0 * l->w->nb1;
    return (tr_nn_linear){view, l->b ? l->b + c0 : NULL};
}

/* Y[i] = X W[i]^T + b[i] (leading dimension ldy[i]) for the n linears that read the same
 * X [rows][d]: X packed once into pk (2·B·d floats of block scratch that is free here) where
 * the weights share a type and the rows are many, else one tr_matmul each; the bits are
 * tr_linear's either way (tr_matmul_lhs). */
static void proj_same_x(tr_pool *pool, const tr_nn_linear *l, float *const *y, const int *ldy,
                        int n, const float *X, int rows, int D, float *pk, size_t pk_floats) {
    bool one_type = true;
    for (int i = 1; i < n; i++) one_type = one_type && l[i].w->type == l[0].w->type;
    const size_t need = tr_matmul_lhs_floats(rows, D);
    tr_mm_lhs *A = one_type && n > 1 && need > 0 && need <= pk_floats
                       ? tr_matmul_lhs_pack_into(pool, X, D, rows, D, l[0].w->type, pk)
                       : NULL;
    for (int i = 0; i < n; i++) {
        if (A)
            tr_matmul_lhs(pool, l[i].w, l[i].b, A, y[i], ldy[i]);
        else
            tr_matmul(pool, l[i].w, l[i].b, X, rows, D, y[i], ldy[i]);
    }
    tr_matmul_lhs_free(A);
}

/* Rotary attention of one segment (x: its T rows), a group of heads at a time (attn_heads):
 * per row block the block input's norm once, the group's values, keys and queries from it
 * (the queries parked in the group's columns of the context rows, wide, which the group's
 * attention writes last), then per query block its queries and the attention into those
 * columns; x is read, not written, until every group is done, then the output projection is
 * added in row blocks. The projections' column blocks and the kernel see what they saw over
 * all heads at once, so the bits do not change; the norm runs once per group (O(T·d), against
 * the projections' O(T·d²)). */
static void attn_seg(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, float *x, int T,
                     const cf_buf *b) {
    const int D = d->d_model, H = d->n_head, dh = D / H, nb = n_blocks(T, b->B);
    const int g = attn_heads(T, H, dh);
    const size_t pk_floats = 2 * (size_t)b->B * (size_t)D; /* q and mid */
    for (int h0 = 0; h0 < H; h0 += g) {
        const int gh = H - h0 < g ? H - h0 : g, G = gh * dh;
        float *qcol = b->wide + (size_t)h0 * dh; /* the group's columns of the context rows */
        tr_tensor tq, tk, tv;
        const tr_nn_linear w[3] = {cols(&blk->attn.v, h0 * dh, G, &tv),
                                   cols(&blk->attn.k, h0 * dh, G, &tk),
                                   cols(&blk->attn.q, h0 * dh, G, &tq)};
        for (int i = 0; i < nb; i++) {
            int r0, n;
            block_at(T, nb, i, &r0, &n);
            const size_t o = (size_t)r0 * G;
            tr_layer_norm(pool, x + (size_t)r0 * D, b->h, n, D, blk->norm_attn.w, blk->norm_attn.b,
                          d->ln_eps);
            float *y[3] = {b->vg + o, b->kg + o, qcol + (size_t)r0 * D};
            const int ldy[3] = {G, G, D};
            if (d->rot == TR_CF_ROT_INPUT) {
                /* the values read the unrotated input, the keys and queries the rotated */
                tr_nn_linear_fwd(pool, &w[0], b->h, n, y[0]);
                rotate_from(b->h, r0, n, H, dh, d->rot_theta, b->rot);
                proj_same_x(pool, w + 1, y + 1, ldy + 1, 2, b->h, n, D, b->q, pk_floats);
            } else {
                proj_same_x(pool, w, y, ldy, 3, b->h, n, D, b->q, pk_floats);
            }
            if (d->rot == TR_CF_ROT_QK) rotate_from(b->kg + o, r0, n, gh, dh, d->rot_theta, b->rot);
        }
        for (int i = 0; i < nb; i++) {
            int r0, n;
            block_at(T, nb, i, &r0, &n);
            for (int r = 0; r < n; r++)
                memcpy(b->q + (size_t)r * G, qcol + (size_t)(r0 + r) * D, sizeof(float) * G);
            if (d->rot == TR_CF_ROT_QK) rotate_from(b->q, r0, n, gh, dh, d->rot_theta, b->rot);
            const tr_attn_args a = {.q = b->q,
                                    .q_stride = G,
                                    .k = b->kg,
                                    .v = b->vg,
                                    .kv_stride = G,
                                    .out = qcol + (size_t)r0 * D,
                                    .out_stride = D,
                                    .n_q = n,
                                    .n_kv = T,
                                    .kv_valid = T,
                                    .n_head = gh,
                                    .n_head_kv = gh,
                                    .head_dim = dh,
                                    .scale = (float)(1.0 / sqrt((double)dh))};
            tr_attention(pool, &a);
        }
    }
    for (int i = 0; i < nb; i++) {
        int r0, n;
        block_at(T, nb, i, &r0, &n);
        tr_nn_linear_fwd(pool, &blk->attn.o, b->wide + (size_t)r0 * D, n, b->q);
        tr_ew_add(pool, x + (size_t)r0 * D, b->q, (long)n * D);
    }
}

/* The conv module of one segment: GLU(pw1(LN(x))) into the wide rows in row
 * blocks, then per row block the depthwise conv of its rows (reading the GLU
 * rows around them), its norm, SiLU, pw2 and the residual. */
static void conv_seg(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, const tr_nn_dw *dw,
                     float *x, int T, const cf_buf *b) {
    const int D = d->d_model, nb = n_blocks(T, b->B);
    for (int i = 0; i < nb; i++) {
        int r0, n;
        block_at(T, nb, i, &r0, &n);
        const size_t o = (size_t)r0 * D;
        tr_layer_norm(pool, x + o, b->h, n, D, blk->norm_conv.w, blk->norm_conv.b, d->ln_eps);
        tr_nn_linear_fwd(pool, &blk->pw1, b->h, n, b->q); /* [n][2d] over q and mid */
        tr_ew_glu(pool, b->q, b->wide + o, n, D);
    }
    const float w0 = one_if_zero(d->conv_w0), w1 = one_if_zero(d->conv_w1);
    for (int i = 0; i < nb; i++) {
        int r0, n;
        block_at(T, nb, i, &r0, &n);
        tr_nn_depthwise_rows(pool, dw, D, d->kernel, (d->kernel - 1) / 2, b->wide, T, r0, n, b->h);
        if (!d->conv_bn)
            tr_layer_norm(pool, b->h, b->h, n, D, blk->conv_ln.w, blk->conv_ln.b, d->ln_eps);
        tr_ew_silu(pool, b->h, (long)n * D);
        tr_nn_linear_fwd(pool, &blk->pw2, b->h, n, b->q);
        residual(pool, x + (size_t)r0 * D, b->q, w0, w1, (long)n * D);
    }
}

void tr_cf_block_fwd(tr_pool *pool, const tr_cf_block *blk, const tr_cf_dims *d, float *x,
                     int n_seg, const int *seg_T, float *scratch) {
    int R = 0;
    for (int i = 0; i < n_seg; i++) R += seg_T[i];
    if (R <= 0) return;
    const cf_buf b = split(d, n_seg, seg_T, scratch);
    const size_t D = (size_t)d->d_model;
    if (d->rot != TR_CF_ROT_NONE) {
        int T_max = 0;
        for (int i = 0; i < n_seg; i++)
            if (seg_T[i] > T_max) T_max = seg_T[i];
        rot_table(b.rot, T_max, d->d_model / d->n_head, d->rot_theta);
    }
    ff_half(pool, d, &blk->norm_ff1, &blk->ff1_up, &blk->ff1_down, x, R, &b);
    size_t off = 0;
    for (int i = 0; i < n_seg; i++) {
        if (seg_T[i] > 0) attn_seg(pool, blk, d, x + off * D, seg_T[i], &b);
        off += (size_t)seg_T[i];
    }
    const tr_nn_dw dw = fold_taps(blk, d, b.taps);
    off = 0;
    for (int i = 0; i < n_seg; i++) {
        if (seg_T[i] > 0) conv_seg(pool, blk, d, &dw, x + off * D, seg_T[i], &b);
        off += (size_t)seg_T[i];
    }
    ff_half(pool, d, &blk->norm_ff2, &blk->ff2_up, &blk->ff2_down, x, R, &b);
    tr_layer_norm(pool, x, x, R, d->d_model, blk->norm_out.w, blk->norm_out.b, d->ln_eps);
}
