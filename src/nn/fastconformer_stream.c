/* Cache-aware streaming FastConformer (docs/formats/parakeet.md §7.8): each
 * native chunk of R + 1 encoder frames runs through the blocks once, with
 * per-layer caches of the keys/values the chunked_limited mask lets it see
 * (the floor(L / chunk) previous chunks) and of the causal depthwise conv's
 * left context. Why it equals the offline forward:
 * - the mask of query a admits exactly the keys of a's chunk and of the
 *   left chunks before it, which is what the cache holds;
 * - the rel-pos bias depends on a - b only, so a small table of positions
 *   -(chunk - 1) .. L_cache + chunk - 1, projected once per layer, serves
 *   every chunk;
 * - the depthwise conv is causal (pad_r 0), so the last pad_l GLU rows are
 *   all it needs from the past;
 * - the causal pre-encode's output t reads mel frames 8t - 14 .. 8t only,
 *   so re-running it from mel frame 8(t0 - 2) reproduces frames t0.. (its
 *   own zero padding in front only reaches the two frames dropped).
 * Every other stage is row-wise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/fastconformer_internal.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define FCS_LN_EPS       1e-5f
#define FCS_PRE_LOOKBACK 2 /* encoder frames of mel overlap re-run by the pre-encode */

typedef struct fcs_layer {
    float *k, *v; /* [kv_cap][d]: the last n_kv key/value rows */
    float *conv;  /* [pad_l][d]: the last GLU rows (zeros before the start) */
    float *pos;   /* [P][d]: W_pos of the positional rows */
} fcs_layer;

struct tr_fc_stream {
    const tr_fc_encoder *enc;
    int d, n_mels, chunk, kv_cap, pad_l, P, pos0;
    fcs_layer *layers;
    int n_kv;       /* rows held in every layer's k/v cache */
    int frames_out; /* encoder frames emitted = next chunk's first frame */
    float *mel;     /* [mel_cap][n_mels] time-major, global frames mel_base.. */
    int mel_n, mel_cap;
    long mel_base; /* global index of mel[0] */
    bool ended;
    /* per-chunk scratch (rows <= the largest chunk run at once) */
    tr_fc_pre_scratch pre;
    tr_fc_buf win, x, h, q, mid, att, sc, cbuf, out;
};

