/* Voxtral Realtime's refusals (docs/formats/voxtral_realtime.md §9 and the family README), on
 * edits of the reference's F32 file written by the test: every required key left out, every key
 * written with another type (the optional ones too), refused values (encoder kv heads, projector
 * width and activation, untied head, time width, front end), tensors left out or misshaped, gate /
 * up of different types — each TRANSCRIBE_ERR_GGUF with a message naming the key or tensor; the
 * published BF16 layout loads and gives the reference text.
 * Runs: NULL and empty audio are INVALID_ARG; a 1-sample input decodes; audio past the decoder's
 * positions is INPUT_TOO_LONG with chunking off and split by the long-audio path otherwise; NaN
 * samples are cleaned; translation, timestamps and an unlisted language hint are refused; abort
 * before and during a run is ABORTED; a batch with an empty, a too-long and a good utterance; a
 * long loop of one control id (a pause) does not trip the repetition guard. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "tensor/dtype.h"
#include "test_util.h"
#include "transcribe.h"
#include "vxr_test.h"

#define REF VXR_DIR "/voxtral-realtime-tiny-ref-F32.gguf"
#define MK  "stt.voxtral_realtime."

static gguf_file *g_ref;
static char g_path[512];

typedef tr_gguf_edit edit;

/* The published BF16 layout (a tensor_hook): classes L / A / E BF16, conv F16. */
static bool bf16_layout(gguf_writer *w, const tr_tensor *t, bool *ok, void *user) {
    (void)user;
    const int nd = t->n_dims;
    const bool conv = !strncmp(t->name, "enc.conv.", 9) && nd == 3;
    const bool lin = nd == 2 && strncmp(t->name, "frontend.", 9) != 0;
    if (!(conv || lin) || t->type != TR_F32) return false;
    const int64_t n = tr_tensor_nelements(t);
    uint16_t *half = malloc((size_t)n * sizeof *half);
    for (int64_t j = 0; half && j < n; j++) {
        const float v = ((const float *)t->data)[j];
        half[j] = conv ? tr_f32_to_f16(v) : tr_f32_to_bf16(v);
    }
    *ok = half && tr_gguf_writer_add_tensor(w, t->name, conv ? TR_F16 : TR_BF16, nd, t->ne, half);
    free(half);
    return true;
}

/* The edit written to g_path; keys the reference leaves out (optional ones) are added. */
static bool write_edit(const edit *e) {
    edit a = *e;
    a.add_absent = true;
    return tr_gguf_edit_write(g_ref, g_path, &a);
}

/* Loads the edit: want status, and the log names `name`. */
static void expect(const edit *e, transcribe_status want, const char *name) {
    CHECK(write_edit(e));
    tr_expect_load_file(g_path, want, name, name);
}

static const char *const k_required[] = {
    "general.architecture",
    MK "encoder.n_layers",
    MK "encoder.d_model",
    MK "encoder.n_heads",
    MK "encoder.n_kv_heads",
    MK "encoder.head_dim",
    MK "encoder.ffn_dim",
    MK "encoder.num_mel_bins",
    MK "encoder.sliding_window",
    MK "encoder.max_position_embeddings",
    MK "encoder.rope_theta",
    MK "encoder.rms_norm_eps",
    MK "encoder.hidden_act",
    MK "projector.downsample_factor",
    MK "projector.input_dim",
    MK "projector.hidden_act",
    MK "projector.audio_length_per_tok",
    MK "decoder.n_layers",
    MK "decoder.hidden_size",
    MK "decoder.intermediate_size",
    MK "decoder.n_heads",
    MK "decoder.n_kv_heads",
    MK "decoder.head_dim",
    MK "decoder.hidden_act",
    MK "decoder.rms_norm_eps",
    MK "decoder.rope_theta",
    MK "decoder.sliding_window",
    MK "decoder.max_position_embeddings",
    MK "decoder.vocab_size",
    MK "time.default_num_delay_tokens",
    MK "time.embed_theta",
    MK "time.embed_dim",
    MK "time.ada_hidden",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "stt.frontend.type",
    "stt.frontend.num_mels",
    "stt.frontend.sample_rate",
    "stt.frontend.n_fft",
    "stt.frontend.hop_length",
    "stt.frontend.window",
    "stt.frontend.normalize",
    "stt.frontend.global_log_mel_max",
};

