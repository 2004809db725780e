/* The Canary run: prompt and language gates (docs/formats/canary.md §8.1–§8.2), the input-length
 * gate before any front-end or encoder work (§9), log-mel, encoder, greedy
 * decoding with the KV cache to EOS (§8.3), and the result (§10). Abort is
 * polled between encoder blocks and after every decoder step; the tokens
 * decoded so far stay in the result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/canary/canary.h"
#include "nn/greedy.h"
#include "text/tokenizer.h"
#include "audio/audio.h"
#include "util/argmax.h"
#include "util/log.h"
#include "util/timer.h"

transcribe_status tr_cn_validate_run(const cn_model *m, const struct transcribe_run_params *p) {
    if (p->family) {
        TR_ERROR("canary: this family takes no run extension");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    cn_prompt pr;
    return tr_cn_build_prompt(m, p, &pr);
}

/* Progress: the encoder fills the first half (a tick before each layer),
 * the decoder steps the second (steps done / budget), 1.0 at the end. */
#define CN_ENC_SHARE 0.5

typedef struct abort_ctx {
    tr_run_ctx *ctx;
    int layer, n_layers;
} abort_ctx;

/* Polled before each encoder layer: also the progress tick. */
static bool enc_should_abort(void *user) {
    abort_ctx *ac = user;
    tr_run_span enc = {ac->ctx, 0.0, CN_ENC_SHARE};
    tr_run_span_report(&enc, ac->layer++, ac->n_layers);
    return tr_run_should_abort(ac->ctx);
}

/* Text (docs/formats/canary.md §10): decode with control tokens dropped (unless kept), then remove
 * exactly one leading ASCII space. Raw text: every generated id, as is. */
transcribe_status tr_cn_fill_result(const cn_model *m, const cn_prompt *pr, const int32_t *out,
                                    int n_out, bool keep_tags, tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (!tr_result_set_language(res, pr->src)) return TRANSCRIBE_ERR_OOM;
    char *raw = tr_tokenizer_decode(m->tok, out, n_out, false);
    char *text = tr_tokenizer_decode(m->tok, out, n_out, !keep_tags);
    transcribe_status st = TRANSCRIBE_OK;
    if (!raw || !text) {
        st = TRANSCRIBE_ERR_OOM;
    } else {
        const char *t = text[0] == ' ' ? text + 1 : text;
        bool ok = tr_result_set_raw_text(res, raw) && tr_result_set_full_text(res, t);
        /* exactly one {0, 0, text} segment, no word / token rows */
        if (ok && t[0]) ok = tr_result_add_segment(res, 0, 0, t) >= 0;
        if (!ok) st = TRANSCRIBE_ERR_OOM;
    }
    free(raw);
    free(text);
    return st;
}

typedef struct step_ctx {
    cn_session *s;
    int T_enc;
    const tr_run_ctx *ctx;
} step_ctx;

