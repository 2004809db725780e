/* GigaAM bad input: copies of the tiny reference files (a CTC and a
 * transducer one) with one key missing, mistyped or out of range, one
 * tensor missing, misshaped or of a type its slot refuses
 * (docs/formats/gigaam.md §2–§3, §9) must fail to load with a specific status; runs
 * refuse audio shorter than one frame, a language or task the model lacks,
 * and honour abort before and during the run; audio past the 25 s window
 * runs whole with a warning; capabilities say what the family does; words,
 * segment and token times come from the emitting frames; a batch gives each
 * utterance its single-run result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ga_test.h"
#include "gguf/gguf.h"
#include "gguf/gguf_keys.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"

#define GA_CTC  GA_DIR "/gigaam-v3-ctc-tiny-ref-F32.gguf"
#define GA_RNNT GA_DIR "/gigaam-v3-rnnt-tiny-ref-F32.gguf"

typedef tr_gguf_edit edit;

/* kv_u32 / kv_str also add a key the file lacks (the optional ones) */
static void expect_load(const char *src, const edit *e, transcribe_status want, const char *what) {
    edit a = *e;
    a.add_absent = true;
    tr_expect_load(src, &a, want, what);
}

#define EK "stt.gigaam.encoder."
#define FK "stt.frontend."

