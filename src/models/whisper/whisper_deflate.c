/* Compression ratio of a token sequence (docs/formats/whisper.md §8.6): the ids
 * as 2-byte little-endian integers, compressed zlib-style (level 6: lazy
 * LZ77 matching, then the smallest of stored / fixed / dynamic Huffman
 * blocks) — only the compressed SIZE is computed, nothing is emitted. Byte
 * counts can differ from zlib by a few bytes (§12 item 5); only the 2.4
 * threshold depends on them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/whisper/whisper.h"

#define N_LIT  286
#define N_DIST 30

static const int k_len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const int k_len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                    2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const int k_dist_base[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                    33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                    1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const int k_dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                     6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
static const int k_cl_order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                   11, 4,  12, 3, 13, 2, 14, 1, 15};

static int len_code(int len) {
    int c = 28;
    while (c > 0 && k_len_base[c] > len) c--;
    return c;
}

static int dist_code(int d) {
    int c = 29;
    while (c > 0 && k_dist_base[c] > d) c--;
    return c;
}

/* Huffman code lengths for freq[0..n) limited to max_bits (frequencies are
 * halved until the limit holds — close to zlib's overflow repair). */
static void huff_lengths(const uint32_t *freq_in, int n, int max_bits, uint8_t *len) {
    /* Callers pass 1..N_LIT symbols; the bound also lets the compiler see
     * that the sizes below are never negative (GCC -Wstringop-overflow). */
    if (n <= 0 || n > N_LIT) return;
    uint32_t freq[N_LIT];
    memcpy(freq, freq_in, (size_t)n * sizeof *freq);
    for (;;) {
        int nodes = 0;
        uint64_t w[2 * N_LIT];
        int parent[2 * N_LIT];
        bool alive[2 * N_LIT];
        int leaf_of[N_LIT];
        for (int i = 0; i < n; i++) {
            leaf_of[i] = -1;
            if (freq[i]) {
                leaf_of[i] = nodes;
                w[nodes] = freq[i];
                parent[nodes] = -1;
                alive[nodes] = true;
                nodes++;
            }
        }
        memset(len, 0, (size_t)n);
        if (nodes == 0) return;
        if (nodes == 1) {
            for (int i = 0; i < n; i++)
                if (leaf_of[i] >= 0) len[i] = 1;
            return;
        }
        int n_alive = nodes;
        while (n_alive > 1) {
            int a = -1, b = -1;
            for (int i = 0; i < nodes; i++) {
                if (!alive[i]) continue;
                if (a < 0 || w[i] < w[a]) {
                    b = a;
                    a = i;
                } else if (b < 0 || w[i] < w[b]) {
                    b = i;
                }
            }
            alive[a] = alive[b] = false;
            w[nodes] = w[a] + w[b];
            parent[nodes] = -1;
            alive[nodes] = true;
            parent[a] = parent[b] = nodes;
            nodes++;
            n_alive--;
        }
        int maxd = 0;
        for (int i = 0; i < n; i++) {
            if (leaf_of[i] < 0) continue;
            int d = 0;
            for (int k = leaf_of[i]; parent[k] >= 0; k = parent[k]) d++;
            len[i] = (uint8_t)(d > 255 ? 255 : d);
            if (d > maxd) maxd = d;
        }
        if (maxd <= max_bits) return;
        for (int i = 0; i < n; i++)
            if (freq[i]) freq[i] = (freq[i] + 1) / 2;
    }
}

/* zlib scan_tree / send_tree over a code-length sequence: accumulates the
 * code-length alphabet frequencies, or (bl_len given) the bits to send. */
static uint64_t tree_rle(const uint8_t *lens, int n, uint32_t *bl_freq, const uint8_t *bl_len) {
    uint64_t bits = 0;
    int prevlen = -1, nextlen = lens[0], count = 0, max_count = 7, min_count = 4;
    if (nextlen == 0) {
        max_count = 138;
        min_count = 3;
    }
    for (int i = 0; i < n; i++) {
        int curlen = nextlen;
        nextlen = i + 1 < n ? lens[i + 1] : -1;
        if (++count < max_count && curlen == nextlen) continue;
        if (count < min_count) {
            if (bl_freq) bl_freq[curlen] += (uint32_t)count;
            if (bl_len) bits += (uint64_t)count * bl_len[curlen];
        } else if (curlen != 0) {
            if (curlen != prevlen) {
                if (bl_freq) bl_freq[curlen]++;
                if (bl_len) bits += bl_len[curlen];
                count--;
            }
            if (bl_freq) bl_freq[16]++;
            if (bl_len) bits += bl_len[16] + 2u;
        } else if (count <= 10) {
            if (bl_freq) bl_freq[17]++;
            if (bl_len) bits += bl_len[17] + 3u;
        } else {
            if (bl_freq) bl_freq[18]++;
            if (bl_len) bits += bl_len[18] + 7u;
        }
        count = 0;
        prevlen = curlen;
        if (nextlen == 0) {
            max_count = 138;
            min_count = 3;
        } else if (curlen == nextlen) {
            max_count = 6;
            min_count = 3;
        } else {
            max_count = 7;
            min_count = 4;
        }
    }
    return bits;
}

