/* FastConformer forward pass (docs/formats/parakeet.md §7): pre-encode, optional
 * x-scaling, the positional table for this T, then n_layers Conformer blocks
 * in place on the output buffer. All scratch is one arena in tr_fc_work,
 * grown on demand (or sized up front, tr_fc_work_reserve) and carved per
 * pass, so repeated runs of similar length allocate nothing and the stages
 * share memory: the pre-encode's buffers are the blocks', and between
 * calls the caller may borrow all of it (tr_fc_work_borrow).
 *
 * The blocks' layout (T rows, d = d_model, P positional rows):
 *   pe   the positional table, packed once per pass for the linear_pos
 *        products (tr_matmul_lhs_pack_into), read by every block
 *   h    [T][d]: a LayerNorm's output, then what the stage computes from it
 *   rest one region each stage reuses: the feed-forward's hidden columns
 *        mid [T][<= 2d] (d_ff in blocks) and its sum q [T][d]; the conv's
 *        mid [T][2d] and q; the attention's packed h, one group of heads'
 *        q, k, v, qv [T][g*dh], positional rows [P][g*dh], [g][T][T] bias
 *        and the per-thread BD scratch (the attention output lands in h,
 *        free once h is packed). */
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
    float *arena; /* 64-byte aligned */
    size_t n;     /* floats */
    int pre_chunk;
    size_t bias_budget;
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

/* The arena holds at least n floats afterwards (contents not kept). */
static bool arena_reserve(tr_fc_work *w, size_t n) {
    if (n <= w->n) return true;
    free(w->arena);
    w->arena = NULL;
    w->n = 0;
    n = (n + 15) / 16 * 16;
    if (n > SIZE_MAX / sizeof(float) / 2) return false;
    w->arena = aligned_alloc(64, n * sizeof(float));
    if (!w->arena) return false;
    w->n = n;
    return true;
}

tr_fc_work *tr_fc_work_new(void) {
    tr_fc_work *w = calloc(1, sizeof *w);
    if (!w) {
        TR_ERROR("fastconformer: out of memory for the work area");
        return NULL;
    }
    w->bias_budget = TR_FC_BIAS_BUDGET;
    return w;
}

void tr_fc_work_set_pre_chunk(tr_fc_work *w, int frames) {
    if (w) w->pre_chunk = frames;
}

void tr_fc_work_set_bias_budget(tr_fc_work *w, size_t bytes) {
    if (w) w->bias_budget = bytes;
}

void tr_fc_work_free(tr_fc_work *w) {
    if (!w) return;
    free(w->arena);
    free(w);
}

size_t tr_fc_work_bytes(const tr_fc_work *w) {
    return w ? w->n * sizeof(float) : 0;
}

