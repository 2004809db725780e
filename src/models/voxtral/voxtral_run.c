/* Voxtral runs (docs/formats/voxtral.md §4–§8): the chunk-padded Whisper log-mel with
 * one normalisation maximum, the shared Whisper encoder per 30 s chunk, the 4×
 * frame-stacking projector (a reinterpretation of the encoder rows, no copy), the
 * transcription or translation prompt with the audio rows spliced at the one
 * placeholder run, the §6.5 gate and budget, greedy decoding on the shared step loop
 * (repetition guard, speculative decoding, abort), the §6.6 result, and batches
 * through the shared batched prefill and step loop. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/voxtral/voxtral.h"
#include "nn/causal_lm_batch.h"
#include "nn/greedy.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/timer.h"

#define WHO "voxtral"

/* ---- sessions ---- */

/* The decoder half (nn/causal_lm). The encoder's per-chunk buffers live only
 * while tr_vx_encode runs, so they are not resident beside the LM and its cache. */
static transcribe_status vx_setup(vx_session *s, const tr_session_cfg *cfg) {
    const vx_model *m = s->m;
    transcribe_status st = tr_clm_session_init(&s->dec, WHO, &m->lm, &m->lm_w, m->max_pos,
                                               cfg->pool, cfg->n_ctx, cfg->kv_type);
    if (st != TRANSCRIBE_OK) return st;
    s->repeat_guard = true;
    return TRANSCRIBE_OK;
}

static void vx_release(vx_session *s) {
    tr_clm_session_release(&s->dec);
    free(s->last_ids);
}

TR_FAMILY_SESSION(vx, vx_setup, vx_release)

/* ---- docs/formats/voxtral.md §4 front end ---- */

int64_t tr_vx_n_chunks(const vx_model *m, int64_t n_samples) {
    const int64_t c = (n_samples + m->n_chunk - 1) / m->n_chunk;
    return c > 1 ? c : 1;
}

transcribe_status tr_vx_log_mel(const vx_model *m, tr_pool *pool, const float *pcm,
                                int64_t n_samples, float **mel, int *n_frames) {
    *mel = NULL;
    *n_frames = 0;
    const int64_t padded = tr_vx_n_chunks(m, n_samples) * m->n_chunk;
    float *buf = calloc((size_t)padded, sizeof(float));
    if (!buf) {
        TR_ERROR(WHO ": out of memory padding %lld samples", (long long)n_samples);
        return TRANSCRIBE_ERR_OOM;
    }
    memcpy(buf, pcm, (size_t)n_samples * sizeof(float));
    /* one call over the padded clip: the docs/formats/voxtral.md §4 maximum spans every chunk */
    transcribe_status st = tr_mel_compute(&m->mel, buf, padded, pool, mel, n_frames);
    free(buf);
    return st;
}

/* ---- docs/formats/voxtral.md §5 encoder and projector ---- */

