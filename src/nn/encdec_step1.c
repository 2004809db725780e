/* The one-row encoder-decoder step as one pool run (encdec_step1.h).
 *
 * The pre-LN decoder block of nn.h as a fixed list of phases per layer,
 * claimed and awaited as nn/step_phase.h describes:
 *
 *   qkv     rows of q, k and v (+ biases)       input: self LayerNorm of x
 *   attn    one (row, head) each: rotation, cache write, causal attention
 *   o       rows of o (+ bias); x += row          each row of x has one owner
 *   cq      rows of the cross query (+ bias)    input: cross LayerNorm of x
 *   cattn   one (row, head) each: attention over the sequence's cross K/V
 *   co      rows of the cross output (+ bias); x += row
 *   fc1     rows of fc1 (and its gate: the matching rows of the gate half
 *           of a fused fc1, or of a separate gate weight) + biases, then the
 *           activation (value ⊙ act(gate) when gated)  input: FFN LayerNorm
 *   fc2     rows of fc2 (+ bias); x += row
 *
 * then the head's rows on the final LayerNorm. The LayerNorms are computed
 * by each thread for itself on entering a phase (one row of d_model floats
 * per sequence), the cross-attention reads the sequence's own cross K/V.
 * Each value is computed by the kernels of the general path
 * (tr_matvec_rows is tr_matmul's one-row path, tr_layer_norm, the
 * activation kernels, tr_attention_kv_head is tr_attention's row kernel,
 * tr_rope_head tr_rope's rotation), so the step does not depend on which
 * thread claims which unit. With several sequences each weight block is
 * applied to every sequence's row before the next block, so the weights
 * are streamed once for the whole lockstep step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/encdec_step1.h"
#include "nn/step_phase.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"

enum { P_QKV, P_ATTN, P_O, P_CQ, P_CATTN, P_CO, P_FC1, P_FC2, P_PER_LAYER };

/* A thread's own buffers. */
typedef struct {
    float *h;       /* [R][hs] the normed phase inputs */
    float *prep[3]; /* [R][ms] tr_matvec_prepare of the inputs, per weight */
    float *mv;      /* matrix-vector scratch */
    float *att;     /* attention scratch */
    int ith;        /* the thread's share of every phase */
} part_buf;

typedef struct {
    const tr_ed_decoder *dec;
    const tr_ed_seq *seqs;
    int R, n_parts;
    long D, Wm; /* d_model; floats per row of mid (F, or 2F gated) */
    long hs, ms;
    float *x, *q, *k, *v, *o, *t, *mid, *logits;
    float *cosv, *sinv; /* [R][half] each row's rotation angles */
    int half;
    bool shared_src; /* every row attends over the same cross K/V: one unit per head */
    float scale;
    tr_sp_phase *ph; /* [n_layers * P_PER_LAYER + 1] */
    part_buf *parts;
} step_ctx;

/* Each row's LayerNorm of x into the thread's h (no norm: a copy), prepared
 * for the n weights W; prep[r][i] is row r's input for W[i]. */
static void norm_input(const step_ctx *c, part_buf *pb, const tr_nn_norm *ln, float eps,
                       const tr_tensor *const *W, int n, const float *(*prep)[3]) {
    for (int r = 0; r < c->R; r++) {
        float *h = pb->h + r * c->hs, *buf[3];
        if (ln->w)
            tr_layer_norm(NULL, c->x + r * c->D, h, 1, (int)c->D, ln->w, ln->b, eps);
        else
            memcpy(h, c->x + r * c->D, sizeof(float) * (size_t)c->D);
        for (int i = 0; i < n; i++) buf[i] = pb->prep[i] + r * c->ms;
        tr_sp_prepare(W, n, h, buf, prep[r]);
    }
}

/* Rows r's input in (row stride in_s) prepared for W alone. */
static void plain_input(const step_ctx *c, part_buf *pb, const tr_tensor *W, const float *in,
                        long in_s, const float **col) {
    for (int r = 0; r < c->R; r++) {
        float *buf = pb->prep[0] + r * c->ms;
        tr_sp_prepare(&W, 1, in + r * in_s, &buf, &col[r]);
    }
}

