/* Front end (docs/formats/medasr.md §4), subsampler (§5.1), the Conformer stack (§5.2, through
 * nn/conformer.h), the output norm and the CTC head (§5.3, §6.1). Several utterances run packed
 * one after another (no padding, so no masks): the subsampler per utterance, the blocks with
 * each utterance as one segment, so every utterance's rows are its single run's. */
#include <stdlib.h>
#include <string.h>

#include "models/medasr/medasr.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

int tr_ma_mel_frames(const ma_model *m, int64_t n) {
    const tr_mel_config *c = &m->mel;
    if (n < c->win_length) return 0;
    int64_t t = (n - c->win_length) / c->hop_length + 1;
    return t > INT32_MAX ? INT32_MAX : (int)t;
}

int tr_ma_enc_frames(const ma_model *m, int T_mel) {
    const int k = m->hp.sub_kernel;
    if (T_mel < k) return 0;
    const int T1 = (T_mel - k) / 2 + 1;
    return T1 < k ? 0 : (T1 - k) / 2 + 1;
}

transcribe_status tr_ma_features(const ma_model *m, tr_pool *pool, const float *pcm, int64_t n,
                                 float **feats, int *T_mel) {
    *feats = NULL;
    *T_mel = 0;
    float *fm = NULL; /* mel-major [n_mels][T] */
    int T = 0;
    transcribe_status st = tr_mel_compute(&m->mel, pcm, n, pool, &fm, &T);
    if (st) return st;
    float *out = malloc(sizeof(float) * (size_t)T * (size_t)m->mel.n_mels);
    if (!out) {
        free(fm);
        return TRANSCRIBE_ERR_OOM;
    }
    tr_transpose(fm, out, m->mel.n_mels, T);
    free(fm);
    *feats = out;
    *T_mel = T;
    return TRANSCRIBE_OK;
}

/* Output rows of one im2col product (at most). */
#define MA_CONV_CHUNK 64
/* Encoder rows the subsampler makes per pass: its buffers are a fixed size, whatever the
 * input's length. */
#define MA_SUB_ROWS 64

/* rows split into the fewest pieces of at most `most` rows, as even as possible (so no piece is
 * a sliver that would take the GEMM's few-row path): piece i is [*r0, *r0 + *n) */
static int n_pieces(int rows, int most) {
    return (rows + most - 1) / most;
}

static void piece_at(int rows, int np, int i, int *r0, int *n) {
    const int base = rows / np, extra = rows % np;
    *r0 = i * base + (i < extra ? i : extra);
    *n = base + (i < extra ? 1 : 0);
}

/* y[t][o] = relu(b[o] + sum_{i,j} W[o][i][j] · x[2t + j][i]) for t < T_out: a stride-2,
 * unpadded Conv1d over time on time-major rows, as im2col pieces times the kernel viewed as a
 * {k·c_in, c_out} matrix (row o holds W[o][i][j] at i·k + j). X: MA_CONV_CHUNK·k·c_in floats. */
static void conv_s2(tr_pool *pool, const tr_tensor *w, const float *b, int k, int c_in,
                    const float *x, int T_out, float *y, float *X) {
    const int c_out = (int)w->ne[1], K = k * c_in, np = n_pieces(T_out, MA_CONV_CHUNK);
    for (int p = 0; p < np; p++) {
        int t0, rows;
        piece_at(T_out, np, p, &t0, &rows);
        for (int r = 0; r < rows; r++) {
            const float *src = x + (size_t)(2 * (t0 + r)) * c_in;
            float *dst = X + (size_t)r * K;
            for (int j = 0; j < k; j++)
                for (int i = 0; i < c_in; i++) dst[(size_t)i * k + j] = src[(size_t)j * c_in + i];
        }
        tr_matmul(pool, w, b, X, rows, K, y + (size_t)t0 * c_out, c_out);
    }
    tr_ew_relu(pool, y, (long)T_out * c_out);
}

/* Input rows a stride-2 unpadded conv of width k reads for n output rows. */
static int s2_in(int n, int k) {
    return 2 * (n - 1) + k;
}

/* Floats of subsample's work: for MA_SUB_ROWS encoder rows, the dense_0 rows, the first conv's
 * rows, the second conv's and the im2col buffer. */
static size_t sub_work(const ma_hparams *hp) {
    const int k = hp->sub_kernel, n1 = s2_in(MA_SUB_ROWS, k), na = s2_in(n1, k);
    return (size_t)na * hp->d_model + (size_t)n1 * hp->d_model + (size_t)MA_SUB_ROWS * hp->sub_c +
           (size_t)MA_CONV_CHUNK * k * hp->d_model;
}

/* docs/formats/medasr.md §5.1 for one utterance: T_mel frames → T_enc rows of x, in passes of at
 * most MA_SUB_ROWS encoder rows, each from the mel rows it reads (a few rows of overlap are
 * computed twice), so work is sub_work floats. */
static void subsample(tr_pool *pool, const ma_model *m, const float *mel, int T_mel, float *x,
                      float *work) {
    const int d = m->hp.d_model, C = m->hp.sub_c, k = m->hp.sub_kernel, M = m->hp.n_mels;
    const int T_enc = tr_ma_enc_frames(m, T_mel), np = n_pieces(T_enc, MA_SUB_ROWS);
    const int n1_max = s2_in(MA_SUB_ROWS, k), na_max = s2_in(n1_max, k);
    float *a = work, *c0 = a + (size_t)na_max * d, *c1 = c0 + (size_t)n1_max * d;
    float *X = c1 + (size_t)MA_SUB_ROWS * C;
    for (int p = 0; p < np; p++) {
        int e0, ne;
        piece_at(T_enc, np, p, &e0, &ne);
        const int n1 = s2_in(ne, k), na = s2_in(n1, k); /* c0 rows from 2·e0, a rows from 4·e0 */
        tr_nn_linear_fwd(pool, &m->dense0, mel + (size_t)4 * e0 * M, na, a);
        tr_ew_relu(pool, a, (long)na * d);
        conv_s2(pool, &m->conv0_view, m->conv0_b, k, d, a, n1, c0, X);
        conv_s2(pool, &m->conv1_view, m->conv1_b, k, d, c0, ne, c1, X);
        tr_nn_linear_fwd(pool, &m->dense1, c1, ne, x + (size_t)e0 * d); /* no activation */
    }
}

