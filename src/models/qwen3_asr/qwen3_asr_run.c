/* Qwen3-ASR runs: the chat prompt with optional forced language (docs/formats/qwen3_asr.md §7), the
 * input gate before any front-end work (§9.3; the encoder length is exact
 * from the sample count), log-mel, encoder, prefill with the audio rows
 * injected, greedy decoding on the shared causal-LM loop (§9.2), output
 * parsing (§10), and the batched path (§11) with per-utterance statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/qwen3_asr/qwen3_asr.h"
#include "nn/causal_lm_batch.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

/* ---- sessions ---- */

/* The session is the decoder half alone (nn's tr_clm_session). */
static transcribe_status qa_setup(qa_session *s, const tr_session_cfg *cfg) {
    return tr_clm_session_init(&s->dec, "qwen3_asr", &s->m->lm, &s->m->lm_w, s->m->max_pos,
                               cfg->pool, cfg->n_ctx, cfg->kv_type);
}
static void qa_release(qa_session *s) {
    tr_clm_session_release(&s->dec);
}
TR_FAMILY_SESSION(qa, qa_setup, qa_release)

/* ---- prompt (docs/formats/qwen3_asr.md §7) ---- */

static bool forced(const char *lang) {
    return lang && lang[0];
}

/* "language <Name>" + <asr_text>: ids into out (capacity QA_MAX_LANG_IDS),
 * count returned; -1 when the language cannot be forced. */
static int lang_prefix(const qa_model *m, const char *lang, int32_t *out) {
    const char *name = tr_qa_lang_name(lang);
    if (!name || m->sp.asr_text < 0 || !tr_tokenizer_can_encode(m->tok)) return -1;
    char text[64];
    snprintf(text, sizeof text, "language %s", name);
    int n = tr_tokenizer_encode(m->tok, text, out, QA_MAX_LANG_IDS - 1);
    if (n < 0) return -1;
    out[n++] = m->sp.asr_text;
    return n;
}

int tr_qa_lang_prefix_len(const qa_model *m, const char *lang) {
    int32_t ids[QA_MAX_LANG_IDS];
    return forced(lang) ? lang_prefix(m, lang, ids) : 0;
}

transcribe_status tr_qa_build_prompt(const qa_model *m, int T_enc, const char *lang, int32_t *ids,
                                     int *n) {
    const qa_special *sp = &m->sp;
    int k = 0;
    const int32_t head[QA_AUDIO_AT] = {sp->im_start, sp->system,  sp->newline,
                                       sp->im_end,   sp->newline, sp->im_start,
                                       sp->user,     sp->newline, sp->audio_start};
    for (int i = 0; i < QA_AUDIO_AT; i++) ids[k++] = head[i];
    for (int i = 0; i < T_enc; i++) ids[k++] = sp->audio_pad;
    const int32_t tail[6] = {sp->audio_end, sp->im_end,    sp->newline,
                             sp->im_start,  sp->assistant, sp->newline};
    for (int i = 0; i < 6; i++) ids[k++] = tail[i];
    if (forced(lang)) {
        int np = lang_prefix(m, lang, ids + k);
        if (np < 0) {
            TR_ERROR("qwen3_asr: language '%s' cannot be forced (no publisher name, no "
                     "<asr_text> token or no BPE merges)",
                     lang);
            return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
        }
        k += np;
    }
    *n = k;
    return TRANSCRIBE_OK;
}

