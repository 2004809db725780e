/* tr_tokenizer_from_gguf: reads the tokenizer.* keys (docs/formats/gguf.md §6)
 * with the tri-state getters; tr_tokenizer_load_gpt2 / _require: the
 * byte-level BPE vocabulary the audio-LLM families share, and its special
 * pieces. Kept apart from tokenizer.c so programs that
 * build tokenizers from arrays do not pull in the GGUF reader. */
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "text/tok_internal.h"
#include "util/log.h"

static transcribe_status bad_type(const char *key) {
    TR_ERROR("tokenizer: %s has the wrong type", key);
    return TRANSCRIBE_ERR_GGUF;
}

static transcribe_status read_id(const gguf_file *f, const char *key, int *out) {
    int32_t v = -1;
    int r = tr_gguf_get_token_id(f, key, &v);
    if (r < 0) return bad_type(key);
    *out = (r == 1 && v >= 0) ? v : -1;
    return TRANSCRIBE_OK;
}

transcribe_status tr_tokenizer_from_gguf(const struct gguf_file *f, tr_tokenizer **out) {
    if (!out) return TRANSCRIBE_ERR_INVALID_ARG;
    *out = NULL;
    if (!f) return TRANSCRIBE_ERR_INVALID_ARG;

    const char *model = NULL;
    int r = tr_gguf_get_str(f, "tokenizer.ggml.model", &model);
    if (r < 0) return bad_type("tokenizer.ggml.model");
    if (r == 0 || !model) {
        TR_ERROR("tokenizer: tokenizer.ggml.model is missing");
        return TRANSCRIBE_ERR_GGUF;
    }
    tr_tok_kind kind;
    if (strcmp(model, "gpt2") == 0) {
        kind = TR_TOK_GPT2;
    } else if (strcmp(model, "bpe") == 0) {
        kind = TR_TOK_SPM_BPE;
    } else if (strcmp(model, "unigram") == 0) {
        kind = TR_TOK_SPM_UNIGRAM;
    } else if (strcmp(model, "char") == 0) {
        kind = TR_TOK_CHAR;
    } else {
        TR_ERROR("tokenizer: tokenizer.ggml.model \"%s\" is not implemented", model);
        return TRANSCRIBE_ERR_NOT_IMPLEMENTED;
    }

    /* Absent pre → qwen2; converter-only values (tekken, medasr, default, …)
     * also encode as qwen2. */
    tr_pretok pre = TR_PRE_QWEN2;
    const char *pre_s = NULL;
    r = tr_gguf_get_str(f, "tokenizer.ggml.pre", &pre_s);
    if (r < 0) return bad_type("tokenizer.ggml.pre");
    if (r == 1 && pre_s) {
        if (strcmp(pre_s, "gpt2") == 0)
            pre = TR_PRE_GPT2;
        else if (strcmp(pre_s, "granite") == 0)
            pre = TR_PRE_GRANITE;
        else if (strcmp(pre_s, "qwen2") != 0)
            TR_DEBUG("tokenizer: pre-tokenizer \"%s\" encodes as qwen2", pre_s);
    }

    const char *const *tokens = NULL;
    uint64_t n_tokens = 0;
    r = tr_gguf_get_arr_str(f, "tokenizer.ggml.tokens", &tokens, &n_tokens);
    if (r < 0) return bad_type("tokenizer.ggml.tokens");
    if (r == 0 || n_tokens == 0 || !tokens) {
        TR_ERROR("tokenizer: tokenizer.ggml.tokens is missing or empty");
        return TRANSCRIBE_ERR_GGUF;
    }
    if (n_tokens > (uint64_t)INT32_MAX - 1) {
        TR_ERROR("tokenizer: %llu tokens is too many", (unsigned long long)n_tokens);
        return TRANSCRIBE_ERR_GGUF;
    }

    const float *scores = NULL;
    uint64_t n_scores = 0;
    r = tr_gguf_get_arr_f32(f, "tokenizer.ggml.scores", &scores, &n_scores);
    if (r < 0) return bad_type("tokenizer.ggml.scores");
    if (r == 1 && n_scores != n_tokens) {
        TR_ERROR("tokenizer: %llu scores for %llu tokens", (unsigned long long)n_scores,
                 (unsigned long long)n_tokens);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (r == 0) scores = NULL;

    const int32_t *types = NULL;
    uint64_t n_types = 0;
    r = tr_gguf_get_arr_i32(f, "tokenizer.ggml.token_type", &types, &n_types);
    if (r < 0) return bad_type("tokenizer.ggml.token_type");
    if (r == 1 && n_types != n_tokens) {
        TR_ERROR("tokenizer: %llu token types for %llu tokens", (unsigned long long)n_types,
                 (unsigned long long)n_tokens);
        return TRANSCRIBE_ERR_GGUF;
    }
    if (r == 0) types = NULL;

    const char *const *merges = NULL;
    uint64_t n_merges = 0;
    r = tr_gguf_get_arr_str(f, "tokenizer.ggml.merges", &merges, &n_merges);
    if (r < 0) return bad_type("tokenizer.ggml.merges");
    if (r == 0) {
        merges = NULL;
        n_merges = 0;
    }
    if (n_merges > (uint64_t)INT32_MAX - 1) {
        TR_ERROR("tokenizer: %llu merges is too many", (unsigned long long)n_merges);
        return TRANSCRIBE_ERR_GGUF;
    }

    int bos, eos, unk, blank;
    transcribe_status st;
    if ((st = read_id(f, "tokenizer.ggml.bos_token_id", &bos)) != TRANSCRIBE_OK ||
        (st = read_id(f, "tokenizer.ggml.eos_token_id", &eos)) != TRANSCRIBE_OK ||
        (st = read_id(f, "tokenizer.ggml.unknown_token_id", &unk)) != TRANSCRIBE_OK ||
        (st = read_id(f, "tokenizer.ggml.blank_token_id", &blank)) != TRANSCRIBE_OK)
        return st;

    /* A gpt2 file without merges decodes but cannot encode (as upstream). */
    int mode = (kind == TR_TOK_GPT2 && !merges) ? 2 : 0;
    tr_tokenizer *t = NULL;
    st = tr_tok_new(kind, pre, tokens, NULL, (int)n_tokens, scores, types, merges, (int)n_merges,
                    mode, &t);
    if (st != TRANSCRIBE_OK) return st == TRANSCRIBE_ERR_INVALID_ARG ? TRANSCRIBE_ERR_GGUF : st;
    int type_unk = t->unk;
    tr_tokenizer_set_specials(t, bos, eos, unk >= 0 ? unk : type_unk, blank);
    *out = t;
    return TRANSCRIBE_OK;
}

transcribe_status tr_tokenizer_load_gpt2(const struct gguf_file *f, const char *who, int n_vocab,
                                         tr_tokenizer **tok, int *eos) {
    const char *const gpt2[] = {"gpt2", NULL};
    transcribe_status st = tr_gguf_req_str_in(f, "tokenizer.ggml.model", gpt2);
    if (st == TRANSCRIBE_OK) st = tr_tokenizer_from_gguf(f, tok);
    if (st) return st;
    if (tr_tokenizer_n_vocab(*tok) != n_vocab) {
        TR_ERROR("%s: %d tokens in tokenizer.ggml.tokens, vocab_size %d", who,
                 tr_tokenizer_n_vocab(*tok), n_vocab);
        return TRANSCRIBE_ERR_GGUF;
    }
    if ((st = tr_gguf_opt_token_id(f, "tokenizer.ggml.eos_token_id", n_vocab, eos))) return st;
    if (*eos < 0) {
        TR_ERROR("%s: tokenizer.ggml.eos_token_id is missing (decoding needs an end token)", who);
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}

transcribe_status tr_tokenizer_require(const tr_tokenizer *tok, const char *who, const char *piece,
                                       int *out) {
    *out = tr_tokenizer_find(tok, piece);
    if (*out < 0) {
        TR_ERROR("%s: the vocabulary has no '%s' token", who, piece);
        return TRANSCRIBE_ERR_GGUF;
    }
    return TRANSCRIBE_OK;
}
