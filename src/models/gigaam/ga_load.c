/* GigaAM GGUF loader: head kind, encoder, head and front-end keys
 * (docs/formats/gigaam.md §2), the tokenizer, every §3 tensor checked against the
 * hyper-parameters, languages and capabilities (§8). Every failure is
 * TRANSCRIBE_ERR_GGUF with a log line naming the key or tensor (or
 * NOT_IMPLEMENTED for an unknown tokenizer model) and frees what was
 * loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/gigaam/gigaam.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define EK       "stt.gigaam.encoder."
#define FK       "stt.frontend."

/* docs/formats/gigaam.md §2.3: every key required, strictly typed. */
static transcribe_status load_encoder_keys(const gguf_file *g, ga_model *m) {
    ga_hparams *hp = &m->hp;
    int subs_factor = 0, pos_max = 0;
    const tr_gguf_u32_key keys[] = {
        {"n_layers", 1, 4096, &hp->n_layers},
        {"d_model", 1, 65536, &hp->d_model},
        {"n_heads", 1, 4096, &hp->n_heads},
        {"d_ff", 1, 1 << 20, &hp->d_ff},
        {"conv_kernel", 1, 4095, &hp->conv_kernel},
        {"subsampling_factor", 1, 64, &subs_factor},
        {"subs_kernel_size", 1, 4095, &hp->subs_kernel},
        {"pos_emb_max_len", 0, INT32_MAX, &pos_max},
        {"feat_in", 1, 4096, &hp->feat_in},
    };
    transcribe_status st = tr_gguf_req_u32_keys(g, EK, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    if ((st = tr_gguf_req_str_is(g, EK "self_attention_model", "rotary", NULL)) ||
        (st = tr_gguf_req_str_is(g, EK "conv_norm_type", "layer_norm", NULL)))
        return st;
    if (hp->d_model % hp->n_heads != 0)
        return tr_gguf_key_error(EK "n_heads", "UINT32", "%d does not divide d_model %d",
                                 hp->n_heads, hp->d_model);
    if ((hp->d_model / hp->n_heads) % 2 != 0)
        return tr_gguf_key_error(EK "n_heads", "UINT32",
                                 "head width %d is odd (rotary pairs need it even)",
                                 hp->d_model / hp->n_heads);
    /* padding (k - 1) / 2 keeps the frame count (depthwise) and gives
     * ceil(T / 2) (subsampling) only for odd kernels */
    if (hp->conv_kernel % 2 == 0)
        return tr_gguf_key_error(EK "conv_kernel", "UINT32", "%d is even (must be odd)",
                                 hp->conv_kernel);
    if (hp->subs_kernel % 2 == 0)
        return tr_gguf_key_error(EK "subs_kernel_size", "UINT32", "%d is even (must be odd)",
                                 hp->subs_kernel);
    /* read, not used (docs/formats/gigaam.md §2.3): two stride-2 convs, rotary base 5000 */
    if (subs_factor != 4)
        TR_WARN("gigaam: subsampling_factor %d ignored (always two stride-2 convs)", subs_factor);
    m->dims = (tr_cf_dims){.d_model = hp->d_model,
                           .n_head = hp->n_heads,
                           .d_ff = hp->d_ff,
                           .kernel = hp->conv_kernel,
                           .ln_eps = 1e-5f,
                           .ff_scale = 0.5f,
                           .rot = TR_CF_ROT_INPUT,
                           .rot_theta = GA_ROPE_BASE};
    return TRANSCRIBE_OK;
}

/* docs/formats/gigaam.md §2.1 / §2.4: the head kind and its keys. */
static transcribe_status load_head_keys(const gguf_file *g, ga_model *m) {
    ga_hparams *hp = &m->hp;
    const char *kind = NULL;
    transcribe_status st = tr_gguf_req_str(g, "stt.gigaam.head_kind", &kind);
    if (st) return st;
    if (!strcmp(kind, "ctc")) {
        m->head = GA_HEAD_CTC;
        int feat = 0;
        if ((st = tr_gguf_req_u32(g, "stt.gigaam.head.feat_in", 1, 65536, &feat)) ||
            (st = tr_gguf_req_u32(g, "stt.gigaam.head.num_classes", 2, 1 << 20, &hp->n_classes)))
            return st;
        if (feat != hp->d_model)
            return tr_gguf_key_error("stt.gigaam.head.feat_in", "UINT32",
                                     "%d is not the encoder's d_model %d", feat, hp->d_model);
    } else if (!strcmp(kind, "rnnt")) {
        m->head = GA_HEAD_RNNT;
        int layers = 0, vocab = 0;
        const tr_gguf_u32_key keys[] = {
            {"predictor.hidden", 1, 65536, &hp->pred_hidden},
            {"predictor.n_layers", 1, 64, &layers},
            {"predictor.vocab", 2, 1 << 20, &vocab},
            {"joint.hidden", 1, 65536, &hp->joint_hidden},
            {"joint.num_classes", 2, 1 << 20, &hp->n_classes},
        };
        if ((st = tr_gguf_req_u32_keys(g, "stt.gigaam.", keys, sizeof keys / sizeof keys[0])))
            return st;
        if (vocab != hp->n_classes)
            return tr_gguf_key_error("stt.gigaam.predictor.vocab", "UINT32",
                                     "%d is not joint.num_classes %d", vocab, hp->n_classes);
        /* docs/formats/gigaam.md §11 (item 2): upstream loads these and decodes as if they were
         * 1 and relu; a file that asks for anything else is refused here */
        if (layers != 1)
            return tr_gguf_key_error("stt.gigaam.predictor.n_layers", "UINT32",
                                     "%d LSTM layers (the decoder has one)", layers);
        if ((st = tr_gguf_req_str_is(g, "stt.gigaam.joint.activation", "relu", NULL))) return st;
    } else {
        return tr_gguf_key_error("stt.gigaam.head_kind", "STRING", "\"%s\" is not rnnt or ctc",
                                 kind);
    }
    hp->blank = hp->n_classes - 1;
    return TRANSCRIBE_OK;
}

/* docs/formats/gigaam.md §2.5 / §4: every key required except center; the strings are
 * type-checked only (the baked window and filterbank are what runs). */
static transcribe_status load_frontend(const gguf_file *g, ga_model *m) {
    static const char *const strs[] = {"type", "window", "normalize", "mel_norm"};
    static const char *const f32s[] = {"dither", "pre_emphasis",  "f_min",
                                       "f_max",  "log_clamp_min", "log_clamp_max"};
    char key[64];
    const char *s;
    float f;
    bool center = false;
    transcribe_status st;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        snprintf(key, sizeof key, FK "%s", strs[i]);
        if ((st = tr_gguf_req_str(g, key, &s))) return st;
    }
    for (size_t i = 0; i < sizeof f32s / sizeof f32s[0]; i++) {
        snprintf(key, sizeof key, FK "%s", f32s[i]);
        if ((st = tr_gguf_req_f32(g, key, &f))) return st;
    }
    tr_mel_config *c = &m->mel;
    memset(c, 0, sizeof *c);
    if ((st = tr_gguf_req_u32(g, FK "num_mels", 1, 4096, &c->n_mels)) ||
        (st = tr_gguf_req_u32(g, FK "sample_rate", 16000, 16000, &c->sample_rate)) ||
        (st = tr_gguf_req_u32(g, FK "n_fft", 2, 1 << 16, &c->n_fft)) ||
        (st = tr_gguf_req_u32(g, FK "win_length", 1, 1 << 16, &c->win_length)) ||
        (st = tr_gguf_req_u32(g, FK "hop_length", 1, 1 << 16, &c->hop_length)) ||
        (st = tr_gguf_opt_bool(g, FK "center", false, &center)))
        return st;
    if (c->n_fft % 2 != 0) return tr_gguf_key_error(FK "n_fft", "UINT32", "%d is odd", c->n_fft);
    if (c->win_length > c->n_fft)
        return tr_gguf_key_error(FK "win_length", "UINT32", "%d exceeds n_fft %d", c->win_length,
                                 c->n_fft);
    /* docs/formats/gigaam.md §11 (item 3): upstream never compares the two */
    if (c->n_mels != m->hp.feat_in)
        return tr_gguf_key_error(FK "num_mels", "UINT32", "%d is not the encoder's feat_in %d",
                                 c->n_mels, m->hp.feat_in);
    if (center) TR_WARN("gigaam: stt.frontend.center = true ignored (frames are never centred)");
    /* docs/formats/gigaam.md §4: un-centred frames, no pre-emphasis, ln(clamp(E, 1e-9, 1e9)),
     * no normalisation; window and filterbank from the file (below) */
    c->type = TR_FRONTEND_MEL;
    c->pad_mode = TR_PAD_NONE;
    c->normalize = TR_NORM_NONE;
    c->mel_scale = TR_MELSCALE_HTK;
    c->f_min = 0.0f;
    c->f_max = 0.5f * (float)c->sample_rate;
    c->log = true;
    c->log_clamp_min = GA_LOG_MIN;
    return TRANSCRIBE_OK;
}

