/* Tokenizers from GGUF vocabularies (docs/formats/gguf.md §6): byte-level BPE
 * ("gpt2") and SentencePiece ("bpe", "unigram"), plus "char". Decoding works
 * for every kind; encoding for gpt2 and the SentencePiece kinds. */
#ifndef TR_TEXT_TOKENIZER_H
#define TR_TEXT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transcribe.h"

struct gguf_file;

typedef enum {
    TR_TOK_GPT2 = 0,    /* byte-level BPE */
    TR_TOK_SPM_BPE = 1, /* SentencePiece BPE ("bpe") */
    TR_TOK_SPM_UNIGRAM = 2,
    TR_TOK_CHAR = 3,
} tr_tok_kind;

typedef enum { TR_PRE_GPT2 = 0, TR_PRE_QWEN2 = 1, TR_PRE_GRANITE = 2 } tr_pretok;

typedef struct tr_tokenizer tr_tokenizer;

/* From tokenizer.* keys. NOT_IMPLEMENTED for unknown tokenizer.ggml.model,
 * GGUF for missing/mistyped keys. */
transcribe_status tr_tokenizer_from_gguf(const struct gguf_file *f, tr_tokenizer **out);
/* The audio-LLM families' byte-level BPE tokenizer (tokenizer.ggml.model must be gpt2) with
 * n_vocab tokens and a required tokenizer.ggml.eos_token_id. *tok is set
 * when created (caller frees, also on error). */
transcribe_status tr_tokenizer_load_gpt2(const struct gguf_file *f, const char *who, int n_vocab,
                                         tr_tokenizer **tok, int *eos);
/* Id of an exact vocabulary piece; GGUF (logged) when absent. */
transcribe_status tr_tokenizer_require(const tr_tokenizer *tok, const char *who, const char *piece,
                                       int *out);

/* From explicit arrays (legacy .bin vocabularies, tests). scores, types and
 * merges may be NULL. Pieces are copied. A gpt2 vocabulary without merges
 * encodes tiktoken-style: the rank of a pair is the id of the concatenated
 * piece (CONTROL pieces excluded). The first id of a duplicated piece wins. */
transcribe_status tr_tokenizer_create(tr_tok_kind kind, tr_pretok pre, const char *const *pieces,
                                      int n_pieces, const float *scores, const int32_t *types,
                                      const char *const *merges, int n_merges, tr_tokenizer **out);
void tr_tokenizer_free(tr_tokenizer *t);

/* ---- additions (text module) ---- */
/* Legacy whisper.cpp .bin vocabularies (docs/formats/gguf.md §11.3): pieces are
 * raw byte strings (lens[i] bytes, may hold NULs). Builds a gpt2-kind
 * tokenizer over their byte-mapped form, pre-tokenizer gpt2, rank = id of
 * the concatenation. types may be NULL; mark special literals CONTROL (3) so
 * they never take part in merges. tr_tokenizer_piece returns the byte-mapped
 * form; token_bytes/decode return the raw bytes. */
transcribe_status tr_tokenizer_create_raw(const char *const *pieces, const size_t *lens,
                                          int n_pieces, const int32_t *types, tr_tokenizer **out);
/* GPT-2 byte map of raw bytes: malloc'ed NUL-terminated piece string. */
char *tr_gpt2_piece_from_bytes(const void *bytes, size_t n);
/* Pre-tokenizer flavour (from tokenizer.ggml.pre; qwen2 when absent). A
 * family whose flavour is fixed (Whisper: gpt2) may override it. */
tr_pretok tr_tokenizer_pretok(const tr_tokenizer *t);
void tr_tokenizer_set_pretok(tr_tokenizer *t, tr_pretok pre);
/* False for char vocabularies and gpt2 GGUF vocabularies without merges. */
bool tr_tokenizer_can_encode(const tr_tokenizer *t);
/* Overrides the special ids (-1 = none); unk out of range becomes -1. */
void tr_tokenizer_set_specials(tr_tokenizer *t, int bos, int eos, int unk, int blank);

tr_tok_kind tr_tokenizer_kind(const tr_tokenizer *t);
int tr_tokenizer_n_vocab(const tr_tokenizer *t);
const char *tr_tokenizer_piece(const tr_tokenizer *t, int id); /* stored piece; NULL out of range */
int tr_tokenizer_find(const tr_tokenizer *t, const char *piece); /* exact piece → id, -1 absent */
bool tr_tokenizer_is_control(const tr_tokenizer *t, int id);
/* Special ids from the file (-1 when absent). */
int tr_tokenizer_bos(const tr_tokenizer *t);
int tr_tokenizer_eos(const tr_tokenizer *t);
int tr_tokenizer_unk(const tr_tokenizer *t);
int tr_tokenizer_blank(const tr_tokenizer *t);

/* Encodes UTF-8 text (no BOS/EOS; special-token literals are plain text).
 * Returns N >= 0 ids written, -N when n_max is too small (N needed; nothing
 * written), or INT_MIN when the kind cannot encode / input is NULL / out of
 * memory. Invalid UTF-8 is encoded byte-wise, never crashes.
 * gpt2: pre-tokenizer regex + byte map + merge by rank (docs/formats/gguf.md §6.1).
 * bpe/unigram: SentencePiece with identity normalisation: a "▁" is
 * prepended to non-empty text and each ASCII space becomes "▁" (no NFKC, no
 * whitespace collapsing); user-defined pieces match as whole units; unknown
 * characters become <0xHH> byte pieces when the vocabulary has them, else
 * one unk id per run. Decoding therefore returns " " + text. */
int tr_tokenizer_encode(const tr_tokenizer *t, const char *text, int32_t *ids, size_t n_max);

/* Bytes that token `id` contributes to decoded text, after the kind's decode
 * rule (byte map / ▁ → space / <0xHH>). May be a partial UTF-8 sequence.
 * Writes at most cap bytes to buf and returns the full length (like
 * snprintf, without a terminating NUL); 0 for out-of-range ids. */
size_t tr_tokenizer_token_bytes(const tr_tokenizer *t, int id, char *buf, size_t cap);

/* Decodes a sequence to a malloc'ed, NUL-terminated, valid UTF-8 string
 * (invalid or incomplete sequences become U+FFFD). skip_control drops
 * CONTROL tokens. NULL on OOM. */
char *tr_tokenizer_decode(const tr_tokenizer *t, const int32_t *ids, int n, bool skip_control);

/* Replaces invalid UTF-8 in s[0..n) with U+FFFD; returns a malloc'ed string. */
char *tr_utf8_sanitize(const char *s, size_t n);
/* Length of the longest prefix of s[0..n) that ends on a complete UTF-8
 * sequence (for streaming text out token by token). */
size_t tr_utf8_complete_prefix(const char *s, size_t n);

#endif
