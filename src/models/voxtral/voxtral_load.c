/* Voxtral GGUF loader: every key of docs/formats/voxtral.md §2 with its exact type (a
 * present key of another type is a GGUF error, optional ones included), the
 * cross-field checks of §2.6, the tokenizer and the prompt pieces of §6.1, the
 * front end of §2.6 / §3.2, the tensors of §3 by exact shape and type class (the
 * encoder through the shared Whisper encoder loader, the projector through an
 * nn/weights table, the LM through the shared causal-LM loader with an untied
 * head and no q/k norm) and the capabilities of §8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/voxtral/voxtral.h"
#include "nn/weights.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define WHO      "voxtral"
#define req_u32  tr_gguf_req_u32

/* docs/formats/voxtral.md §2.1: the published language and target lists */
static const char *const k_langs[] = {"en", "fr", "de", "es", "it", "pt", "nl", "hi"};
#define N_LANGS ((int)(sizeof k_langs / sizeof k_langs[0]))

/* ---- docs/formats/voxtral.md §2.1 identity and capabilities ---- */

static transcribe_status read_identity(const gguf_file *f, vx_model *m) {
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "voxtral", NULL))) return st;
    if ((st = tr_gguf_opt_str_copy(f, "stt.variant", "voxtral-mini-3b-2507", &m->variant)))
        return st;
    bool detect;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.lang_detect", true, &detect))) return st;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.translate", true, &m->translate))) return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", VX_MAX_STRS, k_langs, N_LANGS, &m->lang,
                                    &m->n_lang)))
        return st;
    return tr_gguf_opt_strv_copy(f, "stt.translation.target_languages", VX_MAX_STRS, k_langs,
                                 N_LANGS, &m->targets, &m->n_targets);
}

/* ---- docs/formats/voxtral.md §2.3 encoder, §2.4 projector ---- */

static transcribe_status read_encoder_keys(const gguf_file *f, vx_model *m) {
    transcribe_status st;
    int head_dim, in_dim;
#define EK "stt.voxtral.encoder."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &m->enc.n_layers},
        {"d_model", 1, 1 << 16, &m->enc.d_model},
        {"n_heads", 1, 1024, &m->enc.n_head},
        {"head_dim", 1, 1 << 16, &head_dim},
        {"ffn_dim", 1, 1 << 20, &m->enc.d_ffn},
        {"num_mel_bins", 1, 4096, &m->enc.n_mels},
        {"max_source_positions", 1, 1 << 20, &m->enc.n_pos},
    };
    if ((st = tr_gguf_req_u32_keys(f, EK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str_is(f, EK "activation", "gelu", NULL))) return st;
#define PK "stt.voxtral.projector."
    if ((st = req_u32(f, PK "downsample_factor", 1, 1024, &m->downsample))) return st;
    if ((st = req_u32(f, PK "input_dim", 1, 1 << 24, &in_dim))) return st;
    if ((st = tr_gguf_req_str_is(f, PK "hidden_act", "gelu", NULL))) return st;
    if (m->enc.d_model % m->enc.n_head)
        return tr_gguf_key_error(EK "d_model", "UINT32", "%d is not divisible by n_heads %d",
                                 m->enc.d_model, m->enc.n_head);
    if (head_dim != m->enc.d_model / m->enc.n_head)
        return tr_gguf_key_error(EK "head_dim", "UINT32", "%d != d_model %d / n_heads %d", head_dim,
                                 m->enc.d_model, m->enc.n_head);
    if ((int64_t)in_dim != (int64_t)m->enc.d_model * m->downsample)
        return tr_gguf_key_error(PK "input_dim", "UINT32",
                                 "%d != encoder d_model %d x downsample_factor %d", in_dim,
                                 m->enc.d_model, m->downsample);
    if (m->enc.n_pos % m->downsample)
        return tr_gguf_key_error(EK "max_source_positions", "UINT32",
                                 "%d is not divisible by downsample_factor %d", m->enc.n_pos,
                                 m->downsample);
#undef EK
#undef PK
    m->audio_per_chunk = m->enc.n_pos / m->downsample;
    m->enc.ln_name = "enc.ln_post";
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral.md §2.5 decoder ---- */

static transcribe_status read_lm_keys(const gguf_file *f, vx_model *m) {
    transcribe_status st;
    tr_clm_hparams *hp = &m->lm;
    bool tied;
#define DK "stt.voxtral.decoder."
    if ((st = tr_clm_read_sizes(f, DK, false, hp)))
        return st; /* no q/k norm (docs/formats/voxtral.md §6.3) */
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta))) return st;
    if ((st = req_u32(f, DK "max_position_embeddings", 1, INT32_MAX, &m->max_pos))) return st;
    /* read, not used: the head is always dec.output.weight (docs/formats/voxtral.md §2.5) */
    if ((st = tr_gguf_opt_bool(f, DK "tie_word_embeddings", false, &tied))) return st;
    if ((st = req_u32(f, DK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
#undef DK
    if (hp->n_head % hp->n_head_kv || hp->head_dim % 2)
        return tr_gguf_key_error("stt.voxtral.decoder.n_heads", "UINT32",
                                 "%d query heads are not a multiple of %d kv heads (head_dim %d)",
                                 hp->n_head, hp->n_head_kv, hp->head_dim);
    return req_u32(f, "stt.voxtral.audio_token_id", 0, hp->n_vocab - 1, &m->sp.audio);
}

/* ---- docs/formats/voxtral.md §2.6 front end, §3.2 baked buffers ---- */

static transcribe_status read_frontend(const gguf_file *f, vx_model *m) {
    transcribe_status st;
    int chunk_s, n_samples, nb;
    float x;
    bool center;
    if ((st = tr_mel_check_stft_keys(f, WHO, m->enc.n_mels))) return st;
#define FK "stt.frontend."
    static const char *const reflect[] = {"reflect", NULL}, *const slaney[] = {"slaney", NULL};
    const char *win;
    if ((st = tr_gguf_req_str(f, FK "window", &win))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "per_utterance", NULL))) return st;
    if ((st = tr_gguf_req_f32(f, FK "dither", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "pre_emphasis", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_min", &x))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_max", &x))) return st;
    if ((st = tr_gguf_opt_str_in(f, FK "pad_mode", reflect))) return st;
    if ((st = tr_gguf_opt_bool(f, FK "center", true, &center))) return st;
    if ((st = tr_gguf_opt_str_in(f, FK "mel_norm", slaney))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "chunk_length", 30, 0, 3600, &chunk_s))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "n_samples", 0, 0, INT32_MAX, &n_samples))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "nb_max_frames", 0, 0, INT32_MAX, &nb))) return st;
