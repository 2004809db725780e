/* The offline run (docs/formats/sensevoice.md §4–§6): front end, the
 * four prefix rows, the SAN-M stack and CTC head, greedy CTC, result rows. One encoder pass over
 * the whole input: there is no window (docs/formats/sensevoice.md §7). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/sensevoice/sensevoice.h"
#include "tensor/ops.h"
#include "util/log.h"
#include "util/timer.h"

transcribe_status tr_sv_features(const sv_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                 float **feats, int *T_lfr) {
    return tr_mel_compute_rows(&m->mel, pcm, n, pool, feats, T_lfr);
}

void tr_sv_prompt_rows(const sv_model *m, const char *language, enum transcribe_itn_mode itn,
                       int *lid, int *textnorm) {
    const sv_special *s = &m->sp;
    /* docs/formats/sensevoice.md §6.2: a known code picks its row; none, empty, "auto" or anything
     * else the auto row ("nospeech" is reachable only where a file lists it) */
    *lid = s->lang_auto;
    if (language) {
        const struct {
            const char *code;
            int row;
        } map[] = {{"zh", s->lang_zh}, {"en", s->lang_en}, {"yue", s->lang_yue},
                   {"ja", s->lang_ja}, {"ko", s->lang_ko}, {"nospeech", s->lang_nospeech}};
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strcmp(language, map[i].code) == 0) *lid = map[i].row;
    }
    *textnorm = itn == TRANSCRIBE_ITN_MODE_ON ? s->withitn : s->woitn;
}

transcribe_status tr_sv_encode(const sv_model *m, tr_pool *pool, const float *feats, int T_lfr,
                               int lid, int textnorm, float *logits, const sv_taps *taps,
                               bool (*abort)(void *), void *abort_user) {
    static const sv_taps none = {0};
    if (!taps) taps = &none;
    const sv_hparams *hp = &m->hp;
    const int T = T_lfr + 4, di = hp->d_input, D = hp->d_model;
    float *in = malloc(sizeof(float) * (size_t)T * (size_t)di);
    float *x = malloc(sizeof(float) * (size_t)T * (size_t)D);
    transcribe_status st = TRANSCRIBE_OK;
    if (!in || !x) {
        TR_ERROR("sensevoice: out of memory for %d encoder rows", T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    /* docs/formats/sensevoice.md §5.1: [E[lid]; E[1]; E[2]; E[textnorm]; X] · sqrt(d_model) + PE
     * (the table as wide as the input, 1-based positions) */
    const int rows[4] = {lid, 1, 2, textnorm};
    for (int r = 0; r < 4; r++)
        memcpy(in + (size_t)r * di, m->embed + (size_t)rows[r] * di, sizeof(float) * (size_t)di);
    memcpy(in + (size_t)4 * di, feats, sizeof(float) * (size_t)T_lfr * (size_t)di);
    tr_ew_scale(pool, in, (float)sqrt((double)D), (long)T * di);
    tr_sanm_add_positions(in, T, di);
    if (taps->embed_out) memcpy(taps->embed_out, in, sizeof(float) * (size_t)T * (size_t)di);

    /* docs/formats/sensevoice.md §5.3: the shared two-tier stack (nn/sanm.h), then the head */
    const tr_sanm_taps st_taps = {taps->encoders0_out, taps->encoders_out, taps->after_norm_out,
                                  taps->tp_norm_out};
    st = tr_sanm_encoder_fwd(pool, &m->enc, in, T, x, &st_taps, abort, abort_user);
    if (st == TRANSCRIBE_OK) tr_nn_linear_fwd(pool, &m->ctc, x, T, logits);
done:
    free(in);
    free(x);
    return st;
}

int tr_sv_greedy(const float *logits, int T, int V, int32_t *ids) {
    int n = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        const float *r = logits + (size_t)t * V;
        int a = 0;
        for (int j = 1; j < V; j++)
            if (r[j] > r[a]) a = j; /* strict: ties go to the lowest id */
        if (a != prev) {
            /* blank is id 0 whatever the file says (docs/formats/sensevoice.md §2) */
            if (a != 0) ids[n++] = a;
            prev = a;
        }
    }
    return n;
}

transcribe_status tr_sv_validate_run(const sv_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("sensevoice", p);
}

transcribe_status tr_sv_run(sv_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const sv_model *m = s->m;
    const struct transcribe_run_params *p = ctx->params;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status st = tr_family_gate_whole("sensevoice", pcm, n_samples, m->mel.win_length,
                                                m->mel.sample_rate, SV_MAX_AUDIO_MS);
    if (st != TRANSCRIBE_OK) return st;
    float *owned = NULL, *feats = NULL, *logits = NULL;
    int32_t *ids = NULL;
    const float *x = tr_pcm_sanitized(pcm, n_samples, "sensevoice", &owned);
    if (!x) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_lfr = 0;
    st = tr_sv_features(m, s->pool, x, n_samples, &feats, &T_lfr);
    double t1 = tr_time_ms();
    ctx->result->mel_ms = (float)(t1 - t0);
    if (st) goto done;
    tr_run_report_progress(ctx, 0.05);
    int lid, textnorm;
    tr_sv_prompt_rows(m, p->language, p->itn, &lid, &textnorm);
    const int T = T_lfr + 4, V = m->hp.n_vocab;
    logits = malloc(sizeof(float) * (size_t)T * (size_t)V);
    ids = malloc(sizeof(int32_t) * (size_t)T);
    if (!logits || !ids) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    st =
        tr_sv_encode(m, s->pool, feats, T_lfr, lid, textnorm, logits, NULL, tr_run_abort_poll, ctx);
    double t2 = tr_time_ms();
    ctx->result->encode_ms = (float)(t2 - t1);
    if (st) goto done;
    int n = tr_sv_greedy(logits, T, V, ids);
    st = tr_sv_build_result(m, ids, n, p, n_samples, ctx->result);
    tr_run_end_decode(ctx, st, t2);
    if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
done:
    free(owned);
    free(feats);
    free(logits);
    free(ids);
    return st;
}

/* the session keeps only the pool: n_ctx and kv_type mean nothing here (docs/formats/sensevoice.md
 * §7) */
TR_FAMILY_POOL_SESSION(sv)
