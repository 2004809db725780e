/* Writes small seed inputs for the fuzzers: fuzz_seeds GGUF_DIR BIN_DIR.
 * GGUF seeds come from the writer (every KV type, several dtypes) plus a
 * v2 file with nested arrays; .bin seeds use the 'S' synthetic-header mode
 * of fuzz_ggml_bin (vocabulary + a few tensor records). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

static int save(const char *dir, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    size_t w = fwrite(p, 1, n, f);
    return (fclose(f) != 0 || w != n) ? 1 : 0;
}

static int gguf_seeds(const char *dir) {
    int err = 0;
    for (int variant = 0; variant < 3; variant++) {
        gguf_writer *w = tr_gguf_writer_create();
        tr_gguf_writer_set_str(w, "general.architecture", "whisper");
        tr_gguf_writer_set_u32(w, "stt.whisper.n_layer", 4);
        tr_gguf_writer_set_i32(w, "tokenizer.ggml.eos_token_id", 2);
        tr_gguf_writer_set_f32(w, "stt.frontend.f_max", 8000.0f);
        tr_gguf_writer_set_bool(w, "stt.capability.translate", true);
        tr_gguf_writer_set_u64(w, "x.u64", 5);
        const char *toks[] = {"a", "b", "\xc4\xa0the"};
        const int32_t types[] = {1, 1, 3};
        const float scores[] = {0.0f, -1.0f, -2.0f};
        tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
        tr_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", types, 3);
        tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", scores, 3);
        static uint8_t buf[4096];
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 37);
        tr_gguf_writer_add_tensor(w, "enc.conv.0.bias", TR_F32, 1, (const int64_t[]){8}, buf);
        if (variant >= 1) {
            tr_gguf_writer_add_tensor(w, "enc.blocks.0.attn.q.weight", TR_Q8_0, 2,
                                   (const int64_t[]){32, 2}, buf);
            tr_gguf_writer_add_tensor(w, "dec.token_embd.weight", TR_F16, 2, (const int64_t[]){4, 3},
                                   buf);
        }
        if (variant >= 2) {
            tr_gguf_writer_add_tensor(w, "dec.k", TR_Q4_K, 1, (const int64_t[]){256}, buf);
            tr_gguf_writer_add_tensor(w, "dec.b", TR_BF16, 3, (const int64_t[]){2, 2, 2}, buf);
        }
        void *img;
        size_t n;
        if (tr_gguf_writer_to_memory(w, &img, &n) == TRANSCRIBE_OK) {
            char name[32];
            snprintf(name, sizeof name, "writer%d.gguf", variant);
            err |= save(dir, name, img, n);
            free(img);
        }
        tr_gguf_writer_free(w);
    }
    /* v2, nested array, every scalar type */
    static const uint8_t v2[] = {'G',
                                 'G',
                                 'U',
                                 'F',
                                 2,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 3,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 /* "a" u16 */ 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 'a',
                                 2,
                                 0,
                                 0,
                                 0,
                                 7,
                                 0,
                                 /* "b" f64 */ 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 'b',
                                 12,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 4,
                                 64,
                                 /* "c" array of array of i8 */ 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 'c',
                                 9,
                                 0,
                                 0,
                                 0,
                                 9,
                                 0,
                                 0,
                                 0,
                                 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 1,
                                 0,
                                 0,
                                 0,
                                 2,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 5,
                                 6};
    err |= save(dir, "v2_nested.gguf", v2, sizeof v2);
    return err;
}

static void le32(uint8_t **p, uint32_t v) {
    for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}

static int bin_seeds(const char *dir) {
    static uint8_t buf[8192];
    uint8_t *p = buf;
    *p++ = 'S', *p++ = 0x01; /* English, 2 layers */
    le32(&p, 3);
    le32(&p, 1), *p++ = 'a';
    le32(&p, 0);
    le32(&p, 4), memcpy(p, " the", 4), p += 4;
    int err = save(dir, "vocab_only.bin", buf, (size_t)(p - buf));
    const struct {
        const char *name;
        int nd, type, ne0, ne1;
    } ts[] = {
        {"encoder.conv1.bias", 2, TR_F32, 1, 8},
        {"encoder.blocks.1.attn.query.weight", 2, TR_Q8_0, 32, 2},
        {"decoder.blocks.0.cross_attn.key.weight", 2, TR_F16, 4, 2},
        {"decoder.token_embedding.weight", 2, TR_Q4_K, 256, 1},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        le32(&p, (uint32_t)ts[i].nd), le32(&p, (uint32_t)strlen(ts[i].name));
        le32(&p, (uint32_t)ts[i].type), le32(&p, (uint32_t)ts[i].ne0),
            le32(&p, (uint32_t)ts[i].ne1);
        memcpy(p, ts[i].name, strlen(ts[i].name)), p += strlen(ts[i].name);
        int block = ts[i].type == TR_Q8_0 ? 32 : ts[i].type == TR_Q4_K ? 256 : 1;
        size_t bb = ts[i].type == TR_F32    ? 4
                    : ts[i].type == TR_F16  ? 2
                    : ts[i].type == TR_Q8_0 ? 34
                                            : 144;
        size_t bytes = (size_t)ts[i].ne0 / (size_t)block * bb * (size_t)ts[i].ne1;
        for (size_t k = 0; k < bytes; k++) *p++ = (uint8_t)k;
    }
    err |= save(dir, "tensors.bin", buf, (size_t)(p - buf));
    return err;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s GGUF_SEED_DIR BIN_SEED_DIR\n", argv[0]);
        return 2;
    }
    int err = gguf_seeds(argv[1]) | bin_seeds(argv[2]);
    if (err) fprintf(stderr, "fuzz_seeds: could not write seeds\n");
    return err;
}
