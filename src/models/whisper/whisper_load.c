/* Whisper GGUF loader: every key of docs/formats/whisper.md §2.2 with its type and
 * validation rule, every tensor of §3 with exact shape and allowed dtypes,
 * special ids, suppression lists, languages and capabilities. Weights stay
 * in the mapped file. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/whisper/whisper.h"
#include "models/whisper/whisper_src.h"
#include "nn/weights.h"
#include "nn/whisper_encoder.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF

/* ---- key helpers (tri-state getters: -1 wrong type, 0 absent, 1 ok) ---- */

/* Sizes of docs/formats/whisper.md §2.2: UINT32 in [1, 2^24]. */
static transcribe_status req_u32_pos(const gguf_file *f, const char *key, int *out) {
    return tr_gguf_req_u32(f, key, 1, 1 << 24, out);
}

static transcribe_status opt_str_eq(const gguf_file *f, const char *key, const char *want) {
    const char *const allowed[] = {want, NULL};
    return tr_gguf_opt_str_in(f, key, allowed);
}

/* Window sizes: absent or unusable (0, > 2^30) → def. */
static transcribe_status opt_u32(const gguf_file *f, const char *key, int def, int *out) {
    return tr_gguf_opt_u32_or(f, key, def, 1, 1 << 30, out);
}

/* Token ids of docs/formats/whisper.md §2.2 are UINT32; absent or past INT32_MAX → def. */
static transcribe_status opt_id(const gguf_file *f, const char *key, int def, int *out) {
    return tr_gguf_opt_u32_or(f, key, def, 0, INT32_MAX, out);
}

static transcribe_status copy_id_list(const gguf_file *f, const char *key, int V, int32_t **out,
                                      int *n_out) {
    const int32_t *a = NULL;
    int64_t n = 0;
    transcribe_status st = tr_gguf_opt_arr_i32(f, key, 0, INT64_MAX, &a, &n);
    if (st) return st;
    *out = NULL;
    *n_out = 0;
    if (n == 0) return TRANSCRIBE_OK;
    if (n > (int64_t)V * 4) n = (int64_t)V * 4;
    int32_t *d = malloc((size_t)n * sizeof *d);
    if (!d) return TRANSCRIBE_ERR_OOM;
    int k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (a[i] >= 0 && a[i] < V) d[k++] = a[i]; /* out-of-range ids ignored */
    }
    *out = d;
    *n_out = k;
    return TRANSCRIBE_OK;
}

/* ---- hyperparameters and front end (docs/formats/whisper.md §2.2) ---- */

