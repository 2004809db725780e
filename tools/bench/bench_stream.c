/* transcribe-bench stream -m MODEL AUDIO... [--threads N] [--feed-ms N]
 *
 * Streaming latency and cost through the public API. The AUDIO files are
 * joined (half a second of silence after each) into one stream, fed in
 * --feed-ms slices (default 100) as fast as the library takes them; the
 * stream's clock is the audio fed so far, so the figures do not depend on
 * the host keeping up.
 *
 *  - commit delay: for every word of the final committed text that also
 *    appears, aligned, in an offline run with word timestamps, the audio
 *    time at which the stream committed it minus the word's end in the
 *    offline timestamps: median and p90 (ms). A word counts as committed
 *    once committed text runs past it (a space after it, or finalize).
 *    null when the model gives no word timestamps.
 *  - compute per second of audio: wall time spent inside feed and finalize
 *    divided by the audio length (< 1 keeps up with real time on this
 *    host); the slowest single feed is printed beside it.
 *
 * One JSON line on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "transcribe.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Whitespace-separated words of s (pointers into a copy the caller frees). */
typedef struct words {
    char *buf;
    char **w;
    int n;
} words;

static words split_words(const char *s) {
    words r = {0};
    size_t len = strlen(s);
    r.buf = malloc(len + 1);
    r.w = malloc((len / 2 + 2) * sizeof *r.w);
    if (!r.buf || !r.w) return r;
    memcpy(r.buf, s, len + 1);
    for (char *t = strtok(r.buf, " \t\n"); t; t = strtok(NULL, " \t\n")) r.w[r.n++] = t;
    return r;
}

static void free_words(words *w) {
    free(w->buf);
    free(w->w);
}

/* Words fully committed in c: those followed by whitespace (all at the end). */
static int committed_words(const char *c, bool final) {
    int n = 0;
    const char *p = c;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        while (*p && *p != ' ') p++;
        if (*p == ' ' || final) n++;
    }
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Aligns a (streamed) with b (offline) by edit distance; match[i] = index
 * in b of an equal word aligned to a[i], else -1. */
