/* Element-wise, normalisation, convolution, attention and positional ops on
 * F32 activations. Row-major; "rows × dim" means rows vectors of dim floats.
 * Every op with a pool argument accepts NULL (single-threaded); results never
 * depend on the thread count. In-place use (y == x) is allowed wherever the
 * signature has both. SIMD kernels (AVX-512 / AVX2+FMA / portable) follow the
 * active level of tensor/cpu.h per call (TRANSCRIBE_CPU lowers it; tests
 * force each level with tr_cpu_force to cover every path). */
#ifndef TR_TENSOR_OPS_H
#define TR_TENSOR_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/pool.h"
#include "tensor/tensor.h"

/* ---- normalisation ---- */
/* y = (x - mean) / sqrt(var + eps) * g + b   (biased variance; g/b may be NULL) */
void tr_layer_norm(tr_pool *pool, const float *x, float *y, int rows, int dim, const float *g,
                   const float *b, float eps);
/* A residual add and the norm that follows it in one pass over the rows:
 * x += a1, then x += a2 (a2 may be NULL), then y = tr_layer_norm(x); the
 * same bits as tr_ew_add, tr_ew_add, tr_layer_norm in turn. y may be x. */
void tr_add_layer_norm(tr_pool *pool, float *x, const float *a1, const float *a2, float *y,
                       int rows, int dim, const float *g, const float *b, float eps);
/* y = x / sqrt(mean(x^2) + eps) * g   (g may be NULL) */
void tr_rms_norm(tr_pool *pool, const float *x, float *y, int rows, int dim, const float *g,
                 float eps);
/* GroupNorm: c channels in `groups` runs of c / groups consecutive
 * channels; each group is normalised by the mean and biased variance of all
 * its n·c/groups values, y = (x - mean) / sqrt(var + eps) · g[ch] + b[ch]
 * (g / b may be NULL). Layout: channel_major x is [c][n] (PyTorch's
 * (C, L)), else [n][c] (time-major rows). Statistics in double, per group
 * in a fixed order. False (logged) when c % groups != 0 or out of memory. */
bool tr_group_norm(tr_pool *pool, const float *x, float *y, int n, int c, int groups,
                   bool channel_major, const float *g, const float *b, float eps);
/* x[r][i] = x[r][i] * scale[i] + bias[i]  (fused batch norm; either may be NULL) */
void tr_scale_bias(float *x, int rows, int dim, const float *scale, const float *bias);
/* x[r][i] += b[i] */
void tr_add_bias(float *x, int rows, int dim, const float *b);
/* y[i] = a[i] + s * b[i] */
void tr_add_scaled(float *y, const float *a, const float *b, float s, long n);

/* ---- activations (in place, n elements) ---- */
void tr_gelu(float *x, long n);      /* exact erf form */
void tr_gelu_tanh(float *x, long n); /* tanh approximation */
void tr_silu(float *x, long n);
void tr_relu(float *x, long n);
void tr_sigmoid(float *x, long n);
void tr_tanh(float *x, long n); /* within a few ulp of tanhf, relative accuracy kept near 0 */
/* GLU over the last dim: x is rows × 2*half; y[r][i] = x[r][i] * sigmoid(x[r][half+i]) */
void tr_glu(const float *x, float *y, int rows, int half);
/* The same spread over the pool (fixed blocks: bits equal the serial call's
 * for any thread count); tr_ew_add: x[i] += y[i]; tr_ew_axpy: x[i] += s·y[i];
 * tr_ew_scale: x[i] *= s; tr_ew_glu: tr_glu over whole rows. */
void tr_ew_gelu(tr_pool *pool, float *x, long n);
void tr_ew_silu(tr_pool *pool, float *x, long n);
void tr_ew_relu(tr_pool *pool, float *x, long n);
void tr_ew_add(tr_pool *pool, float *x, const float *y, long n);
void tr_ew_axpy(tr_pool *pool, float *x, const float *y, float s, long n);
void tr_ew_scale(tr_pool *pool, float *x, float s, long n);
void tr_ew_glu(tr_pool *pool, const float *x, float *y, int rows, int half);

/* ---- softmax ---- */
/* Softmax of each row in place; mask (optional, rows × n or NULL) is added
 * before the max; -INFINITY entries get probability 0; an all-masked row
 * becomes all zeros. */
void tr_softmax(float *x, int rows, int n, const float *mask);
/* log-softmax of one row in place */
void tr_log_softmax(float *x, int n);

/* ---- layout ---- */
/* y[c][r] = x[r][c] for an rows × cols input */
void tr_transpose(const float *x, float *y, int rows, int cols);

/* ---- convolution (channel-major activations, PyTorch semantics) ----
 * conv1d: x is [c_in][t_in], w has ne = {k, c_in/groups, c_out} (F32 or F16),
 * bias [c_out] or NULL, y is [c_out][t_out] with
 * t_out = (t_in + pad_l + pad_r - dilation*(k-1) - 1) / stride + 1.
 * Depthwise is groups == c_in == c_out. */
int tr_conv1d_out_len(int t_in, int k, int stride, int pad_l, int pad_r, int dilation);
void tr_conv1d(tr_pool *pool, const float *x, int c_in, int t_in, const tr_tensor *w,
               const float *bias, int stride, int pad_l, int pad_r, int dilation, int groups,
               float *y);
/* conv2d: x is [c_in][h][w], w has ne = {kw, kh, c_in/groups, c_out}; y is
 * [c_out][h_out][w_out]; symmetric zero padding (pad_h, pad_w). */
