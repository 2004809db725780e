/* Hostile GGUF images: every one must come back as TRANSCRIBE_ERR_GGUF with
 * no crash, leak or out-of-bounds read (this also runs under ASan+UBSan).
 * Each image is copied into an exact-size heap block so ASan sees any read
 * past its end. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_build.h"
#include "tensor/dtype.h"
#include "test_util.h"

static transcribe_status try_open(const void *p, size_t n) {
    void *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, p, n);
    gguf_file *f = NULL;
    transcribe_status st = tr_gguf_open_memory(copy, n, &f);
    if (st == TRANSCRIBE_OK) {
        /* walk everything a consumer could touch */
        for (int64_t i = 0; i < tr_gguf_n_kv(f); i++) {
            (void)tr_gguf_key_name(f, i);
            for (uint64_t j = 0; j < tr_gguf_kv_arr_n(f, i) && j < 4; j++)
                (void)tr_gguf_kv_arr_str(f, i, j);
        }
        volatile uint8_t sink = 0;
        for (int64_t i = 0; i < tr_gguf_n_tensors(f); i++) {
            const tr_tensor *t = tr_gguf_tensor_at(f, i);
            sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
        }
        (void)sink;
        tr_gguf_close(f);
    } else {
        CHECK(f == NULL);
    }
    free(copy);
    return st;
}

#define EXPECT_BAD(buf) CHECK_MSG(try_open((buf).p, (buf).len) == TRANSCRIBE_ERR_GGUF, "%s", #buf)

/* A small valid file whose last tensor ends exactly at EOF, so that every
 * proper prefix is invalid. */
static void make_valid(void **img, size_t *size) {
    gguf_writer *w = tr_gguf_writer_create();
    tr_gguf_writer_set_str(w, "general.architecture", "whisper");
    tr_gguf_writer_set_u32(w, "stt.whisper.n_layer", 4);
    const char *toks[] = {"a", "bc", ""};
    tr_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    const float sc[] = {0.5f, 1.5f};
    tr_gguf_writer_set_arr_f32(w, "tokenizer.ggml.scores", sc, 2);
    uint8_t q[34] = {0};
    tr_gguf_writer_add_tensor(w, "dec.q", TR_Q8_0, 1, (const int64_t[]){32}, q);
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tr_gguf_writer_add_tensor(w, "dec.v", TR_F32, 2, (const int64_t[]){4, 2}, v);
    CHECK(tr_gguf_writer_to_memory(w, img, size) == TRANSCRIBE_OK);
    tr_gguf_writer_free(w);
}

static void test_truncation_and_flips(void) {
    void *img;
    size_t size;
    make_valid(&img, &size);
    CHECK(try_open(img, size) == TRANSCRIBE_OK);
    int bad = 0;
    for (size_t n = 0; n < size; n++) bad += try_open(img, n) == TRANSCRIBE_ERR_GGUF;
    CHECK_MSG(bad == (int)size, "%d of %zu prefixes rejected", bad, size);
    /* Single-byte corruption anywhere: any outcome but a crash is fine. */
    uint8_t *m = malloc(size);
    for (size_t i = 0; i < size; i++) {
        static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80, 0x01};
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(m, img, size);
            m[i] = vals[v];
            transcribe_status st = try_open(m, size);
            CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_GGUF);
        }
    }
    free(m);
    free(img);
}

