/* Moonshine Streaming's refusals (docs/formats/moonshine_streaming.md §9
 * and the family README), on edits of the reference's F32 file written by
 * the test: every required key left out, every key written with another
 * type, refused values (tied head, attention bias, windows of the wrong
 * length or a zero left window, a frontend other than raw 16 kHz, widths
 * that do not fit), tensors left out or misshaped — each TRANSCRIBE_ERR_GGUF
 * with a message naming the key or tensor; UINT32 windows load. Runs: no
 * audio and NULL audio are INVALID_ARG; audio past the adapter table is
 * INPUT_TOO_LONG with chunking off (naming the table) and split by the
 * long-audio path otherwise; NaN samples are cleaned; abort before and
 * during a run is ABORTED; a run extension is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "mss_json.h"
#include "tensor/dtype.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define REF MSS_DIR "/moonshine-streaming-tiny-ref-F32.gguf"
#define MK  "stt.moonshine_streaming."

static gguf_file *g_ref;
static char g_path[512];

typedef tr_gguf_edit edit;

/* The edit written to g_path; win_u32: the sliding windows as UINT32 (the
 * writer has no UINT32 arrays: the element type is patched in the image). */
static bool write_edit(const edit *e, bool win_u32) {
    void *buf = NULL;
    size_t size = 0;
    bool ok = tr_gguf_edit_memory(g_ref, e, &buf, &size);
    if (ok && win_u32) {
        const char *key = MK "encoder.sliding_windows";
        const size_t L = strlen(key);
        for (size_t i = 0; i + L + 8 <= size; i++) {
            if (memcmp((char *)buf + i, key, L)) continue;
            uint32_t t = 4;
            memcpy((char *)buf + i + L + 4, &t, 4);
            break;
        }
    }
    ok = ok && tr_test_write_file(g_path, buf, size);
    free(buf);
    return ok;
}

/* Loads the edit: want status, and the log names `name`. */
static void expect_w(const edit *e, bool win_u32, transcribe_status want, const char *name) {
    CHECK(write_edit(e, win_u32));
    tr_expect_load_file(g_path, want, name, name);
}

static void expect(const edit *e, transcribe_status want, const char *name) {
    expect_w(e, false, want, name);
}

static const char *const k_required[] = {
    "general.architecture",      MK "encoder.n_layers",
    MK "encoder.d_model",        MK "encoder.n_heads",
    MK "encoder.head_dim",       MK "encoder.ffn_dim",
    MK "encoder.activation",     MK "encoder.frame_ms",
    MK "encoder.frame_len",      MK "encoder.sliding_windows",
    MK "decoder.n_layers",       MK "decoder.d_model",
    MK "decoder.n_heads",        MK "decoder.head_dim",
    MK "decoder.ffn_dim",        MK "decoder.activation",
    MK "decoder.vocab_size",     MK "decoder.max_position_embeddings",
    MK "decoder_start_token_id", MK "bos_token_id",
    MK "eos_token_id",           MK "pad_token_id",
    "stt.frontend.type",         "stt.frontend.sample_rate",
};

static const char *const k_optional[] = {
    MK "decoder.tie_word_embeddings",
    MK "partial_rotary_factor",
    MK "rope_theta",
    MK "attention_bias",
    MK "cmvn_eps",
    MK "adapter_has_proj",
    MK "encoder_hidden_size",
    "stt.capability.streaming",
};

