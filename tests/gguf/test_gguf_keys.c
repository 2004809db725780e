/* The typed key readers of gguf/gguf_keys.h on a file written in memory:
 * required / optional / lenient integers with their ranges, strict types,
 * token ids of either integer type, strings from a set, and array counts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_keys.h"
#include "gguf/gguf_writer.h"
#include "test_util.h"

#define OK  TRANSCRIBE_OK
#define BAD TRANSCRIBE_ERR_GGUF

static void check_ints(const gguf_file *g) {
    int v = -7;
    CHECK(tr_gguf_req_u32(g, "u", 1, 100, &v) == OK && v == 42);
    CHECK(tr_gguf_req_u32(g, "u", 43, 100, &v) == BAD && v == 42); /* out untouched */
    CHECK(tr_gguf_req_u32(g, "absent", 0, 100, &v) == BAD);
    CHECK(tr_gguf_req_u32(g, "i", 0, 100, &v) == BAD); /* INT32 is not UINT32 */
    CHECK(tr_gguf_opt_u32(g, "absent", 9, 0, 100, &v) == OK && v == 9);
    CHECK(tr_gguf_opt_u32(g, "u", 9, 0, 10, &v) == BAD);
    CHECK(tr_gguf_opt_u32_or(g, "u", 9, 0, 10, &v) == OK && v == 9);
    CHECK(tr_gguf_opt_u32_or(g, "u", 9, 0, 100, &v) == OK && v == 42);
    CHECK(tr_gguf_opt_u32_or(g, "s", 9, 0, 100, &v) == BAD); /* wrong type stays fatal */
    CHECK(tr_gguf_req_i32(g, "i", -5, 5, &v) == OK && v == -3);
    CHECK(tr_gguf_opt_i32(g, "absent", -1, -5, 5, &v) == OK && v == -1);
    CHECK(tr_gguf_opt_i32(g, "u", -1, -5, 5, &v) == BAD);
}

static void check_ids(const gguf_file *g) {
    int v = 0;
    CHECK(tr_gguf_opt_token_id(g, "id_u", 10, &v) == OK && v == 3);
    CHECK(tr_gguf_opt_token_id(g, "id_i", 10, &v) == OK && v == 4);
    CHECK(tr_gguf_opt_token_id(g, "absent", 10, &v) == OK && v == -1);
    CHECK(tr_gguf_opt_token_id(g, "id_u", 3, &v) == BAD);
    CHECK(tr_gguf_opt_token_id(g, "i", 10, &v) == BAD); /* negative INT32 */
    CHECK(tr_gguf_opt_token_id(g, "f", 10, &v) == BAD);
    CHECK(tr_gguf_opt_token_id_or(g, "id_u", 3, 77, &v) == OK && v == 77);
    CHECK(tr_gguf_opt_token_id_or(g, "i", 10, 77, &v) == OK && v == 77);
    CHECK(tr_gguf_opt_token_id_or(g, "f", 10, 77, &v) == BAD);
}

static void check_scalars(const gguf_file *g) {
    float f = 0;
    bool b = false;
    const char *s = NULL;
    CHECK(tr_gguf_req_f32(g, "f", &f) == OK && f == 1.5f);
    CHECK(tr_gguf_req_f32(g, "absent", &f) == BAD);
    CHECK(tr_gguf_opt_f32(g, "absent", 2.5f, &f) == OK && f == 2.5f);
    CHECK(tr_gguf_opt_f32(g, "u", 2.5f, &f) == BAD);
    CHECK(tr_gguf_req_bool(g, "b", &b) == OK && b);
    CHECK(tr_gguf_opt_bool(g, "absent", false, &b) == OK && !b);
    CHECK(tr_gguf_opt_bool(g, "u", false, &b) == BAD);
    CHECK(tr_gguf_req_str(g, "s", &s) == OK && s && !strcmp(s, "hann"));
    CHECK(tr_gguf_req_str(g, "absent", &s) == BAD);
    CHECK(tr_gguf_opt_str(g, "absent", NULL, &s) == OK && s == NULL);
    CHECK(tr_gguf_opt_str(g, "u", "x", &s) == BAD);
    const char *const ok[] = {"hamming", "hann", NULL};
    const char *const no[] = {"hamming", NULL};
    CHECK(tr_gguf_req_str_in(g, "s", ok) == OK);
    CHECK(tr_gguf_req_str_in(g, "s", no) == BAD);
    CHECK(tr_gguf_req_str_in(g, "absent", ok) == BAD);
    CHECK(tr_gguf_opt_str_in(g, "absent", no) == OK);
    CHECK(tr_gguf_opt_str_in(g, "s", no) == BAD);
    char *copy = NULL;
    CHECK(tr_gguf_opt_str_copy(g, "s", "x", &copy) == OK && copy && !strcmp(copy, "hann"));
    free(copy);
    copy = NULL;
    CHECK(tr_gguf_opt_str_copy(g, "absent", "dflt", &copy) == OK && copy && !strcmp(copy, "dflt"));
    free(copy);
    CHECK(tr_gguf_opt_str_copy(g, "u", "x", &copy) == BAD);
    CHECK(tr_gguf_has(g, "s") && !tr_gguf_has(g, "absent"));
    CHECK(tr_gguf_req_type(g, "u", GGUF_T_UINT32) == OK);
    CHECK(tr_gguf_req_type(g, "u", GGUF_T_INT32) == BAD);
    CHECK(tr_gguf_req_type(g, "absent", GGUF_T_UINT32) == BAD);
}

