/* A tiny Voxtral file in the published schema (docs/formats/voxtral.md §2–§3), written with
 * the C GGUF writer, for tests that need no reference: loading, gates, bad files,
 * end-to-end runs. The LM is a successor chain: token t's embedding is the head row
 * of its successor, and the blocks are weak, so greedy decoding follows the chain
 * whatever the audio: [TRANSCRIBE] → "Quick fox." → EOS, [/INST] → "Hej!" → EOS.
 * The encoder is random at full chunk geometry (3000 mel frames, 1500 positions,
 * 375 audio tokens per 30 s chunk) and small widths; the LM's Q width (4 × 32) is
 * not its hidden size (64), and its head is untied. */
#ifndef TR_TEST_VX_SYNTH_H
#define TR_TEST_VX_SYNTH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "synth.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"

typedef struct vx_synth_opts {
    int lin_type;   /* type of the linear weights (TR_F32 default 0) */
    int max_pos;    /* 0 = 131072 */
    bool no_nb_max; /* leave stt.frontend.nb_max_frames out */
} vx_synth_opts;

enum {
    VS_ENC_D = 32,
    VS_ENC_H = 2,
    VS_ENC_F = 256, /* fc2 rows of 256: the K types stay K there */
    VS_MELS = 128,
    VS_POS = 1500,
    VS_DS = 4,
    VS_LM_D = 64,
    VS_LM_F = 256, /* ffn.down rows of 256 */
    VS_LM_H = 4,
    VS_LM_KV = 2,
    VS_HD = 32,
    VS_N_SPECIAL = 40, /* ids 0..39 control, as tekken's first ids */
};

/* tekken's special ids (docs/formats/voxtral.md §6.1) */
enum {
    VS_UNK = 0,
    VS_BOS = 1,
    VS_EOS = 2,
    VS_INST = 3,
    VS_INST_END = 4,
    VS_PAD = 11,
    VS_AUDIO = 24,
    VS_BEGIN_AUDIO = 25,
    VS_TRANSCRIBE = 34,
};

static uint64_t vs_rng;
static float vs_rand(void) {
    return tr_synth_rand(&vs_rng);
}

static void vs_put(gguf_writer *w, const char *name, int type, int n_dims, int64_t ne0, int64_t ne1,
                   int64_t ne2, const float *src, float amp, float base) {
    int64_t ne[4] = {ne0, ne1, ne2, 1};
    /* the quantizer's fallback (docs/formats/voxtral.md §3.1): K types need rows of 256 */
    if ((type == TR_Q4_K || type == TR_Q5_K || type == TR_Q6_K) && ne0 % 256) type = TR_Q8_0;
    const int64_t rows = ne1 * ne2;
    const size_t rb = tr_row_bytes(type, ne0);
    float *f = malloc((size_t)ne0 * sizeof(float));
    char *d = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < ne0; i++) f[i] = src ? src[r * ne0 + i] : base + amp * vs_rand();
        tr_quantize_row(type, f, d + r * rb, ne0);
    }
    tr_gguf_writer_add_tensor(w, name, type, n_dims, ne, d);
    free(f);
    free(d);
}

#define VS_LIN(name, in, out, amp) vs_put(w, name, lt, 2, in, out, 1, NULL, amp, 0.0f)
#define VS_VEC(name, n, base, amp) vs_put(w, name, TR_F32, 1, n, 1, 1, NULL, amp, base)

static const char *const vs_merges[] = {"l a", "la n", "lan g", "Ġ f", "Ġf o", "Ġfo x"};
static const char *const vs_words[] = {"la", "lan", "lang", "Ġf", "Ġfo", "Ġfox"};
#define VS_N_WORDS 6

/* The chains: text pieces after [TRANSCRIBE] and after [/INST]. */
static const char *const vs_chain_t[] = {"Q", "u", "i", "c", "k", "Ġfox", "."};
static const char *const vs_chain_x[] = {"H", "e", "j", "!"};
#define VS_TEXT_T "Quick fox."
#define VS_TEXT_X "Hej!"

