/* Voxtral bad input and contracts on a tiny file this test writes (vx_synth.h):
 * capabilities and session limits; run gates (NULL / empty audio, language,
 * translation targets, timestamps); the prompt and its placeholder check; a prompt
 * longer than the context (the exact docs/formats/voxtral.md §6.5 gate); audio too
 * short (one sample works) and too long; abort before, inside the encoder and
 * mid-decode; batches equal to single runs with mixed row statuses; long audio
 * through the library's split path; forced truncation keeping its text; F16 and
 * Q8_0 files; rewritten files (every required key missing or mistyped, optional
 * keys mistyped, cross-field checks, misshaped and mistyped tensors, tokenizer
 * problems) each failing with its status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "models/voxtral/voxtral.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"
#include "vx_synth.h"

static char g_ref[512], g_edit[512];
static float *g_pcm; /* 40 s of a chirp with noise */
static int g_n;
#define SR 16000

static struct transcribe_session *open_session(const char *path, int n_ctx) {
    return tr_test_open(path, 2, n_ctx, TRANSCRIBE_KV_TYPE_AUTO);
}

static const char *text_of(struct transcribe_session *s) {
    const char *t = transcribe_full_text(s);
    return t ? t : "(null)";
}

/* ---- capabilities, limits, run gates ---- */

static void caps_and_gates(void) {
    struct transcribe_session *s = open_session(g_ref, 0);
    if (!s) return;
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000);
    CHECK(c.n_languages == 8 && strcmp(c.languages[0], "en") == 0 &&
          strcmp(c.languages[7], "hi") == 0);
    CHECK(c.supports_translate && c.n_translate_target_languages == 8);
    CHECK(!c.supports_language_detect && c.supports_spec_decode);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    /* docs/formats/voxtral.md §8: (131072 − 16 − 448) · 30000 / 375 */
    CHECK_MSG(c.max_audio_ms == 10448640, "max_audio_ms %lld", (long long)c.max_audio_ms);
    CHECK(strcmp(transcribe_model_arch_string(m), "voxtral") == 0);
    CHECK(strcmp(transcribe_model_variant_string(m), "voxtral-mini-3b-2507") == 0);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM));
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 131072 && lim.effective_max_audio_ms == 10448640);
    /* 2 layers · 2 (K, V) · 2 kv heads · 32 · 2 bytes (F16) per position */
    CHECK_MSG(lim.max_kv_bytes == (int64_t)131072 * 2 * 2 * 2 * 32 * 2, "kv bytes %lld",
              (long long)lim.max_kv_bytes);

    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    CHECK(transcribe_run(s, NULL, 1000, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, g_pcm, 0, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, g_pcm, -5, &p) == TRANSCRIBE_ERR_INVALID_ARG);
    /* one sample is a whole (padded) chunk: docs/formats/voxtral.md §4 */
    CHECK(transcribe_run(s, g_pcm, 1, &p) == TRANSCRIBE_OK);
    CHECK_MSG(strcmp(text_of(s), VS_TEXT_T) == 0, "'%s'", text_of(s));
    CHECK(transcribe_n_segments(s) == 1);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_run(s, g_pcm, SR * 11, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(seg.t0_ms == 0 && seg.t1_ms == 11000 && strcmp(seg.text, VS_TEXT_T) == 0);
    CHECK(!transcribe_was_truncated(s));
    p.language = "xx";
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    p.language = "en";
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_OK);
    CHECK(strcmp(text_of(s), VS_TEXT_T) == 0);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "de";
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_OK);
    CHECK_MSG(strcmp(text_of(s), VS_TEXT_X) == 0, "translate: '%s'", text_of(s));
    p.target_language = NULL; /* English */
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_OK);
    CHECK(strcmp(text_of(s), VS_TEXT_X) == 0);
    p.target_language = "ja";
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    /* speculative decoding gives greedy's text */
    transcribe_run_params_init(&p);
    for (int k = 1; k <= 8; k *= 2) {
        p.spec_k_drafts = k;
        CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_OK);
        CHECK_MSG(strcmp(text_of(s), VS_TEXT_T) == 0, "spec_k %d: '%s'", k, text_of(s));
    }
    transcribe_session_free(s);
}

/* ---- prompt and placeholder check (internal API) ---- */

