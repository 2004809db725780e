/* Canary-Qwen bad input and contracts on the tiny reference file
 * (tests/data/canary_qwen): capabilities and session limits; run gates
 * (NULL / empty / too-short audio, language, task, timestamps); a prompt
 * longer than the context; the placeholder count check at load and at the
 * splice; forced truncation keeping its text; batches with mixed row
 * statuses; long audio through the library's split path; rewritten files
 * (missing, misshaped, mistyped tensors and keys, cross-field checks,
 * tokenizer problems) each failing with its status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "models/canary_qwen/canary_qwen.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA TR_SOURCE_DIR "/tests/data/canary_qwen"
#define REF  DATA "/canary-qwen-tiny-ref-F32.gguf"
#define TEXT                                                                                       \
    "And so, my fellow Americans: ask not what your country can do for you. Whole Earth "          \
    "catalog 1984"

static float *g_pcm;
static int g_n;

static struct transcribe_session *open_session(const char *path, int n_ctx) {
    return tr_test_open(path, 2, n_ctx, TRANSCRIBE_KV_TYPE_AUTO);
}

/* ---- capabilities, limits, run gates ---- */

static void caps_and_gates(void) {
    struct transcribe_session *s = open_session(REF, 0);
    if (!s) return;
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000);
    CHECK(c.n_languages == 1 && strcmp(c.languages[0], "en") == 0);
    CHECK(!c.supports_translate && !c.supports_language_detect && c.supports_spec_decode);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    /* docs/formats/canary_qwen.md §8: (40960 − 32 − 256) · 8 · 160 · 1000 / 16000 */
    CHECK_MSG(c.max_audio_ms == 3253760, "max_audio_ms %lld", (long long)c.max_audio_ms);
    CHECK(strcmp(transcribe_model_arch_string(m), "canary_qwen") == 0);
    CHECK(strcmp(transcribe_model_variant_string(m), "canary-qwen-2.5b") == 0);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM));
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 40960 && lim.effective_max_audio_ms == 3253760);
    /* 2 layers · 2 (K, V) · 2 kv heads · 16 · 2 bytes (F16) per position */
    CHECK_MSG(lim.max_kv_bytes == (int64_t)40960 * 2 * 2 * 2 * 16 * 2, "kv bytes %lld",
              (long long)lim.max_kv_bytes);

    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    CHECK(transcribe_run(s, NULL, 1000, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, g_pcm, 0, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, g_pcm, 256, &p) == TRANSCRIBE_ERR_INVALID_ARG); /* < 257 */
    CHECK(transcribe_run(s, g_pcm, 257, &p) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_full_text(s), TEXT) == 0);
    CHECK(transcribe_n_segments(s) == 1);
    p.language = "de";
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    p.language = "en";
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_OK);
    CHECK(strcmp(transcribe_full_text(s), TEXT) == 0);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "en";
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_session_free(s);
}

/* ---- a prompt longer than the context ---- */

static void prompt_too_long(void) {
    /* the 257-sample minimum has T_prompt 14: n_ctx 270 passes, 269 does not */
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    for (int d = 0; d < 2; d++) {
        struct transcribe_session *s = open_session(REF, 270 - d);
        if (!s) continue;
        transcribe_status st = transcribe_run(s, g_pcm, 257, &p);
        CHECK_MSG(st == (d ? TRANSCRIBE_ERR_INPUT_TOO_LONG : TRANSCRIBE_OK), "n_ctx %d: %s",
                  270 - d, transcribe_status_string(st));
        transcribe_session_free(s);
    }
    /* a context smaller than the prompt alone */
    struct transcribe_session *s = open_session(REF, 16);
    if (s) {
        CHECK(transcribe_run(s, g_pcm, g_n, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        transcribe_session_free(s);
    }
}

/* ---- batches: rows keep their own statuses ---- */

static void batch_rows(void) {
    struct transcribe_session *s = open_session(REF, 300); /* clip: T_prompt 45 fits 301 */
    if (!s) return;
    const float *pcm[4] = {g_pcm, g_pcm, NULL, g_pcm};
    const int n[4] = {257, 100, 1000, g_n};
    struct transcribe_run_params p; /* the family's own gate: chunking off */
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    CHECK(transcribe_run_batch(s, pcm, n, 4, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 4);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 3) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    const char *t = transcribe_batch_full_text(s, 0);
    CHECK(t && strcmp(t, TEXT) == 0);
    transcribe_session_free(s);
}

/* ---- long audio: the library splits it (bounded output, no long form) ---- */

static void long_audio(void) {
    struct transcribe_session *s = open_session(REF, 0);
    if (!s) return;
    const int reps = 28; /* 70 s */
    float *pcm = calloc((size_t)g_n * reps, sizeof(float));
    for (int r = 0; r < reps; r++) memcpy(pcm + (size_t)r * g_n, g_pcm, sizeof(float) * g_n);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    CHECK(transcribe_run_would_chunk(s, (int64_t)g_n * reps, &p));
    transcribe_status st = transcribe_run(s, pcm, g_n * reps, &p);
    CHECK_MSG(st == TRANSCRIBE_OK, "long audio: %s", transcribe_status_string(st));
    CHECK(transcribe_was_chunked(s) && transcribe_n_pieces(s) >= 3);
    const int ns = transcribe_n_segments(s);
    CHECK_MSG(ns == transcribe_n_pieces(s), "%d segments, %d pieces", ns, transcribe_n_pieces(s));
    int64_t last = -1;
    for (int i = 0; i < ns; i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, i, &seg) == TRANSCRIBE_OK);
        CHECK(seg.t0_ms >= last && seg.t1_ms > seg.t0_ms && seg.t1_ms <= 70000);
        CHECK(seg.text && strcmp(seg.text, TEXT) == 0);
        last = seg.t1_ms;
    }
    free(pcm);
    transcribe_session_free(s);
}

