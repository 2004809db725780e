/* A synthetic Moonshine GGUF written by the tests themselves
 * (docs/formats/moonshine.md §2–§3): every key in the published schema, a
 * small SentencePiece-style vocabulary (specials, the 256 byte pieces,
 * word pieces), random weights of a configurable geometry in F32, F16 or
 * Q8_0 — and the edits the error tests need: a key left out or written
 * with another type, a key given another value, a tensor left out or
 * misshaped. The models decode varied (meaningless) text. */
#ifndef TR_TEST_MN_SYNTH_H
#define TR_TEST_MN_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

typedef struct mn_synth {
    int d, heads, enc_layers, dec_layers, ffn, max_pos;
    int ks[3], st[3];
    int wtype; /* matrices and embedding: 0 F32, 1 F16, 8 Q8_0 */
    uint64_t seed;
    /* edits: a key left out, a key written as another type, a tensor left
     * out, a tensor with one more row */
    const char *drop_key, *mistype_key, *drop_tensor, *bad_tensor;
    /* value edits (0 = as published) */
    const char *enc_act, *dec_act, *frontend_type;
    int sample_rate, gn_groups, ch0, vocab_size;
    float rot_factor;
    bool untied, attn_bias, stem_u32, stem_two;
    float eos_amp; /* scale of EOS's embedding row (words: 1) */
} mn_synth;

static inline mn_synth mn_synth_default(void) {
    mn_synth c = {.d = 32,
                  .heads = 4,
                  .enc_layers = 2,
                  .dec_layers = 2,
                  .ffn = 64,
                  .max_pos = 194,
                  .ks = {127, 7, 3},
                  .st = {64, 3, 2},
                  .seed = 2,
                  .eos_amp = 1.0f};
    return c;
}

#define MN_SYNTH_V (3 + 256 + 41)
#define MN_SP      "\xe2\x96\x81" /* U+2581, the word-start mark */

typedef struct mn_rng {
    uint64_t s;
} mn_rng;

static inline float mn_rand(mn_rng *r) { /* uniform in [-1, 1) */
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return (float)((double)(r->s >> 40) / (double)(1ull << 23) - 1.0);
}

typedef struct mn_w {
    gguf_writer *w;
    const mn_synth *c;
    mn_rng rng;
    bool ok;
} mn_w;

static inline bool mn_key(mn_w *o, const char *key) {
    return !(o->c->drop_key && !strcmp(o->c->drop_key, key));
}
static inline bool mn_mistyped(mn_w *o, const char *key) {
    if (o->c->mistype_key && !strcmp(o->c->mistype_key, key)) {
        o->ok &= tr_gguf_writer_set_str(o->w, key, "mistyped");
        return true;
    }
    return false;
}
static inline void mn_u32(mn_w *o, const char *key, uint32_t v) {
    if (mn_key(o, key) && !mn_mistyped(o, key)) o->ok &= tr_gguf_writer_set_u32(o->w, key, v);
}
static inline void mn_f32(mn_w *o, const char *key, float v) {
    if (mn_key(o, key) && !mn_mistyped(o, key)) o->ok &= tr_gguf_writer_set_f32(o->w, key, v);
}
static inline void mn_bool(mn_w *o, const char *key, bool v) {
    if (mn_key(o, key) && !mn_mistyped(o, key)) o->ok &= tr_gguf_writer_set_bool(o->w, key, v);
}
static inline void mn_str(mn_w *o, const char *key, const char *v) {
    if (!mn_key(o, key)) return;
    if (o->c->mistype_key && !strcmp(o->c->mistype_key, key)) {
        o->ok &= tr_gguf_writer_set_u32(o->w, key, 7);
        return;
    }
    o->ok &= tr_gguf_writer_set_str(o->w, key, v);
}
/* A conv_stem array: INT32 as the converter writes, or UINT32. */
static inline void mn_arr3(mn_w *o, const char *key, const int *v) {
    if (!mn_key(o, key) || mn_mistyped(o, key)) return;
    const int n = o->c->stem_two ? 2 : 3;
    int32_t a[3] = {v[0], v[1], v[2]};
    o->ok &= tr_gguf_writer_set_arr_i32(o->w, key, a, (size_t)n);
}

/* stem_u32: the writer has no UINT32 arrays, so the INT32 arrays' element
 * type is patched in the image (key, then ARRAY = 9, then the element
 * type 5 → 4). */
