/* Streams with a VAD model (run params' vad_model), on the bundled Parakeet
 * CTC model and Silero VAD: over [utterance A, 2 s silence, utterance B,
 * 2 s silence] fed in 100 ms pieces, A's text is committed at the pause,
 * before any of B is fed, the committed text only grows, and finalize gives
 * B's text after it; a stream over noise and silence commits nothing (also
 * through a random-weight Whisper that hears words in noise); bad
 * VAD settings fail the begin and leave no stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "test_stream_params.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"
#define VAD   TR_SOURCE_DIR "/models/silero-vad-v4.gguf"
/* Random weights: "hears" text in anything, noise included (streamed
 * without a VAD over noise_16k.wav it gives a long run of words). */
#define WHISPER TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf"
#define RATE    16000
#define PIECE   (RATE / 10)

static float *load(const char *path, int *n) {
    float *pcm = NULL;
    if (transcribe_audio_load_file(path, RATE, &pcm, n) != TRANSCRIBE_OK) return NULL;
    return pcm;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static const char *committed(const struct transcribe_session *s) {
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    return t.committed_text;
}

typedef struct outcome {
    char *at_mark; /* committed text when `mark` samples had been fed */
    char *final;   /* committed text after finalize */
    int n_shrink;  /* feeds whose committed text did not extend the last */
    bool ok;
} outcome;

/* One stream with the VAD over pcm[0..n) in 100 ms pieces. */
static outcome stream(struct transcribe_session *s, const struct transcribe_run_params *rp,
                      const float *pcm, int n, int mark) {
    outcome o = {0};
    if (transcribe_stream_begin(s, rp, TU_WINDOW) != TRANSCRIBE_OK) return o;
    char *prev = dup_str("");
    for (int pos = 0; pos < n && prev; pos += PIECE) {
        if (pos == mark) o.at_mark = dup_str(committed(s));
        int take = n - pos < PIECE ? n - pos : PIECE;
        if (transcribe_stream_feed(s, pcm + pos, take, NULL) != TRANSCRIBE_OK) {
            free(prev);
            return o;
        }
        const char *c = committed(s);
        if (strncmp(c, prev, strlen(prev)) != 0) o.n_shrink++;
        free(prev);
        prev = dup_str(c);
    }
    free(prev);
    o.ok = transcribe_stream_finalize(s, NULL) == TRANSCRIBE_OK;
    o.final = dup_str(committed(s));
    return o;
}

static char *offline(struct transcribe_session *s, const float *pcm, int n) {
    if (transcribe_run(s, pcm, n, NULL) != TRANSCRIBE_OK) return NULL;
    return dup_str(transcribe_full_text(s));
}

int main(void) {
    struct transcribe_vad_model *vm = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_vad_model_load(VAD, &vm) == TRANSCRIBE_OK);
    CHECK(transcribe_open(MODEL, NULL, NULL, &s) == TRANSCRIBE_OK);
    int na = 0, nb = 0, nz = 0, nq = 0;
    float *a = load(TR_SOURCE_DIR "/tests/data/bundled/t003-benjamin.wav", &na);
    float *b = load(TR_SOURCE_DIR "/tests/data/bundled/t008-benjamin.wav", &nb);
    float *z = load(TR_SOURCE_DIR "/tests/data/vad/noise_16k.wav", &nz);
    float *q = load(TR_SOURCE_DIR "/tests/data/vad/silence_16k.wav", &nq);
    CHECK(a && b && z && q);
    if (!vm || !s || !a || !b || !z || !q) return TEST_DONE();

    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.vad_model = vm;

    /* [A, 2 s silence, B, 2 s silence]; the mark is B's first sample, on a
     * piece boundary. */
    int gap = 2 * RATE, a_end = (na + gap + PIECE - 1) / PIECE * PIECE;
    int n = a_end + nb + gap;
    float *x = calloc((size_t)n, sizeof *x);
    CHECK(x != NULL);
    if (x) {
        memcpy(x, a, sizeof(float) * (size_t)na);
        memcpy(x + a_end, b, sizeof(float) * (size_t)nb);
        char *ta = offline(s, a, na), *tb = offline(s, b, nb);
        outcome o = stream(s, &rp, x, n, a_end);
        printf("offline A: \"%s\"\noffline B: \"%s\"\n", ta ? ta : "?", tb ? tb : "?");
        printf("committed at the pause: \"%s\"\nfinal: \"%s\"\n", o.at_mark ? o.at_mark : "?",
               o.final ? o.final : "?");
        CHECK(o.ok && o.at_mark && o.final);
        CHECK(o.n_shrink == 0);
        if (o.ok && o.at_mark && o.final && ta && tb) {
            /* A's text is committed at the pause, and it is what the model
             * hears in A alone; B's text follows at finalize. */
            CHECK_MSG(strlen(o.at_mark) > 0, "nothing committed before B was fed");
            CHECK_MSG(strcmp(o.at_mark, ta) == 0, "\"%s\" vs \"%s\"", o.at_mark, ta);
            CHECK(strncmp(o.final, o.at_mark, strlen(o.at_mark)) == 0);
            CHECK_MSG(strlen(o.final) > strlen(o.at_mark) + 1 && strstr(o.final, tb) != NULL,
                      "final \"%s\", B \"%s\"", o.final, tb);
        }
        CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
        free(o.at_mark), free(o.final);
        /* A pad longer than half the minimum silence: a region is published
         * a while after the detector stops hearing speech; its audio must
         * still be there then. */
        struct transcribe_vad_params wide;
        transcribe_vad_params_init(&wide);
        wide.speech_pad_ms = 300;
        rp.vad_params = &wide;
        o = stream(s, &rp, x, n, a_end);
        rp.vad_params = NULL;
        printf("pad 300 ms: at the pause \"%s\", final \"%s\"\n", o.at_mark ? o.at_mark : "?",
               o.final ? o.final : "?");
        CHECK(o.ok && o.at_mark && o.final && o.n_shrink == 0);
        if (o.ok && o.at_mark && o.final && ta && tb) {
            /* All of A is there (this model reads the wider window of
             * digital silence a little differently: the start is not
             * compared exactly). */
            const char *half = strchr(ta + strlen(ta) / 2, ' ');
            CHECK_MSG(half && strstr(o.at_mark, half + 1) != NULL &&
                          strlen(o.at_mark) >= strlen(ta),
                      "\"%s\" vs \"%s\"", o.at_mark, ta);
            CHECK(strstr(o.final, tb) != NULL);
        }
        free(ta), free(tb), free(o.at_mark), free(o.final);
    }
    free(x);

    /* [10 s silence, a sentence, 10 s silence]: the early windows of the
     * region miss its first word, so the region's own decode at its close
     * reads one word more than the text committed by agreement before; the
     * committed text goes on after its own last words, with nothing said
     * twice ("fifty nine nine dollars" before): it is the end of the
     * sentence's offline text. */
    int nk = 0;
    float *k = load(TR_SOURCE_DIR "/samples/synth-heldout-klatt3.wav", &nk);
    CHECK(k != NULL);
    float *h = k ? calloc((size_t)(nk + 20 * RATE), sizeof *h) : NULL;
    if (h) {
        memcpy(h + 10 * RATE, k, sizeof(float) * (size_t)nk);
        char *tk = offline(s, k, nk);
        outcome o = stream(s, &rp, h, nk + 20 * RATE, -1);
        printf("offline: \"%s\"\nstreamed between silences: \"%s\"\n", tk ? tk : "?",
               o.final ? o.final : "?");
        CHECK(o.ok && o.final && tk && o.n_shrink == 0);
        if (o.final && tk) {
            const size_t lf = strlen(o.final), lt = strlen(tk);
            CHECK_MSG(lf > lt / 2 && lf <= lt && !strcmp(tk + lt - lf, o.final),
                      "\"%s\" is not the end of \"%s\"", o.final, tk);
        }
        free(tk), free(o.at_mark), free(o.final);
    }
    free(h), free(k);

    /* Noise then silence: no speech region, so no text at all. */
    int m = nz + nq;
    float *y = malloc(sizeof(float) * (size_t)m);
    CHECK(y != NULL);
    if (y) {
        memcpy(y, z, sizeof(float) * (size_t)nz);
        memcpy(y + nz, q, sizeof(float) * (size_t)nq);
        outcome o = stream(s, &rp, y, m, -1);
        CHECK(o.ok && o.final && o.final[0] == '\0');
        CHECK_MSG(transcribe_full_text(s)[0] == '\0', "\"%s\"", transcribe_full_text(s));
        free(o.at_mark), free(o.final);
        /* The same through a model that hears words in noise: the decoder
         * never sees the noise, so still no text. */
        struct transcribe_session *w = NULL;
        CHECK(transcribe_open(WHISPER, NULL, NULL, &w) == TRANSCRIBE_OK);
        if (w) {
            o = stream(w, &rp, y, m, -1);
            CHECK_MSG(o.ok && o.final && o.final[0] == '\0', "\"%s\"", o.final ? o.final : "?");
            CHECK_MSG(transcribe_full_text(w)[0] == '\0', "\"%s\"", transcribe_full_text(w));
            free(o.at_mark), free(o.final);
            transcribe_close(w);
        }
    }
    free(y);

    /* Bad VAD settings fail the begin before anything changes. */
    struct transcribe_vad_params vp;
    transcribe_vad_params_init(&vp);
    vp.threshold = 1.5f;
    rp.vad_params = &vp;
    transcribe_stream_reset(s);
    CHECK(transcribe_stream_begin(s, &rp, TU_WINDOW) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_IDLE);

    transcribe_audio_free(a), transcribe_audio_free(b), transcribe_audio_free(z),
        transcribe_audio_free(q);
    transcribe_close(s);
    transcribe_vad_model_free(vm);
    return TEST_DONE();
}