static void prompt_and_splice(void) {
    gguf_file *g = NULL;
    vx_model *m = NULL;
    if (tr_gguf_open(g_ref, &g) == TRANSCRIBE_OK) {
        tr_load_ctx lc = {.path = g_ref, .gguf = g};
        CHECK(tr_vx_model_load(&lc, &m) == TRANSCRIBE_OK);
    }
    if (!m) {
        CHECK(false);
        tr_gguf_close(g);
        return;
    }
    CHECK(tr_vx_n_chunks(m, 1) == 1 && tr_vx_n_chunks(m, 480000) == 1 &&
          tr_vx_n_chunks(m, 480001) == 2);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    int32_t *ids = NULL;
    int n = 0;
    CHECK(tr_vx_build_prompt(m, &p, 375, &ids, &n) == TRANSCRIBE_OK && n == 380);
    CHECK(ids && ids[0] == VS_BOS && ids[1] == VS_INST && ids[2] == VS_BEGIN_AUDIO &&
          ids[3] == VS_AUDIO && ids[377] == VS_AUDIO && ids[378] == VS_INST_END &&
          ids[379] == VS_TRANSCRIBE);
    CHECK(tr_vx_prompt_extra(m, &p) == 5);
    const int d = m->lm.d_model;
    float *audio = calloc((size_t)375 * d, sizeof(float)), *out = malloc(sizeof(float) * n * d);
    CHECK(tr_vx_splice(m, ids, n, audio, 375, out) == TRANSCRIBE_OK);
    CHECK(out[(size_t)3 * d] == 0.0f && out[(size_t)377 * d + 5] == 0.0f);
    CHECK(tr_vx_splice(m, ids, n, audio, 374, out) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(tr_vx_splice(m, ids, n, audio, 376, out) == TRANSCRIBE_ERR_INVALID_ARG);
    ids[200] = VS_PAD; /* two runs */
    ids[n - 1] = VS_AUDIO;
    CHECK(tr_vx_splice(m, ids, n, audio, 375, out) == TRANSCRIBE_ERR_INVALID_ARG);
    free(ids);
    /* "lang:en" → qwen2 pre-tokens "lang" + ":en" → lang, ':', 'e', 'n' */
    p.language = "en";
    CHECK(tr_vx_build_prompt(m, &p, 2, &ids, &n) == TRANSCRIBE_OK);
    CHECK_MSG(n == 2 + 5 + 4 && ids[5] == VS_INST_END && ids[n - 1] == VS_TRANSCRIBE, "n %d", n);
    free(ids);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "fr";
    CHECK(tr_vx_build_prompt(m, &p, 2, &ids, &n) == TRANSCRIBE_OK);
    CHECK(ids && ids[n - 1] == VS_INST_END && ids[5] != VS_INST_END && n > 10);
    CHECK(tr_vx_prompt_extra(m, &p) == n - 2);
    free(ids);
    free(audio);
    free(out);
    tr_vx_model_free(m);
    tr_gguf_close(g);
}

/* ---- the docs/formats/voxtral.md §6.5 gate: prompts longer than the context ---- */

static void prompt_too_long(void) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    /* one chunk: T_prompt 380, + 448 = 828 */
    for (int dlt = 0; dlt < 2; dlt++) {
        struct transcribe_session *s = open_session(g_ref, 828 - dlt);
        if (!s) continue;
        transcribe_status st = transcribe_run(s, g_pcm, SR, &p);
        CHECK_MSG(st == (dlt ? TRANSCRIBE_ERR_INPUT_TOO_LONG : TRANSCRIBE_OK), "n_ctx %d: %s",
                  828 - dlt, transcribe_status_string(st));
        transcribe_session_free(s);
    }
    /* with a language hint: 4 more ids */
    struct transcribe_session *s = open_session(g_ref, 831);
    if (s) {
        p.language = "en";
        CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        p.language = NULL;
        CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_OK);
        /* too long: two chunks need 755 + 448 */
        CHECK(transcribe_run(s, g_pcm, 480001, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        transcribe_session_free(s);
    }
    s = open_session(g_ref, 16); /* smaller than the prompt alone */
    if (s) {
        CHECK(transcribe_run(s, g_pcm, SR, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        transcribe_session_free(s);
    }
}

/* ---- abort ---- */

static int g_polls;
static bool abort_at(void *user) {
    return ++g_polls >= *(const int *)user;
}

static void aborts(void) {
    struct transcribe_session *s = open_session(g_ref, 0);
    if (!s) return;
    int limit = 1;
    transcribe_set_abort_callback(s, abort_at, &limit);
    /* polls: before the run, before each encoder chunk, after the encoder, then
     * before every decode step */
    for (limit = 1; limit <= 3; limit++) {
        g_polls = 0;
        CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_ERR_ABORTED);
        CHECK(transcribe_was_aborted(s));
    }
    limit = 7; /* mid-decode: a proper prefix of the text is kept */
    g_polls = 0;
    CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_ERR_ABORTED);
    const char *part = text_of(s);
    CHECK_MSG(part[0] && strlen(part) < strlen(VS_TEXT_T) &&
                  strncmp(part, VS_TEXT_T, strlen(part)) == 0,
              "partial '%s'", part);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_OK);
    transcribe_session_free(s);
}

