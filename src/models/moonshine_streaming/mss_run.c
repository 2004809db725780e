/* The Moonshine Streaming offline run: session buffers, the input gates,
 * the encoder into cross K/V, greedy decoding within the budget of
 * docs/formats/moonshine_streaming.md §6 (nn/moonshine_decoder.h), the
 * result rows, and lockstep batches (nn/encdec_greedy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/moonshine_streaming/mss.h"
#include "audio/audio.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

/* Samples one encoder push takes in an offline run: bounds the front end's
 * and the convolutions' work areas whatever the input length (the stages
 * carry their history, so the rows equal one push of everything). */
#define MSS_PUSH_SAMPLES (10 * MSS_SAMPLE_RATE)

static transcribe_status setup(mss_session *s, const tr_session_cfg *cfg) {
    const mss_model *m = s->m;
    const mss_hparams *hp = &m->hp;
    s->pool = cfg->pool;
    /* docs/formats/moonshine_streaming.md §6: the self-KV is F32 unless the session asks for F16 */
    s->kv_f16 = cfg->kv_type == TRANSCRIBE_KV_TYPE_F16;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, hp->max_pos, m->msd.dec.dims.n_head,
                            m->msd.dec.dims.head_dim, s->kv_f16) &&
              tr_mss_enc_init(&s->enc, m);
    s->dec_x = malloc((size_t)hp->dec_d * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->msd.dec, 1, 1) * sizeof(float));
    s->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    s->ids = malloc((size_t)hp->max_pos * sizeof(int32_t));
    if (!ok || !s->dec_x || !s->dec_scratch || !s->logits || !s->ids) {
        TR_ERROR("moonshine_streaming: out of memory allocating session buffers");
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

static void release(mss_session *s) {
    tr_mss_stream_free(s->stream);
    tr_nn_kv_free(&s->kv);
    tr_mss_enc_free(&s->enc);
    free(s->ck);
    free(s->cv);
    free(s->adapt);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->ids);
}

TR_FAMILY_SESSION(mss, setup, release)

bool tr_mss_grow_cross(mss_session *s, size_t frames, size_t keep) {
    if (frames <= s->cap_frames) return true;
    size_t cap = s->cap_frames ? s->cap_frames : 64;
    while (cap < frames) cap *= 2;
    const size_t L = (size_t)s->m->hp.n_dec_layers, D = (size_t)s->m->hp.dec_d;
    float *ck = malloc(L * cap * D * sizeof(float)), *cv = malloc(L * cap * D * sizeof(float));
    if (!ck || !cv) {
        free(ck);
        free(cv);
        return false;
    }
    const tr_nn_dims *d = &s->m->msd.dec.dims;
    for (size_t l = 0; l < L && keep > 0; l++) {
        tr_nn_cross_copy(ck + l * cap * D, cap, s->ck + l * s->cap_frames * D, s->cap_frames, keep,
                         d, sizeof(float));
        tr_nn_cross_copy(cv + l * cap * D, cap, s->cv + l * s->cap_frames * D, s->cap_frames, keep,
                         d, sizeof(float));
    }
    free(s->ck);
    free(s->cv);
    s->ck = ck;
    s->cv = cv;
    s->cap_frames = cap;
    return true;
}

transcribe_status tr_mss_cross_rows(mss_session *s, int64_t seg0, int64_t g0, int64_t g1) {
    const mss_model *m = s->m;
    const mss_rows *out = &s->enc.out;
    const int n = (int)(g1 - g0);
    if (n <= 0) return TRANSCRIBE_OK;
    const int64_t r0 = g0 - seg0;
    if (!tr_mss_grow_cross(s, (size_t)(r0 + n), (size_t)r0)) return TRANSCRIBE_ERR_OOM;
    const size_t need = (size_t)n * (size_t)(m->hp.enc_d + m->hp.dec_d);
    if (need > s->adapt_cap) {
        float *a = realloc(s->adapt, need * sizeof *a);
        if (!a) return TRANSCRIBE_ERR_OOM;
        s->adapt = a;
        s->adapt_cap = need;
    }
    return tr_mss_cross(s->pool, m, out->v + (size_t)(g0 - out->base) * (size_t)out->width, n,
                        (int)r0, s->ck, s->cv, s->cap_frames, (int)r0, s->adapt)
               ? TRANSCRIBE_OK
               : TRANSCRIBE_ERR_OOM;
}

