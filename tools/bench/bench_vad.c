/* transcribe-bench vad [--vad-model F] [--threads N] [--reps N] [-m MODEL AUDIO [--minutes M]]
 *
 * 1. Speed of the Silero VAD network: real-time factor (audio seconds per
 *    wall second, so higher is faster) over 60 s of audio per rate and
 *    window size, on --threads threads (default 1), best of --reps.
 * 2. With -m MODEL AUDIO: the end-to-end effect of --vad. A test file of
 *    --minutes (default 10) is built from AUDIO: speech pieces of AUDIO
 *    alternating with equally long stretches of silence and faint noise (so
 *    half of it is not speech); it is transcribed with and without the VAD
 *    run parameter and the times and texts are printed.
 * One JSON object per line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "transcribe.h"
#include "util/timer.h"
#include "vad/vad.h"

static float *make_signal(int rate, int64_t n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) return NULL;
    uint32_t s = 777;
    for (int64_t i = 0; i < n; i++) {
        double t = (double)i / rate;
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(0.3 * sin(2 * M_PI * (180 + 60 * sin(3 * t)) * t) * (sin(t) > 0) +
                       ((s >> 8) / 16777216.0 - 0.5) * 0.02);
    }
    return x;
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int speed(const struct transcribe_vad_model *m, int threads, int reps) {
    static const int cases[][2] = {{16000, 512}, {16000, 1024}, {16000, 1536},
                                   {8000, 256},  {8000, 512},   {8000, 768}};
    tr_pool *pool = threads > 1 ? tr_pool_create(threads) : NULL;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int rate = cases[c][0], win = cases[c][1];
        int64_t n = 60 * (int64_t)rate;
        float *x = make_signal(rate, n);
        struct transcribe_vad_params p;
        transcribe_vad_params_init(&p);
        p.window_samples = win;
        struct transcribe_vad *v = NULL;
        if (!x || transcribe_vad_init(m, rate, &p, &v) != TRANSCRIBE_OK) {
            free(x);
            tr_pool_free(pool);
            return 1;
        }
        v->pool = pool;
        /* wall time, and the process's CPU time: on a loaded shared host the
         * CPU time of a 1-thread run is what an idle core would take */
        double best = 1e30, best_cpu = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = tr_time_ms(), c0 = cpu_ms();
            transcribe_vad_run(v, x, n);
            double dt = tr_time_ms() - t0, dc = cpu_ms() - c0;
            if (dt < best) best = dt;
            if (dc < best_cpu) best_cpu = dc;
        }
        printf("{\"bench\":\"vad\",\"rate\":%d,\"window\":%d,\"threads\":%d,\"audio_s\":60,"
               "\"wall_ms\":%.2f,\"cpu_ms\":%.2f,\"us_per_window_cpu\":%.2f,"
               "\"x_realtime_wall\":%.0f,\"x_realtime_cpu\":%.0f,\"segments\":%d}\n",
               rate, win, threads, best, best_cpu, best_cpu * 1000.0 / (double)(n / win),
               60000.0 / best, 60000.0 / best_cpu, transcribe_vad_n_segments(v));
        transcribe_vad_free(v);
        free(x);
    }
    tr_pool_free(pool);
    return 0;
}

static void json_str(const char *s) {
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            putchar(' ');
        else
            putchar(*s);
    }
    putchar('"');
}

static int end_to_end(const struct transcribe_vad_model *vm, const char *model, const char *audio,
                      double minutes, int threads) {
    float *sp = NULL;
    int n_sp = 0;
    if (transcribe_audio_load_file(audio, 16000, &sp, &n_sp) != TRANSCRIBE_OK || n_sp < 16000) {
        fprintf(stderr, "vad: cannot read %s (or shorter than 1 s)\n", audio);
        transcribe_audio_free(sp);
        return 1;
    }
    /* speech pieces of 8 s (or the whole file), each followed by as much
     * silence with faint noise, until the length is reached */
    int64_t total = (int64_t)(minutes * 60 * 16000), piece = n_sp < 128000 ? n_sp : 128000;
    float *x = calloc((size_t)total, sizeof(float));
    if (!x) return 1;
    uint32_t s = 99;
    int64_t pos = 0, src = 0, n_speech = 0;
    while (pos < total) {
        for (int64_t i = 0; i < piece && pos < total; i++, pos++, n_speech++) {
            x[pos] = sp[src];
            src = (src + 1) % n_sp;
        }
        for (int64_t i = 0; i < piece && pos < total; i++, pos++) {
            s = s * 1664525u + 1013904223u;
            x[pos] = (float)(((s >> 8) / 16777216.0 - 0.5) * 0.004);
        }
    }
    struct transcribe_session *sess = NULL;
    if (bench_open(model, threads, &sess) != TRANSCRIBE_OK) {
        fprintf(stderr, "vad: cannot open %s\n", model);
        free(x);
        transcribe_audio_free(sp);
        return 1;
    }
    for (int with = 0; with < 2; with++) {
        struct transcribe_run_params rp;
        transcribe_run_params_init(&rp);
        if (with) rp.vad_model = vm;
        double t0 = tr_time_ms(), c0 = cpu_ms();
        transcribe_status st = transcribe_run(sess, x, (int)total, &rp);
        double dt = tr_time_ms() - t0, dc = cpu_ms() - c0;
        const char *text = st == TRANSCRIBE_OK ? transcribe_full_text(sess) : "";
        printf("{\"bench\":\"vad_e2e\",\"vad\":%s,\"audio_s\":%.0f,\"speech_s\":%.0f,"
               "\"wall_ms\":%.0f,\"cpu_ms\":%.0f,\"rtf\":%.4f,\"status\":\"%s\",\"segments\":%d,"
               "\"text_chars\":%zu,\"text\":",
               with ? "true" : "false", total / 16000.0, n_speech / 16000.0, dt, dc,
               dt / 1000.0 / (total / 16000.0), transcribe_status_string(st),
               transcribe_n_segments(sess), strlen(text));
        json_str(text);
        printf("}\n");
        fflush(stdout);
    }
    transcribe_close(sess);
    free(x);
    transcribe_audio_free(sp);
    return 0;
}

int bench_vad(int argc, char **argv) {
    const char *vad_path = "models/silero-vad-v4.gguf", *model = NULL, *audio = NULL;
    int threads = 1, reps = 3;
    double minutes = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vad-model") && i + 1 < argc)
            vad_path = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--minutes") && i + 1 < argc)
            minutes = atof(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 2 < argc) {
            model = argv[++i];
            audio = argv[++i];
        } else {
            fprintf(stderr, "usage: transcribe-bench vad [--vad-model F] [--threads N] [--reps N] "
                            "[-m MODEL AUDIO [--minutes M]]\n");
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    if (reps < 1) reps = 1;
    if (!(minutes > 0 && minutes <= 120)) minutes = 10;
    struct transcribe_vad_model *vm = NULL;
    if (transcribe_vad_model_load(vad_path, &vm) != TRANSCRIBE_OK) {
        fprintf(stderr, "vad: cannot load %s\n", vad_path);
        return 1;
    }
    int rc = model ? end_to_end(vm, model, audio, minutes, threads) : speed(vm, threads, reps);
    transcribe_vad_model_free(vm);
    return rc;
}
