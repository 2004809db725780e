/* Granite Speech GGUF loader: every key of docs/formats/granite_speech.md §2 with its
 * exact type (a present key of another type fails the load), the
 * cross-field checks, the tensors of §3 by exact shape and type class
 * (proj.query 3-D as converted or 2-D as quantized), BatchNorm folded into
 * the depthwise taps, relative-position rows and queries widened to F32,
 * the tokenizer and special pieces of §4, languages and capabilities. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/granite_speech/granite.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF     TRANSCRIBE_ERR_GGUF
#define GS_TYPES_ANY 0x7fffffffu
#define GS_MAX_STRS  4096

#define req_u32  tr_gguf_req_u32
#define opt_bool tr_gguf_opt_bool

/* ---- docs/formats/granite_speech.md §2.3 encoder, §2.4 projector, §2.5 decoder, §2.6 fusion
 * ---- */

static transcribe_status read_encoder_keys(const gguf_file *f, gs_model *m) {
    transcribe_status st;
#define EK "stt.granite.encoder."
    if ((st = tr_gc_read_keys(f, EK, "granite_speech", &m->enc))) return st;
    const int32_t *cat = NULL;
    int64_t n_cat = 0;
    if ((st = tr_gguf_opt_arr_i32(f, EK "cat_hidden_layers", 0, GS_MAX_CAT, &cat, &n_cat)))
        return st;
    for (int64_t i = 0; i < n_cat; i++) {
        if (cat[i] < 0 || cat[i] >= m->enc.n_layer)
            return tr_gguf_key_error(EK "cat_hidden_layers", "ARRAY[INT32]",
                                     "entry %d is outside [0, %d)", (int)cat[i], m->enc.n_layer);
        m->cat[i] = cat[i];
    }
    m->n_cat = (int)n_cat;
#undef EK
    return TRANSCRIBE_OK;
}

static transcribe_status read_projector_keys(const gguf_file *f, gs_model *m) {
    transcribe_status st;
    gs_proj_hparams *p = &m->proj;
    int unused;
#define PK "stt.granite.projector."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 64, &p->n_layer},
        {"hidden", 1, 1 << 16, &p->d},
        {"intermediate", 1, 1 << 20, &p->d_ffn},
        {"n_heads", 1, 1024, &p->n_head},
        {"encoder_hidden_size", 1, 1 << 18, &p->enc_d},
        {"cross_attn_frequency", 0, 1 << 16, &unused},
    };
    if ((st = tr_gguf_req_u32_keys(f, PK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str_is(f, PK "hidden_act", "gelu", NULL))) return st;
    if ((st = tr_gguf_req_f32_finite(f, PK "layer_norm_eps", true, &p->eps))) return st;
    if ((st = req_u32(f, PK "max_pos_emb", 0, INT32_MAX, &unused))) return st;
    if ((st = tr_gguf_req_str_is(f, PK "position_embedding_type", "absolute", NULL))) return st;
#undef PK
    if (p->d % p->n_head) {
        TR_ERROR("granite_speech: projector hidden %d is not divisible by %d heads", p->d,
                 p->n_head);
        return ERR_GGUF;
    }
    const int want = m->enc.d * (1 + m->n_cat);
    if (p->enc_d != want) {
        TR_ERROR("granite_speech: projector encoder_hidden_size %d != encoder hidden %d x (1 + %d "
                 "cat_hidden_layers) = %d",
                 p->enc_d, m->enc.d, m->n_cat, want);
        return ERR_GGUF;
    }
    if ((st = req_u32(f, "stt.granite.downsample_rate", 1, 1 << 10, &p->downsample))) return st;
    if ((st = req_u32(f, "stt.granite.window_size", 1, 1 << 12, &p->window))) return st;
    if (p->window % p->downsample || p->window / p->downsample != GS_N_QUERY) {
        TR_ERROR("granite_speech: window_size %d / downsample_rate %d must give %d queries",
                 p->window, p->downsample, GS_N_QUERY);
        return ERR_GGUF;
    }
    p->n_query = GS_N_QUERY;
    return TRANSCRIBE_OK;
}

