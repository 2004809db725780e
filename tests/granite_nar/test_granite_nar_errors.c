/* Granite NAR bad input and contracts: copies of a tiny synthetic file (gn_synth.h) with one
 * key missing, mistyped or out of range, one tensor missing, misshaped or of a type its slot
 * refuses (docs/formats/granite_nar.md §2–§3, §9) must fail to load with a specific status;
 * runs refuse input with no encoder frame, over-long input, timestamps finer than NONE, other
 * languages, translation and run extensions, and honour abort at every poll (before the
 * encoder, between its blocks, before the projector, between the LM's blocks); the pure steps
 * of §6.2 / §6.4; one segment over the clip; F16 and Q8_0 files; a batch equals single runs;
 * a file without the BPE head gives an empty transcript. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/family.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "gn_synth.h"
#include "models/granite_nar/granite_nar.h"
#include "tensor/dtype.h"
#include "test_session.h"
#include "test_util.h"
#include "transcribe.h"

static char g_base[512];

typedef tr_gguf_edit edit;

static void expect_load(const edit *e, transcribe_status want, const char *what) {
    tr_expect_load(g_base, e, want, what);
}

#define E  "stt.granite_nar.encoder."
#define P  "stt.granite_nar.projector."
#define T  "stt.granite_nar.text."
#define FE "stt.frontend."

static void bad_files(void) {
    const transcribe_status G = TRANSCRIBE_ERR_GGUF, OK = TRANSCRIBE_OK;
    expect_load(&(edit){0}, OK, "unchanged copy");
    expect_load(&(edit){.extra_tensor = true}, OK, "extra tensor ignored");
    static const char *const required[] = {E "n_layers",
                                           E "hidden",
                                           E "n_heads",
                                           E "head_dim",
                                           E "input_dim",
                                           E "output_dim",
                                           E "bpe_output_dim",
                                           E "bpe_pool_window",
                                           E "self_cond_layer",
                                           E "feedforward_mult",
                                           E "conv_kernel_size",
                                           E "conv_expansion",
                                           E "max_pos_emb",
                                           E "context_size",
                                           P "n_layers",
                                           P "hidden",
                                           P "mlp_ratio",
                                           P "n_heads",
                                           P "encoder_dim",
                                           P "num_encoder_layers",
                                           P "block_size",
                                           P "downsample_rate",
                                           P "llm_dim",
                                           P "layernorm_eps",
                                           T "n_layers",
                                           T "hidden",
                                           T "intermediate",
                                           T "n_heads",
                                           T "n_kv_heads",
                                           T "head_dim",
                                           T "hidden_act",
                                           T "rms_norm_eps",
                                           T "rope_theta",
                                           T "max_position_embeddings",
                                           T "vocab_size",
                                           T "embedding_multiplier",
                                           T "logits_scaling",
                                           T "attention_multiplier",
                                           T "residual_multiplier",
                                           T "bos_id",
                                           T "eos_id",
                                           T "pad_id",
                                           FE "type",
                                           FE "sample_rate",
                                           FE "num_mels",
                                           FE "n_fft",
                                           FE "win_length",
                                           FE "hop_length",
                                           FE "window",
                                           FE "normalize",
                                           "tokenizer.ggml.model",
                                           "tokenizer.ggml.tokens",
                                           "tokenizer.ggml.eos_token_id",
                                           "general.architecture"};
    /* special ids may be INT32 (docs/formats/gguf.md §3.2): those are only left out */
    tr_expect_required_keys(g_base, required, sizeof required / sizeof required[0], "token_id");
    /* optional keys keep their type; absent they take their defaults */
    static const char *const optional[] = {"stt.variant",
                                           "general.languages",
                                           "stt.capability.translate",
                                           "stt.capability.word_timestamps",
                                           "stt.granite_nar.ctc_chars",
                                           P "attn_bias",
                                           P "mlp_bias",
                                           "stt.granite_nar.scale_projected_embeddings",
                                           T "tie_word_embeddings",
                                           FE "pad_mode",
                                           FE "mel_norm"};
    tr_expect_optional_keys(g_base, optional, sizeof optional / sizeof optional[0]);
    /* docs/formats/granite_nar.md §2.4: a wrongly typed bpe_blank_id reads as 0 (the old scheme);
     * absent likewise */
    expect_load(&(edit){.retype_kv = E "bpe_blank_id"}, OK, "mistyped bpe_blank_id");
    expect_load(&(edit){.drop_kv = E "bpe_blank_id"}, OK, "absent bpe_blank_id");
    /* layer_indices: absent = [-1], one capture for num_encoder_layers 2 */
    expect_load(&(edit){.drop_kv = E "layer_indices"}, G, "absent layer_indices");
    expect_load(&(edit){.retype_kv = E "layer_indices"}, G, "mistyped layer_indices");
    expect_load(&(edit){.short_arr = E "layer_indices"}, G, "one layer index");
    /* values the family cannot run (docs/formats/granite_nar.md §9) */
    static const tr_kv_u32 u32s[] = {
        {P "num_encoder_layers", 3}, /* != len(layer_indices) */
        {P "llm_dim", 40},           /* != text.hidden */
        {P "n_heads", 5},            /* does not divide 32 */
        {P "encoder_dim", 16},       /* != encoder hidden */
        {P "downsample_rate", 4},    /* does not divide the block */
        {E "n_heads", 3},            /* x head_dim != hidden */
        {E "conv_kernel_size", 4},   /* even */
        {E "context_size", 100},     /* > max_pos_emb */
        {E "n_layers", 3},           /* a block the file lacks */
        {E "bpe_output_dim", 300},   /* past the vocabulary and the head */
        {T "vocab_size", 271},       /* != token count */
        {T "n_kv_heads", 3},
        {FE "num_mels", 8},
        {FE "sample_rate", 8000},
        {"tokenizer.ggml.eos_token_id", 5000},
    };
    tr_expect_refused_u32(g_base, u32s, sizeof u32s / sizeof u32s[0]);
    expect_load(&(edit){.kv_f32 = P "layernorm_eps", .kv_f32_value = -1.0f}, G, "eps < 0");
    expect_load(&(edit){.kv_f32 = T "residual_multiplier", .kv_f32_value = NAN}, G, "NaN mult");
    expect_load(&(edit){.kv_str = "general.architecture", .kv_str_value = "granite_speech_nar2"},
                TRANSCRIBE_ERR_UNSUPPORTED_ARCH, "architecture granite_speech_nar2");
    expect_load(&(edit){.kv_str = "tokenizer.ggml.model", .kv_str_value = "bpe"},
                TRANSCRIBE_ERR_NOT_IMPLEMENTED, "tokenizer model bpe");
    expect_load(&(edit){.short_arr = "tokenizer.ggml.tokens"}, G, "tokens one short");
    expect_load(&(edit){.short_arr = "tokenizer.ggml.token_type"}, G, "token types one short");
    /* docs/formats/granite_nar.md §3: tensors missing, misshaped, of a refused type */
    static const char *const tensors[] = {
        "enc.input_linear.weight",
        "enc.input_linear.bias",
        "enc.ctc_proj.weight",
        "enc.ctc_bypass.bias",
        "enc.ctc_bpe.weight",
        "enc.ctc_bpe.bias",
        "enc.blocks.0.norm_ff1.weight",
        "enc.blocks.1.ff1_up.weight",
        "enc.blocks.0.ff1_down.bias",
        "enc.blocks.1.norm_attn.bias",
        "enc.blocks.0.attn_q.weight",
        "enc.blocks.1.attn_kv.weight",
        "enc.blocks.0.attn_out.weight",
        "enc.blocks.1.attn_rel_pos_emb.weight",
        "enc.blocks.0.norm_conv.weight",
        "enc.blocks.1.conv_pointwise1.weight",
        "enc.blocks.0.conv_depthwise.weight",
        "enc.blocks.1.conv_bn.running_var",
        "enc.blocks.0.conv_bn.running_mean",
        "enc.blocks.0.conv_pointwise2.weight",
        "enc.blocks.1.ff2_down.weight",
        "enc.blocks.1.norm_post.weight",
        "prj.layer_projector.weight",
        "prj.layer_projector.bias",
        "prj.out_norm.weight",
        "prj.out_linear.weight",
        "prj.query",
        "prj.window_positions",
        "prj.layer_norms.1.weight",
        "prj.blocks.0.norm_attn.weight",
        "prj.blocks.1.cross_attn_q.weight",
        "prj.blocks.0.cross_attn_k.bias",
        "prj.blocks.1.cross_attn_v.weight",
        "prj.blocks.0.cross_attn_o.weight",
        "prj.blocks.1.norm_ffn.bias",
        "prj.blocks.0.ffn_fc1.weight",
        "prj.blocks.1.ffn_fc2.weight",
        "dec.token_embd.weight",
        "dec.output_norm.weight",
        "dec.blocks.1.norm_attn.weight",
        "dec.blocks.0.attn.q.weight",
        "dec.blocks.1.attn.k.weight",
        "dec.blocks.0.attn.o.weight",
        "dec.blocks.1.ffn.gate.weight",
        "dec.blocks.0.ffn.down.weight",
    };
    tr_expect_required_tensors(g_base, tensors, sizeof tensors / sizeof tensors[0]);
    /* the front-end tensors are optional, but checked when present */
    expect_load(&(edit){.drop_tensor = "frontend.mel_filterbank"}, OK, "no filterbank");
    expect_load(&(edit){.drop_tensor = "frontend.window"}, OK, "no window");
    expect_load(&(edit){.bad_shape = "frontend.mel_filterbank"}, G, "misshaped filterbank");
    expect_load(&(edit){.to_f16 = "frontend.window"}, G, "F16 window");
    expect_load(&(edit){.to_f16 = "enc.blocks.0.norm_attn.weight"}, G, "F16 norm");
    expect_load(&(edit){.to_f16 = "enc.blocks.0.conv_bn.running_var"}, G, "F16 batch norm");
    expect_load(&(edit){.to_f16 = "prj.blocks.0.cross_attn_q.bias"}, G, "F16 bias");
    expect_load(&(edit){.to_f16 = "enc.blocks.1.conv_depthwise.weight"}, OK, "F16 depthwise");
    expect_load(&(edit){.to_f16 = "prj.query"}, OK, "F16 query");
    expect_load(&(edit){.to_f16 = "enc.ctc_bpe.weight"}, OK, "F16 BPE head");
    expect_load(&(edit){.to_f16 = "dec.blocks.0.attn.q.weight"}, OK, "F16 LM linear");
    expect_load(&(edit){.negate = "enc.blocks.1.conv_bn.running_var"}, G, "negative variance");
}

