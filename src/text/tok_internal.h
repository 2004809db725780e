/* Internals shared by the tokenizer sources: the tokenizer struct, the hash
 * tables and trie it is built from, UTF-8 stepping and Unicode classes. */
#ifndef TR_TEXT_TOK_INTERNAL_H
#define TR_TEXT_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"

/* ---- Unicode classes (tok_utf8.c, table in tok_unicode_data.c) ---- */
enum { TR_UNI_L = 1, TR_UNI_N = 2, TR_UNI_WS = 4 };
extern const uint32_t tr_uni_ranges[][2];
extern const int tr_uni_n_ranges;
/* Class flags of a code point (0 for anything that is not L, N or White_Space). */
int tr_uni_flags(uint32_t cp);

/* Length of the well-formed UTF-8 sequence at s[0..n) (1..4) and its code
 * point, or 0 when s does not start with one (overlong, surrogate, > U+10FFFF,
 * truncated, stray continuation). n must be > 0. */
int tr_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Encodes cp (<= 0x10FFFF) into out (4 bytes); returns the length. */
int tr_utf8_encode(uint32_t cp, char *out);

/* GPT-2 byte map: the UTF-8 of byte b's code point (returns 1 or 2), and
 * the inverse (-1 for code points outside the map). */
size_t tr_gpt2_byte_piece(unsigned char b, char out[4]);
int tr_gpt2_cp_to_byte(uint32_t cp);

/* ---- open-addressing hash tables (tok_hash.c) ---- */
uint64_t tr_tok_hash_bytes(const void *p, size_t n);

/* uint64 → int64 map (merge pairs, trie edges). Key and value share a
 * slot so a probe touches one cache line; UINT64_MAX marks an empty slot
 * (never a real key: pair and edge keys stay below 2^63). */
typedef struct {
    uint64_t key;
    int64_t val;
} tr_u64slot;
typedef struct {
    tr_u64slot *slots;
    size_t mask, n;
} tr_u64map;

bool tr_u64map_init(tr_u64map *m, size_t expected);
void tr_u64map_free(tr_u64map *m);
/* Inserts unless present; false on OOM. */
bool tr_u64map_put(tr_u64map *m, uint64_t key, int64_t val);
/* Returns true and sets *val when present. */
bool tr_u64map_get(const tr_u64map *m, uint64_t key, int64_t *val);

/* Byte-string → id table: stores its own copies of the keys in one arena. */
typedef struct {
    uint32_t *slots; /* (id + 1), 0 empty */
    size_t mask;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *off; /* per id: arena offset (the arena stays below 4 GiB) */
    uint32_t *len;
    uint32_t *hash; /* per id: the key's hash, low 32 bits (the slot index never needs more) */
    int32_t n, cap;
} tr_piecemap;

bool tr_piecemap_init(tr_piecemap *m, int expected);
void tr_piecemap_free(tr_piecemap *m);
/* Appends key as the next id (returns it) and indexes it unless an equal key
 * exists (then the earlier id keeps the slot). -1 on OOM. */
int32_t tr_piecemap_add(tr_piecemap *m, const char *key, size_t n);
/* Id of the first key equal to s[0..n), -1 when absent. */
int32_t tr_piecemap_find(const tr_piecemap *m, const char *s, size_t n);
static inline const char *tr_piecemap_key(const tr_piecemap *m, int32_t id, size_t *n) {
    *n = m->len[id];
    return m->arena + m->off[id];
}

/* Byte trie for longest/all-prefix matching (SentencePiece encoders). */
typedef struct {
    tr_u64map edges; /* (node << 8 | byte) → child */
    int32_t *value;  /* per node: piece id or -1 */
    int32_t n_nodes, cap;
} tr_trie;

bool tr_trie_init(tr_trie *t);
void tr_trie_free(tr_trie *t);
bool tr_trie_insert(tr_trie *t, const char *s, size_t n, int32_t value);
/* Child of node for byte b, or -1. Node 0 is the root. */
static inline int32_t tr_trie_step(const tr_trie *t, int32_t node, unsigned char b) {
    int64_t v;
    return tr_u64map_get(&t->edges, ((uint64_t)(uint32_t)node << 8) | b, &v) ? (int32_t)v : -1;
}

/* ---- the tokenizer ---- */
enum {
    TR_TT_NORMAL = 1,
    TR_TT_UNKNOWN = 2,
    TR_TT_CONTROL = 3,
    TR_TT_USER_DEFINED = 4,
    TR_TT_UNUSED = 5,
    TR_TT_BYTE = 6,
};

struct tr_tokenizer {
    tr_tok_kind kind;
    tr_pretok pre;
    int n_vocab;
    tr_piecemap pieces; /* stored piece strings, ids 0..n_vocab-1 (+ gpt2 extras) */
    float *scores;      /* n_vocab, zeros when absent */
    int32_t *types;     /* n_vocab, NORMAL when absent */
    bool has_types;
    int bos, eos, unk, blank;

    /* Decoded bytes of each token (after the kind's decode rule). */
    char *dec;
    uint32_t *dec_off; /* no longer than the piece arena: below 4 GiB */
    uint32_t *dec_len;

    /* gpt2: BPE symbols are vocab ids, plus merge strings that are not vocab
     * entries, appended to `pieces` as ids >= n_vocab. */
    bool can_encode;
    tr_u64map pairs;       /* (left << 32 | right) → (rank << 32 | result) */
    int32_t byte_sym[256]; /* initial symbol of each raw byte, -1 unknown */

    /* SentencePiece */
    tr_trie trie;    /* unigram only: NORMAL/USER_DEFINED/UNUSED pieces */
    tr_trie ud_trie; /* user-defined pieces (matched as whole units) */
    bool has_ud;
    int32_t byte_id[256]; /* <0xHH> pieces, -1 absent */
    bool byte_fallback;
    bool spm_ws_split; /* bpe: no piece has U+2581 after its start */
    float min_score, max_score;
};

/* Growable int32 output used by the encoders. */
typedef struct {
    int32_t *v;
    size_t n, cap;
    bool oom;
} tr_ids;
void tr_ids_push(tr_ids *o, int32_t id);

/* Shared constructor (tokenizer.c). lens may be NULL (NUL-terminated
 * pieces). encode_mode for gpt2: 0 = merges given, 1 = rank by id, 2 = no
 * encoder (decode only). */
transcribe_status tr_tok_new(tr_tok_kind kind, tr_pretok pre, const char *const *pieces,
                             const size_t *lens, int n, const float *scores, const int32_t *types,
                             const char *const *merges, int n_merges, int encode_mode,
                             tr_tokenizer **out);

/* Builders (tokenizer.c) and encoders (tok_bpe.c, tok_spm.c). */
transcribe_status tr_tok_build_gpt2(tr_tokenizer *t, const char *const *merges, int n_merges,
                                    bool rank_by_id);
transcribe_status tr_tok_build_spm(tr_tokenizer *t);
void tr_tok_encode_gpt2(const tr_tokenizer *t, const unsigned char *s, size_t n, tr_ids *out);
void tr_tok_encode_spm(const tr_tokenizer *t, const unsigned char *s, size_t n, tr_ids *out);

/* Pre-tokenizer (tok_pretok.c): splits cps[0..n) (flags per code point in
 * fl, with invalid bytes carrying 0) and returns the end index of the
 * pre-token starting at p. */
size_t tr_pretok_next(tr_pretok pre, const uint32_t *cps, const uint8_t *fl, size_t n, size_t p);

#endif
