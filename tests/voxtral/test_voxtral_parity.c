/* Voxtral against the float64 PyTorch reference goldens of tests/data/voxtral
 * (tools/ref/voxtral.py): the chunk-padded mel, encoder block 0, encoder output and
 * projector rows of chunk 0, the projector rows of a two-chunk clip, prompt ids
 * (automatic, language hints, translation), prefill logits (F32 and F16 KV caches),
 * greedy tokens, text and segment for the F32, F16 and Q8_0 files; speculative
 * decoding gives greedy's tokens; the batched path gives each utterance its
 * single-run text; the exact input gate; abort mid-decode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "llm_parity.h"
#include "models/voxtral/voxtral.h"
#include "npy.h"
#include "tensor/ops.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/voxtral"

/* Tolerances, max abs (margins.txt: float32 vs float64 is ~1.4e-6 on the encoder,
 * ~3e-7 on the projector, ~3e-6 on the logits with either K/V type). */
#define TOL_MEL    1e-3
#define TOL_ENC    2e-3 /* block 0, encoder output */
#define TOL_PROJ   1e-3
#define TOL_LOGITS 2e-3
/* Q8_0 against the goldens of its own dequantized weights: our products quantize
 * the activation row to int8 per 32 values as ggml's Q8_0 dot does (greedy margins
 * >= 11: tokens stay exact) */
#define TOL_Q8 1e-1

static double g_worst[2][5]; /* [q8][mel, block0, enc, proj, logits0] */

typedef struct clip {
    const char *stem;
    float *pcm;
    int n;
} clip;

#define N_CLIPS 2
static clip g_clips[N_CLIPS] = {{"clip", NULL, 0}, {"clip2", NULL, 0}};

typedef struct run {
    const char *name;
    const char *language;
    const char *target; /* TRANSLATE when set */
    bool clip2;         /* also a golden for clip2 */
} run;

static const run k_runs[] = {
    {"auto", NULL, NULL, true},
    {"en", "en", NULL, true},
    {"fr", "fr", NULL, false},
    {"tr_de", NULL, "de", false},
};
#define N_RUNS ((int)(sizeof k_runs / sizeof k_runs[0]))

static const char *const k_dts[3] = {"F32", "F16", "Q8_0"};

static bool is_q8(const char *dt) {
    return strcmp(dt, "Q8_0") == 0;
}

/* <stem>[.q8_0][.<run>].<what> */
static void golden_name(char *buf, size_t n, const clip *c, const char *dt, const char *run,
                        const char *what) {
    snprintf(buf, n, "%s%s%s%s.%s", c->stem, is_q8(dt) ? ".q8_0" : "", run ? "." : "",
             run ? run : "", what);
}

/* "key: value" line of a text golden (malloc'ed, "" when absent). */
static char *golden_field(const clip *c, const char *dt, const char *run, const char *key) {
    char name[128];
    golden_name(name, sizeof name, c, dt, run, "text.txt");
    char *s = llm_read_golden(DATA, name);
    char *out = tr_text_field(s, key);
    free(s);
    return out;
}

/* Compares rows x cols values with a golden (rows of stride `stride` in got); k
 * indexes g_worst. */
static void compare(const float *got, int64_t rows, int64_t cols, const char *name, bool q8, int k,
                    double tol) {
    npy_array g;
    if (!llm_load_npy(DATA, name, &g)) return;
    CHECK_MSG(g.ndim == 2 && g.shape[0] == rows && g.shape[1] == cols,
              "%s: shape [%lld, %lld] vs [%lld, %lld]", name, (long long)g.shape[0],
              (long long)(g.ndim > 1 ? g.shape[1] : 0), (long long)rows, (long long)cols);
    if (g.n == rows * cols) {
        double e = llm_max_abs_diff(got, g.data, g.n, NULL);
        double *w = &g_worst[q8][k];
        *w = fmax(*w, e);
        CHECK_MSG(e <= (q8 ? TOL_Q8 : tol), "%s: max abs err %g", name, e);
    }
    npy_free(&g);
}

static void set_params(struct transcribe_run_params *p, const run *r) {
    transcribe_run_params_init(p);
    p->language = r->language;
    if (r->target) {
        p->task = TRANSCRIBE_TASK_TRANSLATE;
        p->target_language = r->target;
    }
}