static transcribe_status read_hparams(const gguf_file *f, wh_model *m) {
    wh_hparams *hp = &m->hp;
    int enc_d, enc_h, dec_d, dec_h, mels, fe_mels;
    transcribe_status st;
#define REQ(k, v)                                                                                  \
    if ((st = req_u32_pos(f, k, &(v))) != TRANSCRIBE_OK) return st
    REQ("stt.whisper.encoder.n_layers", hp->n_enc_layers);
    REQ("stt.whisper.encoder.d_model", enc_d);
    REQ("stt.whisper.encoder.n_heads", enc_h);
    REQ("stt.whisper.encoder.ffn_dim", hp->enc_ffn);
    REQ("stt.whisper.encoder.num_mel_bins", mels);
    REQ("stt.whisper.encoder.max_source_positions", hp->n_audio_ctx);
    REQ("stt.whisper.decoder.n_layers", hp->n_dec_layers);
    REQ("stt.whisper.decoder.d_model", dec_d);
    REQ("stt.whisper.decoder.n_heads", dec_h);
    REQ("stt.whisper.decoder.ffn_dim", hp->dec_ffn);
    REQ("stt.whisper.decoder.max_target_positions", hp->n_text_ctx);
    REQ("stt.whisper.decoder.vocab_size", hp->n_vocab);
#undef REQ
    if ((st = tr_gguf_req_str_is(f, "stt.whisper.encoder.activation", "gelu", NULL))) return st;
    if ((st = tr_gguf_req_str_is(f, "stt.whisper.decoder.activation", "gelu", NULL))) return st;
    bool tie, scale;
    if ((st = tr_gguf_opt_bool(f, "stt.whisper.decoder.tie_word_embeddings", true, &tie)))
        return st;
    if ((st = tr_gguf_opt_bool(f, "stt.whisper.decoder.scale_embedding", false, &scale))) return st;
    if (!tie || scale) {
        TR_ERROR("whisper: untied output head / scaled embeddings are not supported");
        return ERR_GGUF;
    }
    if (enc_d % enc_h || dec_d % dec_h || enc_d != dec_d || enc_h != dec_h) {
        TR_ERROR("whisper: inconsistent d_model/n_heads (enc %d/%d, dec %d/%d)", enc_d, enc_h,
                 dec_d, dec_h);
        return ERR_GGUF;
    }
    hp->d_model = enc_d;
    hp->n_head = enc_h;
    hp->head_dim = enc_d / enc_h;
    hp->n_mels = mels;

    /* front end */
    if ((st = tr_gguf_req_str_is(f, "stt.frontend.type", "mel", NULL))) return st;
    if ((st = req_u32_pos(f, "stt.frontend.num_mels", &fe_mels))) return st;
    if (fe_mels != mels) {
        TR_ERROR("whisper: stt.frontend.num_mels %d != encoder num_mel_bins %d", fe_mels, mels);
        return ERR_GGUF;
    }
    int sr, n_fft, win, hop;
    if ((st = req_u32_pos(f, "stt.frontend.sample_rate", &sr))) return st;
    if ((st = req_u32_pos(f, "stt.frontend.n_fft", &n_fft))) return st;
    if ((st = req_u32_pos(f, "stt.frontend.win_length", &win))) return st;
    if ((st = req_u32_pos(f, "stt.frontend.hop_length", &hop))) return st;
    if (win != n_fft) {
        TR_ERROR("whisper: stt.frontend.win_length %d != n_fft %d", win, n_fft);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_req_str_is(f, "stt.frontend.window", "hann_periodic", "hann"))) return st;
    if ((st = tr_gguf_req_str_is(f, "stt.frontend.normalize", "whisper_logmel", NULL))) return st;
    float dither, pre, fmin, fmax;
    if ((st = tr_gguf_opt_f32(f, "stt.frontend.dither", 0.0f, &dither))) return st;
    if ((st = tr_gguf_opt_f32(f, "stt.frontend.pre_emphasis", 0.0f, &pre))) return st;
    if ((st = tr_gguf_opt_f32(f, "stt.frontend.f_min", 0.0f, &fmin))) return st;
    if ((st = tr_gguf_opt_f32(f, "stt.frontend.f_max", 8000.0f, &fmax))) return st;
    if (dither != 0.0f) {
        TR_ERROR("whisper: stt.frontend.dither must be 0");
        return ERR_GGUF;
    }
    if ((st = opt_str_eq(f, "stt.frontend.pad_mode", "reflect"))) return st;
    if ((st = opt_str_eq(f, "stt.frontend.mel_norm", "slaney"))) return st;
    bool center;
    if ((st = tr_gguf_opt_bool(f, "stt.frontend.center", true, &center))) return st;
    if (!center) {
        TR_ERROR("whisper: stt.frontend.center must be true");
        return ERR_GGUF;
    }
    int chunk;
    if ((st = opt_u32(f, "stt.frontend.chunk_length", 30, &chunk))) return st;
    if ((st = opt_u32(f, "stt.frontend.n_samples", 480000, &hp->n_samples_window))) return st;
    if ((st = opt_u32(f, "stt.frontend.nb_max_frames", 3000, &hp->n_frames_window))) return st;
    if (hp->n_frames_window % 2 || hp->n_frames_window > 2 * hp->n_audio_ctx) {
        TR_ERROR("whisper: nb_max_frames %d must be even and <= 2*max_source_positions",
                 hp->n_frames_window);
        return ERR_GGUF;
    }
    if (n_fft / 2 + 1 > 100000) return ERR_GGUF;
    /* the front end frames 30 s windows; the encoder must see the same count */
    if ((int64_t)hp->n_frames_window * hop != (int64_t)30 * sr) {
        TR_ERROR("whisper: nb_max_frames %d does not match 30 s at hop %d / %d Hz",
                 hp->n_frames_window, hop, sr);
        return ERR_GGUF;
    }
    tr_mel_config_whisper(&m->mel, mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f)) != TRANSCRIBE_OK) return st;
    return TRANSCRIBE_OK;
}

/* ---- generation contract, tokenizer, languages ---- */

