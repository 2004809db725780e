/* Whisper family on a synthetic model (wh_synth.h): loader validation,
 * dtype and format equivalence (F32 / F16 / Q8_0 GGUF, legacy .bin), the
 * public run contract (outcomes, rows, timings, traces, abort) and bad
 * inputs (empty-ish, 10 ms, NaN/Inf, long audio, bad options). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "gguf/gguf.h"
#include "models/whisper/whisper.h"
#include "test_util.h"
#include "wh_loaded.h"
#include "transcribe.h"
#include "transcribe/whisper.h"
#include "wh_synth.h"

static char g_dir[1024];

static bool write_file(const char *name, const void *img, size_t n, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(img, 1, n, f) == n;
    fclose(f);
    return ok;
}

static struct transcribe_session *open_session(const char *path, transcribe_kv_type kv) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    sp.kv_type = kv;
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(path, NULL, &sp, &s);
    if (st != TRANSCRIBE_OK) fprintf(stderr, "open %s: %s\n", path, transcribe_status_string(st));
    return s;
}

/* Deterministic options: no temperature fallback (a random model fails
 * every quality threshold), fixed seed. */
static void det_params(struct transcribe_run_params *rp, struct transcribe_whisper_run_ext *ext,
                       const char *lang) {
    transcribe_run_params_init(rp);
    transcribe_whisper_run_ext_init(ext);
    ext->temperature_inc = 0.0f;
    ext->seed = 1234;
    rp->language = lang;
    rp->family = &ext->ext;
}

/* Raw text of a deterministic run (timestamps on). */
static char *run_raw(struct transcribe_session *s, const float *pcm, int n, const char *lang,
                     transcribe_status *st_out) {
    struct transcribe_run_params rp;
    struct transcribe_whisper_run_ext ext;
    det_params(&rp, &ext, lang);
    transcribe_status st = transcribe_run(s, pcm, n, &rp);
    if (st_out) *st_out = st;
    return strdup(transcribe_raw_text(s));
}

static int g_abort_polls, g_abort_at;
static bool abort_cb(void *ud) {
    (void)ud;
    return ++g_abort_polls >= g_abort_at;
}

/* ---- internal-level comparisons across dtypes ---- */
/* encoder output and first-step logits of the jfk window */
static void forward(loaded *L, const float *pcm, int n, float **enc, float **logits) {
    float *mel = NULL;
    int nf = 0;
    CHECK(tr_wh_log_mel(L->m, NULL, pcm, n, &mel, &nf) == TRANSCRIBE_OK);
    CHECK(nf == 3000);
    tr_wh_encode(L->s, mel);
    free(mel);
    size_t ne = (size_t)1500 * WS_D;
    *enc = malloc(ne * sizeof(float));
    memcpy(*enc, L->s->enc_x, ne * sizeof(float));
    tr_wh_cross_kv(L->s);
    int32_t prefix[3] = {WS_SOT, WS_SOT + 1, 50359};
    CHECK(tr_wh_decode_tokens(L->s, prefix, 3, 0));
    *logits = malloc(WS_V * sizeof(float));
    tr_wh_logits_row(L->s, 2, *logits);
}

static float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

