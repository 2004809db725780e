/* Canary math: session buffers, log-mel (docs/formats/canary.md §5), the FastConformer encoder
 * plus the optional encoder→decoder projection (§6), cross K/V, and the
 * pre-LN Transformer decoder with its self-attention KV cache and untied
 * head (§7). Encoder-sized buffers grow with the longest input seen. */
#include <stdlib.h>
#include <string.h>

#include "models/canary/canary.h"
#include "util/argmax.h"
#include "util/log.h"

transcribe_status tr_cn_session_create(const cn_model *m, const tr_session_cfg *cfg,
                                       cn_session **out) {
    *out = NULL;
    cn_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    const cn_hparams *hp = &m->hp;
    s->m = m;
    s->pool = cfg ? cfg->pool : NULL;
    /* n_ctx can only narrow the decoder context (docs/c-api.md §6.2) */
    s->n_ctx = hp->max_position;
    if (cfg && cfg->n_ctx > 0 && cfg->n_ctx < s->n_ctx) s->n_ctx = cfg->n_ctx;
    /* decoder KV: AUTO and F16 mean F16, only F32 means F32 (docs/c-api.md §6.2) */
    s->kv_f16 = !(cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_F32);
    s->enc.f16 = s->kv_f16; /* the cross K/V follow the cache's type */
    const size_t D = (size_t)hp->d_dec;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, s->n_ctx, m->decoder.dims.n_head,
                            m->decoder.dims.head_dim, s->kv_f16);
    s->fc_work = tr_fc_work_new();
    s->dec_x = malloc(CN_MAX_PROMPT * D * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->decoder, CN_MAX_PROMPT, 1) * sizeof(float));
    s->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    s->spec_logits = malloc((size_t)CN_VERIFY_ROWS * (size_t)hp->n_vocab * sizeof(float));
    if (!ok || !s->fc_work || !s->dec_x || !s->dec_scratch || !s->logits || !s->spec_logits) {
        TR_ERROR("canary: out of memory allocating session buffers");
        tr_cn_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

void tr_cn_session_free(cn_session *s) {
    if (!s) return;
    tr_nn_kv_free(&s->kv);
    tr_fc_work_free(s->fc_work);
    tr_fced_bufs_free(&s->enc);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->spec_logits);
    free(s);
}

int64_t tr_cn_predict_enc_frames(const cn_model *m, int64_t n_samples) {
    if (n_samples < 0 || m->mel.hop_length <= 0) return 0;
    int64_t L = n_samples / m->mel.hop_length + 1;   /* T_mel of the centred STFT */
    for (int i = 0; i < 3; i++) L = (L - 1) / 2 + 1; /* three stride-2 convs, padding 1 */
    return L;
}

transcribe_status tr_cn_log_mel(const cn_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel) {
    return tr_mel_compute_min(&m->mel, "canary", pcm, n, pool, 2, mel, T_mel);
}

transcribe_status tr_cn_encode(cn_session *s, const float *mel, int T_mel, int *T_enc,
                               tr_fc_abort_fn abort_fn, void *abort_user) {
    return tr_fced_encode(&s->m->fced, s->pool, s->fc_work, mel, T_mel, &s->enc, T_enc, abort_fn,
                          abort_user);
}

bool tr_cn_decode(cn_session *s, const int32_t *ids, int n, int n_past, int T_enc) {
    const cn_model *m = s->m;
    if (n > CN_MAX_PROMPT || !tr_fced_seq_ok(&m->fced, &s->enc, ids, n, n_past, T_enc, s->n_ctx))
        return false;
    /* x = LN(E_tok[y] + PE[p]) with the stored table, no sqrt(d) scaling;
     * only the last row's logits are needed (greedy, docs/formats/canary.md §8.3) */
    const tr_ed_seq seq = tr_fced_seq(&m->fced, &s->enc, &s->kv, ids, n, n_past, T_enc);
    tr_ed_step(s->pool, &m->decoder, 1, &seq, s->dec_x, s->dec_scratch, s->logits);
    return true;
}

bool tr_cn_verify(cn_session *s, const int32_t *ids, int n, int n_past, int T_enc, int32_t *next) {
    return tr_fced_verify(&s->m->fced, s->pool, &s->enc, &s->kv, ids, n, n_past, T_enc, s->n_ctx,
                          s->dec_x, s->dec_scratch, s->spec_logits, next);
}
