/* Granite Speech NAR loader: every key of docs/formats/granite_nar.md §2 with its exact type (a
 * present key of another type fails the load, except bpe_blank_id, §2.4), the cross-field
 * checks of §9, the tensors of §3 by exact shape and type class (the Conformer through
 * nn/granite_conformer.h, the LM through the shared causal-LM loader), the tokenizer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/granite_nar/granite_nar.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/vec.h"

#define WHO          "granite_nar"
#define ERR_GGUF     TRANSCRIBE_ERR_GGUF
#define GN_MAX_STRS  4096
#define GN_TYPES_QRY ((1u << TR_F32) | (1u << TR_F16) | (1u << TR_BF16))

/* ---- docs/formats/granite_nar.md §2.4 encoder ---- */

static transcribe_status read_encoder_keys(const gguf_file *f, gn_model *m) {
    transcribe_status st;
#define EK "stt.granite_nar.encoder."
    if ((st = tr_gc_read_keys(f, EK, WHO, &m->enc))) return st;
    int self_cond;
    const tr_gguf_u32_key extra[] = {
        {"bpe_output_dim", 0, 1 << 24, &m->bpe_dim},
        {"bpe_pool_window", 1, 1 << 16, &m->pool_window},
        {"self_cond_layer", 0, 1 << 16,
         &self_cond}, /* read, not used (docs/formats/granite_nar.md §2.4) */
    };
    if ((st = tr_gguf_req_u32_keys(f, EK, extra, sizeof extra / sizeof *extra))) return st;
    /* absent or wrongly typed → 0 (the old snapshot's scheme) */
    uint32_t blank = 0;
    if (tr_gguf_get_u32(f, EK "bpe_blank_id", &blank) < 0) {
        TR_WARN(WHO ": " EK "bpe_blank_id is not UINT32; using 0 as upstream does");
        blank = 0;
    }
    if (blank > (1u << 24)) {
        TR_ERROR(WHO ": " EK "bpe_blank_id %u is out of range", blank);
        return ERR_GGUF;
    }
    m->bpe_blank = (int)blank;
    const int32_t *li = NULL;
    int64_t n = 0;
    if ((st = tr_gguf_opt_arr_i32(f, EK "layer_indices", 1, GN_MAX_CAP, &li, &n))) return st;
    const int32_t last = -1;
    if (!li) {
        li = &last;
        n = 1;
    }
    /* 1-based over block outputs; negative from the end; 0 = after block 0
     * (docs/formats/granite_nar.md §5.1) */
    for (int64_t i = 0; i < n; i++) {
        const int L = m->enc.n_layer, v = li[i];
        const int b = v > 0 ? v - 1 : v < 0 ? L + v : 0;
        if (b < 0 || b >= L)
            return tr_gguf_key_error(EK "layer_indices", "ARRAY[INT32]",
                                     "entry %d is outside the %d blocks", (int)v, L);
        m->cap_block[i] = b;
    }
    m->n_cap = (int)n;
#undef EK
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/granite_nar.md §2.5 projector ---- */

static transcribe_status read_projector_keys(const gguf_file *f, gn_model *m) {
    transcribe_status st;
    gn_proj_hparams *p = &m->proj;
    int ratio;
    bool unused;
#define PK "stt.granite_nar.projector."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 64, &p->n_layer},
        {"hidden", 1, 1 << 16, &p->d},
        {"mlp_ratio", 1, 64, &ratio},
        {"n_heads", 1, 1024, &p->n_head},
        {"encoder_dim", 1, 1 << 16, &p->enc_d},
        {"num_encoder_layers", 1, GN_MAX_CAP, &p->n_enc_layers},
        {"block_size", 1, 1 << 12, &p->block},
        {"downsample_rate", 1, 1 << 12, &p->downsample},
        {"llm_dim", 1, 1 << 16, &p->llm_dim},
    };
    if ((st = tr_gguf_req_u32_keys(f, PK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_f32_finite(f, PK "layernorm_eps", true, &p->eps))) return st;
    if ((st = tr_gguf_opt_bool(f, PK "attn_bias", true, &unused))) return st;
    if ((st = tr_gguf_opt_bool(f, PK "mlp_bias", true, &unused))) return st;
#undef PK
    if ((st = tr_gguf_opt_bool(f, "stt.granite_nar.scale_projected_embeddings", true, &unused)))
        return st;
    p->d_ffn = p->d * ratio;
    if (p->d % p->n_head) {
        TR_ERROR(WHO ": projector hidden %d is not divisible by %d heads", p->d, p->n_head);
        return ERR_GGUF;
    }
    if (p->n_enc_layers != m->n_cap) {
        TR_ERROR(WHO ": projector num_encoder_layers %d != %d encoder layer_indices",
                 p->n_enc_layers, m->n_cap);
        return ERR_GGUF;
    }
    if (p->enc_d != m->enc.d) {
        TR_ERROR(WHO ": projector encoder_dim %d != encoder hidden %d", p->enc_d, m->enc.d);
        return ERR_GGUF;
    }
    if (p->block % p->downsample) {
        TR_ERROR(WHO ": projector block_size %d is not a multiple of downsample_rate %d", p->block,
                 p->downsample);
        return ERR_GGUF;
    }
    p->n_query = p->block / p->downsample;
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/granite_nar.md §2.6 text LM ---- */

static transcribe_status read_text_keys(const gguf_file *f, gn_model *m) {
    transcribe_status st;
    tr_clm_hparams *hp = &m->lm;
    memset(hp, 0, sizeof *hp);
    tr_clm_hparams_defaults(hp);
    int ids[3];
    float emb, lsc, att, res;
    bool tied;
    const char *act;
#define TK "stt.granite_nar.text."
    const tr_gguf_u32_key sizes[] = {
        {"n_layers", 1, 1024, &hp->n_layer},      {"hidden", 1, 1 << 16, &hp->d_model},
        {"intermediate", 1, 1 << 20, &hp->d_ffn}, {"n_heads", 1, 1024, &hp->n_head},
        {"n_kv_heads", 1, 1024, &hp->n_head_kv},  {"head_dim", 2, 4096, &hp->head_dim},
    };
    if ((st = tr_gguf_req_u32_keys(f, TK, sizes, sizeof sizes / sizeof *sizes))) return st;
    if ((st = tr_gguf_req_str(f, TK "hidden_act", &act))) return st; /* SiLU is fixed */
    if ((st = tr_gguf_req_f32_finite(f, TK "rms_norm_eps", true, &hp->eps))) return st;
    if ((st = tr_gguf_req_f32_finite(f, TK "rope_theta", true, &hp->rope_theta))) return st;
    if ((st = tr_gguf_req_u32(f, TK "max_position_embeddings", 1, INT32_MAX, &m->max_pos)))
        return st;
    if ((st = tr_gguf_opt_bool(f, TK "tie_word_embeddings", true, &tied))) return st;
    if ((st = tr_gguf_req_u32(f, TK "vocab_size", 1, 1 << 24, &hp->n_vocab))) return st;
    if ((st = tr_gguf_req_f32_finite(f, TK "embedding_multiplier", false, &emb)) ||
        (st = tr_gguf_req_f32_finite(f, TK "logits_scaling", false, &lsc)) ||
        (st = tr_gguf_req_f32_finite(f, TK "attention_multiplier", true, &att)) ||
        (st = tr_gguf_req_f32_finite(f, TK "residual_multiplier", false, &res)))
        return st;
    if ((st = tr_gguf_req_u32(f, TK "bos_id", 0, INT32_MAX, &ids[0])) ||
        (st = tr_gguf_req_u32(f, TK "eos_id", 0, INT32_MAX, &ids[1])) ||
        (st = tr_gguf_req_u32(f, TK "pad_id", 0, INT32_MAX, &ids[2])))
        return st;
#undef TK
    hp->embedding_mult = emb;
    hp->attention_mult = att;
    hp->residual_mult = res;
    /* ÷ logits_scaling only when > 0 (docs/formats/granite_nar.md §6.3) */
    hp->logits_scale = lsc > 0.0f ? lsc : 1.0f;
    if (hp->n_head * hp->head_dim <= 0 || hp->n_head % hp->n_head_kv || hp->head_dim % 2) {
        TR_ERROR(WHO ": text heads %d/%d x %d do not fit", hp->n_head, hp->n_head_kv, hp->head_dim);
        return ERR_GGUF;
    }
    if (m->proj.llm_dim != hp->d_model) {
        TR_ERROR(WHO ": projector llm_dim %d != text hidden %d", m->proj.llm_dim, hp->d_model);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* ---- docs/formats/granite_nar.md §2.7 front end ---- */

static transcribe_status read_frontend(const gguf_file *f, gn_model *m) {
    transcribe_status st;
    const char *s;
#define FK "stt.frontend."
    const int n_mels = m->enc.in_dim % 2 ? 0 : m->enc.in_dim / 2; /* two stacked frames */
    if ((st = tr_mel_check_stft_keys(f, WHO, n_mels))) return st;
    if ((st = tr_gguf_req_str(f, FK "window", &s))) return st;
    if ((st = tr_gguf_req_str(f, FK "normalize", &s))) return st;
    if ((st = tr_gguf_opt_str(f, FK "pad_mode", "reflect", &s))) return st;
    if ((st = tr_gguf_opt_str(f, FK "mel_norm", "htk", &s))) return st;
#undef FK
    tr_mel_config_whisper(&m->mel, n_mels);
    if ((st = tr_mel_config_from_gguf(&m->mel, f))) return st;
    if (!m->mel.filterbank) {
        /* docs/formats/granite_nar.md §2.7: upstream would compute a Slaney bank here; the model
         * was trained on HTK filters, so compute those */
        m->mel.mel_scale = TR_MELSCALE_HTK;
        m->mel.mel_area_norm = false;
        TR_WARN(WHO ": no frontend.mel_filterbank in the file; computing the HTK bank");
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_caps(const gguf_file *f, gn_model *m) {
    transcribe_status st;
    bool b;
    const char *const caps[] = {"stt.capability.translate", "stt.capability.lang_detect",
                                "stt.capability.word_timestamps",
                                "stt.capability.speaker_diarization", "stt.capability.streaming"};
    for (size_t i = 0; i < sizeof caps / sizeof *caps; i++)
        if ((st = tr_gguf_opt_bool(f, caps[i], false, &b))) return st;
    if ((st = tr_gguf_opt_strv_copy(f, "general.languages", GN_MAX_STRS, NULL, 0, &m->lang,
                                    &m->n_lang)))
        return st;
    const char *const *chars = NULL;
    int64_t n_chars = 0; /* docs/formats/granite_nar.md §2.3: loaded, never used */
    if ((st = tr_gguf_opt_arr_str(f, "stt.granite_nar.ctc_chars", 0, 1 << 20, &chars, &n_chars)))
        return st;
    const char *variant = NULL;
    if ((st = tr_gguf_opt_str(f, "stt.variant", "granite-speech-nar", &variant))) return st;
    m->variant = strdup(variant);
    return m->variant ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- docs/formats/granite_nar.md §3 tensors ---- */

typedef struct finder {
    const gguf_file *f;
    char name[256];
    bool bad;
} finder;

static const char *nm(finder *fd, const char *fmt, int i, const char *what) {
    char p[64];
    snprintf(p, sizeof p, fmt, i);
    snprintf(fd->name, sizeof fd->name, "%s%s", p, what);
    return fd->name;
}

static const tr_tensor *need(finder *fd, const char *name, uint32_t types, int n_dims,
                             const int64_t *ne) {
    const tr_tensor *t = tr_gguf_require_tensor(fd->f, name, types, n_dims, ne);
    if (!t) fd->bad = true;
    return t;
}

static const float *vec(finder *fd, const char *name, int64_t n) {
    const int64_t ne[1] = {n};
    const tr_tensor *t = need(fd, name, TR_TYPES_F32, 1, ne);
    return t ? (const float *)t->data : NULL;
}

/* "<fmt % i><stem>.weight" {in, out} and "<stem>.bias" [out] */
static void lin(finder *fd, tr_nn_linear *l, const char *fmt, int i, const char *stem, int64_t in,
                int64_t out) {
    char s[96];
    const int64_t ne[2] = {in, out};
    snprintf(s, sizeof s, "%s.weight", stem);
    l->w = need(fd, nm(fd, fmt, i, s), TR_TYPES_LINEAR, 2, ne);
    snprintf(s, sizeof s, "%s.bias", stem);
    l->b = vec(fd, nm(fd, fmt, i, s), out);
}

static void norm(finder *fd, tr_nn_norm *n, const char *fmt, int i, const char *stem, int64_t d) {
    char s[96];
    snprintf(s, sizeof s, "%s.weight", stem);
    n->w = vec(fd, nm(fd, fmt, i, s), d);
    snprintf(s, sizeof s, "%s.bias", stem);
    n->b = vec(fd, nm(fd, fmt, i, s), d);
}

/* A [d, rows, 1] table (3-D as converted, 2-D after quantizing: the check treats trailing 1s
 * alike) widened to F32 [rows][d] (owned). */
static float *table(finder *fd, const char *name, int64_t d, int64_t rows) {
    const int64_t ne[3] = {d, rows, 1};
    const tr_tensor *t = need(fd, name, GN_TYPES_QRY, 3, ne);
    if (!t) return NULL;
    float *out = malloc((size_t)(d * rows) * sizeof(float));
    int32_t *ids = malloc((size_t)rows * sizeof(int32_t));
    if (out && ids) {
        for (int r = 0; r < rows; r++) ids[r] = r;
        tr_get_rows(t, ids, (int)rows, out);
    }
    free(ids);
    return out;
}

static transcribe_status read_projector(finder *fd, gn_model *m) {
    const gn_proj_hparams *p = &m->proj;
    const int64_t P = p->d;
    for (int j = 0; j < m->n_cap; j++)
        norm(fd, &m->prj_ln[j], "prj.layer_norms.%d", j, "", p->enc_d);
    lin(fd, &m->layer_projector, "prj.", 0, "layer_projector", (int64_t)m->n_cap * p->enc_d, P);
    norm(fd, &m->out_norm, "prj.", 0, "out_norm", P);
    lin(fd, &m->out_linear, "prj.", 0, "out_linear", P, m->lm.d_model);
    if (fd->bad) return ERR_GGUF;
    m->pl = calloc((size_t)p->n_layer, sizeof *m->pl);
    if (!m->pl) return TRANSCRIBE_ERR_OOM;
    const char *B = "prj.blocks.%d.";
    for (int i = 0; i < p->n_layer; i++) {
        gn_proj_layer *l = &m->pl[i];
        norm(fd, &l->norm_attn, B, i, "norm_attn", P);
        lin(fd, &l->q, B, i, "cross_attn_q", P, P);
        lin(fd, &l->k, B, i, "cross_attn_k", P, P);
        lin(fd, &l->v, B, i, "cross_attn_v", P, P);
        lin(fd, &l->o, B, i, "cross_attn_o", P, P);
        norm(fd, &l->norm_ffn, B, i, "norm_ffn", P);
        lin(fd, &l->fc1, B, i, "ffn_fc1", P, p->d_ffn);
        lin(fd, &l->fc2, B, i, "ffn_fc2", p->d_ffn, P);
    }
    if (fd->bad) return ERR_GGUF;
    m->query = table(fd, "prj.query", P, p->n_query);
    if (fd->bad) return ERR_GGUF;
    m->win_pos = table(fd, "prj.window_positions", P, p->block);
    if (fd->bad) return ERR_GGUF;
    return m->query && m->win_pos ? TRANSCRIBE_OK : TRANSCRIBE_ERR_OOM;
}

/* ---- model ---- */

static transcribe_status load_gguf(const gguf_file *f, void *model) {
    gn_model *m = model;
    transcribe_status st;
    if ((st = tr_gguf_req_str_is(f, "general.architecture", "granite_speech_nar", NULL))) return st;
    if ((st = read_encoder_keys(f, m))) return st;
    if ((st = read_projector_keys(f, m))) return st;
    if ((st = read_text_keys(f, m))) return st;
    if ((st = read_frontend(f, m))) return st;
    if ((st = read_caps(f, m))) return st;
    /* docs/formats/granite_nar.md §9: a tokenizer model other than gpt2 is NOT_IMPLEMENTED (absent
     * / mistyped: GGUF) */
    const char *tm = NULL;
    if (tr_gguf_get_str(f, "tokenizer.ggml.model", &tm) == 1 && strcmp(tm, "gpt2") != 0) {
        TR_ERROR(WHO ": tokenizer.ggml.model '%s' is not implemented (gpt2 expected)", tm);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }
    if ((st = tr_tokenizer_load_gpt2(f, WHO, m->lm.n_vocab, &m->tok, &m->eos))) return st;
    /* docs/formats/granite_nar.md §6.1: emitted ids are channel − shift; they must be LM ids */
    const int shift = m->bpe_blank == 0 ? 1 : 0;
    if (m->bpe_dim > 0 && m->bpe_dim - shift > m->lm.n_vocab) {
        TR_ERROR(WHO ": bpe_output_dim %d (blank id %d) maps past the %d-token vocabulary",
                 m->bpe_dim, m->bpe_blank, m->lm.n_vocab);
        return ERR_GGUF;
    }
    if ((st = tr_gc_load(f, WHO, &tr_gc_names_granite_nar, &m->enc, &m->enc_w))) return st;
    finder fd = {.f = f};
    if (m->bpe_dim > 0) {
        lin(&fd, &m->ctc_bpe, "enc.", 0, "ctc_bpe", m->enc.d, m->bpe_dim);
        if (fd.bad) return ERR_GGUF;
    }
    if ((st = read_projector(&fd, m))) return st;
    if ((st = tr_clm_load_weights(f, WHO, &m->lm, true, TR_TYPES_LINEAR, &m->lm_blocks, &m->lm_w)))
        return st;
    /* docs/formats/granite_nar.md §8: floor((max_pos − 256) / n_query) windows of block·2·hop */
    const int64_t windows = ((int64_t)m->max_pos - 256) / m->proj.n_query;
    m->max_audio_ms =
        windows > 0 ? windows * m->proj.block * 2 * m->mel.hop_length * 1000 / m->mel.sample_rate
                    : 0;
    TR_INFO(WHO ": loaded %s (encoder %d x %d, BPE head %d, projector %d x %d, LM %d x %d, vocab "
                "%d)",
            m->variant, m->enc.n_layer, m->enc.d, m->bpe_dim, m->proj.n_layer, m->proj.d,
            m->lm.n_layer, m->lm.d_model, m->lm.n_vocab);
    return TRANSCRIBE_OK;
}

TR_FAMILY_GGUF_LOAD(gn, WHO, load_gguf)

void tr_gn_model_free(gn_model *m) {
    if (!m) return;
    tr_gc_free(&m->enc, &m->enc_w);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    TR_FREE_ALL(m->query, m->win_pos, m->pl, m->lm_blocks, m->variant, m);
}

void tr_gn_model_describe(const gn_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_NONE);
    c->max_audio_ms = m->max_audio_ms;
    desc->bounded_output = true; /* one pass over a bounded context, no long form */
    desc->tokenizer = tr_tokenizer_can_encode(m->tok) ? m->tok : NULL;
}