static size_t deflate_size(const uint8_t *d, int n) {
    /* LZ77 with one-step lazy evaluation (zlib level 6 style) */
    uint32_t lf[N_LIT] = {0}, df[N_DIST] = {0};
    uint64_t extra = 0;
    int *syms = malloc((size_t)(n + 1) * 2 * sizeof(int)); /* (len, dist) or (lit, 0) */
    if (!syms) return (size_t)n + 11;
    int ns = 0;
#define LONGEST(pos, L, D)                                                                         \
    do {                                                                                           \
        L = 0;                                                                                     \
        D = 0;                                                                                     \
        for (int j = (pos)-1; j >= 0 && (pos)-j <= 32768; j--) {                                   \
            int k = 0;                                                                             \
            while ((pos) + k < n && k < 258 && d[j + k] == d[(pos) + k]) k++;                      \
            if (k > L) {                                                                           \
                L = k;                                                                             \
                D = (pos)-j;                                                                       \
            }                                                                                      \
        }                                                                                          \
        if (L < 3 || (L == 3 && D > 4096)) L = 0;                                                  \
    } while (0)
    int i = 0;
    while (i < n) {
        int L, D;
        LONGEST(i, L, D);
        if (L > 0 && L < 16 && i + 1 < n) {
            int L2, D2;
            LONGEST(i + 1, L2, D2);
            if (L2 > L) L = 0; /* defer: emit a literal, take the longer match next */
        }
        if (L > 0) {
            syms[2 * ns] = L;
            syms[2 * ns + 1] = D;
            i += L;
        } else {
            syms[2 * ns] = d[i];
            syms[2 * ns + 1] = 0;
            i++;
        }
        ns++;
    }
#undef LONGEST
    for (int s = 0; s < ns; s++) {
        if (syms[2 * s + 1] == 0) {
            lf[syms[2 * s]]++;
        } else {
            int lc = len_code(syms[2 * s]), dc = dist_code(syms[2 * s + 1]);
            lf[257 + lc]++;
            df[dc]++;
            extra += (uint64_t)k_len_extra[lc] + (uint64_t)k_dist_extra[dc];
        }
    }
    lf[256]++;
    free(syms);

    /* fixed Huffman */
    uint64_t fixed = 3 + extra;
    for (int s = 0; s < N_LIT; s++) {
        int b = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
        fixed += (uint64_t)lf[s] * (uint64_t)b;
    }
    for (int s = 0; s < N_DIST; s++) fixed += (uint64_t)df[s] * 5u;

    /* dynamic Huffman */
    uint8_t ll[N_LIT], dl[N_DIST];
    huff_lengths(lf, N_LIT, 15, ll);
    huff_lengths(df, N_DIST, 15, dl);
    int hlit = 257, hdist = 1;
    for (int s = 0; s < N_LIT; s++)
        if (ll[s]) hlit = s + 1 > hlit ? s + 1 : hlit;
    for (int s = 0; s < N_DIST; s++)
        if (dl[s]) hdist = s + 1;
    uint32_t blf[19] = {0};
    tree_rle(ll, hlit, blf, NULL);
    tree_rle(dl, hdist, blf, NULL);
    uint8_t bll[19];
    huff_lengths(blf, 19, 7, bll);
    int hclen = 4;
    for (int k = 18; k >= 4; k--)
        if (bll[k_cl_order[k]]) {
            hclen = k + 1;
            break;
        }
    uint64_t dyn = 3 + 5 + 5 + 4 + 3u * (uint64_t)hclen + extra;
    dyn += tree_rle(ll, hlit, NULL, bll) + tree_rle(dl, hdist, NULL, bll);
    for (int s = 0; s < N_LIT; s++) dyn += (uint64_t)lf[s] * ll[s];
    for (int s = 0; s < N_DIST; s++) dyn += (uint64_t)df[s] * dl[s];

    uint64_t best = fixed < dyn ? fixed : dyn;
    size_t bytes = (size_t)((best + 7) / 8);
    size_t stored = (size_t)n + 5; /* header bits padded to a byte + LEN/NLEN */
    if (stored < bytes) bytes = stored;
    return bytes + 2 + 4; /* zlib header + Adler-32 */
}

double tr_wh_compression_ratio(const int32_t *ids, int n) {
    if (n <= 0) return 0.0;
    uint8_t *b = malloc((size_t)n * 2);
    if (!b) return 0.0;
    for (int i = 0; i < n; i++) {
        b[2 * i] = (uint8_t)(ids[i] & 0xff);
        b[2 * i + 1] = (uint8_t)((ids[i] >> 8) & 0xff);
    }
    size_t c = deflate_size(b, 2 * n);
    free(b);
    return (double)(2 * n) / (double)c;
}
