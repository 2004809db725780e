/* Writer → reader round trips for every KV and array type and several
 * tensor dtypes, typed-getter tri-state semantics, verbatim KV copying and
 * the tr_gguf_require_tensor / tr_gguf_optional_tensor checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_build.h"
#include "tensor/dtype.h"
#include "test_util.h"

static void fill_bytes(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(seed >> 24);
    }
}

typedef struct {
    const char *name;
    int type, n_dims;
    int64_t ne[4];
    size_t nbytes;
} tspec;

static const tspec k_tensors[] = {
    {"enc.w.f32", TR_F32, 2, {3, 2, 1, 1}, 24},
    {"enc.w.f16", TR_F16, 1, {5, 1, 1, 1}, 10},
    {"enc.w.q8_0", TR_Q8_0, 2, {64, 3, 1, 1}, 2 * 34 * 3},
    {"enc.w.q4_k", TR_Q4_K, 2, {256, 2, 1, 1}, 144 * 2},
    {"enc.w.q6_k", TR_Q6_K, 1, {512, 1, 1, 1}, 210 * 2},
    {"enc.w.bf16", TR_BF16, 4, {2, 3, 2, 2}, 48},
    {"enc.w.q5_1", TR_Q5_1, 3, {32, 1, 2, 1}, 48},
};
#define N_TENSORS (sizeof k_tensors / sizeof k_tensors[0])

static void test_writer_roundtrip(void) {
    gguf_writer *w = tr_gguf_writer_create();
    CHECK(w != NULL);
    CHECK(tr_gguf_writer_set_str(w, "general.architecture", "whisper"));
    CHECK(tr_gguf_writer_set_u32(w, "a.u32", 4000000000u));
    CHECK(tr_gguf_writer_set_i32(w, "a.i32", -7));
    CHECK(tr_gguf_writer_set_u64(w, "a.u64", 0x123456789abcdefull));
    CHECK(tr_gguf_writer_set_f32(w, "a.f32", 0.25f));
    CHECK(tr_gguf_writer_set_bool(w, "a.bool", true));
    CHECK(tr_gguf_writer_set_str(w, "a.empty", ""));
    const int32_t ai[] = {1, -2, 3};
    const float af[] = {1.5f, -2.5f};
    const char *as[] = {"x", "", "hello world", "\xc4\xa0the"};
    CHECK(tr_gguf_writer_set_arr_i32(w, "a.arr_i32", ai, 3));
    CHECK(tr_gguf_writer_set_arr_f32(w, "a.arr_f32", af, 2));
    CHECK(tr_gguf_writer_set_arr_str(w, "a.arr_str", as, 4));
    CHECK(tr_gguf_writer_set_arr_i32(w, "a.arr_empty", NULL, 0));
    CHECK(tr_gguf_writer_set_u32(w, "a.replaced", 1));
    CHECK(tr_gguf_writer_set_u32(w, "a.replaced", 2)); /* last value wins */

    uint8_t *payload[N_TENSORS];
    for (size_t i = 0; i < N_TENSORS; i++) {
        payload[i] = malloc(k_tensors[i].nbytes);
        fill_bytes(payload[i], k_tensors[i].nbytes, (uint32_t)i + 1);
        CHECK(tr_gguf_writer_add_tensor(w, k_tensors[i].name, k_tensors[i].type,
                                        k_tensors[i].n_dims, k_tensors[i].ne, payload[i]));
    }
    /* rejected additions */
    CHECK(!tr_gguf_writer_add_tensor(w, "enc.w.f32", TR_F32, 1, k_tensors[0].ne, payload[0]));
    const int64_t bad_ne[1] = {16};
    CHECK(!tr_gguf_writer_add_tensor(w, "bad.q4", TR_Q4_0, 1, bad_ne, payload[0]));
    CHECK(!tr_gguf_writer_add_tensor(w, "bad.type", 4, 1, bad_ne, payload[0]));
    CHECK(!tr_gguf_writer_add_tensor(w, "bad.q81", TR_Q8_1, 1, (const int64_t[]){32}, payload[2]));

    void *img = NULL, *img2 = NULL;
    size_t size = 0, size2 = 0;
    CHECK(tr_gguf_writer_to_memory(w, &img, &size) == TRANSCRIBE_OK);
    CHECK(tr_gguf_writer_to_memory(w, &img2, &size2) == TRANSCRIBE_OK);
    CHECK(size == size2 && memcmp(img, img2, size) == 0); /* deterministic */
    free(img2);

    gguf_file *f = NULL;
    CHECK(tr_gguf_open_memory(img, size, &f) == TRANSCRIBE_OK);
    if (!f) return;
    CHECK(tr_gguf_version(f) == 3);
    CHECK(tr_gguf_alignment(f) == 32);
    CHECK(tr_gguf_n_kv(f) == 12);
    const char *s = NULL;
    CHECK(tr_gguf_get_str(f, "general.architecture", &s) == 1 && strcmp(s, "whisper") == 0);
    uint32_t u32 = 0;
    CHECK(tr_gguf_get_u32(f, "a.u32", &u32) == 1 && u32 == 4000000000u);
    CHECK(tr_gguf_get_u32(f, "a.replaced", &u32) == 1 && u32 == 2);
    int32_t i32 = 0;
    CHECK(tr_gguf_get_i32(f, "a.i32", &i32) == 1 && i32 == -7);
    uint64_t u64 = 0;
    CHECK(tr_gguf_get_u64(f, "a.u64", &u64) == 1 && u64 == 0x123456789abcdefull);
    float f32 = 0;
    CHECK(tr_gguf_get_f32(f, "a.f32", &f32) == 1 && f32 == 0.25f);
    bool b = false;
    CHECK(tr_gguf_get_bool(f, "a.bool", &b) == 1 && b);
    CHECK(tr_gguf_get_str(f, "a.empty", &s) == 1 && s[0] == 0);
    const int32_t *pi = NULL;
    uint64_t n = 0;
    CHECK(tr_gguf_get_arr_i32(f, "a.arr_i32", &pi, &n) == 1 && n == 3 && pi[0] == 1 &&
          pi[1] == -2 && pi[2] == 3);
    const float *pf = NULL;
    CHECK(tr_gguf_get_arr_f32(f, "a.arr_f32", &pf, &n) == 1 && n == 2 && pf[1] == -2.5f);
    const char *const *ps = NULL;
    CHECK(tr_gguf_get_arr_str(f, "a.arr_str", &ps, &n) == 1 && n == 4);
    if (ps && n == 4)
        for (int i = 0; i < 4; i++) CHECK(strcmp(ps[i], as[i]) == 0);
    CHECK(tr_gguf_get_arr_i32(f, "a.arr_empty", &pi, &n) == 1 && n == 0);
    int64_t k = tr_gguf_find_key(f, "a.arr_str");
    CHECK(k >= 0 && tr_gguf_kv_type(f, k) == GGUF_T_ARRAY &&
          tr_gguf_kv_arr_type(f, k) == GGUF_T_STRING);
    CHECK(tr_gguf_kv_arr_n(f, k) == 4 && strcmp(tr_gguf_kv_arr_str(f, k, 2), "hello world") == 0);
    CHECK(tr_gguf_kv_arr_str(f, k, 4) == NULL);
    CHECK(tr_gguf_key_name(f, k) && strcmp(tr_gguf_key_name(f, k), "a.arr_str") == 0);
    CHECK(tr_gguf_kv_type(f, 1000) == GGUF_T_NONE && tr_gguf_key_name(f, -1) == NULL);

    CHECK(tr_gguf_n_tensors(f) == (int64_t)N_TENSORS);
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tr_tensor *t = tr_gguf_find_tensor(f, k_tensors[i].name);
        CHECK_MSG(t != NULL, "%s", k_tensors[i].name);
        if (!t) continue;
        CHECK(t == tr_gguf_tensor_at(f, (int64_t)i));
        CHECK(t->type == k_tensors[i].type && t->n_dims == k_tensors[i].n_dims);
        for (int d = 0; d < 4; d++) CHECK(t->ne[d] == k_tensors[i].ne[d]);
        CHECK(t->nbytes == k_tensors[i].nbytes);
        CHECK(t->nb1 * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]) == t->nbytes);
        CHECK(((const uint8_t *)t->data - (const uint8_t *)img) % 32 == 0);
        CHECK(memcmp(t->data, payload[i], t->nbytes) == 0);
    }
    CHECK(tr_gguf_find_tensor(f, "nope") == NULL);

    /* the same bytes through a real file and mmap */
    const char *path = TR_BINARY_DIR "/test_gguf_roundtrip.gguf";
    CHECK(tr_gguf_writer_write(w, path) == TRANSCRIBE_OK);
    gguf_file *g = NULL;
    CHECK(tr_gguf_open(path, &g) == TRANSCRIBE_OK);
    if (g) {
        FILE *fp = fopen(path, "rb");
        uint8_t *disk = malloc(size + 1);
        size_t got = fp ? fread(disk, 1, size + 1, fp) : 0;
        if (fp) fclose(fp);
        CHECK(got == size && memcmp(disk, img, size) == 0);
        free(disk);
        CHECK(tr_gguf_n_tensors(g) == (int64_t)N_TENSORS);
        const tr_tensor *t = tr_gguf_find_tensor(g, "enc.w.q4_k");
        CHECK(t && memcmp(t->data, payload[3], t->nbytes) == 0);
        tr_gguf_close(g);
    }
    remove(path);
    gguf_file *none = (gguf_file *)1;
    CHECK(tr_gguf_open(TR_BINARY_DIR "/no/such/file.gguf", &none) == TRANSCRIBE_ERR_FILE_NOT_FOUND);
    CHECK(none == NULL);
    CHECK(tr_gguf_open(TR_BINARY_DIR, &none) == TRANSCRIBE_ERR_GGUF); /* a directory */

    /* require / optional tensor checks */
    const int64_t ok_ne[2] = {3, 2};
    CHECK(tr_gguf_require_tensor(f, "enc.w.f32", TR_TYPES_F32, 2, ok_ne) != NULL);
    CHECK(tr_gguf_require_tensor(f, "missing", TR_TYPES_F32, 2, ok_ne) == NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.f16", TR_TYPES_F32, 1, (const int64_t[]){5}) == NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.f16", TR_TYPES_CONV, 1, (const int64_t[]){5}) != NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.f32", TR_TYPES_F32, 2, (const int64_t[]){2, 3}) == NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.f32", TR_TYPES_F32, 1, (const int64_t[]){3}) == NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.f32", TR_TYPES_F32, 3, (const int64_t[]){3, 2, 1}) !=
          NULL); /* trailing 1 dims are equivalent */
    CHECK(tr_gguf_require_tensor(f, "enc.w.q4_k", TR_TYPES_LINEAR, 2, (const int64_t[]){256, 2}));
    CHECK(tr_gguf_require_tensor(f, "enc.w.q4_k", TR_TYPES_CONV, 2, (const int64_t[]){256, 2}) ==
          NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.bf16", TR_TYPES_LINEAR, 4,
                                 (const int64_t[]){2, 3, 2, 2}) != NULL);
    CHECK(tr_gguf_require_tensor(f, "enc.w.bf16", TR_TYPES_LINEAR, 3, (const int64_t[]){2, 3, 2}) ==
          NULL);
    bool bad = false;
    CHECK(tr_gguf_optional_tensor(f, "missing", TR_TYPES_F32, 2, ok_ne, &bad) == NULL && !bad);
    CHECK(tr_gguf_optional_tensor(f, "enc.w.f32", TR_TYPES_F32, 2, ok_ne, &bad) != NULL && !bad);
    CHECK(tr_gguf_optional_tensor(f, "enc.w.f16", TR_TYPES_F32, 1, (const int64_t[]){5}, &bad) ==
              NULL &&
          bad);

    tr_gguf_close(f);
    free(img);
    for (size_t i = 0; i < N_TENSORS; i++) free(payload[i]);
    tr_gguf_writer_free(w);
}

