/* Cohere contracts and error paths on tiny synthetic files (ch_synth.h),
 * through the public API: capabilities and limits; the prompt (language
 * tags by string, a missing piece → INVALID_ARG, an unlisted language →
 * UNSUPPORTED_LANGUAGE, translation → UNSUPPORTED_TASK); audio too short
 * and too long (the gate answers before any work) and the library's long
 * path past the limit; abort mid-decode with the partial text kept; forced
 * truncation; and malformed files (every required key missing, mistyped
 * keys, bad values, missing / misshaped tensors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ch_synth.h"
#include "test_util.h"
#include "transcribe.h"
#include "util/timer.h"

static char g_dir[512];

static bool write_model(const ch_synth_cfg *cfg, const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/cohere_%s_%d.gguf", g_dir, name, (int)getpid());
    return ch_synth_write(cfg, path);
}

static transcribe_status load_status(const ch_synth_cfg *cfg) {
    char path[768];
    if (!write_model(cfg, "bad", path, sizeof path)) return TRANSCRIBE_ERR_OOM;
    struct transcribe_model *m = NULL;
    transcribe_status st = transcribe_model_load_file(path, NULL, &m);
    transcribe_model_free(m);
    remove(path);
    return st;
}

static struct transcribe_session *open_session(const char *path, int n_ctx,
                                               struct transcribe_model **mo) {
    struct transcribe_model *m = NULL;
    if (transcribe_model_load_file(path, NULL, &m) != TRANSCRIBE_OK) return NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_ctx = n_ctx;
    sp.n_threads = 1;
    struct transcribe_session *s = NULL;
    if (transcribe_session_init(m, &sp, &s) != TRANSCRIBE_OK) {
        transcribe_model_free(m);
        return NULL;
    }
    *mo = m;
    return s;
}

static transcribe_status run_lang(struct transcribe_session *s, const float *pcm, int n,
                                  const char *lang, transcribe_task task) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = lang;
    p.task = task;
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    return transcribe_run(s, pcm, n, &p);
}

/* ---- capabilities, prompt, languages ---- */

static void caps_and_prompt(const char *path, const float *pcm, int n) {
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = open_session(path, 0, &m);
    CHECK(s != NULL);
    if (!s) return;
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000);
    CHECK(c.max_audio_ms == 400000); /* 5000 · 8 · 160 · 1000 / 16000 */
    CHECK(c.n_languages == 4 && strcmp(c.languages[0], "en") == 0);
    CHECK(!c.supports_translate && !c.supports_language_detect);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_PNC));
    CHECK(strcmp(transcribe_model_arch_string(m), "cohere_asr") == 0);
    CHECK(strcmp(transcribe_model_variant_string(m), "cohere-synth") == 0);
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 64 && lim.effective_max_audio_ms == 400000);
    CHECK(lim.max_kv_bytes == 2LL * 2 * 24 * 64 * 2); /* K+V, 2 layers, F16 */

    /* the default language is en; de and fr have tags; es is listed without one */
    transcribe_status st = run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    char *en = strdup(transcribe_full_text(s));
    CHECK(transcribe_n_segments(s) == (en[0] ? 1 : 0));
    if (en[0]) {
        struct transcribe_segment seg;
        transcribe_segment_init(&seg);
        CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
        CHECK(seg.t0_ms == 0 && seg.t1_ms == (int64_t)n * 1000 / 16000);
        CHECK(seg.n_tokens == transcribe_n_tokens(s) && seg.n_tokens > 0);
    }
    st = run_lang(s, pcm, n, "en", TRANSCRIBE_TASK_TRANSCRIBE);
    CHECK(strcmp(transcribe_full_text(s), en) == 0);
    st = run_lang(s, pcm, n, "de", TRANSCRIBE_TASK_TRANSCRIBE);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK_MSG(strcmp(transcribe_full_text(s), en) != 0, "en '%s' de '%s'", en,
              transcribe_full_text(s)); /* the tag reaches the prompt */
    free(en);
    CHECK(run_lang(s, pcm, n, "es", TRANSCRIBE_TASK_TRANSCRIBE) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run_lang(s, pcm, n, "xx", TRANSCRIBE_TASK_TRANSCRIBE) ==
          TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    CHECK(run_lang(s, pcm, n, "en", TRANSCRIBE_TASK_TRANSLATE) != TRANSCRIBE_OK);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

static void missing_pieces(const float *pcm, int n) {
    static const char *const pieces[] = {"\xE2\x96\x81",      "<|startofcontext|>", "<|pnc|>",
                                         "<|emo:undefined|>", "<|nodiarize|>",      "<|en|>"};
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
        ch_synth_cfg cfg = ch_synth_default();
        cfg.drop_piece = pieces[i];
        char path[768];
        CHECK(write_model(&cfg, "piece", path, sizeof path));
        struct transcribe_model *m = NULL;
        struct transcribe_session *s = open_session(path, 0, &m);
        CHECK_MSG(s != NULL, "piece %s: the file must load", pieces[i]);
        if (s) {
            CHECK_MSG(run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE) ==
                          TRANSCRIBE_ERR_INVALID_ARG,
                      "piece %s", pieces[i]);
            if (i < 5) /* another language still misses the same piece */
                CHECK(run_lang(s, pcm, n, "de", TRANSCRIBE_TASK_TRANSCRIBE) ==
                      TRANSCRIBE_ERR_INVALID_ARG);
            else
                CHECK(run_lang(s, pcm, n, "de", TRANSCRIBE_TASK_TRANSCRIBE) !=
                      TRANSCRIBE_ERR_INVALID_ARG);
        }
        transcribe_session_free(s);
        transcribe_model_free(m);
        remove(path);
    }
}

