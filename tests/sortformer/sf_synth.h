/* Tiny random Sortformer GGUF files for tests (docs/formats/sortformer.md
 * §2, §3): the FastConformer of tests/fastconformer/fc_synth.h under
 * stt.sortformer.encoder.* (biased key set), the projection, post-LN
 * Transformer blocks and the heads, every key of docs/formats/sortformer.md §2 with its type. Fault
 * injection (a key left out or mistyped, a tensor left out or misshaped via
 * enc.skip_tensor / enc.misshape_tensor) drives the loader's error paths. */
#ifndef TR_TEST_SF_SYNTH_H
#define TR_TEST_SF_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fastconformer/fc_synth.h"
#include "gguf/gguf_writer.h"

typedef struct sf_synth_cfg {
    fc_synth_cfg enc; /* encoder, weight types (f16 / lin_type) and tensor faults */
    int tf_layers, D, heads, ff, S;
    int chunk_len, spkcache_len, fifo_len, update_period;
    bool pre_ln;
    float head_bias;      /* added to every single_spk_head bias */
    float head_scale;     /* single_spk_head weight scale (0: 3 / sqrt(D)) */
    const char *skip_key; /* a full key name left out */
    const char *i32_key;  /* a full UINT32 key name written as INT32 */
    const char *str_key;  /* a full key written as a string "x" instead */
} sf_synth_cfg;

static inline sf_synth_cfg sf_synth_default(void) {
    sf_synth_cfg c;
    memset(&c, 0, sizeof c);
    c.enc = fc_synth_biased("stt.sortformer.encoder.");
    c.enc.n_mels = 32;
    c.tf_layers = 2;
    c.D = 24;
    c.heads = 4;
    c.ff = 48;
    c.S = 4;
    c.chunk_len = 188;
    c.spkcache_len = 188;
    c.fifo_len = 0;
    c.update_period = 188;
    return c;
}

static inline bool sf_synth_skip(const sf_synth_cfg *cfg, const char *key) {
    return cfg->skip_key && strcmp(cfg->skip_key, key) == 0;
}

static inline bool sf_synth_as_str(gguf_writer *w, const sf_synth_cfg *cfg, const char *key) {
    if (!cfg->str_key || strcmp(cfg->str_key, key) != 0) return false;
    tr_gguf_writer_set_str(w, key, "x");
    return true;
}

static inline void sf_synth_u32(gguf_writer *w, const sf_synth_cfg *cfg, const char *key,
                                uint32_t v) {
    if (sf_synth_skip(cfg, key) || sf_synth_as_str(w, cfg, key)) return;
    if (cfg->i32_key && strcmp(cfg->i32_key, key) == 0)
        tr_gguf_writer_set_i32(w, key, (int32_t)v);
    else
        tr_gguf_writer_set_u32(w, key, v);
}

static inline void sf_synth_str(gguf_writer *w, const sf_synth_cfg *cfg, const char *key,
                                const char *v) {
    if (sf_synth_skip(cfg, key)) return;
    if (cfg->i32_key && strcmp(cfg->i32_key, key) == 0)
        tr_gguf_writer_set_u32(w, key, 1);
    else
        tr_gguf_writer_set_str(w, key, v);
}

static inline void sf_synth_f32(gguf_writer *w, const sf_synth_cfg *cfg, const char *key, float v) {
    if (sf_synth_skip(cfg, key) || sf_synth_as_str(w, cfg, key)) return;
    tr_gguf_writer_set_f32(w, key, v);
}

static inline void sf_synth_bool(gguf_writer *w, const sf_synth_cfg *cfg, const char *key, bool v) {
    if (sf_synth_skip(cfg, key) || sf_synth_as_str(w, cfg, key)) return;
    tr_gguf_writer_set_bool(w, key, v);
}