static inline void mn_patch_u32(unsigned char *buf, size_t size) {
    static const char *const keys[] = {"stt.moonshine.conv_stem.channels",
                                       "stt.moonshine.conv_stem.kernel_sizes",
                                       "stt.moonshine.conv_stem.strides"};
    for (int k = 0; k < 3; k++) {
        const size_t L = strlen(keys[k]);
        for (size_t i = 0; i + L + 8 <= size; i++) {
            if (memcmp(buf + i, keys[k], L) != 0) continue;
            uint32_t t, e;
            memcpy(&t, buf + i + L, 4);
            memcpy(&e, buf + i + L + 4, 4);
            if (t == 9 && e == 5) {
                e = 4;
                memcpy(buf + i + L + 4, &e, 4);
            }
            break;
        }
    }
}

/* A tensor of random values (amp · U[-1, 1)) with ggml dims ne. */
static inline void mn_tensor(mn_w *o, const char *name, int type, int nd, int64_t n0, int64_t n1,
                             int64_t n2, float amp, float base) {
    if (o->c->drop_tensor && !strcmp(o->c->drop_tensor, name)) return;
    if (o->c->bad_tensor && !strcmp(o->c->bad_tensor, name)) n0 += nd > 1 ? 32 : 1;
    int64_t ne[3] = {n0, n1, n2};
    const int64_t n = n0 * n1 * n2;
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = base + amp * mn_rand(&o->rng);
    if (type == 0) {
        o->ok &= tr_gguf_writer_add_tensor(o->w, name, 0, nd, ne, v);
    } else {
        size_t rb = tr_row_bytes(type, n0);
        unsigned char *q = malloc(rb * (size_t)(n1 * n2));
        for (int64_t r = 0; r < n1 * n2; r++)
            o->ok &= tr_quantize_row(type, v + r * n0, q + r * rb, n0);
        o->ok &= tr_gguf_writer_add_tensor(o->w, name, type, nd, ne, q);
        free(q);
    }
    free(v);
}

/* The tied embedding / head: word pieces at full scale, byte pieces and
 * the other specials small (so the text is mostly words), EOS larger (so
 * a decode ends now and then). */
static inline void mn_embedding(mn_w *o, int type, int d, int V) {
    const char *name = "dec.token_embd.weight";
    if (o->c->drop_tensor && !strcmp(o->c->drop_tensor, name)) return;
    const int d_w = o->c->bad_tensor && !strcmp(o->c->bad_tensor, name) ? d + 32 : d;
    float *v = malloc((size_t)d_w * (size_t)V * sizeof(float));
    for (int r = 0; r < V; r++) {
        const float amp = r == 2 ? o->c->eos_amp : r < 259 ? 0.15f : 1.0f;
        for (int i = 0; i < d_w; i++) v[(size_t)r * d_w + i] = amp * mn_rand(&o->rng);
    }
    const int64_t ne[2] = {d_w, V};
    if (type == 0) {
        o->ok &= tr_gguf_writer_add_tensor(o->w, name, 0, 2, ne, v);
    } else {
        const size_t rb = tr_row_bytes(type, d_w);
        unsigned char *q = malloc(rb * (size_t)V);
        for (int r = 0; r < V; r++)
            o->ok &= tr_quantize_row(type, v + (size_t)r * d_w, q + r * rb, d_w);
        o->ok &= tr_gguf_writer_add_tensor(o->w, name, type, 2, ne, q);
        free(q);
    }
    free(v);
}

