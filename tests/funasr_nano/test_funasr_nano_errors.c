/* Fun-ASR-Nano without a reference: a tiny random-weight file in the
 * published schema (fn_synth.h) checks bad files (each required key missing
 * or mistyped, bad values, tensors missing / misshaped / of a refused type,
 * truncations), capabilities and limits for Nano and MLT, the prompt with
 * and without a language and ITN, the audio-token arithmetic, a
 * placeholder-count mismatch, the gates (too short, too long for the
 * context, language, task, timestamps), abort mid-decode with the partial
 * text kept, truncation, speculative decoding giving greedy's text, the
 * batch giving each utterance its single-run text and status, and the long
 * audio path (pieces joined on the input's clock). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fn_synth.h"
#include "gguf/gguf.h"
#include "gguf_edit.h"
#include "models/funasr_nano/funasr_nano.h"
#include "test_session.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "transcribe.h"

static char g_path[512], g_mlt[512];

static void tmp_path(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "%s/fn_%s_%d.gguf", TR_BINARY_DIR, tag, (int)getpid());
}

static float *make_audio(int n, unsigned seed) {
    float *a = malloc(sizeof(float) * (size_t)n);
    uint64_t r = 0x1234567ull + seed;
    for (int i = 0; i < n; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        double noise = (double)(r >> 11) / 9007199254740992.0 - 0.5;
        /* bursts with pauses, so a long input has places to be cut */
        double env = fmod((double)i / 16000.0, 4.0) < 3.0 ? 1.0 : 0.001;
        a[i] =
            (float)(env * (0.3 * sin(2 * M_PI * (220.0 + 40 * seed) * i / 16000.0) + 0.1 * noise));
    }
    return a;
}

/* The family session behind a public one (tests only). */
static fn_session *fam(struct transcribe_session *s) {
    return s ? (fn_session *)tr_session_head_of(s)->fsession : NULL;
}

static struct transcribe_session *open_s(const char *path, int n_ctx) {
    return tr_test_open(path, 2, n_ctx, TRANSCRIBE_KV_TYPE_AUTO);
}

static transcribe_status expect_load(const fn_synth_opts *o) {
    char p[512];
    tmp_path(p, sizeof p, "bad");
    CHECK(fn_synth_write(p, o, 1, 7) == 0);
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(p, NULL, NULL, &s);
    transcribe_session_free(s);
    remove(p);
    return st;
}

