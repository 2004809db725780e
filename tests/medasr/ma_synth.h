/* Tiny random MedASR GGUF files for tests: every key of docs/formats/medasr.md §2 and every
 * tensor of §3.1 with deterministic random values (a small vocabulary with the fixed special
 * ids), written with the library's GGUF writer. The linear weights can be stored F16 or
 * Q8_0 (where rows allow, as the quantizer does) and the conv kernels F16. */
#ifndef TR_TEST_MA_SYNTH_H
#define TR_TEST_MA_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "synth.h"
#include "tensor/dtype.h"

typedef struct ma_synth_cfg {
    int n_layers, d, H, F, k, C, n_mels, max_pos;
    int lin_type;  /* TR_F32, TR_F16 or TR_Q8_0 for LIN-class weights whose rows allow it */
    int conv_type; /* TR_F32 or TR_F16 for CONV-class kernels */
    uint32_t seed;
} ma_synth_cfg;

static inline ma_synth_cfg ma_synth_default(void) {
    ma_synth_cfg c = {.n_layers = 2,
                      .d = 32,
                      .H = 4,
                      .F = 64,
                      .k = 4, /* even, as the published 32: padding 1 before, 2 after */
                      .C = 16,
                      .n_mels = 16,
                      .max_pos = 100, /* 4 s: the long-input warning is cheap to reach */
                      .lin_type = TR_F32,
                      .conv_type = TR_F32,
                      .seed = 7};
    return c;
}

/* The vocabulary: the four fixed specials, word pieces, a byte piece. */
/* U+2581 then the rest (separate literals: a hex escape would swallow a following a-f) */
#define MA_W "\xE2\x96\x81"
static const char *const k_ma_pieces[] = {
    "<epsilon>", "<s>",      "</s>", "<unk>",  MA_W "the", MA_W "a", "s",      MA_W "cat",
    "ed",        MA_W "dog", "ing",  MA_W "x", "y",        MA_W "z", "<0x41>", "t",
};
#define MA_SYNTH_V ((int)(sizeof k_ma_pieces / sizeof k_ma_pieces[0]))

static inline void ma_synth_lin(tr_synth_w *s, const ma_synth_cfg *c, const char *name, int64_t in,
                                int64_t out) {
    const int64_t ne[2] = {in, out};
    tr_synth_tensor(s, name, c->lin_type, 2, ne, 1.0f / sqrtf((float)in), 0.0f);
}

static inline void ma_synth_conv(tr_synth_w *s, const ma_synth_cfg *c, const char *name, int64_t k,
                                 int64_t in, int64_t out, float scale) {
    const int64_t ne[3] = {k, in, out};
    tr_synth_tensor(s, name, c->conv_type, 3, ne, scale, 0.0f);
}

