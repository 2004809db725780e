/* Silero VAD: parity with the original ONNX network (goldens written by
 * tools/ref/silero_vad/goldens.js in onnxruntime-node), the segment rules
 * against the Python reference (tools/ref/silero_vad/segments_ref.py), the
 * streaming feed (in odd pieces) against the offline run, and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"
#include "vad/vad.h"

#define DATA  TR_SOURCE_DIR "/tests/data/vad/"
#define MODEL TR_SOURCE_DIR "/models/silero-vad-v4.gguf"

static struct transcribe_vad_model *g_model;

static void quiet(transcribe_log_level level, const char *msg, void *ud) {
    (void)level, (void)msg, (void)ud;
}

/* probabilities of a whole excerpt vs its golden, chunk by chunk */
static void parity(const char *name, int rate, int win, double *worst) {
    char wav[512], npy[512];
    snprintf(wav, sizeof wav, DATA "%s_%dk.wav", name, rate / 1000);
    snprintf(npy, sizeof npy, DATA "%s_%dk_w%d.npy", name, rate / 1000, win);
    float *pcm = NULL;
    int n = 0;
    npy_array gold;
    CHECK(transcribe_audio_load_file(wav, rate, &pcm, &n) == TRANSCRIBE_OK);
    CHECK(npy_load(npy, &gold) == 0);
    struct transcribe_vad_params p;
    transcribe_vad_params_init(&p);
    p.window_samples = win;
    struct transcribe_vad *v = NULL;
    CHECK(transcribe_vad_init(g_model, rate, &p, &v) == TRANSCRIBE_OK);
    if (!pcm || !gold.data || !v) goto done;
    CHECK(transcribe_vad_run(v, pcm, n) == TRANSCRIBE_OK);
    int64_t nw = 0;
    const float *pr = transcribe_vad_probs(v, &nw);
    CHECK_MSG(nw == gold.n, "%s: %lld windows, golden %lld", npy, (long long)nw, (long long)gold.n);
    double md = 0.0;
    for (int64_t i = 0; i < nw && i < gold.n; i++) {
        double d = fabs((double)pr[i] - ((const float *)gold.data)[i]);
        if (d > md) md = d;
    }
    printf("parity %-8s %5d Hz window %4d: %lld windows, max |p - onnx| = %.2e\n", name, rate, win,
           (long long)nw, md);
    CHECK_MSG(md <= 1e-4, "%s: max diff %g", npy, md);
    if (md > *worst) *worst = md;

    /* the streaming feed in odd pieces gives the same numbers and segments */
    struct transcribe_vad *s = NULL;
    CHECK(transcribe_vad_init(g_model, rate, &p, &s) == TRANSCRIBE_OK);
    if (s) {
        int64_t pos = 0, piece = 1;
        while (pos < n) {
            int64_t k = piece < n - pos ? piece : n - pos;
            CHECK(transcribe_vad_feed(s, pcm + pos, k) == TRANSCRIBE_OK);
            pos += k;
            piece = piece * 3 % 1001 + 1;
            /* whatever is final now is final for good */
            int nf = transcribe_vad_n_segments(s);
            CHECK(nf <= transcribe_vad_n_segments(v));
        }
        CHECK(transcribe_vad_finish(s) == TRANSCRIBE_OK);
        int64_t ns = 0;
        const float *ps = transcribe_vad_probs(s, &ns);
        /* the spectra of a feed's complete windows share one GEMM, whose
         * rounding may differ with the row count: equal within 1e-6 */
        double sd = ns == nw ? 0.0 : 1.0;
        for (int64_t i = 0; i < ns && i < nw; i++) { /* written out: GCC 12 for aarch64 */
            double d = fabs((double)ps[i] - pr[i]);  /* crashes vectorising fmax(fabs) */
            if (d > sd) sd = d;
        }
        CHECK_MSG(sd <= 1e-6, "streamed probabilities differ by %g", sd);
        CHECK(transcribe_vad_n_segments(s) == transcribe_vad_n_segments(v));
        for (int i = 0; i < transcribe_vad_n_segments(s); i++) {
            struct transcribe_vad_segment a, b;
            transcribe_vad_get_segment(s, i, &a);
            transcribe_vad_get_segment(v, i, &b);
            CHECK(a.start == b.start && a.end == b.end);
        }
        transcribe_vad_free(s);
    }
done:
    transcribe_vad_free(v);
    npy_free(&gold);
    transcribe_audio_free(pcm);
}

