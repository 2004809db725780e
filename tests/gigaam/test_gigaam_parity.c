/* GigaAM against the float64 PyTorch reference (tools/ref/gigaam.py,
 * goldens in tests/data/gigaam/tiny): the log-mel, the subsampling, the
 * first block and the encoder output, the CTC logits or the transducer's
 * projected encoder, predictor outputs and every joint evaluation, the
 * emitted ids and frames (exact), and the result rows (text, raw text,
 * token pieces and times) for the four variants on F32, F16 and Q8_0. The
 * reference computes each file on its dequantized weights, so every dtype
 * meets the same tolerances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "ga_test.h"
#include "npy.h"
#include "parity.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "transcribe.h"

static tr_pool *g_pool;
static const char *g_dir = GA_DIR;

static bool load_npy(const char *name, npy_array *a, int64_t rows, int64_t cols, const char *dt) {
    return tr_load_npy_2d(g_dir, name, a, rows, cols, dt);
}

/* Row-relative error of got [rows][cols] against golden `name`. */
static void compare(const char *stem, const char *what, const float *got, int rows, int cols,
                    double tol) {
    char name[128];
    snprintf(name, sizeof name, "%s_%s", stem, what);
    npy_array a;
    if (!load_npy(name, &a, rows, cols, "<f4")) return;
    double e = tr_max_row_rel(got, a.data, rows, cols);
    printf("  %-22s [%d, %d]: max row-relative err %.3g\n", name, rows, cols, e);
    CHECK_MSG(e <= tol, "%s err %g > %g", name, e, tol);
    npy_free(&a);
}

static void front_end(const ga_model *m, const float *pcm, int n) {
    float *mel = NULL;
    int T = 0;
    CHECK(tr_ga_mel(m, g_pool, pcm, n, &mel, &T) == TRANSCRIBE_OK);
    CHECK(T == tr_ga_mel_frames(m, n));
    npy_array a;
    if (mel && load_npy("mel", &a, m->mel.n_mels, T, "<f4")) {
        double e = 0;
        for (int64_t i = 0; i < a.n; i++) {
            double d = fabs((double)mel[i] - (double)((float *)a.data)[i]);
            if (!(d <= e)) e = d;
        }
        printf("mel [%d, %d]: max abs err %.3g\n", m->mel.n_mels, T, e);
        CHECK_MSG(e <= 1e-4, "mel err %g", e);
        npy_free(&a);
    }
    free(mel);
}

static void check_result(const ga_model *m, const char *stem, const ga_tok *toks, int n) {
    ga_golden g;
    CHECK_MSG(ga_golden_load(g_dir, stem, &g), "decode.json has no %s", stem);
    CHECK_MSG(n == g.n_ids, "%s: %d ids, want %d", stem, n, g.n_ids);
    bool same = n == g.n_ids && n == g.n_frames;
    for (int i = 0; same && i < n; i++)
        same = toks[i].id == g.ids[i] && toks[i].frame == g.frames[i];
    CHECK_MSG(same, "%s: emitted ids / frames differ from the reference", stem);

    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN;
    tr_result res;
    tr_result_init(&res);
    CHECK(tr_ga_build_result(m, toks, n, &p, &res) == TRANSCRIBE_OK);
    CHECK_MSG(!strcmp(tr_result_full_text(&res), g.text), "%s: text '%s', want '%s'", stem,
              tr_result_full_text(&res), g.text);
    CHECK_MSG(!strcmp(tr_result_raw_text(&res), g.raw), "%s: raw '%s', want '%s'", stem,
              tr_result_raw_text(&res), g.raw);
    CHECK(res.n_toks == n);
    for (int i = 0; i < res.n_toks && i < n; i++) {
        const tr_result_token *t = &res.toks[i];
        CHECK(t->id == toks[i].id && t->t0_ms == 40 * toks[i].frame && t->t1_ms == t->t0_ms + 40);
        CHECK(!strcmp(tr_result_str(&res, t->text_off), tr_tokenizer_piece(m->tok, t->id)));
    }
    if (n > 0) {
        CHECK(res.n_segs == 1 && res.n_words >= 1);
        CHECK(res.segs[0].t0_ms == 40 * toks[0].frame);
        CHECK(res.segs[0].t1_ms == 40 * toks[n - 1].frame + 40);
    }
    printf("  %s: '%s' (%d tokens, %d words)\n", stem, tr_result_full_text(&res), res.n_toks,
           res.n_words);
    tr_result_free(&res);
}