#define EXPECT_LOAD(want, ...)                                                                     \
    do {                                                                                           \
        fn_synth_opts o_ = {__VA_ARGS__};                                                          \
        transcribe_status got_ = expect_load(&o_);                                                 \
        CHECK_MSG(got_ == (want), "%s: got %s", #__VA_ARGS__, transcribe_status_string(got_));     \
    } while (0)

static void test_bad_files(void) {
    EXPECT_LOAD(TRANSCRIBE_OK, .lin_type = TR_F32);
    EXPECT_LOAD(TRANSCRIBE_OK, .lin_type = TR_F16);
    EXPECT_LOAD(TRANSCRIBE_OK, .lin_type = TR_Q8_0);
    EXPECT_LOAD(TRANSCRIBE_OK, .high_frame_rate = true);
    /* every required key missing, then mistyped */
    static const char *const req[] = {
        "general.architecture",
        "tokenizer.ggml.model",
        "tokenizer.ggml.eos_token_id",
        "stt.funasr_nano.encoder.n_blocks",
        "stt.funasr_nano.encoder.tp_blocks",
        "stt.funasr_nano.encoder.d_model",
        "stt.funasr_nano.encoder.d_input",
        "stt.funasr_nano.encoder.n_heads",
        "stt.funasr_nano.encoder.d_ff",
        "stt.funasr_nano.encoder.kernel_size",
        "stt.funasr_nano.encoder.sanm_shift",
        "stt.funasr_nano.encoder.attention_type",
        "stt.funasr_nano.adaptor.n_blocks",
        "stt.funasr_nano.adaptor.encoder_dim",
        "stt.funasr_nano.adaptor.llm_dim",
        "stt.funasr_nano.adaptor.pre_ffn_dim",
        "stt.funasr_nano.adaptor.block_ffn_dim",
        "stt.funasr_nano.adaptor.n_heads",
        "stt.funasr_nano.adaptor.d_head",
        "stt.funasr_nano.adaptor.layer_norm_eps",
        "stt.funasr_nano.adaptor.activation",
        "stt.funasr_nano.adaptor.downsample_rate",
        "stt.funasr_nano.decoder.n_layers",
        "stt.funasr_nano.decoder.hidden_size",
        "stt.funasr_nano.decoder.intermediate_size",
        "stt.funasr_nano.decoder.n_heads",
        "stt.funasr_nano.decoder.n_kv_heads",
        "stt.funasr_nano.decoder.head_dim",
        "stt.funasr_nano.decoder.vocab_size",
        "stt.funasr_nano.decoder.max_position_embeddings",
        "stt.funasr_nano.decoder.rms_norm_eps",
        "stt.funasr_nano.decoder.rope_theta",
        "stt.funasr_nano.decoder.activation",
        "stt.frontend.type",
        "stt.frontend.num_mels",
        "stt.frontend.hop_length",
        "stt.frontend.window",
        "stt.frontend.normalize",
        "stt.frontend.dither",
        "stt.frontend.lfr_m",
        "stt.frontend.lfr_n",
        "stt.frontend.fbank_style",
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        fn_synth_opts o = {.drop_key = req[i]};
        transcribe_status st = expect_load(&o);
        /* no architecture: the file is not recognised as this family at all */
        CHECK_MSG(st != TRANSCRIBE_OK, "missing %s loaded", req[i]);
        if (i > 0) CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "missing %s: %d", req[i], st);
        if (i < 2) continue;
        o = (fn_synth_opts){.wrong_type = req[i]};
        st = expect_load(&o);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "mistyped %s: %d", req[i], st);
    }
    /* optional keys of the wrong type */
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .wrong_type = "stt.funasr_nano.adaptor.use_low_frame_rate");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .wrong_type = "stt.funasr_nano.decoder.tie_word_embeddings");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .wrong_type = "stt.frontend.apply_cmvn");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .wrong_type = "stt.funasr_nano.encoder.normalize_before");
    /* bad values (docs/formats/funasr_nano.md §9) */
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.encoder.n_blocks", .set_val = 1);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.encoder.kernel_size",
                .set_val = 4);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.encoder.n_heads", .set_val = 3);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.encoder.d_input", .set_val = 561);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.encoder.sanm_shift", .set_val = 1);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.funasr_nano.encoder.attention_type",
                .set_str = "mha");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.adaptor.llm_dim", .set_val = 48);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.adaptor.d_head", .set_val = 24);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.adaptor.encoder_dim",
                .set_val = 64);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.adaptor.downsample_rate",
                .set_val = 2);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.funasr_nano.adaptor.activation",
                .set_str = "gelu");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.decoder.n_kv_heads", .set_val = 3);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.decoder.hidden_size",
                .set_val = 64);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_key = "stt.funasr_nano.decoder.vocab_size",
                .set_val = 300);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.funasr_nano.decoder.activation",
                .set_str = "gelu");
    EXPECT_LOAD(TRANSCRIBE_OK, .set_str_key = "stt.funasr_nano.decoder.activation",
                .set_str = "swish");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .untied = true);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.frontend.normalize",
                .set_str = "per_feature");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.frontend.window", .set_str = "hann");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.frontend.type", .set_str = "mel");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "stt.frontend.fbank_style", .set_str = "kaldi");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .apply_cmvn = true);
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .no_merges = true);
    /* the shared byte-level BPE loader refuses any other tokenizer model */
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .set_str_key = "tokenizer.ggml.model", .set_str = "bpe");
    /* tensors missing, misshaped, of a refused type */
    static const char *const tensors[] = {
        "enc.encoders0.0.attn.qkv.weight",
        "enc.encoders.0.attn.fsmn.weight",
        "enc.tp_encoders.0.norm_ffn.bias",
        "enc.after_norm.weight",
        "enc.tp_norm.bias",
        "adaptor.linear1.weight",
        "adaptor.linear2.bias",
        "adaptor.blocks.1.attn.k.bias",
        "adaptor.blocks.0.ffn.fc2.weight",
        "adaptor.blocks.1.norm_ffn.weight",
        "dec.token_embd.weight",
        "dec.output_norm.weight",
        "dec.layers.0.attn.k_norm.weight",
        "dec.layers.0.ffn.down.weight",
    };
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        fn_synth_opts o = {.drop = tensors[i]};
        CHECK_MSG(expect_load(&o) == TRANSCRIBE_ERR_GGUF, "without %s", tensors[i]);
        o = (fn_synth_opts){.misshape = tensors[i]};
        CHECK_MSG(expect_load(&o) == TRANSCRIBE_ERR_GGUF, "misshaped %s", tensors[i]);
    }
    /* norms and biases are F32 only; the FSMN kernel may be F16 */
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .retype = "enc.after_norm.weight");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .retype = "adaptor.blocks.0.attn.q.bias");
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .retype = "dec.layers.0.norm_attn.weight");
    EXPECT_LOAD(TRANSCRIBE_OK, .retype = "enc.encoders.0.attn.fsmn.weight");
    /* gate and up of different types */
    EXPECT_LOAD(TRANSCRIBE_ERR_GGUF, .retype = "dec.layers.0.ffn.gate.weight");

    /* every truncation of a valid file is a load error, never a crash */
    char p[512];
    tmp_path(p, sizeof p, "full");
    CHECK(fn_synth_write(p, NULL, 1, 7) == 0);
    tr_expect_truncations_refused(p);
    remove(p);
}

