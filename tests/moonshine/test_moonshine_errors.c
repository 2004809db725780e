/* Moonshine contracts and error paths on synthetic files written by the
 * test (mn_synth.h), through the public API: capabilities and limits; the
 * result rows; every required key missing, every key mistyped, values the
 * spec refuses, tensors missing or misshaped (docs/formats/moonshine.md §9);
 * the conv_stem arrays as INT32 and UINT32; audio too short (named, not a
 * load error), the shortest that runs, too long (INPUT_TOO_LONG with
 * chunking off, split by the long-audio path with chunking auto), NaN
 * samples; abort before and in the middle of decoding, single and batched;
 * the position cap (OUTPUT_TRUNCATED, partial text kept). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mn_synth.h"
#include "test_util.h"
#include "transcribe.h"

static char g_path[512];
static char g_last_error[1024];

static void on_log(transcribe_log_level level, const char *msg, void *user) {
    (void)user;
    /* every ERROR line since the last reset, so the family's reason is kept
     * beside the dispatcher's summary */
    const size_t used = strlen(g_last_error);
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && used + 2 < sizeof g_last_error)
        snprintf(g_last_error + used, sizeof g_last_error - used, "%s|", msg);
}

static const char *synth_path(const char *tag) {
    snprintf(g_path, sizeof g_path, "%s/mn_errors_%s.gguf", TR_BINARY_DIR, tag);
    return g_path;
}

static transcribe_status load_status(const mn_synth *c, const char *tag) {
    const char *p = synth_path(tag);
    if (!mn_synth_write(c, p)) return (transcribe_status)-1;
    struct transcribe_model *m = NULL;
    g_last_error[0] = 0;
    transcribe_status st = transcribe_model_load_file(p, NULL, &m);
    transcribe_model_free(m);
    remove(p);
    return st;
}

static struct transcribe_session *open_synth(const mn_synth *c, const char *tag,
                                             struct transcribe_model **m) {
    const char *p = synth_path(tag);
    *m = NULL;
    if (!mn_synth_write(c, p) || transcribe_model_load_file(p, NULL, m) != TRANSCRIBE_OK)
        return NULL;
    remove(p);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    if (transcribe_session_init(*m, &sp, &s) != TRANSCRIBE_OK) return NULL;
    return s;
}

/* n samples of a deterministic, speech-like signal (noise bursts under a
 * slow envelope) */
static float *signal(int n, uint64_t seed) {
    float *x = malloc((size_t)n * sizeof(float));
    mn_rng r = {seed * 2654435761u + 7};
    for (int i = 0; i < n; i++) {
        double env = 0.5 + 0.5 * sin(2 * M_PI * i / 5200.0 + (double)seed);
        x[i] = (float)(0.3 * env * mn_rand(&r) + 0.2 * sin(2 * M_PI * 180.0 * i / 16000.0));
    }
    return x;
}

static int64_t seg_t(const struct transcribe_session *s, int i, bool end) {
    struct transcribe_segment g;
    transcribe_segment_init(&g);
    if (transcribe_get_segment(s, i, &g) != TRANSCRIBE_OK) return -1;
    return end ? g.t1_ms : g.t0_ms;
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             enum transcribe_chunking chunking) {
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = chunking;
    return transcribe_run(s, pcm, n, &p);
}

/* ---- capabilities, limits, result rows ---- */

