/* The configurable encoder-decoder decoder step (encdec_decoder.h). */
#include <string.h>

#include "nn/dec_pass.h"
#include "nn/encdec_decoder.h"
#include "nn/encdec_step1.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"

bool tr_ed_seq_ok(const tr_ed_decoder *dec, const int32_t *ids, int rows, int n_past, int n_ctx) {
    if (!ids || rows <= 0 || n_past < 0 || n_past + rows > n_ctx) return false;
    for (int i = 0; i < rows; i++)
        if (ids[i] < 0 || ids[i] >= dec->n_vocab) return false;
    return true;
}

bool tr_ed_cross_kv(tr_pool *pool, const tr_ed_decoder *dec, const float *src, int n_src, float *ck,
                    float *cv, size_t stride) {
    for (int l = 0; l < dec->n_layers; l++)
        if (!tr_nn_cross_kv(pool, &dec->blocks[l], &dec->dims, src, n_src, (size_t)n_src, 0,
                            ck + l * stride, cv + l * stride))
            return false;
    return true;
}

bool tr_ed_cross_kv16(tr_pool *pool, const tr_ed_decoder *dec, const float *src, int n_src,
                      uint16_t *ck16, uint16_t *cv16, size_t stride) {
    for (int l = 0; l < dec->n_layers; l++)
        if (!tr_nn_cross_kv16(pool, &dec->blocks[l], &dec->dims, src, n_src, (size_t)n_src, 0,
                              ck16 + l * stride, cv16 + l * stride))
            return false;
    return true;
}

size_t tr_ed_step_scratch(const tr_ed_decoder *dec, int rows, int n_seq) {
    /* the blocks' scratch, reused after them for the gathered last rows */
    size_t blocks = tr_nn_dec_block_scratch(&dec->dims, rows, 0);
    size_t last = (size_t)n_seq * (size_t)dec->dims.d_model;
    return blocks > last ? blocks : last;
}

/* x = E[ids] + position (+ embedding norm) for the rows of each sequence. */
static void embed(tr_pool *pool, const tr_ed_decoder *dec, int n_seq, const tr_ed_seq *seqs,
                  float *x) {
    const int D = dec->dims.d_model;
    int rows = 0;
    for (int q = 0; q < n_seq; rows += seqs[q++].rows) {
        float *xq = x + (size_t)rows * D;
        tr_get_rows(dec->tok_emb, seqs[q].ids, seqs[q].rows, xq);
        if (dec->pos == TR_ED_POS_TABLE)
            tr_add_scaled(xq, xq, dec->pos_table + (size_t)seqs[q].n_past * D, 1.0f,
                          (long)seqs[q].rows * D);
    }
    if (dec->emb_norm.w)
        tr_layer_norm(pool, x, x, rows, D, dec->emb_norm.w, dec->emb_norm.b, dec->norm_eps);
}

/* Sequences seqs[0, n_seq) as one packed pass on x. */
static void pass(tr_pool *pool, const tr_ed_decoder *dec, int n_seq, const tr_ed_seq *seqs,
                 float *x, float *scratch, float *logits) {
    const int D = dec->dims.d_model;
    int rows = 0;
    for (int q = 0; q < n_seq; q++) rows += seqs[q].rows;
    embed(pool, dec, n_seq, seqs, x);
    bool one_row = n_seq <= TR_ED_STEP1_MAX;
    for (int q = 0; q < n_seq && one_row; q++) one_row = seqs[q].rows == 1;
    /* a decode step: one pool run (encdec_step1.h) */
    if (one_row && tr_ed_step1(pool, dec, n_seq, seqs, x, scratch, logits)) return;
    for (int l = 0; l < dec->n_layers; l++)
        tr_nn_dec_block_fwd_segs(pool, &dec->blocks[l], &dec->dims, x, n_seq, seqs, l, scratch);
    if (dec->out_norm.w)
        tr_layer_norm(pool, x, x, rows, D, dec->out_norm.w, dec->out_norm.b, dec->norm_eps);
    if (!logits) return;
    /* each sequence's last row, gathered for one head product */
    float *last = scratch;
    for (int q = 0, r = 0; q < n_seq; q++) {
        r += seqs[q].rows;
        memcpy(last + (size_t)q * D, x + (size_t)(r - 1) * D, (size_t)D * sizeof(float));
    }
    tr_linear(pool, dec->head.w, dec->head.b, last, n_seq, logits);
}

void tr_ed_step(tr_pool *pool, const tr_ed_decoder *dec, int n_seq, const tr_ed_seq *seqs, float *x,
                float *scratch, float *logits) {
    const int D = dec->dims.d_model, V = dec->n_vocab;
    int left = 0;
    for (int q = 0; q < n_seq; q++) left += seqs[q].rows;
    for (int first = 0; first < n_seq;) {
        const int limit = tr_nn_dec_pass_rows(left);
        int k = 0, rows = 0;
        while (first + k < n_seq && (k == 0 || rows + seqs[first + k].rows <= limit))
            rows += seqs[first + k++].rows;
        pass(pool, dec, k, seqs + first, x, scratch, logits ? logits + (size_t)first * V : NULL);
        x += (size_t)rows * D;
        left -= rows;
        first += k;
    }
}

void tr_ed_head(tr_pool *pool, const tr_ed_decoder *dec, const float *rows, int n, float *logits) {
    const int D = dec->dims.d_model, V = dec->n_vocab;
    for (int q = 0; q < n;) {
        const int k = tr_nn_dec_pass_rows(n - q);
        tr_linear(pool, dec->head.w, dec->head.b, rows + (size_t)q * D, k, logits + (size_t)q * V);
        q += k;
    }
}

static size_t lin_bytes(const tr_nn_linear *l) {
    return l->w ? l->w->nbytes : 0;
}

size_t tr_ed_step_weight_bytes(const tr_ed_decoder *dec) {
    size_t n = lin_bytes(&dec->head);
    for (int l = 0; l < dec->n_layers; l++) {
        const tr_nn_dec_block *b = &dec->blocks[l];
        n += lin_bytes(&b->self.q) + lin_bytes(&b->self.k) + lin_bytes(&b->self.v) +
             lin_bytes(&b->self.o) + lin_bytes(&b->cross.q) + lin_bytes(&b->cross.o) +
             lin_bytes(&b->ffn.fc1) + lin_bytes(&b->ffn.fc2) +
             (b->ffn.glu == TR_NN_GLU_SPLIT ? lin_bytes(&b->ffn.gate) : 0);
    }
    return n;
}
