/* MedASR GGUF loader: encoder and CTC keys (docs/formats/medasr.md §2.3–§2.4), the front end
 * (§2.5, §4), the tokenizer (§2.2), every tensor of §3.1 shape-checked against the keys, the
 * load-time transforms of §3.2, languages and capabilities (§8). Every failure is
 * TRANSCRIBE_ERR_GGUF with a log line naming the key or tensor (NOT_IMPLEMENTED for an unknown
 * tokenizer model, OOM), and frees what was loaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "models/medasr/medasr.h"
#include "nn/weights.h"
#include "tensor/dtype.h"
#include "text/tokenizer.h"
#include "util/log.h"
#include "util/vec.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF
#define EK       "stt.medasr.encoder."
#define CK       "stt.medasr.ctc."
#define FK       "stt.frontend."

/* docs/formats/medasr.md §2.3: every key is required with its exact type, including the ones
 * the run never reads (n_kv_heads, head_dim, hidden_act, batch_norm_momentum). */
static transcribe_status load_encoder_keys(const gguf_file *g, ma_model *m) {
    ma_hparams *hp = &m->hp;
    int n_kv = 0, head_dim = 0, sub_stride = 0, sub_layers = 0;
    const tr_gguf_u32_key keys[] = {
        {"n_layers", 1, 4096, &hp->n_layers},        {"hidden", 2, 65536, &hp->d_model},
        {"n_heads", 1, 4096, &hp->n_heads},          {"n_kv_heads", 1, 4096, &n_kv},
        {"head_dim", 1, 65536, &head_dim},           {"intermediate", 1, 1 << 20, &hp->d_ff},
        {"conv_kernel", 1, 4095, &hp->kernel},       {"max_pos_emb", 0, INT32_MAX, &hp->max_pos},
        {"num_mel_bins", 1, 4096, &hp->n_mels},      {"sub_kernel", 1, 4095, &hp->sub_kernel},
        {"sub_stride", 0, INT32_MAX, &sub_stride},   {"sub_channels", 1, 65536, &hp->sub_c},
        {"sub_n_layers", 0, INT32_MAX, &sub_layers},
    };
    transcribe_status st = tr_gguf_req_u32_keys(g, EK, keys, sizeof keys / sizeof keys[0]);
    if (st) return st;
    float momentum = 0;
    if ((st = tr_gguf_req_str_is(g, EK "hidden_act", "silu", "swish")) ||
        (st = tr_gguf_req_f32_finite(g, EK "conv_residual_w0", false, &hp->conv_res[0])) ||
        (st = tr_gguf_req_f32_finite(g, EK "conv_residual_w1", false, &hp->conv_res[1])) ||
        (st = tr_gguf_req_f32_finite(g, EK "ff_residual_w0", false, &hp->ff_res[0])) ||
        (st = tr_gguf_req_f32_finite(g, EK "ff_residual_w1", false, &hp->ff_res[1])) ||
        (st = tr_gguf_req_f32_finite(g, EK "layer_norm_eps", true, &hp->ln_eps)) ||
        (st = tr_gguf_req_f32(g, EK "batch_norm_momentum", &momentum)) ||
        (st = tr_gguf_req_f32_finite(g, EK "rope_theta", true, &hp->rope_theta)) ||
        (st = tr_gguf_req_str_is(g, EK "rope_type", "default", NULL)))
        return st;
    if (hp->d_model % hp->n_heads != 0)
        return tr_gguf_key_error(EK "n_heads", "UINT32", "%d does not divide hidden %d",
                                 hp->n_heads, hp->d_model);
    if ((hp->d_model / hp->n_heads) % 2 != 0)
        return tr_gguf_key_error(EK "n_heads", "UINT32", "head width %d is odd (rotary pairs)",
                                 hp->d_model / hp->n_heads);
    if (sub_stride != 2)
        return tr_gguf_key_error(EK "sub_stride", "UINT32", "%d (only 2 is defined)", sub_stride);
    if (sub_layers != 2)
        return tr_gguf_key_error(EK "sub_n_layers", "UINT32", "%d (only 2 is defined)", sub_layers);
    /* read, never used (docs/formats/medasr.md §2.3): the K/V shapes fix the heads */
    if (n_kv != hp->n_heads || head_dim != hp->d_model / hp->n_heads)
        TR_WARN("medasr: n_kv_heads %d / head_dim %d ignored (plain %d-head attention)", n_kv,
                head_dim, hp->n_heads);
    return TRANSCRIBE_OK;
}

