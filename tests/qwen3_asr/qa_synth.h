/* A tiny random-weight Qwen3-ASR file in the published schema
 * (docs/formats/qwen3_asr.md §2–§3), written with the C GGUF writer, for tests
 * that need no reference: loading, gates, bad files, end-to-end runs.
 * Options drop or misshape one tensor or key so loader errors can be
 * checked one at a time. */
#ifndef TR_TEST_QA_SYNTH_H
#define TR_TEST_QA_SYNTH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "synth.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"

typedef struct qa_synth_opts {
    int lin_type;           /* type of the linear weights (TR_F32 default 0) */
    const char *drop;       /* tensor name to leave out */
    const char *misshape;   /* tensor name written with ne[1] + 1 rows */
    bool untied;            /* tie_word_embeddings = false */
    bool with_head;         /* write dec.output.weight */
    const char *drop_key;   /* key to leave out */
    const char *wrong_type; /* key written with another type (u32 → i32) */
    int max_pos;            /* 0 = 65536 */
} qa_synth_opts;

enum {
    QS_ENC_D = 32,
    QS_ENC_H = 2,
    QS_ENC_F = 64,
    QS_MELS = 128,
    QS_CONV = 4,
    QS_LM_D = 32,
    QS_LM_F = 64,
    QS_LM_H = 4,
    QS_LM_KV = 2,
    QS_HD = 16,
};

static uint64_t qs_rng;
static float qs_rand(void) {
    return tr_synth_rand(&qs_rng);
}

static void qs_tensor(gguf_writer *w, const qa_synth_opts *o, const char *name, int type,
                      int n_dims, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, float amp,
                      float base) {
    if (o->drop && strcmp(o->drop, name) == 0) return;
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    if (o->misshape && strcmp(o->misshape, name) == 0) ne[n_dims - 1] += 1;
    int64_t rows = ne[1] * ne[2] * ne[3];
    size_t rb = tr_row_bytes(type, ne[0]);
    float *f = malloc((size_t)ne[0] * sizeof(float));
    char *d = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < ne[0]; i++) f[i] = base + amp * qs_rand();
        tr_quantize_row(type, f, d + r * rb, ne[0]);
    }
    tr_gguf_writer_add_tensor(w, name, type, n_dims, ne, d);
    free(f);
    free(d);
}

#define QS_LIN(name, in, out, amp) qs_tensor(w, o, name, lt, 2, in, out, 1, 1, amp, 0.0f)
#define QS_VEC(name, n, base, amp) qs_tensor(w, o, name, TR_F32, 1, n, 1, 1, 1, amp, base)

static void qs_u32(gguf_writer *w, const qa_synth_opts *o, const char *key, uint32_t v) {
    if (o->drop_key && strcmp(o->drop_key, key) == 0) return;
    if (o->wrong_type && strcmp(o->wrong_type, key) == 0)
        tr_gguf_writer_set_i32(w, key, (int32_t)v);
    else
        tr_gguf_writer_set_u32(w, key, v);
}

static void qs_str(gguf_writer *w, const qa_synth_opts *o, const char *key, const char *v) {
    if (o->drop_key && strcmp(o->drop_key, key) == 0) return;
    tr_gguf_writer_set_str(w, key, v);
}

static void qs_f32(gguf_writer *w, const qa_synth_opts *o, const char *key, float v) {
    if (o->drop_key && strcmp(o->drop_key, key) == 0) return;
    tr_gguf_writer_set_f32(w, key, v);
}

/* Vocabulary: the 256 byte glyphs, a few words and merges, the specials. */
#define QS_N_WORDS 9
static const char *const qs_words[QS_N_WORDS] = {"system",   "user", "assistant", "la",      "lang",
                                                 "language", "ĠE",   "ĠEn",       "ĠEnglish"};
static const char *const qs_merges[] = {"l a",      "la n",      "lan g",    "lang u",   "langu a",
                                        "langua g", "languag e", "Ġ E",      "ĠE n",     "ĠEn g",
                                        "ĠEng l",   "ĠEngl i",   "ĠEngli s", "ĠEnglis h"};
#define QS_N_SPECIAL 8
static const char *const qs_special[QS_N_SPECIAL] = {
    "<|endoftext|>", "<|im_start|>",  "<|im_end|>", "<|audio_start|>",
    "<|audio_end|>", "<|audio_pad|>", "<asr_text>", "<|unused_0|>"};

/* Vocabulary size (256 + words + intermediate merge pieces + specials). */
static int qs_build_vocab(char ***pieces_out, int32_t **types_out) {
    static const char *const inter[] = {"lan",  "langu", "langua", "languag",
                                        "ĠEng", "ĠEngl", "ĠEngli", "ĠEnglis"};
    return tr_synth_bpe_vocab(qs_words, QS_N_WORDS, inter, (int)(sizeof inter / sizeof inter[0]),
                              qs_special, QS_N_SPECIAL, pieces_out, types_out);
}