/* ---- the placeholder count check of the splice (internal API) ---- */

static void splice_check(void) {
    gguf_file *g = NULL;
    cq_model *m = NULL;
    if (tr_gguf_open(REF, &g) == TRANSCRIBE_OK) {
        tr_load_ctx lc = {.path = REF, .gguf = g};
        CHECK(tr_cq_model_load(&lc, &m) == TRANSCRIBE_OK);
    }
    if (!m) {
        CHECK(false);
        tr_gguf_close(g);
        return;
    }
    const int T = 3, d = m->lm.d_model;
    int32_t ids[64];
    const int n = tr_cq_build_prompt(m, T, ids);
    float *audio = calloc((size_t)T * d, sizeof(float)), *out = malloc(sizeof(float) * n * d);
    CHECK(tr_cq_splice(m, ids, n, audio, T, out) == TRANSCRIBE_OK);
    CHECK(tr_cq_splice(m, ids, n, audio, T - 1, out) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_cq_splice(m, ids, n, audio, T + 1, out) == TRANSCRIBE_ERR_INVALID_ARG);
    /* three placeholders, not one run */
    ids[m->n_prefix + 1] = m->sp.im_end;
    ids[n - 1] = m->sp.audio;
    CHECK(tr_cq_splice(m, ids, n, audio, T, out) == TRANSCRIBE_ERR_INVALID_ARG);
    free(audio);
    free(out);
    tr_cq_model_free(m);
    tr_gguf_close(g);
}

/* ---- rewritten files ---- */

typedef tr_gguf_edit edit;

static bool rewrite(const char *dst, const edit *e) {
    return tr_gguf_edit_file(REF, dst, e);
}

static char g_edit_path[512];

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(REF, e, want, what);
}

