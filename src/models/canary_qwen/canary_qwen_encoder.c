/* Canary-Qwen front end and encoder: the NeMo log-mel with the file's baked
 * filterbank and window (docs/formats/canary_qwen.md §4), the shared
 * FastConformer (§5; Canary's flavor, src/nn/fastconformer.h) and the
 * perception projection to the LM width. */
#include <stdlib.h>

#include "models/canary_qwen/canary_qwen.h"
#include "util/log.h"
#include "util/timer.h"

int64_t tr_cq_enc_frames(const cq_model *m, int64_t n_samples) {
    if (n_samples < 0 || m->mel.hop_length <= 0) return 0;
    const int64_t T_mel = n_samples / m->mel.hop_length + 1;
    const int64_t f = (int64_t)1 << m->enc_hp.sub_stages; /* 8: ceil(T_mel / 8) */
    return (T_mel + f - 1) / f;
}

transcribe_status tr_cq_log_mel(const cq_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel) {
    *mel = NULL;
    *T_mel = 0;
    if ((int64_t)n < m->mel.n_fft / 2 + 1) {
        TR_ERROR("canary_qwen: %d samples are too short (reflect padding needs at least %d)", n,
                 m->mel.n_fft / 2 + 1);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return tr_mel_compute_min(&m->mel, "canary_qwen", pcm, n, pool, 2, mel, T_mel);
}

transcribe_status tr_cq_encode(const cq_model *m, tr_pool *pool, tr_fc_work *w, const float *mel,
                               int T_mel, float **audio, int *T_enc, tr_fc_abort_fn abort_fn,
                               void *abort_user, double *enc_ms, double *proj_ms) {
    *audio = NULL;
    *T_enc = 0;
    const int T = tr_fc_out_frames(m->enc, T_mel);
    if (T < 1) {
        TR_ERROR("canary_qwen: %d mel frames give no encoder frames", T_mel);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    const size_t d = (size_t)m->enc_hp.d_model, h = (size_t)m->lm.d_model;
    float *enc = malloc((size_t)T * d * sizeof(float));
    float *out = malloc((size_t)T * h * sizeof(float));
    if (!enc || !out) {
        free(enc);
        free(out);
        TR_ERROR("canary_qwen: out of memory for %d encoder frames", T);
        return TRANSCRIBE_ERR_OOM;
    }
    double t0 = tr_time_ms();
    transcribe_status st =
        tr_fc_forward(m->enc, pool, w, mel, T_mel, enc, NULL, abort_fn, abort_user);
    double t1 = tr_time_ms();
    /* audio[t] = W_proj · enc[t] + b_proj (docs/formats/canary_qwen.md §5) */
    if (st == TRANSCRIBE_OK) tr_nn_linear_fwd(pool, &m->proj, enc, T, out);
    double t2 = tr_time_ms();
    if (enc_ms) *enc_ms = t1 - t0;
    if (proj_ms) *proj_ms = t2 - t1;
    free(enc);
    if (st != TRANSCRIBE_OK) {
        free(out);
        return st;
    }
    *audio = out;
    *T_enc = T;
    return TRANSCRIBE_OK;
}