static inline bool mn_synth_write(const mn_synth *c, const char *path) {
    mn_w o = {tr_gguf_writer_create(), c, {c->seed * 0x9E3779B97F4A7C15ull + 1}, true};
    const int d = c->d, F = c->ffn, V = MN_SYNTH_V;
    const int ch[3] = {c->ch0 ? c->ch0 : d, 2 * d, d};
    char name[96];
    mn_str(&o, "general.architecture", "moonshine");
    mn_str(&o, "general.name", "Moonshine Synthetic");
    mn_str(&o, "stt.variant", "moonshine-synth");
    if (mn_key(&o, "general.languages")) {
        const char *const langs[] = {"en"};
        o.ok &= tr_gguf_writer_set_arr_str(o.w, "general.languages", langs, 1);
    }
    mn_bool(&o, "stt.capability.lang_detect", false);
    mn_bool(&o, "stt.capability.translate", false);
    mn_bool(&o, "stt.capability.timestamps", false);
    mn_str(&o, "tokenizer.ggml.model", "bpe");
    mn_u32(&o, "tokenizer.ggml.unknown_token_id", 0);
    mn_u32(&o, "tokenizer.ggml.bos_token_id", 1);
    mn_u32(&o, "tokenizer.ggml.eos_token_id", 2);
#define K(x) "stt.moonshine." x
    mn_u32(&o, K("encoder.n_layers"), (uint32_t)c->enc_layers);
    mn_u32(&o, K("encoder.d_model"), (uint32_t)d);
    mn_u32(&o, K("encoder.n_heads"), (uint32_t)c->heads);
    mn_u32(&o, K("encoder.n_kv_heads"), (uint32_t)c->heads);
    mn_u32(&o, K("encoder.ffn_dim"), (uint32_t)F);
    mn_str(&o, K("encoder.activation"), c->enc_act ? c->enc_act : "gelu");
    mn_u32(&o, K("decoder.n_layers"), (uint32_t)c->dec_layers);
    mn_u32(&o, K("decoder.d_model"), (uint32_t)d);
    mn_u32(&o, K("decoder.n_heads"), (uint32_t)c->heads);
    mn_u32(&o, K("decoder.n_kv_heads"), (uint32_t)c->heads);
    mn_u32(&o, K("decoder.ffn_dim"), (uint32_t)F);
    mn_str(&o, K("decoder.activation"), c->dec_act ? c->dec_act : "silu");
    mn_u32(&o, K("decoder.vocab_size"), (uint32_t)(c->vocab_size ? c->vocab_size : V));
    mn_u32(&o, K("decoder.max_position_embeddings"), (uint32_t)c->max_pos);
    mn_bool(&o, K("decoder.tie_word_embeddings"), !c->untied);
    mn_f32(&o, K("partial_rotary_factor"), c->rot_factor != 0 ? c->rot_factor : 0.9f);
    mn_f32(&o, K("rope_theta"), 10000.0f);
    mn_bool(&o, K("attention_bias"), c->attn_bias);
    mn_u32(&o, K("pad_head_dim_to_multiple_of"), 8);
    mn_arr3(&o, K("conv_stem.channels"), ch);
    mn_arr3(&o, K("conv_stem.kernel_sizes"), c->ks);
    mn_arr3(&o, K("conv_stem.strides"), c->st);
    mn_u32(&o, K("conv_stem.groupnorm_num_groups"), (uint32_t)(c->gn_groups ? c->gn_groups : 1));
    mn_f32(&o, K("conv_stem.groupnorm_eps"), 1e-5f);
    mn_u32(&o, K("decoder_start_token_id"), 1);
    mn_u32(&o, K("bos_token_id"), 1);
    mn_u32(&o, K("eos_token_id"), 2);
    mn_u32(&o, K("pad_token_id"), 2);
#undef K
    mn_str(&o, "stt.frontend.type", c->frontend_type ? c->frontend_type : "raw");
    mn_u32(&o, "stt.frontend.sample_rate", (uint32_t)(c->sample_rate ? c->sample_rate : 16000));
    mn_u32(&o, "stt.frontend.num_mels", 1);
    /* vocabulary (docs/formats/moonshine.md §3.4) */
    {
        static const char *const words[41] = {MN_SP "the",
                                              MN_SP "a",
                                              MN_SP "and",
                                              MN_SP "so",
                                              MN_SP "my",
                                              MN_SP "you",
                                              MN_SP "can",
                                              MN_SP "do",
                                              MN_SP "for",
                                              MN_SP "your",
                                              MN_SP "ask",
                                              MN_SP "not",
                                              MN_SP "what",
                                              MN_SP "country",
                                              MN_SP "fellow",
                                              "s",
                                              "ing",
                                              "ed",
                                              MN_SP "I",
                                              MN_SP "we",
                                              MN_SP "it",
                                              MN_SP "is",
                                              MN_SP "of",
                                              MN_SP "to",
                                              MN_SP "in",
                                              MN_SP "on",
                                              MN_SP "at",
                                              MN_SP "be",
                                              MN_SP "he",
                                              MN_SP "she",
                                              MN_SP "they",
                                              "er",
                                              "ly",
                                              ",",
                                              ".",
                                              "?",
                                              MN_SP "one",
                                              MN_SP "two",
                                              MN_SP "day",
                                              MN_SP "time",
                                              "<<ST_0>>"};
        const char *toks[MN_SYNTH_V];
        int32_t types[MN_SYNTH_V];
        char bytes[256][8];
        toks[0] = "<unk>", toks[1] = "<s>", toks[2] = "</s>";
        types[0] = 2, types[1] = types[2] = 3;
        for (int b = 0; b < 256; b++) {
            snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
            toks[3 + b] = bytes[b];
            types[3 + b] = 6;
        }
        for (int j = 0; j < 41; j++) toks[259 + j] = words[j], types[259 + j] = j == 40 ? 3 : 1;
        if (mn_key(&o, "tokenizer.ggml.tokens") && !mn_mistyped(&o, "tokenizer.ggml.tokens"))
            o.ok &= tr_gguf_writer_set_arr_str(o.w, "tokenizer.ggml.tokens", toks, MN_SYNTH_V);
        o.ok &= tr_gguf_writer_set_arr_i32(o.w, "tokenizer.ggml.token_type", types, MN_SYNTH_V);
    }
    /* tensors (docs/formats/moonshine.md §3) */
    const int wt = c->wtype, c1 = ch[1];
    const float a_d = 1.0f / 5.6f, a_f = 1.0f / 8.0f; /* ~1/sqrt(fan-in) */
    mn_tensor(&o, "enc.conv.0.weight", 0, 3, c->ks[0], 1, ch[0], 0.6f, 0.0f);
    mn_tensor(&o, "enc.conv.1.weight", 0, 3, c->ks[1], d, c1, 0.08f, 0.0f);
    mn_tensor(&o, "enc.conv.1.bias", 0, 1, c1, 1, 1, 0.1f, 0.0f);
    mn_tensor(&o, "enc.conv.2.weight", 0, 3, c->ks[2], c1, d, 0.08f, 0.0f);
    mn_tensor(&o, "enc.conv.2.bias", 0, 1, d, 1, 1, 0.1f, 0.0f);
    mn_tensor(&o, "enc.conv.norm.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
    mn_tensor(&o, "enc.conv.norm.bias", 0, 1, d, 1, 1, 0.1f, 0.0f);
    mn_tensor(&o, "enc.final_norm.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
    for (int i = 0; i < c->enc_layers; i++) {
#define T(part, ...)                                                                               \
    (snprintf(name, sizeof name, "enc.blocks.%d." part, i), mn_tensor(&o, name, __VA_ARGS__))
        T("norm_attn.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
        T("attn.q.weight", wt, 2, d, d, 1, 2 * a_d, 0.0f);
        T("attn.k.weight", wt, 2, d, d, 1, 2 * a_d, 0.0f);
        T("attn.v.weight", wt, 2, d, d, 1, a_d, 0.0f);
        T("attn.out.weight", wt, 2, d, d, 1, a_d, 0.0f);
        T("norm_ffn.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
        T("ffn.fc1.weight", wt, 2, d, F, 1, a_d, 0.0f);
        T("ffn.fc1.bias", 0, 1, F, 1, 1, 0.1f, 0.0f);
        T("ffn.fc2.weight", wt, 2, F, d, 1, a_f, 0.0f);
        T("ffn.fc2.bias", 0, 1, d, 1, 1, 0.1f, 0.0f);
#undef T
    }
    mn_embedding(&o, wt, d, V);
    mn_tensor(&o, "dec.final_norm.weight", 0, 1, d, 1, 1, 3.0f, 0.0f);
    for (int i = 0; i < c->dec_layers; i++) {
#define T(part, ...)                                                                               \
    (snprintf(name, sizeof name, "dec.blocks.%d." part, i), mn_tensor(&o, name, __VA_ARGS__))
        static const char *const pr[4] = {"q", "k", "v", "out"};
        T("norm_self.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
        for (int p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "dec.blocks.%d.self_attn.%s.weight", i, pr[p]);
            mn_tensor(&o, name, wt, 2, d, d, 1, a_d, 0.0f);
        }
        T("norm_cross.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
        for (int p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "dec.blocks.%d.cross_attn.%s.weight", i, pr[p]);
            mn_tensor(&o, name, wt, 2, d, d, 1, a_d, 0.0f);
        }
        T("norm_ffn.weight", 0, 1, d, 1, 1, 0.2f, 1.0f);
        T("ffn.fc1.weight", wt, 2, d, 2 * F, 1, a_d, 0.0f);
        T("ffn.fc1.bias", 0, 1, 2 * F, 1, 1, 0.1f, 0.0f);
        T("ffn.fc2.weight", wt, 2, F, d, 1, a_f, 0.0f);
        T("ffn.fc2.bias", 0, 1, d, 1, 1, 0.1f, 0.0f);
#undef T
    }
    void *buf = NULL;
    size_t size = 0;
    bool ok = o.ok && tr_gguf_writer_to_memory(o.w, &buf, &size) == TRANSCRIBE_OK;
    tr_gguf_writer_free(o.w);
    if (ok && c->stem_u32) mn_patch_u32(buf, size);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    ok = f && fwrite(buf, 1, size, f) == size;
    if (f) ok = fclose(f) == 0 && ok;
    free(buf);
    return ok;
}

#endif
