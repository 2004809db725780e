/* Legacy whisper.cpp tensor names → canonical GGUF names (docs/formats/gguf.md
 * §11.4). Kept table-driven so the mapping reads like the spec. */
#include <stdio.h>
#include <string.h>

#include "gguf/ggml_bin.h"

typedef struct {
    const char *from, *to;
} name_pair;

static const name_pair k_top[] = {
    {"encoder.positional_embedding", "enc.pos_emb.weight"},
    {"encoder.conv1.weight", "enc.conv.0.weight"},
    {"encoder.conv1.bias", "enc.conv.0.bias"},
    {"encoder.conv2.weight", "enc.conv.1.weight"},
    {"encoder.conv2.bias", "enc.conv.1.bias"},
    {"encoder.ln_post.weight", "enc.final_norm.weight"},
    {"encoder.ln_post.bias", "enc.final_norm.bias"},
    {"decoder.positional_embedding", "dec.pos_emb.weight"},
    {"decoder.token_embedding.weight", "dec.token_embd.weight"},
    {"decoder.ln.weight", "dec.final_norm.weight"},
    {"decoder.ln.bias", "dec.final_norm.bias"},
};

/* Per-block suffixes (before ".weight"/".bias"); `bias` = 0 when only the
 * weight exists (key projections have no bias). */
typedef struct {
    const char *from, *to;
    int bias;
} block_pair;

static const block_pair k_enc_block[] = {
    {"attn_ln", "norm_attn", 1}, {"attn.query", "attn.q", 1}, {"attn.key", "attn.k", 0},
    {"attn.value", "attn.v", 1}, {"attn.out", "attn.out", 1}, {"mlp_ln", "norm_ffn", 1},
    {"mlp.0", "ffn.fc1", 1},     {"mlp.2", "ffn.fc2", 1},
};

static const block_pair k_dec_block[] = {
    {"attn_ln", "norm_self", 1},
    {"attn.query", "self_attn.q", 1},
    {"attn.key", "self_attn.k", 1},
    {"attn.value", "self_attn.v", 1},
    {"attn.out", "self_attn.out", 1},
    {"cross_attn_ln", "norm_cross", 1},
    {"cross_attn.query", "cross_attn.q", 1},
    {"cross_attn.key", "cross_attn.k", 1},
    {"cross_attn.value", "cross_attn.v", 1},
    {"cross_attn.out", "cross_attn.out", 1},
    {"mlp_ln", "norm_ffn", 1},
    {"mlp.0", "ffn.fc1", 1},
    {"mlp.2", "ffn.fc2", 1},
};

static bool put(char *out, size_t cap, const char *fmt, const char *a, unsigned i, const char *b,
                const char *c) {
    int n = snprintf(out, cap, fmt, a, i, b, c);
    return n > 0 && (size_t)n < cap;
}

bool tr_ggml_bin_canonical_name(const char *legacy, char *out, size_t cap) {
    if (!legacy || !out || !cap) return false;
    for (size_t k = 0; k < sizeof k_top / sizeof k_top[0]; k++) {
        if (strcmp(legacy, k_top[k].from) == 0) {
            int n = snprintf(out, cap, "%s", k_top[k].to);
            return n > 0 && (size_t)n < cap;
        }
    }
    const block_pair *table;
    size_t n_table;
    const char *side, *p;
    if (strncmp(legacy, "encoder.blocks.", 15) == 0) {
        table = k_enc_block, n_table = sizeof k_enc_block / sizeof k_enc_block[0];
        side = "enc", p = legacy + 15;
    } else if (strncmp(legacy, "decoder.blocks.", 15) == 0) {
        table = k_dec_block, n_table = sizeof k_dec_block / sizeof k_dec_block[0];
        side = "dec", p = legacy + 15;
    } else {
        return false;
    }
    /* block index: 1..4 decimal digits, no leading zero */
    unsigned idx = 0;
    int digits = 0;
    while (p[digits] >= '0' && p[digits] <= '9' && digits < 5)
        idx = idx * 10 + (unsigned)(p[digits] - '0'), digits++;
    if (digits == 0 || digits > 4 || (digits > 1 && p[0] == '0') || p[digits] != '.') return false;
    p += digits + 1;
    for (size_t k = 0; k < n_table; k++) {
        size_t fl = strlen(table[k].from);
        if (strncmp(p, table[k].from, fl) != 0 || p[fl] != '.') continue;
        const char *leaf = p + fl + 1;
        if (strcmp(leaf, "weight") == 0 || (table[k].bias && strcmp(leaf, "bias") == 0))
            return put(out, cap, "%s.blocks.%u.%s.%s", side, idx, table[k].to, leaf);
    }
    return false;
}