static int qs_find(char **pieces, int V, const char *s) {
    return tr_synth_find(pieces, V, s);
}

/* Writes the file; returns 0 on success. n_enc / n_dec layers. */
static int qa_synth_write(const char *path, const qa_synth_opts *o_in, int n_enc, int n_dec,
                          uint64_t seed) {
    qa_synth_opts o0 = {0};
    const qa_synth_opts *o = o_in ? o_in : &o0;
    const int lt = o->lin_type;
    qs_rng = seed ? seed : 0x9E3779B97F4A7C15ull;
    gguf_writer *w = tr_gguf_writer_create();
    char **pieces;
    int32_t *types;
    const int V = qs_build_vocab(&pieces, &types);

    qs_str(w, o, "general.architecture", "qwen3_asr");
    qs_str(w, o, "stt.variant", "qwen3-asr-synth");
    static const char *const langs[] = {"zh", "en", "de", "xx"};
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, 4);
    tr_gguf_writer_set_bool(w, "stt.capability.lang_detect", true);
    qs_str(w, o, "tokenizer.ggml.model", "gpt2");
    qs_str(w, o, "tokenizer.ggml.pre", "qwen2");
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)pieces, (size_t)V);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, (size_t)V);
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", qs_merges,
                               sizeof qs_merges / sizeof qs_merges[0]);
    qs_u32(w, o, "tokenizer.ggml.eos_token_id", (uint32_t)qs_find(pieces, V, "<|im_end|>"));
    qs_u32(w, o, "tokenizer.ggml.padding_token_id", (uint32_t)qs_find(pieces, V, "<|endoftext|>"));
#define EK "stt.qwen3_asr.encoder."
    qs_u32(w, o, EK "n_layers", (uint32_t)n_enc);
    qs_u32(w, o, EK "d_model", QS_ENC_D);
    qs_u32(w, o, EK "n_heads", QS_ENC_H);
    qs_u32(w, o, EK "ffn_dim", QS_ENC_F);
    qs_u32(w, o, EK "num_mel_bins", QS_MELS);
    qs_u32(w, o, EK "downsample_hidden", QS_CONV);
    qs_u32(w, o, EK "output_dim", QS_LM_D);
    qs_u32(w, o, EK "max_source_positions", 1500);
    qs_u32(w, o, EK "n_window", 50);
    qs_u32(w, o, EK "n_window_infer", 800);
    qs_u32(w, o, EK "conv_chunksize", 500);
    qs_str(w, o, EK "activation", "gelu");
#undef EK
#define DK "stt.qwen3_asr.decoder."
    qs_u32(w, o, DK "n_layers", (uint32_t)n_dec);
    qs_u32(w, o, DK "hidden_size", QS_LM_D);
    qs_u32(w, o, DK "intermediate_size", QS_LM_F);
    qs_u32(w, o, DK "n_heads", QS_LM_H);
    qs_u32(w, o, DK "n_kv_heads", QS_LM_KV);
    qs_u32(w, o, DK "head_dim", QS_HD);
    qs_str(w, o, DK "hidden_act", "silu");
    qs_f32(w, o, DK "rms_norm_eps", 1e-6f);
    qs_f32(w, o, DK "rope_theta", 1e6f);
    qs_u32(w, o, DK "rope_mrope_section_t", 4);
    qs_u32(w, o, DK "rope_mrope_section_h", 2);
    qs_u32(w, o, DK "rope_mrope_section_w", 2);
    tr_gguf_writer_set_bool(w, DK "rope_mrope_interleaved", true);
    qs_u32(w, o, DK "max_position_embeddings", o->max_pos ? (uint32_t)o->max_pos : 65536u);
    tr_gguf_writer_set_bool(w, DK "tie_word_embeddings", !o->untied);
    qs_u32(w, o, DK "vocab_size", (uint32_t)V);
#undef DK
    qs_u32(w, o, "stt.qwen3_asr.audio_token_id", (uint32_t)qs_find(pieces, V, "<|audio_pad|>"));
    qs_u32(w, o, "stt.qwen3_asr.audio_start_token_id",
           (uint32_t)qs_find(pieces, V, "<|audio_start|>"));
    qs_u32(w, o, "stt.qwen3_asr.audio_end_token_id", (uint32_t)qs_find(pieces, V, "<|audio_end|>"));
