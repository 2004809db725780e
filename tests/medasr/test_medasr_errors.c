/* MedASR bad input: copies of a tiny synthetic file (ma_synth.h) with one key missing,
 * mistyped or out of range, one tensor missing, misshaped or of a type its slot refuses
 * (docs/formats/medasr.md §2–§3, §9) must fail to load with a specific status; runs refuse
 * input with no encoder frame (under 2 320 samples, with the reason in the session's last
 * error), a language, task or run extension the model lacks, and honour abort before and in
 * the middle of the run; input past max_pos_emb runs whole with one warning; capabilities say
 * what the family does; token / word / segment rows; a batch gives each utterance its
 * single-run result and its own status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "ma_synth.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"

static char g_base[512];

typedef tr_gguf_edit edit;

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(g_base, e, want, what);
}

#define E  "stt.medasr.encoder."
#define FE "stt.frontend."

static void bad_files(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    expect_load(&(edit){0}, OK, "unchanged copy");
    expect_load(&(edit){.extra_tensor = true}, OK, "extra tensor ignored");
    /* docs/formats/medasr.md §2.2–§2.5: every required key, missing and mistyped */
    static const char *const required[] = {
        E "n_layers",
        E "hidden",
        E "n_heads",
        E "n_kv_heads",
        E "head_dim",
        E "intermediate",
        E "hidden_act",
        E "conv_kernel",
        E "conv_residual_w0",
        E "conv_residual_w1",
        E "ff_residual_w0",
        E "ff_residual_w1",
        E "layer_norm_eps",
        E "max_pos_emb",
        E "batch_norm_momentum",
        E "rope_theta",
        E "rope_type",
        E "num_mel_bins",
        E "sub_kernel",
        E "sub_stride",
        E "sub_channels",
        E "sub_n_layers",
        "stt.medasr.ctc.vocab_size",
        "stt.medasr.ctc.blank_id",
        FE "type",
        FE "sample_rate",
        FE "num_mels",
        FE "n_fft",
        FE "win_length",
        FE "hop_length",
        FE "window",
        FE "normalize",
        FE "pad_mode",
        FE "mel_norm",
        FE "log_clamp_min",
        FE "mel_lower_hz",
        FE "mel_upper_hz",
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
    };
    tr_expect_required_keys(g_base, required, sizeof required / sizeof required[0], NULL);
    /* optional keys keep their type */
    static const char *const optional[] = {"stt.variant", "general.languages",
                                           "stt.capability.translate", "stt.capability.streaming",
                                           "tokenizer.ggml.scores"};
    tr_expect_optional_keys(g_base, optional, sizeof optional / sizeof optional[0]);
    /* values the family cannot run (docs/formats/medasr.md §9) */
    static const tr_kv_u32 u32s[] = {
        {E "n_heads", 3},  /* does not divide 32 */
        {E "n_heads", 32}, /* head width 1: odd, no rotary pairs */
        {E "sub_stride", 3},
        {E "sub_n_layers", 3},
        {E "n_layers", 3}, /* a block the file lacks */
        {E "hidden", 16},  /* disagrees with every tensor */
        {E "intermediate", 48},
        {E "conv_kernel", 5},
        {E "sub_kernel", 3},
        {E "sub_channels", 8},
        {E "num_mel_bins", 8}, /* != stt.frontend.num_mels */
        {FE "num_mels", 8},
        {FE "n_fft", 500},      /* not a power of two */
        {FE "win_length", 600}, /* wider than n_fft */
        {FE "win_length", 256}, /* disagrees with the window */
        {FE "hop_length", 0},
        {"stt.medasr.ctc.vocab_size", 8}, /* head width */
        {"stt.medasr.ctc.blank_id", 16},  /* >= vocab_size */
    };
    tr_expect_refused_u32(g_base, u32s, sizeof u32s / sizeof u32s[0]);
    expect_load(&(edit){.kv_str = E "rope_type", .kv_str_value = "yarn"}, G, "rope_type yarn");
    expect_load(&(edit){.kv_str = E "hidden_act", .kv_str_value = "gelu"}, G, "hidden_act gelu");
    expect_load(&(edit){.kv_f32 = FE "log_clamp_min", .kv_f32_value = 0.0f}, G, "clamp 0");
    expect_load(&(edit){.kv_f32 = E "layer_norm_eps", .kv_f32_value = -1.0f}, G, "eps < 0");
    expect_load(&(edit){.kv_f32 = E "ff_residual_w0", .kv_f32_value = NAN}, G, "NaN residual");
    expect_load(&(edit){.kv_str = "general.architecture", .kv_str_value = "medasr2"},
                TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "architecture medasr2");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "spm"},
                TRANSCRIBE_ERR_NOT_IMPLEMENTED, "tokenizer model spm");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "gpt2"}, G,
                "tokenizer model gpt2");
    expect_load(&(edit){.short_arr = "tokenizer.ggml.scores"}, G, "scores one short");
    expect_load(&(edit){.short_arr = "tokenizer.ggml.token_type"}, G, "token types one short");
    expect_load(&(edit){.short_arr = "tokenizer.ggml.tokens"}, G, "tokens one short of scores");
    /* docs/formats/medasr.md §3: tensors missing, misshaped, of a refused type */
    static const char *const tensors[] = {
        "frontend.mel_filterbank",
        "frontend.window",
        "enc.subsampling.dense_0.weight",
        "enc.subsampling.dense_0.bias",
        "enc.subsampling.conv_0.weight",
        "enc.subsampling.conv_0.bias",
        "enc.subsampling.conv_1.weight",
        "enc.subsampling.conv_1.bias",
        "enc.subsampling.dense_1.weight",
        "enc.subsampling.dense_1.bias",
        "enc.out_norm.weight",
        "ctc.proj.weight",
        "ctc.proj.bias",
        "enc.blocks.0.norm_ff1.weight",
        "enc.blocks.0.ff1_up.weight",
        "enc.blocks.1.ff1_down.weight",
        "enc.blocks.0.norm_attn.weight",
        "enc.blocks.0.attn_q.weight",
        "enc.blocks.1.attn_k.weight",
        "enc.blocks.0.attn_v.weight",
        "enc.blocks.1.attn_o.weight",
        "enc.blocks.0.norm_conv.weight",
        "enc.blocks.0.conv_pointwise1.weight",
        "enc.blocks.1.conv_depthwise.weight",
        "enc.blocks.0.conv_bn.weight",
        "enc.blocks.1.conv_bn.bias",
        "enc.blocks.0.conv_bn.running_mean",
        "enc.blocks.1.conv_bn.running_var",
        "enc.blocks.0.conv_pointwise2.weight",
        "enc.blocks.0.norm_ff2.weight",
        "enc.blocks.1.ff2_up.weight",
        "enc.blocks.0.ff2_down.weight",
        "enc.blocks.1.norm_post.weight",
    };
    tr_expect_required_tensors(g_base, tensors, sizeof tensors / sizeof tensors[0]);
    expect_load(&(edit){.to_f16 = "enc.blocks.0.norm_attn.weight"}, G, "F16 norm");
    expect_load(&(edit){.to_f16 = "enc.blocks.0.conv_bn.running_var"}, G, "F16 batch norm");
    expect_load(&(edit){.to_f16 = "frontend.mel_filterbank"}, G, "F16 filterbank");
    expect_load(&(edit){.to_f16 = "ctc.proj.bias"}, G, "F16 head bias");
    expect_load(&(edit){.to_f16 = "enc.blocks.1.conv_depthwise.weight"}, OK, "F16 depthwise");
    expect_load(&(edit){.to_f16 = "ctc.proj.weight"}, OK, "F16 head");
    expect_load(&(edit){.to_f16 = "enc.blocks.0.attn_q.weight"}, OK, "F16 linear");
    expect_load(&(edit){.negate = "enc.blocks.1.conv_bn.running_var"}, G, "negative variance");
}