/* docs/formats/voxtral.md §5 encoder up to block 0's output (no ln_post), chunk 0. */
static void block0(const vx_model *m, const float *mel, int n_frames, float *out) {
    const tr_whenc *e = &m->enc;
    const int F = m->chunk_mel, D = e->d_model, S = F / 2;
    float *chunk = malloc(sizeof(float) * (size_t)e->n_mels * F);
    for (int b = 0; b < e->n_mels; b++)
        memcpy(chunk + (size_t)b * F, mel + (size_t)b * n_frames, sizeof(float) * (size_t)F);
    tr_whenc_work w = {0};
    CHECK(tr_whenc_work_init(&w, e, F));
    tr_conv1d(NULL, chunk, e->n_mels, F, e->conv0_w, e->conv0_b, 1, 1, 1, 1, 1, w.conv_a);
    tr_ew_gelu(NULL, w.conv_a, (long)D * F);
    tr_conv1d(NULL, w.conv_a, D, F, e->conv1_w, e->conv1_b, 2, 1, 1, 1, 1, w.conv_b);
    tr_ew_gelu(NULL, w.conv_b, (long)D * S);
    tr_transpose(w.conv_b, out, D, S);
    tr_add_scaled(out, out, e->pos, 1.0f, (long)S * D);
    tr_nn_enc_block_fwd(NULL, &e->blocks[0], &e->dims, out, S, w.scratch);
    tr_whenc_work_free(&w);
    free(chunk);
}

