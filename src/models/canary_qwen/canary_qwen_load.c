/* Canary-Qwen GGUF loader: every key of docs/formats/canary_qwen.md §2 with its
 * exact type (a present key of another type is a GGUF error, except the
 * lenient perception.output_dim of §2.3), the cross-field checks, the
 * tokenizer and the static prompt segments of §6.1, the front end of §2.5
 * with its baked buffers (§3.2), the FastConformer encoder through
 * src/nn/fastconformer.h (§3.3), the projection and the LM of §3.4 by exact
 * shape and type class, and the capabilities (§8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/canary_qwen/canary_qwen.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define WHO      "canary_qwen"

/* ---- docs/formats/canary_qwen.md §2.2–§2.4 ---- */

/* §2.3: output_dim falls back to hidden_size when absent or not a UINT32. */
static int lenient_output_dim(const gguf_file *f, int hidden) {
    const int64_t i = tr_gguf_find_key(f, "stt.canary_qwen.perception.output_dim");
    uint32_t v = 0;
    if (i < 0 || tr_gguf_kv_type(f, i) != GGUF_T_UINT32 ||
        tr_gguf_get_u32(f, "stt.canary_qwen.perception.output_dim", &v) != 1 || v > INT32_MAX)
        return hidden;
    return (int)v;
}

static transcribe_status read_hparams(const gguf_file *f, cq_model *m) {
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "canary_qwen", NULL))) return st;
#define EK "stt.canary_qwen.encoder."
    if ((st = tr_fc_read_hparams(f, EK, TR_FC_KEYS_CANARY, &m->enc_hp))) return st;
    if ((st = tr_gguf_req_u32(f, EK "pos_emb_max_len", 1, INT32_MAX, &m->pos_emb_max_len)))
        return st;
    if (m->enc_hp.sub_factor != 8) {
        TR_ERROR(WHO ": " EK "subsampling_factor %d (must be 8)", m->enc_hp.sub_factor);
        return ERR_GGUF;
    }
#undef EK
    tr_clm_hparams *hp = &m->lm;
    memset(hp, 0, sizeof *hp);
    tr_clm_hparams_defaults(hp);
    hp->qk_norm = true;
#define DK "stt.canary_qwen.decoder."
    /* hidden_act is not read (SiLU); the size keys of nn's causal LM */
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &hp->n_layer},
        {"hidden_size", 1, 1 << 16, &hp->d_model},
        {"intermediate_size", 1, 1 << 20, &hp->d_ffn},
        {"n_heads", 1, 1024, &hp->n_head},
        {"n_kv_heads", 1, 1024, &hp->n_head_kv},
        {"head_dim", 2, 4096, &hp->head_dim},
        {"max_position_embeddings", 1, INT32_MAX, &m->max_pos},
        {"vocab_size", 1, 1 << 24, &hp->n_vocab},
    };
    if ((st = tr_gguf_req_u32_keys(f, DK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta))) return st;
    bool tied; /* read, not enforced: the head is always dec.token_embd.weight */
    if ((st = tr_gguf_opt_bool(f, DK "tie_word_embeddings", true, &tied))) return st;
#undef DK
    if (hp->n_head % hp->n_head_kv || hp->n_head * hp->head_dim != hp->d_model ||
        hp->head_dim % 2) {
        TR_ERROR(WHO ": %d query heads of %d must be a multiple of %d kv heads and fill "
                     "hidden_size %d (even head_dim)",
                 hp->n_head, hp->head_dim, hp->n_head_kv, hp->d_model);
        return ERR_GGUF;
    }
    const int out_dim = lenient_output_dim(f, hp->d_model);
    if (out_dim != hp->d_model) {
        TR_ERROR(WHO ": perception output_dim %d != decoder hidden_size %d", out_dim, hp->d_model);
        return ERR_GGUF;
    }
    const char *key = "stt.canary_qwen.perception.audio_locator_id";
    if ((st = tr_gguf_opt_token_id(f, key, hp->n_vocab, &m->sp.audio))) return st;
    if (m->sp.audio < 0) return tr_gguf_key_error(key, "UINT32", "required");
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/canary_qwen.md §2.5, §3.2, §4 ---- */

