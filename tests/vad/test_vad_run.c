/* transcribe_run with a VAD model: a Whisper model (the random-weight
 * reference model of tests/data/whisper, which "hears" text in anything)
 * gets only the speech regions, so a file with long stretches of noise and
 * silence gets no text there; every time in the result lies inside a speech
 * region of the input's clock. Also the VAD-aware pause splitter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "test_util.h"
#include "transcribe.h"

#define DATA    TR_SOURCE_DIR "/tests/data/vad/"
#define VAD     TR_SOURCE_DIR "/models/silero-vad-v4.gguf"
#define WHISPER TR_SOURCE_DIR "/tests/data/whisper/tiny/whisper-tiny-ref-F16.gguf"

static float *load(const char *name, int *n) {
    float *pcm = NULL;
    char path[512];
    snprintf(path, sizeof path, DATA "%s", name);
    if (transcribe_audio_load_file(path, 16000, &pcm, n) != TRANSCRIBE_OK) return NULL;
    return pcm;
}

/* speech (4 s) | noise 40 s | two speakers (4 s) | digital silence 20 s */
static float *build(int *out_n, int64_t *sp) {
    int ns = 0, nn = 0, nt = 0;
    float *s = load("speech_16k.wav", &ns), *z = load("noise_16k.wav", &nn),
          *t = load("twospk_16k.wav", &nt);
    int n = ns + 10 * nn + nt + 20 * 16000;
    float *x = s && z && t ? calloc((size_t)n, sizeof *x) : NULL;
    if (x) {
        int pos = 0;
        memcpy(x, s, sizeof(float) * (size_t)ns);
        pos += ns;
        for (int k = 0; k < 10; k++, pos += nn) memcpy(x + pos, z, sizeof(float) * (size_t)nn);
        sp[0] = ns;
        sp[1] = pos;
        memcpy(x + pos, t, sizeof(float) * (size_t)nt);
        sp[2] = pos + nt;
    }
    transcribe_audio_free(s), transcribe_audio_free(z), transcribe_audio_free(t);
    *out_n = n;
    return x;
}

/* Both ends of [t0, t1] lie in speech regions (a row may span two regions
 * that were joined: its text still comes from speech only). */
static bool in_region(const int64_t *reg, int nr, int64_t t) {
    for (int i = 0; i < nr; i++)
        if (t >= reg[2 * i] - 1 && t <= reg[2 * i + 1] + 1) return true;
    return false;
}
static bool inside(const int64_t *reg, int nr, int64_t t0, int64_t t1) {
    return in_region(reg, nr, t0) && in_region(reg, nr, t1);
}

