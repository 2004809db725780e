/* Cohere parity against the independent float64 reference tools/ref/cohere.py
 * on its random tiny models (tests/data/cohere/tiny/cohere-tiny-ref-{F32,F16,
 * Q8_0}.gguf; tests/data/cohere/README.md):
 *   - log-mel of both clips (1e-3 abs);
 *   - per file: pre-encode output, block 0 output, encoder output, the
 *     enc_dec_proj output and layer 0's cross K / V (1e-3 of the tensor's
 *     largest magnitude), through the internal entry points;
 *   - the English and German prompts looked up by string;
 *   - every greedy step's logits, teacher-forced on the reference ids
 *     (2e-3 abs with an F32 cache, 2e-2 with the default F16 cache);
 *   - greedy ids, text, status and the truncation of clip_min through the
 *     public API, for every file with F32 and F16 caches: identical.
 * Q8_0: the reference multiplies the dequantized weights by float
 * activations; our products of at most 4 rows (clip_min's one encoder
 * frame, every decoder step), like ggml's Q8_0 dot, quantize the activation
 * row to int8 per 32 values first, which moves those tensors by a few 1e-2
 * of their magnitude and the logits by up to ~0.33 (greedy margins >= 11.7,
 * so the ids stay exact and are checked as such): tolerances Q8_ENC_FEW
 * and Q8_LOGITS there. The worst errors are printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "gguf/gguf.h"
#include "golden_json.h"
#include "models/cohere/cohere.h"
#include "nn/fastconformer_internal.h"
#include "npy.h"
#include "parity.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/cohere"

static const char *const k_dtypes[] = {"F32", "F16", "Q8_0"};
#define TOL_ENC    1e-3 /* of the tensor's largest magnitude */
#define Q8_ENC_FEW 5e-2 /* Q8_0, tensors of <= 4 rows (int8 activations) */
#define TOL_LOGITS 2e-3 /* F32 cache */
#define TOL_LOG_KV 2e-2 /* F16 cache */
#define Q8_LOGITS  0.5  /* Q8_0, either cache (int8 activations in every step) */

typedef struct run {
    const char *clip, *lang, *text; /* text NULL: not compared literally */
    transcribe_status status;
} run;

static const run k_runs[] = {
    {"clip", "en", "And so, my fellow Americans ask not what your country can do for you.",
     TRANSCRIBE_OK},
    {"clip", "de", "Ich bin ein Berliner, sch\xC3\xB6n.", TRANSCRIBE_OK},
    {"clip_min", "en", NULL, TRANSCRIBE_ERR_OUTPUT_TRUNCATED},
};
#define N_RUNS 3

static char *g_json;

/* The int array `key` of the object `obj` in decode.json (up to cap); -1 when absent. */
static int json_ints(const char *obj, const char *key, int32_t *out, int cap) {
    const char *o = g_json ? tr_json_obj(g_json, obj) : NULL;
    return o ? tr_json_ints(o, NULL, key, out, cap) : -1;
}

static bool load_npy(const char *name, npy_array *a) {
    char path[512];
    snprintf(path, sizeof path, DATA "/tiny/%s.npy", name);
    if (npy_load(path, a) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        return false;
    }
    return true;
}

/* max |got - want| over n, and whether it is within tol (abs) or tol ·
 * max|want| (rel_to_max). */
static void compare(const char *what, const float *got, const npy_array *want, int64_t n,
                    double tol, bool rel_to_max) {
    CHECK_MSG(want->n == n, "%s: %lld values, golden %lld", what, (long long)n, (long long)want->n);
    if (want->n != n) return;
    const double err = tr_max_abs_err(got, want->data, n), mx = tr_max_abs(want->data, n);
    const double bound = rel_to_max ? tol * mx : tol;
    printf("  %-28s max |err| %.3g (bound %.3g)\n", what, err, bound);
    CHECK_MSG(err <= bound, "%s: max error %g > %g", what, err, bound);
}

static float *read_clip(const char *clip, int *n) {
    char path[512];
    snprintf(path, sizeof path, DATA "/%s.wav", clip);
    float *pcm = NULL;
    if (transcribe_audio_load_file(path, 16000, &pcm, n) != TRANSCRIBE_OK) return NULL;
    return pcm;
}

typedef struct loaded {
    gguf_file *g;
    ch_model *m;
    ch_session *s;
} loaded;

static bool load_internal(const char *dt, transcribe_kv_type kv, loaded *L) {
    memset(L, 0, sizeof *L);
    char path[512];
    snprintf(path, sizeof path, DATA "/tiny/cohere-tiny-ref-%s.gguf", dt);
    if (tr_gguf_open(path, &L->g) != TRANSCRIBE_OK) return false;
    tr_load_ctx lc = {.path = path, .gguf = L->g};
    if (tr_ch_model_load(&lc, &L->m) != TRANSCRIBE_OK) return false;
    tr_session_cfg cfg = {.n_threads = 1, .kv_type = kv};
    return tr_ch_session_create(L->m, &cfg, &L->s) == TRANSCRIBE_OK;
}