/* ---- batches: rows equal single runs, keep their own statuses ---- */

static void batch_rows(void) {
    struct transcribe_session *s = open_session(g_ref, 1300); /* 2 chunks: 755 + 448 fit */
    if (!s) return;
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    const float *pcm[5] = {g_pcm, g_pcm, NULL, g_pcm, g_pcm + 7};
    const int n[5] = {SR * 3, SR * 31, 1000, SR * 61, 5};
    char *single[5] = {0};
    transcribe_status sst[5];
    for (int i = 0; i < 5; i++) {
        sst[i] = transcribe_run(s, pcm[i], n[i], &p);
        if (sst[i] == TRANSCRIBE_OK) single[i] = strdup(text_of(s));
    }
    CHECK(sst[0] == TRANSCRIBE_OK && sst[1] == TRANSCRIBE_OK && sst[4] == TRANSCRIBE_OK);
    CHECK(sst[2] == TRANSCRIBE_ERR_INVALID_ARG && sst[3] == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(transcribe_run_batch(s, pcm, n, 5, &p) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 5);
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(transcribe_batch_status(s, i) == sst[i], "row %d: %s", i,
                  transcribe_status_string(transcribe_batch_status(s, i)));
        if (!single[i]) continue;
        const char *t = transcribe_batch_full_text(s, i);
        CHECK_MSG(t && strcmp(t, single[i]) == 0, "row %d: '%s' vs '%s'", i, t ? t : "(null)",
                  single[i]);
        free(single[i]);
    }
    /* one language for the whole batch */
    p.language = "fr";
    const float *pcm2[2] = {g_pcm, g_pcm};
    const int n2[2] = {SR, SR * 2};
    CHECK(transcribe_run_batch(s, pcm2, n2, 2, &p) == TRANSCRIBE_OK);
    for (int i = 0; i < 2; i++) {
        const char *t = transcribe_batch_full_text(s, i);
        CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK && t && strcmp(t, VS_TEXT_T) == 0);
    }
    transcribe_session_free(s);
}

/* ---- long audio: the library splits it (bounded output, no long form) ---- */

static void long_audio(void) {
    struct transcribe_session *s = open_session(g_ref, 0);
    if (!s) return;
    const int n = SR * 100;
    float *pcm = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) pcm[i] = g_pcm[i % g_n];
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    CHECK(transcribe_run_would_chunk(s, n, &p));
    transcribe_status st = transcribe_run(s, pcm, n, &p);
    CHECK_MSG(st == TRANSCRIBE_OK, "long audio: %s", transcribe_status_string(st));
    CHECK(transcribe_was_chunked(s) && transcribe_n_pieces(s) >= 2);
    const int ns = transcribe_n_segments(s);
    CHECK_MSG(ns == transcribe_n_pieces(s), "%d segments, %d pieces", ns, transcribe_n_pieces(s));
    int64_t last = -1;
    for (int i = 0; i < ns; i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, i, &seg) == TRANSCRIBE_OK);
        CHECK(seg.t0_ms >= last && seg.t1_ms > seg.t0_ms && seg.t1_ms <= 100000);
        CHECK(seg.text && strcmp(seg.text, VS_TEXT_T) == 0);
        last = seg.t1_ms;
    }
    free(pcm);
    transcribe_session_free(s);
}

/* ---- rewritten files ---- */

typedef tr_gguf_edit edit;

static bool rewrite(const char *dst, const edit *e) {
    return tr_gguf_edit_file(g_ref, dst, e);
}

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(g_ref, e, want, what);
}

#define EK "stt.voxtral.encoder."
#define PK "stt.voxtral.projector."
#define DK "stt.voxtral.decoder."
#define FK "stt.frontend."

