/* Voxtral Realtime against the float64 PyTorch reference (tools/ref/voxtral_realtime.py, goldens
 * in tests/data/voxtral_realtime, written from the spec by another engineer): the delay scales of
 * docs/formats/voxtral_realtime.md §6.1 at delays 6 and 2, the audio rows (§4, §5: mel, stem,
 * blocks, projector) of the clip at delays 6 and 2, the logits of the prefill and every step
 * (§6.3, §6.4; in the decoder's 48-position window, §8, against the reference's ring), and ids,
 * status, text, raw text and segment through the public API on the F32, F16 and Q8_0 files with F32
 * and F16 caches for the clip, its 20 480-sample cut and its first sample (the audio horizon ends
 * those), and the three as one batch; a five-clip input (compacted key rings, two passes) gives the
 * same audio rows pushed at once or in pieces, its first rows the reference's. Streams are
 * test_vxr_stream. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "models/voxtral_realtime/vxr.h"
#include "npy.h"
#include "parity.h"
#include "tensor/pool.h"
#include "test_util.h"
#include "transcribe.h"
#include "vxr_test.h"

static tr_pool *g_pool;

/* got [rows][cols] against the golden's first `rows` rows (all of them unless prefix). */
static void compare_rows(const char *name, const float *got, int rows, int cols, double tol,
                         bool prefix) {
    tr_compare_npy(VXR_DIR, name, got, rows, cols, tol, prefix);
}

static void compare(const char *name, const float *got, int rows, int cols, double tol) {
    compare_rows(name, got, rows, cols, tol, false);
}