static void unload(loaded *L) {
    tr_ch_session_free(L->s);
    tr_ch_model_free(L->m);
    tr_gguf_close(L->g);
}

/* Mel, encoder stages, projection and cross K/V of one clip. */
static void check_encoder(const char *dt, loaded *L, const char *clip, bool check_mel) {
    double tol = TOL_ENC;
    int n = 0;
    float *pcm = read_clip(clip, &n);
    CHECK(pcm != NULL);
    if (!pcm) return;
    float *mel = NULL;
    int T_mel = 0;
    CHECK(tr_ch_log_mel(L->m, NULL, pcm, n, &mel, &T_mel) == TRANSCRIBE_OK);
    char name[128], what[128];
    npy_array a;
    if (check_mel) {
        snprintf(name, sizeof name, "%s_mel", clip);
        if (load_npy(name, &a)) {
            snprintf(what, sizeof what, "%s mel", clip);
            compare(what, mel, &a, (int64_t)128 * T_mel, 1e-3, false);
            npy_free(&a);
        }
    }
    const int T = tr_fc_out_frames(L->m->enc, T_mel), d = L->m->hp.d_enc, H = L->m->hp.d_dec;
    if (strcmp(dt, "Q8_0") == 0 && T <= 4) tol = Q8_ENC_FEW;
    float *pre = malloc(sizeof(float) * (size_t)T * d),
          *out = malloc(sizeof(float) * (size_t)T * d);
    tr_fc_work *w = tr_fc_work_new();
    /* block 0 alone: a shallow copy with one layer */
    tr_fc_encoder one = *L->m->enc;
    one.hp.n_layers = 1;
    struct {
        const char *stage;
        const float *got;
        int64_t n;
    } st[3] = {{"pre_encode_out", pre, (int64_t)T * d}, {"block0_out", out, (int64_t)T * d}};
    CHECK(tr_fc_forward(&one, NULL, w, mel, T_mel, out, pre, NULL, NULL) == TRANSCRIBE_OK);
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s_%s_%s", dt, clip, st[i].stage);
        snprintf(what, sizeof what, "%s %s %s", dt, clip, st[i].stage);
        if (load_npy(name, &a)) {
            compare(what, st[i].got, &a, st[i].n, tol, true);
            npy_free(&a);
        }
    }
    CHECK(tr_fc_forward(L->m->enc, NULL, w, mel, T_mel, out, NULL, NULL, NULL) == TRANSCRIBE_OK);
    snprintf(name, sizeof name, "%s_%s_enc_out", dt, clip);
    snprintf(what, sizeof what, "%s %s enc_out", dt, clip);
    if (load_npy(name, &a)) {
        compare(what, out, &a, (int64_t)T * d, tol, true);
        npy_free(&a);
    }
    int T_enc = 0;
    CHECK(tr_ch_encode(L->s, mel, T_mel, &T_enc, NULL, NULL) == TRANSCRIBE_OK && T_enc == T);
    /* layer 0's cross K/V in the projections' row layout (nn.h) */
    const tr_nn_dims *dd = &L->m->decoder.dims;
    float *ck0 = malloc(sizeof(float) * (size_t)T * H),
          *cv0 = malloc(sizeof(float) * (size_t)T * H);
    CHECK(ck0 && cv0);
    tr_nn_cross_rows(L->s->enc.cross_k, (size_t)T, (size_t)T, dd, ck0);
    tr_nn_cross_rows(L->s->enc.cross_v, (size_t)T, (size_t)T, dd, cv0);
    const struct {
        const char *stage;
        const float *got;
    } st2[3] = {{"proj_out", L->s->enc.enc_dec}, {"cross_k0", ck0}, {"cross_v0", cv0}};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s_%s_%s", dt, clip, st2[i].stage);
        snprintf(what, sizeof what, "%s %s %s", dt, clip, st2[i].stage);
        if (load_npy(name, &a)) {
            compare(what, st2[i].got, &a, (int64_t)T * H, tol, true);
            npy_free(&a);
        }
    }
    free(ck0);
    free(cv0);
    tr_fc_work_free(w);
    free(pre);
    free(out);
    free(mel);
    transcribe_audio_free(pcm);
}

