/* Canary GGUF loader: every key of docs/formats/canary.md §2 with its exact type
 * (a present key of the wrong type is a GGUF error), the special-token
 * catalog and language table, the decoder / projection tensors of §3.3–§3.4
 * with exact shapes and type classes, the FastConformer encoder through
 * src/nn/fastconformer.h, the tokenizer and the capabilities. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/canary/canary.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF

/* ---- key helpers: the shared typed readers are gguf/gguf_keys.h ---- */

/* Optional string array copied into *out (count *n); absent → 0 entries. */
static transcribe_status opt_strs(const gguf_file *f, const char *key, char ***out, int *n,
                                  bool *present) {
    const char *const *a = NULL;
    int64_t cnt = 0;
    *out = NULL;
    *n = 0;
    if (present) *present = false;
    transcribe_status st = tr_gguf_opt_arr_str(f, key, 0, 4096, &a, &cnt);
    if (st) return st;
    if (present) *present = tr_gguf_has(f, key);
    if (cnt == 0) return TRANSCRIBE_OK;
    char **d = calloc((size_t)cnt, sizeof *d);
    if (!d) return TRANSCRIBE_ERR_OOM;
    *out = d;
    for (int64_t i = 0; i < cnt; i++) {
        d[i] = strdup(a[i] ? a[i] : "");
        if (!d[i]) return TRANSCRIBE_ERR_OOM;
        *n = (int)i + 1;
    }
    return TRANSCRIBE_OK;
}

/* ---- hyperparameters (docs/formats/canary.md §2.3, §2.4, §2.5) ---- */

