/* Writes a random-weight Cohere Transcribe file of the published geometry
 * (docs/formats/cohere.md §1: 48 × 1280 encoder, 8 × 1024 decoder, 16384
 * pieces) through tests/cohere/ch_synth.h, for transcribe-bench: linear
 * weights and the embedding Q8_0 (or F16), convolutions F16, the rest F32.
 * Not a test; built by hand:
 *   cc -O2 -std=c11 -Isrc -Iinclude -Itests -Itests/cohere tests/cohere/ch_make_real.c \
 *      build/lib/libtranscribe.a -lsoxr -lsndfile -lm -lpthread -ldl -o build/ch_make_real
 *   build/ch_make_real q8_0 build-ref/cohere-real-Q8_0.gguf [n_enc_layers] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch_synth.h"

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "q8_0") != 0 && strcmp(argv[1], "f16") != 0)) {
        fprintf(stderr, "usage: ch_make_real q8_0|f16 OUT.gguf [n_enc_layers]\n");
        return 2;
    }
    ch_synth_cfg c = ch_synth_default();
    c.enc.n_layers = argc > 3 ? atoi(argv[3]) : 48;
    c.enc.d = 1280;
    c.enc.H = 8;
    c.enc.d_ff = 5120;
    c.enc.k = 9;
    c.enc.C = 256;
    c.enc.f16 = true;
    c.enc.lin_type = strcmp(argv[1], "q8_0") == 0 ? 8 /* TR_Q8_0 */ : 0;
    c.dec_layers = 8;
    c.hidden = 1024;
    c.heads = 8;
    c.inner = 4096;
    c.max_seq = 1024;
    c.n_vocab = 16384;
    if (!ch_synth_write(&c, argv[2])) {
        fprintf(stderr, "ch_make_real: writing %s failed\n", argv[2]);
        return 1;
    }
    return 0;
}