static inline bool ma_synth_keys(gguf_writer *w, const ma_synth_cfg *c) {
    bool ok = true;
#define U(k, v) ok = ok && tr_gguf_writer_set_u32(w, k, (uint32_t)(v))
#define F(k, v) ok = ok && tr_gguf_writer_set_f32(w, k, (float)(v))
#define S(k, v) ok = ok && tr_gguf_writer_set_str(w, k, v)
#define B(k, v) ok = ok && tr_gguf_writer_set_bool(w, k, v)
    S("general.architecture", "medasr");
    S("general.name", "MedASR tiny synthetic");
    U("general.file_type", 0);
    const char *const en[] = {"en"};
    ok = ok && tr_gguf_writer_set_arr_str(w, "general.languages", en, 1);
    S("stt.variant", "medasr");
    B("stt.capability.translate", false);
    B("stt.capability.lang_detect", false);
    B("stt.capability.streaming", false);
    B("stt.capability.word_timestamps", false);
    B("stt.capability.speaker_diarization", false);
    S("tokenizer.ggml.model", "bpe");
    S("tokenizer.ggml.pre", "medasr");
    U("tokenizer.ggml.bos_token_id", 1);
    U("tokenizer.ggml.eos_token_id", 2);
    U("tokenizer.ggml.unknown_token_id", 3);
    U("tokenizer.ggml.blank_token_id", 0);
    U("tokenizer.ggml.padding_token_id", 0);
#define E "stt.medasr.encoder."
    U(E "n_layers", c->n_layers);
    U(E "hidden", c->d);
    U(E "n_heads", c->H);
    U(E "n_kv_heads", c->H);
    U(E "head_dim", c->d / c->H);
    U(E "intermediate", c->F);
    S(E "hidden_act", "silu");
    U(E "conv_kernel", c->k);
    F(E "conv_residual_w0", 2.0);
    F(E "conv_residual_w1", 1.0);
    F(E "ff_residual_w0", 1.5);
    F(E "ff_residual_w1", 0.5);
    F(E "layer_norm_eps", 1e-6);
    U(E "max_pos_emb", c->max_pos);
    F(E "batch_norm_momentum", 0.01);
    F(E "rope_theta", 10000.0);
    S(E "rope_type", "default");
    U(E "num_mel_bins", c->n_mels);
    U(E "sub_kernel", 5);
    U(E "sub_stride", 2);
    U(E "sub_channels", c->C);
    U(E "sub_n_layers", 2);
#undef E
    U("stt.medasr.ctc.vocab_size", MA_SYNTH_V);
    U("stt.medasr.ctc.blank_id", 0);
#define FE "stt.frontend."
    S(FE "type", "mel");
    U(FE "sample_rate", 16000);
    U(FE "num_mels", c->n_mels);
    U(FE "n_fft", 512);
    U(FE "win_length", 400);
    U(FE "hop_length", 160);
    S(FE "window", "hann_symmetric");
    S(FE "normalize", "none");
    S(FE "pad_mode", "zero");
    S(FE "mel_norm", "htk");
    F(FE "log_clamp_min", 1e-5);
    F(FE "mel_lower_hz", 125.0);
    F(FE "mel_upper_hz", 7500.0);
#undef FE
    ok = ok && tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", k_ma_pieces, MA_SYNTH_V);
    float scores[MA_SYNTH_V];
    int32_t types[MA_SYNTH_V];
    for (int i = 0; i < MA_SYNTH_V; i++) {
        scores[i] = -(float)i;
        types[i] = i < 3 ? 3 : i == 3 ? 2 : !strncmp(k_ma_pieces[i], "<0x", 3) ? 6 : 1;
    }
    ok = ok && tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", scores, MA_SYNTH_V);
    ok = ok && tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, MA_SYNTH_V);
#undef U
#undef F
#undef S
#undef B
    return ok;
}

