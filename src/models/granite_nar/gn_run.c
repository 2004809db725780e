/* Granite NAR runs (docs/formats/granite_nar.md §4–§9): input checks and the context gate,
 * front end, Conformer, first-pass hypothesis, projector, the editing pass (insertion slots,
 * fusion, one bidirectional LM pass, argmax / EOS drop / repeat collapse), the result row.
 * Abort is polled before the encoder, between its blocks, before the projector and between the
 * LM's blocks (upstream advertises cancellation but never polls inside a run, §8). */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/granite_nar/granite_nar.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

int tr_gn_slots(const int32_t *hyp, int n, int eos, int32_t *text) {
    const int n_text = 2 * n + 1 > GN_MIN_TEXT ? 2 * n + 1 : GN_MIN_TEXT;
    for (int i = 0; i < n_text; i++) text[i] = eos;
    for (int i = 0; i < n; i++) text[2 * i + 1] = hyp[i];
    return n_text;
}

int tr_gn_collapse(const int32_t *argmax, int n, int eos, int32_t *out) {
    int k = 0, prev = -1;
    for (int i = 0; i < n; i++) {
        const int a = argmax[i];
        if (a == eos) {
            prev = eos;
            continue;
        }
        if (a == prev) continue;
        out[k++] = a;
        prev = a;
    }
    return k;
}

