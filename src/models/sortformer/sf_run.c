/* The Sortformer run (docs/formats/sortformer.md §4–§8): front end, the
 * chunk loop of docs/formats/sortformer.md §6.2 (pre-encode of each mel window, the FastConformer
 * over speaker cache ++ FIFO ++ chunk, projection, post-LN Transformer blocks, head), the state
 * update of sf_stream.c, and the speaker rows of docs/formats/sortformer.md §6.5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "core/abi.h"
#include "models/sortformer/sortformer.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "transcribe/sortformer.h"
#include "util/log.h"
#include "util/timer.h"

#define SF_LN_EPS 1e-5f
#define SF_SUB    8

/* ---- session ---- */

/* Hidden columns per pass of a Transformer feed-forward: tf_ff in n equal
 * blocks of at most tf_d that fall on ff_out's quantization blocks (else
 * one block), so h is [T][tf_d] rather than [T][tf_ff] and every weight is
 * still read once (as the FastConformer's feed-forward, src/nn/README.md). */
static int ff_blocks(const sf_hparams *hp, const tr_tensor *ff_out) {
    const int ff = hp->tf_ff, qb = tr_type_block(ff_out->type);
    for (int n = (ff + hp->tf_d - 1) / hp->tf_d; n > 1 && n <= ff; n++)
        if (ff % n == 0 && qb >= 1 && (ff / n) % qb == 0) return n;
    return 1;
}

/* *p holds at least n floats afterwards (contents not kept). */
static bool grow_buf(float **p, size_t *cap, size_t n) {
    if (n <= *cap) return true;
    free(*p);
    *p = malloc(sizeof(float) * n);
    *cap = *p ? n : 0;
    return *p != NULL;
}

/* X for rows frames or a mel window of win floats, pr for rows frames:
 * exact sizes, regrown when a chunk needs more. */
static bool reserve(sf_session *s, int rows, size_t win) {
    const sf_model *m = s->m;
    const size_t d = (size_t)m->enc_hp.d_model, x = (size_t)rows * d;
    return grow_buf(&s->X, &s->cap_x, x > win ? x : win) &&
           grow_buf(&s->pr, &s->cap_pr, (size_t)rows * (size_t)m->hp.max_spk);
}

/* The head's buffers for T frames, carved from the encoder's arena (idle
 * while the head runs): G, q, k, v, a [T][tf_d] and h [T][widest
 * feed-forward block]. */
typedef struct head_bufs {
    float *G, *q, *k, *v, *a, *h, *pack; /* pack: the attention's K/V copy */
    size_t pack_floats;
} head_bufs;

/* The attention of T frames (its K/V copy's size is asked with it). */
static tr_attn_args head_attn(const sf_hparams *hp, const head_bufs *b, int T) {
    const int D = hp->tf_d, H = hp->tf_heads, dh = D / H;
    /* q and k each scaled by dh^(-1/4) upstream: one 1/sqrt(dh) on the scores */
    return (tr_attn_args){.q = b ? b->q : NULL,
                          .q_stride = D,
                          .k = b ? b->k : NULL,
                          .v = b ? b->v : NULL,
                          .kv_stride = D,
                          .out = b ? b->a : NULL,
                          .out_stride = D,
                          .n_q = T,
                          .n_kv = T,
                          .kv_valid = T,
                          .n_head = H,
                          .n_head_kv = H,
                          .head_dim = dh,
                          .scale = 1.0f / sqrtf((float)dh),
                          .pack = b ? b->pack : NULL,
                          .pack_floats = b ? b->pack_floats : 0};
}

static size_t r16(size_t n) {
    return (n + 15) / 16 * 16;
}

static size_t head_floats(const sf_model *m, int T, size_t *row, size_t *wide, size_t *pack) {
    size_t w = 1;
    for (int i = 0; i < m->hp.tf_layers; i++) {
        const size_t b = (size_t)(m->hp.tf_ff / ff_blocks(&m->hp, m->tf[i].ff_out.w));
        if (b > w) w = b;
    }
    const tr_attn_args a = head_attn(&m->hp, NULL, T);
    *row = r16((size_t)T * (size_t)m->hp.tf_d);
    *wide = r16((size_t)T * w);
    *pack = r16(tr_attention_pack_floats(&a));
    return 5 * *row + *wide + *pack;
}