/* docs/formats/voxtral.md §2: every required key */
static const char *const k_required[] = {
    "general.architecture",
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    EK "n_layers",
    EK "d_model",
    EK "n_heads",
    EK "head_dim",
    EK "ffn_dim",
    EK "num_mel_bins",
    EK "max_source_positions",
    EK "activation",
    PK "downsample_factor",
    PK "input_dim",
    PK "hidden_act",
    DK "n_layers",
    DK "hidden_size",
    DK "intermediate_size",
    DK "n_heads",
    DK "n_kv_heads",
    DK "head_dim",
    DK "hidden_act",
    DK "rms_norm_eps",
    DK "rope_theta",
    DK "max_position_embeddings",
    DK "vocab_size",
    "stt.voxtral.audio_token_id",
    FK "type",
    FK "num_mels",
    FK "sample_rate",
    FK "n_fft",
    FK "win_length",
    FK "hop_length",
    FK "window",
    FK "normalize",
    FK "dither",
    FK "pre_emphasis",
    FK "f_min",
    FK "f_max",
};

/* present optional keys whose type is still checked */
static const char *const k_typed_optional[] = {
    "stt.variant",
    "general.languages",
    "stt.capability.lang_detect",
    "stt.capability.translate",
    "stt.translation.target_languages",
    DK "tie_word_embeddings",
    FK "pad_mode",
    FK "center",
    FK "mel_norm",
    FK "chunk_length",
    FK "n_samples",
    FK "nb_max_frames",
};

static void bad_keys(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    char what[160];
    expect_load(&(edit){0}, OK, "unchanged copy");
    for (size_t i = 0; i < sizeof k_required / sizeof k_required[0]; i++) {
        const char *k = k_required[i];
        snprintf(what, sizeof what, "missing %s", k);
        expect_load(&(edit){.drop_kv = k}, G, what);
        snprintf(what, sizeof what, "mistyped %s", k);
        if (strncmp(k, "tokenizer.", 10) == 0 &&
            strstr(k, "_token_id")) { /* UINT32 or INT32 (docs/formats/voxtral.md §2.2) */
            expect_load(&(edit){.retype_kv = k}, OK, what);
            expect_load(&(edit){.kv_str = k, .kv_str_value = "1"}, G, what);
        } else {
            expect_load(&(edit){.retype_kv = k}, G, what);
        }
    }
    for (size_t i = 0; i < sizeof k_typed_optional / sizeof k_typed_optional[0]; i++) {
        const char *k = k_typed_optional[i];
        snprintf(what, sizeof what, "missing optional %s", k);
        expect_load(&(edit){.drop_kv = k}, OK, what);
        snprintf(what, sizeof what, "mistyped optional %s", k);
        expect_load(&(edit){.retype_kv = k}, G, what);
    }
    expect_load(&(edit){.drop_kv = "tokenizer.ggml.merges"}, OK, "no merges: loads");
    expect_load(&(edit){.drop_kv = "tokenizer.ggml.pre"}, OK, "no pre-tokenizer");
    /* cross-field checks (docs/formats/voxtral.md §2.6) */
    expect_load(&(edit){.kv_u32 = EK "n_heads", .kv_u32_value = 3}, G, "d_model % heads");
    expect_load(&(edit){.kv_u32 = EK "head_dim", .kv_u32_value = 8}, G, "encoder head_dim");
    expect_load(&(edit){.kv_u32 = EK "n_layers", .kv_u32_value = 0}, G, "zero layers");
    expect_load(&(edit){.kv_u32 = PK "input_dim", .kv_u32_value = 64}, G, "input_dim");
    expect_load(&(edit){.kv_u32 = PK "downsample_factor", .kv_u32_value = 7}, G,
                "positions % downsample");
    expect_load(&(edit){.kv_u32 = DK "n_kv_heads", .kv_u32_value = 3}, G, "4 heads / 3 kv");
    expect_load(&(edit){.kv_u32 = DK "vocab_size", .kv_u32_value = 1000}, G, "token count");
    expect_load(&(edit){.kv_u32 = "stt.voxtral.audio_token_id", .kv_u32_value = 100000}, G,
                "audio id outside the vocabulary");
    expect_load(&(edit){.kv_u32 = "stt.voxtral.audio_token_id", .kv_u32_value = VS_INST}, G,
                "audio id = [INST]");
    expect_load(&(edit){.kv_u32 = "tokenizer.ggml.bos_token_id", .kv_u32_value = 100000}, G,
                "BOS outside the vocabulary");
    expect_load(&(edit){.kv_u32 = FK "num_mels", .kv_u32_value = 80}, G, "80 mels");
    expect_load(&(edit){.kv_str = EK "activation", .kv_str_value = "relu"}, G, "relu encoder");
    expect_load(&(edit){.kv_str = PK "hidden_act", .kv_str_value = "silu"}, G, "silu projector");
    expect_load(&(edit){.kv_str = DK "hidden_act", .kv_str_value = "gelu"}, G, "gelu LM");
    expect_load(&(edit){.kv_str = DK "hidden_act", .kv_str_value = "swish"}, OK, "swish LM");
    expect_load(&(edit){.kv_str = FK "type", .kv_str_value = "kaldi_fbank_lfr"}, G, "fbank");
    expect_load(&(edit){.kv_str = FK "normalize", .kv_str_value = "per_feature"}, G, "per_feature");
    expect_load(&(edit){.kv_str = FK "pad_mode", .kv_str_value = "constant"}, G, "constant pad");
    /* the realtime sibling has its own loader, which finds none of its keys here */
    expect_load(&(edit){.kv_str = "general.architecture", .kv_str_value = "voxtral_realtime"}, G,
                "the realtime sibling");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "llama"},
                TRANSCRIBE_ERR_NOT_IMPLEMENTED, "llama tokenizer");
}

