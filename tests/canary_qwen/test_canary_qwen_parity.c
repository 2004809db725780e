/* Canary-Qwen against the float64 PyTorch reference goldens of
 * tests/data/canary_qwen (tools/ref/canary_qwen.py; README there): mel,
 * pre-encode, encoder block 0, encoder output, projection, prompt ids,
 * prefill logits (F32 and F16 KV caches), greedy tokens and text for the
 * F32, F16 and Q8_0 files on a 2.5 s clip and the 257-sample minimum; the
 * batched path gives each utterance its single-run text; speculative
 * decoding gives greedy's tokens; the exact input gate; abort mid-decode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "llm_parity.h"
#include "models/canary_qwen/canary_qwen.h"
#include "npy.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/canary_qwen"

/* Tolerances, max abs (README of the goldens: float32 vs float64 is ~2e-6
 * on the encoder, ~2e-6 on the logits with F32 K/V, ~1.4e-5 with F16 K/V). */
#define TOL_MEL    1e-3
#define TOL_ENC    2e-3 /* pre-encode, block 0, encoder output */
#define TOL_PROJ   1e-3
#define TOL_LOGITS 2e-3
/* Q8_0 against the goldens of its own dequantized weights: our matrix-vector
 * products (one-row steps and the tiny encoder's few-row GEMMs) quantize the
 * activation row to int8 per 32 values, as ggml's Q8_0 dot does, so values
 * move by ~1e-2 (the greedy margins are >= 7.9: tokens stay exact) */
#define TOL_Q8 1e-1

static double g_worst[2][6]; /* [q8][mel, pre, block0, enc, proj, logits0] */

typedef struct clip {
    const char *stem;
    int count; /* first samples of clip.wav (0 = all) */
    float *pcm;
    int n;
} clip;

#define N_CLIPS 2
static clip g_clips[N_CLIPS] = {{"clip", 0, NULL, 0}, {"clip_min", 257, NULL, 0}};

static const char *const k_dts[3] = {"F32", "F16", "Q8_0"};

static bool is_q8(const char *dt) {
    return strcmp(dt, "Q8_0") == 0;
}

/* <stem>[.q8_0].<what>.npy */
static void golden_name(char *buf, size_t n, const clip *c, const char *dt, const char *what) {
    snprintf(buf, n, "%s%s.%s.npy", c->stem, is_q8(dt) ? ".q8_0" : "", what);
}

/* "key: value" line of <stem>[.q8_0].text.txt (malloc'ed, "" when absent). */
static char *golden_field(const clip *c, const char *dt, const char *key) {
    char name[128];
    snprintf(name, sizeof name, "%s%s.text.txt", c->stem, is_q8(dt) ? ".q8_0" : "");
    char *s = llm_read_golden(DATA, name);
    char *out = tr_text_field(s, key);
    free(s);
    return out;
}

/* Compares n values (rows x cols) with a golden; k indexes g_worst. */
static void compare(const float *got, int64_t rows, int64_t cols, const clip *c, const char *dt,
                    const char *what, int k, double tol) {
    char name[128];
    golden_name(name, sizeof name, c, dt, what);
    npy_array g;
    if (!llm_load_npy(DATA, name, &g)) return;
    CHECK_MSG(g.ndim == 2 && g.shape[0] == rows && g.shape[1] == cols,
              "%s: shape [%lld, %lld] vs [%lld, %lld]", name, (long long)g.shape[0],
              (long long)(g.ndim > 1 ? g.shape[1] : 0), (long long)rows, (long long)cols);
    if (g.n == rows * cols) {
        double e = llm_max_abs_diff(got, g.data, g.n, NULL);
        double *w = &g_worst[is_q8(dt)][k];
        *w = fmax(*w, e);
        CHECK_MSG(e <= (is_q8(dt) ? TOL_Q8 : tol), "%s %s: max abs err %g", dt, name, e);
    }
    npy_free(&g);
}

