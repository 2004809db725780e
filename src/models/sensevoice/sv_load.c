/* SenseVoice GGUF loader: encoder and prefix-row keys
 * (docs/formats/sensevoice.md §2), front end (docs/formats/sensevoice.md §2, §4), tokenizer,
 * tensors (docs/formats/sensevoice.md §3) with every shape checked against the hyper-parameters,
 * languages and capabilities (docs/formats/sensevoice.md §7). Every failure is TRANSCRIBE_ERR_GGUF
 * with a log line naming the key or tensor (or NOT_IMPLEMENTED for an unknown tokenizer model), and
 * frees what was loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/sensevoice/sensevoice.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define EK       "stt.sensevoice.encoder."
#define SK       "stt.sensevoice.special."

/* docs/formats/sensevoice.md §2: encoder sizes, strictly typed and cross-checked
 * (nn/sanm.h); sanm_shift and normalize_before are read, warned about, not used. */
static transcribe_status load_encoder_keys(const gguf_file *g, sv_model *m) {
    transcribe_status st = tr_sanm_read_hparams(g, EK, "sensevoice", false, &m->enc);
    if (st) return st;
    sv_hparams *hp = &m->hp;
    hp->n_blocks = m->enc.n_blocks;
    hp->tp_blocks = m->enc.tp_blocks;
    hp->d_model = m->enc.dims.d_model;
    hp->d_input = m->enc.d_input;
    hp->n_heads = m->enc.dims.n_head;
    hp->d_ff = m->enc.dims.d_ff;
    hp->kernel = m->enc.dims.kernel;
    return TRANSCRIBE_OK;
}

/* docs/formats/sensevoice.md §2: prefix rows, required, and (unlike upstream) inside the 16-row
 * table. */
