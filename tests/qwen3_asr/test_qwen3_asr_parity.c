/* Qwen3-ASR against the float64 PyTorch reference goldens of
 * tests/data/qwen3_asr/tiny (tools/ref/qwen3_asr.py; README there): mel,
 * encoder output, prompt ids, prefill logits, greedy tokens and text for
 * the F32 and F16 files, F32 and F16 KV caches, jfk (11 s) and a 30 s clip,
 * with and without forced English; the batched path gives each utterance
 * its single-run text; the exact input gate; the tokenizer cases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/qwen3_asr/qwen3_asr.h"
#include "llm_parity.h"
#include "npy.h"
#include "test_files.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/qwen3_asr/tiny"

/* Tolerances (README of the goldens: float32 vs float64 is ~1e-6). */
#define TOL_MEL    1e-4 /* absolute; features in about [-1.5, 1.5] */
#define TOL_ENC    1e-4 /* relative to max |ref| */
#define TOL_LOGITS 1e-3 /* absolute, F32 KV (the goldens keep K/V unrounded) */
/* F16 KV: rounding K/V to half moves the logits by up to 8e-5 on the
 * 11-30 s clips and 3.3e-3 on jfk_min (one audio row, T_prompt 16) */
#define TOL_LOGITS_KV16 5e-3
/* Q8_0: the reference multiplies the same dequantized weights by float
 * activations; our one-row (M = 1) matrix-vector products, like ggml's
 * Q8_0 dot, quantize the activation row to int8 per 32 values first, which
 * moves logits of |x| <= 16 by up to ~0.05 (the greedy margins are >= 6.8,
 * so the tokens below stay exact) */
/* the encoder's GEMMs take x as two int8 codes per element (tr_mm_qgemm:
 * within amax / 64516 of each group), measured 1.4-1.7e-4 */
#define TOL_ENC_Q8    5e-4
#define TOL_LOGITS_Q8 1e-1

static double g_worst_mel, g_worst_enc, g_worst_logits[2], g_worst_enc_q8, g_worst_logits_q8;

typedef struct clip {
    const char *stem, *wav;
    int offset, count; /* slice of the file (count 0 = all) */
    bool has_en, has_tokens;
    float *pcm;
    int n;
} clip;

#define N_CLIPS 4
static clip g_clips[N_CLIPS] = {
    {"jfk", TR_SOURCE_DIR "/samples/jfk.wav", 0, 0, true, true, NULL, 0},
    {"we30", TR_SOURCE_DIR "/tests/data/qwen3_asr/whole-earth-30s.wav", 0, 0, true, true, NULL, 0},
    /* partial last encoder chunk (T_enc 31) */
    {"jfk_short", TR_SOURCE_DIR "/samples/jfk.wav", 64000, 37900, false, true, NULL, 0},
    /* the 201-sample minimum (T_enc 1): tensors only */
    {"jfk_min", TR_SOURCE_DIR "/samples/jfk.wav", 40000, 201, false, false, NULL, 0},
};

/* Golden suffix of a weight file: "" (F32), ".f16", ".q8_0". */
static const char *dt_sfx(const char *dt) {
    return strcmp(dt, "F16") == 0 ? ".f16" : strcmp(dt, "Q8_0") == 0 ? ".q8_0" : "";
}

static bool load_npy(const char *name, npy_array *a) {
    return llm_load_npy(DATA, name, a);
}

/* "key: value" line of a text golden (malloc'ed, "" when absent). */
static char *golden_field(const char *stem, const char *key) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s.text.txt", DATA, stem);
    char *s = tr_test_read_text(p, NULL);
    char *out = tr_text_field(s, key);
    free(s);
    return out;
}

