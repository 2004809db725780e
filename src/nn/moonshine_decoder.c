/* The Moonshine decoder shared by moonshine and moonshine_streaming
 * (moonshine_decoder.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nn/greedy.h"
#include "nn/moonshine_decoder.h"
#include "util/argmax.h"
#include "util/log.h"

int tr_msd_rot_dims(int head_dim, float factor) {
    return (int)((float)head_dim * factor) & ~1;
}

/* Block part names (docs/formats/moonshine.md §3.2): LayerNorms without
 * beta, attention without biases, FFNs with biases, fc1 fused [value; gate]. */
static const tr_nn_dec_names k_dec_names = {
    .prefix = "dec.blocks.%d.",
    .ln_self = "norm_self",
    .self_attn = "self_attn",
    .ln_cross = "norm_cross",
    .cross_attn = "cross_attn",
    .ln_ffn = "norm_ffn",
    .out = "out",
    .ffn_up = "ffn.fc1",
    .ffn_down = "ffn.fc2",
};

static const tr_nn_block_opts k_dec_opts = {
    .no_ln_bias = true, .no_attn_bias = true, .fused_glu = true};

enum { DIM_D, DIM_V };

transcribe_status tr_msd_load(const tr_nn_wsrc *src, const tr_msd_cfg *c, tr_msd *out) {
    const int64_t D = TR_NN_DIM(DIM_D), V = TR_NN_DIM(DIM_V);
    const int64_t dims[2] = {[DIM_D] = c->d_model, [DIM_V] = c->n_vocab};
    const tr_nn_wspec top[] = {
        {"dec.token_embd.weight",
         TR_NN_W_TENSOR,
         {D, V},
         2,
         TR_TYPES_LINEAR,
         offsetof(tr_msd, tok_emb)},
        {"dec.final_norm.weight", TR_NN_W_VEC, {D}, 1, 0, offsetof(tr_msd, norm)},
        {"dec.lm_head.weight",
         TR_NN_W_TENSOR,
         {D, V},
         2,
         TR_TYPES_LINEAR,
         offsetof(tr_msd, lm_head)},
    };
    bool ok = tr_nn_load_weights(src, top, c->untied ? 3 : 2, dims, 0, true, out);
    out->blocks = calloc((size_t)c->n_layers, sizeof *out->blocks);
    if (!out->blocks) return TRANSCRIBE_ERR_OOM;
    ok = ok && tr_nn_load_dec_blocks_opt(src, &k_dec_names, &k_dec_opts, c->d_model, c->d_ffn,
                                         c->n_layers, out->blocks);
    if (!ok) return TRANSCRIBE_ERR_GGUF;
    for (int i = 0; i < c->n_layers; i++) out->blocks[i].ffn.act = TR_NN_ACT_SILU;
    if (!c->untied) out->lm_head = out->tok_emb;
    out->rot = tr_msd_rot_dims(c->head_dim, c->rot_factor);
    out->dec = (tr_ed_decoder){
        .tok_emb = out->tok_emb,
        .pos = TR_ED_POS_NONE,
        .blocks = out->blocks,
        .n_layers = c->n_layers,
        .dims = {.d_model = c->d_model,
                 .n_head = c->n_heads,
                 .head_dim = c->head_dim,
                 .d_ffn = c->d_ffn,
                 .ln_eps = 1e-5f,
                 .rope = {out->rot, c->rope_theta, false},
                 .glu = true},
        .out_norm = {out->norm, NULL},
        .norm_eps = 1e-5f,
        .head = {out->lm_head, NULL},
        .n_vocab = c->n_vocab,
    };
    return TRANSCRIBE_OK;
}

void tr_msd_free(tr_msd *d) {
    if (!d) return;
    free(d->blocks);
    d->blocks = NULL;
}

/* rows ids at positions pos.. in one step (x and scratch sized for them);
 * *next gets the argmax after the last. */
