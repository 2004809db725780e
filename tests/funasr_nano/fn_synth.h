/* A tiny random-weight Fun-ASR-Nano file in the published schema
 * (docs/formats/funasr_nano.md §2–§3), written with the C GGUF writer, for
 * tests that need no reference: loading, gates, bad files, end-to-end runs.
 * Options drop or misshape one tensor, or drop / retype / change one key, so
 * loader errors can be checked one at a time. */
#ifndef TR_TEST_FN_SYNTH_H
#define TR_TEST_FN_SYNTH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "synth.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"

typedef struct fn_synth_opts {
    int lin_type;         /* type of the linear weights (TR_F32 default 0) */
    const char *drop;     /* tensor name to leave out */
    const char *misshape; /* tensor name written with its last dim + 1 */
    const char *retype;   /* tensor name written as F16 (a norm / bias: refused) */
    const char *drop_key; /* key to leave out */
    const char *wrong_type; /* key written with another type (u32 → i32, str → u32, bool → u32) */
    const char *set_key; /* key written with set_val instead (u32 keys) */
    uint32_t set_val;
    const char *set_str; /* key set_str_key written as this string */
    const char *set_str_key;
    bool no_merges;       /* tokenizer.ggml.merges left out */
    bool untied;          /* tie_word_embeddings = false */
    bool high_frame_rate; /* use_low_frame_rate = false (MLT) */
    bool apply_cmvn;      /* stt.frontend.apply_cmvn = true */
    int max_pos;          /* 0 = 40960 */
} fn_synth_opts;

enum {
    FS_D = 32,   /* encoder d_model */
    FS_DI = 560, /* 80 mels × 7 */
    FS_H = 2,
    FS_F = 32,
    FS_K = 3,
    FS_NB = 2, /* encoders0.0 + encoders.0 */
    FS_TP = 1,
    FS_A = 32, /* adaptor llm_dim = LM hidden */
    FS_AH = 2,
    FS_AHD = 16,
    FS_PF = 48,
    FS_BF = 16,
    FS_LM_F = 64,
    FS_LM_H = 4,
    FS_LM_KV = 2,
    FS_HD = 8,
};

static uint64_t fs_rng;
static float fs_rand(void) {
    return tr_synth_rand(&fs_rng);
}

static void fs_tensor_data(gguf_writer *w, const fn_synth_opts *o, const char *name, int type,
                           int n_dims, int64_t ne0, int64_t ne1, int64_t ne2, const float *vals,
                           float amp, float base) {
    if (o->drop && strcmp(o->drop, name) == 0) return;
    int64_t ne[4] = {ne0, ne1, ne2, 1};
    if (o->misshape && strcmp(o->misshape, name) == 0) ne[n_dims - 1] += 1;
    if (o->retype && strcmp(o->retype, name) == 0) type = TR_F16;
    /* as the quantizer does: a row that is not whole blocks stays F16 */
    if (type != TR_F32 && type != TR_F16 && ne0 % 32 != 0) type = TR_F16;
    int64_t rows = ne[1] * ne[2];
    size_t rb = tr_row_bytes(type, ne[0]);
    float *f = malloc((size_t)ne[0] * sizeof(float));
    char *d = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < ne[0]; i++)
            f[i] = vals && r < ne1 ? vals[r * ne0 + i] : base + amp * fs_rand();
        tr_quantize_row(type, f, d + r * rb, ne[0]);
    }
    tr_gguf_writer_add_tensor(w, name, type, n_dims, ne, d);
    free(f);
    free(d);
}

#define FS_LIN(name, in, out, amp) fs_tensor_data(w, o, name, lt, 2, in, out, 1, NULL, amp, 0.0f)
#define FS_VEC(name, n, base, amp) fs_tensor_data(w, o, name, TR_F32, 1, n, 1, 1, NULL, amp, base)

static bool fs_skip(const fn_synth_opts *o, const char *key) {
    return o->drop_key && strcmp(o->drop_key, key) == 0;
}
static bool fs_wrong(const fn_synth_opts *o, const char *key) {
    return o->wrong_type && strcmp(o->wrong_type, key) == 0;
}

static void fs_u32(gguf_writer *w, const fn_synth_opts *o, const char *key, uint32_t v) {
    if (fs_skip(o, key)) return;
    if (o->set_key && strcmp(o->set_key, key) == 0) v = o->set_val;
    if (fs_wrong(o, key) && strstr(key, "token_id")) /* ids may be INT32: a string is wrong */
        tr_gguf_writer_set_str(w, key, "1");
    else if (fs_wrong(o, key))
        tr_gguf_writer_set_i32(w, key, (int32_t)v);
    else
        tr_gguf_writer_set_u32(w, key, v);
}