static void add_bias(const step_ctx *c, const float *b, float *y, long ys, long n0, long n1) {
    if (!b) return;
    for (int r = 0; r < c->R; r++)
        for (long n = n0; n < n1; n++) y[r * ys + n] += b[n];
}

/* Rows [n0, n1) of l for every row's input (row r at in + r * in_s,
 * prepared col[r]) into y + r * ys, biased. */
static void lin_rows(const step_ctx *c, const tr_nn_linear *l, long n0, long n1, const float *in,
                     long in_s, const float *const *col, float *y, long ys, part_buf *pb) {
    tr_sp_rows_range(c->R, l->w, n0, n1, in, in_s, col, y, ys, pb->mv);
    add_bias(c, l->b, y, ys, n0, n1);
}

/* Units [u0, u1) of l as rows, then x[r][n] += y[r][n] over them. */
static void residual_units(const step_ctx *c, const tr_nn_linear *l, int u0, int u1,
                           const float *in, long in_s, const float *const *col, part_buf *pb) {
    long n0, n1;
    tr_sp_unit_rows(l->w, u0, u1, &n0, &n1);
    lin_rows(c, l, n0, n1, in, in_s, col, c->t, c->D, pb);
    for (int r = 0; r < c->R; r++) {
        float *x = c->x + r * c->D, *t = c->t + r * c->D;
        for (long n = n0; n < n1; n++) x[n] = x[n] + t[n]; /* tr_ew_add's form */
    }
}

/* The common attention arguments of row r, query at q + r * D into o. */
static tr_attn_args attn_args(const step_ctx *c, int r) {
    const tr_nn_dims *d = &c->dec->dims;
    return (tr_attn_args){
        .q = c->q + r * c->D,
        .q_stride = (int)c->D,
        .kv_stride = (int)c->D,
        .out = c->o + r * c->D,
        .out_stride = (int)c->D,
        .n_q = 1,
        .n_head = d->n_head,
        .n_head_kv = d->n_head,
        .head_dim = d->head_dim,
        .scale = c->scale,
    };
}

/* Self-attention of row r, head g in layer l: rotation, the row's K/V into
 * the cache at its position, attention over [0, n_past]. */
static void self_head(const step_ctx *c, int l, int r, int g, part_buf *pb) {
    const tr_nn_dims *d = &c->dec->dims;
    const tr_ed_seq *sg = &c->seqs[r];
    const long hd = d->head_dim, off = (long)g * hd;
    float *qh = c->q + r * c->D + off, *kh = c->k + r * c->D + off, *vh = c->v + r * c->D + off;
    if (c->half > 0) {
        const float *cv = c->cosv + (size_t)r * c->half, *sv = c->sinv + (size_t)r * c->half;
        tr_rope_head(qh, cv, sv, c->half, d->rope.neox);
        tr_rope_head(kh, cv, sv, c->half, d->rope.neox);
    }
    tr_nn_kv_put(sg->kv, l, g, sg->n_past, kh, vh);
    tr_attn_args a = attn_args(c, r);
    a.n_kv = a.kv_valid = sg->n_past + 1;
    a.causal = true;
    a.causal_offset = sg->n_past;
    const uint16_t *k16, *v16;
    tr_nn_kv_view(sg->kv, l, &a, &k16, &v16);
    tr_attention_kv_head(&a, k16, v16, g, pb->att);
}

/* Cross-attention of rows [r, r + n) (one source), head g in layer l over
 * their sequence's source: the source's rows are read once for the n
 * queries (the row kernel takes each query on its own). */
static void cross_head(const step_ctx *c, int l, int r, int n, int g, part_buf *pb) {
    tr_attn_args a = attn_args(c, r);
    a.n_q = n;
    a.n_kv = a.kv_valid = c->seqs[r].n_src;
    const uint16_t *k16, *v16;
    tr_nn_cross_view(&c->seqs[r], l, c->dec->dims.head_dim, &a, &k16, &v16);
    tr_attention_kv_head(&a, k16, v16, g, pb->att);
}