int main(void) {
    struct transcribe_vad_model *vm = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_vad_model_load(VAD, &vm) == TRANSCRIBE_OK);
    CHECK(transcribe_open(WHISPER, NULL, NULL, &s) == TRANSCRIBE_OK);
    int n = 0;
    int64_t marks[3] = {0};
    float *x = build(&n, marks);
    CHECK(x != NULL);
    if (!vm || !s || !x) return TEST_DONE();

    /* the VAD's own regions, in ms */
    struct transcribe_vad *v = NULL;
    CHECK(transcribe_vad_init(vm, 16000, NULL, &v) == TRANSCRIBE_OK);
    CHECK(transcribe_vad_run(v, x, n) == TRANSCRIBE_OK);
    int nr = transcribe_vad_n_segments(v);
    int64_t reg[64];
    CHECK(nr >= 2 && nr <= 32);
    for (int i = 0; i < nr && i < 32; i++) {
        struct transcribe_vad_segment sg;
        transcribe_vad_get_segment(v, i, &sg);
        reg[2 * i] = sg.t0_ms;
        reg[2 * i + 1] = sg.t1_ms;
        /* speech regions only where speech was put */
        CHECK_MSG(sg.end <= marks[0] + 16000 ||
                      (sg.start >= marks[1] - 8000 && sg.end <= marks[2] + 8000),
                  "region %lld..%lld ms outside the speech", (long long)sg.t0_ms,
                  (long long)sg.t1_ms);
    }
    transcribe_vad_free(v);

    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.vad_model = vm;
    CHECK(transcribe_run(s, x, n, &rp) == TRANSCRIBE_OK);
    int nseg = transcribe_n_segments(s);
    printf("with VAD: %d regions, %d segments, text '%.60s...'\n", nr, nseg,
           transcribe_full_text(s));
    for (int i = 0; i < nseg; i++) {
        struct transcribe_segment sg;
        sg.struct_size = sizeof sg;
        CHECK(transcribe_get_segment(s, i, &sg) == TRANSCRIBE_OK);
        CHECK_MSG(inside(reg, nr, sg.t0_ms, sg.t1_ms), "segment %d at %lld..%lld ms is not speech",
                  i, (long long)sg.t0_ms, (long long)sg.t1_ms);
    }
    for (int i = 0; i < transcribe_n_tokens(s); i++) {
        struct transcribe_token tk;
        tk.struct_size = sizeof tk;
        CHECK(transcribe_get_token(s, i, &tk) == TRANSCRIBE_OK);
        CHECK_MSG(tk.t0_ms < 0 || inside(reg, nr, tk.t0_ms, tk.t1_ms), "tok %lld..%lld",
                  (long long)tk.t0_ms, (long long)tk.t1_ms);
    }

    /* the noise and silence alone: text without the VAD, none with it */
    const float *quiet = x + marks[2];
    int nq = n - (int)marks[2];
    rp.vad_model = NULL;
    CHECK(transcribe_run(s, x + marks[0], (int)(marks[1] - marks[0]), &rp) == TRANSCRIBE_OK);
    size_t hallucinated = strlen(transcribe_full_text(s));
    printf("noise without VAD: %zu characters of text\n", hallucinated);
    rp.vad_model = vm;
    CHECK(transcribe_run(s, x + marks[0], (int)(marks[1] - marks[0]), &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_n_segments(s) == 0 && strlen(transcribe_full_text(s)) == 0);
    CHECK(transcribe_run(s, quiet, nq, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_n_segments(s) == 0 && strlen(transcribe_full_text(s)) == 0);

    /* bad VAD settings are refused before anything changes */
    struct transcribe_vad_params vp;
    transcribe_vad_params_init(&vp);
    vp.threshold = 2.0f;
    rp.vad_params = &vp;
    CHECK(transcribe_run(s, x, n, &rp) == TRANSCRIBE_ERR_INVALID_ARG);
    rp.vad_params = NULL;
    /* a batch: the whole file, the noise alone, and a bad utterance */
    const float *bp[3] = {x, x + marks[0], NULL};
    int bn[3] = {n, (int)(marks[1] - marks[0]), 5};
    CHECK(transcribe_run_batch(s, bp, bn, 3, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_batch_n_results(s) == 3);
    CHECK(transcribe_batch_status(s, 0) == TRANSCRIBE_OK);
    for (int i = 0; i < transcribe_batch_n_segments(s, 0); i++) {
        struct transcribe_segment sg;
        sg.struct_size = sizeof sg;
        CHECK(transcribe_batch_get_segment(s, 0, i, &sg) == TRANSCRIBE_OK);
        CHECK(inside(reg, nr, sg.t0_ms, sg.t1_ms));
    }
    CHECK(transcribe_batch_n_segments(s, 0) > 0);
    CHECK(transcribe_batch_status(s, 1) == TRANSCRIBE_OK &&
          transcribe_batch_n_segments(s, 1) == 0 && strlen(transcribe_batch_full_text(s, 1)) == 0);
    CHECK(transcribe_batch_status(s, 2) == TRANSCRIBE_ERR_INVALID_ARG);

    /* pause splitting at the VAD's pauses: every cut lies outside speech */
    struct transcribe_pause_split_params pp;
    transcribe_pause_split_params_init(&pp);
    pp.target_ms = 6000;
    pp.max_ms = 9000;
    pp.vad_model = vm;
    struct transcribe_audio_span *spans = NULL;
    int nsp = 0;
    CHECK(transcribe_pause_split(x, n, 16000, &pp, &spans, &nsp) == TRANSCRIBE_OK);
    CHECK(nsp >= 2);
    for (int i = 0; i < nsp; i++) {
        int64_t a = spans[i].start * 1000 / 16000, b = spans[i].end * 1000 / 16000;
        bool covers = false; /* each span holds speech and no region is cut */
        for (int r = 0; r < nr; r++) {
            covers |= reg[2 * r] >= a - 1 && reg[2 * r + 1] <= b + 1;
            CHECK_MSG(!(reg[2 * r] < a - 1 && reg[2 * r + 1] > a + 1) || spans[i].end_kind == 2,
                      "span %d starts inside region %d", i, r);
        }
        CHECK_MSG(covers, "span %lld..%lld", (long long)a, (long long)b);
    }
    transcribe_pause_split_free(spans);
    pp.vad_model = NULL;
    pp.struct_size = sizeof pp - 2 * sizeof(void *); /* an older caller's struct */
    CHECK(transcribe_pause_split(x, n, 16000, &pp, &spans, &nsp) == TRANSCRIBE_OK);
    transcribe_pause_split_free(spans);
    pp.struct_size = sizeof pp;
    pp.vad_model = vm;
    CHECK(transcribe_pause_split(x, n, 44100, &pp, &spans, &nsp) == TRANSCRIBE_ERR_SAMPLE_RATE);

    /* word times of another family (the bundled Parakeet: word-level times)
     * land on the input's clock: speech | 20 s of zeros | speech */
    struct transcribe_session *pk = NULL;
    int ns = 0;
    float *sp = load("speech_16k.wav", &ns);
    CHECK(transcribe_open(TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf", NULL, NULL, &pk) ==
          TRANSCRIBE_OK);
    int n2 = 2 * ns + 20 * 16000;
    float *y = sp ? calloc((size_t)n2, sizeof *y) : NULL;
    if (pk && y) {
        memcpy(y, sp, sizeof(float) * (size_t)ns);
        memcpy(y + ns + 20 * 16000, sp, sizeof(float) * (size_t)ns);
        CHECK(transcribe_vad_init(vm, 16000, NULL, &v) == TRANSCRIBE_OK);
        CHECK(transcribe_vad_run(v, y, n2) == TRANSCRIBE_OK);
        int nr2 = transcribe_vad_n_segments(v);
        int64_t reg2[64];
        for (int i = 0; i < nr2 && i < 32; i++) {
            struct transcribe_vad_segment sg;
            transcribe_vad_get_segment(v, i, &sg);
            reg2[2 * i] = sg.t0_ms;
            reg2[2 * i + 1] = sg.t1_ms;
        }
        transcribe_vad_free(v);
        rp.vad_model = NULL;
        CHECK(transcribe_run(pk, y, n2, &rp) == TRANSCRIBE_OK);
        int words_plain = transcribe_n_words(pk);
        rp.vad_model = vm;
        CHECK(transcribe_run(pk, y, n2, &rp) == TRANSCRIBE_OK);
        int nw = transcribe_n_words(pk), late = 0;
        int64_t prev = 0;
        for (int i = 0; i < nw; i++) {
            struct transcribe_word wd;
            wd.struct_size = sizeof wd;
            CHECK(transcribe_get_word(pk, i, &wd) == TRANSCRIBE_OK);
            CHECK_MSG(inside(reg2, nr2, wd.t0_ms, wd.t1_ms) && wd.t0_ms >= prev,
                      "word %d at %lld..%lld ms", i, (long long)wd.t0_ms, (long long)wd.t1_ms);
            prev = wd.t0_ms;
            late += wd.t0_ms >= (ns + 20 * 16000) / 16;
        }
        printf("parakeet: %d words with VAD (%d in the second copy), %d without\n", nw, late,
               words_plain);
        CHECK(nw > 0 && late > 0 && late < nw);
        /* regions cut short by max_speech_s (each cut keeps its padding, so
         * neighbours overlap) are joined as one piece of the input's own
         * audio: no sample twice, no pause put inside a word (a model heard
         * "and and fifty nine nine" across those pauses) */
        struct transcribe_vad_params cut;
        transcribe_vad_params_init(&cut);
        cut.max_speech_s = 0.5f;
        tr_vad_join whole, parts;
        CHECK(tr_vad_join_plan(vm, NULL, 16000, y, n2, &whole) == TRANSCRIBE_OK);
        CHECK(tr_vad_join_plan(vm, &cut, 16000, y, n2, &parts) == TRANSCRIBE_OK);
        for (int i = 1; i < parts.n_pieces; i++) {
            const tr_vad_piece *a = &parts.pieces[i - 1], *b = &parts.pieces[i];
            CHECK_MSG(b->orig - (a->orig + a->len) >= 1600, "pieces %d and %d: %lld..%lld, %lld..",
                      i - 1, i, (long long)a->orig, (long long)(a->orig + a->len),
                      (long long)b->orig);
        }
        printf("vad join: %d pieces, %d samples; cut at 0.5 s: %d pieces, %d samples\n",
               whole.n_pieces, whole.n, parts.n_pieces, parts.n);
        CHECK(parts.n_pieces >= 1 && parts.n <= whole.n + 16000 / 5);
        tr_vad_join_free(&whole);
        tr_vad_join_free(&parts);
        rp.vad_params = &cut;
        CHECK(transcribe_run(pk, y, n2, &rp) == TRANSCRIBE_OK && transcribe_n_words(pk) > 0);
        rp.vad_params = NULL;
    }
    free(y);
    transcribe_audio_free(sp);
    transcribe_close(pk);

    free(x);
    transcribe_close(s);
    transcribe_vad_model_free(vm);
    return TEST_DONE();
}
