/* The Moonshine run: the input gates (too short / too long) before any
 * work, the encoder, greedy decoding from the start token to EOS or the
 * position cap (docs/formats/moonshine.md §6.2, nn/moonshine_decoder.h), and the
 * result (§6.3). Abort is polled before every encoder block and every
 * decoder step. */
#include <stdlib.h>
#include <string.h>

#include "models/moonshine/moonshine.h"
#include "audio/audio.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/timer.h"

transcribe_status tr_mn_validate_run(const mn_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("moonshine", p);
}

transcribe_status tr_mn_gate(const mn_model *m, const float *pcm, int n) {
    if (!pcm || n <= 0) {
        if (!pcm)
            TR_ERROR("moonshine: no audio (NULL pcm)");
        else
            TR_ERROR("moonshine: no audio (%d samples)", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (n < m->hp.min_samples) {
        /* upstream reports a load error here (docs/formats/moonshine.md §9) */
        TR_ERROR("moonshine: input too short: %d samples (%.2f ms); the conv stem needs at least "
                 "%d samples (%.2f ms) for one encoder frame",
                 n, 1000.0 * n / MN_SAMPLE_RATE, m->hp.min_samples,
                 1000.0 * m->hp.min_samples / MN_SAMPLE_RATE);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if ((int64_t)n * 1000 > m->max_audio_ms * MN_SAMPLE_RATE) {
        TR_ERROR("moonshine: %d samples (%.1f s) are longer than one call takes (%.1f s: the "
                 "decoder writes at most %d tokens); let the long-audio path split it "
                 "(chunking auto / on)",
                 n, (double)n / MN_SAMPLE_RATE, m->max_audio_ms / 1000.0, m->hp.max_pos);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_mn_fill_result(const mn_model *m, const int32_t *ids, int n, int64_t n_samples,
                                    tr_result *res) {
    tr_result_set_timestamp_kind(res, TRANSCRIBE_TIMESTAMPS_NONE);
    if (n == 0) return TRANSCRIBE_OK; /* no text, no segment */
    /* docs/formats/moonshine.md §6.3: nothing filtered, one leading space dropped */
    char *raw = tr_tokenizer_decode(m->tok, ids, n, false);
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (!raw) goto done;
    const char *text = raw[0] == ' ' ? raw + 1 : raw;
    if (!tr_result_set_raw_text(res, raw) || !tr_result_set_full_text(res, text)) goto done;
    /* the segment spans the input (on the file's clock once the long-audio
     * path joins pieces); token rows carry ids and pieces, no times */
    const int64_t t1 = n_samples * 1000 / MN_SAMPLE_RATE;
    const int seg = tr_result_add_segment(res, 0, t1, text);
    if (seg < 0) goto done;
    for (int i = 0; i < n; i++) {
        char *tt = tr_tokenizer_decode(m->tok, &ids[i], 1, false);
        const int k = tt ? tr_result_add_token(res, ids[i], 0.0f, 0, 0, seg, -1, tt) : -1;
        free(tt);
        if (k < 0) goto done;
    }
    st = TRANSCRIBE_OK;
done:
    free(raw);
    return res->oom ? TRANSCRIBE_ERR_OOM : st;
}

typedef struct step_ctx {
    mn_session *s;
    int T_enc;
    tr_run_ctx *ctx;
    int layer;
} step_ctx;

/* Progress: the encoder fills the first half (a tick per block), the steps
 * the rest. */
#define MN_ENC_SHARE 0.5

static bool enc_should_abort(void *user) {
    step_ctx *c = user;
    tr_run_span enc = {c->ctx, 0.0, MN_ENC_SHARE};
    tr_run_span_report(&enc, c->layer++, c->s->m->hp.n_enc_layers);
    return tr_run_should_abort(c->ctx);
}

transcribe_status tr_mn_run(mn_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const mn_model *m = s->m;
    const mn_hparams *hp = &m->hp;
    s->n_last = 0;
    transcribe_status st = tr_mn_gate(m, pcm, n_samples);
    if (st != TRANSCRIBE_OK) return st;
    s->pool = ctx->pool ? ctx->pool : s->pool;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;

    float *clean = NULL;
    const float *in = tr_pcm_sanitized(pcm, n_samples, "moonshine", &clean);
    if (!in) return TRANSCRIBE_ERR_OOM;
    const double t0 = tr_time_ms();
    step_ctx c = {s, 0, ctx, 0};
    st = tr_mn_encode(s, in, n_samples, &c.T_enc, NULL, enc_should_abort, &c);
    free(clean);
    const double t1 = tr_time_ms();
    ctx->result->encode_ms = (float)(t1 - t0);
    if (st != TRANSCRIBE_OK) return st;

    /* docs/formats/moonshine.md §6.2: prompt [start] at position 0, then one
     * token per step to EOS or max_position_embeddings positions */
    tr_run_report_progress(ctx, MN_ENC_SHARE);
    int n_out = 0;
    tr_run_span dec = {ctx, MN_ENC_SHARE, 1.0};
    const tr_msd_greedy_args ga = {.pool = s->pool,
                                   .dec = &m->msd.dec,
                                   .kv = &s->kv,
                                   .ck = s->cross_k,
                                   .cv = s->cross_v,
                                   .ck16 = s->cross_k16,
                                   .cv16 = s->cross_v16,
                                   .n_src = c.T_enc,
                                   .x = s->dec_x,
                                   .scratch = s->dec_scratch,
                                   .logits = s->logits,
                                   .start = hp->start_id,
                                   .eos = hp->eos,
                                   .gen_cap = hp->max_pos,
                                   .should_abort = tr_run_abort_poll,
                                   .abort_user = ctx,
                                   .on_step = tr_run_span_step,
                                   .step_user = &dec,
                                   .spec_k = tr_run_spec_k(ctx)};
    st = tr_msd_greedy(&ga, s->last_ids, &n_out);
    s->n_last = n_out;
    tr_mn_release_run_bufs(s);
    tr_run_report_decoded(ctx, st);
    ctx->result->decode_ms = (float)(tr_time_ms() - t1);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
        TR_WARN("moonshine: output truncated at %d tokens (no end-of-text within %d positions)",
                n_out, hp->max_pos);
    if (st == TRANSCRIBE_ERR_ABORTED)
        return st; /* no partial result (docs/formats/moonshine.md §8) */
    if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) return st;
    const transcribe_status f = tr_mn_fill_result(m, s->last_ids, n_out, n_samples, ctx->result);
    if (f != TRANSCRIBE_OK) return f;
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) ctx->truncated = true;
    return st;
}
