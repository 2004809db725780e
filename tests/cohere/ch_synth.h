/* Tiny random Cohere Transcribe GGUF files for tests (docs/formats/cohere.md
 * §2, §3): the FastConformer of tests/fastconformer/fc_synth.h under
 * stt.cohere.encoder.* (biased key set, 128 mels), enc_dec_proj, the
 * pre-LN decoder with tied head + head.bias, a 64-piece SentencePiece
 * vocabulary with the prompt's special pieces, and the front-end keys.
 * Fault injection (a key left out or mistyped, a tensor left out or
 * misshaped, a prompt piece renamed) drives the loader's error paths. */
#ifndef TR_TEST_CH_SYNTH_H
#define TR_TEST_CH_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fastconformer/fc_synth.h"
#include "gguf/gguf_writer.h"

#define CH_SYNTH_V 64 /* default vocabulary */

typedef struct ch_synth_cfg {
    fc_synth_cfg enc; /* encoder, weight types (f16 / lin_type) and tensor faults */
    int dec_layers, hidden, heads, inner, max_seq;
    const char *activation;
    float eos_bias;         /* added to head.bias[3] (<|endoftext|>): earlier stops */
    const char *skip_key;   /* a full key name left out */
    const char *i32_key;    /* a full UINT32 key name written as INT32 */
    const char *drop_piece; /* a vocabulary piece renamed */
    int n_vocab;            /* 0: CH_SYNTH_V */
    int n_mels;             /* 0: 128 */
    int sub_factor;         /* 0: 8 */
} ch_synth_cfg;

static inline ch_synth_cfg ch_synth_default(void) {
    ch_synth_cfg c;
    memset(&c, 0, sizeof c);
    c.enc = fc_synth_biased("stt.cohere.encoder.");
    c.dec_layers = 2;
    c.hidden = 24;
    c.heads = 2;
    c.inner = 48;
    c.max_seq = 64;
    c.activation = "relu";
    c.eos_bias = 0.0f;
    return c;
}

/* The vocabulary: the NeMo canary2 special layout the prompt needs, three
 * language tags, "▁" and word pieces. */
static inline const char *ch_synth_piece(int i, char *buf, size_t n) {
    static const char *const sp[] = {"<unk>",
                                     "<|nospeech|>",
                                     "<pad>",
                                     "<|endoftext|>",
                                     "<|startoftranscript|>",
                                     "<|pnc|>",
                                     "<|nopnc|>",
                                     "<|startofcontext|>",
                                     "<|itn|>",
                                     "<|noitn|>",
                                     "<|timestamp|>",
                                     "<|notimestamp|>",
                                     "<|diarize|>",
                                     "<|nodiarize|>",
                                     "<|spkchange|>",
                                     "<|audioseparator|>",
                                     "<|emo:undefined|>",
                                     "<|en|>",
                                     "<|de|>",
                                     "<|fr|>",
                                     "\xE2\x96\x81"};
    const int n_sp = (int)(sizeof sp / sizeof sp[0]);
    if (i < n_sp) return sp[i];
    static const char letters[] = "etaoinshrdlucmfw";
    int k = i - n_sp;
    if (k < CH_SYNTH_V - n_sp)
        snprintf(buf, n, "%s%c%c", k % 2 ? "" : "\xE2\x96\x81", letters[k % 16],
                 letters[(k / 3) % 16]);
    else /* larger vocabularies (real-dims files): unique pieces */
        snprintf(buf, n, "\xE2\x96\x81w%d", k);
    return buf;
}

static inline void ch_synth_u32(gguf_writer *w, const ch_synth_cfg *cfg, const char *key,
                                uint32_t v) {
    if (cfg->skip_key && strcmp(cfg->skip_key, key) == 0) return;
    if (cfg->i32_key && strcmp(cfg->i32_key, key) == 0)
        tr_gguf_writer_set_i32(w, key, (int32_t)v);
    else
        tr_gguf_writer_set_u32(w, key, v);
}

static inline void ch_synth_str(gguf_writer *w, const ch_synth_cfg *cfg, const char *key,
                                const char *v) {
    if (!cfg->skip_key || strcmp(cfg->skip_key, key) != 0) tr_gguf_writer_set_str(w, key, v);
}

static inline void ch_synth_f32(gguf_writer *w, const ch_synth_cfg *cfg, const char *key, float v) {
    if (!cfg->skip_key || strcmp(cfg->skip_key, key) != 0) tr_gguf_writer_set_f32(w, key, v);
}