static transcribe_status read_decoder_keys(const gguf_file *f, gs_model *m) {
    transcribe_status st;
    tr_clm_hparams *hp = &m->lm;
#define DK "stt.granite.decoder."
    if ((st = tr_clm_read_sizes(f, DK, false /* no q/k norm */, hp))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta))) return st;
    if ((st = req_u32(f, DK "max_position_embeddings", 1, INT32_MAX, &m->max_pos))) return st;
    if ((st = opt_bool(f, DK "tie_word_embeddings", false, &m->tied))) return st;
    if ((st = req_u32(f, DK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "embedding_multiplier", true, &hp->embedding_mult)))
        return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "logits_scaling", true, &hp->logits_scale))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "attention_multiplier", true, &hp->attention_mult)))
        return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "residual_multiplier", true, &hp->residual_mult)))
        return st;
#undef DK
    if (hp->n_head * hp->head_dim != hp->d_model || hp->n_head % hp->n_head_kv ||
        hp->head_dim % 2) {
        TR_ERROR("granite_speech: decoder heads %d/%d x %d do not fit hidden_size %d", hp->n_head,
                 hp->n_head_kv, hp->head_dim, hp->d_model);
        return ERR_GGUF;
    }
    if ((st = tr_clm_check_head(f, "granite_speech", m->tied))) return st;
    return TRANSCRIBE_OK;
}

static transcribe_status read_frontend(const gguf_file *f, gs_model *m) {
    transcribe_status st;
    float x;
#define FK "stt.frontend."
    /* two stacked mel frames per encoder input row */
    const int n_mels = m->enc.in_dim % 2 ? 0 : m->enc.in_dim / 2;
    if ((st = tr_mel_check_stft_keys(f, "granite_speech", n_mels))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "window", "hann_periodic", NULL))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "per_utterance", NULL))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "dither", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "pre_emphasis", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_min", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_max", false, &x))) return st;
    const char *const pads[] = {"reflect", NULL}, *const norms[] = {"htk", NULL};
    if ((st = tr_gguf_opt_str_in(f, FK "pad_mode", pads))) return st;
    if ((st = tr_gguf_opt_str_in(f, FK "mel_norm", norms))) return st;
    bool center;
    if ((st = opt_bool(f, FK "center", true, &center))) return st;
#undef FK
    /* docs/formats/granite_speech.md §3.2: the HTK filterbank must be baked (the computed fallback
     * is Slaney) */
    if (!tr_gguf_find_tensor(f, "frontend.mel_filterbank")) {
        TR_ERROR("granite_speech: the file has no frontend.mel_filterbank (HTK filters)");
        return ERR_GGUF;
    }
    tr_mel_config_whisper(&m->mel, m->enc.in_dim / 2);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    m->mel.pad_mode = TR_PAD_REFLECT;
    if (m->mel.normalize != TR_NORM_PER_UTTERANCE || !m->mel.filterbank) {
        TR_ERROR("granite_speech: the front end must be per-utterance with a baked filterbank");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/granite_speech.md §2.1 capabilities, §2.2 / §4 tokenizer ---- */

static transcribe_status read_caps(const gguf_file *f, gs_model *m) {
    transcribe_status st;
    bool detect;
    if ((st = opt_bool(f, "stt.capability.translate", true, &m->translate))) return st;
    if ((st = opt_bool(f, "stt.capability.lang_detect", false, &detect))) return st;
    if ((st = opt_bool(f, "stt.capability.word_timestamps", false, &m->word_ts))) return st;
    if ((st = opt_bool(f, "stt.capability.speaker_diarization", false, &m->diarize))) return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", GS_MAX_STRS, NULL, 0, &m->lang,
                                    &m->n_lang)))
        return st;
    if ((st = tr_gguf_opt_strv_copy(f, "stt.translation.target_languages", GS_MAX_STRS, NULL, 0,
                                    &m->targets, &m->n_targets)))
        return st;
    if ((st = tr_gguf_opt_strv_copy(f, "stt.translation.pairs", GS_MAX_STRS, NULL, 0, &m->pairs,
                                    &m->n_pairs)))
        return st;
    const char *variant = NULL;
    if ((st = tr_gguf_opt_str(f, "stt.variant", NULL, &variant))) return st;
    m->variant = strdup(variant ? variant : "");
    return m->variant ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