static void fs_str(gguf_writer *w, const fn_synth_opts *o, const char *key, const char *v) {
    if (fs_skip(o, key)) return;
    if (o->set_str_key && strcmp(o->set_str_key, key) == 0) v = o->set_str;
    if (fs_wrong(o, key))
        tr_gguf_writer_set_u32(w, key, 1);
    else
        tr_gguf_writer_set_str(w, key, v);
}

static void fs_f32(gguf_writer *w, const fn_synth_opts *o, const char *key, float v) {
    if (fs_skip(o, key)) return;
    if (fs_wrong(o, key))
        tr_gguf_writer_set_u32(w, key, 1);
    else
        tr_gguf_writer_set_f32(w, key, v);
}

static void fs_bool(gguf_writer *w, const fn_synth_opts *o, const char *key, bool v) {
    if (fs_skip(o, key)) return;
    if (fs_wrong(o, key))
        tr_gguf_writer_set_u32(w, key, 1);
    else
        tr_gguf_writer_set_bool(w, key, v);
}

/* Vocabulary: the 256 byte glyphs, the chat words and their merges, the
 * Qwen3 specials. */
#define FS_N_WORDS 3
static const char *const fs_words[FS_N_WORDS] = {"system", "user", "assistant"};
static const char *const fs_inter[] = {"sy",  "sys",  "syst",  "syste",  "us",      "use",     "as",
                                       "ass", "assi", "assis", "assist", "assista", "assistan"};
static const char *const fs_merges[] = {
    "s y", "sy s", "sys t", "syst e", "syste m", "u s",      "us e",      "use r",
    "a s", "as s", "ass i", "assi s", "assis t", "assist a", "assista n", "assistan t"};
#define FS_N_SPECIAL 4
static const char *const fs_special[FS_N_SPECIAL] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                                     "<|unused_0|>"};

static int fs_build_vocab(char ***pieces_out, int32_t **types_out) {
    return tr_synth_bpe_vocab(fs_words, FS_N_WORDS, fs_inter,
                              (int)(sizeof fs_inter / sizeof fs_inter[0]), fs_special, FS_N_SPECIAL,
                              pieces_out, types_out);
}

static int fs_find(char **pieces, int V, const char *s) {
    return tr_synth_find(pieces, V, s);
}

static void fs_sanm_block(gguf_writer *w, const fn_synth_opts *o, int lt, const char *p, int din) {
    char n[128];
#define FSN(s) (snprintf(n, sizeof n, "%s.%s", p, s), n)
    FS_LIN(FSN("attn.qkv.weight"), din, 3 * FS_D, 0.3f);
    FS_VEC(FSN("attn.qkv.bias"), 3 * FS_D, 0.0f, 0.1f);
    FS_LIN(FSN("attn.out.weight"), FS_D, FS_D, 0.3f);
    FS_VEC(FSN("attn.out.bias"), FS_D, 0.0f, 0.1f);
    fs_tensor_data(w, o, FSN("attn.fsmn.weight"), TR_F32, 3, FS_K, 1, FS_D, NULL, 0.3f, 0.0f);
    FS_LIN(FSN("ffn.fc1.weight"), FS_D, FS_F, 0.3f);
    FS_VEC(FSN("ffn.fc1.bias"), FS_F, 0.0f, 0.1f);
    FS_LIN(FSN("ffn.fc2.weight"), FS_F, FS_D, 0.3f);
    FS_VEC(FSN("ffn.fc2.bias"), FS_D, 0.0f, 0.1f);
    FS_VEC(FSN("norm_attn.weight"), din, 1.0f, 0.1f);
    FS_VEC(FSN("norm_attn.bias"), din, 0.0f, 0.1f);
    FS_VEC(FSN("norm_ffn.weight"), FS_D, 1.0f, 0.1f);
    FS_VEC(FSN("norm_ffn.bias"), FS_D, 0.0f, 0.1f);
#undef FSN
}

