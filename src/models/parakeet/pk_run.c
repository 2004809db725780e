/* The offline run: input checks, one encoder pass for inputs up to one
 * window (exactly as the reference), overlapping windows stitched at a
 * token-free cut for longer inputs (README.md), then the docs/formats/parakeet.md §9 rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/parakeet/parakeet.h"
#include "audio/audio.h"
#include "util/log.h"
#include "util/timer.h"
#include "util/vec.h"

void tr_pk_window_cfg_default(pk_window_cfg *w) {
    /* in encoder frames (memory and attention cost go by frames); at 80 ms
     * frames (subsampling 8): 102.4 s windows every 76.8 s, so 25.6 s of
     * overlap; the cut lies >= 5.12 s inside both windows */
    w->max_frames = 1280;
    w->win_frames = 1280;
    w->hop_frames = 960;
    w->margin = 64;
    w->gap = 2;
}

void tr_pk_session_set_windows(pk_session *s, const pk_window_cfg *w) {
    s->win = *w;
}

void tr_pk_session_free(pk_session *s) {
    if (!s) return;
    tr_pk_stream_free(s->stream);
    tr_pk_bstream_free(s->bstream);
    tr_fc_work_free(s->fc);
    tr_pk_dec_work_free(&s->dec);
    free(s->enc_out);
    free(s->pcm);
    free(s->prompt_hid);
    free(s);
}

