/* SenseVoice bad input: copies of the tiny F32 reference file with one key
 * missing, mistyped or out of range, one tensor missing, misshaped or of a
 * type its slot refuses (docs/formats/sensevoice.md §2–§3) must fail to
 * load with a specific status; runs refuse audio shorter than one frame, a
 * language or task or timestamp kind the model lacks, and honour abort;
 * audio past the 30 s window runs whole with a warning; capabilities say
 * what the family does; the emotion and event tags are result fields; a
 * batch gives each utterance its single-run text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "sv_test.h"
#include "tensor/dtype.h"
#include "test_util.h"
#include "transcribe.h"

#define SV_F32 SV_DIR "/sensevoice-tiny-ref-F32.gguf"

typedef tr_gguf_edit edit;

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(SV_F32, e, want, what);
}

static void bad_files(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    expect_load(&(edit){0}, OK, "unchanged copy");
    expect_load(&(edit){.extra_tensor = true}, OK, "extra tensor ignored");
    static const char *const required[] = {
        "stt.sensevoice.encoder.n_blocks",
        "stt.sensevoice.encoder.tp_blocks",
        "stt.sensevoice.encoder.d_model",
        "stt.sensevoice.encoder.d_input",
        "stt.sensevoice.encoder.n_heads",
        "stt.sensevoice.encoder.d_ff",
        "stt.sensevoice.encoder.kernel_size",
        "stt.sensevoice.encoder.sanm_shift",
        "stt.sensevoice.encoder.attention_type",
        "stt.sensevoice.special.lang_auto",
        "stt.sensevoice.special.lang_zh",
        "stt.sensevoice.special.lang_en",
        "stt.sensevoice.special.lang_yue",
        "stt.sensevoice.special.lang_ja",
        "stt.sensevoice.special.lang_ko",
        "stt.sensevoice.special.lang_nospeech",
        "stt.sensevoice.special.withitn",
        "stt.sensevoice.special.woitn",
        "stt.frontend.type",
        "stt.frontend.num_mels",
        "stt.frontend.sample_rate",
        "stt.frontend.n_fft",
        "stt.frontend.win_length",
        "stt.frontend.hop_length",
        "stt.frontend.window",
        "stt.frontend.normalize",
        "stt.frontend.dither",
        "stt.frontend.lfr_m",
        "stt.frontend.lfr_n",
        "stt.frontend.fbank_style",
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
    };
    char what[160];
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        snprintf(what, sizeof what, "missing %s", required[i]);
        expect_load(&(edit){.drop_kv = required[i]}, G, what);
        if (strstr(required[i], "sensevoice.") || strstr(required[i], "num_mels") ||
            strstr(required[i], "lfr_")) {
            snprintf(what, sizeof what, "INT32 %s", required[i]);
            if (strstr(required[i], "attention_type")) continue;
            expect_load(&(edit){.kv_i32 = required[i]}, G, what);
        }
    }
    /* optional keys keep their type */
    expect_load(&(edit){.kv_str = "stt.sensevoice.encoder.normalize_before", .kv_str_value = "1"},
                G, "string normalize_before");
    expect_load(&(edit){.kv_str = "stt.sensevoice.special.event_speech", .kv_str_value = "1"}, G,
                "string event_speech");
    expect_load(&(edit){.kv_str = "stt.frontend.upscale_samples", .kv_str_value = "true"}, G,
                "string upscale_samples");
    expect_load(&(edit){.kv_str = "stt.frontend.dither", .kv_str_value = "0"}, G, "string dither");
    /* values the family cannot run */
    const struct {
        const char *key, *value;
    } strs[] = {{"stt.sensevoice.encoder.attention_type", "full"},
                {"stt.frontend.type", "mel"},
                {"stt.frontend.window", "hann"},
                {"stt.frontend.normalize", "none"},
                {"stt.frontend.fbank_style", "kaldi"},
                {"general.architecture", "sensevoice2"}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        snprintf(what, sizeof what, "%s = %s", strs[i].key, strs[i].value);
        transcribe_status want =
            strstr(strs[i].key, "architecture") ? TRANSCRIBE_ERR_UNSUPPORTED_ARCH : G;
        expect_load(&(edit){.kv_str = strs[i].key, .kv_str_value = strs[i].value}, want, what);
    }
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "spm"},
                TRANSCRIBE_ERR_NOT_IMPLEMENTED, "tokenizer model spm");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "gpt2"}, G,
                "tokenizer model gpt2");
    static const tr_kv_u32 u32s[] = {
        {"stt.sensevoice.encoder.n_blocks", 1},     /* <= 1 */
        {"stt.sensevoice.encoder.n_blocks", 4},     /* a block the file lacks */
        {"stt.sensevoice.encoder.tp_blocks", 2},    /* a block the file lacks */
        {"stt.sensevoice.encoder.kernel_size", 10}, /* even */
        {"stt.sensevoice.encoder.kernel_size", 9},  /* disagrees with the FSMN tensors */
        {"stt.sensevoice.encoder.n_heads", 3},      /* does not divide 128 */
        {"stt.sensevoice.encoder.d_model", 64},     /* disagrees with every tensor */
        {"stt.sensevoice.encoder.d_ff", 256},
        {"stt.sensevoice.encoder.d_input", 559}, /* != num_mels · lfr_m */
        {"stt.frontend.lfr_m", 6},               /* != d_input / num_mels */
        {"stt.frontend.num_mels", 0},
        {"stt.frontend.hop_length", 0},
        {"stt.sensevoice.special.lang_en", 16}, /* outside the 16-row table */
        {"stt.sensevoice.special.woitn", 99},
    };
    tr_expect_refused_u32(SV_F32, u32s, sizeof u32s / sizeof u32s[0]);
    /* tensors: one of each kind missing, misshaped, of a refused type */
    static const char *const tensors[] = {
        "frontend.cmvn.shift",
        "frontend.cmvn.scale",
        "enc.embed.weight",
        "enc.encoders0.0.attn.qkv.weight",
        "enc.encoders0.0.norm_attn.weight",
        "enc.encoders.1.attn.fsmn.weight",
        "enc.encoders.0.attn.out.bias",
        "enc.encoders.1.ffn.fc1.weight",
        "enc.encoders.1.ffn.fc2.bias",
        "enc.encoders.0.norm_ffn.bias",
        "enc.after_norm.weight",
        "enc.tp_encoders.0.attn.qkv.bias",
        "enc.tp_norm.bias",
        "ctc.head.weight",
        "ctc.head.bias",
    };
    tr_expect_required_tensors(SV_F32, tensors, sizeof tensors / sizeof tensors[0]);
    expect_load(&(edit){.to_f16 = "enc.encoders.0.norm_attn.weight"}, G, "F16 norm");
    expect_load(&(edit){.to_f16 = "frontend.cmvn.scale"}, G, "F16 CMVN");
    expect_load(&(edit){.to_f16 = "enc.embed.weight"}, G, "F16 prefix table");
    expect_load(&(edit){.to_f16 = "enc.encoders.1.attn.fsmn.weight"}, OK, "F16 FSMN kernel");
    expect_load(&(edit){.to_f16 = "ctc.head.weight"}, OK, "F16 head");
}