static transcribe_status read_hparams(const gguf_file *f, cn_model *m) {
    cn_hparams *hp = &m->hp;
    transcribe_status st;
    const char *arch = NULL;
    if ((st = tr_gguf_req_str(f, "general.architecture", &arch))) return st;
    if (strcmp(arch, "canary") != 0) {
        TR_ERROR("canary: general.architecture is '%s'", arch);
        return ERR_GGUF;
    }
    if ((st = tr_fc_read_hparams(f, "stt.canary.encoder.", TR_FC_KEYS_CANARY, &m->enc_hp)))
        return st;
    if ((st = tr_gguf_req_u32(f, "stt.canary.encoder.pos_emb_max_len", 1, 1 << 24,
                              &hp->pos_emb_max_len)))
        return st;
    bool use_bias; /* docs/formats/canary.md §2.3: type-checked, ignored (biases required) */
    if ((st = tr_gguf_opt_bool(f, "stt.canary.encoder.use_bias", false, &use_bias))) return st;
    if (m->enc_hp.sub_factor != 8) {
        TR_ERROR("canary: stt.canary.encoder.subsampling_factor %d (only 8 is supported)",
                 m->enc_hp.sub_factor);
        return ERR_GGUF;
    }
    hp->d_enc = m->enc_hp.d_model;

#define DK "stt.canary.decoder."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &hp->n_dec_layers},        {"d_model", 1, 1 << 16, &hp->d_dec},
        {"n_heads", 1, 1024, &hp->n_dec_heads},          {"d_ff", 1, 1 << 20, &hp->dec_ff},
        {"max_position", 1, 1 << 20, &hp->max_position}, {"vocab_size", 1, 1 << 24, &hp->n_vocab},
    };
    if ((st = tr_gguf_req_u32_keys(f, DK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if (hp->d_dec % hp->n_dec_heads) {
        TR_ERROR("canary: decoder d_model %d is not divisible by n_heads %d", hp->d_dec,
                 hp->n_dec_heads);
        return ERR_GGUF;
    }
    if ((st = tr_fced_read_act(f, "canary", DK "activation", &hp->act))) return st;
    bool pre_ln, learn_pos; /* written, not consulted: the decoder is always pre-LN */
    if ((st = tr_gguf_opt_bool(f, DK "pre_ln", true, &pre_ln))) return st;
    if ((st = tr_gguf_opt_bool(f, DK "learn_positional_encodings", false, &learn_pos))) return st;
    if ((st = tr_gguf_opt_bool(f, DK "encoder_decoder_proj", false, &hp->enc_dec_proj))) return st;
#undef DK
    if (!hp->enc_dec_proj && hp->d_enc != hp->d_dec) {
        TR_ERROR("canary: encoder width %d != decoder width %d without encoder_decoder_proj",
                 hp->d_enc, hp->d_dec);
        return ERR_GGUF;
    }

    const char *pf = NULL;
    if ((st = tr_gguf_req_str(f, "stt.canary.tokenizer.prompt_format", &pf))) return st;
    if (strcmp(pf, "canary") == 0) {
        hp->prompt_format = CN_PROMPT_CANARY;
    } else if (strcmp(pf, "canary2") == 0) {
        hp->prompt_format = CN_PROMPT_CANARY2;
    } else {
        TR_ERROR("canary: stt.canary.tokenizer.prompt_format '%s' is not supported", pf);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_opt_bool(f, "stt.canary.tokenizer.single_sp", false, &hp->single_sp)))
        return st;
    /* lang_offsets / lang_sizes are not read, but a present key must have its type */
    const int32_t *ia = NULL;
    int64_t na = 0;
    if ((st =
             tr_gguf_opt_arr_i32(f, "stt.canary.tokenizer.lang_offsets", 0, INT64_MAX, &ia, &na)) ||
        (st = tr_gguf_opt_arr_i32(f, "stt.canary.tokenizer.lang_sizes", 0, INT64_MAX, &ia, &na)))
        return st;
    return TRANSCRIBE_OK;
}

/* ---- front end (docs/formats/canary.md §2.7, §5) ---- */

static transcribe_status read_frontend(const gguf_file *f, cn_model *m) {
    transcribe_status st;
    const char *s = NULL;
    int mels, sr, n_fft, win, hop;
    float v;
#define FK "stt.frontend."
    if ((st = tr_gguf_req_str(f, FK "type", &s))) return st;
    if (strcmp(s, "mel") != 0) {
        TR_ERROR("canary: " FK "type '%s' (only 'mel')", s);
        return ERR_GGUF;
    }
    const tr_gguf_u32_key sizes[] = {
        {"num_mels", 1, 4096, &mels},     {"sample_rate", 1, 1 << 24, &sr},
        {"n_fft", 2, 1 << 16, &n_fft},    {"win_length", 1, 1 << 16, &win},
        {"hop_length", 1, 1 << 16, &hop},
    };
    if ((st = tr_gguf_req_u32_keys(f, FK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if (mels != 128 || mels != m->enc_hp.n_mels) {
        TR_ERROR("canary: " FK "num_mels %d (only 128 is implemented)", mels);
        return ERR_GGUF;
    }
    if (sr != 16000) {
        TR_ERROR("canary: " FK "sample_rate %d (only 16000)", sr);
        return ERR_GGUF;
    }
    if (n_fft & (n_fft - 1) || win > n_fft) {
        TR_ERROR("canary: " FK "n_fft %d must be a power of two >= win_length %d", n_fft, win);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_req_str(f, FK "window", &s))) return st;
    if (strcmp(s, "hann") != 0) {
        TR_ERROR("canary: " FK "window '%s' (only 'hann')", s);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_req_str(f, FK "normalize", &s))) return st;
    if (strcmp(s, "per_feature") != 0) {
        TR_ERROR("canary: " FK "normalize '%s' (only 'per_feature')", s);
        return ERR_GGUF;
    }
    /* dither: read for presence and type only; inference never dithers */
    if ((st = tr_gguf_req_f32(f, FK "dither", &v))) return st;
    if ((st = tr_gguf_req_f32(f, FK "pre_emphasis", &v))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_min", &v))) return st;
    if ((st = tr_gguf_req_f32(f, FK "f_max", &v))) return st;
    bool logb;
    if ((st = tr_gguf_opt_bool(f, FK "log", true, &logb))) return st;
    static const char *const pads[] = {"reflect", "constant", NULL};
    if ((st = tr_gguf_opt_str_in(f, FK "pad_mode", pads))) return st;
#undef FK
    tr_mel_config_nemo(&m->mel, mels);
    m->mel.pad_mode = TR_PAD_REFLECT; /* the default when pad_mode is absent */
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    m->mel.log = true; /* docs/formats/canary.md §2.7: stt.frontend.log is never read */
    return TRANSCRIBE_OK;
}

/* ---- tokenizer, special tokens, languages (docs/formats/canary.md §2.1, §2.2, §2.5, §2.6) ---- */

static transcribe_status read_special(const gguf_file *f, cn_model *m) {
    const int V = m->hp.n_vocab;
    cn_special *sp = &m->sp;
    transcribe_status st;
    struct {
        const char *name;
        int *dst;
        bool req;
    } keys[] = {
        {"startoftranscript", &sp->sot, true},
        {"endoftext", &sp->eot, true},
        {"pad", &sp->pad, true},
        {"startofcontext", &sp->soc, false},
        {"pnc", &sp->pnc, false},
        {"nopnc", &sp->nopnc, false},
        {"noitn", &sp->noitn, false},
        {"notimestamp", &sp->notimestamp, false},
        {"nodiarize", &sp->nodiarize, false},
        {"itn", &sp->itn, false},
        {"timestamp", &sp->timestamp, false},
        {"diarize", &sp->diarize, false},
        {"nospeech", &sp->nospeech, false},
        {"spkchange", &sp->spkchange, false},
        {"audioseparator", &sp->audiosep, false},
        {"transcribe", &sp->transcribe, false},
        {"translate", &sp->translate, false},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char key[96];
        snprintf(key, sizeof key, "stt.canary.special.%s_id", keys[i].name);
        if ((st = tr_gguf_opt_token_id(f, key, V, keys[i].dst))) return st;
        if (keys[i].req && *keys[i].dst < 0)
            return tr_gguf_key_error(key, "token id", "required but missing");
    }
    /* Pieces outside the catalog, located by exact lookup (docs/formats/canary.md §2.6, §8.1). */
    sp->emo_undefined = tr_tokenizer_find(m->tok, "<|emo:undefined|>");
    sp->space = tr_tokenizer_find(m->tok, "\xE2\x96\x81");

    int eos = -1;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.eos_token_id", V, &eos))) return st;
    m->hp.eos = eos >= 0 ? eos : sp->eot;
    /* The remaining tokenizer.ggml ids are type-checked only. */
    int unused;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.unknown_token_id", V, &unused))) return st;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.bos_token_id", V, &unused))) return st;
    return TRANSCRIBE_OK;
}