/* Units [u0, u1) of the qkv phase: q's units, then k's, then v's. */
static void qkv_units(const step_ctx *c, const tr_nn_attn *at, int u0, int u1, part_buf *pb,
                      const float *(*pp)[3]) {
    const tr_nn_linear *L[3] = {&at->q, &at->k, &at->v};
    float *y[3] = {c->q, c->k, c->v};
    const float *col[TR_ED_STEP1_MAX];
    long base = 0;
    for (int m = 0; m < 3; m++) {
        const long nu = tr_sp_split_of(L[m]->w, 1).n_units;
        long a = u0 > base ? u0 : base, e = u1 < base + nu ? u1 : base + nu;
        if (a < e) {
            long n0, n1;
            tr_sp_unit_rows(L[m]->w, a - base, e - base, &n0, &n1);
            for (int r = 0; r < c->R; r++) col[r] = pp[r][m];
            lin_rows(c, L[m], n0, n1, pb->h, c->hs, col, y[m], c->D, pb);
        }
        base += nu;
    }
}

/* Units [u0, u1) of the fc1 phase: value and gate rows [n0, n1), then the
 * activation, into mid (value at n, gate at F + n when gated). */
static void fc1_units(const step_ctx *c, const tr_nn_ffn *ffn, int u0, int u1, part_buf *pb,
                      const float *(*pp)[3]) {
    const long F = c->dec->dims.d_ffn;
    long n0 = (long)u0 * TR_SP_UNIT_ROWS, n1 = (long)u1 * TR_SP_UNIT_ROWS;
    if (n1 > F) n1 = F;
    if (n0 >= n1) return;
    const float *col[TR_ED_STEP1_MAX];
    for (int r = 0; r < c->R; r++) col[r] = pp[r][0];
    lin_rows(c, &ffn->fc1, n0, n1, pb->h, c->hs, col, c->mid, c->Wm, pb);
    if (ffn->glu == TR_NN_GLU_FUSED) {
        lin_rows(c, &ffn->fc1, F + n0, F + n1, pb->h, c->hs, col, c->mid, c->Wm, pb);
    } else if (ffn->glu == TR_NN_GLU_SPLIT) {
        for (int r = 0; r < c->R; r++) col[r] = pp[r][1];
        lin_rows(c, &ffn->gate, n0, n1, pb->h, c->hs, col, c->mid + F, c->Wm, pb);
    }
    for (int r = 0; r < c->R; r++) {
        float *m = c->mid + r * c->Wm;
        if (ffn->glu == TR_NN_GLU_NONE) {
            tr_nn_act_apply(ffn->act, m + n0, n1 - n0);
        } else { /* nn_blocks.c's glu_task: gate ← value ⊙ act(gate) */
            tr_nn_act_apply(ffn->act, m + F + n0, n1 - n0);
            for (long n = n0; n < n1; n++) m[F + n] *= m[n];
        }
    }
}

/* Runs phase p: every claimed unit range through fn(c, l, u0, u1, pb, arg),
 * then waits for the phase's end. */
typedef void (*unit_fn)(const step_ctx *c, int l, int u0, int u1, part_buf *pb, void *arg);

static void run_phase(const step_ctx *c, tr_sp_phase *p, int l, part_buf *pb, unit_fn fn,
                      void *arg) {
    int u0, u1;
    while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
        fn(c, l, u0, u1, pb, arg);
        tr_sp_finish(p, u0, u1);
    }
    tr_sp_wait(p);
}

static void heads_self(const step_ctx *c, int l, int u0, int u1, part_buf *pb, void *arg) {
    (void)arg;
    const int H = c->dec->dims.n_head;
    for (int u = u0; u < u1; u++) self_head(c, l, u / H, u % H, pb);
}

static void heads_cross(const step_ctx *c, int l, int u0, int u1, part_buf *pb, void *arg) {
    (void)arg;
    const int H = c->dec->dims.n_head;
    for (int u = u0; u < u1; u++) {
        if (c->shared_src)
            cross_head(c, l, 0, c->R, u, pb);
        else
            cross_head(c, l, u / H, 1, u % H, pb);
    }
}

/* A residual product's claims: arg is {the linear, its input, row stride,
 * prepared inputs}. */
typedef struct {
    const tr_nn_linear *l;
    const float *in;
    long in_s;
    const float *col[TR_ED_STEP1_MAX];
} resid_arg;

static void resid_fn(const step_ctx *c, int l, int u0, int u1, part_buf *pb, void *arg) {
    (void)l;
    const resid_arg *a = arg;
    residual_units(c, a->l, u0, u1, a->in, a->in_s, a->col, pb);
}

