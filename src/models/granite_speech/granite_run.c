/* Granite Speech runs: the input gate before any front-end work (§9; the
 * prompt length is exact from the sample count), stacked mel, Conformer,
 * Q-Former, prefill with the audio rows at the placeholder span, greedy
 * decoding on the shared causal-LM loop with Granite's budget, and output
 * parsing (§10). Batches run the encoder per utterance (as upstream) and
 * decode together (causal-lm.md §8). Every phase is timed. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/granite_speech/granite.h"
#include "util/log.h"
#include "util/timer.h"

TR_CLM_FAMILY_SESSION(gs, "granite_speech")

/* §9 gate: T_prompt + 256 must fit the ceiling. */
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
 * min(T + 256, ceiling) rounded up to a multiple of 256 (§9). */
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
                                 .step_user = &dec};
        int n_out = 0;
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, T_prompt, s->last_ids, &n_out);
        if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            tr_run_report_progress(ctx, 1.0);
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_out > steps) n_out = steps;
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t1;
        s->dec.n_steps = n_out + (st == TRANSCRIBE_OK ? 1 : 0) - 1;
        if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
            st == TRANSCRIBE_ERR_ABORTED) {
            transcribe_status st2 =
                tr_gs_fill_result(m, p, s->last_ids, n_out, n_samples, ctx->result);
            if (st2 != TRANSCRIBE_OK) st = st2;
        }
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            TR_WARN("granite_speech: generation stopped after %d tokens without end of text",
                    n_out);
    }
    ctx->result->decode_ms = (float)(tr_time_ms() - t0);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    free(x);
    free(pr);
    return st;
}

/* ---- batch (§11; causal-lm.md §8) ---- */

/* Every utterance through the front end, encoder and projector one at a
 * time (as upstream), then one batched prefill and the batched step loop.
 * A row keeps its single run's budget and window, so it gets its single
 * run's tokens and status (upstream's batch stops one token earlier). */
transcribe_status tr_gs_run_batch(gs_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    const gs_model *m = s->m;
    const struct transcribe_run_params *p = ctxs[0].params; /* one set for the batch */
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctxs[0].pool ? ctxs[0].pool : s->dec.pool;
    gs_prompt *pr = malloc(sizeof *pr);
    tr_clm_batch_row *rows = calloc((size_t)n, sizeof *rows);
    int32_t *out = malloc((size_t)n * (GS_MAX_NEW + 1) * sizeof(int32_t));
    transcribe_status st = pr && rows && out ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
    for (int i = 0; rows && i < n; i++) rows[i].slot = -1; /* not decoded (yet) */
    if (st == TRANSCRIBE_OK) st = tr_gs_build_prompt(m, p, pr);
    int n_valid = 0, n_ctx = 0;
    for (int i = 0; i < n && st == TRANSCRIBE_OK; i++) {
        tr_result *r = ctxs[i].result;
        rows[i].out = out + (size_t)i * (GS_MAX_NEW + 1);
        if (tr_run_should_abort(&ctxs[i])) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        int T = 0;
        r->status = !pcm[i] || n_samples[i] <= 0
                        ? TRANSCRIBE_ERR_INVALID_ARG
                        : prepare_utt(s, pr, pcm[i], n_samples[i], &ctxs[i], false, &rows[i].x, &T);
        if (r->status == TRANSCRIBE_ERR_OOM || r->status == TRANSCRIBE_ERR_ABORTED) st = r->status;
        if (r->status != TRANSCRIBE_OK) continue;
        rows[i].T = T;
        rows[i].max_new = run_steps(s, T) + 1;
        rows[i].max_n_kv = run_ctx(s, T);
        if (rows[i].max_n_kv > n_ctx) n_ctx = rows[i].max_n_kv;
        n_valid++;
    }
    double t0 = tr_time_ms(), prefill_ms = 0;
    if (st == TRANSCRIBE_OK && n_valid > 0) {
        tr_clm_greedy_cfg cfg = {
            .eos = m->sp.eos, .should_abort = tr_run_abort_poll, .abort_user = &ctxs[0]};
        st = tr_clm_run_batch(s->dec.lm, s->dec.pool, &cfg, rows, n, n_ctx, &prefill_ms);
    }
    s->dec.prefill_ms = prefill_ms;
    const float dec_ms = n_valid ? (float)((tr_time_ms() - t0) / n_valid) : 0.0f;
    for (int i = 0; rows && i < n; i++) {
        tr_result *r = ctxs[i].result;
        tr_clm_batch_row *row = &rows[i];
        if (row->x && row->slot >= 0 && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED)) {
            const int steps = row->max_new - 1;
            if (row->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && row->n_out > steps)
                row->n_out = steps;
            transcribe_status e = tr_gs_fill_result(m, p, row->out, row->n_out, n_samples[i], r);
            r->status = e != TRANSCRIBE_OK ? e : row->status;
            r->decode_ms = dec_ms;
            if (r->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctxs[i].truncated = true;
        } else if (st == TRANSCRIBE_ERR_ABORTED && r->status == TRANSCRIBE_OK) {
            r->status = TRANSCRIBE_ERR_ABORTED; /* not reached before the abort */
        }
        free(row->x);
    }
    free(rows);
    free(out);
    free(pr);
    return st;
}