static transcribe_status add_table_code(const gguf_file *f, cn_model *m, const char *code) {
    if (!code[0] || strlen(code) > 48) return TRANSCRIBE_OK;
    for (int i = 0; i < m->n_table; i++)
        if (strcmp(m->table_code[i], code) == 0) return TRANSCRIBE_OK; /* duplicate */
    char key[96];
    snprintf(key, sizeof key, "stt.canary.special.lang.%s_id", code);
    int id = -1;
    transcribe_status st = tr_gguf_opt_token_id(f, key, m->hp.n_vocab, &id);
    if (st != TRANSCRIBE_OK || id < 0) return st; /* no id: e.g. "spl_tokens", "all" */
    char *c = strdup(code);
    if (!c) return TRANSCRIBE_ERR_OOM;
    m->table_code[m->n_table] = c;
    m->table_id[m->n_table] = id;
    m->n_table++;
    return TRANSCRIBE_OK;
}

static transcribe_status read_languages(const gguf_file *f, cn_model *m) {
    transcribe_status st;
    char **codes = NULL;
    int n_codes = 0;
    if ((st = opt_strs(f, "stt.canary.tokenizer.lang_codes", &codes, &n_codes, NULL))) {
        tr_strv_free(codes, n_codes);
        return st;
    }
    if ((st = opt_strs(f, "general.languages", &m->lang, &m->n_lang, NULL))) {
        tr_strv_free(codes, n_codes);
        return st;
    }
    int cap = n_codes + m->n_lang;
    if (cap > 0) {
        m->table_code = calloc((size_t)cap, sizeof *m->table_code);
        m->table_id = calloc((size_t)cap, sizeof *m->table_id);
        if (!m->table_code || !m->table_id) st = TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < n_codes && st == TRANSCRIBE_OK; i++) st = add_table_code(f, m, codes[i]);
    for (int i = 0; i < m->n_lang && st == TRANSCRIBE_OK; i++)
        st = add_table_code(f, m, m->lang[i]);
    tr_strv_free(codes, n_codes);
    if (st != TRANSCRIBE_OK) return st;
    if (m->n_lang == 0 && m->n_table > 0) {
        /* No general.languages: advertise the codes that have an id. */
        m->lang = calloc((size_t)m->n_table, sizeof *m->lang);
        if (!m->lang) return TRANSCRIBE_ERR_OOM;
        for (int i = 0; i < m->n_table; i++) {
            m->lang[i] = strdup(m->table_code[i]);
            if (!m->lang[i]) return TRANSCRIBE_ERR_OOM;
            m->n_lang = i + 1;
        }
    }

    bool ld;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.translate", true, &m->can_translate))) return st;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.lang_detect", false, &ld))) return st;
    if (ld) TR_WARN("canary: stt.capability.lang_detect is set, but Canary never auto-detects");
    if ((st = opt_strs(f, "stt.translation.target_languages", &m->targets, &m->n_targets, NULL)))
        return st;
    if ((st = opt_strs(f, "stt.translation.pairs", &m->pairs, &m->n_pairs, &m->has_pairs)))
        return st;
    for (int i = 0; i < m->n_targets; i++) {
        if (tr_cn_lang_id(m, m->targets[i]) < 0)
            TR_WARN("canary: translation target '%s' has no language token", m->targets[i]);
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_tokenizer(const gguf_file *f, cn_model *m) {
    transcribe_status st;
    const char *model = NULL;
    if ((st = tr_gguf_req_str(f, "tokenizer.ggml.model", &model))) return st;
    if (strcmp(model, "unigram") != 0) {
        TR_ERROR("canary: tokenizer.ggml.model '%s' (only 'unigram')", model);
        return ERR_GGUF;
    }
    const char *const *pieces = NULL;
    int64_t np = 0;
    if ((st = tr_gguf_req_arr_str(f, "tokenizer.ggml.tokens", 0, INT64_MAX, &pieces, &np)))
        return st;
    if (np != m->hp.n_vocab) {
        TR_ERROR("canary: %" PRId64 " tokenizer pieces but decoder vocab_size %d", np,
                 m->hp.n_vocab);
        return ERR_GGUF;
    }
    if ((st = tr_tokenizer_from_gguf(f, &m->tok))) return st;
    if (tr_tokenizer_n_vocab(m->tok) != m->hp.n_vocab) {
        TR_ERROR("canary: tokenizer holds %d pieces, expected %d", tr_tokenizer_n_vocab(m->tok),
                 m->hp.n_vocab);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- tensors (docs/formats/canary.md §3.3, §3.4) ---- */

/* Sizes the tensor tables refer to. */
enum { CN_D, CN_V, CN_P, CN_E, CN_NDIMS };
#define DD(k) TR_NN_DIM(CN_##k)

/* Decoder block parts (tr_nn_dec_names order: prefix, self-attention norm
 * and attention, cross norm and attention, FFN norm, output projection, FFN
 * up / down, key bias). */
static const tr_nn_dec_names cn_block_names = {"dec.layer.%d.", "norm1", "self_attn", "norm2",
                                               "cross_attn",    "norm3", "o",         "ffn.up",
                                               "ffn.down",      true};

#define CM_OFF(m) offsetof(cn_model, m)
static const tr_nn_wspec cn_top_specs[] = {
    {"dec.embed.pos_enc", TR_NN_W_VEC, {DD(D), DD(P)}, 2, 0, CM_OFF(pos_enc)},
    {"dec.embed.norm", TR_NN_W_NORM, {DD(D)}, 0, 0, CM_OFF(emb_ln)},
    {"dec.norm", TR_NN_W_NORM, {DD(D)}, 0, 0, CM_OFF(dec_ln)},
    {"dec.head", TR_NN_W_LINEAR, {DD(D), DD(V)}, 0, 0, CM_OFF(head)},
};
static const tr_nn_wspec cn_proj_spec = {"enc.proj", TR_NN_W_LINEAR, {DD(E), DD(D)}, 0,
                                         0,          CM_OFF(proj)};
#undef CM_OFF
#undef DD

static transcribe_status read_tensors(const gguf_file *f, cn_model *m) {
    const cn_hparams *hp = &m->hp;
    const int64_t dims[CN_NDIMS] = {
        [CN_D] = hp->d_dec, [CN_V] = hp->n_vocab, [CN_P] = hp->max_position, [CN_E] = hp->d_enc};
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    bool ok = true;
    if (hp->enc_dec_proj && !tr_nn_load_weights(&src, &cn_proj_spec, 1, dims, 0, true, m))
        ok = false;
    /* the token embedding accepts every dequantizable type (the ANY class) */
    const tr_nn_wspec emb = {"dec.embed.token.weight", TR_NN_W_TENSOR,
                             {hp->d_dec, hp->n_vocab}, 2,
                             tr_type_mask_all(),       offsetof(cn_model, tok_emb)};
    if (!tr_nn_load_weights(&src, &emb, 1, dims, 0, true, m)) ok = false;
    if (!tr_nn_load_weights(&src, cn_top_specs, sizeof cn_top_specs / sizeof cn_top_specs[0], dims,
                            0, true, m))
        ok = false;
    if (!ok) return ERR_GGUF;
    return tr_fced_load_dec_blocks(&src, &cn_block_names, hp->d_dec, hp->dec_ff, hp->n_dec_layers,
                                   hp->act, &m->dec);
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, cn_model *m) {
    transcribe_status st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_tokenizer(f, m))) return st;
    if ((st = read_special(f, m))) return st;
    if ((st = read_languages(f, m))) return st;
    if ((st = tr_gguf_opt_str_copy(f, "stt.variant", "canary", &m->variant))) return st;
    if ((st = read_tensors(f, m))) return st;
    if ((st = tr_fc_load(f, &m->enc_hp, &m->enc))) return st;
    const cn_hparams *hp = &m->hp;
    const tr_fced_dec_parts dec = {.tok_emb = m->tok_emb,
                                   .pos_table = m->pos_enc,
                                   .emb_norm = m->emb_ln,
                                   .out_norm = m->dec_ln,
                                   .blocks = m->dec,
                                   .n_layers = hp->n_dec_layers,
                                   .d_model = hp->d_dec,
                                   .n_heads = hp->n_dec_heads,
                                   .d_ffn = hp->dec_ff,
                                   .n_vocab = hp->n_vocab,
                                   .head = m->head};
    m->decoder = tr_fced_decoder(&dec);
    m->fced =
        (tr_fced){m->enc, hp->enc_dec_proj ? &m->proj : NULL, &m->decoder, hp->d_enc, "canary"};
    /* docs/formats/canary.md §9: pos_emb_max_len · subsampling · hop · 1000 / sample_rate */
    m->max_audio_ms = (int64_t)hp->pos_emb_max_len * m->enc_hp.sub_factor * m->mel.hop_length *
                      1000 / m->mel.sample_rate;
    return TRANSCRIBE_OK;
}

void tr_cn_model_free(cn_model *m) {
    if (!m) return;
    tr_fc_free(m->enc);
    free(m->dec);
    tr_strv_free(m->lang, m->n_lang);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->table_code, m->n_table);
    free(m->table_id);
    tr_strv_free(m->targets, m->n_targets);
    tr_strv_free(m->pairs, m->n_pairs);
    free(m->variant);
    free(m);
}