static transcribe_status decode_step(void *user, int32_t tok, int pos, int32_t *next) {
    step_ctx *c = user;
    int32_t id = tok;
    if (!tr_cn_decode(c->s, &id, 1, pos, c->T_enc)) {
        TR_ERROR("canary: decoder step at position %d failed", pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *next = tr_argmax(c->s->logits, c->s->m->hp.n_vocab);
    return TRANSCRIBE_OK;
}

static transcribe_status verify_step(void *user, const int32_t *toks, int n, int pos,
                                     int32_t *next) {
    step_ctx *c = user;
    if (!tr_cn_verify(c->s, toks, n, pos, c->T_enc, next)) {
        TR_ERROR("canary: verify step of %d rows at position %d failed", n, pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

static bool step_should_abort(void *user) {
    return tr_run_should_abort(((const step_ctx *)user)->ctx);
}

/* Greedy decode of docs/formats/canary.md §8.3 into out[] (capacity CN_MAX_GEN) on the shared
 * loop (src/nn/greedy.h): budget min(n_ctx - prompt, 512) tokens, window
 * n_ctx, abort polled before every step. */
static transcribe_status greedy(cn_session *s, const cn_prompt *pr, int T_enc, tr_run_ctx *ctx,
                                int32_t *out, int *n_out) {
    const cn_model *m = s->m;
    const int V = m->hp.n_vocab, eos = m->hp.eos;
    int max_tokens = s->n_ctx - pr->n;
    if (max_tokens > CN_MAX_GEN) max_tokens = CN_MAX_GEN;
    *n_out = 0;
    if (!tr_cn_decode(s, pr->ids, pr->n, 0, T_enc)) {
        TR_ERROR("canary: the %d-token prompt does not fit the decoder", pr->n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    step_ctx c = {s, T_enc, ctx};
    tr_run_span dec = {ctx, CN_ENC_SHARE, 1.0};
    tr_greedy_cfg cfg = {.eos = eos,
                         .max_new = max_tokens,
                         .max_n_kv = s->n_ctx,
                         .should_abort = step_should_abort,
                         .abort_user = &c,
                         .on_step = tr_run_span_step,
                         .step_user = &dec};
    /* speculative drafts (run params) take the same loop: ids and status
     * are plain greedy's always */
    transcribe_status st = tr_greedy_loop_spec(&cfg, decode_step, verify_step, tr_run_spec_k(ctx),
                                               &c, tr_argmax(s->logits, V), pr->n, out, n_out);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        TR_WARN("canary: decoding stopped after %d tokens without end-of-text (context %d, "
                "prompt %d); the text is truncated",
                *n_out, s->n_ctx, pr->n);
    return st;
}

transcribe_status tr_cn_run(cn_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const cn_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->pool = ctx->pool ? ctx->pool : s->pool;
    cn_prompt pr;
    transcribe_status st = tr_cn_build_prompt(m, ctx->params, &pr);
    if (st != TRANSCRIBE_OK) return st;

    /* docs/formats/canary.md §9: the whole gate runs before any mel or encoder work */
    int64_t T_enc_pred = tr_cn_predict_enc_frames(m, n_samples);
    if (T_enc_pred > m->hp.pos_emb_max_len) {
        TR_ERROR("canary: %d samples (%.1f s) need %lld encoder frames; the model's limit is %d "
                 "(%lld ms); split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)T_enc_pred,
                 m->hp.pos_emb_max_len, (long long)m->max_audio_ms);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    transcribe_status len_st = tr_mel_check_reflect_len(&m->mel, "canary", n_samples);
    if (len_st != TRANSCRIBE_OK) return len_st;
    if (s->n_ctx - pr.n < 1) {
        TR_ERROR("canary: the decoder context %d cannot hold the %d-token prompt plus one token",
                 s->n_ctx, pr.n);
        ctx->truncated = true;
        return TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }

    float *clean = NULL, *mel = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "canary", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_mel = 0, T_enc = 0;
    st = tr_cn_log_mel(m, s->pool, in, n_samples, &mel, &T_mel);
    free(clean);
    double t1 = tr_time_ms();
    ctx->result->mel_ms = (float)(t1 - t0);
    abort_ctx ac = {ctx, 0, tr_fc_get_hparams(m->enc)->n_layers};
    if (st == TRANSCRIBE_OK) st = tr_cn_encode(s, mel, T_mel, &T_enc, enc_should_abort, &ac);
    free(mel);
    double t2 = tr_time_ms();
    ctx->result->encode_ms = (float)(t2 - t1);
    if (st != TRANSCRIBE_OK) return st;

    int32_t *out = s->last_ids;
    int n_out = 0;
    tr_run_report_progress(ctx, CN_ENC_SHARE);
    st = greedy(s, &pr, T_enc, ctx, out, &n_out);
    tr_run_report_decoded(ctx, st);
    s->n_last = n_out;
    ctx->result->decode_ms = (float)(tr_time_ms() - t2);
    if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
        st == TRANSCRIBE_ERR_ABORTED) {
        transcribe_status st2 =
            tr_cn_fill_result(m, &pr, out, n_out, ctx->params->keep_special_tags, ctx->result);
        if (st2 != TRANSCRIBE_OK) st = st2;
    }
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    return st;
}