#undef FK
    tr_mel_config_whisper(&m->mel, m->enc.n_mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    const int sr = m->mel.sample_rate;
    m->n_chunk = n_samples > 0 ? n_samples : (chunk_s > 0 ? chunk_s : 30) * sr;
    m->nb_frames_key = nb > 0;
    m->chunk_mel = nb > 0 ? nb : m->n_chunk / m->mel.hop_length;
    if (m->mel.normalize != TR_NORM_PER_UTTERANCE || m->mel.pad_mode != TR_PAD_REFLECT) {
        TR_ERROR(WHO ": the front end must use reflect padding and per-utterance normalisation");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral.md §2.2 tokenizer, §6.1 special pieces ---- */

static transcribe_status read_tokenizer(const gguf_file *f, vx_model *m) {
    transcribe_status st;
    const int V = m->lm.n_vocab;
    vx_special *sp = &m->sp;
    if ((st = tr_tokenizer_from_gguf(f, &m->tok))) return st; /* NOT_IMPLEMENTED: unknown model */
    if (tr_tokenizer_n_vocab(m->tok) != V) {
        TR_ERROR(WHO ": %d tokens in tokenizer.ggml.tokens, decoder.vocab_size %d",
                 tr_tokenizer_n_vocab(m->tok), V);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.eos_token_id", V, &sp->eos))) return st;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.bos_token_id", V, &sp->bos))) return st;
    if (sp->eos < 0 || sp->bos < 0) {
        TR_ERROR(WHO ": tokenizer.ggml.%s_token_id is missing", sp->eos < 0 ? "eos" : "bos");
        return ERR_GGUF;
    }
    if ((st = tr_tokenizer_require(m->tok, WHO, "[INST]", &sp->inst)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "[/INST]", &sp->inst_end)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "[BEGIN_AUDIO]", &sp->begin_audio)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "[TRANSCRIBE]", &sp->transcribe)))
        return st;
    /* the placeholder run is n_audio long only if no fixed prompt id is the
     * placeholder (docs/formats/voxtral.md §6.2) */
    const int fixed[] = {sp->bos, sp->inst, sp->begin_audio, sp->inst_end, sp->transcribe};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (fixed[i] == sp->audio)
            return tr_gguf_key_error("stt.voxtral.audio_token_id", "UINT32",
                                     "%d is also a fixed prompt token", sp->audio);
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral.md §3 tensors ---- */

