/* Qwen3-ASR without a reference: a tiny random-weight file in the published
 * schema (qa_synth.h) checks capabilities and limits, the prompt, the
 * input gate before any front-end work, language / task gates, bad files
 * (truncated, missing / misshaped tensors, missing / mistyped keys, untied
 * without a head), abort mid-decode with the partial text kept, the
 * truncation status, and the batch giving each utterance its single-run
 * text and its own status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf_edit.h"
#include "models/qwen3_asr/qwen3_asr.h"
#include "qa_synth.h"
#include "test_session.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "transcribe.h"

static char g_path[512];

static void tmp_path(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "%s/qa_%s_%d.gguf", TR_BINARY_DIR, tag, (int)getpid());
}

static float *make_audio(int n, unsigned seed) {
    float *a = malloc(sizeof(float) * (size_t)n);
    uint64_t r = 0x1234567ull + seed;
    for (int i = 0; i < n; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        double noise = (double)(r >> 11) / 9007199254740992.0 - 0.5;
        a[i] = (float)(0.3 * sin(2 * M_PI * (220.0 + 40 * seed) * i / 16000.0) + 0.1 * noise);
    }
    return a;
}

static struct transcribe_session *open_s(const char *path, int n_ctx, transcribe_kv_type kv) {
    return tr_test_open(path, 2, n_ctx, kv);
}

static transcribe_status expect_load(const qa_synth_opts *o, const char *tag) {
    char p[512];
    tmp_path(p, sizeof p, tag);
    CHECK(qa_synth_write(p, o, 1, 1, 7) == 0);
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(p, NULL, NULL, &s);
    transcribe_session_free(s);
    remove(p);
    return st;
}

static void test_bad_files(void) {
    qa_synth_opts o = {0};
    CHECK(expect_load(&o, "ok") == TRANSCRIBE_OK);
    o = (qa_synth_opts){.drop = "dec.blocks.0.attn.k_norm.weight"};
    CHECK(expect_load(&o, "drop") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.drop = "enc.conv_out.weight"};
    CHECK(expect_load(&o, "drop2") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.misshape = "dec.blocks.0.ffn.down.weight"};
    CHECK(expect_load(&o, "shape") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.misshape = "enc.conv.1.weight"};
    CHECK(expect_load(&o, "shape2") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.untied = true};
    CHECK(expect_load(&o, "untied") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.untied = true, .with_head = true};
    CHECK(expect_load(&o, "untied_head") == TRANSCRIBE_OK);
    o = (qa_synth_opts){.drop_key = "stt.qwen3_asr.decoder.rope_theta"};
    CHECK(expect_load(&o, "nokey") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.drop_key = "tokenizer.ggml.eos_token_id"};
    CHECK(expect_load(&o, "noeos") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.wrong_type = "stt.qwen3_asr.encoder.n_layers"};
    CHECK(expect_load(&o, "type") == TRANSCRIBE_ERR_GGUF);
    o = (qa_synth_opts){.drop_key = "stt.qwen3_asr.audio_token_id"};
    CHECK(expect_load(&o, "noaudio") == TRANSCRIBE_ERR_GGUF);

    /* every truncation of a valid file is a load error, never a crash */
    char p[512];
    tmp_path(p, sizeof p, "full");
    CHECK(qa_synth_write(p, NULL, 1, 1, 7) == 0);
    tr_expect_truncations_refused(p);
    remove(p);
}

