/* Buffered streaming of unified-en (docs/formats/parakeet.md §3.3 menus, §7.8;
 * docs/c-api.md §7.3 PKBS), as NeMo's buffered RNN-T streaming runs it: the
 * encoder re-runs over a window of [left | chunk | right] samples
 * (frame = subsampling * hop samples) with the chunked_limited_with_rc
 * mask of (L, C, R) counted from the window's first frame; the mel is
 * normalised over the window, as an offline run of that audio would. Step
 * j's chunk is the samples [jCF, (j+1)CF); its window starts at
 * max(0, jCF - LF) (so the first window is [0, (C + R)F)) and ends R
 * frames after the chunk. Only the chunk's C encoder frames are decoded,
 * with the decoder state carried from the previous chunk; at finalize the
 * last window ends with the input and every frame from its chunk on is
 * decoded. Every decoded token is final, so all of them are committed.
 *
 * The depthwise convolution runs with the file's padding over the whole
 * window (the spec knows no chunk-limited convolution; NeMo's unified
 * model trains with conv_context_style "dcc", which is not applied here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "core/abi.h"
#include "audio/audio.h"
#include "transcribe/parakeet.h"
#include "util/log.h"
#include "util/timer.h"

struct pk_bstream {
    int L, C, R;  /* encoder frames */
    int F;        /* samples per encoder frame */
    int64_t next; /* index of the next chunk */
    pk_dec_work dec;
    pk_dec_carry carry;
    pk_toks toks;
    pk_rows rows;
    float *pcm; /* sanitized samples from global sample pcm_base on */
    int64_t pcm_base, pcm_n, pcm_cap;
    int64_t n_fed;
    float *enc; /* [T_enc][d] of the current window */
    size_t enc_cap;
    double mel_ms, enc_ms, dec_ms;
};

bool tr_pk_stream_buffered(const pk_model *m) {
    return m->hp.att_style == TR_FC_STYLE_CHUNKED_LIMITED_RC && m->n_menu[0] > 0 &&
           m->n_menu[1] > 0 && m->n_menu[2] > 0;
}

void tr_pk_bstream_free(pk_bstream *bs) {
    if (!bs) return;
    tr_pk_dec_work_free(&bs->dec);
    tr_pk_toks_free(&bs->toks);
    tr_pk_rows_free(&bs->rows);
    free(bs->pcm);
    free(bs->enc);
    free(bs);
}

static void bstream_clear(pk_bstream *bs) {
    tr_pk_dec_carry_reset(&bs->carry);
    bs->toks.n = 0;
    tr_pk_rows_clear(&bs->rows);
    bs->next = bs->pcm_base = bs->pcm_n = bs->n_fed = 0;
    bs->mel_ms = bs->enc_ms = bs->dec_ms = 0;
}

static const char *const menu_names[3] = {"left", "chunk", "right"};

static void log_menu(const pk_model *m, int i, int32_t ms, int fms) {
    char menu[256];
    size_t at = 0;
    for (int k = 0; k < m->n_menu[i] && at + 16 < sizeof menu; k++)
        at += (size_t)snprintf(menu + at, sizeof menu - at, "%s%d", k ? ", " : "",
                               (int)m->menu[i][k] * fms);
    TR_ERROR("parakeet: %s_ms %d is not in the model's buffered-streaming %s menu (%s ms; "
             "any left x chunk x right combination)",
             menu_names[i], (int)ms, menu_names[i], menu);
}

