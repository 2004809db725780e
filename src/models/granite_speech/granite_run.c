/* Granite Speech runs: the input gate before any front-end work (§9; the
 * prompt length is exact from the sample count), stacked mel, Conformer,
 * Q-Former, prefill with the audio rows at the placeholder span, greedy
 * decoding on the shared causal-LM loop with Granite's budget, and output
 * parsing (§10). Batches go through the dispatcher one utterance at a time
 * (§11: upstream runs the encoder serially too). Every phase is timed. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/granite_speech/granite.h"
#include "util/log.h"
#include "util/timer.h"

TR_CLM_FAMILY_SESSION(gs, "granite_speech")

typedef struct abort_ctx {
    const tr_run_ctx *ctx;
} abort_ctx;

static bool should_abort(void *user) {
    return tr_run_should_abort(((const abort_ctx *)user)->ctx);
}

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

/* Front end, encoder and projector → audio rows (malloc'ed). */
static transcribe_status encode_utt(gs_session *s, const float *pcm, int n_samples, float **audio,
                                    int *n_audio, tr_result *res) {
    const gs_model *m = s->m;
    float *clean = NULL, *x = NULL, *enc = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "granite_speech", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_enc = 0;
    transcribe_status st = tr_gs_stacked_mel(m, s->dec.pool, in, n_samples, &x, &T_enc);
    free(clean);
    double t1 = tr_time_ms();
    if (st == TRANSCRIBE_OK) st = tr_gs_encode(m, s->dec.pool, x, T_enc, &enc);
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
    transcribe_status st = tr_gs_build_prompt(m, p, pr);
    if (st == TRANSCRIBE_OK) st = gate(s, n_samples, pr, &T_prompt);
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    float *audio = NULL, *x = NULL;
    int32_t *ids = NULL;
    int n_audio = 0;
    if (st == TRANSCRIBE_OK) st = encode_utt(s, pcm, n_samples, &audio, &n_audio, ctx->result);
    if (st == TRANSCRIBE_OK && pr->n_pre + n_audio + pr->n_post != T_prompt) {
        TR_ERROR("granite_speech: %d audio rows disagree with the gate's prompt of %d", n_audio,
                 T_prompt);
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    double t0 = tr_time_ms();
    /* cache: min(T + 256, ceiling) rounded up to a multiple of 256 (§9) */
    int need = T_prompt + GS_MAX_NEW < s->dec.ceiling ? T_prompt + GS_MAX_NEW : s->dec.ceiling;
    const int n_ctx = (need + 255) / 256 * 256;
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    if (st == TRANSCRIBE_OK) {
        ids = malloc((size_t)T_prompt * sizeof *ids);
        x = malloc((size_t)T_prompt * m->lm.d_model * sizeof(float));
        if (!ids || !x) st = TRANSCRIBE_ERR_OOM;
    }
    int first = -1;
    if (st == TRANSCRIBE_OK) {
        /* audio placeholders carry id 0 for the lookup; their rows are replaced */
        memcpy(ids, pr->pre, (size_t)pr->n_pre * sizeof *ids);
        memset(ids + pr->n_pre, 0, (size_t)n_audio * sizeof *ids);
        memcpy(ids + pr->n_pre + n_audio, pr->post, (size_t)pr->n_post * sizeof *ids);
        tr_clm_embed(&m->lm, &m->lm_w, ids, T_prompt, audio, pr->n_pre, n_audio, x);
        first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, T_prompt, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    double t1 = tr_time_ms();
    if (first >= 0) s->dec.prefill_ms = t1 - t0;
    s->dec.last_T_prompt = T_prompt;
    if (st == TRANSCRIBE_OK) {
        /* up to min(256, ceiling − T) non-EOS tokens, then one more EOS decision */
        int steps = s->dec.ceiling - T_prompt < GS_MAX_NEW ? s->dec.ceiling - T_prompt : GS_MAX_NEW;
        abort_ctx ac = {ctx};
        tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                 .max_new = steps + 1,
                                 .max_n_kv = n_ctx,
                                 .should_abort = should_abort,
                                 .abort_user = &ac};
        int n_out = 0;
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, T_prompt, s->last_ids, &n_out);
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
    free(audio);
    free(ids);
    free(x);
    free(pr);
    return st;
}
