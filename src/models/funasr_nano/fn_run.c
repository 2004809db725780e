/* Fun-ASR-Nano runs: the input gate before any front-end work
 * (docs/formats/funasr_nano.md §8; the prompt length is exact from the
 * sample count), Kaldi fbank + LFR (§4), the shared SAN-M stack (§5.1), the
 * adaptor (§5.2), the chat prompt with the audio rows in place of its
 * placeholders (§6.1–§6.3), greedy decoding on the shared causal-LM loop
 * (§6.4), the result (§6.5), and the batched path (§8) with per-utterance
 * statuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/funasr_nano/funasr_nano.h"
#include "nn/causal_lm_batch.h"
#include "nn/greedy.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/timer.h"

/* ---- sessions ---- */

static transcribe_status fn_setup(fn_session *s, const tr_session_cfg *cfg) {
    transcribe_status st = tr_clm_session_init(&s->dec, "funasr_nano", &s->m->lm, &s->m->lm_w,
                                               s->m->max_pos, cfg->pool, cfg->n_ctx, cfg->kv_type);
    if (st != TRANSCRIBE_OK) return st;
    s->repeat_guard = true;
    return TRANSCRIBE_OK;
}
static void fn_release(fn_session *s) {
    tr_clm_session_release(&s->dec);
}
TR_FAMILY_SESSION(fn, fn_setup, fn_release)

/* ---- lengths (docs/formats/funasr_nano.md §4, §6.1) ---- */

int64_t tr_fn_lfr_rows(const fn_model *m, int64_t n) {
    const tr_mel_config *c = &m->mel;
    if (n < c->win_length) return 0;
    const int64_t frames = 1 + (n - c->win_length) / c->hop_length;
    return (frames + c->lfr_n - 1) / c->lfr_n;
}

int64_t tr_fn_audio_tokens(const fn_model *m, int64_t T_lfr) {
    if (!m->ad.low_frame_rate || T_lfr <= 0) return T_lfr;
    /* FunASR's fake_token_len: three halvings, each rounding up */
    const int64_t o1 = 1 + (T_lfr - 1) / 2, o2 = 1 + (o1 - 1) / 2;
    return (o2 - 1) / 2 + 1;
}

/* ---- prompt (docs/formats/funasr_nano.md §6.2) ---- */

static bool enc_text(const fn_model *m, const char *text, int32_t *ids, int *k, int cap) {
    int n = tr_tokenizer_encode(m->tok, text, ids + *k, (size_t)(cap - *k));
    if (n < 0) return false;
    *k += n;
    return true;
}

static bool put(int32_t *ids, int *k, int cap, int32_t id) {
    if (*k >= cap) return false;
    ids[(*k)++] = id;
    return true;
}

void tr_fn_prompt_free(fn_prompt *p) {
    free(p->ids);
    memset(p, 0, sizeof *p);
}

