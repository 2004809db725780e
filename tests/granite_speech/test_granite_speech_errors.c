/* Granite Speech bad inputs and parsing edge cases, from rewrites of the tiny reference file (no
 * goldens needed): every short prefix of the file, a key of the wrong type, a missing or misshaped
 * tensor, a non-gelu projector, a bad BatchNorm variance; over-limit audio refused before any
 * front-end work; abort before the encoder; OUTPUT_TRUNCATED with the partial text kept (single and
 * batch rows); the docs/formats/granite_speech.md §10 parser on malformed markers, rollovers,
 * silences and speaker text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "gguf_edit.h"
#include "models/granite_speech/granite.h"
#include "tensor/dtype.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define SRC TR_SOURCE_DIR "/tests/data/granite/tiny-plus/granite-tiny-plus-ref-F32.gguf"

typedef struct edit {
    const char *drop_key, *i32_key, *str_key, *str_val;
    const char *drop_tensor, *grow_tensor, *negate_tensor;
} edit;

/* A tensor_hook: the F32 tensor named by user with its first value -1. */
static bool negate_first(gguf_writer *w, const tr_tensor *t, bool *ok, void *user) {
    if (strcmp(t->name, (const char *)user) != 0) return false;
    float *v = malloc(t->nbytes);
    if (v) {
        memcpy(v, t->data, t->nbytes);
        v[0] = -1.0f;
    }
    *ok = v && tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, v);
    free(v);
    return true;
}

/* SRC with one edit must load with status want. */
static void expect_load(const char *what, const edit *e, transcribe_status want) {
    const tr_gguf_edit k = {.drop_kv = e->drop_key,
                            .kv_as_i32 = e->i32_key,
                            .kv_as_i32_value = 1,
                            .kv_str = e->str_key,
                            .kv_str_value = e->str_val,
                            .drop_tensor = e->drop_tensor,
                            .longer = e->grow_tensor,
                            .tensor_hook = e->negate_tensor ? negate_first : NULL,
                            .hook_user = (void *)e->negate_tensor};
    tr_expect_load(SRC, &k, want, what);
}

