/* MOSS runs (docs/formats/moss.md §5–§10): 30 s chunks through the Whisper front
 * end and the shared Whisper encoder, trim + concatenate, the 4x merge
 * (a reinterpretation of the concatenated rows, no copy), the VQAdaptor,
 * the baked prompt with time-marker digits, prefill with the audio rows at
 * their (non-contiguous) positions, greedy decoding under the §9 budget and
 * window, and the §10 parse into segments and speaker rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/moss/moss.h"
#include "models/moss/moss_parse.h"
#include "nn/causal_lm_batch.h"
#include "nn/greedy.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/timer.h"

/* ---- sessions ---- */

static int chunk_frames(const ms_model *m) {
    return m->n_chunk / m->mel.hop_length;
}

/* The decoder half (nn/causal_lm). The encoder's per-chunk buffers (some
 * 70 MiB at Whisper-medium size) live only while tr_ms_encode runs, so
 * that they are not resident beside the LM weights and the KV cache. */
static transcribe_status ms_setup(ms_session *s, const tr_session_cfg *cfg) {
    const ms_model *m = s->m;
    transcribe_status st = tr_clm_session_init(&s->dec, "moss", &m->lm, &m->lm_w, m->max_pos,
                                               cfg->pool, cfg->n_ctx, cfg->kv_type);
    if (st != TRANSCRIBE_OK) return st;
    s->repeat_guard = true;
    return TRANSCRIBE_OK;
}

static void ms_release(ms_session *s) {
    tr_clm_session_release(&s->dec);
    free(s->last_ids);
}

TR_FAMILY_SESSION(ms, ms_setup, ms_release)

/* ---- docs/formats/moss.md §5 lengths and §7 prompt ---- */

static int64_t tokens_of_chunk(const ms_model *m, int64_t real_len) {
    const int64_t per = (int64_t)m->mel.hop_length * 2 * m->merge; /* 1280 */
    return (real_len - 1) / per + 1;
}

int64_t tr_ms_audio_tokens(const ms_model *m, int64_t n_samples) {
    int64_t t = 0;
    for (int64_t start = 0; start < n_samples; start += m->n_chunk) {
        int64_t len = n_samples - start < m->n_chunk ? n_samples - start : m->n_chunk;
        t += tokens_of_chunk(m, len);
    }
    return t;
}

/* Span of docs/formats/moss.md §7.2 into ids (NULL: count only); audio_pos (optional) gets the
 * span-relative position of each audio row. Returns the span length. */
static int64_t build_span(const ms_model *m, int64_t T_enc, int32_t *ids, int *audio_pos) {
    int64_t len = 0, n_audio = 0;
#define EMIT_AUDIO(cnt)                                                                            \
    for (int64_t e_ = 0; e_ < (cnt); e_++) {                                                       \
        if (audio_pos) audio_pos[n_audio] = (int)len;                                              \
        n_audio++;                                                                                 \
        if (ids) ids[len] = m->audio_tok;                                                          \
        len++;                                                                                     \
    }
    const int every = m->marker_every;
    const int64_t tpm = (int64_t)(m->tokens_per_s * (float)every);
    if (!m->markers || T_enc <= 0 || every <= 0 || tpm <= 0) {
        EMIT_AUDIO(T_enc);
        return len;
    }
    const int64_t duration = (int64_t)((double)T_enc / (double)m->tokens_per_s);
    int64_t consumed = 0;
    for (int64_t sec = every; sec <= duration; sec += every) {
        int64_t pos = (sec / every) * tpm;
        if (pos > T_enc) pos = T_enc; /* never more audio rows than exist */
        if (pos - consumed > 0) {
            EMIT_AUDIO(pos - consumed);
            consumed = pos;
        }
        char digits[24];
        int nd = snprintf(digits, sizeof digits, "%lld", (long long)sec);
        for (int i = 0; i < nd; i++) {
            if (ids) ids[len] = m->digits[digits[i] - '0'];
            len++;
        }
    }
    EMIT_AUDIO(T_enc - consumed);
#undef EMIT_AUDIO
    return len;
}