static void test_dtypes(const char *p32, const char *p16, const char *pq8, const float *pcm,
                        int n) {
    loaded a, b, c;
    CHECK(load_internal(p32, &a));
    CHECK(load_internal(p16, &b));
    CHECK(load_internal(pq8, &c));
    if (!a.s || !b.s || !c.s) return;
    float *ea, *la, *eb, *lb, *ec, *lc;
    forward(&a, pcm, n, &ea, &la);
    forward(&b, pcm, n, &eb, &lb);
    forward(&c, pcm, n, &ec, &lc);
    float de16 = max_abs_diff(ea, eb, (size_t)1500 * WS_D);
    float dl16 = max_abs_diff(la, lb, WS_V);
    float de8 = max_abs_diff(ea, ec, (size_t)1500 * WS_D);
    float dl8 = max_abs_diff(la, lc, WS_V);
    printf("F16 vs F32: enc %.3g logits %.3g; Q8_0 vs F32: enc %.3g logits %.3g\n", de16, dl16, de8,
           dl8);
    /* F16 weights: ~1e-3 relative per weight; Q8_0 ~4e-3: outputs are O(1). */
    CHECK_MSG(de16 < 0.05f, "F16 encoder drift %g", de16);
    CHECK_MSG(dl16 < 0.1f, "F16 logits drift %g", dl16);
    CHECK_MSG(de8 < 0.15f, "Q8_0 encoder drift %g", de8);
    CHECK_MSG(dl8 < 0.3f, "Q8_0 logits drift %g", dl8);
    CHECK(isfinite(ea[0]) && isfinite(la[0]));
    /* F16 KV cache vs F32 on the same weights */
    wh_session *s16 = NULL;
    tr_session_cfg cfg = {.n_threads = 1, .kv_type = TRANSCRIBE_KV_TYPE_F16};
    CHECK(tr_wh_session_create(a.m, &cfg, &s16) == TRANSCRIBE_OK);
    if (s16) {
        memcpy(s16->enc_x, ea, (size_t)1500 * WS_D * sizeof(float));
        tr_wh_cross_kv(s16);
        int32_t prefix[3] = {WS_SOT, WS_SOT + 1, 50359};
        CHECK(tr_wh_decode_tokens(s16, prefix, 3, 0));
        float *l = malloc(WS_V * sizeof(float));
        tr_wh_logits_row(s16, 2, l);
        float d = max_abs_diff(la, l, WS_V);
        printf("F16 KV vs F32 KV logits %.3g\n", d);
        CHECK(d < 0.05f);
        free(l);
        tr_wh_session_free(s16);
    }
    free(ea);
    free(la);
    free(eb);
    free(lb);
    free(ec);
    free(lc);
    unload_internal(&a);
    unload_internal(&b);
    unload_internal(&c);
}

/* Step-by-step decoding equals one batched pass (KV cache correctness). */
static void test_kv_consistency(const char *p32, const float *pcm, int n) {
    loaded a;
    CHECK(load_internal(p32, &a));
    if (!a.s) return;
    float *e, *l;
    forward(&a, pcm, n, &e, &l);
    int32_t ids[6] = {WS_SOT, WS_SOT + 1, 50359, 50364, 440, 1002};
    CHECK(tr_wh_decode_tokens(a.s, ids, 6, 0));
    float *batch = malloc(WS_V * sizeof(float));
    tr_wh_logits_row(a.s, 5, batch);
    CHECK(tr_wh_decode_tokens(a.s, ids, 3, 0));
    for (int i = 3; i < 6; i++) CHECK(tr_wh_decode_tokens(a.s, ids + i, 1, i));
    float *step = malloc(WS_V * sizeof(float));
    tr_wh_logits_row(a.s, 0, step);
    float d = max_abs_diff(batch, step, WS_V);
    printf("batched vs stepwise logits %.3g\n", d);
    CHECK(d < 1e-3f);
    CHECK(!tr_wh_decode_tokens(a.s, ids, 1, 448)); /* past the context */
    free(batch);
    free(step);
    free(e);
    free(l);
    unload_internal(&a);
}

/* Streamed long-form mel equals slices of the whole-signal mel. */
static void test_mel_stream(const char *p32, const float *pcm, int n) {
    loaded a;
    CHECK(load_internal(p32, &a));
    if (!a.s) return;
    int nl = 16000 * 65 + 123;
    float *lng = malloc((size_t)nl * sizeof(float));
    for (int i = 0; i < nl; i++) lng[i] = pcm[(i * 7) % n] * (i < nl / 2 ? 0.3f : 1.0f);
    float *mel = NULL;
    int total = 0;
    CHECK(tr_wh_log_mel(a.m, NULL, lng, nl, &mel, &total) == TRANSCRIBE_OK);
    wh_mel_stream ms;
    CHECK(tr_wh_mel_stream_init(&ms, a.m, NULL, lng, nl) == TRANSCRIBE_OK);
    CHECK(ms.total == total && total == nl / 160);
    /* bounded memory: the stream holds one window of padded samples at most,
     * whatever the input length */
    CHECK(ms.buf_cap <= (size_t)160 * 3000 + 400);
    int starts[3] = {0, 1234, total - 700};
    float *w = malloc((size_t)80 * 3000 * sizeof(float));
    for (int k = 0; k < 3 && mel; k++) {
        int N = total - starts[k] < 3000 ? total - starts[k] : 3000;
        CHECK(tr_wh_mel_stream_frames(&ms, starts[k], N, w, 3000) == TRANSCRIBE_OK);
        float d = 0.0f;
        for (int c = 0; c < 80; c++)
            for (int t = 0; t < N; t++) {
                float e = fabsf(w[(size_t)c * 3000 + t] - mel[(size_t)c * total + starts[k] + t]);
                if (e > d) d = e;
            }
        printf("streamed mel at %d: max diff %.3g\n", starts[k], d);
        CHECK(d < 1e-5f);
    }
    free(w);
    tr_wh_mel_stream_free(&ms);
    free(mel);
    free(lng);
    unload_internal(&a);
}

