/* The Cohere run: the prompt looked up by string (docs/formats/cohere.md
 * docs/formats/cohere.md §6.1), the length gates before any front-end or encoder work
 * (docs/formats/cohere.md §5.1, docs/formats/cohere.md §9), log-mel, encoder, greedy decoding on
 * the shared loop (docs/formats/cohere.md §6.3) and the result (docs/formats/cohere.md §6.4). Abort
 * is polled between encoder blocks and before every decoder step; the tokens decoded so far stay in
 * the result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cohere/cohere.h"
#include "audio/audio.h"
#include "nn/greedy.h"
#include "text/tokenizer.h"
#include "util/argmax.h"
#include "util/log.h"
#include "util/timer.h"

transcribe_status tr_ch_build_prompt(const ch_model *m, const struct transcribe_run_params *p,
                                     ch_prompt *out) {
    memset(out, 0, sizeof *out);
    const char *lang = p && p->language && p->language[0] ? p->language : "en";
    out->lang = "en";
    bool listed = m->n_lang == 0;
    for (int i = 0; i < m->n_lang; i++)
        if (strcmp(m->lang[i], lang) == 0) {
            out->lang = m->lang[i];
            listed = true;
        }
    if (!listed) {
        TR_ERROR("cohere: language '%s' is not one of the model's general.languages", lang);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    char tag[64];
    if (snprintf(tag, sizeof tag, "<|%s|>", lang) >= (int)sizeof tag) {
        TR_ERROR("cohere: language code '%.16s...' is too long", lang);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* punctuation on, ITN / timestamps / diarization off: hard-wired (docs/formats/cohere.md §6.1)
     */
    const char *const pieces[CH_PROMPT] = {"\xE2\x96\x81",
                                           "<|startofcontext|>",
                                           "<|startoftranscript|>",
                                           "<|emo:undefined|>",
                                           tag,
                                           tag,
                                           "<|pnc|>",
                                           "<|noitn|>",
                                           "<|notimestamp|>",
                                           "<|nodiarize|>"};
    for (int i = 0; i < CH_PROMPT; i++) {
        out->ids[i] = tr_tokenizer_find(m->tok, pieces[i]);
        if (out->ids[i] < 0) {
            TR_ERROR("cohere: the prompt piece \"%s\" is not in the model's vocabulary", pieces[i]);
            return TRANSCRIBE_ERR_INVALID_ARG;
        }
    }
    if (m->n_lang == 0) out->lang = NULL; /* an unlisted code: the hint is not model-owned */
    return TRANSCRIBE_OK;
}

transcribe_status tr_ch_validate_run(const ch_model *m, const struct transcribe_run_params *p) {
    transcribe_status st = tr_family_check_transcribe_only("cohere", p);
    if (st != TRANSCRIBE_OK) return st;
    ch_prompt pr;
    return tr_ch_build_prompt(m, p, &pr);
}

/* docs/formats/cohere.md §6.4: raw = every generated id decoded, special pieces included; text =
 * raw minus one leading space; one segment over the whole audio (no time
 * inside it is known: timestamp kind NONE) and one untimed row per id. */