#define FK "stt.frontend."
    qs_str(w, o, FK "type", "mel");
    qs_u32(w, o, FK "num_mels", QS_MELS);
    qs_u32(w, o, FK "sample_rate", 16000);
    qs_u32(w, o, FK "n_fft", 400);
    qs_u32(w, o, FK "win_length", 400);
    qs_u32(w, o, FK "hop_length", 160);
    qs_str(w, o, FK "window", "hann_periodic");
    qs_str(w, o, FK "normalize", "per_utterance");
    qs_f32(w, o, FK "dither", 0.0f);
    qs_f32(w, o, FK "pre_emphasis", 0.0f);
    qs_f32(w, o, FK "f_min", 0.0f);
    qs_f32(w, o, FK "f_max", 8000.0f);
    qs_str(w, o, FK "pad_mode", "reflect");
#undef FK

    const int C = QS_CONV, d = QS_ENC_D;
    char n[96];
    for (int i = 0; i < 3; i++) {
        snprintf(n, sizeof n, "enc.conv.%d.weight", i);
        qs_tensor(w, o, n, TR_F32, 4, 3, 3, i == 0 ? 1 : C, C, 0.5f, 0.0f);
        snprintf(n, sizeof n, "enc.conv.%d.bias", i);
        QS_VEC(n, C, 0.0f, 0.1f);
    }
    QS_LIN("enc.conv_out.weight", C * 16, d, 0.3f);
    for (int l = 0; l < n_enc; l++) {
        static const char *const lin[] = {"attn.q", "attn.k", "attn.v", "attn.out"};
        for (int j = 0; j < 2; j++) {
            const char *nm = j ? "norm_ffn" : "norm_attn";
            snprintf(n, sizeof n, "enc.blocks.%d.%s.weight", l, nm);
            QS_VEC(n, d, 1.0f, 0.1f);
            snprintf(n, sizeof n, "enc.blocks.%d.%s.bias", l, nm);
            QS_VEC(n, d, 0.0f, 0.1f);
        }
        for (int j = 0; j < 4; j++) {
            snprintf(n, sizeof n, "enc.blocks.%d.%s.weight", l, lin[j]);
            QS_LIN(n, d, d, 0.3f);
            snprintf(n, sizeof n, "enc.blocks.%d.%s.bias", l, lin[j]);
            QS_VEC(n, d, 0.0f, 0.1f);
        }
        snprintf(n, sizeof n, "enc.blocks.%d.ffn.fc1.weight", l);
        QS_LIN(n, d, QS_ENC_F, 0.3f);
        snprintf(n, sizeof n, "enc.blocks.%d.ffn.fc1.bias", l);
        QS_VEC(n, QS_ENC_F, 0.0f, 0.1f);
        snprintf(n, sizeof n, "enc.blocks.%d.ffn.fc2.weight", l);
        QS_LIN(n, QS_ENC_F, d, 0.3f);
        snprintf(n, sizeof n, "enc.blocks.%d.ffn.fc2.bias", l);
        QS_VEC(n, d, 0.0f, 0.1f);
    }
    QS_VEC("enc.ln_post.weight", d, 1.0f, 0.1f);
    QS_VEC("enc.ln_post.bias", d, 0.0f, 0.1f);
    QS_LIN("enc.proj1.weight", d, d, 0.3f);
    QS_VEC("enc.proj1.bias", d, 0.0f, 0.1f);
    QS_LIN("enc.proj2.weight", d, QS_LM_D, 0.3f);
    QS_VEC("enc.proj2.bias", QS_LM_D, 0.0f, 0.1f);

    const int H = QS_LM_D, Q = QS_LM_H * QS_HD, K = QS_LM_KV * QS_HD, I = QS_LM_F;
    QS_LIN("dec.token_embd.weight", H, V, 1.0f);
    QS_VEC("dec.output_norm.weight", H, 1.0f, 0.1f);
    if (o->with_head) QS_LIN("dec.output.weight", H, V, 1.0f);
    for (int l = 0; l < n_dec; l++) {
#define BN(s) (snprintf(n, sizeof n, "dec.blocks.%d." s, l), n)
        QS_VEC(BN("norm_attn.weight"), H, 1.0f, 0.1f);
        QS_VEC(BN("norm_ffn.weight"), H, 1.0f, 0.1f);
        QS_VEC(BN("attn.q_norm.weight"), QS_HD, 1.0f, 0.1f);
        QS_VEC(BN("attn.k_norm.weight"), QS_HD, 1.0f, 0.1f);
        QS_LIN(BN("attn.q.weight"), H, Q, 0.3f);
        QS_LIN(BN("attn.k.weight"), H, K, 0.3f);
        QS_LIN(BN("attn.v.weight"), H, K, 0.3f);
        QS_LIN(BN("attn.o.weight"), Q, H, 0.3f);
        QS_LIN(BN("ffn.gate.weight"), H, I, 0.3f);
        QS_LIN(BN("ffn.up.weight"), H, I, 0.3f);
        QS_LIN(BN("ffn.down.weight"), I, H, 0.3f);
#undef BN
    }
    return tr_synth_finish(w, path, pieces, types, V);
}

#endif
