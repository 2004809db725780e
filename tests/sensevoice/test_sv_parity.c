/* SenseVoice against the float64 PyTorch reference (tools/ref/sensevoice.py,
 * goldens in tests/data/sensevoice/tiny): the Kaldi fbank and the LFR + CMVN
 * features, every encoder stage, the logits, the greedy CTC ids (exact on
 * F32, F16 and Q8_0), and the result rows (text without tags, raw text with
 * them, detected language) for three prompts. The F16 file holds the F32
 * file's values (the reference rounds its matrices to F16), so it is held
 * to the F32 goldens; the Q8_0 goldens were computed on the dequantized
 * weights, so every dtype meets the same tolerances but Q8_0's logits (x
 * quantized in its GEMMs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "npy.h"
#include "parity.h"
#include "sv_test.h"
#include "tensor/ops.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"

static tr_pool *g_pool;

static bool load_npy(const char *name, npy_array *a, int64_t rows, int64_t cols) {
    return tr_load_npy_2d(SV_DIR, name, a, rows, cols, "<f4");
}

static void front_end(const sv_model *m, const float *pcm, int n) {
    /* the raw log fbank: the same front end with one-frame stacking, no CMVN */
    tr_mel_config c = m->mel;
    c.lfr_m = c.lfr_n = 1;
    c.apply_cmvn = false;
    float *fm = NULL;
    int T = 0;
    CHECK(tr_mel_compute(&c, pcm, n, g_pool, &fm, &T) == TRANSCRIBE_OK);
    npy_array a;
    if (fm && load_npy("fbank", &a, T, c.n_mels)) {
        float *tm = malloc(sizeof(float) * (size_t)T * c.n_mels);
        tr_transpose(fm, tm, c.n_mels, T);
        double e = tr_max_abs_err(tm, a.data, a.n);
        printf("fbank [%d, %d]: max abs err %.3g\n", T, c.n_mels, e);
        CHECK_MSG(e <= 2e-3, "fbank err %g", e);
        free(tm);
        npy_free(&a);
    }
    free(fm);

    float *feats = NULL;
    int T_lfr = 0;
    CHECK(tr_sv_features(m, g_pool, pcm, n, &feats, &T_lfr) == TRANSCRIBE_OK);
    if (feats && load_npy("features", &a, T_lfr, m->hp.d_input)) {
        double e = tr_max_abs_err(feats, a.data, a.n);
        printf("features [%d, %d]: max abs err %.3g\n", T_lfr, m->hp.d_input, e);
        CHECK_MSG(e <= 2e-3, "features err %g", e);
        npy_free(&a);
    }
    free(feats);
}

typedef struct prompt_case {
    const char *tag, *language;
    enum transcribe_itn_mode itn;
} prompt_case;

static const char *const k_stage[5] = {"embed_out", "encoders0_out", "encoders_out",
                                       "after_norm_out", "tp_norm_out"};