/* The rows waiting in s->enc.out through the adapter (an utterance: segment
 * 0), then dropped. */
static transcribe_status take_rows(mss_session *s) {
    mss_rows *out = &s->enc.out;
    const transcribe_status st = tr_mss_cross_rows(s, 0, out->base, out->base + out->n);
    tr_mss_rows_drop(out, out->base + out->n);
    return st;
}

transcribe_status tr_mss_encode(mss_session *s, const float *pcm, int n, int *T,
                                bool (*should_abort)(void *), void *abort_user) {
    *T = 0;
    tr_mss_enc_reset(&s->enc);
    transcribe_status st = TRANSCRIBE_OK;
    for (int at = 0; st == TRANSCRIBE_OK && (at < n || at == 0);) {
        const int k = n - at < MSS_PUSH_SAMPLES ? n - at : MSS_PUSH_SAMPLES;
        const bool last = at + k >= n;
        st = tr_mss_enc_push(&s->enc, s->pool, pcm + at, k, last, should_abort, abort_user);
        if (st == TRANSCRIBE_OK) st = take_rows(s);
        at += k;
        if (last) break;
    }
    if (st != TRANSCRIBE_OK) return st;
    *T = (int)s->enc.out.base;
    return TRANSCRIBE_OK;
}

transcribe_status tr_mss_decode(mss_session *s, int T, const int32_t *prefix, int n_prefix,
                                bool (*should_abort)(void *), void *abort_user, int spec_k,
                                int *n_out) {
    const mss_model *m = s->m;
    const tr_msd_greedy_args ga = {.pool = s->pool,
                                   .dec = &m->msd.dec,
                                   .kv = &s->kv,
                                   .ck = s->ck,
                                   .cv = s->cv,
                                   .n_src = T,
                                   .cross_stride = s->cap_frames * (size_t)m->hp.dec_d,
                                   .cross_rows = s->cap_frames,
                                   .x = s->dec_x,
                                   .scratch = s->dec_scratch,
                                   .logits = s->logits,
                                   .start = m->hp.start_id,
                                   .eos = m->hp.eos,
                                   .gen_cap = tr_mss_gen_cap(&m->hp, T),
                                   .prefix = prefix,
                                   .n_prefix = n_prefix,
                                   .should_abort = should_abort,
                                   .abort_user = abort_user,
                                   .spec_k = spec_k};
    return tr_msd_greedy(&ga, s->ids, n_out);
}

transcribe_status tr_mss_validate_run(const mss_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("moonshine_streaming", p);
}