/* Mel, pre-encode, encoder block 0 (a one-layer encoder over the same
 * file), encoder output, projection and prompt ids (internal API). */
static void check_front(const gguf_file *f, const cq_model *m, const clip *c, const char *dt) {
    float *mel = NULL;
    int T_mel = 0;
    CHECK(tr_cq_log_mel(m, NULL, c->pcm, c->n, &mel, &T_mel) == TRANSCRIBE_OK);
    if (!mel) return;
    char name[128];
    npy_array g;
    if (!is_q8(dt)) { /* the front end does not depend on the weights' type */
        golden_name(name, sizeof name, c, dt, "mel");
        if (llm_load_npy(DATA, name, &g)) {
            CHECK(g.ndim == 2 && g.shape[0] == 128 && g.shape[1] == T_mel);
            if (g.n == (int64_t)128 * T_mel) {
                double e = llm_max_abs_diff(mel, g.data, g.n, NULL);
                g_worst[0][0] = fmax(g_worst[0][0], e);
                CHECK_MSG(e <= TOL_MEL, "%s mel: max abs err %g", c->stem, e);
            }
            npy_free(&g);
        }
    }
    const int d = m->enc_hp.d_model, T = tr_fc_out_frames(m->enc, T_mel);
    CHECK(T == tr_cq_enc_frames(m, c->n));
    float *enc = malloc(sizeof(float) * (size_t)T * (size_t)d);
    float *pre = malloc(sizeof(float) * (size_t)T * (size_t)d);
    tr_fc_work *w = tr_fc_work_new();
    CHECK(tr_fc_forward(m->enc, NULL, w, mel, T_mel, enc, pre, NULL, NULL) == TRANSCRIBE_OK);
    compare(pre, T, d, c, dt, "pre", 1, TOL_ENC);
    compare(enc, T, d, c, dt, "enc", 3, TOL_ENC);
    /* block 0: the same file read as a one-layer encoder */
    tr_fc_hparams hp1 = m->enc_hp;
    hp1.n_layers = 1;
    tr_fc_encoder *e1 = NULL;
    CHECK(tr_fc_load(f, &hp1, &e1) == TRANSCRIBE_OK);
    if (e1) {
        CHECK(tr_fc_forward(e1, NULL, w, mel, T_mel, enc, NULL, NULL, NULL) == TRANSCRIBE_OK);
        compare(enc, T, d, c, dt, "block0", 2, TOL_ENC);
        tr_fc_free(e1);
    }
    float *audio = NULL;
    int T_enc = 0;
    CHECK(tr_cq_encode(m, NULL, w, mel, T_mel, &audio, &T_enc, NULL, NULL, NULL, NULL) ==
          TRANSCRIBE_OK);
    CHECK(T_enc == T);
    if (audio) compare(audio, T, m->lm.d_model, c, dt, "proj", 4, TOL_PROJ);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T + m->n_prefix + m->n_suffix));
    int n = tr_cq_build_prompt(m, T, ids);
    CHECK(n == T + m->n_prefix + m->n_suffix);
    golden_name(name, sizeof name, c, "F32", "prompt");
    if (llm_load_npy(DATA, name, &g)) {
        CHECK_MSG(g.n == n && memcmp(g.data, ids, sizeof(int32_t) * (size_t)n) == 0,
                  "%s prompt ids differ (%d vs %lld)", c->stem, n, (long long)g.n);
        npy_free(&g);
    }
    free(ids);
    free(audio);
    tr_fc_work_free(w);
    free(enc);
    free(pre);
    free(mel);
}

/* One run through the internal session: logits0, tokens, text, segment;
 * then spec_k 1, 4 and 8 give the same tokens. */