static transcribe_status read_tokens(const gguf_file *f, wh_model *m) {
    transcribe_status st;
    const int V = m->hp.n_vocab;
    int dstart = -1, nots = -1;
    if ((st = tr_gguf_req_u32(f, "stt.whisper.decoder_start_token_id", 0, INT32_MAX, &dstart)) ||
        (st = tr_gguf_req_u32(f, "stt.whisper.no_timestamps_token_id", 0, INT32_MAX, &nots)))
        return st;
    if (dstart >= V || nots < 1 || nots + 1 >= V) {
        TR_ERROR("whisper: special ids out of range (sot %d, notimestamps %d, vocab %d)", dstart,
                 nots, V);
        return ERR_GGUF;
    }
    m->sot = dstart;
    m->no_ts = nots;
    m->ts_begin = nots + 1;
    m->no_speech = nots - 1;
    int sot2;
    if ((st = opt_id(f, "stt.whisper.sot_token_id", dstart, &sot2))) return st;
    if ((st = opt_id(f, "stt.whisper.transcribe_token_id", -1, &m->transcribe))) return st;
    if ((st = opt_id(f, "stt.whisper.translate_token_id", -1, &m->translate))) return st;
    if ((st = opt_id(f, "stt.whisper.prev_sot_token_id", -1, &m->prev_sot))) return st;
    if (m->transcribe >= V) m->transcribe = -1;
    if (m->translate >= V) m->translate = -1;
    if (m->prev_sot >= V) m->prev_sot = -1;
    if ((st = copy_id_list(f, "stt.whisper.suppress_tokens", V, &m->suppress, &m->n_suppress)))
        return st;
    if ((st = copy_id_list(f, "stt.whisper.begin_suppress_tokens", V, &m->begin_suppress,
                           &m->n_begin_suppress)))
        return st;

    /* tokenizer: gpt2 required */
    if ((st = tr_gguf_req_str_is(f, "tokenizer.ggml.model", "gpt2", NULL))) return st;
    if ((st = tr_tokenizer_from_gguf(f, &m->tok)) != TRANSCRIBE_OK) return st;
    if (!tr_tokenizer_can_encode(m->tok)) {
        /* No merges in the file: rebuild over the same pieces with
         * tiktoken-style ranks (rank = id of the merged piece), which is how
         * the OpenAI vocabulary was built, so prompts can still be encoded. */
        const char *const *pieces = NULL;
        const int32_t *types = NULL;
        int64_t np = 0, nt = 0;
        if (tr_gguf_opt_arr_str(f, "tokenizer.ggml.tokens", 1, INT32_MAX - 1, &pieces, &np) ==
                TRANSCRIBE_OK &&
            np > 0) {
            if (tr_gguf_opt_arr_i32(f, "tokenizer.ggml.token_type", 0, INT64_MAX, &types, &nt) !=
                    TRANSCRIBE_OK ||
                nt != np)
                types = NULL;
            tr_tokenizer *t2 = NULL;
            if (tr_tokenizer_create(TR_TOK_GPT2, TR_PRE_GPT2, pieces, (int)np, NULL, types, NULL, 0,
                                    &t2) == TRANSCRIBE_OK) {
                tr_tokenizer_set_specials(t2, tr_tokenizer_bos(m->tok), tr_tokenizer_eos(m->tok),
                                          -1, -1);
                tr_tokenizer_free(m->tok);
                m->tok = t2;
            }
        }
    }
    tr_tokenizer_set_pretok(m->tok, TR_PRE_GPT2); /* docs/formats/whisper.md §2.2: always gpt2 */
    m->n_tok_pieces = tr_tokenizer_n_vocab(m->tok);
    if ((st = tr_gguf_opt_token_id_or(f, "tokenizer.ggml.eos_token_id", V, 50257, &m->eot)))
        return st;
    if (m->eot >= V) {
        TR_ERROR("whisper: end-of-text id %d outside the vocabulary", m->eot);
        return ERR_GGUF;
    }
    if (m->prev_sot < 0) m->prev_sot = tr_tokenizer_find(m->tok, "<|startofprev|>");

    /* capabilities and languages */
    bool ld, tl, ts;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.lang_detect", true, &ld))) return st;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.translate", true, &tl))) return st;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.timestamps", true, &ts))) return st;
    m->multilingual = ld;
    m->can_translate = tl;
    const char *const *langs = NULL;
    int64_t nl = 0;
    if ((st = tr_gguf_opt_arr_str(f, "general.languages", 0, INT64_MAX, &langs, &nl))) return st;
    if (nl > 4096) nl = 4096;
    m->n_lang = (int)nl;
    if (nl > 0) {
        m->lang = calloc((size_t)nl, sizeof *m->lang);
        m->lang_tok = calloc((size_t)nl, sizeof *m->lang_tok);
        if (!m->lang || !m->lang_tok) return TRANSCRIBE_ERR_OOM;
    }
    for (int i = 0; i < m->n_lang; i++) {
        m->lang[i] = strdup(langs[i] ? langs[i] : "");
        if (!m->lang[i]) return TRANSCRIBE_ERR_OOM;
        m->lang_tok[i] = -1;
        if (!m->multilingual) continue;
        char piece[96];
        snprintf(piece, sizeof piece, "<|%s|>", m->lang[i]);
        int id = tr_tokenizer_find(m->tok, piece);
        if (id < 0 || id >= V) {
            TR_ERROR("whisper: language '%s' has no vocabulary token %s", m->lang[i], piece);
            return ERR_GGUF;
        }
        m->lang_tok[i] = id;
    }
    return TRANSCRIBE_OK;
}

