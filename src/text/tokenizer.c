/* Tokenizer construction, accessors and decoding (docs/formats/gguf.md §6). The
 * decode rule of each kind is applied once at construction: every token's
 * output bytes are precomputed, so token_bytes is a copy and decode a
 * concatenation followed by UTF-8 repair. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"
#include "util/log.h"
#include "util/vec.h"

void tr_ids_push(tr_ids *o, int32_t id) {
    if (o->oom) return;
    int32_t *v = tr_grow(o->v, &o->cap, o->n + 1, sizeof(*v), 256);
    if (!v) {
        o->oom = true;
        return;
    }
    o->v = v;
    o->v[o->n++] = id;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Writes the decoded bytes of piece p into out (never longer than n). */
static size_t decode_piece(tr_tok_kind kind, const char *p, size_t n, char *out) {
    const unsigned char *s = (const unsigned char *)p;
    size_t o = 0;
    if (kind == TR_TOK_GPT2) {
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            int cl = tr_utf8_decode(s + i, n - i, &cp);
            int b = cl > 0 ? tr_gpt2_cp_to_byte(cp) : -1;
            if (b >= 0) {
                out[o++] = (char)b;
                i += (size_t)cl;
            } else { /* outside the byte map: copied through */
                size_t k = cl > 0 ? (size_t)cl : 1;
                memcpy(out + o, p + i, k);
                o += k;
                i += k;
            }
        }
        return o;
    }
    if (kind == TR_TOK_SPM_BPE || kind == TR_TOK_SPM_UNIGRAM) {
        if (n == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>' &&
            hexval(p[3]) >= 0 && hexval(p[4]) >= 0) {
            out[0] = (char)(hexval(p[3]) * 16 + hexval(p[4]));
            return 1;
        }
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(p + i, "\xE2\x96\x81", 3) == 0) {
                out[o++] = ' ';
                i += 3;
            } else {
                out[o++] = p[i++];
            }
        }
        return o;
    }
    memcpy(out, p, n);
    return n;
}

void tr_tokenizer_free(tr_tokenizer *t) {
    if (!t) return;
    tr_piecemap_free(&t->pieces);
    free(t->scores);
    free(t->types);
    free(t->dec);
    free(t->dec_off);
    free(t->dec_len);
    tr_u64map_free(&t->pairs);
    tr_trie_free(&t->trie);
    tr_trie_free(&t->ud_trie);
    free(t);
}

transcribe_status tr_tok_new(tr_tok_kind kind, tr_pretok pre, const char *const *pieces,
                             const size_t *lens, int n, const float *scores, const int32_t *types,
                             const char *const *merges, int n_merges, int encode_mode,
                             tr_tokenizer **out) {
    *out = NULL;
    if (!pieces || n <= 0 || n_merges < 0 || (n_merges > 0 && !merges) || (int)kind < TR_TOK_GPT2 ||
        kind > TR_TOK_CHAR) {
        TR_ERROR("tokenizer: invalid arguments (n_pieces %d, n_merges %d)", n, n_merges);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_tokenizer *t = calloc(1, sizeof(*t));
    if (!t) return TRANSCRIBE_ERR_OOM;
    t->kind = kind;
    t->pre = pre;
    t->n_vocab = n;
    t->bos = t->eos = t->unk = t->blank = -1;
    t->has_types = types != NULL;
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    t->scores = calloc((size_t)n, sizeof(*t->scores));
    t->types = malloc((size_t)n * sizeof(*t->types));
    t->dec_off = malloc((size_t)n * sizeof(*t->dec_off));
    t->dec_len = malloc((size_t)n * sizeof(*t->dec_len));
    if (!t->scores || !t->types || !t->dec_off || !t->dec_len || !tr_piecemap_init(&t->pieces, n))
        goto fail;
    for (int i = 0; i < n; i++) {
        if (!pieces[i]) {
            TR_ERROR("tokenizer: piece %d is NULL", i);
            st = TRANSCRIBE_ERR_INVALID_ARG;
            goto fail;
        }
        size_t len = lens ? lens[i] : strlen(pieces[i]);
        if (tr_piecemap_add(&t->pieces, pieces[i], len) != i) goto fail;
        t->scores[i] = scores ? scores[i] : 0.0f;
        t->types[i] = types ? types[i] : TR_TT_NORMAL;
    }
    t->dec = malloc(t->pieces.arena_len + 1);
    if (!t->dec) goto fail;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = tr_piecemap_key(&t->pieces, i, &len);
        t->dec_off[i] = (uint32_t)o;
        t->dec_len[i] = (uint32_t)decode_piece(kind, p, len, t->dec + o);
        o += t->dec_len[i];
    }
    for (int b = 0; b < 256; b++) t->byte_sym[b] = t->byte_id[b] = -1;
    if (types)
        for (int i = 0; i < n; i++)
            if (types[i] == TR_TT_UNKNOWN) {
                t->unk = i;
                break;
            }
    if (kind == TR_TOK_GPT2 && encode_mode != 2) {
        st = tr_tok_build_gpt2(t, merges, n_merges, encode_mode == 1);
        if (st != TRANSCRIBE_OK) goto fail;
        t->can_encode = true;
    } else if (kind == TR_TOK_SPM_BPE || kind == TR_TOK_SPM_UNIGRAM) {
        st = tr_tok_build_spm(t);
        if (st != TRANSCRIBE_OK) goto fail;
        t->can_encode = true;
    }
    *out = t;
    return TRANSCRIBE_OK;
fail:
    if (st == TRANSCRIBE_ERR_OOM)
        TR_ERROR("tokenizer: out of memory building a %d-piece vocabulary", n);
    tr_tokenizer_free(t);
    return st;
}

