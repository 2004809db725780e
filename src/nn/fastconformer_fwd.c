/* FastConformer forward pass (docs/formats/parakeet.md §7): pre-encode, optional
 * x-scaling, the positional table for this T, then n_layers Conformer blocks
 * in place on the output buffer. All scratch lives in tr_fc_work and grows
 * on demand, so repeated runs of similar length allocate nothing.
 *
 * Buffers per block (T frames, d = d_model): h, q, k, v [T][d] and mid
 * [T][2d] (the feed-forward's d_ff hidden columns go in blocks of <= 2d). The attention output
 * lands in h (free once q/k/v exist) and its projection in q (free once attention ran). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/fastconformer_internal.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define FC_LN_EPS 1e-5f

struct tr_fc_work {
    tr_fc_pre_scratch pre;
    tr_fc_buf h, mid, q, k, v, pe, p;
    tr_fc_attn_scratch att;
};

bool tr_fc_buf_reserve(tr_fc_buf *b, size_t n) {
    if (n <= b->n) return true;
    /* contents never need to survive a resize: free first, keep peak low */
    free(b->p);
    b->p = NULL;
    b->n = 0;
    if (n > SIZE_MAX / sizeof(float)) return false;
    b->p = malloc(n * sizeof(float));
    if (!b->p) return false;
    b->n = n;
    return true;
}

