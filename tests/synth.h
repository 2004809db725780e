/* Test kit for the synthetic-file writers (the tests/<family>/ *_synth.h files): the
 * xorshift64 stream their random weights come from, a byte-level BPE
 * vocabulary (the 256 GPT-2 byte glyphs, then words, merge pieces and
 * specials), the lookup of a piece, and writing the file out; and a
 * xorshift32 writer (tr_synth_w) of random tensors stored as F32, F16 or
 * Q8_0. Writers keep their own tensor order (it fixes which random values
 * each tensor gets). */
#ifndef TR_TESTS_SYNTH_H
#define TR_TESTS_SYNTH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"
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

/* One xorshift32 step of *state: a uniform float in [-1, 1) (24 bits). */
static inline float tr_synth_rand32(uint32_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return (float)((*state >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* A writer drawing its values from a xorshift32 stream; ok turns false at the first failure. */
typedef struct tr_synth_w {
    gguf_writer *w;
    uint32_t rng;
    bool ok;
} tr_synth_w;

/* A tensor of n_dims dims ne with values offset + scale·U(-1, 1), stored as
 * type (Q8_0 falls back to F16 when ne[0] is not whole blocks). */
static inline void tr_synth_tensor(tr_synth_w *s, const char *name, int type, int n_dims,
                                   const int64_t *ne, float scale, float offset) {
    if (!s->ok) return;
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) n *= ne[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    if (!v) {
        s->ok = false;
        return;
    }
    for (int64_t i = 0; i < n; i++) v[i] = offset + scale * tr_synth_rand32(&s->rng);
    if (type == TR_Q8_0 && ne[0] % 32 != 0) type = TR_F16;
    void *q = v;
    if (type != TR_F32) {
        q = malloc((size_t)tr_row_bytes(type, ne[0]) * (size_t)(n / ne[0]));
        s->ok = q && tr_quantize_row(type, v, q, n);
    }
    s->ok = s->ok && tr_gguf_writer_add_tensor(s->w, name, type, n_dims, ne, q);
    if (q != v) free(q);
    free(v);
}

/* An F32 vector of n values offset + scale·U(-1, 1). */
static inline void tr_synth_vec(tr_synth_w *s, const char *name, int64_t n, float scale,
                                float offset) {
    const int64_t ne[1] = {n};
    tr_synth_tensor(s, name, TR_F32, 1, ne, scale, offset);
}

/* n samples (16 kHz) of a chirp sweeping 300 to 2800 Hz every second, at
 * amplitude 0.3, plus 0.05 of the xorshift32 noise of seed; malloc'ed. */
static inline float *tr_synth_chirp(int n, uint32_t seed) {
    float *x = malloc(sizeof(float) * (size_t)n);
    uint32_t s = seed;
    double ph = 0;
    for (int i = 0; x && i < n; i++) {
        ph += 2.0 * M_PI * (300.0 + 2500.0 * (i % 16000) / 16000.0) / 16000.0;
        x[i] = (float)(0.3 * sin(ph) + 0.05 * tr_synth_rand32(&s));
    }
    return x;
}

#endif