static bool head_borrow(sf_session *s, int T, head_bufs *b) {
    size_t row, wide, pack;
    float *p = tr_fc_work_borrow(s->work, head_floats(s->m, T, &row, &wide, &pack));
    if (!p) return false;
    *b = (head_bufs){p,           p + row,     p + 2 * row,        p + 3 * row,
                     p + 4 * row, p + 5 * row, p + 5 * row + wide, pack};
    return true;
}

static void session_release(sf_session *s) {
    tr_fc_work_free(s->work);
    tr_sf_state_free(&s->st);
    free(s->X);
    free(s->pr);
}

static transcribe_status session_setup(sf_session *s, const tr_session_cfg *cfg) {
    s->pool = cfg->pool; /* n_ctx and kv_type mean nothing here (docs/formats/sortformer.md §8) */
    s->work = tr_fc_work_new();
    if (!s->work || !tr_sf_state_init(&s->st, s->m->enc_hp.d_model, s->m->hp.max_spk))
        return TRANSCRIBE_ERR_OOM;
    return TRANSCRIBE_OK;
}

TR_FAMILY_SESSION(sf, session_setup, session_release)

/* ---- docs/formats/sortformer.md §5.2 after the Conformer, docs/formats/sortformer.md §5.3 ---- */

static void tf_block(sf_session *s, const sf_tf_block *b, int T, const head_bufs *hb) {
    const sf_hparams *hp = &s->m->hp;
    const int D = hp->tf_d;
    tr_pool *pool = s->pool;
    tr_nn_linear_fwd(pool, &b->q, hb->G, T, hb->q);
    tr_nn_linear_fwd(pool, &b->k, hb->G, T, hb->k);
    tr_nn_linear_fwd(pool, &b->v, hb->G, T, hb->v);
    const tr_attn_args a = head_attn(hp, hb, T);
    tr_attention(pool, &a);
    tr_nn_linear_fwd(pool, &b->o, hb->a, T, hb->q);
    tr_ew_axpy(pool, hb->q, hb->G, 1.0f, (long)T * D);
    tr_layer_norm(pool, hb->q, hb->G, T, D, b->norm1.w, b->norm1.b, SF_LN_EPS);
    /* hidden columns in blocks through h; partial products in k, summed into q */
    const int n = ff_blocks(hp, b->ff_out.w), blk = hp->tf_ff / n;
    for (int j = 0; j < n; j++) {
        tr_tensor v1 = *b->ff_in.w, v2 = *b->ff_out.w;
        v1.ne[1] = blk;
        v1.data = (const uint8_t *)b->ff_in.w->data + (size_t)j * blk * b->ff_in.w->nb1;
        v2.ne[0] = blk;
        v2.data = (const uint8_t *)b->ff_out.w->data + tr_row_bytes(v2.type, (int64_t)j * blk);
        tr_matmul(pool, &v1, b->ff_in.b ? b->ff_in.b + (size_t)j * blk : NULL, hb->G, T, D, hb->h,
                  blk);
        tr_ew_relu(pool, hb->h, (long)T * blk);
        tr_matmul(pool, &v2, j == 0 ? b->ff_out.b : NULL, hb->h, T, blk, j == 0 ? hb->q : hb->k, D);
        if (j > 0) tr_ew_add(pool, hb->q, hb->k, (long)T * D);
    }
    tr_ew_axpy(pool, hb->q, hb->G, 1.0f, (long)T * D);
    tr_layer_norm(pool, hb->q, hb->G, T, D, b->norm2.w, b->norm2.b, SF_LN_EPS);
}

