/* transcribe-bench batch -m MODEL AUDIO [--n N] [--threads T] [--repeat R]
 *                       [--only serial|batch]
 *
 * Batched vs serial throughput through the public API: N copies of AUDIO
 * (default 8) transcribed as N transcribe_run calls and as one
 * transcribe_run_batch, on one session, alternating the order every repeat
 * so both see the same host conditions. Prints one JSON line per repeat
 * (serial ms, batch ms, their ratio) and a summary line with the fastest of
 * each, the median per-repeat ratio and the audio seconds per second; every
 * batch utterance's text is checked against the serial run's. Beside the
 * wall times stand the process's CPU times (all threads): on a shared,
 * oversubscribed host the wall ratio is noise and the CPU ratio says how
 * much work batching saved. --only runs one side (for a profiler: perf
 * record of each side alone shows where the batch saves work). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "bench.h"
#include "transcribe.h"
#include "util/timer.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double run_serial(struct transcribe_session *s, const float *pcm, int n, int count,
                         char **texts) {
    double t0 = tr_time_ms();
    for (int i = 0; i < count; i++) {
        if (transcribe_run(s, pcm, n, NULL) != TRANSCRIBE_OK) return -1;
        if (texts && !texts[i]) texts[i] = strdup(transcribe_full_text(s));
    }
    return tr_time_ms() - t0;
}

static double run_batch(struct transcribe_session *s, const float *const *pcm, const int *n,
                        int count, char *const *want, int *mismatch) {
    double t0 = tr_time_ms();
    if (transcribe_run_batch(s, pcm, n, count, NULL) != TRANSCRIBE_OK) return -1;
    double ms = tr_time_ms() - t0;
    for (int i = 0; i < count; i++) {
        const char *t = transcribe_batch_full_text(s, i);
        if (transcribe_batch_status(s, i) != TRANSCRIBE_OK || !t || !want[i] || strcmp(t, want[i]))
            (*mismatch)++;
    }
    return ms;
}

int bench_batch(int argc, char **argv) {
    const char *model = NULL, *audio = NULL;
    int count = 8, threads = 2, repeat = 3;
    const char *only = NULL;
    const bench_opt opts[] = {{"-m", NULL, BENCH_OPT_STR, &model},
                              {"--n", NULL, BENCH_OPT_INT, &count},
                              {"--threads", NULL, BENCH_OPT_INT, &threads},
                              {"--repeat", NULL, BENCH_OPT_INT, &repeat},
                              {"--only", NULL, BENCH_OPT_STR, &only}};
    const char **pos = malloc((size_t)argc * sizeof *pos), *bad = NULL;
    int n_pos = 0;
    bool ok = pos && bench_parse_args(argc, argv, opts, 5, pos, argc, &n_pos, &bad);
    if (n_pos > 0) audio = pos[n_pos - 1]; /* the last audio path counts */
    free(pos);
    if (!ok) {
        fprintf(stderr, "batch: unknown option %s\n", bad ? bad : "(out of memory)");
        return 2;
    }
    if (only && strcmp(only, "serial") && strcmp(only, "batch")) only = "";
    if (!model || !audio || count < 1 || count > 256 || threads < 1 || repeat < 1 ||
        (only && !*only)) {
        fprintf(stderr, "usage: transcribe-bench batch -m MODEL AUDIO [--n N] [--threads T] "
                        "[--repeat R] [--only serial|batch]\n");
        return 2;
    }
    tr_audio a;
    if (tr_audio_load_file(audio, 16000, &a) != TRANSCRIBE_OK || a.n > 0x7fffffff) {
        fprintf(stderr, "batch: cannot read %s\n", audio);
        return 1;
    }
    struct transcribe_session *s = NULL;
    transcribe_status st = bench_open(model, threads, &s);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "batch: cannot open %s: %s\n", model, transcribe_status_string(st));
        tr_audio_free(&a);
        return 1;
    }
    const float **pcm = calloc((size_t)count, sizeof *pcm);
    int *n = calloc((size_t)count, sizeof *n);
    char **texts = calloc((size_t)count, sizeof *texts);
    double *ratio = calloc((size_t)repeat, sizeof *ratio);
    int rc = 1;
    if (!pcm || !n || !texts || !ratio) goto out;
    for (int i = 0; i < count; i++) {
        pcm[i] = a.pcm;
        n[i] = (int)a.n;
    }
    double best_serial = 1e300, best_batch = 1e300, cpu_serial = 0, cpu_batch = 0;
    int mismatch = 0;
    /* warm-up: page the weights in, fill the serial texts */
    if (run_serial(s, a.pcm, (int)a.n, 1, texts) < 0) goto out;
    for (int i = 1; i < count; i++) texts[i] = strdup(texts[0]);
    if (only) { /* one side alone, for a profiler: no ratios */
        for (int r = 0; r < repeat; r++) {
            double c0 = cpu_ms(), ms = only[0] == 's'
                                           ? run_serial(s, a.pcm, (int)a.n, count, NULL)
                                           : run_batch(s, pcm, n, count, texts, &mismatch);
            if (ms < 0) goto out;
            printf("{\"repeat\":%d,\"%s_ms\":%.1f,\"%s_cpu_ms\":%.1f}\n", r, only, ms, only,
                   cpu_ms() - c0);
        }
        rc = mismatch ? 3 : 0;
        goto out;
    }
    for (int r = 0; r < repeat; r++) {
        double ser = -1, bat = -1, cs = 0, cb = 1;
        for (int half = 0; half < 2; half++) {
            double c0 = cpu_ms();
            if ((half == 0) == (r % 2 == 0)) {
                ser = run_serial(s, a.pcm, (int)a.n, count, NULL);
                cs = cpu_ms() - c0;
            } else {
                bat = run_batch(s, pcm, n, count, texts, &mismatch);
                cb = cpu_ms() - c0;
            }
        }
        if (ser < 0 || bat < 0) {
            fprintf(stderr, "batch: a run failed\n");
            goto out;
        }
        ratio[r] = ser / bat;
        if (ser < best_serial) best_serial = ser;
        if (bat < best_batch) best_batch = bat;
        cpu_serial += cs;
        cpu_batch += cb;
        printf("{\"repeat\":%d,\"serial_ms\":%.1f,\"batch_ms\":%.1f,\"speedup\":%.3f,"
               "\"serial_cpu_ms\":%.1f,\"batch_cpu_ms\":%.1f,\"cpu_speedup\":%.3f}\n",
               r, ser, bat, ratio[r], cs, cb, cs / cb);
        fflush(stdout);
    }
    qsort(ratio, (size_t)repeat, sizeof *ratio, cmp_double);
    double audio_s = (double)a.n / 16000.0 * count;
    printf("{\"model\":\"%s\",\"n\":%d,\"threads\":%d,\"audio_s\":%.2f,\"best_serial_ms\":%.1f,"
           "\"best_batch_ms\":%.1f,\"best_speedup\":%.3f,\"median_speedup\":%.3f,"
           "\"serial_audio_s_per_s\":%.2f,\"batch_audio_s_per_s\":%.2f,\"cpu_speedup\":%.3f,"
           "\"text_mismatches\":%d}\n",
           model, count, threads, audio_s, best_serial, best_batch, best_serial / best_batch,
           ratio[repeat / 2], audio_s / (best_serial / 1000.0), audio_s / (best_batch / 1000.0),
           cpu_serial / cpu_batch, mismatch);
    rc = mismatch ? 3 : 0;
out:
    if (texts)
        for (int i = 0; i < count; i++) free(texts[i]);
    free(texts);
    free(pcm);
    free(n);
    free(ratio);
    transcribe_close(s);
    tr_audio_free(&a);
    return rc;
}