static int vs_build_vocab(char ***pieces_out, int32_t **types_out) {
    const int V = VS_N_SPECIAL + 256 + VS_N_WORDS;
    char **p = calloc((size_t)V, sizeof *p);
    int32_t *t = calloc((size_t)V, sizeof *t);
    static const struct {
        int id;
        const char *s;
    } named[] = {{VS_UNK, "<unk>"},
                 {VS_BOS, "<s>"},
                 {VS_EOS, "</s>"},
                 {VS_INST, "[INST]"},
                 {VS_INST_END, "[/INST]"},
                 {VS_PAD, "<pad>"},
                 {VS_AUDIO, "[AUDIO]"},
                 {VS_BEGIN_AUDIO, "[BEGIN_AUDIO]"},
                 {VS_TRANSCRIBE, "[TRANSCRIBE]"}};
    for (int i = 0; i < VS_N_SPECIAL; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "<SPECIAL_%d>", i);
        p[i] = strdup(buf);
        t[i] = 3;
    }
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        free(p[named[i].id]);
        p[named[i].id] = strdup(named[i].s);
    }
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        p[VS_N_SPECIAL + b] = tr_gpt2_piece_from_bytes(&c, 1);
        t[VS_N_SPECIAL + b] = 1;
    }
    for (int i = 0; i < VS_N_WORDS; i++) {
        p[VS_N_SPECIAL + 256 + i] = strdup(vs_words[i]);
        t[VS_N_SPECIAL + 256 + i] = 1;
    }
    *pieces_out = p;
    *types_out = t;
    return V;
}

static int vs_find(char **pieces, int V, const char *s) {
    return tr_synth_find(pieces, V, s);
}

/* Embedding and head of the successor chains: head row succ(t) = 3 · emb row t. */
static void vs_chain_lm(char **pieces, int V, float *emb, float *head) {
    const int H = VS_LM_D;
    for (int64_t i = 0; i < (int64_t)V * H; i++) emb[i] = vs_rand();
    for (int64_t i = 0; i < (int64_t)V * H; i++) head[i] = 0.05f * vs_rand();
    for (int c = 0; c < 2; c++) {
        const char *const *ch = c ? vs_chain_x : vs_chain_t;
        const int n = c ? 4 : 7;
        int prev = c ? VS_INST_END : VS_TRANSCRIBE;
        for (int i = 0; i <= n; i++) {
            const int next = i < n ? vs_find(pieces, V, ch[i]) : VS_EOS;
            for (int k = 0; k < H; k++)
                head[(size_t)next * H + k] += 3.0f * emb[(size_t)prev * H + k];
            prev = next;
        }
    }
}

/* Writes the file; 0 on success. n_enc / n_dec layers. */
static int vx_synth_write(const char *path, const vx_synth_opts *o_in, int n_enc, int n_dec,
                          uint64_t seed) {
    vx_synth_opts o0 = {0};
    const vx_synth_opts *o = o_in ? o_in : &o0;
    const int lt = o->lin_type;
    vs_rng = seed ? seed : 0x9E3779B97F4A7C15ull;
    gguf_writer *w = tr_gguf_writer_create();
    char **pieces;
    int32_t *types;
    const int V = vs_build_vocab(&pieces, &types);
    static const char *const langs[] = {"en", "fr", "de", "es", "it", "pt", "nl", "hi"};

    tr_gguf_writer_set_str(w, "general.architecture", "voxtral");
    tr_gguf_writer_set_str(w, "general.name", "Voxtral synth");
    tr_gguf_writer_set_u32(w, "general.file_type", 0);
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, 8);
    tr_gguf_writer_set_str(w, "stt.variant", "voxtral-mini-3b-2507");
    tr_gguf_writer_set_bool(w, "stt.capability.lang_detect", true);
    tr_gguf_writer_set_bool(w, "stt.capability.translate", true);
    tr_gguf_writer_set_arr_str(w, "stt.translation.target_languages", langs, 8);
    tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    tr_gguf_writer_set_str(w, "tokenizer.ggml.pre", "tekken");
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", VS_BOS);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", VS_EOS);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", VS_UNK);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", VS_PAD);
    tr_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    tr_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