static void check_decode(const cq_model *m, const clip *c, const char *dt, bool kv_f32) {
    tr_session_cfg cfg = {.n_threads = 2,
                          .kv_type = kv_f32 ? TRANSCRIBE_KV_TYPE_F32 : TRANSCRIBE_KV_TYPE_F16};
    cq_session *s = NULL;
    CHECK(tr_cq_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) return;
    const char *kv = kv_f32 ? "F32" : "F16";
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    transcribe_status st = tr_cq_run(s, c->pcm, c->n, &ctx);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s %s kv%s: %s", dt, c->stem, kv, transcribe_status_string(st));
    char name[128];
    npy_array g;
    golden_name(name, sizeof name, c, dt, "logits0");
    if (llm_load_npy(DATA, name, &g)) {
        if (g.n == m->lm.n_vocab) {
            double e = llm_max_abs_diff(s->dec.last_logits, g.data, g.n, NULL);
            g_worst[is_q8(dt)][5] = fmax(g_worst[is_q8(dt)][5], e);
            CHECK_MSG(e <= (is_q8(dt) ? TOL_Q8 : TOL_LOGITS), "%s %s kv%s logits0: max abs err %g",
                      dt, c->stem, kv, e);
        }
        npy_free(&g);
    }
    golden_name(name, sizeof name, c, dt, "tokens");
    int32_t ref_ids[CQ_MAX_NEW];
    int n_ref = s->n_last;
    memcpy(ref_ids, s->last_ids, sizeof(int32_t) * (size_t)n_ref);
    if (llm_load_npy(DATA, name, &g)) {
        const int32_t *ref = g.data;
        /* golden ids end with EOS; ours exclude it */
        bool same = g.n == s->n_last + 1 && ref[g.n - 1] == m->sp.eos &&
                    memcmp(ref, s->last_ids, sizeof(int32_t) * (size_t)s->n_last) == 0;
        CHECK_MSG(same, "%s %s kv%s: tokens differ (%d vs %lld)", dt, c->stem, kv, s->n_last,
                  (long long)g.n - 1);
        npy_free(&g);
    }
    char *text = golden_field(c, dt, "text"), *seg = golden_field(c, dt, "segment_ms");
    char got_seg[64] = "";
    if (r.n_segs == 1)
        snprintf(got_seg, sizeof got_seg, "%lld %lld", (long long)r.segs[0].t0_ms,
                 (long long)r.segs[0].t1_ms);
    CHECK_MSG(strcmp(tr_result_full_text(&r), text) == 0, "%s %s text '%s'", dt, c->stem,
              tr_result_full_text(&r));
    CHECK(strcmp(tr_result_raw_text(&r), text) == 0);
    CHECK_MSG(strcmp(got_seg, seg) == 0, "%s %s segment '%s' vs '%s'", dt, c->stem, got_seg, seg);
    free(text);
    free(seg);
    tr_result_free(&r);
    /* speculative decoding: the drafts verified give greedy's tokens */
    const int ks[3] = {1, 4, 8};
    for (int i = 0; i < 3; i++) {
        rp.spec_k_drafts = ks[i];
        tr_result_init(&r);
        tr_run_ctx sctx = {.params = &rp, .result = &r};
        st = tr_cq_run(s, c->pcm, c->n, &sctx);
        CHECK_MSG(st == TRANSCRIBE_OK && s->n_last == n_ref &&
                      memcmp(ref_ids, s->last_ids, sizeof(int32_t) * (size_t)n_ref) == 0,
                  "%s %s kv%s spec_k %d: %d vs %d tokens", dt, c->stem, kv, ks[i], s->n_last,
                  n_ref);
        tr_result_free(&r);
    }
    tr_cq_session_free(s);
}