/* ---- tensors (docs/formats/whisper.md §3) ---- */

/* Sizes the tensor tables refer to. */
enum { WH_D, WH_M, WH_S, WH_T, WH_V, WH_Q, WH_NFFT, WH_NDIMS };
#define DD(k) TR_NN_DIM(WH_##k)

static const tr_nn_dec_names wh_dec_names = {
    .prefix = "dec.blocks.%d.",
    .ln_self = "norm_self",
    .self_attn = "self_attn",
    .ln_cross = "norm_cross",
    .cross_attn = "cross_attn",
    TR_WHISPER_BLOCK_NAMES,
};

/* Model-level tensors; the baked front end is checked, not kept (the mel
 * config reads it), so it lands in a scratch struct. */
#define WM(m) offsetof(wh_model, m)
static const tr_nn_wspec wh_dec_top[] = {
    {"dec.token_embd.weight", TR_NN_W_TENSOR, {DD(D), DD(V)}, 2, TR_TYPES_LINEAR, WM(tok_emb)},
    {"dec.pos_emb.weight", TR_NN_W_VEC, {DD(D), DD(T)}, 2, 0, WM(dec_pos)},
    {"dec.final_norm", TR_NN_W_NORM, {DD(D)}, 0, 0, WM(dec_ln)},
};
#undef WM
static const tr_nn_wspec wh_frontend[] = {
    {"frontend.mel_filterbank", TR_NN_W_VEC, {DD(Q), DD(M)}, 2, 0, 0},
    {"frontend.window", TR_NN_W_VEC, {DD(NFFT)}, 1, 0, sizeof(const float *)},
};
#undef DD

static const tr_tensor *src_find(void *ctx, const char *name, uint32_t types, int n_dims,
                                 const int64_t *ne) {
    return tr_wh_src_tensor(ctx, name, types, n_dims, ne);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static transcribe_status read_tensors(wh_src *ws, wh_model *m) {
    const wh_hparams *hp = &m->hp;
    const int64_t dims[WH_NDIMS] = {
        [WH_D] = hp->d_model,    [WH_M] = hp->n_mels,  [WH_S] = hp->n_audio_ctx,
        [WH_T] = hp->n_text_ctx, [WH_V] = hp->n_vocab, [WH_Q] = m->mel.n_fft / 2 + 1,
        [WH_NFFT] = m->mel.n_fft};
    const tr_nn_wsrc src = {src_find, ws};
    const float *baked[2];
    bool ok = tr_nn_load_weights(&src, wh_frontend, N_OF(wh_frontend), dims, 0, true, baked);
    m->enc = (tr_whenc){.n_layers = hp->n_enc_layers,
                        .d_model = hp->d_model,
                        .n_head = hp->n_head,
                        .d_ffn = hp->enc_ffn,
                        .n_mels = hp->n_mels,
                        .n_pos = hp->n_audio_ctx};
    if (!tr_whenc_load(&src, &m->enc)) ok = false;
    if (!m->enc.blocks) return TRANSCRIBE_ERR_OOM;
    m->dec = calloc((size_t)hp->n_dec_layers, sizeof *m->dec);
    if (!m->dec) return TRANSCRIBE_ERR_OOM;
    if (!tr_nn_load_weights(&src, wh_dec_top, N_OF(wh_dec_top), dims, 0, true, m)) ok = false;
    if (ok && !tr_nn_load_dec_blocks(&src, &wh_dec_names, hp->d_model, hp->dec_ffn,
                                     hp->n_dec_layers, m->dec))
        ok = false;
    if (!ok) return ERR_GGUF;
    m->weights_f32 = m->dec[0].self.q.w->type == 0;
    return TRANSCRIBE_OK;
}

static void set_dims(wh_model *m) {
    const wh_hparams *hp = &m->hp;
    m->decoder = (tr_ed_decoder){
        .tok_emb = m->tok_emb,
        .pos = TR_ED_POS_TABLE,
        .pos_table = m->dec_pos,
        .blocks = m->dec,
        .n_layers = hp->n_dec_layers,
        .dims = {.d_model = hp->d_model,
                 .n_head = hp->n_head,
                 .head_dim = hp->head_dim,
                 .d_ffn = hp->dec_ffn,
                 .ln_eps = 1e-5f},
        .out_norm = m->dec_ln,
        .norm_eps = 1e-5f,
        .head = {m->tok_emb, NULL},
        .n_vocab = hp->n_vocab,
    };
}

static transcribe_status load_gguf(const gguf_file *f, wh_model *m) {
    transcribe_status st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = read_tokens(f, m))) return st;
    if ((st = tr_gguf_opt_str_copy(f, "stt.variant", "", &m->variant))) return st;
    wh_src src = {.gguf = f};
    if ((st = read_tensors(&src, m))) return st;
    set_dims(m);
    return TRANSCRIBE_OK;
}