static transcribe_status read_tokenizer(const gguf_file *f, gs_model *m) {
    transcribe_status st;
    const int V = m->lm.n_vocab;
    gs_special *sp = &m->sp;
    if ((st = tr_tokenizer_load_gpt2(f, "granite_speech", V, &m->tok, &sp->eos))) return st;
    if ((st = tr_gguf_req_u32(f, "stt.granite.audio_token_id", 0, V - 1, &sp->audio))) return st;
    int audio_piece, eot;
    if ((st = tr_tokenizer_require(m->tok, "granite_speech", "<|audio|>", &audio_piece)) ||
        (st = tr_tokenizer_require(m->tok, "granite_speech", "<|end_of_text|>", &eot)) ||
        (st = tr_tokenizer_require(m->tok, "granite_speech", "<|pad|>", &sp->pad)))
        return st;
    sp->start_role = tr_tokenizer_find(m->tok, "<|start_of_role|>");
    sp->end_role = tr_tokenizer_find(m->tok, "<|end_of_role|>");
    const char *tmpl = NULL;
    if ((st = tr_gguf_opt_str(f, "tokenizer.chat_template", NULL, &tmpl))) return st;
    m->role_template =
        tmpl && strstr(tmpl, "<|start_of_role|>") && sp->start_role >= 0 && sp->end_role >= 0;
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/granite_speech.md §3 tensors ---- */

typedef struct finder {
    const gguf_file *f;
    char name[160];
    bool bad;
} finder;

static const char *nm(finder *fd, const char *fmt, int l, const char *what) {
    char p[64];
    snprintf(p, sizeof p, fmt, l);
    snprintf(fd->name, sizeof fd->name, "%s%s", p, what);
    return fd->name;
}

static const tr_tensor *mat(finder *fd, const char *name, int64_t in, int64_t out, uint32_t types) {
    const int64_t ne[2] = {in, out};
    const tr_tensor *t = tr_gguf_require_tensor(fd->f, name, types, 2, ne);
    if (!t) fd->bad = true;
    return t;
}

static const float *vec(finder *fd, const char *name, int64_t n) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = tr_gguf_require_tensor(fd->f, name, TR_TYPES_F32, 1, ne);
    if (!t) fd->bad = true;
    return t ? (const float *)t->data : NULL;
}

/* prefix fmt (with %d), layer, name stem: "<stem>.weight" (+ "<stem>.bias"). */
static void lin(finder *fd, tr_nn_linear *l, const char *fmt, int i, const char *stem, int64_t in,
                int64_t out, bool bias) {
    char s[96];
    snprintf(s, sizeof s, "%s.weight", stem);
    l->w = mat(fd, nm(fd, fmt, i, s), in, out, TR_TYPES_LINEAR);
    l->b = NULL;
    if (bias) {
        snprintf(s, sizeof s, "%s.bias", stem);
        l->b = vec(fd, nm(fd, fmt, i, s), out);
    }
}

static void norm(finder *fd, tr_nn_norm *n, const char *fmt, int i, const char *stem, int64_t d) {
    char s[96];
    snprintf(s, sizeof s, "%s.weight", stem);
    n->w = vec(fd, nm(fd, fmt, i, s), d);
    snprintf(s, sizeof s, "%s.bias", stem);
    n->b = vec(fd, nm(fd, fmt, i, s), d);
}