/* ---- audio edges, gate, long path, abort, truncation ---- */

static int g_abort_after;
static bool abort_counter(void *user) {
    (void)user;
    return --g_abort_after < 0;
}

static void audio_edges(const char *path, const float *pcm, int n) {
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = open_session(path, 0, &m);
    CHECK(s != NULL);
    if (!s) return;
    CHECK(run_lang(s, NULL, 16000, NULL, TRANSCRIBE_TASK_TRANSCRIBE) != TRANSCRIBE_OK);
    CHECK(run_lang(s, pcm, 0, NULL, TRANSCRIBE_TASK_TRANSCRIBE) != TRANSCRIBE_OK);
    CHECK(run_lang(s, pcm, 159, NULL, TRANSCRIBE_TASK_TRANSCRIBE) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_status st = run_lang(s, pcm, 160, NULL, TRANSCRIBE_TASK_TRANSCRIBE);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);

    /* over the gate: 6 400 000 samples → T_enc 5001 > 5000, refused before
     * any work (the buffer is never read: all zeros would do) */
    const int big = 6400000;
    float *z = calloc((size_t)big, sizeof *z);
    CHECK(z != NULL);
    if (z) {
        double t0 = tr_time_ms();
        CHECK(run_lang(s, z, big, NULL, TRANSCRIBE_TASK_TRANSCRIBE) ==
              TRANSCRIBE_ERR_INPUT_TOO_LONG);
        CHECK_MSG(tr_time_ms() - t0 < 1000.0, "the gate took %.1f ms", tr_time_ms() - t0);
        /* one sample less passes the gate: the run reaches the encoder,
         * whose first abort poll stops it (no 400 s encode in the test) */
        g_abort_after = 0;
        transcribe_set_abort_callback(s, abort_counter, NULL);
        CHECK(run_lang(s, z, big - 1, NULL, TRANSCRIBE_TASK_TRANSCRIBE) == TRANSCRIBE_ERR_ABORTED);
        transcribe_set_abort_callback(s, NULL, NULL);
        free(z);
    }
    /* the library's long path: 70 s (jfk looped) with chunking on splits
     * into pieces; every segment lies on the file's clock */
    const int lng = 70 * 16000;
    float *l = malloc((size_t)lng * sizeof *l);
    if (l) {
        for (int i = 0; i < lng; i++) l[i] = pcm[i % n];
        struct transcribe_run_params p;
        transcribe_run_params_init(&p);
        p.chunking = TRANSCRIBE_CHUNKING_ON;
        st = transcribe_run(s, l, lng, &p);
        CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "long: %s",
                  transcribe_status_string(st));
        CHECK(transcribe_n_pieces(s) >= 3);
        int64_t prev = -1;
        for (int j = 0; j < transcribe_n_segments(s); j++) {
            struct transcribe_segment seg;
            transcribe_segment_init(&seg);
            CHECK(transcribe_get_segment(s, j, &seg) == TRANSCRIBE_OK);
            CHECK(seg.t0_ms >= prev && seg.t1_ms >= seg.t0_ms && seg.t1_ms <= 70000);
            prev = seg.t1_ms;
        }
        CHECK(transcribe_n_segments(s) >= 3 && prev > 40000);
        free(l);
    }

    /* abort after a few decoder steps: ABORTED with the partial text */
    g_abort_after = 2 /* encoder layers */ + 4;
    transcribe_set_abort_callback(s, abort_counter, NULL);
    st = run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE);
    CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED, "abort: %s", transcribe_status_string(st));
    CHECK(transcribe_was_aborted(s));
    CHECK(strlen(transcribe_full_text(s)) > 0);
    CHECK(transcribe_n_tokens(s) >= 2 && transcribe_n_tokens(s) <= 5);
    g_abort_after = 0; /* before the run */
    CHECK(run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    transcribe_session_free(s);
    transcribe_model_free(m);

    /* n_ctx 14: budget 4 tokens → OUTPUT_TRUNCATED with the text kept;
     * n_ctx 10: no room for one token */
    s = open_session(path, 14, &m);
    CHECK(s != NULL);
    if (s) {
        CHECK(run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE) ==
              TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        CHECK(transcribe_was_truncated(s) && transcribe_n_tokens(s) == 4);
        transcribe_session_free(s);
        transcribe_model_free(m);
    }
    s = open_session(path, 10, &m);
    if (s) {
        CHECK(run_lang(s, pcm, n, NULL, TRANSCRIBE_TASK_TRANSCRIBE) ==
              TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        transcribe_session_free(s);
        transcribe_model_free(m);
    }
}

/* ---- malformed files ---- */

static void bad_files(void) {
    static const char *const req_keys[] = {
        "general.architecture",
        "tokenizer.ggml.model",
        "tokenizer.ggml.eos_token_id",
        "stt.cohere.encoder.n_layers",
        "stt.cohere.encoder.d_model",
        "stt.cohere.encoder.n_heads",
        "stt.cohere.encoder.d_ff",
        "stt.cohere.encoder.conv_kernel",
        "stt.cohere.encoder.subsampling_factor",
        "stt.cohere.encoder.subsampling_channels",
        "stt.cohere.encoder.pos_emb_max_len",
        "stt.cohere.decoder.n_layers",
        "stt.cohere.decoder.hidden_size",
        "stt.cohere.decoder.n_heads",
        "stt.cohere.decoder.inner_size",
        "stt.cohere.decoder.max_seq_len",
        "stt.cohere.decoder.activation",
        "stt.cohere.decoder_start_token_id",
        "stt.frontend.type",
        "stt.frontend.sample_rate",
        "stt.frontend.n_fft",
        "stt.frontend.win_length",
        "stt.frontend.hop_length",
        "stt.frontend.window",
        "stt.frontend.normalize",
        "stt.frontend.dither",
        "stt.frontend.pre_emphasis",
        "stt.frontend.f_min",
        "stt.frontend.f_max",
    };
    const char *enc = "stt.cohere.encoder.";
    for (size_t i = 0; i < sizeof req_keys / sizeof *req_keys; i++) {
        ch_synth_cfg cfg = ch_synth_default();
        if (strncmp(req_keys[i], enc, strlen(enc)) == 0)
            cfg.enc.skip_key = req_keys[i] + strlen(enc);
        else
            cfg.skip_key = req_keys[i];
        transcribe_status st = load_status(&cfg);
        if (i == 0)
            CHECK_MSG(st != TRANSCRIBE_OK, "without %s", req_keys[i]);
        else
            CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "without %s: %s", req_keys[i],
                      transcribe_status_string(st));
    }
    /* UINT32 keys written as INT32 */
    static const char *const u32_keys[] = {
        "stt.cohere.decoder.n_layers", "stt.cohere.decoder.max_seq_len",
        "stt.cohere.decoder_start_token_id", "stt.frontend.hop_length", "stt.frontend.n_fft"};
    for (size_t i = 0; i < sizeof u32_keys / sizeof *u32_keys; i++) {
        ch_synth_cfg cfg = ch_synth_default();
        cfg.i32_key = u32_keys[i];
        CHECK_MSG(load_status(&cfg) == TRANSCRIBE_ERR_GGUF, "%s as INT32", u32_keys[i]);
    }
    ch_synth_cfg cfg = ch_synth_default();
    cfg.enc.n_layers_as_i32 = true;
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    /* values against the hyper-parameters */
    cfg = ch_synth_default();
    cfg.activation = "gelu";
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    cfg = ch_synth_default();
    cfg.activation = "silu";
    CHECK(load_status(&cfg) == TRANSCRIBE_OK);
    cfg = ch_synth_default();
    cfg.heads = 5; /* 24 % 5 */
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    cfg = ch_synth_default();
    cfg.sub_factor = 4; /* weights and key agree, but the encoder is built for 8 */
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    cfg = ch_synth_default();
    cfg.n_mels = 80;
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    cfg = ch_synth_default();
    cfg.enc.n_layers_key = 3; /* one block's tensors missing */
    CHECK(load_status(&cfg) == TRANSCRIBE_ERR_GGUF);
    /* tensors missing or misshaped */
    static const char *const tensors[] = {
        "enc.pre_encode.conv.0.weight",
        "enc.pre_encode.out.weight",
        "enc.blocks.1.attn.linear_q.bias",
        "enc.blocks.0.attn.pos_bias_u",
        "enc.blocks.1.conv.bn.running_var",
        "enc_dec_proj.weight",
        "enc_dec_proj.bias",
        "dec.embed.token.weight",
        "dec.embed.pos_enc",
        "dec.embed.norm.weight",
        "dec.blocks.0.norm_self.bias",
        "dec.blocks.1.self_attn.k.bias",
        "dec.blocks.0.cross_attn.out.weight",
        "dec.blocks.1.ff.dense_in.weight",
        "dec.blocks.1.ff.dense_out.bias",
        "dec.final_norm.weight",
        "head.bias",
    };
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) {
        cfg = ch_synth_default();
        cfg.enc.skip_tensor = tensors[i];
        CHECK_MSG(load_status(&cfg) == TRANSCRIBE_ERR_GGUF, "without %s", tensors[i]);
        cfg = ch_synth_default();
        cfg.enc.misshape_tensor = tensors[i];
        CHECK_MSG(load_status(&cfg) == TRANSCRIBE_ERR_GGUF, "misshaped %s", tensors[i]);
    }
    /* quantized linear weights load (Q8_0 where rows allow) */
    cfg = ch_synth_default();
    cfg.enc.lin_type = 8; /* TR_Q8_0 */
    CHECK(load_status(&cfg) == TRANSCRIBE_OK);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s", TR_BINARY_DIR);
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 16000, &pcm, &n) !=
        TRANSCRIBE_OK) {
        printf("jfk.wav unreadable: skipped\n");
        return 0;
    }
    ch_synth_cfg cfg = ch_synth_default();
    char path[768];
    CHECK(write_model(&cfg, "ok", path, sizeof path));
    caps_and_prompt(path, pcm, n);
    missing_pieces(pcm, n);
    audio_edges(path, pcm, n);
    bad_files();
    remove(path);
    transcribe_audio_free(pcm);
    return TEST_DONE();
}
