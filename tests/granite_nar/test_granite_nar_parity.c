/* Granite Speech NAR against the float64 PyTorch reference goldens of tests/data/granite_nar
 * (tools/ref/granite_nar.py; README there), on the F32, F16 and Q8_0 files and a 2.43 s clip:
 * the stacked mel (docs/formats/granite_nar.md §4), the final encoder state, the captured
 * states and the char-CTC blank probability (§5.1), the first-pass hypothesis (§6.1), the
 * projector rows (§5.2), the insertion slots (§6.2), the fused LM input (§5.3), the logits of
 * the text slots and the final ids (§6.3, §6.4) through the family's internal steps; then
 * the transcript and its segment (§7) through the public API. A 0.61 s noise clip gives
 * blank windows only, so an empty hypothesis and an empty transcript. The reference's LM pass edits
 * its hypothesis (one deletion, one substitution), so the final ids differ from the first
 * pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/family.h"
#include "llm_parity.h"
#include "models/granite_nar/granite_nar.h"
#include "npy.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/granite_nar"

/* Tolerances, max abs (README of the goldens: float32 vs float64 is ≤ 2.6e-6 on the encoder,
 * the captures, the projector and the LM input, 1.4e-5 on the logits; values are O(1) except
 * the LM input (≤ 6) and the logits (≤ 49)). */
#define TOL_MEL    1e-4
#define TOL_ENC    2e-4 /* final state, captures */
#define TOL_BLANK  1e-5
#define TOL_PROJ   2e-4
#define TOL_LM_IN  2e-4
#define TOL_LOGITS 2e-3
/* Q8_0 against the goldens of its own dequantized weights: our Q8_0 products quantize the
 * activation row to int8 per 32 values (as ggml's Q8_0 dot does), which moves values by
 * ~1e-2 (the smallest pooled BPE margin is 3.0 and the slot margins 34.8: ids stay exact). */
#define TOL_Q8 1e-1

enum { K_MEL, K_ENC, K_CAT, K_BLANK, K_PROJ, K_LM_IN, K_LOGITS, K_N };
static const char *const k_names[K_N] = {"mel", "enc", "cat", "blank", "proj", "lm_in", "logits"};
static double g_worst[2][K_N]; /* [q8][what] */

static const char *const k_dts[3] = {"F32", "F16", "Q8_0"};

static bool is_q8(const char *dt) {
    return strcmp(dt, "Q8_0") == 0;
}

/* Compares rows x cols values with <prefix>.<what>.npy (prefix "" for the weight-independent
 * mel); k indexes g_worst. */
static void compare(const float *got, int64_t rows, int64_t cols, const char *dt, const char *what,
                    int k, double tol) {
    char name[128];
    if (k == K_MEL)
        snprintf(name, sizeof name, "%s.npy", what);
    else
        snprintf(name, sizeof name, "%s.%s.npy", is_q8(dt) ? "q8" : "ref", what);
    npy_array g;
    if (!llm_load_npy(DATA, name, &g)) return;
    const int64_t gcols = g.ndim > 1 ? g.shape[1] : 1;
    CHECK_MSG(g.shape[0] == rows && gcols == cols, "%s %s: shape [%lld, %lld] vs [%lld, %lld]", dt,
              name, (long long)g.shape[0], (long long)gcols, (long long)rows, (long long)cols);
    if (g.n == rows * cols && strcmp(g.dtype, "<f4") == 0) {
        double ref_max = 0;
        double e = llm_max_abs_diff(got, g.data, g.n, &ref_max);
        double *w = &g_worst[is_q8(dt)][k];
        *w = fmax(*w, e);
        CHECK_MSG(e <= (is_q8(dt) && k != K_MEL ? TOL_Q8 : tol), "%s %s: max abs err %g (max %g)",
                  dt, name, e, ref_max);
    }
    npy_free(&g);
}

