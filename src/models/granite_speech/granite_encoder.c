/* Granite Speech front end (docs/formats/granite_speech.md §5: per-utterance log-mel with 2-frame
 * stacking) and Conformer encoder (§6.1): macaron FFN halves, block-local
 * attention with the Shaw relative-position bias, the GLU / depthwise /
 * folded-BatchNorm conv module, the self-conditioned CTC bypass after the
 * middle block and the cat_hidden_layers concatenation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/granite_speech/granite.h"
#include "tensor/matmul.h"
#include "tensor/ops.h"
#include "util/log.h"

#define GS_LN_EPS 1e-5f

int64_t tr_gs_enc_frames(const gs_model *m, int64_t n_samples) {
    if (n_samples < m->mel.n_fft / 2 + 1) return 0;
    int64_t T_mel = n_samples / m->mel.hop_length; /* the last STFT frame is dropped */
    return T_mel / 2;                              /* an odd trailing frame is dropped */
}

int tr_gs_audio_tokens(const gs_model *m, int64_t T_enc) {
    const int64_t w = m->proj.window;
    return (int)(((T_enc + w - 1) / w) * m->proj.n_query);
}

transcribe_status tr_gs_stacked_mel(const gs_model *m, tr_pool *pool, const float *pcm, int n,
                                    float **x, int *T_enc) {
    *x = NULL;
    *T_enc = 0;
    transcribe_status len_st = tr_mel_check_reflect_len(&m->mel, "granite_speech", n);
    if (len_st != TRANSCRIBE_OK) return len_st;
    float *mel = NULL;
    int T_mel = 0;
    transcribe_status st = tr_mel_compute(&m->mel, pcm, n, pool, &mel, &T_mel);
    if (st) return st;
    const int M = m->mel.n_mels, T = T_mel / 2;
    if (T < 1) {
        free(mel);
        TR_ERROR("granite_speech: %d samples give no stacked frame", n);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    float *out = malloc((size_t)T * 2 * M * sizeof(float));
    if (!out) {
        free(mel);
        return TRANSCRIBE_ERR_OOM;
    }
    /* stacked[t] = frame 2t's bins, then frame 2t+1's */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < 2; h++)
            for (int f = 0; f < M; f++)
                out[(size_t)t * 2 * M + (size_t)h * M + f] = mel[(size_t)f * T_mel + 2 * t + h];
    free(mel);
    *x = out;
    *T_enc = T;
    return TRANSCRIBE_OK;
}

/* Work buffers of one forward pass. */
typedef struct enc_work {
    float *h, *mid, *a, *b, *bias, *rel;
} enc_work;

static void ff_half(tr_pool *pool, const tr_nn_norm *ln, const tr_nn_linear *up,
                    const tr_nn_linear *down, int d, int d_ffn, float *x, int T, enc_work *w) {
    tr_layer_norm(pool, x, w->h, T, d, ln->w, ln->b, GS_LN_EPS);
    tr_nn_linear_fwd(pool, up, w->h, T, w->mid);
    tr_ew_silu(pool, w->mid, (long)T * d_ffn);
    tr_nn_linear_fwd(pool, down, w->mid, T, w->a);
    tr_ew_axpy(pool, x, w->a, 0.5f, (long)T * d);
}

/* Shaw block-local attention (docs/formats/granite_speech.md §6.1.1). Padded rows of the last block
 * are neither queried nor attended, so each block runs on its real rows only. */
