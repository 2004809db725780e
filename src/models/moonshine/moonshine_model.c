/* Moonshine math: session buffers, the conv stem over raw PCM
 * (docs/formats/moonshine.md §5.1), the encoder blocks with partial rotary
 * positions and the final norm (§5.2–§5.3), the decoder's cross K/V, and
 * one decoder step through nn/encdec_decoder.h (§6.1). Encoder-sized
 * buffers grow with the longest input seen. */
#include <stdlib.h>
#include <string.h>

#include "models/moonshine/moonshine.h"
#include "tensor/ops.h"
#include "util/log.h"

transcribe_status tr_mn_session_create(const mn_model *m, const tr_session_cfg *cfg,
                                       mn_session **out) {
    *out = NULL;
    mn_session *s = calloc(1, sizeof *s);
    if (!s) return TRANSCRIBE_ERR_OOM;
    const mn_hparams *hp = &m->hp;
    s->m = m;
    s->pool = cfg ? cfg->pool : NULL;
    /* docs/formats/moonshine.md §6.1: AUTO and F32 keep an F32 cache (the
     * reference's regime); only an explicit F16 stores F16 */
    s->kv_f16 = cfg && cfg->kv_type == TRANSCRIBE_KV_TYPE_F16;
    const size_t D = (size_t)hp->d_model;
    bool ok = tr_nn_kv_init(&s->kv, hp->n_dec_layers, hp->max_pos, hp->d_model, s->kv_f16);
    s->dec_x = malloc(D * sizeof(float));
    s->dec_scratch = malloc(tr_ed_step_scratch(&m->msd.dec, 1, 1) * sizeof(float));
    s->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    s->last_ids = malloc((size_t)hp->max_pos * sizeof(int32_t));
    if (!ok || !s->dec_x || !s->dec_scratch || !s->logits || !s->last_ids) {
        TR_ERROR("moonshine: out of memory allocating session buffers");
        tr_mn_session_free(s);
        return TRANSCRIBE_ERR_OOM;
    }
    *out = s;
    return TRANSCRIBE_OK;
}

static void free_enc_bufs(mn_session *s) {
    free(s->stem_a);
    free(s->stem_b);
    free(s->enc_x);
    free(s->enc_scratch);
    free(s->cross_k);
    free(s->cross_v);
    s->stem_a = s->stem_b = s->enc_x = s->enc_scratch = s->cross_k = s->cross_v = NULL;
    s->cap_samples = s->cap_frames = 0;
}

void tr_mn_session_free(mn_session *s) {
    if (!s) return;
    tr_nn_kv_free(&s->kv);
    free_enc_bufs(s);
    free(s->dec_x);
    free(s->dec_scratch);
    free(s->logits);
    free(s->last_ids);
    free(s);
}

int64_t tr_mn_enc_frames(const mn_hparams *hp, int64_t n, int64_t *t1, int64_t *t2) {
    int64_t t[3], L = n;
    for (int j = 0; j < 3; j++) {
        L = L >= hp->ks[j] ? (L - hp->ks[j]) / hp->st[j] + 1 : 0;
        t[j] = L;
    }
    if (t1) *t1 = t[0];
    if (t2) *t2 = t[1];
    return t[2];
}

/* The buffers only the encoder uses; the rest (encoder output, cross K/V)
 * stay for the decoder. The next grow_enc_bufs allocates all again. */
static void release_transient(mn_session *s) {
    free(s->stem_a);
    free(s->stem_b);
    free(s->enc_scratch);
    s->stem_a = s->stem_b = s->enc_scratch = NULL;
    s->cap_samples = 0;
}

/* Buffers for n samples (the stem's three stages, the encoder rows and
 * their scratch); the cross K/V are the caller's or grown here. */
static bool grow_enc_bufs(mn_session *s, int n) {
    if ((size_t)n <= s->cap_samples) return true;
    const mn_hparams *hp = &s->m->hp;
    int64_t t1, t2;
    const int64_t T = tr_mn_enc_frames(hp, n, &t1, &t2);
    free_enc_bufs(s);
    const size_t D = (size_t)hp->d_model, L = (size_t)hp->n_dec_layers;
    s->stem_a = malloc(D * (size_t)t1 * sizeof(float));
    s->stem_b = malloc((size_t)hp->ch[1] * (size_t)t2 * sizeof(float));
    s->enc_x = malloc(D * (size_t)T * sizeof(float));
    s->enc_scratch = malloc(tr_nn_enc_block_scratch(&s->m->enc_dims, (int)T) * sizeof(float));
    s->cross_k = malloc(L * (size_t)T * D * sizeof(float));
    s->cross_v = malloc(L * (size_t)T * D * sizeof(float));
    if (!s->stem_a || !s->stem_b || !s->enc_x || !s->enc_scratch || !s->cross_k || !s->cross_v) {
        free_enc_bufs(s);
        return false;
    }
    s->cap_samples = (size_t)n;
    s->cap_frames = (size_t)T;
    return true;
}

/* tanh over n values split across the pool (element-wise: the same bits
 * for any thread count). */
typedef struct tanh_ctx {
    float *x;
    long n;
} tanh_ctx;

static void tanh_task(void *vctx, int ith, int nth) {
    const tanh_ctx *c = vctx;
    long b, e;
    tr_split_range(c->n, ith, nth, &b, &e);
    if (e > b) tr_tanh(c->x + b, e - b);
}