static void test_file(const char *dt) {
    char path[512];
    snprintf(path, sizeof path, "%s/canary-qwen-tiny-ref-%s.gguf", DATA, dt);
    gguf_file *g = NULL;
    cq_model *m = NULL;
    if (tr_gguf_open(path, &g) == TRANSCRIBE_OK) {
        tr_load_ctx lc = {.path = path, .gguf = g};
        CHECK(tr_cq_model_load(&lc, &m) == TRANSCRIBE_OK);
    }
    CHECK_MSG(m != NULL, "cannot load %s", path);
    if (m) {
        /* the baked buffers of docs/formats/canary_qwen.md §3.2 are in use */
        CHECK(m->mel.filterbank && m->mel.baked_window);
        for (int c = 0; c < N_CLIPS; c++) {
            check_front(g, m, &g_clips[c], dt);
            check_decode(m, &g_clips[c], dt, true);
            check_decode(m, &g_clips[c], dt, false);
        }
    }
    tr_cq_model_free(m);
    tr_gguf_close(g);
}

/* The batched path (public API): each row gets its single-run text; the
 * exact gate (clip: T_prompt 45 → n_ctx 301 passes, 300 does not). */
static void test_batch_and_gate(void) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    for (int f = 0; f < 3; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/canary-qwen-tiny-ref-%s.gguf", DATA, k_dts[f]);
        struct transcribe_session *s = NULL;
        CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
        if (!s) continue;
        const float *pcm[3] = {g_clips[0].pcm, g_clips[1].pcm, g_clips[0].pcm};
        const int n[3] = {g_clips[0].n, g_clips[1].n, g_clips[0].n};
        const int which[3] = {0, 1, 0};
        CHECK(transcribe_run_batch(s, pcm, n, 3, NULL) == TRANSCRIBE_OK);
        CHECK(transcribe_batch_n_results(s) == 3);
        for (int i = 0; i < 3; i++) {
            char *text = golden_field(&g_clips[which[i]], k_dts[f], "text");
            CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK);
            const char *bt = transcribe_batch_full_text(s, i);
            CHECK_MSG(bt && strcmp(bt, text) == 0, "%s batch row %d: '%s'", k_dts[f], i,
                      bt ? bt : "(null)");
            free(text);
        }
        transcribe_session_free(s);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/canary-qwen-tiny-ref-F16.gguf", DATA);
    /* the family's own gate: chunking off */
    llm_expect_ctx_gate(path, &sp, 301, g_clips[0].pcm, g_clips[0].n, "clip");
}

/* Abort mid-decode: ABORTED, and the kept text is a non-empty proper
 * prefix of the reference text. */
static void test_abort(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/canary-qwen-tiny-ref-F32.gguf", DATA);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    char *text = golden_field(&g_clips[0], "F32", "text");
    /* polls: before the encoder, one per encoder block (2), after it, then
     * before each decode step */
    llm_expect_abort(s, g_clips[0].pcm, g_clips[0].n, 12, text, false);
    /* an abort during the encoder keeps nothing */
    llm_abort_limit = 2;
    llm_polls = 0;
    CHECK(transcribe_run(s, g_clips[0].pcm, g_clips[0].n, NULL) == TRANSCRIBE_ERR_ABORTED);
    free(text);
    transcribe_session_free(s);
}

int main(void) {
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(DATA "/clip.wav", 16000, &pcm, &n) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot read clip.wav\n");
        return 1;
    }
    for (int c = 0; c < N_CLIPS; c++) {
        clip *k = &g_clips[c];
        k->n = k->count ? k->count : n;
        k->pcm = malloc(sizeof(float) * (size_t)k->n);
        memcpy(k->pcm, pcm, sizeof(float) * (size_t)k->n);
    }
    transcribe_audio_free(pcm);
    for (int f = 0; f < 3; f++) test_file(k_dts[f]);
    test_batch_and_gate();
    test_abort();
    for (int q = 0; q < 2; q++)
        printf("worst %s: mel %.3g pre %.3g block0 %.3g enc %.3g proj %.3g logits0 %.3g\n",
               q ? "Q8_0" : "F32/F16", g_worst[q][0], g_worst[q][1], g_worst[q][2], g_worst[q][3],
               g_worst[q][4], g_worst[q][5]);
    for (int c = 0; c < N_CLIPS; c++) free(g_clips[c].pcm);
    return TEST_DONE();
}