/* docs/formats/medasr.md §2.4 */
static transcribe_status load_ctc_keys(const gguf_file *g, ma_model *m) {
    transcribe_status st;
    if ((st = tr_gguf_req_u32(g, CK "vocab_size", 1, 1 << 20, &m->hp.n_vocab)) ||
        (st = tr_gguf_req_u32(g, CK "blank_id", 0, INT32_MAX, &m->hp.blank)))
        return st;
    if (m->hp.blank >= m->hp.n_vocab)
        return tr_gguf_key_error(CK "blank_id", "UINT32", "%d is not below vocab_size %d",
                                 m->hp.blank, m->hp.n_vocab);
    return TRANSCRIBE_OK;
}

/* docs/formats/medasr.md §2.5 / §4: all 13 keys are required with their types; the run uses
 * the sizes and the log floor, and always frames without padding (the pad_mode string says
 * "zero" in the published files and is not what the runtime does). */
static transcribe_status load_frontend(const gguf_file *g, ma_model *m) {
    static const char *const str_keys[] = {"type", "window", "normalize", "pad_mode", "mel_norm"};
    char key[64];
    transcribe_status st;
    const char *s = NULL;
    for (size_t i = 0; i < sizeof str_keys / sizeof str_keys[0]; i++) {
        snprintf(key, sizeof key, FK "%s", str_keys[i]);
        if ((st = tr_gguf_req_str(g, key, &s))) return st;
    }
    tr_mel_config *c = &m->mel;
    memset(c, 0, sizeof *c);
    float lo_hz = 0, hi_hz = 0;
    if ((st = tr_gguf_req_u32(g, FK "sample_rate", 1000, 1000000, &c->sample_rate)) ||
        (st = tr_gguf_req_u32(g, FK "num_mels", 1, 4096, &c->n_mels)) ||
        (st = tr_gguf_req_u32(g, FK "n_fft", 2, 1 << 16, &c->n_fft)) ||
        (st = tr_gguf_req_u32(g, FK "win_length", 1, 1 << 16, &c->win_length)) ||
        (st = tr_gguf_req_u32(g, FK "hop_length", 1, 1 << 16, &c->hop_length)) ||
        (st = tr_gguf_req_f32_finite(g, FK "log_clamp_min", true, &c->log_clamp_min)) ||
        (st = tr_gguf_req_f32(g, FK "mel_lower_hz", &lo_hz)) ||
        (st = tr_gguf_req_f32(g, FK "mel_upper_hz", &hi_hz)))
        return st;
    if (c->n_fft & (c->n_fft - 1))
        return tr_gguf_key_error(FK "n_fft", "UINT32", "%d is not a power of two", c->n_fft);
    if (c->win_length > c->n_fft)
        return tr_gguf_key_error(FK "win_length", "UINT32", "%d is wider than n_fft %d",
                                 c->win_length, c->n_fft);
    /* not checked upstream (docs/formats/medasr.md §9): the encoder's input width */
    if (c->n_mels != m->hp.n_mels)
        return tr_gguf_key_error(FK "num_mels", "UINT32", "%d differs from num_mel_bins %d",
                                 c->n_mels, m->hp.n_mels);
    c->type = TR_FRONTEND_MEL;
    c->window = TR_WIN_HANN_SYMMETRIC;
    c->pad_mode = TR_PAD_NONE; /* window left-aligned in the n_fft buffer, no centring */
    c->normalize = TR_NORM_NONE;
    c->mel_scale = TR_MELSCALE_HTK;
    c->log = true;
    c->f_min = 0.0f; /* the filterbank is baked: only the config check reads these */
    c->f_max = 0.5f * (float)c->sample_rate;
    return TRANSCRIBE_OK;
}

