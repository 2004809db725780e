/* The incremental causal encoder of Voxtral Realtime (docs/formats/voxtral_realtime.md §4, §5):
 * front end, causal conv stem, sliding-window RoPE blocks with a key ring, final norm and
 * projector, each push computing only what its samples complete. Offline runs, batches and
 * streams all go through it, so a stream's audio rows are the offline rows.
 *
 * Mel frames: frame t of the left-padded signal is the periodic-Hann STFT of samples
 * [hop·t − n_fft/2, hop·t + n_fft/2) with zeros outside the signal (its ends are zeros, so the
 * reflect padding of §4 reads zeros too), normalised by the fixed global floor: a frame depends
 * on its own window only and is computed once that window is in. Frames go through the stem in
 * groups of per_tok (8): 8 mel frames → 4 encoder frames → 1 audio row. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/voxtral_realtime/vxr.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define QB       64     /* query rows per attention block (the window mask's extent) */
#define MASK_NEG -1e30f /* a key outside the window (exp() gives 0) */

static int64_t left_pad_samples(const vxr_model *m) {
    return (int64_t)VXR_LEFT_PAD_TOK * m->hp.per_tok * m->mel.hop_length;
}

int64_t tr_vxr_n_audio(const vxr_model *m, int64_t n, int delay) {
    const int64_t R = (int64_t)m->hp.per_tok * m->mel.hop_length;
    return VXR_LEFT_PAD_TOK + (n + R - 1) / R + delay + VXR_RIGHT_EXTRA;
}

bool tr_vxr_delay_ok(int d) {
    return (d >= 1 && d <= 15) || d == 30;
}

static size_t attn_width(const vxr_model *m) {
    return (size_t)m->hp.enc_heads * m->hp.enc_hd;
}

bool tr_vxr_enc_init(vxr_enc *e, const vxr_model *m, bool f16) {
    memset(e, 0, sizeof *e);
    e->m = m;
    const vxr_hparams *h = &m->hp;
    e->ring = h->enc_window - 1 + VXR_ENC_CHUNK;
    const size_t per = (size_t)h->enc_layers * e->ring * attn_width(m);
    const size_t elt = f16 ? sizeof(uint16_t) : sizeof(float);
    bool ring_ok;
    if (f16) {
        e->kh = malloc(per * elt);
        e->vh = malloc(per * elt);
        ring_ok = e->kh && e->vh;
    } else {
        e->kr = malloc(per * elt);
        e->vr = malloc(per * elt);
        ring_ok = e->kr && e->vr;
    }
    e->mel_hist = malloc((size_t)2 * h->n_mels * sizeof(float));
    e->c0_hist = malloc((size_t)h->enc_d * sizeof(float));
    if (!ring_ok || !e->mel_hist || !e->c0_hist) {
        TR_ERROR("voxtral_realtime: out of memory for the encoder's key ring (%zu MiB)",
                 2 * per * elt >> 20);
        tr_vxr_enc_free(e);
        return false;
    }
    tr_vxr_enc_reset(e);
    return true;
}

void tr_vxr_enc_reset(vxr_enc *e) {
    const vxr_model *m = e->m;
    e->n_buf = 0;
    e->n_total = left_pad_samples(m);
    e->buf0 = e->n_total;
    e->mel_next = 0;
    e->mel_end = -1;
    memset(e->mel_hist, 0, (size_t)2 * m->hp.n_mels * sizeof(float));
    memset(e->c0_hist, 0, (size_t)m->hp.enc_d * sizeof(float));
    e->kv_n = 0;
    e->kv0 = 0;
    e->enc_next = 0;
    e->audio0 = 0;
    e->n_audio = 0;
    e->finished = false;
}

void tr_vxr_enc_free(vxr_enc *e) {
    free(e->buf);
    free(e->mel_hist);
    free(e->c0_hist);
    free(e->kr);
    free(e->vr);
    free(e->kh);
    free(e->vh);
    free(e->audio);
    free(e->work);
    memset(e, 0, sizeof *e);
}

static float *work(vxr_enc *e, size_t floats) {
    if (floats > e->work_cap) {
        float *w = malloc(floats * sizeof(float));
        if (!w) {
            TR_ERROR("voxtral_realtime: out of memory for %zu MiB of encoder scratch",
                     floats * sizeof(float) >> 20);
            return NULL;
        }
        free(e->work);
        e->work = w;
        e->work_cap = floats;
    }
    return e->work;
}