/* Mel, block 0, encoder output, projector rows and prompt ids (internal API). */
static void check_front(vx_session *s, const clip *c, const char *dt) {
    const vx_model *m = s->m;
    const bool q8 = is_q8(dt);
    float *mel = NULL;
    int n_frames = 0;
    CHECK(tr_vx_log_mel(m, NULL, c->pcm, c->n, &mel, &n_frames) == TRANSCRIBE_OK);
    if (!mel) return;
    const int64_t n_chunks = tr_vx_n_chunks(m, c->n);
    CHECK(n_frames == n_chunks * 3000);
    char name[128];
    npy_array g;
    const bool first = strcmp(c->stem, "clip") == 0;
    if (first && !q8 && llm_load_npy(DATA, "clip.mel.npy", &g)) {
        /* golden: the first 256 of 3000 frames; every later frame is the floor */
        CHECK(g.ndim == 2 && g.shape[0] == 128 && g.shape[1] == 256);
        const float *ref = g.data, floor_v = ref[(size_t)255]; /* a silent frame */
        double e = 0;
        for (int b = 0; b < 128 && g.n == 128 * 256; b++)
            for (int t = 0; t < n_frames; t++) {
                const float want = t < 256 ? ref[(size_t)b * 256 + t] : floor_v;
                /* (a comparison, not fmax: Debian's aarch64 GCC 12 vectorizer
                 * fails with an internal error on this reduction) */
                const double d = fabs((double)mel[(size_t)b * n_frames + t] - want);
                if (d > e) e = d;
            }
        g_worst[0][0] = fmax(g_worst[0][0], e);
        CHECK_MSG(e <= TOL_MEL, "%s mel: max abs err %g", c->stem, e);
        CHECK_MSG(fabsf(floor_v - -0.506308f) < 1e-5f, "floor %g", floor_v);
        npy_free(&g);
    }
    const int D = m->enc.d_model, P = m->enc.n_pos, H = m->lm.d_model;
    if (first) {
        float *b0 = malloc(sizeof(float) * (size_t)P * D);
        block0(m, mel, n_frames, b0);
        if (!q8) compare(b0, P, D, "clip.block0.npy", false, 1, TOL_ENC);
        free(b0);
    }
    float *audio = NULL, *enc = NULL;
    int n_audio = 0;
    CHECK(tr_vx_encode(s, mel, n_frames, &audio, &n_audio, &enc, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(n_audio == n_chunks * 375);
    if (audio && enc) {
        if (first) {
            golden_name(name, sizeof name, c, dt, NULL, "enc.npy");
            compare(enc, P, D, name, q8, 2, TOL_ENC);
        }
        if (first || !q8) {
            golden_name(name, sizeof name, c, dt, NULL, "proj.npy");
            compare(audio, n_audio, H, name, q8, 3, TOL_PROJ);
        }
    }
    for (int r = 0; r < N_RUNS; r++) {
        if (!first && !k_runs[r].clip2) continue;
        struct transcribe_run_params p;
        set_params(&p, &k_runs[r]);
        int32_t *ids = NULL;
        int n = 0;
        CHECK(tr_vx_build_prompt(m, &p, n_audio, &ids, &n) == TRANSCRIBE_OK);
        golden_name(name, sizeof name, c, "F32", k_runs[r].name, "prompt.npy");
        if (ids && llm_load_npy(DATA, name, &g)) {
            CHECK_MSG(g.n == n && memcmp(g.data, ids, sizeof(int32_t) * (size_t)n) == 0,
                      "%s prompt ids differ (%d vs %lld)", name, n, (long long)g.n);
            npy_free(&g);
        }
        free(ids);
    }
    free(audio);
    free(enc);
    free(mel);
}

/* One run through the internal session: logits0, tokens, text, segment; then
 * spec_k 1, 4 and 8 give the same tokens. */
static void check_decode(const vx_model *m, const clip *c, const char *dt, const run *rn,
                         bool kv_f32) {
    tr_session_cfg cfg = {.n_threads = 2,
                          .kv_type = kv_f32 ? TRANSCRIBE_KV_TYPE_F32 : TRANSCRIBE_KV_TYPE_F16};
    vx_session *s = NULL;
    CHECK(tr_vx_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) return;
    s->repeat_guard = false; /* the reference has none */
    const char *kv = kv_f32 ? "F32" : "F16";
    const bool q8 = is_q8(dt);
    struct transcribe_run_params rp;
    set_params(&rp, rn);
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    transcribe_status st = tr_vx_run(s, c->pcm, c->n, &ctx);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s %s.%s kv%s: %s", dt, c->stem, rn->name, kv,
              transcribe_status_string(st));
    char name[128];
    npy_array g;
    golden_name(name, sizeof name, c, dt, rn->name, "logits0.npy");
    if (llm_load_npy(DATA, name, &g)) {
        if (g.n == m->lm.n_vocab) {
            double e = llm_max_abs_diff(s->dec.last_logits, g.data, g.n, NULL);
            g_worst[q8][4] = fmax(g_worst[q8][4], e);
            CHECK_MSG(e <= (q8 ? TOL_Q8 : TOL_LOGITS), "%s kv%s %s: max abs err %g", dt, kv, name,
                      e);
        }
        npy_free(&g);
    }
    golden_name(name, sizeof name, c, dt, rn->name, "tokens.npy");
    const int n_ref = s->n_last;
    int32_t *ref_ids = malloc(sizeof(int32_t) * (size_t)(n_ref + 1));
    memcpy(ref_ids, s->last_ids, sizeof(int32_t) * (size_t)n_ref);
    if (llm_load_npy(DATA, name, &g)) {
        const int32_t *ref = g.data;
        /* golden ids end with EOS; ours exclude it */
        bool same = g.n == s->n_last + 1 && ref[g.n - 1] == m->sp.eos &&
                    memcmp(ref, s->last_ids, sizeof(int32_t) * (size_t)s->n_last) == 0;
        CHECK_MSG(same, "%s kv%s %s: tokens differ (%d vs %lld)", dt, kv, name, s->n_last,
                  (long long)g.n - 1);
        npy_free(&g);
    }
    char *text = golden_field(c, dt, rn->name, "text");
    char *seg = golden_field(c, dt, rn->name, "segment_ms");
    char *status = golden_field(c, dt, rn->name, "status");
    char got_seg[64] = "";
    if (r.n_segs == 1)
        snprintf(got_seg, sizeof got_seg, "%lld %lld", (long long)r.segs[0].t0_ms,
                 (long long)r.segs[0].t1_ms);
    CHECK(strcmp(status, "OK") == 0);
    CHECK_MSG(strcmp(tr_result_full_text(&r), text) == 0, "%s %s.%s text '%s'", dt, c->stem,
              rn->name, tr_result_full_text(&r));
    CHECK(strcmp(tr_result_raw_text(&r), text) == 0);
    CHECK_MSG(strcmp(got_seg, seg) == 0, "%s %s segment '%s' vs '%s'", dt, c->stem, got_seg, seg);
    free(text);
    free(seg);
    free(status);
    tr_result_free(&r);
    /* speculative decoding: the drafts verified give greedy's tokens */
    const int ks[3] = {1, 4, 8};
    for (int i = 0; i < 3 && !kv_f32; i++) {
        rp.spec_k_drafts = ks[i];
        tr_result_init(&r);
        tr_run_ctx sctx = {.params = &rp, .result = &r};
        st = tr_vx_run(s, c->pcm, c->n, &sctx);
        CHECK_MSG(st == TRANSCRIBE_OK && s->n_last == n_ref &&
                      memcmp(ref_ids, s->last_ids, sizeof(int32_t) * (size_t)n_ref) == 0,
                  "%s %s kv%s spec_k %d: %d vs %d tokens", dt, c->stem, kv, ks[i], s->n_last,
                  n_ref);
        tr_result_free(&r);
    }
    free(ref_ids);
    tr_vx_session_free(s);
}

static void test_file(const char *dt) {
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-tiny-ref-%s.gguf", DATA, dt);
    gguf_file *g = NULL;
    vx_model *m = NULL;
    if (tr_gguf_open(path, &g) == TRANSCRIBE_OK) {
        tr_load_ctx lc = {.path = path, .gguf = g};
        CHECK(tr_vx_model_load(&lc, &m) == TRANSCRIBE_OK);
    }
    CHECK_MSG(m != NULL, "cannot load %s", path);
    if (m) {
        CHECK(m->lm_w.head != m->lm_w.tok_emb);                /* untied */
        CHECK(m->lm.n_head * m->lm.head_dim != m->lm.d_model); /* Q width ≠ hidden */
        CHECK(m->mel.filterbank && m->mel.baked_window);       /* baked buffers in use */
        tr_session_cfg cfg = {.n_threads = 2};
        vx_session *s = NULL;
        CHECK(tr_vx_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
        for (int c = 0; c < N_CLIPS && s; c++) check_front(s, &g_clips[c], dt);
        tr_vx_session_free(s);
        for (int c = 0; c < N_CLIPS; c++)
            for (int r = 0; r < N_RUNS; r++) {
                if (c == 1 && !k_runs[r].clip2) continue;
                check_decode(m, &g_clips[c], dt, &k_runs[r], false);
                if (r == 0) check_decode(m, &g_clips[c], dt, &k_runs[r], true);
            }
    }
    tr_vx_model_free(m);
    tr_gguf_close(g);
}

/* The batched path (public API): each row gets its single-run text; the exact gate
 * (clip: T_prompt 380 → n_ctx 828 passes, 827 does not). */
static void test_batch_and_gate(void) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_run_params whole; /* the family's own gate: chunking off */
    transcribe_run_params_init(&whole);
    whole.chunking = TRANSCRIBE_CHUNKING_OFF;
    for (int f = 0; f < 3; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/voxtral-tiny-ref-%s.gguf", DATA, k_dts[f]);
        struct transcribe_session *s = NULL;
        CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
        if (!s) continue;
        const float *pcm[3] = {g_clips[0].pcm, g_clips[1].pcm, g_clips[0].pcm};
        const int n[3] = {g_clips[0].n, g_clips[1].n, g_clips[0].n};
        const int which[3] = {0, 1, 0};
        CHECK(transcribe_run_batch(s, pcm, n, 3, &whole) == TRANSCRIBE_OK);
        CHECK(transcribe_batch_n_results(s) == 3);
        for (int i = 0; i < 3; i++) {
            char *text = golden_field(&g_clips[which[i]], k_dts[f], "auto", "text");
            CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK);
            const char *bt = transcribe_batch_full_text(s, i);
            CHECK_MSG(bt && strcmp(bt, text) == 0, "%s batch row %d: '%s'", k_dts[f], i,
                      bt ? bt : "(null)");
            free(text);
        }
        transcribe_session_free(s);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-tiny-ref-F16.gguf", DATA);
    llm_expect_ctx_gate(path, &sp, 828, g_clips[0].pcm, g_clips[0].n, "clip");
}

/* Abort mid-decode: ABORTED, and the kept text is a non-empty proper prefix of the
 * reference text. */
static void test_abort(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-tiny-ref-F32.gguf", DATA);
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    char *text = golden_field(&g_clips[0], "F32", "auto", "text");
    /* polls: before the run, before the one encoder chunk, after the encoder, then
     * before each decode step */
    llm_expect_abort(s, g_clips[0].pcm, g_clips[0].n, 12, text, false);
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
    CHECK(n == 40000);
    g_clips[0].n = n;
    g_clips[0].pcm = malloc(sizeof(float) * (size_t)n);
    memcpy(g_clips[0].pcm, pcm, sizeof(float) * (size_t)n);
    /* clip2: 512000 samples, the clip at the start and again across the 30 s boundary
     * (tests/data/voxtral README) */
    g_clips[1].n = 512000;
    g_clips[1].pcm = calloc(512000, sizeof(float));
    memcpy(g_clips[1].pcm, pcm, sizeof(float) * (size_t)n);
    memcpy(g_clips[1].pcm + 472000, pcm, sizeof(float) * (size_t)n);
    transcribe_audio_free(pcm);
    for (int f = 0; f < 3; f++) test_file(k_dts[f]);
    test_batch_and_gate();
    test_abort();
    for (int q = 0; q < 2; q++)
        printf("worst %s: mel %.3g block0 %.3g enc %.3g proj %.3g logits0 %.3g\n",
               q ? "Q8_0" : "F32/F16", g_worst[q][0], g_worst[q][1], g_worst[q][2], g_worst[q][3],
               g_worst[q][4]);
    for (int c = 0; c < N_CLIPS; c++) free(g_clips[c].pcm);
    return TEST_DONE();
}