/* A residual phase: the inputs prepared by this thread when work is left. */
static void residual_phase(const step_ctx *c, tr_sp_phase *p, const tr_nn_linear *lin,
                           const float *in, long in_s, part_buf *pb) {
    if (tr_sp_has_work(p)) {
        resid_arg a = {.l = lin, .in = in, .in_s = in_s};
        plain_input(c, pb, lin->w, in, in_s, a.col);
        run_phase(c, p, 0, pb, resid_fn, &a);
    } else {
        tr_sp_wait(p);
    }
}

/* A phase on a LayerNorm of x: the inputs normed and prepared for the n
 * weights W by this thread when work is left, then every claimed unit
 * range through fn(c, b, u0, u1, pb, pp). */
typedef void (*normed_fn)(const step_ctx *c, const tr_nn_dec_block *b, int u0, int u1, part_buf *pb,
                          const float *(*pp)[3]);

static void normed_phase(const step_ctx *c, tr_sp_phase *p, const tr_nn_dec_block *b,
                         const tr_nn_norm *ln, const tr_tensor *const *W, int n, part_buf *pb,
                         normed_fn fn) {
    if (tr_sp_has_work(p)) {
        const float *pp[TR_ED_STEP1_MAX][3];
        norm_input(c, pb, ln, c->dec->dims.ln_eps, W, n, pp);
        int u0, u1;
        while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
            fn(c, b, u0, u1, pb, pp);
            tr_sp_finish(p, u0, u1);
        }
    }
    tr_sp_wait(p);
}

static void qkv_fn(const step_ctx *c, const tr_nn_dec_block *b, int u0, int u1, part_buf *pb,
                   const float *(*pp)[3]) {
    qkv_units(c, &b->self, u0, u1, pb, pp);
}

static void cq_fn(const step_ctx *c, const tr_nn_dec_block *b, int u0, int u1, part_buf *pb,
                  const float *(*pp)[3]) {
    const float *col[TR_ED_STEP1_MAX];
    for (int r = 0; r < c->R; r++) col[r] = pp[r][0];
    long n0, n1;
    tr_sp_unit_rows(b->cross.q.w, u0, u1, &n0, &n1);
    lin_rows(c, &b->cross.q, n0, n1, pb->h, c->hs, col, c->q, c->D, pb);
}

static void fc1_fn(const step_ctx *c, const tr_nn_dec_block *b, int u0, int u1, part_buf *pb,
                   const float *(*pp)[3]) {
    fc1_units(c, &b->ffn, u0, u1, pb, pp);
}

static void layer(const step_ctx *c, int l, part_buf *pb) {
    const tr_nn_dec_block *b = &c->dec->blocks[l];
    tr_sp_phase *ph = c->ph + (size_t)l * P_PER_LAYER;
    const tr_tensor *qkv[3] = {b->self.q.w, b->self.k.w, b->self.v.w},
                    *ffn[2] = {b->ffn.fc1.w, b->ffn.gate.w};
    normed_phase(c, &ph[P_QKV], b, &b->ln_self, qkv, 3, pb, qkv_fn);
    run_phase(c, &ph[P_ATTN], l, pb, heads_self, NULL);
    residual_phase(c, &ph[P_O], &b->self.o, c->o, c->D, pb);
    normed_phase(c, &ph[P_CQ], b, &b->ln_cross, &b->cross.q.w, 1, pb, cq_fn);
    run_phase(c, &ph[P_CATTN], l, pb, heads_cross, NULL);
    residual_phase(c, &ph[P_CO], &b->cross.o, c->o, c->D, pb);
    normed_phase(c, &ph[P_FC1], b, &b->ln_ffn, ffn, b->ffn.glu == TR_NN_GLU_SPLIT ? 2 : 1, pb,
                 fc1_fn);
    const long F = c->dec->dims.d_ffn;
    residual_phase(c, &ph[P_FC2], &b->ffn.fc2, c->mid + (b->ffn.glu ? F : 0), c->Wm, pb);
}

