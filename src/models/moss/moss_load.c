/* MOSS GGUF loader: every key of docs/formats/moss.md §2 with its exact type (a
 * present key of another type is a GGUF error), the cross-field checks of
 * §2.3, the tensors of §3 by exact shape and type class (the encoder through
 * the shared Whisper encoder loader, the LM and adaptor through nn/weights
 * tables), the tokenizer and the baked prompt arrays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/moss/moss.h"
#include "nn/weights.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define req_u32  tr_gguf_req_u32
/* docs/formats/moss.md §3.1 class E: any dequantizable type (row lookup and matmul) */
#define MS_TYPES_ANY 0x7fffffffu

/* ---- docs/formats/moss.md §2.2 ---- */

static transcribe_status read_encoder_keys(const gguf_file *f, ms_model *m) {
    transcribe_status st;
    bool scale;
#define EK "stt.moss.encoder."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &m->enc.n_layers},
        {"d_model", 1, 1 << 16, &m->enc.d_model},
        {"n_heads", 1, 1024, &m->enc.n_head},
        {"ffn_dim", 1, 1 << 20, &m->enc.d_ffn},
        {"num_mel_bins", 1, 4096, &m->enc.n_mels},
        {"max_source_positions", 1, 1 << 20, &m->enc.n_pos},
    };
    if ((st = tr_gguf_req_u32_keys(f, EK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str_is(f, EK "activation", "gelu", NULL))) return st;
    if ((st = tr_gguf_opt_bool(f, EK "scale_embedding", false, &scale))) return st;
#undef EK
    if (m->enc.d_model % m->enc.n_head)
        return tr_gguf_key_error("stt.moss.encoder.d_model", "UINT32",
                                 "%d is not divisible by n_heads %d", m->enc.d_model,
                                 m->enc.n_head);
    return TRANSCRIBE_OK;
}