static void run_case(const char *config, const ga_case *c, const float *pcm, int n) {
    char path[512], stem[64];
    ga_case_path(g_dir, config, c, path, sizeof path);
    snprintf(stem, sizeof stem, "%s_%s", c->variant, c->dtype);
    ga_loaded L;
    transcribe_status st = ga_load_internal(path, &L);
    CHECK_MSG(st == TRANSCRIBE_OK, "load %s: %s", path, transcribe_status_string(st));
    if (st != TRANSCRIBE_OK) {
        ga_unload_internal(&L);
        return;
    }
    const ga_model *m = L.m;
    printf("%s:\n", stem);
    if (c == &k_ga_cases[0]) front_end(m, pcm, n);
    float *mel = NULL;
    int T_mel = 0;
    CHECK(tr_ga_mel(m, g_pool, pcm, n, &mel, &T_mel) == TRANSCRIBE_OK);
    const int T = tr_ga_enc_frames(T_mel), d = m->hp.d_model, C = m->hp.n_classes;
    float *sub = malloc(sizeof(float) * (size_t)T * d),
          *blk0 = malloc(sizeof(float) * (size_t)T * d);
    float *enc = malloc(sizeof(float) * (size_t)T * d);
    float *blk[64] = {blk0};
    ga_taps taps = {sub, blk};
    const float *mels[1] = {mel};
    CHECK(tr_ga_encode(m, g_pool, 1, mels, &T_mel, enc, &taps, NULL, NULL) == TRANSCRIBE_OK);
    /* Q8_0: the GEMMs take x as two int8 codes per element (tr_mm_qgemm:
     * within amax / 64516 of each group of 32), measured at d_model 64 up to
     * 1.1e-4 on enc, 8e-4 on enc_proj and 1.5e-4 on logits; F32 / F16 are
     * float-exact in x */
    const double q = strcmp(c->dtype, "Q8_0") == 0 ? 50.0 : 1.0;
    compare(stem, "subsample", sub, T, d, 1e-5);
    compare(stem, "block0", blk0, T, d, 1e-5 * q);
    compare(stem, "enc", enc, T, d, 1e-5 * q);
    ga_tok *toks = NULL;
    int nt = 0;
    if (m->head == GA_HEAD_CTC) {
        float *logits = malloc(sizeof(float) * (size_t)T * C);
        float *logp = malloc(sizeof(float) * (size_t)T * C);
        toks = malloc(sizeof(ga_tok) * (size_t)T);
        CHECK(tr_ga_ctc_logprobs(m, g_pool, enc, T, logits, logp) == TRANSCRIBE_OK);
        compare(stem, "logits", logits, T, C, 1e-4 * q);
        nt = tr_ga_ctc_greedy(m, logp, T, toks);
        free(logits);
        free(logp);
    } else {
        const int h = m->hp.pred_hidden, hj = m->hp.joint_hidden, cap = 10 * T + 1;
        ga_rnnt_trace tr = {.enc_proj = malloc(sizeof(float) * (size_t)T * hj),
                            .pred = malloc(sizeof(float) * (size_t)cap * h),
                            .pred_cap = cap,
                            .logits = malloc(sizeof(float) * (size_t)cap * C),
                            .steps = malloc(sizeof(int32_t) * 2 * (size_t)cap),
                            .step_cap = cap};
        CHECK(tr_ga_rnnt_greedy(m, g_pool, enc, T, &toks, &nt, &tr, NULL, NULL) == TRANSCRIBE_OK);
        compare(stem, "enc_proj", tr.enc_proj, T, hj, 5e-5 * q);
        compare(stem, "pred", tr.pred, tr.n_pred, h, 1e-4);
        compare(stem, "logits", tr.logits, tr.n_steps, C, 1e-4 * q);
        char name[96];
        snprintf(name, sizeof name, "%s_steps", stem);
        npy_array a;
        if (load_npy(name, &a, tr.n_steps, 2, "<i4")) {
            CHECK_MSG(!memcmp(a.data, tr.steps, sizeof(int32_t) * 2 * (size_t)tr.n_steps),
                      "%s: joint steps differ", stem);
            npy_free(&a);
        }
        free(tr.enc_proj);
        free(tr.pred);
        free(tr.logits);
        free(tr.steps);
    }
    check_result(m, stem, toks, nt);
    free(toks);
    free(sub);
    free(blk0);
    free(enc);
    free(mel);
    ga_unload_internal(&L);
}

