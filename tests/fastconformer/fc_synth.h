/* Tiny random FastConformer GGUF images for tests: every key of
 * docs/formats/parakeet.md §3.3 and every tensor of §4.1/§4.2 with deterministic
 * random values, written to memory with the library's GGUF writer. Fault
 * injection (skip or misshape one tensor, mistype a key) drives the
 * loader's error paths. */
#ifndef TR_TEST_FC_SYNTH_H
#define TR_TEST_FC_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

typedef struct fc_synth_cfg {
    int n_layers, d, H, d_ff, k, C, n_mels;
    bool use_bias, xscaling, layer_norm;
    int att_left, att_right;
    const char *style;         /* NULL: key absent (regular) */
    int conv_left, conv_right; /* -1/-1: keys absent */
    bool f16;                  /* CONV-class tensors as F16, LIN-class as F16 */
    /* fault injection */
    const char *skip_tensor;     /* tensor name left out */
    const char *misshape_tensor; /* tensor written with ne[0] + 1 */
    bool n_layers_as_i32;        /* uint32 key written as int32 */
    const char *bad_style;       /* att_context_style value override */
    bool bad_choices;            /* att_context_size_choices not matching */
    uint32_t seed;
    const char *prefix;      /* key prefix; NULL: "stt.parakeet.encoder." */
    bool use_bias_key_false; /* write use_bias = false even with biases (old Canary files) */
    bool spk, spk_bg;        /* multitalker speaker kernel (+ background kernel) */
    const char *skip_key;    /* encoder key suffix left out (uint32 keys only) */
    bool bad_var;            /* a negative BN running variance */
    int lin_type;            /* != 0: LIN-class weights in this tr_type where rows allow */
    int n_layers_key;        /* != 0: n_layers value written (tensors for n_layers) */
    int sub_factor;          /* 0: 8; else 2, 4, 8 or 16 (log2 stride-2 pre-encode stages) */
    int sub_factor_key;      /* != 0: subsampling_factor value written (tensors for sub_factor) */
    bool biased_keys_only;   /* only the biased flavor's keys (Canary, Cohere): sizes, use_bias */
} fc_synth_cfg;

/* Stride-2 pre-encode stages of a configuration. */
static inline int fc_synth_stages(const fc_synth_cfg *cfg) {
    int f = cfg->sub_factor ? cfg->sub_factor : 8, s = 0;
    while (f > 1) f /= 2, s++;
    return s;
}

static inline fc_synth_cfg fc_synth_default(void) {
    fc_synth_cfg c;
    memset(&c, 0, sizeof c);
    c.n_layers = 2;
    c.d = 16;
    c.H = 2;
    c.d_ff = 32;
    c.k = 5;
    c.C = 4;
    c.n_mels = 16;
    c.use_bias = true;
    c.att_left = c.att_right = -1;
    c.conv_left = c.conv_right = -1;
    c.seed = 1234;
    return c;
}

/* The biased flavor's encoder (Cohere, Sortformer: sizes and use_bias keys
 * only) at d 32, 4 heads, d_ff 64, kernel 5, 4 channels, 2 layers, its keys
 * under prefix. */
static inline fc_synth_cfg fc_synth_biased(const char *prefix) {
    fc_synth_cfg c = fc_synth_default();
    c.d = 32;
    c.H = 4;
    c.d_ff = 64;
    c.k = 5;
    c.C = 4;
    c.n_layers = 2;
    c.prefix = prefix;
    c.biased_keys_only = true;
    return c;
}

static inline float fc_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f; /* [-1, 1) */
}

typedef struct {
    gguf_writer *w;
    const fc_synth_cfg *cfg;
    uint32_t rng;
    bool ok;
} fc_synth_ctx;