/* Mel, encoder and prompt ids of one clip (internal API). */
static void check_front(const qa_model *m, const clip *c, const char *dt) {
    char name[128];
    float *mel = NULL, *enc = NULL;
    int T_mel = 0, T_enc = 0;
    CHECK(tr_qa_log_mel(m, NULL, c->pcm, c->n, &mel, &T_mel) == TRANSCRIBE_OK);
    npy_array g;
    snprintf(name, sizeof name, "%s.mel.npy", c->stem);
    if (mel && load_npy(name, &g)) {
        CHECK(g.ndim == 2 && g.shape[0] == 128 && g.shape[1] == T_mel);
        if (g.n == (int64_t)128 * T_mel) {
            double e = llm_max_abs_diff(mel, g.data, g.n, NULL);
            g_worst_mel = fmax(g_worst_mel, e);
            CHECK_MSG(e <= TOL_MEL, "%s %s mel: max abs err %g", dt, c->stem, e);
        }
        npy_free(&g);
    }
    CHECK(tr_qa_encode(m, NULL, mel, T_mel, &enc, &T_enc, NULL) == TRANSCRIBE_OK);
    CHECK(T_enc == tr_qa_enc_frames(m, c->n));
    const bool q8 = strcmp(dt, "Q8_0") == 0;
    snprintf(name, sizeof name, "%s.enc%s.npy", c->stem, dt_sfx(dt));
    if (enc && load_npy(name, &g)) {
        CHECK(g.ndim == 2 && g.shape[0] == T_enc && g.shape[1] == m->lm.d_model);
        if (g.n == (int64_t)T_enc * m->lm.d_model) {
            double mr = 0, e = llm_max_abs_diff(enc, g.data, g.n, &mr);
            double *worst = q8 ? &g_worst_enc_q8 : &g_worst_enc;
            *worst = fmax(*worst, e / mr);
            CHECK_MSG(e / mr <= (q8 ? TOL_ENC_Q8 : TOL_ENC), "%s %s encoder: max rel err %g", dt,
                      c->stem, e / mr);
        }
        npy_free(&g);
    }
    for (int mode = 0; mode < (c->has_en ? 2 : 1); mode++) {
        int32_t *ids =
            malloc(sizeof(int32_t) * (size_t)(T_enc + QA_PROMPT_FIXED + QA_MAX_LANG_IDS));
        int n = 0;
        CHECK(tr_qa_build_prompt(m, T_enc, mode ? "en" : NULL, ids, &n) == TRANSCRIBE_OK);
        snprintf(name, sizeof name, "%s.%s.prompt.npy", c->stem, mode ? "en" : "auto");
        if (load_npy(name, &g)) {
            CHECK_MSG(g.n == n && memcmp(g.data, ids, sizeof(int32_t) * (size_t)n) == 0,
                      "%s %s prompt ids differ (%d vs %lld)", c->stem, mode ? "en" : "auto", n,
                      (long long)g.n);
            npy_free(&g);
        }
        free(ids);
    }
    free(mel);
    free(enc);
}

