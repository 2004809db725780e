/* FastConformer hyper-parameters from GGUF metadata: every key of
 * docs/formats/parakeet.md §3.3 (Parakeet flavor) or docs/formats/canary.md §2.3 (Canary
 * flavor) with its exact type, default and validation rule. Integer types are
 * strict: a uint32 key written as int32 (or the reverse) is rejected. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "nn/fastconformer.h"
#include "util/log.h"

#define ERR_GGUF TRANSCRIBE_ERR_GGUF

/* Upper bound on any size key: far above every shipped model (d 1024, 42
 * layers) and low enough that products of two sizes cannot overflow int. */
#define FC_MAX_DIM (1 << 16)

typedef struct {
    const gguf_file *g;
    const char *prefix;
    char key[256];
} keyctx;

static const char *full_key(keyctx *k, const char *name) {
    snprintf(k->key, sizeof k->key, "%s%s", k->prefix, name);
    return k->key;
}

/* The shared typed readers (gguf/gguf_keys.h) under this encoder's prefix. */
static transcribe_status req_u32(keyctx *k, const char *name, int *out) {
    return tr_gguf_req_u32(k->g, full_key(k, name), 1, FC_MAX_DIM, out);
}

static transcribe_status opt_bool(keyctx *k, const char *name, bool def, bool *out) {
    return tr_gguf_opt_bool(k->g, full_key(k, name), def, out);
}

static transcribe_status opt_i32(keyctx *k, const char *name, int def, int *out) {
    return tr_gguf_opt_i32(k->g, full_key(k, name), def, INT32_MIN, INT32_MAX, out);
}

static transcribe_status opt_str(keyctx *k, const char *name, const char *def, const char **out) {
    return tr_gguf_opt_str(k->g, full_key(k, name), def, out);
}

/* Optional INT32 array; *n = 0 when absent. */
static transcribe_status opt_arr(keyctx *k, const char *name, const int32_t **v, int64_t *n) {
    *v = NULL;
    return tr_gguf_opt_arr_i32(k->g, full_key(k, name), 0, INT64_MAX, v, n);
}

static transcribe_status read_sizes(keyctx *k, tr_fc_hparams *hp) {
    int sub_factor = 0;
    transcribe_status st;
    if ((st = req_u32(k, "n_layers", &hp->n_layers)) ||
        (st = req_u32(k, "d_model", &hp->d_model)) || (st = req_u32(k, "n_heads", &hp->n_heads)) ||
        (st = req_u32(k, "d_ff", &hp->d_ff)) ||
        (st = req_u32(k, "conv_kernel", &hp->conv_kernel)) ||
        (st = req_u32(k, "subsampling_factor", &sub_factor)) ||
        (st = req_u32(k, "subsampling_channels", &hp->sub_channels)))
        return st;
    /* required, any value: not used by the encoder (the table is built for
     * the actual length); Canary's input gate reads it itself */
    if ((st = tr_gguf_req_type(k->g, full_key(k, "pos_emb_max_len"), GGUF_T_UINT32))) return st;
    hp->sub_factor = sub_factor;
    if (hp->d_model % hp->n_heads != 0) {
        TR_ERROR("fastconformer: %sd_model = %d is not divisible by n_heads = %d", k->prefix,
                 hp->d_model, hp->n_heads);
        return ERR_GGUF;
    }
    if (hp->d_model % 2 != 0) { /* the positional table pairs sin/cos channels */
        TR_ERROR("fastconformer: %sd_model = %d must be even", k->prefix, hp->d_model);
        return ERR_GGUF;
    }
    /* NeMo's striding subsamplings take a power of two: log2(factor) stride-2
     * stages (ConvSubsampling); 2..16 covers every configuration it builds */
    hp->sub_stages = 0;
    for (int f = 2; f <= TR_FC_MAX_SUB_FACTOR; f *= 2) {
        hp->sub_stages++;
        if (f == sub_factor) break;
        if (f == TR_FC_MAX_SUB_FACTOR) hp->sub_stages = 0;
    }
    if (hp->sub_stages == 0) {
        TR_ERROR("fastconformer: %ssubsampling_factor = %d is not supported (2, 4, 8 or 16)",
                 k->prefix, sub_factor);
        return ERR_GGUF;
    }
    int n_mels = 0;
    if ((st = tr_gguf_req_u32(k->g, "stt.frontend.num_mels", 1, 4096, &n_mels))) return st;
    hp->n_mels = n_mels;
    return TRANSCRIBE_OK;
}