static void bad_tensors(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    static const char *const must[] = {
        "enc.conv.0.weight",
        "enc.conv.1.bias",
        "enc.pos_emb.weight",
        "enc.ln_post.weight",
        "enc.ln_post.bias",
        "enc.blocks.1.attn.q.bias",
        "enc.blocks.0.attn.k.weight",
        "enc.blocks.1.ffn.fc2.weight",
        "proj.linear_1.weight",
        "proj.linear_2.weight",
        "dec.token_embd.weight",
        "dec.output_norm.weight",
        "dec.output.weight",
        "dec.blocks.1.attn.q.weight",
        "dec.blocks.0.attn.o.weight",
        "dec.blocks.1.ffn.down.weight",
        "dec.blocks.0.norm_ffn.weight",
    };
    char what[160];
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
        snprintf(what, sizeof what, "missing %s", must[i]);
        expect_load(&(edit){.drop_tensor = must[i]}, G, what);
        snprintf(what, sizeof what, "misshaped %s", must[i]);
        expect_load(&(edit){.longer = must[i]}, G, what);
    }
    expect_load(&(edit){.drop_tensor = "frontend.window"}, OK, "no baked window (optional)");
    expect_load(&(edit){.longer = "frontend.window"}, G, "window of 401");
    expect_load(&(edit){.to_type = "frontend.window", .to_type_id = TR_F16}, G, "F16 window");
    /* type classes (docs/formats/voxtral.md §3.1) */
    expect_load(&(edit){.to_type = "enc.conv.0.weight", .to_type_id = TR_F16}, OK, "F16 conv (C)");
    expect_load(&(edit){.to_type = "enc.conv.0.weight", .to_type_id = TR_BF16}, G, "BF16 conv (C)");
    expect_load(&(edit){.to_type = "enc.pos_emb.weight", .to_type_id = TR_F16}, G, "F16 positions");
    expect_load(&(edit){.to_type = "enc.blocks.0.attn.q.bias", .to_type_id = TR_F16}, G,
                "F16 bias");
    expect_load(&(edit){.to_type = "dec.output_norm.weight", .to_type_id = TR_F16}, G, "F16 norm");
    expect_load(&(edit){.to_type = "dec.blocks.0.ffn.gate.weight", .to_type_id = TR_Q8_0}, G,
                "gate / up types differ");
    expect_load(&(edit){.to_type = "proj.linear_1.weight", .to_type_id = TR_Q8_0}, OK, "Q8_0 proj");
    expect_load(&(edit){.to_type = "dec.output.weight", .to_type_id = TR_Q8_0}, OK, "Q8_0 head");
    expect_load(&(edit){.to_type = "dec.token_embd.weight", .to_type_id = TR_BF16}, OK, "BF16 emb");
}

/* ---- forced truncation: EOS never produced ---- */

