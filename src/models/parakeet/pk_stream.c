/* Native cache-aware streaming (docs/formats/parakeet.md §7.8; docs/c-api.md §14) for
 * the chunked_limited files (nemotron-speech-streaming, nemotron-3.5,
 * multitalker): samples → mel frames as soon as their 512-sample window is
 * complete → the streaming encoder (nn/fastconformer.h tr_fc_stream), which
 * runs each chunk of R + 1 encoder frames once against its caches → the
 * greedy decoder resumed from the state the previous chunk left
 * (tr_pk_decode_resume). Every token decoded is final, so the whole
 * hypothesis is committed at each native chunk boundary.
 *
 * Why the tokens equal the offline run's (up to 1280 encoder frames, i.e.
 * 102.4 s, where the offline run is one pass): these files use
 * normalize = none, so a mel frame depends only on its own samples, and
 * re-running the mel over a window that starts a few hops earlier
 * reproduces it (pre-emphasis needs the one sample before the frame); the
 * encoder stream equals the masked offline forward; the decoder loop is the
 * same loop cut at chunk boundaries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "core/abi.h"
#include "audio/audio.h"
#include "transcribe/parakeet.h"
#include "util/log.h"
#include "util/timer.h"

struct pk_stream {
    tr_fc_stream *enc;
    int choice; /* index of the (L, R) pair enc was built for */
    pk_dec_work dec;
    pk_dec_carry carry;
    pk_toks toks;
    pk_rows rows; /* the result rows of toks, extended as they arrive */
    float *pcm;   /* sanitized samples from global sample pcm_base on */
    int64_t pcm_base, pcm_n, pcm_cap;
    int64_t n_fed;    /* samples fed so far */
    int64_t mel_next; /* next mel frame to compute */
    float *mel_tm;    /* [frames][n_mels] time-major scratch */
    size_t mel_tm_cap;
    float *prompt_hid;
    size_t prompt_cap;
    int prompt_id;
    double mel_ms, enc_ms, dec_ms;
};

static void stream_free(pk_stream *ps) {
    if (!ps) return;
    tr_fc_stream_free(ps->enc);
    tr_pk_dec_work_free(&ps->dec);
    tr_pk_toks_free(&ps->toks);
    tr_pk_rows_free(&ps->rows);
    free(ps->pcm);
    free(ps->mel_tm);
    free(ps->prompt_hid);
    free(ps);
}

void tr_pk_stream_free(pk_stream *ps) {
    stream_free(ps);
}

static void stream_clear(pk_stream *ps) {
    tr_fc_stream_reset(ps->enc);
    tr_pk_dec_carry_reset(&ps->carry);
    ps->toks.n = 0;
    tr_pk_rows_clear(&ps->rows);
    ps->pcm_base = ps->pcm_n = ps->n_fed = ps->mel_next = 0;
    ps->mel_ms = ps->enc_ms = ps->dec_ms = 0;
}

/* Mel frames whose samples lie inside [s0, n) when the window starts at
 * s0 = hop * frame (pre-emphasis reads one sample before the frame). */
static int lead_frames(const tr_mel_config *c) {
    const int pad = c->n_fft / 2;
    return (pad + 1 + c->hop_length - 1) / c->hop_length;
}

bool tr_pk_stream_native(const pk_model *m) {
    return m->hp.att_style == TR_FC_STYLE_CHUNKED_LIMITED && m->mel.normalize == TR_NORM_NONE &&
           m->mel.pad_mode == TR_PAD_CONSTANT && tr_fc_stream_supported(m->enc);
}

/* The (L, R) pair a cache-aware stream extension selects (docs/c-api.md §7.3
 * PKST): -1 (or no extension) → pair 0, the file's default; otherwise the
 * pair whose right context is att_context_right. */