static void bad_files(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
#define EK "stt.canary_qwen.encoder."
#define DK "stt.canary_qwen.decoder."
#define PK "stt.canary_qwen.perception."
    expect_load(&(edit){0}, OK, "unchanged copy");
    /* tensors */
    expect_load(&(edit){.drop_tensor = "enc.proj.bias"}, G, "missing proj bias");
    expect_load(&(edit){.drop_tensor = "enc.proj.weight"}, G, "missing proj");
    expect_load(&(edit){.drop_tensor = "enc.blocks.1.conv.bn.running_var"}, G, "missing BN");
    expect_load(&(edit){.drop_tensor = "dec.blocks.1.attn.k_norm.weight"}, G, "missing k_norm");
    expect_load(&(edit){.drop_tensor = "dec.token_embd.weight"}, G, "missing embedding");
    expect_load(&(edit){.drop_tensor = "frontend.window"}, OK, "no baked window (optional)");
    expect_load(&(edit){.longer = "frontend.window"}, G, "window of 401");
    expect_load(&(edit){.longer = "enc.proj.weight"}, G, "proj to hidden + 1");
    expect_load(&(edit){.longer = "dec.blocks.0.ffn.up.weight"}, G, "up of I + 1");
    expect_load(&(edit){.longer = "dec.token_embd.weight"}, G, "embedding of V + 1");
    expect_load(&(edit){.to_f16 = "enc.proj.bias"}, G, "F16 bias (F32 class)");
    expect_load(&(edit){.to_f16 = "dec.output_norm.weight"}, G, "F16 norm (F32 class)");
    expect_load(&(edit){.to_f16 = "frontend.mel_filterbank"}, G, "F16 filterbank");
    expect_load(&(edit){.to_q8 = "dec.blocks.0.norm_attn.weight"}, G, "Q8_0 norm (F32 class)");
    expect_load(&(edit){.to_f16 = "enc.blocks.0.conv.depthwise.weight"}, OK, "F16 depthwise");
    expect_load(&(edit){.to_q8 = "dec.blocks.0.ffn.gate.weight"}, G, "gate / up types differ");
    expect_load(&(edit){.to_q8 = "enc.proj.weight"}, OK, "Q8_0 projection");
    /* keys: required, types, cross-field checks */
    expect_load(&(edit){.drop_kv = EK "pos_emb_max_len"}, G, "no pos_emb_max_len");
    expect_load(&(edit){.drop_kv = DK "rope_theta"}, G, "no rope_theta");
    expect_load(&(edit){.drop_kv = DK "max_position_embeddings"}, G, "no max positions");
    expect_load(&(edit){.drop_kv = PK "audio_locator_id"}, G, "no audio_locator_id");
    expect_load(&(edit){.drop_kv = "stt.frontend.pad_mode"}, G, "no pad_mode");
    expect_load(&(edit){.drop_kv = "tokenizer.ggml.eos_token_id"}, G, "no EOS");
    expect_load(&(edit){.drop_kv = "tokenizer.ggml.merges"}, G, "no merges");
    expect_load(&(edit){.drop_kv = DK "hidden_act"}, OK, "hidden_act is not read");
    expect_load(&(edit){.drop_kv = PK "output_dim"}, OK, "output_dim falls back");
    expect_load(&(edit){.kv_i32 = DK "n_layers"}, G, "INT32 n_layers");
    expect_load(&(edit){.kv_i32 = PK "audio_locator_id"}, OK, "INT32 audio_locator_id");
    expect_load(&(edit){.kv_i32 = PK "output_dim"}, OK, "INT32 output_dim falls back");
    expect_load(&(edit){.kv_u32 = PK "output_dim", .kv_u32_value = 32}, G, "output_dim != hidden");
    expect_load(&(edit){.kv_u32 = DK "n_kv_heads", .kv_u32_value = 3}, G, "4 heads / 3 kv");
    expect_load(&(edit){.kv_u32 = DK "head_dim", .kv_u32_value = 8}, G, "heads · head_dim");
    expect_load(&(edit){.kv_u32 = EK "subsampling_factor", .kv_u32_value = 4}, G, "factor 4");
    expect_load(&(edit){.kv_u32 = "stt.frontend.num_mels", .kv_u32_value = 80}, G, "80 mels");
    expect_load(&(edit){.kv_u32 = DK "vocab_size", .kv_u32_value = 1000}, G, "token count");
    expect_load(&(edit){.kv_u32 = PK "audio_locator_id", .kv_u32_value = 5000}, G,
                "locator outside the vocabulary");
    /* the placeholder count check at load: the locator is a prompt token */
    expect_load(&(edit){.kv_u32 = PK "audio_locator_id", .kv_u32_value = 732}, G,
                "locator = <|im_start|>");
    expect_load(&(edit){.kv_str = "stt.frontend.normalize", .kv_str_value = "all_features"}, G,
                "normalize");
    expect_load(&(edit){.kv_str = "stt.frontend.pad_mode", .kv_str_value = "constant"}, G,
                "constant padding");
    expect_load(&(edit){.kv_str = DK "n_heads", .kv_str_value = "4"}, G, "string n_heads");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "llama"},
                TRANSCRIBE_ERR_NOT_IMPLEMENTED, "llama tokenizer");
    expect_load(&(edit){.kv_str = "general.architecture", .kv_str_value = "canary"}, G,
                "canary keys missing");
#undef EK
#undef DK
#undef PK
}

/* ---- forced truncation: EOS never produced ---- */

static void truncation(void) {
    /* EOS = <|endoftext|> (731): the chain's <|im_end|> is plain text now */
    CHECK(rewrite(g_edit_path,
                  &(edit){.kv_u32 = "tokenizer.ggml.eos_token_id", .kv_u32_value = 731}));
    struct transcribe_session *s = open_session(g_edit_path, 0);
    if (!s) return;
    transcribe_status st = transcribe_run(s, g_pcm, g_n, NULL);
    CHECK_MSG(st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "%s", transcribe_status_string(st));
    CHECK(transcribe_was_truncated(s));
    const char *t = transcribe_full_text(s);
    CHECK_MSG(t && strncmp(t, TEXT, strlen(TEXT)) == 0 && strlen(t) > strlen(TEXT), "'%s'",
              t ? t : "(null)");
    /* batched: the truncated row keeps its text too */
    const float *pcm[2] = {g_pcm, g_pcm};
    const int n[2] = {g_n, 257};
    CHECK(transcribe_run_batch(s, pcm, n, 2, NULL) == TRANSCRIBE_OK);
    for (int i = 0; i < 2; i++) {
        CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        const char *bt = transcribe_batch_full_text(s, i);
        CHECK(bt && strcmp(bt, t) == 0);
    }
    transcribe_session_free(s);
}

int main(void) {
    snprintf(g_edit_path, sizeof g_edit_path, "%s/canary_qwen_edit_%d.gguf", TR_BINARY_DIR,
             (int)getpid());
    if (transcribe_audio_load_file(DATA "/clip.wav", 16000, &g_pcm, &g_n) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot read clip.wav\n");
        return 1;
    }
    caps_and_gates();
    prompt_too_long();
    batch_rows();
    long_audio();
    splice_check();
    bad_files();
    truncation();
    remove(g_edit_path);
    transcribe_audio_free(g_pcm);
    return TEST_DONE();
}
