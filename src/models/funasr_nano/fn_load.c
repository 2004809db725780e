/* Fun-ASR-Nano GGUF loader: every key of docs/formats/funasr_nano.md §2 with
 * its exact type (a present key of another type is a GGUF error) and the
 * cross-checks of §2.3–§2.6 and §9, the tensors of §3 by exact shape and
 * type class (the SAN-M stack through nn/sanm.h, the LM through
 * nn/causal_lm.h with its dec.layers.N block names), the tokenizer and the
 * chat pieces of §2.2, the languages and the capabilities of §8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/funasr_nano/funasr_nano.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define EK       "stt.funasr_nano.encoder."
#define AK       "stt.funasr_nano.adaptor."
#define DK       "stt.funasr_nano.decoder."
/* docs/formats/funasr_nano.md §3: dec.token_embd.weight is checked for shape only */
#define FN_TYPES_ANY 0x7fffffffu

static transcribe_status mismatch(const char *what, int a, const char *vs, int b) {
    TR_ERROR("funasr_nano: %s %d != %s %d", what, a, vs, b);
    return ERR_GGUF;
}

/* ---- docs/formats/funasr_nano.md §2.4 adaptor ---- */

static transcribe_status read_adaptor(const gguf_file *f, fn_model *m) {
    fn_adaptor_hp *a = &m->ad;
    const tr_gguf_u32_key keys[] = {
        {"n_blocks", 1, 64, &a->n_blocks},
        {"encoder_dim", 1, 1 << 16, &a->encoder_dim},
        {"llm_dim", 1, 1 << 16, &a->llm_dim},
        {"pre_ffn_dim", 1, 1 << 20, &a->pre_ffn_dim},
        {"block_ffn_dim", 1, 1 << 20, &a->block_ffn_dim},
        {"n_heads", 1, 1024, &a->n_heads},
        {"d_head", 1, 4096, &a->d_head},
    };
    transcribe_status st = tr_gguf_req_u32_keys(f, AK, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    int rate = 0;
    if ((st = tr_gguf_req_f32_finite(f, AK "layer_norm_eps", true, &a->eps)) ||
        (st = tr_gguf_req_str_is(f, AK "activation", "relu", NULL)) ||
        (st = tr_gguf_req_u32(f, AK "downsample_rate", 1, 1 << 16, &rate)) ||
        (st = tr_gguf_opt_bool(f, AK "use_low_frame_rate", true, &a->low_frame_rate)))
        return st;
    /* docs/formats/funasr_nano.md §11: frame folding is not implemented upstream either */
    if (rate != 1)
        return tr_gguf_key_error(AK "downsample_rate", "UINT32", "%d is not supported (only 1)",
                                 rate);
    if (a->llm_dim != a->n_heads * a->d_head)
        return mismatch("adaptor llm_dim", a->llm_dim, "n_heads x d_head", a->n_heads * a->d_head);
    if (a->encoder_dim != m->enc.dims.d_model)
        return mismatch("adaptor encoder_dim", a->encoder_dim, "encoder d_model",
                        m->enc.dims.d_model);
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/funasr_nano.md §2.5 decoder ---- */

static transcribe_status read_decoder(const gguf_file *f, fn_model *m) {
    tr_clm_hparams *hp = &m->lm;
    transcribe_status st;
    /* tr_clm_read_sizes reads hidden_act; this schema names it activation */
    memset(hp, 0, sizeof *hp);
    tr_clm_hparams_defaults(hp);
    hp->qk_norm = true;
    const tr_gguf_u32_key keys[] = {
        {"n_layers", 1, 1024, &hp->n_layer},
        {"hidden_size", 1, 1 << 16, &hp->d_model},
        {"intermediate_size", 1, 1 << 20, &hp->d_ffn},
        {"n_heads", 1, 1024, &hp->n_head},
        {"n_kv_heads", 1, 1024, &hp->n_head_kv},
        {"head_dim", 2, 4096, &hp->head_dim},
        {"vocab_size", 1, 1 << 24, &hp->n_vocab},
        {"max_position_embeddings", 1, INT32_MAX, &m->max_pos},
    };
    if ((st = tr_gguf_req_u32_keys(f, DK, keys, sizeof keys / sizeof keys[0]))) return st;
    bool tied = true;
    if ((st = tr_gguf_req_str_is(f, DK "activation", "silu", "swish")) ||
        (st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps)) ||
        (st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta)) ||
        (st = tr_gguf_opt_bool(f, DK "tie_word_embeddings", true, &tied)))
        return st;
    if (!tied) {
        TR_ERROR("funasr_nano: tie_word_embeddings = false is not supported (the head is the "
                 "embedding)");
        return ERR_GGUF;
    }
    if (hp->n_head % hp->n_head_kv || hp->head_dim % 2) {
        TR_ERROR("funasr_nano: %d query heads are not a multiple of %d kv heads (or head_dim %d "
                 "is odd)",
                 hp->n_head, hp->n_head_kv, hp->head_dim);
        return ERR_GGUF;
    }
    if (m->ad.llm_dim != hp->d_model)
        return mismatch("adaptor llm_dim", m->ad.llm_dim, "decoder hidden_size", hp->d_model);
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/funasr_nano.md §2.6 front end ---- */

static transcribe_status read_frontend(const gguf_file *f, fn_model *m) {
    transcribe_status st =
        tr_mel_kaldi_lfr_from_gguf(f, "none", m->enc.d_input, EK "d_input", &m->mel);
    if (st) return st;
    /* docs/formats/funasr_nano.md §2.6: the file has no CMVN vectors; upstream would read empty
     * ones */
    if (m->mel.apply_cmvn)
        return tr_gguf_key_error("stt.frontend.apply_cmvn", "BOOL",
                                 "true is not supported (the file has no CMVN vectors)");
    if (m->mel.sample_rate != 16000)
        return tr_gguf_key_error("stt.frontend.sample_rate", "UINT32", "%d is not 16000",
                                 m->mel.sample_rate);
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/funasr_nano.md §2.2 tokenizer, chat pieces; §2.1 languages ---- */

static transcribe_status read_tokenizer(const gguf_file *f, fn_model *m) {
    transcribe_status st;
    fn_special *sp = &m->sp;
    if ((st = tr_tokenizer_load_gpt2(f, "funasr_nano", m->lm.n_vocab, &m->tok, &sp->eos)))
        return st;
    static const struct {
        const char *piece;
        size_t off;
    } pieces[] = {
        {"<|im_start|>", offsetof(fn_special, im_start)},
        {"<|im_end|>", offsetof(fn_special, im_end)},
        {"\xC4\x8A", offsetof(fn_special, newline)},
        {"system", offsetof(fn_special, system)},
        {"user", offsetof(fn_special, user)},
        {"assistant", offsetof(fn_special, assistant)},
    };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        if ((st = tr_tokenizer_require(m->tok, "funasr_nano", pieces[i].piece,
                                       (int *)((char *)sp + pieces[i].off))))
            return st;
    /* docs/formats/funasr_nano.md §2.2: the prompt is BPE-encoded at run time */
    if (!tr_tokenizer_can_encode(m->tok)) {
        TR_ERROR("funasr_nano: the tokenizer has no BPE merges (tokenizer.ggml.merges), so the "
                 "prompt cannot be encoded");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_languages(const gguf_file *f, fn_model *m) {
    static const char *const def[] = {"zh", "en", "ja"}; /* docs/formats/funasr_nano.md §2.1 Nano */
    return tr_gguf_opt_strv_copy(f, "general.languages", 4096, def, 3, &m->lang, &m->n_lang);
}

/* ---- docs/formats/funasr_nano.md §3 tensors ---- */

static transcribe_status read_adaptor_tensors(const gguf_file *f, fn_model *m) {
    const fn_adaptor_hp *a = &m->ad;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    const tr_nn_wspec top[] = {
        {"adaptor.linear1",
         TR_NN_W_LINEAR,
         {a->encoder_dim, a->pre_ffn_dim},
         0,
         0,
         offsetof(fn_model, lin1)},
        {"adaptor.linear2",
         TR_NN_W_LINEAR,
         {a->pre_ffn_dim, a->llm_dim},
         0,
         0,
         offsetof(fn_model, lin2)},
    };
    if (!tr_nn_load_weights(&src, top, 2, NULL, 0, true, m)) return ERR_GGUF;
    m->ad_blocks = calloc((size_t)a->n_blocks, sizeof *m->ad_blocks);
    if (!m->ad_blocks) return TRANSCRIBE_ERR_OOM;
    static const tr_nn_enc_names names = {
        .prefix = "adaptor.blocks.%d.",
        .ln_attn = "norm_attn",
        .attn = "attn",
        .ln_ffn = "norm_ffn",
        .out = "out",
        .ffn_up = "ffn.fc1",
        .ffn_down = "ffn.fc2",
        .k_bias = true,
    };
    if (!tr_nn_load_enc_blocks(&src, &names, a->llm_dim, a->block_ffn_dim, a->n_blocks,
                               m->ad_blocks))
        return ERR_GGUF;
    for (int i = 0; i < a->n_blocks; i++) m->ad_blocks[i].ffn.act = TR_NN_ACT_RELU;
    m->ad_dims = (tr_nn_dims){.d_model = a->llm_dim,
                              .n_head = a->n_heads,
                              .head_dim = a->d_head,
                              .d_ffn = a->block_ffn_dim,
                              .ln_eps = a->eps};
    return TRANSCRIBE_OK;
}

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    fn_model *m = model;
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "funasr_nano", NULL))) return st;
    if ((st = tr_gguf_opt_str(f, "stt.variant", "fun-asr-nano-2512", &m->variant))) return st;
    if (!m->variant || !*m->variant) m->variant = "fun-asr-nano-2512";
    if ((st = tr_sanm_read_hparams(f, EK, "funasr_nano", true, &m->enc))) return st;
    if ((st = read_adaptor(f, m)) || (st = read_decoder(f, m)) || (st = read_frontend(f, m)) ||
        (st = read_tokenizer(f, m)) || (st = read_languages(f, m)))
        return st;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(f);
    if (!tr_sanm_encoder_load(&src, &m->enc)) return ERR_GGUF;
    if ((st = read_adaptor_tensors(f, m))) return st;
    if ((st = tr_clm_load_weights_prefix(f, "funasr_nano", "dec.layers", &m->lm, true, FN_TYPES_ANY,
                                         &m->lm_blocks, &m->lm_w)))
        return st;
    /* docs/formats/funasr_nano.md §8: (40960 − 48 − 256) audio tokens of folds · lfr_n hops each */
    const int64_t tokens = (int64_t)m->max_pos - FN_PROMPT_RESERVE - FN_MAX_NEW;
    const int64_t folds = m->ad.low_frame_rate ? 8 : 1;
    m->max_audio_ms =
        tokens > 0 ? tokens * folds * m->mel.lfr_n * m->mel.hop_length * 1000 / m->mel.sample_rate
                   : 0;
    TR_INFO("funasr_nano: loaded %s (encoder %d + %d x %d, adaptor %d x %d, LM %d x %d, heads "
            "%d/%d, vocab %d)",
            m->variant, m->enc.n_blocks, m->enc.tp_blocks, m->enc.dims.d_model, m->ad.n_blocks,
            m->ad.llm_dim, m->lm.n_layer, m->lm.d_model, m->lm.n_head, m->lm.n_head_kv,
            m->lm.n_vocab);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(fn, "funasr_nano", load_gguf)

void tr_fn_model_free(fn_model *m) {
    if (!m) return;
    tr_sanm_encoder_free(&m->enc);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->ad_blocks, m->lm_blocks, m);
}

/* docs/formats/funasr_nano.md §7, §8: no timestamps beyond the one segment,
 * no detection or translation, ITN through the prompt, a fixed output budget
 * (the dispatcher splits long audio at pauses). */
void tr_fn_model_describe(const fn_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->supports_spec_decode = true; /* single runs: the causal LM's tr_clm_greedy */
    c->max_audio_ms = m->max_audio_ms;
    desc->features[TRANSCRIBE_FEATURE_ITN] = true;
    desc->bounded_output = true;
    desc->tokenizer = m->tok;
}
