/* transcribe-bench fallback -m WHISPER_MODEL AUDIO [--threads N] [--repeat R]
 *
 * Whisper's temperature fallback, sequential against side by side, in one
 * process: every window is made to fall back through all its tiers
 * (compression_ratio_thold 0: no tier passes), once with a fixed seed (the
 * tiers one after another on the run's one generator, upstream's order) and
 * once with seed 0 (the tiers after the greedy one in lockstep,
 * docs/formats/whisper.md §8.7), alternating every repeat. Prints the
 * fastest decode ms per window of each (the sampled tiers decide where the
 * next window starts, so the two may cut the audio into different windows),
 * their ratio, and the windows and tiers of each side's fastest run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "bench.h"
#include "transcribe.h"
#include "transcribe/whisper.h"

/* One run with every tier failing; decode ms, or < 0 on failure. */
static double run_once(struct transcribe_session *s, const float *pcm, int n, uint32_t seed,
                       int *tiers, int *windows) {
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    struct transcribe_whisper_run_ext ext;
    transcribe_whisper_run_ext_init(&ext);
    ext.compression_ratio_thold = 0.0f;
    ext.seed = seed;
    rp.family = &ext.ext;
    if (transcribe_run(s, pcm, n, &rp) != TRANSCRIBE_OK) return -1;
    *tiers = 0;
    const int nw = transcribe_get_whisper_chunk_count(s);
    *windows = nw;
    for (int i = 0; i < nw; i++) {
        struct transcribe_whisper_chunk_trace tr;
        transcribe_whisper_chunk_trace_init(&tr);
        if (transcribe_get_whisper_chunk_trace(s, i, &tr) == TRANSCRIBE_OK)
            *tiers += tr.n_fallbacks + 1;
    }
    struct transcribe_timings t;
    transcribe_timings_init(&t);
    if (transcribe_get_timings(s, &t) != TRANSCRIBE_OK || nw < 1) return -1;
    return t.decode_ms / nw;
}

int bench_fallback(int argc, char **argv) {
    const char *model = NULL, *audio = NULL;
    int threads = 2, repeat = 2;
    const bench_opt opts[] = {{"-m", NULL, BENCH_OPT_STR, &model},
                              {"--threads", NULL, BENCH_OPT_INT, &threads},
                              {"--repeat", NULL, BENCH_OPT_INT, &repeat}};
    const char **pos = malloc((size_t)argc * sizeof *pos), *bad = NULL;
    int n_pos = 0;
    bool ok = pos && bench_parse_args(argc, argv, opts, 3, pos, argc, &n_pos, &bad);
    if (n_pos > 0) audio = pos[n_pos - 1];
    free(pos);
    if (!ok) {
        fprintf(stderr, "fallback: unknown option %s\n", bad ? bad : "(out of memory)");
        return 2;
    }
    if (!model || !audio || threads < 1 || repeat < 1) {
        fprintf(stderr, "usage: transcribe-bench fallback -m WHISPER_MODEL AUDIO [--threads N] "
                        "[--repeat R]\n");
        return 2;
    }
    tr_audio a;
    if (tr_audio_load_file(audio, 16000, &a) != TRANSCRIBE_OK || a.n > 0x7fffffff) {
        fprintf(stderr, "fallback: cannot read %s\n", audio);
        return 1;
    }
    struct transcribe_session *s = NULL;
    transcribe_status st = bench_open(model, threads, &s);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "fallback: cannot open %s: %s\n", model, transcribe_status_string(st));
        tr_audio_free(&a);
        return 1;
    }
    double best[2] = {-1, -1};
    int tiers[2] = {0, 0}, windows[2] = {0, 0};
    int rc = 0;
    for (int r = 0; r < repeat && rc == 0; r++)
        for (int j = 0; j < 2; j++) {
            const int side = (r & 1) ? 1 - j : j; /* alternate which goes first */
            int nt = 0, nw = 0;
            const double ms = run_once(s, a.pcm, (int)a.n, side ? 0u : 1u, &nt, &nw);
            if (ms < 0) {
                fprintf(stderr, "fallback: run failed (a Whisper model?)\n");
                rc = 1;
                break;
            }
            if (best[side] < 0 || ms < best[side]) {
                best[side] = ms;
                tiers[side] = nt;
                windows[side] = nw;
            }
        }
    if (rc == 0)
        printf("{\"bench\":\"fallback\",\"model\":\"%s\",\"audio\":\"%s\",\"threads\":%d,"
               "\"repeat\":%d,\"windows\":[%d,%d],\"tiers\":[%d,%d],"
               "\"decode_ms_per_window_sequential\":%.1f,"
               "\"decode_ms_per_window_side_by_side\":%.1f,\"speedup\":%.3f}\n",
               model, audio, threads, repeat, windows[0], windows[1], tiers[0], tiers[1], best[0],
               best[1], best[1] > 0 ? best[0] / best[1] : 0.0);
    transcribe_session_free(s);
    tr_audio_free(&a);
    return rc;
}
