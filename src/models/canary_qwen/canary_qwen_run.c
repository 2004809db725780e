/* Canary-Qwen runs: the input gate before any front-end work
 * (docs/formats/canary_qwen.md §6.3; the encoder length is exact from the
 * sample count), log-mel, encoder and projection, the prompt of §6.1 with
 * the audio rows spliced at the placeholders (§6.2), prefill and greedy
 * decoding on the shared causal-LM loop (§6.3), the result (§6.4), and the
 * batched path (§8) with per-utterance statuses. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/canary_qwen/canary_qwen.h"
#include "nn/causal_lm_batch.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

/* ---- sessions ---- */

static transcribe_status cq_setup(cq_session *s, const tr_session_cfg *cfg) {
    s->fc_work = tr_fc_work_new();
    if (!s->fc_work) return TRANSCRIBE_ERR_OOM;
    return tr_clm_session_init(&s->dec, "canary_qwen", &s->m->lm, &s->m->lm_w, s->m->max_pos,
                               cfg->pool, cfg->n_ctx, cfg->kv_type);
}
static void cq_release(cq_session *s) {
    tr_clm_session_release(&s->dec);
    tr_fc_work_free(s->fc_work);
}
TR_FAMILY_SESSION(cq, cq_setup, cq_release)

transcribe_status tr_cq_validate_run(const cq_model *m, const struct transcribe_run_params *p) {
    (void)m; /* the language hint is checked against general.languages by the dispatcher */
    return tr_family_check_transcribe_only("canary_qwen", p);
}

/* ---- prompt (docs/formats/canary_qwen.md §6.1, §6.2) ---- */

int tr_cq_build_prompt(const cq_model *m, int T_enc, int32_t *ids) {
    int k = 0;
    for (int i = 0; i < m->n_prefix; i++) ids[k++] = m->prefix[i];
    for (int i = 0; i < T_enc; i++) ids[k++] = m->sp.audio;
    for (int i = 0; i < m->n_suffix; i++) ids[k++] = m->suffix[i];
    return k;
}