static transcribe_status load_special(const gguf_file *g, sv_model *m) {
    sv_special *s = &m->sp;
    const tr_gguf_u32_key keys[] = {
        {"lang_auto", 0, SV_PREFIX_ROWS - 1, &s->lang_auto},
        {"lang_zh", 0, SV_PREFIX_ROWS - 1, &s->lang_zh},
        {"lang_en", 0, SV_PREFIX_ROWS - 1, &s->lang_en},
        {"lang_yue", 0, SV_PREFIX_ROWS - 1, &s->lang_yue},
        {"lang_ja", 0, SV_PREFIX_ROWS - 1, &s->lang_ja},
        {"lang_ko", 0, SV_PREFIX_ROWS - 1, &s->lang_ko},
        {"lang_nospeech", 0, SV_PREFIX_ROWS - 1, &s->lang_nospeech},
        {"withitn", 0, SV_PREFIX_ROWS - 1, &s->withitn},
        {"woitn", 0, SV_PREFIX_ROWS - 1, &s->woitn},
    };
    transcribe_status st = tr_gguf_req_u32_keys(g, SK, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    int unused; /* informative keys (rows 1 and 2 are used literally): type only */
    if ((st = tr_gguf_opt_u32(g, SK "event_speech", 1, 0, SV_PREFIX_ROWS - 1, &unused)) ||
        (st = tr_gguf_opt_u32(g, SK "emotion_neutral", 2, 0, SV_PREFIX_ROWS - 1, &unused)))
        return st;
    return TRANSCRIBE_OK;
}

/* docs/formats/sensevoice.md §2 / §4: the shared Kaldi fbank + LFR keys (audio/mel.h) with
 * per_feature normalisation: CMVN always on (the docs/formats/sensevoice.md §3 tensors). */
static transcribe_status load_frontend(const gguf_file *g, sv_model *m) {
    transcribe_status st =
        tr_mel_kaldi_lfr_from_gguf(g, "per_feature", m->hp.d_input, EK "d_input", &m->mel);
    if (st) return st;
    m->mel.apply_cmvn = true;
    return TRANSCRIBE_OK;
}

static transcribe_status load_tokenizer(const gguf_file *g, sv_model *m) {
    transcribe_status st = tr_tokenizer_from_gguf(g, &m->tok);
    if (st) return st;
    tr_tok_kind k = tr_tokenizer_kind(m->tok);
    if (k != TR_TOK_SPM_BPE && k != TR_TOK_SPM_UNIGRAM) {
        TR_ERROR("sensevoice: tokenizer.ggml.model must be a SentencePiece vocabulary (\"bpe\")");
        return ERR_GGUF;
    }
    m->hp.n_vocab = tr_tokenizer_n_vocab(m->tok);
    if (m->hp.n_vocab < 1) {
        TR_ERROR("sensevoice: tokenizer.ggml.tokens is empty");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

typedef struct sv_cmvn {
    const float *shift, *scale;
} sv_cmvn;

static transcribe_status load_tensors(const gguf_file *g, sv_model *m) {
    const sv_hparams *hp = &m->hp;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    const int64_t di = hp->d_input, D = hp->d_model, V = hp->n_vocab;
    sv_cmvn cmvn = {0};
    const tr_nn_wspec top[] = {
        {"frontend.cmvn.shift", TR_NN_W_VEC, {di}, 1, 0, offsetof(sv_cmvn, shift)},
        {"frontend.cmvn.scale", TR_NN_W_VEC, {di}, 1, 0, offsetof(sv_cmvn, scale)},
    };
    bool ok = tr_nn_load_weights(&src, top, 2, NULL, 0, true, &cmvn);
    const tr_nn_wspec model[] = {
        {"enc.embed.weight", TR_NN_W_VEC, {di, SV_PREFIX_ROWS}, 2, 0, offsetof(sv_model, embed)},
        /* docs/formats/sensevoice.md §2: the vocabulary size is the head's class count */
        {"ctc.head", TR_NN_W_LINEAR, {D, V}, 0, 0, offsetof(sv_model, ctc)},
    };
    ok = tr_nn_load_weights(&src, model, sizeof model / sizeof model[0], NULL, 0, true, m) && ok;
    if (!ok) return ERR_GGUF;
    m->mel.cmvn_shift = cmvn.shift;
    m->mel.cmvn_scale = cmvn.scale;

    return tr_sanm_encoder_load(&src, &m->enc) ? TRANSCRIBE_OK : ERR_GGUF;
}

/* docs/formats/sensevoice.md §2, §7: general.languages, or the published five when absent. */
static transcribe_status load_languages(const gguf_file *g, sv_model *m) {
    static const char *const five[] = {"zh", "yue", "en", "ja", "ko"};
    transcribe_status st =
        tr_gguf_opt_strv_copy(g, "general.languages", 4096, five, 5, &m->lang, &m->n_lang);
    if (st) return st;
    return tr_gguf_opt_bool(g, "stt.capability.lang_detect", true, &m->lang_detect);
}

static transcribe_status load_all(const gguf_file *g, void *model) {
    sv_model *m = model;
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str_is(g, "general.architecture", "sensevoice", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(g, "stt.variant", "sensevoice-small", &s))) return st;
    m->variant = s;
    if ((st = load_encoder_keys(g, m)) || (st = load_special(g, m)) || (st = load_frontend(g, m)) ||
        (st = load_tokenizer(g, m)) || (st = load_languages(g, m)) || (st = load_tensors(g, m)))
        return st;
    TR_INFO("sensevoice: %s, %d + %d blocks, d_model %d, %d heads, vocabulary %d", m->variant,
            m->hp.n_blocks, m->hp.tp_blocks, m->hp.d_model, m->hp.n_heads, m->hp.n_vocab);
    return TRANSCRIBE_OK;
}

void tr_sv_model_free(sv_model *m) {
    if (!m) return;
    tr_sanm_encoder_free(&m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

static void model_free_any(void *m) {
    tr_sv_model_free(m);
}

transcribe_status tr_sv_model_load(const tr_load_ctx *lc, sv_model **out) {
    void *m = NULL;
    transcribe_status st =
        tr_family_load_gguf(lc, "sensevoice", sizeof(sv_model), load_all, model_free_any, &m);
    if (st == TRANSCRIBE_ERR_OOM) TR_ERROR("sensevoice: out of memory while loading");
    *out = m;
    return st;
}

/* docs/formats/sensevoice.md §7: no timestamps beyond the one untimed segment, ITN through the
 * prefix row, language detection from the first tag, a 30 s soft window. */
void tr_sv_model_describe(const sv_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->supports_language_detect = m->lang_detect;
    c->max_audio_ms = SV_MAX_AUDIO_MS;
    desc->features[TRANSCRIBE_FEATURE_ITN] = true;
    desc->tokenizer = m->tok;
}