static int64_t prompt_len(const ms_model *m, int64_t T_enc) {
    return m->n_prefix + build_span(m, T_enc, NULL, NULL) + m->n_suffix;
}

/* The docs/formats/moss.md §9 generation budget wanted for T_enc audio rows. */
static int64_t wanted_budget(int64_t T_enc) {
    const int64_t want = 2 * T_enc + 128;
    return want < MS_GEN_RESERVE ? MS_GEN_RESERVE : want;
}

transcribe_status tr_ms_build_prompt_hot(const ms_model *m, int T_enc, const char *const *terms,
                                         int n_terms, int ceiling, int32_t **ids, int *n,
                                         int **audio_pos, int *n_used) {
    *ids = NULL;
    *audio_pos = NULL;
    if (n_used) *n_used = 0;
    const int64_t span_len = build_span(m, T_enc, NULL, NULL);
    int32_t *hot = NULL;
    int n_hot = 0, used = 0;
    transcribe_status st = tr_ms_hotword_suffix(
        m, terms, n_terms, (int64_t)ceiling - wanted_budget(T_enc) - m->n_prefix - span_len, &hot,
        &n_hot, &used);
    if (st != TRANSCRIBE_OK) return st;
    const int32_t *suffix = hot ? hot : m->suffix;
    const int n_suffix = hot ? n_hot : m->n_suffix;
    const int64_t T = m->n_prefix + span_len + n_suffix;
    *ids = malloc((size_t)T * sizeof **ids);
    *audio_pos = malloc(((size_t)T_enc + 1) * sizeof **audio_pos);
    if (!*ids || !*audio_pos) {
        free(*ids);
        free(*audio_pos);
        free(hot);
        *ids = NULL;
        *audio_pos = NULL;
        return TRANSCRIBE_ERR_OOM;
    }
    memcpy(*ids, m->prefix, (size_t)m->n_prefix * sizeof **ids);
    build_span(m, T_enc, *ids + m->n_prefix, *audio_pos);
    for (int i = 0; i < T_enc; i++) (*audio_pos)[i] += m->n_prefix;
    memcpy(*ids + m->n_prefix + span_len, suffix, (size_t)n_suffix * sizeof **ids);
    free(hot);
    *n = (int)T;
    if (n_used) *n_used = used;
    return TRANSCRIBE_OK;
}

transcribe_status tr_ms_build_prompt(const ms_model *m, int T_enc, int32_t **ids, int *n,
                                     int **audio_pos) {
    return tr_ms_build_prompt_hot(m, T_enc, NULL, 0, 0, ids, n, audio_pos, NULL);
}

/* ---- docs/formats/moss.md §5, §6 encoder, merge, adaptor ---- */

