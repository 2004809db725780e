/* Private to the causal-LM files: the per-session state (causal_lm.c owns
 * it) and the single-row decode step (causal_lm_step.c). */
#ifndef TR_NN_CAUSAL_LM_INTERNAL_H
#define TR_NN_CAUSAL_LM_INTERNAL_H

#include "nn/causal_lm.h"

/* A run of consecutive rows of one slot: positions p0 .. p0 + n - 1. */
typedef struct clm_seg {
    int slot, p0, n;
} clm_seg;

typedef struct clm_step1 clm_step1; /* causal_lm_step.c */

/* What one pass of rows through the blocks uses: the LM, the cache (NULL: a
 * bidirectional pass, causal_lm_bidi.c: the rows attend to each other with
 * no mask and nothing is cached), scratch of tr_clm_scratch_floats(rows)
 * floats and one position per row. */
typedef struct clm_pass {
    const tr_clm_hparams *hp;
    const tr_clm_weights *w;
    tr_clm_kv *kv;
    float *scratch;
    int32_t *pos32;
    bool (*should_abort)(void *user); /* polled between blocks; NULL = never */
    void *abort_user;
} clm_pass;

/* Scratch floats of a pass of `rows` rows. */
size_t tr_clm_scratch_floats(const tr_clm_hparams *hp, int rows);
/* Runs the R rows of x through every block (causal_lm.c). The rows are
 * n_seg runs (segs, in row order): a prefill pass has one run per slot, a
 * step one run of one row per batch row; a bidirectional pass (kv NULL)
 * one run at p0 = 0. false when should_abort stopped it between blocks. */
bool tr_clm_blocks_fwd(const clm_pass *ps, tr_pool *pool, float *x, int R, const clm_seg *segs,
                       int n_seg);
/* Final RMSNorm + head on R rows of x → logits [R][n_vocab] (x is
 * overwritten), ÷ logits_scale. */
void tr_clm_head_fwd(const tr_clm_hparams *hp, const tr_clm_weights *w, tr_pool *pool, float *x,
                     int R, float *logits);

struct tr_clm_state {
    tr_clm_hparams hp;
    tr_clm_weights w;
    bool kv_f16;
    tr_clm_kv kv;
    int cap_rows;     /* rows the scratch holds */
    float *scratch;   /* h, q, k, v, o, gate, up, branch for cap_rows rows */
    float *x;         /* step input rows [cap_rows][d_model] */
    float *logits;    /* [cap_rows][n_vocab] */
    int32_t *pos32;   /* [cap_rows] */
    clm_seg *segs;    /* [cap_rows] */
    int n_logit_rows; /* rows of the latest step */
    clm_step1 *step1; /* the one-row step's plan and buffers; NULL until used */
    /* additive input rows per slot (tr_clm_set_input_rows); n_add slots */
    struct clm_add {
        const float *rows;
        int64_t first;
        int n;
    } * add;
    int n_add;
    int window; /* tr_clm_set_window: applied to the cache by every tr_clm_reserve */
    /* Under a window, a verify step's draft rows at positions q >= window overwrite the ring rows
     * of positions q - window, which the steps after a rejected draft still attend to: those ring
     * rows as they were before the verify (causal_lm_ring.c), until the slot's next step says how
     * many rows were accepted. n 0 = nothing kept. */
    struct clm_undo {
        int slot, p0, n; /* the ring rows of positions p0 .. p0 + n - 1 (their old contents) */
        void *k, *v;     /* [layer][kv head][n][head_dim] in the cache's type */
        size_t cap;      /* bytes each of k and v hold */
    } undo;
};

/* Cache offset (elements) of (layer, slot): head 0, position 0. */
static inline size_t tr_clm_kv_base(const tr_clm_kv *kv, int layer, int slot) {
    return ((size_t)layer * kv->n_slot + (size_t)slot) * kv->n_ctx * kv->kv_dim;
}

/* Elements from one KV head's rows to the next's (tr_attn_args.kv_head_stride). */
static inline size_t tr_clm_kv_head_stride(const tr_clm_kv *kv) {
    return (size_t)kv->n_ctx * kv->head_dim;
}

/* Offset from tr_clm_kv_base of head g's row at position pos (its ring row under a window). */
static inline size_t tr_clm_kv_row(const tr_clm_kv *kv, int g, int pos) {
    if (kv->window > 0) pos %= kv->window;
    return (size_t)g * tr_clm_kv_head_stride(kv) + (size_t)pos * kv->head_dim;
}

/* Cache rows [0, n) a one-row step at position pos attends to: pos + 1, at most the window. */
static inline int tr_clm_kv_span(const tr_clm_kv *kv, int pos) {
    return kv->window > 0 && pos + 1 > kv->window ? kv->window : pos + 1;
}

/* Whether a step may feed position pos: inside the cache, or anywhere under a window. */
static inline bool tr_clm_kv_pos_ok(const tr_clm_kv *kv, int64_t pos) {
    return pos >= 0 && (kv->window > 0 || pos < kv->n_ctx);
}

/* Stores n consecutive values of K and of V at off in the cache's type. */
void tr_clm_kv_write(tr_clm_kv *kv, size_t off, const float *k, const float *v, int n);
/* Stores one position's K and V (kv_dim floats each, heads side by side)
 * into each head's row. */
void tr_clm_kv_write_pos(tr_clm_kv *kv, int layer, int slot, int pos, const float *k,
                         const float *v);

/* One decode step of R rows (1 <= R <= TR_CLM_SPEC_ROWS; st->x holds their
 * embeddings) at positions p0 .. p0 + R - 1 of slot, through every block
 * and the head: the whole step in one pool run whose phases (q/k/v,
 * attention per KV head, o, gate/up, down, head) are split into row chunks
 * any thread may take, with a barrier between phases. Row r's logits land
 * in st->logits + r * n_vocab, equal bit for bit to the general path's one-row
 * step at its position (R rows = R one-row steps, weights read once). false
 * on OOM or a weight the matrix-vector rows do not take (the caller then
 * runs the general path, which reports it). */
bool tr_clm_step1(tr_clm_state *st, tr_pool *pool, int p0, int R, int slot);
/* tr_clm_step, with the one-run path for a single row allowed or not (the
 * tests compare the two). */
bool tr_clm_step_path(tr_clm_state *st, tr_pool *pool, const int32_t *ids, const int *pos,
                      const int *slots, int B, int32_t *next, bool one_run);
void tr_clm_step1_free(clm_step1 *s);

/* Before a verify of n rows at p0 in slot: keeps the ring rows its rows p0 + 1 .. p0 + n - 1 will
 * overwrite while they still hold live positions (none without a window or below it). false on
 * OOM (nothing kept). */
bool tr_clm_undo_save(tr_clm_state *st, int slot, int p0, int n);
/* Before a step that feeds position pos of slot: the kept ring rows of the positions after pos
 * (the rejected drafts' rows) are put back, so the cache is what plain one-row steps would have
 * left; then nothing is kept. Another slot's step leaves them. */
void tr_clm_undo_resolve(tr_clm_state *st, int slot, int pos);
/* Drops what is kept (a prefill, a new cache, a new window: the rows no longer belong to it). */
static inline void tr_clm_undo_drop(tr_clm_state *st) {
    st->undo.n = 0;
}
/* Frees the kept rows' buffers. */
void tr_clm_undo_free(tr_clm_state *st);

#endif
