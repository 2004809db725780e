/* MOSS runs (family-moss.md §5–§10): 30 s chunks through the Whisper front
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
#include "nn/greedy.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

/* ---- sessions ---- */

static int chunk_frames(const ms_model *m) {
    return m->n_chunk / m->mel.hop_length;
}

transcribe_status tr_ms_session_create(const ms_model *m, const tr_session_cfg *cfg,
                                    ms_session **out) {
    *out = NULL;
    ms_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    s->m = m;
    s->pool = cfg ? cfg->pool : NULL;
    s->ceiling = m->max_pos;
    if (cfg && cfg->n_ctx > 0 && cfg->n_ctx < s->ceiling) s->ceiling = cfg->n_ctx;
    /* AUTO and F16 store F16 (upstream default), F32 only when asked */
    s->kv_f16 = !(cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_F32);
    s->repeat_guard = true;
    const int T = chunk_frames(m);
    s->lm = tr_clm_state_new(&m->lm, &m->lm_w, s->kv_f16);
    s->last_logits = malloc((size_t)m->lm.n_vocab * sizeof(float));
    s->mel = NULL;
    s->enc_out = malloc((size_t)(T / 2) * (size_t)m->enc.d_model * sizeof(float));
    bool ok = tr_whenc_work_init(&s->enc_work, &m->enc, T);
    if (!ok || !s->lm || !s->last_logits || !s->enc_out) {
        TR_ERROR("moss: out of memory allocating a session");
        tr_ms_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

void tr_ms_session_free(ms_session *s) {
    if (!s) return;
    tr_clm_state_free(s->lm);
    tr_whenc_work_free(&s->enc_work);
    free(s->last_logits);
    free(s->mel);
    free(s->enc_out);
    free(s->last_ids);
    free(s);
}

/* ---- §5 lengths and §7 prompt ---- */

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

/* Span of §7.2 into ids (NULL: count only); audio_pos (optional) gets the
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

transcribe_status tr_ms_build_prompt(const ms_model *m, int T_enc, int32_t **ids, int *n,
                                  int **audio_pos) {
    *ids = NULL;
    *audio_pos = NULL;
    const int64_t T = prompt_len(m, T_enc);
    *ids = malloc((size_t)T * sizeof **ids);
    *audio_pos = malloc(((size_t)T_enc + 1) * sizeof **audio_pos);
    if (!*ids || !*audio_pos) {
        free(*ids);
        free(*audio_pos);
        *ids = NULL;
        *audio_pos = NULL;
        return TRANSCRIBE_ERR_OOM;
    }
    memcpy(*ids, m->prefix, (size_t)m->n_prefix * sizeof **ids);
    int64_t span = build_span(m, T_enc, *ids + m->n_prefix, *audio_pos);
    for (int i = 0; i < T_enc; i++) (*audio_pos)[i] += m->n_prefix;
    memcpy(*ids + m->n_prefix + span, m->suffix, (size_t)m->n_suffix * sizeof **ids);
    *n = (int)T;
    return TRANSCRIBE_OK;
}

/* ---- §5, §6 encoder, merge, adaptor ---- */

transcribe_status tr_ms_encode(ms_session *s, const float *pcm, int n_samples, float **out, int *T_enc,
                            float **enc_trim) {
    const ms_model *m = s->m;
    const int D = m->enc.d_model, H = m->lm.d_model, R = m->merge;
    *out = NULL;
    if (enc_trim) *enc_trim = NULL;
    const int64_t T = tr_ms_audio_tokens(m, n_samples);
    float *trim = malloc((size_t)T * R * D * sizeof(float));
    float *y = malloc((size_t)T * (size_t)H * sizeof(float));
    float *h = malloc((size_t)T * (size_t)H * sizeof(float));
    if (!trim || !y || !h) {
        free(trim);
        free(y);
        free(h);
        return TRANSCRIBE_ERR_OOM;
    }
    int64_t row = 0;
    transcribe_status st = TRANSCRIBE_OK;
    for (int64_t start = 0; start < n_samples && st == TRANSCRIBE_OK; start += m->n_chunk) {
        const int64_t len = n_samples - start < m->n_chunk ? n_samples - start : m->n_chunk;
        float *mel = NULL;
        int n_frames = 0;
        st = tr_mel_whisper(&m->mel, pcm + start, len, s->pool, &mel, &n_frames);
        if (st == TRANSCRIBE_OK && n_frames != chunk_frames(m)) {
            TR_ERROR("moss: chunk front end gave %d frames, expected %d", n_frames,
                     chunk_frames(m));
            st = TRANSCRIBE_ERR_GGUF;
        }
        if (st == TRANSCRIBE_OK) {
            tr_whenc_forward(s->pool, &m->enc, &s->enc_work, mel, n_frames, s->enc_out);
            const int64_t keep = tokens_of_chunk(m, len) * R;
            memcpy(trim + row * D, s->enc_out, (size_t)keep * D * sizeof(float));
            row += keep;
        }
        free(mel);
    }
    if (st == TRANSCRIBE_OK) {
        /* merged row j = rows Rj..Rj+R-1 side by side: the same memory */
        tr_nn_linear_fwd(s->pool, &m->fc1, trim, (int)T, h);
        tr_silu(h, (long)T * H);
        tr_nn_linear_fwd(s->pool, &m->fc2, h, (int)T, y);
        tr_layer_norm(s->pool, y, y, (int)T, H, m->norm_out.w, m->norm_out.b, m->lm.eps);
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
    if (p->family) {
        TR_ERROR("moss: this family takes no run extension");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (p->task == TRANSCRIBE_TASK_TRANSLATE) {
        TR_ERROR("moss: translation is not supported (transcription only)");
        return TRANSCRIBE_ERR_UNSUPPORTED_TASK;
    }
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

/* ---- one utterance (§9) ---- */

typedef struct abort_ctx {
    const tr_run_ctx *ctx;
} abort_ctx;

static bool should_abort(void *user) {
    return tr_run_should_abort(((const abort_ctx *)user)->ctx);
}

/* The generation budget of §9 for a prompt of T_prompt tokens. */
static int gen_budget(const ms_session *s, int64_t T_prompt, int64_t T_enc) {
    int64_t want = 2 * T_enc + 128;
    if (want < MS_GEN_RESERVE) want = MS_GEN_RESERVE;
    int64_t room = s->ceiling - T_prompt;
    return (int)(want < room ? want : room);
}

static transcribe_status gate(const ms_session *s, int n_samples, int64_t *T_prompt) {
    const ms_model *m = s->m;
    const int64_t T_enc = tr_ms_audio_tokens(m, n_samples);
    *T_prompt = prompt_len(m, T_enc);
    if (*T_prompt + MS_GEN_RESERVE > s->ceiling) {
        TR_ERROR("moss: %d samples (%.1f s) need a %lld-token prompt; with the %d-token output "
                 "reserve that exceeds the context of %d; split the audio",
                 n_samples, (double)n_samples / m->mel.sample_rate, (long long)*T_prompt,
                 MS_GEN_RESERVE, s->ceiling);
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
    /* causal-lm.md §6.1 blend: the audio row replaces the placeholder row
     * (embedding_mult is 1 for MOSS) */
    for (int j = 0; j < T_enc; j++)
        memcpy(x + (size_t)audio_pos[j] * H, audio + (size_t)j * H, H * sizeof(float));
    int tok = tr_clm_prefill(s->lm, s->pool, x, n, slot, logits);
    free(x);
    return tok;
}

transcribe_status tr_ms_run(ms_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const ms_model *m = s->m;
    s->n_last = 0;
    if (!pcm || n_samples <= 0) return TRANSCRIBE_ERR_INVALID_ARG;
    s->pool = ctx->pool ? ctx->pool : s->pool;
    int64_t T_pred = 0;
    transcribe_status st = gate(s, n_samples, &T_pred);
    if (st != TRANSCRIBE_OK) return st;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *clean = NULL, *audio = NULL;
    int32_t *ids = NULL;
    int *apos = NULL, T_enc = 0, n_ids = 0;
    double t0 = tr_time_ms();
    const float *in = tr_pcm_sanitized(pcm, n_samples, "moss", &clean);
    st = in ? tr_ms_encode(s, in, n_samples, &audio, &T_enc, NULL) : TRANSCRIBE_ERR_OOM;
    free(clean);
    double t1 = tr_time_ms();
    ctx->result->encode_ms = (float)(t1 - t0);
    if (st == TRANSCRIBE_OK) st = tr_ms_build_prompt(m, T_enc, &ids, &n_ids, &apos);
    if (st == TRANSCRIBE_OK && tr_run_should_abort(ctx)) st = TRANSCRIBE_ERR_ABORTED;
    const int budget = gen_budget(s, n_ids, T_enc);
    const int n_ctx = tr_clm_ctx_pow2((int64_t)n_ids + budget, s->ceiling);
    if (st == TRANSCRIBE_OK) st = tr_clm_reserve(s->lm, 1, n_ctx);
    if (st == TRANSCRIBE_OK && budget > s->cap_last) {
        int32_t *p = realloc(s->last_ids, (size_t)budget * sizeof *p);
        if (!p)
            st = TRANSCRIBE_ERR_OOM;
        else {
            s->last_ids = p;
            s->cap_last = budget;
        }
    }
    int first = -1;
    if (st == TRANSCRIBE_OK) {
        first = prefill(s, ids, n_ids, audio, apos, T_enc, 0, s->last_logits);
        if (first < 0) st = TRANSCRIBE_ERR_OOM;
    }
    s->last_T_prompt = n_ids;
    if (st == TRANSCRIBE_OK) {
        abort_ctx ac = {ctx};
        tr_clm_greedy_cfg cfg = {.eos = m->eos,
                                 .max_new = budget,
                                 .max_n_kv = n_ctx,
                                 .should_abort = should_abort,
                                 .abort_user = &ac};
        if (s->repeat_guard) {
            const tr_repeat_guard g = TR_REPEAT_GUARD_DEFAULT;
            cfg.repeat_max_period = g.max_period;
            cfg.repeat_min_repeats = g.min_repeats;
            cfg.repeat_min_tokens = g.min_tokens;
        }
        int n_out = 0;
        st = tr_clm_greedy(s->lm, s->pool, &cfg, first, n_ids, s->last_ids, &n_out);
        s->n_last = n_out;
        if (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
            st == TRANSCRIBE_ERR_ABORTED) {
            transcribe_status st2 =
                fill_result(m, s->last_ids, n_out, n_samples, ctx->params, ctx->result);
            if (st2 != TRANSCRIBE_OK) st = st2;
        }
    }
    ctx->result->decode_ms = (float)(tr_time_ms() - t1);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    free(audio);
    free(ids);
    free(apos);
    return st;
}