transcribe_status tr_gn_edit(const gn_model *m, tr_pool *pool, const float *audio, int n_audio,
                             const int32_t *text, int n_text, bool (*abort)(void *),
                             void *abort_user, float *logits, int32_t *out, int *n_out) {
    *n_out = 0;
    const tr_clm_hparams *hp = &m->lm;
    const int n = n_audio + n_text;
    const size_t D = (size_t)hp->d_model;
    int32_t *ids = malloc((size_t)n * sizeof(int32_t));
    int32_t *arg = malloc((size_t)n_text * sizeof(int32_t));
    float *x = malloc((size_t)n * D * sizeof(float));
    float *a = n_audio > 0 ? malloc((size_t)n_audio * D * sizeof(float)) : NULL;
    transcribe_status st = TRANSCRIBE_OK;
    if (!ids || !arg || !x || (n_audio > 0 && !a)) {
        TR_ERROR("granite_nar: out of memory for a %d-row LM pass", n);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    /* docs/formats/granite_nar.md §5.3: audio rows ÷ embedding_multiplier (when > 0), then every
     * row × it */
    const float mult = hp->embedding_mult, inv = mult > 0.0f ? 1.0f / mult : 1.0f;
    for (size_t i = 0; i < (size_t)n_audio * D; i++) a[i] = audio[i] * inv;
    memset(ids, 0, (size_t)n_audio * sizeof(int32_t)); /* replaced by the audio rows */
    memcpy(ids + n_audio, text, (size_t)n_text * sizeof(int32_t));
    tr_clm_embed(hp, &m->lm_w, ids, n, a, 0, n_audio, x);
    st = tr_clm_bidi(hp, &m->lm_w, pool, x, n, n_audio, arg, logits, abort, abort_user);
    if (st == TRANSCRIBE_OK) *n_out = tr_gn_collapse(arg, n_text, m->eos, out);
done:
    free(ids);
    free(arg);
    free(x);
    free(a);
    return st;
}

transcribe_status tr_gn_validate_run(const gn_model *m, const struct transcribe_run_params *p) {
    (void)m; /* timestamps and language hints are the dispatcher's (docs/formats/granite_nar.md §7,
                §8) */
    return tr_family_check_transcribe_only("granite_nar", p);
}

static bool grow_ids(gn_session *s, int n) {
    if (n <= s->cap_ids) return true;
    int32_t *h = realloc(s->hyp, (size_t)n * sizeof(int32_t));
    if (h) s->hyp = h;
    int32_t *o = realloc(s->out, (size_t)n * sizeof(int32_t));
    if (o) s->out = o;
    if (!h || !o) return false;
    s->cap_ids = n;
    return true;
}

/* The result row (docs/formats/granite_nar.md §7): one segment over the whole clip, no words or
 * tokens. */
static transcribe_status fill_result(const gn_model *m, const int32_t *ids, int n, int n_samples,
                                     tr_result *res) {
    char *text = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!text) return TRANSCRIBE_ERR_OOM;
    const int64_t audio_ms = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    const bool ok = tr_result_set_raw_text(res, text) && tr_result_set_full_text(res, text) &&
                    tr_result_add_segment(res, 0, audio_ms, text) >= 0;
    free(text);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* The encoder poll: abort, and progress over the encoder's share (0 .. 0.6). */
typedef struct enc_poll {
    tr_run_ctx *ctx;
    int calls, total;
} enc_poll;

static bool poll_enc(void *user) {
    enc_poll *p = user;
    tr_run_report_progress(p->ctx, 0.05 + 0.55 * p->calls / p->total);
    p->calls++;
    return tr_run_should_abort(p->ctx);
}

transcribe_status tr_gn_run(gn_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const gn_model *m = s->m;
    s->n_hyp = s->n_out = s->n_audio = s->n_text = 0;
    s->mel_ms = s->encode_ms = s->proj_ms = s->lm_ms = 0;
    if (!pcm || n_samples <= 0) {
        TR_ERROR("granite_nar: no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_pool *pool = ctx->pool ? ctx->pool : s->pool;
    const int64_t T_enc = tr_gn_enc_frames(m, n_samples);
    if (T_enc < 1) {
        TR_ERROR("granite_nar: %d samples are too short (no encoder frame; at least %d needed)",
                 n_samples, 2 * m->mel.hop_length);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* the gate up front for what the audio alone needs (docs/formats/granite_nar.md §8; upstream
     * gates after the projector): the text span is at least GN_MIN_TEXT rows */
    const int n_audio_pre = tr_gn_audio_rows(m, T_enc);
    if ((int64_t)n_audio_pre + GN_MIN_TEXT > s->ceiling) {
        TR_ERROR("granite_nar: %d samples (%.1f s) need %d audio rows; with the text slots that "
                 "exceeds the context of %d; split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, n_audio_pre, s->ceiling);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    float *clean = NULL, *x = NULL, *audio = NULL;
    int32_t *hyp = NULL, *text = NULL;
    gn_enc_out enc = {0};
    const float *in = tr_pcm_sanitized(pcm, n_samples, "granite_nar", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T = 0, n_hyp = 0, n_audio = 0;
    transcribe_status st = tr_gn_features(m, pool, in, n_samples, &x, &T);
    free(clean);
    double t1 = tr_time_ms();
    s->mel_ms = t1 - t0;
    ctx->result->mel_ms = (float)s->mel_ms;
    if (st) goto done;
    enc_poll poll = {ctx, 0, m->enc.n_layer + 1};
    st = tr_gn_encode(m, pool, x, T, poll_enc, &poll, &enc);
    if (st == TRANSCRIBE_OK) st = tr_gn_hypothesis(m, pool, &enc, T, &hyp, &n_hyp);
    double t2 = tr_time_ms();
    s->encode_ms = t2 - t1;
    if (st) goto done;
    const int n_text = 2 * n_hyp + 1 > GN_MIN_TEXT ? 2 * n_hyp + 1 : GN_MIN_TEXT;
    if (!grow_ids(s, n_text)) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (n_hyp > 0) memcpy(s->hyp, hyp, (size_t)n_hyp * sizeof(int32_t));
    s->n_hyp = n_hyp;
    if (n_hyp == 0) {
        /* docs/formats/granite_nar.md §6.1: no hypothesis, no edit: an empty transcript */
        ctx->result->encode_ms = (float)s->encode_ms;
        st = fill_result(m, NULL, 0, n_samples, ctx->result);
        if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
        goto done;
    }
    if (n_audio_pre + n_text > s->ceiling) {
        TR_ERROR("granite_nar: %d audio rows and %d text slots exceed the context of %d; split "
                 "the audio",
                 n_audio_pre, n_text, s->ceiling);
        st = TRANSCRIBE_ERR_INPUT_TOO_LONG;
        goto done;
    }
    if (tr_run_should_abort(ctx)) {
        st = TRANSCRIBE_ERR_ABORTED;
        goto done;
    }
    st = tr_gn_project(m, pool, enc.cat, T, &audio, &n_audio);
    double t3 = tr_time_ms();
    s->proj_ms = t3 - t2;
    ctx->result->encode_ms = (float)(s->encode_ms + s->proj_ms);
    if (st) goto done;
    tr_run_report_progress(ctx, 0.65);
    text = malloc((size_t)n_text * sizeof(int32_t));
    if (!text) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    tr_gn_slots(hyp, n_hyp, m->eos, text);
    s->n_audio = n_audio;
    s->n_text = n_text;
    int n_out = 0;
    st = tr_gn_edit(m, pool, audio, n_audio, text, n_text, tr_run_abort_poll, ctx, NULL, s->out,
                    &n_out);
    if (st == TRANSCRIBE_OK) {
        s->n_out = n_out;
        st = fill_result(m, s->out, n_out, n_samples, ctx->result);
        if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
    }
    s->lm_ms = tr_time_ms() - t3;
    tr_run_end_decode(ctx, st, t3);
done:
    tr_gn_enc_out_free(&enc);
    free(x);
    free(hyp);
    free(audio);
    free(text);
    return st;
}

/* ---- session ---- */

static transcribe_status session_setup(gn_session *s, const tr_session_cfg *cfg) {
    s->pool = cfg->pool; /* kv_type means nothing here: no cache (docs/formats/granite_nar.md §8) */
    s->ceiling = cfg->n_ctx > 0 && cfg->n_ctx < s->m->max_pos ? cfg->n_ctx : s->m->max_pos;
    return TRANSCRIBE_OK;
}

static void session_release(gn_session *s) {
    free(s->hyp);
    free(s->out);
}

TR_FAMILY_SESSION(gn, session_setup, session_release)
