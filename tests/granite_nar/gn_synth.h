/* Tiny random Granite NAR GGUF files for tests: every key of docs/formats/granite_nar.md §2
 * and every tensor of §3 with deterministic random values, written with the library's GGUF
 * writer. The vocabulary is the 256 GPT-2 byte pieces, a few words, <|pad|> and
 * <|end_of_text|> (EOS = BPE-CTC blank, the current snapshot's scheme). Linear weights can be
 * stored F16 or Q8_0 (where rows allow, as the quantizer does). */
#ifndef TR_TEST_GN_SYNTH_H
#define TR_TEST_GN_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "synth.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum {
    GN_S_MELS = 16, /* input_dim 32 */
    GN_S_ENC_L = 2,
    GN_S_D = 32,
    GN_S_H = 4,
    GN_S_OUT = 20, /* char-CTC width */
    GN_S_K = 5,
    GN_S_MAXPOS = 64,
    GN_S_CTX = 20,
    GN_S_P = 32, /* projector width */
    GN_S_PL = 2,
    GN_S_PH = 4,
    GN_S_BLOCK = 15,
    GN_S_DS = 5,
    GN_S_LM_L = 2,
    GN_S_LM_D = 48,
    GN_S_LM_F = 96,
    GN_S_LM_H = 4,
    GN_S_LM_KV = 2,
    GN_S_LM_HD = 12,
    GN_S_N_WORDS = 14,
    GN_S_V = 256 + GN_S_N_WORDS + 2, /* bytes, words, <|pad|>, <|end_of_text|> */
    GN_S_PAD = GN_S_V - 2,
    GN_S_EOS = GN_S_V - 1,
};

static const char *const k_gn_words[GN_S_N_WORDS] = {" the", " cat", " sat",  " on",   " mat",
                                                     " ask", " not", " what", " your", " country",
                                                     " can", " do",  " for",  " you"};

typedef struct gn_synth_cfg {
    int lin_type; /* TR_F32, TR_F16 or TR_Q8_0 for LIN-class weights whose rows allow it */
    uint32_t seed;
    int max_pos; /* text.max_position_embeddings */
} gn_synth_cfg;

static inline gn_synth_cfg gn_synth_default(void) {
    gn_synth_cfg c = {.lin_type = TR_F32, .seed = 11, .max_pos = 512};
    return c;
}

/* stem.weight {in, out} (LIN) and, when bias, stem.bias [out] */
static inline void gn_synth_lin(tr_synth_w *s, const gn_synth_cfg *c, const char *stem, int64_t in,
                                int64_t out, bool bias) {
    char name[160];
    const int64_t ne[2] = {in, out};
    snprintf(name, sizeof name, "%s.weight", stem);
    tr_synth_tensor(s, name, c->lin_type, 2, ne, 1.5f / sqrtf((float)in), 0.0f);
    if (bias) {
        snprintf(name, sizeof name, "%s.bias", stem);
        tr_synth_vec(s, name, out, 0.1f, 0.0f);
    }
}

static inline void gn_synth_norm(tr_synth_w *s, const char *stem, int64_t d) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", stem);
    tr_synth_vec(s, name, d, 0.2f, 1.0f);
    snprintf(name, sizeof name, "%s.bias", stem);
    tr_synth_vec(s, name, d, 0.1f, 0.0f);
}