/* ids against an int32 golden, exactly. */
static void compare_ids(const int32_t *got, int n, const char *dt, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s.npy", is_q8(dt) ? "q8" : "ref", what);
    npy_array g;
    if (!llm_load_npy(DATA, name, &g)) return;
    bool same = strcmp(g.dtype, "<i4") == 0 && g.n == n &&
                (n == 0 || memcmp(g.data, got, sizeof(int32_t) * (size_t)n) == 0);
    CHECK_MSG(same, "%s %s: %d ids differ from the reference's %lld", dt, name, n, (long long)g.n);
    if (!same) {
        fprintf(stderr, "  ours:");
        for (int i = 0; i < n; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n");
    }
    npy_free(&g);
}

/* The steps of the run through the family's internal entry points. */
static void check_steps(const gn_model *m, const float *pcm, int n, const char *dt) {
    float *x = NULL;
    int T = 0;
    CHECK(tr_gn_features(m, NULL, pcm, n, &x, &T) == TRANSCRIBE_OK);
    CHECK_MSG(T == 121 && T == tr_gn_enc_frames(m, n), "%s: T_enc %d", dt, T);
    if (!x || T != 121) {
        free(x);
        return;
    }
    compare(x, T, 160, dt, "mel", K_MEL, TOL_MEL);
    gn_enc_out e = {0};
    CHECK(tr_gn_encode(m, NULL, x, T, NULL, NULL, &e) == TRANSCRIBE_OK);
    int32_t *hyp = NULL;
    int n_hyp = 0;
    float *audio = NULL;
    int n_audio = 0;
    if (!e.last) goto done;
    const int d = m->enc.d;
    compare(e.last, T, d, dt, "enc", K_ENC, TOL_ENC);
    compare(e.cat, T, (int64_t)m->n_cap * d, dt, "enc_cat", K_CAT, TOL_ENC);
    compare(e.blank, T, 1, dt, "blank", K_BLANK, TOL_BLANK);
    CHECK(tr_gn_hypothesis(m, NULL, &e, T, &hyp, &n_hyp) == TRANSCRIBE_OK);
    compare_ids(hyp, n_hyp, dt, "hyp");
    CHECK(tr_gn_project(m, NULL, e.cat, T, &audio, &n_audio) == TRANSCRIBE_OK);
    const int H = m->lm.d_model, V = m->lm.n_vocab;
    CHECK(n_audio == 24 && n_audio == tr_gn_audio_rows(m, T));
    if (!audio || n_audio != 24 || n_hyp <= 0) goto done;
    compare(audio, n_audio, H, dt, "proj", K_PROJ, TOL_PROJ);
    const int cap = 2 * n_hyp + 1 > GN_MIN_TEXT ? 2 * n_hyp + 1 : GN_MIN_TEXT;
    int32_t *text = malloc(sizeof(int32_t) * (size_t)cap), *out = malloc(sizeof(int32_t) * cap);
    const int n_text = tr_gn_slots(hyp, n_hyp, m->eos, text);
    compare_ids(text, n_text, dt, "text_ids");
    /* the fused input of docs/formats/granite_nar.md §5.3 from the library's own row lookup: audio
     * rows ·(1/12)·12 */
    const int n_all = n_audio + n_text;
    float *fused = malloc(sizeof(float) * (size_t)n_all * H);
    float *scaled = malloc(sizeof(float) * (size_t)n_audio * H);
    int32_t *ids = calloc((size_t)n_all, sizeof(int32_t));
    memcpy(ids + n_audio, text, sizeof(int32_t) * (size_t)n_text);
    for (int i = 0; i < n_audio * H; i++) scaled[i] = audio[i] * (1.0f / m->lm.embedding_mult);
    tr_clm_embed(&m->lm, &m->lm_w, ids, n_all, scaled, 0, n_audio, fused);
    compare(fused, n_all, H, dt, "lm_in", K_LM_IN, TOL_LM_IN);
    float *lg = malloc(sizeof(float) * (size_t)n_text * V);
    int n_out = 0;
    CHECK(tr_gn_edit(m, NULL, audio, n_audio, text, n_text, NULL, NULL, lg, out, &n_out) ==
          TRANSCRIBE_OK);
    compare(lg, n_text, V, dt, "logits", K_LOGITS, TOL_LOGITS);
    compare_ids(out, n_out, dt, "ids");
    /* the edit changed the first pass */
    CHECK(n_out != n_hyp || memcmp(out, hyp, sizeof(int32_t) * (size_t)n_out) != 0);
    free(fused);
    free(scaled);
    free(ids);
    free(lg);
    free(text);
    free(out);
done:
    tr_gn_enc_out_free(&e);
    free(hyp);
    free(audio);
    free(x);
}

/* The noise clip (docs/formats/granite_nar.md §6.1): blank probability 1 on every frame, every
 * pooling window blank, no hypothesis, so the run stops there: an empty transcript in one
 * segment over the clip. */
static void check_noise(struct transcribe_session *s, const gn_model *m, const float *pcm, int n,
                        const char *dt) {
    float *x = NULL;
    int T = 0;
    CHECK(tr_gn_features(m, NULL, pcm, n, &x, &T) == TRANSCRIBE_OK);
    CHECK_MSG(T == 30, "%s noise: T_enc %d", dt, T);
    if (x && T == 30) {
        compare(x, T, 160, dt, "noise_mel", K_MEL, TOL_MEL);
        gn_enc_out e = {0};
        CHECK(tr_gn_encode(m, NULL, x, T, NULL, NULL, &e) == TRANSCRIBE_OK);
        if (e.last) {
            compare(e.last, T, m->enc.d, dt, "noise_enc", K_ENC, TOL_ENC);
            compare(e.blank, T, 1, dt, "noise_blank", K_BLANK, TOL_BLANK);
            int32_t *hyp = NULL;
            int n_hyp = -1;
            CHECK(tr_gn_hypothesis(m, NULL, &e, T, &hyp, &n_hyp) == TRANSCRIBE_OK);
            CHECK_MSG(n_hyp == 0, "%s noise: %d hypothesis ids", dt, n_hyp);
            free(hyp);
        }
        tr_gn_enc_out_free(&e);
    }
    free(x);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    const char *full = transcribe_full_text(s);
    CHECK_MSG(full && full[0] == 0, "%s noise text '%s'", dt, full ? full : "(null)");
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_n_segments(s) == 1 && transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(seg.t0_ms == 0 && seg.t1_ms == (int64_t)n * 1000 / 16000 && seg.text && !seg.text[0]);
}

/* The public API: transcript bytes, raw = full text, one segment [0, n·1000/16000]. */
static void check_public(const char *path, const float *pcm, int n, const float *noise, int n_noise,
                         const char *dt, const char *want) {
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    const gn_session *fs = tr_session_head_of(s)->fsession;
    check_steps(fs->m, pcm, n, dt);
    transcribe_status st = transcribe_run(s, pcm, n, NULL);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: %s", dt, transcribe_status_string(st));
    const char *full = transcribe_full_text(s), *raw = transcribe_raw_text(s);
    CHECK_MSG(full && strcmp(full, want) == 0, "%s text '%s' vs '%s'", dt, full ? full : "(null)",
              want);
    CHECK(raw && strcmp(raw, want) == 0);
    CHECK(transcribe_n_segments(s) == 1 && transcribe_n_words(s) == 0 &&
          transcribe_n_tokens(s) == 0);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK_MSG(seg.t0_ms == 0 && seg.t1_ms == (int64_t)n * 1000 / 16000 && seg.text &&
                  strcmp(seg.text, want) == 0,
              "%s segment [%lld, %lld]", dt, (long long)seg.t0_ms, (long long)seg.t1_ms);
    /* the session keeps the first pass and the final ids of the run */
    compare_ids(fs->hyp, fs->n_hyp, dt, "hyp");
    compare_ids(fs->out, fs->n_out, dt, "ids");
    check_noise(s, fs->m, noise, n_noise, dt);
    transcribe_session_free(s);
}

int main(void) {
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(DATA "/jfk_2s4.wav", 16000, &pcm, &n) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot read jfk_2s4.wav\n");
        return 1;
    }
    CHECK(n == 38957);
    float *noise = NULL;
    int n_noise = 0;
    if (transcribe_audio_load_file(DATA "/jfk_noise.wav", 16000, &noise, &n_noise) !=
        TRANSCRIBE_OK) {
        fprintf(stderr, "cannot read jfk_noise.wav\n");
        return 1;
    }
    CHECK(n_noise == 9810);
    for (int f = 0; f < 3; f++) {
        char name[64], path[512];
        snprintf(name, sizeof name, "%s.text.txt", is_q8(k_dts[f]) ? "q8" : "ref");
        char *want = llm_read_golden(DATA, name);
        snprintf(path, sizeof path, "%s/granite-nar-tiny-ref-%s.gguf", DATA, k_dts[f]);
        if (want) check_public(path, pcm, n, noise, n_noise, k_dts[f], want);
        free(want);
    }
    for (int q = 0; q < 2; q++) {
        printf("worst %s:", q ? "Q8_0" : "F32/F16");
        for (int k = 0; k < K_N; k++) printf(" %s %.3g", k_names[k], g_worst[q][k]);
        printf("\n");
    }
    transcribe_audio_free(pcm);
    transcribe_audio_free(noise);
    return TEST_DONE();
}