transcribe_status tr_tokenizer_create(tr_tok_kind kind, tr_pretok pre, const char *const *pieces,
                                      int n_pieces, const float *scores, const int32_t *types,
                                      const char *const *merges, int n_merges, tr_tokenizer **out) {
    if (!out) return TRANSCRIBE_ERR_INVALID_ARG;
    int mode = (kind == TR_TOK_GPT2 && !merges) ? 1 : 0;
    return tr_tok_new(kind, pre, pieces, NULL, n_pieces, scores, types, merges,
                      merges ? n_merges : 0, mode, out);
}

transcribe_status tr_tokenizer_create_raw(const char *const *pieces, const size_t *lens,
                                          int n_pieces, const int32_t *types, tr_tokenizer **out) {
    if (!out || !pieces || !lens || n_pieces <= 0) {
        TR_ERROR("tokenizer: invalid raw vocabulary");
        if (out) *out = NULL;
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *out = NULL;
    /* Byte-map every piece (at most 2 bytes per byte) into one buffer. */
    size_t total = 0;
    for (int i = 0; i < n_pieces; i++) {
        if (!pieces[i] && lens[i]) return TRANSCRIBE_ERR_INVALID_ARG;
        if (lens[i] > (SIZE_MAX / 4) - total) return TRANSCRIBE_ERR_INVALID_ARG;
        total += lens[i] * 2 + 1;
    }
    char *buf = malloc(total ? total : 1);
    const char **mapped = malloc((size_t)n_pieces * sizeof(*mapped));
    size_t *mlens = malloc((size_t)n_pieces * sizeof(*mlens));
    transcribe_status st = TRANSCRIBE_ERR_OOM;
    if (buf && mapped && mlens) {
        size_t o = 0;
        for (int i = 0; i < n_pieces; i++) {
            mapped[i] = buf + o;
            for (size_t k = 0; k < lens[i]; k++)
                o += tr_gpt2_byte_piece((unsigned char)pieces[i][k], buf + o);
            mlens[i] = (size_t)(buf + o - mapped[i]);
            buf[o++] = '\0';
        }
        st = tr_tok_new(TR_TOK_GPT2, TR_PRE_GPT2, mapped, mlens, n_pieces, NULL, types, NULL, 0, 1,
                        out);
    } else {
        TR_ERROR("tokenizer: out of memory");
    }
    free(buf);
    free(mapped);
    free(mlens);
    return st;
}

char *tr_gpt2_piece_from_bytes(const void *bytes, size_t n) {
    if (n > SIZE_MAX / 2 - 1) return NULL;
    char *out = malloc(n * 2 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += tr_gpt2_byte_piece(((const unsigned char *)bytes)[i], out + o);
    out[o] = '\0';
    return out;
}

/* ---- accessors ---- */

tr_tok_kind tr_tokenizer_kind(const tr_tokenizer *t) {
    return t ? t->kind : TR_TOK_CHAR;
}
int tr_tokenizer_n_vocab(const tr_tokenizer *t) {
    return t ? t->n_vocab : 0;
}
tr_pretok tr_tokenizer_pretok(const tr_tokenizer *t) {
    return t ? t->pre : TR_PRE_QWEN2;
}
void tr_tokenizer_set_pretok(tr_tokenizer *t, tr_pretok pre) {
    if (t) t->pre = pre;
}
bool tr_tokenizer_can_encode(const tr_tokenizer *t) {
    return t && t->can_encode;
}

const char *tr_tokenizer_piece(const tr_tokenizer *t, int id) {
    if (!t || id < 0 || id >= t->n_vocab) return NULL;
    size_t len;
    return tr_piecemap_key(&t->pieces, id, &len);
}

int tr_tokenizer_find(const tr_tokenizer *t, const char *piece) {
    if (!t || !piece) return -1;
    int32_t id = tr_piecemap_find(&t->pieces, piece, strlen(piece));
    return id < t->n_vocab ? id : -1; /* ids past n_vocab are gpt2 merge strings */
}

bool tr_tokenizer_is_control(const tr_tokenizer *t, int id) {
    return t && id >= 0 && id < t->n_vocab && t->types[id] == TR_TT_CONTROL;
}

int tr_tokenizer_bos(const tr_tokenizer *t) {
    return t ? t->bos : -1;
}
int tr_tokenizer_eos(const tr_tokenizer *t) {
    return t ? t->eos : -1;
}
int tr_tokenizer_unk(const tr_tokenizer *t) {
    return t ? t->unk : -1;
}
int tr_tokenizer_blank(const tr_tokenizer *t) {
    return t ? t->blank : -1;
}

void tr_tokenizer_set_specials(tr_tokenizer *t, int bos, int eos, int unk, int blank) {
    if (!t) return;
    t->bos = bos;
    t->eos = eos;
    t->unk = (unk >= 0 && unk < t->n_vocab) ? unk : -1;
    t->blank = blank;
}

/* ---- encode / decode ---- */

int tr_tokenizer_encode(const tr_tokenizer *t, const char *text, int32_t *ids, size_t n_max) {
    if (!t || !text) return INT_MIN;
    if (!t->can_encode) {
        TR_ERROR("tokenizer: this %s vocabulary cannot encode text",
                 t->kind == TR_TOK_CHAR ? "char" : "gpt2 (no merges)");
        return INT_MIN;
    }
    tr_ids out = {0};
    size_t n = strlen(text);
    if (t->kind == TR_TOK_GPT2)
        tr_tok_encode_gpt2(t, (const unsigned char *)text, n, &out);
    else
        tr_tok_encode_spm(t, (const unsigned char *)text, n, &out);
    int r;
    if (out.oom || out.n > INT_MAX) {
        TR_ERROR("tokenizer: out of memory encoding %zu bytes", n);
        r = INT_MIN;
    } else if (out.n > n_max || (out.n && !ids)) {
        r = -(int)out.n;
    } else {
        if (out.n) memcpy(ids, out.v, out.n * sizeof(*ids));
        r = (int)out.n;
    }
    free(out.v);
    return r;
}

size_t tr_tokenizer_token_bytes(const tr_tokenizer *t, int id, char *buf, size_t cap) {
    if (!t || id < 0 || id >= t->n_vocab) return 0;
    size_t len = t->dec_len[id];
    if (buf && cap) memcpy(buf, t->dec + t->dec_off[id], len < cap ? len : cap);
    return len;
}

char *tr_tokenizer_decode(const tr_tokenizer *t, const int32_t *ids, int n, bool skip_control) {
    if (!t) return NULL;
    size_t total = 0;
    for (int i = 0; ids && i < n; i++)
        if (ids[i] >= 0 && ids[i] < t->n_vocab) total += t->dec_len[ids[i]];
    char *raw = malloc(total ? total : 1);
    if (!raw) return NULL;
    size_t o = 0;
    for (int i = 0; ids && i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab) continue; /* out of range: dropped */
        if (skip_control && t->types[id] == TR_TT_CONTROL) continue;
        memcpy(raw + o, t->dec + t->dec_off[id], t->dec_len[id]);
        o += t->dec_len[id];
    }
    char *s = tr_utf8_sanitize(raw, o);
    free(raw);
    return s;
}