static inline bool gn_synth_keys(gguf_writer *w, const gn_synth_cfg *c) {
    bool ok = true;
#define U(k, v) ok = ok && tr_gguf_writer_set_u32(w, k, (uint32_t)(v))
#define F(k, v) ok = ok && tr_gguf_writer_set_f32(w, k, (float)(v))
#define S(k, v) ok = ok && tr_gguf_writer_set_str(w, k, v)
#define B(k, v) ok = ok && tr_gguf_writer_set_bool(w, k, v)
    S("general.architecture", "granite_speech_nar");
    S("general.name", "Granite Speech NAR tiny synthetic");
    U("general.file_type", 0);
    const char *const langs[] = {"en", "fr", "de", "es", "pt"};
    ok = ok && tr_gguf_writer_set_arr_str(w, "general.languages", langs, 5);
    S("stt.variant", "granite-speech-4.1-2b-nar");
    B("stt.capability.translate", false);
    B("stt.capability.lang_detect", false);
    B("stt.capability.word_timestamps", false);
    B("stt.capability.speaker_diarization", false);
    S("tokenizer.ggml.model", "gpt2");
    S("tokenizer.ggml.pre", "granite");
    U("tokenizer.ggml.eos_token_id", GN_S_EOS);
    U("tokenizer.ggml.bos_token_id", GN_S_EOS);
    U("tokenizer.ggml.padding_token_id", GN_S_PAD);
    const char *chars[GN_S_OUT];
    char cbuf[GN_S_OUT][2];
    for (int i = 0; i < GN_S_OUT; i++) {
        cbuf[i][0] = i == 0 ? 0 : (char)('a' + i - 1);
        cbuf[i][1] = 0;
        chars[i] = cbuf[i];
    }
    ok = ok && tr_gguf_writer_set_arr_str(w, "stt.granite_nar.ctc_chars", chars, GN_S_OUT);
#define E "stt.granite_nar.encoder."
    U(E "n_layers", GN_S_ENC_L);
    U(E "hidden", GN_S_D);
    U(E "n_heads", GN_S_H);
    U(E "head_dim", GN_S_D / GN_S_H);
    U(E "input_dim", 2 * GN_S_MELS);
    U(E "output_dim", GN_S_OUT);
    U(E "bpe_output_dim", GN_S_V);
    U(E "bpe_pool_window", 4);
    U(E "bpe_blank_id", GN_S_EOS);
    U(E "self_cond_layer", GN_S_ENC_L / 2);
    U(E "feedforward_mult", 2);
    U(E "conv_kernel_size", GN_S_K);
    U(E "conv_expansion", 2);
    U(E "max_pos_emb", GN_S_MAXPOS);
    U(E "context_size", GN_S_CTX);
    const int32_t li[2] = {1, -1};
    ok = ok && tr_gguf_writer_set_arr_i32(w, E "layer_indices", li, 2);
#undef E
#define P "stt.granite_nar.projector."
    U(P "n_layers", GN_S_PL);
    U(P "hidden", GN_S_P);
    U(P "mlp_ratio", 2);
    U(P "n_heads", GN_S_PH);
    U(P "encoder_dim", GN_S_D);
    U(P "num_encoder_layers", 2);
    U(P "block_size", GN_S_BLOCK);
    U(P "downsample_rate", GN_S_DS);
    U(P "llm_dim", GN_S_LM_D);
    F(P "layernorm_eps", 1e-6);
    B(P "attn_bias", true);
    B(P "mlp_bias", true);
#undef P
    B("stt.granite_nar.scale_projected_embeddings", true);
#define T "stt.granite_nar.text."
    U(T "n_layers", GN_S_LM_L);
    U(T "hidden", GN_S_LM_D);
    U(T "intermediate", GN_S_LM_F);
    U(T "n_heads", GN_S_LM_H);
    U(T "n_kv_heads", GN_S_LM_KV);
    U(T "head_dim", GN_S_LM_HD);
    S(T "hidden_act", "silu");
    F(T "rms_norm_eps", 1e-5);
    F(T "rope_theta", 10000.0);
    U(T "max_position_embeddings", c->max_pos);
    B(T "tie_word_embeddings", true);
    U(T "vocab_size", GN_S_V);
    F(T "embedding_multiplier", 12.0);
    F(T "logits_scaling", 8.0);
    F(T "attention_multiplier", 1.0 / GN_S_LM_HD);
    F(T "residual_multiplier", 0.02); /* small: the tied head reads back each slot's own token */
    U(T "bos_id", GN_S_EOS);
    U(T "eos_id", GN_S_EOS);
    U(T "pad_id", GN_S_PAD);
#undef T
#define FE "stt.frontend."
    S(FE "type", "mel");
    U(FE "sample_rate", 16000);
    U(FE "num_mels", GN_S_MELS);
    U(FE "n_fft", 512);
    U(FE "win_length", 400);
    U(FE "hop_length", 160);
    S(FE "window", "hann_periodic");
    S(FE "normalize", "per_utterance");
    S(FE "pad_mode", "reflect");
    S(FE "mel_norm", "htk");
#undef FE
    /* the vocabulary: GPT-2 byte pieces, words, specials */
    char *tok[GN_S_V];
    int32_t types[GN_S_V];
    for (int i = 0; i < GN_S_V; i++) {
        unsigned char b = (unsigned char)i;
        tok[i] = i < 256 ? tr_gpt2_piece_from_bytes(&b, 1)
                 : i < 256 + GN_S_N_WORDS
                     ? tr_gpt2_piece_from_bytes(k_gn_words[i - 256], strlen(k_gn_words[i - 256]))
                 : i == GN_S_PAD ? strdup("<|pad|>")
                                 : strdup("<|end_of_text|>");
        types[i] = i >= GN_S_PAD ? 3 : 1;
        ok = ok && tok[i];
    }
    ok = ok &&
         tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, GN_S_V);
    ok = ok && tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, GN_S_V);
    for (int i = 0; i < GN_S_V; i++) free(tok[i]);