static transcribe_status load_tokenizer(const gguf_file *g, ma_model *m) {
    transcribe_status st = tr_tokenizer_from_gguf(g, &m->tok);
    if (st) return st;
    tr_tok_kind k = tr_tokenizer_kind(m->tok);
    if (k != TR_TOK_SPM_BPE && k != TR_TOK_SPM_UNIGRAM) {
        TR_ERROR("medasr: tokenizer.ggml.model must be a SentencePiece vocabulary (\"bpe\")");
        return ERR_GGUF;
    }
    m->hp.n_pieces = tr_tokenizer_n_vocab(m->tok);
    if (m->hp.n_pieces < 1) {
        TR_ERROR("medasr: tokenizer.ggml.tokens is empty");
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* The bytes of a {k, in, out} conv kernel as an {k·in, out} matrix (same row order). */
static void conv_view(const tr_tensor *t, tr_tensor *view, int64_t k_in, int64_t out) {
    *view = *t;
    view->n_dims = 2;
    view->ne[0] = k_in;
    view->ne[1] = out;
    view->ne[2] = view->ne[3] = 1;
    view->nb1 = tr_row_bytes(t->type, k_in);
}

/* Top-level tensors (docs/formats/medasr.md §3.1), the transposed filterbank and the views. */
static transcribe_status load_top(const gguf_file *g, ma_model *m) {
    const ma_hparams *hp = &m->hp;
    const int64_t d = hp->d_model, C = hp->sub_c, k = hp->sub_kernel, V = hp->n_vocab;
    const int64_t nm = m->mel.n_mels, nf = m->mel.n_fft / 2 + 1;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    struct {
        const float *fb, *win;
    } fe = {0};
    const tr_nn_wspec front[] = {
        /* docs/formats/medasr.md §3.1: [n_freq][n_mels], transposed w.r.t. other families */
        {"frontend.mel_filterbank", TR_NN_W_VEC, {nm, nf}, 2, 0, 0},
        {"frontend.window", TR_NN_W_VEC, {m->mel.win_length}, 1, 0, sizeof(const float *)},
    };
    bool ok = tr_nn_load_weights(&src, front, 2, NULL, 0, true, &fe);
    const tr_nn_wspec top[] = {
        {"enc.subsampling.dense_0", TR_NN_W_LINEAR, {nm, d}, 0, 0, offsetof(ma_model, dense0)},
        {"enc.subsampling.conv_0.weight",
         TR_NN_W_TENSOR,
         {k, d, d},
         3,
         TR_TYPES_CONV,
         offsetof(ma_model, conv0_w)},
        {"enc.subsampling.conv_0.bias", TR_NN_W_VEC, {d}, 1, 0, offsetof(ma_model, conv0_b)},
        {"enc.subsampling.conv_1.weight",
         TR_NN_W_TENSOR,
         {k, d, C},
         3,
         TR_TYPES_CONV,
         offsetof(ma_model, conv1_w)},
        {"enc.subsampling.conv_1.bias", TR_NN_W_VEC, {C}, 1, 0, offsetof(ma_model, conv1_b)},
        {"enc.subsampling.dense_1", TR_NN_W_LINEAR, {C, d}, 0, 0, offsetof(ma_model, dense1)},
        {"enc.out_norm.weight", TR_NN_W_VEC, {d}, 1, 0, offsetof(ma_model, out_norm.w)},
        {"ctc.proj.weight", TR_NN_W_TENSOR, {1, d, V}, 3, TR_TYPES_CONV, offsetof(ma_model, ctc_w)},
        {"ctc.proj.bias", TR_NN_W_VEC, {V}, 1, 0, offsetof(ma_model, ctc.b)},
    };
    ok = tr_nn_load_weights(&src, top, sizeof top / sizeof top[0], NULL, 0, true, m) && ok;
    if (!ok) return ERR_GGUF;
    /* docs/formats/medasr.md §3.2: the runtime wants [n_mels][n_freq] */
    m->fb = malloc(sizeof(float) * (size_t)(nm * nf));
    if (!m->fb) return TRANSCRIBE_ERR_OOM;
    for (int64_t f = 0; f < nf; f++)
        for (int64_t i = 0; i < nm; i++) m->fb[i * nf + f] = fe.fb[f * nm + i];
    m->mel.filterbank = m->fb;
    m->mel.baked_window = fe.win;
    conv_view(m->conv0_w, &m->conv0_view, k * d, d);
    conv_view(m->conv1_w, &m->conv1_view, k * d, C);
    conv_view(m->ctc_w, &m->ctc_view, d, V);
    m->ctc.w = &m->ctc_view;
    return TRANSCRIBE_OK;
}

/* Per block (docs/formats/medasr.md §3.1): no biases anywhere but batch norm's; the batch-norm
 * tensors are folded into the depthwise taps (§3.2) by tr_cf_block_prepare. */
#define BO(f) offsetof(tr_cf_block, f)
static const tr_nn_wspec k_block[] = {
    {"enc.blocks.%d.norm_ff1.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(norm_ff1.w)},
    {"enc.blocks.%d.ff1_up", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(1)}, 0, 0, BO(ff1_up)},
    {"enc.blocks.%d.ff1_down",
     TR_NN_W_LINEAR_NOBIAS,
     {TR_NN_DIM(1), TR_NN_DIM(0)},
     0,
     0,
     BO(ff1_down)},
    {"enc.blocks.%d.norm_attn.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(norm_attn.w)},
    {"enc.blocks.%d.attn_q", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, BO(attn.q)},
    {"enc.blocks.%d.attn_k", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, BO(attn.k)},
    {"enc.blocks.%d.attn_v", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, BO(attn.v)},
    {"enc.blocks.%d.attn_o", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(0)}, 0, 0, BO(attn.o)},
    {"enc.blocks.%d.norm_conv.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(norm_conv.w)},
    {"enc.blocks.%d.conv_pointwise1.weight",
     TR_NN_W_TENSOR,
     {1, TR_NN_DIM(0), TR_NN_DIM(3)},
     3,
     TR_TYPES_CONV,
     BO(pw1_w)},
    {"enc.blocks.%d.conv_depthwise.weight",
     TR_NN_W_TENSOR,
     {TR_NN_DIM(2), 1, TR_NN_DIM(0)},
     3,
     TR_TYPES_CONV,
     BO(dw_w)},
    {"enc.blocks.%d.conv_bn.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(bn_w)},
    {"enc.blocks.%d.conv_bn.bias", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(bn_b)},
    {"enc.blocks.%d.conv_bn.running_mean", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(bn_mean)},
    {"enc.blocks.%d.conv_bn.running_var", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(bn_var)},
    {"enc.blocks.%d.conv_pointwise2.weight",
     TR_NN_W_TENSOR,
     {1, TR_NN_DIM(0), TR_NN_DIM(0)},
     3,
     TR_TYPES_CONV,
     BO(pw2_w)},
    {"enc.blocks.%d.norm_ff2.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(norm_ff2.w)},
    {"enc.blocks.%d.ff2_up", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(0), TR_NN_DIM(1)}, 0, 0, BO(ff2_up)},
    {"enc.blocks.%d.ff2_down",
     TR_NN_W_LINEAR_NOBIAS,
     {TR_NN_DIM(1), TR_NN_DIM(0)},
     0,
     0,
     BO(ff2_down)},
    {"enc.blocks.%d.norm_post.weight", TR_NN_W_VEC, {TR_NN_DIM(0)}, 1, 0, BO(norm_out.w)},
};
#undef BO

static transcribe_status load_blocks(const gguf_file *g, ma_model *m) {
    const ma_hparams *hp = &m->hp;
    m->blocks = calloc((size_t)hp->n_layers, sizeof *m->blocks);
    if (!m->blocks) return TRANSCRIBE_ERR_OOM;
    tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    const int64_t dims[4] = {hp->d_model, hp->d_ff, hp->kernel, 2 * (int64_t)hp->d_model};
    if (!tr_nn_load_layers(&src, k_block, sizeof k_block / sizeof k_block[0], dims, hp->n_layers,
                           false, m->blocks, sizeof *m->blocks))
        return ERR_GGUF;
    for (int i = 0; i < hp->n_layers; i++) {
        tr_cf_block *b = &m->blocks[i];
        for (int c = 0; c < hp->d_model; c++) {
            double v = (double)b->bn_var[c] + 1e-5;
            if (!(v > 0)) {
                TR_ERROR("medasr: enc.blocks.%d.conv_bn.running_var[%d] = %g (variance + 1e-5 "
                         "must be positive)",
                         i, c, (double)b->bn_var[c]);
                return ERR_GGUF;
            }
        }
        if (!tr_cf_block_prepare(b, &m->dims)) return TRANSCRIBE_ERR_OOM;
        m->n_blocks_ready = i + 1;
    }
    return TRANSCRIBE_OK;
}

/* docs/formats/medasr.md §2.1, §8: general.languages (["en"] when absent) and the capability
 * booleans this family reads (each must be false: nothing here translates, detects or
 * streams). */
static transcribe_status load_languages(const gguf_file *g, ma_model *m) {
    static const char *const en[] = {"en"};
    transcribe_status st =
        tr_gguf_opt_strv_copy(g, "general.languages", 4096, en, 1, &m->lang, &m->n_lang);
    if (st) return st;
    static const char *const caps[] = {"stt.capability.translate", "stt.capability.lang_detect",
                                       "stt.capability.streaming"};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        bool b = false;
        if ((st = tr_gguf_opt_bool(g, caps[i], false, &b))) return st;
        if (b) TR_WARN("medasr: %s is true; this family does not do it", caps[i]);
    }
    return TRANSCRIBE_OK;
}

static transcribe_status load_all(const gguf_file *g, void *model) {
    ma_model *m = model;
    const char *s = NULL;
    transcribe_status st = tr_gguf_req_str_is(g, "general.architecture", "medasr", NULL);
    if (st) return st;
    if ((st = tr_gguf_opt_str(g, "stt.variant", "medasr", &s))) return st;
    m->variant = s;
    if ((st = load_encoder_keys(g, m)) || (st = load_ctc_keys(g, m)) ||
        (st = load_frontend(g, m)) || (st = load_tokenizer(g, m)) || (st = load_languages(g, m)))
        return st;
    const ma_hparams *hp = &m->hp;
    m->dims = (tr_cf_dims){.d_model = hp->d_model,
                           .n_head = hp->n_heads,
                           .d_ff = hp->d_ff,
                           .kernel = hp->kernel,
                           .ln_eps = hp->ln_eps,
                           .ff_scale = hp->ff_res[1],
                           .ff_w0 = hp->ff_res[0],
                           .conv_w0 = hp->conv_res[0],
                           .conv_w1 = hp->conv_res[1],
                           .conv_bn = true,
                           .rot = TR_CF_ROT_QK,
                           .rot_theta = hp->rope_theta};
    if ((st = load_top(g, m)) || (st = load_blocks(g, m))) return st;
    TR_INFO("medasr: %s, %d blocks, d_model %d, %d heads, kernel %d, vocabulary %d (%d pieces)",
            m->variant, hp->n_layers, hp->d_model, hp->n_heads, hp->kernel, hp->n_vocab,
            hp->n_pieces);
    return TRANSCRIBE_OK;
}

void tr_ma_model_free(ma_model *m) {
    if (!m) return;
    for (int i = 0; m->blocks && i < m->n_blocks_ready; i++) tr_cf_block_free(&m->blocks[i]);
    free(m->blocks);
    free(m->fb);
    tr_tokenizer_free(m->tok);
    tr_strv_free(m->lang, m->n_lang);
    free(m);
}

TR_FAMILY_GGUF_LOAD(ma, "medasr", load_all)

/* docs/formats/medasr.md §8: token times (40 ms frames), no detection, translation or
 * streaming; max_audio_ms = max_pos_emb · hop · 4 · 1000 / sample_rate (advisory: longer input
 * runs with a warning). */
void tr_ma_model_describe(const ma_model *m, tr_model_desc *desc) {
    struct transcribe_capabilities *c = tr_model_desc_begin(
        desc, m->mel.sample_rate, m->n_lang, m->lang, m->variant, TRANSCRIBE_TIMESTAMPS_TOKEN);
    c->max_audio_ms = (int64_t)m->hp.max_pos * m->mel.hop_length * 4 * 1000 / m->mel.sample_rate;
    desc->tokenizer = m->tok;
}
