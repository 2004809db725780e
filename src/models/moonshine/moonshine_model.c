/* Moonshine math: session buffers, the conv stem over raw PCM
 * (docs/formats/moonshine.md §5.1), the encoder blocks with partial rotary
 * positions and the final norm (§5.2–§5.3), the decoder's cross K/V, and
 * one decoder step through nn/encdec_decoder.h (§6.1). Encoder-sized
 * buffers grow with the longest input seen. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/moonshine/moonshine.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/mem.h"
#include "util/log.h"

transcribe_status tr_mn_session_create(const mn_model *m, const tr_session_cfg *cfg,
                                       mn_session **out) {
    *out = NULL;
    mn_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    const mn_hparams *hp = &m->hp;
    s->m = m;
    s->pool = cfg ? cfg->pool : NULL;
    /* docs/formats/moonshine.md §6.1: AUTO and F32 keep an F32 cache (the
     * reference's regime); only an explicit F16 stores F16 */
    s->kv_f16 = cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_F16;
    s->stem_chunk = MN_STEM_CHUNK;
    const size_t D = (size_t)hp->d_model;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, hp->max_pos, m->msd.dec.dims.n_head,
                            m->msd.dec.dims.head_dim, s->kv_f16);
    s->dec_x = malloc(D * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->msd.dec, 1, 1) * sizeof(float));
    s->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    s->last_ids = malloc((size_t)hp->max_pos * sizeof(int32_t));
    s->gn_scale = malloc(2 * D * sizeof(float));
    s->gn_shift = s->gn_scale ? s->gn_scale + D : NULL;
    if (!ok || !s->dec_x || !s->dec_scratch || !s->logits || !s->last_ids || !s->gn_scale) {
        TR_ERROR("moonshine: out of memory allocating session buffers");
        tr_mn_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

/* Bytes of each of the cross K / V for T frames (half floats with an F16
 * cache). */
static size_t cross_bytes(const mn_session *s, size_t T) {
    const mn_hparams *hp = &s->m->hp;
    return (size_t)hp->n_dec_layers * T * (size_t)hp->d_model *
           (s->kv_f16 ? sizeof(uint16_t) : sizeof(float));
}

/* The workspace, unless it is the cross K/V's buffer (alloc_ws). */
static void free_ws(mn_session *s) {
    if ((void *)s->enc_ws != s->cross_buf) tr_mem_big_free(s->enc_ws, s->ws_bytes);
    s->enc_ws = NULL;
}

static void free_enc_bufs(mn_session *s) {
    free(s->stem_out);
    free(s->enc_x);
    free_ws(s);
    tr_mem_big_free(s->cross_buf, 2 * cross_bytes(s, s->cap_frames)); /* K, then V */
    s->stem_out = s->enc_x = s->enc_ws = s->cross_k = s->cross_v = NULL;
    s->cross_buf = NULL;
    s->cross_k16 = s->cross_v16 = NULL;
    s->cap_frames = 0;
}

void tr_mn_session_free(mn_session *s) {
    if (!s) return;
    tr_nn_kv_free(&s->kv);
    free_enc_bufs(s);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->last_ids);
    free(s->gn_scale);
    free(s);
}

int64_t tr_mn_enc_frames(const mn_hparams *hp, int64_t n, int64_t *t1, int64_t *t2) {
    int64_t t[3], L = n;
    for (int j = 0; j < 3; j++) {
        L = L >= hp->ks[j] ? (L - hp->ks[j]) / hp->st[j] + 1 : 0;
        t[j] = L;
    }
    if (t1) *t1 = t[0];
    if (t2) *t2 = t[1];
    return t[2];
}

/* ---- the conv stem, chunk by chunk (docs/formats/moonshine.md §5.1) ----
 *
 * The stem runs frame-major: each convolution is an im2col product against
 * the kernel seen as a [c_out][c_in·k] matrix (tr_matmul reads it as
 * stored, F32 or F16: no widened copy of a whole kernel), and the last one
 * writes the blocks' [T][d] input directly (no transpose). The encoder frames go
 * MN_STEM_CHUNK at a time, each chunk recomputing the few conv 0 / conv 1
 * frames its receptive field shares with the previous one, so the stages
 * and the im2col never grow with the input: they live in the encoder's
 * workspace, which the blocks reuse afterwards. GroupNorm (one group) needs
 * the mean and variance over all of tanh(conv 0) first: a first pass
 * computes conv 0 chunk by chunk for those statistics alone, the second
 * recomputes it (conv 0 is ~2 % of the encoder's work). */

