/* Qwen3-ASR GGUF loader: every key of docs/formats/qwen3_asr.md §2 with its exact
 * type (a present key of another type is a GGUF error), the cross-field
 * checks of §2.6, the tensors of §3 by exact shape and type class, the
 * tokenizer and special tokens of §4, the language table of §9.1 and the
 * capabilities. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/qwen3_asr/qwen3_asr.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
/* docs/formats/qwen3_asr.md §3.1 class E: any dequantizable type (row lookup and matmul) */
#define QA_TYPES_ANY 0x7fffffffu

/* docs/formats/qwen3_asr.md §9.1: codes and publisher names. */
static const char *const k_lang[QA_N_LANGS][2] = {
    {"zh", "Chinese"},    {"en", "English"},    {"yue", "Cantonese"}, {"ar", "Arabic"},
    {"de", "German"},     {"fr", "French"},     {"es", "Spanish"},    {"pt", "Portuguese"},
    {"id", "Indonesian"}, {"it", "Italian"},    {"ko", "Korean"},     {"ru", "Russian"},
    {"th", "Thai"},       {"vi", "Vietnamese"}, {"ja", "Japanese"},   {"tr", "Turkish"},
    {"hi", "Hindi"},      {"ms", "Malay"},      {"nl", "Dutch"},      {"sv", "Swedish"},
    {"da", "Danish"},     {"fi", "Finnish"},    {"pl", "Polish"},     {"cs", "Czech"},
    {"fil", "Filipino"},  {"fa", "Persian"},    {"el", "Greek"},      {"ro", "Romanian"},
    {"hu", "Hungarian"},  {"mk", "Macedonian"},
};

const char *tr_qa_lang_name(const char *code) {
    for (int i = 0; code && i < QA_N_LANGS; i++)
        if (strcmp(k_lang[i][0], code) == 0) return k_lang[i][1];
    return NULL;
}

const char *tr_qa_lang_code(const qa_model *m, const char *name) {
    for (int i = 0; name && i < m->n_lang; i++)
        if (m->lang_name[i] && strcmp(m->lang_name[i], name) == 0) return m->lang[i];
    return NULL;
}

/* ---- keys (src/gguf/gguf_keys.h: strict types, one error format) ---- */

#define req_u32  tr_gguf_req_u32
#define req_str  tr_gguf_req_str
#define opt_bool tr_gguf_opt_bool

/* Required UINT32 token id inside the vocabulary. */
static transcribe_status req_id(const gguf_file *f, const char *key, int V, int *out) {
    return tr_gguf_req_u32(f, key, 0, V - 1, out);
}

/* ---- docs/formats/qwen3_asr.md §2.3 / §2.4 ---- */

static transcribe_status read_hparams(const gguf_file *f, qa_model *m) {
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "qwen3_asr", NULL))) return st;
    qa_enc_hparams *e = &m->enc;
    int unused;