static void tap(float *dst, const float *src, size_t n) {
    if (dst) memcpy(dst, src, n * sizeof(float));
}

/* Rows of logits per pass of head_best. */
#define MA_HEAD_ROWS 512

/* The output norm and the CTC head over x [R][d] (the norm in place) in passes of at most
 * MA_HEAD_ROWS rows, keeping each frame's argmax: the rows' bits are one pass's. */
static transcribe_status head_best(const ma_model *m, tr_pool *pool, float *x, int R,
                                   int32_t *best) {
    const int d = m->hp.d_model, V = m->hp.n_vocab, np = n_pieces(R, MA_HEAD_ROWS);
    float *lg = malloc(sizeof(float) * (size_t)(R < MA_HEAD_ROWS ? R : MA_HEAD_ROWS) * V);
    if (!lg) {
        TR_ERROR("medasr: out of memory for the head over %d rows", R);
        return TRANSCRIBE_ERR_OOM;
    }
    for (int p = 0; p < np; p++) {
        int r0, n;
        piece_at(R, np, p, &r0, &n);
        float *xb = x + (size_t)r0 * d;
        tr_layer_norm(pool, xb, xb, n, d, m->out_norm.w, NULL, m->hp.ln_eps);
        tr_nn_linear_fwd(pool, &m->ctc, xb, n, lg);
        for (int r = 0; r < n; r++) best[r0 + r] = tr_ma_argmax(lg + (size_t)r * V, V);
    }
    free(lg);
    return TRANSCRIBE_OK;
}

/* tr_ma_encode; own (feats, or NULL) is freed once the subsampler has read it; logits, or
 * (logits NULL) each frame's argmax into best */
static transcribe_status encode(const ma_model *m, tr_pool *pool, const float *feats, float *own,
                                int n_seg, const int *seg_T_mel, float *logits, int32_t *best,
                                const ma_taps *taps, bool (*abort)(void *), void *abort_user) {
    static const ma_taps none = {.block_idx = {-1, -1, -1, -1}};
    if (!taps || n_seg != 1) taps = &none;
    const ma_hparams *hp = &m->hp;
    const int d = hp->d_model;
    int *seg_T = malloc(sizeof(int) * (size_t)(n_seg > 0 ? n_seg : 1));
    if (!seg_T) {
        free(own);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t R = 0;
    for (int i = 0; i < n_seg; i++) {
        seg_T[i] = tr_ma_enc_frames(m, seg_T_mel[i]);
        R += (size_t)seg_T[i];
    }
    const size_t work_n = sub_work(hp);
    const size_t cf = tr_cf_scratch(&m->dims, n_seg, seg_T);
    float *x = malloc(sizeof(float) * R * (size_t)d);
    float *work = malloc(sizeof(float) * (work_n > cf ? work_n : cf));
    transcribe_status st = TRANSCRIBE_OK;
    if (!x || !work) {
        TR_ERROR("medasr: out of memory for %zu encoder rows", R);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (abort && abort(abort_user)) {
        st = TRANSCRIBE_ERR_ABORTED;
        goto done;
    }
    size_t off_mel = 0, off = 0;
    for (int i = 0; i < n_seg; i++) {
        subsample(pool, m, feats + off_mel * hp->n_mels, seg_T_mel[i], x + off * d, work);
        off_mel += (size_t)seg_T_mel[i];
        off += (size_t)seg_T[i];
    }
    free(own);
    own = NULL;
    tap(taps->sub_out, x, R * d);
    for (int l = 0; l < hp->n_layers; l++) {
        if (abort && abort(abort_user)) {
            st = TRANSCRIBE_ERR_ABORTED;
            goto done;
        }
        tr_cf_block_fwd(pool, &m->blocks[l], &m->dims, x, n_seg, seg_T, work);
        for (int t = 0; t < 4; t++)
            if (taps->block_idx[t] == l) tap(taps->block_out[t], x, R * d);
    }
    free(work); /* before the logits are written */
    work = NULL;
    if (!logits) {
        st = head_best(m, pool, x, (int)R, best);
        goto done;
    }
    tr_layer_norm(pool, x, x, (int)R, d, m->out_norm.w, NULL, hp->ln_eps);
    tap(taps->norm_out, x, R * d);
    tr_nn_linear_fwd(pool, &m->ctc, x, (int)R, logits);
done:
    free(own);
    free(seg_T);
    free(x);
    free(work);
    return st;
}

transcribe_status tr_ma_encode(const ma_model *m, tr_pool *pool, const float *feats, int n_seg,
                               const int *seg_T_mel, float *logits, const ma_taps *taps,
                               bool (*abort)(void *), void *abort_user) {
    return encode(m, pool, feats, NULL, n_seg, seg_T_mel, logits, NULL, taps, abort, abort_user);
}

transcribe_status tr_ma_encode_take(const ma_model *m, tr_pool *pool, float *feats, int n_seg,
                                    const int *seg_T_mel, int32_t *best, bool (*abort)(void *),
                                    void *abort_user) {
    return encode(m, pool, feats, feats, n_seg, seg_T_mel, NULL, best, NULL, abort, abort_user);
}
