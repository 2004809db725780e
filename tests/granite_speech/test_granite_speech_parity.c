/* Granite Speech against the float64 PyTorch reference goldens of
 * tests/data/granite (tools/ref/granite.py; README there): stacked mel,
 * encoder (with cat_hidden_layers on tiny-plus), projector, prompt ids,
 * prefill logits, greedy tokens, raw/full text, segments, word rows and
 * speaker turns, for the F32 (proj.query 3-D) and F16 (2-D) files, F32 and
 * F16 KV caches, jfk and an odd-frame-count clip; the variant files that
 * must load (query3d, catempty, notie) and those that must not (nocat,
 * nohead); the run-time refusals; the exact input gate; the tokenizer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/granite_speech/granite.h"
#include "llm_parity.h"
#include "npy.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/granite"

/* Tolerances (README of the goldens: float32 vs float64 ≤ 1e-6 relative on
 * the tensors, 4.2e-6 on the logits, 5.5e-4 with an F16 K/V cache). */
#define TOL_MEL         1e-4 /* absolute */
#define TOL_ENC         1e-4 /* relative to max |ref| (encoder and projector) */
#define TOL_LOGITS      2e-3 /* absolute, F32 KV */
#define TOL_LOGITS_KV16 5e-3 /* absolute, F16 KV */

static double g_worst_mel, g_worst_enc, g_worst_proj, g_worst_logits[2];

typedef struct clip {
    const char *stem, *wav;
    float *pcm;
    int n;
} clip;

static clip g_clips[2] = {
    {"jfk", TR_SOURCE_DIR "/samples/jfk.wav", NULL, 0},
    {"odd", DATA "/we_odd.wav", NULL, 0},
};

/* Goldens live in DATA/<cfg>/. */
static bool load_npy(const char *cfg, const char *name, npy_array *a) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", DATA, cfg);
    return llm_load_npy(dir, name, a);
}

static char *read_golden(const char *cfg, const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", DATA, cfg);
    return llm_read_golden(dir, name);
}

static void cmp_tensor(const char *cfg, const char *name, const float *x, int rows, int cols,
                       double tol, bool rel, double *worst, const char *dt) {
    npy_array g;
    if (!x || !load_npy(cfg, name, &g)) return;
    CHECK_MSG(g.ndim == 2 && g.shape[0] == rows && g.shape[1] == cols,
              "%s %s %s: shape [%lld, %lld] vs ours [%d, %d]", dt, cfg, name, (long long)g.shape[0],
              (long long)(g.ndim > 1 ? g.shape[1] : 0), rows, cols);
    if (g.n == (int64_t)rows * cols) {
        double mr = 0, e = llm_max_abs_diff(x, g.data, g.n, &mr);
        if (rel) e /= mr;
        *worst = fmax(*worst, e);
        CHECK_MSG(e <= tol, "%s %s %s: max %s err %g", dt, cfg, name, rel ? "rel" : "abs", e);
    }
    npy_free(&g);
}

/* Stacked mel, encoder and projector of one clip (internal API). */
static void check_front(const gs_model *m, const char *cfg, const clip *c, const char *dt) {
    char name[128];
    float *x = NULL, *enc = NULL, *audio = NULL;
    int T = 0, n_audio = 0;
    CHECK(tr_gs_stacked_mel(m, NULL, c->pcm, c->n, &x, &T) == TRANSCRIBE_OK);
    CHECK(T == tr_gs_enc_frames(m, c->n));
    snprintf(name, sizeof name, "%s.mel.npy", c->stem);
    cmp_tensor(cfg, name, x, T, m->enc.in_dim, TOL_MEL, false, &g_worst_mel, dt);
    if (x) CHECK(tr_gs_encode(m, NULL, x, T, &enc, NULL) == TRANSCRIBE_OK);
    snprintf(name, sizeof name, "%s.enc.npy", c->stem);
    cmp_tensor(cfg, name, enc, T, m->proj.enc_d, TOL_ENC, true, &g_worst_enc, dt);
    if (enc) CHECK(tr_gs_project(m, NULL, enc, T, &audio, &n_audio) == TRANSCRIBE_OK);
    CHECK(n_audio == tr_gs_audio_tokens(m, T));
    snprintf(name, sizeof name, "%s.proj.npy", c->stem);
    cmp_tensor(cfg, name, audio, n_audio, m->lm.d_model, TOL_ENC, true, &g_worst_proj, dt);
    free(x);
    free(enc);
    free(audio);
}

