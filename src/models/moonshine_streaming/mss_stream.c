/* Native streaming (docs/formats/moonshine_streaming.md §8.1; docs/c-api.md
 * §14). Each feed runs only what its samples complete through
 * the incremental encoder (mss_enc.c: front-end frames, the causal convolutions, every block once
 * its window is there — R_total frames of look-ahead in all), the adapter and cross K/V of the new
 * frames, and, at most every min_decode_interval_ms of new frames, one greedy decode of the segment
 * so far from the start token with the committed tokens forced. Tokens are committed where the last
 * three decodes agree, so committed text only grows; finalize encodes the zero-padded tail exactly
 * as the one-shot run does (the same frames: the stream's final text is the offline text), decodes
 * once more and commits everything.
 *
 * Long streams: the adapter table holds max_position_embeddings frames and
 * a decode costs the segment's length, so a segment closes once it reaches
 * MSS_SEG_FRAMES (or the table): at the quietest encoder frame of its
 * second half, decoded one last time over the frames before it, all its
 * tokens committed; the new segment starts at that frame (its encoder rows
 * kept, re-positioned). Per-feed work and memory stay flat however long
 * the stream runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/moonshine_streaming/mss.h"
#include "audio/audio.h"
#include "core/abi.h"
#include "text/tokenizer.h"
#include "transcribe/moonshine_streaming.h"
#include "util/log.h"
#include "util/timer.h"
#include "util/vec.h"

#define MSS_SEG_FRAMES       1500 /* 30 s */
#define MSS_AGREE            3    /* default: decodes whose common prefix is committed */
#define MSS_HIST             32   /* the most decodes a stream may ask to agree */
#define MSS_DEFAULT_THROTTLE 240  /* ms (docs/formats/moonshine_streaming.md §8.1) */

typedef struct seg_rec {
    int off, n; /* ids in closed[] */
    int64_t f0, f1;
} seg_rec;

struct mss_stream {
    int min_frames;
    int agree;                 /* decodes that must agree (1: every token is committed) */
    int64_t seg0, T, last_dec; /* frames */
    bool decoded;              /* the segment has a decode */
    int32_t *hist[MSS_HIST];   /* latest decodes of the segment (ids incl. committed) */
    int hist_n[MSS_HIST], n_hist;
    int n_commit; /* committed ids of the segment (a prefix of hist[newest]) */
    int32_t *closed;
    size_t n_closed, cap_closed;
    seg_rec *segs;
    size_t n_segs, cap_segs;
    float *energy; /* per frame from ebase */
    int64_t ebase;
    size_t n_energy, cap_energy;
    double e_acc;
    int e_cnt;
    int64_t n_fed;
    bool truncated;  /* a segment's last decode stopped at its budget */
    bool last_trunc; /* the newest decode did */
    float *clean;
    size_t clean_cap;
};

void tr_mss_stream_free(struct mss_stream *st) {
    if (!st) return;
    for (int i = 0; i < MSS_HIST; i++) free(st->hist[i]);
    free(st->closed);
    free(st->segs);
    free(st->energy);
    free(st->clean);
    free(st);
}

static void stream_clear(mss_session *s) {
    struct mss_stream *st = s->stream;
    st->seg0 = st->T = st->last_dec = 0;
    st->decoded = false;
    st->n_hist = 0;
    st->n_commit = 0;
    st->n_closed = st->n_segs = 0;
    st->ebase = 0;
    st->n_energy = 0;
    st->e_acc = 0;
    st->e_cnt = 0;
    st->n_fed = 0;
    st->truncated = st->last_trunc = false;
    tr_mss_enc_reset(&s->enc);
}

void tr_mss_stream_reset(mss_session *s) {
    if (s->stream) stream_clear(s);
}

/* The throttle of a stream extension (docs/formats/moonshine_streaming.md §8.1): -1 / none → 240
 * ms, < -1 refused. */
