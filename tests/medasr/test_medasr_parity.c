/* MedASR against the independent float64 PyTorch reference (tools/ref/medasr.py, goldens in
 * tests/data/medasr/tiny, written from the family specification): the unpadded clamped log-mel,
 * the subsampler output, block 0 and the last block, the output norm, the logits, and then the
 * greedy CTC ids and frames, text, raw text and token rows exactly, for the F32, F16 and Q8_0
 * files (each file's goldens are computed on the weights it holds, dequantized). The
 * reference's block-0 sub-layer taps (post_ff1 … post_ff2) sit inside the shared block
 * (nn/conformer.h), which has no taps: block 0's output covers them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/result.h"
#include "gguf/gguf.h"
#include "golden_json.h"
#include "models/medasr/medasr.h"
#include "npy.h"
#include "parity.h"
#include "tensor/pool.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define MA_DIR  TR_SOURCE_DIR "/tests/data/medasr/tiny"
#define MA_CLIP TR_SOURCE_DIR "/tests/data/medasr/clip.wav"

static tr_pool *g_pool;
static char *g_json;
static const char *g_dir; /* the goldens' folder */

/* The dtype's object of decode.json: its "ids" / "frames" arrays and "text" / "raw_text"
 * strings (UTF-8 as written; the reference escapes nothing but quotes, which the tiny texts do
 * not have). */
typedef struct golden {
    int32_t ids[256], frames[256];
    int n_ids, n_frames;
    char text[512], raw[512];
} golden;

static bool golden_load(const char *dtype, golden *g) {
    memset(g, 0, sizeof *g);
    const char *o = g_json ? tr_json_obj(g_json, dtype) : NULL;
    if (!o) return false;
    g->n_ids = tr_json_ints(o, NULL, "ids", g->ids, 256);
    g->n_frames = tr_json_ints(o, NULL, "frames", g->frames, 256);
    tr_json_str(o, NULL, "text", g->text, sizeof g->text);
    tr_json_str(o, NULL, "raw_text", g->raw, sizeof g->raw);
    return g->n_ids >= 0 && g->n_ids == g->n_frames;
}

static bool load_npy(const char *name, npy_array *a, int64_t rows, int64_t cols) {
    return tr_load_npy_2d(g_dir, name, a, rows, cols, "<f4");
}

static void run_dtype(const char *dtype, const ma_model *m, const float *pcm, int n) {
    float *feats = NULL;
    int T_mel = 0;
    CHECK(tr_ma_features(m, g_pool, pcm, n, &feats, &T_mel) == TRANSCRIBE_OK);
    if (!feats) return;
    const int M = m->hp.n_mels, d = m->hp.d_model, V = m->hp.n_vocab;
    const int T = tr_ma_enc_frames(m, T_mel);
    CHECK_MSG(T_mel == 198 && T == 47, "T_mel %d, T_enc %d", T_mel, T);
    printf("%s: %d blocks, d %d, vocabulary %d\n", g_dir, m->hp.n_layers, d, V);
    npy_array a;
    if (load_npy("mel", &a, T_mel, M)) {
        double e = tr_max_abs_err(feats, a.data, a.n);
        printf("%s mel [%d, %d]: max abs err %.3g\n", dtype, T_mel, M, e);
        CHECK_MSG(e <= 1e-3, "%s mel %g", dtype, e);
        npy_free(&a);
    }
    float *buf[4], *logits = malloc(sizeof(float) * (size_t)T * V);
    for (int i = 0; i < 4; i++) buf[i] = malloc(sizeof(float) * (size_t)T * d);
    ma_taps taps = {.sub_out = buf[0],
                    .block_idx = {0, m->hp.n_layers - 1, -1, -1},
                    .block_out = {buf[1], buf[2]},
                    .norm_out = buf[3]};
    CHECK(tr_ma_encode(m, g_pool, feats, 1, &T_mel, logits, &taps, NULL, NULL) == TRANSCRIBE_OK);
    /* README of the goldens: a float32 port within 1e-3 of the row maximum (measured ~1e-6) */
    static const char *const stage[4] = {"subsample", "block0", "last_block", "enc"};
    char name[128];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s_%s", dtype, stage[i]);
        if (!load_npy(name, &a, T, d)) continue;
        double e = tr_max_row_rel(buf[i], a.data, T, d);
        printf("%s %-10s row-relative err %.3g\n", dtype, stage[i], e);
        CHECK_MSG(e <= 1e-3, "%s %s: %g", dtype, stage[i], e);
        npy_free(&a);
    }
    snprintf(name, sizeof name, "%s_logits", dtype);
    if (load_npy(name, &a, T, V)) {
        double e = tr_max_abs_err(logits, a.data, a.n);
        printf("%s logits max abs err %.3g\n", dtype, e);
        CHECK_MSG(e <= 1e-2, "%s logits: %g", dtype, e);
        npy_free(&a);
    }

    /* ids, frames, texts and token rows: exact */
    golden g;
    CHECK_MSG(golden_load(dtype, &g), "decode.json has no %s", dtype);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T * 2);
    int nid = tr_ma_greedy(logits, T, V, m->hp.blank, ids, ids + T);
    bool same = nid == g.n_ids;
    for (int i = 0; same && i < nid; i++) same = ids[i] == g.ids[i] && ids[T + i] == g.frames[i];
    CHECK_MSG(same, "%s: %d ids vs %d golden", dtype, nid, g.n_ids);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    tr_result res;
    tr_result_init(&res);
    CHECK(tr_ma_build_result(m, ids, ids + T, nid, &p, &res) == TRANSCRIBE_OK);
    CHECK_MSG(!strcmp(tr_result_full_text(&res), g.text), "%s text '%s'", dtype,
              tr_result_full_text(&res));
    CHECK_MSG(!strcmp(tr_result_raw_text(&res), g.raw), "%s raw '%s'", dtype,
              tr_result_raw_text(&res));
    CHECK(res.n_toks == g.n_ids);
    for (int i = 0; i < res.n_toks && i < g.n_ids; i++) {
        CHECK(res.toks[i].id == g.ids[i]);
        CHECK(res.toks[i].t0_ms == 40 * (int64_t)g.frames[i]);
        CHECK(res.toks[i].t1_ms == 40 * (int64_t)g.frames[i] + 40);
    }
    /* the raw piece as token text (docs/formats/medasr.md §7): "▁And" first */
    CHECK(res.n_toks > 0 && !strcmp(tr_result_str(&res, res.toks[0].text_off), "\xE2\x96\x81"
                                                                               "And"));
    tr_result_free(&res);
    free(ids);
    free(logits);
    for (int i = 0; i < 4; i++) free(buf[i]);
    free(feats);
}

