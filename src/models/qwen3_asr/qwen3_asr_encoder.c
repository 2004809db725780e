/* Qwen3-ASR front end (docs/formats/qwen3_asr.md §5: Whisper-style log-mel of the whole clip with
 * the per-utterance clamp) and audio encoder (§6): per 1 s chunk three stride-2 Conv2d + GELU
 * (their weights prepared once per call), conv_out, chunk-local sinusoids; the pad-trimmed rows
 * then go through full (unwindowed, §6.5) bidirectional pre-LN blocks and the ln_post / proj1 /
 * GELU / proj2 head. */
#include <stdlib.h>
#include <string.h>

#include "models/qwen3_asr/qwen3_asr.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

/* conv_out runs over this many chunks at a time (rows = 13 × this). */
#define QA_CHUNK_GROUP 16

static int after_cnn(int L) {
    for (int i = 0; i < 3; i++) L = (L + 1) / 2;
    return L;
}

int64_t tr_qa_enc_frames(const qa_model *m, int64_t n_samples) {
    if (n_samples <= 0) return 0;
    const int64_t T_mel = n_samples / m->mel.hop_length, w = 2 * (int64_t)m->enc.n_window;
    if (T_mel < 1) return 0;
    const int64_t n_chunks = (T_mel + w - 1) / w, last = T_mel - (n_chunks - 1) * w;
    return (n_chunks - 1) * m->per_chunk + after_cnn((int)last);
}

transcribe_status tr_qa_log_mel(const qa_model *m, tr_pool *pool, const float *pcm, int n,
                                float **mel, int *T_mel) {
    *mel = NULL;
    *T_mel = 0;
    transcribe_status len_st = tr_mel_check_reflect_len(&m->mel, "qwen3_asr", n);
    if (len_st != TRANSCRIBE_OK) return len_st;
    return tr_mel_compute(&m->mel, pcm, n, pool, mel, T_mel);
}

/* Conv stack of one chunk: img [1][n_mels][W] → feat [T_c][C·M3]. prepared:
 * the layers' weights made ready once for all chunks; a NULL entry runs
 * the plain conv (which widens and packs that weight per call).
 *
 * (Tried: the chunks of a group side by side in one image, each in a slot
 * with a zero gap re-zeroed after each GELU, one conv call per layer. With
 * the weights prepared once it measured no faster on a 2-core Zen 3: the
 * gap columns cost 4% more conv FLOPs and the larger activations spill
 * the shared L3.) */
static void conv_chunk(const qa_model *m, tr_pool *pool, tr_conv_weight *const prepared[3],
                       const float *img, int W, float *buf_a, float *buf_b, float *feat) {
    const int C = m->enc.conv_ch;
    int h = m->enc.n_mels, w = W, ho, wo;
    const float *in = img;
    float *bufs[2] = {buf_a, buf_b};
    int c_in = 1;
    for (int i = 0; i < 3; i++) {
        float *y = bufs[i & 1];
        if (prepared[i])
            tr_conv2d_prepared(pool, in, c_in, h, w, prepared[i], m->conv_b[i], 2, 2, 1, 1, y, &ho,
                               &wo);
        else
            tr_conv2d(pool, in, c_in, h, w, m->conv_w[i], m->conv_b[i], 2, 2, 1, 1, 1, y, &ho, &wo);
        tr_gelu(y, (long)C * ho * wo);
        in = y;
        c_in = C;
        h = ho;
        w = wo;
    }
    /* feature[c*M3 + f] of time step t = y[c][f][t] (docs/formats/qwen3_asr.md §6.2) */
    const int M3 = h, T = w;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            for (int f = 0; f < M3; f++)
                feat[(size_t)t * C * M3 + (size_t)c * M3 + f] = in[((size_t)c * M3 + f) * T + t];
}