/* One line of segments.txt: the rules on the golden probabilities give the
 * reference's list; segments from the C probabilities too (when no window
 * sits within the parity tolerance of a threshold). */
static void segments_case(char *line, int *n_cases) {
    char file[128];
    int rate, win, pad_ms, min_speech, min_sil, n_seg;
    long long n_samples;
    double thr, neg, max_s;
    int used = 0;
    if (sscanf(line, "%127s %d %d %lld %lf %lf %d %d %d %lf : %d%n", file, &rate, &win, &n_samples,
               &thr, &neg, &min_speech, &min_sil, &pad_ms, &max_s, &n_seg, &used) != 11)
        return;
    (*n_cases)++;
    int64_t *want = malloc(sizeof(int64_t) * 2 * (size_t)(n_seg + 1));
    const char *q = line + used;
    for (int i = 0; i < 2 * n_seg; i++) {
        char *end;
        want[i] = strtoll(q, &end, 10);
        q = end;
    }
    char path[512];
    snprintf(path, sizeof path, DATA "%s", file);
    npy_array probs;
    CHECK(npy_load(path, &probs) == 0);
    struct transcribe_vad_params p;
    transcribe_vad_params_init(&p);
    p.threshold = (float)thr;
    p.neg_threshold = (float)neg;
    p.min_speech_ms = min_speech;
    p.min_silence_ms = min_sil;
    p.speech_pad_ms = pad_ms;
    p.max_speech_s = (float)max_s;
    p.window_samples = win;
    CHECK(tr_vad_params_check(&p, rate, "test") == TRANSCRIBE_OK);
    tr_vad_rules r = {0};
    tr_vad_rules_init(&r, &p, rate, win);
    bool same = true;
    for (int64_t i = 0; i < probs.n; i++) {
        CHECK(tr_vad_rules_push(&r, ((const float *)probs.data)[i]));
        /* streaming: a region reported final never changes afterwards */
        int64_t seen = (i + 1) * win < n_samples ? (i + 1) * win : n_samples;
        size_t nf = tr_vad_rules_n_final(&r, seen, false);
        for (size_t k = 0; k < nf && (int)k < n_seg; k++) {
            int64_t s, e;
            tr_vad_rules_padded(&r, k, seen, &s, &e);
            if (s != want[2 * k] || e != want[2 * k + 1]) same = false;
        }
        if (nf > (size_t)n_seg) same = false;
    }
    CHECK_MSG(same, "%s: a streaming-final region differs from the final list", line);
    tr_vad_rules_finish(&r, n_samples);
    size_t nf = tr_vad_rules_n_final(&r, n_samples, true);
    bool ok = nf == (size_t)n_seg;
    for (size_t k = 0; ok && k < nf; k++) {
        int64_t s, e;
        tr_vad_rules_padded(&r, k, n_samples, &s, &e);
        ok = s == want[2 * k] && e == want[2 * k + 1];
    }
    CHECK_MSG(ok, "rules differ from the reference: %s (C gives %zu regions)", line, nf);
    tr_vad_rules_free(&r);

    /* end to end on the excerpts: the C network's own probabilities */
    if (strncmp(file, "synth", 5) != 0) {
        char wav[512];
        snprintf(wav, sizeof wav, DATA "%.*s.wav", (int)(strstr(file, "_w") - file), file);
        float *pcm = NULL;
        int n = 0;
        struct transcribe_vad *v = NULL;
        CHECK(transcribe_audio_load_file(wav, rate, &pcm, &n) == TRANSCRIBE_OK);
        CHECK(transcribe_vad_init(g_model, rate, &p, &v) == TRANSCRIBE_OK);
        if (pcm && v && transcribe_vad_run(v, pcm, n) == TRANSCRIBE_OK) {
            bool near = false;
            int64_t nw;
            const float *pr = transcribe_vad_probs(v, &nw);
            double t1 = thr, t2 = neg >= 0 ? neg : fmax(thr - 0.15, 0.01);
            for (int64_t i = 0; i < nw; i++)
                near |= fabs(pr[i] - t1) < 1e-4 || fabs(pr[i] - t2) < 1e-4;
            if (!near) {
                bool eq = transcribe_vad_n_segments(v) == n_seg;
                for (int k = 0; eq && k < n_seg; k++) {
                    struct transcribe_vad_segment sg;
                    transcribe_vad_get_segment(v, k, &sg);
                    eq = sg.start == want[2 * k] && sg.end == want[2 * k + 1] &&
                         sg.t0_ms == sg.start * 1000 / rate;
                }
                CHECK_MSG(eq, "end-to-end segments differ: %s", file);
            }
        }
        transcribe_vad_free(v);
        transcribe_audio_free(pcm);
    }
    npy_free(&probs);
    free(want);
}

