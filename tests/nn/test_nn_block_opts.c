/* The block loaders' layout options (nn/weights.h tr_nn_block_opts): a
 * GGUF image written here with LayerNorms without beta, attention
 * projections without biases and a fused [value; gate] fc1 loads with the
 * options (every view in place, biases NULL, ffn.glu fused) and not without
 * them; a fused fc1 of the unfused width, a misshaped norm and a stray
 * attention bias the options do not expect are each refused by name; the
 * default layout still loads as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "nn/weights.h"
#include "test_util.h"

enum { D = 8, F = 12, NL = 2 };

typedef struct layout {
    bool ln_bias, attn_bias, fused;
    int64_t fc1_out; /* 0: the layout's own */
    bool drop_norm;  /* leave out one norm weight */
} layout;

static void add(gguf_writer *w, const char *name, int64_t a, int64_t b) {
    const int64_t ne[2] = {a, b};
    float *v = calloc((size_t)(a * b), sizeof(float));
    for (int64_t i = 0; i < a * b; i++) v[i] = 0.01f * (float)(i % 17);
    CHECK(tr_gguf_writer_add_tensor(w, name, 0, b > 1 ? 2 : 1, ne, v));
    free(v);
}

static void add_lin(gguf_writer *w, const char *base, int64_t in, int64_t out, bool bias) {
    char n[96];
    snprintf(n, sizeof n, "%s.weight", base);
    add(w, n, in, out);
    if (bias) {
        snprintf(n, sizeof n, "%s.bias", base);
        add(w, n, out, 1);
    }
}

static void add_norm(gguf_writer *w, const char *base, bool bias) {
    add_lin(w, base, D, 1, false); /* weight {D} */
    if (bias) {
        char n[96];
        snprintf(n, sizeof n, "%s.bias", base);
        add(w, n, D, 1);
    }
}

/* Blocks "b.%d." with parts n1 / sa / n2 / ca / n3 / up / down. */
static void *image(const layout *lo, size_t *size) {
    gguf_writer *w = tr_gguf_writer_create();
    tr_gguf_writer_set_str(w, "general.architecture", "test");
    char base[64];
    const int64_t up = lo->fc1_out ? lo->fc1_out : lo->fused ? 2 * F : F;
    for (int l = 0; l < NL; l++) {
        static const char *const norms[] = {"n1", "n2", "n3"};
        for (int k = 0; k < 3; k++) {
            if (lo->drop_norm && l == 1 && k == 2) continue;
            snprintf(base, sizeof base, "b.%d.%s", l, norms[k]);
            add_norm(w, base, lo->ln_bias);
        }
        static const char *const attn[] = {"sa", "ca"};
        static const char *const proj[] = {"q", "k", "v", "o"};
        for (int a = 0; a < 2; a++)
            for (int p = 0; p < 4; p++) {
                snprintf(base, sizeof base, "b.%d.%s.%s", l, attn[a], proj[p]);
                add_lin(w, base, D, D, lo->attn_bias);
            }
        snprintf(base, sizeof base, "b.%d.up", l);
        add_lin(w, base, D, up, true);
        snprintf(base, sizeof base, "b.%d.down", l);
        add_lin(w, base, F, D, true);
    }
    void *buf = NULL;
    CHECK(tr_gguf_writer_to_memory(w, &buf, size) == TRANSCRIBE_OK);
    tr_gguf_writer_free(w);
    return buf;
}

static const tr_nn_dec_names k_dec = {"b.%d.", "n1", "sa", "n2",   "ca",
                                      "n3",    "o",  "up", "down", true};
static const tr_nn_enc_names k_enc = {"b.%d.", "n1", "sa", "n3", "o", "up", "down", true};

/* Loads the image as decoder blocks (and, unfused, encoder blocks). */
static bool load(const layout *lo, const tr_nn_block_opts *opts, tr_nn_dec_block *dec,
                 tr_nn_enc_block *enc, gguf_file **keep, void **buf) {
    size_t size = 0;
    *buf = image(lo, &size);
    *keep = NULL;
    if (!*buf || tr_gguf_open_memory(*buf, size, keep) != TRANSCRIBE_OK) return false;
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(*keep);
    bool ok = tr_nn_load_dec_blocks_opt(&src, &k_dec, opts, D, F, NL, dec);
    if (enc && !(opts && opts->fused_glu))
        ok = tr_nn_load_enc_blocks_opt(&src, &k_enc, opts, D, F, NL, enc) && ok;
    return ok;
}

static void done(gguf_file *g, void *buf) {
    tr_gguf_close(g);
    free(buf);
}

int main(void) {
    gguf_file *g;
    void *buf;
    tr_nn_dec_block dec[NL];
    tr_nn_enc_block enc[NL];

    /* Moonshine's layout with its options */
    const layout bare = {.fused = true};
    const tr_nn_block_opts opts = {.no_ln_bias = true, .no_attn_bias = true, .fused_glu = true};
    memset(dec, 0, sizeof dec);
    CHECK(load(&bare, &opts, dec, NULL, &g, &buf));
    for (int l = 0; l < NL; l++) {
        CHECK(dec[l].ln_self.w && !dec[l].ln_self.b && dec[l].ln_ffn.w && !dec[l].ln_ffn.b);
        CHECK(dec[l].self.q.w && !dec[l].self.q.b && !dec[l].self.o.b && !dec[l].cross.k.b);
        CHECK(dec[l].ffn.fc1.w && dec[l].ffn.fc1.w->ne[1] == 2 * F && dec[l].ffn.fc1.b);
        CHECK(dec[l].ffn.glu == TR_NN_GLU_FUSED);
    }
    done(g, buf);
    /* the same file without the options: the missing biases are refused */
    CHECK(!load(&bare, NULL, dec, NULL, &g, &buf));
    done(g, buf);
    /* fused fc1 at the unfused width, a missing norm, a stray bias */
    layout narrow = bare;
    narrow.fc1_out = F;
    CHECK(!load(&narrow, &opts, dec, NULL, &g, &buf));
    done(g, buf);
    layout holes = bare;
    holes.drop_norm = true;
    CHECK(!load(&holes, &opts, dec, NULL, &g, &buf));
    done(g, buf);

    /* encoder blocks: LayerNorm and attention options, plain FFN */
    const layout enc_bare = {0};
    const tr_nn_block_opts enc_opts = {.no_ln_bias = true, .no_attn_bias = true};
    memset(enc, 0, sizeof enc);
    CHECK(load(&enc_bare, &enc_opts, dec, enc, &g, &buf));
    for (int l = 0; l < NL; l++) {
        CHECK(enc[l].ln_attn.w && !enc[l].ln_attn.b && !enc[l].attn.v.b);
        CHECK(enc[l].ffn.fc1.w->ne[1] == F && enc[l].ffn.glu == TR_NN_GLU_NONE);
    }
    done(g, buf);

    /* the default layout (biases everywhere) through both entry points */
    const layout full = {.ln_bias = true, .attn_bias = true};
    CHECK(load(&full, NULL, dec, enc, &g, &buf));
    CHECK(dec[0].ln_self.b && dec[0].self.k.b && enc[1].attn.o.b && enc[1].ln_ffn.b);
    const tr_nn_wsrc src = tr_nn_wsrc_gguf(g);
    CHECK(tr_nn_load_dec_blocks(&src, &k_dec, D, F, NL, dec));
    CHECK(tr_nn_load_enc_blocks(&src, &k_enc, D, F, NL, enc));
    done(g, buf);
    return TEST_DONE();
}