/* ---- runs ---- */

static int g_warns;
static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == TRANSCRIBE_LOG_LEVEL_WARN && strstr(msg, "sensevoice") && strstr(msg, "window"))
        g_warns++;
}

static bool abort_after(void *user) {
    int *calls = user;
    return ++*calls > 2;
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             const char *lang, enum transcribe_itn_mode itn) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = lang;
    p.itn = itn;
    return transcribe_run(s, pcm, n, &p);
}

static void runs(void) {
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(SV_CLIP, 16000, &pcm, &n) == TRANSCRIBE_OK);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(SV_F32, NULL, &sp, &s) == TRANSCRIBE_OK);
    if (!s || !pcm) {
        transcribe_session_free(s);
        transcribe_audio_free(pcm);
        return;
    }
    sv_golden g, gi;
    CHECK(sv_golden_load("F32_auto_woitn", &g));
    CHECK(sv_golden_load("F32_en_withitn", &gi));

    /* capabilities (docs/formats/sensevoice.md §7) */
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(c.native_sample_rate == 16000 && c.n_languages == 5);
    CHECK(c.supports_language_detect && !c.supports_translate); /* streaming: the generic driver */
    CHECK(c.max_audio_ms == 30000);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_ITN));
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!strcmp(transcribe_model_arch_string(m), "sensevoice"));

    /* the golden text, tags only in the raw text */
    CHECK(run(s, pcm, n, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_OK);
    CHECK_MSG(!strcmp(transcribe_full_text(s), g.text), "text '%s'", transcribe_full_text(s));
    CHECK(!strcmp(transcribe_raw_text(s), g.raw));
    CHECK(!strstr(transcribe_full_text(s), "<|"));
    const char *lang = transcribe_detected_language(s);
    CHECK_MSG(lang && !strcmp(lang, "en"), "language %s", lang ? lang : "(null)");
    CHECK(transcribe_n_segments(s) == 1);
    /* the emotion and event tags as structured fields (an addition) */
    CHECK(!strcmp(transcribe_detected_emotion(s), "NEUTRAL"));
    CHECK(!strcmp(transcribe_detected_audio_event(s), "Speech"));
    CHECK(run(s, pcm, n, "en", TRANSCRIBE_ITN_MODE_ON) == TRANSCRIBE_OK);
    CHECK(!strcmp(transcribe_raw_text(s), gi.raw) && !strcmp(transcribe_full_text(s), gi.text));

    /* refused requests */
    CHECK(run(s, pcm, n, "fr", TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "en";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);

    /* too short: one frame is 400 samples (docs/formats/sensevoice.md §4) */
    CHECK(run(s, pcm, 399, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, pcm, 400, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_OK);

    /* past the 30 s window: run whole (chunking off) with one warning */
    const int nl = 31 * 16000;
    float *lng = malloc(sizeof(float) * (size_t)nl);
    for (int i = 0; lng && i < nl; i++) lng[i] = pcm[i % n];
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    g_warns = 0;
    transcribe_log_set(on_log, NULL);
    CHECK(lng && transcribe_run(s, lng, nl, &p) == TRANSCRIBE_OK);
    transcribe_log_set(NULL, NULL);
    CHECK(g_warns == 1);
    CHECK(transcribe_full_text(s) && strlen(transcribe_full_text(s)) > strlen(g.text));
    free(lng);

    /* abort before the run and between blocks */
    int calls = 0;
    transcribe_set_abort_callback(s, abort_after, &calls);
    CHECK(run(s, pcm, n, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s) && calls == 3);
    calls = 100;
    CHECK(run(s, pcm, n, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(run(s, pcm, n, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_OK);

    /* a batch: each utterance its single-run result and status */
    const int half = n / 2;
    const float *bp[3] = {pcm, pcm, pcm + half};
    const int bn[3] = {n, 100, n - half};
    char *single = NULL;
    CHECK(run(s, pcm + half, n - half, NULL, TRANSCRIBE_ITN_MODE_DEFAULT) == TRANSCRIBE_OK);
    single = strdup(transcribe_full_text(s));
    transcribe_run_params_init(&p);
    (void)transcribe_run_batch(s, bp, bn, 3, &p); /* per-utterance statuses below */
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(!strcmp(transcribe_batch_full_text(s, 0), g.text));
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    CHECK(single && !strcmp(transcribe_batch_full_text(s, 2), single));
    const char *bl = transcribe_batch_detected_language(s, 0);
    CHECK(bl && !strcmp(bl, "en"));
    CHECK(!strcmp(transcribe_batch_detected_emotion(s, 0), "NEUTRAL"));
    CHECK(!strcmp(transcribe_batch_detected_audio_event(s, 0), "Speech"));
    CHECK(!strcmp(transcribe_batch_detected_emotion(s, 1), ""));
    free(single);

    transcribe_session_free(s);
    transcribe_audio_free(pcm);
}

int main(void) {
    bad_files();
    runs();
    return TEST_DONE();
}
