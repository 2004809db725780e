/* Shared transformer building blocks: pre-LN encoder block, decoder block
 * with causal self-attention (KV cache) and cross-attention, FFN (plain or
 * gated: SwiGLU / GEGLU), optional rotary positions in self-attention.
 * Weights are borrowed tr_tensor views (any dtype tr_matmul supports);
 * activations are F32 row-major [rows][d_model]. Family-specific wiring
 * (embeddings, stems, heads) stays in the family folder. */
#ifndef TR_NN_NN_H
#define TR_NN_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/ops.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

typedef struct tr_nn_linear {
    const tr_tensor *w; /* ne = {in, out} */
    const float *b;     /* [out] or NULL */
} tr_nn_linear;

typedef struct tr_nn_norm {
    const float *w, *b; /* LayerNorm gamma / beta [d] */
} tr_nn_norm;

typedef struct tr_nn_attn {
    tr_nn_linear q, k, v, o;
} tr_nn_attn;

/* FFN activation; the zero value is GELU so existing (zero-initialised)
 * users such as Whisper keep their behaviour. */
typedef enum {
    TR_NN_ACT_GELU = 0, /* exact erf form */
    TR_NN_ACT_RELU = 1,
    TR_NN_ACT_SILU = 2, /* x·sigmoid(x), also called swish */
} tr_nn_act;

/* The activation's serial kernel on x[0, n), in place (tensor/ops.h). */
void tr_nn_act_apply(tr_nn_act act, float *x, long n);

/* Gated FFN (GLU family): the activation goes on the gate and multiplies
 * the value, fc2(value ⊙ act(gate)); with TR_NN_ACT_SILU that is SwiGLU,
 * with TR_NN_ACT_GELU GEGLU. */
typedef enum {
    TR_NN_GLU_NONE = 0,  /* fc2(act(fc1(h))) */
    TR_NN_GLU_FUSED = 1, /* fc1 emits 2F per row: value [0, F), gate [F, 2F) (Moonshine) */
    TR_NN_GLU_SPLIT =
        2, /* value = fc1(h), gate = gate(h): two F-wide weights (LLaMA's up / gate) */
} tr_nn_glu;

typedef struct tr_nn_ffn {
    tr_nn_linear fc1, fc2; /* fc1 → act → fc2 */
    tr_nn_act act;
    tr_nn_glu glu;
    tr_nn_linear gate; /* TR_NN_GLU_SPLIT only */
} tr_nn_ffn;

typedef struct tr_nn_enc_block {
    tr_nn_norm ln_attn;
    tr_nn_attn attn;
    tr_nn_norm ln_ffn;
    tr_nn_ffn ffn;
} tr_nn_enc_block;

typedef struct tr_nn_dec_block {
    tr_nn_norm ln_self;
    tr_nn_attn self;
    tr_nn_norm ln_cross;
    tr_nn_attn cross;
    tr_nn_norm ln_ffn;
    tr_nn_ffn ffn;
} tr_nn_dec_block;

/* Rotary positions on self-attention q and k (cross-attention never
 * rotates): the first n_rot dims of each head turn by pos · theta^(-2i/n_rot)
 * (tensor/ops.h tr_rope). Encoder rows sit at positions 0..rows-1, decoder
 * rows at their sequence positions; the KV cache keeps rotated keys. */
typedef struct tr_nn_rope {
    int n_rot;   /* even, <= head_dim; 0 = no rotary (partial when < head_dim) */
    float theta; /* base, e.g. 10000 */
    bool neox;   /* pairs (i, i + n_rot/2) (NeoX, rotate-half); false: (2i, 2i+1) (GPT-J) */
} tr_nn_rope;

typedef struct tr_nn_dims {
    int d_model, n_head, head_dim, d_ffn; /* d_ffn: F, the hidden width (per half when gated) */
    float ln_eps;
    tr_nn_rope rope;
    bool glu; /* the blocks' FFNs are gated (tr_nn_ffn.glu): scratch holds 2F per row */
} tr_nn_dims;

/* Self-attention cache, F32 or F16, head-major: per layer, per head, n_ctx
 * rows of head_dim values, so one head's keys (and values) over the
 * positions are one sequential run. A decode step's attention reads them
 * cold, after the step's weights have streamed through the caches: with
 * the heads side by side in a row, each head read head_dim values out of
 * every dim-wide row, a pattern the hardware prefetchers do not follow (a
 * Cohere-size step's self-attention took ~2x as long, one thread). n_past
 * is managed by the caller (positions already written). */
typedef struct tr_nn_kv {
    int n_layers, n_ctx, n_head, head_dim, dim; /* dim = n_head · head_dim */
    bool f16;
    void *k, *v; /* n_layers × n_head × n_ctx × head_dim elements each */
} tr_nn_kv;

bool tr_nn_kv_init(tr_nn_kv *kv, int n_layers, int n_ctx, int n_head, int head_dim, bool f16);
void tr_nn_kv_free(tr_nn_kv *kv);
size_t tr_nn_kv_bytes(const tr_nn_kv *kv);
/* Head h's K and V at position pos of layer l from k, v (head_dim floats
 * each), rounded to half floats in an F16 cache. */
void tr_nn_kv_put(tr_nn_kv *kv, int layer, int head, int pos, const float *k, const float *v);
/* Rows [pos, pos + rows) of layer l, every head, from tk, tv (row r at
 * + r · dim: [rows][n_head · head_dim] as the projections write them). */
void tr_nn_kv_write(tr_nn_kv *kv, int layer, int pos, int rows, const float *tk, const float *tv);
/* Layer l's cache as attention K/V: sets a's k, v (F32 cache; NULL for F16),
 * kv_stride and kv_head_stride, and *k16 / *v16 (F16 cache; else NULL). */
