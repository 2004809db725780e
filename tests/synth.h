/* Test kit for the synthetic-file writers (tests/<family>/*_synth.h): the
 * xorshift64 stream their random weights come from, a byte-level BPE
 * vocabulary (the 256 GPT-2 byte glyphs, then words, merge pieces and
 * specials), the lookup of a piece, and writing the file out. Writers keep
 * their own tensor order (it fixes which random values each tensor gets). */
#ifndef TR_TESTS_SYNTH_H
#define TR_TESTS_SYNTH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "text/tokenizer.h"

/* One xorshift64 step of *state: a uniform float in [-1, 1). */
static inline float tr_synth_rand(uint64_t *state) {
    uint64_t r = *state;
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    *state = r;
    return (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* The vocabulary: the 256 byte glyphs, words, then merge pieces inter (all
 * type 1, normal), then the specials (type 3, control). Returns its size;
 * *pieces_out and *types_out are malloc'ed (tr_synth_vocab_free). */
static inline int tr_synth_bpe_vocab(const char *const *words, int n_words,
                                     const char *const *inter, int n_inter,
                                     const char *const *special, int n_special, char ***pieces_out,
                                     int32_t **types_out) {
    const int V = 256 + n_words + n_inter + n_special;
    char **p = calloc((size_t)V, sizeof *p);
    int32_t *t = calloc((size_t)V, sizeof *t);
    int k = 0;
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        p[k] = tr_gpt2_piece_from_bytes(&c, 1);
        t[k++] = 1;
    }
    for (int i = 0; i < n_words; i++) {
        p[k] = strdup(words[i]);
        t[k++] = 1;
    }
    for (int i = 0; i < n_inter; i++) {
        p[k] = strdup(inter[i]);
        t[k++] = 1;
    }
    for (int i = 0; i < n_special; i++) {
        p[k] = strdup(special[i]);
        t[k++] = 3;
    }
    *pieces_out = p;
    *types_out = t;
    return V;
}

/* The id of piece s in pieces (V of them), or -1. */
static inline int tr_synth_find(char *const *pieces, int V, const char *s) {
    for (int i = 0; i < V; i++)
        if (strcmp(pieces[i], s) == 0) return i;
    return -1;
}

static inline void tr_synth_vocab_free(char **pieces, int32_t *types, int V) {
    for (int i = 0; i < V; i++) free(pieces[i]);
    free(pieces);
    free(types);
}

/* w written to path and freed, with the vocabulary; 0 on success, 1 when
 * the write failed. */
static inline int tr_synth_finish(gguf_writer *w, const char *path, char **pieces, int32_t *types,
                                  int V) {
    transcribe_status st = tr_gguf_writer_write(w, path);
    tr_gguf_writer_free(w);
    tr_synth_vocab_free(pieces, types, V);
    return st == TRANSCRIBE_OK ? 0 : 1;
}

#endif