transcribe_status tr_pk_bstream_choice(const pk_model *m, const struct transcribe_ext *ext,
                                       int lcr[3]) {
    const int fms = (int)(m->frame_ms + 0.5);
    for (int i = 0; i < 3; i++) { /* default: the largest of each menu */
        lcr[i] = m->menu[i][0];
        for (int k = 1; k < m->n_menu[i]; k++)
            if (m->menu[i][k] > lcr[i]) lcr[i] = m->menu[i][k];
    }
    if (!ext) return TRANSCRIBE_OK;
    if (ext->kind != TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM) {
        TR_ERROR("parakeet: this file takes no stream extension of kind 0x%08x (only the "
                 "buffered-stream one)",
                 ext->kind);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    transcribe_status st = tr_ext_check(ext, TRANSCRIBE_EXT_KIND_PARAKEET_BUFFERED_STREAM,
                                        sizeof(struct transcribe_parakeet_buffered_stream_ext));
    if (st != TRANSCRIBE_OK) return st;
    const struct transcribe_parakeet_buffered_stream_ext *e = (const void *)ext;
    const int32_t ms[3] = {e->left_ms, e->chunk_ms, e->right_ms};
    for (int i = 0; i < 3; i++) {
        if (ms[i] == -1) continue;
        if (ms[i] < -1 || fms <= 0 || ms[i] % fms != 0) {
            TR_ERROR("parakeet: %s_ms %d must be -1 or a multiple of the %d ms frame",
                     menu_names[i], (int)ms[i], fms);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        const int f = ms[i] / fms;
        bool found = false;
        for (int k = 0; k < m->n_menu[i]; k++) found = found || m->menu[i][k] == f;
        if (!found) {
            log_menu(m, i, ms[i], fms);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
        lcr[i] = f;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_pk_bstream_begin(pk_session *s, tr_stream_ctx *ctx) {
    const pk_model *m = s->m;
    int lcr[3];
    transcribe_status st = tr_pk_bstream_choice(m, ctx->ext, lcr);
    if (st != TRANSCRIBE_OK) return st;
    if (lcr[1] < 1 || lcr[0] < 0 || lcr[2] < 0) {
        TR_ERROR("parakeet: buffered menu entry %d/%d/%d is unusable", lcr[0], lcr[1], lcr[2]);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!s->bstream) {
        pk_bstream *bs = calloc(1, sizeof *bs);
        if (!bs) return TRANSCRIBE_ERR_OOM;
        tr_pk_rows_init(&bs->rows);
        if (!tr_pk_dec_work_init(&bs->dec, &m->head)) {
            tr_pk_bstream_free(bs);
            return TRANSCRIBE_ERR_OOM;
        }
        s->bstream = bs;
    }
    pk_bstream *bs = s->bstream;
    bstream_clear(bs);
    bs->L = lcr[0];
    bs->C = lcr[1];
    bs->R = lcr[2];
    bs->F = (1 << m->hp.sub_stages) * m->mel.hop_length; /* samples per encoder frame */
    tr_result_clear(ctx->result);
    ctx->n_native_committed_toks = 0;
    return TRANSCRIBE_OK;
}

void tr_pk_bstream_reset(pk_session *s) {
    if (s->bstream) bstream_clear(s->bstream);
}

static bool abort_cb(void *user) {
    const tr_stream_ctx *ctx = user;
    return ctx->abort_cb && ctx->abort_cb(ctx->abort_user_data);
}

/* Runs chunk bs->next over its window; `last`: the window ends with the
 * input and every frame from the chunk on is decoded. */
static transcribe_status step(pk_session *s, tr_stream_ctx *ctx, bool last) {
    pk_bstream *bs = s->bstream;
    const pk_model *m = s->m;
    const int d = m->hp.d_model;
    const int64_t c0 = bs->next * bs->C * bs->F;
    const int64_t lf = (int64_t)bs->L * bs->F;
    const int64_t w0 = c0 > lf ? c0 - lf : 0;
    const int64_t w1 = last ? bs->n_fed : c0 + (int64_t)(bs->C + bs->R) * bs->F;
    const int l = (int)((c0 - w0) / bs->F);
    if (abort_cb(ctx)) return TRANSCRIBE_ERR_ABORTED;
    if (w1 - w0 < 2 * m->mel.hop_length) { /* as offline: too short, nothing */
        bs->next++;
        return TRANSCRIBE_OK;
    }
    double t0 = tr_time_ms();
    float *mel = NULL;
    int T_mel = 0;
    transcribe_status st =
        tr_mel_compute(&m->mel, bs->pcm + (w0 - bs->pcm_base), w1 - w0, s->pool, &mel, &T_mel);
    if (st != TRANSCRIBE_OK) return st;
    double t1 = tr_time_ms();
    const int T = tr_fc_out_frames(m->enc, T_mel);
    const size_t need = (size_t)T * (size_t)d;
    if (need > bs->enc_cap) {
        float *p = realloc(bs->enc, need * sizeof(float));
        if (!p) {
            free(mel);
            return TRANSCRIBE_ERR_OOM;
        }
        bs->enc = p;
        bs->enc_cap = need;
    }
    st = tr_fc_forward_buffered(m->enc, s->pool, s->fc, mel, T_mel, bs->L, bs->C, bs->R, bs->enc,
                                abort_cb, ctx);
    free(mel);
    double t2 = tr_time_ms();
    if (st != TRANSCRIBE_OK) return st;
    int n = last ? T - l : bs->C;
    if (n > T - l) n = T - l;
    if (n > 0)
        st = tr_pk_decode_resume(&m->head, s->pool, &bs->dec, bs->enc + (size_t)l * d,
                                 (int)(bs->next * bs->C), n, &bs->toks, &bs->carry, abort_cb, ctx);
    bs->mel_ms += t1 - t0;
    bs->enc_ms += t2 - t1;
    bs->dec_ms += tr_time_ms() - t2;
    if (st != TRANSCRIBE_OK) return st;
    bs->next++;
    /* samples before the next window are no longer needed */
    const int64_t nc0 = bs->next * bs->C * bs->F;
    const int64_t keep = nc0 > lf ? nc0 - lf : 0;
    if (keep > bs->pcm_base) {
        const int64_t drop = keep - bs->pcm_base < bs->pcm_n ? keep - bs->pcm_base : bs->pcm_n;
        memmove(bs->pcm, bs->pcm + drop, (size_t)(bs->pcm_n - drop) * sizeof(float));
        bs->pcm_n -= drop;
        bs->pcm_base += drop;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status report(pk_session *s, tr_stream_ctx *ctx) {
    pk_bstream *bs = s->bstream;
    const pk_model *m = s->m;
    bool changed = false;
    transcribe_status st =
        tr_pk_rows_update(&bs->rows, m, bs->toks.v, bs->toks.n, ctx->params, ctx->result, &changed);
    ctx->result->mel_ms = (float)bs->mel_ms;
    ctx->result->encode_ms = (float)bs->enc_ms;
    ctx->result->decode_ms = (float)bs->dec_ms;
    ctx->n_native_committed_toks = ctx->result->n_toks;
    ctx->grows_only = true;
    const int64_t done_ms = (int64_t)((double)(bs->next * bs->C) * m->frame_ms);
    const int64_t fed_ms = bs->n_fed * 1000 / m->mel.sample_rate;
    ctx->audio_committed_ms = done_ms < fed_ms ? done_ms : fed_ms;
    ctx->buffered_ms = fed_ms - ctx->audio_committed_ms;
    return st;
}

transcribe_status tr_pk_bstream_feed(pk_session *s, const float *pcm, int n, tr_stream_ctx *ctx) {
    pk_bstream *bs = s->bstream;
    if (!bs || n < 0 || (n > 0 && !pcm)) return TRANSCRIBE_ERR_INVALID_ARG;
    if (bs->pcm_n + n > bs->pcm_cap) {
        int64_t cap = bs->pcm_cap ? bs->pcm_cap : 8192;
        while (cap < bs->pcm_n + n) cap *= 2;
        float *p = realloc(bs->pcm, (size_t)cap * sizeof(float));
        if (!p) return TRANSCRIBE_ERR_OOM;
        bs->pcm = p;
        bs->pcm_cap = cap;
    }
    if (n > 0) tr_pcm_sanitize_copy(pcm, n, bs->pcm + bs->pcm_n);
    bs->pcm_n += n;
    bs->n_fed += n;
    while (bs->n_fed >= (bs->next * bs->C + bs->C + bs->R) * bs->F) {
        transcribe_status st = step(s, ctx, false);
        if (st != TRANSCRIBE_OK) return st;
    }
    return report(s, ctx);
}

transcribe_status tr_pk_bstream_finalize(pk_session *s, tr_stream_ctx *ctx) {
    pk_bstream *bs = s->bstream;
    if (!bs) return TRANSCRIBE_ERR_INVALID_ARG;
    if (bs->next * bs->C * bs->F < bs->n_fed) {
        transcribe_status st = step(s, ctx, true);
        if (st != TRANSCRIBE_OK) return st;
    }
    return report(s, ctx);
}
