/* transcribe-bench llm-batch -m MODEL AUDIO [--batch B] [--threads N] [--repeat R]
 *
 * Batched against serial decoding of B copies of one clip on a session:
 * per repeat, B single transcribe_run calls and one transcribe_run_batch
 * of the same B clips, taken alternately so both see the same machine
 * load. Meant for the audio-LLM families (docs/formats/causal-lm.md §8), whose batch
 * prefills all prompts together and steps all rows with one read of each
 * weight; it runs any family. Prints one JSON object: the best wall time
 * of each way, their decode-phase times (transcribe_get_timings), the
 * ratio, and whether every batch row's text equals the serial text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "transcribe.h"
#include "util/timer.h"

#define MAX_BATCH 16

static double decode_ms(const struct transcribe_session *s) {
    struct transcribe_timings tm;
    transcribe_timings_init(&tm);
    return transcribe_get_timings(s, &tm) == TRANSCRIBE_OK ? tm.decode_ms : 0.0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: transcribe-bench llm-batch -m MODEL AUDIO [--batch B (1..%d, 4)] "
            "[--threads N] [--repeat R]\n",
            MAX_BATCH);
    return 2;
}

int bench_llm_batch(int argc, char **argv) {
    const char *model = NULL, *audio = NULL;
    int threads = 2, repeat = 2, B = 4;
    const bench_opt opts[] = {{"-m", "--model", BENCH_OPT_STR, &model},
                              {"--threads", NULL, BENCH_OPT_INT, &threads},
                              {"--repeat", NULL, BENCH_OPT_INT, &repeat},
                              {"--batch", NULL, BENCH_OPT_INT, &B}};
    const char *bad = NULL;
    int n_pos = 0;
    if (!bench_parse_args(argc, argv, opts, 4, &audio, 1, &n_pos, &bad)) return usage();
    if (!model || !audio || B < 1 || B > MAX_BATCH || repeat < 1 || threads < 1) return usage();
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(audio, 16000, &pcm, &n) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot read %s\n", audio);
        return 1;
    }
    struct transcribe_session *s = NULL;
    if (bench_open(model, threads, &s) != TRANSCRIBE_OK) {
        fprintf(stderr, "cannot open %s\n", model);
        transcribe_audio_free(pcm);
        return 1;
    }
    const float *pcms[MAX_BATCH];
    int ns[MAX_BATCH];
    for (int i = 0; i < B; i++) pcms[i] = pcm, ns[i] = n;
    double best_serial = 1e30, best_batch = 1e30, dec_serial = 0, dec_batch = 0;
    bool same = true;
    int rc = 0;
    char *serial_text = NULL;
    for (int r = 0; r < repeat && rc == 0; r++) {
        double t0 = tr_time_ms(), dsum = 0;
        for (int i = 0; i < B && rc == 0; i++) {
            transcribe_status st = transcribe_run(s, pcm, n, NULL);
            if (st != TRANSCRIBE_OK && st != TRANSCRIBE_ERR_OUTPUT_TRUNCATED) rc = 1;
            dsum += decode_ms(s);
            if (!serial_text) serial_text = strdup(transcribe_raw_text(s));
        }
        double t1 = tr_time_ms();
        if (t1 - t0 < best_serial) best_serial = t1 - t0, dec_serial = dsum;
        if (rc) break;
        if (transcribe_run_batch(s, pcms, ns, B, NULL) != TRANSCRIBE_OK) rc = 1;
        double t2 = tr_time_ms();
        if (t2 - t1 < best_batch) best_batch = t2 - t1, dec_batch = decode_ms(s);
        for (int i = 0; i < B && rc == 0; i++) {
            const char *t = transcribe_batch_raw_text(s, i);
            same = same && serial_text && t && strcmp(t, serial_text) == 0;
        }
    }
    if (rc == 0) {
        printf("{\"bench\":\"llm-batch\",\"model\":\"%s\",\"audio\":\"%s\",\"batch\":%d,"
               "\"threads\":%d,\"repeat\":%d,\"serial_ms\":%.1f,\"batch_ms\":%.1f,"
               "\"speedup\":%.3f,\"serial_decode_ms\":%.1f,\"batch_decode_ms\":%.1f,"
               "\"decode_speedup\":%.3f,\"rows_equal_serial\":%s}\n",
               model, audio, B, threads, repeat, best_serial, best_batch, best_serial / best_batch,
               dec_serial, dec_batch, dec_batch > 0 ? dec_serial / dec_batch : 0.0,
               same ? "true" : "false");
    } else {
        fprintf(stderr, "llm-batch: a run failed: %s\n", transcribe_session_last_error(s));
    }
    free(serial_text);
    transcribe_session_free(s);
    transcribe_audio_free(pcm);
    return rc;
}