static transcribe_status load_tokenizer(const gguf_file *g, ga_model *m) {
    transcribe_status st = tr_tokenizer_from_gguf(g, &m->tok);
    if (st) return st;
    tr_tok_kind k = tr_tokenizer_kind(m->tok);
    if (k != TR_TOK_SPM_BPE && k != TR_TOK_SPM_UNIGRAM && k != TR_TOK_CHAR) {
        TR_ERROR("gigaam: tokenizer.ggml.model must be \"bpe\" (SentencePiece) or \"char\"");
        return ERR_GGUF;
    }
    m->spm = k != TR_TOK_CHAR;
    /* docs/formats/gigaam.md §11 (item 3): upstream does not compare the two; an emitted id past
     * the table would decode to nothing */
    int n = tr_tokenizer_n_vocab(m->tok);
    if (n != m->hp.n_classes) {
        TR_ERROR("gigaam: tokenizer.ggml.tokens has %d pieces, the head %d classes", n,
                 m->hp.n_classes);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* Widens a loaded weight to an owned F32 matrix (docs/formats/gigaam.md §3: the host
 * decoder dequantizes its weights, at load for the predictor and joint matrices read every
 * step, at use for the others: lazy). */
bool tr_ga_widen(const tr_tensor *t, int64_t in, int64_t out, bool fill, ga_mat *dst) {
    *dst = (ga_mat){.src = t, .in = in, .out = out};
    dst->data = malloc(sizeof(float) * (size_t)in * (size_t)out);
    if (!dst->data) return false;
    dst->t = (tr_tensor){.name = t->name,
                         .type = TR_F32,
                         .n_dims = 2,
                         .ne = {in, out, 1, 1},
                         .nb1 = sizeof(float) * (size_t)in,
                         .nbytes = sizeof(float) * (size_t)in * (size_t)out,
                         .data = dst->data};
    if (fill) tr_ga_widen_rows(dst, 0, out);
    return true;
}

void tr_ga_widen_rows(ga_mat *dst, int64_t r0, int64_t n) {
    const tr_tensor *t = dst->src;
    const int64_t in = dst->in;
    /* rows of `in` elements (the CTC kernel {1, d, C} has rows along ne[1]) */
    const size_t rb = tr_row_bytes(t->type, in);
    for (int64_t r = 0; r < n; r++)
        tr_dequantize_row(t->type, (const char *)t->data + (size_t)(r0 + r) * rb,
                          dst->data + (size_t)r * in, in);
}

static bool widen(const tr_tensor *t, int64_t in, int64_t out, ga_mat *dst) {
    return tr_ga_widen(t, in, out, true, dst);
}

/* the file's tensor, widened at use (tr_ga_widen) */
static bool lazy(const tr_tensor *t, int64_t in, int64_t out, ga_mat *dst) {
    *dst = (ga_mat){.src = t, .in = in, .out = out};
    return true;
}

static float *copy_vec(const float *src, int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)n);
    if (p) memcpy(p, src, sizeof(float) * (size_t)n);
    return p;
}