transcribe_status tr_ms_encode(ms_session *s, const float *pcm, int n_samples, float **out,
                               int *T_enc, float **enc_trim, tr_run_span *progress) {
    const ms_model *m = s->m;
    const int D = m->enc.d_model, H = m->lm.d_model, R = m->merge;
    *out = NULL;
    if (enc_trim) *enc_trim = NULL;
    const int64_t T = tr_ms_audio_tokens(m, n_samples);
    const int T_chunk = chunk_frames(m);
    tr_whenc_work work = {0};
    float *trim = malloc((size_t)T * R * D * sizeof(float));
    float *y = malloc((size_t)T * (size_t)H * sizeof(float));
    float *h = malloc((size_t)T * (size_t)H * sizeof(float));
    float *enc_out = malloc((size_t)(T_chunk / 2) * (size_t)D * sizeof(float));
    if (!trim || !y || !h || !enc_out || !tr_whenc_work_init(&work, &m->enc, T_chunk)) {
        TR_ERROR("moss: out of memory encoding %d samples", n_samples);
        tr_whenc_work_free(&work);
        free(enc_out);
        free(trim);
        free(y);
        free(h);
        return TRANSCRIBE_ERR_OOM;
    }
    int64_t row = 0;
    transcribe_status st = TRANSCRIBE_OK;
    s->mel_ms = s->enc_ms = s->adaptor_ms = 0;
    for (int64_t start = 0; start < n_samples && st == TRANSCRIBE_OK; start += m->n_chunk) {
        const int64_t len = n_samples - start < m->n_chunk ? n_samples - start : m->n_chunk;
        float *mel = NULL;
        int n_frames = 0;
        double t0 = tr_time_ms();
        st = tr_mel_whisper(&m->mel, pcm + start, len, s->dec.pool, &mel, &n_frames);
        double t1 = tr_time_ms();
        s->mel_ms += t1 - t0;
        if (st == TRANSCRIBE_OK && n_frames != chunk_frames(m)) {
            TR_ERROR("moss: chunk front end gave %d frames, expected %d", n_frames,
                     chunk_frames(m));
            st = TRANSCRIBE_ERR_GGUF;
        }
        if (st == TRANSCRIBE_OK) {
            tr_whenc_forward(s->dec.pool, &m->enc, &work, mel, n_frames, enc_out);
            s->enc_ms += tr_time_ms() - t1;
            const int64_t keep = tokens_of_chunk(m, len) * R;
            memcpy(trim + row * D, enc_out, (size_t)keep * D * sizeof(float));
            row += keep;
        }
        free(mel);
        if (progress && st == TRANSCRIBE_OK)
            tr_run_span_report(progress, (int)(start / m->n_chunk + 1),
                               (int)((n_samples + m->n_chunk - 1) / m->n_chunk));
    }
    tr_whenc_work_free(&work);
    free(enc_out);
    if (st == TRANSCRIBE_OK) {
        const double t0 = tr_time_ms();
        /* merged row j = rows Rj..Rj+R-1 side by side: the same memory */
        tr_nn_linear_fwd(s->dec.pool, &m->fc1, trim, (int)T, h);
        tr_silu(h, (long)T * H);
        tr_nn_linear_fwd(s->dec.pool, &m->fc2, h, (int)T, y);
        tr_layer_norm(s->dec.pool, y, y, (int)T, H, m->norm_out.w, m->norm_out.b, m->lm.eps);
        s->adaptor_ms = tr_time_ms() - t0;
        *out = y;
        *T_enc = (int)T;
        y = NULL;
    }
    free(h);
    free(y);
    if (enc_trim && st == TRANSCRIBE_OK)
        *enc_trim = trim;
    else
        free(trim);
    return st;
}

/* ---- run parameters ---- */

transcribe_status tr_ms_validate_run(const ms_model *m, const struct transcribe_run_params *p) {
    (void)m;
    transcribe_status st = tr_family_check_transcribe_only("moss", p);
    if (st != TRANSCRIBE_OK) return st;
    if (p->timestamps == TRANSCRIBE_TIMESTAMPS_WORD ||
        p->timestamps == TRANSCRIBE_TIMESTAMPS_TOKEN) {
        TR_ERROR("moss: only segment timestamps are produced");
        return TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS;
    }
    return TRANSCRIBE_OK;
}

static moss_out_policy policy_of(const struct transcribe_run_params *p) {
    moss_out_policy pol = {false, false};
    if (p) {
        pol.diarize = p->diarize == TRANSCRIBE_DIARIZE_MODE_ON;
        pol.timestamps = p->timestamps == TRANSCRIBE_TIMESTAMPS_AUTO ||
                         p->timestamps == TRANSCRIBE_TIMESTAMPS_SEGMENT;
    }
    return pol;
}

static transcribe_status fill_result(const ms_model *m, const int32_t *ids, int n, int n_samples,
                                     const struct transcribe_run_params *p, tr_result *res) {
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    const moss_out_policy pol = policy_of(p);
    const int64_t audio_ms = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    transcribe_status st = tr_moss_fill_result(raw, strlen(raw), audio_ms, &pol, res);
    free(raw);
    return st;
}

/* ---- one utterance (docs/formats/moss.md §9) ---- */

/* The generation budget of docs/formats/moss.md §9 for a prompt of T_prompt tokens. */
static int gen_budget(const ms_session *s, int64_t T_prompt, int64_t T_enc) {
    const int64_t want = wanted_budget(T_enc);
    int64_t room = s->dec.ceiling - T_prompt;
    return (int)(want < room ? want : room);
}

