/* libFuzzer harness for the GGUF reader: parse, then touch everything a
 * model loader could touch, then push the file through the writer and
 * require that the copy parses back identically. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"
#include "util/log.h"

static void quiet(transcribe_log_level level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user;
}

static void walk_kvs(const gguf_file *f) {
    volatile size_t sink = 0;
    for (int64_t i = 0; i < tr_gguf_n_kv(f); i++) {
        const char *key = tr_gguf_key_name(f, i);
        if (tr_gguf_find_key(f, key) != i) abort();
        size_t raw_len;
        if (!tr_gguf_kv_raw(f, i, &raw_len)) abort();
        union {
            uint8_t u8;
            int8_t i8;
            uint16_t u16;
            int16_t i16;
            uint32_t u32;
            int32_t i32;
            uint64_t u64;
            int64_t i64;
            float f32;
            double f64;
            bool b;
            const char *s;
        } v;
        tr_gguf_get_u8(f, key, &v.u8), tr_gguf_get_i8(f, key, &v.i8);
        tr_gguf_get_u16(f, key, &v.u16), tr_gguf_get_i16(f, key, &v.i16);
        tr_gguf_get_u32(f, key, &v.u32), tr_gguf_get_i32(f, key, &v.i32);
        tr_gguf_get_u64(f, key, &v.u64), tr_gguf_get_i64(f, key, &v.i64);
        tr_gguf_get_f32(f, key, &v.f32), tr_gguf_get_f64(f, key, &v.f64);
        tr_gguf_get_bool(f, key, &v.b), tr_gguf_get_token_id(f, key, &v.i32);
        if (tr_gguf_get_str(f, key, &v.s) == 1) sink += strlen(v.s);
        const int32_t *ai;
        const float *af;
        const char *const *as;
        uint64_t n;
        if (tr_gguf_get_arr_i32(f, key, &ai, &n) == 1 && n) sink += (size_t)ai[n - 1];
        if (tr_gguf_get_arr_f32(f, key, &af, &n) == 1 && n) sink += (size_t)(af[n - 1] != 0);
        if (tr_gguf_get_arr_str(f, key, &as, &n) == 1)
            for (uint64_t j = 0; j < n; j++) sink += strlen(as[j]);
        if (tr_gguf_kv_type(f, i) == GGUF_T_ARRAY) {
            n = tr_gguf_kv_arr_n(f, i);
            if (tr_gguf_kv_arr_type(f, i) == GGUF_T_STRING && n && !tr_gguf_kv_arr_str(f, i, n - 1))
                abort();
            const uint8_t *raw = tr_gguf_kv_arr_data(f, i);
            if (raw && n && tr_gguf_kv_arr_type(f, i) != GGUF_T_ARRAY) sink += raw[0];
        }
    }
    (void)sink;
}

static void walk_tensors(const gguf_file *f) {
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < tr_gguf_n_tensors(f); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(f, i);
        if (tr_gguf_find_tensor(f, t->name) != t) abort();
        const uint8_t *d = t->data;
        sink ^= d[0] ^ d[t->nbytes - 1];
        bool bad = false;
        tr_gguf_require_tensor(f, t->name, TR_TYPES_LINEAR, t->n_dims, t->ne);
        tr_gguf_optional_tensor(f, t->name, TR_TYPES_F32, 1, t->ne, &bad);
    }
    (void)sink;
}

static void roundtrip(const gguf_file *f) {
    gguf_writer *w = tr_gguf_writer_create();
    if (!w) return;
    for (int64_t i = 0; i < tr_gguf_n_kv(f); i++)
        if (!tr_gguf_writer_copy_kv(w, f, i)) abort();
    for (int64_t i = 0; i < tr_gguf_n_tensors(f); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(f, i);
        if (!tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data)) abort();
    }
    void *img;
    size_t size;
    if (tr_gguf_writer_to_memory(w, &img, &size) == TRANSCRIBE_OK) {
        gguf_file *g = NULL;
        /* general.alignment other than 32 is copied but the writer always
         * lays data out at 32, so such files may legitimately not reparse. */
        size_t align = tr_gguf_alignment(f);
        transcribe_status st = tr_gguf_open_memory(img, size, &g);
        if (st != TRANSCRIBE_OK && align == 32) abort();
        if (g) {
            if (tr_gguf_n_kv(g) != tr_gguf_n_kv(f) || tr_gguf_n_tensors(g) != tr_gguf_n_tensors(f))
                abort();
            for (int64_t i = 0; i < tr_gguf_n_tensors(g); i++) {
                const tr_tensor *a = tr_gguf_tensor_at(f, i), *b = tr_gguf_tensor_at(g, i);
                if (a->nbytes != b->nbytes || memcmp(a->data, b->data, a->nbytes)) abort();
            }
            tr_gguf_close(g);
        }
        free(img);
    }
    tr_gguf_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) {
        tr_log_set(quiet, NULL);
        init = 1;
    }
    gguf_file *f = NULL;
    if (tr_gguf_open_memory(data, size, &f) != TRANSCRIBE_OK) {
        if (f) abort();
        return 0;
    }
    walk_kvs(f);
    walk_tensors(f);
    roundtrip(f);
    tr_gguf_close(f);
    return 0;
}