transcribe_status tr_pk_session_create(const pk_model *m, const tr_session_cfg *cfg,
                                       pk_session **out) {
    *out = NULL;
    pk_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    s->m = m;
    s->pool = cfg->pool;
    tr_pk_window_cfg_default(&s->win);
    s->fc = tr_fc_work_new();
    if (!s->fc || !tr_pk_dec_work_init(&s->dec, &m->head)) {
        TR_ERROR("parakeet: out of memory creating a session");
        tr_pk_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

size_t tr_pk_session_bytes(const pk_session *s) {
    return (s->enc_cap + s->pcm_cap + s->prompt_cap) * sizeof(float) + tr_fc_work_bytes(s->fc) +
           tr_pk_dec_work_bytes(&s->dec);
}

/* Exact-size growth: these buffers are sized once per input length. */
static bool grow(float **p, size_t *cap, size_t n) {
    float *q = n ? tr_grow(*p, cap, n, sizeof(float), 0) : *p;
    if (n && !q) return false;
    *p = q;
    return true;
}

/* ---- one window ---- */

typedef struct run_state {
    pk_session *s;
    tr_run_ctx *ctx;
    const float *pcm;
    int64_t n;
    bool dirty;    /* the input holds non-finite samples */
    int prompt_id; /* -1: no prompt MLP */
    double mel_ms, enc_ms, dec_ms;
    /* progress: this window covers [f0, f1) of the input's encoder frames */
    double f0, f1;
    int layer, n_layers;
} run_state;

/* The encoder polls before each layer: also the progress tick (the layers
 * take ~90% of a window's time, the decoder the rest). */
static bool enc_abort_cb(void *user) {
    run_state *r = user;
    double within = r->n_layers > 0 ? 0.9 * r->layer / r->n_layers : 0.0;
    r->layer++;
    tr_run_report_progress(r->ctx, r->f0 + (r->f1 - r->f0) * within);
    return tr_run_should_abort(r->ctx);
}

/* Encodes and decodes samples [a, b) into out (window-local frames). */
static transcribe_status run_window(run_state *r, int64_t a, int64_t b, pk_toks *out) {
    pk_session *s = r->s;
    const pk_model *m = s->m;
    const float *x = r->pcm + a;
    int64_t n = b - a;
    if (r->dirty) {
        /* NaN → 0, ±Inf → ±1, as Whisper: one bad sample must not poison
         * the per-feature statistics of the whole window */
        if (!grow(&s->pcm, &s->pcm_cap, (size_t)n)) return TRANSCRIBE_ERR_OOM;
        tr_pcm_sanitize_copy(x, n, s->pcm);
        x = s->pcm;
    }
    double t0 = tr_time_ms();
    float *mel = NULL;
    int T_mel = 0;
    transcribe_status st = tr_mel_compute(&m->mel, x, n, s->pool, &mel, &T_mel);
    double t1 = tr_time_ms();
    r->mel_ms += t1 - t0;
    if (st != TRANSCRIBE_OK) return st;
    int T = tr_fc_out_frames(m->enc, T_mel);
    size_t need = (size_t)T * (size_t)m->hp.d_model;
    if (T <= 0 || !grow(&s->enc_out, &s->enc_cap, need)) {
        free(mel);
        return T <= 0 ? TRANSCRIBE_ERR_INVALID_ARG : TRANSCRIBE_ERR_OOM;
    }
    r->layer = 0;
    r->n_layers = tr_fc_get_hparams(m->enc)->n_layers;
    st = tr_fc_forward(m->enc, s->pool, s->fc, mel, T_mel, s->enc_out, NULL, enc_abort_cb, r);
    free(mel);
    double t2 = tr_time_ms();
    r->enc_ms += t2 - t1;
    if (st != TRANSCRIBE_OK) return st;
    if (r->prompt_id >= 0) {
        size_t h = (size_t)m->prompt.hidden;
        if (!grow(&s->prompt_hid, &s->prompt_cap, ((size_t)T + 1) * h)) return TRANSCRIBE_ERR_OOM;
        tr_pk_prompt_apply(&m->prompt, s->pool, r->prompt_id, s->enc_out, T, s->prompt_hid,
                           s->prompt_hid + (size_t)T * h);
    }
    st = tr_pk_decode(&m->head, s->pool, &s->dec, s->enc_out, T, out, tr_run_abort_poll, r->ctx);
    r->dec_ms += tr_time_ms() - t2;
    if (st == TRANSCRIBE_OK) tr_run_report_progress(r->ctx, r->f1);
    return st;
}

/* Encoder frames of n samples: ceil((floor(n / hop) + 1) / sub) for the
 * offline stack; tr_fc_out_frames knows the causal variant too. */
static int total_frames(const pk_model *m, int64_t n) {
    int64_t t_mel = n / m->mel.hop_length + 1;
    if (t_mel > INT32_MAX) return INT32_MAX;
    return tr_fc_out_frames(m->enc, (int)t_mel);
}

static transcribe_status run_windows(run_state *r, pk_toks *all) {
    pk_session *s = r->s;
    const pk_window_cfg *w = &s->win;
    const int64_t spf = ((int64_t)1 << s->m->hp.sub_stages) * s->m->mel.hop_length;
    const int total = total_frames(s->m, r->n);
    pk_toks prev = {0}, cur = {0};
    int ps = 0, pe = 0, cut = 0, start = 0;
    transcribe_status st = TRANSCRIBE_OK;
    for (int wi = 0;; wi++) {
        if (wi > 0 && tr_run_should_abort(r->ctx)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        bool last = start + w->win_frames >= total;
        int end = last ? total : start + w->win_frames;
        int64_t a = (int64_t)start * spf;
        int64_t b = last ? r->n : (int64_t)end * spf;
        cur.n = 0;
        r->f0 = total > 0 ? (double)start / total : 0.0;
        r->f1 = total > 0 ? (double)end / total : 1.0;
        st = run_window(r, a, b, &cur);
        for (int i = 0; i < cur.n; i++) cur.v[i].frame += start;
        if (st != TRANSCRIBE_OK) break;
        if (wi > 0) {
            int c = tr_pk_choose_cut(w, &prev, &cur, start, pe);
            if ((st = tr_pk_keep_range(all, &prev, cut, c))) break;
            cut = c;
        }
        pk_toks t = prev;
        prev = cur;
        cur = t;
        ps = start;
        pe = end;
        if (last) break;
        int next = start + w->hop_frames;
        if (next + w->win_frames > total) next = total - w->win_frames; /* last ends at the end */
        start = next > ps ? next : ps + 1;
    }
    /* the final window's tokens (or, on abort / error, what the previous
     * window produced beyond the last cut) */
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
        transcribe_status k = tr_pk_keep_range(all, &prev, cut, INT32_MAX);
        if (k != TRANSCRIBE_OK) st = k;
    }
    tr_pk_toks_free(&prev);
    tr_pk_toks_free(&cur);
    return st;
}

/* docs/formats/parakeet.md §7.8: with a prompt dictionary, a hint must name one of its locales. */
transcribe_status tr_pk_validate_run(const pk_model *m, const struct transcribe_run_params *p) {
    if (m->prompt.n_prompts > 0 && tr_pk_prompt_id(&m->prompt, p->language) < 0) {
        TR_ERROR("parakeet: language '%s' is not in the prompt dictionary", p->language);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_pk_run(pk_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const pk_model *m = s->m;
    tr_result *res = ctx->result;
    run_state r = {s, ctx, pcm, n_samples, false, -1, 0, 0, 0, 0.0, 1.0, 0, 0};
    if (m->prompt.n_prompts > 0) {
        r.prompt_id = tr_pk_prompt_id(&m->prompt, ctx->params->language);
        if (r.prompt_id < 0) return tr_pk_validate_run(m, ctx->params);
    }
    pk_toks all = {0};
    transcribe_status st = TRANSCRIBE_OK;
    if (n_samples < 2 * m->mel.hop_length) {
        /* < 3 mel frames: the per-feature statistics of docs/formats/parakeet.md §6 are undefined
         * (§12.1); nothing can be recognised in 20 ms, so: OK, empty text */
        TR_INFO("parakeet: %d samples is too short to transcribe; empty result", n_samples);
        return tr_pk_build_result(m, NULL, 0, ctx->params, res);
    }
    int64_t bad = tr_pcm_count_nonfinite(pcm, n_samples);
    if (bad) {
        TR_WARN("parakeet: %lld non-finite input samples replaced (NaN → 0, ±Inf → ±1)",
                (long long)bad);
        r.dirty = true;
    }
    if (total_frames(m, n_samples) <= s->win.max_frames) {
        st = run_window(&r, 0, n_samples, &all);
    } else {
        st = run_windows(&r, &all);
    }
    res->mel_ms = (float)r.mel_ms;
    res->encode_ms = (float)r.enc_ms;
    res->decode_ms = (float)r.dec_ms;
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED) {
        transcribe_status b = tr_pk_build_result(m, all.v, all.n, ctx->params, res);
        if (b != TRANSCRIBE_OK) st = b;
    }
    tr_pk_toks_free(&all);
    return st;
}
