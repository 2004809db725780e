/* Voxtral Realtime GGUF loader: every key of docs/formats/voxtral_realtime.md §2 with its exact
 * type (a present key of another type is a GGUF error) and the cross-field checks, the tensors
 * of §3 by exact shape and type class (the LM through nn's causal-LM loader, tied head), the
 * tokenizer's BOS / EOS and the streaming pad id, the language list and the capabilities. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/voxtral_realtime/vxr.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define WHO      "voxtral_realtime"
#define ERR_GGUF TRANSCRIBE_ERR_GGUF
/* docs/formats/voxtral_realtime.md §3 class E: any dequantizable type */
#define VXR_TYPES_ANY 0x7fffffffu

/* docs/formats/voxtral_realtime.md §2.1: the hint allow-list when general.languages is absent */
static const char *const k_lang[] = {"en", "fr", "es", "de", "ru", "zh", "ja",
                                     "it", "pt", "nl", "ar", "hi", "ko"};
#define VXR_N_LANG ((int)(sizeof k_lang / sizeof *k_lang))

/* ---- docs/formats/voxtral_realtime.md §2.2 – §2.4 ---- */

static transcribe_status read_hparams(const gguf_file *f, vxr_model *m) {
    transcribe_status st;
    vxr_hparams *h = &m->hp;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "voxtral_realtime", NULL))) return st;
    int n_kv = 0, unused = 0;
#define EK "stt.voxtral_realtime.encoder."
    const tr_gguf_u32_key enc[] = {
        {"n_layers", 1, 1024, &h->enc_layers},
        {"d_model", 1, 1 << 16, &h->enc_d},
        {"n_heads", 1, 1024, &h->enc_heads},
        {"n_kv_heads", 1, 1024, &n_kv},
        {"head_dim", 2, 4096, &h->enc_hd},
        {"ffn_dim", 1, 1 << 20, &h->enc_ffn},
        {"num_mel_bins", 1, 4096, &h->n_mels},
        {"sliding_window", 1, 1 << 20, &h->enc_window},
        {"max_position_embeddings", 1, INT32_MAX, &unused},
    };
    if ((st = tr_gguf_req_u32_keys(f, EK, enc, sizeof enc / sizeof *enc))) return st;
    if ((st = tr_gguf_req_f32_finite(f, EK "rope_theta", true, &h->enc_theta))) return st;
    if ((st = tr_gguf_req_f32_finite(f, EK "rms_norm_eps", true, &h->enc_eps))) return st;
    if ((st = tr_gguf_req_str_is(f, EK "hidden_act", "silu", "swish"))) return st;
#undef EK
    if (n_kv != h->enc_heads) {
        TR_ERROR(WHO ": encoder n_kv_heads %d must equal n_heads %d", n_kv, h->enc_heads);
        return ERR_GGUF;
    }
    if (h->enc_hd % 2) {
        TR_ERROR(WHO ": encoder head_dim %d must be even (RoPE)", h->enc_hd);
        return ERR_GGUF;
    }
#define PK "stt.voxtral_realtime.projector."
    int in_dim = 0;
    if ((st = tr_gguf_req_u32(f, PK "downsample_factor", 1, 64, &h->ds))) return st;
    if ((st = tr_gguf_req_u32(f, PK "input_dim", 1, 1 << 20, &in_dim))) return st;
    if ((st = tr_gguf_req_str_is(f, PK "hidden_act", "gelu", NULL))) return st;
    if ((st = tr_gguf_req_u32(f, PK "audio_length_per_tok", 1, 1024, &h->per_tok))) return st;
#undef PK
    if (in_dim != h->enc_d * h->ds) {
        TR_ERROR(WHO ": projector input_dim %d != d_model %d x downsample_factor %d", in_dim,
                 h->enc_d, h->ds);
        return ERR_GGUF;
    }
    /* the stride-2 stem halves the mel frames: per_tok mel frames = per_tok/2 encoder frames,
     * grouped ds at a time (docs/formats/voxtral_realtime.md §5) */
    if (h->per_tok != 2 * h->ds) {
        TR_ERROR(WHO ": audio_length_per_tok %d must be 2 x downsample_factor %d", h->per_tok,
                 h->ds);
        return ERR_GGUF;
    }

    tr_clm_hparams *hp = &m->lm;