typedef struct ga_raw_head {
    const tr_tensor *ctc_w, *embed, *wx, *wh, *je, *jp, *jo;
    const float *ctc_b, *lstm_b, *je_b, *jp_b, *jo_b;
} ga_raw_head;

#define RH(f) offsetof(ga_raw_head, f)

static transcribe_status load_head(const tr_nn_wsrc *src, ga_model *m) {
    const ga_hparams *hp = &m->hp;
    const int64_t d = hp->d_model, C = hp->n_classes, h = hp->pred_hidden, hj = hp->joint_hidden;
    ga_raw_head r = {0};
    bool ok;
    if (m->head == GA_HEAD_CTC) {
        const tr_nn_wspec s[] = {
            {"head.ctc.weight", TR_NN_W_TENSOR, {1, d, C}, 3, TR_TYPES_CONV, RH(ctc_w)},
            {"head.ctc.bias", TR_NN_W_VEC, {C}, 1, 0, RH(ctc_b)},
        };
        if (!tr_nn_load_weights(src, s, 2, NULL, 0, true, &r)) return ERR_GGUF;
        if (!lazy(r.ctc_w, d, C, &m->ctc_w) || !(m->ctc_b = copy_vec(r.ctc_b, C)))
            return TRANSCRIBE_ERR_OOM;
        return TRANSCRIBE_OK;
    }
    const tr_nn_wspec s[] = {
        {"pred.embed.weight", TR_NN_W_TENSOR, {h, C}, 2, TR_TYPES_LINEAR, RH(embed)},
        {"pred.lstm.0.Wx", TR_NN_W_TENSOR, {h, 4 * h}, 2, TR_TYPES_LINEAR, RH(wx)},
        {"pred.lstm.0.Wh", TR_NN_W_TENSOR, {h, 4 * h}, 2, TR_TYPES_LINEAR, RH(wh)},
        {"pred.lstm.0.bias", TR_NN_W_VEC, {4 * h}, 1, 0, RH(lstm_b)},
        {"joint.enc.weight", TR_NN_W_TENSOR, {d, hj}, 2, TR_TYPES_LINEAR, RH(je)},
        {"joint.enc.bias", TR_NN_W_VEC, {hj}, 1, 0, RH(je_b)},
        {"joint.pred.weight", TR_NN_W_TENSOR, {h, hj}, 2, TR_TYPES_LINEAR, RH(jp)},
        {"joint.pred.bias", TR_NN_W_VEC, {hj}, 1, 0, RH(jp_b)},
        {"joint.out.weight", TR_NN_W_TENSOR, {hj, C}, 2, TR_TYPES_LINEAR, RH(jo)},
        {"joint.out.bias", TR_NN_W_VEC, {C}, 1, 0, RH(jo_b)},
    };
    ok = tr_nn_load_weights(src, s, sizeof s / sizeof s[0], NULL, 0, true, &r);
    if (!ok) return ERR_GGUF;
    if (!lazy(r.embed, h, C, &m->embed) || !widen(r.wx, h, 4 * h, &m->lstm_wx) ||
        !widen(r.wh, h, 4 * h, &m->lstm_wh) || !lazy(r.je, d, hj, &m->j_enc) ||
        !widen(r.jp, h, hj, &m->j_pred) || !widen(r.jo, hj, C, &m->j_out) ||
        !(m->lstm_b = copy_vec(r.lstm_b, 4 * h)) || !(m->j_enc_b = copy_vec(r.je_b, hj)) ||
        !(m->j_pred_b = copy_vec(r.jp_b, hj)) || !(m->j_out_b = copy_vec(r.jo_b, C)))
        return TRANSCRIBE_ERR_OOM;
    m->lstm = (tr_nn_lstm){&m->lstm_wx.t, &m->lstm_wh.t, m->lstm_b, (int)h, (int)h};
    return TRANSCRIBE_OK;
}
#undef RH