static void step_task(void *arg, int ith, int nth) {
    const step_ctx *c = arg;
    const tr_ed_decoder *dec = c->dec;
    part_buf *pb = &c->parts[ith];
    (void)nth;
    for (int l = 0; l < dec->n_layers; l++) layer(c, l, pb);
    tr_sp_phase *p = &c->ph[(size_t)dec->n_layers * P_PER_LAYER];
    if (!tr_sp_has_work(p)) return;
    const float *pp[TR_ED_STEP1_MAX][3], *col[TR_ED_STEP1_MAX];
    norm_input(c, pb, &dec->out_norm, dec->norm_eps, &dec->head.w, 1, pp);
    for (int r = 0; r < c->R; r++) col[r] = pp[r][0];
    int u0, u1;
    while (tr_sp_claim(p, pb->ith, &u0, &u1)) {
        long n0, n1;
        tr_sp_unit_rows(dec->head.w, u0, u1, &n0, &n1);
        lin_rows(c, &dec->head, n0, n1, pb->h, c->hs, col, c->logits, dec->n_vocab, pb);
        tr_sp_finish(p, u0, u1);
    }
    /* the pool returns once every part is done */
}

/* ---- plan ---- */

static bool lin_ok(tr_pool *pool, const tr_nn_linear *l) {
    return l->w && tr_matvec_check(pool, l->w);
}

static bool weights_ok(tr_pool *pool, const tr_ed_decoder *dec) {
    if (!lin_ok(pool, &dec->head)) return false;
    for (int l = 0; l < dec->n_layers; l++) {
        const tr_nn_dec_block *b = &dec->blocks[l];
        const tr_nn_linear *L[8] = {&b->self.q,  &b->self.k,  &b->self.v,  &b->self.o,
                                    &b->cross.q, &b->cross.o, &b->ffn.fc1, &b->ffn.fc2};
        for (int i = 0; i < 8; i++)
            if (!lin_ok(pool, L[i])) return false;
        if (b->ffn.glu == TR_NN_GLU_SPLIT && !lin_ok(pool, &b->ffn.gate)) return false;
    }
    return true;
}

/* The phases of layer l (ph[0, P_PER_LAYER)) for R rows. */
static void set_layer_phases(tr_sp_phase *ph, const tr_nn_dec_block *b, const tr_nn_dims *d, int R,
                             bool shared_src) {
    const tr_sp_split q = tr_sp_split_of(b->self.q.w, 1), k = tr_sp_split_of(b->self.k.w, 1),
                      v = tr_sp_split_of(b->self.v.w, 1), heads = {0, 0};
    tr_sp_phase_set(&ph[P_QKV], q.n_units + k.n_units + v.n_units, q);
    tr_sp_phase_set(&ph[P_ATTN], (long)R * d->n_head, heads);
    tr_sp_phase_set(&ph[P_O], tr_sp_split_of(b->self.o.w, 1).n_units,
                    tr_sp_split_of(b->self.o.w, 1));
    tr_sp_phase_set(&ph[P_CQ], tr_sp_split_of(b->cross.q.w, 1).n_units,
                    tr_sp_split_of(b->cross.q.w, 1));
    tr_sp_phase_set(&ph[P_CATTN], (shared_src ? 1L : (long)R) * d->n_head, heads);
    tr_sp_phase_set(&ph[P_CO], tr_sp_split_of(b->cross.o.w, 1).n_units,
                    tr_sp_split_of(b->cross.o.w, 1));
    /* fc1: units over the F value rows, each also reading its gate row */
    tr_sp_split f = tr_sp_split_of(b->ffn.fc1.w, b->ffn.glu == TR_NN_GLU_NONE ? 1 : 2);
    f.n_units = (d->d_ffn + TR_SP_UNIT_ROWS - 1) / TR_SP_UNIT_ROWS;
    tr_sp_phase_set(&ph[P_FC1], f.n_units, f);
    tr_sp_phase_set(&ph[P_FC2], tr_sp_split_of(b->ffn.fc2.w, 1).n_units,
                    tr_sp_split_of(b->ffn.fc2.w, 1));
}

