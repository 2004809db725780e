/* Hash tables and the byte trie behind piece lookup, merge ranks and the
 * SentencePiece lattice. Open addressing with power-of-two capacity, kept at
 * most half full, so lookups stay a probe or two on 150k-piece vocabularies. */
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"
#include "util/vec.h"

uint64_t tr_tok_hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return h;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

/* ---- uint64 → int64 ---- */

#define EMPTY_KEY UINT64_MAX

bool tr_u64map_init(tr_u64map *m, size_t expected) {
    memset(m, 0, sizeof(*m));
    size_t cap = pow2_at_least(expected * 2 + 1);
    m->slots = malloc(cap * sizeof(*m->slots));
    if (!m->slots) return false;
    for (size_t i = 0; i < cap; i++) m->slots[i].key = EMPTY_KEY;
    m->mask = cap - 1;
    return true;
}

void tr_u64map_free(tr_u64map *m) {
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static bool u64map_grow(tr_u64map *m) {
    tr_u64map g;
    if (!tr_u64map_init(&g, (m->mask + 1))) return false;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slots[i].key != EMPTY_KEY) tr_u64map_put(&g, m->slots[i].key, m->slots[i].val);
    tr_u64map_free(m);
    *m = g;
    return true;
}

bool tr_u64map_put(tr_u64map *m, uint64_t key, int64_t val) {
    if (key == EMPTY_KEY) return false;
    if ((m->n + 1) * 2 > m->mask + 1 && !u64map_grow(m)) return false;
    size_t i = mix64(key) & m->mask;
    while (m->slots[i].key != EMPTY_KEY) {
        if (m->slots[i].key == key) return true;
        i = (i + 1) & m->mask;
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->n++;
    return true;
}

bool tr_u64map_get(const tr_u64map *m, uint64_t key, int64_t *val) {
    if (!m->slots) return false;
    size_t i = mix64(key) & m->mask;
    for (;;) {
        uint64_t k = m->slots[i].key;
        if (k == key) {
            *val = m->slots[i].val;
            return true;
        }
        if (k == EMPTY_KEY) return false;
        i = (i + 1) & m->mask;
    }
}

/* ---- byte string → id ---- */

bool tr_piecemap_init(tr_piecemap *m, int expected) {
    memset(m, 0, sizeof(*m));
    if (expected < 16) expected = 16;
    size_t cap = pow2_at_least((size_t)expected * 2); /* load <= 1/2 */
    m->slots = calloc(cap, sizeof(*m->slots));
    m->cap = expected;
    m->off = malloc((size_t)m->cap * sizeof(*m->off));
    m->len = malloc((size_t)m->cap * sizeof(*m->len));
    m->hash = malloc((size_t)m->cap * sizeof(*m->hash));
    m->arena_cap = (size_t)expected * 8;
    m->arena = malloc(m->arena_cap);
    if (!m->slots || !m->off || !m->len || !m->hash || !m->arena) {
        tr_piecemap_free(m);
        return false;
    }
    m->mask = cap - 1;
    return true;
}

void tr_piecemap_free(tr_piecemap *m) {
    free(m->slots);
    free(m->off);
    free(m->len);
    free(m->hash);
    free(m->arena);
    memset(m, 0, sizeof(*m));
}

static void piecemap_index(tr_piecemap *m, int32_t id) {
    size_t i = m->hash[id] & m->mask;
    while (m->slots[i]) {
        int32_t o = (int32_t)m->slots[i] - 1;
        if (m->hash[o] == m->hash[id] && m->len[o] == m->len[id] &&
            memcmp(m->arena + m->off[o], m->arena + m->off[id], m->len[id]) == 0)
            return; /* an earlier equal key keeps the slot */
        i = (i + 1) & m->mask;
    }
    m->slots[i] = (uint32_t)id + 1;
}

int32_t tr_piecemap_add(tr_piecemap *m, const char *key, size_t n) {
    if (n >= UINT32_MAX - m->arena_len || m->n == INT32_MAX - 1) return -1; /* 32-bit offsets */
    if (m->n == m->cap) {
        int32_t cap = m->cap > INT32_MAX / 2 ? INT32_MAX - 1 : m->cap * 2;
        uint32_t *off = realloc(m->off, (size_t)cap * sizeof(*off));
        if (off) m->off = off;
        uint32_t *len = realloc(m->len, (size_t)cap * sizeof(*len));
        if (len) m->len = len;
        uint32_t *hash = realloc(m->hash, (size_t)cap * sizeof(*hash));
        if (hash) m->hash = hash;
        if (!off || !len || !hash) return -1;
        m->cap = cap;
    }
    char *a = tr_grow(m->arena, &m->arena_cap, m->arena_len + n + 1, 1, 256);
    if (!a) return -1;
    m->arena = a;
    if ((size_t)(m->n + 1) * 2 > m->mask + 1) {
        size_t cap = (m->mask + 1) * 2;
        uint32_t *slots = calloc(cap, sizeof(*slots));
        if (!slots) return -1;
        free(m->slots);
        m->slots = slots;
        m->mask = cap - 1;
        for (int32_t i = 0; i < m->n; i++) piecemap_index(m, i);
    }
    int32_t id = m->n++;
    memcpy(m->arena + m->arena_len, key, n);
    m->arena[m->arena_len + n] = '\0'; /* pieces double as C strings */
    m->off[id] = (uint32_t)m->arena_len;
    m->len[id] = (uint32_t)n;
    m->hash[id] = (uint32_t)tr_tok_hash_bytes(key, n);
    m->arena_len += n + 1;
    piecemap_index(m, id);
    return id;
}

int32_t tr_piecemap_find(const tr_piecemap *m, const char *s, size_t n) {
    if (!m->slots) return -1;
    uint64_t h = tr_tok_hash_bytes(s, n);
    size_t i = h & m->mask;
    while (m->slots[i]) {
        int32_t o = (int32_t)m->slots[i] - 1;
        if (m->hash[o] == (uint32_t)h && m->len[o] == n && memcmp(m->arena + m->off[o], s, n) == 0)
            return o;
        i = (i + 1) & m->mask;
    }
    return -1;
}

/* ---- trie ---- */

bool tr_trie_init(tr_trie *t) {
    memset(t, 0, sizeof(*t));
    t->cap = 64;
    t->value = malloc((size_t)t->cap * sizeof(*t->value));
    if (!t->value || !tr_u64map_init(&t->edges, 64)) {
        tr_trie_free(t);
        return false;
    }
    t->value[0] = -1;
    t->n_nodes = 1;
    return true;
}

void tr_trie_free(tr_trie *t) {
    tr_u64map_free(&t->edges);
    free(t->value);
    memset(t, 0, sizeof(*t));
}

bool tr_trie_insert(tr_trie *t, const char *s, size_t n, int32_t value) {
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t next = tr_trie_step(t, node, (unsigned char)s[i]);
        if (next < 0) {
            if (t->n_nodes == INT32_MAX) return false;
            int32_t *v = tr_grow_int(t->value, &t->cap, t->n_nodes + 1, sizeof(*v), 64);
            if (!v) return false;
            t->value = v;
            next = t->n_nodes++;
            t->value[next] = -1;
            uint64_t key = ((uint64_t)(uint32_t)node << 8) | (unsigned char)s[i];
            if (!tr_u64map_put(&t->edges, key, next)) return false;
        }
        node = next;
    }
    if (t->value[node] < 0) t->value[node] = value; /* first piece wins */
    return true;
}