static void task_params(const char *task, struct transcribe_run_params *rp) {
    transcribe_run_params_init(rp);
    if (strcmp(task, "de") == 0) {
        rp->task = TRANSCRIBE_TASK_TRANSLATE;
        rp->target_language = "de";
    } else if (strcmp(task, "word") == 0) {
        rp->timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    } else if (strcmp(task, "spk") == 0) {
        rp->diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    }
}

/* Word rows "t0 t1 text" per line against the result's words. */
static void check_words(const char *cfg, const char *stem, const tr_result *r) {
    char name[128];
    snprintf(name, sizeof name, "%s.words.txt", stem);
    char *s = read_golden(cfg, name);
    int i = 0;
    for (char *line = s; line && *line; i++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        long long t0, t1;
        int off = 0;
        if (sscanf(line, "%lld %lld %n", &t0, &t1, &off) < 2) break;
        bool ok = i < r->n_words && r->words[i].t0_ms == t0 && r->words[i].t1_ms == t1 &&
                  strcmp(tr_result_str(r, r->words[i].text_off), line + off) == 0;
        CHECK_MSG(ok, "%s %s word %d: want %lld %lld '%s'", cfg, stem, i, t0, t1, line + off);
        line = nl ? nl + 1 : NULL;
    }
    CHECK_MSG(i == r->n_words && i > 0, "%s %s: %d word rows, golden %d", cfg, stem, r->n_words, i);
    CHECK(r->ts_kind == TRANSCRIBE_TIMESTAMPS_WORD);
    CHECK(r->n_segs == 1 && r->n_words > 0 && r->segs[0].t0_ms == r->words[0].t0_ms &&
          r->segs[0].t1_ms == r->words[r->n_words - 1].t1_ms);
    free(s);
}

