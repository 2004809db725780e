/* transcribe_run_batch against single runs on the reference models of
 * Whisper, Parakeet (TDT, RNN-T, CTC), Canary and Voxtral Realtime: 8 utterances of mixed
 * lengths (slices of two recordings; one repeated to 110 s, past
 * Parakeet's single-pass window and Whisper's 30 s window) must give, per utterance,
 * exactly the single run's status, text, tokens (ids and times), words and
 * segments; rows that cannot run (NULL pcm, no samples, over Canary's input
 * limit) get their own status while the rest decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "test_util.h"
#include "transcribe.h"

#define N_UTT 8

static float *load_wav(const char *name, int *n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s.wav", TR_CORPUS_DIR, name);
    tr_audio a;
    if (tr_audio_load_file(path, 16000, &a) != TRANSCRIBE_OK) return NULL;
    *n = (int)a.n;
    return a.pcm;
}

/* One utterance's outcome, read through the single or batch accessors. */
typedef struct outcome {
    transcribe_status st;
    char err[256]; /* a failed utterance's reason: last_error, or transcribe_batch_error */
    char *text;
    int n_tok, n_word, n_seg;
    struct transcribe_token tok[512];
    struct transcribe_word word[256];
    struct transcribe_segment seg[64];
} outcome;

static void read_outcome(struct transcribe_session *s, int i, transcribe_status st, outcome *o) {
    memset(o, 0, sizeof *o);
    o->st = st;
    bool batch = i >= 0;
    const char *why = batch ? transcribe_batch_error(s, i) : transcribe_session_last_error(s);
    snprintf(o->err, sizeof o->err, "%s", why ? why : "");
    if (st != TRANSCRIBE_OK) return;
    const char *t = batch ? transcribe_batch_full_text(s, i) : transcribe_full_text(s);
    o->text = strdup(t ? t : "");
    o->n_tok = batch ? transcribe_batch_n_tokens(s, i) : transcribe_n_tokens(s);
    o->n_word = batch ? transcribe_batch_n_words(s, i) : transcribe_n_words(s);
    o->n_seg = batch ? transcribe_batch_n_segments(s, i) : transcribe_n_segments(s);
    if (o->n_tok > 512) o->n_tok = 512;
    if (o->n_word > 256) o->n_word = 256;
    if (o->n_seg > 64) o->n_seg = 64;
    for (int j = 0; j < o->n_tok; j++) {
        o->tok[j].struct_size = sizeof o->tok[j];
        if (batch)
            transcribe_batch_get_token(s, i, j, &o->tok[j]);
        else
            transcribe_get_token(s, j, &o->tok[j]);
    }
    for (int j = 0; j < o->n_word; j++) {
        o->word[j].struct_size = sizeof o->word[j];
        if (batch)
            transcribe_batch_get_word(s, i, j, &o->word[j]);
        else
            transcribe_get_word(s, j, &o->word[j]);
    }
    for (int j = 0; j < o->n_seg; j++) {
        o->seg[j].struct_size = sizeof o->seg[j];
        if (batch)
            transcribe_batch_get_segment(s, i, j, &o->seg[j]);
        else
            transcribe_get_segment(s, j, &o->seg[j]);
    }
}

static void compare(const char *what, int i, const outcome *a, const outcome *b) {
    CHECK_MSG(a->st == b->st, "%s utt %d: status %d (single) vs %d (batch)", what, i, a->st, b->st);
    if (a->st != TRANSCRIBE_OK || b->st != TRANSCRIBE_OK) return;
    CHECK_MSG(!strcmp(a->text, b->text), "%s utt %d: [%s] vs [%s]", what, i, a->text, b->text);
    CHECK_MSG(a->n_tok == b->n_tok && a->n_word == b->n_word && a->n_seg == b->n_seg,
              "%s utt %d: rows %d/%d/%d vs %d/%d/%d", what, i, a->n_tok, a->n_word, a->n_seg,
              b->n_tok, b->n_word, b->n_seg);
    int bad = 0;
    for (int j = 0; j < a->n_tok && j < b->n_tok; j++)
        if (a->tok[j].id != b->tok[j].id || a->tok[j].t0_ms != b->tok[j].t0_ms ||
            a->tok[j].t1_ms != b->tok[j].t1_ms)
            bad++;
    for (int j = 0; j < a->n_word && j < b->n_word; j++)
        if (a->word[j].t0_ms != b->word[j].t0_ms || a->word[j].t1_ms != b->word[j].t1_ms) bad++;
    for (int j = 0; j < a->n_seg && j < b->n_seg; j++)
        if (a->seg[j].t0_ms != b->seg[j].t0_ms || a->seg[j].t1_ms != b->seg[j].t1_ms) bad++;
    CHECK_MSG(bad == 0, "%s utt %d: %d token/word/segment rows differ", what, i, bad);
}

static bool abort_after(void *u) {
    int *left = u;
    return --*left < 0;
}

typedef struct audio_set {
    const float *pcm[N_UTT];
    int n[N_UTT];
} audio_set;

/* Runs the set through single runs and one batch; want[i] (when not -1)
 * is the status utterance i must get. */
