/* Cohere GGUF loader: every key of docs/formats/cohere.md §2 with its exact
 * type and the docs/formats/cohere.md §2.3 cross-field checks, the tokenizer (EOS required), the
 * decoder / projection / head tensors of docs/formats/cohere.md §3 by exact shape and type class,
 * the FastConformer encoder through src/nn/fastconformer.h (biased
 * flavor: the same key set as Canary's encoder), and the capabilities. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/cohere/cohere.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define EK       "stt.cohere.encoder."
#define DK       "stt.cohere.decoder."
#define FK       "stt.frontend."

/* ---- hyper-parameters (docs/formats/cohere.md §2.2) ---- */

static transcribe_status read_hparams(const gguf_file *f, ch_model *m) {
    ch_hparams *hp = &m->hp;
    transcribe_status st;
    const char *arch = NULL;
    if ((st = tr_gguf_req_str(f, "general.architecture", &arch))) return st;
    if (strcmp(arch, "cohere_asr") != 0) {
        TR_ERROR("cohere: general.architecture is '%s'", arch);
        return ERR_GGUF;
    }
    /* n_layers, d_model (% n_heads), n_heads, d_ff, conv_kernel (odd),
     * subsampling_factor / _channels, pos_emb_max_len (type), use_bias
     * (type-checked, ignored: every bias is required), stt.frontend.num_mels */
    if ((st = tr_fc_read_hparams(f, EK, TR_FC_KEYS_CANARY, &m->enc_hp))) return st;
    if ((st = tr_gguf_req_u32(f, EK "pos_emb_max_len", 0, 1 << 24, &hp->pos_emb_max_len)))
        return st;
    if (m->enc_hp.sub_factor != 8) {
        TR_ERROR("cohere: " EK "subsampling_factor %d (the encoder is built for 8 only)",
                 m->enc_hp.sub_factor);
        return ERR_GGUF;
    }
    hp->d_enc = m->enc_hp.d_model;

    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &hp->n_dec_layers},      {"hidden_size", 1, 1 << 16, &hp->d_dec},
        {"n_heads", 1, 1024, &hp->n_dec_heads},        {"inner_size", 1, 1 << 20, &hp->dec_ff},
        {"max_seq_len", 1, 1 << 20, &hp->max_seq_len},
    };
    if ((st = tr_gguf_req_u32_keys(f, DK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if (hp->d_dec % hp->n_dec_heads) {
        TR_ERROR("cohere: " DK "hidden_size %d is not divisible by n_heads %d", hp->d_dec,
                 hp->n_dec_heads);
        return ERR_GGUF;
    }
    if ((st = tr_fced_read_act(f, "cohere", DK "activation", &hp->act))) return st;
    /* read for their types only (docs/formats/cohere.md §2.2): the prompt is built from piece
     * strings, argmax ignores log_softmax, the head is always tied */
    int start;
    bool b;
    if ((st = tr_gguf_req_u32(f, "stt.cohere.decoder_start_token_id", 0, INT32_MAX, &start)) ||
        (st = tr_gguf_opt_bool(f, "stt.cohere.head.log_softmax", true, &b)) ||
        (st = tr_gguf_opt_bool(f, "stt.cohere.head.tied_weights", true, &b)))
        return st;
    /* none is written (docs/formats/cohere.md §2); a present one is type-checked, and one claiming
     * what this decoder cannot do only warns: the capabilities stay truthful */
    static const char *const caps[] = {"translate", "lang_detect", "streaming"};
    for (int i = 0; i < 3; i++) {
        char key[64];
        snprintf(key, sizeof key, "stt.capability.%s", caps[i]);
        if ((st = tr_gguf_opt_bool(f, key, false, &b))) return st;
        if (b) TR_WARN("cohere: %s = true is ignored (the prompt cannot ask for it)", key);
    }
    return TRANSCRIBE_OK;
}

/* ---- front end (docs/formats/cohere.md §2.3, docs/formats/cohere.md §4) ---- */

static transcribe_status read_frontend(const gguf_file *f, ch_model *m) {
    transcribe_status st;
    const char *type = NULL, *window = NULL, *norm = NULL;
    int mels, sr, n_fft, win, hop;
    float v, f_min, f_max;
    if ((st = tr_gguf_req_str(f, FK "type", &type))) return st;
    const tr_gguf_u32_key sizes[] = {
        {"num_mels", 1, 4096, &mels},     {"sample_rate", 1, 1 << 24, &sr},
        {"n_fft", 1, 1 << 16, &n_fft},    {"win_length", 1, 1 << 16, &win},
        {"hop_length", 1, 1 << 16, &hop},
    };
    if ((st = tr_gguf_req_u32_keys(f, FK, sizes, sizeof sizes / sizeof *sizes)) ||
        (st = tr_gguf_req_str(f, FK "window", &window)) ||
        (st = tr_gguf_req_str(f, FK "normalize", &norm)) ||
        (st = tr_gguf_req_f32(f, FK "dither", &v)) || /* never applied */
        (st = tr_gguf_req_f32(f, FK "pre_emphasis", &v)) ||
        (st = tr_gguf_req_f32(f, FK "f_min", &f_min)) ||
        (st = tr_gguf_req_f32(f, FK "f_max", &f_max)))
        return st;
    /* the docs/formats/cohere.md §2.3 order: win <= n_fft, mel band, type, window, normalize,
     * power-of-two n_fft, pad_mode */
    if (win > n_fft) {
        TR_ERROR("cohere: " FK "win_length %d exceeds n_fft %d", win, n_fft);
        return ERR_GGUF;
    }
    if (!(f_min >= 0.0f && f_min < f_max)) {
        TR_ERROR("cohere: " FK "f_min / f_max = %g / %g (need 0 <= f_min < f_max)", f_min, f_max);
        return ERR_GGUF;
    }
    if (strcmp(type, "mel") != 0 || strcmp(window, "hann") != 0 ||
        strcmp(norm, "per_feature") != 0) {
        TR_ERROR("cohere: front end type / window / normalize = '%s' / '%s' / '%s' (need mel / "
                 "hann / per_feature)",
                 type, window, norm);
        return ERR_GGUF;
    }
    if (n_fft & (n_fft - 1)) {
        TR_ERROR("cohere: " FK "n_fft %d is not a power of two", n_fft);
        return ERR_GGUF;
    }
    static const char *const pads[] = {"reflect", "constant", NULL};
    if ((st = tr_gguf_opt_str_in(f, FK "pad_mode", pads))) return st;
    if (mels != 128 || mels != m->enc_hp.n_mels) {
        TR_ERROR("cohere: " FK "num_mels %d (the encoder is built for 128 only)", mels);
        return ERR_GGUF;
    }
    tr_mel_config_nemo(&m->mel, mels);
    m->mel.pad_mode = TR_PAD_REFLECT; /* the default when pad_mode is absent */
    /* keys over the defaults, then the baked filterbank and window: a
     * present one of the wrong type or size fails the load */
    return tr_mel_config_from_gguf(&m->mel, f);
}

/* ---- tokenizer, languages (docs/formats/cohere.md §2.1) ---- */

static transcribe_status read_tokenizer(const gguf_file *f, ch_model *m) {
    transcribe_status st;
    const char *model = NULL;
    if ((st = tr_gguf_req_str(f, "tokenizer.ggml.model", &model))) return st;
    if (strcmp(model, "bpe") != 0 && strcmp(model, "unigram") != 0) {
        TR_ERROR("cohere: tokenizer.ggml.model '%s' (a SentencePiece vocabulary: 'bpe')", model);
        return ERR_GGUF;
    }
    if ((st = tr_tokenizer_from_gguf(f, &m->tok))) return st;
    const int V = m->hp.n_vocab;
    if (tr_tokenizer_n_vocab(m->tok) != V) {
        TR_ERROR("cohere: %d tokenizer pieces but the token embedding has %d rows",
                 tr_tokenizer_n_vocab(m->tok), V);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.eos_token_id", V, &m->hp.eos))) return st;
    if (m->hp.eos < 0) {
        TR_ERROR("cohere: tokenizer.ggml.eos_token_id is required (the stop token)");
        return ERR_GGUF;
    }
    int unused;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.unknown_token_id", V, &unused)) ||
        (st = tr_gguf_opt_token_id(f, "tokenizer.ggml.bos_token_id", V, &unused)) ||
        (st = tr_gguf_opt_token_id(f, "tokenizer.ggml.padding_token_id", V, &unused)))
        return st;
    const char *const *langs = NULL;
    int64_t n = 0;
    if ((st = tr_gguf_opt_arr_str(f, "general.languages", 0, 4096, &langs, &n))) return st;
    if (n > 0) {
        m->lang = calloc((size_t)n, sizeof *m->lang);
        if (!m->lang) return TRANSCRIBE_ERR_OOM;
        for (int64_t i = 0; i < n; i++) {
            m->lang[i] = strdup(langs[i] ? langs[i] : "");
            if (!m->lang[i]) return TRANSCRIBE_ERR_OOM;
            m->n_lang = (int)i + 1;
        }
    }
    return TRANSCRIBE_OK;
}

/* ---- tensors (docs/formats/cohere.md §3) ---- */

enum { CH_D, CH_V, CH_S, CH_E, CH_NDIMS };
#define DD(k) TR_NN_DIM(CH_##k)

/* Decoder block parts: prefix, self norm / attention, cross norm /
 * attention, FFN norm, output projection, FFN in / out, key bias. */
static const tr_nn_dec_names ch_block_names = {
    "dec.blocks.%d.", "norm_self", "self_attn",   "norm_cross",   "cross_attn",
    "norm_ff",        "out",       "ff.dense_in", "ff.dense_out", true};

#define CM_OFF(f) offsetof(ch_model, f)
static const tr_nn_wspec ch_top_specs[] = {
    {"enc_dec_proj", TR_NN_W_LINEAR, {DD(E), DD(D)}, 0, 0, CM_OFF(proj)},
    {"dec.embed.pos_enc", TR_NN_W_VEC, {DD(D), DD(S)}, 2, 0, CM_OFF(pos_enc)},
    {"dec.embed.norm", TR_NN_W_NORM, {DD(D)}, 0, 0, CM_OFF(emb_ln)},
    {"dec.final_norm", TR_NN_W_NORM, {DD(D)}, 0, 0, CM_OFF(dec_ln)},
    {"head.bias", TR_NN_W_VEC, {DD(V)}, 1, 0, CM_OFF(head_bias)},
};
#undef CM_OFF
#undef DD

/* The token embedding first: its ne[1] is the vocabulary size (docs/formats/cohere.md §3). */
static transcribe_status read_embedding(const gguf_file *f, ch_model *m) {
    const tr_tensor *t = tr_gguf_find_tensor(f, "dec.embed.token.weight");
    if (!t) {
        TR_ERROR("cohere: tensor 'dec.embed.token.weight' is missing");
        return ERR_GGUF;
    }
    const int64_t ne[2] = {m->hp.d_dec, t->ne[1]};
    if (t->ne[1] < 1 || t->ne[1] > (1 << 24) ||
        !tr_gguf_tensor_check(t, tr_type_mask_all(), 2, ne)) {
        TR_ERROR("cohere: tensor 'dec.embed.token.weight' must be [%d, V] of a readable type",
                 m->hp.d_dec);
        return ERR_GGUF;
    }
    m->tok_emb = t;
    m->hp.n_vocab = (int)t->ne[1];
    return TRANSCRIBE_OK;
}

static transcribe_status read_tensors(const gguf_file *f, ch_model *m) {
    const ch_hparams *hp = &m->hp;
    const int64_t dims[CH_NDIMS] = {
        [CH_D] = hp->d_dec, [CH_V] = hp->n_vocab, [CH_S] = hp->max_seq_len, [CH_E] = hp->d_enc};
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    bool ok = tr_nn_load_weights(&src, ch_top_specs, sizeof ch_top_specs / sizeof *ch_top_specs,
                                 dims, 0, true, m);
    if (!ok) return ERR_GGUF;
    return tr_fced_load_dec_blocks(&src, &ch_block_names, hp->d_dec, hp->dec_ff, hp->n_dec_layers,
                                   hp->act, &m->dec);
}

/* ---- model ---- */

static transcribe_status fill(const gguf_file *f, void *model) {
    ch_model *m = model;
    transcribe_status st;
    if ((st = read_hparams(f, m)) || (st = read_frontend(f, m)) || (st = read_embedding(f, m)) ||
        (st = read_tokenizer(f, m)) ||
        (st = tr_gguf_opt_str_copy(f, "stt.variant", "cohere-asr", &m->variant)) ||
        (st = read_tensors(f, m)) || (st = tr_fc_load(f, &m->enc_hp, &m->enc)))
        return st;
    const ch_hparams *hp = &m->hp;
    const tr_fced_dec_parts dec = {
        .tok_emb = m->tok_emb,
        .pos_table = m->pos_enc,
        .emb_norm = m->emb_ln,
        .out_norm = m->dec_ln,
        .blocks = m->dec,
        .n_layers = hp->n_dec_layers,
        .d_model = hp->d_dec,
        .n_heads = hp->n_dec_heads,
        .d_ffn = hp->dec_ff,
        .n_vocab = hp->n_vocab,
        .head = {m->tok_emb,
                 m->head_bias}}; /* tied, plus head.bias (docs/formats/cohere.md §6.2) */
    m->decoder = tr_fced_decoder(&dec);
    m->fced = (tr_fced){m->enc, &m->proj, &m->decoder, hp->d_enc, "cohere"};
    /* docs/formats/cohere.md §8: pos_emb_max_len · 8 · hop · 1000 / sr (400 000 ms for 5000) */
    m->max_audio_ms = (int64_t)hp->pos_emb_max_len * m->enc_hp.sub_factor * m->mel.hop_length *
                      1000 / m->mel.sample_rate;
    TR_INFO("cohere: loaded %s (enc %d×%d, dec %d×%d, vocab %d)", m->variant, m->enc_hp.n_layers,
            hp->d_enc, hp->n_dec_layers, hp->d_dec, hp->n_vocab);
    return TRANSCRIBE_OK;
}

void tr_ch_model_free(ch_model *m) {
    if (!m) return;
    tr_fc_free(m->enc);
    free(m->dec);
    tr_strv_free(m->lang, m->n_lang);
    tr_tokenizer_free(m->tok);
    free(m->variant);
    free(m);
}

TR_FAMILY_GGUF_LOAD(ch, "cohere", fill)

void tr_ch_model_describe(const ch_model *m, tr_model_desc *desc) {
    /* transcription only, no detection, no timestamps (docs/formats/cohere.md §7,
     * docs/formats/cohere.md §8) */
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->max_audio_ms = m->max_audio_ms;
    c->supports_spec_decode = true; /* single runs: tr_fced_verify passes (cohere_run.c) */
    /* a fixed output budget (512 tokens) and no long-form mode of its own:
     * the library splits long audio at pauses and batches the pieces */
    desc->bounded_output = true;
    desc->tokenizer = m->tok;
}