void tr_nn_kv_view(const tr_nn_kv *kv, int layer, tr_attn_args *a, const uint16_t **k16,
                   const uint16_t **v16);
/* Positions [0, rows) of every layer and head of src into dst (the same
 * shape): a shared prefix handed to another sequence. */
void tr_nn_kv_copy_prefix(tr_nn_kv *dst, const tr_nn_kv *src, int rows);

/* Multi-head attention of nb independent windows, every matrix [rows][d]
 * contiguous: window b's nq query rows (q + b·nq·d) over its nk key and
 * value rows (k, v + b·nk·d), n_head heads of d / n_head, scale
 * 1/sqrt(head_dim), no mask, into out + b·nq·d. The windowed query
 * projectors of Granite Speech (docs/formats/granite_speech.md §6.2) and
 * Granite NAR (docs/formats/granite_nar.md §5.2) both run it. */
void tr_nn_window_attn(tr_pool *pool, const float *q, const float *k, const float *v, int nb,
                       int nq, int nk, int d, int n_head, float *out);

/* y = x W^T + b for rows × in → rows × out (contiguous). */
void tr_nn_linear_fwd(tr_pool *pool, const tr_nn_linear *l, const float *x, int rows, float *y);

/* Scratch floats the blocks need for `rows` rows. */
size_t tr_nn_enc_block_scratch(const tr_nn_dims *d, int rows);
size_t tr_nn_dec_block_scratch(const tr_nn_dims *d, int rows, int n_ctx);

/* Pre-LN bidirectional block, in place on x [rows][d_model]. */
void tr_nn_enc_block_fwd(tr_pool *pool, const tr_nn_enc_block *blk, const tr_nn_dims *d, float *x,
                         int rows, float *scratch);

/* Cross-attention K/V of one decoder block, head-major as the
 * self-attention cache and for the same reason (a step reads each head's
 * keys as one run): a block of capacity `rows` source rows holds n_head
 * runs of rows × head_dim, head h's row j at (h · rows + j) · head_dim.
 * tr_nn_cross_kv writes source rows src [n][d_model] as rows [row0,
 * row0 + n) of the blocks ck and cv, computed in blocks of rows through a
 * buffer of its own; false (logged, nothing promised about ck / cv) when
 * that buffer cannot be had. tr_nn_cross_kv16 rounds them to half floats. */
bool tr_nn_cross_kv(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                    const float *src, int n, size_t rows, size_t row0, float *ck, float *cv);
bool tr_nn_cross_kv16(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                      const float *src, int n, size_t rows, size_t row0, uint16_t *ck16,
                      uint16_t *cv16);
/* Rows [0, n) of every head of one layer's cross block (capacity src_rows)
 * into another of capacity dst_rows; es: bytes per value. */
void tr_nn_cross_copy(void *dst, size_t dst_rows, const void *src, size_t src_rows, size_t n,
                      const tr_nn_dims *d, size_t es);
/* Rows [0, n) of one layer's F32 cross block (capacity rows) as out
 * [n][n_head · head_dim], the projections' own layout (tests compare it). */
void tr_nn_cross_rows(const float *blk, size_t rows, size_t n, const tr_nn_dims *d, float *out);

/* Pre-LN decoder block on x [rows][d_model] at positions n_past .. n_past+rows-1:
 * writes this layer's self K/V into the cache, attends causally over
 * [0, n_past+rows), then over ck/cv (n_src rows, no mask), then the FFN.
 * Requires n_past + rows <= kv->n_ctx. */
void tr_nn_dec_block_fwd(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d, float *x,
                         int rows, tr_nn_kv *kv, int layer, int n_past, const float *ck,
                         const float *cv, int n_src, float *scratch);

/* One sequence of a batched decoder step: `rows` consecutive rows of x at
 * positions n_past.., with its own self-attention cache and cross K/V
 * (layer l's block at ck / cv + l * cross_stride values, head-major as
 * tr_nn_cross_kv writes it, with a capacity of cross_rows source rows (0:
 * n_src); ck / cv point at the sequence's first row of head 0, its n_src
 * rows following; stride 0 when the caller passes one layer's). ids: the
 * rows' tokens, for the embedding of encdec_decoder.h (the blocks do not
 * read them). */
typedef struct tr_nn_dec_seg {
    int rows, n_past, n_src;
    tr_nn_kv *kv;
    const float *ck, *cv;
    size_t cross_stride;
    const int32_t *ids;
    /* cross K/V held as half floats (an F16 cache's sessions: half the
     * bytes a step reads): non-NULL, these replace ck / cv, same layout */
    const uint16_t *ck16, *cv16;
    size_t cross_rows;
} tr_nn_dec_seg;

/* Sets a's K/V to layer l of sg's cross K/V (a->k / a->v for F32; *k16 /
 * *v16 for half floats, else NULL), with its row and head strides. */
void tr_nn_cross_view(const tr_nn_dec_seg *sg, int layer, int head_dim, tr_attn_args *a,
                      const uint16_t **k16, const uint16_t **v16);

/* tr_nn_dec_block_fwd for n_seg independent sequences packed in x
 * (segment i's rows follow segment i-1's): every projection runs once over
 * all rows, so each weight is read once for the whole batch; attention
 * runs per sequence. Scratch: tr_nn_dec_block_scratch for the total rows.
 * A sequence's rows equal its own tr_nn_dec_block_fwd's up to the
 * rounding of the matmul path the row count selects. */
void tr_nn_dec_block_fwd_segs(tr_pool *pool, const tr_nn_dec_block *blk, const tr_nn_dims *d,
                              float *x, int n_seg, const tr_nn_dec_seg *segs, int layer,
                              float *scratch);

#endif