static void truncation(void) {
    /* EOS = <pad>: the chain's </s> is an ordinary token now */
    CHECK(
        rewrite(g_edit, &(edit){.kv_u32 = "tokenizer.ggml.eos_token_id", .kv_u32_value = VS_PAD}));
    struct transcribe_session *s = open_session(g_edit, 0);
    if (!s) return;
    transcribe_status st = transcribe_run(s, g_pcm, SR, NULL);
    CHECK_MSG(st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "%s", transcribe_status_string(st));
    CHECK(transcribe_was_truncated(s));
    char *t = strdup(text_of(s));
    CHECK_MSG(strncmp(t, VS_TEXT_T, strlen(VS_TEXT_T)) == 0 && strlen(t) > strlen(VS_TEXT_T),
              "'%s'", t);
    /* batched: the truncated rows keep their text too */
    const float *pcm[2] = {g_pcm, g_pcm};
    const int n[2] = {SR, SR * 2};
    CHECK(transcribe_run_batch(s, pcm, n, 2, NULL) == TRANSCRIBE_OK);
    for (int i = 0; i < 2; i++) {
        CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        const char *bt = transcribe_batch_full_text(s, i);
        CHECK(bt && strcmp(bt, t) == 0);
    }
    free(t);
    transcribe_session_free(s);
}

/* ---- every dtype the file may carry ---- */

static void dtypes(void) {
    static const int types[] = {TR_F16, TR_Q8_0, TR_BF16, TR_Q6_K, TR_Q5_K, TR_Q4_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        vx_synth_opts o = {.lin_type = types[i]};
        CHECK(vx_synth_write(g_edit, &o, 2, 2, 0) == 0);
        struct transcribe_session *s = open_session(g_edit, 0);
        if (!s) continue;
        transcribe_status st = transcribe_run(s, g_pcm, SR, NULL);
        CHECK_MSG(st == TRANSCRIBE_OK && strcmp(text_of(s), VS_TEXT_T) == 0, "%s: %s '%s'",
                  tr_type_name(types[i]), transcribe_status_string(st), text_of(s));
        transcribe_session_free(s);
    }
    /* no nb_max_frames: max_audio_ms not published (docs/formats/voxtral.md §8); runs */
    vx_synth_opts o = {.no_nb_max = true};
    CHECK(vx_synth_write(g_edit, &o, 1, 1, 0) == 0);
    struct transcribe_session *s = open_session(g_edit, 0);
    if (s) {
        struct transcribe_capabilities c;
        transcribe_capabilities_init(&c);
        CHECK(transcribe_model_get_capabilities(transcribe_get_model(s), &c) == TRANSCRIBE_OK);
        CHECK(c.max_audio_ms == 0);
        CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_OK);
        transcribe_session_free(s);
    }
    /* 15 s chunks give 1500 mel frames each, fewer than nb_max_frames: refused at run */
    CHECK(rewrite(g_edit, &(edit){.kv_u32 = FK "n_samples", .kv_u32_value = 240000}));
    s = open_session(g_edit, 0);
    if (s) {
        CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_ERR_GGUF);
        CHECK(transcribe_run(s, g_pcm, SR * 40, NULL) == TRANSCRIBE_ERR_GGUF);
        transcribe_session_free(s);
    }
    /* nb_max_frames ≠ 2 · max_source_positions: refused at run */
    CHECK(rewrite(g_edit, &(edit){.kv_u32 = FK "nb_max_frames", .kv_u32_value = 2000}));
    s = open_session(g_edit, 0);
    if (s) {
        CHECK(transcribe_run(s, g_pcm, SR, NULL) == TRANSCRIBE_ERR_GGUF);
        transcribe_session_free(s);
    }
}

int main(void) {
    snprintf(g_ref, sizeof g_ref, "%s/voxtral_synth_%d.gguf", TR_BINARY_DIR, (int)getpid());
    snprintf(g_edit, sizeof g_edit, "%s/voxtral_edit_%d.gguf", TR_BINARY_DIR, (int)getpid());
    if (vx_synth_write(g_ref, NULL, 2, 2, 0) != 0) {
        fprintf(stderr, "cannot write %s\n", g_ref);
        return 1;
    }
    g_n = SR * 40;
    g_pcm = malloc(sizeof(float) * (size_t)g_n);
    uint64_t r = 12345;
    for (int i = 0; i < g_n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const double t = (double)i / SR;
        g_pcm[i] = (float)(0.3 * sin(6.283185307179586 * (200.0 + 50.0 * t) * t) +
                           0.05 * ((double)(r >> 40) / 16777216.0 - 0.5));
    }
    caps_and_gates();
    prompt_and_splice();
    prompt_too_long();
    aborts();
    batch_rows();
    long_audio();
    bad_keys();
    bad_tensors();
    truncation();
    dtypes();
    remove(g_ref);
    remove(g_edit);
    free(g_pcm);
    return TEST_DONE();
}