static transcribe_status read_frontend(const gguf_file *f, cq_model *m) {
    transcribe_status st;
    int mels, sr, n_fft, win, hop;
    float v;
#define FK "stt.frontend."
    const tr_gguf_u32_key sizes[] = {
        {"sample_rate", 16000, 16000, &sr}, {"num_mels", 128, 128, &mels},
        {"n_fft", 2, 1 << 16, &n_fft},      {"win_length", 1, 1 << 16, &win},
        {"hop_length", 1, 1 << 16, &hop},
    };
    if ((st = tr_gguf_req_u32_keys(f, FK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if (n_fft & (n_fft - 1) || win > n_fft) {
        TR_ERROR(WHO ": " FK "n_fft %d must be a power of two >= win_length %d", n_fft, win);
        return ERR_GGUF;
    }
    if (mels != m->enc_hp.n_mels) {
        TR_ERROR(WHO ": " FK "num_mels %d does not fit the encoder (%d)", mels, m->enc_hp.n_mels);
        return ERR_GGUF;
    }
    if ((st = tr_gguf_req_f32_finite(f, FK "pre_emphasis", false, &v))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_min", false, &v))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_max", false, &v))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "pad_mode", "reflect", NULL))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "per_feature", NULL))) return st;
#undef FK
    /* the shared reader also takes the baked filterbank and window
     * (docs/formats/canary_qwen.md §3.2: optional, F32, exact element counts) */
    tr_mel_config_nemo(&m->mel, mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    /* docs/formats/canary_qwen.md §2.5: window type, log and centring are not read */
    m->mel.type = TR_FRONTEND_MEL;
    m->mel.window = TR_WIN_HANN_SYMMETRIC;
    m->mel.pad_mode = TR_PAD_REFLECT;
    m->mel.normalize = TR_NORM_PER_FEATURE;
    m->mel.log = true;
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/canary_qwen.md §2.1 tokenizer, §6.1 prompt segments ---- */

/* Appends the BPE ids of text to seg (capacity CQ_MAX_SEGMENT). */
static transcribe_status encode_into(const cq_model *m, const char *text, int32_t *seg, int *n) {
    int k = tr_tokenizer_encode(m->tok, text, seg + *n, (size_t)(CQ_MAX_SEGMENT - *n));
    if (k < 0) {
        TR_ERROR(WHO ": cannot encode the prompt text \"%s\" with this vocabulary", text);
        return ERR_GGUF;
    }
    *n += k;
    return TRANSCRIBE_OK;
}

static transcribe_status read_tokenizer(const gguf_file *f, cq_model *m) {
    transcribe_status st;
    const char *model = NULL;
    if ((st = tr_gguf_req_str(f, "tokenizer.ggml.model", &model))) return st;
    if (strcmp(model, "gpt2") != 0) {
        TR_ERROR(WHO ": tokenizer.ggml.model '%s' is not supported (gpt2 only)", model);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    cq_special *sp = &m->sp;
    if ((st = tr_tokenizer_load_gpt2(f, WHO, m->lm.n_vocab, &m->tok, &sp->eos))) return st;
    if ((st = tr_tokenizer_require(m->tok, WHO, "<|im_start|>", &sp->im_start)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "<|im_end|>", &sp->im_end)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "user", &sp->user)) ||
        (st = tr_tokenizer_require(m->tok, WHO, "assistant", &sp->assistant)))
        return st;
    if (!tr_tokenizer_can_encode(m->tok)) {
        TR_ERROR(WHO ": the vocabulary has no BPE merges; the prompt cannot be encoded");
        return ERR_GGUF;
    }
    /* prefix = <|im_start|> "user\nTranscribe the following: ";
     * suffix = <|im_end|> "\n" <|im_start|> "assistant\n" */
    m->n_prefix = m->n_suffix = 0;
    m->prefix[m->n_prefix++] = sp->im_start;
    if ((st = encode_into(m, "user\nTranscribe the following: ", m->prefix, &m->n_prefix)))
        return st;
    m->suffix[m->n_suffix++] = sp->im_end;
    if ((st = encode_into(m, "\n", m->suffix, &m->n_suffix))) return st;
    m->suffix[m->n_suffix++] = sp->im_start;
    if ((st = encode_into(m, "assistant\n", m->suffix, &m->n_suffix))) return st;
    /* the placeholder count of a prompt is T_enc only if the text around it
     * holds no placeholder id */
    for (int i = 0; i < m->n_prefix + m->n_suffix; i++) {
        int id = i < m->n_prefix ? m->prefix[i] : m->suffix[i - m->n_prefix];
        if (id == sp->audio) {
            TR_ERROR(WHO ": audio_locator_id %d is also a token of the prompt text", id);
            return ERR_GGUF;
        }
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/canary_qwen.md §3.4 projection ---- */

static transcribe_status read_projection(const gguf_file *f, cq_model *m) {
    const int64_t nw[2] = {m->enc_hp.d_model, m->lm.d_model}, nb[1] = {m->lm.d_model};
    m->proj.w = tr_gguf_require_tensor(f, "enc.proj.weight", TR_TYPES_LINEAR, 2, nw);
    const tr_tensor *b = tr_gguf_require_tensor(f, "enc.proj.bias", TR_TYPES_F32, 1, nb);
    if (!m->proj.w || !b) return ERR_GGUF;
    m->proj.b = (const float *)b->data;
    return TRANSCRIBE_OK;
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    cq_model *m = model;
    transcribe_status st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_tokenizer(f, m))) return st;
    static const char *const en[] = {"en"};
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", 4096, en, 1, &m->lang, &m->n_lang)))
        return st;
    bool unused; /* docs/formats/canary_qwen.md §2.1: type-checked only */
    if ((st = tr_gguf_opt_bool(f, "stt.capability.lang_detect", false, &unused)) ||
        (st = tr_gguf_opt_bool(f, "stt.capability.translate", false, &unused)) ||
        (st = tr_gguf_opt_bool(f, "stt.capability.streaming", false, &unused)))
        return st;
    if ((st = tr_gguf_opt_str_copy(f, "stt.variant", "canary-qwen-2.5b", &m->variant))) return st;
    if ((st = tr_fc_load(f, &m->enc_hp, &m->enc))) return st;
    if ((st = read_projection(f, m))) return st;
    /* the LM on the shared causal-LM loader; the head is the embedding */
    if ((st = tr_clm_load_weights(f, WHO, &m->lm, true, TR_TYPES_LINEAR, &m->lm_blocks, &m->lm_w)))
        return st;
    /* docs/formats/canary_qwen.md §8: (max_position − 32 − 256) audio tokens of 8 hops */
    int64_t tokens = (int64_t)m->max_pos - CQ_PROMPT_SLACK - CQ_MAX_NEW;
    m->max_audio_ms =
        tokens > 0 ? tokens * m->enc_hp.sub_factor * m->mel.hop_length * 1000 / m->mel.sample_rate
                   : 0;
    TR_INFO(WHO ": loaded %s (encoder %d x %d, LM %d x %d, heads %d/%d, vocab %d)", m->variant,
            m->enc_hp.n_layers, m->enc_hp.d_model, m->lm.n_layer, m->lm.d_model, m->lm.n_head,
            m->lm.n_head_kv, m->lm.n_vocab);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(cq, WHO, load_gguf)

void tr_cq_model_free(cq_model *m) {
    if (!m) return;
    tr_fc_free(m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->lm_blocks, m->variant, m);
}

void tr_cq_model_describe(const cq_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                            TRANSCRIBE_TIMESTAMPS_NONE /* docs/formats/canary_qwen.md §7 */);
    c->supports_spec_decode = true; /* single runs: the causal LM's tr_clm_greedy */
    c->max_audio_ms = m->max_audio_ms;
    desc->bounded_output = true; /* fixed budget, no long form (docs/formats/canary_qwen.md §8) */
    desc->tokenizer = m->tok;
}
