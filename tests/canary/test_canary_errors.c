/* Canary contracts and error paths on the reference tiny models, through
 * the public API wherever it reaches: capabilities and session limits;
 * language, pair and task gates; the input-length gate (rejected before
 * any front-end / encoder work, timed); forced output truncation with the
 * partial text kept; abort; empty, short and NaN audio; special tags; and
 * malformed files (truncated, missing / misshaped / mistyped tensors,
 * missing / mistyped keys) written with src/gguf/gguf_writer.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/audio.h"
#include "cn_test.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "tensor/dtype.h"
#include "test_util.h"
#include "util/timer.h"

static int g_nonfinite_warns;

static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_WARN && strstr(msg, "non-finite")) g_nonfinite_warns++;
}

static struct transcribe_model *load(const char *path, transcribe_status *st) {
    struct transcribe_model *m = NULL;
    transcribe_status s = transcribe_model_load_file(path, NULL, &m);
    if (st) *st = s;
    return m;
}

static struct transcribe_session *session(struct transcribe_model *m, transcribe_kv_type kv,
                                          int n_ctx) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    sp.n_ctx = n_ctx;
    struct transcribe_session *s = NULL;
    if (!m || transcribe_session_init(m, &sp, &s) != TRANSCRIBE_OK) return NULL;
    return s;
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             transcribe_task task, const char *src, const char *tgt) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.task = task;
    p.language = src;
    p.target_language = tgt;
    return transcribe_run(s, pcm, n, &p);
}

/* ---- capabilities, limits, gates (tiny-canary2: en de es fr lv, lv ASR-only) ---- */

static void caps_and_gates(const char *path, const float *pcm, int n) {
    struct transcribe_model *m = load(path, NULL);
    CHECK(m != NULL);
    if (!m) return;
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_audio_ms == 400000); /* 5000 · 8 · 160 · 1000 / 16000 */
    CHECK(c.native_sample_rate == 16000);
    CHECK(c.n_languages == 5 && c.supports_translate && !c.supports_language_detect);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(c.n_translate_target_languages == 4);
    for (int i = 0; i < c.n_translate_target_languages; i++)
        CHECK(strcmp(c.translate_target_languages[i], "lv") != 0);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_PNC));
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM));
    CHECK(strcmp(transcribe_model_arch_string(m), "canary") == 0);
    CHECK(strcmp(transcribe_model_variant_string(m), "canary-1b-v2") == 0);
    /* single SentencePiece: prompts could be encoded */
    int32_t ids[64];
    CHECK(transcribe_tokenize(m, "hello", ids, 64) > 0);

    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_F32, 0);
    CHECK(s && transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 48 && lim.effective_max_audio_ms == 400000);
    CHECK(lim.max_kv_bytes == (int64_t)2 * 2 * 32 * 48 * 4); /* K+V · layers · d · n_ctx · f32 */
    transcribe_session_free(s);
    s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 1000); /* clamped down, never raised */
    CHECK(s && transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 48 && lim.max_kv_bytes == (int64_t)2 * 2 * 32 * 48 * 2);
    transcribe_session_free(s);
    s = session(m, TRANSCRIBE_KV_TYPE_F32, 20); /* narrows the decoder, not the audio limit */
    CHECK(s && transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 20 && lim.effective_max_audio_ms == 400000);
    transcribe_session_free(s);

    s = session(m, TRANSCRIBE_KV_TYPE_F32, 0);
    const transcribe_task T = TRANSCRIBE_TASK_TRANSCRIBE, X = TRANSCRIBE_TASK_TRANSLATE;
    const transcribe_status UL = TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE;
    CHECK(run(s, pcm, n, T, "xx", NULL) == UL); /* unknown source */
    CHECK(run(s, pcm, n, T, "EN", NULL) == UL); /* exact, case-sensitive */
    CHECK(run(s, pcm, n, X, "de", "fr") == UL); /* not an English-pivot pair */
    CHECK(run(s, pcm, n, X, "en", "lv") == UL); /* lv is ASR-only */
    CHECK(run(s, pcm, n, X, "lv", "en") == UL); /* ... in both directions */
    CHECK(run(s, pcm, n, X, "en", NULL) == UL); /* no target: en>en is no pair */
    CHECK(run(s, pcm, n, X, NULL, "en") == UL); /* default source en: en>en */
    CHECK(run(s, pcm, n, X, "en", "xx") == UL); /* unknown target */
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT; /* docs/formats/canary.md §10: no times */
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    /* ASR of lv is fine; the default source is en */
    CHECK(run(s, pcm, n, T, "lv", NULL) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_detected_language(s), "lv") == 0);
    CHECK(run(s, pcm, n, X, "de", "en") == TRANSCRIBE_OK);
    CHECK(run(s, pcm, n, T, NULL, NULL) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_detected_language(s), "en") == 0);
    char *dflt = strdup(transcribe_full_text(s));
    CHECK(run(s, pcm, n, T, "en", NULL) == TRANSCRIBE_OK);
    CHECK(dflt && strcmp(dflt, transcribe_full_text(s)) == 0);
    free(dflt);
    /* keep_special_tags: the text is the raw decode less one leading space */
    p.timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
    p.keep_special_tags = true;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    const char *raw = transcribe_raw_text(s), *txt = transcribe_full_text(s);
    CHECK(raw && txt && strcmp(raw[0] == ' ' ? raw + 1 : raw, txt) == 0);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* ---- docs/formats/canary.md §9: over-long input is rejected before any mel / encoder work ---- */

