/* Parakeet GGUF loader: identity and capability keys (docs/formats/parakeet.md §3.1), tokenizer
 * (§3.2, §5), encoder via src/nn/fastconformer.h (§3.3, §4.1–4.2), head
 * (pk_head.c), front end (§3.5, §6), languages and capabilities. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/parakeet/parakeet.h"
#include "models/parakeet/pk_keys.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* docs/formats/parakeet.md §9.1 fallback for files predating CONTROL-tagged language tags:
 * "<" + 2–3 lowercase letters + "-" + 2–4 ASCII letters + ">". */
static bool is_lang_tag(const char *p) {
    if (!p || *p++ != '<') return false;
    int n = 0;
    while (*p >= 'a' && *p <= 'z') p++, n++;
    if (n < 2 || n > 3 || *p++ != '-') return false;
    n = 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) p++, n++;
    return n >= 2 && n <= 4 && p[0] == '>' && p[1] == '\0';
}

static transcribe_status load_tokenizer(const gguf_file *g, pk_model *m) {
    transcribe_status st = tr_tokenizer_from_gguf(g, &m->tok);
    if (st != TRANSCRIBE_OK) return st;
    tr_tok_kind k = tr_tokenizer_kind(m->tok);
    if (k != TR_TOK_SPM_BPE && k != TR_TOK_SPM_UNIGRAM) {
        TR_ERROR("parakeet: tokenizer.ggml.model must be a SentencePiece vocabulary (\"bpe\")");
        return ERR_GGUF;
    }
    int n = m->n_tok_pieces = tr_tokenizer_n_vocab(m->tok);
    if (n != m->head.n_vocab)
        TR_WARN("parakeet: %d vocabulary pieces but the head has %d classes", n, m->head.n_vocab);
    m->drop = calloc((size_t)n, sizeof(bool));
    m->word_start = calloc((size_t)n, sizeof(bool));
    if (!m->drop || !m->word_start) return TRANSCRIBE_ERR_OOM;
    for (int i = 0; i < n; i++) {
        const char *p = tr_tokenizer_piece(m->tok, i);
        m->drop[i] = tr_tokenizer_is_control(m->tok, i) || is_lang_tag(p);
        m->word_start[i] = p && !strncmp(p, "\xE2\x96\x81", 3);
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_languages(const gguf_file *g, pk_model *m) {
    const char *const *langs = NULL;
    int64_t n = 0;
    transcribe_status st = tr_gguf_opt_arr_str(g, "general.languages", 0, 4096, &langs, &n);
    if (st || n == 0) return st;
    m->lang = calloc((size_t)n, sizeof(char *));
    if (!m->lang) return TRANSCRIBE_ERR_OOM;
    for (int64_t i = 0; i < n; i++) {
        if (!(m->lang[i] = dup_str(langs[i] ? langs[i] : ""))) return TRANSCRIBE_ERR_OOM;
        m->n_lang++;
    }
    return TRANSCRIBE_OK;
}

/* docs/formats/parakeet.md §3.5: every stt.frontend.* key is required; values are validated here
 * after tr_mel_config_from_gguf has checked their types. */
static transcribe_status load_frontend(const gguf_file *g, pk_model *m) {
    static const char *const req[] = {
        "type",   "num_mels",  "sample_rate", "n_fft",        "win_length", "hop_length",
        "window", "normalize", "dither",      "pre_emphasis", "f_min",      "f_max",
    };
    char key[64];
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        snprintf(key, sizeof key, "stt.frontend.%s", req[i]);
        if (!tr_gguf_has(g, key)) return tr_gguf_key_error(key, "any type", "required but missing");
    }
    const char *s = NULL;
    if (tr_gguf_req_str(g, "stt.frontend.type", &s)) return ERR_GGUF;
    if (strcmp(s, "mel") != 0) {
        TR_ERROR("parakeet: stt.frontend.type '%s' is not 'mel'", s);
        return ERR_GGUF;
    }
    if (tr_gguf_req_str(g, "stt.frontend.window", &s)) return ERR_GGUF;
    if (strcmp(s, "hann") != 0) {
        TR_ERROR("parakeet: stt.frontend.window '%s' is not 'hann'", s);
        return ERR_GGUF;
    }
    if (tr_gguf_req_str(g, "stt.frontend.normalize", &s)) return ERR_GGUF;
    if (strcmp(s, "per_feature") != 0 && strcmp(s, "none") != 0) {
        TR_ERROR("parakeet: stt.frontend.normalize '%s' is not per_feature or none", s);
        return ERR_GGUF;
    }
    tr_mel_config *c = &m->mel;
    tr_mel_config_nemo(c, m->hp.n_mels);
    transcribe_status st = tr_mel_config_from_gguf(c, g);
    if (st != TRANSCRIBE_OK) return st;
    c->pad_mode = TR_PAD_CONSTANT; /* docs/formats/parakeet.md §6: forced whatever the file says */
    c->window = TR_WIN_HANN_SYMMETRIC;
    float dither = 0.0f;
    if ((st = tr_gguf_opt_f32(g, "stt.frontend.dither", 0.0f, &dither))) return st;
    bool ok = c->n_mels > 0 && c->n_mels == m->hp.n_mels && c->sample_rate > 0 && c->n_fft > 0 &&
              (c->n_fft & (c->n_fft - 1)) == 0 && c->n_fft <= (1 << 16) && c->win_length > 0 &&
              c->win_length <= c->n_fft && c->hop_length > 0 && dither >= 0.0f &&
              c->f_min >= 0.0f && c->f_max > c->f_min && isfinite(c->pre_emphasis);
    if (!ok) {
        TR_ERROR("parakeet: invalid stt.frontend values (mels %d, rate %d, n_fft %d, win %d, "
                 "hop %d, f %.1f..%.1f)",
                 c->n_mels, c->sample_rate, c->n_fft, c->win_length, c->hop_length,
                 (double)c->f_min, (double)c->f_max);
        return ERR_GGUF;
    }
    /* an encoder frame spans subsampling_factor hops (10 ms each at 16 kHz
     * with hop 160: 20 ms at factor 2, 80 ms at 8) */
    m->frame_ms = 1000.0 * m->hp.sub_factor * c->hop_length / c->sample_rate;
    return TRANSCRIBE_OK;
}

static int arr_len(const gguf_file *g, const char *key, transcribe_status *st) {
    const int32_t *v = NULL;
    int64_t n = 0;
    if (tr_gguf_opt_arr_i32(g, key, 0, INT64_MAX, &v, &n)) *st = ERR_GGUF;
    return (int)(n > 1000000 ? 1000000 : n);
}

/* docs/formats/parakeet.md §3.1 / §7.8: the KV can switch streaming on; so can the geometry. */
static transcribe_status load_caps(const gguf_file *g, pk_model *m) {
    bool translate = false, streaming = false;
    transcribe_status st = TRANSCRIBE_OK;
    if ((st = tr_gguf_opt_bool(g, "stt.capability.lang_detect", false, &m->lang_detect)) ||
        (st = tr_gguf_opt_bool(g, "stt.capability.streaming", false, &streaming)) ||
        (st = tr_gguf_opt_bool(g, "stt.capability.translate", false, &translate)) ||
        (st = tr_gguf_opt_strv_copy(g, "stt.translation.target_languages", 4096, NULL, 0,
                                    &m->targets, &m->n_targets)) ||
        (st = tr_gguf_opt_strv_copy(g, "stt.translation.pairs", 4096, NULL, 0, &m->pairs,
                                    &m->n_pairs)))
        return st;
    m->translate = translate;
    const tr_fc_hparams *hp = &m->hp;
    if (hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED && hp->att_left >= 0 && hp->att_right >= 0)
        streaming = true;
    if (hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED_RC) {
        int a = arr_len(g, "stt.parakeet.encoder.att_chunk_left_choices", &st);
        int b = arr_len(g, "stt.parakeet.encoder.att_chunk_chunk_choices", &st);
        int c = arr_len(g, "stt.parakeet.encoder.att_chunk_right_choices", &st);
        if (st) return st;
        if (a > 0 && b > 0 && c > 0) streaming = true;
    }
    m->streaming = streaming;
    return TRANSCRIBE_OK;
}

static int32_t *copy_i32(const int32_t *v, int64_t n) {
    int32_t *c = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0) memcpy(c, v, sizeof(int32_t) * (size_t)n);
    return c;
}