static transcribe_status read_projector(finder *fd, gs_model *m) {
    const gs_proj_hparams *p = &m->proj;
    const int64_t d = p->d;
    /* docs/formats/granite_speech.md §3.4: [p, 3, 1] as converted, [p, 3] after quantizing;
     * the require check treats trailing 1s alike, so one shape covers both */
    const int64_t qne[3] = {d, p->n_query, 1};
    const tr_tensor *q = tr_gguf_require_tensor(fd->f, "proj.query", TR_TYPES_LINEAR, 3, qne);
    if (!q) fd->bad = true;
    m->qf_norm.w = vec(fd, "proj.qformer.final_norm.weight", d);
    m->qf_norm.b = vec(fd, "proj.qformer.final_norm.bias", d);
    m->proj_out.w = mat(fd, "proj.linear.weight", d, m->lm.d_model, TR_TYPES_LINEAR);
    m->proj_out.b = vec(fd, "proj.linear.bias", m->lm.d_model);
    if (fd->bad) return ERR_GGUF;
    m->qf = calloc((size_t)p->n_layer, sizeof *m->qf);
    if (!m->qf) return TRANSCRIBE_ERR_OOM;
    const char *P = "proj.qformer.blocks.%d.";
    for (int i = 0; i < p->n_layer; i++) {
        gs_qf_layer *l = &m->qf[i];
        lin(fd, &l->sq, P, i, "self_attn.q", d, d, true);
        lin(fd, &l->sk, P, i, "self_attn.k", d, d, true);
        lin(fd, &l->sv, P, i, "self_attn.v", d, d, true);
        lin(fd, &l->so, P, i, "self_attn.out", d, d, true);
        norm(fd, &l->n_self, P, i, "norm_self_attn", d);
        lin(fd, &l->cq, P, i, "cross_attn.q", d, d, true);
        lin(fd, &l->ck, P, i, "cross_attn.k", p->enc_d, d, true);
        lin(fd, &l->cv, P, i, "cross_attn.v", p->enc_d, d, true);
        lin(fd, &l->co, P, i, "cross_attn.out", d, d, true);
        norm(fd, &l->n_cross, P, i, "norm_cross_attn", d);
        lin(fd, &l->up, P, i, "ffn.up", d, p->d_ffn, true);
        lin(fd, &l->down, P, i, "ffn.down", p->d_ffn, d, true);
        norm(fd, &l->n_ffn, P, i, "norm_ffn", d);
    }
    if (fd->bad) return ERR_GGUF;
    m->query = tr_rows_f32(q, p->n_query);
    return m->query ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    gs_model *m = model;
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "granite_speech", NULL))) return st;
    if ((st = read_encoder_keys(f, m))) return st;
    if ((st = read_projector_keys(f, m))) return st;
    if ((st = read_decoder_keys(f, m))) return st;
    if (m->proj.d % m->proj.n_head || m->lm.d_model <= 0) return ERR_GGUF;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_tokenizer(f, m))) return st;
    if ((st = read_caps(f, m))) return st;
    if ((st = tr_gc_load(f, "granite_speech", &tr_gc_names_granite_speech, &m->enc, &m->enc_w)))
        return st;
    finder fd = {.f = f};
    if ((st = read_projector(&fd, m))) return st;
    /* the text LM, on the shared causal-LM loader */
    if ((st = tr_clm_load_weights(f, "granite_speech", &m->lm, m->tied, GS_TYPES_ANY, &m->lm_blocks,
                                  &m->lm_w)))
        return st;
    /* docs/formats/granite_speech.md §9: floor((ceiling − 64 − 256) / 3) windows of window·2·hop
     * samples */
    int64_t windows = ((int64_t)m->max_pos - 64 - GS_MAX_NEW) / m->proj.n_query;
    m->max_audio_ms =
        windows > 0 ? windows * m->proj.window * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    TR_INFO("granite_speech: loaded %s (encoder %d x %d, cat %d, projector %d x %d, LM %d x %d, "
            "vocab %d, %s head)",
            *m->variant ? m->variant : "(no variant)", m->enc.n_layer, m->enc.d, m->n_cat,
            m->proj.n_layer, m->proj.d, m->lm.n_layer, m->lm.d_model, m->lm.n_vocab,
            m->tied ? "tied" : "untied");
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(gs, "granite_speech", load_gguf)

void tr_gs_model_free(gs_model *m) {
    if (!m) return;
    tr_gc_free(&m->enc, &m->enc_w);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    tr_strv_free(m->targets, m->n_targets);
    tr_strv_free(m->pairs, m->n_pairs);
    TR_FREE_ALL(m->query, m->qf, m->lm_blocks, m->variant, m);
}

void tr_gs_model_describe(const gs_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                            m->word_ts ? TRANSCRIBE_TIMESTAMPS_WORD : TRANSCRIBE_TIMESTAMPS_NONE);
    c->supports_translate = m->translate; /* no language detection */
    c->supports_spec_decode = true;       /* single runs: the causal LM's tr_clm_greedy */
    c->n_translate_target_languages = m->translate ? m->n_targets : 0;
    c->translate_target_languages = (const char *const *)m->targets;
    c->max_audio_ms = m->max_audio_ms;
    desc->bounded_output = true; /* a fixed output budget, no long form */
    desc->features[TRANSCRIBE_FEATURE_DIARIZATION] = m->diarize;
    desc->tokenizer = tr_tokenizer_can_encode(m->tok) ? m->tok : NULL;
    desc->n_translate_pairs = m->translate ? m->n_pairs : 0;
    desc->translate_pairs = (const char *const *)m->pairs;
}