static void check_model_with(const char *what, const char *path, const audio_set *a,
                             const transcribe_status *want,
                             const struct transcribe_run_params *rp) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_session *s = NULL;
    transcribe_status st = transcribe_open(path, NULL, &sp, &s);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: open %s: %s", what, path, transcribe_status_string(st));
    if (st != TRANSCRIBE_OK) return;
    outcome *single = calloc(N_UTT, sizeof *single), *batch = calloc(N_UTT, sizeof *batch);
    CHECK(single && batch);
    for (int i = 0; i < N_UTT; i++) {
        const bool runs = a->pcm[i] && a->n[i] > 0;
        transcribe_status u =
            runs ? transcribe_run(s, a->pcm[i], a->n[i], rp) : TRANSCRIBE_ERR_INVALID_ARG;
        read_outcome(s, -1, u, &single[i]);
        if (!runs) single[i].err[0] = '\0'; /* no run: no message of its own */
    }
    st = transcribe_run_batch(s, a->pcm, a->n, N_UTT, rp);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: batch: %s", what, transcribe_status_string(st));
    CHECK(transcribe_batch_n_results(s) == N_UTT);
    int n_ok = 0;
    for (int i = 0; i < N_UTT; i++) {
        read_outcome(s, i, transcribe_batch_status(s, i), &batch[i]);
        compare(what, i, &single[i], &batch[i]);
        if (want[i] != (transcribe_status)-1)
            CHECK_MSG(batch[i].st == want[i], "%s utt %d: status %s, want %s", what, i,
                      transcribe_status_string(batch[i].st), transcribe_status_string(want[i]));
        n_ok += batch[i].st == TRANSCRIBE_OK && batch[i].text[0] != 0;
        /* a failed utterance says why, in the words its single run used */
        const bool failed =
            batch[i].st != TRANSCRIBE_OK && batch[i].st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED;
        if (!failed) {
            CHECK_MSG(batch[i].err[0] == 0, "%s utt %d: an error (%s) for a finished utterance",
                      what, i, batch[i].err);
            continue;
        }
        CHECK_MSG(batch[i].err[0] && strcmp(batch[i].err, transcribe_status_string(batch[i].st)),
                  "%s utt %d: no reason beyond its status (%s)", what, i, batch[i].err);
        if (single[i].err[0])
            CHECK_MSG(!strcmp(batch[i].err, single[i].err),
                      "%s utt %d: batch says [%s], its run [%s]", what, i, batch[i].err,
                      single[i].err);
        printf("%s utt %d: %s: %s\n", what, i, transcribe_status_string(batch[i].st), batch[i].err);
    }
    /* the reference models say something for every real slice */
    CHECK_MSG(n_ok >= 4, "%s: only %d utterances produced text", what, n_ok);
    printf("%s: %d of %d utterances with text, batch == single\n", what, n_ok, N_UTT);
    /* abort part-way (at a quarter and at three quarters of the polls a
     * whole batch makes): ABORTED, every slot reported, completed ones kept */
    int total = 1 << 30;
    transcribe_set_abort_callback(s, abort_after, &total);
    CHECK(transcribe_run_batch(s, a->pcm, a->n, N_UTT, rp) == TRANSCRIBE_OK);
    total = (1 << 30) - total;
    for (int q = 1; q <= 3; q += 2) {
        const int polls = total * q / 4;
        int left = polls;
        transcribe_set_abort_callback(s, abort_after, &left);
        st = transcribe_run_batch(s, a->pcm, a->n, N_UTT, rp);
        transcribe_set_abort_callback(s, NULL, NULL);
        CHECK_MSG(st == TRANSCRIBE_ERR_ABORTED && transcribe_was_aborted(s),
                  "%s: abort after %d polls: %s", what, polls, transcribe_status_string(st));
        CHECK(transcribe_batch_n_results(s) == N_UTT);
        int n_aborted = 0;
        for (int i = 0; i < N_UTT; i++) {
            transcribe_status u = transcribe_batch_status(s, i);
            n_aborted += u == TRANSCRIBE_ERR_ABORTED;
            if (u == TRANSCRIBE_ERR_ABORTED) continue;
            CHECK_MSG(u == single[i].st, "%s: abort: utt %d status %d vs %d", what, i, u,
                      single[i].st);
            const char *t = transcribe_batch_full_text(s, i);
            if (u == TRANSCRIBE_OK)
                CHECK_MSG(t && !strcmp(t, single[i].text), "%s: abort: utt %d text differs", what,
                          i);
        }
        CHECK_MSG(n_aborted > 0, "%s: abort after %d polls left no slot ABORTED", what, polls);
    }
    for (int i = 0; i < N_UTT; i++) {
        free(single[i].text);
        free(batch[i].text);
    }
    free(single);
    free(batch);
    transcribe_close(s);
}

static void check_model(const char *what, const char *path, const audio_set *a,
                        const transcribe_status *want) {
    check_model_with(what, path, a, want, NULL);
}