static void align(const words *a, const words *b, int *match) {
    int na = a->n, nb = b->n;
    int *d = malloc((size_t)(na + 1) * (size_t)(nb + 1) * sizeof *d);
    for (int i = 0; i < na; i++) match[i] = -1;
    if (!d) return;
#define D(i, j) d[(size_t)(i) * (size_t)(nb + 1) + (size_t)(j)]
    for (int i = 0; i <= na; i++) D(i, 0) = i;
    for (int j = 0; j <= nb; j++) D(0, j) = j;
    for (int i = 1; i <= na; i++) {
        for (int j = 1; j <= nb; j++) {
            int sub = D(i - 1, j - 1) + (strcmp(a->w[i - 1], b->w[j - 1]) != 0);
            int del = D(i - 1, j) + 1, ins = D(i, j - 1) + 1;
            D(i, j) = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    }
    for (int i = na, j = nb; i > 0 && j > 0;) {
        bool same = strcmp(a->w[i - 1], b->w[j - 1]) == 0;
        if (D(i, j) == D(i - 1, j - 1) + !same) {
            if (same) match[i - 1] = j - 1;
            i--, j--;
        } else if (D(i, j) == D(i - 1, j) + 1) {
            i--;
        } else {
            j--;
        }
    }
#undef D
    free(d);
}

int bench_stream(int argc, char **argv) {
    const char *model = NULL;
    const char *files[64];
    int n_files = 0, threads = 0, feed_ms = 100;
    const bench_opt opts[] = {{"-m", NULL, BENCH_OPT_STR, &model},
                              {"--threads", NULL, BENCH_OPT_INT, &threads},
                              {"--feed-ms", NULL, BENCH_OPT_INT, &feed_ms}};
    const char *bad = NULL;
    if (!bench_parse_args(argc, argv, opts, 3, files, 64, &n_files, &bad)) {
        fprintf(stderr, "stream: unknown argument '%s'\n", bad);
        return 2;
    }
    if (!model || n_files == 0 || feed_ms < 1) {
        fprintf(stderr, "usage: transcribe-bench stream -m MODEL AUDIO... [--threads N] "
                        "[--feed-ms N]\n");
        return 2;
    }
    struct transcribe_session *s = NULL;
    transcribe_status st = bench_open(model, threads, &s);
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "stream: cannot load %s: %s\n", model, transcribe_status_string(st));
        return 1;
    }
    const int rate = 16000;
    float *all = NULL;
    int64_t n = 0;
    for (int f = 0; f < n_files; f++) {
        float *pcm = NULL;
        int np = 0;
        if (transcribe_audio_load_file(files[f], rate, &pcm, &np) != TRANSCRIBE_OK) {
            fprintf(stderr, "stream: cannot read %s\n", files[f]);
            free(all);
            transcribe_session_free(s);
            return 1;
        }
        float *grown = realloc(all, (size_t)(n + np + rate / 2) * sizeof *all);
        if (!grown) {
            free(all);
            transcribe_audio_free(pcm);
            transcribe_session_free(s);
            return 1;
        }
        all = grown;
        memcpy(all + n, pcm, (size_t)np * sizeof *pcm);
        memset(all + n + np, 0, (size_t)(rate / 2) * sizeof *all);
        n += np + rate / 2;
        transcribe_audio_free(pcm);
    }

    /* Offline reference with word ends (when the model has them). */
    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    transcribe_model_get_capabilities(transcribe_get_model(s), &caps);
    bool word_ts = caps.max_timestamp_kind >= TRANSCRIBE_TIMESTAMPS_WORD;
    if (word_ts) rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    double off_t0 = now_ms();
    st = transcribe_run(s, all, (int)n, &rp);
    double offline_ms = now_ms() - off_t0;
    int n_off = st == TRANSCRIBE_OK ? transcribe_n_words(s) : 0;
    words off = {0};
    int64_t *off_end = calloc((size_t)n_off + 1, sizeof *off_end);
    if (word_ts && n_off > 0 && off_end) {
        /* The offline words as rows (their text, their end). */
        size_t cap = 1;
        for (int i = 0; i < n_off; i++) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            if (transcribe_get_word(s, i, &w) == TRANSCRIBE_OK && w.text) cap += strlen(w.text) + 1;
        }
        char *joined = calloc(cap, 1);
        int k = 0;
        for (int i = 0; i < n_off && joined; i++) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            if (transcribe_get_word(s, i, &w) != TRANSCRIBE_OK || !w.text) continue;
            words one = split_words(w.text);
            for (int j = 0; j < one.n; j++) off_end[k++] = w.t1_ms;
            if (one.n) {
                strcat(joined, " ");
                strcat(joined, w.text);
            }
            free_words(&one);
        }
        off = split_words(joined ? joined : "");
        free(joined);
    }

    /* The stream. */
    int feed = feed_ms * rate / 1000;
    int cap_commit = 1024;
    int64_t *commit_at = malloc((size_t)cap_commit * sizeof *commit_at); /* ms per committed word */
    int n_commit = 0;
    double compute = 0, worst = 0;
    st = transcribe_stream_begin(s, NULL, NULL);
    for (int64_t pos = 0; st == TRANSCRIBE_OK && pos < n; pos += feed) {
        int take = n - pos < feed ? (int)(n - pos) : feed;
        double t0 = now_ms();
        st = transcribe_stream_feed(s, all + pos, take, NULL);
        double dt = now_ms() - t0;
        compute += dt;
        if (dt > worst) worst = dt;
        struct transcribe_stream_text t;
        transcribe_stream_text_init(&t);
        transcribe_stream_get_text(s, &t);
        int k = committed_words(t.committed_text, false);
        while (n_commit < k && commit_at) {
            if (n_commit == cap_commit) {
                int64_t *g = realloc(commit_at, (size_t)(cap_commit *= 2) * sizeof *g);
                if (!g) break;
                commit_at = g;
            }
            commit_at[n_commit++] = (pos + take) * 1000 / rate;
        }
    }
    if (st == TRANSCRIBE_OK) {
        double t0 = now_ms();
        st = transcribe_stream_finalize(s, NULL);
        compute += now_ms() - t0;
    }
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "stream: %s\n", transcribe_status_string(st));
        free(all);
        free(off_end);
        free(commit_at);
        free_words(&off);
        transcribe_session_free(s);
        return 1;
    }
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    words str = split_words(t.committed_text);
    while (commit_at && n_commit < str.n) {
        if (n_commit == cap_commit) {
            int64_t *g = realloc(commit_at, (size_t)(cap_commit *= 2) * sizeof *g);
            if (!g) break;
            commit_at = g;
        }
        commit_at[n_commit++] = n * 1000 / rate; /* committed by finalize */
    }
    double audio_s = (double)n / rate;
    printf("{\"bench\":\"stream\",\"model\":\"%s\",\"audio_s\":%.2f,\"threads\":%d,\"feed_ms\":%d,"
           "\"compute_s_per_audio_s\":%.4f,\"max_feed_ms\":%.1f,\"offline_s_per_audio_s\":%.4f,",
           model, audio_s, threads, feed_ms, compute / 1000.0 / audio_s, worst,
           offline_ms / 1000.0 / audio_s);
    if (off.n > 0 && str.n > 0 && commit_at) {
        int *match = malloc((size_t)str.n * sizeof *match);
        double *delay = malloc((size_t)str.n * sizeof *delay);
        int nd = 0;
        if (match && delay) {
            align(&str, &off, match);
            for (int i = 0; i < str.n && i < n_commit; i++) {
                if (match[i] >= 0) delay[nd++] = (double)(commit_at[i] - off_end[match[i]]);
            }
        }
        if (nd > 0) {
            qsort(delay, (size_t)nd, sizeof *delay, cmp_double);
            printf("\"commit_delay_ms\":{\"median\":%.0f,\"p90\":%.0f,\"words\":%d,\"of\":%d}}\n",
                   delay[nd / 2], delay[(nd * 9) / 10 < nd ? (nd * 9) / 10 : nd - 1], nd, str.n);
        } else {
            printf("\"commit_delay_ms\":null}\n");
        }
        free(match);
        free(delay);
    } else {
        printf("\"commit_delay_ms\":null}\n");
    }
    free_words(&str);
    free_words(&off);
    free(off_end);
    free(commit_at);
    free(all);
    transcribe_session_free(s);
    return 0;
}