/* Every dtype of one folder of reference files (stem "medasr-<config>-ref-<D>.gguf"). */
static void run_dir(const char *dir, const char *config) {
    g_dir = dir;
    char path[512];
    snprintf(path, sizeof path, "%s/decode.json", dir);
    g_json = tr_test_read_text(path, NULL);
    CHECK_MSG(g_json != NULL, "cannot read %s", path);
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(MA_CLIP, 16000, &pcm, &n) == TRANSCRIBE_OK);
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    for (int i = 0; g_json && pcm && i < 3; i++) {
        snprintf(path, sizeof path, "%s/medasr-%s-ref-%s.gguf", dir, config, dtypes[i]);
        gguf_file *g = NULL;
        ma_model *m = NULL;
        transcribe_status st = tr_gguf_open(path, &g);
        if (st == TRANSCRIBE_OK) {
            tr_load_ctx lc = {.path = path, .gguf = g};
            st = tr_ma_model_load(&lc, &m);
        }
        CHECK_MSG(st == TRANSCRIBE_OK, "load %s: %s", path, transcribe_status_string(st));
        if (st == TRANSCRIBE_OK) run_dtype(dtypes[i], m, pcm, n);
        tr_ma_model_free(m);
        tr_gguf_close(g);
    }
    /* the public API gives the same text */
    golden gf;
    struct transcribe_session *s = NULL;
    snprintf(path, sizeof path, "%s/medasr-%s-ref-F32.gguf", dir, config);
    CHECK(golden_load("F32", &gf));
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    CHECK(s && pcm && transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK &&
          !strcmp(transcribe_full_text(s), gf.text));
    transcribe_session_free(s);
    free(g_json);
    g_json = NULL;
    transcribe_audio_free(pcm);
}

int main(void) {
    g_pool = tr_pool_create(2);
    run_dir(MA_DIR, "tiny");
    /* Published dimensions: the reference's real-config files are not committed (421 MB for
     * F32); run them when a build made them (tools/ref/medasr.py --config real --out
     * build-ref/medasr). */
    const char *real = TR_SOURCE_DIR "/build-ref/medasr";
    FILE *f = fopen(TR_SOURCE_DIR "/build-ref/medasr/decode.json", "rb"); /* written last */
    if (f) {
        fclose(f);
        run_dir(real, "real");
    } else {
        printf("skip published-size files: %s not built\n", real);
    }
    tr_pool_free(g_pool);
    return TEST_DONE();
}