transcribe_status tr_fn_build_prompt(const fn_model *m, int n_audio, const char *lang,
                                     enum transcribe_itn_mode itn, fn_prompt *p) {
    memset(p, 0, sizeof *p);
    if (n_audio < 0) return TRANSCRIBE_ERR_INVALID_ARG;
    const fn_special *sp = &m->sp;
    /* "语音转写" [+ "成" + code] [+ "，不进行文本规整"] + "：" */
    char user[256];
    const bool hint = lang && lang[0];
    int len =
        snprintf(user, sizeof user,
                 "user\n\xE8\xAF\xAD\xE9\x9F\xB3\xE8\xBD\xAC\xE5\x86\x99%s%s%s\xEF\xBC\x9A",
                 hint ? "\xE6\x88\x90" : "", hint ? lang : "",
                 itn == TRANSCRIBE_ITN_MODE_ON
                     ? ""
                     : "\xEF\xBC\x8C\xE4\xB8\x8D\xE8\xBF\x9B\xE8\xA1\x8C\xE6\x96\x87\xE6\x9C\xAC"
                       "\xE8\xA7\x84\xE6\x95\xB4");
    if (len < 0 || len >= (int)sizeof user) {
        TR_ERROR("funasr_nano: language hint '%s' is too long for the prompt", lang);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int cap = FN_MAX_PROMPT_IDS;
    p->ids = malloc(((size_t)cap + (size_t)n_audio) * sizeof(int32_t));
    if (!p->ids) return TRANSCRIBE_ERR_OOM;
    int32_t *ids = p->ids;
    int k = 0;
    bool ok = put(ids, &k, cap, sp->im_start) &&
              enc_text(m, "system\nYou are a helpful assistant.", ids, &k, cap) &&
              put(ids, &k, cap, sp->im_end) && enc_text(m, "\n", ids, &k, cap) &&
              put(ids, &k, cap, sp->im_start) && enc_text(m, user, ids, &k, cap);
    if (!ok || k + 5 > cap) {
        TR_ERROR("funasr_nano: the prompt text does not encode into %d tokens", cap);
        tr_fn_prompt_free(p);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    p->audio_at = k;
    p->n_audio = n_audio;
    for (int i = 0; i < n_audio; i++) ids[k++] = 0; /* placeholder rows, replaced by audio */
    const int tail_cap = k + (cap - p->audio_at);
    ok = put(ids, &k, tail_cap, sp->im_end) && enc_text(m, "\n", ids, &k, tail_cap) &&
         put(ids, &k, tail_cap, sp->im_start) && enc_text(m, "assistant\n", ids, &k, tail_cap);
    if (!ok) {
        TR_ERROR("funasr_nano: the prompt suffix does not encode");
        tr_fn_prompt_free(p);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    p->n = k;
    return TRANSCRIBE_OK;
}

transcribe_status tr_fn_embed(const fn_model *m, const fn_prompt *p, const float *audio,
                              int n_audio, float *out) {
    if (n_audio != p->n_audio || p->audio_at + p->n_audio > p->n || (n_audio > 0 && !audio)) {
        TR_ERROR("funasr_nano: %d audio rows for a prompt of %d placeholders", n_audio, p->n_audio);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_clm_embed(&m->lm, &m->lm_w, p->ids, p->n, audio, p->audio_at, n_audio, out);
    return TRANSCRIBE_OK;
}

/* ---- front end, encoder, adaptor (docs/formats/funasr_nano.md §4–§6.1) ---- */

static void tap(float *dst, const float *src, size_t n) {
    if (dst) memcpy(dst, src, n * sizeof(float));
}

transcribe_status tr_fn_encode(const fn_model *m, tr_pool *pool, const float *pcm, int64_t n,
                               float **audio, int *n_audio, int *T_out, const fn_taps *taps,
                               bool (*abort)(void *), void *abort_user, double *enc_ms,
                               double *adaptor_ms) {
    static const fn_taps none = {0};
    if (!taps) taps = &none;
    *audio = NULL;
    *n_audio = 0;
    *T_out = 0;
    const int di = m->enc.d_input, D = m->enc.dims.d_model, Fp = m->ad.pre_ffn_dim,
              A = m->ad.llm_dim;
    float *in = NULL, *work = NULL, *a = NULL;
    size_t work_bytes = 0;
    int T = 0;
    double t0 = tr_time_ms();
    transcribe_status st = tr_mel_compute_rows(&m->mel, pcm, n, pool, &in, &T);
    if (st != TRANSCRIBE_OK) return st;
    *T_out = T;
    tap(taps->features, in, (size_t)T * di);
    /* docs/formats/funasr_nano.md §5.1: x = X · sqrt(d_model) + PE (the input-wide table,
     * positions 1..T) */
    tr_ew_scale(pool, in, (float)sqrt((double)D), (long)T * di);
    tr_sanm_add_positions(in, T, di);
    tap(taps->enc_in, in, (size_t)T * di);
    /* one buffer for the encoder's rows x and the adaptor's hidden rows h,
     * both dead once a is made, then for the blocks' scratch over them:
     * written whole every run, so in huge pages where given (util/mem.h)
     * rather than three malloc'ed buffers faulted in 4 KiB at a time
     * (~1 500 faults a run at 11 s) */
    const size_t nx = (size_t)T * (size_t)D, nh = (size_t)T * (size_t)Fp,
                 ns = tr_nn_enc_block_scratch(&m->ad_dims, T);
    work_bytes = (nx + nh > ns ? nx + nh : ns) * sizeof(float);
    work = tr_mem_big_alloc(work_bytes);
    a = malloc(sizeof(float) * (size_t)T * (size_t)A);
    float *x = work, *h = work ? work + nx : NULL, *scratch = work;
    if (!work || !a) {
        TR_ERROR("funasr_nano: out of memory for %d encoder rows", T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    st = tr_sanm_encoder_fwd(pool, &m->enc, in, T, x, &taps->sanm, abort, abort_user);
    if (st != TRANSCRIBE_OK) goto done;
    double t1 = tr_time_ms();
    /* docs/formats/funasr_nano.md §5.2: relu(x W1 + b1) W2 + b2, then the blocks over every row */
    tr_nn_linear_fwd(pool, &m->lin1, x, T, h);
    tr_ew_relu(pool, h, (long)T * Fp);
    tr_nn_linear_fwd(pool, &m->lin2, h, T, a);
    tap(taps->adaptor_lin, a, (size_t)T * A);
    for (int i = 0; i < m->ad.n_blocks; i++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            goto done;
        }
        tr_nn_enc_block_fwd(pool, &m->ad_blocks[i], &m->ad_dims, a, T, scratch);
    }
    tap(taps->adaptor_out, a, (size_t)T * A);
    if (enc_ms) *enc_ms = t1 - t0;
    if (adaptor_ms) *adaptor_ms = tr_time_ms() - t1;
    /* docs/formats/funasr_nano.md §6.1: the first T_audio rows are the audio tokens */
    *n_audio = (int)tr_fn_audio_tokens(m, T);
    *audio = a;
    a = NULL;
done:
    free(in);
    tr_mem_big_free(work, work_bytes);
    free(a);
    return st;
}

/* ---- output (docs/formats/funasr_nano.md §6.5) ---- */

transcribe_status tr_fn_fill_result(const fn_model *m, const int32_t *ids, int n, int n_samples,
                                    tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    char *text = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!text) return TRANSCRIBE_ERR_OOM;
    const int64_t t1 = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    bool ok = tr_result_set_raw_text(res, text) && tr_result_set_full_text(res, text) &&
              tr_result_add_segment(res, 0, t1, text) >= 0;
    free(text);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- one utterance ---- */

transcribe_status tr_fn_validate_run(const fn_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("funasr_nano", p);
}

/* docs/formats/funasr_nano.md §8 gate from the exact prompt length (known from the sample count):
 * the prompt (with p's placeholder count set) or INVALID_ARG / INPUT_TOO_LONG. */
static transcribe_status gate(const fn_session *s, int n_samples,
                              const struct transcribe_run_params *rp, fn_prompt *p) {
    const fn_model *m = s->m;
    memset(p, 0, sizeof *p);
    if (n_samples < m->mel.win_length) {
        TR_ERROR("funasr_nano: %d samples are too short (at least %d)", n_samples,
                 m->mel.win_length);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t T_audio = tr_fn_audio_tokens(m, tr_fn_lfr_rows(m, n_samples));
    fn_prompt text;
    transcribe_status st = tr_fn_build_prompt(m, 0, rp->language, rp->itn, &text);
    if (st != TRANSCRIBE_OK) return st;
    const int64_t T_prompt = text.n + T_audio;
    tr_fn_prompt_free(&text);
    if (T_prompt + FN_MAX_NEW > s->dec.ceiling) {
        const int64_t ms_tok = (m->ad.low_frame_rate ? 8 : 1) * (int64_t)m->mel.lfr_n *
                               m->mel.hop_length * 1000 / m->mel.sample_rate;
        const int64_t room = s->dec.ceiling - FN_PROMPT_RESERVE - FN_MAX_NEW;
        TR_ERROR("funasr_nano: %d samples (%.1f s) need a %lld-token prompt; with the %d-token "
                 "output reserve that exceeds the context of %d (about %lld ms of audio); split "
                 "the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)T_prompt, FN_MAX_NEW,
                 s->dec.ceiling, (long long)((room > 0 ? room : 0) * ms_tok));
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return tr_fn_build_prompt(m, (int)T_audio, rp->language, rp->itn, p);
}

/* Front end, encoder, adaptor and the prompt embeddings of one utterance:
 * *x malloc'ed [p->n][llm_dim]. */
static transcribe_status embed_utt(fn_session *s, const float *pcm, int n_samples,
                                   const fn_prompt *p, tr_run_ctx *ctx, float **x) {
    const fn_model *m = s->m;
    *x = NULL;
    float *clean = NULL, *audio = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "funasr_nano", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    int n_audio = 0, T_lfr = 0;
    double t0 = tr_time_ms();
    transcribe_status st = tr_fn_encode(m, s->dec.pool, in, n_samples, &audio, &n_audio, &T_lfr,
                                        NULL, tr_run_abort_poll, ctx, &s->enc_ms, &s->adaptor_ms);
    free(clean);
    ctx->result->encode_ms = (float)(tr_time_ms() - t0);
    if (st == TRANSCRIBE_OK) {
        *x = malloc((size_t)p->n * m->lm.d_model * sizeof(float));
        if (!*x) st = TRANSCRIBE_ERR_OOM;
    }
    if (st == TRANSCRIBE_OK) st = tr_fn_embed(m, p, audio, n_audio, *x);
    if (st != TRANSCRIBE_OK) {
        free(*x);
        *x = NULL;
    }
    free(audio);
    return st;
}

static void guard_cfg(const fn_session *s, tr_clm_greedy_cfg *cfg) {
    if (s->repeat_guard) tr_clm_greedy_cfg_guard(cfg, TR_REPEAT_GUARD_DEFAULT);
}

transcribe_status tr_fn_run(fn_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const fn_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    fn_prompt p;
    transcribe_status st = gate(s, n_samples, ctx->params, &p);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) {
        tr_fn_prompt_free(&p);
        return TRANSCRIBE_ERR_ABORTED;
    }
    float *x = NULL;
    st = embed_utt(s, pcm, n_samples, &p, ctx, &x);
    double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    const int n_ctx = tr_clm_ctx_pow2((int64_t)p.n + FN_MAX_NEW, s->dec.ceiling);
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    int first = -1;
    s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        /* docs/formats/funasr_nano.md §6.3: single-shot causal prefill, logits of the last position
         */
        first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, p.n, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    double t3 = tr_time_ms();
    s->dec.prefill_ms = t3 - t2;
    s->dec.last_T_prompt = p.n;
    if (st == TRANSCRIBE_OK) {
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                 .max_new = FN_MAX_NEW,
                                 .max_n_kv = n_ctx,
                                 .should_abort = tr_run_abort_poll,
                                 .abort_user = ctx,
                                 .on_step = tr_run_span_step,
                                 .step_user = &dec,
                                 .spec_k = tr_run_spec_k(ctx)};
        guard_cfg(s, &cfg);
        int n_out = 0;
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, p.n, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t3;
        s->dec.n_steps = n_out + (st == TRANSCRIBE_OK ? 1 : 0) - 1;
        if (tr_run_has_ids(st))
            st =
                tr_run_filled(st, tr_fn_fill_result(m, s->last_ids, n_out, n_samples, ctx->result));
    }
    tr_run_end_decode(ctx, st, t2);
    free(x);
    tr_fn_prompt_free(&p);
    return st;
}

/* ---- batch (docs/formats/funasr_nano.md §8; docs/formats/causal-lm.md §8) ---- */

static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    fn_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    const float *pcm = job->pcm[i];
    const int n = job->n_samples[i];
    if (!pcm || n <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    fn_prompt p;
    transcribe_status st = gate(s, n, ctx->params, &p);
    if (st != TRANSCRIBE_OK) return st;
    st = embed_utt(s, pcm, n, &p, ctx, &row->x);
    if (st == TRANSCRIBE_OK) {
        row->T = p.n;
        row->max_new = FN_MAX_NEW;
        /* the single run's window: its own cache size */
        row->max_n_kv = tr_clm_ctx_pow2((int64_t)p.n + FN_MAX_NEW, s->dec.ceiling);
    }
    tr_fn_prompt_free(&p);
    return st;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const fn_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    return tr_fn_fill_result(s->m, row->out, row->n_out, job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

transcribe_status tr_fn_run_batch(fn_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    tr_clm_batch_job job = {&k_batch, {.eos = s->m->sp.eos}, ctxs[0].pool, s, pcm, n_samples, ctxs,
                            NULL};
    guard_cfg(s, &job.cfg);
    return tr_clm_decode_batch(&s->dec, &job, n);
}
