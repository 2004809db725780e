/* Whisper math (docs/formats/whisper.md §6–§7): session buffers, log-mel, the
 * encoder (conv stem, positional table, pre-LN blocks, final LN), cross K/V
 * per window, and the decoder with its self-attention KV cache and tied
 * output head. Buffers are allocated once per session. */
#include <stdlib.h>
#include <string.h>

#include "models/whisper/whisper.h"
#include "util/log.h"

transcribe_status tr_wh_session_create(const wh_model *m, const tr_session_cfg *cfg,
                                       wh_session **out) {
    *out = NULL;
    wh_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    const wh_hparams *hp = &m->hp;
    const size_t D = (size_t)hp->d_model, Tm = (size_t)hp->n_frames_window, S = Tm / 2,
                 Tt = (size_t)hp->n_text_ctx, V = (size_t)hp->n_vocab;
    s->m = m;
    s->pool = cfg ? cfg->pool : NULL;
    bool f16 = false;
    if (cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_F16) f16 = true;
    if (cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_AUTO) f16 = !m->weights_f32;
    bool ok =
        tr_nn_kv_init(&s->kv, hp->n_dec_layers, hp->n_text_ctx, hp->n_head, hp->head_dim, f16);
    if (!tr_whenc_work_init(&s->enc_work, &m->enc, (int)Tm)) ok = false;
    s->enc_x = malloc(S * D * sizeof(float));
    if (!tr_wh_cross_alloc(s)) ok = false;
    s->dec_x = malloc(Tt * D * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->decoder, (int)Tt, 1) * sizeof(float));
    s->logits = malloc(2 * V * sizeof(float));
    s->work = malloc(V * sizeof(float));
    s->window = malloc((size_t)hp->n_mels * Tm * sizeof(float));
    if (!ok || !s->enc_x || !s->dec_x || !s->dec_scratch || !s->logits || !s->work || !s->window) {
        TR_ERROR("whisper: out of memory allocating session buffers");
        tr_wh_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

void tr_wh_session_free(wh_session *s) {
    if (!s) return;
    tr_nn_kv_free(&s->kv);
    tr_whenc_work_free(&s->enc_work);
    free(s->enc_x);
    free(s->cross_k);
    free(s->cross_v);
    free(s->ck16);
    free(s->cv16);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->work);
    free(s->window);
    free(s->traces);
    free(s);
}

void tr_wh_encode(wh_session *s, const float *mel_window) {
    if (s->hub) {
        tr_wh_hub_encode(s, mel_window); /* computes the cross K/V too */
        return;
    }
    tr_whenc_forward(s->pool, &s->m->enc, &s->enc_work, mel_window, s->m->hp.n_frames_window,
                     s->enc_x);
}

bool tr_wh_cross_alloc(wh_session *s) {
    const wh_hparams *hp = &s->m->hp;
    const size_t n =
        (size_t)hp->n_dec_layers * (size_t)(hp->n_frames_window / 2) * (size_t)hp->d_model;
    if (s->kv.f16) {
        s->ck16 = malloc(n * sizeof(uint16_t));
        s->cv16 = malloc(n * sizeof(uint16_t));
        return s->ck16 && s->cv16;
    }
    s->cross_k = malloc(n * sizeof(float));
    s->cross_v = malloc(n * sizeof(float));
    return s->cross_k && s->cross_v;
}

bool tr_wh_cross_fill(wh_session *s, tr_pool *pool, const float *enc_x) {
    const wh_model *m = s->m;
    const size_t S = (size_t)m->hp.n_frames_window / 2, D = (size_t)m->hp.d_model;
    if (s->ck16) return tr_ed_cross_kv16(pool, &m->decoder, enc_x, (int)S, s->ck16, s->cv16, S * D);
    return tr_ed_cross_kv(pool, &m->decoder, enc_x, (int)S, s->cross_k, s->cross_v, S * D);
}

bool tr_wh_cross_kv(wh_session *s) {
    if (s->hub) return true; /* done with the hub's encode */
    return tr_wh_cross_fill(s, s->pool, s->enc_x);
}

/* The decoder step of one sequence over this session's cache and window. */
tr_ed_seq tr_wh_seq(wh_session *s, const int32_t *ids, int n, int n_past) {
    const int S = s->m->hp.n_frames_window / 2;
    return (tr_ed_seq){.rows = n,
                       .n_past = n_past,
                       .n_src = S,
                       .kv = &s->kv,
                       .ck = s->cross_k,
                       .cv = s->cross_v,
                       .ck16 = s->ck16,
                       .cv16 = s->cv16,
                       .cross_stride = (size_t)S * (size_t)s->m->hp.d_model,
                       .ids = ids};
}

bool tr_wh_decode_tokens(wh_session *s, const int32_t *ids, int n, int n_past) {
    const wh_model *m = s->m;
    if (!tr_ed_seq_ok(&m->decoder, ids, n, n_past, m->hp.n_text_ctx)) return false;
    if (s->hub) {
        tr_wh_hub_decode(s, ids, n, n_past);
        return true;
    }
    const tr_ed_seq seq = tr_wh_seq(s, ids, n, n_past);
    tr_ed_step(s->pool, &m->decoder, 1, &seq, s->dec_x, s->dec_scratch, NULL);
    return true;
}

bool tr_wh_verify_rows(wh_session *s, const int32_t *ids, int n, int n_past, float *logits) {
    const wh_model *m = s->m;
    if (s->hub || n < 1 || !tr_ed_seq_ok(&m->decoder, ids, n, n_past, m->hp.n_text_ctx))
        return false;
    const size_t V = (size_t)m->hp.n_vocab;
    for (int i = 0; i < n; i += 4) {
        const int rows = n - i < 4 ? n - i : 4;
        const tr_ed_seq seq = tr_wh_seq(s, ids + i, rows, n_past + i);
        tr_ed_step(s->pool, &m->decoder, 1, &seq, s->dec_x, s->dec_scratch, NULL);
        tr_ed_head(s->pool, &m->decoder, s->dec_x, rows, logits + (size_t)i * V);
    }
    return true;
}

bool tr_wh_step_logits(wh_session *s, int32_t id, int n_past, float *out) {
    const wh_model *m = s->m;
    if (s->hub) {
        if (!tr_wh_decode_tokens(s, &id, 1, n_past)) return false;
        tr_wh_logits_row(s, 0, out);
        return true;
    }
    if (!tr_ed_seq_ok(&m->decoder, &id, 1, n_past, m->hp.n_text_ctx)) return false;
    const tr_ed_seq seq = tr_wh_seq(s, &id, 1, n_past);
    tr_ed_step(s->pool, &m->decoder, 1, &seq, s->dec_x, s->dec_scratch, out);
    return true;
}

void tr_wh_logits_row(wh_session *s, int row, float *out) {
    if (s->hub) {
        tr_wh_hub_logits(s, row, out);
        return;
    }
    const wh_model *m = s->m;
    tr_ed_head(s->pool, &m->decoder, s->dec_x + (size_t)row * m->hp.d_model, 1, out);
}