static transcribe_status gate(const ms_session *s, int n_samples, int64_t *T_prompt) {
    const ms_model *m = s->m;
    const int64_t T_enc = tr_ms_audio_tokens(m, n_samples);
    *T_prompt = prompt_len(m, T_enc);
    if (*T_prompt + MS_GEN_RESERVE > s->dec.ceiling) {
        TR_ERROR("moss: %d samples (%.1f s) need a %lld-token prompt; with the %d-token output "
                 "reserve that exceeds the context of %d; split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)*T_prompt,
                 MS_GEN_RESERVE, s->dec.ceiling);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return TRANSCRIBE_OK;
}

static int prefill(ms_session *s, const int32_t *ids, int n, const float *audio,
                   const int *audio_pos, int T_enc, int slot, float *logits) {
    const ms_model *m = s->m;
    const size_t H = (size_t)m->lm.d_model;
    float *x = malloc((size_t)n * H * sizeof(float));
    if (!x) return -1;
    tr_clm_embed(&m->lm, &m->lm_w, ids, n, NULL, 0, 0, x);
    /* docs/formats/causal-lm.md §6.1 blend: the audio row replaces the placeholder row
     * (embedding_mult is 1 for MOSS) */
    for (int j = 0; j < T_enc; j++)
        memcpy(x + (size_t)audio_pos[j] * H, audio + (size_t)j * H, H * sizeof(float));
    int tok = tr_clm_prefill(s->dec.lm, s->dec.pool, x, n, slot, logits);
    free(x);
    return tok;
}

/* Sanitizes and encodes one utterance, timing it into the result: mel_ms
 * is the chunks' front end, encode_ms the Whisper encoder plus adaptor. */
static transcribe_status encode_timed(ms_session *s, const float *pcm, int n_samples,
                                      tr_run_ctx *ctx, tr_run_span *progress, float **audio,
                                      int *T_enc) {
    float *clean = NULL;
    const double t0 = tr_time_ms();
    s->mel_ms = 0;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "moss", &clean);
    transcribe_status st =
        in ? tr_ms_encode(s, in, n_samples, audio, T_enc, NULL, progress) : TRANSCRIBE_ERR_OOM;
    free(clean);
    ctx->result->mel_ms = (float)s->mel_ms;
    ctx->result->encode_ms = (float)(tr_time_ms() - t0 - s->mel_ms);
    return st;
}