#undef U
#undef F
#undef S
#undef B
    return ok;
}

/* The tensors of docs/formats/granite_nar.md §3 in the converter's order. */
static inline bool gn_synth_tensors(gguf_writer *w, const gn_synth_cfg *c) {
    tr_synth_w s = {w, c->seed ? c->seed : 1, true};
    const int64_t d = GN_S_D, nm = GN_S_MELS, nf = 257, F = 2 * d, cc = 2 * d;
    {
        /* triangular filters and a periodic Hann window */
        float *fb = calloc((size_t)(nm * nf), sizeof(float));
        float win[400];
        if (!fb) return false;
        for (int64_t m = 0; m < nm; m++)
            for (int64_t f = 1; f < nf; f++) {
                double centre = 4.0 + 15.0 * (double)m, dist = fabs((double)f - centre) / 12.0;
                fb[m * nf + f] = dist < 1.0 ? (float)(1.0 - dist) : 0.0f;
            }
        for (int j = 0; j < 400; j++) win[j] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * j / 400.0));
        const int64_t ne_fb[2] = {nf, nm}, ne_w[1] = {400};
        s.ok =
            s.ok && tr_gguf_writer_add_tensor(w, "frontend.mel_filterbank", TR_F32, 2, ne_fb, fb);
        s.ok = s.ok && tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, ne_w, win);
        free(fb);
    }
    gn_synth_lin(&s, c, "enc.input_linear", 2 * nm, d, true);
    gn_synth_lin(&s, c, "enc.ctc_proj", d, GN_S_OUT, true);
    gn_synth_lin(&s, c, "enc.ctc_bypass", GN_S_OUT, d, true);
    gn_synth_lin(&s, c, "enc.ctc_bpe", d, GN_S_V, true);
    char stem[128];