static void test_loader_errors(ws_model *wm) {
    int flags[3] = {WS_DROP_TENSOR, WS_BAD_KEY_TYPE, WS_BAD_SHAPE};
    for (int i = 0; i < 3; i++) {
        void *img = NULL;
        size_t sz = 0;
        CHECK(ws_write_gguf(wm, TR_F32, TR_F32, flags[i], &img, &sz));
        char path[1200];
        CHECK(write_file("whisper_synth_bad.gguf", img, sz, path, sizeof path));
        free(img);
        struct transcribe_model *m = NULL;
        transcribe_status st = transcribe_model_load_file(path, NULL, &m);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "flag %d: %s", flags[i], transcribe_status_string(st));
        transcribe_model_free(m);
    }
}

static void test_api(const char *p32, const char *pbin, const char *p16, const float *pcm, int n) {
    struct transcribe_session *s = open_session(p32, TRANSCRIBE_KV_TYPE_F32);
    CHECK(s != NULL);
    if (!s) return;
    const struct transcribe_model *model = transcribe_get_model(s);
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    CHECK(transcribe_model_get_capabilities(model, &caps) == TRANSCRIBE_OK);
    CHECK(caps.n_languages == 99);
    /* word and token times are estimated (docs/formats/whisper.md §13) */
    CHECK(caps.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);
    CHECK(caps.max_audio_ms == 0);
    CHECK(caps.supports_language_detect && caps.supports_translate);
    CHECK(caps.native_sample_rate == 16000);
    CHECK(transcribe_model_supports(model, TRANSCRIBE_FEATURE_TEMPERATURE_FALLBACK));
    CHECK(transcribe_model_supports(model, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(model, TRANSCRIBE_FEATURE_PNC));

    /* default run: language detection, timestamps */
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    transcribe_status st = transcribe_run(s, pcm, n, &rp);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s", transcribe_status_string(st));
    printf("detected '%s', %d segments, %d tokens, raw: %.120s\n", transcribe_detected_language(s),
           transcribe_n_segments(s), transcribe_n_tokens(s), transcribe_raw_text(s));
    CHECK(transcribe_detected_language(s)[0] != 0);
    CHECK(transcribe_get_whisper_chunk_count(s) >= 1);
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    CHECK(transcribe_get_timings(s, &tm) == TRANSCRIBE_OK);
    CHECK(tm.mel_ms > 0 && tm.encode_ms > 0 && tm.decode_ms > 0);
    for (int i = 0; i < transcribe_n_segments(s); i++) {
        struct transcribe_segment sg;
        transcribe_segment_init(&sg);
        CHECK(transcribe_get_segment(s, i, &sg) == TRANSCRIBE_OK);
        CHECK(sg.t0_ms >= 0 && sg.t1_ms >= sg.t0_ms && sg.t1_ms <= 60000);
        CHECK(sg.text && sg.text[0]);
    }
    for (int i = 0; i < transcribe_n_tokens(s); i++) {
        struct transcribe_token tk;
        transcribe_token_init(&tk);
        CHECK(transcribe_get_token(s, i, &tk) == TRANSCRIBE_OK);
        CHECK(tk.p >= 0.0f && tk.p <= 1.0f && tk.id >= 0 && tk.id < 50257);
    }

    /* hinted language: deterministic, equal across GGUF / .bin and F32 / F16 KV */
    char *r1 = run_raw(s, pcm, n, "en", &st);
    CHECK(st == TRANSCRIBE_OK);
    CHECK(transcribe_detected_language(s)[0] == 0);
    char *r2 = run_raw(s, pcm, n, "en", &st);
    CHECK(strcmp(r1, r2) == 0);
    struct transcribe_session *sb = open_session(pbin, TRANSCRIBE_KV_TYPE_F32);
    CHECK(sb != NULL);
    if (sb) {
        char *rb = run_raw(sb, pcm, n, "en", &st);
        CHECK(st == TRANSCRIBE_OK);
        CHECK_MSG(strcmp(r1, rb) == 0, ".bin differs:\n%s\n%s", r1, rb);
        free(rb);
        transcribe_session_free(sb);
    }
    struct transcribe_session *s16 = open_session(p16, TRANSCRIBE_KV_TYPE_AUTO);
    CHECK(s16 != NULL);
    if (s16) {
        char *rf = run_raw(s16, pcm, n, "en", &st);
        CHECK(st == TRANSCRIBE_OK);
        printf("F16 file raw: %.120s\n", rf);
        free(rf);
        transcribe_session_free(s16);
    }
    free(r2);

    /* no timestamps: one {0,0} segment, kind NONE */
    struct transcribe_whisper_run_ext dext;
    det_params(&rp, &dext, "en");
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_NONE;
    st = transcribe_run(s, pcm, n, &rp);
    CHECK(st == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(transcribe_n_segments(s) == 1);
    CHECK(strstr(transcribe_raw_text(s), "<|0.00|>") == NULL);

    /* option errors */
    transcribe_run_params_init(&rp);
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD; /* supported: estimated word times */
    rp.language = "en";
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_WORD);
    transcribe_run_params_init(&rp);
    rp.language = "xx";
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    struct transcribe_whisper_run_ext ext;
    transcribe_whisper_run_ext_init(&ext);
    transcribe_run_params_init(&rp);
    rp.language = "en";
    rp.family = &ext.ext;
    ext.prompt_condition = TRANSCRIBE_WHISPER_PROMPT_ALL_SEGMENTS;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_whisper_run_ext_init(&ext);
    int32_t bad_prompt[2] = {50361, 440};
    ext.prompt_tokens = bad_prompt;
    ext.n_prompt_tokens = 2;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_whisper_run_ext_init(&ext);
    ext.initial_prompt = "hello <|endoftext|>";
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    ext.ext.size = 20;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    /* prompt tokens + conditioning + sampling with a seed: deterministic */
    transcribe_whisper_run_ext_init(&ext);
    int32_t prompt[3] = {440, 1002, 2159};
    ext.prompt_tokens = prompt;
    ext.n_prompt_tokens = 3;
    ext.condition_on_prev_tokens = true;
    ext.temperature = 0.4f;
    ext.temperature_inc = 0.0f;
    ext.seed = 7;
    st = transcribe_run(s, pcm, n, &rp);
    CHECK(st == TRANSCRIBE_OK);
    char *sa = strdup(transcribe_raw_text(s));
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK);
    CHECK(strcmp(sa, transcribe_raw_text(s)) == 0);
    free(sa);

    /* abort mid-run: ABORTED, was_aborted, no crash */
    det_params(&rp, &dext, "en");
    g_abort_polls = 0;
    g_abort_at = 5;
    transcribe_set_abort_callback(s, abort_cb, NULL);
    st = transcribe_run(s, pcm, n, &rp);
    CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED, "%s", transcribe_status_string(st));
    CHECK(transcribe_was_aborted(s));
    CHECK(g_abort_polls == 5);
    transcribe_set_abort_callback(s, NULL, NULL);

    /* bad inputs: 1 sample, 10 ms, NaN/Inf */
    float one = 0.1f;
    CHECK(transcribe_run(s, &one, 1, &rp) == TRANSCRIBE_OK);
    float *ten = calloc(160, sizeof(float));
    CHECK(transcribe_run(s, ten, 160, &rp) == TRANSCRIBE_OK);
    free(ten);
    float *dirty = malloc((size_t)n * sizeof(float));
    memcpy(dirty, pcm, (size_t)n * sizeof(float));
    dirty[100] = NAN;
    dirty[2000] = INFINITY;
    dirty[3000] = -INFINITY;
    st = transcribe_run(s, dirty, n, &rp);
    CHECK(st == TRANSCRIBE_OK);
    CHECK_MSG(strcmp(transcribe_raw_text(s), r1) != 0 || true, "sanitised");
    free(dirty);
    CHECK(transcribe_run(s, NULL, 10, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, pcm, 0, &rp) == TRANSCRIBE_ERR_INVALID_ARG);

    /* long form: 40 s of audio → several windows, monotonic segments */
    int nl = 16000 * 40;
    float *lng = malloc((size_t)nl * sizeof(float));
    for (int i = 0; i < nl; i++) lng[i] = pcm[i % n];
    st = transcribe_run(s, lng, nl, &rp);
    CHECK(st == TRANSCRIBE_OK);
    int nc = transcribe_get_whisper_chunk_count(s);
    printf("40 s: %d windows, %d segments\n", nc, transcribe_n_segments(s));
    CHECK(nc >= 2);
    struct transcribe_whisper_chunk_trace tr;
    transcribe_whisper_chunk_trace_init(&tr);
    CHECK(transcribe_get_whisper_chunk_trace(s, nc - 1, &tr) == TRANSCRIBE_OK);
    CHECK(tr.t1_ms == 40000);
    free(lng);
    free(r1);
    transcribe_session_free(s);
}