transcribe_status tr_pk_stream_choice(const pk_model *m, const struct transcribe_ext *ext,
                                      int *choice) {
    *choice = 0;
    if (!ext) return TRANSCRIBE_OK;
    if (ext->kind != TRANSCRIBE_EXT_KIND_PARAKEET_STREAM || !tr_pk_stream_native(m)) {
        TR_ERROR("parakeet: this file takes no stream extension of kind 0x%08x", ext->kind);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    transcribe_status st = tr_ext_check(ext, TRANSCRIBE_EXT_KIND_PARAKEET_STREAM,
                                        sizeof(struct transcribe_parakeet_stream_ext));
    if (st != TRANSCRIBE_OK) return st;
    const int32_t r = ((const struct transcribe_parakeet_stream_ext *)ext)->att_context_right;
    if (r == -1) return TRANSCRIBE_OK;
    for (int i = 0; r >= 0 && i < m->n_ctx_choices; i++) {
        if (m->ctx_choices[2 * i + 1] == r) {
            *choice = i;
            return TRANSCRIBE_OK;
        }
    }
    char menu[256];
    size_t at = 0;
    for (int i = 0; i < m->n_ctx_choices && at + 16 < sizeof menu; i++)
        at += (size_t)snprintf(menu + at, sizeof menu - at, "%s%d", i ? ", " : "",
                               (int)m->ctx_choices[2 * i + 1]);
    TR_ERROR("parakeet: att_context_right %d is not in the model's lookahead menu (%s)", (int)r,
             menu);
    return TRANSCRIBE_ERR_INVALID_ARG;
}

transcribe_status tr_pk_stream_begin(pk_session *s, tr_stream_ctx *ctx) {
    const pk_model *m = s->m;
    if (tr_pk_stream_buffered(m)) return tr_pk_bstream_begin(s, ctx);
    if (!tr_pk_stream_native(m)) {
        TR_ERROR("parakeet: native streaming needs a cache-aware (chunked_limited, "
                 "normalize none) file");
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    int choice = 0;
    transcribe_status st = tr_pk_stream_choice(m, ctx->ext, &choice);
    if (st != TRANSCRIBE_OK) return st;
    int pid = -1;
    if (m->prompt.n_prompts > 0) {
        pid = tr_pk_prompt_id(&m->prompt, ctx->params->language);
        if (pid < 0) return tr_pk_validate_run(m, ctx->params);
    }
    if (s->stream && s->stream->choice != choice) {
        stream_free(s->stream); /* built for another lookahead */
        s->stream = NULL;
    }
    if (!s->stream) {
        pk_stream *ps = calloc(1, sizeof *ps);
        if (!ps) return TRANSCRIBE_ERR_OOM;
        tr_pk_rows_init(&ps->rows);
        ps->choice = choice;
        st = tr_fc_stream_new(m->enc, m->ctx_choices[2 * choice], m->ctx_choices[2 * choice + 1],
                              &ps->enc);
        if (st != TRANSCRIBE_OK || !tr_pk_dec_work_init(&ps->dec, &m->head)) {
            stream_free(ps);
            return st != TRANSCRIBE_OK ? st : TRANSCRIBE_ERR_OOM;
        }
        s->stream = ps;
    }
    stream_clear(s->stream);
    s->stream->prompt_id = pid;
    tr_result_clear(ctx->result);
    ctx->n_native_committed_toks = 0;
    return TRANSCRIBE_OK;
}

void tr_pk_stream_reset(pk_session *s) {
    if (tr_pk_stream_buffered(s->m)) {
        tr_pk_bstream_reset(s);
        return;
    }
    if (s->stream) stream_clear(s->stream);
}

/* Encoder rows → prompt MLP → decoder. */
static transcribe_status decode_rows(pk_session *s, tr_stream_ctx *ctx, const float *rows, int n,
                                     int f0) {
    pk_stream *ps = s->stream;
    const pk_model *m = s->m;
    if (n <= 0) return TRANSCRIBE_OK;
    if (ps->prompt_id >= 0) {
        const size_t h = (size_t)m->prompt.hidden;
        const size_t need = ((size_t)n + 1) * h;
        if (need > ps->prompt_cap) {
            float *p = realloc(ps->prompt_hid, need * sizeof(float));
            if (!p) return TRANSCRIBE_ERR_OOM;
            ps->prompt_hid = p;
            ps->prompt_cap = need;
        }
        /* the stream's row buffer is ours until the next push */
        transcribe_status st =
            tr_pk_prompt_apply(&m->prompt, s->pool, ps->prompt_id, (float *)rows, n, ps->prompt_hid,
                               ps->prompt_hid + (size_t)n * h);
        if (st != TRANSCRIBE_OK) return st;
    }
    return tr_pk_decode_resume(&m->head, s->pool, &ps->dec, rows, f0, n, &ps->toks, &ps->carry,
                               tr_stream_abort_poll, ctx);
}

/* Computes the mel frames now complete (all of them at the end), pushes
 * them through the encoder stream and decodes the chunks it returns. */
static transcribe_status advance(pk_session *s, tr_stream_ctx *ctx, bool last) {
    pk_stream *ps = s->stream;
    const pk_model *m = s->m;
    const tr_mel_config *c = &m->mel;
    const int hop = c->hop_length, pad = c->n_fft / 2, nm = c->n_mels;
    const int64_t end = ps->n_fed;
    /* frame f is complete once samples up to f * hop - pad + n_fft exist;
     * at the end every frame up to floor(n / hop) exists (zero padded) */
    int64_t f_end = last ? end / hop + 1 : (end + pad - c->n_fft) / hop + 1;
    if (!last && end + pad < c->n_fft) f_end = 0;
    if (last && end < 2 * hop) return TRANSCRIBE_OK; /* the offline run: too short, empty */
    const int64_t f0 = ps->mel_next;
    float *mel = NULL;
    int T_mel = 0;
    transcribe_status st = TRANSCRIBE_OK;
    double t0 = tr_time_ms();
    if (f_end > f0) {
        const int lead = lead_frames(c);
        const int64_t w0 = f0 > lead ? f0 - lead : 0; /* window's first frame */
        const int64_t s0 = w0 * hop;
        const int64_t s1 = last ? end : (f_end - 1) * hop - pad + c->n_fft;
        st = tr_mel_compute(c, ps->pcm + (s0 - ps->pcm_base), s1 - s0, s->pool, &mel, &T_mel);
        if (st != TRANSCRIBE_OK) return st;
        const int n = (int)(f_end - f0), skip = (int)(f0 - w0);
        if (T_mel < skip + n) {
            free(mel);
            TR_ERROR("parakeet: stream mel window gave %d frames, expected %d", T_mel, skip + n);
            return TRANSCRIBE_ERR_BACKEND;
        }
        const size_t need = (size_t)n * nm;
        if (need > ps->mel_tm_cap) {
            float *p = realloc(ps->mel_tm, need * sizeof(float));
            if (!p) {
                free(mel);
                return TRANSCRIBE_ERR_OOM;
            }
            ps->mel_tm = p;
            ps->mel_tm_cap = need;
        }
        for (int t = 0; t < n; t++)
            for (int f = 0; f < nm; f++)
                ps->mel_tm[(size_t)t * nm + f] = mel[(size_t)f * T_mel + skip + t];
        free(mel);
        ps->mel_next = f_end;
        /* samples before the next window are no longer needed */
        const int64_t keep = (ps->mel_next > lead ? ps->mel_next - lead : 0) * hop;
        if (keep > ps->pcm_base) {
            const int64_t drop = keep - ps->pcm_base;
            memmove(ps->pcm, ps->pcm + drop, (size_t)(ps->pcm_n - drop) * sizeof(float));
            ps->pcm_n -= drop;
            ps->pcm_base = keep;
        }
    }
    double t1 = tr_time_ms();
    ps->mel_ms += t1 - t0;
    const int n_new = (int)(ps->mel_next - f0);
    if (n_new == 0 && !last) return TRANSCRIBE_OK;
    if (n_new == 0 && ps->mel_next == 0) return TRANSCRIBE_OK; /* nothing at all */
    const float *rows = NULL;
    int n_rows = 0;
    const int e0 = tr_fc_stream_frames_out(ps->enc);
    st = tr_fc_stream_push(ps->enc, s->pool, ps->mel_tm, n_new, last, &rows, &n_rows);
    double t2 = tr_time_ms();
    ps->enc_ms += t2 - t1;
    if (st != TRANSCRIBE_OK) return st;
    st = decode_rows(s, ctx, rows, n_rows, e0);
    ps->dec_ms += tr_time_ms() - t2;
    return st;
}

static transcribe_status report(pk_session *s, tr_stream_ctx *ctx) {
    pk_stream *ps = s->stream;
    const pk_model *m = s->m;
    /* the rows grow with the new tokens only (pk_stream_rows.c); the
     * result is this stream's alone from begin on */
    bool changed = false;
    transcribe_status st =
        tr_pk_rows_update(&ps->rows, m, ps->toks.v, ps->toks.n, ctx->params, ctx->result, &changed);
    ctx->result->mel_ms = (float)ps->mel_ms;
    ctx->result->encode_ms = (float)ps->enc_ms;
    ctx->result->decode_ms = (float)ps->dec_ms;
    /* every token decoded so far comes from a finished chunk: all final */
    ctx->n_native_committed_toks = ctx->result->n_toks;
    ctx->grows_only = true;
    const int64_t done_ms = (int64_t)(tr_fc_stream_frames_out(ps->enc) * m->frame_ms);
    const int64_t fed_ms = ps->n_fed * 1000 / m->mel.sample_rate;
    ctx->audio_committed_ms = done_ms < fed_ms ? done_ms : fed_ms;
    ctx->buffered_ms = fed_ms - ctx->audio_committed_ms;
    return st;
}

transcribe_status tr_pk_stream_feed(pk_session *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    if (tr_pk_stream_buffered(s->m)) return tr_pk_bstream_feed(s, pcm, n, ctx);
    pk_stream *ps = s->stream;
    if (!ps || n < 0 || (n > 0 && !pcm)) return TRANSCRIBE_ERR_INVALID_ARG;
    if (ps->pcm_n + n > ps->pcm_cap) {
        int64_t cap = ps->pcm_cap ? ps->pcm_cap : 8192;
        while (cap < ps->pcm_n + n) cap *= 2;
        float *p = realloc(ps->pcm, (size_t)cap * sizeof(float));
        if (!p) return TRANSCRIBE_ERR_OOM;
        ps->pcm = p;
        ps->pcm_cap = cap;
    }
    /* NaN → 0, ±Inf → ±1, sample by sample as the offline run does */
    if (n > 0) tr_pcm_sanitize_copy(pcm, n, ps->pcm + ps->pcm_n);
    ps->pcm_n += n;
    ps->n_fed += n;
    transcribe_status st = advance(s, ctx, false);
    if (st != TRANSCRIBE_OK) return st;
    return report(s, ctx);
}

transcribe_status tr_pk_stream_finalize(pk_session *s, tr_stream_ctx *ctx) {
    if (tr_pk_stream_buffered(s->m)) return tr_pk_bstream_finalize(s, ctx);
    if (!s->stream) return TRANSCRIBE_ERR_INVALID_ARG;
    transcribe_status st = advance(s, ctx, true);
    if (st != TRANSCRIBE_OK) return st;
    return report(s, ctx);
}