#define EK "stt.voxtral.encoder."
    tr_gguf_writer_set_u32(w, EK "n_layers", (uint32_t)n_enc);
    tr_gguf_writer_set_u32(w, EK "d_model", VS_ENC_D);
    tr_gguf_writer_set_u32(w, EK "n_heads", VS_ENC_H);
    tr_gguf_writer_set_u32(w, EK "head_dim", VS_ENC_D / VS_ENC_H);
    tr_gguf_writer_set_u32(w, EK "ffn_dim", VS_ENC_F);
    tr_gguf_writer_set_u32(w, EK "num_mel_bins", VS_MELS);
    tr_gguf_writer_set_u32(w, EK "max_source_positions", VS_POS);
    tr_gguf_writer_set_str(w, EK "activation", "gelu");
#undef EK
    tr_gguf_writer_set_u32(w, "stt.voxtral.projector.downsample_factor", VS_DS);
    tr_gguf_writer_set_u32(w, "stt.voxtral.projector.input_dim", VS_ENC_D * VS_DS);
    tr_gguf_writer_set_str(w, "stt.voxtral.projector.hidden_act", "gelu");
#define DK "stt.voxtral.decoder."
    tr_gguf_writer_set_u32(w, DK "n_layers", (uint32_t)n_dec);
    tr_gguf_writer_set_u32(w, DK "hidden_size", VS_LM_D);
    tr_gguf_writer_set_u32(w, DK "intermediate_size", VS_LM_F);
    tr_gguf_writer_set_u32(w, DK "n_heads", VS_LM_H);
    tr_gguf_writer_set_u32(w, DK "n_kv_heads", VS_LM_KV);
    tr_gguf_writer_set_u32(w, DK "head_dim", VS_HD);
    tr_gguf_writer_set_str(w, DK "hidden_act", "silu");
    tr_gguf_writer_set_f32(w, DK "rms_norm_eps", 1e-5f);
    tr_gguf_writer_set_f32(w, DK "rope_theta", 1e8f);
    tr_gguf_writer_set_u32(w, DK "max_position_embeddings",
                           o->max_pos ? (uint32_t)o->max_pos : 131072u);
    tr_gguf_writer_set_bool(w, DK "tie_word_embeddings", false);
    tr_gguf_writer_set_u32(w, DK "vocab_size", (uint32_t)V);
#undef DK
    tr_gguf_writer_set_u32(w, "stt.voxtral.audio_token_id", VS_AUDIO);
#define FK "stt.frontend."
    tr_gguf_writer_set_str(w, FK "type", "mel");
    tr_gguf_writer_set_u32(w, FK "num_mels", VS_MELS);
    tr_gguf_writer_set_u32(w, FK "sample_rate", 16000);
    tr_gguf_writer_set_u32(w, FK "n_fft", 400);
    tr_gguf_writer_set_u32(w, FK "win_length", 400);
    tr_gguf_writer_set_u32(w, FK "hop_length", 160);
    tr_gguf_writer_set_str(w, FK "window", "hann_periodic");
    tr_gguf_writer_set_str(w, FK "normalize", "per_utterance");
    tr_gguf_writer_set_f32(w, FK "dither", 0.0f);
    tr_gguf_writer_set_f32(w, FK "pre_emphasis", 0.0f);
    tr_gguf_writer_set_f32(w, FK "f_min", 0.0f);
    tr_gguf_writer_set_f32(w, FK "f_max", 8000.0f);
    tr_gguf_writer_set_str(w, FK "pad_mode", "reflect");
    tr_gguf_writer_set_bool(w, FK "center", true);
    tr_gguf_writer_set_str(w, FK "mel_norm", "slaney");
    tr_gguf_writer_set_u32(w, FK "chunk_length", 30);
    tr_gguf_writer_set_u32(w, FK "n_samples", 480000);
    if (!o->no_nb_max) tr_gguf_writer_set_u32(w, FK "nb_max_frames", 3000);