/* The run-time geometry checks of docs/formats/voxtral.md §9 (GGUF, logged). */
static transcribe_status check_geometry(const vx_model *m, int n_frames, int64_t n_chunks) {
    if (m->chunk_mel != 2 * m->enc.n_pos) {
        TR_ERROR(WHO ": nb_max_frames %d is not twice max_source_positions %d", m->chunk_mel,
                 m->enc.n_pos);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (n_frames < n_chunks * m->chunk_mel) {
        TR_ERROR(WHO ": the front end gave %d mel frames, %lld chunks need %lld", n_frames,
                 (long long)n_chunks, (long long)(n_chunks * m->chunk_mel));
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_vx_encode(vx_session *s, const float *mel, int n_frames, float **out,
                               int *n_audio, float **enc_out, tr_run_ctx *abort_ctx,
                               tr_run_span *progress) {
    const vx_model *m = s->m;
    const int D = m->enc.d_model, H = m->lm.d_model, P = m->enc.n_pos, F = m->chunk_mel;
    const int M = m->enc.n_mels, A = m->audio_per_chunk;
    *out = NULL;
    *n_audio = 0;
    if (enc_out) *enc_out = NULL;
    /* the chunks of the padded clip: the front end gives n_samples / hop frames each */
    const int per_chunk = m->n_chunk / m->mel.hop_length;
    const int64_t n_chunks = per_chunk > 0 && n_frames >= per_chunk ? n_frames / per_chunk : 1;
    transcribe_status st = check_geometry(m, n_frames, n_chunks);
    if (st != TRANSCRIBE_OK) return st;
    tr_whenc_work work = {0};
    float *chunk = malloc((size_t)M * F * sizeof(float));
    /* all chunks' encoder rows only when the caller keeps them, else one chunk's */
    const int64_t n_keep = enc_out ? n_chunks : 1;
    float *enc = malloc((size_t)n_keep * P * D * sizeof(float));
    float *h = malloc((size_t)A * H * sizeof(float));
    float *y = malloc((size_t)n_chunks * A * H * sizeof(float));
    if (!chunk || !enc || !h || !y || !tr_whenc_work_init(&work, &m->enc, F)) {
        TR_ERROR(WHO ": out of memory encoding %lld chunks", (long long)n_chunks);
        st = TRANSCRIBE_ERR_OOM;
    }
    s->enc_ms = s->proj_ms = 0;
    for (int64_t c = 0; c < n_chunks && st == TRANSCRIBE_OK; c++) {
        if (abort_ctx && tr_run_should_abort(abort_ctx)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        const double t0 = tr_time_ms();
        for (int b = 0; b < M; b++)
            memcpy(chunk + (size_t)b * F, mel + (size_t)b * n_frames + (size_t)c * F,
                   (size_t)F * sizeof(float));
        float *e = enc + (size_t)(enc_out ? c : 0) * P * D;
        tr_whenc_forward(s->dec.pool, &m->enc, &work, chunk, F, e);
        const double t1 = tr_time_ms();
        /* projector: row i of the chunk is encoder rows ds·i .. ds·i + ds − 1 side by side,
         * the same memory */
        tr_nn_linear_fwd(s->dec.pool, &m->lin1, e, A, h);
        tr_ew_gelu(s->dec.pool, h, (long)A * H);
        tr_nn_linear_fwd(s->dec.pool, &m->lin2, h, A, y + (size_t)c * A * H);
        s->enc_ms += t1 - t0;
        s->proj_ms += tr_time_ms() - t1;
        if (progress) tr_run_span_report(progress, (int)(c + 1), (int)n_chunks);
    }
    tr_whenc_work_free(&work);
    free(chunk);
    free(h);
    if (st == TRANSCRIBE_OK) {
        *out = y;
        *n_audio = (int)(n_chunks * A);
        y = NULL;
        if (enc_out) {
            *enc_out = enc;
            enc = NULL;
        }
    }
    free(y);
    free(enc);
    return st;
}

/* ---- docs/formats/voxtral.md §6.2 prompt ---- */

static bool has_text(const char *s) {
    return s && s[0];
}

static const char *target_name(const char *code) {
    static const char *const k_names[][2] = {
        {"en", "English"}, {"fr", "French"},     {"de", "German"}, {"es", "Spanish"},
        {"it", "Italian"}, {"pt", "Portuguese"}, {"nl", "Dutch"},  {"hi", "Hindi"},
    };
    if (!has_text(code)) return "English";
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (strcmp(k_names[i][0], code) == 0) return k_names[i][1];
    return code; /* verbatim (it passed the file's target list) */
}

/* The text the prompt encodes for p (NULL: none), into buf. */
static const char *prompt_text(const struct transcribe_run_params *p, char *buf, size_t cap) {
    if (p && p->task == TRANSCRIBE_TASK_TRANSLATE) {
        snprintf(buf, cap, "Translate this to %s.", target_name(p->target_language));
        return buf;
    }
    if (p && has_text(p->language)) {
        snprintf(buf, cap, "lang:%s", p->language);
        return buf;
    }
    return NULL;
}

/* Encodes the prompt text into ids (capacity VX_MAX_TEXT_IDS): count, or -1. */
static int encode_text(const vx_model *m, const struct transcribe_run_params *p, int32_t *ids) {
    char buf[128];
    const char *text = prompt_text(p, buf, sizeof buf);
    if (!text) return 0;
    if (!tr_tokenizer_can_encode(m->tok)) return -1;
    const int n = tr_tokenizer_encode(m->tok, text, ids, VX_MAX_TEXT_IDS);
    return n >= 0 ? n : -1;
}

int tr_vx_prompt_extra(const vx_model *m, const struct transcribe_run_params *p) {
    int32_t ids[VX_MAX_TEXT_IDS];
    const int k = encode_text(m, p, ids);
    if (k < 0) return -1;
    /* [BOS] [INST] [BEGIN_AUDIO] ... [/INST] + [TRANSCRIBE] when transcribing */
    return 4 + k + (p && p->task == TRANSCRIBE_TASK_TRANSLATE ? 0 : 1);
}

transcribe_status tr_vx_build_prompt(const vx_model *m, const struct transcribe_run_params *p,
                                     int n_audio, int32_t **ids_out, int *n_out) {
    *ids_out = NULL;
    *n_out = 0;
    int32_t text[VX_MAX_TEXT_IDS];
    const int k = encode_text(m, p, text);
    if (k < 0) {
        TR_ERROR(WHO ": the prompt text cannot be encoded with this vocabulary");
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    const vx_special *sp = &m->sp;
    int32_t *ids = malloc(((size_t)n_audio + 5 + (size_t)k) * sizeof *ids);
    if (!ids) return TRANSCRIBE_ERR_OOM;
    int n = 0;
    ids[n++] = sp->bos;
    ids[n++] = sp->inst;
    ids[n++] = sp->begin_audio;
    for (int i = 0; i < n_audio; i++) ids[n++] = sp->audio;
    if (p && p->task == TRANSCRIBE_TASK_TRANSLATE) {
        memcpy(ids + n, text, (size_t)k * sizeof *ids);
        n += k;
        ids[n++] = sp->inst_end;
    } else {
        ids[n++] = sp->inst_end;
        memcpy(ids + n, text, (size_t)k * sizeof *ids);
        n += k;
        ids[n++] = sp->transcribe;
    }
    *ids_out = ids;
    *n_out = n;
    return TRANSCRIBE_OK;
}

transcribe_status tr_vx_splice(const vx_model *m, const int32_t *ids, int n, const float *audio,
                               int n_audio, float *out) {
    int first = -1, count = 0, runs = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] != m->sp.audio) continue;
        if (first < 0) first = i;
        if (i == 0 || ids[i - 1] != m->sp.audio) runs++;
        count++;
    }
    if (count != n_audio || (n_audio > 0 && runs != 1)) {
        TR_ERROR(WHO ": the prompt holds %d audio placeholders in %d runs for %d audio rows", count,
                 runs, n_audio);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_clm_embed(&m->lm, &m->lm_w, ids, n, audio, first < 0 ? 0 : first, n_audio, out);
    return TRANSCRIBE_OK;
}

/* ---- run parameters ---- */

transcribe_status tr_vx_validate_run(const vx_model *m, const struct transcribe_run_params *p) {
    if (p->family) {
        TR_ERROR(WHO ": this family takes no run extension");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE && !m->translate) {
        TR_ERROR(WHO ": %s cannot translate", m->variant);
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
    if (tr_vx_prompt_extra(m, p) < 0) {
        TR_ERROR(WHO ": the language / translation prompt cannot be encoded (no BPE merges)");
        return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral.md §6.6 result ---- */

static transcribe_status fill_result(const vx_model *m, const int32_t *ids, int n, int n_samples,
                                     tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return TRANSCRIBE_ERR_OOM;
    size_t a = 0, b = strlen(raw);
    while (a < b && isspace((unsigned char)raw[a])) a++;
    while (b > a && isspace((unsigned char)raw[b - 1])) b--;
    bool ok = tr_result_set_raw_text(res, raw);
    raw[b] = 0;
    const int64_t t1 = (int64_t)n_samples * 1000 / m->mel.sample_rate;
    ok = ok && tr_result_set_full_text(res, raw + a) &&
         tr_result_add_segment(res, 0, t1, raw + a) >= 0;
    free(raw);
    return ok ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- docs/formats/voxtral.md §6.5 gate and budget ---- */

static int64_t n_audio_of(const vx_model *m, int64_t n_samples) {
    return tr_vx_n_chunks(m, n_samples) * m->audio_per_chunk;
}

/* T_prompt + 448 > ceiling → INPUT_TOO_LONG; exact before any front-end work (the
 * prompt length follows from the sample count). */
static transcribe_status gate(const vx_session *s, const struct transcribe_run_params *p,
                              int n_samples, int64_t *T_prompt) {
    const vx_model *m = s->m;
    if (n_samples <= 0) {
        TR_ERROR(WHO ": no samples");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int extra = tr_vx_prompt_extra(m, p);
    if (extra < 0) return TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    *T_prompt = n_audio_of(m, n_samples) + extra;
    if (*T_prompt + VX_GEN_RESERVE > s->dec.ceiling) {
        TR_ERROR(WHO ": %d samples (%.1f s) need a %lld-token prompt; with the %d-token output "
                     "reserve that exceeds the context of %d; split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)*T_prompt,
                 VX_GEN_RESERVE, s->dec.ceiling);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return TRANSCRIBE_OK;
}

/* max_new = min(max(448, n_audio), ceiling − T_prompt), counting the prefill token
 * and EOS */
static int gen_budget(const vx_session *s, int64_t T_prompt, int64_t n_audio) {
    const int64_t want = n_audio > VX_GEN_RESERVE ? n_audio : VX_GEN_RESERVE;
    const int64_t room = s->dec.ceiling - T_prompt;
    return (int)(want < room ? want : room);
}

/* ---- one utterance ---- */

/* Front end, encoder and projector of one utterance, timed into the result; the
 * prompt ids and their embeddings with the audio spliced (x malloc'ed [n][hidden]). */
static transcribe_status prepare(vx_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx,
                                 tr_run_span *progress, float **x, int32_t **ids, int *n_ids,
                                 int *n_audio) {
    const vx_model *m = s->m;
    *x = NULL;
    *ids = NULL;
    float *clean = NULL, *mel = NULL, *audio = NULL;
    const double t0 = tr_time_ms();
    const float *in = tr_pcm_sanitized(pcm, n_samples, WHO, &clean);
    int n_frames = 0;
    transcribe_status st =
        in ? tr_vx_log_mel(m, s->dec.pool, in, n_samples, &mel, &n_frames) : TRANSCRIBE_ERR_OOM;
    free(clean);
    const double t1 = tr_time_ms();
    s->mel_ms = t1 - t0;
    if (st == TRANSCRIBE_OK)
        st = tr_vx_encode(s, mel, n_frames, &audio, n_audio, NULL, ctx, progress);
    free(mel);
    ctx->result->mel_ms = (float)s->mel_ms;
    ctx->result->encode_ms = (float)(tr_time_ms() - t1);
    if (st == TRANSCRIBE_OK) st = tr_vx_build_prompt(m, ctx->params, *n_audio, ids, n_ids);
    if (st == TRANSCRIBE_OK) {
        *x = malloc((size_t)*n_ids * m->lm.d_model * sizeof(float));
        if (!*x) st = TRANSCRIBE_ERR_OOM;
    }
    if (st == TRANSCRIBE_OK) st = tr_vx_splice(m, *ids, *n_ids, audio, *n_audio, *x);
    if (st != TRANSCRIBE_OK) {
        free(*x);
        free(*ids);
        *x = NULL;
        *ids = NULL;
    }
    free(audio);
    return st;
}

static void set_guard(const vx_session *s, tr_clm_greedy_cfg *cfg) {
    if (s->repeat_guard) tr_clm_greedy_cfg_guard(cfg, TR_REPEAT_GUARD_DEFAULT);
}

transcribe_status tr_vx_run(vx_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const vx_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) {
        TR_ERROR(WHO ": no audio (pcm %s, %d samples)", pcm ? "set" : "NULL", n_samples);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    s->dec.pool = ctx->pool ? ctx->pool : s->dec.pool;
    int64_t T_pred = 0;
    transcribe_status st = gate(s, ctx->params, n_samples, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *x = NULL;
    int32_t *ids = NULL;
    int n_ids = 0, n_audio = 0;
    tr_run_span enc = {ctx, 0.0, TR_RUN_ENCODED};
    tr_clm_state_trim(s->dec.lm);
    tr_mem_release_free();
    st = prepare(s, pcm, n_samples, ctx, &enc, &x, &ids, &n_ids, &n_audio);
    /* the decode stage starts after the mel and the encoder (their own timings) */
    const double t1 = tr_time_ms();
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    const int budget = gen_budget(s, n_ids, n_audio);
    const int n_ctx = tr_clm_ctx_pow2((int64_t)n_ids + budget, s->dec.ceiling);
    if (st == TRANSCRIBE_OK)
        st = tr_clm_session_reserve(&s->dec, n_ctx, &s->last_ids, &s->cap_last, budget);
    int first = -1;
    s->dec.prefill_ms = s->dec.steps_ms = 0;
    s->dec.n_steps = 0;
    const double t2 = tr_time_ms();
    if (st == TRANSCRIBE_OK) {
        tr_run_report_progress(ctx, TR_RUN_ENCODED);
        first = tr_clm_prefill(s->dec.lm, s->dec.pool, x, n_ids, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    free(x);
    const double t3 = tr_time_ms();
    s->dec.prefill_ms = t3 - t2;
    s->dec.last_T_prompt = n_ids;
    if (st == TRANSCRIBE_OK) {
        tr_run_span dec = TR_RUN_DECODE_SPAN(ctx);
        tr_run_step_count steps = {&dec, 0};
        tr_clm_greedy_cfg cfg = {.eos = m->sp.eos,
                                 .max_new = budget,
                                 .max_n_kv = n_ctx,
                                 .should_abort = tr_run_abort_poll,
                                 .abort_user = ctx,
                                 .on_step = tr_run_span_count,
                                 .step_user = &steps,
                                 .spec_k = tr_run_spec_k(ctx)};
        set_guard(s, &cfg);
        int n_out = 0;
        tr_run_report_progress(ctx, dec.lo);
        st = tr_clm_greedy(s->dec.lm, s->dec.pool, &cfg, first, n_ids, s->last_ids, &n_out);
        tr_run_report_decoded(ctx, st);
        s->n_last = n_out;
        s->dec.steps_ms = tr_time_ms() - t3;
        s->dec.n_steps = steps.n;
        if (tr_run_has_ids(st))
            st = tr_run_filled(st, fill_result(m, s->last_ids, n_out, n_samples, ctx->result));
    }
    tr_run_end_decode(ctx, st, t1);
    free(ids);
    return st;
}

/* ---- batch (docs/formats/voxtral.md §8; docs/formats/causal-lm.md §8) ---- */

/* Gate, encoder and prompt embeddings of utterance i into its batch row
 * (nn/causal_lm_batch.h prepare); a gate failure is the utterance's own status. */
static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    vx_session *s = job->session;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    const float *pcm = job->pcm[i];
    const int n_samples = job->n_samples[i];
    int64_t T_pred = 0;
    transcribe_status e = !pcm || n_samples <= 0 ? TRANSCRIBE_ERR_INVALID_ARG
                                                 : gate(s, ctx->params, n_samples, &T_pred);
    if (e != TRANSCRIBE_OK) return e;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    int32_t *ids = NULL;
    int n_ids = 0, n_audio = 0;
    e = prepare(s, pcm, n_samples, ctx, NULL, &row->x, &ids, &n_ids, &n_audio);
    if (e == TRANSCRIBE_OK) {
        row->T = n_ids;
        row->max_new = gen_budget(s, n_ids, n_audio);
        row->max_n_kv = tr_clm_ctx_pow2((int64_t)n_ids + row->max_new, s->dec.ceiling);
    }
    free(ids);
    return e;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const tr_run_ctx *ctx = (const tr_run_ctx *)job->ctxs + i;
    return fill_result(((const vx_session *)job->session)->m, row->out, row->n_out,
                       job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

/* The encoder per utterance, then one batched prefill and the batched step loop.
 * Every row keeps its single run's budget and window (upstream shares one
 * batch-wide budget, docs/formats/voxtral.md §11 question 6), so it gets its single
 * run's tokens, status and partial text. */
transcribe_status tr_vx_run_batch(vx_session *s, const float *const *pcm, const int *n_samples,
                                  int n, tr_run_ctx *ctxs) {
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    tr_clm_batch_job job = {&k_batch, {.eos = s->m->sp.eos}, ctxs[0].pool, s, pcm, n_samples, ctxs,
                            NULL};
    set_guard(s, &job.cfg);
    return tr_clm_decode_batch(&s->dec, &job, n);
}