static void bad_keys(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    char what[200];
    expect_load(GA_CTC, &(edit){0}, OK, "unchanged ctc copy");
    expect_load(GA_RNNT, &(edit){0}, OK, "unchanged rnnt copy");
    /* docs/formats/gigaam.md §2.3–2.5: required UINT32 keys, missing and as INT32 */
    static const char *const u32_ctc[] = {
        EK "n_layers",
        EK "d_model",
        EK "n_heads",
        EK "d_ff",
        EK "conv_kernel",
        EK "subsampling_factor",
        EK "subs_kernel_size",
        EK "pos_emb_max_len",
        EK "feat_in",
        "stt.gigaam.head.feat_in",
        "stt.gigaam.head.num_classes",
        FK "num_mels",
        FK "sample_rate",
        FK "n_fft",
        FK "win_length",
        FK "hop_length",
    };
    tr_expect_required_keys(GA_CTC, u32_ctc, sizeof u32_ctc / sizeof u32_ctc[0], NULL);
    static const char *const u32_rnnt[] = {
        "stt.gigaam.predictor.hidden",  "stt.gigaam.predictor.n_layers",
        "stt.gigaam.predictor.vocab",   "stt.gigaam.joint.hidden",
        "stt.gigaam.joint.num_classes",
    };
    tr_expect_required_keys(GA_RNNT, u32_rnnt, sizeof u32_rnnt / sizeof u32_rnnt[0], NULL);
    /* required strings and floats: missing, and of another type */
    static const char *const strs[] = {
        "stt.gigaam.head_kind",
        EK "self_attention_model",
        EK "conv_norm_type",
        FK "type",
        FK "window",
        FK "normalize",
        FK "mel_norm",
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        snprintf(what, sizeof what, "missing %s", strs[i]);
        expect_load(GA_CTC, &(edit){.drop_kv = strs[i]}, G, what);
        snprintf(what, sizeof what, "UINT32 %s", strs[i]);
        expect_load(GA_CTC, &(edit){.kv_u32 = strs[i], .kv_u32_value = 1}, G, what);
    }
    expect_load(GA_RNNT, &(edit){.drop_kv = "stt.gigaam.joint.activation"}, G,
                "missing joint.activation");
    static const char *const f32s[] = {FK "dither", FK "pre_emphasis",  FK "f_min",
                                       FK "f_max",  FK "log_clamp_min", FK "log_clamp_max"};
    for (size_t i = 0; i < sizeof f32s / sizeof f32s[0]; i++) {
        snprintf(what, sizeof what, "missing %s", f32s[i]);
        expect_load(GA_CTC, &(edit){.drop_kv = f32s[i]}, G, what);
        snprintf(what, sizeof what, "string %s", f32s[i]);
        expect_load(GA_CTC, &(edit){.kv_str = f32s[i], .kv_str_value = "0"}, G, what);
    }
    expect_load(GA_CTC, &(edit){.drop_kv = "tokenizer.ggml.model"}, G, "missing tokenizer model");
    expect_load(GA_CTC, &(edit){.drop_kv = "tokenizer.ggml.tokens"}, G, "missing tokens");
    /* optional keys keep their type */
    expect_load(GA_CTC, &(edit){.drop_kv = FK "center"}, OK, "no center key");
    expect_load(GA_CTC, &(edit){.kv_str = FK "center", .kv_str_value = "false"}, G,
                "string center");
    expect_load(GA_CTC, &(edit){.kv_u32 = "stt.variant", .kv_u32_value = 1}, G, "UINT32 variant");
    expect_load(GA_CTC, &(edit){.kv_str = "general.languages", .kv_str_value = "ru"}, G,
                "string languages");
    /* values the family cannot run (docs/formats/gigaam.md §9, §11) */
    const struct {
        const char *src, *key, *value;
        transcribe_status want;
    } sv[] = {
        {GA_CTC, "stt.gigaam.head_kind", "transducer", G},
        {GA_CTC, "stt.gigaam.head_kind", "rnnt", G}, /* the rnnt keys are missing */
        {GA_CTC, EK "self_attention_model", "rel_pos", G},
        {GA_CTC, EK "conv_norm_type", "batch_norm", G},
        {GA_RNNT, "stt.gigaam.joint.activation", "tanh", G},
        {GA_CTC, "tokenizer.ggml.model", "gpt2", G},
        {GA_CTC, "tokenizer.ggml.model", "spm", TRANSCRIBE_ERR_NOT_IMPLEMENTED},
        {GA_CTC, FK "window", "hamming", OK}, /* docs/formats/gigaam.md §2.5: not interpreted */
        {GA_CTC, "general.architecture", "gigaam2", TRANSCRIBE_ERR_UNSUPPORTED_ARCH},
    };
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++) {
        snprintf(what, sizeof what, "%s = %s", sv[i].key, sv[i].value);
        expect_load(sv[i].src, &(edit){.kv_str = sv[i].key, .kv_str_value = sv[i].value},
                    sv[i].want, what);
    }
    const struct {
        const char *src, *key;
        uint32_t value;
    } uv[] = {
        {GA_CTC, EK "n_heads", 3},     /* does not divide d_model 64 */
        {GA_CTC, EK "n_heads", 64},    /* head width 1: odd */
        {GA_CTC, EK "n_heads", 0},     /* out of range */
        {GA_CTC, EK "conv_kernel", 4}, /* even */
        {GA_CTC, EK "conv_kernel", 7}, /* disagrees with the depthwise tensors */
        {GA_CTC, EK "subs_kernel_size", 4},
        {GA_CTC, EK "subs_kernel_size", 3},
        {GA_CTC, EK "d_model", 32}, /* disagrees with every tensor */
        {GA_CTC, EK "d_ff", 100},
        {GA_CTC, EK "n_layers", 3}, /* a block the file lacks */
        {GA_CTC, EK "feat_in", 80}, /* != num_mels */
        {GA_CTC, FK "num_mels", 80},
        {GA_CTC, FK "n_fft", 322},      /* the filterbank has 161 bins */
        {GA_CTC, FK "n_fft", 321},      /* odd */
        {GA_CTC, FK "win_length", 300}, /* the window has 320 taps */
        {GA_CTC, FK "win_length", 400}, /* longer than n_fft */
        {GA_CTC, FK "hop_length", 0},
        {GA_CTC, FK "sample_rate", 8000},
        {GA_CTC, "stt.gigaam.head.feat_in", 32},
        {GA_CTC, "stt.gigaam.head.num_classes", 35}, /* != the token count and head */
        {GA_RNNT, "stt.gigaam.predictor.vocab", 35}, /* != joint.num_classes */
        {GA_RNNT, "stt.gigaam.predictor.n_layers", 2},
        {GA_RNNT, "stt.gigaam.predictor.hidden", 32},
        {GA_RNNT, "stt.gigaam.joint.hidden", 32},
    };
    for (size_t i = 0; i < sizeof uv / sizeof uv[0]; i++) {
        snprintf(what, sizeof what, "%s = %u", uv[i].key, (unsigned)uv[i].value);
        expect_load(uv[i].src, &(edit){.kv_u32 = uv[i].key, .kv_u32_value = uv[i].value}, G, what);
    }
}

