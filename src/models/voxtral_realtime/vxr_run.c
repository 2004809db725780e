/* Voxtral Realtime runs: the session (the shared causal-LM decoder over blocks whose FFN norms
 * carry the delay scales of docs/formats/voxtral_realtime.md §6.1), the input gate (§6.3, §9),
 * the offline run (§4 padding, the incremental encoder to the end, prefill of the §6.3 prompt with
 * audio rows added, greedy on nn's shared step loop with every step adding its audio row, §6.4),
 * the result (§6.5) and the lockstep batch (§8). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/voxtral_realtime/vxr.h"
#include "nn/causal_lm_batch.h"
#include "nn/greedy.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

#define WHO "voxtral_realtime"

/* ---- sessions ---- */

void tr_vxr_set_delay(vxr_session *s, int d) {
    const vxr_model *m = s->m;
    const int D = m->lm.d_model, half = D / 2, Hd = m->hp.ada_hidden;
    if (s->delay == d) return;
    float *t = malloc((size_t)(D + Hd + D) * sizeof(float));
    if (!t) return; /* keeps the old scales; the caller checks s->delay */
    float *hid = t + D, *ada = hid + Hd;
    for (int i = 0; i < half; i++) {
        const double a = (double)d * m->inv_freq[i];
        t[i] = (float)cos(a);
        t[half + i] = (float)sin(a);
    }
    for (int l = 0; l < m->lm.n_layer; l++) {
        tr_linear(s->dec.pool, m->ada1[l], NULL, t, 1, hid);
        tr_gelu(hid, Hd);
        tr_linear(s->dec.pool, m->ada2[l], NULL, hid, 1, ada);
        const float *w = m->lm_blocks[l].norm_ffn;
        float *o = s->ffn_norm + (size_t)l * D;
        for (int i = 0; i < D; i++) o[i] = (1.0f + ada[i]) * w[i];
    }
    free(t);
    s->delay = d;
}

static transcribe_status vxr_setup(vxr_session *s, const tr_session_cfg *cfg) {
    const vxr_model *m = s->m;
    const int L = m->lm.n_layer, D = m->lm.d_model;
    s->delay = -1;
    s->blocks = malloc((size_t)L * sizeof *s->blocks);
    s->ffn_norm = malloc((size_t)L * D * sizeof(float));
    if (!s->blocks || !s->ffn_norm) return TRANSCRIBE_ERR_OOM;
    for (int l = 0; l < L; l++) {
        s->blocks[l] = m->lm_blocks[l];
        s->blocks[l].norm_ffn = s->ffn_norm + (size_t)l * D;
    }
    s->w = m->lm_w;
    s->w.blocks = s->blocks;
    /* docs/formats/voxtral_realtime.md §8: the session n_ctx is ignored */
    transcribe_status st =
        tr_clm_session_init(&s->dec, WHO, &m->lm, &s->w, m->hp.max_pos, cfg->pool, 0, cfg->kv_type);
    if (st != TRANSCRIBE_OK) return st;
    tr_vxr_set_delay(s, m->hp.default_delay);
    if (s->delay != m->hp.default_delay) return TRANSCRIBE_ERR_OOM;
    if (!tr_vxr_enc_init(&s->enc, m, cfg->kv_type != TRANSCRIBE_KV_TYPE_F32))
        return TRANSCRIBE_ERR_OOM;
    return TRANSCRIBE_OK;
}

static void vxr_release(vxr_session *s) {
    tr_vxr_stream_free(s->stream);
    s->stream = NULL;
    tr_vxr_enc_free(&s->enc);
    tr_clm_session_release(&s->dec);
    free(s->blocks);
    free(s->ffn_norm);
    free(s->ids);
}
TR_FAMILY_SESSION(vxr, vxr_setup, vxr_release)

bool tr_vxr_ids_reserve(vxr_session *s, int n) {
    if (n <= s->cap_ids) return true;
    int32_t *p = realloc(s->ids, (size_t)n * sizeof *p);
    if (!p) return false;
    s->ids = p;
    s->cap_ids = n;
    return true;
}

transcribe_status tr_vxr_validate_run(const vxr_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only(WHO, p);
}