/* Every value type and array element type, written byte by byte, as v2. */
static void build_all_types(gbuf *b) {
    gb_header(b, 2, 0, 21);
    gb_str(b, "t.u8"), gb_u32(b, GGUF_T_UINT8), gb_u8(b, 200);
    gb_str(b, "t.i8"), gb_u32(b, GGUF_T_INT8), gb_u8(b, 0x80);
    gb_str(b, "t.u16"), gb_u32(b, GGUF_T_UINT16), gb_le(b, 60000, 2);
    gb_str(b, "t.i16"), gb_u32(b, GGUF_T_INT16), gb_le(b, 0xfffe, 2);
    gb_str(b, "t.u32"), gb_u32(b, GGUF_T_UINT32), gb_u32(b, 7);
    gb_str(b, "t.i32"), gb_u32(b, GGUF_T_INT32), gb_u32(b, (uint32_t)-5);
    gb_str(b, "t.f32"), gb_u32(b, GGUF_T_FLOAT32), gb_u32(b, 0x3fc00000u); /* 1.5 */
    gb_str(b, "t.bool"), gb_u32(b, GGUF_T_BOOL), gb_u8(b, 1);
    gb_str(b, "t.str"), gb_u32(b, GGUF_T_STRING), gb_str(b, "abc");
    gb_str(b, "t.u64"), gb_u32(b, GGUF_T_UINT64), gb_u64(b, 1ull << 40);
    gb_str(b, "t.i64"), gb_u32(b, GGUF_T_INT64), gb_u64(b, (uint64_t)-3);
    gb_str(b, "t.f64"), gb_u32(b, GGUF_T_FLOAT64), gb_u64(b, 0x4004000000000000ull); /* 2.5 */
    gb_str(b, "t.tok_neg"), gb_u32(b, GGUF_T_INT32), gb_u32(b, (uint32_t)-1);
    /* arrays of each element kind */
    gb_str(b, "a.u8"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_UINT8), gb_u64(b, 3);
    gb_u8(b, 1), gb_u8(b, 2), gb_u8(b, 3);
    gb_str(b, "a.u16"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_UINT16), gb_u64(b, 2);
    gb_le(b, 1, 2), gb_le(b, 2, 2);
    gb_str(b, "a.i64"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_INT64), gb_u64(b, 1);
    gb_u64(b, 42);
    gb_str(b, "a.f64"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_FLOAT64), gb_u64(b, 1);
    gb_u64(b, 0x4004000000000000ull);
    gb_str(b, "a.bool"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_BOOL), gb_u64(b, 2);
    gb_u8(b, 0), gb_u8(b, 1);
    gb_str(b, "a.u32"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_UINT32), gb_u64(b, 1);
    gb_u32(b, 9);
    gb_str(b, "a.nested"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_ARRAY), gb_u64(b, 2);
    gb_u32(b, GGUF_T_INT32), gb_u64(b, 1), gb_u32(b, 5);
    gb_u32(b, GGUF_T_STRING), gb_u64(b, 1), gb_str(b, "in");
    gb_str(b, "a.i8"), gb_u32(b, GGUF_T_ARRAY), gb_u32(b, GGUF_T_INT8), gb_u64(b, 0);
}