static void run_case(const char *dtype, const sv_model *m, const float *pcm, int n,
                     const prompt_case *pc) {
    const char *gdt = strcmp(dtype, "F16") == 0 ? "F32" : dtype; /* same values (header) */
    float *feats = NULL;
    int T_lfr = 0;
    CHECK(tr_sv_features(m, g_pool, pcm, n, &feats, &T_lfr) == TRANSCRIBE_OK);
    if (!feats) return;
    const int T = T_lfr + 4, D = m->hp.d_model, di = m->hp.d_input, V = m->hp.n_vocab;
    float *buf[5];
    int width[5] = {di, D, D, D, D};
    for (int i = 0; i < 5; i++) buf[i] = malloc(sizeof(float) * (size_t)T * width[i]);
    float *logits = malloc(sizeof(float) * (size_t)T * V);
    sv_taps taps = {buf[0], buf[1], buf[2], buf[3], buf[4]};
    int lid, tn;
    tr_sv_prompt_rows(m, pc->language, pc->itn, &lid, &tn);
    CHECK(tr_sv_encode(m, g_pool, feats, T_lfr, lid, tn, logits, &taps, NULL, NULL) ==
          TRANSCRIBE_OK);

    /* encoder rows: the residual stream grows through the un-normalised
     * tier, so errors are relative to each row's magnitude */
    const double row_tol = 2e-3; /* measured ~1e-6 on F32 / F16, 4e-5 on Q8_0 */
    char name[128];
    npy_array a;
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s_%s_%s", gdt, pc->tag, k_stage[i]);
        if (!load_npy(name, &a, T, width[i])) continue;
        double e = tr_max_row_rel(buf[i], a.data, T, width[i]);
        printf("%s %s %-15s row-relative err %.3g\n", dtype, pc->tag, k_stage[i], e);
        CHECK_MSG(e <= row_tol, "%s %s %s: %g", dtype, pc->tag, k_stage[i], e);
        npy_free(&a);
    }
    snprintf(name, sizeof name, "%s_%s_logits", gdt, pc->tag);
    if (load_npy(name, &a, T, V)) {
        /* measured ~1.5e-5 on F32 / F16; Q8_0's GEMMs take x as two int8
         * codes per element (tr_mm_qgemm: within amax / 64516 of each
         * group of 32), measured 0.9-1.1e-3 */
        const double tol = strcmp(dtype, "Q8_0") == 0 ? 5e-3 : 1e-3;
        double e = tr_max_abs_err(logits, a.data, a.n);
        printf("%s %s logits max abs err %.3g\n", dtype, pc->tag, e);
        CHECK_MSG(e <= tol, "%s %s logits: %g", dtype, pc->tag, e);
        npy_free(&a);
    }

    /* greedy CTC ids: exact on every dtype; result rows as the reference */
    snprintf(name, sizeof name, "%s_%s", dtype, pc->tag);
    sv_golden g;
    CHECK_MSG(sv_golden_load(name, &g), "decode.json has no %s", name);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
    int nid = tr_sv_greedy(logits, T, V, ids);
    bool same = nid == g.n_ids;
    for (int i = 0; same && i < nid; i++) same = ids[i] == g.ids[i];
    CHECK_MSG(same, "%s: %d ids vs %d golden", name, nid, g.n_ids);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = pc->language;
    p.itn = pc->itn;
    tr_result res;
    tr_result_init(&res);
    CHECK(tr_sv_build_result(m, ids, nid, &p, n, &res) == TRANSCRIBE_OK);
    const char *txt = tr_result_full_text(&res), *raw = tr_result_raw_text(&res);
    const char *lang = tr_result_language(&res);
    CHECK_MSG(txt && !strcmp(txt, g.text), "%s text '%s'", name, txt ? txt : "(null)");
    CHECK_MSG(raw && !strcmp(raw, g.raw), "%s raw '%s'", name, raw ? raw : "(null)");
    CHECK_MSG(!strcmp(lang ? lang : "", g.lang), "%s language '%s' vs '%s'", name, lang ? lang : "",
              g.lang);
    CHECK(res.n_segs == 1 && res.segs[0].t0_ms == 0 &&
          res.segs[0].t1_ms == (int64_t)n * 1000 / 16000);
    CHECK(res.n_toks == nid);
    tr_result_free(&res);
    free(ids);
    free(logits);
    for (int i = 0; i < 5; i++) free(buf[i]);
    free(feats);
}

int main(void) {
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(SV_CLIP, 16000, &pcm, &n) == TRANSCRIBE_OK);
    if (!pcm) return TEST_DONE();
    g_pool = tr_pool_create(2);
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    static const prompt_case cases[3] = {
        {"auto_woitn", NULL, TRANSCRIBE_ITN_MODE_DEFAULT},
        {"en_woitn", "en", TRANSCRIBE_ITN_MODE_OFF},
        {"en_withitn", "en", TRANSCRIBE_ITN_MODE_ON},
    };
    for (int d = 0; d < 3; d++) {
        char path[512];
        snprintf(path, sizeof path, "%s/sensevoice-tiny-ref-%s.gguf", SV_DIR, dtypes[d]);
        sv_loaded L;
        transcribe_status st = sv_load_internal(path, &L);
        CHECK_MSG(st == TRANSCRIBE_OK, "load %s: %s", path, transcribe_status_string(st));
        if (st == TRANSCRIBE_OK) {
            if (d == 0) front_end(L.m, pcm, n);
            for (int c = 0; c < 3; c++) run_case(dtypes[d], L.m, pcm, n, &cases[c]);
        }
        sv_unload_internal(&L);
    }
    tr_pool_free(g_pool);
    transcribe_audio_free(pcm);
    return TEST_DONE();
}