/* Stage extents for encoder frames [f0, f1): conv 1 frames [b0, b0 + n2),
 * conv 0 frames [a0, a0 + n1). */
typedef struct stem_span {
    int64_t b0, n2, a0, n1;
} stem_span;

static stem_span span_of(const mn_hparams *hp, int64_t f0, int64_t f1) {
    stem_span p;
    p.b0 = f0 * hp->st[2];
    p.n2 = (f1 - 1 - f0) * hp->st[2] + hp->ks[2];
    p.a0 = p.b0 * hp->st[1];
    p.n1 = (p.n2 - 1) * hp->st[1] + hp->ks[1];
    return p;
}

/* Workspace floats of the stem's chunks for T encoder frames: a stage
 * region (conv 0's rows, then conv 1's over them) and an im2col region
 * (conv 1's, then conv 2's; also the first pass's row statistics). */
static size_t stem_ws_floats(const mn_hparams *hp, int64_t T, int chunk, size_t *stage) {
    const int64_t c = T < chunk ? T : chunk;
    const stem_span p = span_of(hp, 0, c);
    const size_t d = (size_t)hp->d_model, c1 = (size_t)hp->ch[1];
    const size_t a = (size_t)p.n1 * d, b = (size_t)p.n2 * c1;
    const size_t x1 = (size_t)p.n2 * d * (size_t)hp->ks[1], x2 = (size_t)c * c1 * (size_t)hp->ks[2];
    const size_t st = 4 * (size_t)p.n1 + 2; /* two doubles a row, aligned */
    *stage = (a > b ? a : b) + 1;
    *stage += *stage & 1; /* the statistics (doubles) start 8-byte aligned */
    size_t x = x1 > x2 ? x1 : x2;
    return *stage + (x > st ? x : st);
}

/* Buffers for T encoder frames: the encoder rows and the cross K/V grow
 * with the longest input; the workspace (stem chunks, then the blocks'
 * scratch) is the encoder's alone, allocated per encode. */
static bool grow_enc_bufs(mn_session *s, int64_t T) {
    if ((size_t)T <= s->cap_frames) return true;
    const mn_hparams *hp = &s->m->hp;
    free_enc_bufs(s);
    const size_t D = (size_t)hp->d_model;
    s->enc_x = malloc(D * (size_t)T * sizeof(float));
    /* written whole by every encode, and freed after every run: taken in
     * huge pages where the system gives them (util/mem.h), so each run's
     * write of them does not fault once per 4 KiB page; K and V in one
     * buffer (V after K), so only one partial 2 MiB keeps small pages
     * (tiny at 11 s: 2 x 3.2 MB faulted 566 small pages a run, 6.3 MB 78) */
    const size_t cb = cross_bytes(s, (size_t)T);
    s->cross_buf = tr_mem_big_alloc(2 * cb);
    s->cap_frames = (size_t)T; /* the size free_enc_bufs frees them by */
    if (s->cross_buf && s->kv_f16) {
        s->cross_k16 = s->cross_buf;
        s->cross_v16 = (uint16_t *)((char *)s->cross_buf + cb);
    } else if (s->cross_buf) {
        s->cross_k = s->cross_buf;
        s->cross_v = (float *)((char *)s->cross_buf + cb);
    }
    if (!s->enc_x || !s->cross_buf) {
        free_enc_bufs(s);
        return false;
    }
    return true;
}

void tr_mn_release_run_bufs(mn_session *s) {
    free_enc_bufs(s);
    tr_mem_release_free();
}

