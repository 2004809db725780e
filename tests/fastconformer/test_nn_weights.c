/* nn/weights.h on an in-memory GGUF: a block table with run-time sizes and a
 * layer index fills a struct; a wrong shape, a wrong type class or a missing
 * tensor makes the load fail; optional biases follow with_bias. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "nn/weights.h"
#include "test_util.h"

typedef struct {
    tr_nn_norm ln;
    tr_nn_linear up, k, opt;
    const float *table;
    const tr_tensor *raw;
} block;

enum { D, F, NDIMS };
static const tr_nn_wspec specs[] = {
    {"blk.%d.ln", TR_NN_W_NORM, {TR_NN_DIM(D)}, 0, 0, offsetof(block, ln)},
    {"blk.%d.up", TR_NN_W_LINEAR, {TR_NN_DIM(D), TR_NN_DIM(F)}, 0, 0, offsetof(block, up)},
    {"blk.%d.k", TR_NN_W_LINEAR_NOBIAS, {TR_NN_DIM(D), TR_NN_DIM(D)}, 0, 0, offsetof(block, k)},
    {"blk.%d.opt", TR_NN_W_LINEAR_OPTB, {TR_NN_DIM(D), 2}, 0, 0, offsetof(block, opt)},
    {"blk.%d.table", TR_NN_W_VEC, {2, TR_NN_DIM(D)}, 2, 0, offsetof(block, table)},
    {"blk.%d.raw", TR_NN_W_TENSOR, {TR_NN_DIM(F)}, 1, TR_TYPES_F32, offsetof(block, raw)},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static float zeros[64];

static bool add(gguf_writer *w, const char *name, int n_dims, int64_t a, int64_t b) {
    const int64_t ne[2] = {a, b};
    return tr_gguf_writer_add_tensor(w, name, 0 /* F32 */, n_dims, ne, zeros);
}

/* Layer i of a D = 4, F = 3 block; `skip` leaves one tensor out. */
static bool add_layer(gguf_writer *w, int i, const char *skip, int64_t up_out) {
    static const char *const names[] = {"ln.weight", "ln.bias",  "up.weight",
                                        "up.bias",   "k.weight", "opt.weight",
                                        "opt.bias",  "table",    "raw"};
    static const int nd[] = {1, 1, 2, 1, 2, 2, 1, 2, 1};
    const int64_t a[] = {4, 4, 4, 3, 4, 4, 2, 2, 3};
    const int64_t b[] = {1, 1, up_out, 1, 4, 2, 1, 4, 1};
    bool ok = true;
    for (int t = 0; t < 9; t++) {
        if (skip && !strcmp(skip, names[t])) continue;
        char name[64];
        snprintf(name, sizeof name, "blk.%d.%s", i, names[t]);
        ok = ok && add(w, name, nd[t], a[t], b[t]);
    }
    return ok;
}

static gguf_file *open_image(gguf_writer *w, void **img) {
    size_t size = 0;
    gguf_file *g = NULL;
    *img = NULL;
    if (tr_gguf_writer_to_memory(w, img, &size) != TRANSCRIBE_OK) return NULL;
    if (tr_gguf_open_memory(*img, size, &g) != TRANSCRIBE_OK) return NULL;
    return g;
}

static void check_case(const char *skip, int64_t up_out, bool with_bias, bool want_ok) {
    gguf_writer *w = tr_gguf_writer_create();
    CHECK(w && add_layer(w, 0, NULL, 3) && add_layer(w, 1, skip, up_out));
    void *img = NULL;
    gguf_file *g = w ? open_image(w, &img) : NULL;
    CHECK(g != NULL);
    if (g) {
        const int64_t dims[NDIMS] = {[D] = 4, [F] = 3};
        block b[2];
        memset(b, 0, sizeof b);
        tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
        bool ok = tr_nn_load_layers(&src, specs, N_SPECS, dims, 2, with_bias, b, sizeof b[0]);
        CHECK_MSG(ok == want_ok, "skip %s up_out %lld", skip ? skip : "-", (long long)up_out);
        if (ok) {
            CHECK(b[1].ln.w && b[1].ln.b && b[1].up.w && b[1].up.b && b[1].k.w && !b[1].k.b);
            CHECK((b[1].opt.b != NULL) == with_bias);
            CHECK(b[1].table && b[1].raw && b[1].raw->ne[0] == 3);
            CHECK(!strcmp(b[1].up.w->name, "blk.1.up.weight"));
        }
    }
    tr_gguf_close(g);
    free(img);
    tr_gguf_writer_free(w);
}

int main(void) {
    check_case(NULL, 3, true, true);
    check_case(NULL, 3, false, true);
    check_case("opt.bias", 3, false, true); /* not needed without biases */
    check_case("opt.bias", 3, true, false);
    check_case("ln.bias", 3, true, false);
    check_case("k.weight", 3, true, false);
    check_case(NULL, 5, true, false); /* shape mismatch */
    return TEST_DONE();
}
