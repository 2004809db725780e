/* Loading the shared causal LM from a GGUF file (docs/formats/causal-lm.md §2): the
 * dec.* tensors of every block by exact shape and type class (q/k norms
 * only when the hyper-parameters ask for them), the embedding, final norm
 * and the tied or untied head (the byte-level BPE tokenizer these files
 * carry is text/'s tr_tokenizer_load_gpt2).
 * Errors are logged with the family's name and return TRANSCRIBE_ERR_GGUF. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "nn/causal_lm.h"
#include "tensor/dtype.h"
#include "util/log.h"

typedef struct need {
    const struct gguf_file *f;
    bool bad;
} need;

static const float *need_vec(need *n, const char *name, int64_t len) {
    const int64_t ne[1] = {len};
    const tr_tensor *t = tr_gguf_require_tensor(n->f, name, TR_TYPES_F32, 1, ne);
    if (!t) n->bad = true;
    return t ? (const float *)t->data : NULL;
}

static const tr_tensor *need_mat(need *n, const char *name, int64_t in, int64_t out,
                                 uint32_t types) {
    const int64_t ne[2] = {in, out};
    const tr_tensor *t = tr_gguf_require_tensor(n->f, name, types, 2, ne);
    if (!t) n->bad = true;
    return t;
}

transcribe_status tr_clm_load_weights(const struct gguf_file *f, const char *who,
                                      const tr_clm_hparams *hp, bool tied, uint32_t emb_types,
                                      tr_clm_block **blocks_out, tr_clm_weights *w) {
    return tr_clm_load_weights_prefix(f, who, "dec.blocks", hp, tied, emb_types, blocks_out, w);
}

transcribe_status tr_clm_load_weights_prefix(const struct gguf_file *f, const char *who,
                                             const char *block_prefix, const tr_clm_hparams *hp,
                                             bool tied, uint32_t emb_types,
                                             tr_clm_block **blocks_out, tr_clm_weights *w) {
    const int64_t H = hp->d_model, Q = (int64_t)hp->n_head * hp->head_dim,
                  K = (int64_t)hp->n_head_kv * hp->head_dim, I = hp->d_ffn;
    tr_clm_block *blocks = calloc((size_t)hp->n_layer, sizeof *blocks);
    *blocks_out = blocks;
    if (!blocks) return TRANSCRIBE_ERR_OOM;
    need n = {f, false};
    char s[160];
#define NAME(x) (snprintf(s, sizeof s, "%s.%d." x, block_prefix, l), s)
    for (int l = 0; l < hp->n_layer && !n.bad; l++) {
        tr_clm_block *b = &blocks[l];
        b->norm_attn = need_vec(&n, NAME("norm_attn.weight"), H);
        b->norm_ffn = need_vec(&n, NAME("norm_ffn.weight"), H);
        if (hp->qk_norm) {
            b->q_norm = need_vec(&n, NAME("attn.q_norm.weight"), hp->head_dim);
            b->k_norm = need_vec(&n, NAME("attn.k_norm.weight"), hp->head_dim);
        }
        b->wq = need_mat(&n, NAME("attn.q.weight"), H, Q, TR_TYPES_LINEAR);
        b->wk = need_mat(&n, NAME("attn.k.weight"), H, K, TR_TYPES_LINEAR);
        b->wv = need_mat(&n, NAME("attn.v.weight"), H, K, TR_TYPES_LINEAR);
        b->wo = need_mat(&n, NAME("attn.o.weight"), Q, H, TR_TYPES_LINEAR);
        b->gate = need_mat(&n, NAME("ffn.gate.weight"), H, I, TR_TYPES_LINEAR);
        b->up = need_mat(&n, NAME("ffn.up.weight"), H, I, TR_TYPES_LINEAR);
        b->down = need_mat(&n, NAME("ffn.down.weight"), I, H, TR_TYPES_LINEAR);
        if (!n.bad && b->gate->type != b->up->type) {
            TR_ERROR("%s: block %d ffn.gate (%s) and ffn.up (%s) differ in type", who, l,
                     tr_type_name(b->gate->type), tr_type_name(b->up->type));
            n.bad = true;
        }
    }
#undef NAME
    w->tok_emb = need_mat(&n, "dec.token_embd.weight", H, hp->n_vocab, emb_types);
    w->out_norm = need_vec(&n, "dec.output_norm.weight", H);
    w->head = tied ? w->tok_emb : need_mat(&n, "dec.output.weight", H, hp->n_vocab, emb_types);
    w->blocks = blocks;
    if (n.bad) return TRANSCRIBE_ERR_GGUF;
    if (!tied) TR_INFO("%s: untied output head dec.output.weight", who);
    return tr_clm_check(hp, w) ? TRANSCRIBE_OK : TRANSCRIBE_ERR_GGUF;
}

transcribe_status tr_clm_check_head(const struct gguf_file *f, const char *who, bool tied) {
    if (!tied && !tr_gguf_find_tensor(f, "dec.output.weight")) {
        TR_ERROR("%s: tie_word_embeddings is false but the file has no dec.output.weight head "
                 "tensor",
                 who);
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_clm_read_sizes(const struct gguf_file *f, const char *prefix, bool qk_norm,
                                    tr_clm_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    tr_clm_hparams_defaults(hp);
    hp->qk_norm = qk_norm;
    const tr_gguf_u32_key keys[] = {
        {"n_layers", 1, 1024, &hp->n_layer},           {"hidden_size", 1, 1 << 16, &hp->d_model},
        {"intermediate_size", 1, 1 << 20, &hp->d_ffn}, {"n_heads", 1, 1024, &hp->n_head},
        {"n_kv_heads", 1, 1024, &hp->n_head_kv},       {"head_dim", 2, 4096, &hp->head_dim},
    };
    transcribe_status st = tr_gguf_req_u32_keys(f, prefix, keys, sizeof keys / sizeof keys[0]);
    if (st != TRANSCRIBE_OK) return st;
    char key[128];
    snprintf(key, sizeof key, "%shidden_act", prefix);
    return tr_gguf_req_str_is(f, key, "silu", "swish");
}
