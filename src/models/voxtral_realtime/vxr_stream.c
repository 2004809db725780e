/* Native streaming of Voxtral Realtime (docs/formats/voxtral_realtime.md §8; docs/c-api.md §14).
 * Each feed holds its samples; once min_decode_interval_ms of new audio has arrived, the
 * incremental encoder (vxr_enc.c) encodes what they complete (only the mel frames whose windows
 * are whole, the stem, the blocks over the new frames, one audio row per 80 ms) and the LM steps
 * once per new audio row:
 * the prompt is prefilled as soon as its 33 + d rows exist, then position p feeds the previous
 * token plus audio row p. A token, once emitted, is final (the model is causal and greedy), so
 * the hypothesis only grows and every token is committed at once. Finalize appends the offline
 * right padding (docs/formats/voxtral_realtime.md §4) and decodes to the offline horizon with the
 * offline guard: the final text is the offline run's for the same audio and delay.
 *
 * The decoder cache attends to every earlier position, as the offline run does (the family README
 * says why); audio rows are dropped as soon as they are consumed, so per-feed work and memory are
 * the encoder's bounded ring and buffers plus one cache row per 80 ms. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "core/abi.h"
#include "models/voxtral_realtime/vxr.h"
#include "nn/greedy.h"
#include "text/tokenizer.h"
#include "transcribe/voxtral_realtime.h"
#include "util/log.h"
#include "util/timer.h"

#define WHO                  "voxtral_realtime"
#define VXR_DEFAULT_INTERVAL 1000 /* ms (docs/formats/voxtral_realtime.md §8) */
/* Drafts per decoder pass (the family README, "Speculative rows"): 1 + 3 rows are one group of
 * the verify step's multi-row integer dots, each weight read and unpacked once for the four (about
 * two one-row steps of time on Q4_K_M at 2 threads); more rows would cost per row as much. */
#define VXR_DRAFTS 3
/* Longest pause of drafting after a verify whose first draft was rejected (steps). */
#define VXR_DRAFT_PAUSE_MAX 32

struct vxr_stream {
    int delay, interval_ms;
    int64_t n_fed, last_dec; /* samples */
    bool prefilled, done, truncated;
    int p;              /* next decoder position */
    int32_t next;       /* token fed at p */
    int pause, backoff; /* plain steps left before drafting again; the next pause's length */
    int32_t draft;      /* the latest draft id (a new one resumes drafting at once) */
    float *clean;
    size_t clean_cap;
};

void tr_vxr_stream_free(struct vxr_stream *st) {
    if (!st) return;
    free(st->clean);
    free(st);
}

static void stream_clear(vxr_session *s) {
    struct vxr_stream *st = s->stream;
    st->n_fed = st->last_dec = 0;
    st->prefilled = st->done = st->truncated = false;
    st->p = 0;
    st->next = -1;
    st->pause = st->backoff = 0;
    st->draft = -1;
    s->n_ids = 0;
    tr_vxr_enc_reset(&s->enc);
    tr_clm_clear_input_rows(s->dec.lm);
}

void tr_vxr_stream_reset(vxr_session *s) {
    if (s->stream) stream_clear(s);
}

/* The VRST extension's values (docs/formats/voxtral_realtime.md §8): delay −1 → the file's default,
 * else 1..15 or 30; interval −1 → 1000 ms, 0 = every feed, < −1 refused. */