/* kind: 0 uniform * scale, 1 around 1 (norm gamma), 2 positive (variance) */
static inline void fc_add(fc_synth_ctx *c, const char *name, bool lowp, int n_dims, int64_t n0,
                          int64_t n1, int64_t n2, int64_t n3, float scale, int kind) {
    if (c->cfg->skip_tensor && strcmp(name, c->cfg->skip_tensor) == 0) return;
    int64_t ne[4] = {n0, n1, n2, n3};
    if (c->cfg->misshape_tensor && strcmp(name, c->cfg->misshape_tensor) == 0) ne[0] += 1;
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    float *v = malloc(sizeof(float) * (size_t)n);
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)n);
    if (!v || !h) {
        c->ok = false;
        free(v);
        free(h);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float r = fc_rand(&c->rng);
        v[i] = kind == 1 ? 1.0f + 0.2f * r : kind == 2 ? 1.0f + 0.5f * r : r * scale;
    }
    if (kind == 2 && c->cfg->bad_var) v[n / 2] = -0.5f;
    const int qt = c->cfg->lin_type;
    if (lowp && n_dims == 2 && qt != 0 && ne[0] % tr_type_block(qt) == 0) {
        const size_t rb = tr_row_bytes(qt, ne[0]);
        unsigned char *q = malloc(rb * (size_t)ne[1]);
        bool ok = q != NULL;
        for (int64_t r = 0; ok && r < ne[1]; r++)
            ok = tr_quantize_row(qt, v + r * ne[0], q + (size_t)r * rb, ne[0]);
        if (!ok || !tr_gguf_writer_add_tensor(c->w, name, qt, n_dims, ne, q)) c->ok = false;
        free(q);
        free(v);
        free(h);
        return;
    }
    bool f16 = lowp && c->cfg->f16;
    if (f16)
        for (int64_t i = 0; i < n; i++) h[i] = tr_f32_to_f16(v[i]);
    if (!tr_gguf_writer_add_tensor(c->w, name, f16 ? TR_F16 : TR_F32, n_dims, ne,
                                   f16 ? (const void *)h : (const void *)v))
        c->ok = false;
    free(v);
    free(h);
}

static inline int fc_stage(int L, bool causal) {
    return causal ? L / 2 + 1 : (L + 1) / 2;
}

/* Adds the encoder's keys (under cfg->prefix, plus stt.frontend.num_mels)
 * and tensors to w, so a family's synthetic file can carry it; false when
 * a tensor could not be added. */