/* ---- runs ---- */

static int g_warns;
static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_WARN && strstr(msg, "medasr") && strstr(msg, "positions"))
        g_warns++;
}

static float g_prog[64];
static int g_n_prog;
static void on_progress(float f, void *user) {
    (void)user;
    if (g_n_prog < 64) g_prog[g_n_prog++] = f;
}

static bool abort_after(void *user) {
    int *calls = user;
    return ++*calls > 2;
}

static float *tone(int n) {
    return tr_synth_chirp(n, 9);
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             const char *lang) {
    return tr_test_run_lang(s, pcm, n, lang);
}

/* Token rows on 40 ms frames, words and the segment around them (docs/formats/medasr.md §7). */
static void rows(struct transcribe_session *s) {
    const int nt = transcribe_n_tokens(s), nw = transcribe_n_words(s);
    CHECK(nt >= 1 && nw >= 1 && transcribe_n_segments(s) == 1);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(!strcmp(seg.text, transcribe_full_text(s)));
    int64_t last = -1;
    for (int i = 0; i < nt; i++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        CHECK(transcribe_get_token(s, i, &t) == TRANSCRIBE_OK);
        CHECK(t.t0_ms % 40 == 0 && t.t1_ms == t.t0_ms + 40 && t.t0_ms > last);
        CHECK(t.id > 3 && t.word_index >= 0 && t.word_index < nw);
        if (i == 0) CHECK(t.t0_ms == seg.t0_ms);
        if (i == nt - 1) CHECK(t.t1_ms == seg.t1_ms);
        last = t.t0_ms;
    }
}