/* Writes the file; returns 0 on success. n_dec LM layers. */
static int fn_synth_write(const char *path, const fn_synth_opts *o_in, int n_dec, uint64_t seed) {
    fn_synth_opts o0 = {0};
    const fn_synth_opts *o = o_in ? o_in : &o0;
    const int lt = o->lin_type;
    fs_rng = seed ? seed : 0x9E3779B97F4A7C15ull;
    gguf_writer *w = tr_gguf_writer_create();
    char **pieces;
    int32_t *types;
    const int V = fs_build_vocab(&pieces, &types);
    const int eos = fs_find(pieces, V, "<|im_end|>");

    fs_str(w, o, "general.architecture", "funasr_nano");
    fs_str(w, o, "stt.variant",
           o->high_frame_rate ? "fun-asr-mlt-nano-synth" : "fun-asr-nano-synth");
    static const char *const langs[] = {"zh", "en", "ja"};
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, 3);
    fs_str(w, o, "tokenizer.ggml.model", "gpt2");
    fs_str(w, o, "tokenizer.ggml.pre", "qwen2");
    fs_u32(w, o, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    fs_u32(w, o, "tokenizer.ggml.padding_token_id", (uint32_t)fs_find(pieces, V, "<|endoftext|>"));
#define EK "stt.funasr_nano.encoder."
    fs_u32(w, o, EK "n_blocks", FS_NB);
    fs_u32(w, o, EK "tp_blocks", FS_TP);
    fs_u32(w, o, EK "d_model", FS_D);
    fs_u32(w, o, EK "d_input", FS_DI);
    fs_u32(w, o, EK "n_heads", FS_H);
    fs_u32(w, o, EK "d_ff", FS_F);
    fs_u32(w, o, EK "kernel_size", FS_K);
    fs_u32(w, o, EK "sanm_shift", 0);
    fs_str(w, o, EK "attention_type", "sanm");
    fs_bool(w, o, EK "normalize_before", true);
#undef EK
#define AK "stt.funasr_nano.adaptor."
    fs_u32(w, o, AK "n_blocks", 2);
    fs_u32(w, o, AK "encoder_dim", FS_D);
    fs_u32(w, o, AK "llm_dim", FS_A);
    fs_u32(w, o, AK "pre_ffn_dim", FS_PF);
    fs_u32(w, o, AK "block_ffn_dim", FS_BF);
    fs_u32(w, o, AK "n_heads", FS_AH);
    fs_u32(w, o, AK "d_head", FS_AHD);
    fs_f32(w, o, AK "layer_norm_eps", 1e-12f);
    fs_str(w, o, AK "activation", "relu");
    fs_u32(w, o, AK "downsample_rate", 1);
    fs_bool(w, o, AK "use_low_frame_rate", !o->high_frame_rate);
#undef AK
#define DK "stt.funasr_nano.decoder."
    fs_u32(w, o, DK "n_layers", (uint32_t)n_dec);
    fs_u32(w, o, DK "hidden_size", FS_A);
    fs_u32(w, o, DK "intermediate_size", FS_LM_F);
    fs_u32(w, o, DK "n_heads", FS_LM_H);
    fs_u32(w, o, DK "n_kv_heads", FS_LM_KV);
    fs_u32(w, o, DK "head_dim", FS_HD);
    fs_u32(w, o, DK "vocab_size", (uint32_t)V);
    fs_u32(w, o, DK "max_position_embeddings", o->max_pos ? (uint32_t)o->max_pos : 40960u);
    fs_f32(w, o, DK "rms_norm_eps", 1e-6f);
    fs_f32(w, o, DK "rope_theta", 1e6f);
    fs_bool(w, o, DK "tie_word_embeddings", !o->untied);
    fs_str(w, o, DK "activation", "silu");
#undef DK
#define FK "stt.frontend."
    fs_str(w, o, FK "type", "kaldi_fbank_lfr");
    fs_u32(w, o, FK "num_mels", 80);
    fs_u32(w, o, FK "sample_rate", 16000);
    fs_u32(w, o, FK "n_fft", 400);
    fs_u32(w, o, FK "win_length", 400);
    fs_u32(w, o, FK "hop_length", 160);
    fs_str(w, o, FK "window", "hamming");
    fs_str(w, o, FK "normalize", "none");
    fs_f32(w, o, FK "dither", 0.0f);
    fs_bool(w, o, FK "upscale_samples", true);
    fs_bool(w, o, FK "snip_edges", true);
    fs_u32(w, o, FK "lfr_m", 7);
    fs_u32(w, o, FK "lfr_n", 6);
    fs_str(w, o, FK "fbank_style", "kaldi_htk");
    fs_bool(w, o, FK "apply_cmvn", o->apply_cmvn);
#undef FK
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)pieces, (size_t)V);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, (size_t)V);
    if (!o->no_merges)
        tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", fs_merges,
                                   sizeof fs_merges / sizeof fs_merges[0]);

    /* encoder */
    fs_sanm_block(w, o, lt, "enc.encoders0.0", FS_DI);
    char n[128];
    for (int i = 0; i < FS_NB - 1; i++) {
        snprintf(n, sizeof n, "enc.encoders.%d", i);
        fs_sanm_block(w, o, lt, n, FS_D);
    }
    for (int i = 0; i < FS_TP; i++) {
        snprintf(n, sizeof n, "enc.tp_encoders.%d", i);
        fs_sanm_block(w, o, lt, n, FS_D);
    }
    FS_VEC("enc.after_norm.weight", FS_D, 1.0f, 0.1f);
    FS_VEC("enc.after_norm.bias", FS_D, 0.0f, 0.1f);
    FS_VEC("enc.tp_norm.weight", FS_D, 1.0f, 0.1f);
    FS_VEC("enc.tp_norm.bias", FS_D, 0.0f, 0.1f);
    /* adaptor */
    FS_LIN("adaptor.linear1.weight", FS_D, FS_PF, 0.3f);
    FS_VEC("adaptor.linear1.bias", FS_PF, 0.0f, 0.1f);
    FS_LIN("adaptor.linear2.weight", FS_PF, FS_A, 0.3f);
    FS_VEC("adaptor.linear2.bias", FS_A, 0.0f, 0.1f);
    for (int b = 0; b < 2; b++) {
        static const char *const lin[] = {"attn.q", "attn.k", "attn.v", "attn.out"};
        for (int j = 0; j < 4; j++) {
            snprintf(n, sizeof n, "adaptor.blocks.%d.%s.weight", b, lin[j]);
            FS_LIN(n, FS_A, FS_A, 0.3f);
            snprintf(n, sizeof n, "adaptor.blocks.%d.%s.bias", b, lin[j]);
            FS_VEC(n, FS_A, 0.0f, 0.1f);
        }
        snprintf(n, sizeof n, "adaptor.blocks.%d.ffn.fc1.weight", b);
        FS_LIN(n, FS_A, FS_BF, 0.3f);
        snprintf(n, sizeof n, "adaptor.blocks.%d.ffn.fc1.bias", b);
        FS_VEC(n, FS_BF, 0.0f, 0.1f);
        snprintf(n, sizeof n, "adaptor.blocks.%d.ffn.fc2.weight", b);
        FS_LIN(n, FS_BF, FS_A, 0.3f);
        snprintf(n, sizeof n, "adaptor.blocks.%d.ffn.fc2.bias", b);
        FS_VEC(n, FS_A, 0.0f, 0.1f);
        for (int j = 0; j < 2; j++) {
            const char *nm = j ? "norm_ffn" : "norm_attn";
            snprintf(n, sizeof n, "adaptor.blocks.%d.%s.weight", b, nm);
            FS_VEC(n, FS_A, 1.0f, 0.1f);
            snprintf(n, sizeof n, "adaptor.blocks.%d.%s.bias", b, nm);
            FS_VEC(n, FS_A, 0.0f, 0.1f);
        }
    }
    /* LM (random weights: the output rarely ends, OUTPUT_TRUNCATED at the budget) */
    const int H = FS_A, Q = FS_LM_H * FS_HD, K = FS_LM_KV * FS_HD, I = FS_LM_F;
    FS_LIN("dec.token_embd.weight", H, V, 1.0f);
    FS_VEC("dec.output_norm.weight", H, 1.0f, 0.1f);
    for (int l = 0; l < n_dec; l++) {
#define BN(s) (snprintf(n, sizeof n, "dec.layers.%d." s, l), n)
        FS_VEC(BN("norm_attn.weight"), H, 1.0f, 0.1f);
        FS_VEC(BN("norm_ffn.weight"), H, 1.0f, 0.1f);
        FS_LIN(BN("attn.q.weight"), H, Q, 0.3f);
        FS_LIN(BN("attn.k.weight"), H, K, 0.3f);
        FS_LIN(BN("attn.v.weight"), H, K, 0.3f);
        FS_LIN(BN("attn.o.weight"), Q, H, 0.3f);
        FS_VEC(BN("attn.q_norm.weight"), FS_HD, 1.0f, 0.1f);
        FS_VEC(BN("attn.k_norm.weight"), FS_HD, 1.0f, 0.1f);
        FS_LIN(BN("ffn.gate.weight"), H, I, 0.3f);
        FS_LIN(BN("ffn.up.weight"), H, I, 0.3f);
        FS_LIN(BN("ffn.down.weight"), I, H, 0.3f);
#undef BN
    }
    return tr_synth_finish(w, path, pieces, types, V);
}

#endif