static const char *const k_optional[] = {
    MK "streaming_pad_token_id", MK "decoder.tie_word_embeddings",
    "stt.frontend.pad_mode",     "stt.frontend.mel_norm",
    "stt.frontend.center",       "stt.capability.streaming",
};

static const char *const k_tensors[] = {
    "dec.time_embed.inv_freq",
    "enc.conv.0.weight",
    "enc.conv.0.bias",
    "enc.conv.1.weight",
    "enc.conv.1.bias",
    "enc.final_norm.weight",
    "enc.blocks.0.norm_attn.weight",
    "enc.blocks.0.attn.q.weight",
    "enc.blocks.0.attn.q.bias",
    "enc.blocks.1.attn.k.weight",
    "enc.blocks.1.attn.v.bias",
    "enc.blocks.0.attn.out.weight",
    "enc.blocks.1.attn.out.bias",
    "enc.blocks.0.ffn.gate.weight",
    "enc.blocks.1.ffn.down.bias",
    "proj.linear_1.weight",
    "proj.linear_2.weight",
    "dec.token_embd.weight",
    "dec.output_norm.weight",
    "dec.blocks.0.attn.q.weight",
    "dec.blocks.1.ffn.up.weight",
    "dec.blocks.1.norm_ffn.weight",
    "dec.blocks.0.ada.linear_1.weight",
    "dec.blocks.1.ada.linear_2.weight",
};

static void load_errors(void) {
    for (size_t i = 0; i < sizeof k_required / sizeof *k_required; i++) {
        expect(&(edit){.drop_kv = k_required[i]}, TRANSCRIBE_ERR_GGUF, k_required[i]);
        if (i > 0) /* a mistyped architecture is a different refusal */
            expect(&(edit){.mistype_kv = k_required[i]}, TRANSCRIBE_ERR_GGUF, k_required[i]);
    }
    for (size_t i = 0; i < sizeof k_optional / sizeof *k_optional; i++)
        expect(&(edit){.mistype_kv = k_optional[i]}, TRANSCRIBE_ERR_GGUF, k_optional[i]);
    for (size_t i = 0; i < sizeof k_tensors / sizeof *k_tensors; i++) {
        expect(&(edit){.drop_tensor = k_tensors[i]}, TRANSCRIBE_ERR_GGUF, k_tensors[i]);
        expect(&(edit){.shorter = k_tensors[i]}, TRANSCRIBE_ERR_GGUF, k_tensors[i]);
    }
    /* refused values */
    expect(&(edit){.kv_u32 = MK "encoder.n_kv_heads", .kv_u32_value = 1}, TRANSCRIBE_ERR_GGUF,
           "n_kv_heads");
    expect(&(edit){.kv_u32 = MK "projector.input_dim", .kv_u32_value = 64}, TRANSCRIBE_ERR_GGUF,
           "input_dim");
    expect(&(edit){.kv_str = MK "projector.hidden_act", .kv_str_value = "silu"},
           TRANSCRIBE_ERR_GGUF, "projector.hidden_act");
    expect(&(edit){.kv_str = MK "encoder.hidden_act", .kv_str_value = "gelu"}, TRANSCRIBE_ERR_GGUF,
           "encoder.hidden_act");
    expect(&(edit){.kv_bool = MK "decoder.tie_word_embeddings", .kv_bool_value = false},
           TRANSCRIBE_ERR_GGUF, "tie_word_embeddings");
    expect(&(edit){.kv_u32 = MK "time.embed_dim", .kv_u32_value = 32}, TRANSCRIBE_ERR_GGUF,
           "embed_dim");
    expect(&(edit){.kv_u32 = MK "decoder.vocab_size", .kv_u32_value = 1000}, TRANSCRIBE_ERR_GGUF,
           "vocab");
    expect(&(edit){.kv_u32 = MK "encoder.n_layers", .kv_u32_value = 0}, TRANSCRIBE_ERR_GGUF,
           "n_layers");
    expect(&(edit){.kv_str = "stt.frontend.normalize", .kv_str_value = "per_feature"},
           TRANSCRIBE_ERR_GGUF, "normalize");
    expect(&(edit){.kv_str = "stt.frontend.type", .kv_str_value = "raw"}, TRANSCRIBE_ERR_GGUF,
           "stt.frontend.type");
    expect(&(edit){.kv_u32 = "stt.frontend.num_mels", .kv_u32_value = 80}, TRANSCRIBE_ERR_GGUF,
           "num_mels");
    expect(&(edit){.kv_u32 = MK "streaming_pad_token_id", .kv_u32_value = 5000},
           TRANSCRIBE_ERR_GGUF, "streaming_pad_token_id");
    expect(&(edit){.to_f16 = "enc.blocks.0.ffn.gate.weight"}, TRANSCRIBE_ERR_GGUF,
           "ffn.gate and ffn.up");
    expect(&(edit){.to_f16 = "dec.blocks.0.ffn.gate.weight"}, TRANSCRIBE_ERR_GGUF, "gate");
    expect(&(edit){.drop_kv = MK "streaming_pad_token_id"}, TRANSCRIBE_OK, "");
    expect(&(edit){0}, TRANSCRIBE_OK, "");
}