transcribe_status tr_cq_splice(const cq_model *m, const int32_t *ids, int n, const float *audio,
                               int n_audio, float *out) {
    int first = -1, count = 0, last = -1;
    for (int i = 0; i < n; i++)
        if (ids[i] == m->sp.audio) {
            if (first < 0) first = i;
            last = i;
            count++;
        }
    if (count != n_audio || (count > 0 && last - first + 1 != count)) {
        TR_ERROR("canary_qwen: the prompt holds %d audio placeholders (%s), the encoder gave %d "
                 "rows",
                 count, count > 0 && last - first + 1 != count ? "not one run" : "one run",
                 n_audio);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_clm_embed(&m->lm, &m->lm_w, ids, n, audio, first < 0 ? 0 : first, n_audio, out);
    return TRANSCRIBE_OK;
}

/* ---- output (docs/formats/canary_qwen.md §6.4) ---- */

transcribe_status tr_cq_fill_result(const cq_model *m, const int32_t *ids, int n, int n_samples,
                                    tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    /* special pieces decode literally; no trimming */
    char *text = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!text) return TRANSCRIBE_ERR_OOM;
    int64_t t1 = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    bool ok = tr_result_set_raw_text(res, text) && tr_result_set_full_text(res, text) &&
              tr_result_add_segment(res, 0, t1, text) >= 0;
    free(text);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- one utterance ---- */

/* The docs/formats/canary_qwen.md §6.3 gate from the exact prompt length. */
static transcribe_status gate(const cq_session *s, int n_samples, int *T_prompt) {
    const cq_model *m = s->m;
    if (n_samples < m->mel.n_fft / 2 + 1) {
        TR_ERROR("canary_qwen: %d samples are too short (at least %d)", n_samples,
                 m->mel.n_fft / 2 + 1);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int64_t T = tr_cq_enc_frames(m, n_samples) + m->n_prefix + m->n_suffix;
    if (T + CQ_MAX_NEW > s->dec.ceiling) {
        int64_t room = (int64_t)s->dec.ceiling - CQ_PROMPT_SLACK - CQ_MAX_NEW;
        TR_ERROR("canary_qwen: %d samples (%.1f s) need a %lld-token prompt; with the 256-token "
                 "output reserve that exceeds the context of %d (about %lld ms of audio); split "
                 "the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)T, s->dec.ceiling,
                 (long long)((room > 0 ? room : 0) * 80));
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    *T_prompt = (int)T;
    return TRANSCRIBE_OK;
}

/* mel + encoder + projection → the prompt embeddings *x ([*T][hidden],
 * malloc'ed). abort_user (may be NULL) is the run context polled between
 * encoder blocks. */
static transcribe_status embed_utt(cq_session *s, const float *pcm, int n_samples, float **x,
                                   int *T, tr_result *res, tr_run_ctx *abort_ctx) {
    const cq_model *m = s->m;
    *x = NULL;
    float *clean = NULL, *mel = NULL, *audio = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "canary_qwen", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_mel = 0, T_enc = 0;
    transcribe_status st = tr_cq_log_mel(m, s->dec.pool, in, n_samples, &mel, &T_mel);
    free(clean);
    double t1 = tr_time_ms();
    if (st == TRANSCRIBE_OK)
        st = tr_cq_encode(m, s->dec.pool, s->fc_work, mel, T_mel, &audio, &T_enc,
                          abort_ctx ? tr_run_abort_poll : NULL, abort_ctx, &s->enc_ms, &s->proj_ms);
    free(mel);
    res->mel_ms = (float)(t1 - t0);
    res->encode_ms = (float)(tr_time_ms() - t1);
    int32_t *ids = NULL;
    if (st == TRANSCRIBE_OK) {
        ids = malloc(((size_t)T_enc + (size_t)m->n_prefix + (size_t)m->n_suffix) * sizeof *ids);
        if (!ids) st = TRANSCRIBE_ERR_OOM;
    }
    if (st == TRANSCRIBE_OK) {
        *T = tr_cq_build_prompt(m, T_enc, ids);
        *x = malloc((size_t)*T * (size_t)m->lm.d_model * sizeof(float));
        st = *x ? tr_cq_splice(m, ids, *T, audio, T_enc, *x) : TRANSCRIBE_ERR_OOM;
        if (st != TRANSCRIBE_OK) {
            free(*x);
            *x = NULL;
        }
    }
    free(ids);
    free(audio);
    return st;
}

transcribe_status tr_cq_run(cq_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const cq_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    int T_pred = 0;
    transcribe_status st = gate(s, n_samples, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *x = NULL;
    int T = 0;
    st = embed_utt(s, pcm, n_samples, &x, &T, ctx->result, ctx);
    double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    const int n_ctx = tr_clm_ctx_pow2((int64_t)T + CQ_MAX_NEW, s->dec.ceiling);
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    int first = -1;
    s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, T, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    free(x);
    double t3 = tr_time_ms();
    s->dec.prefill_ms = t3 - t2;
    s->dec.last_T_prompt = T;
    if (st == TRANSCRIBE_OK) {
        int n_out = 0;
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        const tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                       .max_new = CQ_MAX_NEW,
                                       .max_n_kv = n_ctx,
                                       .should_abort = tr_run_abort_poll,
                                       .abort_user = ctx,
                                       .on_step = tr_run_span_step,
                                       .step_user = &dec,
                                       .spec_k = tr_run_spec_k(ctx)};
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, T, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t3;
        s->dec.n_steps = n_out + (st == TRANSCRIBE_OK ? 1 : 0) - 1; /* ids after the prefill one */
        if (tr_run_has_ids(st))
            st =
                tr_run_filled(st, tr_cq_fill_result(m, s->last_ids, n_out, n_samples, ctx->result));
    }
    tr_run_end_decode(ctx, st, t2);
    return st;
}

/* ---- batch (docs/formats/canary_qwen.md §8; docs/formats/causal-lm.md §8) ---- */

/* nn/causal_lm_batch.h hooks: gate, encoder and prompt embeddings of one
 * utterance into its row; a non-OK status other than OOM / ABORTED is that
 * utterance's own. */
static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    cq_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    const float *pcm = job->pcm[i];
    const int n_samples = job->n_samples[i];
    int T_pred = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    transcribe_status st = gate(s, n_samples, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    st = embed_utt(s, pcm, n_samples, &row->x, &row->T, ctx->result, ctx);
    if (st != TRANSCRIBE_OK) return st;
    row->max_new = CQ_MAX_NEW;
    /* the single run's window: its own cache size */
    row->max_n_kv = tr_clm_ctx_pow2((int64_t)row->T + CQ_MAX_NEW, s->dec.ceiling);
    return TRANSCRIBE_OK;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const cq_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    return tr_cq_fill_result(s->m, row->out, row->n_out, job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

transcribe_status tr_cq_run_batch(cq_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    const tr_clm_batch_job job = {
        &k_batch, {.eos = s->m->sp.eos}, ctxs[0].pool, s, pcm, n_samples, ctxs, NULL};
    return tr_clm_decode_batch(&s->dec, &job, n);
}