static void test_caps_and_prompt(void) {
    struct transcribe_session *s = open_s(g_path, 0, TRANSCRIBE_KV_TYPE_AUTO);
    const struct transcribe_model *m = transcribe_get_model(s);
    struct transcribe_capabilities c;
    transcribe_capabilities_init(&c);
    CHECK(transcribe_model_get_capabilities(m, &c) == TRANSCRIBE_OK);
    CHECK(c.native_sample_rate == 16000 && c.supports_language_detect && !c.supports_translate);
    CHECK(c.n_languages == 4 && strcmp(c.languages[1], "en") == 0);
    CHECK(c.max_audio_ms == 5218560);
    CHECK(strcmp(transcribe_model_arch_string(m), "qwen3_asr") == 0);
    struct transcribe_session_limits lim;
    transcribe_session_limits_init(&lim);
    CHECK(transcribe_session_get_limits(s, &lim) == TRANSCRIBE_OK);
    CHECK(lim.effective_n_ctx == 65536);
    CHECK(lim.max_kv_bytes == (int64_t)2 * 1 * QS_LM_KV * QS_HD * 2 * 65536);
    transcribe_session_free(s);

    s = open_s(g_path, 2048, TRANSCRIBE_KV_TYPE_F32);
    transcribe_session_limits_init(&lim);
    transcribe_session_get_limits(s, &lim);
    CHECK(lim.effective_n_ctx == 2048 && lim.effective_max_audio_ms == (2048 - 48 - 256) * 80);
    transcribe_session_free(s);

    /* the prompt of docs/formats/qwen3_asr.md §7 (internal API) */
    gguf_file *g = NULL;
    CHECK(tr_gguf_open(g_path, &g) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = g_path, .gguf = g};
    qa_model *qm = NULL;
    CHECK(tr_qa_model_load(&lc, &qm) == TRANSCRIBE_OK);
    if (qm) {
        int32_t ids[64];
        int n = 0;
        CHECK(tr_qa_build_prompt(qm, 5, NULL, ids, &n) == TRANSCRIBE_OK);
        CHECK(n == 5 + QA_PROMPT_FIXED);
        char *txt = tr_tokenizer_decode(qm->tok, ids, n, false);
        CHECK_MSG(strcmp(txt, "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n<|audio_start|>"
                              "<|audio_pad|><|audio_pad|><|audio_pad|><|audio_pad|><|audio_pad|>"
                              "<|audio_end|><|im_end|>\n<|im_start|>assistant\n") == 0,
                  "%s", txt);
        free(txt);
        CHECK(tr_qa_build_prompt(qm, 2, "en", ids, &n) == TRANSCRIBE_OK);
        txt =
            tr_tokenizer_decode(qm->tok, ids + 2 + QA_PROMPT_FIXED, n - 2 - QA_PROMPT_FIXED, false);
        CHECK_MSG(strcmp(txt, "language English<asr_text>") == 0, "%s", txt);
        free(txt);
        CHECK(tr_qa_build_prompt(qm, 2, "xx", ids, &n) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
        /* docs/formats/qwen3_asr.md §6.1 length rule: 11.0 s → 143 rows; 1 s → 13; 0.5 s → 7 */
        CHECK(tr_qa_enc_frames(qm, 176000) == 143);
        CHECK(tr_qa_enc_frames(qm, 16000) == 13);
        CHECK(tr_qa_enc_frames(qm, 8000) == 7);
        /* docs/formats/qwen3_asr.md §10 parsing with detection */
        tr_result r;
        tr_result_init(&r);
        int32_t out[40];
        int k = tr_tokenizer_encode(qm->tok, "language English", out, 30);
        out[k++] = tr_tokenizer_find(qm->tok, "<asr_text>");
        int k2 = tr_tokenizer_encode(qm->tok, " hi", out + k, 8);
        CHECK(tr_qa_fill_result(qm, out, k + k2, false, 32000, &r) == TRANSCRIBE_OK);
        CHECK(strcmp(tr_result_full_text(&r), " hi") == 0);
        CHECK(tr_result_language(&r) && strcmp(tr_result_language(&r), "en") == 0);
        CHECK(r.n_segs == 1 && r.segs[0].t1_ms == 2000);
        tr_result_free(&r);
        tr_qa_model_free(qm);
    }
    tr_gguf_close(g);
}

static void test_gates(void) {
    struct transcribe_session *s = open_s(g_path, 1024, TRANSCRIBE_KV_TYPE_AUTO);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF; /* the family's own gate, not long audio */
    /* 60 s: 780 audio rows + 15 + 256 > 1024 → rejected before the front end */
    int n = 60 * 16000;
    float *a = make_audio(n, 1);
    CHECK(transcribe_run(s, a, n, &rp) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    struct transcribe_timings t;
    memset(&t, 0, sizeof t);
    /* too short for reflect padding */
    CHECK(transcribe_run(s, a, 150, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.language = "fr"; /* not in general.languages */
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    rp.language = "xx"; /* listed, but no publisher name to force */
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_LANGUAGE);
    rp.language = NULL;
    rp.task = TRANSCRIBE_TASK_TRANSLATE;
    rp.target_language = "en";
    CHECK(transcribe_run(s, a, 16000, &rp) == TRANSCRIBE_ERR_UNSUPPORTED_TASK);
    free(a);
    transcribe_session_free(s);
}

static int g_calls;
static bool abort_after(void *u) {
    return ++g_calls > *(int *)u;
}

/* Random weights rarely say <|im_end|>: the run fills the 256-token budget
 * (OUTPUT_TRUNCATED with the text kept), and abort stops it early. */
static void test_truncate_abort_batch(void) {
    struct transcribe_session *s = open_s(g_path, 0, TRANSCRIBE_KV_TYPE_AUTO);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.chunking = TRANSCRIBE_CHUNKING_OFF; /* whole inputs: the budget and the gate themselves */
    int n = 24000;
    float *a = make_audio(n, 2);
    transcribe_status st = transcribe_run(s, a, n, &rp);
    CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    char *full = strdup(transcribe_raw_text(s));
    CHECK(transcribe_n_segments(s) == 1);
    if (st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED) {
        CHECK(transcribe_was_truncated(s));
        CHECK(strlen(full) > 0);
    }
    /* abort after a few polls: partial text is a prefix of the full one */
    int limit = 6;
    g_calls = 0;
    transcribe_set_abort_callback(s, abort_after, &limit);
    CHECK(transcribe_run(s, a, n, &rp) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s));
    const char *part = transcribe_raw_text(s);
    CHECK(part && strlen(part) > 0 && strlen(part) < strlen(full));
    CHECK(part && strncmp(part, full, strlen(part)) == 0);
    transcribe_set_abort_callback(s, NULL, NULL);

    /* batch: each row gets its single-run text; a too-long row its status */
    transcribe_session_free(s);
    s = open_s(g_path, 1024, TRANSCRIBE_KV_TYPE_AUTO);
    const int lens[4] = {20000, 60 * 16000, 9000, 33000};
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
        CHECK_MSG(transcribe_batch_status(s, i) == sst[i], "row %d: %d vs %d", i,
                  transcribe_batch_status(s, i), sst[i]);
        if (single[i]) {
            const char *bt = transcribe_batch_raw_text(s, i);
            CHECK_MSG(bt && strcmp(bt, single[i]) == 0, "row %d text differs", i);
        }
        free(single[i]);
        free(pcm[i]);
    }
    free(full);
    free(a);
    transcribe_session_free(s);
}

int main(void) {
    tmp_path(g_path, sizeof g_path, "model");
    if (qa_synth_write(g_path, NULL, 1, 1, 11) != 0) {
        fprintf(stderr, "cannot write %s\n", g_path);
        return 1;
    }
    test_bad_files();
    test_caps_and_prompt();
    test_gates();
    test_truncate_abort_batch();
    remove(g_path);
    return TEST_DONE();
}