static void runs(void) {
    const int n = 3 * 16000;
    float *pcm = tone(n);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(g_base, NULL, &sp, &s) == TRANSCRIBE_OK);
    if (!s || !pcm) {
        transcribe_session_free(s);
        free(pcm);
        return;
    }
    /* capabilities (docs/formats/medasr.md §8) */
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);
    CHECK(c.native_sample_rate == 16000 && c.n_languages == 1 && !strcmp(c.languages[0], "en"));
    CHECK(!c.supports_language_detect && !c.supports_translate);
    CHECK_MSG(c.max_audio_ms == 4000, "max_audio_ms %lld", (long long)c.max_audio_ms);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!strcmp(transcribe_model_arch_string(m), "medasr"));

    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    char *text = strdup(transcribe_full_text(s));
    printf("text: '%s'\n", text);
    CHECK(text && text[0] != ' ' && strlen(text) > 0);
    const char *raw = transcribe_raw_text(s); /* the text with its leading space, if any */
    CHECK(!strcmp(raw, text) || (raw[0] == ' ' && !strcmp(raw + 1, text)));
    rows(s);
    CHECK(run(s, pcm, n, "en") == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), text));
    /* progress: after the features, after the subsampler and every block but the last, the end */
    g_n_prog = 0;
    transcribe_set_progress_callback(s, on_progress, NULL);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    transcribe_set_progress_callback(s, NULL, NULL);
    CHECK_MSG(g_n_prog == 4 && g_prog[3] == 1.0f, "%d progress reports", g_n_prog);
    for (int i = 1; i < g_n_prog; i++) CHECK(g_prog[i] > g_prog[i - 1]);
    /* every granularity gets the same token rows */
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK && transcribe_n_tokens(s) >= 1);

    /* refused requests */
    CHECK(run(s, pcm, n, "fr") == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "de";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    struct transcribe_ext ext = {sizeof ext, 1};
    transcribe_run_params_init(&p);
    p.family = &ext;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_INVALID_ARG);

    /* too short: one encoder frame needs 13 mel frames = 2 320 samples (docs/formats/medasr.md
     * §5.1); the reason names the minimum */
    CHECK(run(s, pcm, 399, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, pcm, 2319, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    const char *why = transcribe_session_last_error(s);
    CHECK_MSG(why && strstr(why, "2320"), "reason '%s'", why ? why : "(null)");
    CHECK(run(s, pcm, 2320, NULL) == TRANSCRIBE_OK);

    /* past max_pos_emb (100 frames = 4 s here): the whole input with one warning, no gate */
    const int nl = 5 * 16000;
    float *lng = tone(nl);
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    g_warns = 0;
    transcribe_log_set(on_log, NULL);
    CHECK(lng && transcribe_run(s, lng, nl, &p) == TRANSCRIBE_OK);
    transcribe_log_set(NULL, NULL);
    CHECK(g_warns == 1);
    struct transcribe_token last;
    transcribe_token_init(&last);
    int nt = transcribe_n_tokens(s);
    CHECK(nt > 0 && transcribe_get_token(s, nt - 1, &last) == TRANSCRIBE_OK);
    printf("5 s unsplit: %d tokens, last at %lld ms\n", nt, (long long)last.t0_ms);
    /* with chunking on auto the dispatcher splits it at max_audio_ms */
    transcribe_run_params_init(&p);
    g_warns = 0;
    transcribe_log_set(on_log, NULL);
    CHECK(lng && transcribe_run(s, lng, nl, &p) == TRANSCRIBE_OK);
    transcribe_log_set(NULL, NULL);
    CHECK(g_warns == 0);
    free(lng);

    /* abort before the run and between blocks (mid-run) */
    int calls = 0;
    transcribe_set_abort_callback(s, abort_after, &calls);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK_MSG(transcribe_was_aborted(s) && calls == 3, "calls %d", calls);
    calls = 100;
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), text));

    /* a batch: each utterance its single-run result and status */
    const int half = n / 2;
    const float *bp[3] = {pcm, pcm, pcm + half};
    const int bn[3] = {n, 2000, n - half};
    CHECK(run(s, pcm + half, n - half, NULL) == TRANSCRIBE_OK);
    char *single = strdup(transcribe_full_text(s));
    transcribe_run_params_init(&p);
    (void)transcribe_run_batch(s, bp, bn, 3, &p); /* per-utterance statuses below */
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(!strcmp(transcribe_batch_full_text(s, 0), text));
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    CHECK(single && !strcmp(transcribe_batch_full_text(s, 2), single));
    /* abort in a batch: every utterance ABORTED */
    calls = 0;
    transcribe_set_abort_callback(s, abort_after, &calls);
    (void)transcribe_run_batch(s, bp, bn, 3, &p);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    free(single);
    free(text);
    transcribe_session_free(s);
    free(pcm);
}

int main(void) {
    snprintf(g_base, sizeof g_base, "%s/ma_errors_%d.gguf", TR_BINARY_DIR, (int)getpid());
    ma_synth_cfg c = ma_synth_default();
    CHECK(ma_synth_write(g_base, &c));
    bad_files();
    runs();
    remove(g_base);
    return TEST_DONE();
}