static void bad_input(void) {
    transcribe_log_set(quiet, NULL);
    struct transcribe_vad_model *m = NULL;
    CHECK(transcribe_vad_model_load(DATA "does-not-exist.gguf", &m) != TRANSCRIBE_OK && !m);
    CHECK(transcribe_vad_model_load(NULL, &m) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_vad_model_load(DATA "speech_16k.wav", &m) != TRANSCRIBE_OK && !m);
    CHECK(transcribe_vad_model_load(TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf", &m) ==
              TRANSCRIBE_ERR_UNSUPPORTED_ARCH &&
          !m);
    /* truncated copies of the real file: every cut is refused cleanly */
    size_t len = 0;
    char *bytes = tr_test_read_text(MODEL, &len);
    CHECK(bytes && len > 100000);
    const char *tmp = TR_BINARY_DIR "/vad_truncated.gguf";
    const size_t cuts[] = {0, 3, 100, 2000, 50000, len / 2, len - 1};
    for (size_t i = 0; bytes && i < sizeof cuts / sizeof cuts[0]; i++) {
        FILE *f = fopen(tmp, "wb");
        if (!f) break;
        fwrite(bytes, 1, cuts[i], f);
        fclose(f);
        m = NULL;
        CHECK_MSG(transcribe_vad_model_load(tmp, &m) != TRANSCRIBE_OK && !m, "cut at %zu", cuts[i]);
        transcribe_vad_model_free(m);
    }
    free(bytes);
    remove(tmp);

    struct transcribe_vad *v = NULL;
    struct transcribe_vad_params p;
    transcribe_vad_params_init(&p);
    CHECK(transcribe_vad_init(g_model, 44100, NULL, &v) == TRANSCRIBE_ERR_SAMPLE_RATE && !v);
    CHECK(transcribe_vad_init(g_model, 0, NULL, &v) == TRANSCRIBE_ERR_SAMPLE_RATE);
    const float bad_thr[] = {-0.01f, 1.01f, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        p.threshold = bad_thr[i];
        CHECK(transcribe_vad_init(g_model, 16000, &p, &v) == TRANSCRIBE_ERR_INVALID_ARG && !v);
    }
    transcribe_vad_params_init(&p);
    p.neg_threshold = 0.6f; /* above the threshold */
    CHECK(transcribe_vad_init(g_model, 16000, &p, &v) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_vad_params_init(&p);
    p.window_samples = 500;
    CHECK(transcribe_vad_init(g_model, 16000, &p, &v) == TRANSCRIBE_ERR_INVALID_ARG);
    p.window_samples = 512;
    CHECK(transcribe_vad_init(g_model, 8000, &p, &v) == TRANSCRIBE_OK); /* 2 × 256 */
    transcribe_vad_free(v);
    transcribe_vad_params_init(&p);
    p.min_speech_ms = -1;
    CHECK(transcribe_vad_init(g_model, 16000, &p, &v) == TRANSCRIBE_ERR_INVALID_ARG);
    p.struct_size = 8;
    CHECK(transcribe_vad_init(g_model, 16000, &p, &v) == TRANSCRIBE_ERR_BAD_STRUCT_SIZE);

    CHECK(transcribe_vad_init(g_model, 16000, NULL, &v) == TRANSCRIBE_OK);
    if (v) {
        int64_t nw = -1;
        float one = 0.5f;
        CHECK(transcribe_vad_run(v, NULL, 0) == TRANSCRIBE_OK);
        transcribe_vad_probs(v, &nw);
        CHECK(nw == 0 && transcribe_vad_n_segments(v) == 0);
        CHECK(transcribe_vad_run(v, &one, 1) == TRANSCRIBE_OK);
        const float *pr = transcribe_vad_probs(v, &nw);
        CHECK(nw == 1 && pr[0] >= 0.0f && pr[0] <= 1.0f && transcribe_vad_n_segments(v) == 0);
        CHECK(transcribe_vad_run(v, NULL, 5) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(transcribe_vad_run(v, &one, -1) == TRANSCRIBE_ERR_INVALID_ARG);
        float *nan = malloc(sizeof(float) * 4000);
        for (int i = 0; nan && i < 4000; i++) nan[i] = i % 3 ? NAN : (i % 2 ? INFINITY : 0.1f);
        CHECK(nan && transcribe_vad_run(v, nan, 4000) == TRANSCRIBE_OK);
        pr = transcribe_vad_probs(v, &nw);
        bool finite = nw == 8;
        for (int64_t i = 0; i < nw; i++) finite &= isfinite(pr[i]) && pr[i] >= 0 && pr[i] <= 1;
        CHECK(finite);
        free(nan);
        /* a finished stream takes no more samples until reset */
        CHECK(transcribe_vad_feed(v, &one, 1) == TRANSCRIBE_ERR_INVALID_ARG);
        transcribe_vad_reset(v);
        CHECK(transcribe_vad_feed(v, &one, 1) == TRANSCRIBE_OK);
        struct transcribe_vad_segment sg;
        CHECK(transcribe_vad_get_segment(v, 0, &sg) == TRANSCRIBE_ERR_INVALID_ARG);
        transcribe_vad_free(v);
    }
    transcribe_log_set(NULL, NULL);
}

int main(void) {
    if (transcribe_vad_model_load(MODEL, &g_model) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot load %s\n", MODEL);
        return 1;
    }
    double worst = 0.0;
    const char *names[] = {"speech", "silence", "noise", "twospk"};
    for (int i = 0; i < 4; i++) {
        parity(names[i], 16000, 512, &worst);
        parity(names[i], 8000, 256, &worst);
    }
    parity("speech", 16000, 1536, &worst);
    parity("twospk", 16000, 1024, &worst);
    parity("speech", 8000, 768, &worst);
    printf("parity: worst max |p - onnx| = %.2e\n", worst);

    char *txt = tr_test_read_text(DATA "segments.txt", NULL);
    CHECK(txt != NULL);
    int n_cases = 0;
    for (char *line = txt ? strtok(txt, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        segments_case(line, &n_cases);
    }
    free(txt);
    printf("segments: %d cases against the reference rules\n", n_cases);
    CHECK(n_cases >= 20);

    bad_input();
    transcribe_vad_model_free(g_model);
    return TEST_DONE();
}