#undef FK
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)pieces, (size_t)V);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, (size_t)V);
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", vs_merges,
                               sizeof vs_merges / sizeof vs_merges[0]);

    /* front-end buffers: the periodic Hann window (the filterbank is computed) */
    float win[400];
    for (int i = 0; i < 400; i++) win[i] = 0.5f - 0.5f * cosf(6.283185307179586f * i / 400.0f);
    vs_put(w, "frontend.window", TR_F32, 1, 400, 1, 1, win, 0, 0);

    /* conv kernels: F16 in the BF16 and F16 files (no BF16 conv), else F32 */
    const int d = VS_ENC_D, ct = lt == TR_F16 || lt == TR_BF16 ? TR_F16 : TR_F32;
    char n[96];
    vs_put(w, "enc.conv.0.weight", ct, 3, 3, VS_MELS, d, NULL, 0.3f, 0.0f);
    VS_VEC("enc.conv.0.bias", d, 0.0f, 0.1f);
    vs_put(w, "enc.conv.1.weight", ct, 3, 3, d, d, NULL, 0.3f, 0.0f);
    VS_VEC("enc.conv.1.bias", d, 0.0f, 0.1f);
    vs_put(w, "enc.pos_emb.weight", TR_F32, 2, d, VS_POS, 1, NULL, 0.5f, 0.0f);
    VS_VEC("enc.ln_post.weight", d, 1.0f, 0.1f);
    VS_VEC("enc.ln_post.bias", d, 0.0f, 0.1f);
    for (int l = 0; l < n_enc; l++) {
#define BN(s) (snprintf(n, sizeof n, "enc.blocks.%d." s, l), n)
        VS_VEC(BN("norm_attn.weight"), d, 1.0f, 0.1f);
        VS_VEC(BN("norm_attn.bias"), d, 0.0f, 0.1f);
        VS_LIN(BN("attn.q.weight"), d, d, 0.3f);
        VS_VEC(BN("attn.q.bias"), d, 0.0f, 0.1f);
        VS_LIN(BN("attn.k.weight"), d, d, 0.3f);
        VS_LIN(BN("attn.v.weight"), d, d, 0.3f);
        VS_VEC(BN("attn.v.bias"), d, 0.0f, 0.1f);
        VS_LIN(BN("attn.out.weight"), d, d, 0.3f);
        VS_VEC(BN("attn.out.bias"), d, 0.0f, 0.1f);
        VS_VEC(BN("norm_ffn.weight"), d, 1.0f, 0.1f);
        VS_VEC(BN("norm_ffn.bias"), d, 0.0f, 0.1f);
        VS_LIN(BN("ffn.fc1.weight"), d, VS_ENC_F, 0.3f);
        VS_VEC(BN("ffn.fc1.bias"), VS_ENC_F, 0.0f, 0.1f);
        VS_LIN(BN("ffn.fc2.weight"), VS_ENC_F, d, 0.3f);
        VS_VEC(BN("ffn.fc2.bias"), d, 0.0f, 0.1f);
#undef BN
    }
    const int H = VS_LM_D, Q = VS_LM_H * VS_HD, K = VS_LM_KV * VS_HD, I = VS_LM_F;
    VS_LIN("proj.linear_1.weight", d * VS_DS, H, 0.3f);
    VS_LIN("proj.linear_2.weight", H, H, 0.3f);
    float *emb = malloc((size_t)V * H * sizeof(float)),
          *head = malloc((size_t)V * H * sizeof(float));
    vs_chain_lm(pieces, V, emb, head);
    vs_put(w, "dec.token_embd.weight", lt, 2, H, V, 1, emb, 0, 0);
    VS_VEC("dec.output_norm.weight", H, 1.0f, 0.0f);
    vs_put(w, "dec.output.weight", lt, 2, H, V, 1, head, 0, 0);
    free(emb);
    free(head);
    for (int l = 0; l < n_dec; l++) {
#define BN(s) (snprintf(n, sizeof n, "dec.blocks.%d." s, l), n)
        VS_VEC(BN("norm_attn.weight"), H, 1.0f, 0.1f);
        VS_VEC(BN("norm_ffn.weight"), H, 1.0f, 0.1f);
        VS_LIN(BN("attn.q.weight"), H, Q, 0.2f);
        VS_LIN(BN("attn.k.weight"), H, K, 0.2f);
        VS_LIN(BN("attn.v.weight"), H, K, 0.05f);
        VS_LIN(BN("attn.o.weight"), Q, H, 0.05f);
        VS_LIN(BN("ffn.gate.weight"), H, I, 0.05f);
        VS_LIN(BN("ffn.up.weight"), H, I, 0.05f);
        VS_LIN(BN("ffn.down.weight"), I, H, 0.05f);
#undef BN
    }
    return tr_synth_finish(w, path, pieces, types, V);
}

#endif