void tr_conv2d(tr_pool *pool, const float *x, int c_in, int h, int w_in, const tr_tensor *w,
               const float *bias, int stride_h, int stride_w, int pad_h, int pad_w, int groups,
               float *y, int *h_out, int *w_out);
/* A dense (not depthwise) conv2d weight made ready once for many calls
 * with the same weight, e.g. a model that convolves chunk by chunk: rows
 * widened to F32 and packed for the GEMM, so that each tr_conv2d_prepared
 * skips that work; results equal tr_conv2d's bit for bit. Borrows w (which
 * must outlive it). NULL for a depthwise weight (it has nothing to
 * prepare), one tr_conv2d would refuse (logged, noted on the pool) or when
 * memory runs out: then call tr_conv2d. */
typedef struct tr_conv_weight tr_conv_weight;
tr_conv_weight *tr_conv2d_weight_prepare(tr_pool *pool, const tr_tensor *w, int groups);
void tr_conv2d_prepared(tr_pool *pool, const float *x, int c_in, int h, int w_in,
                        const tr_conv_weight *cw, const float *bias, int stride_h, int stride_w,
                        int pad_h, int pad_w, float *y, int *h_out, int *w_out);
void tr_conv_weight_free(tr_conv_weight *cw);

/* ---- positions ---- */
/* Rotary embedding on x = n_tok rows, each n_head heads of head_dim floats
 * (row stride `stride` floats). The first n_rot dims of each head rotate by
 * angle pos[t] * theta_base^(-2i/n_rot). neox: pairs (i, i + n_rot/2);
 * otherwise adjacent pairs (2i, 2i+1). */
void tr_rope(float *x, int n_tok, int n_head, int head_dim, int stride, const int32_t *pos,
             int n_rot, float theta_base, bool neox);
/* One head's rotation with a token's precomputed angles (cosv / sinv [half],
 * half = n_rot / 2, each the float of the double cos / sin that tr_rope
 * computes): what tr_rope does to each head, for a caller that rotates heads
 * in its own parallel region. */
void tr_rope_head(float *p, const float *cosv, const float *sinv, int half, bool neox);

/* ---- embeddings ---- */
/* out[i][:] = row ids[i] of emb (ne = {d, vocab}), dequantized. Ids out of
 * range give zero rows (callers validate ids first). */
void tr_get_rows(const tr_tensor *emb, const int32_t *ids, int n, float *out);
/* The first n rows of t (ne = {cols, >= n}), of any type tr_get_rows reads,
 * as a new F32 array [n][cols] the caller frees; NULL on OOM. For small
 * tables a block keeps widened (Granite's relative positions, its
 * projector's queries). */
float *tr_rows_f32(const tr_tensor *t, int n);

/* ---- attention ----
 * Scaled dot-product attention with grouped-query heads, computed blockwise
 * with an online softmax so no n_q × n_kv matrix is ever materialised.
 *   q: n_q rows, stride q_stride floats, heads of head_dim (n_head heads)
 *   k, v: n_kv rows, stride kv_stride floats, n_head_kv heads (n_head % n_head_kv == 0);
 *         KV head g's part of a row starts g * kv_head_stride floats into it, where
 *         kv_head_stride 0 means head_dim (the heads side by side in one row);
 *         a head-major cache passes kv_stride = head_dim and kv_head_stride =
 *         its positions × head_dim, so each head's rows are one sequential run
 *   out: n_q rows, stride out_stride, n_head * head_dim floats
 * causal: query i sees keys j <= i + causal_offset (causal_offset = n_kv - n_q
 * for a decoder step appended to a KV cache). kv_valid (optional) limits the
 * keys to [0, kv_valid) for padded batches; pass n_kv otherwise.
 * pos_bias (optional, n_head × n_q × n_kv) is added to the scaled scores
 * (relative-position attention). */
typedef struct tr_attn_args {
    const float *q;
    int q_stride;
    const float *k;
    const float *v;
    int kv_stride;
    long kv_head_stride;
    float *out;
    int out_stride;
    int n_q, n_kv, kv_valid;
    int n_head, n_head_kv, head_dim;
    float scale;
    bool causal;
    int causal_offset;
    const float *pos_bias;
    /* optional: the caller's memory for the K/V copy the tile path makes
     * (tr_attention_pack_floats(a) floats, 64-byte aligned) instead of an
     * allocation per call; NULL or too small: allocated */
    float *pack;
    size_t pack_floats;
} tr_attn_args;
void tr_attention(tr_pool *pool, const tr_attn_args *a);
/* Floats of the K/V copy tr_attention makes for a (0: none). */
size_t tr_attention_pack_floats(const tr_attn_args *a);
/* Same, with K and V held as IEEE half floats (an F16 KV cache, half the
 * memory traffic): k16/v16 replace a->k/a->v, which are ignored; kv_stride
 * counts elements. Results match tr_attention on the F16-rounded values. */
void tr_attention_f16kv(tr_pool *pool, const tr_attn_args *a, const uint16_t *k16,
                        const uint16_t *v16);
/* One KV head's share of a decoder step's attention, on the calling thread,
 * for a caller that runs its own parallel region: query heads
 * [hk * G, hk * G + G) (G = n_head / n_head_kv) over the a->n_q query rows
 * (a few: the row kernel), bit for bit what tr_attention (k16 == NULL) or
 * tr_attention_f16kv computes for those heads. The caller has validated the
 * arguments; scratch holds tr_attention_kv_head_floats(head_dim) floats. */
long tr_attention_kv_head_floats(int head_dim);
void tr_attention_kv_head(const tr_attn_args *a, const uint16_t *k16, const uint16_t *v16, int hk,
                          float *scratch);

#endif