static inline bool fc_synth_add_encoder(gguf_writer *w, const fc_synth_cfg *cfg) {
    fc_synth_ctx c = {w, cfg, cfg->seed, true};
    const char *P = cfg->prefix ? cfg->prefix : "stt.parakeet.encoder.";
    char key[160], name[160];
#define KEY(s) (snprintf(key, sizeof key, "%s%s", P, s), key)
#define SET_U32(s, v)                                                                              \
    do {                                                                                           \
        if (!cfg->skip_key || strcmp(cfg->skip_key, s) != 0)                                       \
            tr_gguf_writer_set_u32(c.w, KEY(s), (uint32_t)(v));                                    \
    } while (0)
    tr_gguf_writer_set_u32(c.w, "stt.frontend.num_mels", (uint32_t)cfg->n_mels);
    if (cfg->skip_key && strcmp(cfg->skip_key, "n_layers") == 0)
        ; /* left out */
    else if (cfg->n_layers_as_i32)
        tr_gguf_writer_set_i32(c.w, KEY("n_layers"), cfg->n_layers);
    else
        tr_gguf_writer_set_u32(c.w, KEY("n_layers"),
                               (uint32_t)(cfg->n_layers_key ? cfg->n_layers_key : cfg->n_layers));
    SET_U32("d_model", cfg->d);
    SET_U32("n_heads", cfg->H);
    SET_U32("d_ff", cfg->d_ff);
    SET_U32("conv_kernel", cfg->k);
    SET_U32("subsampling_factor", cfg->sub_factor_key ? cfg->sub_factor_key
                                  : cfg->sub_factor   ? cfg->sub_factor
                                                      : 8);
    SET_U32("subsampling_channels", cfg->C);
    SET_U32("pos_emb_max_len", 5000);
    tr_gguf_writer_set_bool(c.w, KEY("use_bias"), cfg->use_bias && !cfg->use_bias_key_false);
    const char *style = cfg->bad_style ? cfg->bad_style : cfg->style;
    if (!cfg->biased_keys_only) { /* the biased flavor has none of these keys */
        tr_gguf_writer_set_bool(c.w, KEY("xscaling"), cfg->xscaling);
        tr_gguf_writer_set_i32(c.w, KEY("att_context_left"), cfg->att_left);
        tr_gguf_writer_set_i32(c.w, KEY("att_context_right"), cfg->att_right);
        if (style) tr_gguf_writer_set_str(c.w, KEY("att_context_style"), style);
        if (cfg->bad_choices) {
            int32_t ch[4] = {cfg->att_left + 1, cfg->att_right, 0, 0};
            tr_gguf_writer_set_arr_i32(c.w, KEY("att_context_size_choices"), ch, 4);
        } else if (style && strcmp(style, "chunked_limited") == 0) {
            int32_t ch[4] = {cfg->att_left, cfg->att_right, 10, 1};
            tr_gguf_writer_set_arr_i32(c.w, KEY("att_context_size_choices"), ch, 4);
        }
        if (style && strcmp(style, "chunked_limited_with_rc") == 0) {
            const int32_t menu[2] = {70, 13};
            tr_gguf_writer_set_arr_i32(c.w, KEY("att_chunk_left_choices"), menu, 2);
            tr_gguf_writer_set_arr_i32(c.w, KEY("att_chunk_chunk_choices"), menu, 2);
            tr_gguf_writer_set_arr_i32(c.w, KEY("att_chunk_right_choices"), menu, 2);
        }
        if (cfg->conv_left >= 0) {
            tr_gguf_writer_set_i32(c.w, KEY("conv_context_left"), cfg->conv_left);
            tr_gguf_writer_set_i32(c.w, KEY("conv_context_right"), cfg->conv_right);
        }
        tr_gguf_writer_set_str(c.w, KEY("conv_norm_type"),
                               cfg->layer_norm ? "layer_norm" : "batch_norm");
        if (cfg->spk) {
            const int32_t layers[1] = {0};
            tr_gguf_writer_set_arr_i32(c.w, KEY("spk_kernel_layers"), layers, 1);
            tr_gguf_writer_set_str(c.w, KEY("spk_kernel_type"), "ff");
            tr_gguf_writer_set_bool(c.w, KEY("add_bg_spk_kernel"), cfg->spk_bg);
        }
    }
#undef SET_U32
#undef KEY

    const bool causal = style && strcmp(style, "chunked_limited") == 0;
    const int S = fc_synth_stages(cfg);
    int F = cfg->n_mels;
    for (int s = 0; s < S; s++) F = fc_stage(F, causal);
    const int64_t C = cfg->C, d = cfg->d, ff = cfg->d_ff, dh = cfg->d / cfg->H;
    fc_add(&c, "enc.pre_encode.conv.0.weight", true, 4, 3, 3, 1, C, 0.5f, 0);
    fc_add(&c, "enc.pre_encode.conv.0.bias", false, 1, C, 1, 1, 1, 0.1f, 0);
    for (int s = 2; s <= S; s++) { /* depthwise conv.{3s-4}, pointwise conv.{3s-3} */
        snprintf(name, sizeof name, "enc.pre_encode.conv.%d.weight", 3 * s - 4);
        fc_add(&c, name, true, 4, 3, 3, 1, C, 0.5f, 0);
        snprintf(name, sizeof name, "enc.pre_encode.conv.%d.bias", 3 * s - 4);
        fc_add(&c, name, false, 1, C, 1, 1, 1, 0.1f, 0);
        snprintf(name, sizeof name, "enc.pre_encode.conv.%d.weight", 3 * s - 3);
        fc_add(&c, name, true, 4, 1, 1, C, C, 0.5f, 0);
        snprintf(name, sizeof name, "enc.pre_encode.conv.%d.bias", 3 * s - 3);
        fc_add(&c, name, false, 1, C, 1, 1, 1, 0.1f, 0);
    }
    fc_add(&c, "enc.pre_encode.out.weight", true, 2, C * F, d, 1, 1, 1.0f / sqrtf((float)(C * F)),
           0);
    fc_add(&c, "enc.pre_encode.out.bias", false, 1, d, 1, 1, 1, 0.1f, 0);
    const float sd = 1.0f / sqrtf((float)d), sf = 1.0f / sqrtf((float)ff);
    static const char *const spk[2][4] = {
        {"enc.spk_kernel.0.0.weight", "enc.spk_kernel.0.0.bias", "enc.spk_kernel.0.3.weight",
         "enc.spk_kernel.0.3.bias"},
        {"enc.bg_spk_kernel.0.0.weight", "enc.bg_spk_kernel.0.0.bias",
         "enc.bg_spk_kernel.0.3.weight", "enc.bg_spk_kernel.0.3.bias"}};
    for (int s = 0; s < (cfg->spk ? (cfg->spk_bg ? 2 : 1) : 0); s++)
        for (int l = 0; l < 2; l++) {
            fc_add(&c, spk[s][2 * l], true, 2, d, d, 1, 1, sd, 0);
            fc_add(&c, spk[s][2 * l + 1], false, 1, d, 1, 1, 1, 0.3f, 0);
        }
    for (int i = 0; i < cfg->n_layers; i++) {
#define T(s) (snprintf(name, sizeof name, "enc.blocks.%d.%s", i, s), name)
        static const char *const norms[5] = {"norm_ff1", "norm_attn", "norm_conv", "norm_ff2",
                                             "norm_out"};
        for (int n = 0; n < 5; n++) {
            char wn[64], bn[64];
            snprintf(wn, sizeof wn, "%s.weight", norms[n]);
            snprintf(bn, sizeof bn, "%s.bias", norms[n]);
            fc_add(&c, T(wn), false, 1, d, 1, 1, 1, 0, 1);
            fc_add(&c, T(bn), false, 1, d, 1, 1, 1, 0.1f, 0);
        }
        static const char *const ffs[2] = {"ff1", "ff2"};
        for (int f = 0; f < 2; f++) {
            char n1[64];
            snprintf(n1, sizeof n1, "%s.linear1.weight", ffs[f]);
            fc_add(&c, T(n1), true, 2, d, ff, 1, 1, sd, 0);
            snprintf(n1, sizeof n1, "%s.linear2.weight", ffs[f]);
            fc_add(&c, T(n1), true, 2, ff, d, 1, 1, sf, 0);
            if (cfg->use_bias) {
                snprintf(n1, sizeof n1, "%s.linear1.bias", ffs[f]);
                fc_add(&c, T(n1), false, 1, ff, 1, 1, 1, 0.1f, 0);
                snprintf(n1, sizeof n1, "%s.linear2.bias", ffs[f]);
                fc_add(&c, T(n1), false, 1, d, 1, 1, 1, 0.1f, 0);
            }
        }
        static const char *const lins[4] = {"q", "k", "v", "out"};
        for (int l = 0; l < 4; l++) {
            char n1[64];
            snprintf(n1, sizeof n1, "attn.linear_%s.weight", lins[l]);
            fc_add(&c, T(n1), true, 2, d, d, 1, 1, sd, 0);
            if (cfg->use_bias) {
                snprintf(n1, sizeof n1, "attn.linear_%s.bias", lins[l]);
                fc_add(&c, T(n1), false, 1, d, 1, 1, 1, 0.1f, 0);
            }
        }
        fc_add(&c, T("attn.linear_pos.weight"), true, 2, d, d, 1, 1, sd, 0);
        fc_add(&c, T("attn.pos_bias_u"), false, 2, dh, cfg->H, 1, 1, 0.3f, 0);
        fc_add(&c, T("attn.pos_bias_v"), false, 2, dh, cfg->H, 1, 1, 0.3f, 0);
        fc_add(&c, T("conv.pointwise1.weight"), true, 3, 1, d, 2 * d, 1, sd, 0);
        fc_add(&c, T("conv.depthwise.weight"), true, 3, cfg->k, 1, d, 1, 0.4f, 0);
        fc_add(&c, T("conv.pointwise2.weight"), true, 3, 1, d, d, 1, sd, 0);
        if (cfg->use_bias) {
            fc_add(&c, T("conv.pointwise1.bias"), false, 1, 2 * d, 1, 1, 1, 0.1f, 0);
            fc_add(&c, T("conv.depthwise.bias"), false, 1, d, 1, 1, 1, 0.1f, 0);
            fc_add(&c, T("conv.pointwise2.bias"), false, 1, d, 1, 1, 1, 0.1f, 0);
        }
        fc_add(&c, T("conv.bn.weight"), false, 1, d, 1, 1, 1, 0, 1);
        fc_add(&c, T("conv.bn.bias"), false, 1, d, 1, 1, 1, 0.1f, 0);
        if (!cfg->layer_norm) {
            fc_add(&c, T("conv.bn.running_mean"), false, 1, d, 1, 1, 1, 0.2f, 0);
            fc_add(&c, T("conv.bn.running_var"), false, 1, d, 1, 1, 1, 0, 2);
        }
#undef T
    }
    return c.ok;
}

/* Returns a malloc'ed GGUF image (caller frees) or NULL. */
static inline void *fc_synth_build(const fc_synth_cfg *cfg, size_t *size) {
    gguf_writer *w = tr_gguf_writer_create();
    if (!w) return NULL;
    tr_gguf_writer_set_str(w, "general.architecture", "parakeet");
    void *img = NULL;
    if (fc_synth_add_encoder(w, cfg) && tr_gguf_writer_to_memory(w, &img, size) != TRANSCRIBE_OK)
        img = NULL;
    tr_gguf_writer_free(w);
    return img;
}

#endif