/* ---- the pure steps ---- */

static void unit(void) {
    /* docs/formats/granite_nar.md §6.2 */
    int32_t text[16];
    const int32_t hyp[5] = {7, 8, 8, 9, 10};
    CHECK(tr_gn_slots(hyp, 2, 99, text) == 8);
    const int32_t want2[8] = {99, 7, 99, 8, 99, 99, 99, 99};
    CHECK(memcmp(text, want2, sizeof want2) == 0);
    CHECK(tr_gn_slots(hyp, 5, 99, text) == 11);
    CHECK(text[1] == 7 && text[9] == 10 && text[10] == 99 && text[8] == 99);
    CHECK(tr_gn_slots(hyp, 0, 99, text) == 8 && text[7] == 99);
    /* docs/formats/granite_nar.md §6.4: EOS dropped; an EOS between repeats keeps both; adjacent
     * repeats merge */
    const int32_t am[10] = {99, 5, 5, 99, 5, 6, 6, 7, 99, 99};
    int32_t out[10];
    const int n = tr_gn_collapse(am, 10, 99, out);
    const int32_t want[4] = {5, 5, 6, 7};
    CHECK(n == 4 && memcmp(out, want, sizeof want) == 0);
}

/* ---- runs ---- */

static int g_polls, g_abort_at;
static bool abort_at(void *user) {
    (void)user;
    return ++g_polls == g_abort_at;
}