transcribe_status tr_qa_validate_run(const qa_model *m, const struct transcribe_run_params *p) {
    transcribe_status st = tr_family_check_transcribe_only("qwen3_asr", p);
    if (st != TRANSCRIBE_OK) return st;
    if (forced(p->language) && tr_qa_lang_prefix_len(m, p->language) < 0) {
        TR_ERROR("qwen3_asr: language '%s' cannot be forced with this model", p->language);
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    return TRANSCRIBE_OK;
}

/* ---- output (docs/formats/qwen3_asr.md §10) ---- */

transcribe_status tr_qa_fill_result(const qa_model *m, const int32_t *ids, int n, bool is_forced,
                                    int n_samples, tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    static const char k_sep[] = "<asr_text>", k_lang[] = "language ";
    const char *sep = strstr(raw, k_sep);
    const char *text = sep ? sep + sizeof k_sep - 1 : raw;
    bool ok = tr_result_set_raw_text(res, raw) && tr_result_set_full_text(res, text);
    if (ok && sep && !is_forced) {
        const char *p = strstr(raw, k_lang);
        if (p && p < sep) {
            const char *a = p + sizeof k_lang - 1, *b = sep;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n')) b--;
            char name[64];
            size_t len = (size_t)(b - a);
            if (len < sizeof name) {
                memcpy(name, a, len);
                name[len] = 0;
                const char *code = tr_qa_lang_code(m, name);
                if (code) ok = tr_result_set_language(res, code);
            }
        }
    }
    int64_t t1 = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    if (ok) ok = tr_result_add_segment(res, 0, t1, text) >= 0;
    free(raw);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- one utterance ---- */

/* docs/formats/qwen3_asr.md §9.3 gate from the exact prompt length (known from the sample
 * count). */
static transcribe_status gate(const qa_session *s, int n_samples, int prefix, int *T_prompt) {
    const qa_model *m = s->m;
    if (n_samples < m->mel.n_fft / 2 + 1) {
        TR_ERROR("qwen3_asr: %d samples are too short (at least %d)", n_samples,
                 m->mel.n_fft / 2 + 1);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int64_t T = tr_qa_enc_frames(m, n_samples) + QA_PROMPT_FIXED + prefix;
    if (T + QA_MAX_NEW > s->dec.ceiling) {
        TR_ERROR(
            "qwen3_asr: %d samples (%.1f s) need a %lld-token prompt; with the 256-token "
            "output reserve that exceeds the context of %d (about %lld ms of audio); split "
            "the audio",
            n_samples, (double)n_samples / m->mel.sample_rate, (long long)T, s->dec.ceiling,
            (long long)((s->dec.ceiling - 48 - QA_MAX_NEW > 0 ? s->dec.ceiling - 48 - QA_MAX_NEW
                                                              : 0) *
                        80LL));
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    *T_prompt = (int)T;
    return TRANSCRIBE_OK;
}

/* mel + encoder → audio rows (malloc'ed) and the prompt ids (malloc'ed);
 * progress (may be NULL) follows the encoder layers. */
static transcribe_status encode_utt(qa_session *s, const float *pcm, int n_samples,
                                    const char *lang, float **audio, int32_t **ids, int *n_ids,
                                    tr_result *res, tr_run_span *progress) {
    const qa_model *m = s->m;
    *audio = NULL;
    *ids = NULL;
    float *clean = NULL, *mel = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "qwen3_asr", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_mel = 0, T_enc = 0;
    transcribe_status st = tr_qa_log_mel(m, s->dec.pool, in, n_samples, &mel, &T_mel);
    free(clean);
    double t1 = tr_time_ms();
    if (st == TRANSCRIBE_OK) st = tr_qa_encode(m, s->dec.pool, mel, T_mel, audio, &T_enc, progress);
    free(mel);
    double t2 = tr_time_ms();
    res->mel_ms = (float)(t1 - t0);
    res->encode_ms = (float)(t2 - t1);
    if (st != TRANSCRIBE_OK) return st;
    *ids = malloc(((size_t)T_enc + QA_PROMPT_FIXED + QA_MAX_LANG_IDS) * sizeof(int32_t));
    if (!*ids) return TRANSCRIBE_ERR_OOM;
    return tr_qa_build_prompt(m, T_enc, lang, *ids, n_ids);
}

/* Embeds and prefills one prompt into `slot`; the first token or < 0. */
static int prefill(qa_session *s, const int32_t *ids, int n, const float *audio, int slot,
                   float *logits) {
    const qa_model *m = s->m;
    float *x = malloc((size_t)n * m->lm.d_model * sizeof(float));
    if (!x) return -1;
    int n_audio = 0;
    for (int i = QA_AUDIO_AT; i < n && ids[i] == m->sp.audio_pad; i++) n_audio++;
    tr_clm_embed(&m->lm, &m->lm_w, ids, n, audio, QA_AUDIO_AT, n_audio, x);
    int tok = tr_clm_prefill(s->dec.lm, s->dec.pool, x, n, slot, logits);
    free(x);
    return tok;
}

transcribe_status tr_qa_run(qa_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const qa_model *m = s->m;
    const char *lang = ctx->params->language;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    int prefix = tr_qa_lang_prefix_len(m, lang), T_pred = 0;
    if (prefix < 0) return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    transcribe_status st = gate(s, n_samples, prefix, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *audio = NULL;
    int32_t *ids = NULL;
    int n_ids = 0;
    tr_run_span enc = {ctx, 0.0, TR_RUN_ENCODED};
    st = encode_utt(s, pcm, n_samples, lang, &audio, &ids, &n_ids, ctx->result, &enc);
    double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    int n_ctx = tr_clm_ctx_pow2((int64_t)n_ids + QA_MAX_NEW, s->dec.ceiling);
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    int first = -1;
    s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        first = prefill(s, ids, n_ids, audio, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    double t3 = tr_time_ms();
    s->dec.prefill_ms = t3 - t2;
    s->dec.last_T_prompt = n_ids;
    int n_out = 0;
    if (st == TRANSCRIBE_OK) {
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                 .max_new = QA_MAX_NEW,
                                 .max_n_kv = n_ctx,
                                 .should_abort = tr_run_abort_poll,
                                 .abort_user = ctx,
                                 .on_step = tr_run_span_step,
                                 .step_user = &dec,
                                 .spec_k = tr_run_spec_k(ctx)};
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, n_ids, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t3;
        s->dec.n_steps = n_out + (st == TRANSCRIBE_OK ? 1 : 0) - 1; /* ids after the prefill one */
        if (tr_run_has_ids(st))
            st = tr_run_filled(
                st, tr_qa_fill_result(m, s->last_ids, n_out, forced(lang), n_samples, ctx->result));
    }
    tr_run_end_decode(ctx, st, t2);
    free(audio);
    free(ids);
    return st;
}

/* ---- batch (docs/formats/qwen3_asr.md §11; docs/formats/causal-lm.md §8) ---- */

/* Gate, encoder and prompt embeddings of one utterance into its batch row
 * (x set when it will be decoded). A non-OK status other than OOM is that
 * utterance's own. */
static transcribe_status prepare_utt(qa_session *s, const float *pcm, int n_samples, int prefix,
                                     tr_run_ctx *ctx, tr_clm_batch_row *row) {
    const qa_model *m = s->m;
    int T_pred = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    transcribe_status st = gate(s, n_samples, prefix, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    float *audio = NULL;
    int32_t *ids = NULL;
    int n_ids = 0;
    st = encode_utt(s, pcm, n_samples, ctx->params->language, &audio, &ids, &n_ids, ctx->result,
                    NULL);
    if (st == TRANSCRIBE_OK) {
        row->x = malloc((size_t)n_ids * m->lm.d_model * sizeof(float));
        if (!row->x) st = TRANSCRIBE_ERR_OOM;
    }
    if (st == TRANSCRIBE_OK) {
        int n_audio = 0;
        for (int k = QA_AUDIO_AT; k < n_ids && ids[k] == m->sp.audio_pad; k++) n_audio++;
        tr_clm_embed(&m->lm, &m->lm_w, ids, n_ids, audio, QA_AUDIO_AT, n_audio, row->x);
        row->T = n_ids;
        row->max_new = QA_MAX_NEW;
        /* the single run's window: its own cache size */
        row->max_n_kv = tr_clm_ctx_pow2((int64_t)n_ids + QA_MAX_NEW, s->dec.ceiling);
    }
    free(audio);
    free(ids);
    return st;
}

/* nn/causal_lm_batch.h hooks; extra: the batch's language prefix length */
static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    const int prefix = *(const int *)job->extra;
    return prepare_utt(job->session, job->pcm[i], job->n_samples[i], prefix, ctx, row);
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const qa_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    return tr_qa_fill_result(s->m, row->out, row->n_out, forced(ctx->params->language),
                             job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

transcribe_status tr_qa_run_batch(qa_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    const qa_model *m = s->m;
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    /* one language hint for the whole batch */
    const int prefix = tr_qa_lang_prefix_len(m, ctxs[0].params->language);
    if (prefix < 0) return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    const tr_clm_batch_job job = {&k_batch, {.eos = m->sp.eos}, ctxs[0].pool, s,
                                  pcm,      n_samples,          ctxs,         &prefix};
    return tr_clm_decode_batch(&s->dec, &job, n);
}