static transcribe_status read_lm_keys(const gguf_file *f, ms_model *m) {
    transcribe_status st;
    tr_clm_hparams *hp = &m->lm;
    bool tied;
    int in_dim;
    if ((st = req_u32(f, "stt.moss.adaptor.input_dim", 1, 1 << 20, &in_dim))) return st;
    if ((st = req_u32(f, "stt.moss.audio_merge_size", 1, 64, &m->merge))) return st;
#define DK "stt.moss.decoder."
    if ((st = tr_clm_read_sizes(f, DK, true, hp))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta))) return st;
    if ((st = req_u32(f, DK "max_position_embeddings", 1, INT32_MAX, &m->max_pos))) return st;
    if ((st = tr_gguf_opt_bool(f, DK "tie_word_embeddings", true, &tied))) return st;
    if ((st = req_u32(f, DK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
#undef DK
    if (!tied)
        return tr_gguf_key_error("stt.moss.decoder.tie_word_embeddings", "BOOL",
                                 "must be true (the file has no separate head)");
    if (hp->n_head % hp->n_head_kv || hp->head_dim % 2)
        return tr_gguf_key_error("stt.moss.decoder.n_heads", "UINT32",
                                 "%d query heads are not a multiple of %d kv heads (head_dim %d)",
                                 hp->n_head, hp->n_head_kv, hp->head_dim);
    if ((int64_t)in_dim != (int64_t)hp->d_model * m->merge)
        return tr_gguf_key_error("stt.moss.adaptor.input_dim", "UINT32",
                                 "%d != hidden_size %d x audio_merge_size %d", in_dim, hp->d_model,
                                 m->merge);
    if (in_dim != m->enc.d_model * m->merge)
        return tr_gguf_key_error("stt.moss.adaptor.input_dim", "UINT32",
                                 "%d != encoder d_model %d x audio_merge_size %d", in_dim,
                                 m->enc.d_model, m->merge);
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/moss.md §2.3 prompt and front end ---- */

static transcribe_status copy_ids(const gguf_file *f, const char *key, int V, int32_t **out,
                                  int *n) {
    const int32_t *a;
    int64_t cnt;
    transcribe_status st = tr_gguf_req_arr_i32(f, key, 1, 1 << 20, &a, &cnt);
    if (st) return st;
    for (int64_t i = 0; i < cnt; i++)
        if (a[i] < 0 || a[i] >= V)
            return tr_gguf_key_error(key, "INT32 array", "id %d at %lld is outside [0, %d)", a[i],
                                     (long long)i, V);
    *out = malloc((size_t)cnt * sizeof **out);
    if (!*out) return TRANSCRIBE_ERR_OOM;
    memcpy(*out, a, (size_t)cnt * sizeof **out);
    *n = (int)cnt;
    return TRANSCRIBE_OK;
}

static transcribe_status read_prompt_keys(const gguf_file *f, ms_model *m) {
    transcribe_status st;
    const int V = m->lm.n_vocab;
    if ((st = req_u32(f, "stt.moss.audio_token_id", 0, V - 1, &m->audio_tok))) return st;
    if ((st =
             tr_gguf_req_f32_finite(f, "stt.moss.audio_tokens_per_second", true, &m->tokens_per_s)))
        return st;
    if ((st = req_u32(f, "stt.moss.time_marker_every_seconds", 0, 1 << 20, &m->marker_every)))
        return st;
    if ((st = tr_gguf_opt_bool(f, "stt.moss.enable_time_marker", true, &m->markers))) return st;
    if ((st = copy_ids(f, "stt.moss.prompt_prefix_tokens", V, &m->prefix, &m->n_prefix))) return st;
    if ((st = copy_ids(f, "stt.moss.prompt_suffix_tokens", V, &m->suffix, &m->n_suffix))) return st;
    const int32_t *d;
    int64_t nd;
    if ((st = tr_gguf_req_arr_i32(f, "stt.moss.digit_tokens", 10, 10, &d, &nd))) return st;
    for (int i = 0; i < 10; i++) {
        if (d[i] < 0 || d[i] >= V)
            return tr_gguf_key_error("stt.moss.digit_tokens", "INT32 array",
                                     "id %d is outside [0, %d)", d[i], V);
        m->digits[i] = d[i];
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_frontend(const gguf_file *f, ms_model *m) {
    transcribe_status st;
    int v;
    float x;
    if ((st = tr_mel_check_stft_keys(f, "moss", m->enc.n_mels))) return st;
    tr_mel_config_whisper(&m->mel, m->enc.n_mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    const int sr = m->mel.sample_rate;
#define FK "stt.frontend."
    if ((st = tr_gguf_req_str_is(f, FK "window", "hann_periodic", NULL))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "per_utterance", NULL))) return st;
    if ((st = tr_gguf_req_f32(f, FK "dither", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "pre_emphasis", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_min", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_max", &x))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "chunk_length", 30, 1, 3600, &v))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "n_samples", 30 * sr, 1, INT32_MAX, &m->n_chunk))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "nb_max_frames", 0, 0, INT32_MAX, &v))) return st;