static void test_bad_files(void) {
    expect_load("unchanged", &(edit){0}, TRANSCRIBE_OK);
    expect_load("n_layers as INT32", &(edit){.i32_key = "stt.granite.encoder.n_layers"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("multiplier as INT32",
                &(edit){.i32_key = "stt.granite.decoder.residual_multiplier"}, TRANSCRIBE_ERR_GGUF);
    expect_load("no logits_scaling", &(edit){.drop_key = "stt.granite.decoder.logits_scaling"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("no audio_token_id", &(edit){.drop_key = "stt.granite.audio_token_id"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("cat_hidden_layers as INT32",
                &(edit){.i32_key = "stt.granite.encoder.cat_hidden_layers"}, TRANSCRIBE_ERR_GGUF);
    expect_load("relu projector",
                &(edit){.str_key = "stt.granite.projector.hidden_act", .str_val = "relu"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("per_feature front end",
                &(edit){.str_key = "stt.frontend.normalize", .str_val = "per_feature"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("slaney mel", &(edit){.str_key = "stt.frontend.mel_norm", .str_val = "slaney"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("no filterbank", &(edit){.drop_tensor = "frontend.mel_filterbank"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("no rel_pos_emb", &(edit){.drop_tensor = "enc.blocks.1.attn.rel_pos_emb.weight"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("misshaped kv", &(edit){.grow_tensor = "enc.blocks.0.attn.kv.weight"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("4 queries", &(edit){.grow_tensor = "proj.query"}, TRANSCRIBE_ERR_GGUF);
    expect_load("no cross k", &(edit){.drop_tensor = "proj.qformer.blocks.1.cross_attn.k.weight"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("no ffn.down", &(edit){.drop_tensor = "dec.blocks.2.ffn.down.weight"},
                TRANSCRIBE_ERR_GGUF);
    expect_load("negative BN variance",
                &(edit){.negate_tensor = "enc.blocks.0.conv.bn.running_var"}, TRANSCRIBE_ERR_GGUF);

    /* every prefix of a real file is a load error, never a crash */
    size_t len = 0;
    char *bytes = tr_test_read_text(SRC, &len);
    CHECK(bytes != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/granite_trunc.gguf", TR_BINARY_DIR);
    for (int i = 1; bytes && i < 12; i++) {
        size_t cut = len * (size_t)i / 12;
        FILE *fp = fopen(path, "wb");
        fwrite(bytes, 1, cut, fp);
        fclose(fp);
        struct transcribe_model *m = NULL;
        transcribe_status st = transcribe_model_load_file(path, NULL, &m);
        CHECK_MSG(st == TRANSCRIBE_ERR_GGUF && !m, "prefix %zu of %zu: %s", cut, len,
                  transcribe_status_string(st));
        transcribe_model_free(m);
    }
    remove(path);
    free(bytes);
}

static int g_polls;
static bool abort_now(void *user) {
    (void)user;
    g_polls++;
    return true;
}

/* Over-limit audio is refused before any front-end work; abort before the
 * encoder returns ABORTED with no text. */
static void test_gate_and_abort(void) {
    gguf_file *f = NULL;
    CHECK(tr_gguf_open(SRC, &f) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = SRC, .gguf = f};
    gs_model *m = NULL;
    CHECK(tr_gs_model_load(&lc, &m) == TRANSCRIBE_OK);
    if (!m) {
        tr_gguf_close(f);
        return;
    }
    /* 6.3 min (max_audio_ms) fits 4096; 7 min does not */
    CHECK(m->max_audio_ms == 377400);
    const int n = 7 * 60 * 16000;
    float *pcm = calloc((size_t)n, sizeof(float));
    gs_session *s = NULL;
    CHECK(tr_gs_session_create(m, NULL, &s) == TRANSCRIBE_OK);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    CHECK(tr_gs_run(s, pcm, n, &ctx) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(s->mel_ms == 0 && s->encode_ms == 0 && r.mel_ms == 0 && s->dec.prefill_ms == 0);
    tr_result_clear(&r);
    ctx.abort_cb = abort_now;
    CHECK(tr_gs_run(s, pcm, 16000, &ctx) == TRANSCRIBE_ERR_ABORTED);
    CHECK(g_polls == 1 && s->encode_ms == 0 && r.n_segs == 0);
    tr_result_free(&r);
    tr_gs_session_free(s);
    free(pcm);
    tr_gs_model_free(m);
    tr_gguf_close(f);
}

/* OUTPUT_TRUNCATED: with the budget lowered below the text's length the
 * single run and every batch row keep their partial text (a proper prefix
 * of the untruncated text) and report the status per row, next to a row
 * with its own error. (Rows finishing independently inside one batch:
 * tests/causal_lm.) */
static void test_truncated(void) {
    gguf_file *f = NULL;
    CHECK(tr_gguf_open(SRC, &f) == TRANSCRIBE_OK);
    tr_load_ctx lc = {.path = SRC, .gguf = f};
    gs_model *m = NULL;
    CHECK(tr_gs_model_load(&lc, &m) == TRANSCRIBE_OK);
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(TR_SOURCE_DIR "/samples/jfk.wav", 16000, &pcm, &n) ==
          TRANSCRIBE_OK);
    if (!m || !pcm) {
        tr_gs_model_free(m);
        tr_gguf_close(f);
        return;
    }
    gs_session *s = NULL;
    CHECK(tr_gs_session_create(m, NULL, &s) == TRANSCRIBE_OK);
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    tr_result r;
    tr_result_init(&r);
    tr_run_ctx ctx = {.params = &rp, .result = &r};
    CHECK(tr_gs_run(s, pcm, n, &ctx) == TRANSCRIBE_OK);
    char *full = strdup(tr_result_raw_text(&r));
    const int n_full = s->n_last;
    tr_result_clear(&r);

    CHECK(n_full > 12);
    s->budget = 10;
    CHECK(tr_gs_run(s, pcm, n, &ctx) == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(ctx.truncated && s->n_last == 10);
    const char *part = tr_result_raw_text(&r);
    CHECK_MSG(part && part[0] && strlen(part) < strlen(full) &&
                  strncmp(part, full, strlen(part)) == 0,
              "partial text '%s' of '%s'", part ? part : "(null)", full);
    char *trunc = strdup(part ? part : "");
    tr_result_clear(&r);

    /* batch: two truncating rows (of different lengths) around a too-short one */
    const float *pcms[3] = {pcm, pcm, pcm + n / 3};
    const int ns[3] = {n, 100, n / 2};
    tr_result rs[3];
    tr_run_ctx ctxs[3];
    for (int i = 0; i < 3; i++) {
        tr_result_init(&rs[i]);
        ctxs[i] = (tr_run_ctx){.params = &rp, .result = &rs[i]};
    }
    CHECK(tr_gs_run_batch(s, pcms, ns, 3, ctxs) == TRANSCRIBE_OK);
    CHECK(rs[0].status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && ctxs[0].truncated);
    CHECK(strcmp(tr_result_raw_text(&rs[0]), trunc) == 0);
    CHECK(rs[1].status == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(rs[2].status == TRANSCRIBE_ERR_OUTPUT_TRUNCATED && ctxs[2].truncated);
    /* with the budget back, every decodable row ends with OK */
    s->budget = 0;
    for (int i = 0; i < 3; i++) {
        tr_result_clear(&rs[i]);
        ctxs[i].truncated = false;
    }
    CHECK(tr_gs_run_batch(s, pcms, ns, 3, ctxs) == TRANSCRIBE_OK);
    CHECK(rs[0].status == TRANSCRIBE_OK && strcmp(tr_result_raw_text(&rs[0]), full) == 0);
    CHECK(rs[2].status == TRANSCRIBE_OK && !ctxs[2].truncated);
    for (int i = 0; i < 3; i++) tr_result_free(&rs[i]);
    free(full);
    free(trunc);
    tr_result_free(&r);
    tr_gs_session_free(s);
    transcribe_audio_free(pcm);
    tr_gs_model_free(m);
    tr_gguf_close(f);
}

typedef struct wrow {
    int64_t t0, t1;
    const char *text;
} wrow;

static void parse_words(const char *raw, int64_t audio_ms, const wrow *want, int n,
                        const char *full) {
    tr_result r;
    tr_result_init(&r);
    CHECK(tr_gs_parse_text(raw, true, false, audio_ms, &r) == TRANSCRIBE_OK);
    CHECK_MSG(r.n_words == n, "'%s': %d words, want %d", raw, r.n_words, n);
    for (int i = 0; i < n && i < r.n_words; i++)
        CHECK_MSG(r.words[i].t0_ms == want[i].t0 && r.words[i].t1_ms == want[i].t1 &&
                      strcmp(tr_result_str(&r, r.words[i].text_off), want[i].text) == 0,
                  "'%s' word %d: %lld %lld '%s'", raw, i, (long long)r.words[i].t0_ms,
                  (long long)r.words[i].t1_ms, tr_result_str(&r, r.words[i].text_off));
    CHECK_MSG(strcmp(tr_result_full_text(&r), full) == 0, "'%s' → '%s'", raw,
              tr_result_full_text(&r));
    CHECK(strcmp(tr_result_raw_text(&r), raw) == 0);
    CHECK(r.ts_kind == (n ? TRANSCRIBE_TIMESTAMPS_WORD : TRANSCRIBE_TIMESTAMPS_NONE));
    tr_result_free(&r);
}

static void test_parse(void) {
    /* rollover twice, a silence, spaces inside a marker, malformed markers kept as text */
    parse_words(
        "a [T:990] _ [T: 5 ] b [T:10] c[T:x] d [T:3] e", 25000,
        (const wrow[]){
            {0, 9900, "a"}, {10050, 10100, "b"}, {10100, 20030, "c[T:x] d"}, {20030, 25000, "e"}},
        4, "a b c[T:x] d e");
    /* trailing word after the audio end keeps t1 = last end */
    parse_words("x [T:500] y", 3000, (const wrow[]){{0, 5000, "x"}, {5000, 5000, "y"}}, 2, "x y");
    /* no word at all: the plain result */
    parse_words(" _ [T:12] ", 1000, NULL, 0, " _ [T:12] ");
    /* text without any marker is one trailing word over the whole clip
     * (docs/formats/granite_speech.md §10.1) */
    parse_words("no markers", 1000, (const wrow[]){{0, 1000, "no markers"}}, 1, "no markers");

    tr_result r;
    tr_result_init(&r);
    /* leading unattributed text, [Speaker 0] kept verbatim, ':' and one space consumed */
    CHECK(tr_gs_parse_text("hi [Speaker 2]:  yo [Speaker 0] x[Speaker 1]z", false, true, 1000,
                           &r) == TRANSCRIBE_OK);
    CHECK(r.n_segs == 3 && r.n_spk == 2);
    if (r.n_segs == 3 && r.n_spk == 2) {
        CHECK(r.segs[0].speaker_id == 0 &&
              strcmp(tr_result_str(&r, r.segs[0].text_off), "hi") == 0);
        CHECK(r.segs[1].speaker_id == 2 &&
              strcmp(tr_result_str(&r, r.segs[1].text_off), "yo [Speaker 0] x") == 0);
        CHECK(r.segs[2].speaker_id == 1 && strcmp(tr_result_str(&r, r.segs[2].text_off), "z") == 0);
        CHECK(r.spk[0].speaker_id == 2 && r.spk[1].speaker_id == 1 && isnan(r.spk[0].p));
    }
    CHECK(strcmp(tr_result_full_text(&r), "hi yo [Speaker 0] x z") == 0);
    tr_result_clear(&r);
    /* an empty leading turn is dropped; no marker falls through to plain */
    CHECK(tr_gs_parse_text("  [Speaker 1] a", false, true, 1000, &r) == TRANSCRIBE_OK);
    CHECK(r.n_segs == 1 && r.segs[0].speaker_id == 1 && r.n_spk == 1);
    tr_result_clear(&r);
    CHECK(tr_gs_parse_text(" plain [Speaker x]", false, true, 2000, &r) == TRANSCRIBE_OK);
    CHECK(r.n_segs == 1 && r.segs[0].speaker_id == 0 && r.segs[0].t1_ms == 2000 && r.n_spk == 0);
    CHECK(strcmp(tr_result_full_text(&r), " plain [Speaker x]") == 0);
    tr_result_free(&r);
}

int main(void) {
    test_bad_files();
    test_gate_and_abort();
    test_truncated();
    test_parse();
    return TEST_DONE();
}
