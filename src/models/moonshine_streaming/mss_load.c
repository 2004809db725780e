/* Moonshine Streaming GGUF loader: every key of
 * docs/formats/moonshine_streaming.md §2 with its exact type and the
 * cross-checks of docs/formats/moonshine_streaming.md §9, the tokenizer, every tensor of
 * docs/formats/moonshine_streaming.md §3 shape- and type-checked (the decoder through
 * nn/moonshine_decoder.h), and the capabilities of docs/formats/moonshine_streaming.md §8. Every
 * failure is TRANSCRIBE_ERR_GGUF with a log line naming the key or tensor (NOT_IMPLEMENTED for an
 * unknown tokenizer model, OOM), and frees what was loaded. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/moonshine_streaming/mss.h"
#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define MK       "stt.moonshine_streaming."
#define WIN_TYPE "ARRAY[INT32|UINT32]"

/* encoder.sliding_windows (docs/formats/moonshine_streaming.md §2.2): INT32 or UINT32 elements,
 * 2·n_layers of them. A left window below 1 would leave a frame no key (every score −inf) and a
 * negative right window means nothing: both refused. */
static transcribe_status read_windows(const gguf_file *f, mss_hparams *hp) {
    const char *key = MK "encoder.sliding_windows";
    const int64_t i = tr_gguf_find_key(f, key);
    if (i < 0) return tr_gguf_key_error(key, WIN_TYPE, "required but missing");
    const gguf_vtype et = tr_gguf_kv_arr_type(f, i);
    if (tr_gguf_kv_type(f, i) != GGUF_T_ARRAY || (et != GGUF_T_INT32 && et != GGUF_T_UINT32))
        return tr_gguf_key_error(key, WIN_TYPE, "has another type");
    const uint64_t n = tr_gguf_kv_arr_n(f, i);
    if (n != 2 * (uint64_t)hp->n_enc_layers)
        return tr_gguf_key_error(key, WIN_TYPE, "has %llu entries (2 x %d layers expected)",
                                 (unsigned long long)n, hp->n_enc_layers);
    hp->win = malloc(n * sizeof *hp->win);
    if (!hp->win) return TRANSCRIBE_ERR_OOM;
    const unsigned char *p = tr_gguf_kv_arr_data(f, i);
    hp->L_total = hp->R_total = 0;
    for (uint64_t j = 0; j < n; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * j, 4);
        const int64_t v = et == GGUF_T_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
        const int64_t lo = j % 2 == 0 ? 1 : 0;
        if (v < lo || v > 1 << 16)
            return tr_gguf_key_error(
                key, WIN_TYPE, "entry %llu (%s of layer %llu) is %lld (%lld..%d)",
                (unsigned long long)j, j % 2 ? "right" : "left", (unsigned long long)(j / 2),
                (long long)v, (long long)lo, 1 << 16);
        hp->win[j] = (int)v;
        if (v > 1) *(j % 2 ? &hp->R_total : &hp->L_total) += (int)v - 1;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_hparams(const gguf_file *f, mss_model *m) {
    mss_hparams *hp = &m->hp;
    transcribe_status st;
    int kv_heads = 0, pad_to = 0, bos = 0, pad = 0, enc_hidden = 0;
    bool tied = false, attn_bias = false, unit_offset = true;
    float frame_ms = 0;
    const tr_gguf_u32_key sizes[] = {
        {"encoder.n_layers", 1, 1024, &hp->n_enc_layers},
        {"encoder.d_model", 1, 1 << 16, &hp->enc_d},
        {"encoder.n_heads", 1, 1024, &hp->enc_heads},
        {"encoder.head_dim", 1, 1 << 12, &hp->enc_hd},
        {"encoder.ffn_dim", 1, 1 << 20, &hp->enc_ffn},
    };
    const tr_gguf_u32_key dsizes[] = {
        {"decoder.n_layers", 1, 1024, &hp->n_dec_layers},
        {"decoder.d_model", 1, 1 << 16, &hp->dec_d},
        {"decoder.n_heads", 1, 1024, &hp->dec_heads},
        {"decoder.head_dim", 1, 1 << 12, &hp->dec_hd},
        {"decoder.ffn_dim", 1, 1 << 20, &hp->dec_ffn},
        {"decoder.vocab_size", 1, 1 << 24, &hp->n_vocab},
        {"decoder.max_position_embeddings", 1, 1 << 20, &hp->max_pos},
    };
    if ((st = tr_gguf_req_u32_keys(f, MK, sizes, sizeof sizes / sizeof *sizes)) ||
        (st = tr_gguf_opt_u32(f, MK "encoder.n_kv_heads", 0, 0, 1024, &kv_heads)) ||
        (st = tr_gguf_req_str_is(f, MK "encoder.activation", "gelu", NULL)) ||
        (st = tr_gguf_req_f32(f, MK "encoder.frame_ms", &frame_ms)) ||
        (st = tr_gguf_req_u32(f, MK "encoder.frame_len", 1, 4096, &hp->frame_len)) ||
        (st = read_windows(f, hp)) ||
        (st = tr_gguf_req_u32_keys(f, MK, dsizes, sizeof dsizes / sizeof *dsizes)) ||
        (st = tr_gguf_opt_u32(f, MK "decoder.n_kv_heads", 0, 0, 1024, &kv_heads)) ||
        (st = tr_gguf_req_str_is(f, MK "decoder.activation", "silu", NULL)) ||
        (st = tr_gguf_opt_bool(f, MK "decoder.tie_word_embeddings", false, &tied)) ||
        (st = tr_gguf_opt_f32(f, MK "partial_rotary_factor", 0.8f, &hp->rot_factor)) ||
        (st = tr_gguf_opt_f32(f, MK "rope_theta", 10000.0f, &hp->rope_theta)) ||
        (st = tr_gguf_opt_bool(f, MK "attention_bias", false, &attn_bias)) ||
        (st = tr_gguf_opt_u32(f, MK "pad_head_dim_to_multiple_of", 0, 0, 1 << 16, &pad_to)) ||
        (st = tr_gguf_opt_bool(f, MK "encoder_layernorm_unit_offset", true, &unit_offset)) ||
        (st = tr_gguf_opt_f32(f, MK "cmvn_eps", 1e-6f, &hp->cmvn_eps)) ||
        (st = tr_gguf_opt_u32(f, MK "encoder_hidden_size", hp->enc_d, 1, 1 << 16, &enc_hidden)) ||
        (st = tr_gguf_opt_bool(f, MK "adapter_has_proj", false, &hp->has_proj)) ||
        (st = tr_gguf_req_u32(f, MK "decoder_start_token_id", 0, hp->n_vocab - 1, &hp->start_id)) ||
        (st = tr_gguf_req_u32(f, MK "bos_token_id", 0, INT32_MAX, &bos)) ||
        (st = tr_gguf_req_u32(f, MK "eos_token_id", 0, hp->n_vocab - 1, &hp->eos)) ||
        (st = tr_gguf_req_u32(f, MK "pad_token_id", 0, INT32_MAX, &pad)))
        return st;
    (void)frame_ms; /* informational (docs/formats/moonshine_streaming.md §2.2) */
    if (hp->enc_d < hp->enc_heads * hp->enc_hd)
        return tr_gguf_key_error(MK "encoder.d_model", "UINT32",
                                 "%d is below the attention width %d x %d", hp->enc_d,
                                 hp->enc_heads, hp->enc_hd);
    if (hp->dec_d != hp->dec_heads * hp->dec_hd)
        return tr_gguf_key_error(MK "decoder.d_model", "UINT32", "%d differs from %d x %d",
                                 hp->dec_d, hp->dec_heads, hp->dec_hd);
    if (enc_hidden != hp->enc_d)
        return tr_gguf_key_error(MK "encoder_hidden_size", "UINT32",
                                 "%d differs from encoder.d_model %d", enc_hidden, hp->enc_d);
    if (tied)
        return tr_gguf_key_error(MK "decoder.tie_word_embeddings", "BOOL",
                                 "true (the family's head is dec.lm_head.weight)");
    if (attn_bias)
        return tr_gguf_key_error(MK "attention_bias", "BOOL", "true (no bias tensors exist)");
    if (!(hp->rot_factor > 0.0f && hp->rot_factor <= 1.0f))
        return tr_gguf_key_error(MK "partial_rotary_factor", "FLOAT32", "%g is not in (0, 1]",
                                 (double)hp->rot_factor);
    if (tr_msd_rot_dims(hp->dec_hd, hp->rot_factor) < 2)
        return tr_gguf_key_error(MK "partial_rotary_factor", "FLOAT32",
                                 "%g leaves no rotary pair in a head of %d", (double)hp->rot_factor,
                                 hp->dec_hd);
    if (!(isfinite(hp->rope_theta) && hp->rope_theta > 0.0f))
        return tr_gguf_key_error(MK "rope_theta", "FLOAT32", "%g is not positive",
                                 (double)hp->rope_theta);
    if (!(isfinite(hp->cmvn_eps) && hp->cmvn_eps >= 0.0f))
        return tr_gguf_key_error(MK "cmvn_eps", "FLOAT32", "%g is not a finite eps >= 0",
                                 (double)hp->cmvn_eps);
    if (!hp->has_proj && hp->enc_d != hp->dec_d)
        return tr_gguf_key_error(MK "adapter_has_proj", "BOOL",
                                 "false while encoder width %d differs from decoder width %d",
                                 hp->enc_d, hp->dec_d);
    if (!unit_offset)
        TR_WARN("moonshine_streaming: encoder_layernorm_unit_offset = false is not read: the "
                "stored gains are used as they are (docs/formats/moonshine_streaming.md §11)");
    hp->spf = 4 * hp->frame_len;

    int sr = 0, mels = 1;
    if ((st = tr_gguf_req_str_is(f, "stt.frontend.type", "raw", NULL)) ||
        (st = tr_gguf_req_u32(f, "stt.frontend.sample_rate", 1, 1 << 24, &sr)) ||
        (st = tr_gguf_opt_u32(f, "stt.frontend.num_mels", 1, 0, 1 << 16, &mels)))
        return st;
    if (sr != MSS_SAMPLE_RATE)
        return tr_gguf_key_error("stt.frontend.sample_rate", "UINT32", "%d (only 16000)", sr);

    /* capabilities (docs/formats/moonshine_streaming.md §2.1): typed; the family has neither
     * translation, detection nor timestamps whatever they say, and always streams */
    bool cap = false;
    static const char *const caps[] = {"stt.capability.lang_detect", "stt.capability.translate",
                                       "stt.capability.timestamps"};
    for (int j = 0; j < 3; j++) {
        if ((st = tr_gguf_opt_bool(f, caps[j], false, &cap))) return st;
        if (cap) TR_WARN("moonshine_streaming: %s = true ignored (no such path)", caps[j]);
    }
    if ((st = tr_gguf_opt_bool(f, "stt.capability.streaming", true, &cap))) return st;
    if (!cap)
        TR_WARN("moonshine_streaming: stt.capability.streaming = false ignored (the family "
                "streams natively)");
    return TRANSCRIBE_OK;
}

enum { DIM_W, DIM_E, DIM_E2, DIM_A, DIM_FE, DIM_P, DIM_D };

static transcribe_status load_tensors(const gguf_file *f, mss_model *m) {
    const mss_hparams *hp = &m->hp;
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    const int64_t W = TR_NN_DIM(DIM_W), E = TR_NN_DIM(DIM_E), E2 = TR_NN_DIM(DIM_E2),
                  A = TR_NN_DIM(DIM_A), FE = TR_NN_DIM(DIM_FE), P = TR_NN_DIM(DIM_P),
                  D = TR_NN_DIM(DIM_D);
    const int64_t dims[] = {[DIM_W] = hp->frame_len,
                            [DIM_E] = hp->enc_d,
                            [DIM_E2] = 2 * (int64_t)hp->enc_d,
                            [DIM_A] = (int64_t)hp->enc_heads * hp->enc_hd,
                            [DIM_FE] = hp->enc_ffn,
                            [DIM_P] = hp->max_pos,
                            [DIM_D] = hp->dec_d};
    const tr_nn_wspec top[] = {
        {"enc.embedder.comp.log_k", TR_NN_W_VEC, {1}, 1, 0, offsetof(mss_model, log_k)},
        {"enc.embedder.linear.weight",
         TR_NN_W_TENSOR,
         {W, E},
         2,
         TR_TYPES_LINEAR,
         offsetof(mss_model, lin)},
        {"enc.embedder.conv1.weight",
         TR_NN_W_TENSOR,
         {MSS_CONV_K, E, E2},
         3,
         TR_TYPES_CONV,
         offsetof(mss_model, conv1)},
        {"enc.embedder.conv1.bias", TR_NN_W_VEC, {E2}, 1, 0, offsetof(mss_model, conv1_b)},
        {"enc.embedder.conv2.weight",
         TR_NN_W_TENSOR,
         {MSS_CONV_K, E2, E},
         3,
         TR_TYPES_CONV,
         offsetof(mss_model, conv2)},
        {"enc.embedder.conv2.bias", TR_NN_W_VEC, {E}, 1, 0, offsetof(mss_model, conv2_b)},
        {"enc.final_norm.weight", TR_NN_W_VEC, {E}, 1, 0, offsetof(mss_model, enc_norm)},
        {"adapter.pos_emb.weight",
         TR_NN_W_TENSOR,
         {E, P},
         2,
         TR_TYPES_LINEAR,
         offsetof(mss_model, pos_emb)},
        {"adapter.proj.weight",
         TR_NN_W_TENSOR,
         {E, D},
         2,
         TR_TYPES_LINEAR,
         offsetof(mss_model, proj)},
    };
    const size_t n_top = sizeof top / sizeof *top - (hp->has_proj ? 0 : 1);
    bool ok = tr_nn_load_weights(&src, top, n_top, dims, 0, true, m);
    const tr_nn_wspec blk[] = {
        {"enc.blocks.%d.norm_attn.weight",
         TR_NN_W_VEC,
         {E},
         1,
         0,
         offsetof(mss_enc_block, ln_attn)},
        {"enc.blocks.%d.attn.q", TR_NN_W_LINEAR_NOBIAS, {E, A}, 0, 0, offsetof(mss_enc_block, q)},
        {"enc.blocks.%d.attn.k", TR_NN_W_LINEAR_NOBIAS, {E, A}, 0, 0, offsetof(mss_enc_block, k)},
        {"enc.blocks.%d.attn.v", TR_NN_W_LINEAR_NOBIAS, {E, A}, 0, 0, offsetof(mss_enc_block, v)},
        {"enc.blocks.%d.attn.out", TR_NN_W_LINEAR_NOBIAS, {A, E}, 0, 0, offsetof(mss_enc_block, o)},
        {"enc.blocks.%d.norm_ffn.weight", TR_NN_W_VEC, {E}, 1, 0, offsetof(mss_enc_block, ln_ffn)},
        {"enc.blocks.%d.ffn.fc1", TR_NN_W_LINEAR, {E, FE}, 0, 0, offsetof(mss_enc_block, fc1)},
        {"enc.blocks.%d.ffn.fc2", TR_NN_W_LINEAR, {FE, E}, 0, 0, offsetof(mss_enc_block, fc2)},
    };
    m->enc = calloc((size_t)hp->n_enc_layers, sizeof *m->enc);
    if (!m->enc) return TRANSCRIBE_ERR_OOM;
    ok = ok && tr_nn_load_layers(&src, blk, sizeof blk / sizeof *blk, dims, hp->n_enc_layers, true,
                                 m->enc, sizeof *m->enc);
    if (!ok) return ERR_GGUF;
    const tr_msd_cfg dc = {.d_model = hp->dec_d,
                           .n_heads = hp->dec_heads,
                           .head_dim = hp->dec_hd,
                           .d_ffn = hp->dec_ffn,
                           .n_layers = hp->n_dec_layers,
                           .n_vocab = hp->n_vocab,
                           .rot_factor = hp->rot_factor,
                           .rope_theta = hp->rope_theta,
                           .untied = true};
    transcribe_status st = tr_msd_load(&src, &dc, &m->msd);
    if (st != TRANSCRIBE_OK) return st;
    /* the convolutions as products over im2col rows: the kernel of output
     * channel c is one row of 5·c_in values, ci-major (docs/formats/moonshine_streaming.md §5.1) */
    const tr_tensor *cs[2] = {m->conv1, m->conv2};
    tr_tensor *vs[2] = {&m->conv1v, &m->conv2v};
    for (int j = 0; j < 2; j++) {
        *vs[j] = *cs[j];
        vs[j]->n_dims = 2;
        vs[j]->ne[0] = cs[j]->ne[0] * cs[j]->ne[1];
        vs[j]->ne[1] = cs[j]->ne[2];
        vs[j]->ne[2] = vs[j]->ne[3] = 1;
        vs[j]->nb1 = tr_row_bytes(cs[j]->type, vs[j]->ne[0]);
    }
    m->k_scale = expf(m->log_k[0]);
    if (!isfinite(m->k_scale)) {
        TR_ERROR("moonshine_streaming: tensor 'enc.embedder.comp.log_k' = %g gives no finite "
                 "scale",
                 (double)m->log_k[0]);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_all(const gguf_file *f, void *model) {
    mss_model *m = model;
    transcribe_status st =
        tr_gguf_req_str_is(f, "general.architecture", "moonshine_streaming", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(f, "stt.variant", "moonshine-streaming", &m->variant))) return st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = tr_tokenizer_from_gguf(f, &m->tok))) return st;
    if (tr_tokenizer_n_vocab(m->tok) < 1) {
        TR_ERROR("moonshine_streaming: tokenizer.ggml.tokens is empty");
        return ERR_GGUF;
    }
    if ((st = load_tensors(f, m))) return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", 4096, NULL, 0, &m->lang, &m->n_lang)))
        return st;
    /* docs/formats/moonshine_streaming.md §8: one call takes at most max_position_embeddings
     * encoder frames (the adapter table's rows): 81.92 s for the published files */
    m->max_audio_ms = (int64_t)m->hp.max_pos * m->hp.spf * 1000 / MSS_SAMPLE_RATE;
    const mss_hparams *hp = &m->hp;
    TR_INFO("moonshine_streaming: %s, %d + %d layers, widths %d / %d, heads %d x %d / %d x %d "
            "(rotary %d), vocabulary %d, context %d / %d frames, %s",
            m->variant, hp->n_enc_layers, hp->n_dec_layers, hp->enc_d, hp->dec_d, hp->enc_heads,
            hp->enc_hd, hp->dec_heads, hp->dec_hd, m->msd.rot, hp->n_vocab, hp->L_total,
            hp->R_total, hp->has_proj ? "adapter projection" : "no adapter projection");
    return TRANSCRIBE_OK;
}

void tr_mss_model_free(mss_model *m) {
    if (!m) return;
    free(m->hp.win);
    free(m->enc);
    tr_msd_free(&m->msd);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

TR_FAMILY_GGUF_LOAD(mss, "moonshine_streaming", load_all)

/* docs/formats/moonshine_streaming.md §7–§8 and the family
 * README: transcription only, one segment per piece of audio (token rows untimed), native
 * streaming; input past the adapter table goes through the dispatcher's long-audio path. */
void tr_mss_model_describe(const mss_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, MSS_SAMPLE_RATE, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->max_audio_ms = m->max_audio_ms;
    c->supports_streaming = true;
    c->supports_spec_decode = true; /* offline runs: tr_msd_greedy's verify passes */
    desc->tokenizer = m->tok;
}