#undef FK
    /* The Whisper front end pads each chunk to 30 s (docs/formats/moss.md §5). */
    if (m->n_chunk != 30 * sr)
        return tr_gguf_key_error("stt.frontend.n_samples", "UINT32",
                                 "%d samples per chunk; only 30 s chunks (%d) are supported",
                                 m->n_chunk, 30 * sr);
    if (m->mel.pad_mode != TR_PAD_REFLECT || m->mel.normalize != TR_NORM_PER_UTTERANCE) {
        TR_ERROR("moss: the front end must use reflect padding and per-utterance normalisation");
        return ERR_GGUF;
    }
    /* one 30 s chunk is n_frames mel frames, half of them encoder rows */
    const int n_frames = m->n_chunk / m->mel.hop_length;
    if (n_frames % 2 || n_frames / 2 > m->enc.n_pos) {
        TR_ERROR("moss: a 30 s chunk is %d mel frames; the encoder needs an even count with at "
                 "most %d positions after the stride-2 conv",
                 n_frames, m->enc.n_pos);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_tokenizer(const gguf_file *f, ms_model *m) {
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "tokenizer.ggml.model", "gpt2", NULL))) return st;
    if ((st = tr_tokenizer_from_gguf(f, &m->tok))) return st;
    const int V = m->lm.n_vocab;
    if (tr_tokenizer_n_vocab(m->tok) != V) {
        TR_ERROR("moss: %d tokens in tokenizer.ggml.tokens, decoder.vocab_size %d",
                 tr_tokenizer_n_vocab(m->tok), V);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.eos_token_id", V, &m->eos))) return st;
    if (m->eos < 0) {
        TR_ERROR("moss: tokenizer.ggml.eos_token_id is missing (decoding stops on <|im_end|>)");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* general.languages; absent: English and Chinese */
static transcribe_status read_languages(const gguf_file *f, ms_model *m) {
    static const char *const k_default[] = {"en", "zh"};
    return tr_gguf_opt_strv_copy(f, "general.languages", 4096, k_default, 2, &m->lang, &m->n_lang);
}

/* ---- docs/formats/moss.md §3 tensors ---- */

enum { MD_H, MD_Q, MD_K, MD_I, MD_HD, MD_IN, MD_V, MD_NDIMS };
#define DD(k) TR_NN_DIM(MD_##k)
#define BL(f) offsetof(tr_clm_block, f)
static const tr_nn_wspec k_lm_block[] = {
    {"dec.blocks.%d.norm_attn.weight", TR_NN_W_VEC, {DD(H)}, 1, 0, BL(norm_attn)},
    {"dec.blocks.%d.norm_ffn.weight", TR_NN_W_VEC, {DD(H)}, 1, 0, BL(norm_ffn)},
    {"dec.blocks.%d.attn.q_norm.weight", TR_NN_W_VEC, {DD(HD)}, 1, 0, BL(q_norm)},
    {"dec.blocks.%d.attn.k_norm.weight", TR_NN_W_VEC, {DD(HD)}, 1, 0, BL(k_norm)},
    {"dec.blocks.%d.attn.q.weight", TR_NN_W_TENSOR, {DD(H), DD(Q)}, 2, TR_TYPES_LINEAR, BL(wq)},
    {"dec.blocks.%d.attn.k.weight", TR_NN_W_TENSOR, {DD(H), DD(K)}, 2, TR_TYPES_LINEAR, BL(wk)},
    {"dec.blocks.%d.attn.v.weight", TR_NN_W_TENSOR, {DD(H), DD(K)}, 2, TR_TYPES_LINEAR, BL(wv)},
    {"dec.blocks.%d.attn.o.weight", TR_NN_W_TENSOR, {DD(Q), DD(H)}, 2, TR_TYPES_LINEAR, BL(wo)},
    {"dec.blocks.%d.ffn.gate.weight", TR_NN_W_TENSOR, {DD(H), DD(I)}, 2, TR_TYPES_LINEAR, BL(gate)},
    {"dec.blocks.%d.ffn.up.weight", TR_NN_W_TENSOR, {DD(H), DD(I)}, 2, TR_TYPES_LINEAR, BL(up)},
    {"dec.blocks.%d.ffn.down.weight", TR_NN_W_TENSOR, {DD(I), DD(H)}, 2, TR_TYPES_LINEAR, BL(down)},
};
#undef BL
#define MM(f) offsetof(ms_model, f)
static const tr_nn_wspec k_top[] = {
    {"adaptor.fc1", TR_NN_W_LINEAR, {DD(IN), DD(H)}, 0, 0, MM(fc1)},
    {"adaptor.fc2", TR_NN_W_LINEAR, {DD(H), DD(H)}, 0, 0, MM(fc2)},
    {"adaptor.norm_out", TR_NN_W_NORM, {DD(H)}, 0, 0, MM(norm_out)},
    {"dec.token_embd.weight", TR_NN_W_TENSOR, {DD(H), DD(V)}, 2, MS_TYPES_ANY, MM(lm_w.tok_emb)},
    {"dec.output_norm.weight", TR_NN_W_VEC, {DD(H)}, 1, 0, MM(lm_w.out_norm)},
};
#undef MM
#undef DD
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static transcribe_status read_tensors(const gguf_file *f, ms_model *m) {
    const tr_clm_hparams *hp = &m->lm;
    const int64_t dims[MD_NDIMS] = {[MD_H] = hp->d_model,
                                    [MD_Q] = (int64_t)hp->n_head * hp->head_dim,
                                    [MD_K] = (int64_t)hp->n_head_kv * hp->head_dim,
                                    [MD_I] = hp->d_ffn,
                                    [MD_HD] = hp->head_dim,
                                    [MD_IN] = (int64_t)hp->d_model * m->merge,
                                    [MD_V] = hp->n_vocab};
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    bool ok = tr_whenc_load(&src, &m->enc);
    if (!m->enc.blocks) return TRANSCRIBE_ERR_OOM;
    if (!tr_nn_load_weights(&src, k_top, N_OF(k_top), dims, 0, true, m)) ok = false;
    m->lm_blocks = calloc((size_t)hp->n_layer, sizeof *m->lm_blocks);
    if (!m->lm_blocks) return TRANSCRIBE_ERR_OOM;
    if (ok && !tr_nn_load_layers(&src, k_lm_block, N_OF(k_lm_block), dims, hp->n_layer, true,
                                 m->lm_blocks, sizeof *m->lm_blocks))
        ok = false;
    if (!ok) return ERR_GGUF;
    m->lm_w.head = m->lm_w.tok_emb;
    m->lm_w.blocks = m->lm_blocks;
    return tr_clm_check(hp, &m->lm_w) ? TRANSCRIBE_OK : ERR_GGUF;
}

/* ---- model ---- */

static transcribe_status read_identity(const gguf_file *f, ms_model *m) {
    return tr_gguf_req_str_is(f, "general.architecture", "moss", NULL);
}

/* stt.capability.speaker_diarization (type-checked; MOSS always diarizes)
 * and the variant name. */
static transcribe_status read_caps(const gguf_file *f, ms_model *m) {
    bool diar;
    transcribe_status st = tr_gguf_opt_bool(f, "stt.capability.speaker_diarization", true, &diar);
    if (st) return st;
    return tr_gguf_opt_str_copy(f, "stt.variant", "moss-transcribe-diarize", &m->variant);
}

/* The load steps in order; the first failure ends the load. */
static transcribe_status (*const k_load_steps[])(const gguf_file *f, ms_model *m) = {
    read_identity,    read_encoder_keys, read_lm_keys,        read_frontend, read_tokenizer,
    read_prompt_keys, read_languages,    tr_ms_hotwords_load, read_caps,     read_tensors,
};

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    ms_model *m = model;
    for (size_t i = 0; i < sizeof k_load_steps / sizeof k_load_steps[0]; i++) {
        transcribe_status st = k_load_steps[i](f, m);
        if (st) return st;
    }
    TR_INFO("moss: loaded %s (encoder %d x %d, LM %d x %d, heads %d/%d, vocab %d, prompt %d+%d)",
            m->variant, m->enc.n_layers, m->enc.d_model, m->lm.n_layer, m->lm.d_model, m->lm.n_head,
            m->lm.n_head_kv, m->lm.n_vocab, m->n_prefix, m->n_suffix);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(ms, "moss", load_gguf)

void tr_ms_model_free(ms_model *m) {
    if (!m) return;
    tr_whenc_free(&m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->lm_blocks, m->prefix, m->suffix, m->variant, m->instruction, m);
}

void tr_ms_model_describe(const ms_model *m, tr_model_desc *desc) {
    /* no language detection or translation; docs/formats/moss.md §9: max_audio_ms not advertised
     * (the session limits give the basis); MOSS never encodes text (§4) */
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_SEGMENT);
    c->supports_spec_decode = true; /* single runs: the causal LM's tr_clm_greedy */
    desc->bounded_output = true;    /* a fixed output budget, no long form */
    desc->features[TRANSCRIBE_FEATURE_DIARIZATION] = true;
    desc->features[TRANSCRIBE_FEATURE_VOCABULARY] = m->instruction != NULL;
}