/* The published BF16 layout (docs/formats/voxtral_realtime.md §3: L / A / E BF16, the conv
 * kernels F16) written from the F32 file: it loads and gives the reference text (margins ~8). */
static void bf16_file(const float *clip, int n_clip) {
    CHECK(write_edit(&(edit){.tensor_hook = bf16_layout}));
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(g_path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    vxr_golden g;
    CHECK(vxr_golden_load("clip", false, &g));
    if (s) {
        CHECK(transcribe_run(s, clip, n_clip, NULL) == TRANSCRIBE_OK);
        const char *t = transcribe_full_text(s);
        CHECK_MSG(t && !strcmp(t, g.text), "BF16: [%s]", t ? t : "");
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

/* The file with its EOS id moved to an unused control id: after the chain the model repeats a
 * control id, as a trained one emits [STREAMING_PAD] through a pause. 6 s of silence after the clip
 * give ~90 of them: the repetition guard, which watches text ids only, must let the run reach its
 * horizon (OK, the reference text) offline, in a batch and in a stream. */
static void pause_is_no_loop(const float *clip, int n_clip) {
    CHECK(write_edit(&(edit){.kv_u32 = "tokenizer.ggml.eos_token_id", .kv_u32_value = 999}));
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(g_path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    const int n = n_clip + 6 * 16000;
    float *pcm = calloc((size_t)n, sizeof *pcm);
    vxr_golden g;
    CHECK(vxr_golden_load("clip", false, &g));
    if (s && pcm) {
        memcpy(pcm, clip, (size_t)n_clip * sizeof *pcm);
        CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
        CHECK(!transcribe_was_truncated(s));
        const char *t = transcribe_full_text(s);
        CHECK_MSG(t && !strcmp(t, g.text), "offline: [%s]", t ? t : "");
        /* the raw text keeps the control ids: the stream's speculative rows (drafts of the
         * repeated id, rejected ones on the chain's words) must give every id of the offline run */
        char *raw = transcribe_raw_text(s) ? strdup(transcribe_raw_text(s)) : NULL;
        CHECK(raw && strlen(raw) > strlen(g.text));
        const float *b[2] = {pcm, clip};
        int nb[2] = {n, n_clip};
        CHECK(transcribe_run_batch(s, b, nb, 2, NULL) == TRANSCRIBE_OK);
        for (int i = 0; i < 2; i++) {
            CHECK(transcribe_batch_status(s, i) == TRANSCRIBE_OK);
            t = transcribe_batch_full_text(s, i);
            CHECK_MSG(t && !strcmp(t, g.text), "batch row %d: [%s]", i, t ? t : "");
        }
        CHECK(transcribe_stream_begin(s, NULL, NULL) == TRANSCRIBE_OK);
        for (int off = 0; off < n; off += 1600)
            CHECK(transcribe_stream_feed(s, pcm + off, n - off < 1600 ? n - off : 1600, NULL) ==
                  TRANSCRIBE_OK);
        CHECK(transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK);
        CHECK(!transcribe_was_truncated(s));
        struct transcribe_stream_text st;
        transcribe_stream_text_init(&st);
        CHECK(transcribe_stream_get_text(s, &st) == TRANSCRIBE_OK);
        CHECK_MSG(st.committed_text && !strcmp(st.committed_text, g.text), "stream: [%s]",
                  st.committed_text ? st.committed_text : "");
        const char *sr = transcribe_raw_text(s);
        CHECK_MSG(raw && sr && !strcmp(sr, raw), "stream raw text differs: [%s]", sr ? sr : "");
        free(raw);
    }
    free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

static int g_polls, g_abort_at;
static bool abort_after(void *user) {
    (void)user;
    return ++g_polls > g_abort_at;
}

static void run_errors(const float *clip, int n_clip) {
    /* the decoder's positions cut to 100: the clip (81 audio tokens) fits, twice it does not */
    CHECK(write_edit(&(edit){.kv_u32 = MK "decoder.max_position_embeddings", .kv_u32_value = 100}));
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(g_path, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    float one = 0.1f;
    CHECK(transcribe_run(s, NULL, 10, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, &one, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, clip, 1, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_n_tokens(s) > 0);
    const int n = 2 * n_clip;
    float *pcm = malloc(sizeof(float) * n);
    if (!pcm) return;
    memcpy(pcm, clip, sizeof(float) * n_clip);
    memcpy(pcm + n_clip, clip, sizeof(float) * n_clip);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    CHECK(transcribe_run(s, pcm, n_clip, &p) == TRANSCRIBE_OK);
    tr_test_log[0] = 0;
    transcribe_log_set(tr_test_on_log, NULL);
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    transcribe_log_set(NULL, NULL);
    CHECK_MSG(strstr(tr_test_log, "positions"), "'%s'", tr_test_log);
    /* the long-audio path: pieces of at most 2 s */
    struct transcribe_run_params pc;
    transcribe_run_params_init(&pc);
    pc.chunking = TRANSCRIBE_CHUNKING_ON;
    pc.chunk_max_ms = 2000;
    const transcribe_status st = transcribe_run(s, pcm, n, &pc);
    CHECK_MSG(st == TRANSCRIBE_OK, "long: %d", st);
    CHECK(transcribe_n_segments(s) >= 2);
    /* NaN samples are cleaned */
    float *nan = malloc(sizeof(float) * n_clip);
    if (nan) {
        memcpy(nan, clip, sizeof(float) * n_clip);
        nan[100] = NAN;
        CHECK(transcribe_run(s, nan, n_clip, NULL) == TRANSCRIBE_OK);
        CHECK(transcribe_full_text(s) && strlen(transcribe_full_text(s)) > 0);
        free(nan);
    }
    /* refused run parameters */
    struct transcribe_run_params r;
    transcribe_run_params_init(&r);
    r.task = TRANSCRIBE_TASK_TRANSLATE;
    r.target_language = "en";
    CHECK(transcribe_run(s, clip, n_clip, &r) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    transcribe_run_params_init(&r);
    r.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, clip, n_clip, &r) == TRANSCRIBE_ERR_UNSUPPORTED_TIMESTAMPS);
    transcribe_run_params_init(&r);
    r.language = "sv";
    CHECK(transcribe_run(s, clip, n_clip, &r) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    r.language = "fr"; /* listed: accepted and ignored */
    CHECK(transcribe_run(s, clip, n_clip, &r) == TRANSCRIBE_OK);
    /* abort before any work and mid-run (encoder passes, decoder steps) */
    for (int at = 0; at < 30; at += 3) {
        g_polls = 0;
        g_abort_at = at;
        transcribe_set_abort_callback(s, abort_after, NULL);
        CHECK_MSG(transcribe_run(s, clip, n_clip, NULL) == TRANSCRIBE_ERR_ABORTED, "abort at %d",
                  at);
    }
    transcribe_set_abort_callback(s, NULL, NULL);
    /* a batch with an empty, a too-long and a good utterance */
    const float *b[3] = {pcm, pcm, pcm};
    int nb[3] = {0, n, n_clip};
    transcribe_run_batch(s, b, nb, 3, &p);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_OK);
    vxr_golden g;
    CHECK(vxr_golden_load("clip", false, &g));
    const char *t = transcribe_batch_full_text(s, 2);
    CHECK_MSG(t && !strcmp(t, g.text), "batch row 2: [%s]", t ? t : "");
    free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    if (!tr_test_file_exists(REF)) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    snprintf(g_path, sizeof g_path, "%s/vxr_errors.gguf", TR_BINARY_DIR);
    CHECK(tr_gguf_open(REF, &g_ref) == TRANSCRIBE_OK);
    if (g_ref) load_errors();
    int n = 0;
    float *clip = vxr_load_clip(&n);
    if (g_ref && clip) bf16_file(clip, n);
    if (g_ref && clip) pause_is_no_loop(clip, n);
    if (g_ref && clip) run_errors(clip, n);
    transcribe_audio_free(clip);
    tr_gguf_close(g_ref);
    remove(g_path);
    return TEST_DONE();
}