/* The streaming menus of docs/formats/parakeet.md §3.3 (the encoder's reader already checked the
 * pairs' shape and that pair 0 equals the scalars). */
static transcribe_status load_menus(const gguf_file *g, pk_model *m) {
    const int32_t *v = NULL;
    int64_t n = 0;
    transcribe_status st =
        tr_gguf_opt_arr_i32(g, "stt.parakeet.encoder.att_context_size_choices", 0, 1 << 16, &v, &n);
    if (st) return st;
    if (!v || n < 2) {
        const int32_t one[2] = {m->hp.att_left, m->hp.att_right};
        m->ctx_choices = copy_i32(one, 2);
        m->n_ctx_choices = 1;
    } else {
        m->ctx_choices = copy_i32(v, n);
        m->n_ctx_choices = (int)(n / 2);
    }
    if (!m->ctx_choices) return TRANSCRIBE_ERR_OOM;
    static const char *const keys[3] = {"stt.parakeet.encoder.att_chunk_left_choices",
                                        "stt.parakeet.encoder.att_chunk_chunk_choices",
                                        "stt.parakeet.encoder.att_chunk_right_choices"};
    for (int i = 0; i < 3; i++) {
        v = NULL;
        n = 0;
        if ((st = tr_gguf_opt_arr_i32(g, keys[i], 0, 1 << 16, &v, &n))) return st;
        if (!v || n == 0) continue;
        for (int64_t j = 0; j < n; j++) {
            /* a chunk of 0 frames would never advance */
            if (v[j] < (i == 1 ? 1 : 0) || v[j] > (1 << 20)) {
                TR_ERROR("parakeet: %s[%d] = %d is out of range", keys[i], (int)j, (int)v[j]);
                return ERR_GGUF;
            }
        }
        if (!(m->menu[i] = copy_i32(v, n))) return TRANSCRIBE_ERR_OOM;
        m->n_menu[i] = (int)n;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_all(const tr_load_ctx *lc, pk_model *m) {
    const gguf_file *g = lc->gguf;
    if (!g) {
        TR_ERROR("parakeet: only GGUF files are supported");
        return TRANSCRIBE_ERR_UNSUPPORTED_ARCH;
    }
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str(g, "general.architecture", &s);
    if (st) return st;
    if (strcmp(s, "parakeet") != 0) {
        TR_ERROR("parakeet: general.architecture is '%s'", s);
        return TRANSCRIBE_ERR_UNSUPPORTED_ARCH;
    }
    if ((st = tr_gguf_opt_str_copy(g, "stt.variant", "tdt-0.6b-v2", &m->variant))) return st;
    int n_prompts = 0;
    if ((st = tr_gguf_opt_u32(g, "stt.parakeet.prompt.num_prompts", 0, 0, 1 << 20, &n_prompts)))
        return st;
    if ((st = tr_fc_read_hparams(g, "stt.parakeet.encoder.", TR_FC_KEYS_PARAKEET, &m->hp)))
        return st;
    if (n_prompts > 0 && (st = tr_pk_prompt_load(g, m->hp.d_model, n_prompts, &m->prompt)))
        return st;
    if ((st = tr_pk_head_load(g, m->hp.d_model, &m->head))) return st;
    if ((st = load_tokenizer(g, m))) return st;
    if ((st = load_frontend(g, m))) return st;
    if ((st = load_languages(g, m))) return st;
    if ((st = load_caps(g, m))) return st;
    if ((st = load_menus(g, m))) return st;
    if ((st = tr_fc_load(g, &m->hp, &m->enc))) return st;
    m->hp.sub_stages = tr_fc_get_hparams(m->enc)->sub_stages; /* the stages the weights hold */
    return TRANSCRIBE_OK;
}

transcribe_status tr_pk_model_load(const tr_load_ctx *lc, pk_model **out) {
    *out = NULL;
    pk_model *m = calloc(1, sizeof *m);
    if (!m) return TRANSCRIBE_ERR_OOM;
    transcribe_status st = load_all(lc, m);
    if (st != TRANSCRIBE_OK) {
        if (st == TRANSCRIBE_ERR_OOM) TR_ERROR("parakeet: out of memory while loading");
        tr_pk_model_free(m);
        return st;
    }
    *out = m;
    return TRANSCRIBE_OK;
}

void tr_pk_model_free(pk_model *m) {
    if (!m) return;
    tr_fc_free(m->enc);
    tr_pk_head_free(&m->head);
    tr_pk_prompt_free(&m->prompt);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    tr_strv_free(m->targets, m->n_targets);
    tr_strv_free(m->pairs, m->n_pairs);
    for (int i = 0; i < 3; i++) free(m->menu[i]);
    TR_FREE_ALL(m->drop, m->word_start, m->variant, m->ctx_choices, m);
}

void tr_pk_model_describe(const pk_model *m, tr_model_desc *desc) {
    /* translation only where the file's capability key turns it on (the
     * family then transcribes); no speculative decoding; max_audio_ms 0;
     * docs/formats/parakeet.md §5: no encoding for this family (no tokenizer) */
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_TOKEN);
    c->supports_language_detect = m->lang_detect;
    c->supports_translate = m->translate;
    c->n_translate_target_languages = m->translate ? m->n_targets : 0;
    c->translate_target_languages = (const char *const *)m->targets;
    desc->n_translate_pairs = m->translate ? m->n_pairs : 0;
    desc->translate_pairs = (const char *const *)m->pairs;
    c->supports_streaming = m->streaming;
    desc->features[TRANSCRIBE_FEATURE_LONG_FORM] = true;
}