/* The tensors of docs/formats/medasr.md §3.1 in the converter's order. */
static inline bool ma_synth_tensors(gguf_writer *w, const ma_synth_cfg *c) {
    tr_synth_w s = {w, c->seed ? c->seed : 1, true};
    const int64_t d = c->d, nm = c->n_mels, nf = 257;
    /* filterbank [n_freq][n_mels]: non-negative weights; window: symmetric Hann */
    {
        float *fb = calloc((size_t)(nm * nf), sizeof(float));
        float win[400];
        if (!fb) return false;
        for (int64_t f = 1; f < nf; f++)
            for (int64_t m = 0; m < nm; m++) {
                double centre = 4.0 + 15.0 * (double)m, dist = fabs((double)f - centre) / 12.0;
                fb[f * nm + m] = dist < 1.0 ? (float)(1.0 - dist) : 0.0f;
            }
        for (int j = 0; j < 400; j++) win[j] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * j / 399.0));
        const int64_t ne_fb[2] = {nm, nf}, ne_w[1] = {400};
        s.ok = tr_gguf_writer_add_tensor(w, "frontend.mel_filterbank", TR_F32, 2, ne_fb, fb) &&
               tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, ne_w, win);
        free(fb);
    }
    ma_synth_lin(&s, c, "enc.subsampling.dense_0.weight", nm, d);
    tr_synth_vec(&s, "enc.subsampling.dense_0.bias", d, 0.1f, 0.0f);
    ma_synth_conv(&s, c, "enc.subsampling.conv_0.weight", 5, d, d, 1.0f / sqrtf(5.0f * d));
    tr_synth_vec(&s, "enc.subsampling.conv_0.bias", d, 0.1f, 0.0f);
    ma_synth_conv(&s, c, "enc.subsampling.conv_1.weight", 5, d, c->C, 1.0f / sqrtf(5.0f * d));
    tr_synth_vec(&s, "enc.subsampling.conv_1.bias", c->C, 0.1f, 0.0f);
    ma_synth_lin(&s, c, "enc.subsampling.dense_1.weight", c->C, d);
    tr_synth_vec(&s, "enc.subsampling.dense_1.bias", d, 0.1f, 0.0f);
    tr_synth_vec(&s, "enc.out_norm.weight", d, 0.2f, 1.0f);
    ma_synth_conv(&s, c, "ctc.proj.weight", 1, d, MA_SYNTH_V, 1.0f / sqrtf((float)d));
    tr_synth_vec(&s, "ctc.proj.bias", MA_SYNTH_V, 0.5f, 0.0f);
    char name[96];
    for (int l = 0; l < c->n_layers && s.ok; l++) {
#define NM(suffix) (snprintf(name, sizeof name, "enc.blocks.%d." suffix, l), name)
        tr_synth_vec(&s, NM("norm_ff1.weight"), d, 0.2f, 1.0f);
        ma_synth_lin(&s, c, NM("ff1_up.weight"), d, c->F);
        ma_synth_lin(&s, c, NM("ff1_down.weight"), c->F, d);
        tr_synth_vec(&s, NM("norm_attn.weight"), d, 0.2f, 1.0f);
        ma_synth_lin(&s, c, NM("attn_q.weight"), d, d);
        ma_synth_lin(&s, c, NM("attn_k.weight"), d, d);
        ma_synth_lin(&s, c, NM("attn_v.weight"), d, d);
        ma_synth_lin(&s, c, NM("attn_o.weight"), d, d);
        tr_synth_vec(&s, NM("norm_conv.weight"), d, 0.2f, 1.0f);
        ma_synth_conv(&s, c, NM("conv_pointwise1.weight"), 1, d, 2 * d, 1.0f / sqrtf((float)d));
        {
            /* the depthwise kernel stays F32 in derived files (docs/formats/medasr.md §3.1) */
            const int64_t ne[3] = {c->k, 1, d};
            tr_synth_tensor(&s, NM("conv_depthwise.weight"), TR_F32, 3, ne,
                            1.0f / sqrtf((float)c->k), 0.0f);
        }
        tr_synth_vec(&s, NM("conv_bn.weight"), d, 0.2f, 1.0f);
        tr_synth_vec(&s, NM("conv_bn.bias"), d, 0.1f, 0.0f);
        tr_synth_vec(&s, NM("conv_bn.running_mean"), d, 0.1f, 0.0f);
        tr_synth_vec(&s, NM("conv_bn.running_var"), d, 0.4f, 1.0f);
        ma_synth_conv(&s, c, NM("conv_pointwise2.weight"), 1, d, d, 1.0f / sqrtf((float)d));
        tr_synth_vec(&s, NM("norm_ff2.weight"), d, 0.2f, 1.0f);
        ma_synth_lin(&s, c, NM("ff2_up.weight"), d, c->F);
        ma_synth_lin(&s, c, NM("ff2_down.weight"), c->F, d);
        tr_synth_vec(&s, NM("norm_post.weight"), d, 0.2f, 1.0f);
#undef NM
    }
    return s.ok;
}

/* Writes the file; false on failure. */
static inline bool ma_synth_write(const char *path, const ma_synth_cfg *c) {
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w && ma_synth_keys(w, c) && ma_synth_tensors(w, c) &&
              tr_gguf_writer_write(w, path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

#endif
