/* transcribe-bench frontend [--threads N] [--reps N]: milliseconds to
 * compute the features of 30 s of 16 kHz audio per front-end variant, and
 * 44.1k -> 16k resampling throughput of both resamplers. One JSON object
 * per line; the best of --reps runs is reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "audio/mel.h"
#include "bench.h"
#include "tensor/pool.h"
#include "util/timer.h"

/* Deterministic speech-like test signal: a few drifting tones plus noise. */
static float *make_signal(int rate, int64_t n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) return NULL;
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        double t = (double)i / rate;
        s = s * 1664525u + 1013904223u;
        double noise = ((s >> 8) / 16777216.0 - 0.5) * 0.02;
        x[i] = (float)(0.3 * sin(2 * M_PI * (220 + 40 * sin(t)) * t) +
                       0.1 * sin(2 * M_PI * 1800 * t) + noise);
    }
    return x;
}

int bench_frontend(int argc, char **argv) {
    int threads = 2, reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: transcribe-bench frontend [--threads N] [--reps N]\n");
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (reps < 1) reps = 1;
    tr_pool *pool = tr_pool_create(threads);
    int64_t n = 30 * 16000;
    float *pcm = make_signal(16000, n);
    if (!pool || !pcm) {
        fprintf(stderr, "frontend: out of memory\n");
        tr_pool_free(pool);
        free(pcm);
        return 1;
    }
    int rc = 0;
    static const struct {
        const char *name;
        int kind, n_mels;
    } v[] = {{"whisper80", 0, 80}, {"whisper128", 0, 128}, {"nemo80", 1, 80}, {"kaldi80", 2, 80}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        tr_mel_config c;
        if (v[k].kind == 0)
            tr_mel_config_whisper(&c, v[k].n_mels);
        else if (v[k].kind == 1)
            tr_mel_config_nemo(&c, v[k].n_mels);
        else
            tr_mel_config_kaldi(&c, v[k].n_mels);
        double best = 1e30;
        int frames = 0;
        for (int r = 0; r < reps; r++) {
            float *out = NULL;
            double t0 = tr_time_ms();
            transcribe_status st = v[k].kind == 0 ? tr_mel_whisper(&c, pcm, n, pool, &out, &frames)
                                                  : tr_mel_compute(&c, pcm, n, pool, &out, &frames);
            double ms = tr_time_ms() - t0;
            free(out);
            if (st != TRANSCRIBE_OK) {
                rc = 1;
                break;
            }
            if (ms < best) best = ms;
        }
        printf("{\"bench\":\"frontend\",\"case\":\"mel %s\",\"audio_s\":30,\"frames\":%d,"
               "\"ms\":%.3f,\"threads\":%d}\n",
               v[k].name, frames, best, threads);
    }
    free(pcm);

    /* Resampling: 30 s at 44.1 kHz to 16 kHz (single-threaded). */
    int64_t n_in = 30 * 44100;
    float *in = make_signal(44100, n_in);
    static const struct {
        const char *name;
        transcribe_status (*fn)(const float *, int64_t, int, int, float **, int64_t *);
    } rs[] = {{"builtin", tr_resample_builtin}, {"soxr", tr_resample_soxr}};
    for (size_t k = 0; in && k < 2; k++) {
        if (k == 1 && !tr_resample_have_soxr()) {
            printf("{\"bench\":\"frontend\",\"case\":\"resample soxr\",\"error\":\"not built\"}\n");
            continue;
        }
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            float *out = NULL;
            int64_t n_out = 0;
            double t0 = tr_time_ms();
            transcribe_status st = rs[k].fn(in, n_in, 44100, 16000, &out, &n_out);
            double ms = tr_time_ms() - t0;
            free(out);
            if (st != TRANSCRIBE_OK) {
                rc = 1;
                break;
            }
            if (ms < best) best = ms;
        }
        printf("{\"bench\":\"frontend\",\"case\":\"resample %s 44100->16000\",\"audio_s\":30,"
               "\"ms\":%.3f,\"in_samples_per_s\":%.4g,\"realtime_x\":%.1f,\"threads\":1}\n",
               rs[k].name, best, n_in / (best / 1000.0), 30000.0 / best);
    }
    free(in);
    tr_pool_free(pool);
    return rc;
}