transcribe_status tr_ch_fill_result(const ch_model *m, const ch_prompt *pr, const int32_t *out,
                                    int n_out, int64_t n_samples, tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (pr->lang && !tr_result_set_language(res, pr->lang)) return TRANSCRIBE_ERR_OOM;
    char *raw = tr_tokenizer_decode(m->tok, out, n_out, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    const char *text = raw[0] == ' ' ? raw + 1 : raw;
    bool ok = tr_result_set_raw_text(res, raw) && tr_result_set_full_text(res, text);
    if (ok && text[0]) {
        const int64_t t1 = (int64_t)llround(1000.0 * (double)n_samples / m->mel.sample_rate);
        const int seg = tr_result_add_segment(res, 0, t1, text);
        ok = seg >= 0;
        for (int i = 0; ok && i < n_out; i++) {
            char *piece = tr_tokenizer_decode(m->tok, &out[i], 1, false);
            ok = piece && tr_result_add_token(res, out[i], 0.0f, 0, 0, seg, -1, piece) >= 0;
            free(piece);
        }
    }
    free(raw);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* Progress: the encoder fills the first half (a tick per layer), the
 * decoder steps the rest. */
#define CH_ENC_SHARE 0.5

typedef struct enc_abort {
    tr_run_ctx *ctx;
    int layer, n_layers;
} enc_abort;

static bool enc_should_abort(void *user) {
    enc_abort *a = user;
    tr_run_span enc = {a->ctx, 0.0, CH_ENC_SHARE};
    tr_run_span_report(&enc, a->layer++, a->n_layers);
    return tr_run_should_abort(a->ctx);
}

typedef struct step_ctx {
    ch_session *s;
    int T_enc;
} step_ctx;

static transcribe_status decode_step(void *user, int32_t tok, int pos, int32_t *next) {
    step_ctx *c = user;
    if (!tr_ch_decode(c->s, &tok, 1, pos, c->T_enc)) {
        TR_ERROR("cohere: decoder step at position %d failed", pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *next = tr_argmax(c->s->logits, c->s->m->hp.n_vocab);
    return TRANSCRIBE_OK;
}

static transcribe_status verify_step(void *user, const int32_t *toks, int n, int pos,
                                     int32_t *next) {
    step_ctx *c = user;
    ch_session *s = c->s;
    if (!tr_fced_verify(&s->m->fced, s->pool, &s->enc, &s->kv, toks, n, pos, c->T_enc, s->n_ctx,
                        s->dec_x, s->dec_scratch, s->spec_logits, next)) {
        TR_ERROR("cohere: verify step of %d rows at position %d failed", n, pos);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

/* docs/formats/cohere.md §6.3 on the shared loop (nn/greedy.h): prefill the prompt, budget
 * min(512, n_ctx - 10) counting the prefill token, window n_ctx, abort
 * before every step. */
static transcribe_status greedy(ch_session *s, const ch_prompt *pr, int T_enc, tr_run_ctx *ctx,
                                int32_t *out, int *n_out) {
    const ch_model *m = s->m;
    *n_out = 0;
    if (!tr_ch_decode(s, pr->ids, CH_PROMPT, 0, T_enc)) {
        TR_ERROR("cohere: the %d-token prompt does not fit the decoder", CH_PROMPT);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    step_ctx c = {s, T_enc};
    tr_run_span dec = {ctx, CH_ENC_SHARE, 1.0};
    const tr_greedy_cfg cfg = {.eos = m->hp.eos,
                               .max_new = tr_ch_max_new(s),
                               .max_n_kv = s->n_ctx,
                               .should_abort = tr_run_abort_poll,
                               .abort_user = ctx,
                               .on_step = tr_run_span_step,
                               .step_user = &dec};
    /* speculative drafts verified in passes of the small-pass rows, whose
     * bits equal single steps': the ids equal plain greedy decoding's */
    transcribe_status st =
        tr_greedy_loop_spec(&cfg, decode_step, verify_step, tr_run_spec_k(ctx), &c,
                            tr_argmax(s->logits, m->hp.n_vocab), CH_PROMPT, out, n_out);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        TR_WARN("cohere: decoding stopped after %d tokens without end-of-text (context %d); the "
                "text is truncated",
                *n_out, s->n_ctx);
    return st;
}

transcribe_status tr_ch_run(ch_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const ch_model *m = s->m;
    s->n_last = s->last_T_enc = 0;
    if (!pcm || n_samples <= 0) {
        TR_ERROR("cohere: no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    s->pool = ctx->pool ? ctx->pool : s->pool;
    ch_prompt pr;
    transcribe_status st = tr_ch_build_prompt(m, ctx->params, &pr);
    if (st != TRANSCRIBE_OK) return st;
    /* docs/formats/cohere.md §5.1 / docs/formats/cohere.md §9: every gate before any mel or encoder
     * work */
    if ((st = tr_ch_check_length(m, n_samples))) return st;
    if (s->n_ctx - CH_PROMPT < 1) {
        TR_ERROR("cohere: the decoder context %d cannot hold the %d-token prompt plus one token",
                 s->n_ctx, CH_PROMPT);
        ctx->truncated = true;
        return TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }

    float *clean = NULL, *mel = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "cohere", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    const double t0 = tr_time_ms();
    int T_mel = 0, T_enc = 0;
    st = tr_ch_log_mel(m, s->pool, in, n_samples, &mel, &T_mel);
    free(clean);
    const double t1 = tr_time_ms();
    ctx->result->mel_ms = (float)(t1 - t0);
    enc_abort ea = {ctx, 0, m->enc_hp.n_layers};
    if (st == TRANSCRIBE_OK) st = tr_ch_encode(s, mel, T_mel, &T_enc, enc_should_abort, &ea);
    free(mel);
    const double t2 = tr_time_ms();
    ctx->result->encode_ms = (float)(t2 - t1);
    if (st != TRANSCRIBE_OK) return st;

    int n_out = 0;
    s->last_T_enc = T_enc;
    tr_run_report_progress(ctx, CH_ENC_SHARE);
    st = greedy(s, &pr, T_enc, ctx, s->last_ids, &n_out);
    tr_run_report_decoded(ctx, st);
    s->n_last = n_out;
    tr_run_end_decode(ctx, st, t2);
    /* an aborted decode keeps its partial text (docs/formats/cohere.md §6.4) */
    if (tr_run_has_ids(st))
        st = tr_run_filled(st,
                           tr_ch_fill_result(m, &pr, s->last_ids, n_out, n_samples, ctx->result));
    return st;
}