typedef struct ga_front {
    const float *fb, *win;
} ga_front;

static transcribe_status load_tensors(const gguf_file *g, ga_model *m) {
    const ga_hparams *hp = &m->hp;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    const int64_t d = hp->d_model, ks = hp->subs_kernel;
    ga_front fr = {0};
    const tr_nn_wspec front[] = {
        {"frontend.mel_filterbank",
         TR_NN_W_VEC,
         {m->mel.n_fft / 2 + 1, m->mel.n_mels},
         2,
         0,
         offsetof(ga_front, fb)},
        {"frontend.window", TR_NN_W_VEC, {m->mel.win_length}, 1, 0, offsetof(ga_front, win)},
    };
    bool ok = tr_nn_load_weights(&src, front, 2, NULL, 0, true, &fr);
    const tr_nn_wspec pre[] = {
        {"enc.pre_encode.conv.0.weight",
         TR_NN_W_TENSOR,
         {ks, hp->feat_in, d},
         3,
         TR_TYPES_CONV,
         offsetof(ga_model, sub0_w)},
        {"enc.pre_encode.conv.0.bias", TR_NN_W_VEC, {d}, 1, 0, offsetof(ga_model, sub0_b)},
        {"enc.pre_encode.conv.2.weight",
         TR_NN_W_TENSOR,
         {ks, d, d},
         3,
         TR_TYPES_CONV,
         offsetof(ga_model, sub2_w)},
        {"enc.pre_encode.conv.2.bias", TR_NN_W_VEC, {d}, 1, 0, offsetof(ga_model, sub2_b)},
    };
    ok = tr_nn_load_weights(&src, pre, 4, NULL, 0, true, m) && ok;
    if (!ok) return ERR_GGUF;
    m->mel.filterbank = fr.fb;
    m->mel.baked_window = fr.win;

    m->blocks = calloc((size_t)hp->n_layers, sizeof *m->blocks);
    if (!m->blocks) return TRANSCRIBE_ERR_OOM;
    tr_nn_wspec specs[TR_CF_NSPECS];
    char names[TR_CF_NSPECS][96];
    size_t ns = tr_cf_block_specs("enc.blocks.%d.", specs, names);
    const int64_t dims[4] = {d, hp->d_ff, hp->conv_kernel, 2 * d};
    if (!tr_nn_load_layers(&src, specs, ns, dims, hp->n_layers, true, m->blocks, sizeof *m->blocks))
        return ERR_GGUF;
    for (int i = 0; i < hp->n_layers; i++) {
        if (!tr_cf_block_prepare(&m->blocks[i], &m->dims)) return TRANSCRIBE_ERR_OOM;
        m->n_prepared = i + 1;
    }
    return load_head(&src, m);
}

