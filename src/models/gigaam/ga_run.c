/* The offline run (docs/formats/gigaam.md §4–§6): HTK log-mel, two stride-2 Conv1d, the
 * rotary Conformer stack (nn/conformer.h), then the CTC or transducer head
 * and the result rows. One encoder pass over the whole input: there is no
 * window (§8). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "models/gigaam/gigaam.h"
#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"
#include "util/timer.h"

int tr_ga_mel_frames(const ga_model *m, int64_t n) {
    if (n < m->mel.win_length) return 0;
    return (int)((n - m->mel.win_length) / m->mel.hop_length + 1);
}

int tr_ga_enc_frames(int T_mel) {
    const int T1 = (T_mel - 1) / 2 + 1; /* docs/formats/gigaam.md §5.1: two ceil-halvings */
    return T_mel < 1 ? 0 : (T1 - 1) / 2 + 1;
}

transcribe_status tr_ga_mel(const ga_model *m, tr_pool *pool, const float *pcm, int64_t n,
                            float **mel, int *T_mel) {
    transcribe_status st = tr_mel_compute(&m->mel, pcm, n, pool, mel, T_mel);
    if (st) return st;
    /* docs/formats/gigaam.md §4: ln(min(max(E, 1e-9), 1e9)); the lower clamp is the front
     * end's, the upper one (never reached by audio in [-1, 1]) is applied here */
    const float top = logf(GA_LOG_MAX);
    float *x = *mel;
    for (size_t i = 0; i < (size_t)*T_mel * (size_t)m->mel.n_mels; i++)
        if (x[i] > top) x[i] = top;
    return TRANSCRIBE_OK;
}

/* Output frames of one im2col chunk of the stem convs: 128 × 5 × 768
 * floats is under 2 MB whatever the input length. */
#define GA_STEM_CHUNK 128

/* One stride-2 stem conv as a product with the kernel itself: the
 * {k, c_in, c_out} kernel is, row by row, the {c_in·k, c_out} linear
 * weight of im2col rows X[t][i·k + j] = x(i, 2t + j − p), so tr_matmul
 * reads it in its stored type (no packed F32 copy of the 768 × 3840 kernel
 * kept by the pool) and writes time-major rows y [T_out][c_out]; x is
 * channel-major [c_in][T_in] or time-major [T_in][c_in]. Zero padding p =
 * (k − 1)/2; then bias and ReLU. */
static bool stem_conv(tr_pool *pool, const tr_tensor *w, const float *b, const float *x,
                      bool x_time_major, int c_in, int T_in, int k, float *y, int T_out) {
    const int p = (k - 1) / 2, c_out = (int)w->ne[2];
    const int K = c_in * k;
    tr_tensor lin = *w;
    lin.n_dims = 2;
    lin.ne[0] = K;
    lin.ne[1] = c_out;
    lin.ne[2] = lin.ne[3] = 1;
    lin.nb1 = tr_row_bytes(w->type, K);
    const int chunk = T_out < GA_STEM_CHUNK ? T_out : GA_STEM_CHUNK;
    float *X = malloc(sizeof(float) * (size_t)chunk * (size_t)K);
    if (!X) return false;
    for (int t0 = 0; t0 < T_out; t0 += chunk) {
        const int rows = T_out - t0 < chunk ? T_out - t0 : chunk;
        for (int r = 0; r < rows; r++) {
            float *row = X + (size_t)r * K;
            for (int j = 0; j < k; j++) {
                const int src = 2 * (t0 + r) + j - p;
                const bool in = src >= 0 && src < T_in;
                for (int i = 0; i < c_in; i++)
                    row[(size_t)i * k + j] = !in            ? 0.0f
                                             : x_time_major ? x[(size_t)src * c_in + i]
                                                            : x[(size_t)i * T_in + src];
            }
        }
        tr_matmul(pool, &lin, b, X, rows, K, y + (size_t)t0 * c_out, c_out);
    }
    free(X);
    tr_ew_relu(pool, y, (long)T_out * c_out);
    return true;
}

/* docs/formats/gigaam.md §5.1: y = relu(conv(x)) twice, stride 2, padding (k − 1) / 2;
 * out is [T_enc][d] (time-major). */
static transcribe_status subsample(const ga_model *m, tr_pool *pool, const float *mel, int T_mel,
                                   float *out) {
    const int d = m->hp.d_model, k = m->hp.subs_kernel, p = (k - 1) / 2;
    const int T1 = tr_conv1d_out_len(T_mel, k, 2, p, p, 1);
    const int T2 = tr_conv1d_out_len(T1, k, 2, p, p, 1);
    float *y1 = malloc(sizeof(float) * (size_t)d * (size_t)T1);
    bool ok = y1 &&
              stem_conv(pool, m->sub0_w, m->sub0_b, mel, false, m->hp.feat_in, T_mel, k, y1, T1) &&
              stem_conv(pool, m->sub2_w, m->sub2_b, y1, true, d, T1, k, out, T2);
    free(y1);
    if (!ok) {
        TR_ERROR("gigaam: out of memory for the subsampling of %d frames", T_mel);
        return TRANSCRIBE_ERR_OOM;
    }
    return TRANSCRIBE_OK;
}

/* frees own[0 .. n) (the mels, or NULL: borrowed) and clears them */
static void drop(float **own, int n) {
    for (int i = 0; own && i < n; i++) {
        free(own[i]);
        own[i] = NULL;
    }
}

