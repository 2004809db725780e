/* The incremental encoder (mss.h): front end (docs/formats/moonshine_streaming.md
 * docs/formats/moonshine_streaming.md §4), the causal convolutions
 * (docs/formats/moonshine_streaming.md §5.1), the sliding-window blocks and the final norm
 * (docs/formats/moonshine_streaming.md §5.2), each stage computing only the rows its new input
 * completes; the adapter and cross K/V (docs/formats/moonshine_streaming.md §5.3,
 * docs/formats/moonshine_streaming.md §6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/moonshine_streaming/mss.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

/* ---- row buffers: rows [base, base + n) of a stage ---- */

static void rows_init(mss_rows *r, int width) {
    memset(r, 0, sizeof *r);
    r->width = width;
}

static void rows_free(mss_rows *r) {
    free(r->v);
    rows_init(r, r->width);
}

/* Room for k more rows; returns the first of them (not yet counted). */
static float *rows_reserve(mss_rows *r, int k) {
    if (r->n + k > r->cap) {
        int cap = r->cap ? r->cap : 16;
        while (cap < r->n + k) cap *= 2;
        float *v = realloc(r->v, (size_t)cap * (size_t)r->width * sizeof *v);
        if (!v) return NULL;
        r->v = v;
        r->cap = cap;
    }
    return r->v + (size_t)r->n * (size_t)r->width;
}

static inline float *rows_at(const mss_rows *r, int64_t g) {
    return r->v + (size_t)(g - r->base) * (size_t)r->width;
}

void tr_mss_rows_drop(mss_rows *r, int64_t upto) {
    int64_t k = upto - r->base;
    if (k <= 0) return;
    if (k > r->n) k = r->n;
    if (r->n > k)
        memmove(r->v, r->v + (size_t)k * (size_t)r->width,
                (size_t)(r->n - k) * (size_t)r->width * sizeof *r->v);
    r->n -= (int)k;
    r->base += k;
}

static float *scratch(mss_enc *e, size_t floats) {
    if (floats > e->scratch_cap) {
        float *v = realloc(e->scratch, floats * sizeof *v);
        if (!v) return NULL;
        e->scratch = v;
        e->scratch_cap = floats;
    }
    return e->scratch;
}

bool tr_mss_enc_init(mss_enc *e, const mss_model *m) {
    memset(e, 0, sizeof *e);
    e->m = m;
    const mss_hparams *hp = &m->hp;
    const int L = hp->n_enc_layers, a = hp->enc_heads * hp->enc_hd;
    rows_init(&e->c1_in, hp->enc_d);
    rows_init(&e->c2_in, 2 * hp->enc_d);
    rows_init(&e->out, hp->enc_d);
    e->x = calloc((size_t)L + 1, sizeof *e->x);
    e->qkv = calloc((size_t)L, sizeof *e->qkv);
    e->next = calloc((size_t)L, sizeof *e->next);
    if (!e->x || !e->qkv || !e->next) {
        tr_mss_enc_free(e);
        return false;
    }
    for (int l = 0; l < L; l++) {
        rows_init(&e->x[l], hp->enc_d);
        rows_init(&e->qkv[l], 3 * a);
    }
    return true;
}

void tr_mss_enc_reset(mss_enc *e) {
    const int L = e->m->hp.n_enc_layers;
    e->n_pend = 0;
    e->n_samples = 0;
    e->c1_next = e->c2_next = 0;
    e->finished = false;
    mss_rows *all[3] = {&e->c1_in, &e->c2_in, &e->out};
    for (int j = 0; j < 3; j++) all[j]->base = 0, all[j]->n = 0;
    for (int l = 0; l < L; l++) {
        e->x[l].base = e->x[l].n = 0;
        e->qkv[l].base = e->qkv[l].n = 0;
        e->next[l] = 0;
    }
}

void tr_mss_enc_free(mss_enc *e) {
    if (!e->m) return;
    const int L = e->m->hp.n_enc_layers;
    rows_free(&e->c1_in);
    rows_free(&e->c2_in);
    rows_free(&e->out);
    for (int l = 0; e->x && l < L; l++) rows_free(&e->x[l]);
    for (int l = 0; e->qkv && l < L; l++) rows_free(&e->qkv[l]);
    free(e->x);
    free(e->qkv);
    free(e->next);
    free(e->scratch);
    memset(e, 0, sizeof *e);
}

int64_t tr_mss_enc_frames(const mss_hparams *hp, int64_t n) {
    return n <= 0 ? 0 : (n + hp->spf - 1) / hp->spf;
}

int tr_mss_gen_cap(const mss_hparams *hp, int64_t T) {
    /* docs/formats/moonshine_streaming.md §6: floor(T · 4·frame_len · 13 / (2 · 16000)) + 24, else
     * max_pos */
    const int64_t budget = T * 4 * hp->frame_len * 13 / (2 * MSS_SAMPLE_RATE) + 24;
    return budget > 0 && budget < hp->max_pos ? (int)budget : hp->max_pos;
}