/* att_context_size_choices: even, non-empty, pair 0 = the scalars. */
static transcribe_status check_choices(keyctx *k, const tr_fc_hparams *hp) {
    const int32_t *v;
    int64_t n;
    if (opt_arr(k, "att_context_size_choices", &v, &n)) return ERR_GGUF;
    if (!v) return TRANSCRIBE_OK; /* absent: one pair from the scalars */
    if (n == 0 || n % 2 != 0) {
        TR_ERROR("fastconformer: %satt_context_size_choices has %" PRId64
                 " entries (need a non-empty even count)",
                 k->prefix, n);
        return ERR_GGUF;
    }
    if (v[0] != hp->att_left || v[1] != hp->att_right) {
        TR_ERROR("fastconformer: %satt_context_size_choices starts with (%d, %d), not the "
                 "configured context (%d, %d)",
                 k->prefix, (int)v[0], (int)v[1], hp->att_left, hp->att_right);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_attention(keyctx *k, tr_fc_hparams *hp) {
    const char *style = NULL;
    if (opt_i32(k, "att_context_left", -1, &hp->att_left) ||
        opt_i32(k, "att_context_right", -1, &hp->att_right) ||
        opt_str(k, "att_context_style", "regular", &style))
        return ERR_GGUF;
    if (hp->att_left < -1 || hp->att_right < -1 || hp->att_left > (1 << 24) ||
        hp->att_right > (1 << 24)) {
        TR_ERROR("fastconformer: %satt_context_left/right = %d/%d out of range", k->prefix,
                 hp->att_left, hp->att_right);
        return ERR_GGUF;
    }
    if (strcmp(style, "regular") == 0) {
        hp->att_style = TR_FC_STYLE_REGULAR;
    } else if (strcmp(style, "chunked_limited") == 0) {
        hp->att_style = TR_FC_STYLE_CHUNKED_LIMITED;
        /* the chunk mask needs chunk = R + 1 >= 1; L = -1 means every earlier
         * chunk is visible (NeMo's unlimited left context) */
        if (hp->att_right < 0) {
            TR_ERROR("fastconformer: %satt_context_style chunked_limited needs "
                     "att_context_right >= 0 (got %d/%d)",
                     k->prefix, hp->att_left, hp->att_right);
            return ERR_GGUF;
        }
    } else if (strcmp(style, "chunked_limited_with_rc") == 0) {
        hp->att_style = TR_FC_STYLE_CHUNKED_LIMITED_RC;
    } else {
        TR_ERROR("fastconformer: %satt_context_style = '%s' is not supported", k->prefix, style);
        return ERR_GGUF;
    }
    if (check_choices(k, hp)) return ERR_GGUF;
    static const char *const menus[3] = {"att_chunk_left_choices", "att_chunk_chunk_choices",
                                         "att_chunk_right_choices"};
    for (int i = 0; i < 3; i++) {
        const int32_t *v;
        int64_t n;
        if (opt_arr(k, menus[i], &v, &n)) return ERR_GGUF;
        if (hp->att_style == TR_FC_STYLE_CHUNKED_LIMITED_RC && n == 0) {
            TR_ERROR("fastconformer: %s%s must be non-empty for chunked_limited_with_rc", k->prefix,
                     menus[i]);
            return ERR_GGUF;
        }
    }
    return TRANSCRIBE_OK;
}

static transcribe_status read_conv(keyctx *k, tr_fc_hparams *hp) {
    int cl, cr;
    const char *norm = NULL;
    if (opt_i32(k, "conv_context_left", -1, &cl) || opt_i32(k, "conv_context_right", -1, &cr) ||
        opt_str(k, "conv_norm_type", "batch_norm", &norm))
        return ERR_GGUF;
    if (cl >= 0 && cr >= 0) {
        hp->conv_pad_left = cl;
        hp->conv_pad_right = cr;
    } else {
        hp->conv_pad_left = hp->conv_pad_right = (hp->conv_kernel - 1) / 2;
    }
    /* the module keeps the frame count: padding must total k - 1 */
    if (hp->conv_pad_left + hp->conv_pad_right != hp->conv_kernel - 1) {
        TR_ERROR("fastconformer: depthwise padding %d/%d does not fit conv_kernel %d (%s"
                 "conv_context_left/right = %d/%d)",
                 hp->conv_pad_left, hp->conv_pad_right, hp->conv_kernel, k->prefix, cl, cr);
        return ERR_GGUF;
    }
    if (strcmp(norm, "batch_norm") == 0) {
        hp->conv_layer_norm = false;
    } else if (strcmp(norm, "layer_norm") == 0) {
        hp->conv_layer_norm = true;
    } else {
        TR_ERROR("fastconformer: %sconv_norm_type = '%s' is not supported", k->prefix, norm);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

/* Keys only the streaming / multitalker paths use: type-checked here so a
 * malformed file fails at load, and the speaker-kernel rules of docs/formats/parakeet.md §3.3. */
static transcribe_status check_extras(keyctx *k) {
    int dummy;
    bool bg;
    if (opt_i32(k, "streaming.pre_encode_cache_size", 0, &dummy) ||
        opt_i32(k, "streaming.drop_extra_pre_encoded", 0, &dummy) ||
        opt_i32(k, "streaming.sampling_frames_first", 0, &dummy) ||
        opt_bool(k, "add_bg_spk_kernel", false, &bg))
        return ERR_GGUF;
    const int32_t *v;
    int64_t n;
    if (opt_arr(k, "spk_kernel_layers", &v, &n)) return ERR_GGUF;
    if (n == 0) return TRANSCRIBE_OK;
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 0) {
            TR_ERROR("fastconformer: %sspk_kernel_layers[%" PRId64 "] = %d (only 0 supported)",
                     k->prefix, i, (int)v[i]);
            return ERR_GGUF;
        }
    const char *type = NULL;
    if (opt_str(k, "spk_kernel_type", NULL, &type)) return ERR_GGUF;
    if (!type || strcmp(type, "ff") != 0) {
        TR_ERROR("fastconformer: %sspk_kernel_type must be 'ff' when spk_kernel_layers is set",
                 k->prefix);
        return ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_fc_read_hparams(const struct gguf_file *g, const char *key_prefix,
                                     tr_fc_key_flavor flavor, tr_fc_hparams *hp) {
    if (!g || !key_prefix || !hp || strlen(key_prefix) > 200) {
        TR_ERROR("fastconformer: read_hparams: invalid argument");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_fc_hparams h;
    memset(&h, 0, sizeof h);
    keyctx k = {.g = g, .prefix = key_prefix};
    transcribe_status st = read_sizes(&k, &h);
    if (st) return st;
    if (flavor == TR_FC_KEYS_SORTFORMER) {
        const char *norm = NULL;
        if (opt_str(&k, "conv_norm_type", "batch_norm", &norm)) return ERR_GGUF;
        h.use_bias = true;
        h.xscaling = true;
        h.att_left = h.att_right = -1;
        h.att_style = TR_FC_STYLE_REGULAR;
        h.conv_pad_left = h.conv_pad_right = (h.conv_kernel - 1) / 2;
        if (h.conv_kernel % 2 == 0) {
            TR_ERROR("fastconformer: %sconv_kernel = %d must be odd", key_prefix, h.conv_kernel);
            return ERR_GGUF;
        }
        h.conv_layer_norm = false;
    } else if (flavor == TR_FC_KEYS_CANARY) {
        /* biases always present (use_bias is type-checked, then ignored: old
         * files say false while carrying them); no x-scaling, full
         * attention, centred depthwise padding, batch norm */
        bool ignored;
        if (opt_bool(&k, "use_bias", false, &ignored)) return ERR_GGUF;
        h.use_bias = true;
        h.xscaling = false;
        h.att_left = h.att_right = -1;
        h.att_style = TR_FC_STYLE_REGULAR;
        h.conv_pad_left = h.conv_pad_right = (h.conv_kernel - 1) / 2;
        if (h.conv_kernel % 2 == 0) {
            TR_ERROR("fastconformer: %sconv_kernel = %d must be odd", key_prefix, h.conv_kernel);
            return ERR_GGUF;
        }
        h.conv_layer_norm = false;
    } else {
        if (opt_bool(&k, "use_bias", false, &h.use_bias) ||
            opt_bool(&k, "xscaling", false, &h.xscaling) || read_attention(&k, &h) ||
            read_conv(&k, &h) || check_extras(&k))
            return ERR_GGUF;
    }
    *hp = h;
    return TRANSCRIBE_OK;
}