/* Adds every key and tensor of the file to w; false on failure. */
static inline bool sf_synth_fill(gguf_writer *w, const sf_synth_cfg *cfg) {
    fc_synth_cfg enc = cfg->enc;
    bool ok = true;
#define AK "stt.sortformer."
    sf_synth_str(w, cfg, "general.architecture", "sortformer");
    sf_synth_str(w, cfg, "general.name", "Sortformer synth");
    const char *const langs[] = {"en"};
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, 1);
    sf_synth_str(w, cfg, "stt.variant", "sortformer-synth");
    sf_synth_u32(w, cfg, "stt.frontend.sample_rate", 16000);
    /* stt.frontend.num_mels comes with the encoder keys */
    sf_synth_u32(w, cfg, "stt.frontend.n_fft", 512);
    sf_synth_u32(w, cfg, "stt.frontend.hop_length", 160);
    sf_synth_u32(w, cfg, "stt.frontend.win_length", 400);
    sf_synth_str(w, cfg, "stt.frontend.window", "hann");
    sf_synth_str(w, cfg, "stt.frontend.normalize", "none");
    sf_synth_f32(w, cfg, "stt.frontend.pre_emphasis", 0.97f);
    sf_synth_f32(w, cfg, "stt.frontend.dither", 1e-5f);
    sf_synth_bool(w, cfg, "stt.capability.streaming", true);
    sf_synth_bool(w, cfg, "stt.capability.speaker_diarization", true);
    sf_synth_bool(w, cfg, "stt.capability.lang_detect", false);
    sf_synth_bool(w, cfg, "stt.capability.translate", false);
    sf_synth_bool(w, cfg, "stt.capability.timestamps", false);
    sf_synth_u32(w, cfg, AK "max_speakers", (uint32_t)cfg->S);
    sf_synth_u32(w, cfg, AK "frame_hop", 1280);
    ok = fc_synth_add_encoder(w, &enc) && ok;
    sf_synth_u32(w, cfg, AK "encoder.feat_in", (uint32_t)enc.n_mels);
    sf_synth_str(w, cfg, AK "encoder.conv_norm_type", "batch_norm");
    sf_synth_u32(w, cfg, AK "transformer.n_layers", (uint32_t)cfg->tf_layers);
    sf_synth_u32(w, cfg, AK "transformer.d_model", (uint32_t)cfg->D);
    sf_synth_u32(w, cfg, AK "transformer.n_heads", (uint32_t)cfg->heads);
    sf_synth_u32(w, cfg, AK "transformer.d_ff", (uint32_t)cfg->ff);
    sf_synth_str(w, cfg, AK "transformer.activation", "relu");
    sf_synth_bool(w, cfg, AK "transformer.pre_ln", cfg->pre_ln);
    sf_synth_u32(w, cfg, AK "stream.chunk_len", (uint32_t)cfg->chunk_len);
    sf_synth_u32(w, cfg, AK "stream.spkcache_len", (uint32_t)cfg->spkcache_len);
    sf_synth_u32(w, cfg, AK "stream.fifo_len", (uint32_t)cfg->fifo_len);
    sf_synth_u32(w, cfg, AK "stream.spkcache_update_period", (uint32_t)cfg->update_period);
#undef AK
    fc_synth_cfg tc = enc;
    fc_synth_ctx c = {w, &tc, cfg->enc.seed * 5u + 3u, true};
    const int64_t d = enc.d, D = cfg->D, F = cfg->ff, S = cfg->S;
    const float sD = 1.5f / sqrtf((float)D), sF = 1.0f / sqrtf((float)F);
    char name[128];
    for (int j = 0; j < cfg->tf_layers; j++) {
#define TN(s) (snprintf(name, sizeof name, "tf.blocks.%d.%s", j, s), name)
        fc_add(&c, TN("norm_1.weight"), false, 1, D, 1, 1, 1, 0, 1);
        fc_add(&c, TN("norm_1.bias"), false, 1, D, 1, 1, 1, 0.1f, 0);
        static const char *const p[4] = {"q", "k", "v", "out"};
        for (int k = 0; k < 4; k++) {
            char n1[64];
            snprintf(n1, sizeof n1, "attn.%s.weight", p[k]);
            fc_add(&c, TN(n1), true, 2, D, D, 1, 1, sD, 0);
            snprintf(n1, sizeof n1, "attn.%s.bias", p[k]);
            fc_add(&c, TN(n1), false, 1, D, 1, 1, 1, 0.1f, 0);
        }
        fc_add(&c, TN("norm_2.weight"), false, 1, D, 1, 1, 1, 0, 1);
        fc_add(&c, TN("norm_2.bias"), false, 1, D, 1, 1, 1, 0.1f, 0);
        fc_add(&c, TN("ff.in.weight"), true, 2, D, F, 1, 1, sD, 0);
        fc_add(&c, TN("ff.in.bias"), false, 1, F, 1, 1, 1, 0.1f, 0);
        fc_add(&c, TN("ff.out.weight"), true, 2, F, D, 1, 1, sF, 0);
        fc_add(&c, TN("ff.out.bias"), false, 1, D, 1, 1, 1, 0.1f, 0);
#undef TN
    }
    fc_add(&c, "diar.encoder_proj.weight", true, 2, d, D, 1, 1, 1.0f / sqrtf((float)d), 0);
    fc_add(&c, "diar.encoder_proj.bias", false, 1, D, 1, 1, 1, 0.1f, 0);
    fc_add(&c, "diar.fc1.weight", true, 2, D, D, 1, 1, 2.0f * sD, 0);
    fc_add(&c, "diar.fc1.bias", false, 1, D, 1, 1, 1, 0.1f, 0);
    fc_add(&c, "diar.spk_head.weight", true, 2, 2 * D, S, 1, 1, sD, 0);
    fc_add(&c, "diar.spk_head.bias", false, 1, S, 1, 1, 1, 0.1f, 0);
    fc_add(&c, "diar.single_spk_head.weight", true, 2, D, S, 1, 1,
           cfg->head_scale > 0 ? cfg->head_scale : 3.0f * sD, 0);
    if (!(tc.skip_tensor && strcmp(tc.skip_tensor, "diar.single_spk_head.bias") == 0)) {
        float b[64];
        for (int s = 0; s < S && s < 64; s++) b[s] = cfg->head_bias + 0.3f * (float)(s % 2);
        const int64_t ne[1] = {S};
        ok = tr_gguf_writer_add_tensor(w, "diar.single_spk_head.bias", TR_F32, 1, ne, b) && ok;
    }
    return ok && c.ok;
}

/* Writes the file to path; false on failure. */
static inline bool sf_synth_write(const sf_synth_cfg *cfg, const char *path) {
    gguf_writer *w = tr_gguf_writer_create();
    if (!w) return false;
    bool ok = sf_synth_fill(w, cfg) && tr_gguf_writer_write(w, path) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    return ok;
}

#endif