static float *tone(int n) {
    return tr_synth_chirp(n, 9);
}

static transcribe_status run(struct transcribe_session *s, const float *pcm, int n,
                             const char *lang) {
    return tr_test_run_lang(s, pcm, n, lang);
}

static const gn_session *fsess(struct transcribe_session *s) {
    return tr_session_head_of(s)->fsession;
}

static struct transcribe_session *open_file(const char *path, int n_ctx, int threads) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = threads;
    sp.n_ctx = n_ctx;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_open(path, NULL, &sp, &s) == TRANSCRIBE_OK);
    return s;
}

/* A run's text on another file (F16 / Q8_0 weights, no BPE head). */
static char *text_of(const gn_synth_cfg *c, const edit *e, const float *pcm, int n) {
    char path[512], dst[512];
    snprintf(path, sizeof path, "%s/gn_var_%d.gguf", TR_BINARY_DIR, (int)getpid());
    char *out = NULL;
    CHECK(gn_synth_write(path, c));
    const char *use = path;
    if (e) {
        snprintf(dst, sizeof dst, "%s/gn_edit_%d.gguf", TR_BINARY_DIR, (int)getpid());
        CHECK(tr_gguf_edit_file(path, dst, e));
        use = dst;
    }
    struct transcribe_session *s = open_file(use, 0, 2);
    if (s && run(s, pcm, n, NULL) == TRANSCRIBE_OK) out = strdup(transcribe_full_text(s));
    CHECK(out != NULL);
    transcribe_session_free(s);
    remove(path);
    if (e) remove(dst);
    return out;
}