/* One decode through the internal session: logits0, tokens, text. */
static void check_decode(const qa_model *m, const clip *c, const char *dt, bool kv_f32, bool forced,
                         const char *stem_extra) {
    const char *mode = forced ? "en" : "auto";
    char stem[64], name[128];
    snprintf(stem, sizeof stem, "%s.%s", c->stem, mode);
    tr_session_cfg cfg = {.n_threads = 2,
                          .kv_type = kv_f32 ? TRANSCRIBE_KV_TYPE_F32 : TRANSCRIBE_KV_TYPE_F16};
    qa_session *s = NULL;
    CHECK(tr_qa_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) return;
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = forced ? "en" : NULL;
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    transcribe_status st = tr_qa_run(s, c->pcm, c->n, &ctx);
    CHECK_MSG(st == TRANSCRIBE_OK || !c->has_tokens, "%s %s kv%s: %s", dt, stem,
              kv_f32 ? "F32" : "F16", transcribe_status_string(st));
    npy_array g;
    const bool q8 = strcmp(dt, "Q8_0") == 0;
    snprintf(name, sizeof name, "%s%s%s.logits0.npy", stem, stem_extra, q8 ? ".q8_0" : "");
    if (load_npy(name, &g)) {
        if (g.n == m->lm.n_vocab) {
            double e = llm_max_abs_diff(s->dec.last_logits, g.data, g.n, NULL);
            double *worst = q8 && kv_f32 ? &g_worst_logits_q8 : &g_worst_logits[kv_f32];
            *worst = fmax(*worst, e);
            double tol = q8 ? TOL_LOGITS_Q8 : kv_f32 ? TOL_LOGITS : TOL_LOGITS_KV16;
            CHECK_MSG(e <= tol, "%s %s kv%s logits0: max abs err %g", dt, stem,
                      kv_f32 ? "F32" : "F16", e);
        }
        npy_free(&g);
    }
    if (!c->has_tokens) {
        tr_result_free(&r);
        tr_qa_session_free(s);
        return;
    }
    snprintf(name, sizeof name, "%s%s%s.tokens.npy", stem, stem_extra,
             stem_extra[0] ? "" : dt_sfx(dt));
    if (load_npy(name, &g)) {
        const int32_t *ref = g.data;
        /* golden ids end with EOS; ours exclude it */
        bool same = g.n == s->n_last + 1 && ref[g.n - 1] == m->sp.eos &&
                    memcmp(ref, s->last_ids, sizeof(int32_t) * (size_t)s->n_last) == 0;
        CHECK_MSG(same, "%s %s%s kv%s: tokens differ (%d vs %lld)", dt, stem, stem_extra,
                  kv_f32 ? "F32" : "F16", s->n_last, (long long)g.n - 1);
        npy_free(&g);
    }
    if (!stem_extra[0]) {
        char *raw = golden_field(stem, "raw"), *text = golden_field(stem, "text");
        char *lang = golden_field(stem, "language");
        CHECK_MSG(strcmp(tr_result_raw_text(&r), raw) == 0, "%s raw '%s'", stem,
                  tr_result_raw_text(&r));
        CHECK(strcmp(tr_result_full_text(&r), text) == 0);
        const char *dl = tr_result_language(&r);
        CHECK_MSG(strcmp(dl ? dl : "", lang) == 0, "%s language '%s' vs '%s'", stem, dl ? dl : "",
                  lang);
        CHECK(r.n_segs == 1 && r.segs[0].t0_ms == 0 &&
              r.segs[0].t1_ms == (int64_t)c->n * 1000 / 16000);
        free(raw);
        free(text);
        free(lang);
    }
    tr_result_free(&r);
    tr_qa_session_free(s);
}

static qa_model *load_internal(const char *path, gguf_file **g) {
    *g = NULL;
    if (tr_gguf_open(path, g) != TRANSCRIBE_OK) return NULL;
    tr_load_ctx lc = {.path = path, .gguf = *g};
    qa_model *m = NULL;
    if (tr_qa_model_load(&lc, &m) != TRANSCRIBE_OK) return NULL;
    return m;
}

static void test_file(const char *dt) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3-asr-tiny-ref-%s.gguf", DATA, dt);
    gguf_file *g = NULL;
    qa_model *m = load_internal(path, &g);
    CHECK_MSG(m != NULL, "cannot load %s", path);
    if (m) {
        for (int c = 0; c < N_CLIPS; c++) {
            if (strcmp(dt, "Q8_0") == 0 && !g_clips[c].has_tokens) continue; /* no goldens */
            check_front(m, &g_clips[c], dt);
            for (int kv = 0; kv < 2; kv++)
                for (int f = 0; f < (g_clips[c].has_en ? 2 : 1); f++)
                    check_decode(m, &g_clips[c], dt, kv == 1, f == 1, "");
        }
    }
    tr_qa_model_free(m);
    tr_gguf_close(g);
}