static bool alloc_ws(mn_session *s, int64_t T) {
    size_t stage;
    const size_t stem = stem_ws_floats(&s->m->hp, T, s->stem_chunk, &stage);
    const size_t blocks = tr_nn_enc_block_scratch(&s->m->enc_dims, (int)T);
    free_ws(s);
    s->ws_bytes = (stem > blocks ? stem : blocks) * sizeof(float);
    /* dead before the cross K/V are written (tr_mn_encode), so where it
     * fits it is their buffer's front (grow_enc_bufs made it for T): its
     * pages are then faulted in once a run for both (tiny at 11 s: 3.2 MB
     * of workspace, ~300 small pages a run less); else allocated per
     * encode and freed after the blocks (release_ws), in huge pages where
     * given */
    if (s->cross_buf && s->ws_bytes <= 2 * cross_bytes(s, s->cap_frames))
        s->enc_ws = s->cross_buf;
    else
        s->enc_ws = tr_mem_big_alloc(s->ws_bytes);
    return s->enc_ws != NULL;
}

/* The workspace and the pool's scratch (the GEMM's packed X, attention's
 * packed K/V: sized by the encoder, unused by the one-row decoder steps)
 * are dead once the blocks are done: freed and handed back to the system
 * before the decoder runs, so the decode (when every weight page is
 * resident) does not also hold them. */
static void release_ws(mn_session *s) {
    free_ws(s);
    tr_pool_scratch_release(s->pool);
    tr_mem_release_free();
}

/* Rows of a frame-major stage: tanh, then either each row's sum and sum of
 * squares (doubles, for the GroupNorm statistics) or the GroupNorm's
 * per-channel affine form x·scale + shift. Rows are split across the pool,
 * each row by one thread: the same bits for any thread count. */
typedef struct act_ctx {
    float *x;
    int rows, d;
    double *stats;              /* [rows][2] or NULL */
    const float *scale, *shift; /* [d] or NULL */
} act_ctx;

static void act_task(void *vctx, int ith, int nth) {
    const act_ctx *c = vctx;
    long b, e;
    tr_split_range(c->rows, ith, nth, &b, &e);
    for (long r = b; r < e; r++) {
        float *x = c->x + r * c->d;
        tr_tanh(x, c->d);
        if (c->stats) {
            double s1 = 0, s2 = 0;
            for (int i = 0; i < c->d; i++) s1 += x[i], s2 += (double)x[i] * x[i];
            c->stats[2 * r] = s1;
            c->stats[2 * r + 1] = s2;
        }
        if (c->scale)
            for (int i = 0; i < c->d; i++) x[i] = x[i] * c->scale[i] + c->shift[i];
    }
}

/* im2col of a frame-major input x [.][C] for a kernel k, stride st:
 * X[p][ci·k + j] = x[st·p + j][ci] (the stored kernel's [c_in][k] order). */
typedef struct im2col_ctx {
    const float *x;
    float *X;
    int rows, C, k, st;
} im2col_ctx;

static void im2col_task(void *vctx, int ith, int nth) {
    const im2col_ctx *c = vctx;
    long b, e;
    tr_split_range(c->rows, ith, nth, &b, &e);
    const long K = (long)c->C * c->k;
    for (long p = b; p < e; p++) {
        float *X = c->X + p * K;
        for (int j = 0; j < c->k; j++) {
            const float *src = c->x + ((long)c->st * p + j) * c->C;
            for (int ci = 0; ci < c->C; ci++) X[(long)ci * c->k + j] = src[ci];
        }
    }
}

static void im2col(tr_pool *pool, const float *x, int rows, int C, int k, int st, float *X) {
    im2col_ctx c = {x, X, rows, C, k, st};
    tr_pool_run(rows > 1 ? pool : NULL, im2col_task, &c);
}

/* conv 0 frames [a0, a0 + rows) of pcm, then tanh and stats or the norm,
 * into y [rows][d]. conv 0 has one input channel: its im2col is the PCM
 * itself read with row stride st[0]. */
static void conv0_rows(mn_session *s, const float *pcm, int64_t a0, int rows, float *y,
                       double *stats, const float *scale, const float *shift) {
    const mn_model *m = s->m;
    const int d = m->hp.d_model;
    tr_matmul(s->pool, &m->conv_mat[0], NULL, pcm + a0 * m->hp.st[0], rows, m->hp.st[0], y, d);
    act_ctx c = {y, rows, d, stats, scale, shift};
    tr_pool_run((long)rows * d >= 16384 ? s->pool : NULL, act_task, &c);
}

