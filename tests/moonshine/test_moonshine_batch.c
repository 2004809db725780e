/* A Moonshine batch equals its utterances run one by one: status, text,
 * raw text, token ids and segment of each, for utterances of different
 * lengths (some ending at EOS, some at the position cap) with a too short
 * and a too long one among them (only those fail, each with its own
 * status), on F32 and F16 weights and with an F16 cache; and the batch in
 * one lockstep decode reads every utterance's own encoder output (a batch
 * of one equals the single run too). Synthetic files (mn_synth.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mn_synth.h"
#include "test_util.h"
#include "transcribe.h"

enum { N = 7 };

static float *signal(int n, uint64_t seed) {
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    mn_rng r = {seed * 77u + 5};
    for (int i = 0; i < n; i++)
        x[i] = 0.3f * mn_rand(&r) * (float)(0.5 + 0.5 * sin(i / 800.0 + (double)seed)) +
               0.2f * (float)sin(2 * M_PI * 180.0 * i / 16000.0);
    return x;
}

typedef struct one {
    transcribe_status st;
    char *text, *raw;
    int n_tok;
    int32_t ids[256];
    int64_t t1;
} one;

static void take_single(struct transcribe_session *s, transcribe_status st, one *o) {
    o->st = st;
    o->text = strdup(transcribe_full_text(s) ? transcribe_full_text(s) : "");
    o->raw = strdup(transcribe_raw_text(s) ? transcribe_raw_text(s) : "");
    o->n_tok = transcribe_n_tokens(s);
    for (int k = 0; k < o->n_tok && k < 256; k++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        transcribe_get_token(s, k, &t);
        o->ids[k] = t.id;
    }
    struct transcribe_segment g;
    transcribe_segment_init(&g);
    o->t1 = transcribe_get_segment(s, 0, &g) == TRANSCRIBE_OK ? g.t1_ms : -1;
}

static void compare(const char *what, int wtype, transcribe_kv_type kv) {
    mn_synth c = mn_synth_default();
    c.wtype = wtype;
    char path[512];
    snprintf(path, sizeof path, "%s/mn_batch_%d.gguf", TR_BINARY_DIR, wtype);
    struct transcribe_model *m = NULL;
    CHECK(mn_synth_write(&c, path) && transcribe_model_load_file(path, NULL, &m) == TRANSCRIBE_OK);
    remove(path);
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.kv_type = kv;
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    CHECK(m && transcribe_session_init(m, &sp, &s) == TRANSCRIBE_OK);
    if (!s) {
        transcribe_model_free(m);
        return;
    }
    /* lengths: ordinary, the 895-sample minimum, too short, too long (one
     * call takes 48.5 s), and others */
    const int lens[N] = {16000 * 3, 895, 600, 48500 * 16 + 160, 16000, 16000 * 4 + 777, 24000};
    float *pcm[N];
    for (int i = 0; i < N; i++) pcm[i] = signal(lens[i], (uint64_t)i + 1);
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF; /* the family's own per-utterance gates */
    one single[N];
    int ended = 0, capped = 0;
    for (int i = 0; i < N; i++) {
        take_single(s, transcribe_run(s, pcm[i], lens[i], &p), &single[i]);
        ended += single[i].st == TRANSCRIBE_OK;
        capped += single[i].st == TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }
    CHECK(single[2].st == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(single[3].st == TRANSCRIBE_ERR_INPUT_TOO_LONG);
    printf("%s: %d utterances ended at EOS, %d at the cap\n", what, ended, capped);
    CHECK(ended >= 1 && capped >= 1);

    transcribe_status bst = transcribe_run_batch(s, (const float *const *)pcm, lens, N, &p);
    CHECK(bst == TRANSCRIBE_OK || bst == TRANSCRIBE_ERR_INVALID_ARG ||
          bst == TRANSCRIBE_ERR_INPUT_TOO_LONG || bst == TRANSCRIBE_ERR_OUTPUT_TRUNCATED);
    CHECK(transcribe_batch_n_results(s) == N);
    for (int i = 0; i < N; i++) {
        const one *o = &single[i];
        CHECK_MSG(transcribe_batch_status(s, i) == o->st, "%s utt %d: status %d vs %d", what, i,
                  transcribe_batch_status(s, i), o->st);
        const char *bt = transcribe_batch_full_text(s, i), *br = transcribe_batch_raw_text(s, i);
        CHECK_MSG(!strcmp(bt ? bt : "", o->text), "%s utt %d: [%s] vs [%s]", what, i, bt ? bt : "",
                  o->text);
        CHECK(!strcmp(br ? br : "", o->raw));
        CHECK(transcribe_batch_n_tokens(s, i) == o->n_tok);
        for (int k = 0; k < o->n_tok && k < 256; k++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            CHECK(transcribe_batch_get_token(s, i, k, &t) == TRANSCRIBE_OK && t.id == o->ids[k]);
        }
        struct transcribe_segment g;
        transcribe_segment_init(&g);
        const int64_t t1 =
            transcribe_batch_get_segment(s, i, 0, &g) == TRANSCRIBE_OK ? g.t1_ms : -1;
        CHECK(t1 == o->t1);
    }
    /* a batch of one is the single run */
    const float *first[1] = {pcm[0]};
    transcribe_run_batch(s, first, lens, 1, &p);
    CHECK(transcribe_batch_status(s, 0) == single[0].st);
    CHECK(!strcmp(transcribe_batch_full_text(s, 0), single[0].text));
    for (int i = 0; i < N; i++) {
        free(single[i].text);
        free(single[i].raw);
        free(pcm[i]);
    }
    transcribe_session_free(s);
    transcribe_model_free(m);
}

int main(void) {
    compare("F32", 0, TRANSCRIBE_KV_TYPE_AUTO);
    compare("F16", 1, TRANSCRIBE_KV_TYPE_AUTO);
    compare("F32, F16 cache", 0, TRANSCRIBE_KV_TYPE_F16);
    return TEST_DONE();
}