/* The batched path (public API): each utterance gets its single-run text. */
static void test_batch_and_gate(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3-asr-tiny-ref-F16.gguf", DATA);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
    if (!s) return;
    const float *pcm[3] = {g_clips[0].pcm, g_clips[1].pcm, g_clips[0].pcm};
    const int n[3] = {g_clips[0].n, g_clips[1].n, g_clips[0].n};
    const char *stems[3] = {"jfk", "we30", "jfk"};
    for (int mode = 0; mode < 2; mode++) {
        struct transcribe_run_params rp;
        transcribe_run_params_init(&rp);
        rp.language = mode ? "en" : NULL;
        CHECK(transcribe_run_batch(s, pcm, n, 3, &rp) == TRANSCRIBE_OK);
        CHECK(transcribe_batch_n_results(s) == 3);
        for (int i = 0; i < 3; i++) {
            char stem[64];
            snprintf(stem, sizeof stem, "%s.%s", stems[i], mode ? "en" : "auto");
            char *raw = golden_field(stem, "raw"), *lang = golden_field(stem, "language");
            CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK);
            const char *bt = transcribe_batch_raw_text(s, i);
            CHECK_MSG(bt && strcmp(bt, raw) == 0, "batch row %d (%s): '%s'", i, stem,
                      bt ? bt : "(null)");
            const char *dl = transcribe_batch_detected_language(s, i);
            CHECK(strcmp(dl ? dl : "", lang) == 0);
            free(raw);
            free(lang);
        }
    }
    transcribe_session_free(s);

    /* docs/formats/qwen3_asr.md §9.3 gate: jfk auto has T_prompt 158 → n_ctx 414 passes, 413 does
     * not; we30 auto 405 → 661 / 660 */
    const int ok_ctx[2] = {414, 661};
    for (int c = 0; c < 2; c++) /* the family's own gate: chunking off */
        llm_expect_ctx_gate(path, &sp, ok_ctx[c], g_clips[c].pcm, g_clips[c].n, g_clips[c].stem);
}

/* Abort mid-decode: ABORTED, and the kept raw text is a non-empty proper
 * prefix of the reference decode. */
static void test_abort(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3-asr-tiny-ref-F32.gguf", DATA);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    char *raw = golden_field("jfk.auto", "raw");
    /* polls: before the encoder, after it, then before each step */
    llm_expect_abort(s, g_clips[0].pcm, g_clips[0].n, 12, raw, true);
    free(raw);
    transcribe_session_free(s);
}

/* The untied-head file: the shared decoder's untied path against its
 * goldens (the loader accepts an untied file that has dec.output.weight). */
static void test_untied(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3-asr-tiny-untied-F16.gguf", DATA);
    gguf_file *g = NULL;
    qa_model *m = load_internal(path, &g);
    CHECK(m != NULL);
    if (m) {
        CHECK(m->lm_w.head != m->lm_w.tok_emb);
        check_decode(m, &g_clips[0], "F16", true, false, ".untied");
    }
    tr_qa_model_free(m);
    tr_gguf_close(g);
}

static void test_tokenizer(void) {
    struct transcribe_model *model = NULL;
    CHECK(transcribe_model_load_file(DATA "/qwen3-asr-tiny-ref-F32.gguf", NULL, &model) ==
          TRANSCRIBE_OK);
    if (model)
        CHECK(llm_tokenizer_cases(DATA "/tokenizer_cases.txt", llm_encode_public, model,
                                  "qwen3_asr") >= 10);
    transcribe_model_free(model);
}

int main(void) {
    for (int c = 0; c < N_CLIPS; c++) {
        clip *k = &g_clips[c];
        if (transcribe_audio_load_file(k->wav, 16000, &k->pcm, &k->n) != TRANSCRIBE_OK ||
            k->offset + k->count > k->n) {
            fprintf(stderr, "cannot read %s\n", k->wav);
            return 1;
        }
        if (k->count) {
            memmove(k->pcm, k->pcm + k->offset, sizeof(float) * (size_t)k->count);
            k->n = k->count;
        }
    }
    test_file("F32");
    test_file("F16");
    test_file("Q8_0");
    test_batch_and_gate();
    test_untied();
    test_abort();
    test_tokenizer();
    printf("worst: mel %.3g abs, encoder %.3g rel, logits0 %.3g abs (F16 KV) / %.3g (F32 KV); "
           "Q8_0 encoder %.3g rel, logits0 %.3g abs (F32 KV)\n",
           g_worst_mel, g_worst_enc, g_worst_logits[0], g_worst_logits[1], g_worst_enc_q8,
           g_worst_logits_q8);
    for (int c = 0; c < N_CLIPS; c++) transcribe_audio_free(g_clips[c].pcm);
    return TEST_DONE();
}