float *tr_fc_work_borrow(tr_fc_work *w, size_t floats) {
    if (!w || !arena_reserve(w, floats)) return NULL;
    return w->arena;
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

/* Heads per attention group for segments of at most T frames: as many
 * [T][T] biases as fit in the budget, at least one. */
static int head_group(const tr_fc_hparams *hp, size_t budget, int T) {
    const size_t fit = budget / ((size_t)T * (size_t)T * sizeof(float));
    return fit < 1 ? 1 : fit > (size_t)hp->n_heads ? hp->n_heads : (int)fit;
}

static size_t r16(size_t n) {
    return (n + 15) / 16 * 16;
}

/* The blocks' carving of the arena for rows frames (segments of at most
 * T_max), P positional rows; sizes in floats, each a multiple of 16. */
typedef struct blk_plan {
    size_t pe, h, rest;
    size_t mid, q, k;                  /* feed-forward / conv / speaker kernel: rest */
    size_t hp, qg, pg, bias, bd, pack; /* attention: rest (qg: one of q, k, v, qv) */
    size_t att;                        /* a separate output where h cannot be packed */
    bool pe_packed, h_packed;
    int G, wide, nff;
} blk_plan;

static bool same_types(const tr_fc_encoder *enc, bool pos) {
    const tr_fc_block *b0 = &enc->blocks[0];
    for (int i = 0; i < enc->hp.n_layers; i++) {
        const tr_fc_block *b = &enc->blocks[i];
        if (pos ? b->pos.type != b0->pos.type
                : b->q.w->type != b0->q.w->type || b->k.w->type != b0->q.w->type ||
                      b->v.w->type != b0->q.w->type)
            return false;
    }
    return true;
}

/* The attention's share of rest for groups of G heads. */
static void plan_attention(const tr_fc_hparams *hp, blk_plan *b, size_t T, int T_max, int P,
                           int G) {
    const size_t dh = (size_t)(hp->d_model / hp->n_heads);
    b->G = G;
    b->qg = r16(T * (size_t)G * dh);
    b->pg = r16((size_t)P * (size_t)G * dh);
    b->bias = r16((size_t)G * (size_t)T_max * (size_t)T_max);
    b->bd = r16(tr_fc_bd_floats(hp, T_max, P));
    const tr_attn_args pa = {.n_q = T_max, .n_kv = T_max, .n_head = G, .head_dim = (int)dh};
    b->pack = r16(tr_attention_pack_floats(&pa));
}

static size_t attention_floats(const blk_plan *b, int nth) {
    return b->hp + b->att + 4 * b->qg + b->pg + b->bias + b->bd * (size_t)nth + b->pack;
}

static blk_plan plan_blocks(const tr_fc_encoder *enc, size_t budget, int nth, int rows, int T_max,
                            int P) {
    const tr_fc_hparams *hp = &enc->hp;
    const size_t d = (size_t)hp->d_model, T = (size_t)rows;
    blk_plan b = {0};
    b.wide = 2 * hp->d_model;
    b.nff = 1;
    for (int i = 0; i < hp->n_layers; i++) {
        const tr_fc_block *k = &enc->blocks[i];
        const int n1 = ff_blocks(hp, k->ff1_w2.w), n2 = ff_blocks(hp, k->ff2_w2.w);
        const int n = n1 > n2 ? n1 : n2;
        if (hp->d_ff / n1 > b.wide) b.wide = hp->d_ff / n1;
        if (hp->d_ff / n2 > b.wide) b.wide = hp->d_ff / n2;
        if (n > b.nff) b.nff = n;
    }
    const size_t pe_lhs = tr_matmul_lhs_floats(P, (int)d),
                 h_lhs = tr_matmul_lhs_floats(rows, (int)d);
    b.pe_packed = pe_lhs > 0 && same_types(enc, true);
    b.h_packed = h_lhs > 0 && same_types(enc, false);
    b.pe = r16(b.pe_packed ? pe_lhs : (size_t)P * d);
    b.h = r16(T * d);
    b.mid = r16(T * (size_t)b.wide);
    b.q = r16(T * d);
    b.k = b.nff > 2 ? b.q : 0;
    b.hp = b.h_packed ? r16(h_lhs) : 0;
    b.att = b.h_packed ? 0 : r16(T * d);
    const size_t ff = b.mid + b.q + b.k;
    /* as many heads per group as the bias budget takes, but no more than
     * keep the attention within the feed-forward's share or one head's: the
     * arena then grows with T alone, so sizing it for the longest pass
     * (tr_fc_work_reserve) covers every shorter one */
    plan_attention(hp, &b, T, T_max, P, 1);
    const size_t one = attention_floats(&b, nth), cap = ff > one ? ff : one;
    for (int G = head_group(hp, budget, T_max); G > 1; G--) {
        plan_attention(hp, &b, T, T_max, P, G);
        if (attention_floats(&b, nth) <= cap) break;
    }
    if (attention_floats(&b, nth) > cap) plan_attention(hp, &b, T, T_max, P, 1);
    const size_t table = r16((size_t)P * d); /* the raw table, before it is packed */
    const size_t proj = b.hp + b.att + b.q;  /* linear_out's product, after the packed h */
    b.rest = cap > table ? cap : table;
    if (proj > b.rest) b.rest = proj;
    return b;
}

typedef struct blk_bufs {
    float *pe, *h, *rest;
    tr_mm_lhs *pe_lhs; /* pe packed, or NULL (pe raw) */
    const blk_plan *pl;
} blk_bufs;

/* x += 0.5 * W2 SiLU(W1 LN(x) + b1) + b2, hidden columns in blocks (ff_blocks):
 * block 0's product lands in q, the middle blocks' in k and the last one's
 * in h (free once its W1 product is made), each added into q */
static void ff_half(tr_pool *pool, const tr_fc_hparams *hp, const tr_nn_norm *ln,
                    const tr_nn_linear *w1, const tr_nn_linear *w2, float *x, int T,
                    const blk_bufs *B) {
    const int d = hp->d_model, d_ff = hp->d_ff, n = ff_blocks(hp, w2->w), blk = d_ff / n;
    float *h = B->h, *mid = B->rest, *q = mid + B->pl->mid, *k = q + B->pl->q;
    tr_layer_norm(pool, x, h, T, d, ln->w, ln->b, FC_LN_EPS);
    for (int j = 0; j < n; j++) {
        tr_tensor v1 = *w1->w, v2 = *w2->w;
        v1.ne[1] = blk;
        v1.data = (const uint8_t *)w1->w->data + (size_t)j * blk * w1->w->nb1;
        v2.ne[0] = blk;
        v2.data = (const uint8_t *)w2->w->data + tr_row_bytes(v2.type, (int64_t)j * blk);
        tr_matmul(pool, &v1, w1->b ? w1->b + (size_t)j * blk : NULL, h, T, d, mid, blk);
        tr_ew_silu(pool, mid, (long)T * blk);
        float *y = j == 0 ? q : j == n - 1 ? h : k;
        tr_matmul(pool, &v2, j == 0 ? w2->b : NULL, mid, T, blk, y, d);
        if (j > 0) tr_ew_add(pool, q, y, (long)T * d);
    }
    tr_ew_axpy(pool, x, q, 0.5f, (long)T * d);
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

/* A weight's rows [r0, r0 + n) (output columns), a view of the same bytes. */
static tr_tensor rows_view(const tr_tensor *w, int r0, int n) {
    tr_tensor v = *w;
    v.ne[1] = n;
    v.data = (const uint8_t *)w->data + (size_t)r0 * w->nb1;
    return v;
}

/* Y = X W^T + b from X packed (lhs) or, lhs NULL, X itself. */
static void lin(tr_pool *pool, const tr_tensor *W, const float *b, const tr_mm_lhs *lhs,
                const float *X, int rows, float *Y, int ldy) {
    if (lhs)
        tr_matmul_lhs(pool, W, b, lhs, Y, ldy);
    else
        tr_matmul(pool, W, b, X, rows, (int)W->ne[0], Y, ldy);
}

/* The attention residual, one group of heads at a time: h = LN(x) packed
 * once, then per group its q, k, v and positional columns (rows of the
 * weights), the BD bias and the attention into h's columns of the group. */
static bool attn_residual(const tr_fc_encoder *enc, const tr_fc_block *blk, tr_pool *pool, float *x,
                          const segs *sg, int P, const blk_bufs *B) {
    const tr_fc_hparams *hp = &enc->hp;
    const blk_plan *pl = B->pl;
    const int d = hp->d_model, T = sg->rows, H = hp->n_heads, dh = d / H;
    tr_layer_norm(pool, x, B->h, T, d, blk->norm_attn.w, blk->norm_attn.b, FC_LN_EPS);
    float *r = B->rest;
    tr_mm_lhs *hl = NULL;
    if (pl->h_packed) {
        hl = tr_matmul_lhs_pack_into(pool, B->h, d, T, d, blk->q.w->type, r);
        if (!hl) {
            TR_ERROR("fastconformer: out of memory for the attention over %d frames", T);
            return false;
        }
    }
    float *att = hl ? B->h : r + pl->hp; /* h is free once packed */
    float *qg = r + pl->hp + pl->att, *kg = qg + pl->qg, *vg = kg + pl->qg, *qv = vg + pl->qg;
    float *pg = qv + pl->qg, *bias = pg + pl->pg, *bd = bias + pl->bias;
    float *pack = bd + pl->bd * (size_t)tr_pool_n_threads(pool);
    const int first_max = tr_fc_pos_first(hp, sg->T_max);
    for (int h0 = 0; h0 < H; h0 += pl->G) {
        const int g = H - h0 < pl->G ? H - h0 : pl->G, ld = g * dh, c0 = h0 * dh;
        const tr_tensor wq = rows_view(blk->q.w, c0, ld), wk = rows_view(blk->k.w, c0, ld),
                        wv = rows_view(blk->v.w, c0, ld), wp = rows_view(&blk->pos, c0, ld);
        lin(pool, &wq, blk->q.b ? blk->q.b + c0 : NULL, hl, B->h, T, qg, ld);
        lin(pool, &wk, blk->k.b ? blk->k.b + c0 : NULL, hl, B->h, T, kg, ld);
        lin(pool, &wv, blk->v.b ? blk->v.b + c0 : NULL, hl, B->h, T, vg, ld);
        lin(pool, &wp, NULL, B->pe_lhs, B->pe, P, pg, ld);
        for (int i = 0; i < sg->n; i++) {
            /* the table row of position pos0 is first_max - pos0 (rows are
             * positions counting down), so a shorter segment reads a sub-range */
            const int Ti = sg->T[i], Pi = tr_fc_pos_rows(hp, Ti);
            const int r0 = first_max - tr_fc_pos_first(hp, Ti);
            const size_t o = (size_t)sg->off[i] * (size_t)ld;
            tr_fc_rel_attention_group(
                hp, blk, pool, h0, g, qg + o, kg + o, vg + o, pg + (size_t)r0 * ld, Pi, Ti,
                att + (size_t)sg->off[i] * (size_t)d, qv + o, bias, bd, pack, pl->pack);
        }
    }
    tr_matmul_lhs_free(hl);
    /* the packed h and the groups' rows are dead: the projection goes to rest */
    tr_nn_linear_fwd(pool, &blk->o, att, T, r + pl->hp + pl->att);
    tr_ew_axpy(pool, x, r + pl->hp + pl->att, 1.0f, (long)T * d);
    return true;
}

static void conv_residual(const tr_fc_encoder *enc, const tr_fc_block *blk, tr_pool *pool, float *x,
                          const segs *sg, const blk_bufs *B) {
    const tr_fc_hparams *hp = &enc->hp;
    const int d = hp->d_model, T = sg->rows;
    float *h = B->h, *mid = B->rest, *q = mid + B->pl->mid;
    tr_layer_norm(pool, x, h, T, d, blk->norm_conv.w, blk->norm_conv.b, FC_LN_EPS);
    tr_nn_linear_fwd(pool, &blk->pw1, h, T, mid); /* [T][2d] */
    tr_ew_glu(pool, mid, h, T, d);
    for (int i = 0; i < sg->n; i++) {
        const size_t o = (size_t)sg->off[i] * (size_t)d;
        tr_nn_depthwise(pool, &blk->dw, d, hp->conv_kernel, hp->conv_pad_left, h + o, q + o,
                        sg->T[i]);
    }
    if (hp->conv_layer_norm) tr_layer_norm(pool, q, q, T, d, blk->cln_w, blk->cln_b, FC_LN_EPS);
    tr_ew_silu(pool, q, (long)T * d);
    tr_nn_linear_fwd(pool, &blk->pw2, q, T, h);
    tr_ew_axpy(pool, x, h, 1.0f, (long)T * d);
}

static void speaker_kernel(const tr_fc_encoder *enc, tr_pool *pool, float *x, int T,
                           const blk_bufs *B) {
    const int d = enc->hp.d_model;
    float *q = B->rest + B->pl->mid;
    tr_nn_linear_fwd(pool, &enc->spk0, x, T, B->h);
    tr_ew_relu(pool, B->h, (long)T * d);
    tr_nn_linear_fwd(pool, &enc->spk3, B->h, T, q);
    tr_ew_axpy(pool, x, q, 1.0f, (long)T * d);
    if (enc->spk_bg) tr_add_bias(x, T, d, enc->spk_bg);
}

/* Floats the blocks need for sg (rows, T_max) and P. */
static size_t blocks_floats(const tr_fc_encoder *enc, const tr_fc_work *w, tr_pool *pool, int rows,
                            int T_max, int P) {
    const blk_plan pl = plan_blocks(enc, w->bias_budget, tr_pool_n_threads(pool), rows, T_max, P);
    return pl.pe + pl.h + pl.rest;
}

/* Longest encoder sequence accepted: one head's T x T bias must stay
 * indexable with int rows and far from address-space limits. */
#define FC_MAX_T_ENC 40000

static transcribe_status run_blocks(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                    const segs *sg, float *out, float *pre_out,
                                    tr_fc_abort_fn should_abort, void *abort_user);

/* The forward over segments: mel[i] [n_mels][T_mel[i]] -> out rows of
 * segment i (sg already holds the frame counts and offsets). */
static transcribe_status forward_segs(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                      const float *const *mel, const int *T_mel, const segs *sg,
                                      float *out, float *pre_out, tr_fc_abort_fn should_abort,
                                      void *abort_user, bool blocks) {
    const int d = enc->hp.d_model;
    for (int i = 0; i < sg->n; i++) {
        const size_t n = tr_fc_pre_floats(enc, T_mel[i], sg->T[i], w->pre_chunk);
        if (!n) return TRANSCRIBE_ERR_INVALID_ARG;
        if (!arena_reserve(w, n)) {
            TR_ERROR("fastconformer: out of memory for the pre-encode of %d mel frames", T_mel[i]);
            return TRANSCRIBE_ERR_OOM;
        }
        if (!tr_fc_pre_encode_into(enc, pool, mel[i], T_mel[i], out + (size_t)sg->off[i] * d,
                                   sg->T[i], w->pre_chunk, w->arena))
            return TRANSCRIBE_ERR_OOM;
    }
    return blocks ? run_blocks(enc, pool, w, sg, out, pre_out, should_abort, abort_user)
                  : TRANSCRIBE_OK;
}

/* x-scaling, the speaker kernel and every block over pre-encoded rows (out
 * holds them). */
static transcribe_status run_blocks(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w,
                                    const segs *sg, float *out, float *pre_out,
                                    tr_fc_abort_fn should_abort, void *abort_user) {
    const tr_fc_hparams *hp = &enc->hp;
    const int d = hp->d_model, T = sg->rows, P = tr_fc_pos_rows(hp, sg->T_max);
    const blk_plan pl = plan_blocks(enc, w->bias_budget, tr_pool_n_threads(pool), T, sg->T_max, P);
    if (!arena_reserve(w, pl.pe + pl.h + pl.rest)) {
        TR_ERROR("fastconformer: out of memory for %d encoder frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    blk_bufs B = {w->arena, w->arena + pl.pe, w->arena + pl.pe + pl.h, NULL, &pl};
    if (hp->xscaling) tr_ew_scale(pool, out, (float)sqrt((double)d), (long)T * d);
    if (pre_out) memcpy(pre_out, out, sizeof(float) * (size_t)T * d);
    if (enc->spk) speaker_kernel(enc, pool, out, T, &B);
    /* the table is made in rest (free now) and packed into pe for every block's linear_pos */
    float *table = pl.pe_packed ? B.rest : B.pe;
    tr_fc_pos_table(pool, table, P, d, tr_fc_pos_first(hp, sg->T_max));
    if (pl.pe_packed && !(B.pe_lhs = tr_matmul_lhs_pack_into(pool, table, d, P, d,
                                                             enc->blocks[0].pos.type, B.pe))) {
        TR_ERROR("fastconformer: out of memory for the positional table of %d rows", P);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = TRANSCRIBE_OK;
    for (int i = 0; i < hp->n_layers && st == TRANSCRIBE_OK; i++) {
        if (should_abort && should_abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        const tr_fc_block *blk = &enc->blocks[i];
        ff_half(pool, hp, &blk->norm_ff1, &blk->ff1_w1, &blk->ff1_w2, out, T, &B);
        if (!attn_residual(enc, blk, pool, out, sg, P, &B)) {
            st = TRANSCRIBE_ERR_OOM;
            break;
        }
        conv_residual(enc, blk, pool, out, sg, &B);
        ff_half(pool, hp, &blk->norm_ff2, &blk->ff2_w1, &blk->ff2_w2, out, T, &B);
        tr_layer_norm(pool, out, out, T, d, blk->norm_out.w, blk->norm_out.b, FC_LN_EPS);
    }
    tr_matmul_lhs_free(B.pe_lhs);
    return st;
}

bool tr_fc_work_reserve(const tr_fc_encoder *enc, tr_pool *pool, tr_fc_work *w, int T_max,
                        size_t floats) {
    if (!enc || !w || T_max < 1) return false;
    const int P = tr_fc_pos_rows(&enc->hp, T_max);
    size_t n = blocks_floats(enc, w, pool, T_max, T_max, P);
    const size_t pre = tr_fc_pre_floats(enc, 0, 0, w->pre_chunk); /* any window */
    if (pre > n) n = pre;
    if (floats > n) n = floats;
    return arena_reserve(w, n);
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
    return forward_segs(enc, pool, w, &mel, &T_mel, &sg, out, pre_out, should_abort, abort_user,
                        true);
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
        st = forward_segs(enc, pool, w, mel, T_mel, &sg, out, NULL, should_abort, abort_user, true);
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
    const int off = 0;
    const segs sg = {1, &T, &off, T, T};
    return forward_segs(enc, pool, w, &mel, &T_mel, &sg, out, NULL, NULL, NULL, false);
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
    const int off = 0;
    const segs sg = {1, &T, &off, T, T};
    return run_blocks(enc, pool, w, &sg, x, NULL, should_abort, abort_user);
}