static void shaw_attn(const gs_model *m, const gs_enc_block *b, tr_pool *pool, float *x, int T,
                      enc_work *w) {
    const gs_enc_hparams *e = &m->enc;
    const int d = e->d, H = e->n_head, dh = e->head_dim, C = e->ctx;
    const float scale = 1.0f / sqrtf((float)dh);
    tr_layer_norm(pool, x, w->h, T, d, b->norm_attn.w, b->norm_attn.b, GS_LN_EPS);
    float *q = w->a, *kv = w->mid, *att = w->b;
    tr_nn_linear_fwd(pool, &b->q, w->h, T, q);
    tr_nn_linear_fwd(pool, &b->kv, w->h, T, kv);
    for (int r0 = 0; r0 < T; r0 += C) {
        const int n = T - r0 < C ? T - r0 : C, span = 2 * n - 1;
        /* E rows for offsets -(n-1) .. n-1 (|i - j| < n <= context: no clamp) */
        const float *E = b->rel_pos + (size_t)(e->max_pos - (n - 1)) * dh;
        /* The block's query rows split into heads are n·H rows of dh
         * ((i, h) at row i·H + h), so one pooled GEMM gives every head's
         * rel[i][c] = q_i,h · E[c − (n−1)]; then bias_h[i][j] =
         * scale · rel_h[i][i − j + n − 1]. */
        tr_matmul_f32_nt(pool, q + (size_t)r0 * d, dh, E, dh, w->rel, span, n * H, span, dh);
        for (int hd = 0; hd < H; hd++) {
            float *bh = w->bias + (size_t)hd * n * n;
            for (int i = 0; i < n; i++) {
                const float *ri = w->rel + ((size_t)i * H + hd) * span + i + n - 1;
                for (int j = 0; j < n; j++) bh[(size_t)i * n + j] = scale * ri[-j];
            }
        }
        tr_attn_args a = {.q = q + (size_t)r0 * d,
                          .q_stride = d,
                          .k = kv + (size_t)r0 * 2 * d,
                          .v = kv + (size_t)r0 * 2 * d + d,
                          .kv_stride = 2 * d,
                          .out = att + (size_t)r0 * d,
                          .out_stride = d,
                          .n_q = n,
                          .n_kv = n,
                          .kv_valid = n,
                          .n_head = H,
                          .n_head_kv = H,
                          .head_dim = dh,
                          .scale = scale,
                          .pos_bias = w->bias};
        tr_attention(pool, &a);
    }
    tr_nn_linear_fwd(pool, &b->out, att, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

/* Conv module (docs/formats/granite_speech.md §6.1.2): LN, pointwise 1 + GLU, depthwise (BN
 * folded), SiLU, pointwise 2. */
static void conv_module(const gs_model *m, const gs_enc_block *b, tr_pool *pool, float *x, int T,
                        enc_work *w) {
    const gs_enc_hparams *e = &m->enc;
    const int d = e->d, c = e->d_conv;
    tr_layer_norm(pool, x, w->h, T, d, b->norm_conv.w, b->norm_conv.b, GS_LN_EPS);
    tr_nn_linear_fwd(pool, &b->pw1, w->h, T, w->mid); /* [T][2c] */
    tr_ew_glu(pool, w->mid, w->a, T, c);
    tr_nn_depthwise(pool, &b->dw, c, e->kernel, e->kernel / 2, w->a, w->b, T);
    tr_ew_silu(pool, w->b, (long)T * c);
    tr_nn_linear_fwd(pool, &b->pw2, w->b, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

/* Self-conditioned CTC bypass: x += softmax(x·ctc_proj + b)·ctc_bypass + b. */
static void ctc_bypass(const gs_model *m, tr_pool *pool, float *x, int T, enc_work *w) {
    const int d = m->enc.d, V = m->enc.out_dim;
    tr_nn_linear_fwd(pool, &m->ctc_proj, x, T, w->mid);
    tr_softmax(w->mid, T, V, NULL);
    tr_nn_linear_fwd(pool, &m->ctc_bypass, w->mid, T, w->h);
    tr_ew_axpy(pool, x, w->h, 1.0f, (long)T * d);
}

static size_t max3(size_t a, size_t b, size_t c) {
    size_t r = a > b ? a : b;
    return r > c ? r : c;
}

transcribe_status tr_gs_encode(const gs_model *m, tr_pool *pool, const float *in, int T,
                               float **out_p, tr_run_span *progress) {
    *out_p = NULL;
    const gs_enc_hparams *e = &m->enc;
    const int d = e->d, n_parts = 1 + e->n_cat, C = e->ctx;
    const int nb_rows = T < C ? T : C;
    enc_work w = {0};
    const size_t Td = (size_t)T * d;
    const size_t mid = (size_t)T * max3((size_t)e->d_ffn, 2 * (size_t)e->d_conv,
                                        (size_t)(e->out_dim > 2 * d ? e->out_dim : 2 * d));
    const size_t wide = (size_t)T * (e->d_conv > d ? e->d_conv : d);
    float *x = malloc(Td * sizeof(float));
    float *out = malloc(Td * n_parts * sizeof(float));
    w.h = malloc(wide * sizeof(float));
    w.mid = malloc(mid * sizeof(float));
    w.a = malloc(wide * sizeof(float));
    w.b = malloc(wide * sizeof(float));
    w.bias = malloc((size_t)e->n_head * nb_rows * nb_rows * sizeof(float));
    w.rel = malloc((size_t)nb_rows * e->n_head * (2 * nb_rows) * sizeof(float));
    transcribe_status st = TRANSCRIBE_OK;
    if (!x || !out || !w.h || !w.mid || !w.a || !w.b || !w.bias || !w.rel) {
        TR_ERROR("granite_speech: out of memory encoding %d frames", T);
        st = TRANSCRIBE_ERR_OOM;
        goto done;
    }
    tr_nn_linear_fwd(pool, &m->input_linear, in, T, x);
    int part = 0;
    for (int l = 0; l < e->n_layer; l++) {
        const gs_enc_block *b = &m->blocks[l];
        ff_half(pool, &b->norm_ff1, &b->ff1_up, &b->ff1_down, d, e->d_ffn, x, T, &w);
        shaw_attn(m, b, pool, x, T, &w);
        conv_module(m, b, pool, x, T, &w);
        ff_half(pool, &b->norm_ff2, &b->ff2_up, &b->ff2_down, d, e->d_ffn, x, T, &w);
        tr_layer_norm(pool, x, x, T, d, b->norm_post.w, b->norm_post.b, GS_LN_EPS);
        for (int c = 0; c < e->n_cat; c++)
            if (e->cat[c] == l + 1) {
                for (int t = 0; t < T; t++)
                    memcpy(out + (size_t)t * d * n_parts + (size_t)part * d, x + (size_t)t * d,
                           (size_t)d * sizeof(float));
                part++;
            }
        if (l + 1 == e->n_layer / 2) ctc_bypass(m, pool, x, T, &w);
        if (progress) tr_run_span_report(progress, l + 1, e->n_layer);
    }
    if (part != e->n_cat) {
        /* docs/formats/granite_speech.md §12.2: an entry 0 validates but never captures */
        TR_ERROR("granite_speech: cat_hidden_layers captured %d of %d layers", part, e->n_cat);
        st = TRANSCRIBE_ERR_GGUF;
        goto done;
    }
    for (int t = 0; t < T; t++)
        memcpy(out + (size_t)t * d * n_parts + (size_t)part * d, x + (size_t)t * d,
               (size_t)d * sizeof(float));
    *out_p = out;
    out = NULL;
done:
    free(x);
    free(out);
    free(w.h);
    free(w.mid);
    free(w.a);
    free(w.b);
    free(w.bias);
    free(w.rel);
    return st;
}