static transcribe_status step_rows(const tr_msd_greedy_args *a, const int32_t *ids, int rows,
                                   int pos, float *x, float *scratch, int32_t *next) {
    if (!tr_ed_seq_ok(a->dec, ids, rows, pos, a->kv->n_ctx)) {
        TR_ERROR("moonshine decoder: %d token(s) at position %d do not fit the decoder", rows, pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const tr_ed_seq seq = {.rows = rows,
                           .n_past = pos,
                           .n_src = a->n_src,
                           .kv = a->kv,
                           .ck = a->ck,
                           .cv = a->cv,
                           .ck16 = a->ck16,
                           .cv16 = a->cv16,
                           .cross_stride = a->cross_stride
                                               ? a->cross_stride
                                               : (size_t)a->n_src * (size_t)a->dec->dims.d_model,
                           .ids = ids,
                           .cross_rows = a->cross_rows};
    tr_ed_step(a->pool, a->dec, 1, &seq, x, scratch, a->logits);
    *next = tr_argmax(a->logits, a->dec->n_vocab);
    return TRANSCRIBE_OK;
}

static transcribe_status loop_step(void *user, int32_t tok, int pos, int32_t *next) {
    const tr_msd_greedy_args *a = user;
    return step_rows(a, &tok, 1, pos, a->x, a->scratch, next);
}

/* A verify step's buffers for passes of VERIFY_ROWS rows (the small pass
 * of dec_pass.h: its rows carry the bits of one-row steps). */
enum { VERIFY_ROWS = 4 };
typedef struct verify_ctx {
    const tr_msd_greedy_args *a;
    float *x, *scratch, *logits;
} verify_ctx;

static transcribe_status verify_step_fn(void *user, int32_t tok, int pos, int32_t *next) {
    const verify_ctx *v = user;
    return loop_step((void *)v->a, tok, pos, next);
}

static transcribe_status verify_rows(void *user, const int32_t *toks, int n, int pos,
                                     int32_t *next) {
    const verify_ctx *v = user;
    const tr_msd_greedy_args *a = v->a;
    const int V = a->dec->n_vocab;
    if (!tr_ed_seq_ok(a->dec, toks, n, pos, a->kv->n_ctx)) {
        TR_ERROR("moonshine decoder: %d draft row(s) at position %d do not fit the decoder", n,
                 pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    for (int i = 0; i < n; i += VERIFY_ROWS) {
        const int rows = n - i < VERIFY_ROWS ? n - i : VERIFY_ROWS;
        const tr_ed_seq seq = {.rows = rows,
                               .n_past = pos + i,
                               .n_src = a->n_src,
                               .kv = a->kv,
                               .ck = a->ck,
                               .cv = a->cv,
                               .ck16 = a->ck16,
                               .cv16 = a->cv16,
                               .cross_stride = a->cross_stride ? a->cross_stride
                                                               : (size_t)a->n_src *
                                                                     (size_t)a->dec->dims.d_model,
                               .ids = toks + i,
                               .cross_rows = a->cross_rows};
        tr_ed_step(a->pool, a->dec, 1, &seq, v->x, v->scratch, NULL);
        tr_ed_head(a->pool, a->dec, v->x, rows, v->logits);
        for (int r = 0; r < rows; r++) next[i + r] = tr_argmax(v->logits + (size_t)r * V, V);
    }
    return TRANSCRIBE_OK;
}

/* The start token and the prefix as one prefill step. */
static transcribe_status prefill(const tr_msd_greedy_args *a, int32_t *next) {
    const int n = a->n_prefix > 0 ? a->n_prefix : 0;
    if (n == 0) return step_rows(a, &a->start, 1, 0, a->x, a->scratch, next);
    const size_t D = (size_t)a->dec->dims.d_model;
    int32_t *ids = malloc((size_t)(n + 1) * sizeof *ids);
    float *x = malloc((size_t)(n + 1) * D * sizeof *x);
    float *scratch = malloc(tr_ed_step_scratch(a->dec, n + 1, 1) * sizeof *scratch);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (ids && x && scratch) {
        ids[0] = a->start;
        memcpy(ids + 1, a->prefix, (size_t)n * sizeof *ids);
        st = step_rows(a, ids, n + 1, 0, x, scratch, next);
    }
    free(ids);
    free(x);
    free(scratch);
    return st;
}

transcribe_status tr_msd_greedy(const tr_msd_greedy_args *a, int32_t *out, int *n_out) {
    *n_out = 0;
    if (a->should_abort && a->should_abort(a->abort_user)) return TRANSCRIBE_ERR_ABORTED;
    const int n_pre = a->n_prefix > 0 ? a->n_prefix : 0;
    if (n_pre >= a->gen_cap) {
        TR_ERROR("moonshine decoder: a prefix of %d ids leaves nothing of a %d-token cap", n_pre,
                 a->gen_cap);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int32_t first = 0;
    transcribe_status st = prefill(a, &first);
    if (st != TRANSCRIBE_OK) return st;
    const tr_greedy_cfg cfg = {.eos = a->eos,
                               .max_new = a->gen_cap - n_pre,
                               .max_n_kv = a->kv->n_ctx,
                               .should_abort = a->should_abort,
                               .abort_user = a->abort_user,
                               .on_step = a->on_step,
                               .step_user = a->step_user};
    if (a->spec_k <= 0)
        return tr_greedy_loop(&cfg, loop_step, (void *)a, first, 1 + n_pre, out, n_out);
    const size_t D = (size_t)a->dec->dims.d_model, V = (size_t)a->dec->n_vocab;
    verify_ctx v = {a, malloc(VERIFY_ROWS * D * sizeof(float)),
                    malloc(tr_ed_step_scratch(a->dec, VERIFY_ROWS, 1) * sizeof(float)),
                    malloc(VERIFY_ROWS * V * sizeof(float))};
    if (v.x && v.scratch && v.logits)
        st = tr_greedy_loop_spec(&cfg, verify_step_fn, verify_rows, a->spec_k, &v, first, 1 + n_pre,
                                 out, n_out);
    else
        st = TRANSCRIBE_ERR_OOM;
    free(v.x);
    free(v.scratch);
    free(v.logits);
    return st;
}

/* ---- batches ---- */

bool tr_msd_utt_alloc(tr_msd_utt *u, const tr_msd *d, int max_pos, bool kv_f16, bool cross_f16) {
    const size_t D = (size_t)d->dec.dims.d_model, L = (size_t)d->dec.n_layers;
    const size_t n = L * (size_t)u->T * D;
    if (cross_f16) {
        u->ck16 = malloc(n * sizeof(uint16_t));
        u->cv16 = malloc(n * sizeof(uint16_t));
    } else {
        u->ck = malloc(n * sizeof(float));
        u->cv = malloc(n * sizeof(float));
    }
    u->out = malloc((size_t)max_pos * sizeof(int32_t));
    return (cross_f16 ? u->ck16 && u->cv16 : u->ck && u->cv) && u->out &&
           tr_nn_kv_init(&u->kv, d->dec.n_layers, max_pos, d->dec.dims.n_head, d->dec.dims.head_dim,
                         kv_f16);
}

void tr_msd_utts_free(tr_msd_utt *u, int n) {
    for (int j = 0; j < n; j++) {
        free(u[j].ck);
        free(u[j].cv);
        free(u[j].ck16);
        free(u[j].cv16);
        free(u[j].out);
        tr_nn_kv_free(&u[j].kv);
    }
    memset(u, 0, (size_t)n * sizeof *u);
}

transcribe_status tr_msd_group_encode(tr_msd_utt *u, int *n,
                                      transcribe_status (*encode)(void *user, tr_msd_utt *u),
                                      void *user,
                                      void (*drop)(void *drop_user, int idx, transcribe_status st),
                                      void *drop_user) {
    int live = 0;
    for (int j = 0; j < *n; j++) {
        tr_msd_utt *x = &u[j];
        const transcribe_status st = encode(user, x);
        if (st == TRANSCRIBE_ERR_OOM || st == TRANSCRIBE_ERR_ABORTED) return st;
        if (st != TRANSCRIBE_OK) {
            const int idx = x->idx;
            tr_msd_utts_free(x, 1);
            drop(drop_user, idx, st);
            continue;
        }
        if (live != j) {
            u[live] = *x;
            memset(x, 0, sizeof *x);
        }
        live++;
    }
    *n = live;
    return TRANSCRIBE_OK;
}

transcribe_status tr_msd_greedy_group(tr_pool *pool, const tr_msd *d, int32_t start, int32_t eos,
                                      int max_pos, bool (*should_abort)(void *user),
                                      void *abort_user, tr_msd_utt *u, int n) {
    tr_ed_greedy_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return TRANSCRIBE_ERR_OOM;
    const size_t D = (size_t)d->dec.dims.d_model;
    for (int j = 0; j < n; j++)
        rows[j] = (tr_ed_greedy_row){.kv = &u[j].kv,
                                     .ck = u[j].ck,
                                     .cv = u[j].cv,
                                     .ck16 = u[j].ck16,
                                     .cv16 = u[j].cv16,
                                     .cross_stride = (size_t)u[j].T * D,
                                     .n_src = u[j].T,
                                     .out = u[j].out,
                                     .max_new = u[j].max_new};
    const tr_ed_greedy_cfg cfg = {.prompt = &start,
                                  .n_prompt = 1,
                                  .eos = eos,
                                  .max_new = max_pos,
                                  .max_n_kv = max_pos,
                                  .should_abort = should_abort,
                                  .abort_user = abort_user};
    const transcribe_status st = tr_ed_greedy_batch(pool, &d->dec, &cfg, rows, n);
    for (int j = 0; j < n; j++) {
        u[j].n_out = rows[j].n_out;
        u[j].eos = rows[j].last == eos;
        u[j].live = rows[j].live;
    }
    free(rows);
    return st;
}

transcribe_status tr_msd_group_run(const int *idx, int k,
                                   transcribe_status (*run)(void *user, tr_msd_utt *u, int n),
                                   void *user) {
    tr_msd_utt *u = calloc((size_t)k, sizeof *u);
    if (!u) return TRANSCRIBE_ERR_OOM;
    for (int j = 0; j < k; j++) u[j].idx = idx[j];
    const transcribe_status st = run(user, u, k);
    tr_msd_utts_free(u, k);
    free(u);
    return st;
}