/* ---- front end (docs/formats/moonshine_streaming.md §4) ---- */

/* nf frames of frame_len samples → h = silu(Wlin · asinh(k · cmvn(frame)))
 * appended to c1_in. */
static bool front_end(mss_enc *e, tr_pool *pool, const float *frames, int nf) {
    const mss_model *m = e->m;
    const int w = m->hp.frame_len, d = m->hp.enc_d;
    float *a = scratch(e, (size_t)nf * (size_t)w);
    float *h = rows_reserve(&e->c1_in, nf);
    if (!a || !h) return false;
    for (int f = 0; f < nf; f++) {
        const float *x = frames + (size_t)f * w;
        double mean = 0, var = 0;
        for (int i = 0; i < w; i++) mean += x[i];
        mean /= w;
        for (int i = 0; i < w; i++) var += (x[i] - mean) * (x[i] - mean);
        var /= w;
        const double inv = 1.0 / sqrt(var + (double)m->hp.cmvn_eps);
        for (int i = 0; i < w; i++)
            a[(size_t)f * w + i] = asinhf((float)((x[i] - mean) * inv) * m->k_scale);
    }
    tr_linear(pool, m->lin, NULL, a, nf, h);
    tr_ew_silu(pool, h, (long)nf * d);
    e->c1_in.n += nf;
    return true;
}

/* ---- causal stride-2 convolutions (docs/formats/moonshine_streaming.md §5.1) ---- */

/* Outputs t = *next.. whose inputs [2t − 4, 2t] have arrived (rows before 0
 * are the causal zero padding), into dst. */
static bool conv_stage(mss_enc *e, tr_pool *pool, mss_rows *in, int64_t *next, const tr_tensor *w,
                       const float *b, bool silu, mss_rows *dst, int64_t cap) {
    const int64_t have = in->base + in->n;
    if (have < 1) return true;
    int64_t t_end = (have - 1) / 2 + 1;
    if (cap >= 0 && t_end > cap) t_end = cap;
    const int n = (int)(t_end - *next);
    if (n <= 0) return true;
    const int c_in = in->width, c_out = (int)w->ne[1], K = MSS_CONV_K;
    float *col = scratch(e, (size_t)n * (size_t)K * (size_t)c_in);
    float *y = rows_reserve(dst, n);
    if (!col || !y) return false;
    for (int j = 0; j < n; j++) {
        const int64_t t = *next + j;
        float *row = col + (size_t)j * K * c_in;
        for (int k = 0; k < K; k++) {
            const int64_t g = 2 * t - 4 + k;
            if (g < 0) {
                for (int ci = 0; ci < c_in; ci++) row[(size_t)ci * K + k] = 0.0f;
            } else {
                const float *src = rows_at(in, g);
                for (int ci = 0; ci < c_in; ci++) row[(size_t)ci * K + k] = src[ci];
            }
        }
    }
    tr_linear(pool, w, b, col, n, y);
    if (silu) tr_ew_silu(pool, y, (long)n * c_out);
    dst->n += n;
    *next = t_end;
    tr_mss_rows_drop(in, 2 * t_end - 4);
    return true;
}

/* ---- sliding-window blocks (docs/formats/moonshine_streaming.md §5.2) ---- */

typedef struct swa_ctx {
    const mss_rows *qkv;
    int64_t t0;
    int n;
    int64_t have; /* rows [.., have) exist */
    int L, R, heads, hd, a;
    float scale;
    float *out; /* [n][a] */
    float *p;   /* per thread: span scores */
    int span;
} swa_ctx;

static void swa_task(void *vctx, int ith, int nth) {
    const swa_ctx *c = vctx;
    long b, e;
    tr_split_range(c->n, ith, nth, &b, &e);
    if (e <= b) return;
    float *p = c->p + (size_t)ith * c->span;
    for (long j = b; j < e; j++) {
        const int64_t t = c->t0 + j;
        int64_t lo = t - c->L + 1, hi = t + (c->R > 1 ? c->R - 1 : 0); /* inclusive */
        if (lo < c->qkv->base) lo = c->qkv->base;
        if (hi > c->have - 1) hi = c->have - 1;
        const float *q = rows_at(c->qkv, t);
        float *o = c->out + (size_t)j * c->a;
        for (int h = 0; h < c->heads; h++) {
            const float *qh = q + (size_t)h * c->hd;
            float mx = -INFINITY;
            for (int64_t k = lo; k <= hi; k++) {
                const float *kh = rows_at(c->qkv, k) + c->a + (size_t)h * c->hd;
                float s = 0.0f;
                for (int i = 0; i < c->hd; i++) s += qh[i] * kh[i];
                s *= c->scale;
                p[k - lo] = s;
                if (s > mx) mx = s;
            }
            float sum = 0.0f;
            for (int64_t k = lo; k <= hi; k++) sum += p[k - lo] = expf(p[k - lo] - mx);
            float *oh = o + (size_t)h * c->hd;
            for (int i = 0; i < c->hd; i++) oh[i] = 0.0f;
            for (int64_t k = lo; k <= hi; k++) {
                const float *vh = rows_at(c->qkv, k) + 2 * c->a + (size_t)h * c->hd;
                const float pk = p[k - lo] / sum;
                for (int i = 0; i < c->hd; i++) oh[i] += pk * vh[i];
            }
        }
    }
}