static fn_model *load_internal(const char *path, gguf_file **g) {
    CHECK(tr_gguf_open(path, g) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = path, .gguf = *g};
    fn_model *m = NULL;
    CHECK(tr_fn_model_load(&lc, &m) == TRANSCRIBE_OK);
    return m;
}

static char *decode(const fn_model *m, const int32_t *ids, int n) {
    return tr_tokenizer_decode(m->tok, ids, n, false);
}

static void test_caps_and_prompt(void) {
    struct transcribe_session *s = open_s(g_path, 0);
    const struct transcribe_model *mm = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(mm, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000 && !c.supports_language_detect && !c.supports_translate);
    CHECK(c.n_languages == 3 && strcmp(c.languages[2], "ja") == 0);
    CHECK(c.supports_spec_decode);
    /* docs/formats/funasr_nano.md §8: Nano 19 514 880 ms, MLT 2 439 360 ms */
    CHECK_MSG(c.max_audio_ms == 19514880, "%lld", (long long)c.max_audio_ms);
    CHECK(strcmp(transcribe_model_arch_string(mm), "funasr_nano") == 0);
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 40960);
    CHECK(lim.effective_max_audio_ms == (int64_t)(40960 - 48 - 256) * 480);
    transcribe_session_free(s);
    s = open_s(g_mlt, 2048);
    transcribe_capabilities_init(&c);
    transcribe_model_get_capabilities(transcribe_get_model(s), &c);
    CHECK_MSG(c.max_audio_ms == 2439360, "%lld", (long long)c.max_audio_ms);
    transcribe_session_limits_init(&lim);
    transcribe_session_get_limits(s, &lim);
    CHECK(lim.effective_n_ctx == 2048 && lim.effective_max_audio_ms == (2048 - 48 - 256) * 60);
    transcribe_session_free(s);

    gguf_file *g = NULL;
    fn_model *m = load_internal(g_path, &g);
    if (m) {
        /* docs/formats/funasr_nano.md §4, §6.1: jfk.wav's 176 000 samples → 183 LFR rows → 23 audio
         * tokens */
        CHECK(tr_fn_lfr_rows(m, 176000) == 183);
        CHECK(tr_fn_audio_tokens(m, 183) == 23);
        CHECK(tr_fn_audio_tokens(m, 1) == 1 && tr_fn_audio_tokens(m, 8) == 1);
        CHECK(tr_fn_audio_tokens(m, 9) == 2 && tr_fn_audio_tokens(m, 17) == 3);
        CHECK(tr_fn_lfr_rows(m, 399) == 0 && tr_fn_lfr_rows(m, 400) == 1);
        /* docs/formats/funasr_nano.md §6.2 prompt: no hint, ITN default → the "no normalisation"
         * suffix */
        fn_prompt p;
        CHECK(tr_fn_build_prompt(m, 4, NULL, TRANSCRIBE_ITN_MODE_DEFAULT, &p) == TRANSCRIBE_OK);
        char *pre = decode(m, p.ids, p.audio_at);
        char *suf = decode(m, p.ids + p.audio_at + 4, p.n - p.audio_at - 4);
        CHECK_MSG(strcmp(pre, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                              "<|im_start|>user\n语音转写，不进行文本规整：") == 0,
                  "%s", pre);
        CHECK_MSG(strcmp(suf, "<|im_end|>\n<|im_start|>assistant\n") == 0, "%s", suf);
        CHECK(p.n == p.audio_at + 4 + 5 && p.n_audio == 4);
        CHECK(p.ids[0] == m->sp.im_start && p.ids[1] == m->sp.system && p.ids[2] == m->sp.newline);
        CHECK(p.ids[p.n - 2] == m->sp.assistant && p.ids[p.n - 1] == m->sp.newline);
        for (int i = 0; i < 4; i++) CHECK(p.ids[p.audio_at + i] == 0);
        free(pre);
        free(suf);
        /* a placeholder-count mismatch is refused */
        float *x = calloc((size_t)p.n * FS_A, sizeof(float));
        float audio[5 * FS_A] = {0};
        CHECK(tr_fn_embed(m, &p, audio, 3, x) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(tr_fn_embed(m, &p, audio, 5, x) == TRANSCRIBE_ERR_INVALID_ARG);
        for (int i = 0; i < 4 * FS_A; i++) audio[i] = (float)i;
        CHECK(tr_fn_embed(m, &p, audio, 4, x) == TRANSCRIBE_OK);
        CHECK(x[(size_t)p.audio_at * FS_A + 5] == 5.0f);
        CHECK(x[(size_t)(p.audio_at + 3) * FS_A + FS_A - 1] == (float)(4 * FS_A - 1));
        free(x);
        tr_fn_prompt_free(&p);
        /* a language hint goes in verbatim; ITN on drops the suffix */
        CHECK(tr_fn_build_prompt(m, 2, "en", TRANSCRIBE_ITN_MODE_ON, &p) == TRANSCRIBE_OK);
        pre = decode(m, p.ids, p.audio_at);
        CHECK_MSG(strstr(pre, "<|im_start|>user\n语音转写成en：") != NULL, "%s", pre);
        free(pre);
        tr_fn_prompt_free(&p);
        /* docs/formats/funasr_nano.md §6.5: the text is the decoded ids as they are, one segment */
        tr_result r;
        tr_result_init(&r);
        int32_t out[8];
        int k = tr_tokenizer_encode(m->tok, " hi", out, 8);
        out[k++] = m->sp.im_start; /* special tokens decode to their literal text */
        CHECK(tr_fn_fill_result(m, out, k, 32000, &r) == TRANSCRIBE_OK);
        CHECK(strcmp(tr_result_full_text(&r), " hi<|im_start|>") == 0);
        CHECK(r.n_segs == 1 && r.segs[0].t0_ms == 0 && r.segs[0].t1_ms == 2000);
        tr_result_free(&r);
        tr_fn_model_free(m);
    }
    tr_gguf_close(g);
    /* MLT: every LFR row is an audio token */
    m = load_internal(g_mlt, &g);
    if (m) {
        CHECK(tr_fn_audio_tokens(m, 183) == 183);
        tr_fn_model_free(m);
    }
    tr_gguf_close(g);
}