#define ST(fmt, ...) (snprintf(stem, sizeof stem, fmt, __VA_ARGS__), stem)
    for (int l = 0; l < GN_S_ENC_L; l++) {
        gn_synth_norm(&s, ST("enc.blocks.%d.norm_ff1", l), d);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.ff1_up", l), d, F, true);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.ff1_down", l), F, d, true);
        gn_synth_norm(&s, ST("enc.blocks.%d.norm_attn", l), d);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.attn_q", l), d, d, false);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.attn_kv", l), d, 2 * d, false);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.attn_out", l), d, d, true);
        {
            const int64_t ne[2] = {d / GN_S_H, 2 * GN_S_MAXPOS + 1};
            tr_synth_tensor(&s, ST("enc.blocks.%d.attn_rel_pos_emb.weight", l), c->lin_type, 2, ne,
                            0.5f, 0.0f);
        }
        gn_synth_norm(&s, ST("enc.blocks.%d.norm_conv", l), d);
        {
            const int64_t ne[3] = {1, d, 2 * cc};
            tr_synth_tensor(&s, ST("enc.blocks.%d.conv_pointwise1.weight", l), TR_F16, 3, ne, 0.3f,
                            0.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_pointwise1.bias", l), 2 * cc, 0.1f, 0.0f);
            const int64_t ne_dw[3] = {GN_S_K, 1, cc};
            tr_synth_tensor(&s, ST("enc.blocks.%d.conv_depthwise.weight", l), TR_F32, 3, ne_dw,
                            0.4f, 0.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_bn.weight", l), cc, 0.2f, 1.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_bn.bias", l), cc, 0.1f, 0.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_bn.running_mean", l), cc, 0.1f, 0.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_bn.running_var", l), cc, 0.2f, 1.0f);
            const int64_t ne2[3] = {1, cc, d};
            tr_synth_tensor(&s, ST("enc.blocks.%d.conv_pointwise2.weight", l), TR_F16, 3, ne2, 0.3f,
                            0.0f);
            tr_synth_vec(&s, ST("enc.blocks.%d.conv_pointwise2.bias", l), d, 0.1f, 0.0f);
        }
        gn_synth_norm(&s, ST("enc.blocks.%d.norm_ff2", l), d);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.ff2_up", l), d, F, true);
        gn_synth_lin(&s, c, ST("enc.blocks.%d.ff2_down", l), F, d, true);
        gn_synth_norm(&s, ST("enc.blocks.%d.norm_post", l), d);
    }
    const int64_t P = GN_S_P, H = GN_S_LM_D;
    gn_synth_lin(&s, c, "prj.layer_projector", 2 * d, P, true);
    gn_synth_norm(&s, "prj.out_norm", P);
    gn_synth_lin(&s, c, "prj.out_linear", P, H, true);
    {
        const int64_t nq[3] = {P, GN_S_BLOCK / GN_S_DS, 1}, nw[3] = {P, GN_S_BLOCK, 1};
        tr_synth_tensor(&s, "prj.query", TR_F32, 3, nq, 0.5f, 0.0f);
        tr_synth_tensor(&s, "prj.window_positions", TR_F32, 3, nw, 0.5f, 0.0f);
    }
    for (int j = 0; j < 2; j++) gn_synth_norm(&s, ST("prj.layer_norms.%d", j), d);
    for (int i = 0; i < GN_S_PL; i++) {
        gn_synth_norm(&s, ST("prj.blocks.%d.norm_attn", i), P);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.cross_attn_q", i), P, P, true);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.cross_attn_k", i), P, P, true);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.cross_attn_v", i), P, P, true);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.cross_attn_o", i), P, P, true);
        gn_synth_norm(&s, ST("prj.blocks.%d.norm_ffn", i), P);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.ffn_fc1", i), P, 2 * P, true);
        gn_synth_lin(&s, c, ST("prj.blocks.%d.ffn_fc2", i), 2 * P, P, true);
    }
    {
        const int64_t ne[2] = {H, GN_S_V};
        tr_synth_tensor(&s, "dec.token_embd.weight", c->lin_type, 2, ne, 0.3f, 0.0f);
    }
    tr_synth_vec(&s, "dec.output_norm.weight", H, 0.2f, 1.0f);
    const int64_t Q = GN_S_LM_H * GN_S_LM_HD, K = GN_S_LM_KV * GN_S_LM_HD;
    for (int l = 0; l < GN_S_LM_L; l++) {
        tr_synth_vec(&s, ST("dec.blocks.%d.norm_attn.weight", l), H, 0.2f, 1.0f);
        tr_synth_vec(&s, ST("dec.blocks.%d.norm_ffn.weight", l), H, 0.2f, 1.0f);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.attn.q", l), H, Q, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.attn.k", l), H, K, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.attn.v", l), H, K, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.attn.o", l), Q, H, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.ffn.gate", l), H, GN_S_LM_F, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.ffn.up", l), H, GN_S_LM_F, false);
        gn_synth_lin(&s, c, ST("dec.blocks.%d.ffn.down", l), GN_S_LM_F, H, false);
    }
#undef ST
    return s.ok;
}

/* Writes the whole file to path. */
static inline bool gn_synth_write(const char *path, const gn_synth_cfg *c) {
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w && gn_synth_keys(w, c) && gn_synth_tensors(w, c) &&
              tr_gguf_writer_write(w, path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

#endif