/* Block l: q/k/v of its new input rows, then every output row whose window
 * is complete (all of them when final), into dst. */
static bool block_stage(mss_enc *e, tr_pool *pool, int l, bool final, mss_rows *dst) {
    const mss_model *m = e->m;
    const mss_hparams *hp = &m->hp;
    const mss_enc_block *blk = &m->enc[l];
    mss_rows *x = &e->x[l], *qkv = &e->qkv[l];
    const int d = hp->enc_d, a = hp->enc_heads * hp->enc_hd, F = hp->enc_ffn;
    const int L = hp->win[2 * l], R = hp->win[2 * l + 1];
    /* q, k, v of the rows that arrived since the last call */
    const int n_new = x->n - qkv->n;
    if (n_new > 0) {
        float *hn = scratch(e, (size_t)n_new * (size_t)d);
        float *dst_qkv = rows_reserve(qkv, n_new);
        if (!hn || !dst_qkv) return false;
        const float *xr = rows_at(x, qkv->base + qkv->n);
        tr_layer_norm(pool, xr, hn, n_new, d, blk->ln_attn, NULL, 1e-5f);
        tr_matmul(pool, blk->q.w, NULL, hn, n_new, d, dst_qkv, 3 * a);
        tr_matmul(pool, blk->k.w, NULL, hn, n_new, d, dst_qkv + a, 3 * a);
        tr_matmul(pool, blk->v.w, NULL, hn, n_new, d, dst_qkv + 2 * a, 3 * a);
        qkv->n += n_new;
    }
    const int64_t have = x->base + x->n;
    const int64_t lim = final ? have : have - (R > 1 ? R - 1 : 0);
    const int n = (int)(lim - e->next[l]);
    if (n > 0) {
        const size_t N = (size_t)n;
        const int span = L + (R > 1 ? R - 1 : 0);
        const size_t np = (size_t)tr_pool_n_threads(pool) * (size_t)span;
        float *w = scratch(e, N * ((size_t)a + 2 * (size_t)d + (size_t)F) + np);
        float *y = rows_reserve(dst, n);
        if (!w || !y) return false;
        float *att = w, *o = att + N * a, *h2 = o + N * d, *f = h2 + N * d, *pb = f + N * F;
        swa_ctx c = {qkv,
                     e->next[l],
                     n,
                     have,
                     L,
                     R,
                     hp->enc_heads,
                     hp->enc_hd,
                     a,
                     1.0f / sqrtf((float)hp->enc_hd),
                     att,
                     pb,
                     span};
        tr_pool_run(n >= 4 ? pool : NULL, swa_task, &c);
        tr_linear(pool, blk->o.w, NULL, att, n, o);
        const float *xr = rows_at(x, e->next[l]);
        for (size_t i = 0; i < N * d; i++) y[i] = xr[i] + o[i];
        tr_layer_norm(pool, y, h2, n, d, blk->ln_ffn, NULL, 1e-5f);
        tr_linear(pool, blk->fc1.w, blk->fc1.b, h2, n, f);
        tr_ew_gelu(pool, f, (long)n * F);
        tr_linear(pool, blk->fc2.w, blk->fc2.b, f, n, o);
        tr_ew_add(pool, y, o, (long)n * d);
        dst->n += n;
        e->next[l] = lim;
    }
    /* keep what later outputs still read: L − 1 rows back */
    const int64_t keep = e->next[l] - (L - 1);
    tr_mss_rows_drop(x, keep);
    tr_mss_rows_drop(qkv, keep);
    return true;
}

