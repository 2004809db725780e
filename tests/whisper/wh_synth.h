/* A small synthetic Whisper model for tests that need no downloaded weights:
 * real multilingual vocabulary and Slaney filterbank (from the weightless
 * legacy vocabulary file in shared/vocab), real special-token layout
 * (V = 51865, 99 languages), tiny random transformer (D = 64, 2 heads).
 * Written as GGUF (LIN tensors in a chosen dtype) and as a legacy .bin with
 * identical values, so format and dtype paths can be compared exactly. */
#ifndef TR_TESTS_WH_SYNTH_H
#define TR_TESTS_WH_SYNTH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_bin.h"
#include "models/whisper/whisper_bin_info.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"

#define WS_D    64
#define WS_H    2
#define WS_F    256 /* 4·D, as the legacy format assumes */
#define WS_LE   1
#define WS_LD   2
#define WS_M    80
#define WS_S    1500
#define WS_T    448
#define WS_V    51865
#define WS_EOT  50257
#define WS_SOT  50258
#define WS_NOTS 50363

typedef struct ws_tensor {
    char name[96];
    char legacy[96];
    int n_dims;
    int64_t ne[3];
    int cls; /* 0 F32 (norm/bias/pos), 1 CONV, 2 LIN */
    float *data;
} ws_tensor;

typedef struct ws_model {
    ws_tensor t[256];
    int n;
    uint32_t rng;
    tr_ggml_bin *vocab;
} ws_model;