/* GroupNorm (one group) over tanh(conv 0) as x·scale[c] + shift[c], from
 * the statistics of every conv 0 frame (pass one), summed in frame order. */
static void stem_norm(mn_session *s, const float *pcm, int64_t t1, float *A, int chunk_rows,
                      double *stats) {
    const mn_model *m = s->m;
    const int d = m->hp.d_model;
    double s1 = 0, s2 = 0;
    for (int64_t a0 = 0; a0 < t1; a0 += chunk_rows) {
        const int rows = (int)(t1 - a0 < chunk_rows ? t1 - a0 : chunk_rows);
        conv0_rows(s, pcm, a0, rows, A, stats, NULL, NULL);
        for (int r = 0; r < rows; r++) s1 += stats[2 * r], s2 += stats[2 * r + 1];
    }
    const double N = (double)t1 * d, mean = s1 / N;
    double var = s2 / N - mean * mean;
    if (var < 0) var = 0;
    const double rstd = 1.0 / sqrt(var + (double)m->hp.gn_eps);
    for (int i = 0; i < d; i++) {
        s->gn_scale[i] = (float)(rstd * m->gn_w[i]);
        s->gn_shift[i] = (float)(m->gn_b[i] - mean * rstd * m->gn_w[i]);
    }
}

/* docs/formats/moonshine.md §5.1: conv0 (no bias) → tanh → GroupNorm(1)
 * → conv1 + b → GELU → conv2 + b → GELU, into out [T][d], in chunks of
 * s->stem_chunk encoder frames inside s->enc_ws. */
static transcribe_status stem(mn_session *s, const float *pcm, int n, float *out, int *T_out) {
    const mn_model *m = s->m;
    const mn_hparams *hp = &m->hp;
    const int d = hp->d_model, c1 = hp->ch[1];
    int64_t t1, t2;
    const int64_t T = tr_mn_enc_frames(hp, n, &t1, &t2);
    size_t stage;
    (void)stem_ws_floats(hp, T, s->stem_chunk, &stage);
    float *A = s->enc_ws, *X = s->enc_ws + stage;
    const int chunk = (int)(T < s->stem_chunk ? T : s->stem_chunk);
    tr_pool_take_failures(s->pool);
    stem_norm(s, pcm, t1, A, (int)span_of(hp, 0, chunk).n1, (double *)(void *)X);
    for (int64_t f0 = 0; f0 < T; f0 += chunk) {
        const int64_t f1 = f0 + chunk < T ? f0 + chunk : T;
        const int rows = (int)(f1 - f0);
        const stem_span p = span_of(hp, f0, f1);
        conv0_rows(s, pcm, p.a0, (int)p.n1, A, NULL, s->gn_scale, s->gn_shift);
        im2col(s->pool, A, (int)p.n2, d, hp->ks[1], hp->st[1], X);
        tr_matmul(s->pool, &m->conv_mat[1], m->conv_b1, X, (int)p.n2, d * hp->ks[1], A, c1);
        tr_ew_gelu(s->pool, A, p.n2 * c1);
        im2col(s->pool, A, rows, c1, hp->ks[2], hp->st[2], X);
        float *y = out + f0 * d;
        tr_matmul(s->pool, &m->conv_mat[2], m->conv_b2, X, rows, c1 * hp->ks[2], y, d);
        tr_ew_gelu(s->pool, y, (long)rows * d);
    }
    if (tr_pool_take_failures(s->pool)) {
        TR_ERROR("moonshine: the conv stem failed on %d samples", n);
        return TRANSCRIBE_ERR_OOM;
    }
    *T_out = (int)T;
    return TRANSCRIBE_OK;
}