bool tr_ed_step1(tr_pool *pool, const tr_ed_decoder *dec, int R, const tr_ed_seq *seqs, float *x,
                 float *scratch, float *logits) {
    const tr_nn_dims *d = &dec->dims;
    if (R < 1 || R > TR_ED_STEP1_MAX || !weights_ok(pool, dec)) return false;
    const int n_parts = tr_pool_n_threads(pool), n_ph = dec->n_layers * P_PER_LAYER + 1;
    const long D = d->d_model, F = d->d_ffn, Wm = d->glu ? 2 * F : F;
    const long hs = (D + 15) / 16 * 16, ms = ((D > F ? D : F) + 16 + 15) / 16 * 16,
               att = (tr_attention_kv_head_floats(d->head_dim) + 15) / 16 * 16;
    const long per_part = R * (hs + 3 * ms) + ms + att;
    const int n_rot = d->rope.n_rot < d->head_dim ? d->rope.n_rot : d->head_dim,
              half = n_rot > 0 ? n_rot / 2 : 0;
    /* one block: phases, their shares, then the parts' floats, then the angles */
    const size_t ph_bytes = sizeof(tr_sp_phase) * (size_t)n_ph + tr_sp_shares_size(n_ph, n_parts),
                 fl = (size_t)(per_part * n_parts) + 2 * (size_t)half * (size_t)R,
                 total = (ph_bytes + sizeof(float) * fl + 63) / 64 * 64;
    void *mem = aligned_alloc(64, total);
    part_buf *parts = malloc(sizeof(part_buf) * (size_t)n_parts);
    if (!mem || !parts) {
        free(mem);
        free(parts);
        return false;
    }
    step_ctx c = {
        .dec = dec,
        .seqs = seqs,
        .R = R,
        .n_parts = n_parts,
        .D = D,
        .Wm = Wm,
        .hs = hs,
        .ms = ms,
        .x = x,
        .q = scratch,
        .k = scratch + R * D,
        .v = scratch + 2 * R * D,
        .o = scratch + 3 * R * D,
        .t = scratch + 4 * R * D,
        .mid = scratch + 5 * R * D,
        .logits = logits,
        .half = half,
        .scale = 1.0f / sqrtf((float)d->head_dim),
        .ph = mem,
        .parts = parts,
    };
    float *fm = (float *)((char *)mem + ph_bytes);
    for (int p = 0; p < n_parts; p++, fm += per_part) {
        parts[p].h = fm;
        for (int i = 0; i < 3; i++) parts[p].prep[i] = fm + R * hs + i * R * ms;
        parts[p].mv = fm + R * (hs + 3 * ms);
        parts[p].att = parts[p].mv + ms;
        parts[p].ith = p;
    }
    c.cosv = fm;
    c.sinv = fm + (size_t)half * R;
    for (int r = 0; r < R; r++) /* tr_rope's angles */
        for (int i = 0; i < half; i++) {
            double ang = (double)seqs[r].n_past * pow((double)d->rope.theta, -2.0 * i / n_rot);
            c.cosv[(size_t)r * half + i] = (float)cos(ang);
            c.sinv[(size_t)r * half + i] = (float)sin(ang);
        }
    c.shared_src = true; /* the lockstep rows of one utterance (Whisper's fallback tiers) */
    for (int r = 1; r < R; r++) {
        const tr_ed_seq *a = &seqs[0], *b = &seqs[r];
        if (a->ck != b->ck || a->cv != b->cv || a->ck16 != b->ck16 || a->cv16 != b->cv16 ||
            a->n_src != b->n_src || a->cross_stride != b->cross_stride ||
            a->cross_rows != b->cross_rows)
            c.shared_src = false;
    }
    void *shares = (char *)mem + sizeof(tr_sp_phase) * (size_t)n_ph;
    for (int i = 0; i < n_ph; i++) tr_sp_phase_bind(&c.ph[i], shares, n_ph, i, n_parts);
    for (int l = 0; l < dec->n_layers; l++)
        set_layer_phases(c.ph + (size_t)l * P_PER_LAYER, &dec->blocks[l], d, R, c.shared_src);
    tr_sp_phase_set(&c.ph[n_ph - 1], logits ? tr_sp_split_of(dec->head.w, 1).n_units : 0,
                    tr_sp_split_of(dec->head.w, 1));
    tr_pool_run(pool, step_task, &c);
    if (dec->out_norm.w)
        tr_layer_norm(NULL, x, x, R, (int)D, dec->out_norm.w, dec->out_norm.b, dec->norm_eps);
    free(mem);
    free(parts);
    return true;
}