#define DK "stt.voxtral_realtime.decoder."
    if ((st = tr_clm_read_sizes(f, DK, false, hp))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, DK "rope_theta", true, &hp->rope_theta))) return st;
    if ((st = tr_gguf_req_u32(f, DK "sliding_window", 1, 1 << 24, &h->dec_window))) return st;
    if ((st = tr_gguf_req_u32(f, DK "max_position_embeddings", 2, INT32_MAX, &h->max_pos)))
        return st;
    bool tied = true;
    if ((st = tr_gguf_opt_bool(f, DK "tie_word_embeddings", true, &tied))) return st;
    if ((st = tr_gguf_req_u32(f, DK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
#undef DK
    if (!tied) {
        TR_ERROR(WHO ": tie_word_embeddings = false is not supported (the head is the embedding)");
        return ERR_GGUF;
    }
    if (hp->n_head % hp->n_head_kv || hp->head_dim % 2) {
        TR_ERROR(WHO ": %d query heads are not a multiple of %d kv heads (head_dim %d)", hp->n_head,
                 hp->n_head_kv, hp->head_dim);
        return ERR_GGUF;
    }
#define TK "stt.voxtral_realtime.time."
    int embed_dim = 0;
    float theta = 0;
    if ((st = tr_gguf_req_u32(f, TK "default_num_delay_tokens", 0, 1 << 16, &h->default_delay)))
        return st;
    if ((st = tr_gguf_req_f32_finite(f, TK "embed_theta", true, &theta))) return st;
    if ((st = tr_gguf_req_u32(f, TK "embed_dim", 2, 1 << 20, &embed_dim))) return st;
    if ((st = tr_gguf_req_u32(f, TK "ada_hidden", 1, 1 << 20, &h->ada_hidden))) return st;
#undef TK
    if (embed_dim != hp->d_model || embed_dim % 2) {
        TR_ERROR(WHO ": time embed_dim %d must equal hidden_size %d (and be even)", embed_dim,
                 hp->d_model);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral_realtime.md §2.5 front end ---- */

static transcribe_status read_frontend(const gguf_file *f, vxr_model *m) {
    transcribe_status st;
    float x;
#define FK "stt.frontend."
    if ((st = tr_mel_check_stft_keys(f, WHO, m->hp.n_mels))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "window", "hann_periodic", NULL))) return st;
    if ((st = tr_gguf_req_str_is(f, FK "normalize", "global", NULL))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "global_log_mel_max", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "dither", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "pre_emphasis", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_min", false, &x))) return st;
    if ((st = tr_gguf_req_f32_finite(f, FK "f_max", false, &x))) return st;
    if ((st = tr_gguf_opt_str_in(f, FK "pad_mode", (const char *const[]){"reflect", NULL})))
        return st;
    if ((st = tr_gguf_opt_str_in(f, FK "mel_norm", (const char *const[]){"slaney", NULL})))
        return st;
    bool center = true;
    if ((st = tr_gguf_opt_bool(f, FK "center", true, &center))) return st;
#undef FK
    if (!center) {
        TR_ERROR(WHO ": stt.frontend.center = false is not supported (§4 centres every frame)");
        return ERR_GGUF;
    }
    tr_mel_config_whisper(&m->mel, m->hp.n_mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    if (m->mel.normalize != TR_NORM_GLOBAL || m->mel.sample_rate != 16000 ||
        m->mel.n_fft != m->mel.win_length || m->mel.n_fft % 2 ||
        m->mel.n_fft / 2 > m->mel.hop_length * 8) {
        TR_ERROR(WHO ": the front end must be a global-normalised 16 kHz mel with win_length = "
                     "n_fft (even)");
        return ERR_GGUF;
    }
    /* the family frames the centred STFT itself (vxr_enc.c): windows are cut from the padded
     * signal, so the config runs uncentred */
    m->mel.pad_mode = TR_PAD_NONE;
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/voxtral_realtime.md §2.1 tokenizer and ids ---- */

static transcribe_status read_tokenizer(const gguf_file *f, vxr_model *m) {
    transcribe_status st;
    const int V = m->lm.n_vocab;
    vxr_hparams *h = &m->hp;
    if ((st = tr_tokenizer_load_gpt2(f, WHO, V, &m->tok, &h->eos))) return st;
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.bos_token_id", V, &h->bos))) return st;
    if (h->bos < 0) {
        TR_ERROR(WHO ": tokenizer.ggml.bos_token_id is required");
        return ERR_GGUF;
    }
    if ((st = tr_gguf_opt_u32(f, "stt.voxtral_realtime.streaming_pad_token_id", 32, 0, V - 1,
                              &h->pad)))
        return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", 4096, k_lang, VXR_N_LANG, &m->lang,
                                    &m->n_lang)))
        return st;
    bool b;
    if ((st = tr_gguf_opt_bool(f, "stt.capability.lang_detect", true, &b)) ||
        (st = tr_gguf_opt_bool(f, "stt.capability.translate", false, &b)) ||
        (st = tr_gguf_opt_bool(f, "stt.capability.streaming", true, &b)))
        return st;
    const char *variant = NULL;
    if ((st = tr_gguf_opt_str(f, "stt.variant", NULL, &variant))) return st;
    m->variant = strdup(variant && *variant ? variant : "voxtral-mini-4b-realtime-2602");
    return m->variant ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- docs/formats/voxtral_realtime.md §3 tensors ---- */

static const float *vec(const gguf_file *f, const char *name, int64_t n, bool *ok) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = tr_gguf_require_tensor(f, name, TR_TYPES_F32, 1, ne);
    if (!t) *ok = false;
    return t ? (const float *)t->data : NULL;
}

static const tr_tensor *mat(const gguf_file *f, const char *name, int64_t in, int64_t out,
                            bool *ok) {
    const int64_t ne[2] = {in, out};
    const tr_tensor *t = tr_gguf_require_tensor(f, name, TR_TYPES_LINEAR, 2, ne);
    if (!t) *ok = false;
    return t;
}

/* A conv kernel ne {3, c_in, c_out} viewed as the linear ne {3·c_in, c_out} over im2col rows
 * (column ci·3 + j, docs/formats/voxtral_realtime.md §5). */
static bool conv(const gguf_file *f, const char *name, int64_t c_in, int64_t c_out, tr_tensor *v) {
    const int64_t ne[3] = {3, c_in, c_out};
    const tr_tensor *t = tr_gguf_require_tensor(f, name, TR_TYPES_CONV, 3, ne);
    if (!t) return false;
    *v = *t;
    v->n_dims = 2;
    v->ne[0] = 3 * c_in;
    v->ne[1] = c_out;
    v->ne[2] = v->ne[3] = 1;
    v->nb1 = tr_row_bytes(t->type, v->ne[0]);
    return true;
}

static bool same_type(const tr_tensor *a, const tr_tensor *b, const char *what, int l) {
    if (!a || !b || a->type == b->type) return true;
    TR_ERROR(WHO ": %s block %d: ffn.gate and ffn.up have different types", what, l);
    return false;
}

static transcribe_status read_tensors(const gguf_file *f, vxr_model *m) {
    const vxr_hparams *h = &m->hp;
    const int64_t d = h->enc_d, A = (int64_t)h->enc_heads * h->enc_hd, F = h->enc_ffn,
                  D = m->lm.d_model;
    bool ok = true;
    m->inv_freq = vec(f, "dec.time_embed.inv_freq", D / 2, &ok);
    if (!conv(f, "enc.conv.0.weight", h->n_mels, d, &m->conv0v)) ok = false;
    m->conv0_b = vec(f, "enc.conv.0.bias", d, &ok);
    if (!conv(f, "enc.conv.1.weight", d, d, &m->conv1v)) ok = false;
    m->conv1_b = vec(f, "enc.conv.1.bias", d, &ok);
    m->enc_norm = vec(f, "enc.final_norm.weight", d, &ok);
    if (!ok) return ERR_GGUF;
    m->enc = calloc((size_t)h->enc_layers, sizeof *m->enc);
    if (!m->enc) return TRANSCRIBE_ERR_OOM;
    for (int l = 0; l < h->enc_layers && ok; l++) {
        char n[96];
        vxr_enc_block *b = &m->enc[l];
#define NM(s) (snprintf(n, sizeof n, "enc.blocks.%d." s, l), n)
        b->norm_attn = vec(f, NM("norm_attn.weight"), d, &ok);
        b->wq = mat(f, NM("attn.q.weight"), d, A, &ok);
        b->bq = vec(f, NM("attn.q.bias"), A, &ok);
        b->wk = mat(f, NM("attn.k.weight"), d, A, &ok);
        b->wv = mat(f, NM("attn.v.weight"), d, A, &ok);
        b->bv = vec(f, NM("attn.v.bias"), A, &ok);
        b->wo = mat(f, NM("attn.out.weight"), A, d, &ok);
        b->bo = vec(f, NM("attn.out.bias"), d, &ok);
        b->norm_ffn = vec(f, NM("norm_ffn.weight"), d, &ok);
        b->gate = mat(f, NM("ffn.gate.weight"), d, F, &ok);
        b->up = mat(f, NM("ffn.up.weight"), d, F, &ok);
        b->down = mat(f, NM("ffn.down.weight"), F, d, &ok);
        b->bd = vec(f, NM("ffn.down.bias"), d, &ok);
#undef NM
        if (ok && !same_type(b->gate, b->up, "encoder", l)) ok = false;
    }
    if (!ok) return ERR_GGUF;
    m->proj1 = mat(f, "proj.linear_1.weight", d * h->ds, D, &ok);
    m->proj2 = mat(f, "proj.linear_2.weight", D, D, &ok);
    if (!ok) return ERR_GGUF;
    transcribe_status st =
        tr_clm_load_weights(f, WHO, &m->lm, true, VXR_TYPES_ANY, &m->lm_blocks, &m->lm_w);
    if (st != TRANSCRIBE_OK) return st;
    const int L = m->lm.n_layer;
    m->ada1 = calloc((size_t)L, sizeof *m->ada1);
    m->ada2 = calloc((size_t)L, sizeof *m->ada2);
    if (!m->ada1 || !m->ada2) return TRANSCRIBE_ERR_OOM;
    for (int l = 0; l < L && ok; l++) {
        char n[96];
        snprintf(n, sizeof n, "dec.blocks.%d.ada.linear_1.weight", l);
        m->ada1[l] = mat(f, n, D, h->ada_hidden, &ok);
        snprintf(n, sizeof n, "dec.blocks.%d.ada.linear_2.weight", l);
        m->ada2[l] = mat(f, n, h->ada_hidden, D, &ok);
    }
    return ok ? TRANSCRIBE_OK : ERR_GGUF;
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    vxr_model *m = model;
    transcribe_status st;
    if ((st = read_hparams(f, m))) return st;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_tokenizer(f, m))) return st;
    if ((st = read_tensors(f, m))) return st;
    TR_INFO(WHO ": loaded %s (encoder %d x %d, LM %d x %d, heads %d/%d, vocab %d, delay %d)",
            m->variant, m->hp.enc_layers, m->hp.enc_d, m->lm.n_layer, m->lm.d_model, m->lm.n_head,
            m->lm.n_head_kv, m->lm.n_vocab, m->hp.default_delay);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(vxr, WHO, load_gguf)

void tr_vxr_model_free(vxr_model *m) {
    if (!m) return;
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->enc, m->lm_blocks, m->ada1, m->ada2, m->variant, m);
}

void tr_vxr_model_describe(const vxr_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c =
        tr_model_desc_begin(desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant,
                            TRANSCRIBE_TIMESTAMPS_NONE /* docs/formats/voxtral_realtime.md §7 */);
    c->supports_language_detect =
        false; /* docs/formats/voxtral_realtime.md §6.5: the model reports no language */
    c->supports_spec_decode = true; /* single runs: the causal LM's tr_clm_greedy */
    c->supports_streaming = true;   /* docs/formats/voxtral_realtime.md §8 */
    c->max_audio_ms = 0;            /* docs/formats/voxtral_realtime.md §8: unbounded */
    desc->tokenizer = tr_tokenizer_can_encode(m->tok) ? m->tok : NULL;
}