static void test_all_types(void) {
    gbuf b = {0};
    build_all_types(&b);
    gguf_file *f = NULL;
    CHECK(tr_gguf_open_memory(b.p, b.len, &f) == TRANSCRIBE_OK);
    if (!f) return;
    CHECK(tr_gguf_version(f) == 2 && tr_gguf_n_kv(f) == 21 && tr_gguf_n_tensors(f) == 0);
    uint8_t u8 = 0;
    int8_t i8 = 0;
    uint16_t u16 = 0;
    int16_t i16 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    double f64 = 0;
    float f32 = 0;
    int32_t i32 = 0;
    bool bo = false;
    const char *s = NULL;
    CHECK(tr_gguf_get_u8(f, "t.u8", &u8) == 1 && u8 == 200);
    CHECK(tr_gguf_get_i8(f, "t.i8", &i8) == 1 && i8 == -128);
    CHECK(tr_gguf_get_u16(f, "t.u16", &u16) == 1 && u16 == 60000);
    CHECK(tr_gguf_get_i16(f, "t.i16", &i16) == 1 && i16 == -2);
    CHECK(tr_gguf_get_i32(f, "t.i32", &i32) == 1 && i32 == -5);
    CHECK(tr_gguf_get_f32(f, "t.f32", &f32) == 1 && f32 == 1.5f);
    CHECK(tr_gguf_get_bool(f, "t.bool", &bo) == 1 && bo);
    CHECK(tr_gguf_get_str(f, "t.str", &s) == 1 && strcmp(s, "abc") == 0);
    CHECK(tr_gguf_get_u64(f, "t.u64", &u64) == 1 && u64 == 1ull << 40);
    CHECK(tr_gguf_get_i64(f, "t.i64", &i64) == 1 && i64 == -3);
    CHECK(tr_gguf_get_f64(f, "t.f64", &f64) == 1 && f64 == 2.5);
    /* tri-state: absent leaves out untouched, wrong type is -1 (no coercion) */
    {
        uint32_t u32 = 77;
        CHECK(tr_gguf_get_u32(f, "absent", &u32) == 0 && u32 == 77);
        CHECK(tr_gguf_get_u32(f, "t.i32", &u32) == -1 && u32 == 77);
        CHECK(tr_gguf_get_f32(f, "t.f64", &f32) == -1);
        CHECK(tr_gguf_get_i64(f, "t.u64", &i64) == -1);
        CHECK(tr_gguf_get_str(f, "a.u8", &s) == -1);
    }
    /* token ids: UINT32 or INT32, negative → -1 */
    CHECK(tr_gguf_get_token_id(f, "t.u32", &i32) == 1 && i32 == 7);
    CHECK(tr_gguf_get_token_id(f, "t.tok_neg", &i32) == 1 && i32 == -1);
    CHECK(tr_gguf_get_token_id(f, "t.f32", &i32) == -1);
    i32 = 5;
    CHECK(tr_gguf_get_token_id(f, "absent", &i32) == 0 && i32 == 5);
    /* arrays: exact element type */
    const int32_t *pi;
    uint64_t n;
    CHECK(tr_gguf_get_arr_i32(f, "a.u32", &pi, &n) == -1); /* UINT32 array is not INT32 */
    CHECK(tr_gguf_get_arr_i32(f, "t.i32", &pi, &n) == -1);
    int64_t k = tr_gguf_find_key(f, "a.u16");
    CHECK(tr_gguf_kv_arr_type(f, k) == GGUF_T_UINT16 && tr_gguf_kv_arr_n(f, k) == 2);
    const uint8_t *raw = tr_gguf_kv_arr_data(f, k);
    CHECK(raw && raw[0] == 1 && raw[2] == 2);
    k = tr_gguf_find_key(f, "a.nested");
    CHECK(tr_gguf_kv_arr_type(f, k) == GGUF_T_ARRAY && tr_gguf_kv_arr_n(f, k) == 2);
    k = tr_gguf_find_key(f, "a.i8");
    CHECK(tr_gguf_kv_arr_type(f, k) == GGUF_T_INT8 && tr_gguf_kv_arr_n(f, k) == 0);

    /* verbatim copy of every KV through the writer */
    gguf_writer *w = tr_gguf_writer_create();
    for (int64_t i = 0; i < tr_gguf_n_kv(f); i++) CHECK(tr_gguf_writer_copy_kv(w, f, i));
    CHECK(!tr_gguf_writer_copy_kv(w, f, tr_gguf_n_kv(f)));
    void *img;
    size_t size;
    CHECK(tr_gguf_writer_to_memory(w, &img, &size) == TRANSCRIBE_OK);
    gguf_file *g = NULL;
    CHECK(tr_gguf_open_memory(img, size, &g) == TRANSCRIBE_OK);
    if (g) {
        CHECK(tr_gguf_version(g) == 3 && tr_gguf_n_kv(g) == tr_gguf_n_kv(f));
        for (int64_t i = 0; i < tr_gguf_n_kv(f); i++) {
            size_t la = 0, lb = 0;
            const void *ra = tr_gguf_kv_raw(f, i, &la);
            const void *rb = tr_gguf_kv_raw(g, i, &lb);
            CHECK(strcmp(tr_gguf_key_name(f, i), tr_gguf_key_name(g, i)) == 0);
            CHECK(tr_gguf_kv_type(f, i) == tr_gguf_kv_type(g, i));
            CHECK(la == lb && memcmp(ra, rb, la) == 0);
        }
        tr_gguf_close(g);
    }
    free(img);
    tr_gguf_writer_free(w);
    tr_gguf_close(f);
    gb_free(&b);
}