transcribe_status tr_mss_enc_push(mss_enc *e, tr_pool *pool, const float *pcm, int n, bool final,
                                  bool (*should_abort)(void *), void *abort_user) {
    const mss_model *m = e->m;
    const mss_hparams *hp = &m->hp;
    const int w = hp->frame_len;
    if (e->finished) return TRANSCRIBE_ERR_INVALID_ARG;
    tr_pool_take_failures(pool);
    /* whole front-end frames from the pending samples and pcm */
    int used = 0;
    const int nf = (e->n_pend + n) / w;
    if (nf > 0) {
        float *frames = malloc((size_t)nf * (size_t)w * sizeof *frames);
        if (!frames) return TRANSCRIBE_ERR_OOM;
        memcpy(frames, e->pend, (size_t)e->n_pend * sizeof *frames);
        used = nf * w - e->n_pend;
        memcpy(frames + e->n_pend, pcm, (size_t)used * sizeof *frames);
        e->n_pend = 0;
        const bool ok = front_end(e, pool, frames, nf);
        free(frames);
        if (!ok) return TRANSCRIBE_ERR_OOM;
    }
    if (n > used) memcpy(e->pend + e->n_pend, pcm + used, (size_t)(n - used) * sizeof *pcm);
    e->n_pend += n - used;
    e->n_samples += n;
    if (final &&
        e->n_pend >
            0) { /* docs/formats/moonshine_streaming.md §4: the tail zero-padded to a whole frame */
        memset(e->pend + e->n_pend, 0, (size_t)(w - e->n_pend) * sizeof *pcm);
        e->n_pend = 0;
        if (!front_end(e, pool, e->pend, 1)) return TRANSCRIBE_ERR_OOM;
    }
    if (e->stop == 1) return TRANSCRIBE_OK;
    if (!conv_stage(e, pool, &e->c1_in, &e->c1_next, &m->conv1v, m->conv1_b, true, &e->c2_in, -1))
        return TRANSCRIBE_ERR_OOM;
    if (e->stop == 2) return TRANSCRIBE_OK;
    /* an encoder frame leaves only once its 4·frame_len samples are all
     * there (docs/formats/moonshine_streaming.md §8.1's frame count; the causal convolutions could
     * emit it after the first of its four front-end frames) */
    const int64_t whole = final ? -1 : e->n_samples / hp->spf;
    if (!conv_stage(e, pool, &e->c2_in, &e->c2_next, &m->conv2v, m->conv2_b, false, &e->x[0],
                    whole))
        return TRANSCRIBE_ERR_OOM;
    const int L = hp->n_enc_layers;
    if (e->stop >= 3 && e->stop - 3 < L) {
        for (int l = 0; l < e->stop - 3; l++)
            if (!block_stage(e, pool, l, final, &e->x[l + 1])) return TRANSCRIBE_ERR_OOM;
        return TRANSCRIBE_OK;
    }
    for (int l = 0; l < L; l++) {
        if (should_abort && should_abort(abort_user)) return TRANSCRIBE_ERR_ABORTED;
        mss_rows *dst = l + 1 < L ? &e->x[l + 1] : &e->x[L];
        if (l + 1 == L) rows_init(dst, hp->enc_d), dst->base = e->out.base + e->out.n;
        if (!block_stage(e, pool, l, final, dst)) return TRANSCRIBE_ERR_OOM;
    }
    /* final norm of the last block's new rows, appended to out */
    mss_rows *last = &e->x[L];
    if (last->n > 0) {
        float *o = rows_reserve(&e->out, last->n);
        if (!o) {
            rows_free(last);
            return TRANSCRIBE_ERR_OOM;
        }
        tr_layer_norm(pool, last->v, o, last->n, hp->enc_d, m->enc_norm, NULL, 1e-5f);
        e->out.n += last->n;
    }
    rows_free(last);
    if (final) e->finished = true;
    if (tr_pool_take_failures(pool)) {
        TR_ERROR("moonshine_streaming: the encoder failed (out of memory)");
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

/* ---- adapter and cross K/V (docs/formats/moonshine_streaming.md §5.3,
 * docs/formats/moonshine_streaming.md §6) ---- */

bool tr_mss_cross(tr_pool *pool, const mss_model *m, const float *enc, int n, int pos0, float *ck,
                  float *cv, size_t cap, int row0, float *scr) {
    const mss_hparams *hp = &m->hp;
    const int e = hp->enc_d, D = hp->dec_d;
    float *x = scr, *ad = scr + (size_t)n * e;
    int32_t ids[64];
    for (int j0 = 0; j0 < n; j0 += 64) {
        const int k = n - j0 < 64 ? n - j0 : 64;
        for (int j = 0; j < k; j++) ids[j] = pos0 + j0 + j;
        tr_get_rows(m->pos_emb, ids, k, x + (size_t)j0 * e);
    }
    tr_ew_add(pool, x, enc, (long)n * e);
    if (m->proj)
        tr_linear(pool, m->proj, NULL, x, n, ad);
    else
        ad = x;
    const size_t stride = cap * (size_t)D;
    for (int l = 0; l < hp->n_dec_layers; l++)
        if (!tr_nn_cross_kv(pool, &m->msd.blocks[l], &m->msd.dec.dims, ad, n, cap, (size_t)row0,
                            ck + l * stride, cv + l * stride))
            return false;
    return true;
}
