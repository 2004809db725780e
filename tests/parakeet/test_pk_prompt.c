/* The nemotron-3.5 prompt MLP (docs/formats/parakeet.md §3.6, §7.8) on the tiny
 * RNN-T model with random prompt tensors added here: the folded one-hot
 * column + GEMM equals the §7.8 formula computed naively, language hints
 * map through the dictionary (unknown → UNSUPPORTED_LANGUAGE), no hint uses
 * auto_id, and broken prompt keys are rejected. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_loaded.h"
#include "pk_test.h"
#include "test_util.h"

enum { P = 5, HID = 16 };

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((float)((*s >> 8) & 0xFFFF) / 65535.0f - 0.5f) * 0.5f;
}

/* tiny-rnnt + prompt keys and tensors; `variant` breaks one thing:
 * 0 none, 1 activation gelu, 2 an index out of range, 3 no prompt.mlp.2.bias */
static bool make_prompt_model(const char *src, const char *dst, int variant, int *d_out) {
    gguf_file *g = NULL;
    if (tr_gguf_open(src, &g) != TRANSCRIBE_OK) return false;
    uint32_t d = 0;
    tr_gguf_get_u32(g, "stt.parakeet.encoder.d_model", &d);
    *d_out = (int)d;
    gguf_writer *w = tr_gguf_writer_create();
    bool ok = true;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++)
        if (strcmp(tr_gguf_key_name(g, i), "general.languages") != 0)
            ok = tr_gguf_writer_copy_kv(w, g, i);
    const char *loc[] = {"en", "enGB", "de", "auto", "fr"};
    int32_t idx[] = {0, 0, 1, 2, 3};
    if (variant == 2) idx[4] = P;
    ok = ok && tr_gguf_writer_set_u32(w, "stt.parakeet.prompt.num_prompts", P) &&
         tr_gguf_writer_set_u32(w, "stt.parakeet.prompt.hidden", HID) &&
         tr_gguf_writer_set_str(w, "stt.parakeet.prompt.field", "target_lang") &&
         tr_gguf_writer_set_str(w, "stt.parakeet.prompt.activation",
                                variant == 1 ? "gelu" : "relu") &&
         tr_gguf_writer_set_arr_str(w, "stt.parakeet.prompt.dictionary.locales", loc, 5) &&
         tr_gguf_writer_set_arr_i32(w, "stt.parakeet.prompt.dictionary.indices", idx, 5) &&
         tr_gguf_writer_set_u32(w, "stt.parakeet.prompt.auto_id", 2);
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
    }
    unsigned seed = 7;
    int K = (int)d + P;
    float *w0 = malloc((size_t)K * HID * sizeof(float)), *w2 = malloc((size_t)HID * d * 4);
    float b0[HID], *b2 = malloc(d * sizeof(float));
    for (int i = 0; i < K * HID; i++) w0[i] = frand(&seed);
    for (int i = 0; i < HID * (int)d; i++) w2[i] = frand(&seed);
    for (int i = 0; i < HID; i++) b0[i] = frand(&seed);
    for (int i = 0; i < (int)d; i++) b2[i] = frand(&seed);
    int64_t ne0[2] = {K, HID}, nb0[1] = {HID}, ne2[2] = {HID, d}, nb2[1] = {d};
    ok = ok && tr_gguf_writer_add_tensor(w, "prompt.mlp.0.weight", TR_F32, 2, ne0, w0) &&
         tr_gguf_writer_add_tensor(w, "prompt.mlp.0.bias", TR_F32, 1, nb0, b0) &&
         tr_gguf_writer_add_tensor(w, "prompt.mlp.2.weight", TR_F32, 2, ne2, w2) &&
         (variant == 3 || tr_gguf_writer_add_tensor(w, "prompt.mlp.2.bias", TR_F32, 1, nb2, b2));
    ok = ok && tr_gguf_writer_write(w, dst) == TRANSCRIBE_OK;
    free(w0);
    free(w2);
    free(b2);
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    return ok;
}

/* tr_pk_prompt_apply against the docs/formats/parakeet.md §7.8 formula on the file's tensors. */
static void check_math(const pk_model *m, tr_pool *pool, int d) {
    const pk_prompt *p = &m->prompt;
    int T = 7, K = d + P;
    unsigned seed = 99;
    float *enc = malloc((size_t)T * d * 4), *got = malloc((size_t)T * d * 4);
    float *hid = malloc((size_t)(T + 1) * HID * 4);
    for (int i = 0; i < T * d; i++) enc[i] = frand(&seed) * 4;
    for (int pid = 0; pid < P; pid++) {
        memcpy(got, enc, (size_t)T * d * 4);
        tr_pk_prompt_apply(p, pool, pid, got, T, hid, hid + T * HID);
        const float *w2 = p->w2->data;
        double maxerr = 0;
        for (int t = 0; t < T; t++) {
            double h[HID];
            for (int j = 0; j < HID; j++) {
                double a = p->b0[j];
                for (int k = 0; k < K; k++) {
                    double z = k < d ? enc[t * d + k] : (k - d == pid ? 1.0 : 0.0);
                    a += p->w0.data[(size_t)j * K + k] * z;
                }
                h[j] = a > 0 ? a : 0;
            }
            for (int c = 0; c < d; c++) {
                double o = p->b2[c];
                for (int j = 0; j < HID; j++) o += w2[(size_t)c * HID + j] * h[j];
                double e = fabs(o - got[t * d + c]);
                if (e > maxerr) maxerr = e;
            }
        }
        CHECK_MSG(maxerr < 1e-4, "prompt %d: max error %g", pid, maxerr);
    }
    CHECK(tr_pk_prompt_id(p, NULL) == 2 && tr_pk_prompt_id(p, "enGB") == 0 &&
          tr_pk_prompt_id(p, "fr") == 3 && tr_pk_prompt_id(p, "xx") == -1);
    free(enc);
    free(got);
    free(hid);
}

int main(void) {
    char src[2048], dst[2048];
    CHECK(pk_model_file("tiny-rnnt", "F16", src, sizeof src));
    snprintf(dst, sizeof dst, "%s/pk_prompt.gguf", TR_BINARY_DIR);
    int d = 0;
    CHECK(make_prompt_model(src, dst, 0, &d));

    pk_loaded L;
    CHECK(pk_load_internal(dst, 2, &L));
    if (L.s) check_math(L.m, L.pool, d);
    pk_unload_internal(&L);

    struct transcribe_session *s = NULL;
    int n = 0;
    float *pcm = pk_load_wav("jfk", &n);
    CHECK(pk_open(dst, 2, &s) == TRANSCRIBE_OK && pcm);
    if (s && pcm) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
        p.language = "de";
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
        p.language = "xx";
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    }
    transcribe_session_free(s);
    free(pcm);

    for (int v = 1; v <= 3; v++) {
        CHECK(make_prompt_model(src, dst, v, &d));
        struct transcribe_model *m = NULL;
        transcribe_status st = transcribe_model_load_file(dst, NULL, &m);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "variant %d: %d", v, st);
        transcribe_model_free(m);
    }
    remove(dst);
    return TEST_DONE();
}