/* Lookups stay fast with a model-sized tensor table. */
static void test_many_tensors(void) {
    gguf_writer *w = tr_gguf_writer_create();
    float v[4] = {1, 2, 3, 4};
    char name[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "enc.blocks.%d.attn.q.weight", i);
        CHECK(tr_gguf_writer_add_tensor(w, name, TR_F32, 1, (const int64_t[]){4}, v));
    }
    void *img;
    size_t size;
    CHECK(tr_gguf_writer_to_memory(w, &img, &size) == TRANSCRIBE_OK);
    gguf_file *f = NULL;
    CHECK(tr_gguf_open_memory(img, size, &f) == TRANSCRIBE_OK);
    if (f) {
        int found = 0;
        for (int i = 0; i < 3000; i++) {
            snprintf(name, sizeof name, "enc.blocks.%d.attn.q.weight", i);
            const tr_tensor *t = tr_gguf_find_tensor(f, name);
            found += t && t == tr_gguf_tensor_at(f, i) && ((const float *)t->data)[3] == 4.0f;
        }
        CHECK(found == 3000);
        tr_gguf_close(f);
    }
    free(img);
    tr_gguf_writer_free(w);
}

int main(void) {
    test_writer_roundtrip();
    test_all_types();
    test_many_tensors();
    return TEST_DONE();
}