/* Speaker turns "id text" per line against the result's segments. */
static void check_speakers(const char *cfg, const char *stem, const tr_result *r) {
    char name[128];
    snprintf(name, sizeof name, "%s.speakers.txt", stem);
    char *s = read_golden(cfg, name);
    int i = 0;
    for (char *line = s; line && *line; i++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int id = 0, off = 0;
        if (sscanf(line, "%d %n", &id, &off) < 1) break;
        bool ok = i < r->n_segs && r->segs[i].speaker_id == id && r->segs[i].t0_ms == 0 &&
                  r->segs[i].t1_ms == 0 &&
                  strcmp(tr_result_str(r, r->segs[i].text_off), line + off) == 0 && i < r->n_spk &&
                  r->spk[i].speaker_id == id && r->spk[i].t0_ms == 0 && r->spk[i].t1_ms == 0 &&
                  isnan(r->spk[i].p);
        CHECK_MSG(ok, "%s %s speaker row %d: want %d '%s'", cfg, stem, i, id, line + off);
        line = nl ? nl + 1 : NULL;
    }
    CHECK_MSG(i == r->n_segs && i == r->n_spk && i > 0,
              "%s %s: %d turns, %d speaker rows, golden %d", cfg, stem, r->n_segs, r->n_spk, i);
    CHECK(r->ts_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    free(s);
}

/* "text: ..." line of <stem>.text.txt. */
static char *golden_text(const char *cfg, const char *stem) {
    char name[128];
    snprintf(name, sizeof name, "%s.text.txt", stem);
    char *s = read_golden(cfg, name);
    if (!s) return strdup("");
    char *p = strstr(s, "\ntext: ");
    char *out = strdup("");
    if (p) {
        p += 7;
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        free(out);
        out = strdup(p);
    }
    free(s);
    return out;
}

static void check_decode(const gs_model *m, const char *cfg, const clip *c, const char *task,
                         const char *dt, bool kv_f32) {
    char stem[64], name[128];
    snprintf(stem, sizeof stem, "%s.%s", c->stem, task);
    tr_session_cfg scfg = {.n_threads = 2,
                           .kv_type = kv_f32 ? TRANSCRIBE_KV_TYPE_F32 : TRANSCRIBE_KV_TYPE_F16};
    gs_session *s = NULL;
    CHECK(tr_gs_session_create(m, &scfg, &s) == TRANSCRIBE_OK);
    if (!s) return;
    struct transcribe_run_params rp;
    task_params(task, &rp);
    CHECK(tr_gs_validate_run(m, &rp) == TRANSCRIBE_OK);
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    transcribe_status st = tr_gs_run(s, c->pcm, c->n, &ctx);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s %s %s kv%s: %s", dt, cfg, stem, kv_f32 ? "F32" : "F16",
              transcribe_status_string(st));
    npy_array g;
    /* prompt ids: the golden marks audio positions with <|audio|> */
    snprintf(name, sizeof name, "%s.prompt.npy", stem);
    gs_prompt pr;
    CHECK(tr_gs_build_prompt(m, &rp, &pr) == TRANSCRIBE_OK);
    if (load_npy(cfg, name, &g)) {
        const int32_t *ref = g.data;
        const int n_audio = (int)g.n - pr.n_pre - pr.n_post;
        bool same = n_audio == tr_gs_audio_tokens(m, tr_gs_enc_frames(m, c->n)) &&
                    g.n == s->dec.last_T_prompt;
        for (int i = 0; same && i < (int)g.n; i++) {
            int want = i < pr.n_pre             ? pr.pre[i]
                       : i < pr.n_pre + n_audio ? m->sp.audio
                                                : pr.post[i - pr.n_pre - n_audio];
            same = ref[i] == want;
        }
        CHECK_MSG(same, "%s %s prompt ids differ", cfg, stem);
        npy_free(&g);
    }
    snprintf(name, sizeof name, "%s.logits0.npy", stem);
    if (load_npy(cfg, name, &g)) {
        if (g.n == m->lm.n_vocab) {
            double e = llm_max_abs_diff(s->dec.last_logits, g.data, g.n, NULL);
            g_worst_logits[kv_f32] = fmax(g_worst_logits[kv_f32], e);
            CHECK_MSG(e <= (kv_f32 ? TOL_LOGITS : TOL_LOGITS_KV16), "%s %s %s kv%s logits0: %g", dt,
                      cfg, stem, kv_f32 ? "F32" : "F16", e);
        }
        npy_free(&g);
    }
    snprintf(name, sizeof name, "%s%s.tokens.npy", stem, strcmp(dt, "F16") == 0 ? ".f16" : "");
    if (load_npy(cfg, name, &g)) {
        const int32_t *ref = g.data;
        bool same = g.n == s->n_last + 1 && ref[g.n - 1] == m->sp.eos &&
                    memcmp(ref, s->last_ids, sizeof(int32_t) * (size_t)s->n_last) == 0;
        CHECK_MSG(same, "%s %s %s kv%s: tokens differ (%d vs %lld)", dt, cfg, stem,
                  kv_f32 ? "F32" : "F16", s->n_last, (long long)g.n - 1);
        npy_free(&g);
    }
    snprintf(name, sizeof name, "%s.raw.txt", stem);
    char *raw = read_golden(cfg, name), *text = golden_text(cfg, stem);
    if (raw)
        CHECK_MSG(strcmp(tr_result_raw_text(&r), raw) == 0, "%s %s raw '%s'", cfg, stem,
                  tr_result_raw_text(&r));
    CHECK_MSG(strcmp(tr_result_full_text(&r), text) == 0, "%s %s text '%s'", cfg, stem,
              tr_result_full_text(&r));
    if (strcmp(task, "word") == 0) {
        check_words(cfg, stem, &r);
    } else if (strcmp(task, "spk") == 0) {
        check_speakers(cfg, stem, &r);
    } else {
        CHECK(r.n_segs == 1 && r.segs[0].t0_ms == 0 &&
              r.segs[0].t1_ms == (int64_t)c->n * 1000 / 16000 && r.n_words == 0);
        CHECK(r.ts_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    }
    free(raw);
    free(text);
    tr_result_free(&r);
    tr_gs_session_free(s);
}

static gs_model *load_internal(const char *path, gguf_file **g, transcribe_status *st) {
    *g = NULL;
    *st = tr_gguf_open(path, g);
    if (*st != TRANSCRIBE_OK) return NULL;
    tr_load_ctx lc = {.path = path, .gguf = *g};
    gs_model *m = NULL;
    *st = tr_gs_model_load(&lc, &m);
    return m;
}

static void test_file(const char *cfg, const char *file, const char *dt, const char *const *tasks,
                      bool all_kv) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", DATA, cfg, file);
    gguf_file *g = NULL;
    transcribe_status st;
    gs_model *m = load_internal(path, &g, &st);
    CHECK_MSG(m != NULL, "cannot load %s: %s", path, transcribe_status_string(st));
    if (m) {
        for (int c = 0; c < 2; c++) {
            check_front(m, cfg, &g_clips[c], dt);
            for (int t = 0; tasks[t]; t++)
                for (int kv = all_kv ? 0 : 1; kv < 2; kv++)
                    check_decode(m, cfg, &g_clips[c], tasks[t], dt, kv == 1);
        }
    }
    tr_gs_model_free(m);
    tr_gguf_close(g);
}

