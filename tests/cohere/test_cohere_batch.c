/* transcribe_run_batch on Cohere equals one run per utterance (docs/formats/cohere.md
 * §8; src/models/cohere/cohere_batch.c): for F32, F16 and Q8_0 weights and
 * F32 / F16 caches, utterances of different lengths (some stopping at
 * end-of-text, some at the budget) and a too-short one in the middle get
 * their single run's status, text and token ids; one over the input gate
 * gets INPUT_TOO_LONG while the others decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ch_synth.h"
#include "test_util.h"
#include "transcribe.h"

#define N_UTT       6
#define CH_EOS_BIAS 2.5f

static struct transcribe_session *open_session(const char *path, transcribe_kv_type kv,
                                               struct transcribe_model **mo) {
    struct transcribe_model *m = NULL;
    if (transcribe_model_load_file(path, NULL, &m) != TRANSCRIBE_OK) return NULL;
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    sp.kv_type = kv;
    struct transcribe_session *s = NULL;
    if (transcribe_session_init(m, &sp, &s) != TRANSCRIBE_OK) {
        transcribe_model_free(m);
        return NULL;
    }
    *mo = m;
    return s;
}

static void one_config(const char *what, const ch_synth_cfg *cfg, transcribe_kv_type kv,
                       const float *pcm, int n) {
    char path[768];
    snprintf(path, sizeof path, "%s/cohere_batch_%d.gguf", TR_BINARY_DIR, (int)getpid());
    CHECK(ch_synth_write(cfg, path));
    struct transcribe_model *m = NULL;
    struct transcribe_session *s = open_session(path, kv, &m);
    CHECK(s != NULL);
    if (!s) return;
    /* lengths: whole jfk, 3 s, 100 samples (too short), 1.2 s, 7 s at an
     * offset, 0.5 s */
    const int len[N_UTT] = {n, 48000, 100, 19200, 112000, 8000};
    const int off[N_UTT] = {0, 16000, 0, 64000, 48000, 120000};
    const float *u[N_UTT];
    for (int i = 0; i < N_UTT; i++) u[i] = pcm + off[i];
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.chunking = TRANSCRIBE_CHUNKING_OFF;
    transcribe_status st1[N_UTT];
    char *text[N_UTT];
    int ntok[N_UTT], stopped = 0, capped = 0;
    int32_t *ids[N_UTT];
    for (int i = 0; i < N_UTT; i++) {
        st1[i] = transcribe_run(s, u[i], len[i], &p);
        text[i] = strdup(transcribe_full_text(s));
        ntok[i] = transcribe_n_tokens(s);
        ids[i] = calloc((size_t)ntok[i] + 1, sizeof(int32_t));
        for (int j = 0; j < ntok[i]; j++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            transcribe_get_token(s, j, &t);
            ids[i][j] = t.id;
        }
        stopped += st1[i] == TRANSCRIBE_OK;
        capped += st1[i] == TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
    }
    CHECK(st1[2] == TRANSCRIBE_ERR_INVALID_ARG);
    /* the synthetic model must exercise both stops */
    CHECK_MSG(stopped >= 1 && capped >= 1, "%s: %d stopped, %d capped", what, stopped, capped);
    transcribe_status bst = transcribe_run_batch(s, u, len, N_UTT, &p);
    CHECK(bst == TRANSCRIBE_OK || bst == TRANSCRIBE_ERR_OUTPUT_TRUNCATED ||
          bst == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_batch_n_results(s) == N_UTT);
    for (int i = 0; i < N_UTT; i++) {
        CHECK_MSG(transcribe_batch_status(s, i) == st1[i], "%s utt %d: batch %s, single %s", what,
                  i, transcribe_status_string(transcribe_batch_status(s, i)),
                  transcribe_status_string(st1[i]));
        const char *bt = transcribe_batch_full_text(s, i);
        CHECK_MSG(bt && strcmp(bt, text[i]) == 0, "%s utt %d: text differs", what, i);
        CHECK(transcribe_batch_n_tokens(s, i) == ntok[i]);
        bool same = transcribe_batch_n_tokens(s, i) == ntok[i];
        for (int j = 0; same && j < ntok[i]; j++) {
            struct transcribe_token t;
            transcribe_token_init(&t);
            transcribe_batch_get_token(s, i, j, &t);
            same = t.id == ids[i][j];
        }
        CHECK_MSG(same, "%s utt %d: ids differ", what, i);
        if (!same) {
            fprintf(stderr, "  single:");
            for (int j = 0; j < ntok[i]; j++) fprintf(stderr, " %d", ids[i][j]);
            fprintf(stderr, "\n  batch: ");
            for (int j = 0; j < transcribe_batch_n_tokens(s, i); j++) {
                struct transcribe_token t;
                transcribe_token_init(&t);
                transcribe_batch_get_token(s, i, j, &t);
                fprintf(stderr, " %d", t.id);
            }
            fprintf(stderr, "\n");
        }
        free(text[i]);
        free(ids[i]);
    }
    printf("%s: %d utterances, tokens %d %d %d %d %d %d\n", what, N_UTT, ntok[0], ntok[1], ntok[2],
           ntok[3], ntok[4], ntok[5]);
    transcribe_session_free(s);
    transcribe_model_free(m);
    remove(path);
}

int main(void) {
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 16000, &pcm, &n) !=
        TRANSCRIBE_OK) {
        printf("jfk.wav unreadable: skipped\n");
        return 0;
    }
    ch_synth_cfg cfg = ch_synth_default();
    cfg.eos_bias = CH_EOS_BIAS;
    one_config("F32", &cfg, TRANSCRIBE_KV_TYPE_F32, pcm, n);
    one_config("F32 weights, F16 cache", &cfg, TRANSCRIBE_KV_TYPE_F16, pcm, n);
    cfg.enc.f16 = true;
    one_config("F16", &cfg, TRANSCRIBE_KV_TYPE_F16, pcm, n);
    cfg.enc.f16 = false;
    cfg.enc.lin_type = 8; /* TR_Q8_0 */
    one_config("Q8_0", &cfg, TRANSCRIBE_KV_TYPE_F16, pcm, n);
    transcribe_audio_free(pcm);
    return TEST_DONE();
}