static void input_gate(const char *path, const float *pcm, int n) {
    struct transcribe_model *m = load(path, NULL);
    struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_F32, 0);
    CHECK(s != NULL);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    /* the exact boundary: T_mel <= 8 · pos_emb_max_len */
    cn_loaded L;
    CHECK(cn_load_internal(path, TRANSCRIBE_KV_TYPE_F32, 0, &L));
    if (L.m) {
        CHECK(tr_cn_predict_enc_frames(L.m, 8 * 5000 * 160 - 1) == 5000);
        CHECK(tr_cn_predict_enc_frames(L.m, 8 * 5000 * 160) == 5001);
        CHECK(tr_cn_predict_enc_frames(L.m, n) == 138); /* jfk: T_mel 1101 */
    }
    cn_unload_internal(&L);

    /* one encoder pass on jfk (11 s) for scale */
    CHECK(run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL) == TRANSCRIBE_OK);
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    transcribe_get_timings(s, &tm);
    int big = 8 * 5000 * 160; /* 400.0 s + one hop: T_enc 5001 */
    float *long_pcm = calloc((size_t)big, sizeof(float));
    CHECK(long_pcm != NULL);
    if (long_pcm) {
        for (int i = 0; i < big; i++) long_pcm[i] = pcm[i % n];
        double t0 = tr_time_ms();
        transcribe_status st = run(s, long_pcm, big, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL);
        double dt = tr_time_ms() - t0;
        CHECK(st == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        CHECK(transcribe_full_text(s)[0] == 0 && transcribe_n_segments(s) == 0);
        CHECK(!transcribe_was_truncated(s));
        struct transcribe_timings t2;
        transcribe_timings_init(&t2);
        transcribe_get_timings(s, &t2);
        CHECK(t2.mel_ms == 0 && t2.encode_ms == 0);
        /* Work on this input would scale with its length (36× jfk): the
         * rejection must cost well under a tenth of that estimated pass. */
        double est = (tm.mel_ms + tm.encode_ms) * (double)big / n;
        printf("input gate: rejected 400 s in %.3f ms; a mel + encoder pass would take ~%.0f ms "
               "(jfk 11 s: mel %.2f ms + encoder %.2f ms)\n",
               dt, est, tm.mel_ms, tm.encode_ms);
        CHECK(tm.encode_ms > 0 && dt < est / 10);
        /* in a batch the gate is per utterance; the others decode (docs/formats/canary.md §11) */
        const float *pcms[2] = {long_pcm, pcm};
        const int ns[2] = {big, n};
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.language = "en";
        CHECK(transcribe_run_batch(s, pcms, ns, 2, &p) == TRANSCRIBE_OK);
        CHECK(transcribe_batch_n_results(s) == 2);
        CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_OK ||
              transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        const char *bt = transcribe_batch_full_text(s, 1);
        CHECK(bt && bt[0] && transcribe_batch_full_text(s, 0)[0] == 0);
        free(long_pcm);
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* ---- docs/formats/canary.md §8.3: output cap → OUTPUT_TRUNCATED with the partial text kept
 * ---- */

static void truncation(const char *config, const float *pcm, int n) {
    char path[512], gold[512];
    cn_model_path(path, sizeof path, config, "F32");
    cn_golden_path(gold, sizeof gold, config, "jfk.transcribe.prompt.npy");
    npy_array pr, tk;
    CHECK(npy_load(gold, &pr) == 0);
    cn_golden_path(gold, sizeof gold, config, "jfk.transcribe.tokens.npy");
    CHECK(npy_load(gold, &tk) == 0);
    int P = (int)pr.n;
    npy_free(&pr);
    if (!tk.data || tk.n < 4) {
        CHECK_MSG(tk.n >= 4, "%s: golden decode too short for the truncation test", config);
        npy_free(&tk);
        return;
    }
    struct transcribe_model *m = load(path, NULL);
    /* full run for the complete text */
    struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_F32, 0);
    CHECK(s && run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL) != TRANSCRIBE_ERR_GGUF);
    char *full = s ? strdup(transcribe_full_text(s)) : NULL;
    transcribe_session_free(s);
    /* context = prompt + 3 → exactly 3 tokens, then the budget is spent */
    s = session(m, TRANSCRIBE_KV_TYPE_F32, P + 3);
    CHECK(s != NULL);
    if (s) {
        transcribe_status st = run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL);
        CHECK_MSG(st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "%s: %s", config,
                  transcribe_status_string(st));
        CHECK(transcribe_was_truncated(s));
        const char *part = transcribe_full_text(s);
        CHECK(part && full && strlen(part) > 0 && strlen(part) < strlen(full));
        CHECK_MSG(part && full && strncmp(full, part, strlen(part)) == 0,
                  "partial '%s' is not a prefix of '%s'", part ? part : "", full ? full : "");
        CHECK(transcribe_n_segments(s) == 1);
        /* a following complete run clears the flag */
        transcribe_session_free(s);
    }
    /* the same through the internal run: the first 3 golden ids */
    cn_loaded L;
    CHECK(cn_load_internal(path, TRANSCRIBE_KV_TYPE_F32, P + 3, &L));
    if (L.s) {
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        bool tr = false;
        CHECK(cn_run_internal(&L, pcm, n, &p, NULL, 0, &tr) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        CHECK(tr && L.s->n_last == 3 && memcmp(L.s->last_ids, tk.data, 3 * sizeof(int32_t)) == 0);
    }
    cn_unload_internal(&L);
    /* a context that cannot hold prompt + 1 token: truncated, nothing decoded */
    s = session(m, TRANSCRIBE_KV_TYPE_F32, P);
    CHECK(s && run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL) ==
                   TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(s && transcribe_was_truncated(s) && transcribe_full_text(s)[0] == 0);
    transcribe_session_free(s);
    free(full);
    npy_free(&tk);
    transcribe_model_free(m);
}