transcribe_status tr_mn_stem(mn_session *s, const float *pcm, int n, int stage, const float **out,
                             int *T) {
    *T = 0;
    *out = NULL;
    const mn_hparams *hp = &s->m->hp;
    if (n < hp->min_samples || stage < 1 || stage > 3) return TRANSCRIBE_ERR_INVALID_ARG;
    int64_t t1;
    const int64_t T_enc = tr_mn_enc_frames(hp, n, &t1, NULL);
    bool ok = grow_enc_bufs(s, T_enc); /* first: growing frees stem_out */
    free(s->stem_out);
    s->stem_out = malloc((size_t)t1 * (size_t)hp->d_model * sizeof(float));
    if (!ok || !s->stem_out || !alloc_ws(s, T_enc)) {
        release_ws(s);
        return TRANSCRIBE_ERR_OOM;
    }
    transcribe_status st = TRANSCRIBE_OK;
    tr_pool_take_failures(s->pool);
    if (stage == 3) {
        st = stem(s, pcm, n, s->enc_x, T);
        *out = s->enc_x;
    } else {
        size_t sf;
        (void)stem_ws_floats(hp, T_enc, s->stem_chunk, &sf);
        const int rows = (int)span_of(hp, 0, T_enc < s->stem_chunk ? T_enc : s->stem_chunk).n1;
        if (stage == 2) stem_norm(s, pcm, t1, s->enc_ws, rows, (double *)(void *)(s->enc_ws + sf));
        conv0_rows(s, pcm, 0, (int)t1, s->stem_out, NULL, stage == 2 ? s->gn_scale : NULL,
                   stage == 2 ? s->gn_shift : NULL);
        if (tr_pool_take_failures(s->pool)) st = TRANSCRIBE_ERR_OOM;
        *out = s->stem_out;
        *T = (int)t1;
    }
    release_ws(s);
    return st;
}

transcribe_status tr_mn_encode(mn_session *s, const float *pcm, int n, int *T_out,
                               const mn_cross *dst, bool (*should_abort)(void *),
                               void *abort_user) {
    const mn_model *m = s->m;
    *T_out = 0;
    if (n < m->hp.min_samples) return TRANSCRIBE_ERR_INVALID_ARG;
    const int64_t T_enc = tr_mn_enc_frames(&m->hp, n, NULL, NULL);
    if (!grow_enc_bufs(s, T_enc) || !alloc_ws(s, T_enc)) {
        release_ws(s);
        TR_ERROR("moonshine: out of memory for %d samples", n);
        return TRANSCRIBE_ERR_OOM;
    }
    int T = 0;
    transcribe_status st = stem(s, pcm, n, s->enc_x, &T);
    if (st != TRANSCRIBE_OK) {
        release_ws(s);
        return st;
    }
    for (int l = 0; l < m->hp.n_enc_layers; l++) {
        if (should_abort && should_abort(abort_user)) {
            release_ws(s);
            return TRANSCRIBE_ERR_ABORTED;
        }
        tr_nn_enc_block_fwd(s->pool, &m->enc[l], &m->enc_dims, s->enc_x, T, s->enc_ws);
    }
    release_ws(s);
    const int d = m->hp.d_model;
    tr_layer_norm(s->pool, s->enc_x, s->enc_x, T, d, m->enc_norm, NULL, 1e-5f);
    const mn_cross own = {s->cross_k, s->cross_v, s->cross_k16, s->cross_v16};
    if (!dst) dst = &own;
    const bool ok =
        dst->k16
            ? tr_ed_cross_kv16(s->pool, &m->msd.dec, s->enc_x, T, dst->k16, dst->v16, (size_t)T * d)
            : tr_ed_cross_kv(s->pool, &m->msd.dec, s->enc_x, T, dst->k, dst->v, (size_t)T * d);
    if (!ok) return TRANSCRIBE_ERR_OOM;
    *T_out = T;
    return TRANSCRIBE_OK;
}

bool tr_mn_decode(mn_session *s, const int32_t *ids, int rows, int n_past, int T_enc) {
    const mn_model *m = s->m;
    if (rows != 1 || T_enc < 1 || (size_t)T_enc > s->cap_frames ||
        !tr_ed_seq_ok(&m->msd.dec, ids, rows, n_past, m->hp.max_pos))
        return false;
    const tr_ed_seq seq = {.rows = rows,
                           .n_past = n_past,
                           .n_src = T_enc,
                           .kv = &s->kv,
                           .ck = s->cross_k,
                           .cv = s->cross_v,
                           .ck16 = s->cross_k16,
                           .cv16 = s->cross_v16,
                           .cross_stride = (size_t)T_enc * (size_t)m->hp.d_model,
                           .ids = ids};
    tr_ed_step(s->pool, &m->msd.dec, 1, &seq, s->dec_x, s->dec_scratch, s->logits);
    return true;
}