transcribe_status tr_cn_model_load(const tr_load_ctx *lc, cn_model **out) {
    *out = NULL;
    if (!lc->gguf) {
        TR_ERROR("canary: only GGUF files are supported");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    cn_model *m = calloc(1, sizeof *m);
    if (!m) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = load_gguf(lc->gguf, m);
    if (st != TRANSCRIBE_OK) {
        tr_cn_model_free(m);
        return st;
    }
    TR_INFO("canary: loaded %s (enc %d×%d, dec %d×%d, vocab %d, %s%s)", m->variant,
            m->enc_hp.n_layers, m->hp.d_enc, m->hp.n_dec_layers, m->hp.d_dec, m->hp.n_vocab,
            m->hp.prompt_format == CN_PROMPT_CANARY ? "canary" : "canary2",
            m->hp.single_sp ? ", single SentencePiece" : "");
    *out = m;
    return TRANSCRIBE_OK;
}

int tr_cn_lang_id(const cn_model *m, const char *code) {
    for (int i = 0; code && i < m->n_table; i++)
        if (strcmp(m->table_code[i], code) == 0) return m->table_id[i];
    return -1;
}

void tr_cn_model_describe(const cn_model *m, tr_model_desc *desc) {
    /* no language detection (docs/formats/canary.md §8.2) */
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                            TRANSCRIBE_TIMESTAMPS_NONE /* docs/formats/canary.md §10 */);
    c->supports_translate = m->can_translate;
    c->supports_spec_decode = true; /* single runs: verify passes of canary_model.c */
    c->max_audio_ms = m->max_audio_ms;
    if (m->can_translate) {
        c->n_translate_target_languages = m->n_targets;
        c->translate_target_languages = (const char *const *)m->targets;
        desc->n_translate_pairs = m->n_pairs;
        desc->translate_pairs = (const char *const *)m->pairs;
    }
    desc->features[TRANSCRIBE_FEATURE_PNC] = m->sp.pnc >= 0 && m->sp.nopnc >= 0;
    /* Aggregate vocabularies repeat pieces across per-language sub-models, so
     * text cannot be encoded faithfully; only the single SentencePiece can. */
    desc->tokenizer = m->hp.single_sp ? m->tok : NULL;
}