static float ws_rand(ws_model *m) { /* uniform [-1, 1) */
    m->rng = m->rng * 1664525u + 1013904223u;
    return (float)((m->rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static ws_tensor *ws_add(ws_model *m, const char *name, const char *legacy, int cls, int nd,
                         int64_t a, int64_t b, int64_t c, float scale, float offset) {
    ws_tensor *t = &m->t[m->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->legacy, sizeof t->legacy, "%s", legacy);
    t->n_dims = nd;
    t->ne[0] = a;
    t->ne[1] = b;
    t->ne[2] = c;
    t->cls = cls;
    size_t n = (size_t)(a * b * c);
    t->data = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) t->data[i] = offset + scale * ws_rand(m);
    return t;
}

static void ws_lin(ws_model *m, const char *pfx, const char *lpfx, const char *nm, const char *lnm,
                   int64_t in, int64_t out, int bias) {
    char a[96], b[96];
    snprintf(a, sizeof a, "%s%s.weight", pfx, nm);
    snprintf(b, sizeof b, "%s%s.weight", lpfx, lnm);
    ws_add(m, a, b, 2, 2, in, out, 1, 1.5f / sqrtf((float)in), 0.0f);
    if (bias) {
        snprintf(a, sizeof a, "%s%s.bias", pfx, nm);
        snprintf(b, sizeof b, "%s%s.bias", lpfx, lnm);
        ws_add(m, a, b, 0, 1, out, 1, 1, 0.05f, 0.0f);
    }
}

static void ws_norm(ws_model *m, const char *pfx, const char *lpfx, const char *nm,
                    const char *lnm) {
    char a[96], b[96];
    snprintf(a, sizeof a, "%s%s.weight", pfx, nm);
    snprintf(b, sizeof b, "%s%s.weight", lpfx, lnm);
    ws_add(m, a, b, 0, 1, WS_D, 1, 1, 0.1f, 1.0f);
    snprintf(a, sizeof a, "%s%s.bias", pfx, nm);
    snprintf(b, sizeof b, "%s%s.bias", lpfx, lnm);
    ws_add(m, a, b, 0, 1, WS_D, 1, 1, 0.05f, 0.0f);
}

/* Returns false when the shared vocabulary file is unavailable. */
static bool ws_build(ws_model *m, const char *shared_dir) {
    memset(m, 0, sizeof *m);
    m->rng = 12345u;
    char path[1024];
    snprintf(path, sizeof path, "%s/vocab/whisper-multilingual-vocab.ggml.bin", shared_dir);
    if (tr_ggml_bin_open(path, &m->vocab) != TRANSCRIBE_OK) return false;
    ws_add(m, "enc.conv.0.weight", "encoder.conv1.weight", 1, 3, 3, WS_M, WS_D, 0.15f, 0.0f);
    ws_add(m, "enc.conv.0.bias", "encoder.conv1.bias", 0, 1, WS_D, 1, 1, 0.05f, 0.0f);
    ws_add(m, "enc.conv.1.weight", "encoder.conv2.weight", 1, 3, 3, WS_D, WS_D, 0.1f, 0.0f);
    ws_add(m, "enc.conv.1.bias", "encoder.conv2.bias", 0, 1, WS_D, 1, 1, 0.05f, 0.0f);
    ws_tensor *pe = ws_add(m, "enc.pos_emb.weight", "encoder.positional_embedding", 0, 2, WS_D,
                           WS_S, 1, 0.0f, 0.0f);
    for (int t = 0; t < WS_S; t++) /* sinusoids, as in the checkpoints */
        for (int i = 0; i < WS_D / 2; i++) {
            double inc = log(10000.0) / (WS_D / 2 - 1);
            double a = t * exp(-inc * i);
            pe->data[(size_t)t * WS_D + i] = (float)sin(a);
            pe->data[(size_t)t * WS_D + WS_D / 2 + i] = (float)cos(a);
        }
    for (int l = 0; l < WS_LE; l++) {
        char p[64], lp[64];
        snprintf(p, sizeof p, "enc.blocks.%d.", l);
        snprintf(lp, sizeof lp, "encoder.blocks.%d.", l);
        ws_norm(m, p, lp, "norm_attn", "attn_ln");
        ws_lin(m, p, lp, "attn.q", "attn.query", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "attn.k", "attn.key", WS_D, WS_D, 0);
        ws_lin(m, p, lp, "attn.v", "attn.value", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "attn.out", "attn.out", WS_D, WS_D, 1);
        ws_norm(m, p, lp, "norm_ffn", "mlp_ln");
        ws_lin(m, p, lp, "ffn.fc1", "mlp.0", WS_D, WS_F, 1);
        ws_lin(m, p, lp, "ffn.fc2", "mlp.2", WS_F, WS_D, 1);
    }
    ws_norm(m, "", "", "enc.final_norm", "encoder.ln_post");
    ws_add(m, "dec.token_embd.weight", "decoder.token_embedding.weight", 2, 2, WS_D, WS_V, 1, 0.5f,
           0.0f);
    ws_add(m, "dec.pos_emb.weight", "decoder.positional_embedding", 0, 2, WS_D, WS_T, 1, 0.1f,
           0.0f);
    for (int l = 0; l < WS_LD; l++) {
        char p[64], lp[64];
        snprintf(p, sizeof p, "dec.blocks.%d.", l);
        snprintf(lp, sizeof lp, "decoder.blocks.%d.", l);
        ws_norm(m, p, lp, "norm_self", "attn_ln");
        ws_lin(m, p, lp, "self_attn.q", "attn.query", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "self_attn.k", "attn.key", WS_D, WS_D, 0);
        ws_lin(m, p, lp, "self_attn.v", "attn.value", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "self_attn.out", "attn.out", WS_D, WS_D, 1);
        ws_norm(m, p, lp, "norm_cross", "cross_attn_ln");
        ws_lin(m, p, lp, "cross_attn.q", "cross_attn.query", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "cross_attn.k", "cross_attn.key", WS_D, WS_D, 0);
        ws_lin(m, p, lp, "cross_attn.v", "cross_attn.value", WS_D, WS_D, 1);
        ws_lin(m, p, lp, "cross_attn.out", "cross_attn.out", WS_D, WS_D, 1);
        ws_norm(m, p, lp, "norm_ffn", "mlp_ln");
        ws_lin(m, p, lp, "ffn.fc1", "mlp.0", WS_D, WS_F, 1);
        ws_lin(m, p, lp, "ffn.fc2", "mlp.2", WS_F, WS_D, 1);
    }
    ws_norm(m, "", "", "dec.final_norm", "decoder.ln");
    return true;
}

static void ws_free(ws_model *m) {
    for (int i = 0; i < m->n; i++) free(m->t[i].data);
    tr_ggml_bin_close(m->vocab);
    memset(m, 0, sizeof *m);
}

/* Vocabulary piece i in GGUF (byte-mapped) form; malloc'ed. */
static char *ws_piece(ws_model *m, int i) {
    char lit[48];
    size_t len = 0;
    const char *p = i < WS_EOT ? tr_ggml_bin_token(m->vocab, i, &len) : NULL;
    if (p) return tr_gpt2_piece_from_bytes(p, len);
    if (i == WS_EOT)
        snprintf(lit, sizeof lit, "<|endoftext|>");
    else if (i == WS_SOT)
        snprintf(lit, sizeof lit, "<|startoftranscript|>");
    else if (i > WS_SOT && i <= WS_SOT + 99)
        snprintf(lit, sizeof lit, "<|%s|>", tr_whisper_bin_language(i - WS_SOT - 1));
    else if (i == 50358)
        snprintf(lit, sizeof lit, "<|translate|>");
    else if (i == 50359)
        snprintf(lit, sizeof lit, "<|transcribe|>");
    else if (i == 50360)
        snprintf(lit, sizeof lit, "<|startoflm|>");
    else if (i == 50361)
        snprintf(lit, sizeof lit, "<|startofprev|>");
    else if (i == 50362)
        snprintf(lit, sizeof lit, "<|nospeech|>");
    else if (i == WS_NOTS)
        snprintf(lit, sizeof lit, "<|notimestamps|>");
    else
        snprintf(lit, sizeof lit, "<|%.2f|>", (i - WS_NOTS - 1) * 0.02);
    return strdup(lit);
}

/* Flags for ws_write_gguf variations used by the loader tests. */
enum { WS_DROP_TENSOR = 1, WS_BAD_KEY_TYPE = 2, WS_BAD_SHAPE = 4, WS_ENGLISH_ONLY = 8 };

/* GGUF with LIN tensors stored as lin_type (F32/F16/Q8_0...) and CONV as
 * conv_type. Returns a malloc'ed image. */
static bool ws_write_gguf(ws_model *m, int lin_type, int conv_type, int flags, void **img,
                          size_t *size) {
    gguf_writer *w = tr_gguf_writer_create();
    tr_gguf_writer_set_str(w, "general.architecture", "whisper");
    tr_gguf_writer_set_str(w, "general.name", "Whisper Synthetic");
    tr_gguf_writer_set_str(w, "stt.variant", "whisper-synthetic");
    const char *langs[99];
    for (int i = 0; i < 99; i++) langs[i] = tr_whisper_bin_language(i);
    /* English-only flavour: capability flags off, languages ["en"] (the flag,
     * not the vocabulary, makes a model multilingual at run time) */
    bool en_only = (flags & WS_ENGLISH_ONLY) != 0;
    tr_gguf_writer_set_arr_str(w, "general.languages", langs, en_only ? 1 : 99);
    tr_gguf_writer_set_u32(w, "stt.whisper.encoder.n_layers", WS_LE);
    tr_gguf_writer_set_u32(w, "stt.whisper.encoder.d_model", WS_D);
    if (flags & WS_BAD_KEY_TYPE)
        tr_gguf_writer_set_i32(w, "stt.whisper.encoder.n_heads", WS_H);
    else
        tr_gguf_writer_set_u32(w, "stt.whisper.encoder.n_heads", WS_H);
    tr_gguf_writer_set_u32(w, "stt.whisper.encoder.ffn_dim", WS_F);
    tr_gguf_writer_set_u32(w, "stt.whisper.encoder.num_mel_bins", WS_M);
    tr_gguf_writer_set_u32(w, "stt.whisper.encoder.max_source_positions", WS_S);
    tr_gguf_writer_set_str(w, "stt.whisper.encoder.activation", "gelu");
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.n_layers", WS_LD);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.d_model", WS_D);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.n_heads", WS_H);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.ffn_dim", WS_F);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.max_target_positions", WS_T);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder.vocab_size", WS_V);
    tr_gguf_writer_set_str(w, "stt.whisper.decoder.activation", "gelu");
    tr_gguf_writer_set_bool(w, "stt.whisper.decoder.tie_word_embeddings", true);
    tr_gguf_writer_set_bool(w, "stt.whisper.decoder.scale_embedding", false);
    tr_gguf_writer_set_u32(w, "stt.whisper.decoder_start_token_id", WS_SOT);
    tr_gguf_writer_set_u32(w, "stt.whisper.sot_token_id", WS_SOT);
    tr_gguf_writer_set_u32(w, "stt.whisper.no_timestamps_token_id", WS_NOTS);
    tr_gguf_writer_set_u32(w, "stt.whisper.transcribe_token_id", 50359);
    tr_gguf_writer_set_u32(w, "stt.whisper.translate_token_id", 50358);
    tr_gguf_writer_set_u32(w, "stt.whisper.prev_sot_token_id", 50361);
    int n_ns = 0;
    const int32_t *ns = tr_whisper_bin_nonspeech(true, &n_ns);
    int32_t sup[128];
    int k = 0;
    for (int i = 0; i < n_ns && k < 120; i++) sup[k++] = ns[i];
    int32_t ctl[6] = {WS_SOT, 50358, 50359, 50360, 50361, 50362};
    for (int i = 0; i < 6; i++) sup[k++] = ctl[i];
    tr_gguf_writer_set_arr_i32(w, "stt.whisper.suppress_tokens", sup, (size_t)k);
    int32_t bsup[2] = {220, WS_EOT};
    tr_gguf_writer_set_arr_i32(w, "stt.whisper.begin_suppress_tokens", bsup, 2);
    tr_gguf_writer_set_str(w, "stt.frontend.type", "mel");
    tr_gguf_writer_set_u32(w, "stt.frontend.num_mels", WS_M);
    tr_gguf_writer_set_u32(w, "stt.frontend.sample_rate", 16000);
    tr_gguf_writer_set_u32(w, "stt.frontend.n_fft", 400);
    tr_gguf_writer_set_u32(w, "stt.frontend.win_length", 400);
    tr_gguf_writer_set_u32(w, "stt.frontend.hop_length", 160);
    tr_gguf_writer_set_str(w, "stt.frontend.window", "hann_periodic");
    tr_gguf_writer_set_str(w, "stt.frontend.normalize", "whisper_logmel");
    tr_gguf_writer_set_f32(w, "stt.frontend.dither", 0.0f);
    tr_gguf_writer_set_f32(w, "stt.frontend.f_max", 8000.0f);
    tr_gguf_writer_set_str(w, "stt.frontend.pad_mode", "reflect");
    tr_gguf_writer_set_bool(w, "stt.frontend.center", true);
    tr_gguf_writer_set_str(w, "stt.frontend.mel_norm", "slaney");
    tr_gguf_writer_set_u32(w, "stt.frontend.n_samples", 480000);
    tr_gguf_writer_set_u32(w, "stt.frontend.nb_max_frames", 3000);
    tr_gguf_writer_set_bool(w, "stt.capability.lang_detect", !en_only);
    tr_gguf_writer_set_bool(w, "stt.capability.translate", !en_only);
    tr_gguf_writer_set_bool(w, "stt.capability.timestamps", true);
    const char *tgt[1] = {"en"};
    if (!en_only) tr_gguf_writer_set_arr_str(w, "stt.translation.target_languages", tgt, 1);
    tr_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    tr_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt2");
    char **pieces = malloc(WS_V * sizeof *pieces);
    int32_t *types = malloc(WS_V * sizeof *types);
    for (int i = 0; i < WS_V; i++) {
        pieces[i] = ws_piece(m, i);
        types[i] = i >= WS_EOT ? 3 : 1;
    }
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)pieces, WS_V);
    tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, WS_V);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", WS_EOT);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", WS_EOT);
    tr_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", WS_EOT);
    for (int i = 0; i < WS_V; i++) free(pieces[i]);
    free(pieces);
    free(types);

    /* front-end tensors from the vocabulary file's header */
    int nm = 0, nf = 0;
    const float *fb = tr_ggml_bin_filters(m->vocab, &nm, &nf);
    int64_t fne[2] = {nf, nm};
    tr_gguf_writer_add_tensor(w, "frontend.mel_filterbank", TR_F32, 2, fne, fb);
    float win[400];
    for (int i = 0; i < 400; i++) win[i] = 0.5f - 0.5f * cosf(2.0f * 3.14159265358979f * i / 400);
    int64_t wne[1] = {400};
    tr_gguf_writer_add_tensor(w, "frontend.window", TR_F32, 1, wne, win);
    for (int i = 0; i < m->n; i++) {
        ws_tensor *t = &m->t[i];
        if ((flags & WS_DROP_TENSOR) && strcmp(t->name, "dec.blocks.1.cross_attn.v.bias") == 0)
            continue;
        int type = t->cls == 2 ? lin_type : t->cls == 1 ? conv_type : TR_F32;
        int64_t ne[3] = {t->ne[0], t->ne[1], t->ne[2]};
        if ((flags & WS_BAD_SHAPE) && strcmp(t->name, "enc.blocks.0.attn.q.weight") == 0) {
            ne[1] = t->ne[1] / 2;
        }
        size_t rows = (size_t)(ne[1] * ne[2]);
        size_t rb = tr_row_bytes(type, ne[0]);
        void *buf = malloc(rb * rows);
        for (size_t r = 0; r < rows; r++) {
            const float *src = t->data + r * (size_t)ne[0];
            char *dst = (char *)buf + r * rb;
            if (type == TR_F32)
                memcpy(dst, src, (size_t)ne[0] * sizeof(float));
            else if (type == TR_F16)
                for (int64_t j = 0; j < ne[0]; j++) ((uint16_t *)dst)[j] = tr_f32_to_f16(src[j]);
            else
                tr_quantize_row(type, src, dst, ne[0]);
        }
        tr_gguf_writer_add_tensor(w, t->name, type, t->n_dims, ne, buf);
        free(buf);
    }
    transcribe_status st = tr_gguf_writer_to_memory(w, img, size);
    tr_gguf_writer_free(w);
    return st == TRANSCRIBE_OK;
}