int main(void) {
    int n_jfk = 0, n_we = 0;
    float *jfk = load_wav("jfk", &n_jfk);
    float *we = load_wav("whole-earth", &n_we);
    CHECK(jfk && we && n_jfk > 16000 * 10 && n_we > 16000 * 10);
    if (!jfk || !we) return TEST_DONE();
    /* ~110 s: jfk repeated, past Parakeet's 102 s single-pass window */
    const int reps = 10;
    float *longer = malloc((size_t)n_jfk * reps * sizeof(float));
    CHECK(longer != NULL);
    for (int r = 0; r < reps; r++) memcpy(longer + (size_t)r * n_jfk, jfk, n_jfk * sizeof(float));

    const int sr = 16000;
    audio_set mixed = {
        {jfk, jfk + sr, we, jfk + 2 * sr, we + 3 * sr, jfk, we + sr / 2, jfk + sr / 3},
        {n_jfk, 4 * sr, 6 * sr + 1234, 7 * sr, 5 * sr + 77, sr * 3 / 2, 9 * sr, 2 * sr + 5}};
    const transcribe_status any[N_UTT] = {-1, -1, -1, -1, -1, -1, -1, -1};

    /* Parakeet: one NULL row, one empty row, one windowed (110 s) row */
    audio_set pk = mixed;
    pk.pcm[5] = NULL;
    pk.n[6] = 0;
    pk.pcm[3] = longer;
    pk.n[3] = n_jfk * reps;
    transcribe_status pk_want[N_UTT] = {-1, -1, -1, -1, -1, -1, -1, -1};
    pk_want[5] = pk_want[6] = TRANSCRIBE_ERR_INVALID_ARG;
    pk_want[3] = TRANSCRIBE_OK;
    const char *pk_models[][2] = {
        {"parakeet tdt", "tests/data/parakeet/tiny-tdt/parakeet-tiny-tdt-F32.gguf"},
        {"parakeet rnnt", "tests/data/parakeet/tiny-rnnt/parakeet-tiny-rnnt-F16.gguf"},
        {"parakeet ctc", "tests/data/parakeet/tiny-ctc/parakeet-tiny-ctc-F16.gguf"},
    };
    for (int k = 0; k < 3; k++) check_model(pk_models[k][0], pk_models[k][1], &mixed, any);
    check_model("parakeet tdt (bad rows)", pk_models[0][1], &pk, pk_want);

    /* Canary: one row over the input limit gets INPUT_TOO_LONG when long
     * audio is not split (chunking off; by default the library splits it) */
    audio_set cn = mixed;
    transcribe_status cn_want[N_UTT] = {-1, -1, -1, -1, -1, -1, -1, -1};
    const int over = 16000 * 60 * 7; /* 7 min > the 5000-frame (400 s) limit */
    float *huge = calloc((size_t)over, sizeof(float));
    CHECK(huge != NULL);
    cn.pcm[4] = huge;
    cn.n[4] = over;
    cn_want[4] = TRANSCRIBE_ERR_INPUT_TOO_LONG;
    cn.pcm[6] = NULL;
    cn_want[6] = TRANSCRIBE_ERR_INVALID_ARG;
    const char *cn_path = "tests/data/canary/tiny-canary2/tiny-canary2-ref-F32.gguf";
    check_model("canary", cn_path, &mixed, any);
    struct transcribe_run_params whole;
    transcribe_run_params_init(&whole);
    whole.chunking = TRANSCRIBE_CHUNKING_OFF;
    check_model_with("canary (bad rows)", cn_path, &cn, cn_want, &whole);
    check_model("canary f16", "tests/data/canary/tiny-canary2/tiny-canary2-ref-F16.gguf", &mixed,
                any);

    /* Whisper: every utterance on its own member of the batch hub; one
     * long-form row (four 30 s windows), one NULL row */
    const char *wh_path = "tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf";
    check_model("whisper", wh_path, &mixed, any);
    audio_set wh = mixed;
    transcribe_status wh_want[N_UTT] = {-1, -1, -1, -1, -1, -1, -1, -1};
    wh.pcm[2] = longer;
    wh.n[2] = n_jfk * reps;
    wh_want[2] = TRANSCRIBE_OK;
    wh.pcm[7] = NULL;
    wh_want[7] = TRANSCRIBE_ERR_INVALID_ARG;
    check_model("whisper (long and bad rows)", wh_path, &wh, wh_want);

    /* Voxtral Realtime: lockstep rows, each adding its own audio rows, past the tiny file's
     * 48-position decoder window (its ring) like the single runs; one NULL row */
    const char *vr_path = "tests/data/voxtral_realtime/voxtral-realtime-tiny-ref-F16.gguf";
    check_model("voxtral_realtime", vr_path, &mixed, any);
    audio_set vr = mixed;
    transcribe_status vr_want[N_UTT] = {-1, -1, -1, -1, -1, -1, -1, -1};
    vr.pcm[1] = NULL;
    vr_want[1] = TRANSCRIBE_ERR_INVALID_ARG;
    check_model("voxtral_realtime (bad row)", vr_path, &vr, vr_want);

    free(huge);
    free(longer);
    free(jfk);
    free(we);
    return TEST_DONE();
}