static const char *const k_tensors[] = {
    "enc.embedder.comp.log_k",   "enc.embedder.linear.weight",   "enc.embedder.conv1.weight",
    "enc.embedder.conv1.bias",   "enc.embedder.conv2.weight",    "enc.embedder.conv2.bias",
    "enc.final_norm.weight",     "enc.blocks.0.attn.q.weight",   "enc.blocks.3.attn.out.weight",
    "enc.blocks.1.ffn.fc1.bias", "enc.blocks.2.norm_ffn.weight", "adapter.pos_emb.weight",
    "adapter.proj.weight",       "dec.token_embd.weight",        "dec.final_norm.weight",
    "dec.lm_head.weight",        "dec.blocks.1.ffn.fc1.weight",  "dec.blocks.0.cross_attn.k.weight",
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
        if (i > 0) /* log_k has one value: a [1, 1] is the same tensor */
            expect(&(edit){.shorter = k_tensors[i]}, TRANSCRIBE_ERR_GGUF, k_tensors[i]);
    }
    /* refused values */
    expect(&(edit){.kv_bool = MK "decoder.tie_word_embeddings", .kv_bool_value = true},
           TRANSCRIBE_ERR_GGUF, "tie_word_embeddings");
    expect(&(edit){.kv_bool = MK "attention_bias", .kv_bool_value = true}, TRANSCRIBE_ERR_GGUF,
           "attention_bias");
    expect(&(edit){.kv_bool = MK "adapter_has_proj", .kv_bool_value = false}, TRANSCRIBE_ERR_GGUF,
           "adapter_has_proj");
    expect(&(edit){.kv_str = MK "encoder.activation", .kv_str_value = "relu"}, TRANSCRIBE_ERR_GGUF,
           "encoder.activation");
    expect(&(edit){.kv_str = "stt.frontend.type", .kv_str_value = "mel"}, TRANSCRIBE_ERR_GGUF,
           "stt.frontend.type");
    expect(&(edit){.kv_u32 = "stt.frontend.sample_rate", .kv_u32_value = 8000}, TRANSCRIBE_ERR_GGUF,
           "sample_rate");
    expect(&(edit){.kv_u32 = MK "encoder.d_model", .kv_u32_value = 16}, TRANSCRIBE_ERR_GGUF,
           "encoder.d_model");
    expect(&(edit){.kv_u32 = MK "decoder.head_dim", .kv_u32_value = 8}, TRANSCRIBE_ERR_GGUF,
           "decoder.d_model");
    expect(&(edit){.kv_u32 = MK "encoder_hidden_size", .kv_u32_value = 64}, TRANSCRIBE_ERR_GGUF,
           "encoder_hidden_size");
    static const int32_t six[6] = {8, 5, 8, 5, 6, 0};
    expect(&(edit){.kv_arr_i32 = MK "encoder.sliding_windows", .kv_arr = six, .kv_arr_n = 6},
           TRANSCRIBE_ERR_GGUF, "sliding_windows");
    static const int32_t zero_left[8] = {8, 5, 0, 5, 6, 0, 8, 5};
    expect(&(edit){.kv_arr_i32 = MK "encoder.sliding_windows", .kv_arr = zero_left, .kv_arr_n = 8},
           TRANSCRIBE_ERR_GGUF, "sliding_windows");
    static const int32_t same[8] = {8, 5, 8, 5, 6, 0, 8, 5};
    expect_w(&(edit){.kv_arr_i32 = MK "encoder.sliding_windows", .kv_arr = same, .kv_arr_n = 8},
             true, TRANSCRIBE_OK, "");
    expect(&(edit){0}, TRANSCRIBE_OK, "");
}

static int g_polls, g_abort_at;
static bool abort_after(void *user) {
    (void)user;
    return ++g_polls > g_abort_at;
}

static void run_errors(void) {
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(REF, NULL, &m) == TRANSCRIBE_OK);
    CHECK(m && transcribe_session_init(m, NULL, &s) == TRANSCRIBE_OK);
    if (!s) return;
    float one = 0.1f;
    CHECK(transcribe_run(s, NULL, 10, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, &one, 0, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_run(s, &one, 1, NULL) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    /* past the adapter table (160 frames = 3.2 s): 3.2 s exactly is one call */
    const int n = 4 * 16000;
    float *pcm = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) pcm[i] = 0.3f * sinf(0.01f * (float)i * (1.0f + (float)(i % 7)));
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    const transcribe_status fits = transcribe_run(s, pcm, 160 * 320, &p);
    CHECK(fits == TRANSCRIBE_OK || fits == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    tr_test_log[0] = 0;
    transcribe_log_set(tr_test_on_log, NULL);
    CHECK(transcribe_run(s, pcm, 160 * 320 + 1, &p) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    transcribe_log_set(NULL, NULL);
    CHECK_MSG(strstr(tr_test_log, "position table"), "'%s'", tr_test_log);
    /* chunking auto: the long-audio path splits it */
    const transcribe_status st = transcribe_run(s, pcm, n, NULL);
    CHECK_MSG(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED, "long: %d", st);
    CHECK(transcribe_n_segments(s) >= 2);
    /* NaN samples are cleaned */
    pcm[100] = NAN;
    const transcribe_status nan = transcribe_run(s, pcm, 16000, NULL);
    CHECK(nan == TRANSCRIBE_OK || nan == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    /* abort before any work and mid-decode */
    for (int at = 0; at < 30; at += 7) {
        g_polls = 0;
        g_abort_at = at;
        transcribe_set_abort_callback(s, abort_after, NULL);
        CHECK_MSG(transcribe_run(s, pcm, 16000, NULL) == TRANSCRIBE_ERR_ABORTED, "abort at %d", at);
        CHECK(transcribe_n_tokens(s) == 0);
    }
    transcribe_set_abort_callback(s, NULL, NULL);
    /* a batch with an empty, a too-long and a good utterance */
    const float *b[3] = {pcm, pcm, pcm};
    int nb[3] = {0, n, 16000};
    transcribe_run_batch(s, b, nb, 3, &p);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    const transcribe_status b2 = transcribe_batch_status(s, 2);
    CHECK(b2 == TRANSCRIBE_OK || b2 == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    free(pcm);
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    if (!tr_test_file_exists(REF)) {
        printf("skipped: the reference files are missing\n");
        return 0;
    }
    snprintf(g_path, sizeof g_path, "%s/mss_errors.gguf", TR_BINARY_DIR);
    CHECK(tr_gguf_open(REF, &g_ref) == TRANSCRIBE_OK);
    if (g_ref) load_errors();
    run_errors();
    tr_gguf_close(g_ref);
    remove(g_path);
    return TEST_DONE();
}