/* tr_ga_encode; own (the same mels, or NULL) is freed once subsampled */
static transcribe_status encode(const ga_model *m, tr_pool *pool, int n, const float *const *mel,
                                float **own, const int *T_mel, float *out, const ga_taps *taps,
                                bool (*abort)(void *), void *abort_user) {
    static const ga_taps none = {0};
    if (!taps) taps = &none;
    const int d = m->hp.d_model;
    int *seg = malloc(sizeof(int) * (size_t)n);
    if (!seg) {
        drop(own, n);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t rows = 0;
    transcribe_status st = TRANSCRIBE_OK;
    for (int i = 0; i < n && st == TRANSCRIBE_OK; i++) {
        seg[i] = tr_ga_enc_frames(T_mel[i]);
        st = subsample(m, pool, mel[i], T_mel[i], out + rows * d);
        rows += (size_t)seg[i];
    }
    drop(own, n); /* not resident beside the blocks' working memory */
    if (st == TRANSCRIBE_OK && taps->sub_out) memcpy(taps->sub_out, out, sizeof(float) * rows * d);
    float *scratch =
        st == TRANSCRIBE_OK ? malloc(sizeof(float) * tr_cf_scratch(&m->dims, n, seg)) : NULL;
    if (st == TRANSCRIBE_OK && !scratch) {
        TR_ERROR("gigaam: out of memory for %zu encoder rows", rows);
        st = TRANSCRIBE_ERR_OOM;
    }
    for (int l = 0; st == TRANSCRIBE_OK && l < m->hp.n_layers; l++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            break;
        }
        tr_cf_block_fwd(pool, &m->blocks[l], &m->dims, out, n, seg, scratch);
        if (taps->blk_out && taps->blk_out[l])
            memcpy(taps->blk_out[l], out, sizeof(float) * rows * d);
    }
    free(scratch);
    free(seg);
    return st;
}

transcribe_status tr_ga_encode(const ga_model *m, tr_pool *pool, int n, const float *const *mel,
                               const int *T_mel, float *out, const ga_taps *taps,
                               bool (*abort)(void *), void *abort_user) {
    return encode(m, pool, n, mel, NULL, T_mel, out, taps, abort, abort_user);
}

transcribe_status tr_ga_encode_take(const ga_model *m, tr_pool *pool, int n, float **mel,
                                    const int *T_mel, float *out, bool (*abort)(void *),
                                    void *abort_user) {
    return encode(m, pool, n, (const float *const *)mel, mel, T_mel, out, NULL, abort, abort_user);
}

transcribe_status tr_ga_validate_run(const ga_model *m, const struct transcribe_run_params *p) {
    (void)m;
    return tr_family_check_transcribe_only("gigaam", p);
}

/* Encoder output → tokens through the model's head. */
static transcribe_status decode(const ga_model *m, tr_pool *pool, const float *enc, int T,
                                ga_tok **toks, int *n, bool (*abort)(void *), void *user) {
    *toks = NULL;
    *n = 0;
    if (m->head == GA_HEAD_RNNT)
        return tr_ga_rnnt_greedy(m, pool, enc, T, toks, n, NULL, abort, user);
    const int C = m->hp.n_classes;
    float *logp = malloc(sizeof(float) * (size_t)T * (size_t)C);
    ga_tok *t = malloc(sizeof(ga_tok) * (size_t)(T > 0 ? T : 1));
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (logp && t) {
        st = tr_ga_ctc_logprobs(m, pool, enc, T, NULL, logp);
        if (st == TRANSCRIBE_OK) *n = tr_ga_ctc_greedy(m, logp, T, t);
    }
    free(logp);
    if (st) {
        free(t);
        return st;
    }
    *toks = t;
    return TRANSCRIBE_OK;
}

transcribe_status tr_ga_run(ga_session *s, const float *pcm, int n_samples, tr_run_ctx *ctx) {
    const ga_model *m = s->m;
    if (tr_run_should_abort(ctx)) return TRANSCRIBE_ERR_ABORTED;
    transcribe_status st = tr_family_gate_whole("gigaam", pcm, n_samples, m->mel.win_length,
                                                m->mel.sample_rate, GA_MAX_AUDIO_MS);
    if (st != TRANSCRIBE_OK) return st;
    float *owned = NULL, *mel = NULL, *enc = NULL;
    ga_tok *toks = NULL;
    const float *x = tr_pcm_sanitized(pcm, n_samples, "gigaam", &owned);
    if (!x) return TRANSCRIBE_ERR_OOM;
    double t0 = tr_time_ms();
    int T_mel = 0, n = 0;
    st = tr_ga_mel(m, s->pool, x, n_samples, &mel, &T_mel);
    double t1 = tr_time_ms();
    ctx->result->mel_ms = (float)(t1 - t0);
    if (st) goto done;
    tr_run_report_progress(ctx, 0.05);
    const int T = tr_ga_enc_frames(T_mel);
    enc = malloc(sizeof(float) * (size_t)T * (size_t)m->hp.d_model);
    if (!enc) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    st =
        tr_ga_encode_take(m, s->pool, 1, &mel, &T_mel, enc, tr_run_abort_poll, ctx); /* frees mel */
    double t2 = tr_time_ms();
    ctx->result->encode_ms = (float)(t2 - t1);
    if (st) goto done;
    tr_run_report_progress(ctx, 0.9);
    st = decode(m, s->pool, enc, T, &toks, &n, tr_run_abort_poll, ctx);
    if (st == TRANSCRIBE_OK) st = tr_ga_build_result(m, toks, n, ctx->params, ctx->result);
    tr_run_end_decode(ctx, st, t2);
    if (st == TRANSCRIBE_OK) tr_run_report_progress(ctx, 1.0);
done:
    free(owned);
    free(mel);
    free(enc);
    free(toks);
    return st;
}

/* the session keeps only the pool: n_ctx and kv_type mean nothing here (docs/formats/gigaam.md §8)
 */
TR_FAMILY_POOL_SESSION(ga)