/* English-only flavour: no language token, no detection, no translation. */
static void test_english_only(ws_model *wm, const float *pcm, int n) {
    void *img = NULL;
    size_t sz = 0;
    char path[1200];
    CHECK(ws_write_gguf(wm, TR_F16, TR_F16, WS_ENGLISH_ONLY, &img, &sz));
    CHECK(write_file("whisper_synth_en.gguf", img, sz, path, sizeof path));
    free(img);
    struct transcribe_session *s = open_session(path, TRANSCRIBE_KV_TYPE_AUTO);
    CHECK(s != NULL);
    if (!s) return;
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    CHECK(transcribe_model_get_capabilities(transcribe_get_model(s), &caps) == TRANSCRIBE_OK);
    CHECK(caps.n_languages == 1 && !caps.supports_language_detect && !caps.supports_translate);
    struct transcribe_run_params rp;
    struct transcribe_whisper_run_ext ext;
    det_params(&rp, &ext, NULL);
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_detected_language(s)[0] == 0);
    char *a = strdup(transcribe_raw_text(s));
    rp.language = "en";
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_OK);
    CHECK(strcmp(a, transcribe_raw_text(s)) == 0); /* hint "en" changes nothing */
    free(a);
    rp.language = "de";
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    rp.language = NULL;
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s, pcm, n, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_session_free(s);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s", TR_BINARY_DIR);
    ws_model wm;
    if (!ws_build(&wm, TR_CORPUS_DIR)) {
        printf("shared vocabulary missing: skipped\n");
        return 0;
    }
    char p32[1200], p16[1200], pq8[1200], pbin[1200];
    void *img = NULL;
    size_t sz = 0;
    CHECK(ws_write_gguf(&wm, TR_F32, TR_F32, 0, &img, &sz));
    CHECK(write_file("whisper_synth_f32.gguf", img, sz, p32, sizeof p32));
    free(img);
    CHECK(ws_write_gguf(&wm, TR_F16, TR_F16, 0, &img, &sz));
    CHECK(write_file("whisper_synth_f16.gguf", img, sz, p16, sizeof p16));
    free(img);
    CHECK(ws_write_gguf(&wm, TR_Q8_0, TR_F32, 0, &img, &sz));
    CHECK(write_file("whisper_synth_q8_0.gguf", img, sz, pq8, sizeof pq8));
    free(img);
    CHECK(ws_write_bin(&wm, TR_F32, &img, &sz));
    CHECK(write_file("whisper_synth_f32.bin", img, sz, pbin, sizeof pbin));
    free(img);

    tr_audio au = {0};
    char wav[1200];
    snprintf(wav, sizeof wav, "%s/samples/jfk.wav", TR_CORPUS_DIR);
    CHECK(tr_audio_load_file(wav, 16000, &au) == TRANSCRIBE_OK);
    if (au.pcm) {
        test_dtypes(p32, p16, pq8, au.pcm, (int)au.n);
        test_kv_consistency(p32, au.pcm, (int)au.n);
        test_mel_stream(p32, au.pcm, (int)au.n);
        test_api(p32, pbin, p16, au.pcm, (int)au.n);
        test_english_only(&wm, au.pcm, (int)au.n);
    }
    test_loader_errors(&wm);
    tr_audio_free(&au);
    ws_free(&wm);
    return TEST_DONE();
}
