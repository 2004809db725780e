#include "policy.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "tensor/dtype.h"

static const qp_preset k_presets[] = {
    {"F16", TR_F16, TR_F16, TR_F16, TR_F16, 1},
    {"Q4_0", TR_Q4_0, TR_Q4_0, TR_Q4_0, TR_F16, 2},
    {"Q4_1", TR_Q4_1, TR_Q4_1, TR_Q4_1, TR_F16, 3},
    {"Q5_0", TR_Q5_0, TR_Q5_0, TR_Q5_0, TR_F16, 8},
    {"Q5_1", TR_Q5_1, TR_Q5_1, TR_Q5_1, TR_F16, 9},
    {"Q8_0", TR_Q8_0, TR_Q8_0, TR_Q8_0, TR_F16, 7},
    {"Q6_K", TR_Q6_K, TR_Q6_K, TR_Q6_K, TR_Q8_0, 18},
    {"Q5_K_M", TR_Q5_K, TR_Q8_0, TR_Q6_K, TR_Q8_0, 17},
    {"Q4_K_M", TR_Q4_K, TR_Q8_0, TR_Q6_K, TR_Q8_0, 15},
};

const qp_preset *qp_find_preset(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof k_presets / sizeof k_presets[0]; i++) {
        if (strcasecmp(k_presets[i].name, name) == 0) return &k_presets[i];
    }
    return NULL;
}

const char *qp_preset_names(void) {
    return "F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q6_K Q5_K_M Q4_K_M";
}

static bool ends(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static bool has(const char *s, const char *part) {
    return strstr(s, part) != NULL;
}

static bool is_norm(const char *n) {
    static const char *const suffixes[] = {
        ".bias",           ".running_mean",      ".running_var",
        "_norm.weight",    ".final_norm.weight", ".embed.norm.weight",
        ".q_norm.weight",  ".k_norm.weight",     ".output_norm.weight",
        ".ln_post.weight", ".ln_pre.weight",     ".norm1.weight",
        ".norm2.weight",   ".norm3.weight",      ".pos_bias_u",
        ".pos_bias_v",     ".pos_enc",           ".after_norm.weight",
        ".tp_norm.weight",
    };
    static const char *const exact[] = {
        "dec.norm.weight",         "prj.query",
        "prj.window_positions",    "enc.pos_emb.weight",
        "dec.pos_emb.weight",      "frontend.mel_filterbank",
        "frontend.window",         "frontend.cmvn.shift",
        "frontend.cmvn.scale",     "enc.embed.weight",
        "enc.embedder.comp.log_k", "dec.time_embed.inv_freq",
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (ends(n, suffixes[i])) return true;
    }
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        if (strcmp(n, exact[i]) == 0) return true;
    }
    if (has(n, ".bn.") || has(n, "conv_bn.")) return true;
    if (has(n, "norm_") && ends(n, ".weight")) return true;
    if (has(n, "_norms.") && ends(n, ".weight")) return true;
    return false;
}

qp_bucket qp_classify(const char *n) {
    if (strcmp(n, "dec.token_embd.weight") == 0 || strcmp(n, "dec.embed.token.weight") == 0) {
        return QP_EMBED;
    }
    if (is_norm(n)) return QP_NORM;
    if (has(n, "enc.blocks.") &&
        (ends(n, ".conv.pointwise1.weight") || ends(n, ".conv.pointwise2.weight") ||
         ends(n, ".conv_pointwise1.weight") || ends(n, ".conv_pointwise2.weight"))) {
        return QP_CONV_PW;
    }
    if ((has(n, ".conv.") && ends(n, ".weight")) || ends(n, ".conv_depthwise.weight") ||
        ends(n, ".attn.fsmn.weight")) {
        return QP_CONV;
    }
    if (ends(n, "attn.linear_out.weight") || ends(n, "attn.out.weight") ||
        ends(n, "attn.o.weight")) {
        return QP_ATTN_OUT;
    }
    return QP_LINEAR;
}

static bool fits(int type, int64_t ne0) {
    int block = tr_type_block(type);
    return block > 0 && ne0 % block == 0;
}

int qp_wanted_type(const qp_preset *p, const char *name) {
    switch (qp_classify(name)) {
    case QP_NORM:
    case QP_CONV:
        return TR_F32;
    case QP_CONV_PW:
        return TR_F16;
    case QP_EMBED:
        return p->embed;
    case QP_ATTN_OUT:
        return p->attn_out;
    default:
        return p->linear;
    }
}

int qp_choose_type(const qp_preset *p, const char *name, int64_t ne0) {
    int type = qp_wanted_type(p, name);
    if (type == TR_F32 || fits(type, ne0)) return type;
    if (fits(p->fallback, ne0)) return p->fallback;
    return TR_F16;
}