/* ---- gate and prompt (docs/formats/voxtral_realtime.md §6.3, §9) ---- */

transcribe_status tr_vxr_gate(const vxr_model *m, const float *pcm, int n, int d,
                              int64_t *n_audio) {
    if (!pcm || n <= 0) {
        if (!pcm)
            TR_ERROR(WHO ": no audio (NULL samples)");
        else
            TR_ERROR(WHO ": no audio (%d samples)", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t na = tr_vxr_n_audio(m, n, d);
    const int T_prompt = 1 + VXR_LEFT_PAD_TOK + d;
    if (T_prompt >= na) {
        TR_ERROR(WHO ": %lld audio tokens do not cover the %d-token prompt", (long long)na,
                 T_prompt);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (na + 1 > m->hp.max_pos) {
        TR_ERROR(WHO ": %d samples (%.1f s) need %lld positions, more than the decoder's %d; "
                     "split the audio",
                 n, (double)n / m->mel.sample_rate, (long long)(na + 1), m->hp.max_pos);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    *n_audio = na;
    return TRANSCRIBE_OK;
}

void tr_vxr_prompt(const vxr_session *s, int d, const float *audio, float *x) {
    const vxr_model *m = s->m;
    const int T = 1 + VXR_LEFT_PAD_TOK + d;
    const size_t D = (size_t)m->lm.d_model;
    int32_t ids[1 + VXR_LEFT_PAD_TOK + 64];
    ids[0] = m->hp.bos;
    for (int i = 1; i < T; i++) ids[i] = m->hp.pad;
    tr_clm_embed(&m->lm, &s->w, ids, T, NULL, 0, 0, x);
    for (size_t i = 0; i < (size_t)T * D; i++) x[i] += audio[i];
}

/* The shared guard (nn/greedy.h) over the text ids only: a trained model emits [STREAMING_PAD]
 * for every 80 ms without a new word, so a pause of 64 rows (5.12 s) is a period-1 loop of control
 * ids that must not stop the run (docs/formats/voxtral_realtime.md §6.4 has no guard; the horizon
 * bounds the decode). */
int tr_vxr_guard_keep(const vxr_model *m, const int32_t *ids, int n, bool scan) {
    int32_t *text = malloc((size_t)(n > 0 ? n : 1) * sizeof *text);
    int *at = malloc((size_t)(n > 0 ? n : 1) * sizeof *at);
    int keep = n, nt = 0;
    if (!text || !at) { /* out of memory: no guard (the horizon still bounds the run) */
        free(text);
        free(at);
        return n;
    }
    for (int i = 0; i < n; i++)
        if (!tr_tokenizer_is_control(m->tok, ids[i])) {
            at[nt] = i;
            text[nt++] = ids[i];
        }
    const tr_repeat_guard g = TR_REPEAT_GUARD_DEFAULT;
    for (int k = scan ? 2 : nt; k <= nt; k++) {
        const int kt = tr_repeat_keep(&g, text, k, NULL);
        if (k > 1 && kt < k) {
            keep = at[kt];
            break;
        }
    }
    free(text);
    free(at);
    return keep;
}
/* ---- output (docs/formats/voxtral_realtime.md §6.5) ---- */

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

transcribe_status tr_vxr_fill_result(const vxr_model *m, const int32_t *ids, int n,
                                     int64_t n_samples, tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    char *text = tr_tokenizer_decode(m->tok, ids, n, true);
    bool ok = raw && text;
    int seg = -1;
    if (ok) {
        char *a = text, *b = text + strlen(text);
        while (is_space(*a)) a++;
        while (b > a && is_space(b[-1])) b--;
        *b = 0;
        const int64_t t1 = n_samples * 1000 / m->mel.sample_rate;
        ok = tr_result_set_raw_text(res, raw) && tr_result_set_full_text(res, a) &&
             (seg = tr_result_add_segment(res, 0, t1, a)) >= 0;
    }
    free(raw);
    free(text);
    /* token rows: the text ids, untimed (docs/formats/voxtral_realtime.md §7); the text's leading
     * whitespace is trimmed from the first rows too, so the rows' texts join to the text */
    bool lead = true;
    for (int i = 0; ok && i < n; i++) {
        if (tr_tokenizer_is_control(m->tok, ids[i])) continue;
        char *piece = tr_tokenizer_decode(m->tok, &ids[i], 1, true);
        if (!piece) return TRANSCRIBE_ERR_OOM;
        const char *t = piece;
        if (lead) {
            while (is_space(*t)) t++;
            lead = *t == 0;
        }
        ok = tr_result_add_token(res, ids[i], 0.0f, 0, 0, seg, -1, t) >= 0;
        free(piece);
    }
    return ok && !res->oom ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- one utterance ---- */

/* The family's draft count (docs/formats/voxtral_realtime.md §6.4): -1 → 1, at most 8. */
static int spec_k(const tr_run_ctx *ctx) {
    int k = ctx->params->spec_k_drafts;
    if (k < 0) k = 1;
    return k > 8 ? 8 : k;
}

/* The decoder window an utterance of n_audio tokens needs (docs/formats/voxtral_realtime.md §8):
 * the model's sliding window once the positions pass it, else none (the same attention). */
static int window_of(const vxr_model *m, int64_t n_audio) {
    return n_audio + 1 > m->hp.dec_window ? m->hp.dec_window : 0;
}

/* KV rows of one utterance: from 2048, the smallest power of two >= n_audio + 1, never more than
 * the decoder window once the positions pass it. */
static int kv_rows(const vxr_model *m, int64_t n_audio) {
    const int64_t need = n_audio + 1 > 2048 ? n_audio + 1 : 2048;
    return window_of(m, n_audio) > 0 ? m->hp.dec_window : tr_clm_ctx_pow2(need, m->hp.max_pos);
}

/* nn/greedy.h step callbacks over the session's LM (slot 0; each step adds its audio row). */
typedef struct step_ctx {
    tr_clm_state *lm;
    tr_pool *pool;
} step_ctx;

static transcribe_status one_step(void *user, int32_t tok, int pos, int32_t *next) {
    const step_ctx *c = user;
    int slot = 0;
    return tr_clm_step(c->lm, c->pool, &tok, &pos, &slot, 1, next) ? TRANSCRIBE_OK
                                                                   : TRANSCRIBE_ERR_OOM;
}

static transcribe_status verify_step(void *user, const int32_t *toks, int n, int pos,
                                     int32_t *next) {
    const step_ctx *c = user;
    return tr_clm_step_seq(c->lm, c->pool, toks, n, pos, 0, next) ? TRANSCRIBE_OK
                                                                  : TRANSCRIBE_ERR_OOM;
}

/* Encodes n samples at delay d to the end (docs/formats/voxtral_realtime.md §4, §5) into s->enc's
 * audio rows. */
static transcribe_status encode_all(vxr_session *s, tr_pool *pool, const float *pcm, int n, int d,
                                    int64_t n_audio, tr_run_ctx *ctx) {
    float *clean = NULL;
    const float *in = tr_pcm_sanitized(pcm, n, WHO, &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    tr_vxr_enc_reset(&s->enc);
    transcribe_status st =
        tr_vxr_enc_push(&s->enc, pool, in, n, ctx ? tr_run_abort_poll : NULL, ctx);
    free(clean);
    if (st == TRANSCRIBE_OK)
        st = tr_vxr_enc_finish(&s->enc, pool, n, d, ctx ? tr_run_abort_poll : NULL, ctx);
    if (st == TRANSCRIBE_OK && (s->enc.audio0 != 0 || s->enc.n_audio != n_audio)) {
        TR_ERROR(WHO ": the encoder gave %d audio rows, expected %lld", s->enc.n_audio,
                 (long long)n_audio);
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    return st;
}

transcribe_status tr_vxr_run(vxr_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const vxr_model *m = s->m;
    s->n_ids = 0;
    if (ctx->pool) s->dec.pool = ctx->pool;
    tr_pool *pool = s->dec.pool;
    const int d = m->hp.default_delay;
    int64_t n_audio = 0;
    transcribe_status st = tr_vxr_gate(m, pcm, n_samples, d, &n_audio);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    tr_vxr_set_delay(s, d);
    if (s->delay != d) return TRANSCRIBE_ERR_OOM;
    const int T = 1 + VXR_LEFT_PAD_TOK + d, na = (int)n_audio;

    const double t0 = tr_time_ms();
    st = encode_all(s, pool, pcm, n_samples, d, n_audio, ctx);
    const double t1 = tr_time_ms();
    ctx->result->encode_ms = (float)(t1 - t0);
    if (st != TRANSCRIBE_OK) return st;
    tr_run_report_progress(ctx, TR_RUN_ENCODED);

    /* docs/formats/voxtral_realtime.md §6.4: KV from 2048 rows, the smallest power of two >=
     * n_audio + 1, at most the decoder window (past it a ring: the family README) */
    const int n_ctx = kv_rows(m, n_audio);
    const int max_new = na - T + 1; /* the prefill token and one per audio position left */
    float *x = malloc((size_t)T * m->lm.d_model * sizeof(float));
    if (!x || !tr_vxr_ids_reserve(s, max_new)) {
        free(x);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_clm_set_window(s->dec.lm, window_of(m, n_audio));
    st = tr_clm_reserve(s->dec.lm, 1, n_ctx);
    int first = -1;
    if (st == TRANSCRIBE_OK) {
        tr_vxr_prompt(s, d, s->enc.audio, x);
        first = tr_clm_prefill(s->dec.lm, pool, x, T, 0, s->dec.last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    free(x);
    const double t2 = tr_time_ms();
    s->dec.prefill_ms = t2 - t1;
    s->dec.last_T_prompt = T;
    int n_out = 0;
    if (st == TRANSCRIBE_OK && !tr_clm_set_input_rows(s->dec.lm, 0, s->enc.audio, 0, na))
        st = TRANSCRIBE_ERR_OOM;
    if (st == TRANSCRIBE_OK) {
        tr_run_span span = TR_RUN_DECODE_SPAN(ctx);
        const tr_greedy_cfg cfg = {.eos = m->hp.eos,
                                   .max_new = max_new,
                                   .max_n_kv = na,
                                   .should_abort = tr_run_abort_poll,
                                   .abort_user = ctx,
                                   /* the guard over text ids: after the loop */
                                   .on_step = tr_run_span_step,
                                   .step_user = &span};
        tr_run_report_progress(ctx, span.lo);
        step_ctx sc = {s->dec.lm, pool};
        st = tr_greedy_loop_spec(&cfg, one_step, verify_step, spec_k(ctx), &sc, first, T, s->ids,
                                 &n_out);
        /* docs/formats/voxtral_realtime.md §6.4: reaching the audio horizon ends the run normally
         * (the guard trims, so a truncation with every position's token is the horizon) */
        if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && n_out == max_new) st = TRANSCRIBE_OK;
        const int keep = st == TRANSCRIBE_OK ? tr_vxr_guard_keep(m, s->ids, n_out, true) : n_out;
        if (keep < n_out) {
            TR_WARN(WHO ": the output repeats itself; stopped after %d tokens, kept %d", n_out,
                    keep);
            n_out = keep;
            st = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        }
        tr_run_report_decoded(ctx, st);
        s->n_ids = n_out;
        s->dec.steps_ms = tr_time_ms() - t2;
        s->dec.n_steps = n_out;
        if (tr_run_has_ids(st))
            st = tr_run_filled(st, tr_vxr_fill_result(m, s->ids, n_out, n_samples, ctx->result));
    }
    tr_clm_clear_input_rows(s->dec.lm);
    tr_run_end_decode(ctx, st, t2);
    return st;
}

/* ---- batch (docs/formats/voxtral_realtime.md §8; docs/formats/causal-lm.md §8) ---- */

typedef struct batch_ctx {
    vxr_session *s;
    float **audio; /* per utterance: its audio rows (owned) */
    int *n_audio;
    int n_slots; /* utterances prepared so far: the next one's cache slot */
} batch_ctx;

static transcribe_status prepare_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    batch_ctx *b = (batch_ctx *)job->extra;
    vxr_session *s = b->s;
    const vxr_model *m = s->m;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    const int d = m->hp.default_delay, T = 1 + VXR_LEFT_PAD_TOK + d;
    int64_t na = 0;
    transcribe_status st = tr_vxr_gate(m, job->pcm[i], job->n_samples[i], d, &na);
    if (st != TRANSCRIBE_OK) return st;
    const double t0 = tr_time_ms();
    st = encode_all(s, s->dec.pool, job->pcm[i], job->n_samples[i], d, na, ctx);
    ctx->result->encode_ms = (float)(tr_time_ms() - t0);
    if (st != TRANSCRIBE_OK) return st;
    const size_t D = (size_t)m->lm.d_model;
    b->audio[i] = malloc((size_t)na * D * sizeof(float));
    row->x = malloc((size_t)T * D * sizeof(float));
    if (!b->audio[i] || !row->x) return TRANSCRIBE_ERR_OOM;
    memcpy(b->audio[i], s->enc.audio, (size_t)na * D * sizeof(float));
    b->n_audio[i] = (int)na;
    tr_vxr_prompt(s, d, b->audio[i], row->x);
    row->T = T;
    row->max_new = (int)na - T + 1;
    /* the horizon stops the row; past the decoder window its cache is the window's ring */
    row->max_n_kv = (int)na;
    if (window_of(m, na) > 0) tr_clm_set_window(s->dec.lm, m->hp.dec_window);
    /* tr_clm_run_batch gives the prepared rows slots 0, 1, .. in order */
    if (!tr_clm_set_input_rows(s->dec.lm, b->n_slots, b->audio[i], 0, (int)na))
        return TRANSCRIBE_ERR_OOM;
    b->n_slots++;
    return TRANSCRIBE_OK;
}

static transcribe_status fill_row(const tr_clm_batch_job *job, int i, tr_clm_batch_row *row) {
    const batch_ctx *b = job->extra;
    tr_run_ctx *ctx = (tr_run_ctx *)job->ctxs + i;
    /* docs/formats/voxtral_realtime.md §8: a row that reaches its audio horizon is complete */
    if (row->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && row->n_out == row->max_new)
        row->status = TRANSCRIBE_OK;
    const int keep = row->status == TRANSCRIBE_OK
                         ? tr_vxr_guard_keep(b->s->m, row->out, row->n_out, true)
                         : row->n_out;
    if (keep < row->n_out) {
        TR_WARN(WHO ": batch row %d repeats itself; stopped after %d tokens, kept %d", i,
                row->n_out, keep);
        row->n_out = keep;
        row->status = TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }
    return tr_vxr_fill_result(b->s->m, row->out, row->n_out, job->n_samples[i], ctx->result);
}

static const tr_clm_batch_hooks k_batch = {prepare_row, fill_row, tr_run_batch_settle,
                                           tr_run_abort_poll};

transcribe_status tr_vxr_run_batch(vxr_session *s, const float *const *pcm, const int *n_samples,
                                   int n, tr_run_ctx *ctxs) {
    const vxr_model *m = s->m;
    if (n < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    if (n == 1) {
        transcribe_status st = tr_vxr_run(s, pcm[0], n_samples[0], &ctxs[0]);
        tr_run_settle(&ctxs[0], st);
        return st == TRANSCRIBE_ERR_ABORTED || st == TRANSCRIBE_ERR_OOM ? st : TRANSCRIBE_OK;
    }
    if (ctxs[0].pool) s->dec.pool = ctxs[0].pool;
    tr_clm_set_window(s->dec.lm, 0); /* a row whose positions pass the window sets it */
    tr_vxr_set_delay(s, m->hp.default_delay);
    if (s->delay != m->hp.default_delay) return TRANSCRIBE_ERR_OOM;
    batch_ctx b = {s, calloc((size_t)n, sizeof(float *)), calloc((size_t)n, sizeof(int)), 0};
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (b.audio && b.n_audio) {
        /* the guard over text ids: fill_row */
        const tr_clm_batch_job job = {&k_batch, {.eos = m->hp.eos}, ctxs[0].pool, s,
                                      pcm,      n_samples,          ctxs,         &b};
        st = tr_clm_decode_batch(&s->dec, &job, n);
    }
    tr_clm_clear_input_rows(s->dec.lm);
    for (int i = 0; b.audio && i < n; i++) free(b.audio[i]);
    free(b.audio);
    free(b.n_audio);
    return st;
}