static transcribe_status throttle_ms(const struct transcribe_ext *ext, int *ms) {
    *ms = MSS_DEFAULT_THROTTLE;
    if (!ext) return TRANSCRIBE_OK;
    transcribe_status st = tr_ext_check(ext, TRANSCRIBE_EXT_KIND_MOONSHINE_STREAMING_STREAM,
                                        sizeof(struct transcribe_moonshine_streaming_stream_ext));
    if (st != TRANSCRIBE_OK) {
        TR_ERROR("moonshine_streaming: the stream extension is not an MSST extension of %zu "
                 "bytes",
                 sizeof(struct transcribe_moonshine_streaming_stream_ext));
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int32_t v =
        ((const struct transcribe_moonshine_streaming_stream_ext *)ext)->min_decode_interval_ms;
    if (v < -1) {
        TR_ERROR("moonshine_streaming: min_decode_interval_ms %d (-1 = default, 0 = every "
                 "frame, or a positive interval)",
                 (int)v);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (v >= 0) *ms = v;
    return TRANSCRIBE_OK;
}

transcribe_status tr_mss_validate_stream(const mss_model *m, const struct transcribe_ext *ext) {
    (void)m;
    int ms = 0;
    return throttle_ms(ext, &ms);
}

transcribe_status tr_mss_stream_begin(mss_session *s, tr_stream_ctx *ctx) {
    const mss_hparams *hp = &s->m->hp;
    int ms = 0;
    transcribe_status st = tr_mss_validate_run(s->m, ctx->params);
    if (st != TRANSCRIBE_OK) return st;
    if ((st = throttle_ms(ctx->ext, &ms))) return st;
    if (!s->stream) {
        s->stream = calloc(1, sizeof *s->stream);
        if (!s->stream) return TRANSCRIBE_ERR_OOM;
    }
    stream_clear(s);
    /* ceil(ms · 16000 / (1000 · spf)), at least 1 (docs/formats/moonshine_streaming.md §8.1) */
    const int64_t f = ((int64_t)ms * MSS_SAMPLE_RATE + 1000LL * hp->spf - 1) / (1000LL * hp->spf);
    s->stream->min_frames = f < 1 ? 1 : (int)f;
    /* docs/formats/moonshine_streaming.md §8.1: stable_prefix_agreement_n, 0 → 3, 1 → every token
     * (at most the history kept) */
    s->stream->agree = ctx->agree_n == 0         ? MSS_AGREE
                       : ctx->agree_n > MSS_HIST ? MSS_HIST
                                                 : (int)ctx->agree_n;
    if (ctx->pool) s->pool = ctx->pool;
    tr_result_set_timestamp_kind(ctx->result, TRANSCRIBE_TIMESTAMPS_NONE);
    ctx->n_native_committed_toks = 0;
    return TRANSCRIBE_OK;
}

static int64_t frame_ms(const mss_hparams *hp, int64_t f) {
    return f * hp->spf * 1000 / MSS_SAMPLE_RATE;
}

static bool push_ids(struct mss_stream *st, const int32_t *ids, int n) {
    if (n <= 0) return true;
    int32_t *v = tr_grow(st->closed, &st->cap_closed, st->n_closed + (size_t)n, sizeof *v, 256);
    if (!v) return false;
    st->closed = v;
    memcpy(v + st->n_closed, ids, (size_t)n * sizeof *v);
    st->n_closed += (size_t)n;
    return true;
}

/* The result: the closed segments, then the open one's newest decode. */
static transcribe_status build_result(mss_session *s, tr_result *res) {
    const mss_model *m = s->m;
    struct mss_stream *st = s->stream;
    /* the stream's stage times so far survive the rebuild */
    const float enc_ms = res->encode_ms, dec_ms = res->decode_ms;
    tr_result_clear(res);
    res->encode_ms = enc_ms;
    res->decode_ms = dec_ms;
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    const int32_t *cur = st->n_hist ? st->hist[st->n_hist - 1] : NULL;
    const int n_cur = st->n_hist ? st->hist_n[st->n_hist - 1] : 0;
    const size_t n_all = st->n_closed + (size_t)n_cur;
    if (n_all == 0) return TRANSCRIBE_OK;
    int32_t *all = malloc(n_all * sizeof *all);
    if (!all) return TRANSCRIBE_ERR_OOM;
    if (st->n_closed) memcpy(all, st->closed, st->n_closed * sizeof *all);
    if (n_cur) memcpy(all + st->n_closed, cur, (size_t)n_cur * sizeof *all);
    char *raw = tr_tokenizer_decode(m->tok, all, (int)n_all, false);
    bool ok = raw && tr_result_set_raw_text(res, raw) &&
              tr_result_set_full_text(res, raw[0] == ' ' ? raw + 1 : raw);
    bool first = true;
    for (size_t i = 0; ok && i < st->n_segs; i++) {
        const seg_rec *g = &st->segs[i];
        ok = tr_mss_add_segment(m, res, st->closed + g->off, g->n, first, frame_ms(&m->hp, g->f0),
                                frame_ms(&m->hp, g->f1));
        first = first && g->n == 0;
    }
    if (ok)
        ok = tr_mss_add_segment(m, res, cur, n_cur, first, frame_ms(&m->hp, st->seg0),
                                frame_ms(&m->hp, st->T));
    free(raw);
    free(all);
    return ok && !res->oom ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* One decode of the open segment over its first n_frames frames, the
 * committed ids forced; the ids become the newest hypothesis. */
static transcribe_status decode_segment(mss_session *s, int64_t n_frames, tr_stream_ctx *ctx,
                                        bool final) {
    struct mss_stream *st = s->stream;
    const mss_hparams *hp = &s->m->hp;
    const int32_t *pre = st->n_hist ? st->hist[st->n_hist - 1] : NULL;
    const int n_pre = st->n_commit;
    const int cap = tr_mss_gen_cap(hp, n_frames);
    int n_out = 0;
    transcribe_status r = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    if (n_pre < cap)
        r = tr_mss_decode(s, (int)n_frames, pre, n_pre, tr_stream_abort_poll, ctx, 0, &n_out);
    if (r != TRANSCRIBE_OK && r != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return r;
    /* a partial decode stops at its (smaller) budget as a matter of course;
     * only a segment's last decode can truncate the text */
    st->last_trunc = r == TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    if (st->last_trunc && final) st->truncated = true;
    /* the oldest history slot takes the new hypothesis */
    int32_t *v;
    if (st->n_hist == st->agree) {
        v = st->hist[0];
        memmove(st->hist, st->hist + 1, (size_t)(st->agree - 1) * sizeof st->hist[0]);
        memmove(st->hist_n, st->hist_n + 1, (size_t)(st->agree - 1) * sizeof st->hist_n[0]);
        st->hist[st->agree - 1] = NULL;
        st->n_hist--;
    } else {
        v = st->hist[st->n_hist];
    }
    if (!v) v = malloc((size_t)hp->max_pos * sizeof *v);
    if (!v) return TRANSCRIBE_ERR_OOM;
    if (n_pre) memmove(v, pre, (size_t)n_pre * sizeof *v);
    memcpy(v + n_pre, s->ids, (size_t)n_out * sizeof *v);
    st->hist[st->n_hist] = v;
    st->hist_n[st->n_hist] = n_pre + n_out;
    st->n_hist++;
    st->decoded = true;
    st->last_dec = st->T;
    if (st->n_hist >= st->agree) {
        const int i0 = st->n_hist - st->agree;
        int c = st->hist_n[i0];
        for (int i = i0 + 1; i < st->n_hist; i++) {
            int k = 0;
            while (k < c && k < st->hist_n[i] && st->hist[i][k] == st->hist[i0][k]) k++;
            c = k;
        }
        if (c > st->n_commit) st->n_commit = c;
    }
    return TRANSCRIBE_OK;
}

/* Closes the open segment at frame `cut`: a last decode over its frames
 * before the cut, every id committed; the next segment starts at the cut
 * with the encoder rows after it re-positioned. */
static transcribe_status close_segment(mss_session *s, int64_t cut, tr_stream_ctx *ctx) {
    struct mss_stream *st = s->stream;
    transcribe_status r = decode_segment(s, cut - st->seg0, ctx, true);
    if (r != TRANSCRIBE_OK) return r;
    const int n = st->hist_n[st->n_hist - 1];
    const size_t off = st->n_closed;
    seg_rec *g = tr_grow(st->segs, &st->cap_segs, st->n_segs + 1, sizeof *g, 16);
    if (!g || !push_ids(st, st->hist[st->n_hist - 1], n)) return TRANSCRIBE_ERR_OOM;
    st->segs = g;
    g[st->n_segs++] = (seg_rec){(int)off, n, st->seg0, cut};
    st->seg0 = cut;
    st->n_hist = 0;
    st->n_commit = 0;
    st->decoded = false;
    tr_mss_rows_drop(&s->enc.out, cut);
    return tr_mss_cross_rows(s, st->seg0, cut, st->T);
}

/* The quietest frame of the open segment's second half (its first frame
 * when it holds none). */
static int64_t quiet_cut(const struct mss_stream *st, int64_t limit) {
    int64_t best = st->seg0 + (limit - st->seg0) / 2;
    float e_best = INFINITY;
    for (int64_t f = best; f < limit; f++) {
        if (f < st->ebase || f - st->ebase >= (int64_t)st->n_energy) continue;
        const float e = st->energy[f - st->ebase];
        if (e < e_best) e_best = e, best = f;
    }
    return best > st->seg0 ? best : limit;
}

static bool note_energy(struct mss_stream *st, const float *pcm, int n, int spf) {
    for (int i = 0; i < n; i++) {
        st->e_acc += (double)pcm[i] * pcm[i];
        if (++st->e_cnt < spf) continue;
        float *v = tr_grow(st->energy, &st->cap_energy, st->n_energy + 1, sizeof *v, 256);
        if (!v) return false;
        st->energy = v;
        v[st->n_energy++] = (float)(st->e_acc / spf);
        st->e_acc = 0;
        st->e_cnt = 0;
    }
    return true;
}

/* New encoder rows into the open segment: adapter and cross K/V, segments
 * closed when they reach their limit. */
static transcribe_status advance(mss_session *s, tr_stream_ctx *ctx) {
    struct mss_stream *st = s->stream;
    const mss_hparams *hp = &s->m->hp;
    const int64_t seg_max = hp->max_pos < MSS_SEG_FRAMES ? hp->max_pos : MSS_SEG_FRAMES;
    const int64_t T_new = s->enc.out.base + s->enc.out.n;
    transcribe_status r = TRANSCRIBE_OK;
    while (r == TRANSCRIBE_OK && st->T < T_new) {
        /* at most up to the open segment's limit */
        const int64_t upto = T_new < st->seg0 + seg_max ? T_new : st->seg0 + seg_max;
        r = tr_mss_cross_rows(s, st->seg0, st->T, upto);
        st->T = upto;
        if (r == TRANSCRIBE_OK && st->T - st->seg0 >= seg_max && st->T < T_new)
            r = close_segment(s, quiet_cut(st, st->T), ctx);
    }
    if (r == TRANSCRIBE_OK && st->T - st->seg0 >= seg_max)
        r = close_segment(s, quiet_cut(st, st->T), ctx);
    /* rows before the open segment are no longer read; nor the energies */
    if (st->seg0 > st->ebase) {
        const int64_t k = st->seg0 - st->ebase < (int64_t)st->n_energy ? st->seg0 - st->ebase
                                                                       : (int64_t)st->n_energy;
        memmove(st->energy, st->energy + k, (st->n_energy - (size_t)k) * sizeof *st->energy);
        st->n_energy -= (size_t)k;
        st->ebase += k;
    }
    tr_mss_rows_drop(&s->enc.out, st->seg0);
    return r;
}

static void report(mss_session *s, tr_stream_ctx *ctx, bool final) {
    struct mss_stream *st = s->stream;
    const mss_hparams *hp = &s->m->hp;
    const int64_t done = st->T * hp->spf;
    ctx->audio_committed_ms = done * 1000 / MSS_SAMPLE_RATE;
    const int64_t held = st->n_fed > done ? st->n_fed - done : 0;
    ctx->buffered_ms = final ? 0 : held * 1000 / MSS_SAMPLE_RATE;
    ctx->n_native_committed_toks = final ? ctx->result->n_toks : (int)st->n_closed + st->n_commit;
    if (ctx->n_native_committed_toks > ctx->result->n_toks)
        ctx->n_native_committed_toks = ctx->result->n_toks;
    ctx->truncated = st->truncated;
    ctx->grows_only = false;
}

transcribe_status tr_mss_stream_feed(mss_session *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    struct mss_stream *st = s->stream;
    if (!st) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ctx->pool) s->pool = ctx->pool;
    if (tr_stream_abort_poll(ctx)) return TRANSCRIBE_ERR_ABORTED;
    /* finite samples (a NaN would poison every later frame's window) */
    float *v = tr_grow(st->clean, &st->clean_cap, (size_t)n, sizeof *v, 0);
    if (!v) return TRANSCRIBE_ERR_OOM;
    st->clean = v;
    tr_pcm_sanitize_copy(pcm, n, v);
    const double t0 = tr_time_ms();
    if (!note_energy(st, v, n, s->m->hp.spf)) return TRANSCRIBE_ERR_OOM;
    st->n_fed += n;
    transcribe_status r = tr_mss_enc_push(&s->enc, s->pool, v, n, false, tr_stream_abort_poll, ctx);
    if (r == TRANSCRIBE_OK) r = advance(s, ctx);
    const double t1 = tr_time_ms();
    ctx->result->encode_ms += (float)(t1 - t0);
    if (r != TRANSCRIBE_OK) return r;
    bool changed = st->n_segs > 0 && !st->decoded && st->n_hist == 0;
    if (st->T - st->seg0 > 0 && st->T - st->last_dec >= st->min_frames) {
        r = decode_segment(s, st->T - st->seg0, ctx, false);
        if (r != TRANSCRIBE_OK) return r;
        changed = true;
    }
    ctx->result->decode_ms += (float)(tr_time_ms() - t1);
    if (changed && (r = build_result(s, ctx->result)) != TRANSCRIBE_OK) return r;
    report(s, ctx, false);
    return TRANSCRIBE_OK;
}

transcribe_status tr_mss_stream_finalize(mss_session *s, tr_stream_ctx *ctx) {
    struct mss_stream *st = s->stream;
    if (!st) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ctx->pool) s->pool = ctx->pool;
    if (tr_stream_abort_poll(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status r = TRANSCRIBE_OK;
    if (st->n_fed > 0) {
        /* the tail zero-padded to a whole front-end frame, every block
         * finished with its window clipped: the one-shot frames
         * (docs/formats/moonshine_streaming.md §5) */
        const double t0 = tr_time_ms();
        r = tr_mss_enc_push(&s->enc, s->pool, NULL, 0, true, tr_stream_abort_poll, ctx);
        if (r == TRANSCRIBE_OK) r = advance(s, ctx);
        const double t1 = tr_time_ms();
        ctx->result->encode_ms += (float)(t1 - t0);
        if (r == TRANSCRIBE_OK && st->T > st->seg0 && (!st->decoded || st->T > st->last_dec))
            r = decode_segment(s, st->T - st->seg0, ctx, true);
        ctx->result->decode_ms += (float)(tr_time_ms() - t1);
        if (r != TRANSCRIBE_OK) return r;
        if (st->decoded && st->last_trunc) st->truncated = true;
    }
    if ((r = build_result(s, ctx->result)) != TRANSCRIBE_OK) return r;
    if (st->truncated)
        TR_WARN("moonshine_streaming: the stream's output was truncated (generation budget)");
    report(s, ctx, true);
    return TRANSCRIBE_OK;
}