static void test_header(void) {
    gbuf b = {0};
    gb_bytes(&b, "GGUG", 4), gb_u32(&b, 3), gb_u64(&b, 0), gb_u64(&b, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    for (uint32_t v = 0; v < 6; v++) {
        if (v == 2 || v == 3) continue;
        gb_header(&b, v, 0, 0);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    gb_header(&b, 3, 0, 0); /* minimal valid file: no KVs, no tensors */
    CHECK(try_open(b.p, b.len) == TRANSCRIBE_OK);
    gb_free(&b);
    const uint64_t huge[] = {UINT64_MAX, (uint64_t)INT64_MAX, 1ull << 40, 1ull << 62, 1000};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        gb_header(&b, 3, huge[i], 0); /* n_tensors */
        EXPECT_BAD(b);
        gb_free(&b);
        gb_header(&b, 3, 0, huge[i]); /* n_kv */
        EXPECT_BAD(b);
        gb_free(&b);
    }
    CHECK(try_open(NULL, 0) == TRANSCRIBE_ERR_INVALID_ARG || try_open("", 0) != TRANSCRIBE_OK);
}

static void one_kv_prefix(gbuf *b, const char *key, uint32_t type) {
    gb_header(b, 3, 0, 1);
    gb_str(b, key);
    gb_u32(b, type);
}

static void test_kvs(void) {
    gbuf b = {0};
    /* key length past EOF / overflowing */
    const uint64_t lens[] = {UINT64_MAX, UINT64_MAX - 7, 1ull << 63, 100};
    for (size_t i = 0; i < 4; i++) {
        gb_header(&b, 3, 0, 1), gb_u64(&b, lens[i]), gb_bytes(&b, "abcdefgh", 8);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    gb_header(&b, 3, 0, 1), gb_u64(&b, 0), gb_u32(&b, GGUF_T_UINT8), gb_u8(&b, 1);
    gb_bytes(&b, "padpadpadpad", 12);
    EXPECT_BAD(b); /* empty key */
    gb_free(&b);
    gb_header(&b, 3, 0, 1), gb_u64(&b, 3), gb_bytes(&b, "a\0b", 3), gb_u32(&b, GGUF_T_UINT8);
    gb_u8(&b, 1);
    EXPECT_BAD(b); /* NUL inside a key */
    gb_free(&b);
    /* unknown value types */
    const uint32_t types[] = {13, 14, 255, 0x80000000u, UINT32_MAX};
    for (size_t i = 0; i < 5; i++) {
        one_kv_prefix(&b, "k", types[i]), gb_u64(&b, 0), gb_u64(&b, 0);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    /* string value length past EOF */
    one_kv_prefix(&b, "k", GGUF_T_STRING), gb_u64(&b, 9), gb_bytes(&b, "12345678", 8);
    EXPECT_BAD(b);
    gb_free(&b);
    /* scalar value truncated */
    one_kv_prefix(&b, "k", GGUF_T_UINT64), gb_u32(&b, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* array counts whose byte size overflows or exceeds the file */
    const uint64_t counts[] = {UINT64_MAX, (1ull << 62) + 1, 1ull << 61, 9};
    const uint32_t elems[] = {GGUF_T_UINT32, GGUF_T_FLOAT64, GGUF_T_STRING, GGUF_T_ARRAY,
                              GGUF_T_UINT8};
    for (size_t i = 0; i < 4; i++) {
        for (size_t e = 0; e < 5; e++) {
            one_kv_prefix(&b, "arr", GGUF_T_ARRAY), gb_u32(&b, elems[e]), gb_u64(&b, counts[i]);
            gb_u32(&b, 0), gb_u32(&b, 0);
            EXPECT_BAD(b);
            gb_free(&b);
        }
    }
    /* unknown array element type */
    one_kv_prefix(&b, "arr", GGUF_T_ARRAY), gb_u32(&b, 13), gb_u64(&b, 1), gb_u64(&b, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* string array whose second element runs past EOF */
    one_kv_prefix(&b, "arr", GGUF_T_ARRAY), gb_u32(&b, GGUF_T_STRING), gb_u64(&b, 2);
    gb_str(&b, "ok"), gb_u64(&b, 1000), gb_bytes(&b, "x", 1);
    EXPECT_BAD(b);
    gb_free(&b);
    /* nesting: depth 4 is accepted, 5 is not */
    for (int depth = 1; depth <= 6; depth++) {
        one_kv_prefix(&b, "nest", GGUF_T_ARRAY);
        for (int d = 1; d < depth; d++) gb_u32(&b, GGUF_T_ARRAY), gb_u64(&b, 1);
        gb_u32(&b, GGUF_T_UINT8), gb_u64(&b, 1), gb_u8(&b, 7);
        transcribe_status st = try_open(b.p, b.len);
        CHECK_MSG(depth <= 4 ? st == TRANSCRIBE_OK : st == TRANSCRIBE_ERR_GGUF, "depth %d", depth);
        gb_free(&b);
    }
    /* deep nesting bomb: many levels of count 1 */
    one_kv_prefix(&b, "bomb", GGUF_T_ARRAY);
    for (int d = 0; d < 10000; d++) gb_u32(&b, GGUF_T_ARRAY), gb_u64(&b, 1);
    EXPECT_BAD(b);
    gb_free(&b);
    /* duplicate keys */
    gb_header(&b, 3, 0, 2);
    gb_str(&b, "dup"), gb_u32(&b, GGUF_T_UINT8), gb_u8(&b, 1);
    gb_str(&b, "dup"), gb_u32(&b, GGUF_T_UINT32), gb_u32(&b, 1);
    EXPECT_BAD(b);
    gb_free(&b);
    /* general.alignment: wrong type, zero, not a power of two, too large */
    one_kv_prefix(&b, "general.alignment", GGUF_T_UINT64), gb_u64(&b, 32);
    EXPECT_BAD(b);
    gb_free(&b);
    const uint32_t aligns[] = {0, 3, 48, 1u << 31, UINT32_MAX};
    for (size_t i = 0; i < 5; i++) {
        one_kv_prefix(&b, "general.alignment", GGUF_T_UINT32), gb_u32(&b, aligns[i]);
        EXPECT_BAD(b);
        gb_free(&b);
    }
}

/* One tensor with the given info, then `data` bytes after 32-byte padding
 * (or after `align` when an alignment KV is written). */
static void one_tensor(gbuf *b, const char *name, uint32_t nd, const int64_t *ne, uint32_t type,
                       uint64_t off, size_t data, uint32_t align) {
    gb_header(b, 3, 1, align ? 1 : 0);
    if (align) gb_str(b, "general.alignment"), gb_u32(b, GGUF_T_UINT32), gb_u32(b, align);
    gb_tensor(b, name, nd, ne, type, off);
    gb_pad(b, align ? align : 32);
    for (size_t i = 0; i < data; i++) gb_u8(b, (uint8_t)i);
}

static void test_tensors(void) {
    gbuf b = {0};
    const int64_t ne4[4] = {4, 1, 1, 1};
    one_tensor(&b, "t", 1, ne4, TR_F32, 0, 16, 0);
    CHECK(try_open(b.p, b.len) == TRANSCRIBE_OK);
    gb_free(&b);
    one_tensor(&b, "t", 4, ne4, TR_F32, 0, 16, 0);
    CHECK(try_open(b.p, b.len) == TRANSCRIBE_OK);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne4, TR_F32, 0, 16, 64); /* alignment 64 */
    CHECK(try_open(b.p, b.len) == TRANSCRIBE_OK);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne4, TR_F32, 0, 15, 0); /* data past EOF */
    EXPECT_BAD(b);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne4, TR_F32, 32, 40, 0); /* offset + size past EOF */
    EXPECT_BAD(b);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne4, TR_F32, 8, 64, 0); /* offset not aligned */
    EXPECT_BAD(b);
    gb_free(&b);
    const uint64_t offs[] = {UINT64_MAX - 31, 1ull << 63, (uint64_t)INT64_MAX - 31};
    for (size_t i = 0; i < 3; i++) {
        one_tensor(&b, "t", 1, ne4, TR_F32, offs[i], 64, 0);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    /* n_dims out of 1..4 */
    const uint32_t nds[] = {0, 5, 100, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        one_tensor(&b, "t", nds[i] < 5 ? nds[i] : 4, ne4, TR_F32, 0, 64, 0);
        /* patch n_dims in place: after header (24) + name (8+1) */
        b.p[33] = (uint8_t)nds[i], b.p[34] = (uint8_t)(nds[i] >> 8);
        b.p[35] = (uint8_t)(nds[i] >> 16), b.p[36] = (uint8_t)(nds[i] >> 24);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    /* ne zero, negative, and products that overflow */
    const int64_t bad_ne[][4] = {{0, 1, 1, 1},
                                 {4, 0, 1, 1},
                                 {-4, 1, 1, 1},
                                 {4, 1, 1, -1},
                                 {INT64_MAX, 1, 1, 1},
                                 {1ll << 32, 1ll << 32, 1, 1},
                                 {1ll << 20, 1ll << 20, 1ll << 20, 1ll << 20}};
    for (size_t i = 0; i < sizeof bad_ne / sizeof bad_ne[0]; i++) {
        one_tensor(&b, "t", 4, bad_ne[i], TR_F32, 0, 64, 0);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    /* unknown / unusable dtypes */
    const uint32_t dts[] = {4, 5, 9, 15, 16, 29, 31, 1000, UINT32_MAX};
    const int64_t ne256[1] = {256};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        one_tensor(&b, "t", 1, ne256, dts[i], 0, 1024, 0);
        EXPECT_BAD(b);
        gb_free(&b);
    }
    /* ne[0] not a multiple of the block size */
    const int64_t ne48[1] = {48}, ne128[1] = {128};
    one_tensor(&b, "t", 1, ne48, TR_Q4_0, 0, 256, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne128, TR_Q4_K, 0, 256, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    one_tensor(&b, "t", 1, ne48 + 0, TR_Q8_0, 0, 256, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* names: empty, with NUL, too long */
    one_tensor(&b, "", 1, ne4, TR_F32, 0, 16, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    char longname[1100];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    one_tensor(&b, longname, 1, ne4, TR_F32, 0, 16, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* duplicate tensor names */
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "w", 1, ne4, TR_F32, 0);
    gb_tensor(&b, "w", 1, ne4, TR_F32, 32);
    gb_pad(&b, 32);
    for (int i = 0; i < 64; i++) gb_u8(&b, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* tensor table claims more tensors than are present */
    gb_header(&b, 3, 3, 0);
    gb_tensor(&b, "w", 1, ne4, TR_F32, 0);
    for (int i = 0; i < 64; i++) gb_u8(&b, 0);
    EXPECT_BAD(b);
    gb_free(&b);
    /* data section start past EOF */
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 1, ne4, TR_F32, 0);
    EXPECT_BAD(b);
    gb_free(&b);
}

int main(void) {
    test_header();
    test_kvs();
    test_tensors();
    test_truncation_and_flips();
    return TEST_DONE();
}