transcribe_status tr_sf_head(sf_session *s, const float *X, int T, float *pr) {
    const sf_model *m = s->m;
    const int D = m->hp.tf_d, S = m->hp.max_spk;
    head_bufs b;
    if (!head_borrow(s, T, &b)) return TRANSCRIBE_ERR_OOM;
    const head_bufs *hb = &b;
    tr_nn_linear_fwd(s->pool, &m->proj, X, T, hb->G);
    for (int i = 0; i < m->hp.tf_layers; i++) tf_block(s, &m->tf[i], T, hb);
    tr_ew_relu(s->pool, hb->G, (long)T * D);
    tr_nn_linear_fwd(s->pool, &m->fc1, hb->G, T, hb->q);
    tr_ew_relu(s->pool, hb->q, (long)T * D);
    tr_nn_linear_fwd(s->pool, &m->single, hb->q, T, pr);
    for (long i = 0; i < (long)T * S; i++) pr[i] = 1.0f / (1.0f + expf(-pr[i]));
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/sortformer.md §6.2 chunk loop ---- */

typedef struct poll_ctx {
    tr_run_ctx *ctx;
} poll_ctx;

static bool poll_abort(void *user) {
    poll_ctx *p = user;
    return p->ctx && tr_run_should_abort(p->ctx);
}

/* Where a chunk's mel window comes from: the whole mel [n_mels][T_mel], or
 * (mel NULL) the PCM, one window at a time. */
typedef struct mel_src {
    const float *mel;
    const float *pcm;
    int64_t n;
    double ms; /* time spent computing windows */
} mel_src;

static int mel_margin(const sf_model *m) {
    return (m->mel.n_fft / 2 + m->mel.hop_length) / m->mel.hop_length + 1; /* frames: 3 */
}

/* Floats of a window of M frames (its margins included, as mel_window
 * computes it before cropping). */
static size_t win_floats(const sf_model *m, int M) {
    return (size_t)m->mel.n_mels * (size_t)(M + 2 * mel_margin(m) + 1);
}

/* Mel frames [lo, hi) of the whole input's mel into win [nm][hi - lo], from
 * the PCM alone: with a margin of mg frames (mg·hop > n_fft/2), the mel of
 * the slice of samples [a, b), a = hop·max(0, lo - mg), b = min(n, hop·(hi +
 * mg)), has at frame j exactly frame a/hop + j of the whole signal for
 * every frame kept. Frame t reads samples hop·t - n_fft/2 .. hop·t +
 * n_fft/2 - 1 and one before for the pre-emphasis, all inside the slice
 * for lo <= t < hi; the zero padding and the zeroed frames t >= floor(n/hop)
 * of docs/formats/sortformer.md §4 only matter where the slice ends the
 * signal, and there they coincide. Needs ceil framing, zero padding and
 * normalize = none (no statistic over the whole input): tr_sf_run checks. */
static transcribe_status mel_window(const sf_model *m, tr_pool *pool, mel_src *src, int lo, int hi,
                                    float *win, size_t cap) {
    const int hop = m->mel.hop_length, nm = m->mel.n_mels, M = hi - lo;
    const int mg = mel_margin(m);
    const int af = lo - mg > 0 ? lo - mg : 0;
    const int64_t a = (int64_t)af * hop, b_max = (int64_t)(hi + mg) * hop;
    const int64_t b = b_max < src->n ? b_max : src->n;
    const double t0 = tr_time_ms();
    int T_w = 0;
    /* computed in place, then each bin's row moved down to the window's M
     * frames (a row never lands on a later row's source) */
    transcribe_status st = tr_mel_compute_into(&m->mel, src->pcm + a, b - a, pool, win, cap, &T_w);
    if (st == TRANSCRIBE_OK && T_w < hi - af) {
        TR_ERROR("sortformer: mel window %d..%d gave %d frames", lo, hi, T_w);
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (st == TRANSCRIBE_OK)
        for (int f = 0; f < nm; f++)
            memmove(win + (size_t)f * M, win + (size_t)f * T_w + (lo - af),
                    sizeof(float) * (size_t)M);
    src->ms += tr_time_ms() - t0;
    return st;
}

static transcribe_status diarize(sf_session *s, mel_src *src, int T_mel, const sf_stream_cfg *cfg,
                                 tr_run_ctx *ctx, float **probs, int *n_frames) {
    const float *mel = src->mel;
    const sf_model *m = s->m;
    const int nm = m->mel.n_mels, d = m->enc_hp.d_model, S = m->hp.max_spk;
    *probs = NULL;
    *n_frames = 0;
    sf_state *st = &s->st;
    tr_sf_state_reset(st);
    const int L = T_mel, lc = cfg->lc, rc = cfg->rc;
    const int max_win = (cfg->chunk_len + lc + rc) * SF_SUB;
    /* every buffer at its largest before the first chunk (cache ++ FIFO ++
     * the longest chunk), so the chunks allocate nothing and no freed
     * smaller buffer is left behind; the mel window lives in X until the
     * chunk's rows are pre-encoded */
    const int T_dmax = tr_fc_out_frames(m->enc, max_win);
    const int T_max = cfg->spkcache_len + cfg->fifo_len + T_dmax;
    const size_t win_max = win_floats(m, max_win);
    size_t row, wide, pack;
    /* the cache holds at most its length plus one update's pops (the whole
     * FIFO and chunk), the FIFO its length plus a chunk */
    const int ff_max = cfg->fifo_len + T_dmax;
    if (!reserve(s, T_max, win_max) ||
        !tr_fc_work_reserve(m->enc, s->pool, s->work, T_max,
                            head_floats(m, T_max, &row, &wide, &pack)) ||
        !tr_sf_state_reserve(st, cfg->spkcache_len + ff_max, ff_max))
        return TRANSCRIBE_ERR_OOM;
    transcribe_status rs = TRANSCRIBE_OK;
    poll_ctx poll = {ctx};
    int stt = 0, end = 0;
    while (end < L) {
        if (ctx && tr_run_should_abort(ctx)) {
            rs = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        const int lo_off = lc * SF_SUB < stt ? lc * SF_SUB : stt;
        end = stt + cfg->chunk_len * SF_SUB < L ? stt + cfg->chunk_len * SF_SUB : L;
        const int ro_off = rc * SF_SUB < L - end ? rc * SF_SUB : L - end;
        const int lo = stt - lo_off, hi = end + ro_off, M = hi - lo;
        const int lcf = (lo_off + SF_SUB / 2) / SF_SUB, rcf = (ro_off + SF_SUB - 1) / SF_SUB;
        const int T_diar = tr_fc_out_frames(m->enc, M);
        const int T_cat = st->sc_n + st->ff_n + T_diar;
        /* the chunk's pre-encoded rows go right after the FIFO's (its
         * spare rows), where the update appends them */
        if (!reserve(s, T_cat, win_floats(m, M)) ||
            !tr_sf_state_reserve(st, st->sc_n, st->ff_n + T_diar)) {
            rs = TRANSCRIBE_ERR_OOM;
            break;
        }
        float *win = s->X;
        if (mel)
            for (int b = 0; b < nm; b++)
                memcpy(win + (size_t)b * M, mel + (size_t)b * L + lo, sizeof(float) * (size_t)M);
        else if ((rs = mel_window(m, s->pool, src, lo, hi, win, s->cap_x)))
            break;
        float *E = st->ff + (size_t)st->ff_n * d;
        rs = tr_fc_pre_encode_rows(m->enc, s->pool, s->work, win, M, E);
        if (rs) break;
        /* docs/formats/sortformer.md §5.2: X = spkcache ++ fifo ++ chunk (raw pre-encode rows) */
        float *X = s->X;
        /* the cache and FIFO start empty (NULL buffers): copy only what they hold */
        if (st->sc_n) memcpy(X, st->sc, sizeof(float) * (size_t)st->sc_n * d);
        if (st->ff_n)
            memcpy(X + (size_t)st->sc_n * d, st->ff, sizeof(float) * (size_t)st->ff_n * d);
        memcpy(X + (size_t)(st->sc_n + st->ff_n) * d, E, sizeof(float) * (size_t)T_diar * d);
        rs = tr_fc_forward_rows(m->enc, s->pool, s->work, X, T_cat, poll_abort, &poll);
        if (rs) break;
        if ((rs = tr_sf_head(s, X, T_cat, s->pr))) break;
        /* a compression builds the new cache in the encoder's arena (idle now) */
        st->lend = tr_fc_work_borrow(s->work, (size_t)cfg->spkcache_len * (size_t)d);
        st->lend_floats = st->lend ? (size_t)cfg->spkcache_len * (size_t)d : 0;
        const bool up = tr_sf_state_update(st, cfg, E, T_diar, s->pr, lcf, rcf);
        st->lend = NULL;
        st->lend_floats = 0;
        if (!up) {
            rs = TRANSCRIBE_ERR_OOM;
            break;
        }
        stt = end;
        if (ctx) tr_run_report_progress(ctx, 0.05 + 0.95 * (double)end / L);
    }
    if (rs) return rs;
    const int n_out = (L + SF_SUB - 1) / SF_SUB;
    const int n = st->out_n < n_out ? st->out_n : n_out;
    *probs = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1) * S);
    if (!*probs) return TRANSCRIBE_ERR_OOM;
    memcpy(*probs, st->out_p, sizeof(float) * (size_t)n * S);
    *n_frames = n;
    return TRANSCRIBE_OK;
}

transcribe_status tr_sf_diarize(sf_session *s, const float *mel, int T_mel,
                                const sf_stream_cfg *cfg, tr_run_ctx *ctx, float **probs,
                                int *n_frames) {
    mel_src src = {.mel = mel};
    return diarize(s, &src, T_mel, cfg, ctx, probs, n_frames);
}

transcribe_status tr_sf_diarize_pcm(sf_session *s, const float *pcm, int64_t n,
                                    const sf_stream_cfg *cfg, tr_run_ctx *ctx, float **probs,
                                    int *n_frames, double *mel_ms) {
    const sf_model *m = s->m;
    mel_src src = {.pcm = pcm, .n = n};
    float *mel = NULL;
    int T_mel = 0;
    *probs = NULL;
    *n_frames = 0;
    const double t0 = tr_time_ms();
    if (m->mel.normalize == TR_NORM_NONE && m->mel.ceil_frames &&
        m->mel.pad_mode == TR_PAD_CONSTANT && n > m->mel.hop_length && n <= INT32_MAX) {
        /* each chunk computes its own mel window: memory bounded by the chunk, not the input */
        T_mel = (int)((n + m->mel.hop_length - 1) / m->mel.hop_length);
    } else {
        transcribe_status st = tr_mel_compute(&m->mel, pcm, n, s->pool, &mel, &T_mel);
        if (st) return st;
        src.mel = mel;
        src.ms = tr_time_ms() - t0;
    }
    if (ctx) tr_run_report_progress(ctx, 0.05);
    transcribe_status st = diarize(s, &src, T_mel, cfg, ctx, probs, n_frames);
    free(mel);
    if (mel_ms) *mel_ms = src.ms;
    return st;
}

/* ---- docs/formats/sortformer.md §6.5 segments ---- */

static int row_cmp(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    for (int i = 0; i < 3; i++) {
        int i2 = i == 1 ? 2 : i == 2 ? 1 : 0; /* start, speaker, end */
        if (x[i2] != y[i2]) return x[i2] < y[i2] ? -1 : 1;
    }
    return 0;
}

int tr_sf_segments(const float *probs, int n_frames, int S, double ms, int64_t **rows) {
    int n = 0, cap = 16;
    int64_t *r = malloc(sizeof(int64_t) * 3 * (size_t)cap);
    if (!r) return -1;
    for (int s = 0; s < S; s++) {
        int t = 0;
        while (t < n_frames) {
            if (!(probs[(size_t)t * S + s] > 0.5f)) {
                t++;
                continue;
            }
            int a = t;
            while (t < n_frames && probs[(size_t)t * S + s] > 0.5f) t++;
            if (n == cap) {
                int64_t *q = realloc(r, sizeof(int64_t) * 3 * (size_t)cap * 2);
                if (!q) {
                    free(r);
                    return -1;
                }
                r = q;
                cap *= 2;
            }
            r[3 * n] = llround(a * ms);
            r[3 * n + 1] = llround(t * ms);
            r[3 * n + 2] = s + 1;
            n++;
        }
    }
    /* upstream lists speaker 1's runs, then speaker 2's ...; we list the same
     * rows by start time (then speaker), the order a reader expects */
    qsort(r, (size_t)n, sizeof(int64_t) * 3, row_cmp);
    *rows = r;
    return n;
}

/* ---- validation and the run (docs/formats/sortformer.md §8, §9) ---- */

static int preset_of(const struct transcribe_run_params *p) {
    if (!p->family) return 0;
    return (int)((const struct transcribe_sortformer_stream_ext *)(const void *)p->family)->preset;
}

transcribe_status tr_sf_validate_run(const sf_model *m, const struct transcribe_run_params *p) {
    (void)m;
    if (p->task == TRANSCRIBE_TASK_TRANSLATE) {
        TR_ERROR("sortformer: a diarizer does not translate");
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    const struct transcribe_ext *e = p->family;
    if (e) {
        transcribe_status st = tr_ext_check(e, TRANSCRIBE_EXT_KIND_SORTFORMER_STREAM,
                                            sizeof(struct transcribe_sortformer_stream_ext));
        if (st == TRANSCRIBE_ERR_INVALID_ARG)
            TR_ERROR("sortformer: run extension kind 0x%08x is not SFST", (unsigned)e->kind);
        else if (st != TRANSCRIBE_OK)
            TR_ERROR("sortformer: run extension is smaller than "
                     "transcribe_sortformer_stream_ext");
        if (st != TRANSCRIBE_OK) return st;
        const int preset = preset_of(p);
        if (preset < 0 || preset > 3) {
            TR_ERROR("sortformer: stream preset %d is out of range (0..3)", preset);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
    }
    return TRANSCRIBE_OK;
}

static transcribe_status fill_result(const sf_model *m, const float *probs, int n, tr_result *res) {
    int64_t *rows = NULL;
    const int k = tr_sf_segments(probs, n, m->hp.max_spk, m->ms_per_frame, &rows);
    if (k < 0) return TRANSCRIBE_ERR_OOM;
    char text[32];
    for (int i = 0; i < k; i++) {
        const int64_t *r = rows + 3 * i;
        tr_result_add_speaker(res, r[0], r[1], (int32_t)r[2], NAN);
        /* the same turn as a transcript segment named after its speaker slot,
         * so text, JSON and subtitle outputs show the diarization */
        snprintf(text, sizeof text, "speaker_%d", (int)r[2]);
        int seg = tr_result_add_segment(res, r[0], r[1], text);
        if (seg >= 0) tr_result_set_segment_speaker(res, seg, (int32_t)r[2]);
    }
    free(rows);
    tr_result_set_full_text(res, "");
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_SEGMENT);
    return res->oom ? TRANSCRIBE_ERR_OOM : TRANSCRIBE_OK;
}

transcribe_status tr_sf_run(sf_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const sf_model *m = s->m;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status st = tr_sf_validate_run(m, ctx->params);
    if (st) return st;
    /* docs/formats/sortformer.md §4: T_mel = ceil(n / hop) must be at least 2 */
    if (!pcm || n_samples <= m->mel.hop_length) {
        TR_ERROR("sortformer: %d samples is too short (at least %d: two mel frames)", n_samples,
                 m->mel.hop_length + 1);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    sf_stream_cfg cfg;
    tr_sf_stream_cfg(m, preset_of(ctx->params), &cfg);
    float *owned = NULL, *probs = NULL;
    const float *x = tr_pcm_sanitized(pcm, n_samples, "sortformer", &owned);
    if (!x) return TRANSCRIBE_ERR_OOM;
    const double t0 = tr_time_ms();
    double mel_ms = 0;
    int n = 0;
    st = tr_sf_diarize_pcm(s, x, n_samples, &cfg, ctx, &probs, &n, &mel_ms);
    ctx->result->mel_ms = (float)mel_ms;
    ctx->result->encode_ms = (float)(tr_time_ms() - t0 - mel_ms);
    if (st) goto done;
    st = fill_result(m, probs, n, ctx->result);
    if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
done:
    free(owned);
    free(probs);
    return st;
}

/* docs/formats/sortformer.md §8: no batched path; utterances run one after another. */
transcribe_status tr_sf_run_batch(sf_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    bool *done = calloc((size_t)n, sizeof *done);
    if (!done) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = TRANSCRIBE_OK;
    for (int i = 0; i < n && st == TRANSCRIBE_OK; i++) {
        if (!tr_run_batch_input_ok("sortformer", pcm, n_samples, i, ctxs, done)) continue;
        transcribe_status u = tr_sf_run(s, pcm[i], n_samples[i], &ctxs[i]);
        if (u == TRANSCRIBE_ERR_OOM || u == TRANSCRIBE_ERR_ABORTED) st = u;
        if (u != TRANSCRIBE_ERR_OOM) tr_run_batch_finish(ctxs, done, i, u);
    }
    if (st == TRANSCRIBE_ERR_ABORTED) tr_run_batch_abort_rest(ctxs, done, n);
    free(done);
    return st;
}
