/* The FastConformer encoder side of Canary and Cohere and a packed group's
 * lockstep decode (nn/fc_encdec.h). */
#include "nn/fc_encdec.h"

#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "util/argmax.h"
#include "util/log.h"

tr_ed_decoder tr_fced_decoder(const tr_fced_dec_parts *p) {
    return (tr_ed_decoder){
        .tok_emb = p->tok_emb,
        .pos = TR_ED_POS_TABLE,
        .pos_table = p->pos_table,
        .emb_norm = p->emb_norm,
        .blocks = p->blocks,
        .n_layers = p->n_layers,
        .dims = {.d_model = p->d_model,
                 .n_head = p->n_heads,
                 .head_dim = p->d_model / p->n_heads,
                 .d_ffn = p->d_ffn,
                 .ln_eps = 1e-5f},
        .out_norm = p->out_norm,
        .norm_eps = 1e-5f,
        .head = p->head,
        .n_vocab = p->n_vocab,
    };
}

transcribe_status tr_fced_read_act(const struct gguf_file *f, const char *who, const char *key,
                                   tr_nn_act *act) {
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str(f, key, &s);
    if (st != TRANSCRIBE_OK) return st;
    if (strcmp(s, "relu") == 0) {
        *act = TR_NN_ACT_RELU;
    } else if (strcmp(s, "silu") == 0 || strcmp(s, "swish") == 0) {
        *act = TR_NN_ACT_SILU;
    } else {
        TR_ERROR("%s: %s '%s' is not supported (relu, silu, swish)", who, key, s);
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_fced_load_dec_blocks(const tr_nn_wsrc *src, const tr_nn_dec_names *names,
                                          int d, int d_ffn, int n_layers, tr_nn_act act,
                                          tr_nn_dec_block **blocks) {
    *blocks = calloc((size_t)n_layers, sizeof **blocks);
    if (!*blocks) return TRANSCRIBE_ERR_OOM;
    if (!tr_nn_load_dec_blocks(src, names, d, d_ffn, n_layers, *blocks)) return TRANSCRIBE_ERR_GGUF;
    for (int i = 0; i < n_layers; i++) (*blocks)[i].ffn.act = act;
    return TRANSCRIBE_OK;
}

void tr_fced_bufs_free(tr_fced_bufs *b) {
    if (b->enc_dec != b->enc_out) free(b->enc_dec);
    free(b->enc_out);
    free(b->cross_k);
    free(b->cross_v);
    free(b->ck16);
    free(b->cv16);
    b->enc_out = b->enc_dec = b->cross_k = b->cross_v = NULL;
    b->ck16 = b->cv16 = NULL;
    b->cap = 0;
}

bool tr_fced_bufs_reserve(tr_fced_bufs *b, const tr_fced *e, size_t T) {
    if (T <= b->cap) return true;
    tr_fced_bufs_free(b);
    const size_t De = (size_t)e->d_enc, Dd = (size_t)e->dec->dims.d_model,
                 L = (size_t)e->dec->n_layers;
    b->enc_out = malloc(T * De * sizeof(float));
    b->enc_dec = e->proj ? malloc(T * Dd * sizeof(float)) : b->enc_out;
    const size_t el = b->f16 ? sizeof(uint16_t) : sizeof(float);
    void *ck = malloc(L * T * Dd * el), *cv = malloc(L * T * Dd * el);
    if (b->f16)
        b->ck16 = ck, b->cv16 = cv;
    else
        b->cross_k = ck, b->cross_v = cv;
    if (!b->enc_out || !b->enc_dec || !ck || !cv) {
        tr_fced_bufs_free(b);
        return false;
    }
    b->cap = T;
    return true;
}

/* The projection (when there is one) and every layer's cross K/V of T
 * encoder rows already in b->enc_out: OK or OOM (logged). */
static transcribe_status project_cross(const tr_fced *e, tr_pool *pool, tr_fced_bufs *b, int T) {
    if (e->proj) tr_nn_linear_fwd(pool, e->proj, b->enc_out, T, b->enc_dec);
    const size_t stride = (size_t)T * (size_t)e->dec->dims.d_model;
    if (!b->f16)
        return tr_ed_cross_kv(pool, e->dec, b->enc_dec, T, b->cross_k, b->cross_v, stride)
                   ? TRANSCRIBE_OK
                   : TRANSCRIBE_ERR_OOM;
    return tr_ed_cross_kv16(pool, e->dec, b->enc_dec, T, b->ck16, b->cv16, stride)
               ? TRANSCRIBE_OK
               : TRANSCRIBE_ERR_OOM;
}

transcribe_status tr_fced_encode(const tr_fced *e, tr_pool *pool, tr_fc_work *work,
                                 const float *mel, int T_mel, tr_fced_bufs *b, int *T_enc,
                                 tr_fc_abort_fn abort_fn, void *abort_user) {
    const int T = tr_fc_out_frames(e->enc, T_mel);
    *T_enc = 0;
    if (T < 1) {
        TR_ERROR("%s: %d mel frames give no encoder frames", e->who, T_mel);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!tr_fced_bufs_reserve(b, e, (size_t)T)) {
        TR_ERROR("%s: out of memory for %d encoder frames", e->who, T);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st =
        tr_fc_forward(e->enc, pool, work, mel, T_mel, b->enc_out, NULL, abort_fn, abort_user);
    if (st == TRANSCRIBE_OK) st = project_cross(e, pool, b, T);
    if (st != TRANSCRIBE_OK) return st;
    *T_enc = T;
    return TRANSCRIBE_OK;
}

tr_ed_seq tr_fced_seq(const tr_fced *e, const tr_fced_bufs *b, tr_nn_kv *kv, const int32_t *ids,
                      int rows, int n_past, int T_enc) {
    return (tr_ed_seq){.rows = rows,
                       .n_past = n_past,
                       .n_src = T_enc,
                       .kv = kv,
                       .ck = b->cross_k,
                       .cv = b->cross_v,
                       .ck16 = b->ck16,
                       .cv16 = b->cv16,
                       .cross_stride = (size_t)T_enc * (size_t)e->dec->dims.d_model,
                       .ids = ids};
}

bool tr_fced_seq_ok(const tr_fced *e, const tr_fced_bufs *b, const int32_t *ids, int rows,
                    int n_past, int T_enc, int n_ctx) {
    return T_enc >= 1 && (size_t)T_enc <= b->cap && tr_ed_seq_ok(e->dec, ids, rows, n_past, n_ctx);
}

bool tr_fced_verify(const tr_fced *e, tr_pool *pool, const tr_fced_bufs *b, tr_nn_kv *kv,
                    const int32_t *ids, int n, int n_past, int T_enc, int n_ctx, float *x,
                    float *scratch, float *logits, int32_t *next) {
    const int V = e->dec->n_vocab;
    if (n < 1 || !tr_fced_seq_ok(e, b, ids, n, n_past, T_enc, n_ctx)) return false;
    for (int i = 0; i < n; i += TR_FCED_VERIFY_ROWS) {
        const int rows = n - i < TR_FCED_VERIFY_ROWS ? n - i : TR_FCED_VERIFY_ROWS;
        const tr_ed_seq seq = tr_fced_seq(e, b, kv, ids + i, rows, n_past + i, T_enc);
        tr_ed_step(pool, e->dec, 1, &seq, x, scratch, NULL);
        tr_ed_head(pool, e->dec, x, rows, logits);
        for (int r = 0; r < rows; r++) next[i + r] = tr_argmax(logits + (size_t)r * V, V);
    }
    return true;
}

transcribe_status
tr_fced_group_mels(tr_fced_group *g, const tr_fced *e,
                   transcribe_status (*mel)(void *user, int idx, float **mel, int *T_mel),
                   void *user, void (*drop)(void *drop_user, int idx, transcribe_status st),
                   void *drop_user) {
    int live = 0;
    for (int j = 0; j < g->n; j++) {
        tr_fced_utt *it = &g->it[j];
        const transcribe_status st = mel(user, it->idx, &it->mel, &it->T_mel);
        if (st == TRANSCRIBE_ERR_OOM) return st;
        it->T = st == TRANSCRIBE_OK ? tr_fc_out_frames(e->enc, it->T_mel) : 0;
        if (it->T < 1) {
            free(it->mel);
            it->mel = NULL;
            drop(drop_user, it->idx, st == TRANSCRIBE_OK ? TRANSCRIBE_ERR_INVALID_ARG : st);
            continue;
        }
        if (live != j) {
            g->it[live] = *it;
            it->mel = NULL;
        }
        live++;
    }
    g->n = live;
    return TRANSCRIBE_OK;
}

bool tr_fced_group_alloc(tr_fced_group *g, const tr_fced *e, int n_ctx, int max_gen, bool kv_f16) {
    g->rows = 0;
    for (int j = 0; j < g->n; j++) {
        g->it[j].off = g->rows;
        g->rows += g->it[j].T;
    }
    const tr_ed_decoder *dec = e->dec;
    g->b.f16 = kv_f16;
    bool ok = tr_fced_bufs_reserve(&g->b, e, (size_t)g->rows);
    for (int j = 0; ok && j < g->n; j++) {
        tr_fced_utt *it = &g->it[j];
        it->out = malloc((size_t)max_gen * sizeof *it->out);
        ok = it->out && tr_nn_kv_init(&it->kv, dec->n_layers, n_ctx, dec->dims.n_head,
                                      dec->dims.head_dim, kv_f16);
    }
    if (!ok)
        TR_ERROR("%s: out of memory for a batch of %d utterances (%d encoder frames)", e->who, g->n,
                 g->rows);
    return ok;
}

transcribe_status tr_fced_group_encode(tr_fced_group *g, const tr_fced *e, tr_pool *pool,
                                       tr_fc_work *work, tr_fc_abort_fn abort_fn,
                                       void *abort_user) {
    const float **mels = malloc((size_t)g->n * sizeof *mels);
    int *T_mel = malloc((size_t)g->n * sizeof *T_mel);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (mels && T_mel) {
        for (int j = 0; j < g->n; j++) {
            mels[j] = g->it[j].mel;
            T_mel[j] = g->it[j].T_mel;
        }
        st = tr_fc_forward_batch(e->enc, pool, work, g->n, mels, T_mel, g->b.enc_out, abort_fn,
                                 abort_user);
    }
    free(mels);
    free(T_mel);
    if (st == TRANSCRIBE_OK) st = project_cross(e, pool, &g->b, g->rows);
    return st;
}

transcribe_status tr_fced_group_decode(tr_fced_group *g, const tr_fced *e, tr_pool *pool,
                                       const tr_ed_greedy_cfg *cfg) {
    const size_t D = (size_t)e->dec->dims.d_model, hd = (size_t)e->dec->dims.head_dim;
    tr_ed_greedy_row *rows = calloc((size_t)g->n, sizeof *rows);
    if (!rows) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < g->n; j++) {
        tr_fced_utt *it = &g->it[j];
        /* the group's cross blocks hold every utterance's rows (g->rows, nn.h):
         * this one's first row of head 0 */
        const size_t off = (size_t)it->off * hd;
        rows[j] = (tr_ed_greedy_row){.kv = &it->kv,
                                     .ck = g->b.cross_k ? g->b.cross_k + off : NULL,
                                     .cv = g->b.cross_v ? g->b.cross_v + off : NULL,
                                     .ck16 = g->b.ck16 ? g->b.ck16 + off : NULL,
                                     .cv16 = g->b.cv16 ? g->b.cv16 + off : NULL,
                                     .cross_stride = (size_t)g->rows * D,
                                     .cross_rows = (size_t)g->rows,
                                     .n_src = it->T,
                                     .out = it->out};
    }
    const transcribe_status st = tr_ed_greedy_batch(pool, e->dec, cfg, rows, g->n);
    for (int j = 0; j < g->n; j++) {
        g->it[j].n_out = rows[j].n_out;
        g->it[j].last = rows[j].last;
        g->it[j].live = rows[j].live;
    }
    free(rows);
    return st;
}

void tr_fced_group_free(tr_fced_group *g) {
    for (int j = 0; j < g->n; j++) {
        free(g->it[j].mel);
        free(g->it[j].out);
        tr_nn_kv_free(&g->it[j].kv);
    }
    tr_fced_bufs_free(&g->b);
    g->n = g->rows = 0;
}

transcribe_status tr_fced_group_run(const int *idx, int k,
                                    transcribe_status (*run)(void *user, tr_fced_group *g),
                                    void *user) {
    tr_fced_utt *it = calloc((size_t)k, sizeof *it);
    if (!it) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < k; j++) it[j].idx = idx[j];
    tr_fced_group g = {.it = it, .n = k};
    const transcribe_status st = run(user, &g);
    tr_fced_group_free(&g);
    free(it);
    return st;
}