static void buf_free(tr_fc_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

tr_fc_work *tr_fc_work_new(void) {
    tr_fc_work *w = calloc(1, sizeof *w);
    if (!w) {
        TR_ERROR("fastconformer: out of memory for the work area");
        return NULL;
    }
    w->att.bias_budget = TR_FC_BIAS_BUDGET;
    return w;
}

void tr_fc_work_set_pre_chunk(tr_fc_work *w, int frames) {
    if (w) w->pre.chunk = frames;
}

void tr_fc_work_set_bias_budget(tr_fc_work *w, size_t bytes) {
    if (w) w->att.bias_budget = bytes;
}

void tr_fc_work_free(tr_fc_work *w) {
    if (!w) return;
    tr_fc_buf *all[] = {&w->pre.a,  &w->pre.b,    &w->pre.flat, &w->h,  &w->mid,
                        &w->q,      &w->k,        &w->v,        &w->pe, &w->p,
                        &w->att.qv, &w->att.bias, &w->att.bd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
    free(w);
}

size_t tr_fc_work_bytes(const tr_fc_work *w) {
    if (!w) return 0;
    const tr_fc_buf *all[] = {&w->pre.a,  &w->pre.b,    &w->pre.flat, &w->h,  &w->mid,
                              &w->q,      &w->k,        &w->v,        &w->pe, &w->p,
                              &w->att.qv, &w->att.bias, &w->att.bd};
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) n += all[i]->n;
    return n * sizeof(float);
}

/* Hidden columns per pass of the feed-forward: d_ff in n equal blocks of at
 * most 2d (the width mid has for the conv module anyway), so mid is [T][2d]
 * and not [T][d_ff]. Block j: mid = SiLU(LN(x) W1[j]^T + b1[j]) (rows j of W1),
 * then its share mid W2[:, j]^T of the output (columns j of W2, a strided
 * view), summed over j. Each weight element is read once, as unsplit (row
 * tiles read every weight once per tile, and dequantized it again: +10-15 %
 * CPU at Sortformer's 378 rows). One block (no split) where the blocks
 * would not fall on W2's quantization blocks. */
static int ff_blocks(const tr_fc_hparams *hp, const tr_tensor *w2) {
    const int wide = 2 * hp->d_model, qb = tr_type_block(w2->type);
    for (int n = (hp->d_ff + wide - 1) / wide; n > 1 && n <= hp->d_ff; n++)
        if (hp->d_ff % n == 0 && qb >= 1 && (hp->d_ff / n) % qb == 0) return n;
    return 1;
}

/* x += 0.5 * W2 SiLU(W1 LN(x) + b1) + b2, hidden columns in blocks (ff_blocks);
 * the partial products land in k (free outside attention) and add into q */
static void ff_half(tr_pool *pool, const tr_fc_hparams *hp, const tr_nn_norm *ln,
                    const tr_nn_linear *w1, const tr_nn_linear *w2, float *x, int T,
                    tr_fc_work *w) {
    const int d = hp->d_model, d_ff = hp->d_ff, n = ff_blocks(hp, w2->w), blk = d_ff / n;
    tr_layer_norm(pool, x, w->h.p, T, d, ln->w, ln->b, FC_LN_EPS);
    for (int j = 0; j < n; j++) {
        tr_tensor v1 = *w1->w, v2 = *w2->w;
        v1.ne[1] = blk;
        v1.data = (const uint8_t *)w1->w->data + (size_t)j * blk * w1->w->nb1;
        v2.ne[0] = blk;
        v2.data = (const uint8_t *)w2->w->data + tr_row_bytes(v2.type, (int64_t)j * blk);
        tr_matmul(pool, &v1, w1->b ? w1->b + (size_t)j * blk : NULL, w->h.p, T, d, w->mid.p, blk);
        tr_ew_silu(pool, w->mid.p, (long)T * blk);
        tr_matmul(pool, &v2, j == 0 ? w2->b : NULL, w->mid.p, T, blk, j == 0 ? w->q.p : w->k.p, d);
        if (j > 0) tr_ew_add(pool, w->q.p, w->k.p, (long)T * d);
    }
    tr_ew_axpy(pool, x, w->q.p, 0.5f, (long)T * d);
}

/* Utterances of one forward: n segments of T[i] frames, segment i at rows
 * [off[i], off[i] + T[i]) of every [rows][d] buffer. Row-wise stages (norms,
 * projections, element-wise passes) run once over all rows; attention and
 * the depthwise conv run per segment. A single run is one segment. */
typedef struct segs {
    int n;
    const int *T, *off;
    int rows;  /* sum of T */
    int T_max; /* longest segment: its positional rows cover every shorter one */
} segs;

static bool attn_residual(const tr_fc_encoder *enc, const tr_fc_block *blk, tr_pool *pool, float *x,
                          const segs *sg, int P, tr_fc_work *w) {
    const int d = enc->hp.d_model, T = sg->rows;
    tr_layer_norm(pool, x, w->h.p, T, d, blk->norm_attn.w, blk->norm_attn.b, FC_LN_EPS);
    tr_nn_linear_fwd(pool, &blk->q, w->h.p, T, w->q.p);
    tr_nn_linear_fwd(pool, &blk->k, w->h.p, T, w->k.p);
    tr_nn_linear_fwd(pool, &blk->v, w->h.p, T, w->v.p);
    tr_linear(pool, &blk->pos, NULL, w->pe.p, P, w->p.p);
    const int first_max = tr_fc_pos_first(&enc->hp, sg->T_max);
    for (int i = 0; i < sg->n; i++) {
        /* the table row of position pos0 is first_max - pos0 (rows are
         * positions counting down), so a shorter segment reads a sub-range */
        const int Ti = sg->T[i], Pi = tr_fc_pos_rows(&enc->hp, Ti);
        const int r0 = first_max - tr_fc_pos_first(&enc->hp, Ti);
        const size_t o = (size_t)sg->off[i] * (size_t)d;
        if (!tr_fc_rel_attention(&enc->hp, blk, pool, w->q.p + o, w->k.p + o, w->v.p + o,
                                 w->p.p + (size_t)r0 * d, Pi, Ti, w->h.p + o, &w->att))
            return false;
    }
    tr_nn_linear_fwd(pool, &blk->o, w->h.p, T, w->q.p);
    tr_ew_axpy(pool, x, w->q.p, 1.0f, (long)T * d);
    return true;
}

static void conv_residual(const tr_fc_encoder *enc, const tr_fc_block *blk, tr_pool *pool, float *x,
                          const segs *sg, tr_fc_work *w) {
    const tr_fc_hparams *hp = &enc->hp;
    const int d = hp->d_model, T = sg->rows;
    tr_layer_norm(pool, x, w->h.p, T, d, blk->norm_conv.w, blk->norm_conv.b, FC_LN_EPS);
    tr_nn_linear_fwd(pool, &blk->pw1, w->h.p, T, w->mid.p); /* [T][2d] */
    tr_ew_glu(pool, w->mid.p, w->h.p, T, d);
    for (int i = 0; i < sg->n; i++) {
        const size_t o = (size_t)sg->off[i] * (size_t)d;
        tr_nn_depthwise(pool, &blk->dw, d, hp->conv_kernel, hp->conv_pad_left, w->h.p + o,
                        w->q.p + o, sg->T[i]);
    }
    if (hp->conv_layer_norm)
        tr_layer_norm(pool, w->q.p, w->q.p, T, d, blk->cln_w, blk->cln_b, FC_LN_EPS);
    tr_ew_silu(pool, w->q.p, (long)T * d);
    tr_nn_linear_fwd(pool, &blk->pw2, w->q.p, T, w->h.p);
    tr_ew_axpy(pool, x, w->h.p, 1.0f, (long)T * d);
}

static void speaker_kernel(const tr_fc_encoder *enc, tr_pool *pool, float *x, int T,
                           tr_fc_work *w) {
    const int d = enc->hp.d_model;
    tr_nn_linear_fwd(pool, &enc->spk0, x, T, w->h.p);
    tr_ew_relu(pool, w->h.p, (long)T * d);
    tr_nn_linear_fwd(pool, &enc->spk3, w->h.p, T, w->q.p);
    tr_ew_axpy(pool, x, w->q.p, 1.0f, (long)T * d);
    if (enc->spk_bg) tr_add_bias(x, T, d, enc->spk_bg);
}

static bool reserve_all(const tr_fc_encoder *enc, int T, int P, tr_fc_work *w) {
    const tr_fc_hparams *hp = &enc->hp;
    const size_t Td = (size_t)T * (size_t)hp->d_model;
    size_t wide = (size_t)2 * hp->d_model;
    for (int i = 0; i < hp->n_layers; i++) {
        const tr_fc_block *b = &enc->blocks[i];
        const size_t b1 = (size_t)(hp->d_ff / ff_blocks(hp, b->ff1_w2.w)),
                     b2 = (size_t)(hp->d_ff / ff_blocks(hp, b->ff2_w2.w));
        if (b1 > wide) wide = b1;
        if (b2 > wide) wide = b2;
    }
    return tr_fc_buf_reserve(&w->h, Td) && tr_fc_buf_reserve(&w->q, Td) &&
           tr_fc_buf_reserve(&w->k, Td) && tr_fc_buf_reserve(&w->v, Td) &&
           tr_fc_buf_reserve(&w->mid, (size_t)T * wide) &&
           tr_fc_buf_reserve(&w->pe, (size_t)P * hp->d_model) &&
           tr_fc_buf_reserve(&w->p, (size_t)P * hp->d_model);
}

/* Longest encoder sequence accepted: one head's T x T bias must stay
 * indexable with int rows and far from address-space limits. */
#define FC_MAX_T_ENC 40000

static transcribe_status run_blocks(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                    const segs *sg, int P, float *out, float *pre_out,
                                    tr_fc_abort_fn should_abort, void *abort_user);

/* The forward over segments: mel[i] [n_mels][T_mel[i]] -> out rows of
 * segment i (sg already holds the frame counts and offsets). */
static transcribe_status forward_segs(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                      const float *const *mel, const int *T_mel, const segs *sg,
                                      float *out, float *pre_out, tr_fc_abort_fn should_abort,
                                      void *abort_user) {
    const tr_fc_hparams *hp = &enc->hp;
    const int d = hp->d_model, T = sg->rows;
    const int P = tr_fc_pos_rows(hp, sg->T_max);
    if (!reserve_all(enc, T, P, w)) {
        TR_ERROR("fastconformer: out of memory for %d encoder frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < sg->n; i++)
        if (!tr_fc_pre_encode(enc, pool, mel[i], T_mel[i], out + (size_t)sg->off[i] * d, sg->T[i],
                              &w->pre))
            return TRANSCRIBE_ERR_OOM;
    return run_blocks(enc, pool, w, sg, P, out, pre_out, should_abort, abort_user);
}

/* x-scaling, the speaker kernel and every block over pre-encoded rows
 * (out holds them; buffers reserved for sg and P). */
static transcribe_status run_blocks(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                    const segs *sg, int P, float *out, float *pre_out,
                                    tr_fc_abort_fn should_abort, void *abort_user) {
    const tr_fc_hparams *hp = &enc->hp;
    const int d = hp->d_model, T = sg->rows;
    if (hp->xscaling) tr_ew_scale(pool, out, (float)sqrt((double)d), (long)T * d);
    if (pre_out) memcpy(pre_out, out, sizeof(float) * (size_t)T * d);
    if (enc->spk) speaker_kernel(enc, pool, out, T, w);
    tr_fc_pos_table(pool, w->pe.p, P, d, tr_fc_pos_first(hp, sg->T_max));
    for (int i = 0; i < hp->n_layers; i++) {
        if (should_abort && should_abort(abort_user)) return TRANSCRIBE_ERR_ABORTED;
        const tr_fc_block *blk = &enc->blocks[i];
        ff_half(pool, hp, &blk->norm_ff1, &blk->ff1_w1, &blk->ff1_w2, out, T, w);
        if (!attn_residual(enc, blk, pool, out, sg, P, w)) return TRANSCRIBE_ERR_OOM;
        conv_residual(enc, blk, pool, out, sg, w);
        ff_half(pool, hp, &blk->norm_ff2, &blk->ff2_w1, &blk->ff2_w2, out, T, w);
        tr_layer_norm(pool, out, out, T, d, blk->norm_out.w, blk->norm_out.b, FC_LN_EPS);
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_fc_forward(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                const float *mel, int T_mel, float *out, float *pre_out,
                                tr_fc_abort_fn should_abort, void *abort_user) {
    if (!enc || !w || !mel || !out || T_mel < 1) {
        TR_ERROR("fastconformer: forward: invalid argument (T_mel %d)", T_mel);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int T = tr_fc_out_frames(enc, T_mel);
    if (T > FC_MAX_T_ENC) {
        TR_ERROR("fastconformer: %d encoder frames exceed the limit of %d", T, FC_MAX_T_ENC);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    const int off = 0;
    const segs sg = {1, &T, &off, T, T};
    return forward_segs(enc, pool, w, &mel, &T_mel, &sg, out, pre_out, should_abort, abort_user);
}

transcribe_status tr_fc_forward_batch(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w, int n,
                                      const float *const *mel, const int *T_mel, float *out,
                                      tr_fc_abort_fn should_abort, void *abort_user) {
    if (!enc || !w || !mel || !T_mel || !out || n < 1) {
        TR_ERROR("fastconformer: batch forward: invalid argument (n %d)", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int *T = malloc(2 * (size_t)n * sizeof(int));
    if (!T) return TRANSCRIBE_ERR_OOM;
    int *off = T + n;
    long rows = 0;
    int T_max = 0;
    transcribe_status st = TRANSCRIBE_OK;
    for (int i = 0; i < n && st == TRANSCRIBE_OK; i++) {
        T[i] = mel[i] && T_mel[i] >= 1 ? tr_fc_out_frames(enc, T_mel[i]) : 0;
        off[i] = (int)rows;
        rows += T[i];
        if (T[i] > T_max) T_max = T[i];
        if (T[i] < 1) {
            TR_ERROR("fastconformer: batch forward: utterance %d has no mel frames", i);
            st = TRANSCRIBE_ERR_INVALID_ARG;
        } else if (T[i] > FC_MAX_T_ENC || rows > INT32_MAX / 4) {
            TR_ERROR("fastconformer: batch forward: %ld encoder frames exceed the limit", rows);
            st = TRANSCRIBE_ERR_INPUT_TOO_LONG;
        }
    }
    if (st == TRANSCRIBE_OK) {
        const segs sg = {n, T, off, (int)rows, T_max};
        st = forward_segs(enc, pool, w, mel, T_mel, &sg, out, NULL, should_abort, abort_user);
    }
    free(T);
    return st;
}

transcribe_status tr_fc_pre_encode_rows(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                        const float *mel, int T_mel, float *out) {
    if (!enc || !w || !mel || !out || T_mel < 1) {
        TR_ERROR("fastconformer: pre-encode: invalid argument (T_mel %d)", T_mel);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int T = tr_fc_out_frames(enc, T_mel);
    if (T > FC_MAX_T_ENC) {
        TR_ERROR("fastconformer: %d encoder frames exceed the limit of %d", T, FC_MAX_T_ENC);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return tr_fc_pre_encode(enc, pool, mel, T_mel, out, T, &w->pre) ? TRANSCRIBE_OK
                                                                    : TRANSCRIBE_ERR_OOM;
}

transcribe_status tr_fc_forward_rows(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                     float *x, int T, tr_fc_abort_fn should_abort,
                                     void *abort_user) {
    if (!enc || !w || !x || T < 1) {
        TR_ERROR("fastconformer: forward_rows: invalid argument (T %d)", T);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (T > FC_MAX_T_ENC) {
        TR_ERROR("fastconformer: %d encoder frames exceed the limit of %d", T, FC_MAX_T_ENC);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    const int P = tr_fc_pos_rows(&enc->hp, T);
    if (!reserve_all(enc, T, P, w)) {
        TR_ERROR("fastconformer: out of memory for %d encoder frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    const int off = 0;
    const segs sg = {1, &T, &off, T, T};
    return run_blocks(enc, pool, w, &sg, P, x, NULL, should_abort, abort_user);
}