static void bad_tensors(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    static const char *const ctc[] = {
        "frontend.mel_filterbank",
        "frontend.window",
        "enc.pre_encode.conv.0.weight",
        "enc.pre_encode.conv.0.bias",
        "enc.pre_encode.conv.2.weight",
        "enc.pre_encode.conv.2.bias",
        "enc.blocks.0.norm_ff1.weight",
        "enc.blocks.1.ff1.linear1.weight",
        "enc.blocks.0.ff1.linear2.bias",
        "enc.blocks.1.norm_attn.bias",
        "enc.blocks.1.attn.linear_q.weight",
        "enc.blocks.0.attn.linear_out.bias",
        "enc.blocks.0.norm_conv.weight",
        "enc.blocks.1.conv.pointwise1.weight",
        "enc.blocks.0.conv.pointwise1.bias",
        "enc.blocks.0.conv.depthwise.weight",
        "enc.blocks.1.conv.depthwise.bias",
        "enc.blocks.0.conv.ln.bias",
        "enc.blocks.1.conv.pointwise2.weight",
        "enc.blocks.0.ff2.linear2.bias",
        "enc.blocks.1.norm_out.weight",
        "head.ctc.weight",
        "head.ctc.bias",
    };
    tr_expect_required_tensors(GA_CTC, ctc, sizeof ctc / sizeof ctc[0]);
    static const char *const rnnt[] = {
        "pred.embed.weight", "pred.lstm.0.Wx", "pred.lstm.0.Wh",    "pred.lstm.0.bias",
        "joint.enc.weight",  "joint.enc.bias", "joint.pred.weight", "joint.pred.bias",
        "joint.out.weight",  "joint.out.bias",
    };
    tr_expect_required_tensors(GA_RNNT, rnnt, sizeof rnnt / sizeof rnnt[0]);
    /* types: F32-only slots refuse F16; conv and linear slots take it */
    expect_load(GA_CTC, &(edit){.to_f16 = "enc.blocks.0.norm_attn.weight"}, G, "F16 norm");
    expect_load(GA_CTC, &(edit){.to_f16 = "frontend.window"}, G, "F16 window");
    expect_load(GA_CTC, &(edit){.to_f16 = "frontend.mel_filterbank"}, G, "F16 filterbank");
    expect_load(GA_CTC, &(edit){.to_f16 = "head.ctc.bias"}, G, "F16 head bias");
    expect_load(GA_RNNT, &(edit){.to_f16 = "pred.lstm.0.bias"}, G, "F16 LSTM bias");
    expect_load(GA_CTC, &(edit){.to_f16 = "head.ctc.weight"}, OK, "F16 CTC kernel");
    expect_load(GA_CTC, &(edit){.to_f16 = "enc.blocks.0.conv.depthwise.weight"}, OK,
                "F16 depthwise kernel");
    expect_load(GA_CTC, &(edit){.to_f16 = "enc.pre_encode.conv.0.weight"}, OK, "F16 stem");
    expect_load(GA_RNNT, &(edit){.to_f16 = "pred.lstm.0.Wh"}, OK, "F16 LSTM weight");
}

/* ---- runs ---- */

static int g_warns;
static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_WARN && strstr(msg, "gigaam") && strstr(msg, "window"))
        g_warns++;
}

typedef struct abort_at {
    int calls, after;
} abort_at;

static bool abort_after(void *user) {
    abort_at *a = user;
    return ++a->calls > a->after;
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             const char *lang) {
    return tr_test_run_lang(s, pcm, n, lang);
}

static struct transcribe_session *open_session(const char *path) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
    return s;
}

static void capabilities(struct transcribe_session *s) {
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);
    CHECK(c.native_sample_rate == 16000 && c.n_languages == 1 && !strcmp(c.languages[0], "ru"));
    CHECK(!c.supports_language_detect && !c.supports_translate);
    CHECK(c.max_audio_ms == 25000);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_ITN));
    CHECK(!strcmp(transcribe_model_arch_string(m), "gigaam"));
}

/* Golden text, one segment, words and token times from the frames. */
static void rows(struct transcribe_session *s, const float *pcm, int n, const char *which) {
    ga_golden g;
    CHECK(ga_golden_load(GA_DIR, which, &g));
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    CHECK_MSG(!strcmp(transcribe_full_text(s), g.text), "%s: text '%s'", which,
              transcribe_full_text(s));
    CHECK(transcribe_n_segments(s) == 1);
    CHECK(transcribe_n_tokens(s) == g.n_ids);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(seg.t0_ms == 40 * g.frames[0] && seg.t1_ms == 40 * g.frames[g.n_ids - 1] + 40);
    for (int i = 0; i < transcribe_n_tokens(s) && i < g.n_ids; i++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        CHECK(transcribe_get_token(s, i, &t) == TRANSCRIBE_OK);
        CHECK(t.id == g.ids[i] && t.t0_ms == 40 * g.frames[i] && t.t1_ms == t.t0_ms + 40);
    }
    /* words: the text's space-separated words, each spanning its tokens */
    int nw = transcribe_n_words(s), expect = 0;
    for (const char *c = g.text; *c; c++) expect += *c != ' ' && (c == g.text || c[-1] == ' ');
    CHECK_MSG(nw == expect, "%s: %d words, want %d", which, nw, expect);
    int64_t prev = -1;
    for (int i = 0; i < nw; i++) {
        struct transcribe_word w;
        transcribe_word_init(&w);
        CHECK(transcribe_get_word(s, i, &w) == TRANSCRIBE_OK);
        /* symbols of one transducer frame share its times: starts never go back */
        CHECK(w.t0_ms >= prev && w.t1_ms > w.t0_ms && w.n_tokens >= 1 && !strchr(w.text, ' '));
        prev = w.t0_ms;
    }
}