transcribe_status tr_mss_gate(const mss_model *m, const float *pcm, int n) {
    if (!pcm || n <= 0) {
        if (!pcm)
            TR_ERROR("moonshine_streaming: no audio (NULL pcm)");
        else
            TR_ERROR("moonshine_streaming: no audio (%d samples)", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const int64_t T = tr_mss_enc_frames(&m->hp, n);
    if (T > m->hp.max_pos) {
        TR_ERROR("moonshine_streaming: %d samples (%.2f s) make %lld encoder frames; the "
                 "adapter's position table has %d rows (%.2f s): split the input (chunking "
                 "auto / on) or stream it",
                 n, (double)n / MSS_SAMPLE_RATE, (long long)T, m->hp.max_pos,
                 m->max_audio_ms / 1000.0);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return TRANSCRIBE_OK;
}

bool tr_mss_add_segment(const mss_model *m, tr_result *res, const int32_t *ids, int n, bool first,
                        int64_t t0_ms, int64_t t1_ms) {
    if (n <= 0) return true;
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    if (!raw) return false;
    const char *text = raw[0] == ' ' ? raw + 1 : raw;
    const int seg = tr_result_add_segment(res, t0_ms, t1_ms, text);
    bool ok = seg >= 0;
    /* token rows: id and piece, untimed (docs/formats/moonshine_streaming.md §7); the text's first
     * piece loses its leading space as the text does, so the pieces join to the text */
    for (int i = 0; ok && i < n; i++) {
        char *tt = tr_tokenizer_decode(m->tok, &ids[i], 1, false);
        const char *t = tt && first && i == 0 && tt[0] == ' ' ? tt + 1 : tt;
        ok = tt && tr_result_add_token(res, ids[i], 0.0f, 0, 0, seg, -1, t) >= 0;
        free(tt);
    }
    free(raw);
    return ok;
}

/* docs/formats/moonshine_streaming.md §6: one segment spanning the input (the long-audio path moves
 * it onto the file's clock), raw text kept, full text without its leading space. */
static transcribe_status fill_result(const mss_model *m, const int32_t *ids, int n,
                                     int64_t n_samples, tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (n == 0) return TRANSCRIBE_OK;
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    bool ok = raw && tr_result_set_raw_text(res, raw) &&
              tr_result_set_full_text(res, raw[0] == ' ' ? raw + 1 : raw) &&
              tr_mss_add_segment(m, res, ids, n, true, 0, n_samples * 1000 / MSS_SAMPLE_RATE);
    free(raw);
    return ok && !res->oom ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

typedef struct run_abort {
    tr_run_ctx *ctx;
    int layer, n_layers;
} run_abort;

/* Abort poll of the encoder (before every block of every push), also the
 * progress of the encoder half. */
static bool enc_abort(void *user) {
    run_abort *a = user;
    tr_run_span enc = {a->ctx, 0.0, 0.5};
    tr_run_span_report(&enc, a->layer++, a->n_layers);
    return tr_run_should_abort(a->ctx);
}

static void warn_truncated(const mss_model *m, int T, int n_out, const char *who) {
    const int cap = tr_mss_gen_cap(&m->hp, T);
    if (cap < m->hp.max_pos)
        TR_WARN("moonshine_streaming: %soutput truncated at %d tokens: the generation budget "
                "(%d) for %d encoder frames ran out before end-of-text",
                who, n_out, cap, T);
    else
        TR_WARN("moonshine_streaming: %soutput truncated at %d tokens: the position cap (%d) "
                "ran out before end-of-text",
                who, n_out, m->hp.max_pos);
}

transcribe_status tr_mss_run(mss_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const mss_model *m = s->m;
    s->n_ids = 0;
    transcribe_status st = tr_mss_gate(m, pcm, n_samples);
    if (st != TRANSCRIBE_OK) return st;
    s->pool = ctx->pool ? ctx->pool : s->pool;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    float *clean = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "moonshine_streaming", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    const double t0 = tr_time_ms();
    run_abort ra = {ctx, 0, m->hp.n_enc_layers * (1 + n_samples / MSS_PUSH_SAMPLES)};
    int T = 0;
    st = tr_mss_encode(s, in, n_samples, &T, enc_abort, &ra);
    free(clean);
    const double t1 = tr_time_ms();
    ctx->result->encode_ms = (float)(t1 - t0);
    if (st != TRANSCRIBE_OK) return st;
    tr_run_report_progress(ctx, 0.5);
    int n_out = 0;
    st = tr_mss_decode(s, T, NULL, 0, tr_run_abort_poll, ctx, tr_run_spec_k(ctx), &n_out);
    s->n_ids = n_out;
    tr_run_report_decoded(ctx, st);
    ctx->result->decode_ms = (float)(tr_time_ms() - t1);
    if (st == TRANSCRIBE_ERR_ABORTED)
        return st; /* no partial result (docs/formats/moonshine_streaming.md §8) */
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return st;
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) warn_truncated(m, T, n_out, "");
    const transcribe_status f = fill_result(m, s->ids, n_out, n_samples, ctx->result);
    if (f != TRANSCRIBE_OK) return f;
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    return st;
}

/* ---- batches (docs/c-api.md §11) ---- */

#define GROUP_FRAMES 8000 /* encoder frames one group holds (160 s) */
#define GROUP_MAX    64

/* The group being run, as the hooks of tr_msd_group_encode see it. */
typedef struct job {
    mss_session *s;
    const tr_run_group *g;
} job;

/* Utterance u->idx's encoder, its cross K/V copied out of the session's
 * buffers (compacted to T rows per layer), and its token cap. */
static transcribe_status utt_encode(void *user, tr_msd_utt *u) {
    const job *b = user;
    mss_session *s = b->s;
    const mss_hparams *hp = &s->m->hp;
    const size_t D = (size_t)hp->dec_d, L = (size_t)hp->n_dec_layers;
    const int i = u->idx;
    const double t0 = tr_time_ms();
    float *clean = NULL;
    const float *in =
        tr_pcm_sanitized(b->g->pcm[i], b->g->n_samples[i], "moonshine_streaming", &clean);
    int T = 0;
    const transcribe_status st =
        in ? tr_mss_encode(s, in, b->g->n_samples[i], &T, tr_run_abort_poll, &b->g->ctxs[i])
           : TRANSCRIBE_ERR_OOM;
    free(clean);
    if (st == TRANSCRIBE_OK) {
        u->T = T;
        u->max_new = tr_mss_gen_cap(hp, T);
        if (!tr_msd_utt_alloc(u, &s->m->msd, hp->max_pos, s->kv_f16, false)) {
            TR_ERROR("moonshine_streaming: out of memory for utterance %d of a batch", i);
            return TRANSCRIBE_ERR_OOM;
        }
        const tr_nn_dims *d = &s->m->msd.dec.dims;
        for (size_t l = 0; l < L; l++) {
            tr_nn_cross_copy(u->ck + l * T * D, (size_t)T, s->ck + l * s->cap_frames * D,
                             s->cap_frames, (size_t)T, d, sizeof(float));
            tr_nn_cross_copy(u->cv + l * T * D, (size_t)T, s->cv + l * s->cap_frames * D,
                             s->cap_frames, (size_t)T, d, sizeof(float));
        }
    }
    b->g->ctxs[i].result->encode_ms = (float)(tr_time_ms() - t0);
    return st;
}

static transcribe_status run_group(void *user, tr_msd_utt *u, int n) {
    job *b = user;
    mss_session *s = b->s;
    const tr_run_group *g = b->g;
    const mss_model *m = s->m;
    const mss_hparams *hp = &m->hp;
    tr_run_ctx *ctxs = g->ctxs;
    transcribe_status st =
        tr_msd_group_encode(u, &n, utt_encode, b, tr_run_group_finish, (void *)g);
    if (st != TRANSCRIBE_OK || n == 0) return st;
    const double t0 = tr_time_ms();
    st = tr_msd_greedy_group(s->pool, &m->msd, hp->start_id, hp->eos, hp->max_pos,
                             tr_run_abort_poll, &ctxs[u[0].idx], u, n);
    const double t1 = tr_time_ms();
    for (int j = 0; j < n && (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_ABORTED); j++) {
        const int i = u[j].idx;
        tr_run_ctx *ctx = &ctxs[i];
        ctx->result->decode_ms = (float)((t1 - t0) / n);
        if (u[j].live) continue; /* aborted mid-utterance: no partial result */
        const transcribe_status r = u[j].eos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (r == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
            char who[48];
            snprintf(who, sizeof who, "utterance %d: ", i);
            warn_truncated(m, u[j].T, u[j].n_out, who);
        }
        const transcribe_status f =
            fill_result(m, u[j].out, u[j].n_out, g->n_samples[i], ctx->result);
        if (f != TRANSCRIBE_OK) {
            st = f;
            break;
        }
        tr_run_batch_settle(ctxs, i, r, -1.0f);
        g->done[i] = true;
    }
    return st;
}

/* The hooks of tr_run_batch_groups (core/family.h). */
static transcribe_status batch_gate(void *user, int i, const float *pcm, int n_samples) {
    (void)i;
    return tr_mss_gate(((mss_session *)user)->m, pcm, n_samples);
}

static int batch_frames(void *user, int n_samples) {
    const mss_session *s = user;
    return (int)tr_mss_enc_frames(&s->m->hp, n_samples);
}

static transcribe_status batch_group(void *user, const tr_run_group *g) {
    job b = {user, g};
    return tr_msd_group_run(g->idx, g->k, run_group, &b);
}

transcribe_status tr_mss_run_batch(mss_session *s, const float *const *pcm, const int *n_samples,
                                   int n, tr_run_ctx *ctxs) {
    s->n_ids = 0;
    s->pool = ctxs[0].pool ? ctxs[0].pool : s->pool;
    static const tr_run_groups groups = {.max_n = GROUP_MAX,
                                         .max_frames = GROUP_FRAMES,
                                         .gate = batch_gate,
                                         .frames = batch_frames,
                                         .run = batch_group};
    return tr_run_batch_groups(&groups, s, pcm, n_samples, n, ctxs);
}