static void test_bad_files(void) {
    static const char *const bad[] = {"tiny-plus/granite-tiny-plus-nocat-F16.gguf",
                                      "tiny-plus/granite-tiny-plus-untied-nohead-F16.gguf",
                                      "tiny-1b/granite-tiny-1b-nohead-F16.gguf"};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DATA, bad[i]);
        struct transcribe_model *model = NULL;
        transcribe_status st = transcribe_model_load_file(path, NULL, &model);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && !model, "%s: %s", bad[i],
                  transcribe_status_string(st));
        transcribe_model_free(model);
    }
}

static struct transcribe_session *open_s(const char *cfg, const char *file, int n_ctx) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", DATA, cfg, file);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    sp.n_ctx = n_ctx;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
    return s;
}

/* Run-time refusals (README of the goldens) and the exact docs/formats/granite_speech.md §9
 * gate. */
static void test_gates(void) {
    const clip *c = &g_clips[1];
    struct transcribe_session *s1 = open_s("tiny-1b", "granite-tiny-1b-ref-F16.gguf", 0);
    struct transcribe_session *sp = open_s("tiny-plus", "granite-tiny-plus-ref-F16.gguf", 0);
    if (!s1 || !sp) goto done;
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    rp.target_language = "de";
    CHECK(transcribe_run(sp, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&rp);
    rp.language = "it";
    CHECK(transcribe_run(sp, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    CHECK(transcribe_run(s1, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    transcribe_run_params_init(&rp);
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s1, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    rp.diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    CHECK(transcribe_run(sp, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_run_params_init(&rp);
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s1, c->pcm, c->n, &rp) == TRANSCRIBE_ERR_INVALID_ARG); /* no target */
    CHECK(transcribe_run(s1, c->pcm, 200, NULL) == TRANSCRIBE_ERR_INVALID_ARG); /* too short */
done:
    transcribe_session_free(s1);
    transcribe_session_free(sp);
    /* jfk.plain on 1b: T_prompt 127 → n_ctx 383 passes, 382 refuses (the
     * family's own gate: the whole clip, chunking off) */
    struct transcribe_run_params whole;
    transcribe_run_params_init(&whole);
    whole.chunking = TRANSCRIBE_CHUNKING_OFF;
    for (int d = 0; d < 2; d++) {
        struct transcribe_session *s = open_s("tiny-1b", "granite-tiny-1b-ref-F16.gguf", 383 - d);
        if (!s) continue;
        transcribe_status st = transcribe_run(s, g_clips[0].pcm, g_clips[0].n, &whole);
        CHECK_MSG(st == (d ? TRANSCRIBE_ERR_INPUT_TOO_LONG : TRANSCRIBE_OK), "n_ctx %d: %s",
                  383 - d, transcribe_status_string(st));
        if (d == 0) {
            char *raw = read_golden("tiny-1b", "jfk.plain.raw.txt");
            const char *got = transcribe_raw_text(s);
            CHECK(raw && got && strcmp(raw, got) == 0);
            free(raw);
        }
        transcribe_session_free(s);
    }
}

/* Speaker rows through the public accessors. */
static void test_speaker_api(void) {
    struct transcribe_session *s = open_s("tiny-plus", "granite-tiny-plus-ref-F16.gguf", 0);
    if (!s) return;
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.diarize = TRANSCRIBE_DIARIZE_MODE_ON;
    CHECK(transcribe_run(s, g_clips[0].pcm, g_clips[0].n, &rp) == TRANSCRIBE_OK);
    static const int want[5] = {1, 2, 1, 2, 1};
    CHECK(transcribe_n_speaker_segments(s) == 5 && transcribe_n_segments(s) == 5);
    for (int i = 0; i < 5; i++) {
        struct transcribe_speaker_segment row;
        transcribe_speaker_segment_init(&row);
        CHECK(transcribe_get_speaker_segment(s, i, &row) == TRANSCRIBE_OK);
        CHECK(row.speaker_id == want[i] && row.t0_ms == 0 && row.t1_ms == 0 && isnan(row.p));
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, i, &seg) == TRANSCRIBE_OK && seg.speaker_id == want[i]);
    }
    const float *pcm[1] = {g_clips[1].pcm};
    const int n[1] = {g_clips[1].n};
    CHECK(transcribe_run_batch(s, pcm, n, 1, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_speaker_segments(s, 0) == 5);
    transcribe_session_free(s);
}

static int g_polls;
static bool abort_at(void *user) {
    return ++g_polls >= *(const int *)user;
}

/* Abort mid-decode keeps a proper prefix; batch rows equal single runs. */
static void test_abort_and_batch(void) {
    struct transcribe_session *s = open_s("tiny-1b", "granite-tiny-1b-ref-F32.gguf", 0);
    if (!s) return;
    char *raw = read_golden("tiny-1b", "jfk.plain.raw.txt");
    int limit = 12;
    g_polls = 0;
    transcribe_set_abort_callback(s, abort_at, &limit);
    CHECK(transcribe_run(s, g_clips[0].pcm, g_clips[0].n, NULL) == TRANSCRIBE_ERR_ABORTED);
    const char *part = transcribe_raw_text(s);
    CHECK_MSG(raw && part && part[0] && strlen(part) < strlen(raw) &&
                  strncmp(part, raw, strlen(part)) == 0,
              "partial '%s'", part ? part : "(null)");
    transcribe_set_abort_callback(s, NULL, NULL);
    const float *pcm[3] = {g_clips[0].pcm, g_clips[1].pcm, g_clips[0].pcm};
    const int n[3] = {g_clips[0].n, 100, g_clips[0].n};
    CHECK(transcribe_run_batch(s, pcm, n, 3, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    const char *b0 = transcribe_batch_raw_text(s, 0), *b2 = transcribe_batch_raw_text(s, 2);
    CHECK(raw && b0 && b2 && strcmp(b0, raw) == 0 && strcmp(b2, raw) == 0);
    free(raw);
    transcribe_session_free(s);
}

static void test_tokenizer(const char *cfg) {
    char path[512], cases[512];
    snprintf(path, sizeof path, "%s/%s/granite-%s-ref-F16.gguf", DATA, cfg, cfg);
    snprintf(cases, sizeof cases, "%s/%s/tokenizer_cases.txt", DATA, cfg);
    struct transcribe_model *model = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &model) == TRANSCRIBE_OK);
    if (model) CHECK(llm_tokenizer_cases(cases, llm_encode_public, model, cfg) >= 10);
    transcribe_model_free(model);
}

int main(void) {
    for (int c = 0; c < 2; c++) {
        clip *k = &g_clips[c];
        if (transcribe_audio_load_file(k->wav, 16000, &k->pcm, &k->n) != TRANSCRIBE_OK) {
            fprintf(stderr, "cannot read %s\n", k->wav);
            return 1;
        }
    }
    static const char *const t1b[] = {"plain", "de", NULL};
    static const char *const tplus[] = {"plain", "word", "spk", NULL};
    test_file("tiny-1b", "granite-tiny-1b-ref-F32.gguf", "F32", t1b, true);
    test_file("tiny-1b", "granite-tiny-1b-ref-F16.gguf", "F16", t1b, true);
    test_file("tiny-plus", "granite-tiny-plus-ref-F32.gguf", "F32", tplus, true);
    test_file("tiny-plus", "granite-tiny-plus-ref-F16.gguf", "F16", tplus, true);
    /* variant files that must load and decode alike */
    test_file("tiny-plus", "granite-tiny-plus-query3d-F16.gguf", "F16", tplus, false);
    test_file("tiny-1b", "granite-tiny-1b-catempty-F16.gguf", "F16", t1b, false);
    test_file("tiny-1b", "granite-tiny-1b-notie-F16.gguf", "F16", t1b, false);
    test_bad_files();
    test_gates();
    test_abort_and_batch();
    test_speaker_api();
    test_tokenizer("tiny-1b");
    test_tokenizer("tiny-plus");
    printf("worst: mel %.3g abs, encoder %.3g rel, projector %.3g rel, logits0 %.3g abs (F16 KV) "
           "/ %.3g (F32 KV)\n",
           g_worst_mel, g_worst_enc, g_worst_proj, g_worst_logits[0], g_worst_logits[1]);
    for (int c = 0; c < 2; c++) transcribe_audio_free(g_clips[c].pcm);
    return TEST_DONE();
}