transcribe_status tr_qa_encode(const qa_model *m, tr_pool *pool, const float *mel, int T_mel,
                               float **out, int *T_enc_out, tr_run_span *progress) {
    *out = NULL;
    *T_enc_out = 0;
    const qa_enc_hparams *e = &m->enc;
    const int W = 2 * e->n_window, M = e->n_mels, C = e->conv_ch, d = e->d_model,
              per = m->per_chunk;
    if (T_mel < 1) return TRANSCRIBE_ERR_INVALID_ARG;
    const int n_chunks = (T_mel + W - 1) / W;
    const int T_enc = (int)tr_qa_enc_frames(m, (int64_t)T_mel * m->mel.hop_length);
    const size_t feat_w = (size_t)C * m->m3;
    const size_t conv_a = (size_t)C * ((M + 1) / 2) * ((W + 1) / 2);
    float *img = malloc((size_t)M * W * sizeof(float));
    float *ba = malloc(conv_a * sizeof(float)), *bb = malloc(conv_a * sizeof(float));
    float *feat = malloc((size_t)QA_CHUNK_GROUP * per * feat_w * sizeof(float));
    float *rows = malloc((size_t)QA_CHUNK_GROUP * per * d * sizeof(float));
    float *x = malloc((size_t)T_enc * d * sizeof(float));
    float *y = NULL, *scratch = NULL;
    /* widening the F16 conv weights to F32 and packing them for the GEMM
     * is done once here rather than per chunk (a NULL: done per call) */
    tr_conv_weight *prepared[3];
    for (int i = 0; i < 3; i++)
        prepared[i] = n_chunks > 1 ? tr_conv2d_weight_prepare(pool, m->conv_w[i], 1) : NULL;
    transcribe_status st = TRANSCRIBE_OK;
    if (!img || !ba || !bb || !feat || !rows || !x) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    for (int g0 = 0; g0 < n_chunks; g0 += QA_CHUNK_GROUP) {
        int ng = n_chunks - g0 < QA_CHUNK_GROUP ? n_chunks - g0 : QA_CHUNK_GROUP;
        for (int j = 0; j < ng; j++) {
            int c = g0 + j, t0 = c * W, len = T_mel - t0 < W ? T_mel - t0 : W;
            memset(img, 0, (size_t)M * W * sizeof(float)); /* the zero-padded tail */
            for (int f = 0; f < M; f++)
                memcpy(img + (size_t)f * W, mel + (size_t)f * T_mel + t0,
                       (size_t)len * sizeof(float));
            conv_chunk(m, pool, prepared, img, W, ba, bb, feat + (size_t)j * per * feat_w);
        }
        tr_linear(pool, m->conv_out, NULL, feat, ng * per, rows);
        for (int j = 0; j < ng; j++) {
            int r0 = (g0 + j) * per;
            for (int t = 0; t < per && r0 + t < T_enc; t++) {
                float *dst = x + (size_t)(r0 + t) * d;
                const float *src = rows + ((size_t)j * per + t) * d,
                            *pe = m->pos_emb + (size_t)t * d;
                for (int i = 0; i < d; i++) dst[i] = src[i] + pe[i];
            }
        }
    }
    free(img);
    free(ba);
    free(bb);
    free(feat);
    free(rows);
    img = ba = bb = feat = rows = NULL;
    for (int i = 0; i < 3; i++) {
        tr_conv_weight_free(prepared[i]);
        prepared[i] = NULL;
    }

    scratch = malloc(tr_nn_enc_block_scratch(&m->enc_dims, T_enc) * sizeof(float));
    y = malloc((size_t)T_enc * (d > e->out_dim ? d : e->out_dim) * sizeof(float));
    if (!scratch || !y) {
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    if (progress) tr_run_span_report(progress, 1, e->n_layer + 1);
    for (int l = 0; l < e->n_layer; l++) {
        tr_nn_enc_block_fwd(pool, &m->enc_blocks[l], &m->enc_dims, x, T_enc, scratch);
        if (progress) tr_run_span_report(progress, l + 2, e->n_layer + 1);
    }
    tr_layer_norm(pool, x, x, T_enc, d, m->ln_post.w, m->ln_post.b, 1e-5f);
    tr_nn_linear_fwd(pool, &m->proj1, x, T_enc, scratch);
    tr_gelu(scratch, (long)T_enc * d);
    tr_nn_linear_fwd(pool, &m->proj2, scratch, T_enc, y);
    *out = y;
    y = NULL;
    *T_enc_out = T_enc;
done:
    if (st == TRANSCRIBE_ERR_OOM)
        TR_ERROR("qwen3_asr: out of memory encoding %d mel frames", T_mel);
    free(img);
    free(ba);
    free(bb);
    free(feat);
    free(rows);
    free(x);
    free(y);
    for (int i = 0; i < 3; i++) tr_conv_weight_free(prepared[i]);
    free(scratch);
    return st;
}
