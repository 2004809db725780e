/* Cohere math: session buffers, the length rules and log-mel
 * (docs/formats/cohere.md §4, docs/formats/cohere.md §5.1), the FastConformer encoder plus
 * enc_dec_proj and the cross K/V (docs/formats/cohere.md §5.2), and the decoder step
 * (docs/formats/cohere.md §6.2) through src/nn/encdec_decoder.h. Encoder-sized buffers grow with
 * the longest input seen. */
#include <stdlib.h>
#include <string.h>

#include "models/cohere/cohere.h"
#include "util/log.h"

static transcribe_status session_setup(ch_session *s, const tr_session_cfg *cfg) {
    const ch_model *m = s->m;
    const ch_hparams *hp = &m->hp;
    s->pool = cfg->pool;
    /* n_ctx only narrows the decoder context (docs/c-api.md §6.2) */
    s->n_ctx = hp->max_seq_len;
    if (cfg->n_ctx > 0 && cfg->n_ctx < s->n_ctx) s->n_ctx = cfg->n_ctx;
    /* AUTO and F16 store F16 (upstream's default), F32 only when asked */
    s->kv_f16 = cfg->kv_type != TRANSCRIBE_KV_TYPE_F32;
    s->enc.f16 = s->kv_f16; /* the cross K/V follow the cache's type */
    const size_t D = (size_t)hp->d_dec;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, s->n_ctx, m->decoder.dims.n_head,
                            m->decoder.dims.head_dim, s->kv_f16);
    s->fc_work = tr_fc_work_new();
    s->dec_x = malloc(CH_PROMPT * D * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->decoder, CH_PROMPT, 1) * sizeof(float));
    s->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    s->spec_logits = malloc((size_t)TR_FCED_VERIFY_ROWS * (size_t)hp->n_vocab * sizeof(float));
    if (!ok || !s->fc_work || !s->dec_x || !s->dec_scratch || !s->logits || !s->spec_logits) {
        TR_ERROR("cohere: out of memory allocating session buffers");
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

static void session_release(ch_session *s) {
    tr_nn_kv_free(&s->kv);
    tr_fc_work_free(s->fc_work);
    tr_fced_bufs_free(&s->enc);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->spec_logits);
}

TR_FAMILY_SESSION(ch, session_setup, session_release)

int64_t tr_ch_predict_enc_frames(const ch_model *m, int64_t n_samples) {
    if (n_samples < 0 || m->mel.hop_length <= 0) return 0;
    int64_t t = n_samples / m->mel.hop_length + 1;   /* T_mel of the centred STFT */
    for (int i = 0; i < 3; i++) t = (t - 1) / 2 + 1; /* three stride-2 convs, padding 1 */
    return t;
}

transcribe_status tr_ch_check_length(const ch_model *m, int64_t n) {
    const int64_t T_enc = tr_ch_predict_enc_frames(m, n);
    if (m->hp.pos_emb_max_len > 0 && T_enc > m->hp.pos_emb_max_len) {
        TR_ERROR("cohere: %lld samples (%.1f s) need %lld encoder frames; the model's limit is "
                 "%d (%lld ms); split the audio",
                 (long long)n, (double)n / m->mel.sample_rate, (long long)T_enc,
                 m->hp.pos_emb_max_len, (long long)m->max_audio_ms);
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    }
    /* docs/formats/cohere.md §9: at least 2 mel frames (n >= hop); reflect padding (a file whose
     * pad_mode is reflect) also needs n > n_fft / 2 */
    if (n / m->mel.hop_length + 1 < 2) {
        TR_ERROR("cohere: %lld samples give fewer than 2 mel frames (need at least %d)",
                 (long long)n, m->mel.hop_length);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (m->mel.pad_mode == TR_PAD_REFLECT) return tr_mel_check_reflect_len(&m->mel, "cohere", n);
    return TRANSCRIBE_OK;
}

transcribe_status tr_ch_log_mel(const ch_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel) {
    return tr_mel_compute_min(&m->mel, "cohere", pcm, n, pool, 2, mel, T_mel);
}

transcribe_status tr_ch_encode(ch_session *s, const float *mel, int T_mel, int *T_enc,
                               tr_fc_abort_fn abort_fn, void *abort_user) {
    return tr_fced_encode(&s->m->fced, s->pool, s->fc_work, mel, T_mel, &s->enc, T_enc, abort_fn,
                          abort_user);
}

bool tr_ch_decode(ch_session *s, const int32_t *ids, int n, int n_past, int T_enc) {
    const ch_model *m = s->m;
    if (n > CH_PROMPT || !tr_fced_seq_ok(&m->fced, &s->enc, ids, n, n_past, T_enc, s->n_ctx))
        return false;
    /* x = LN(E[id] + pos_enc[p]), no sqrt(H) scaling; logits of the last row */
    const tr_ed_seq seq = tr_fced_seq(&m->fced, &s->enc, &s->kv, ids, n, n_past, T_enc);
    tr_ed_step(s->pool, &m->decoder, 1, &seq, s->dec_x, s->dec_scratch, s->logits);
    return true;
}

int tr_ch_max_new(const ch_session *s) {
    const int n = s->n_ctx - CH_PROMPT;
    return n < CH_MAX_GEN ? n : CH_MAX_GEN;
}