static void buf_free(tr_fc_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

void tr_fc_stream_free(tr_fc_stream *s) {
    if (!s) return;
    if (s->layers)
        for (int i = 0; i < s->enc->hp.n_layers; i++) {
            free(s->layers[i].k);
            free(s->layers[i].v);
            free(s->layers[i].conv);
            free(s->layers[i].pos);
        }
    free(s->layers);
    free(s->mel);
    tr_fc_buf *all[] = {&s->pre.a, &s->win, &s->x,  &s->h,    &s->q,
                        &s->mid,   &s->att, &s->sc, &s->cbuf, &s->out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
    free(s);
}

void tr_fc_stream_reset(tr_fc_stream *s) {
    if (!s) return;
    s->n_kv = 0;
    s->frames_out = 0;
    s->mel_n = 0;
    s->mel_base = 0;
    s->ended = false;
    for (int i = 0; i < s->enc->hp.n_layers; i++)
        memset(s->layers[i].conv, 0, sizeof(float) * (size_t)(s->pad_l ? s->pad_l : 1) * s->d);
}

int tr_fc_stream_chunk(const tr_fc_stream *s) {
    return s->chunk;
}

int tr_fc_stream_frames_out(const tr_fc_stream *s) {
    return s->frames_out;
}

bool tr_fc_stream_supported(const tr_fc_encoder *enc) {
    const tr_fc_hparams *hp = &enc->hp;
    /* the cache bookkeeping below is written for the factor-8 pre-encode */
    return hp->sub_stages == 3 && hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED &&
           hp->att_left >= 0 && hp->att_right >= 0 && hp->conv_pad_right == 0 &&
           hp->conv_pad_left == hp->conv_kernel - 1;
}

transcribe_status tr_fc_stream_new(const tr_fc_encoder *enc, int att_left, int att_right,
                                   tr_fc_stream **out) {
    *out = NULL;
    const tr_fc_hparams *hp = &enc->hp;
    if (att_left < 0) att_left = hp->att_left;
    if (att_right < 0) att_right = hp->att_right;
    if (!tr_fc_stream_supported(enc)) {
        TR_ERROR("fastconformer: cache-aware streaming needs chunked_limited attention with "
                 "contexts >= 0, a causal conv and subsampling 8 (style %d, %d/%d, conv %d/%d, "
                 "%d stages)",
                 (int)hp->att_style, hp->att_left, hp->att_right, hp->conv_pad_left,
                 hp->conv_pad_right, hp->sub_stages);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    tr_fc_stream *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    s->enc = enc;
    s->d = hp->d_model;
    s->n_mels = hp->n_mels;
    s->chunk = att_right + 1;
    s->kv_cap = (att_left / s->chunk) * s->chunk;
    s->pad_l = hp->conv_pad_left;
    /* positions a - b with a in the chunk and b in cache + chunk */
    s->pos0 = s->kv_cap + s->chunk - 1;
    s->P = s->pos0 + s->chunk;
    const size_t d = (size_t)s->d;
    s->layers = calloc((size_t)hp->n_layers, sizeof *s->layers);
    float *pe = malloc(sizeof(float) * (size_t)s->P * d);
    bool ok = s->layers && pe;
    if (ok) tr_fc_pos_table(NULL, pe, s->P, s->d, s->pos0);
    for (int i = 0; ok && i < hp->n_layers; i++) {
        fcs_layer *L = &s->layers[i];
        const size_t kv = (size_t)(s->kv_cap + s->chunk) * d;
        L->k = malloc(sizeof(float) * kv);
        L->v = malloc(sizeof(float) * kv);
        L->conv = calloc((size_t)(s->pad_l ? s->pad_l : 1) * d, sizeof(float));
        L->pos = malloc(sizeof(float) * (size_t)s->P * d);
        ok = L->k && L->v && L->conv && L->pos;
        if (ok) tr_linear(NULL, &enc->blocks[i].pos, NULL, pe, s->P, L->pos);
    }
    free(pe);
    if (!ok) {
        TR_ERROR("fastconformer: out of memory for the stream caches");
        tr_fc_stream_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

/* ---- one chunk through the blocks ---- */

static bool reserve_rows(tr_fc_stream *s, int n) {
    const tr_fc_hparams *hp = &s->enc->hp;
    const size_t nd = (size_t)n * s->d, nk = (size_t)(s->kv_cap + n);
    const size_t wide = (size_t)(hp->d_ff > 2 * s->d ? hp->d_ff : 2 * s->d);
    return tr_fc_buf_reserve(&s->h, nd) && tr_fc_buf_reserve(&s->q, nd) &&
           tr_fc_buf_reserve(&s->att, nd) && tr_fc_buf_reserve(&s->mid, (size_t)n * wide) &&
           tr_fc_buf_reserve(&s->sc, nk) &&
           tr_fc_buf_reserve(&s->cbuf, (size_t)(s->pad_l + n) * s->d * 2);
}

static void ff_half(tr_fc_stream *s, tr_pool *pool, const tr_nn_norm *ln, const tr_nn_linear *w1,
                    const tr_nn_linear *w2, float *x, int n) {
    const int d = s->d, d_ff = s->enc->hp.d_ff;
    tr_layer_norm(pool, x, s->h.p, n, d, ln->w, ln->b, FCS_LN_EPS);
    tr_nn_linear_fwd(pool, w1, s->h.p, n, s->mid.p);
    tr_ew_silu(pool, s->mid.p, (long)n * d_ff);
    tr_nn_linear_fwd(pool, w2, s->mid.p, n, s->q.p);
    tr_ew_axpy(pool, x, s->q.p, 0.5f, (long)n * d);
}

/* Attention of the n chunk rows over the cached keys plus their own. */
static void attn_residual(tr_fc_stream *s, tr_pool *pool, const tr_fc_block *blk, fcs_layer *L,
                          float *x, int n) {
    const int d = s->d, H = s->enc->hp.n_heads, dh = d / H;
    tr_layer_norm(pool, x, s->h.p, n, d, blk->norm_attn.w, blk->norm_attn.b, FCS_LN_EPS);
    tr_nn_linear_fwd(pool, &blk->q, s->h.p, n, s->q.p);
    /* new keys/values go straight behind the cached ones */
    tr_nn_linear_fwd(pool, &blk->k, s->h.p, n, L->k + (size_t)s->n_kv * d);
    tr_nn_linear_fwd(pool, &blk->v, s->h.p, n, L->v + (size_t)s->n_kv * d);
    const int nc = s->n_kv, nk = nc + n;
    const float scale = 1.0f / sqrtf((float)dh);
    float *sc = s->sc.p;
    for (int h = 0; h < H; h++) {
        const float *bu = blk->pos_bias_u + (size_t)h * dh, *bv = blk->pos_bias_v + (size_t)h * dh;
        for (int a = 0; a < n; a++) {
            const float *q = s->q.p + (size_t)a * d + (size_t)h * dh;
            float mx = -INFINITY;
            for (int b = 0; b < nk; b++) {
                const float *k = L->k + (size_t)b * d + (size_t)h * dh;
                /* table row of position a - b (in stream frames: a + nc - b) */
                const float *p = L->pos + (size_t)(s->pos0 - (a + nc - b)) * d + (size_t)h * dh;
                float ac = 0.0f, bd = 0.0f;
                for (int i = 0; i < dh; i++) {
                    ac += (q[i] + bu[i]) * k[i];
                    bd += (q[i] + bv[i]) * p[i];
                }
                sc[b] = (ac + bd) * scale;
                if (sc[b] > mx) mx = sc[b];
            }
            float sum = 0.0f;
            for (int b = 0; b < nk; b++) {
                sc[b] = expf(sc[b] - mx);
                sum += sc[b];
            }
            float *o = s->att.p + (size_t)a * d + (size_t)h * dh;
            for (int i = 0; i < dh; i++) o[i] = 0.0f;
            for (int b = 0; b < nk; b++) {
                const float wgt = sc[b] / sum;
                const float *v = L->v + (size_t)b * d + (size_t)h * dh;
                for (int i = 0; i < dh; i++) o[i] += wgt * v[i];
            }
        }
    }
    tr_nn_linear_fwd(pool, &blk->o, s->att.p, n, s->q.p);
    tr_ew_axpy(pool, x, s->q.p, 1.0f, (long)n * d);
}

/* Keeps the last kv_cap rows of every layer's cache, once all layers ran. */
static void kv_advance(tr_fc_stream *s, int n) {
    const int total = s->n_kv + n, keep = total < s->kv_cap ? total : s->kv_cap;
    for (int i = 0; i < s->enc->hp.n_layers; i++) {
        fcs_layer *L = &s->layers[i];
        const size_t off = (size_t)(total - keep) * s->d, len = sizeof(float) * keep * s->d;
        memmove(L->k, L->k + off, len);
        memmove(L->v, L->v + off, len);
    }
    s->n_kv = keep;
}

static void conv_residual(tr_fc_stream *s, tr_pool *pool, const tr_fc_block *blk, fcs_layer *L,
                          float *x, int n) {
    const tr_fc_hparams *hp = &s->enc->hp;
    const int d = s->d, pl = s->pad_l;
    float *g = s->cbuf.p, *u = s->cbuf.p + (size_t)(pl + n) * d;
    tr_layer_norm(pool, x, s->h.p, n, d, blk->norm_conv.w, blk->norm_conv.b, FCS_LN_EPS);
    tr_nn_linear_fwd(pool, &blk->pw1, s->h.p, n, s->mid.p);
    memcpy(g, L->conv, sizeof(float) * (size_t)pl * d);
    tr_ew_glu(pool, s->mid.p, g + (size_t)pl * d, n, d);
    /* rows pl.. of the padded sequence are the chunk's outputs */
    tr_nn_depthwise(pool, &blk->dw, d, hp->conv_kernel, pl, g, u, pl + n);
    memcpy(L->conv, g + (size_t)n * d, sizeof(float) * (size_t)pl * d);
    float *uc = u + (size_t)pl * d;
    if (hp->conv_layer_norm) tr_layer_norm(pool, uc, uc, n, d, blk->cln_w, blk->cln_b, FCS_LN_EPS);
    tr_ew_silu(pool, uc, (long)n * d);
    tr_nn_linear_fwd(pool, &blk->pw2, uc, n, s->h.p);
    tr_ew_axpy(pool, x, s->h.p, 1.0f, (long)n * d);
}

/* Pre-encodes encoder frames [t0, t0 + n) into x from the held mel
 * (global frames mel_base.. ; the window ends at the last held frame when
 * `last`, else at frame 8(t0 + n - 1)). */
static bool pre_encode(tr_fc_stream *s, tr_pool *pool, int t0, int n, bool last, float *x) {
    const tr_fc_encoder *enc = s->enc;
    const int nm = s->n_mels, d = s->d;
    const long m0 = t0 >= FCS_PRE_LOOKBACK ? 8L * (t0 - FCS_PRE_LOOKBACK) : 0;
    const long m1 = last ? s->mel_base + s->mel_n : 8L * (t0 + n - 1) + 1;
    const int W = (int)(m1 - m0), skip = (int)(t0 - m0 / 8);
    const int Tw = tr_fc_out_frames(enc, W);
    if (Tw < skip + n) return false; /* cannot happen: the caller counted */
    if (!tr_fc_buf_reserve(&s->win, (size_t)W * nm) || !tr_fc_buf_reserve(&s->out, (size_t)Tw * d))
        return false;
    const float *src = s->mel + (size_t)(m0 - s->mel_base) * nm;
    for (int t = 0; t < W; t++)
        for (int f = 0; f < nm; f++) s->win.p[(size_t)f * W + t] = src[(size_t)t * nm + f];
    if (!tr_fc_pre_encode(enc, pool, s->win.p, W, s->out.p, Tw, &s->pre)) return false;
    memcpy(x, s->out.p + (size_t)skip * d, sizeof(float) * (size_t)n * d);
    if (enc->hp.xscaling) tr_ew_scale(pool, x, sqrtf((float)d), (long)n * d);
    if (enc->spk) {
        tr_nn_linear_fwd(pool, &enc->spk0, x, n, s->h.p);
        tr_ew_relu(pool, s->h.p, (long)n * d);
        tr_nn_linear_fwd(pool, &enc->spk3, s->h.p, n, s->q.p);
        tr_ew_axpy(pool, x, s->q.p, 1.0f, (long)n * d);
        if (enc->spk_bg) tr_add_bias(x, n, d, enc->spk_bg);
    }
    return true;
}

/* Runs encoder frames [frames_out, frames_out + n) into x (rows appended
 * by the caller). */
static bool run_chunk(tr_fc_stream *s, tr_pool *pool, int n, bool last, float *x) {
    const tr_fc_encoder *enc = s->enc;
    if (!reserve_rows(s, n) || !pre_encode(s, pool, s->frames_out, n, last, x)) return false;
    const int d = s->d;
    for (int i = 0; i < enc->hp.n_layers; i++) {
        const tr_fc_block *blk = &enc->blocks[i];
        fcs_layer *L = &s->layers[i];
        ff_half(s, pool, &blk->norm_ff1, &blk->ff1_w1, &blk->ff1_w2, x, n);
        attn_residual(s, pool, blk, L, x, n);
        conv_residual(s, pool, blk, L, x, n);
        ff_half(s, pool, &blk->norm_ff2, &blk->ff2_w1, &blk->ff2_w2, x, n);
        tr_layer_norm(pool, x, x, n, d, blk->norm_out.w, blk->norm_out.b, FCS_LN_EPS);
    }
    kv_advance(s, n);
    s->frames_out += n;
    /* mel before the next chunk's pre-encode window is no longer needed */
    const long keep_from =
        s->frames_out >= FCS_PRE_LOOKBACK ? 8L * (s->frames_out - FCS_PRE_LOOKBACK) : 0;
    if (keep_from > s->mel_base) {
        const int drop =
            (int)(keep_from - s->mel_base) < s->mel_n ? (int)(keep_from - s->mel_base) : s->mel_n;
        memmove(s->mel, s->mel + (size_t)drop * s->n_mels,
                sizeof(float) * (size_t)(s->mel_n - drop) * s->n_mels);
        s->mel_n -= drop;
        s->mel_base += drop;
    }
    return true;
}

transcribe_status tr_fc_stream_push(tr_fc_stream *s, tr_pool *pool, const float *mel, int n,
                                    bool last, const float **rows, int *n_rows) {
    *rows = NULL;
    *n_rows = 0;
    if (s->ended || n < 0 || (n > 0 && !mel)) {
        TR_ERROR("fastconformer: stream push after the end or with bad arguments (n %d)", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int nm = s->n_mels;
    if (s->mel_n + n > s->mel_cap) {
        int cap = s->mel_cap ? s->mel_cap : 64;
        while (cap < s->mel_n + n) cap *= 2;
        float *p = realloc(s->mel, sizeof(float) * (size_t)cap * nm);
        if (!p) return TRANSCRIBE_ERR_OOM;
        s->mel = p;
        s->mel_cap = cap;
    }
    if (n) memcpy(s->mel + (size_t)s->mel_n * nm, mel, sizeof(float) * (size_t)n * nm);
    s->mel_n += n;
    const long have = s->mel_base + s->mel_n; /* mel frames seen */
    /* frame t is final once mel frame 8t exists: frames < (have - 1) / 8 + 1 */
    int avail = have > 0 ? (int)((have - 1) / 8 + 1) : 0;
    if (last) avail = have > 0 ? tr_fc_out_frames(s->enc, (int)have) : 0;
    int todo = avail - s->frames_out;
    if (!last) todo -= todo % s->chunk; /* whole chunks only */
    if (todo <= 0) {
        s->ended = last;
        return TRANSCRIBE_OK;
    }
    if (!tr_fc_buf_reserve(&s->x, (size_t)todo * s->d)) return TRANSCRIBE_ERR_OOM;
    for (int done = 0; done < todo;) {
        const int c = todo - done < s->chunk ? todo - done : s->chunk;
        /* at the end every window runs to the real end: the zero-padded
         * tail frames may reach back into the previous chunk */
        if (!run_chunk(s, pool, c, last, s->x.p + (size_t)done * s->d)) {
            TR_ERROR("fastconformer: out of memory streaming a chunk");
            return TRANSCRIBE_ERR_OOM;
        }
        done += c;
    }
    s->ended = last;
    *rows = s->x.p;
    *n_rows = todo;
    return TRANSCRIBE_OK;
}