/* Every step's logits, fed the reference ids. */
static void check_logits(const char *dt, loaded *L, const run *r, double tol, const char *cache) {
    int n = 0;
    float *pcm = read_clip(r->clip, &n);
    float *mel = NULL;
    int T_mel = 0, T_enc = 0;
    if (!pcm || tr_ch_log_mel(L->m, NULL, pcm, n, &mel, &T_mel) != TRANSCRIBE_OK ||
        tr_ch_encode(L->s, mel, T_mel, &T_enc, NULL, NULL) != TRANSCRIBE_OK) {
        CHECK(false);
        free(mel);
        transcribe_audio_free(pcm);
        return;
    }
    char obj[64], name[128], what[128];
    snprintf(obj, sizeof obj, "%s_%s_%s", dt, r->clip, r->lang);
    int32_t ids[CH_MAX_GEN], prompt[CH_PROMPT];
    const int n_ids = json_ints(obj, "ids", ids, CH_MAX_GEN);
    CHECK(json_ints(obj, "prompt", prompt, CH_PROMPT) == CH_PROMPT);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = r->lang;
    ch_prompt pr;
    CHECK(tr_ch_build_prompt(L->m, &p, &pr) == TRANSCRIBE_OK);
    CHECK_MSG(memcmp(pr.ids, prompt, sizeof prompt) == 0, "%s: prompt ids", obj);
    npy_array a;
    snprintf(name, sizeof name, "%s_logits", obj);
    if (n_ids > 0 && load_npy(name, &a)) {
        const int V = L->m->hp.n_vocab, rows = (int)a.shape[0];
        float *got = malloc(sizeof(float) * (size_t)rows * V);
        bool ok = tr_ch_decode(L->s, pr.ids, CH_PROMPT, 0, T_enc);
        if (ok) memcpy(got, L->s->logits, sizeof(float) * V);
        for (int j = 1; ok && j < rows; j++) {
            ok = tr_ch_decode(L->s, &ids[j - 1], 1, CH_PROMPT + j - 1, T_enc);
            memcpy(got + (size_t)j * V, L->s->logits, sizeof(float) * V);
        }
        CHECK(ok);
        snprintf(what, sizeof what, "%s logits (%s cache)", obj, cache);
        if (ok) compare(what, got, &a, (int64_t)rows * V, tol, false);
        free(got);
        npy_free(&a);
    }
    free(mel);
    transcribe_audio_free(pcm);
}

/* Greedy decode through the public API: ids, text, status. */
static void check_api(const char *dt, transcribe_kv_type kv) {
    char path[512];
    snprintf(path, sizeof path, DATA "/tiny/cohere-tiny-ref-%s.gguf", dt);
    struct transcribe_model *m = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    struct transcribe_session *s = NULL;
    CHECK(m && transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    for (int i = 0; s && i < N_RUNS; i++) {
        const run *r = &k_runs[i];
        int n = 0;
        float *pcm = read_clip(r->clip, &n);
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.language = r->lang;
        transcribe_status st = pcm ? transcribe_run(s, pcm, n, &p) : TRANSCRIBE_ERR_INVALID_ARG;
        char obj[64];
        snprintf(obj, sizeof obj, "%s_%s_%s", dt, r->clip, r->lang);
        int32_t ids[CH_MAX_GEN];
        const int n_ids = json_ints(obj, "ids", ids, CH_MAX_GEN);
        CHECK_MSG(st == r->status, "%s (%s cache): %s", obj,
                  kv == TRANSCRIBE_KV_TYPE_F32 ? "F32" : "F16", transcribe_status_string(st));
        bool same = transcribe_n_tokens(s) == n_ids;
        for (int j = 0; same && j < n_ids; j++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            same = transcribe_get_token(s, j, &t) == TRANSCRIBE_OK && t.id == ids[j];
        }
        CHECK_MSG(same, "%s (%s cache): %d ids, reference %d, or a different id", obj,
                  kv == TRANSCRIBE_KV_TYPE_F32 ? "F32" : "F16", transcribe_n_tokens(s), n_ids);
        if (r->text)
            CHECK_MSG(strcmp(transcribe_full_text(s), r->text) == 0, "%s: text '%s'", obj,
                      transcribe_full_text(s));
        if (r->status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            CHECK(transcribe_was_truncated(s) && strlen(transcribe_full_text(s)) > 0);
        transcribe_audio_free(pcm);
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    size_t len = 0;
    g_json = tr_test_read_text(DATA "/tiny/decode.json", &len);
    if (!g_json) {
        printf("tests/data/cohere/tiny/decode.json missing: skipped\n");
        return 0;
    }
    for (int d = 0; d < 3; d++) {
        const char *dt = k_dtypes[d];
        printf("%s:\n", dt);
        loaded L;
        CHECK(load_internal(dt, TRANSCRIBE_KV_TYPE_F32, &L));
        if (L.s) {
            check_encoder(dt, &L, "clip", d == 0);
            check_encoder(dt, &L, "clip_min", d == 0);
            for (int i = 0; i < N_RUNS; i++)
                check_logits(dt, &L, &k_runs[i], d == 2 ? Q8_LOGITS : TOL_LOGITS, "F32");
        }
        unload(&L);
        CHECK(load_internal(dt, TRANSCRIBE_KV_TYPE_F16, &L));
        if (L.s)
            for (int i = 0; i < N_RUNS; i++)
                check_logits(dt, &L, &k_runs[i], d == 2 ? Q8_LOGITS : TOL_LOG_KV, "F16");
        unload(&L);
        check_api(dt, TRANSCRIBE_KV_TYPE_F32);
        check_api(dt, TRANSCRIBE_KV_TYPE_F16);
    }
    free(g_json);
    return TEST_DONE();
}