#define EK "stt.qwen3_asr.encoder."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &e->n_layer},        {"d_model", 1, 1 << 16, &e->d_model},
        {"n_heads", 1, 1024, &e->n_head},          {"ffn_dim", 1, 1 << 20, &e->d_ffn},
        {"num_mel_bins", 8, 4096, &e->n_mels},     {"downsample_hidden", 1, 1 << 14, &e->conv_ch},
        {"output_dim", 1, 1 << 16, &e->out_dim},   {"max_source_positions", 1, INT32_MAX, &unused},
        {"n_window", 1, 1 << 16, &e->n_window},    {"n_window_infer", 1, INT32_MAX, &unused},
        {"conv_chunksize", 1, INT32_MAX, &unused},
    };
    if ((st = tr_gguf_req_u32_keys(f, EK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str_is(f, EK "activation", "gelu", NULL))) return st;
#undef EK
    if (e->d_model % e->n_head || (e->d_model / e->n_head) % 2) {
        TR_ERROR("qwen3_asr: encoder d_model %d is not divisible into %d even heads", e->d_model,
                 e->n_head);
        return ERR_GGUF;
    }

    tr_clm_hparams *hp = &m->lm;
#define DK "stt.qwen3_asr.decoder."
    if ((st = tr_clm_read_sizes(f, DK, true, hp))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", false, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", false, &hp->rope_theta))) return st;
    int sec_t, sec_h, sec_w;
    if ((st = req_u32(f, DK "rope_mrope_section_t", 0, 1 << 16, &sec_t))) return st;
    if ((st = req_u32(f, DK "rope_mrope_section_h", 0, 1 << 16, &sec_h))) return st;
    if ((st = req_u32(f, DK "rope_mrope_section_w", 0, 1 << 16, &sec_w))) return st;
    bool interleaved;
    if ((st = opt_bool(f, DK "rope_mrope_interleaved", true, &interleaved))) return st;
    if ((st = req_u32(f, DK "max_position_embeddings", 1, INT32_MAX, &m->max_pos))) return st;
    if ((st = opt_bool(f, DK "tie_word_embeddings", true, &m->tied))) return st;
    if ((st = req_u32(f, DK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
#undef DK
    if (hp->n_head % hp->n_head_kv || hp->head_dim % 2) {
        TR_ERROR("qwen3_asr: %d query heads are not a multiple of %d kv heads (head_dim %d)",
                 hp->n_head, hp->n_head_kv, hp->head_dim);
        return ERR_GGUF;
    }
    if (!(hp->eps > 0) || !(hp->rope_theta > 0)) {
        TR_ERROR("qwen3_asr: rms_norm_eps %g and rope_theta %g must be positive", hp->eps,
                 hp->rope_theta);
        return ERR_GGUF;
    }
    if (sec_t + sec_h + sec_w != hp->head_dim / 2) {
        TR_ERROR("qwen3_asr: mrope sections %d+%d+%d != head_dim/2 = %d", sec_t, sec_h, sec_w,
                 hp->head_dim / 2);
        return ERR_GGUF;
    }
    if (!interleaved) {
        TR_ERROR("qwen3_asr: rope_mrope_interleaved = false is not supported");
        return ERR_GGUF;
    }
    if (e->out_dim != hp->d_model) {
        TR_ERROR("qwen3_asr: encoder output_dim %d != decoder hidden_size %d", e->out_dim,
                 hp->d_model);
        return ERR_GGUF;
    }
    /* The head: tied (the shipped files) or an explicit dec.output.weight. */
    if ((st = tr_clm_check_head(f, "qwen3_asr", m->tied))) return st;
    m->lm_w.head = NULL; /* resolved with the tensors */
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/qwen3_asr.md §2.6 front end ---- */

static transcribe_status read_frontend(const gguf_file *f, qa_model *m) {
    transcribe_status st;
    int v;
    float x;
#define FK "stt.frontend."
    if ((st = tr_mel_check_stft_keys(f, "qwen3_asr", m->enc.n_mels))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "window", "hann_periodic", "hann"))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "per_utterance", "whisper_logmel"))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "dither", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "pre_emphasis", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_min", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_max", false, &x))) return st;
    if ((st = tr_gguf_opt_u32(f, FK "chunk_length", 0, 0, INT32_MAX, &v)) ||
        (st = tr_gguf_opt_u32(f, FK "n_samples", 0, 0, INT32_MAX, &v)) ||
        (st = tr_gguf_opt_u32(f, FK "nb_max_frames", 0, 0, INT32_MAX, &v)))
        return st;