/* ---- abort, empty / short / NaN audio ---- */

static bool abort_now(void *user) {
    int *calls = user;
    return ++*calls >= 1;
}

static void audio_edges(const char *path, const float *pcm, int n) {
    struct transcribe_model *m = load(path, NULL);
    struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
    CHECK(s != NULL);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    const transcribe_task T = TRANSCRIBE_TASK_TRANSCRIBE;
    float one = 0.0f;
    CHECK(run(s, pcm, 0, T, "en", NULL) == TRANSCRIBE_ERR_INVALID_ARG); /* empty */
    CHECK(run(s, NULL, 16000, T, "en", NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, &one, 1, T, "en", NULL) == TRANSCRIBE_ERR_INVALID_ARG); /* < 257 samples */
    CHECK(run(s, pcm, 256, T, "en", NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, pcm, 257, T, "en", NULL) == TRANSCRIBE_OK); /* docs/formats/canary.md §9 minimum */
    float *zeros = calloc(16000, sizeof(float));
    CHECK(zeros && run(s, zeros, 16000, T, "en", NULL) == TRANSCRIBE_OK); /* silence */
    free(zeros);

    /* NaN / Inf samples: sanitised with one WARN, the run proceeds */
    float *bad = malloc((size_t)n * sizeof(float));
    if (bad) {
        memcpy(bad, pcm, (size_t)n * sizeof(float));
        bad[100] = NAN;
        bad[5000] = INFINITY;
        bad[n - 1] = -INFINITY;
        g_nonfinite_warns = 0;
        transcribe_log_set(on_log, NULL);
        CHECK(run(s, bad, n, T, "en", NULL) == TRANSCRIBE_OK);
        transcribe_log_set(NULL, NULL);
        CHECK(g_nonfinite_warns == 1);
        free(bad);
    }

    /* abort: partial (here empty) result, ABORTED, flag set */
    int calls = 0;
    transcribe_set_abort_callback(s, abort_now, &calls);
    CHECK(run(s, pcm, n, T, "en", NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s) && !transcribe_was_truncated(s));
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(run(s, pcm, n, T, "en", NULL) == TRANSCRIBE_OK && !transcribe_was_aborted(s));
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* ---- malformed files ---- */

typedef tr_gguf_edit edit;

static bool rewrite(const char *src, const char *dst, const edit *e) {
    return tr_gguf_edit_file(src, dst, e);
}

static void expect_load(const char *src, const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(src, e, want, what);
}

static void bad_files(const char *path, const float *pcm, int n) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    expect_load(path, &(edit){0}, OK, "unchanged copy");
    expect_load(path, &(edit){.drop_tensor = "dec.layer.1.ffn.down.bias"}, G, "missing bias");
    expect_load(path, &(edit){.drop_tensor = "dec.head.weight"}, G, "missing head");
    expect_load(path, &(edit){.drop_tensor = "enc.blocks.0.conv.bn.bias"}, G, "missing enc BN");
    expect_load(path, &(edit){.bad_shape = "dec.embed.pos_enc"}, G, "short pos_enc");
    expect_load(path, &(edit){.bad_shape = "dec.layer.0.cross_attn.k.weight"}, G, "bad cross k");
    expect_load(path, &(edit){.bad_shape = "dec.embed.token.weight"}, G, "short embedding");
    expect_load(path, &(edit){.to_f16 = "dec.embed.norm.weight"}, G, "F16 norm (F32 class)");
    expect_load(path, &(edit){.to_f16 = "dec.embed.pos_enc"}, G, "F16 pos_enc (F32 class)");
    expect_load(path, &(edit){.drop_kv = "stt.canary.decoder.activation"}, G, "no activation");
    expect_load(path, &(edit){.drop_kv = "stt.canary.encoder.pos_emb_max_len"}, G, "no pos max");
    expect_load(path, &(edit){.drop_kv = "stt.canary.special.pad_id"}, G, "no pad id");
    expect_load(path, &(edit){.drop_kv = "stt.frontend.dither"}, G, "no dither");
    expect_load(path, &(edit){.drop_kv = "tokenizer.ggml.tokens"}, G, "no tokens");
    expect_load(path, &(edit){.kv_i32 = "stt.canary.decoder.n_layers"}, G, "INT32 n_layers");
    expect_load(path, &(edit){.kv_i32 = "stt.canary.special.pad_id"}, OK, "INT32 token id");
    expect_load(path,
                &(edit){.kv_str = "stt.canary.tokenizer.prompt_format", .kv_str_value = "canary3"},
                G, "prompt_format canary3");
    expect_load(path, &(edit){.kv_str = "stt.canary.decoder.activation", .kv_str_value = "gelu"}, G,
                "gelu activation");
    expect_load(path, &(edit){.kv_str = "stt.frontend.normalize", .kv_str_value = "all_features"},
                G, "normalize");
    expect_load(path, &(edit){.kv_str = "stt.canary.decoder.n_heads", .kv_str_value = "2"}, G,
                "string n_heads");
    expect_load(path, &(edit){.kv_str = "stt.canary.decoder.vocab_size", .kv_str_value = "x"}, G,
                "string vocab_size");

    /* the token embedding is looked up by row from any type (docs/formats/canary.md §3.4) */
    char dst[512];
    snprintf(dst, sizeof dst, "%s/canary_q8emb_%d.gguf", TR_BINARY_DIR, (int)getpid());
    CHECK(rewrite(path, dst, &(edit){.to_q8 = "dec.embed.token.weight"}));
    struct transcribe_model *m = load(dst, NULL);
    struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
    CHECK(s && run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL) != TRANSCRIBE_ERR_GGUF);
    transcribe_session_free(s);
    transcribe_model_free(m);
    remove(dst);

    /* translation switched off: TRANSLATE → UNSUPPORTED_TASK */
    snprintf(dst, sizeof dst, "%s/canary_notl_%d.gguf", TR_BINARY_DIR, (int)getpid());
    CHECK(rewrite(path, dst, &(edit){.kv_bool = "stt.capability.translate", .add_absent = true}));
    m = load(dst, NULL);
    s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
    CHECK(s &&
          run(s, pcm, n, TRANSCRIBE_TASK_TRANSLATE, "en", "de") == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_session_free(s);
    transcribe_model_free(m);
    remove(dst);

    /* no <|nopnc|>: PNC is no runtime control, so an explicit OFF is only
     * a WARN and the default (on) prompt runs: same text as DEFAULT */
    snprintf(dst, sizeof dst, "%s/canary_nonopnc_%d.gguf", TR_BINARY_DIR, (int)getpid());
    CHECK(rewrite(path, dst, &(edit){.drop_kv = "stt.canary.special.nopnc_id"}));
    m = load(dst, NULL);
    s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
    CHECK(m && !transcribe_model_supports(m, TRANSCRIBE_FEATURE_PNC));
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    transcribe_status st0 = s ? transcribe_run(s, pcm, n, &p) : TRANSCRIBE_ERR_INVALID_ARG;
    CHECK(st0 == TRANSCRIBE_OK || st0 == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    char *dflt = s ? strdup(transcribe_full_text(s)) : NULL;
    p.pnc = TRANSCRIBE_PNC_MODE_OFF;
    CHECK(s && transcribe_run(s, pcm, n, &p) == st0);
    CHECK(s && dflt && strcmp(dflt, transcribe_full_text(s)) == 0);
    free(dflt);
    transcribe_session_free(s);
    transcribe_model_free(m);
    remove(dst);

    /* no <|pnc|>: the default prompt cannot be built (invalid argument) */
    snprintf(dst, sizeof dst, "%s/canary_nopnc_%d.gguf", TR_BINARY_DIR, (int)getpid());
    CHECK(rewrite(path, dst, &(edit){.drop_kv = "stt.canary.special.pnc_id"}));
    m = load(dst, NULL);
    s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
    CHECK(s &&
          run(s, pcm, n, TRANSCRIBE_TASK_TRANSCRIBE, "en", NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_session_free(s);
    transcribe_model_free(m);
    remove(dst);

    /* truncated files: every cut point fails cleanly */
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    CHECK(buf && fread(buf, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    const double cuts[] = {0.0, 0.001, 0.02, 0.2, 0.5, 0.9, 0.9999};
    snprintf(dst, sizeof dst, "%s/canary_cut_%d.gguf", TR_BINARY_DIR, (int)getpid());
    for (size_t i = 0; buf && i < sizeof cuts / sizeof cuts[0]; i++) {
        long len = (long)(cuts[i] * (double)size);
        FILE *o = fopen(dst, "wb");
        CHECK(o != NULL);
        if (!o) break;
        if (len > 0) fwrite(buf, 1, (size_t)len, o);
        fclose(o);
        transcribe_status st;
        struct transcribe_model *mm = load(dst, &st);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && !mm, "cut at %ld of %ld: %s", len, size,
                  transcribe_status_string(st));
        transcribe_model_free(mm);
    }
    remove(dst);
    free(buf);
}

/* Byte mutations of the header region (KVs, tokenizer arrays, tensor
 * infos): every load fails cleanly or yields a model that runs without
 * crashing (the sanitizer build checks memory safety). */
static void mutations(const char *path, const float *pcm, int n) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *orig = malloc((size_t)size), *buf = malloc((size_t)size);
    bool rd = orig && buf && fread(orig, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    CHECK(rd);
    char dst[512];
    snprintf(dst, sizeof dst, "%s/canary_mut_%d.gguf", TR_BINARY_DIR, (int)getpid());
    uint32_t rng = 12345u;
    long region = size < 32768 ? size : 32768;
    int loaded = 0, ran = 0;
    for (int it = 0; rd && it < 80; it++) {
        memcpy(buf, orig, (size_t)size);
        int flips = 1 + it % 4;
        for (int k = 0; k < flips; k++) {
            rng = rng * 1664525u + 1013904223u;
            long pos = (long)((rng >> 8) % (uint32_t)region);
            rng = rng * 1664525u + 1013904223u;
            buf[pos] ^= (unsigned char)(1u << ((rng >> 16) & 7));
        }
        FILE *o = fopen(dst, "wb");
        if (!o) break;
        fwrite(buf, 1, (size_t)size, o);
        fclose(o);
        struct transcribe_model *m = load(dst, NULL);
        if (!m) continue;
        loaded++;
        struct transcribe_session *s = session(m, TRANSCRIBE_KV_TYPE_AUTO, 0);
        if (s) {
            run(s, pcm, n < 8000 ? n : 8000, TRANSCRIBE_TASK_TRANSCRIBE, NULL, NULL);
            ran++;
        }
        transcribe_session_free(s);
        transcribe_model_free(m);
    }
    printf("mutations: 80 files, %d loaded, %d ran\n", loaded, ran);
    remove(dst);
    free(orig);
    free(buf);
}

int main(void) {
    tr_audio jfk = {0};
    CHECK(tr_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 16000, &jfk) == TRANSCRIBE_OK);
    char p2[512], p1[512];
    cn_model_path(p2, sizeof p2, "tiny-canary2", "F32");
    cn_model_path(p1, sizeof p1, "tiny-canary", "F32");
    if (!cn_file_exists(p1) || !cn_file_exists(p2)) {
        printf("reference models missing: skipped\n");
        tr_audio_free(&jfk);
        return TEST_DONE();
    }
    if (jfk.pcm) {
        const int n = (int)jfk.n;
        caps_and_gates(p2, jfk.pcm, n);
        input_gate(p2, jfk.pcm, n);
        truncation("tiny-canary", jfk.pcm, n);
        truncation("tiny-canary2", jfk.pcm, n);
        audio_edges(p1, jfk.pcm, n);
        transcribe_log_set(NULL, NULL); /* expected-error noise stays out of the log */
        bad_files(p1, jfk.pcm, n);
        bad_files(p2, jfk.pcm, n);
        mutations(p1, jfk.pcm, n);
        mutations(p2, jfk.pcm, n);
    }
    tr_audio_free(&jfk);
    return TEST_DONE();
}