transcribe_status tr_ms_run(ms_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const ms_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    int64_t T_pred = 0;
    transcribe_status st = gate(s, n_samples, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *audio = NULL;
    int32_t *ids = NULL;
    int *apos = NULL, T_enc = 0, n_ids = 0;
    tr_run_span enc = {ctx, 0.0, TR_RUN_ENCODED};
    tr_clm_state_trim(s->dec.lm);
    tr_mem_release_free();
    st = encode_timed(s, pcm, n_samples, ctx, &enc, &audio, &T_enc);
    double t1 = tr_time_ms();
    int n_used = 0;
    if (st == TRANSCRIBE_OK)
        st = tr_ms_build_prompt_hot(m, T_enc, ctx->params->vocabulary, ctx->params->n_vocabulary,
                                    s->dec.ceiling, &ids, &n_ids, &apos, &n_used);
    if (n_used > 0) TR_INFO("moss: %d vocabulary terms in the instruction", n_used);
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    const int budget = gen_budget(s, n_ids, T_enc);
    const int n_ctx = tr_clm_ctx_pow2((int64_t)n_ids + budget, s->dec.ceiling);
    if (st == TRANSCRIBE_OK)
        st = tr_clm_session_reserve(&s->dec, n_ctx, &s->last_ids, &s->cap_last, budget);
    int first = -1;
    s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        first = prefill(s, ids, n_ids, audio, apos, T_enc, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    double t3 = tr_time_ms();
    s->dec.prefill_ms = t3 - t2;
    s->dec.last_T_prompt = n_ids;
    if (st == TRANSCRIBE_OK) {
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        tr_run_step_count steps = {&dec, 0};
        tr_clm_greedy_cfg cfg = {.eos = m->eos,
                                 .max_new = budget,
                                 .max_n_kv = n_ctx,
                                 .should_abort = tr_run_abort_poll,
                                 .abort_user = ctx,
                                 .on_step = tr_run_span_count,
                                 .step_user = &steps,
                                 .spec_k = tr_run_spec_k(ctx)};
        if (s->repeat_guard) tr_clm_greedy_cfg_guard(&cfg, TR_REPEAT_GUARD_DEFAULT);
        int n_out = 0;
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, n_ids, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t3;
        s->dec.n_steps = steps.n;
        if (tr_run_has_ids(st))
            st = tr_run_filled(
                st, fill_result(m, s->last_ids, n_out, n_samples, ctx->params, ctx->result));
    }
    tr_run_end_decode(ctx, st, t1);
    free(audio);
    free(ids);
    free(apos);
    return st;
}

/* ---- batch (docs/c-api.md §11; docs/formats/causal-lm.md §8) ---- */

/* Gate, encoder and prompt embeddings of utterance i into its batch row
 * (nn/causal_lm_batch.h prepare); a gate failure is the utterance's own
 * status even after an abort. */
static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    ms_session *s = job->session;
    const ms_model *m = s->m;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    const float *pcm = job->pcm[i];
    const int n_samples = job->n_samples[i];
    int64_t T_pred = 0;
    transcribe_status e =
        !pcm || n_samples <= 0 ? TRANSCRIBE_ERR_INVALID_ARG : gate(s, n_samples, &T_pred);
    if (e != TRANSCRIBE_OK) return e;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    float *audio = NULL;
    int32_t *ids = NULL;
    int *apos = NULL, T_enc = 0, n_ids = 0;
    e = encode_timed(s, pcm, n_samples, ctx, NULL, &audio, &T_enc);
    int n_used = 0;
    const struct transcribe_run_params *p = ctx->params;
    if (e == TRANSCRIBE_OK)
        e = tr_ms_build_prompt_hot(m, T_enc, p->vocabulary, p->n_vocabulary, s->dec.ceiling, &ids,
                                   &n_ids, &apos, &n_used);
    const size_t H = (size_t)m->lm.d_model;
    if (e == TRANSCRIBE_OK) {
        row->x = malloc((size_t)n_ids * H * sizeof(float));
        if (!row->x) e = TRANSCRIBE_ERR_OOM;
    }
    if (e == TRANSCRIBE_OK) {
        /* as prefill(): audio rows replace their placeholder rows */
        tr_clm_embed(&m->lm, &m->lm_w, ids, n_ids, NULL, 0, 0, row->x);
        for (int j = 0; j < T_enc; j++)
            memcpy(row->x + (size_t)apos[j] * H, audio + (size_t)j * H, H * sizeof(float));
        row->T = n_ids;
        row->max_new = gen_budget(s, n_ids, T_enc);
        row->max_n_kv = tr_clm_ctx_pow2((int64_t)n_ids + row->max_new, s->dec.ceiling);
    }
    free(audio);
    free(ids);
    free(apos);
    return e;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const tr_run_ctx *ctx = (const tr_run_ctx *)job->ctxs + i;
    return fill_result(((const ms_session *)job->session)->m, row->out, row->n_out,
                       job->n_samples[i], ctx->params, ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

/* The encoder per utterance (as upstream), then one batched prefill and the
 * batched step loop. Every row keeps its single run's budget and window
 * (upstream shares one batch-wide budget), so it gets its single run's
 * tokens, status and partial text. */
transcribe_status tr_ms_run_batch(ms_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    tr_clm_batch_job job = {&k_batch, {.eos = s->m->eos}, ctxs[0].pool, s,
                            pcm,      n_samples,          ctxs,         NULL};
    if (s->repeat_guard) tr_clm_greedy_cfg_guard(&job.cfg, TR_REPEAT_GUARD_DEFAULT);
    return tr_clm_decode_batch(&s->dec, &job, n);
}