#undef FK
    tr_mel_config_whisper(&m->mel, m->enc.n_mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    if (m->mel.pad_mode != TR_PAD_REFLECT || m->mel.normalize != TR_NORM_PER_UTTERANCE) {
        TR_ERROR("qwen3_asr: the front end must use reflect padding and per-utterance "
                 "normalisation");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/qwen3_asr.md §2.2, §2.5, §4 tokenizer and special ids; §9.1 languages ---- */

static transcribe_status find_piece(const qa_model *m, const char *piece, int *out) {
    return tr_tokenizer_require(m->tok, "qwen3_asr", piece, out);
}

static transcribe_status read_tokenizer(const gguf_file *f, qa_model *m) {
    transcribe_status st;
    const int V = m->lm.n_vocab;
    qa_special *sp = &m->sp;
    if ((st = tr_tokenizer_load_gpt2(f, "qwen3_asr", V, &m->tok, &sp->eos))) return st;
    if ((st = req_id(f, "stt.qwen3_asr.audio_token_id", V, &sp->audio_pad))) return st;
    if ((st = req_id(f, "stt.qwen3_asr.audio_start_token_id", V, &sp->audio_start))) return st;
    if ((st = req_id(f, "stt.qwen3_asr.audio_end_token_id", V, &sp->audio_end))) return st;
    if ((st = find_piece(m, "<|im_start|>", &sp->im_start))) return st;
    if ((st = find_piece(m, "<|im_end|>", &sp->im_end))) return st;
    if ((st = find_piece(m, "\xC4\x8A", &sp->newline))) return st;
    if ((st = find_piece(m, "system", &sp->system))) return st;
    if ((st = find_piece(m, "user", &sp->user))) return st;
    if ((st = find_piece(m, "assistant", &sp->assistant))) return st;
    /* needed only for a language hint; absent → hints are refused */
    sp->asr_text = tr_tokenizer_find(m->tok, "<asr_text>");
    return TRANSCRIBE_OK;
}

static transcribe_status read_languages(const gguf_file *f, qa_model *m) {
    const char *table[QA_N_LANGS]; /* absent: the docs/formats/qwen3_asr.md §9.1 table */
    for (int i = 0; i < QA_N_LANGS; i++) table[i] = k_lang[i][0];
    transcribe_status st = tr_gguf_opt_strv_copy(f, "general.languages", 4096, table, QA_N_LANGS,
                                                 &m->lang, &m->n_lang);
    if (st) return st;
    m->lang_name = calloc((size_t)m->n_lang + 1, sizeof *m->lang_name);
    if (!m->lang_name) return TRANSCRIBE_ERR_OOM;
    for (int i = 0; i < m->n_lang; i++) {
        m->lang_name[i] = tr_qa_lang_name(m->lang[i]);
        if (!m->lang_name[i])
            TR_WARN("qwen3_asr: language '%s' has no publisher name; it cannot be forced",
                    m->lang[i]);
    }
    return opt_bool(f, "stt.capability.lang_detect", false, &m->lang_detect);
}

/* ---- docs/formats/qwen3_asr.md §3 tensors ---- */

static const float *vec(const gguf_file *f, const char *name, int64_t n, bool *ok) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = tr_gguf_require_tensor(f, name, TR_TYPES_F32, 1, ne);
    if (!t) *ok = false;
    return t ? (const float *)t->data : NULL;
}

static const tr_tensor *mat(const gguf_file *f, const char *name, int64_t in, int64_t out,
                            uint32_t types, bool *ok) {
    const int64_t ne[2] = {in, out};
    const tr_tensor *t = tr_gguf_require_tensor(f, name, types, 2, ne);
    if (!t) *ok = false;
    return t;
}

static void enc_lin(const gguf_file *f, tr_nn_linear *l, const char *p, const char *what,
                    int64_t in, int64_t out, bool *ok) {
    char n[160];
    snprintf(n, sizeof n, "%s%s.weight", p, what);
    l->w = mat(f, n, in, out, TR_TYPES_LINEAR, ok);
    snprintf(n, sizeof n, "%s%s.bias", p, what);
    l->b = vec(f, n, out, ok);
}

static void enc_norm(const gguf_file *f, tr_nn_norm *nm, const char *p, const char *what, int64_t d,
                     bool *ok) {
    char n[160];
    snprintf(n, sizeof n, "%s%s.weight", p, what);
    nm->w = vec(f, n, d, ok);
    snprintf(n, sizeof n, "%s%s.bias", p, what);
    nm->b = vec(f, n, d, ok);
}

static transcribe_status read_encoder(const gguf_file *f, qa_model *m) {
    const qa_enc_hparams *e = &m->enc;
    const int64_t C = e->conv_ch, d = e->d_model;
    bool ok = true;
    int mb = e->n_mels;
    for (int i = 0; i < 3; i++) mb = (mb + 1) / 2; /* k3 s2 p1 along mel */
    m->m3 = mb;
    for (int i = 0; i < 3; i++) {
        char n[64];
        const int64_t ne[4] = {3, 3, i == 0 ? 1 : C, C};
        snprintf(n, sizeof n, "enc.conv.%d.weight", i);
        m->conv_w[i] = tr_gguf_require_tensor(f, n, TR_TYPES_CONV, 4, ne);
        if (!m->conv_w[i]) ok = false;
        snprintf(n, sizeof n, "enc.conv.%d.bias", i);
        m->conv_b[i] = vec(f, n, C, &ok);
    }
    m->conv_out = mat(f, "enc.conv_out.weight", C * mb, d, TR_TYPES_LINEAR, &ok);
    m->enc_blocks = calloc((size_t)e->n_layer, sizeof *m->enc_blocks);
    if (!m->enc_blocks) return TRANSCRIBE_ERR_OOM;
    for (int l = 0; l < e->n_layer && ok; l++) {
        char p[64];
        snprintf(p, sizeof p, "enc.blocks.%d.", l);
        tr_nn_enc_block *b = &m->enc_blocks[l];
        enc_norm(f, &b->ln_attn, p, "norm_attn", d, &ok);
        enc_lin(f, &b->attn.q, p, "attn.q", d, d, &ok);
        enc_lin(f, &b->attn.k, p, "attn.k", d, d, &ok);
        enc_lin(f, &b->attn.v, p, "attn.v", d, d, &ok);
        enc_lin(f, &b->attn.o, p, "attn.out", d, d, &ok);
        enc_norm(f, &b->ln_ffn, p, "norm_ffn", d, &ok);
        enc_lin(f, &b->ffn.fc1, p, "ffn.fc1", d, e->d_ffn, &ok);
        enc_lin(f, &b->ffn.fc2, p, "ffn.fc2", e->d_ffn, d, &ok);
        b->ffn.act = TR_NN_ACT_GELU;
    }
    enc_norm(f, &m->ln_post, "enc.", "ln_post", d, &ok);
    enc_lin(f, &m->proj1, "enc.", "proj1", d, d, &ok);
    enc_lin(f, &m->proj2, "enc.", "proj2", d, e->out_dim, &ok);
    if (!ok) return ERR_GGUF;
    m->enc_dims = (tr_nn_dims){.d_model = (int)d,
                               .n_head = e->n_head,
                               .head_dim = (int)d / e->n_head,
                               .d_ffn = e->d_ffn,
                               .ln_eps = 1e-5f};

    /* docs/formats/qwen3_asr.md §6.3 sinusoids for the rows of one chunk */
    int L = 2 * e->n_window;
    for (int i = 0; i < 3; i++) L = (L + 1) / 2;
    m->per_chunk = L;
    m->pos_emb = malloc((size_t)L * (size_t)d * sizeof(float));
    if (!m->pos_emb) return TRANSCRIBE_ERR_OOM;
    const int half = (int)d / 2;
    const double s = half > 1 ? log(10000.0) / (half - 1) : 0.0;
    for (int p = 0; p < L; p++)
        for (int k = 0; k < half; k++) {
            double a = p * exp(-s * k);
            m->pos_emb[(size_t)p * d + k] = (float)sin(a);
            m->pos_emb[(size_t)p * d + k + half] = (float)cos(a);
        }
    return TRANSCRIBE_OK;
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    qa_model *m = model;
    transcribe_status st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_tokenizer(f, m))) return st;
    if ((st = read_languages(f, m))) return st;
    const char *variant = NULL;
    if ((st = tr_gguf_opt_str(f, "stt.variant", NULL, &variant))) return st;
    m->variant = strdup(variant && *variant ? variant : "qwen3-asr");
    if (!m->variant) return TRANSCRIBE_ERR_OOM;
    if ((st = read_encoder(f, m))) return st;
    /* the text LM, on the shared causal-LM loader */
    if ((st = tr_clm_load_weights(f, "qwen3_asr", &m->lm, m->tied, QA_TYPES_ANY, &m->lm_blocks,
                                  &m->lm_w)))
        return st;
    /* docs/formats/qwen3_asr.md §9.3: (max_position − 48 − 256) audio tokens of 8 hops each */
    int64_t tokens = (int64_t)m->max_pos - 48 - QA_MAX_NEW;
    m->max_audio_ms = tokens > 0 ? tokens * 8 * m->mel.hop_length * 1000 / m->mel.sample_rate : 0;
    TR_INFO("qwen3_asr: loaded %s (encoder %d x %d, LM %d x %d, heads %d/%d, vocab %d)", m->variant,
            m->enc.n_layer, m->enc.d_model, m->lm.n_layer, m->lm.d_model, m->lm.n_head,
            m->lm.n_head_kv, m->lm.n_vocab);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(qa, "qwen3_asr", load_gguf)

void tr_qa_model_free(qa_model *m) {
    if (!m) return;
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->enc_blocks, m->lm_blocks, m->pos_emb, m->lang_name, m->variant, m);
}

void tr_qa_model_describe(const qa_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                            TRANSCRIBE_TIMESTAMPS_NONE /* docs/formats/qwen3_asr.md §10 */);
    c->supports_language_detect = true; /* docs/formats/qwen3_asr.md §9.1; no translation */
    c->supports_spec_decode = true;     /* single runs: the causal LM's tr_clm_greedy */
    desc->bounded_output = true;        /* a fixed output budget, no long form */
    c->max_audio_ms = m->max_audio_ms;
    desc->tokenizer = tr_tokenizer_can_encode(m->tok) ? m->tok : NULL;
}