static void runs(void) {
    const int n = 3 * 16000;
    float *pcm = tone(60 * 16000);
    struct transcribe_session *s = open_file(g_base, 0, 2);
    if (!s || !pcm) {
        transcribe_session_free(s);
        free(pcm);
        return;
    }
    /* capabilities (docs/formats/granite_nar.md §7, §8) */
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_NONE);
    CHECK(c.native_sample_rate == 16000 && c.n_languages == 5);
    CHECK(!c.supports_language_detect && !c.supports_translate && !c.supports_streaming);
    /* floor((512 − 256) / 3) = 85 windows of 15 · 2 · 160 samples */
    CHECK_MSG(c.max_audio_ms == 85 * 15 * 2 * 10, "max_audio_ms %lld", (long long)c.max_audio_ms);
    CHECK(transcribe_model_supports(m, TRANSCRIBE_FEATURE_CANCELLATION));
    CHECK(!strcmp(transcribe_model_arch_string(m), "granite_speech_nar"));
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 512 && lim.max_kv_bytes == 0);

    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    char *text = strdup(transcribe_full_text(s));
    const gn_session *fs = fsess(s);
    printf("text: '%s' (hypothesis %d ids, %d audio rows, %d slots, %d out)\n", text, fs->n_hyp,
           fs->n_audio, fs->n_text, fs->n_out);
    /* 3 s: 150 frames, 10 windows, 30 audio rows; a random head gives a hypothesis */
    CHECK(fs->n_hyp > 0 && fs->n_audio == 30);
    CHECK(fs->n_text == (2 * fs->n_hyp + 1 > 8 ? 2 * fs->n_hyp + 1 : 8));
    CHECK(fs->n_out > 0 && strlen(text) > 0);
    CHECK(!strcmp(transcribe_raw_text(s), text));
    CHECK(transcribe_n_segments(s) == 1 && transcribe_n_words(s) == 0 &&
          transcribe_n_tokens(s) == 0);
    struct transcribe_segment seg;
    transcribe_segment_init(&seg);
    CHECK(transcribe_get_segment(s, 0, &seg) == TRANSCRIBE_OK);
    CHECK(seg.t0_ms == 0 && seg.t1_ms == 3000 && !strcmp(seg.text, text));
    /* a valid hint is ignored; results do not depend on the thread count */
    CHECK(run(s, pcm, n, "fr") == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), text));
    struct transcribe_session *s1 = open_file(g_base, 0, 1);
    CHECK(s1 && run(s1, pcm, n, NULL) == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s1), text));
    transcribe_session_free(s1);

    /* refused requests (docs/formats/granite_nar.md §9) */
    CHECK(run(s, pcm, n, "ja") == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    struct transcribe_run_params p;
    static const transcribe_timestamp_kind fine[] = {
        TRANSCRIBE_TIMESTAMPS_SEGMENT, TRANSCRIBE_TIMESTAMPS_WORD, TRANSCRIBE_TIMESTAMPS_TOKEN};
    for (int i = 0; i < 3; i++) {
        transcribe_run_params_init(&p);
        p.timestamps = fine[i];
        CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    }
    transcribe_run_params_init(&p);
    p.timestamps = TRANSCRIBE_TIMESTAMPS_NONE;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    transcribe_run_params_init(&p);
    p.task = TRANSCRIBE_TASK_TRANSLATE;
    p.target_language = "de";
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    struct transcribe_ext ext = {sizeof ext, 1};
    transcribe_run_params_init(&p);
    p.family = &ext;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_INVALID_ARG);

    /* too short: reflect padding needs 257 samples, a stacked frame 320 */
    CHECK(run(s, pcm, 100, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(run(s, pcm, 300, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    const char *why = transcribe_session_last_error(s);
    CHECK_MSG(why && strstr(why, "too short"), "reason '%s'", why ? why : "(null)");
    CHECK(run(s, pcm, 320, NULL) == TRANSCRIBE_OK);
    /* too long: 60 s is 600 audio rows past the 512 positions (unchunked) */
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    CHECK(transcribe_run(s, pcm, 60 * 16000, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    /* a session context of 32: 30 audio rows + 8 slots do not fit */
    struct transcribe_session *sc = open_file(g_base, 32, 1);
    CHECK(sc && transcribe_run(sc, pcm, n, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    transcribe_session_free(sc);

    /* abort at every poll: count them, then stop at each */
    g_polls = 0;
    g_abort_at = -1;
    transcribe_set_abort_callback(s, abort_at, NULL);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), text));
    const int polls = g_polls;
    printf("%d abort polls\n", polls);
    CHECK(polls >= 6); /* before, 2 encoder blocks, projector, 1 between LM blocks */
    for (int k = 1; k <= polls; k++) {
        g_polls = 0;
        g_abort_at = k;
        transcribe_status st = run(s, pcm, n, NULL);
        CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED, "abort at poll %d: %s", k,
                  transcribe_status_string(st));
        CHECK(transcribe_was_aborted(s));
    }
    transcribe_set_abort_callback(s, NULL, NULL);
    CHECK(run(s, pcm, n, NULL) == TRANSCRIBE_OK && !strcmp(transcribe_full_text(s), text));

    /* a batch: each utterance its single-run result and status */
    const int half = n / 2;
    const float *bp[3] = {pcm, pcm, pcm + half};
    const int bn[3] = {n, 200, n - half};
    CHECK(run(s, pcm + half, n - half, NULL) == TRANSCRIBE_OK);
    char *single = strdup(transcribe_full_text(s));
    transcribe_run_params_init(&p);
    (void)transcribe_run_batch(s, bp, bn, 3, &p);
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    CHECK(!strcmp(transcribe_batch_full_text(s, 0), text));
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    CHECK(single && !strcmp(transcribe_batch_full_text(s, 2), single));
    free(single);
    transcribe_session_free(s);

    /* other stored types run; no BPE head (bpe_output_dim 0) → empty transcript */
    gn_synth_cfg cf = gn_synth_default();
    cf.lin_type = TR_F16;
    char *t16 = text_of(&cf, NULL, pcm, n);
    cf.lin_type = TR_Q8_0;
    char *t8 = text_of(&cf, NULL, pcm, n);
    printf("F16: '%s'\nQ8_0: '%s'\n", t16 ? t16 : "", t8 ? t8 : "");
    cf.lin_type = TR_F32;
    const edit no_bpe = {.kv_u32 = E "bpe_output_dim", .kv_u32_value = 0};
    char *t0 = text_of(&cf, &no_bpe, pcm, n);
    CHECK(t0 && t0[0] == 0);
    free(t16);
    free(t8);
    free(t0);
    free(text);
    free(pcm);
}

int main(void) {
    snprintf(g_base, sizeof g_base, "%s/gn_errors_%d.gguf", TR_BINARY_DIR, (int)getpid());
    gn_synth_cfg c = gn_synth_default();
    CHECK(gn_synth_write(g_base, &c));
    unit();
    bad_files();
    runs();
    remove(g_base);
    return TEST_DONE();
}