/* Sample i of the left-padded signal (zero outside what is held). */
static inline float sample(const vxr_enc *e, int64_t i) {
    return i >= e->buf0 && i < e->buf0 + e->n_buf ? e->buf[i - e->buf0] : 0.0f;
}

/* Mel frames [t0, t0 + K) as rows [K][n_mels] (malloc'ed into *out). */
static transcribe_status mel_rows(vxr_enc *e, tr_pool *pool, int64_t t0, int K, float **out) {
    const tr_mel_config *c = &e->m->mel;
    const int half = c->n_fft / 2, hop = c->hop_length;
    /* K + 1 uncentred frames: the config drops the last (docs/formats/voxtral_realtime.md §4) */
    const int64_t len = (int64_t)c->n_fft + (int64_t)hop * K;
    float *chunk = malloc((size_t)len * sizeof(float));
    if (!chunk) return TRANSCRIBE_ERR_OOM;
    const int64_t s0 = (int64_t)hop * t0 - half;
    for (int64_t i = 0; i < len; i++) chunk[i] = sample(e, s0 + i);
    int nf = 0;
    transcribe_status st = tr_mel_compute_rows(c, chunk, len, pool, out, &nf);
    free(chunk);
    if (st == TRANSCRIBE_OK && nf != K) {
        TR_ERROR("voxtral_realtime: mel front end gave %d frames, expected %d", nf, K);
        free(*out);
        *out = NULL;
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    return st;
}

/* im2col of a k = 3 causal conv: out row u reads in rows s·u + j (j = 0..2) of `in` (whose row 0
 * is the first left-context row); column ci·3 + j. */
static void im2col3(const float *in, int c_in, int n_out, int stride, float *col) {
    for (int u = 0; u < n_out; u++) {
        float *r = col + (size_t)u * 3 * c_in;
        for (int j = 0; j < 3; j++) {
            const float *x = in + (size_t)(stride * u + j) * c_in;
            for (int ci = 0; ci < c_in; ci++) r[ci * 3 + j] = x[ci];
        }
    }
}

/* Keeps the last W − 1 ring rows of every layer when n more would not fit. */
static void ring_make_room(vxr_enc *e, int n) {
    if (e->kv_n + n <= e->ring) return;
    const vxr_model *m = e->m;
    const size_t A = attn_width(m);
    int keep = m->hp.enc_window - 1;
    if (keep > e->kv_n) keep = e->kv_n;
    const int from = e->kv_n - keep;
    for (int l = 0; l < m->hp.enc_layers; l++) {
        const size_t at = (size_t)l * e->ring * A, off = (size_t)from * A, cnt = (size_t)keep * A;
        if (e->kh) {
            memmove(e->kh + at, e->kh + at + off, cnt * sizeof(uint16_t));
            memmove(e->vh + at, e->vh + at + off, cnt * sizeof(uint16_t));
        } else {
            memmove(e->kr + at, e->kr + at + off, cnt * sizeof(float));
            memmove(e->vr + at, e->vr + at + off, cnt * sizeof(float));
        }
    }
    e->kv0 += from;
    e->kv_n = keep;
}

/* The blocks (docs/formats/voxtral_realtime.md §5 step 3) on x [n][d] at positions P .. P + n − 1;
 * the ring already has room. */
static void blocks(vxr_enc *e, tr_pool *pool, float *x, int n, float *scr) {
    const vxr_model *m = e->m;
    const vxr_hparams *h = &m->hp;
    const int d = h->enc_d, A = (int)attn_width(m), F = h->enc_ffn, H = h->enc_heads,
              hd = h->enc_hd, W = h->enc_window;
    const int64_t P = e->enc_next;
    const size_t rn = (size_t)n;
    float *y = scr, *q = y + rn * d, *o = q + rn * A, *g = o + rn * A, *u = g + rn * F,
          *t = u + rn * F;
    int32_t *pos = (int32_t *)(t + rn * d);
    float *bias = (float *)(pos + rn + 1);
    /* F16 rings: this call's keys / values in F32 before they are rounded into the ring */
    float *kt = bias + (size_t)H * QB * (W - 1 + QB), *vt = kt + rn * A;
    const bool f16 = e->kh != NULL;
    for (int i = 0; i < n; i++) pos[i] = (int32_t)(P + i);
    const int row0 = (int)(P - e->kv0); /* ring row of position P */
    for (int l = 0; l < h->enc_layers; l++) {
        const vxr_enc_block *b = &m->enc[l];
        const size_t at = (size_t)l * e->ring * A;
        float *kr = f16 ? NULL : e->kr + at, *vr = f16 ? NULL : e->vr + at;
        uint16_t *kh = f16 ? e->kh + at : NULL, *vh = f16 ? e->vh + at : NULL;
        float *k = f16 ? kt : kr + (size_t)row0 * A, *v = f16 ? vt : vr + (size_t)row0 * A;
        tr_rms_norm(pool, x, y, n, d, b->norm_attn, h->enc_eps);
        tr_linear(pool, b->wq, b->bq, y, n, q);
        tr_linear(pool, b->wk, NULL, y, n, k);
        tr_linear(pool, b->wv, b->bv, y, n, v);
        tr_rope(q, n, H, hd, A, pos, hd, h->enc_theta, true);
        tr_rope(k, n, H, hd, A, pos, hd, h->enc_theta, true);
        if (f16)
            for (int i = 0; i < n; i++) {
                const size_t o_src = (size_t)i * A, o_dst = (size_t)(row0 + i) * A;
                tr_quantize_row(TR_F16, k + o_src, kh + o_dst, A);
                tr_quantize_row(TR_F16, v + o_src, vh + o_dst, A);
            }
        /* query blocks: keys from the first query's window start to the block's last row;
         * keys before a later query's window are masked */
        for (int i0 = 0; i0 < n; i0 += QB) {
            const int nq = n - i0 < QB ? n - i0 : QB;
            int64_t k_lo = P + i0 - W + 1;
            if (k_lo < e->kv0) k_lo = e->kv0;
            const int r_lo = (int)(k_lo - e->kv0), r_hi = row0 + i0 + nq;
            const int nk = r_hi - r_lo;
            bool masked = false;
            for (int i = 0; i < nq; i++)
                for (int j = 0; j < nk; j++) {
                    const bool out = e->kv0 + r_lo + j < P + i0 + i - W + 1;
                    bias[(size_t)i * nk + j] = out ? MASK_NEG : 0.0f;
                    masked |= out;
                }
            if (masked)
                for (int hh = 1; hh < H; hh++)
                    memcpy(bias + (size_t)hh * nq * nk, bias, (size_t)nq * nk * sizeof(float));
            const tr_attn_args a = {.q = q + (size_t)i0 * A,
                                    .q_stride = A,
                                    .k = f16 ? NULL : kr + (size_t)r_lo * A,
                                    .v = f16 ? NULL : vr + (size_t)r_lo * A,
                                    .kv_stride = A,
                                    .out = o + (size_t)i0 * A,
                                    .out_stride = A,
                                    .n_q = nq,
                                    .n_kv = nk,
                                    .kv_valid = nk,
                                    .n_head = H,
                                    .n_head_kv = H,
                                    .head_dim = hd,
                                    .scale = 1.0f / sqrtf((float)hd),
                                    .causal = true,
                                    .causal_offset = nk - nq,
                                    .pos_bias = masked ? bias : NULL};
            if (f16)
                tr_attention_f16kv(pool, &a, kh + (size_t)r_lo * A, vh + (size_t)r_lo * A);
            else
                tr_attention(pool, &a);
        }
        tr_linear(pool, b->wo, b->bo, o, n, t);
        tr_ew_add(pool, x, t, (long)rn * d);
        tr_rms_norm(pool, x, y, n, d, b->norm_ffn, h->enc_eps);
        const tr_tensor *gu_w[2] = {b->gate, b->up};
        float *gu_y[2] = {g, u};
        tr_linear_group(pool, gu_w, 2, y, n, gu_y);
        tr_ew_silu(pool, g, (long)rn * F);
        for (size_t i = 0; i < rn * F; i++) g[i] *= u[i];
        tr_linear(pool, b->down, b->bd, g, n, t);
        tr_ew_add(pool, x, t, (long)rn * d);
    }
}

static bool audio_reserve(vxr_enc *e, int more) {
    const size_t D = (size_t)e->m->lm.d_model;
    if (e->n_audio + more <= e->audio_cap) return true;
    int cap = e->audio_cap ? e->audio_cap : 64;
    while (cap < e->n_audio + more) cap *= 2;
    float *a = realloc(e->audio, (size_t)cap * D * sizeof(float));
    if (!a) {
        TR_ERROR("voxtral_realtime: out of memory for %d audio rows", cap);
        return false;
    }
    e->audio = a;
    e->audio_cap = cap;
    return true;
}

/* One pass of K mel frames (a multiple of per_tok) from e->mel_next. */
static transcribe_status pass(vxr_enc *e, tr_pool *pool, int K) {
    const vxr_model *m = e->m;
    const vxr_hparams *h = &m->hp;
    const int M = h->n_mels, d = h->enc_d, A = (int)attn_width(m), F = h->enc_ffn,
              D = m->lm.d_model;
    const int n = K / 2, n_rows = n / h->ds;
    float *mel = NULL;
    transcribe_status st = mel_rows(e, pool, e->mel_next, K, &mel);
    if (st != TRANSCRIBE_OK) return st;
    /* scratch: stem (ext0, col, y0) and blocks (x + the block work area + bias) */
    const int nk_max = h->enc_window - 1 + QB;
    const size_t wide = (size_t)(M > d ? M : d);
    const size_t stem = (size_t)(K + 2) * M + (size_t)K * 3 * wide + (size_t)(K + 1) * d;
    const size_t blk =
        (size_t)n * (2 * d + 4 * A + 2 * F) + (size_t)n + 2 + (size_t)h->enc_heads * QB * nk_max;
    size_t need = stem > blk ? stem : blk;
    if ((size_t)n_rows * D > need) need = (size_t)n_rows * D;
    float *w = work(e, need);
    if (!w || !audio_reserve(e, n_rows)) {
        free(mel);
        return TRANSCRIBE_ERR_OOM;
    }
    /* conv 0 (k 3, stride 1, two left-context frames) */
    float *ext0 = w, *col = ext0 + (size_t)(K + 2) * M, *ext1 = col + (size_t)K * 3 * wide;
    memcpy(ext0, e->mel_hist, (size_t)2 * M * sizeof(float));
    memcpy(ext0 + (size_t)2 * M, mel, (size_t)K * M * sizeof(float));
    free(mel);
    memcpy(e->mel_hist, ext0 + (size_t)K * M, (size_t)2 * M * sizeof(float));
    im2col3(ext0, M, K, 1, col);
    memcpy(ext1, e->c0_hist, (size_t)d * sizeof(float));
    float *y0 = ext1 + d;
    tr_linear(pool, &m->conv0v, m->conv0_b, col, K, y0);
    tr_ew_gelu(pool, y0, (long)K * d);
    memcpy(e->c0_hist, y0 + (size_t)(K - 1) * d, (size_t)d * sizeof(float));
    /* conv 1 (k 3, stride 2, one left-context frame) */
    im2col3(ext1, d, n, 2, col);
    float *x = malloc((size_t)n * d * sizeof(float));
    if (!x) return TRANSCRIBE_ERR_OOM;
    tr_linear(pool, &m->conv1v, m->conv1_b, col, n, x);
    tr_ew_gelu(pool, x, (long)n * d);
    /* blocks, final norm */
    ring_make_room(e, n);
    blocks(e, pool, x, n, w);
    e->kv_n += n;
    e->enc_next += n;
    e->mel_next += K;
    tr_rms_norm(pool, x, x, n, d, m->enc_norm, h->enc_eps);
    /* projector: rows of ds frames side by side */
    float *hid = w;
    tr_linear(pool, m->proj1, NULL, x, n_rows, hid);
    tr_ew_gelu(pool, hid, (long)n_rows * D);
    tr_linear(pool, m->proj2, NULL, hid, n_rows, e->audio + (size_t)e->n_audio * D);
    e->n_audio += n_rows;
    free(x);
    return TRANSCRIBE_OK;
}

/* Frames whose window lies inside what is there (all of them once finished), in whole groups. */
static int64_t frames_ready(const vxr_enc *e) {
    if (e->mel_end >= 0) return e->mel_end;
    const tr_mel_config *c = &e->m->mel;
    const int64_t half = c->n_fft / 2;
    if (e->n_total < half) return 0;
    const int64_t t = (e->n_total - half) / c->hop_length + 1;
    return t / e->m->hp.per_tok * e->m->hp.per_tok;
}

/* Drops the samples no later frame reads. */
static void buf_trim(vxr_enc *e) {
    const int64_t keep_from = (int64_t)e->m->mel.hop_length * e->mel_next - e->m->mel.n_fft / 2;
    if (keep_from <= e->buf0) return;
    int64_t drop = keep_from - e->buf0;
    if (drop > e->n_buf) drop = e->n_buf;
    memmove(e->buf, e->buf + drop, (size_t)(e->n_buf - drop) * sizeof(float));
    e->n_buf -= (int)drop;
    e->buf0 += drop;
}

static transcribe_status run_ready(vxr_enc *e, tr_pool *pool, bool (*should_abort)(void *),
                                   void *abort_user) {
    const int64_t ready = frames_ready(e);
    while (e->mel_next < ready) {
        if (should_abort && should_abort(abort_user)) return TRANSCRIBE_ERR_ABORTED;
        int64_t K = ready - e->mel_next;
        if (K > 2 * VXR_ENC_CHUNK) K = 2 * VXR_ENC_CHUNK;
        transcribe_status st = pass(e, pool, (int)K);
        if (st != TRANSCRIBE_OK) return st;
    }
    buf_trim(e);
    return TRANSCRIBE_OK;
}

transcribe_status tr_vxr_enc_append(vxr_enc *e, const float *pcm, int64_t n) {
    if (e->finished || n < 0 || (int64_t)e->n_buf + n > INT32_MAX)
        return TRANSCRIBE_ERR_INVALID_ARG;
    if (e->n_buf + n > e->buf_cap) {
        int64_t cap = e->buf_cap ? e->buf_cap : 4096;
        while (cap < e->n_buf + n) cap *= 2;
        float *b = realloc(e->buf, (size_t)cap * sizeof(float));
        if (!b) {
            TR_ERROR("voxtral_realtime: out of memory for %lld held samples", (long long)cap);
            return TRANSCRIBE_ERR_OOM;
        }
        e->buf = b;
        e->buf_cap = (int)cap;
    }
    if (n > 0) memcpy(e->buf + e->n_buf, pcm, (size_t)n * sizeof(float));
    e->n_buf += (int)n;
    e->n_total += n;
    return TRANSCRIBE_OK;
}

transcribe_status tr_vxr_enc_run(vxr_enc *e, tr_pool *pool, bool (*should_abort)(void *),
                                 void *abort_user) {
    return run_ready(e, pool, should_abort, abort_user);
}

transcribe_status tr_vxr_enc_push(vxr_enc *e, tr_pool *pool, const float *pcm, int64_t n,
                                  bool (*should_abort)(void *), void *abort_user) {
    /* in slices, so the held samples stay bounded */
    const int64_t slice = (int64_t)2 * VXR_ENC_CHUNK * e->m->mel.hop_length;
    for (int64_t off = 0; off < n; off += slice) {
        const int64_t k = n - off < slice ? n - off : slice;
        transcribe_status st = tr_vxr_enc_append(e, pcm + off, k);
        if (st == TRANSCRIBE_OK) st = run_ready(e, pool, should_abort, abort_user);
        if (st != TRANSCRIBE_OK) return st;
    }
    return e->finished ? TRANSCRIBE_ERR_INVALID_ARG : TRANSCRIBE_OK;
}

transcribe_status tr_vxr_enc_finish(vxr_enc *e, tr_pool *pool, int64_t n_samples, int delay,
                                    bool (*should_abort)(void *), void *abort_user) {
    if (e->finished) return TRANSCRIBE_OK;
    const vxr_model *m = e->m;
    const int64_t R = (int64_t)m->hp.per_tok * m->mel.hop_length;
    const int64_t total = tr_vxr_n_audio(m, n_samples, delay) * R;
    if (total < e->n_total) return TRANSCRIBE_ERR_INVALID_ARG;
    e->n_total = total; /* the right padding: zeros past the held samples */
    e->mel_end = total / m->mel.hop_length;
    e->finished = true;
    return run_ready(e, pool, should_abort, abort_user);
}

void tr_vxr_enc_drop_audio(vxr_enc *e, int64_t upto) {
    const size_t D = (size_t)e->m->lm.d_model;
    int64_t k = upto - e->audio0;
    if (k <= 0) return;
    if (k > e->n_audio) k = e->n_audio;
    memmove(e->audio, e->audio + (size_t)k * D, (size_t)(e->n_audio - k) * D * sizeof(float));
    e->n_audio -= (int)k;
    e->audio0 += k;
}