/* Legacy .bin with the same values (LIN and CONV F32 or F16). */
static bool ws_write_bin(ws_model *m, int wtype, void **img, size_t *size) {
    size_t cap = 64u << 20, n = 0;
    unsigned char *b = malloc(cap);
    if (!b) return false;
#define PUT(p, len)                                                                                \
    do {                                                                                           \
        if (n + (len) > cap) {                                                                     \
            cap = (cap + (len)) * 2;                                                               \
            b = realloc(b, cap);                                                                   \
        }                                                                                          \
        memcpy(b + n, (p), (len));                                                                 \
        n += (len);                                                                                \
    } while (0)
#define PUT32(v)                                                                                   \
    do {                                                                                           \
        int32_t _v = (int32_t)(v);                                                                 \
        PUT(&_v, 4);                                                                               \
    } while (0)
    PUT32(0x67676D6C);
    int32_t hp[11] = {WS_V, WS_S, WS_D, WS_H, WS_LE, WS_T, WS_D, WS_H, WS_LD, WS_M, wtype};
    for (int i = 0; i < 11; i++) PUT32(hp[i]);
    int nm = 0, nf = 0;
    const float *fb = tr_ggml_bin_filters(m->vocab, &nm, &nf);
    PUT32(nm);
    PUT32(nf);
    PUT(fb, (size_t)nm * nf * sizeof(float));
    int nt = tr_ggml_bin_n_tokens(m->vocab);
    PUT32(nt);
    for (int i = 0; i < nt; i++) {
        size_t len = 0;
        const char *p = tr_ggml_bin_token(m->vocab, i, &len);
        PUT32(len);
        PUT(p, len);
    }
    for (int i = 0; i < m->n; i++) {
        ws_tensor *t = &m->t[i];
        int type = t->cls == 0 ? TR_F32 : wtype;
        bool conv_bias = strstr(t->legacy, "conv") && strstr(t->legacy, ".bias");
        int nd = conv_bias ? 2 : t->n_dims;
        int64_t ne[3] = {t->ne[0], t->ne[1], t->ne[2]};
        if (conv_bias) {
            ne[0] = 1;
            ne[1] = t->ne[0];
        }
        size_t len = strlen(t->legacy);
        PUT32(nd);
        PUT32(len);
        PUT32(type);
        for (int d = 0; d < nd; d++) PUT32(ne[d]);
        PUT(t->legacy, len);
        size_t cnt = (size_t)(t->ne[0] * t->ne[1] * t->ne[2]);
        for (size_t j = 0; j < cnt; j++) {
            if (type == TR_F32) {
                PUT(&t->data[j], 4);
            } else {
                uint16_t h = tr_f32_to_f16(t->data[j]);
                PUT(&h, 2);
            }
        }
    }
#undef PUT
#undef PUT32
    *img = b;
    *size = n;
    return true;
}

#endif
