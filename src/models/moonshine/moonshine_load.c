/* Moonshine GGUF loader: every key of docs/formats/moonshine.md §2 with its
 * exact type and the cross-checks of §9, the tokenizer, every tensor of §3
 * shape-checked against the keys (the encoder and decoder blocks through
 * nn/weights.h), the decoder as an nn/encdec_decoder.h configuration, and
 * the capabilities of §8. Every failure is TRANSCRIBE_ERR_GGUF with a log
 * line naming the key or tensor (NOT_IMPLEMENTED for an unknown tokenizer
 * model, OOM), and frees what was loaded. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/moonshine/moonshine.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define MK       "stt.moonshine."

/* A required conv_stem array of exactly 3 INT32 or UINT32 entries, each in
 * [1, hi] (docs/formats/moonshine.md §2.3). */
static transcribe_status stem_array(const gguf_file *f, const char *key, int64_t hi, int *out) {
    const int64_t i = tr_gguf_find_key(f, key);
    if (i < 0) return tr_gguf_key_error(key, "ARRAY[INT32|UINT32]", "required but missing");
    const gguf_vtype et = tr_gguf_kv_arr_type(f, i);
    if (tr_gguf_kv_type(f, i) != GGUF_T_ARRAY || (et != GGUF_T_INT32 && et != GGUF_T_UINT32))
        return tr_gguf_key_error(key, "ARRAY[INT32|UINT32]", "has another type");
    if (tr_gguf_kv_arr_n(f, i) != 3)
        return tr_gguf_key_error(key, "ARRAY[INT32|UINT32]", "has %llu entries (3 expected)",
                                 (unsigned long long)tr_gguf_kv_arr_n(f, i));
    const unsigned char *p = tr_gguf_kv_arr_data(f, i);
    for (int j = 0; j < 3; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * j, 4);
        const int64_t v = et == GGUF_T_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
        if (v < 1 || v > hi)
            return tr_gguf_key_error(key, "ARRAY[INT32|UINT32]", "entry %d is %lld (1..%lld)", j,
                                     (long long)v, (long long)hi);
        out[j] = (int)v;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_hparams(const gguf_file *f, mn_model *m) {
    mn_hparams *hp = &m->hp;
    transcribe_status st;
    int d_dec = 0, kv_heads = 0, gn_groups = 1, pad_to = 0, bos = 0, pad = 0;
    bool tied = true, attn_bias = false;
    const tr_gguf_u32_key sizes[] = {
        {"encoder.n_layers", 1, 1024, &hp->n_enc_layers},
        {"encoder.d_model", 1, 1 << 16, &hp->d_model},
        {"encoder.n_heads", 1, 1024, &hp->n_enc_heads},
        {"encoder.ffn_dim", 1, 1 << 20, &hp->enc_ffn},
        {"decoder.n_layers", 1, 1024, &hp->n_dec_layers},
        {"decoder.d_model", 1, 1 << 16, &d_dec},
        {"decoder.n_heads", 1, 1024, &hp->n_dec_heads},
        {"decoder.ffn_dim", 1, 1 << 20, &hp->dec_ffn},
        {"decoder.vocab_size", 1, 1 << 24, &hp->n_vocab},
        {"decoder.max_position_embeddings", 1, 1 << 16, &hp->max_pos},
    };
    if ((st = tr_gguf_req_u32_keys(f, MK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str_is(f, MK "encoder.activation", "gelu", NULL)) ||
        (st = tr_gguf_req_str_is(f, MK "decoder.activation", "silu", NULL)) ||
        (st = tr_gguf_opt_u32(f, MK "encoder.n_kv_heads", 0, 0, 1024, &kv_heads)) ||
        (st = tr_gguf_opt_u32(f, MK "decoder.n_kv_heads", 0, 0, 1024, &kv_heads)) ||
        (st = tr_gguf_opt_bool(f, MK "decoder.tie_word_embeddings", true, &tied)) ||
        (st = tr_gguf_opt_f32(f, MK "partial_rotary_factor", 0.9f, &hp->rot_factor)) ||
        (st = tr_gguf_opt_f32(f, MK "rope_theta", 10000.0f, &hp->rope_theta)) ||
        (st = tr_gguf_opt_bool(f, MK "attention_bias", false, &attn_bias)) ||
        (st = tr_gguf_opt_u32(f, MK "pad_head_dim_to_multiple_of", 0, 0, 1 << 16, &pad_to)) ||
        (st = tr_gguf_opt_u32(f, MK "conv_stem.groupnorm_num_groups", 1, 0, 1 << 16, &gn_groups)) ||
        (st = tr_gguf_opt_f32(f, MK "conv_stem.groupnorm_eps", 1e-5f, &hp->gn_eps)) ||
        (st = tr_gguf_req_u32(f, MK "decoder_start_token_id", 0, hp->n_vocab - 1, &hp->start_id)) ||
        (st = tr_gguf_req_u32(f, MK "bos_token_id", 0, INT32_MAX, &bos)) ||
        (st = tr_gguf_req_u32(f, MK "eos_token_id", 0, hp->n_vocab - 1, &hp->eos)) ||
        (st = tr_gguf_req_u32(f, MK "pad_token_id", 0, INT32_MAX, &pad)))
        return st;
    const int d = hp->d_model;
    if (d_dec != d)
        return tr_gguf_key_error(MK "decoder.d_model", "UINT32", "%d differs from encoder %d",
                                 d_dec, d);
    if (d % hp->n_enc_heads)
        return tr_gguf_key_error(MK "encoder.n_heads", "UINT32", "%d does not divide d_model %d",
                                 hp->n_enc_heads, d);
    if (d % hp->n_dec_heads)
        return tr_gguf_key_error(MK "decoder.n_heads", "UINT32", "%d does not divide d_model %d",
                                 hp->n_dec_heads, d);
    if (!tied)
        return tr_gguf_key_error(MK "decoder.tie_word_embeddings", "BOOL",
                                 "false (only the tied head exists)");
    if (attn_bias)
        return tr_gguf_key_error(MK "attention_bias", "BOOL", "true (no bias tensors exist)");
    if (!(hp->rot_factor > 0.0f && hp->rot_factor <= 1.0f))
        return tr_gguf_key_error(MK "partial_rotary_factor", "FLOAT32", "%g is not in (0, 1]",
                                 (double)hp->rot_factor);
    if (!(isfinite(hp->rope_theta) && hp->rope_theta > 0.0f))
        return tr_gguf_key_error(MK "rope_theta", "FLOAT32", "%g is not positive",
                                 (double)hp->rope_theta);
    if (gn_groups != 1)
        return tr_gguf_key_error(MK "conv_stem.groupnorm_num_groups", "UINT32",
                                 "%d (only 1 is defined)", gn_groups);
    if (!(isfinite(hp->gn_eps) && hp->gn_eps > 0.0f))
        return tr_gguf_key_error(MK "conv_stem.groupnorm_eps", "FLOAT32", "%g is not positive",
                                 (double)hp->gn_eps);
    hp->enc_rot = tr_msd_rot_dims(d / hp->n_enc_heads, hp->rot_factor);
    hp->dec_rot = tr_msd_rot_dims(d / hp->n_dec_heads, hp->rot_factor);
    if (hp->enc_rot < 2 || hp->dec_rot < 2)
        return tr_gguf_key_error(MK "partial_rotary_factor", "FLOAT32",
                                 "%g leaves no rotary pair in a head", (double)hp->rot_factor);

    if ((st = stem_array(f, MK "conv_stem.channels", 1 << 16, hp->ch)) ||
        (st = stem_array(f, MK "conv_stem.kernel_sizes", 1 << 16, hp->ks)) ||
        (st = stem_array(f, MK "conv_stem.strides", 1 << 16, hp->st)))
        return st;
    if (hp->ch[0] != d || hp->ch[2] != d)
        return tr_gguf_key_error(MK "conv_stem.channels", "ARRAY[INT32|UINT32]",
                                 "[%d, %d, %d]: entries 0 and 2 must equal d_model %d", hp->ch[0],
                                 hp->ch[1], hp->ch[2], d);
    /* shortest input with one frame after the three valid convolutions */
    int64_t need = 1;
    for (int j = 2; j >= 0; j--) need = (need - 1) * hp->st[j] + hp->ks[j];
    if (need > INT32_MAX)
        return tr_gguf_key_error(MK "conv_stem.kernel_sizes", "ARRAY[INT32|UINT32]",
                                 "the stem needs %lld samples for one frame", (long long)need);
    hp->min_samples = (int)need;

    /* front end (docs/formats/moonshine.md §2.4) */
    int sr = 0, mels = 1;
    if ((st = tr_gguf_req_str_is(f, "stt.frontend.type", "raw", NULL)) ||
        (st = tr_gguf_req_u32(f, "stt.frontend.sample_rate", 1, 1 << 24, &sr)) ||
        (st = tr_gguf_opt_u32(f, "stt.frontend.num_mels", 1, 0, 1 << 16, &mels)))
        return st;
    if (sr != MN_SAMPLE_RATE)
        return tr_gguf_key_error("stt.frontend.sample_rate", "UINT32", "%d (only 16000)", sr);

    /* capabilities (docs/formats/moonshine.md §2.1): typed; the family has
     * neither translation nor detection whatever they say */
    bool cap = false;
    static const char *const caps[] = {"stt.capability.lang_detect", "stt.capability.translate",
                                       "stt.capability.timestamps"};
    for (int j = 0; j < 3; j++) {
        if ((st = tr_gguf_opt_bool(f, caps[j], false, &cap))) return st;
        if (cap) TR_WARN("moonshine: %s = true ignored (the family has no such path)", caps[j]);
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_tokenizer(const gguf_file *f, mn_model *m) {
    transcribe_status st = tr_tokenizer_from_gguf(f, &m->tok);
    if (st) return st;
    if (tr_tokenizer_n_vocab(m->tok) < 1) {
        TR_ERROR("moonshine: tokenizer.ggml.tokens is empty");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* Encoder block part names (docs/formats/moonshine.md §3.1): LayerNorms
 * without beta, attention without biases, FFNs with biases (the decoder's
 * are nn/moonshine_decoder.h's). */
static const tr_nn_enc_names k_enc_names = {
    .prefix = "enc.blocks.%d.",
    .ln_attn = "norm_attn",
    .attn = "attn",
    .ln_ffn = "norm_ffn",
    .out = "out",
    .ffn_up = "ffn.fc1",
    .ffn_down = "ffn.fc2",
};

static const tr_nn_block_opts k_enc_opts = {.no_ln_bias = true, .no_attn_bias = true};
enum { DIM_D, DIM_C1 };

static transcribe_status load_tensors(const gguf_file *f, mn_model *m) {
    const mn_hparams *hp = &m->hp;
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    const int64_t D = TR_NN_DIM(DIM_D), C1 = TR_NN_DIM(DIM_C1);
    const int64_t dims[2] = {[DIM_D] = hp->d_model, [DIM_C1] = hp->ch[1]};
    const tr_nn_wspec top[] = {
        {"enc.conv.0.weight",
         TR_NN_W_TENSOR,
         {hp->ks[0], 1, D},
         3,
         TR_TYPES_CONV,
         offsetof(mn_model, conv0)},
        {"enc.conv.1.weight",
         TR_NN_W_TENSOR,
         {hp->ks[1], D, C1},
         3,
         TR_TYPES_CONV,
         offsetof(mn_model, conv1)},
        {"enc.conv.1.bias", TR_NN_W_VEC, {C1}, 1, 0, offsetof(mn_model, conv_b1)},
        {"enc.conv.2.weight",
         TR_NN_W_TENSOR,
         {hp->ks[2], C1, D},
         3,
         TR_TYPES_CONV,
         offsetof(mn_model, conv2)},
        {"enc.conv.2.bias", TR_NN_W_VEC, {D}, 1, 0, offsetof(mn_model, conv_b2)},
        {"enc.conv.norm.weight", TR_NN_W_VEC, {D}, 1, 0, offsetof(mn_model, gn_w)},
        {"enc.conv.norm.bias", TR_NN_W_VEC, {D}, 1, 0, offsetof(mn_model, gn_b)},
        {"enc.final_norm.weight", TR_NN_W_VEC, {D}, 1, 0, offsetof(mn_model, enc_norm)},
    };
    bool ok = tr_nn_load_weights(&src, top, sizeof top / sizeof *top, dims, 0, true, m);
    m->enc = calloc((size_t)hp->n_enc_layers, sizeof *m->enc);
    if (!m->enc) return TRANSCRIBE_ERR_OOM;
    ok = ok && tr_nn_load_enc_blocks_opt(&src, &k_enc_names, &k_enc_opts, hp->d_model, hp->enc_ffn,
                                         hp->n_enc_layers, m->enc);
    if (!ok) return ERR_GGUF;
    for (int i = 0; i < hp->n_enc_layers; i++) m->enc[i].ffn.act = TR_NN_ACT_GELU;
    const tr_msd_cfg dc = {.d_model = hp->d_model,
                           .n_heads = hp->n_dec_heads,
                           .head_dim = hp->d_model / hp->n_dec_heads,
                           .d_ffn = hp->dec_ffn,
                           .n_layers = hp->n_dec_layers,
                           .n_vocab = hp->n_vocab,
                           .rot_factor = hp->rot_factor,
                           .rope_theta = hp->rope_theta};
    return tr_msd_load(&src, &dc, &m->msd);
}

/* The encoder blocks' nn configuration (the decoder's is tr_msd_load's). */
static void configure(mn_model *m) {
    const mn_hparams *hp = &m->hp;
    const int d = hp->d_model;
    m->enc_dims = (tr_nn_dims){.d_model = d,
                               .n_head = hp->n_enc_heads,
                               .head_dim = d / hp->n_enc_heads,
                               .d_ffn = hp->enc_ffn,
                               .ln_eps = 1e-5f,
                               .rope = {hp->enc_rot, hp->rope_theta, false}};
    const tr_tensor *conv[3] = {m->conv0, m->conv1, m->conv2};
    for (int i = 0; i < 3; i++) {
        tr_tensor *v = &m->conv_mat[i];
        *v = *conv[i];
        v->n_dims = 2;
        v->ne[0] = conv[i]->ne[0] * conv[i]->ne[1];
        v->ne[1] = conv[i]->ne[2];
        v->ne[2] = v->ne[3] = 1;
        v->nb1 = tr_row_bytes(v->type, v->ne[0]);
    }
}

static transcribe_status load_all(const gguf_file *f, void *model) {
    mn_model *m = model;
    transcribe_status st = tr_gguf_req_str_is(f, "general.architecture", "moonshine", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(f, "stt.variant", "moonshine", &m->variant))) return st;
    if ((st = read_hparams(f, m)) || (st = load_tokenizer(f, m)) || (st = load_tensors(f, m)))
        return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", 4096, NULL, 0, &m->lang, &m->n_lang)))
        return st;
    configure(m);
    m->max_audio_ms = (int64_t)m->hp.max_pos * MN_MS_PER_POSITION;
    TR_INFO("moonshine: %s, %d + %d layers, d_model %d, heads %d / %d (rotary %d / %d), "
            "vocabulary %d, at most %d tokens",
            m->variant, m->hp.n_enc_layers, m->hp.n_dec_layers, m->hp.d_model, m->hp.n_enc_heads,
            m->hp.n_dec_heads, m->hp.enc_rot, m->hp.dec_rot, m->hp.n_vocab, m->hp.max_pos);
    return TRANSCRIBE_OK;
}

void tr_mn_model_free(mn_model *m) {
    if (!m) return;
    free(m->enc);
    tr_msd_free(&m->msd);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

TR_FAMILY_GGUF_LOAD(mn, "moonshine", load_all)

/* docs/formats/moonshine.md §7–§8 and the family README: transcription
 * only; one segment spanning the input (token rows untimed), so the kind
 * stays NONE; a fixed output budget, so long input goes through the
 * dispatcher's long-audio path. */
void tr_mn_model_describe(const mn_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, MN_SAMPLE_RATE, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->max_audio_ms = m->max_audio_ms;
    c->supports_spec_decode = true; /* single runs: tr_msd_greedy's verify passes */
    desc->tokenizer = m->tok;
    desc->bounded_output = true;
}