static transcribe_status load_all(const gguf_file *g, void *model) {
    ga_model *m = model;
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str_is(g, "general.architecture", "gigaam", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(g, "stt.variant", "gigaam-v3-e2e-rnnt", &s))) return st;
    m->variant = s;
    static const char *const ru[] = {"ru"};
    if ((st = load_encoder_keys(g, m)) || (st = load_head_keys(g, m)) ||
        (st = load_frontend(g, m)) || (st = load_tokenizer(g, m)) ||
        (st = tr_gguf_opt_strv_copy(g, "general.languages", 4096, ru, 1, &m->lang, &m->n_lang)) ||
        (st = load_tensors(g, m)))
        return st;
    TR_INFO("gigaam: %s, %s head, %d layers, d_model %d, %d heads, %d classes (%s tokens)",
            m->variant, m->head == GA_HEAD_CTC ? "ctc" : "rnnt", m->hp.n_layers, m->hp.d_model,
            m->hp.n_heads, m->hp.n_classes, m->spm ? "SentencePiece" : "char");
    return TRANSCRIBE_OK;
}

static void mat_free(ga_mat *x) {
    free(x->data);
    x->data = NULL;
}

void tr_ga_model_free(ga_model *m) {
    if (!m) return;
    for (int i = 0; m->blocks && i < m->n_prepared; i++) tr_cf_block_free(&m->blocks[i]);
    free(m->blocks);
    ga_mat *mats[] = {&m->ctc_w, &m->embed,  &m->lstm_wx, &m->lstm_wh,
                      &m->j_enc, &m->j_pred, &m->j_out};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) mat_free(mats[i]);
    free(m->ctc_b);
    free(m->lstm_b);
    free(m->j_enc_b);
    free(m->j_pred_b);
    free(m->j_out_b);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

TR_FAMILY_GGUF_LOAD(ga, "gigaam", load_all)

/* docs/formats/gigaam.md §7–§8: token, word and segment times from the emitting frame;
 * Russian only, no detection, translation or streaming; a 25 s soft window. */
void tr_ga_model_describe(const ga_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_TOKEN);
    c->max_audio_ms = GA_MAX_AUDIO_MS;
    desc->tokenizer = m->tok;
}