static transcribe_status ext_values(const vxr_model *m, const struct transcribe_ext *ext,
                                    int *delay, int *interval) {
    *delay = m->hp.default_delay;
    *interval = VXR_DEFAULT_INTERVAL;
    if (!ext) return TRANSCRIBE_OK;
    const size_t size = sizeof(struct transcribe_voxtral_realtime_stream_ext);
    if (tr_ext_check(ext, TRANSCRIBE_EXT_KIND_VOXTRAL_REALTIME_STREAM, size) != TRANSCRIBE_OK) {
        TR_ERROR(WHO ": the stream extension is not a VRST extension of %zu bytes", size);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const struct transcribe_voxtral_realtime_stream_ext *x = (const void *)ext;
    if (x->num_delay_tokens != -1 && !tr_vxr_delay_ok(x->num_delay_tokens)) {
        TR_ERROR(WHO ": num_delay_tokens %d (-1 = default, 1..15 or 30)", (int)x->num_delay_tokens);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (x->min_decode_interval_ms < -1) {
        TR_ERROR(WHO ": min_decode_interval_ms %d (-1 = default, 0 = every feed, or positive)",
                 (int)x->min_decode_interval_ms);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (x->num_delay_tokens != -1) *delay = x->num_delay_tokens;
    if (x->min_decode_interval_ms >= 0) *interval = x->min_decode_interval_ms;
    return TRANSCRIBE_OK;
}

transcribe_status tr_vxr_validate_stream(const vxr_model *m, const struct transcribe_ext *ext) {
    int d, ms;
    return ext_values(m, ext, &d, &ms);
}

transcribe_status tr_vxr_stream_begin(vxr_session *s, tr_stream_ctx *ctx) {
    const vxr_model *m = s->m;
    int d = 0, ms = 0;
    transcribe_status st = tr_vxr_validate_run(m, ctx->params);
    if (st != TRANSCRIBE_OK) return st;
    if ((st = ext_values(m, ctx->ext, &d, &ms))) return st;
    if (!s->stream) {
        s->stream = calloc(1, sizeof *s->stream);
        if (!s->stream) return TRANSCRIBE_ERR_OOM;
    }
    if (ctx->pool) s->dec.pool = ctx->pool;
    stream_clear(s);
    s->stream->delay = d;
    s->stream->interval_ms = ms;
    tr_vxr_set_delay(s, d);
    if (s->delay != d) return TRANSCRIBE_ERR_OOM;
    /* docs/formats/voxtral_realtime.md §8: the decoder's window as a ring */
    tr_clm_set_window(s->dec.lm, m->hp.dec_window);
    if ((st = tr_clm_reserve(s->dec.lm, 1, m->hp.dec_window))) return st;
    tr_result_set_timestamp_kind(ctx->result, TRANSCRIBE_TIMESTAMPS_NONE);
    ctx->n_native_committed_toks = 0;
    return TRANSCRIBE_OK;
}

/* Appends a generated id; false when the repetition guard stops decoding (ids trimmed as the
 * offline loop trims them). */
static bool take(vxr_session *s, int32_t tok) {
    s->ids[s->n_ids++] = tok;
    const int keep = tr_vxr_guard_keep(s->m, s->ids, s->n_ids, false);
    if (s->n_ids > 1 && keep < s->n_ids) {
        TR_WARN(WHO ": the stream's output repeats itself; stopped after %d tokens, kept %d",
                s->n_ids, keep);
        s->n_ids = keep;
        return false;
    }
    return true;
}

/* The draft for the rows after the current one: a trained model emits [STREAMING_PAD] for every
 * 80 ms row without a new word and control ids come in runs, so the id the last two emitted
 * ids repeat, else the streaming pad. */
static int32_t draft_id(const vxr_session *s) {
    if (s->n_ids >= 2 && s->ids[s->n_ids - 1] == s->ids[s->n_ids - 2]) return s->ids[s->n_ids - 1];
    return s->m->hp.pad;
}

/* One decoder pass at position p over the fed token and up to `room` drafts whose audio rows are
 * in (the family README, "Speculative rows"): got[i] is greedy's token after row i, and the rows
 * past the first wrong draft are not used; returns the rows whose tokens are greedy's (>= 1), or
 * 0 on OOM. */
static int decode_rows(vxr_session *s, int room, int32_t *got) {
    struct vxr_stream *st = s->stream;
    const int32_t d = draft_id(s);
    if (d != st->draft) st->pause = st->backoff = 0; /* a run of another id begins */
    st->draft = d;
    int k = st->pause > 0 ? 0 : (room < VXR_DRAFTS ? room : VXR_DRAFTS);
    if (st->pause > 0) st->pause--;
    int32_t toks[1 + VXR_DRAFTS];
    toks[0] = st->next;
    for (int i = 1; i <= k; i++) toks[i] = d;
    if (k == 0) {
        int pos = st->p, slot = 0;
        return tr_clm_step(s->dec.lm, s->dec.pool, toks, &pos, &slot, 1, got) ? 1 : 0;
    }
    if (!tr_clm_step_seq(s->dec.lm, s->dec.pool, toks, 1 + k, st->p, 0, got)) return 0;
    int n = 1;
    while (n <= k && got[n - 1] == toks[n]) n++;
    if (n == 1) { /* the first draft was wrong: plain steps for a while (1, 2, 4 .. 32) */
        st->backoff = st->backoff ? 2 * st->backoff : 1;
        if (st->backoff > VXR_DRAFT_PAUSE_MAX) st->backoff = VXR_DRAFT_PAUSE_MAX;
        st->pause = st->backoff;
    } else {
        st->backoff = 0;
    }
    return n;
}

/* Steps the decoder over every audio row the encoder has (up to `limit` positions). */
static transcribe_status decode_ready(vxr_session *s, int64_t limit, tr_stream_ctx *ctx) {
    struct vxr_stream *st = s->stream;
    const vxr_model *m = s->m;
    vxr_enc *e = &s->enc;
    const int T = 1 + VXR_LEFT_PAD_TOK + st->delay;
    const int64_t avail = e->audio0 + e->n_audio;
    if (!st->prefilled) {
        if (avail < T || (limit >= 0 && limit <= T)) return TRANSCRIBE_OK;
        float *x = malloc((size_t)T * m->lm.d_model * sizeof(float));
        if (!x || !tr_vxr_ids_reserve(s, 256)) {
            free(x);
            return TRANSCRIBE_ERR_OOM;
        }
        tr_vxr_prompt(s, st->delay, e->audio, x);
        const int first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, T, 0, s->dec.last_logits);
        free(x);
        if (first < 0) return TRANSCRIBE_ERR_OOM;
        st->prefilled = true;
        st->p = T;
        st->next = first;
        s->n_ids = 0;
        if (first == m->hp.eos)
            st->done = true;
        else
            s->ids[s->n_ids++] = first;
    }
    const int64_t end = limit >= 0 && limit < avail ? limit : avail;
    while (!st->done && st->p < end) {
        if (tr_stream_abort_poll(ctx)) return TRANSCRIBE_ERR_ABORTED;
        if (st->p + 1 > m->hp.max_pos) { /* docs/formats/voxtral_realtime.md §8: the position cap */
            st->done = st->truncated = true;
            break;
        }
        if (!tr_vxr_ids_reserve(s, s->n_ids + 1 + VXR_DRAFTS) ||
            !tr_clm_set_input_rows(s->dec.lm, 0, e->audio, e->audio0, e->n_audio))
            return TRANSCRIBE_ERR_OOM;
        /* drafts only where their audio rows are in and their positions below the cap */
        int64_t room = end - st->p - 1;
        if (room > m->hp.max_pos - st->p - 1) room = m->hp.max_pos - st->p - 1;
        int32_t got[1 + VXR_DRAFTS];
        const int n = decode_rows(s, room < VXR_DRAFTS ? (int)room : VXR_DRAFTS, got);
        if (n == 0) return TRANSCRIBE_ERR_OOM;
        /* each row's token as a plain step's: EOS and the guard end the stream where they would */
        for (int i = 0; i < n && !st->done; i++) {
            const int32_t tok = got[i];
            st->p++;
            st->next = tok;
            if (tok == m->hp.eos) {
                st->done = true;
            } else if (!take(s, tok)) {
                st->done = st->truncated = true;
            }
        }
    }
    /* rows before p are consumed (the prompt's at the prefill); after the end, every row */
    if (st->done)
        tr_vxr_enc_drop_audio(e, e->audio0 + e->n_audio);
    else if (st->prefilled)
        tr_vxr_enc_drop_audio(e, st->p);
    return TRANSCRIBE_OK;
}

/* The hypothesis: the offline result of the ids so far (vxr_run.c: one segment, one token row
 * per text id whose texts join to the text, so the dispatcher commits by rows). */
static transcribe_status build_result(vxr_session *s, tr_result *res) {
    tr_result_clear(res);
    return tr_vxr_fill_result(s->m, s->ids, s->n_ids, s->stream->n_fed, res);
}

static void report(vxr_session *s, tr_stream_ctx *ctx, bool final) {
    struct vxr_stream *st = s->stream;
    const int64_t sr = s->m->mel.sample_rate;
    /* audio the decoder has passed: positions past the 32 left-pad tokens, 80 ms each; once
     * decoding has ended (EOS, guard, position cap) no audio can add text: all of it is passed */
    const int64_t R = (int64_t)s->m->hp.per_tok * s->m->mel.hop_length;
    int64_t done = ((int64_t)st->p - VXR_LEFT_PAD_TOK) * R;
    if (done < 0 || !st->prefilled) done = 0;
    if (st->done) done = st->n_fed;
    if (done > st->n_fed) done = st->n_fed;
    ctx->audio_committed_ms = done * 1000 / sr;
    ctx->buffered_ms = final ? 0 : (st->n_fed - done) * 1000 / sr;
    ctx->n_native_committed_toks = ctx->result->n_toks;
    ctx->truncated = st->truncated;
    ctx->grows_only = true;
}

transcribe_status tr_vxr_stream_feed(vxr_session *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    struct vxr_stream *st = s->stream;
    if (!st) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ctx->pool) s->dec.pool = ctx->pool;
    if (tr_stream_abort_poll(ctx)) return TRANSCRIBE_ERR_ABORTED;
    if (n <= 0) {
        report(s, ctx, false);
        return TRANSCRIBE_OK;
    }
    if ((size_t)n > st->clean_cap) {
        float *v = realloc(st->clean, (size_t)n * sizeof *v);
        if (!v) return TRANSCRIBE_ERR_OOM;
        st->clean = v;
        st->clean_cap = (size_t)n;
    }
    tr_pcm_sanitize_copy(pcm, n, st->clean);
    /* the samples are held; the encoder and decoder run once min_decode_interval_ms of new audio
     * is in (docs/formats/voxtral_realtime.md §8), so a pass reads the encoder's weights for many
     * frames at once */
    transcribe_status r = tr_vxr_enc_append(&s->enc, st->clean, n);
    if (r != TRANSCRIBE_OK) return r;
    st->n_fed += n;
    const int64_t sr = s->m->mel.sample_rate;
    if ((st->n_fed - st->last_dec) * 1000 >= (int64_t)st->interval_ms * sr) {
        st->last_dec = st->n_fed;
        const double t0 = tr_time_ms();
        r = tr_vxr_enc_run(&s->enc, s->dec.pool, tr_stream_abort_poll, ctx);
        const double t1 = tr_time_ms();
        ctx->result->encode_ms += (float)(t1 - t0);
        if (r != TRANSCRIBE_OK) return r;
        const int before = s->n_ids;
        r = decode_ready(s, -1, ctx);
        ctx->result->decode_ms += (float)(tr_time_ms() - t1);
        if (r != TRANSCRIBE_OK) return r;
        if (s->n_ids != before || ctx->result->n_segs == 0)
            if ((r = build_result(s, ctx->result)) != TRANSCRIBE_OK) return r;
    }
    report(s, ctx, false);
    return TRANSCRIBE_OK;
}

transcribe_status tr_vxr_stream_finalize(vxr_session *s, tr_stream_ctx *ctx) {
    struct vxr_stream *st = s->stream;
    if (!st) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ctx->pool) s->dec.pool = ctx->pool;
    if (tr_stream_abort_poll(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status r = TRANSCRIBE_OK;
    if (st->n_fed > 0) {
        const int64_t na = tr_vxr_n_audio(s->m, st->n_fed, st->delay);
        if (na + 1 > s->m->hp.max_pos) st->truncated = true;
        r = tr_vxr_enc_finish(&s->enc, s->dec.pool, st->n_fed, st->delay, tr_stream_abort_poll,
                              ctx);
        if (r == TRANSCRIBE_OK) r = decode_ready(s, na, ctx);
        if (r != TRANSCRIBE_OK) return r;
    }
    if ((r = build_result(s, ctx->result)) != TRANSCRIBE_OK) return r;
    if (st->truncated) TR_WARN(WHO ": the stream's output was truncated");
    report(s, ctx, true);
    return TRANSCRIBE_OK;
}