static void check_arrays(const gguf_file *g) {
    const int32_t *ai = NULL;
    const float *af = NULL;
    const char *const *as = NULL;
    int64_t n = -1;
    CHECK(tr_gguf_req_arr_i32(g, "ai", 1, 3, &ai, &n) == OK && n == 3 && ai[2] == 30);
    CHECK(tr_gguf_req_arr_i32(g, "ai", 4, 9, &ai, &n) == BAD);
    CHECK(tr_gguf_req_arr_i32(g, "ai", 0, 2, &ai, &n) == BAD);
    CHECK(tr_gguf_req_arr_i32(g, "af", 0, 9, &ai, &n) == BAD); /* element type */
    CHECK(tr_gguf_req_arr_i32(g, "u", 0, 9, &ai, &n) == BAD);  /* not an array */
    CHECK(tr_gguf_req_arr_i32(g, "absent", 0, 9, &ai, &n) == BAD);
    CHECK(tr_gguf_opt_arr_i32(g, "absent", 1, 9, &ai, &n) == OK && n == 0 && ai == NULL);
    CHECK(tr_gguf_opt_arr_f32(g, "af", 0, 9, &af, &n) == OK && n == 2 && af[1] == -2.0f);
    CHECK(tr_gguf_req_arr_str(g, "as", 1, 9, &as, &n) == OK && n == 2 && !strcmp(as[1], "de"));
    CHECK(tr_gguf_opt_arr_str(g, "as", 0, 1, &as, &n) == BAD);
}

int main(void) {
    gguf_writer *w = tr_gguf_writer_create();
    CHECK(w != NULL);
    if (!w) return TEST_DONE();
    static const int32_t ai[] = {10, 20, 30};
    static const float af[] = {1.0f, -2.0f};
    static const char *const as[] = {"en", "de"};
    bool ok = tr_gguf_writer_set_u32(w, "u", 42) && tr_gguf_writer_set_i32(w, "i", -3) &&
              tr_gguf_writer_set_u32(w, "id_u", 3) && tr_gguf_writer_set_i32(w, "id_i", 4) &&
              tr_gguf_writer_set_f32(w, "f", 1.5f) && tr_gguf_writer_set_bool(w, "b", true) &&
              tr_gguf_writer_set_str(w, "s", "hann") && tr_gguf_writer_set_arr_i32(w, "ai", ai, 3) &&
              tr_gguf_writer_set_arr_f32(w, "af", af, 2) && tr_gguf_writer_set_arr_str(w, "as", as, 2);
    CHECK(ok);
    void *img = NULL;
    size_t size = 0;
    gguf_file *g = NULL;
    CHECK(tr_gguf_writer_to_memory(w, &img, &size) == OK);
    CHECK(img && tr_gguf_open_memory(img, size, &g) == OK);
    if (g) {
        check_ints(g);
        check_ids(g);
        check_scalars(g);
        check_arrays(g);
    }
    tr_gguf_close(g);
    free(img);
    tr_gguf_writer_free(w);
    return TEST_DONE();
}