static void contracts(void) {
    mn_synth c = mn_synth_default();
    struct transcribe_model *m;
    struct transcribe_session *s = open_synth(&c, "contracts", &m);
    CHECK(s != NULL);
    if (!s) return;
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    CHECK(transcribe_model_get_capabilities(m, &caps) == TRANSCRIBE_OK);
    CHECK(caps.native_sample_rate == 16000 && caps.max_audio_ms == 48500);
    CHECK(!caps.supports_translate && !caps.supports_language_detect);
    CHECK(!caps.supports_streaming);
    CHECK(caps.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(caps.n_languages == 1 && !strcmp(caps.languages[0], "en"));
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!transcribe_model_supports(m, TRANSCRIBE_FEATURE_LONG_FORM));
    CHECK(!strcmp(transcribe_model_arch_string(m), "moonshine"));
    CHECK(!strcmp(transcribe_model_variant_string(m), "moonshine-synth"));
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 194 && lim.effective_max_audio_ms == 48500);
    CHECK(lim.max_kv_bytes == (int64_t)2 * 2 * 194 * 32 * 4); /* K+V · layers · n_ctx · d · F32 */

    const int n = 3 * 16000 + 123;
    float *x = signal(n, 1);
    transcribe_status st = run(s, x, n, TRANSCRIBE_CHUNKING_AUTO);
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "status %d", st);
    const char *txt = transcribe_full_text(s), *raw = transcribe_raw_text(s);
    CHECK(txt && raw && txt[0]);
    if (txt && raw) CHECK(!strcmp(raw[0] == ' ' ? raw + 1 : raw, txt));
    CHECK(transcribe_n_segments(s) == 1);
    CHECK(seg_t(s, 0, false) == 0 && seg_t(s, 0, true) == n / 16);
    CHECK(transcribe_n_tokens(s) > 0);
    printf("synthetic text (%d tokens, status %d): %.120s\n", transcribe_n_tokens(s), st,
           txt ? txt : "");
    /* the language hint is checked against general.languages */
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.language = "de";
    CHECK(transcribe_run(s, x, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    p.language = "en";
    char *first = txt ? strdup(txt) : NULL;
    CHECK(transcribe_run(s, x, n, &p) == st && first && !strcmp(first, transcribe_full_text(s)));
    free(first);
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    CHECK(transcribe_run(s, x, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, x, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    free(x);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* ---- keys (docs/formats/moonshine.md §2, §9) ---- */

static void keys(void) {
    static const char *const required[] = {
        "general.architecture",
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
        "stt.moonshine.encoder.n_layers",
        "stt.moonshine.encoder.d_model",
        "stt.moonshine.encoder.n_heads",
        "stt.moonshine.encoder.ffn_dim",
        "stt.moonshine.encoder.activation",
        "stt.moonshine.decoder.n_layers",
        "stt.moonshine.decoder.d_model",
        "stt.moonshine.decoder.n_heads",
        "stt.moonshine.decoder.ffn_dim",
        "stt.moonshine.decoder.activation",
        "stt.moonshine.decoder.vocab_size",
        "stt.moonshine.decoder.max_position_embeddings",
        "stt.moonshine.conv_stem.channels",
        "stt.moonshine.conv_stem.kernel_sizes",
        "stt.moonshine.conv_stem.strides",
        "stt.moonshine.decoder_start_token_id",
        "stt.moonshine.bos_token_id",
        "stt.moonshine.eos_token_id",
        "stt.moonshine.pad_token_id",
        "stt.frontend.type",
        "stt.frontend.sample_rate",
    };
    static const char *const optional[] = {
        "stt.variant",
        "stt.capability.lang_detect",
        "stt.capability.translate",
        "stt.capability.timestamps",
        "stt.moonshine.encoder.n_kv_heads",
        "stt.moonshine.decoder.n_kv_heads",
        "stt.moonshine.decoder.tie_word_embeddings",
        "stt.moonshine.partial_rotary_factor",
        "stt.moonshine.rope_theta",
        "stt.moonshine.attention_bias",
        "stt.moonshine.pad_head_dim_to_multiple_of",
        "stt.moonshine.conv_stem.groupnorm_num_groups",
        "stt.moonshine.conv_stem.groupnorm_eps",
        "stt.frontend.num_mels",
    };
    const size_t nr = sizeof required / sizeof *required, no = sizeof optional / sizeof *optional;
    for (size_t i = 0; i < nr; i++) {
        mn_synth c = mn_synth_default();
        c.drop_key = required[i];
        transcribe_status st = load_status(&c, "key");
        /* a file without general.architecture is no family's */
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF || (i == 0 && st == TRANSCRIBE_ERR_UNSUPPORTED_ARCH),
                  "missing %s: %d", required[i], st);
        if (i > 0)
            CHECK_MSG(strstr(g_last_error, required[i]) || strstr(g_last_error, "token"),
                      "missing %s: message '%s'", required[i], g_last_error);
        c.drop_key = NULL;
        c.mistype_key = required[i];
        st = load_status(&c, "key");
        CHECK_MSG(st != TRANSCRIBE_OK, "mistyped %s: %d", required[i], st);
    }
    for (size_t i = 0; i < no; i++) {
        mn_synth c = mn_synth_default();
        c.drop_key = optional[i];
        transcribe_status st = load_status(&c, "key");
        CHECK_MSG(st == TRANSCRIBE_OK, "optional %s left out: %d", optional[i], st);
        c.drop_key = NULL;
        c.mistype_key = optional[i];
        st = load_status(&c, "key");
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "mistyped %s: %d", optional[i], st);
    }
}

/* ---- values the spec refuses ---- */

static void values(void) {
    struct {
        const char *what;
        mn_synth c;
    } cases[16];
    int n = 0;
    const mn_synth base = mn_synth_default();
#define CASE(w, field, val) (cases[n].what = w, cases[n].c = base, cases[n].c.field = val, n++)
    CASE("encoder activation relu", enc_act, "relu");
    CASE("decoder activation gelu", dec_act, "gelu");
    CASE("frontend type mel", frontend_type, "mel");
    CASE("sample rate 8000", sample_rate, 8000);
    CASE("two GroupNorm groups", gn_groups, 2);
    CASE("channels[0] != d_model", ch0, 48);
    CASE("rotary factor 1.5", rot_factor, 1.5f);
    CASE("rotary factor -0.5", rot_factor, -0.5f);
    CASE("untied head", untied, true);
    CASE("attention bias", attn_bias, true);
    CASE("two-entry conv_stem arrays", stem_two, true);
    CASE("heads not dividing d_model", heads, 5);
    CASE("vocab_size != embedding rows", vocab_size, 400);
    CASE("zero encoder layers", enc_layers, 0);
#undef CASE
    for (int i = 0; i < n; i++) {
        transcribe_status st = load_status(&cases[i].c, "value");
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF, "%s: %d", cases[i].what, st);
    }
    /* conv_stem arrays as UINT32 load too */
    mn_synth c = base;
    c.stem_u32 = true;
    CHECK(load_status(&c, "value") == TRANSCRIBE_OK);
}

/* ---- tensors (docs/formats/moonshine.md §3) ---- */

static void tensors(void) {
    static const char *const names[] = {
        "enc.conv.0.weight",
        "enc.conv.1.weight",
        "enc.conv.1.bias",
        "enc.conv.2.weight",
        "enc.conv.2.bias",
        "enc.conv.norm.weight",
        "enc.conv.norm.bias",
        "enc.final_norm.weight",
        "enc.blocks.0.norm_attn.weight",
        "enc.blocks.1.attn.q.weight",
        "enc.blocks.0.attn.out.weight",
        "enc.blocks.1.ffn.fc1.weight",
        "enc.blocks.0.ffn.fc2.bias",
        "dec.token_embd.weight",
        "dec.final_norm.weight",
        "dec.blocks.1.norm_self.weight",
        "dec.blocks.0.self_attn.k.weight",
        "dec.blocks.1.cross_attn.v.weight",
        "dec.blocks.0.norm_cross.weight",
        "dec.blocks.1.ffn.fc1.weight",
        "dec.blocks.1.ffn.fc1.bias",
        "dec.blocks.0.ffn.fc2.weight",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        mn_synth c = mn_synth_default();
        c.drop_tensor = names[i];
        transcribe_status st = load_status(&c, "tensor");
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && strstr(g_last_error, names[i]),
                  "missing %s: %d '%s'", names[i], st, g_last_error);
        c.drop_tensor = NULL;
        c.bad_tensor = names[i];
        st = load_status(&c, "tensor");
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && strstr(g_last_error, names[i]),
                  "misshaped %s: %d '%s'", names[i], st, g_last_error);
    }
}