static void runs(void) {
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(GA_CLIP, 16000, &pcm, &n) == TRANSCRIBE_OK);
    struct transcribe_session *s = open_session(GA_CTC), *r = open_session(GA_RNNT);
    if (!s || !r || !pcm) goto done;
    capabilities(s);
    rows(s, pcm, n, "ctc_F32");
    rows(r, pcm, n, "rnnt_F32");
    ga_golden g;
    CHECK(ga_golden_load(GA_DIR, "ctc_F32", &g));

    /* refused requests */
    CHECK(run(s, pcm, n, "en") == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    CHECK(run(s, pcm, n, "ru") == TRANSCRIBE_OK);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "en";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);

    /* too short: one frame is 320 samples (docs/formats/gigaam.md §4) */
    CHECK(run(s, pcm, 319, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(r, pcm, 319, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, pcm, 320, NULL) == TRANSCRIBE_OK);
    CHECK(run(r, pcm, 320, NULL) == TRANSCRIBE_OK);
    CHECK(run(s, NULL, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);

    /* past the 25 s window: run whole (chunking off) with one warning */
    const int nl = 26 * 16000;
    float *lng = malloc(sizeof(float) * (size_t)nl);
    for (int i = 0; lng && i < nl; i++) lng[i] = pcm[i % n];
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    g_warns = 0;
    transcribe_log_set(on_log, NULL);
    CHECK(lng && transcribe_run(s, lng, nl, &p) == TRANSCRIBE_OK);
    CHECK(lng && transcribe_run(r, lng, nl, &p) == TRANSCRIBE_OK);
    transcribe_log_set(NULL, NULL);
    CHECK(g_warns == 2);
    CHECK(transcribe_full_text(r) && strlen(transcribe_full_text(r)) > strlen(g.text));
    free(lng);

    /* abort: before the run, and mid-run (between blocks, or at a transducer
     * frame after the encoder's polls) */
    for (int after = 0; after < 8; after++) {
        abort_at a = {0, after};
        transcribe_set_abort_callback(s, abort_after, &a);
        transcribe_set_abort_callback(r, abort_after, &a);
        CHECK_MSG(run(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED || a.calls <= after,
                  "ctc abort after %d polls", after);
        if (a.calls > after) CHECK(transcribe_was_aborted(s));
        a.calls = 0;
        CHECK_MSG(run(r, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED, "rnnt abort after %d polls",
                  after);
        CHECK(a.calls == after + 1); /* stopped at the first poll that said so */
    }
    transcribe_set_abort_callback(s, NULL, NULL);
    transcribe_set_abort_callback(r, NULL, NULL);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), g.text));

    /* a batch: each utterance its single-run result and status */
    struct transcribe_session *both[2] = {s, r};
    for (int k = 0; k < 2; k++) {
        struct transcribe_session *x = both[k];
        const int half = n / 2;
        const float *bp[4] = {pcm, pcm, pcm + half, pcm + 1000};
        const int bn[4] = {n, 100, n - half, n - 1000};
        char *single[4] = {0};
        for (int i = 0; i < 4; i++) {
            if (i == 1) continue;
            CHECK(run(x, bp[i], bn[i], NULL) == TRANSCRIBE_OK);
            single[i] = strdup(transcribe_full_text(x));
        }
        transcribe_run_params_init(&p);
        (void)transcribe_run_batch(x, bp, bn, 4, &p); /* per-utterance statuses below */
        CHECK(transcribe_batch_n_results(x) == 4);
        CHECK(transcribe_batch_status(x, 1) == TRANSCRIBE_ERR_INVALID_ARG);
        for (int i = 0; i < 4; i++) {
            if (i == 1) continue;
            CHECK(transcribe_batch_status(x, i) == TRANSCRIBE_OK);
            CHECK_MSG(single[i] && !strcmp(transcribe_batch_full_text(x, i), single[i]),
                      "batch %d: '%s' vs single '%s'", i, transcribe_batch_full_text(x, i),
                      single[i] ? single[i] : "");
            free(single[i]);
        }
    }
done:
    transcribe_session_free(s);
    transcribe_session_free(r);
    transcribe_audio_free(pcm);
}

int main(void) {
    bad_keys();
    bad_tensors();
    runs();
    return TEST_DONE();
}