/* The stem convs run as im2col products in chunks of 128 output frames:
 * on a clip four times as long (several chunks in each conv) they equal
 * tensor/ops.h's tr_conv1d + ReLU. */
static void stem_chunks(const float *pcm, int n) {
    char path[512];
    ga_case_path(GA_DIR, "tiny", &k_ga_cases[0], path, sizeof path);
    ga_loaded L;
    if (ga_load_internal(path, &L) != TRANSCRIBE_OK) {
        CHECK(false);
        ga_unload_internal(&L);
        return;
    }
    const ga_model *m = L.m;
    const int nl = 4 * n, d = m->hp.d_model, k = m->hp.subs_kernel, p = (k - 1) / 2;
    float *x = malloc(sizeof(float) * (size_t)nl), *mel = NULL;
    for (int i = 0; i < nl; i++) x[i] = pcm[i % n];
    int T_mel = 0;
    CHECK(tr_ga_mel(m, g_pool, x, nl, &mel, &T_mel) == TRANSCRIBE_OK);
    const int T1 = tr_conv1d_out_len(T_mel, k, 2, p, p, 1), T = tr_ga_enc_frames(T_mel);
    CHECK(T > 128 && T1 > 2 * 128);
    float *y1 = malloc(sizeof(float) * (size_t)d * T1), *y2 = malloc(sizeof(float) * (size_t)d * T);
    float *want = malloc(sizeof(float) * (size_t)d * T),
          *sub = malloc(sizeof(float) * (size_t)d * T);
    float *enc = malloc(sizeof(float) * (size_t)d * T);
    tr_conv1d(g_pool, mel, m->hp.feat_in, T_mel, m->sub0_w, m->sub0_b, 2, p, p, 1, 1, y1);
    for (long i = 0; i < (long)d * T1; i++) y1[i] = y1[i] > 0 ? y1[i] : 0;
    tr_conv1d(g_pool, y1, d, T1, m->sub2_w, m->sub2_b, 2, p, p, 1, 1, y2);
    for (long i = 0; i < (long)d * T; i++) y2[i] = y2[i] > 0 ? y2[i] : 0;
    tr_transpose(y2, want, d, T);
    ga_taps taps = {sub, NULL};
    const float *mels[1] = {mel};
    CHECK(tr_ga_encode(m, g_pool, 1, mels, &T_mel, enc, &taps, NULL, NULL) == TRANSCRIBE_OK);
    double e = tr_max_row_rel(sub, want, T, d);
    printf("stem in chunks vs tr_conv1d (%d frames): %.3g\n", T, e);
    CHECK_MSG(e < 1e-5, "stem chunks err %g", e);
    free(x), free(mel), free(y1), free(y2), free(want), free(sub), free(enc);
    ga_unload_internal(&L);
}

int main(void) {
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(GA_CLIP, 16000, &pcm, &n) == TRANSCRIBE_OK);
    if (!pcm) return TEST_DONE();
    g_pool = tr_pool_create(2);
    for (int i = 0; i < GA_N_CASES; i++) run_case("tiny", &k_ga_cases[i], pcm, n);
    stem_chunks(pcm, n);
    /* Published dimensions: the reference's real-config files are not
     * committed (450 MB each); run them when a build made them
     * (tools/ref/gigaam.py --config real --out build-ref/gigaam). */
    static const ga_case real[] = {
        {"ctc", "F16"}, {"ctc", "Q8_0"}, {"e2e-rnnt", "F16"}, {"e2e-rnnt", "Q8_0"}};
    g_dir = TR_SOURCE_DIR "/build-ref/gigaam";
    for (int i = 0; i < 4; i++) {
        char path[512];
        ga_case_path(g_dir, "real", &real[i], path, sizeof path);
        FILE *f = fopen(path, "rb");
        if (!f) {
            printf("skip published-size %s %s: %s not built\n", real[i].variant, real[i].dtype,
                   path);
            continue;
        }
        fclose(f);
        run_case("real", &real[i], pcm, n);
    }
    tr_pool_free(g_pool);
    transcribe_audio_free(pcm);
    return TEST_DONE();
}
