/* Granite Speech runs: the input gate before any front-end work (docs/formats/granite_speech.md §9;
 * the prompt length is exact from the sample count), stacked mel, Conformer, Q-Former, prefill with
 * the audio rows at the placeholder span, greedy decoding on the shared causal-LM loop with
 * Granite's budget, and output parsing (§10). Batches run the encoder per utterance (as upstream)
 * and decode together (docs/formats/causal-lm.md §8). Every phase is timed. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/granite_speech/granite.h"
#include "nn/causal_lm_batch.h"
#include "util/log.h"
#include "util/timer.h"

/* The session is the decoder half alone (nn's tr_clm_session). */
static transcribe_status gs_setup(gs_session *s, const tr_session_cfg *cfg) {
    return tr_clm_session_init(&s->dec, "granite_speech", &s->m->lm, &s->m->lm_w, s->m->max_pos,
                               cfg->pool, cfg->n_ctx, cfg->kv_type);
}
static void gs_release(gs_session *s) {
    tr_clm_session_release(&s->dec);
}
TR_FAMILY_SESSION(gs, gs_setup, gs_release)

/* docs/formats/granite_speech.md §9 gate: T_prompt + 256 must fit the ceiling. */
static transcribe_status gate(const gs_session *s, int n_samples, const gs_prompt *pr,
                              int *T_prompt) {
    const gs_model *m = s->m;
    const int64_t T_enc = tr_gs_enc_frames(m, n_samples);
    if (T_enc < 1) {
        TR_ERROR("granite_speech: %d samples are too short (no encoder frame)", n_samples);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t T = pr->n_pre + (int64_t)tr_gs_audio_tokens(m, T_enc) + pr->n_post;
    if (T + GS_MAX_NEW > s->dec.ceiling) {
        TR_ERROR("granite_speech: %d samples (%.1f s) need a %lld-token prompt; with the 256-token "
                 "output reserve that exceeds the context of %d; split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)T, s->dec.ceiling);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    *T_prompt = (int)T;
    return TRANSCRIBE_OK;
}

/* Front end, encoder and projector → audio rows (malloc'ed); the encoder
 * layers report progress up to TR_RUN_ENCODED when progress is given. */
static transcribe_status encode_utt(gs_session *s, const float *pcm, int n_samples, float **audio,
                                    int *n_audio, tr_result *res, tr_run_ctx *progress) {
    tr_run_span enc_span = {progress, 0.0, TR_RUN_ENCODED};
    const gs_model *m = s->m;
    float *clean = NULL, *x = NULL, *enc = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "granite_speech", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_enc = 0;
    transcribe_status st = tr_gs_stacked_mel(m, s->dec.pool, in, n_samples, &x, &T_enc);
    free(clean);
    double t1 = tr_time_ms();
    if (st == TRANSCRIBE_OK)
        st = tr_gs_encode(m, s->dec.pool, x, T_enc, &enc, progress ? &enc_span : NULL);
    free(x);
    double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK) st = tr_gs_project(m, s->dec.pool, enc, T_enc, audio, n_audio);
    free(enc);
    double t3 = tr_time_ms();
    s->mel_ms = t1 - t0;
    s->encode_ms = t2 - t1;
    s->proj_ms = t3 - t2;
    res->mel_ms = (float)s->mel_ms;
    res->encode_ms = (float)(s->encode_ms + s->proj_ms);
    return st;
}

/* The cache (and window) of a single run with a T-token prompt:
 * min(T + 256, ceiling) rounded up to a multiple of 256 (docs/formats/granite_speech.md §9). */
static int run_ctx(const gs_session *s, int T) {
    int need = T + GS_MAX_NEW < s->dec.ceiling ? T + GS_MAX_NEW : s->dec.ceiling;
    return (need + 255) / 256 * 256;
}

/* Tokens a run may emit after a T-token prompt: min(256, ceiling - T). */
static int run_steps(const gs_session *s, int T) {
    const int budget = s->budget >= 1 && s->budget <= GS_MAX_NEW ? s->budget : GS_MAX_NEW;
    return s->dec.ceiling - T < budget ? s->dec.ceiling - T : budget;
}

/* Gate, front end, encoder and projector of one utterance → its prompt
 * embeddings [T_prompt][d_model] (*x, malloc'ed): the prompt's text rows
 * with the audio rows at the placeholder span. report: the encoder layers
 * tick ctx's progress (a single run; a batch keeps per-piece progress). */
static transcribe_status prepare_utt(gs_session *s, const gs_prompt *pr, const float *pcm,
                                     int n_samples, tr_run_ctx *ctx, bool report, float **x,
                                     int *T_prompt) {
    const gs_model *m = s->m;
    *x = NULL;
    transcribe_status st = gate(s, n_samples, pr, T_prompt);
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    float *audio = NULL;
    int32_t *ids = NULL;
    int n_audio = 0;
    if (st == TRANSCRIBE_OK)
        st = encode_utt(s, pcm, n_samples, &audio, &n_audio, ctx->result, report ? ctx : NULL);
    if (st == TRANSCRIBE_OK && pr->n_pre + n_audio + pr->n_post != *T_prompt) {
        TR_ERROR("granite_speech: %d audio rows disagree with the gate's prompt of %d", n_audio,
                 *T_prompt);
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (st == TRANSCRIBE_OK) {
        ids = malloc((size_t)*T_prompt * sizeof *ids);
        *x = malloc((size_t)*T_prompt * m->lm.d_model * sizeof(float));
        if (!ids || !*x) st = TRANSCRIBE_ERR_OOM;
    }
    if (st == TRANSCRIBE_OK) {
        /* audio placeholders carry id 0 for the lookup; their rows are replaced */
        memcpy(ids, pr->pre, (size_t)pr->n_pre * sizeof *ids);
        memset(ids + pr->n_pre, 0, (size_t)n_audio * sizeof *ids);
        memcpy(ids + pr->n_pre + n_audio, pr->post, (size_t)pr->n_post * sizeof *ids);
        tr_clm_embed(&m->lm, &m->lm_w, ids, *T_prompt, audio, pr->n_pre, n_audio, *x);
    } else {
        free(*x);
        *x = NULL;
    }
    free(audio);
    free(ids);
    return st;
}

transcribe_status tr_gs_run(gs_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const gs_model *m = s->m;
    const struct transcribe_run_params *p = ctx->params;
    s->n_last = 0;
    s->mel_ms = s->encode_ms = s->proj_ms = s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    gs_prompt *pr = malloc(sizeof *pr);
    if (!pr) return TRANSCRIBE_ERR_OOM;
    int T_prompt = 0;
    float *x = NULL;
    transcribe_status st = tr_gs_build_prompt(m, p, pr);
    if (st == TRANSCRIBE_OK) st = prepare_utt(s, pr, pcm, n_samples, ctx, true, &x, &T_prompt);
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    double t0 = tr_time_ms();
    const int n_ctx = run_ctx(s, T_prompt);
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    int first = -1;
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, T_prompt, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    double t1 = tr_time_ms();
    if (first >= 0) s->dec.prefill_ms = t1 - t0;
    s->dec.last_T_prompt = T_prompt;
    if (st == TRANSCRIBE_OK) {
        /* up to min(256, ceiling − T) non-EOS tokens, then one more EOS decision */
        const int steps = run_steps(s, T_prompt);
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                 .max_new = steps + 1,
                                 .max_n_kv = n_ctx,
                                 .should_abort = tr_run_abort_poll,
                                 .abort_user = ctx,
                                 .on_step = tr_run_span_step,
                                 .step_user = &dec,
                                 .spec_k = tr_run_spec_k(ctx)};
        int n_out = 0;
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, T_prompt, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_out > steps) n_out = steps;
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t1;
        s->dec.n_steps = n_out + (st == TRANSCRIBE_OK ? 1 : 0) - 1;
        if (tr_run_has_ids(st))
            st = tr_run_filled(st,
                               tr_gs_fill_result(m, p, s->last_ids, n_out, n_samples, ctx->result));
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("granite_speech: generation stopped after %d tokens without end of text",
                    n_out);
    }
    tr_run_end_decode(ctx, st, t0);
    free(x);
    free(pr);
    return st;
}

/* ---- batch (docs/formats/granite_speech.md §11; docs/formats/causal-lm.md §8) ---- */

/* nn/causal_lm_batch.h hooks: utterance i up to its prompt embeddings
 * (extra: the batch's prompt), and its result, where a truncated row keeps
 * its single run's step count. */
static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    gs_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    if (!job->pcm[i] || job->n_samples[i] <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    transcribe_status st =
        prepare_utt(s, job->extra, job->pcm[i], job->n_samples[i], ctx, false, &row->x, &row->T);
    row->max_new = run_steps(s, row->T) + 1;
    row->max_n_kv = run_ctx(s, row->T);
    return st;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const tr_run_ctx *ctx = (const tr_run_ctx *)job->ctxs + i;
    if (row->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && row->n_out >= row->max_new)
        row->n_out = row->max_new - 1;
    return tr_gs_fill_result(((const gs_session *)job->session)->m, ctx->params, row->out,
                             row->n_out, job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

/* Every utterance through the front end, encoder and projector one at a
 * time (as upstream), then one batched prefill and the batched step loop.
 * A row keeps its single run's budget and window, so it gets its single
 * run's tokens and status (upstream's batch stops one token earlier). */
transcribe_status tr_gs_run_batch(gs_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    gs_prompt *pr = malloc(sizeof *pr); /* one set of params for the batch (n >= 1) */
    transcribe_status st = pr ? tr_gs_build_prompt(s->m, ctxs[0].params, pr) : TRANSCRIBE_ERR_OOM;
    if (st == TRANSCRIBE_OK) {
        const tr_clm_batch_job job = {
            &k_batch, {.eos = s->m->sp.eos}, ctxs[0].pool, s, pcm, n_samples, ctxs, pr};
        st = tr_clm_decode_batch(&s->dec, &job, n);
    }
    free(pr);
    return st;
}