enum { VD_IN, VD_H, VD_NDIMS };
#define DD(k) TR_NN_DIM(VD_##k)
#define MM(f) offsetof(vx_model, f)
static const tr_nn_wspec k_proj[] = {
    {"proj.linear_1", TR_NN_W_LINEAR_NOBIAS, {DD(IN), DD(H)}, 0, 0, MM(lin1)},
    {"proj.linear_2", TR_NN_W_LINEAR_NOBIAS, {DD(H), DD(H)}, 0, 0, MM(lin2)},
};
#undef MM
#undef DD

static transcribe_status read_tensors(const gguf_file *f, vx_model *m) {
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    bool ok = tr_whenc_load(&src, &m->enc);
    if (!m->enc.blocks) return TRANSCRIBE_ERR_OOM;
    const int64_t dims[VD_NDIMS] = {
        [VD_IN] = (int64_t)m->enc.d_model * m->downsample, [VD_H] = m->lm.d_model};
    if (!tr_nn_load_weights(&src, k_proj, sizeof k_proj / sizeof k_proj[0], dims, 0, false, m))
        ok = false;
    if (!ok) return ERR_GGUF;
    /* untied head (dec.output.weight), any dequantizable type for the embedding */
    return tr_clm_load_weights(f, WHO, &m->lm, false, TR_TYPES_LINEAR, &m->lm_blocks, &m->lm_w);
}

/* ---- model ---- */

static transcribe_status (*const k_load_steps[])(const gguf_file *f, vx_model *m) = {
    read_identity, read_encoder_keys, read_lm_keys, read_frontend, read_tokenizer, read_tensors,
};

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    vx_model *m = model;
    for (size_t i = 0; i < sizeof k_load_steps / sizeof k_load_steps[0]; i++) {
        transcribe_status st = k_load_steps[i](f, m);
        if (st) return st;
    }
    /* docs/formats/voxtral.md §8: (max_pos − 16 − 448) audio tokens of chunk_ms / 375 ms each,
     * published only with an nb_max_frames key */
    const int64_t tokens = (int64_t)m->max_pos - VX_PROMPT_SLACK - VX_GEN_RESERVE;
    const int64_t chunk_ms = (int64_t)m->n_chunk * 1000 / m->mel.sample_rate;
    m->max_audio_ms = m->nb_frames_key && tokens > 0 ? tokens * chunk_ms / m->audio_per_chunk : 0;
    TR_INFO(WHO ": loaded %s (encoder %d x %d, LM %d x %d, heads %d/%d x %d, vocab %d)", m->variant,
            m->enc.n_layers, m->enc.d_model, m->lm.n_layer, m->lm.d_model, m->lm.n_head,
            m->lm.n_head_kv, m->lm.head_dim, m->lm.n_vocab);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(vx, WHO, load_gguf)

void tr_vx_model_free(vx_model *m) {
    if (!m) return;
    tr_whenc_free(&m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    tr_strv_free(m->targets, m->n_targets);
    TR_FREE_ALL(m->lm_blocks, m->variant, m);
}

void tr_vx_model_describe(const vx_model *m, tr_model_desc *desc) {
    /* docs/formats/voxtral.md §7: no timestamps; §6.6: no language is reported, so
     * detection is not advertised (README) */
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->supports_translate = m->translate;
    c->n_translate_target_languages = m->translate ? m->n_targets : 0;
    c->translate_target_languages = (const char *const *)m->targets;
    c->supports_spec_decode = true; /* single runs: the causal LM's tr_clm_greedy */
    c->max_audio_ms = m->max_audio_ms;
    desc->bounded_output = true; /* a fixed output budget, no long form */
    desc->tokenizer = tr_tokenizer_can_encode(m->tok) ? m->tok : NULL;
}