/* Model internals: scales, audio rows, logits. */
static void tensors(const char *dtype, const float *pcm, int n) {
    char path[512], name[64];
    snprintf(path, sizeof path, "%s/voxtral-realtime-tiny-ref-%s.gguf", VXR_DIR, dtype);
    gguf_file *g = NULL;
    vxr_model *m = NULL;
    vxr_session *s = NULL;
    CHECK(tr_gguf_open(path, &g) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = path, .gguf = g};
    CHECK(g && tr_vxr_model_load(&lc, &m) == TRANSCRIBE_OK);
    tr_session_cfg cfg = {.n_threads = 2, .kv_type = TRANSCRIBE_KV_TYPE_F32, .pool = g_pool};
    CHECK(m && tr_vxr_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    if (!s) goto done;
    const bool q8 = !strcmp(dtype, "Q8_0"), f32 = !strcmp(dtype, "F32");
    const char *sfx = q8 ? ".q8_0" : "";
    const int L = m->lm.n_layer, D = m->lm.d_model, V = m->lm.n_vocab;
    float *sc = malloc(sizeof(float) * (size_t)L * D);
    static const int delays[2] = {6, 2};
    for (int k = 0; k < 2 && sc && !q8; k++) {
        tr_vxr_set_delay(s, delays[k]);
        for (int l = 0; l < L; l++)
            for (int i = 0; i < D; i++)
                sc[(size_t)l * D + i] =
                    s->ffn_norm[(size_t)l * D + i] / m->lm_blocks[l].norm_ffn[i];
        snprintf(name, sizeof name, "ada.d%d", delays[k]);
        compare(name, sc, L, D, f32 ? 1e-5 : 2e-3);
    }
    free(sc);
    /* audio rows at delays 6 (and 2, F32) */
    for (int k = 0; k < (f32 ? 2 : 1); k++) {
        const int d = delays[k];
        const int64_t na = tr_vxr_n_audio(m, n, d);
        tr_vxr_enc_reset(&s->enc);
        CHECK(tr_vxr_enc_push(&s->enc, g_pool, pcm, n, NULL, NULL) == TRANSCRIBE_OK);
        CHECK(tr_vxr_enc_finish(&s->enc, g_pool, n, d, NULL, NULL) == TRANSCRIBE_OK);
        CHECK(s->enc.audio0 == 0 && s->enc.n_audio == na);
        snprintf(name, sizeof name, d == 6 ? "clip%s.proj" : "clip.d2.proj", sfx);
        /* Q8_0: the reference dequantizes the same weights (measured ~6e-7) */
        compare(name, s->enc.audio, (int)na, D, 2e-3);
    }
    /* the half-float key / value ring of F16 sessions: the same rows within F16 rounding */
    vxr_enc e16;
    if (tr_vxr_enc_init(&e16, m, true)) {
        CHECK(e16.kh && e16.vh && !e16.kr && !e16.vr);
        CHECK(tr_vxr_enc_push(&e16, g_pool, pcm, n, NULL, NULL) == TRANSCRIBE_OK);
        CHECK(tr_vxr_enc_finish(&e16, g_pool, n, 6, NULL, NULL) == TRANSCRIBE_OK);
        CHECK(e16.n_audio == tr_vxr_n_audio(m, n, 6));
        snprintf(name, sizeof name, "clip%s.proj", sfx);
        compare(name, e16.audio, e16.n_audio, D, 2e-3);
        tr_vxr_enc_free(&e16);
    } else {
        CHECK(!"tr_vxr_enc_init(f16)");
    }
    /* logits: the prefill (row 0) and steps over the reference's ids (rows 1..) */
    snprintf(path, sizeof path, "%s/clip%s.tokens.npy", VXR_DIR, sfx);
    npy_array tk, lg;
    if (npy_load(path, &tk) == 0) {
        snprintf(path, sizeof path, "%s/clip%s.logits.npy", VXR_DIR, sfx);
        if (npy_load(path, &lg) == 0) {
            const int d = 6, T = 1 + VXR_LEFT_PAD_TOK + d;
            const int64_t na = tr_vxr_n_audio(m, n, d);
            tr_vxr_set_delay(s, d);
            tr_vxr_enc_reset(&s->enc);
            CHECK(tr_vxr_enc_push(&s->enc, g_pool, pcm, n, NULL, NULL) == TRANSCRIBE_OK);
            CHECK(tr_vxr_enc_finish(&s->enc, g_pool, n, d, NULL, NULL) == TRANSCRIBE_OK);
            /* the whole decode in the decoder's window (the reference's stream.d6.logits, ring
             * of 48 on the tiny file; its first 8 rows are the offline clip.logits) */
            const int all = 1 + (int)tk.n;
            tr_clm_set_window(s->dec.lm, m->hp.dec_window);
            CHECK(tr_clm_reserve(s->dec.lm, 1, m->hp.dec_window) == TRANSCRIBE_OK);
            float *x = malloc(sizeof(float) * (size_t)T * D), *got = NULL;
            const int rows = (int)lg.shape[0];
            got = malloc(sizeof(float) * (size_t)all * V);
            tr_vxr_prompt(s, d, s->enc.audio, x);
            const int first = tr_clm_prefill(s->dec.lm, g_pool, x, T, 0, got);
            const int32_t *ids = tk.data;
            CHECK(first == ids[0]);
            CHECK(tr_clm_set_input_rows(s->dec.lm, 0, s->enc.audio, 0, (int)na));
            for (int r = 1; r < all; r++) {
                int pos = T + r - 1, slot = 0;
                int32_t nx = 0;
                CHECK(tr_clm_step(s->dec.lm, g_pool, &ids[r - 1], &pos, &slot, 1, &nx));
                memcpy(got + (size_t)r * V, tr_clm_step_logits(s->dec.lm, 0), sizeof(float) * V);
                CHECK(nx == (r < (int)tk.n ? ids[r] : m->hp.eos));
            }
            snprintf(name, sizeof name, "clip%s.logits", sfx);
            compare(name, got, rows, V, q8 ? 0.1 : 2e-3);
            if (!q8) compare("stream.d6.logits", got, all, V, 2e-3);
            tr_clm_set_window(s->dec.lm, 0);
            tr_clm_clear_input_rows(s->dec.lm);
            free(x);
            free(got);
            npy_free(&lg);
        } else {
            CHECK_MSG(false, "cannot read %s", path);
        }
        npy_free(&tk);
    } else {
        CHECK_MSG(false, "cannot read %s", path);
    }
done:
    tr_vxr_session_free(s);
    tr_vxr_model_free(m);
    tr_gguf_close(g);
}

/* A longer input (the clip five times: 206 audio rows, 824 encoder frames, two 512-frame passes,
 * more than the 611-row key rings hold, so they are compacted) pushed at once, in 10 ms pieces and
 * in odd pieces: the same audio rows (the passes and compactions fall at different frames), and its
 * first 62 rows, which read only the clip's samples, are the reference's clip rows. */
static void chunking(const float *pcm, int n) {
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-realtime-tiny-ref-F32.gguf", VXR_DIR);
    gguf_file *g = NULL;
    vxr_model *m = NULL;
    vxr_session *s = NULL;
    CHECK(tr_gguf_open(path, &g) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = path, .gguf = g};
    CHECK(g && tr_vxr_model_load(&lc, &m) == TRANSCRIBE_OK);
    tr_session_cfg cfg = {.n_threads = 2, .kv_type = TRANSCRIBE_KV_TYPE_F32, .pool = g_pool};
    CHECK(m && tr_vxr_session_create(m, &cfg, &s) == TRANSCRIBE_OK);
    const int n3 = 5 * n;
    float *x = malloc(sizeof(float) * (size_t)n3);
    if (!s || !x) goto done;
    for (int r = 0; r < 5; r++) memcpy(x + (size_t)r * n, pcm, sizeof(float) * (size_t)n);
    const int D = m->lm.d_model;
    const int64_t na = tr_vxr_n_audio(m, n3, 6);
    float *want = malloc(sizeof(float) * (size_t)na * D);
    static const int pieces[3] = {0, 160, 7777};
    for (int k = 0; k < 3 && want; k++) {
        tr_vxr_enc_reset(&s->enc);
        const int step = pieces[k] ? pieces[k] : n3;
        for (int at = 0; at < n3; at += step)
            CHECK(tr_vxr_enc_push(&s->enc, g_pool, x + at, n3 - at < step ? n3 - at : step, NULL,
                                  NULL) == TRANSCRIBE_OK);
        CHECK(tr_vxr_enc_finish(&s->enc, g_pool, n3, 6, NULL, NULL) == TRANSCRIBE_OK);
        CHECK(s->enc.audio0 == 0 && s->enc.n_audio == na);
        CHECK(s->enc.kv0 > 0); /* the rings were compacted */
        if (k == 0) {
            memcpy(want, s->enc.audio, sizeof(float) * (size_t)na * D);
            compare_rows("clip.proj", want, 62, D, 2e-3, true);
        } else {
            const double e = tr_max_abs_err(s->enc.audio, want, na * D);
            printf("pieces of %-5d samples: audio rows within %.3g of one push\n", pieces[k], e);
            CHECK_MSG(e <= 1e-4, "pieces of %d: %g", pieces[k], e);
        }
    }
    free(want);
done:
    free(x);
    tr_vxr_session_free(s);
    tr_vxr_model_free(m);
    tr_gguf_close(g);
}

static void decode(const char *dtype, const char *clip, const float *pcm, int n,
                   transcribe_kv_type kv) {
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-realtime-tiny-ref-%s.gguf", VXR_DIR, dtype);
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    vxr_golden g;
    CHECK_MSG(vxr_golden_load(clip, !strcmp(dtype, "Q8_0"), &g), "no golden for %s", clip);
    if (s) {
        const transcribe_status st = transcribe_run(s, pcm, n, NULL);
        CHECK_MSG(st == TRANSCRIBE_OK, "%s %s: status %d", dtype, clip, st);
        CHECK(!transcribe_was_truncated(s));
        const char *txt = transcribe_full_text(s), *raw = transcribe_raw_text(s);
        CHECK_MSG(txt && !strcmp(txt, g.text), "%s %s text [%s] want [%s]", dtype, clip,
                  txt ? txt : "", g.text);
        CHECK_MSG(raw && !strcmp(raw, g.raw), "%s %s raw [%s] want [%s]", dtype, clip,
                  raw ? raw : "", g.raw);
        /* token rows: the text ids (the controls, ids < 1000 here, are left out) */
        int k = 0;
        bool same = true;
        for (int i = 0; i < g.n_ids; i++) {
            if (g.ids[i] < 1000) continue;
            struct transcribe_token t;
            transcribe_token_init(&t);
            same = same && transcribe_get_token(s, k++, &t) == TRANSCRIBE_OK && t.id == g.ids[i];
        }
        CHECK_MSG(same && transcribe_n_tokens(s) == k, "%s %s: token rows", dtype, clip);
        CHECK(transcribe_n_segments(s) == 1);
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK && seg.t0_ms == 0 &&
              seg.t1_ms == g.seg_t1);
        if (kv == TRANSCRIBE_KV_TYPE_AUTO) printf("%s %s: %.80s\n", dtype, clip, txt ? txt : "");
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

static void batch(const char *dtype, const float *const *pcm, const int *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/voxtral-realtime-tiny-ref-%s.gguf", VXR_DIR, dtype);
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    static const char *const gn[3] = {"clip", "clip_short", "clip_min"};
    if (s) {
        CHECK(transcribe_run_batch(s, pcm, n, 3, NULL) == TRANSCRIBE_OK);
        for (int i = 0; i < 3; i++) {
            vxr_golden g;
            CHECK(vxr_golden_load(gn[i], !strcmp(dtype, "Q8_0"), &g));
            CHECK_MSG(transcribe_batch_status(s, i) == TRANSCRIBE_OK, "batch %s %d", dtype, i);
            const char *t = transcribe_batch_full_text(s, i);
            CHECK_MSG(t && !strcmp(t, g.text), "batch %s %d: [%s]", dtype, i, t ? t : "");
        }
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    if (!tr_test_file_exists(VXR_DIR "/voxtral-realtime-tiny-ref-F32.gguf")) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    g_pool = tr_pool_create(2);
    int n = 0;
    float *pcm = vxr_load_clip(&n);
    static const char *const dtypes[3] = {"F32", "F16", "Q8_0"};
    if (pcm) {
        const float *p[3] = {pcm, pcm, pcm};
        const int ns[3] = {n, 20480, 1};
        static const char *const clips[3] = {"clip", "clip_short", "clip_min"};
        chunking(pcm, n);
        for (int d = 0; d < 3; d++) {
            tensors(dtypes[d], pcm, n);
            for (int c = 0; c < 3; c++) {
                decode(dtypes[d], clips[c], p[c], ns[c], TRANSCRIBE_KV_TYPE_AUTO);
                decode(dtypes[d], clips[c], p[c], ns[c], TRANSCRIBE_KV_TYPE_F32);
            }
            batch(dtypes[d], p, ns);
        }
    }
    transcribe_audio_free(pcm);
    tr_pool_free(g_pool);
    return TEST_DONE();
}