/* docs/formats/moonshine.md §5.1: conv0 (no bias) → tanh → GroupNorm(1)
 * → conv1 + b → GELU → conv2 + b → GELU, channel-major, then transposed to
 * s->enc_x [T][d]. */
static transcribe_status stem(mn_session *s, const float *pcm, int n, int stop, int *T_out) {
    const mn_model *m = s->m;
    const mn_hparams *hp = &m->hp;
    const int d = hp->d_model, c1 = hp->ch[1];
    int64_t t1, t2;
    const int T = (int)tr_mn_enc_frames(hp, n, &t1, &t2);
    float *a = s->stem_a, *b = s->stem_b;
    tr_pool_take_failures(s->pool);
    tr_conv1d(s->pool, pcm, 1, n, m->conv0, NULL, hp->st[0], 0, 0, 1, 1, a);
    tanh_ctx th = {a, (long)d * t1};
    tr_pool_run(th.n >= 32768 ? s->pool : NULL, tanh_task, &th);
    if (stop == 1) {
        *T_out = (int)t1;
        return TRANSCRIBE_OK;
    }
    if (!tr_group_norm(s->pool, a, a, (int)t1, d, 1, true, m->gn_w, m->gn_b, hp->gn_eps))
        return TRANSCRIBE_ERR_OOM;
    if (stop == 2) {
        *T_out = (int)t1;
        return TRANSCRIBE_OK;
    }
    tr_conv1d(s->pool, a, d, (int)t1, m->conv1, m->conv_b1, hp->st[1], 0, 0, 1, 1, b);
    tr_ew_gelu(s->pool, b, (long)c1 * t2);
    tr_conv1d(s->pool, b, c1, (int)t2, m->conv2, m->conv_b2, hp->st[2], 0, 0, 1, 1, a);
    tr_ew_gelu(s->pool, a, (long)d * T);
    if (tr_pool_take_failures(s->pool)) {
        TR_ERROR("moonshine: the conv stem failed on %d samples", n);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_transpose(a, s->enc_x, d, T);
    *T_out = T;
    return TRANSCRIBE_OK;
}

transcribe_status tr_mn_stem(mn_session *s, const float *pcm, int n, int stage, const float **out,
                             int *T) {
    *T = 0;
    *out = NULL;
    if (n < s->m->hp.min_samples || stage < 1 || stage > 3) return TRANSCRIBE_ERR_INVALID_ARG;
    if (!grow_enc_bufs(s, n)) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = stem(s, pcm, n, stage, T);
    *out = stage < 3 ? s->stem_a : s->enc_x;
    return st;
}

transcribe_status tr_mn_encode(mn_session *s, const float *pcm, int n, int *T_out, float *cross_k,
                               float *cross_v, bool (*should_abort)(void *), void *abort_user) {
    const mn_model *m = s->m;
    *T_out = 0;
    if (n < m->hp.min_samples) return TRANSCRIBE_ERR_INVALID_ARG;
    if (!grow_enc_bufs(s, n)) {
        TR_ERROR("moonshine: out of memory for %d samples", n);
        return TRANSCRIBE_ERR_OOM;
    }
    int T = 0;
    transcribe_status st = stem(s, pcm, n, 3, &T);
    if (st != TRANSCRIBE_OK) {
        release_transient(s);
        return st;
    }
    for (int l = 0; l < m->hp.n_enc_layers; l++) {
        if (should_abort && should_abort(abort_user)) {
            release_transient(s);
            return TRANSCRIBE_ERR_ABORTED;
        }
        tr_nn_enc_block_fwd(s->pool, &m->enc[l], &m->enc_dims, s->enc_x, T, s->enc_scratch);
    }
    /* the stem's stages and the blocks' scratch are dead now: released
     * before the decoder touches its weights, so they do not add to the
     * run's peak memory (the next run allocates them again) */
    release_transient(s);
    const int d = m->hp.d_model;
    tr_layer_norm(s->pool, s->enc_x, s->enc_x, T, d, m->enc_norm, NULL, 1e-5f);
    if (!cross_k) cross_k = s->cross_k, cross_v = s->cross_v;
    tr_ed_cross_kv(s->pool, &m->msd.dec, s->enc_x, T, cross_k, cross_v, (size_t)T * d);
    *T_out = T;
    return TRANSCRIBE_OK;
}

bool tr_mn_decode(mn_session *s, const int32_t *ids, int rows, int n_past, int T_enc) {
    const mn_model *m = s->m;
    if (rows != 1 || T_enc < 1 || (size_t)T_enc > s->cap_frames ||
        !tr_ed_seq_ok(&m->msd.dec, ids, rows, n_past, m->hp.max_pos))
        return false;
    const tr_ed_seq seq = {.rows = rows,
                           .n_past = n_past,
                           .n_src = T_enc,
                           .kv = &s->kv,
                           .ck = s->cross_k,
                           .cv = s->cross_v,
                           .cross_stride = (size_t)T_enc * (size_t)m->hp.d_model,
                           .ids = ids};
    tr_ed_step(s->pool, &m->msd.dec, 1, &seq, s->dec_x, s->dec_scratch, s->logits);
    return true;
}