/* Adds every key and tensor of the file to w; false on failure. */
static inline bool ch_synth_fill(gguf_writer *w, const ch_synth_cfg *cfg) {
    fc_synth_cfg enc = cfg->enc;
    enc.n_mels = cfg->n_mels ? cfg->n_mels : 128;
    enc.sub_factor = cfg->sub_factor ? cfg->sub_factor : 8;
    bool ok = true;
    ch_synth_str(w, cfg, "general.architecture", "cohere_asr");
    ch_synth_str(w, cfg, "general.name", "Cohere Transcribe");
    const char *const langs[] = {"en", "de", "fr", "es"}; /* es: listed, no tag piece */
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, 4);
    ch_synth_str(w, cfg, "stt.variant", "cohere-synth");
    /* tokenizer */
    ch_synth_str(w, cfg, "tokenizer.ggml.model", "bpe");
    const int V = cfg->n_vocab > 0 ? cfg->n_vocab : CH_SYNTH_V;
    const char **pieces = malloc(sizeof *pieces * (size_t)V);
    char(*bufs)[16] = malloc(sizeof *bufs * (size_t)V);
    float *scores = malloc(sizeof *scores * (size_t)(V + 1));
    int32_t *types = malloc(sizeof *types * (size_t)V);
    if (!pieces || !bufs || !scores || !types) {
        free(pieces), free(bufs), free(scores), free(types);
        return false;
    }
    for (int i = 0; i < V; i++) {
        pieces[i] = ch_synth_piece(i, bufs[i], sizeof bufs[i]);
        if (cfg->drop_piece && strcmp(pieces[i], cfg->drop_piece) == 0) pieces[i] = "<|dropped|>";
        scores[i] = -(float)i;
        types[i] = i == 0 ? 2 : i < 20 ? 3 : 1;
    }
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", pieces, (size_t)V);
    tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", scores, (size_t)V);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, (size_t)V);
    free(pieces);
    free(bufs);
    free(types);
    ch_synth_u32(w, cfg, "tokenizer.ggml.unknown_token_id", 0);
    ch_synth_u32(w, cfg, "tokenizer.ggml.bos_token_id", 4);
    ch_synth_u32(w, cfg, "tokenizer.ggml.eos_token_id", 3);
    ch_synth_u32(w, cfg, "tokenizer.ggml.padding_token_id", 2);
    /* encoder keys (+ stt.frontend.num_mels) and tensors */
    ok = fc_synth_add_encoder(w, &enc) && ok;
    ch_synth_u32(w, cfg, "stt.cohere.decoder.n_layers", (uint32_t)cfg->dec_layers);
    ch_synth_u32(w, cfg, "stt.cohere.decoder.hidden_size", (uint32_t)cfg->hidden);
    ch_synth_u32(w, cfg, "stt.cohere.decoder.n_heads", (uint32_t)cfg->heads);
    ch_synth_u32(w, cfg, "stt.cohere.decoder.inner_size", (uint32_t)cfg->inner);
    ch_synth_u32(w, cfg, "stt.cohere.decoder.max_seq_len", (uint32_t)cfg->max_seq);
    ch_synth_str(w, cfg, "stt.cohere.decoder.activation", cfg->activation);
    ch_synth_u32(w, cfg, "stt.cohere.decoder_start_token_id", 20);
    tr_gguf_writer_set_bool(w, "stt.cohere.head.log_softmax", true);
    tr_gguf_writer_set_bool(w, "stt.cohere.head.tied_weights", true);
    /* front end */
    ch_synth_str(w, cfg, "stt.frontend.type", "mel");
    ch_synth_u32(w, cfg, "stt.frontend.sample_rate", 16000);
    ch_synth_u32(w, cfg, "stt.frontend.n_fft", 512);
    ch_synth_u32(w, cfg, "stt.frontend.win_length", 400);
    ch_synth_u32(w, cfg, "stt.frontend.hop_length", 160);
    ch_synth_str(w, cfg, "stt.frontend.window", "hann");
    ch_synth_str(w, cfg, "stt.frontend.normalize", "per_feature");
    ch_synth_f32(w, cfg, "stt.frontend.dither", 0.0f);
    ch_synth_f32(w, cfg, "stt.frontend.pre_emphasis", 0.97f);
    ch_synth_f32(w, cfg, "stt.frontend.f_min", 0.0f);
    ch_synth_f32(w, cfg, "stt.frontend.f_max", 8000.0f);
    ch_synth_str(w, cfg, "stt.frontend.pad_mode", "constant");

    /* decoder tensors: LIN class through fc_add's type rules */
    fc_synth_cfg tc = enc;
    fc_synth_ctx c = {w, &tc, cfg->enc.seed * 7u + 11u, true};
    const int64_t D = cfg->hidden, E = enc.d, I = cfg->inner, S = cfg->max_seq;
    /* block outputs well above the embedding's share of the residual, or
     * the tied head just repeats the input token */
    const float sd = 3.0f / sqrtf((float)D), si = 3.0f / sqrtf((float)I);
    fc_add(&c, "enc_dec_proj.weight", true, 2, E, D, 1, 1, 1.0f / sqrtf((float)E), 0);
    fc_add(&c, "enc_dec_proj.bias", false, 1, D, 1, 1, 1, 0.1f, 0);
    fc_add(&c, "dec.embed.token.weight", true, 2, D, V, 1, 1, 1.0f, 0);
    fc_add(&c, "dec.embed.pos_enc", false, 2, D, S, 1, 1, 0.3f, 0);
    fc_add(&c, "dec.embed.norm.weight", false, 1, D, 1, 1, 1, 0, 1);
    fc_add(&c, "dec.embed.norm.bias", false, 1, D, 1, 1, 1, 0.1f, 0);
    char name[128];
    for (int j = 0; j < cfg->dec_layers; j++) {
        static const char *const norms[3] = {"norm_self", "norm_cross", "norm_ff"};
        static const char *const attn[2] = {"self_attn", "cross_attn"};
        static const char *const proj[4] = {"q", "k", "v", "out"};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "dec.blocks.%d.%s.weight", j, norms[k]);
            fc_add(&c, name, false, 1, D, 1, 1, 1, 0, 1);
            snprintf(name, sizeof name, "dec.blocks.%d.%s.bias", j, norms[k]);
            fc_add(&c, name, false, 1, D, 1, 1, 1, 0.1f, 0);
            if (k == 2) break;
            for (int p = 0; p < 4; p++) {
                snprintf(name, sizeof name, "dec.blocks.%d.%s.%s.weight", j, attn[k], proj[p]);
                fc_add(&c, name, true, 2, D, D, 1, 1, sd, 0);
                snprintf(name, sizeof name, "dec.blocks.%d.%s.%s.bias", j, attn[k], proj[p]);
                fc_add(&c, name, false, 1, D, 1, 1, 1, 0.1f, 0);
            }
        }
        snprintf(name, sizeof name, "dec.blocks.%d.ff.dense_in.weight", j);
        fc_add(&c, name, true, 2, D, I, 1, 1, sd, 0);
        snprintf(name, sizeof name, "dec.blocks.%d.ff.dense_in.bias", j);
        fc_add(&c, name, false, 1, I, 1, 1, 1, 0.1f, 0);
        snprintf(name, sizeof name, "dec.blocks.%d.ff.dense_out.weight", j);
        fc_add(&c, name, true, 2, I, D, 1, 1, si, 0);
        snprintf(name, sizeof name, "dec.blocks.%d.ff.dense_out.bias", j);
        fc_add(&c, name, false, 1, D, 1, 1, 1, 0.1f, 0);
    }
    fc_add(&c, "dec.final_norm.weight", false, 1, D, 1, 1, 1, 0, 1);
    fc_add(&c, "dec.final_norm.bias", false, 1, D, 1, 1, 1, 0.1f, 0);
    if (!tc.skip_tensor || strcmp(tc.skip_tensor, "head.bias") != 0) {
        float *hb = scores; /* V + 1 floats */
        uint32_t rng = 99;
        for (int i = 0; i < V; i++) hb[i] = 1.5f * fc_rand(&rng);
        hb[3] += cfg->eos_bias;
        const int64_t ne[1] = {
            tc.misshape_tensor && !strcmp(tc.misshape_tensor, "head.bias") ? V + 1 : V};
        hb[V] = 0;
        ok = tr_gguf_writer_add_tensor(w, "head.bias", 0 /* F32 */, 1, ne, hb) && ok;
    }
    float win[400];
    for (int j = 0; j < 400; j++) win[j] = 0.5f - 0.5f * cosf(2.0f * 3.14159265358979f * j / 399);
    const int64_t wne[1] = {400};
    ok = tr_gguf_writer_add_tensor(w, "frontend.window", 0, 1, wne, win) && ok;
    free(scores);
    return c.ok && ok;
}

/* Returns a malloc'ed GGUF image (caller frees) or NULL. */
static inline void *ch_synth_build(const ch_synth_cfg *cfg, size_t *size) {
    gguf_writer *w = tr_gguf_writer_create();
    void *img = NULL;
    if (w && ch_synth_fill(w, cfg) && tr_gguf_writer_to_memory(w, &img, size) != TRANSCRIBE_OK)
        img = NULL;
    tr_gguf_writer_free(w);
    return img;
}

/* Writes the file to path; false on failure. */
static inline bool ch_synth_write(const ch_synth_cfg *cfg, const char *path) {
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = w && ch_synth_fill(w, cfg) && tr_gguf_writer_write(w, path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

#endif