transcribe_status tr_wh_model_load(const tr_load_ctx *lc, wh_model **out) {
    *out = NULL;
    wh_model *m = calloc(1, sizeof *m);
    if (!m) return TRANSCRIBE_ERR_OOM;
    transcribe_status st;
    if (lc->gguf) {
        st = load_gguf(lc->gguf, m);
    } else if (lc->bin_data) {
        st = tr_wh_load_bin(lc->bin_data, lc->bin_size, m);
        if (st == TRANSCRIBE_OK) {
            wh_src src = {.bin = m->bin};
            st = read_tensors(&src, m);
            set_dims(m);
        }
    } else {
        st = TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (st != TRANSCRIBE_OK) {
        tr_wh_model_free(m);
        return st;
    }
    TR_INFO("whisper: loaded %s (D=%d, %d+%d layers, vocab %d, %s)",
            m->variant[0] ? m->variant : "model", m->hp.d_model, m->hp.n_enc_layers,
            m->hp.n_dec_layers, m->hp.n_vocab, m->multilingual ? "multilingual" : "English-only");
    *out = m;
    return TRANSCRIBE_OK;
}

void tr_wh_model_free(wh_model *m) {
    if (!m) return;
    tr_whenc_free(&m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    tr_wh_bin_free(m->bin);
    TR_FREE_ALL(m->dec, m->owned_fb, m->owned_window, m->suppress, m->begin_suppress, m->lang_tok,
                m->variant, m);
}

static const char *const k_en_target[] = {"en"};

void tr_wh_model_describe(const wh_model *m, tr_model_desc *desc) {
    /* no streaming; speculative decoding on greedy (T = 0) tiers of single
     * runs (whisper_run.c); max_audio_ms 0 (long-form); word and token times
     * are our estimate (docs/formats/whisper.md §13), so TOKEN */
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate > 0 ? m->mel.sample_rate : 16000, m->n_lang,
                            m->lang, m->variant ? m->variant : "", TRANSCRIBE_TIMESTAMPS_TOKEN);
    c->supports_language_detect = m->multilingual;
    c->supports_translate = m->can_translate;
    c->supports_spec_decode = true;
    if (m->can_translate && m->multilingual) {
        c->n_translate_target_languages = 1;
        c->translate_target_languages = k_en_target;
    }
    desc->features[TRANSCRIBE_FEATURE_INITIAL_PROMPT] = true;
    desc->features[TRANSCRIBE_FEATURE_TEMPERATURE_FALLBACK] = true;
    desc->features[TRANSCRIBE_FEATURE_LONG_FORM] = true;
    /* vocabulary hints become the prompt text (whisper_run.c) */
    desc->features[TRANSCRIBE_FEATURE_VOCABULARY] =
        m->prev_sot >= 0 && tr_tokenizer_can_encode(m->tok);
    desc->tokenizer = m->tok;
}