static void test_gates(void) {
    struct transcribe_session *s = open_s(g_path, 512);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF; /* the family's own gate, not long audio */
    int n = 120 * 16000;
    float *a = make_audio(n, 1);
    /* 120 s: 250 audio tokens + the prompt + 256 > 512 → rejected before the front end */
    CHECK(transcribe_run(s, a, n, &rp) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(transcribe_run(s, a, 399, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, a, 0, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, NULL, 16000, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.language = "fr"; /* not in general.languages */
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    rp.language = NULL;
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_SEGMENT;
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_AUTO;
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    rp.target_language = "en";
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_session_free(s);
    /* MLT: 60 ms tokens, so 10 s (167 tokens) already exceed a 400-token context */
    s = open_s(g_mlt, 400);
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF;
    CHECK(transcribe_run(s, a, 10 * 16000, &rp) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    free(a);
    transcribe_session_free(s);
}

static int g_calls;
static bool abort_after(void *u) {
    return ++g_calls > *(int *)u;
}

/* Random weights rarely say <|im_end|>: a run fills the budget
 * (OUTPUT_TRUNCATED with the text kept) or the repetition guard stops it;
 * abort stops it early; spec decoding gives greedy's text; a batch gives
 * each row its single-run text and status. */
static void test_runs(const char *path, const char *tag) {
    struct transcribe_session *s = open_s(path, 0);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF;
    rp.spec_k_drafts = 0;
    int n = 40000;
    float *a = make_audio(n, 2);
    /* the repetition guard (on by default) stops the random LM's loop early */
    CHECK(fam(s)->repeat_guard);
    transcribe_status st = transcribe_run(s, a, n, &rp);
    CHECK(st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && fam(s)->n_last < FN_MAX_NEW - 1);
    /* without it the run fills the budget */
    fam(s)->repeat_guard = false;
    st = transcribe_run(s, a, n, &rp);
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "%s: %s", tag,
              transcribe_status_string(st));
    char *full = strdup(transcribe_raw_text(s) ? transcribe_raw_text(s) : "");
    printf("%s: %s, %d ids\n", tag, transcribe_status_string(st), fam(s)->n_last);
    CHECK(transcribe_n_segments(s) == 1);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) CHECK(transcribe_was_truncated(s));
    CHECK(strlen(full) > 0);
    /* speculative decoding: the same text and status */
    for (int k = 1; k <= 8; k *= 2) {
        rp.spec_k_drafts = k;
        transcribe_status st2 = transcribe_run(s, a, n, &rp);
        CHECK_MSG(st2 == st, "%s spec %d: %d vs %d", tag, k, st2, st);
        const char *t2 = transcribe_raw_text(s);
        CHECK_MSG(t2 && strcmp(t2, full) == 0, "%s spec %d text differs", tag, k);
    }
    rp.spec_k_drafts = 0;
    /* abort after a few polls: partial text is a prefix of the full one */
    int limit = 12;
    g_calls = 0;
    transcribe_set_abort_callback(s, abort_after, &limit);
    CHECK(transcribe_run(s, a, n, &rp) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s));
    const char *part = transcribe_raw_text(s);
    CHECK(part && strlen(part) < strlen(full));
    CHECK(part && strncmp(part, full, strlen(part)) == 0);
    /* abort before anything runs */
    limit = 0;
    g_calls = 0;
    CHECK(transcribe_run(s, a, n, &rp) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);

    /* batch: each row gets its single-run text; a too-long row its status */
    transcribe_session_free(s);
    s = open_s(path, 1024);
    fam(s)->repeat_guard = false;
    const int lens[4] = {20000, 400 * 16000, 9000, 33000};
    float *pcm[4];
    char *single[4] = {0};
    transcribe_status sst[4];
    for (int i = 0; i < 4; i++) {
        pcm[i] = make_audio(lens[i], 3 + (unsigned)i);
        sst[i] = transcribe_run(s, pcm[i], lens[i], &rp);
        if (sst[i] == TRANSCRIBE_OK || sst[i] == TRANSCRIBE_ERR_OUTPUT_TRUNCATED)
            single[i] = strdup(transcribe_raw_text(s));
    }
    CHECK(sst[1] == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(transcribe_run_batch(s, (const float *const *)pcm, lens, 4, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 4);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(transcribe_batch_status(s, i) == sst[i], "%s row %d: %d vs %d", tag, i,
                  transcribe_batch_status(s, i), sst[i]);
        if (single[i]) {
            const char *bt = transcribe_batch_raw_text(s, i);
            CHECK_MSG(bt && strcmp(bt, single[i]) == 0, "%s row %d text differs", tag, i);
        }
        free(single[i]);
        free(pcm[i]);
    }
    free(full);
    free(a);
    transcribe_session_free(s);
}

/* Long audio: with chunking on AUTO a 70 s input is cut at its pauses, the
 * pieces decoded through the batched path and joined on the input's clock. */
static void test_long_audio(void) {
    struct transcribe_session *s = open_s(g_path, 0);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    const int n = 70 * 16000;
    float *a = make_audio(n, 9);
    transcribe_status st = transcribe_run(s, a, n, &rp);
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "long: %s",
              transcribe_status_string(st));
    CHECK(transcribe_n_pieces(s) >= 3);
    const int ns = transcribe_n_segments(s);
    CHECK(ns >= 3);
    int64_t prev = 0;
    for (int i = 0; i < ns; i++) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, i, &seg) == TRANSCRIBE_OK);
        CHECK_MSG(seg.t0_ms >= prev && seg.t1_ms >= seg.t0_ms && seg.t1_ms <= 70000,
                  "segment %d: %lld..%lld", i, (long long)seg.t0_ms, (long long)seg.t1_ms);
        prev = seg.t0_ms;
    }
    free(a);
    transcribe_session_free(s);
}

int main(void) {
    tmp_path(g_path, sizeof g_path, "nano");
    tmp_path(g_mlt, sizeof g_mlt, "mlt");
    fn_synth_opts mlt = {.high_frame_rate = true};
    if (fn_synth_write(g_path, NULL, 1, 11) != 0 || fn_synth_write(g_mlt, &mlt, 1, 13) != 0) {
        fprintf(stderr, "cannot write the synthetic files\n");
        return 1;
    }
    test_bad_files();
    test_caps_and_prompt();
    test_gates();
    test_runs(g_path, "nano");
    test_runs(g_mlt, "mlt");
    test_long_audio();
    remove(g_path);
    remove(g_mlt);
    return TEST_DONE();
}