/* ---- audio edges, long input, abort, truncation ---- */

typedef struct abort_after {
    int calls, at;
} abort_after;

static bool abort_cb(void *user) {
    abort_after *a = user;
    return ++a->calls >= a->at;
}

static void audio(void) {
    mn_synth c = mn_synth_default();
    struct transcribe_model *m;
    struct transcribe_session *s = open_synth(&c, "audio", &m);
    CHECK(s != NULL);
    if (!s) return;
    const int n = 2 * 16000;
    float *x = signal(n, 3);
    const enum transcribe_chunking AUTO = TRANSCRIBE_CHUNKING_AUTO, OFF = TRANSCRIBE_CHUNKING_OFF;
    CHECK(run(s, x, 0, AUTO) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, NULL, n, AUTO) == TRANSCRIBE_ERR_INVALID_ARG);
    /* upstream: a load error; here the reason, named */
    g_last_error[0] = 0;
    CHECK(run(s, x, 894, AUTO) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK_MSG(strstr(g_last_error, "too short") && strstr(g_last_error, "895"), "'%s'",
              g_last_error);
    CHECK(run(s, x, 1, AUTO) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_status st = run(s, x, 895, AUTO); /* T_enc = 1 */
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "895: %d", st);

    /* too long for one call: refused with chunking off, split with auto */
    const int n_long = 48500 * 16 + 16;
    float *big = signal(n_long, 4);
    g_last_error[0] = 0;
    CHECK(run(s, big, n_long, OFF) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK_MSG(strstr(g_last_error, "long"), "'%s'", g_last_error);
    CHECK(run(s, big, 48500 * 16, OFF) != TRANSCRIBE_ERR_INPUT_TOO_LONG);
    st = run(s, big, n_long, AUTO);
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "long auto: %d", st);
    CHECK(transcribe_n_pieces(s) >= 2);
    const int ns = transcribe_n_segments(s);
    CHECK(ns >= 2);
    for (int i = 0; i < ns; i++) {
        CHECK(seg_t(s, i, false) <= seg_t(s, i, true));
        CHECK(seg_t(s, i, true) <= n_long / 16 + 1);
        if (i) CHECK(seg_t(s, i, false) >= seg_t(s, i - 1, false));
    }
    free(big);

    /* NaN / Inf samples are cleaned, the run proceeds */
    float *bad = malloc((size_t)n * sizeof(float));
    memcpy(bad, x, (size_t)n * sizeof(float));
    bad[10] = NAN, bad[4000] = INFINITY;
    st = run(s, bad, n, AUTO);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    free(bad);

    /* abort before the run and mid-decode (the encoder polls once per
     * block: 2 blocks, then one poll per decoder step) */
    for (int at = 1; at <= 12; at += 5) {
        abort_after a = {0, at};
        transcribe_set_abort_callback(s, abort_cb, &a);
        CHECK_MSG(run(s, x, n, AUTO) == TRANSCRIBE_ERR_ABORTED, "abort at %d", at);
        CHECK(transcribe_was_aborted(s) && a.calls == at);
    }
    transcribe_set_abort_callback(s, NULL, NULL);
    st = run(s, x, n, AUTO);
    CHECK(!transcribe_was_aborted(s) &&
          (st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED));

    /* batched: an abort mid-decode finishes every utterance ABORTED */
    const float *pcm[3] = {x, x + 1000, x};
    const int lens[3] = {n, n - 1000, 16000};
    abort_after a = {0, 8};
    transcribe_set_abort_callback(s, abort_cb, &a);
    CHECK(transcribe_run_batch(s, pcm, lens, 3, NULL) == TRANSCRIBE_ERR_ABORTED);
    for (int i = 0; i < 3; i++) CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_ERR_ABORTED);
    transcribe_set_abort_callback(s, NULL, NULL);
    free(x);
    transcribe_session_free(s);
    transcribe_model_free(m);

    /* the position cap: a 6-position decoder stops without EOS, keeping the
     * partial text (OUTPUT_TRUNCATED) */
    c.max_pos = 6;
    s = open_synth(&c, "cap", &m);
    CHECK(s != NULL);
    if (s) {
        x = signal(16000, 5); /* max_audio_ms is 6 · 250 = 1500 here */
        CHECK(run(s, x, 16000, OFF) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
        CHECK(transcribe_was_truncated(s) && transcribe_n_tokens(s) == 6);
        free(x);
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    transcribe_log_set(on_log, NULL);
    contracts();
    keys();
    values();
    tensors();
    audio();
    return TEST_DONE();
}
