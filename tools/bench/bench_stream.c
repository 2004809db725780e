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
 *    at the first feed after which the committed text holds its last byte
 *    (committed text only grows, so its byte offsets in the final text are
 *    exact; no wait for the next word). null when the model gives no word
 *    timestamps.
 *  - compute per second of audio: wall time spent inside feed and finalize
 *    divided by the audio length (< 1 keeps up with real time on this
 *    host); the slowest single feed is printed beside it, and the process's
 *    CPU time over the same calls (all threads) per second of audio.
 *  - row commit delay, for any model (word timestamps or not): on a clock
 *    where each feed's audio arrives in real time (a feed starts when its
 *    last sample has arrived or when the previous call returned, whichever
 *    is later, and lasts its measured wall time), the time at which a call
 *    returned with the update's audio_committed_ms past the end of an 80 ms
 *    slice of the input minus that end: median and p90 over every slice
 *    (finalize commits what is left). It counts the pacing and the compute,
 *    not a model's own lag behind the audio (e.g. Voxtral Realtime's delay
 *    tokens); lag_max_s is the most a call finished behind its audio.
 *
 * --offline 0 skips the offline run (word commit delay null).
 *
 * --att-right R selects a cache-aware Parakeet file's lookahead (the PKST
 * stream extension), --buffered L,C,R (ms; -1 = default) a unified-en
 * file's buffered window (PKBS). One JSON line on stdout.
 *
 * transcribe-bench stream --make-unified IN.gguf OUT.gguf rewrites an
 * offline Parakeet file into unified-en-0.6b's schema: style
 * chunked_limited_with_rc with its menus left {70}, chunk {1, 2, 7, 13},
 * right {0, 1, 2, 3, 4, 7, 13}; same weights, same offline runs.
 *
 * transcribe-bench stream --make-cache-aware IN.gguf OUT.gguf [R] rewrites
 * an offline Parakeet file into the cache-aware streaming schema of
 * nemotron-speech-streaming-en-0.6b (docs/formats/parakeet.md §7.8): the same
 * weights, chunked_limited attention with the published lookahead menu
 * (70, 13), (70, 6), (70, 1), (70, 0) from (70, R) down (R, default 13, is
 * the file's own context, so the bench's offline reference run uses the
 * same attention as the stream), a causal depthwise conv (k - 1, 0),
 * normalize = none, and a random projection of the causal pre-encode's
 * wider output: a real-dimension file to measure streaming cost with. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"
#include "transcribe.h"
#include "transcribe/parakeet.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* CPU time of the process, every thread (ms). */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* Byte offset just past each whitespace-separated word of s, in order. */
static int word_ends(const char *s, int64_t *end, int cap) {
    int n = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
        if (n < cap) end[n] = p - s;
        n++;
    }
    return n;
}

static bool skip_key(const char *k) {
    static const char *const keys[] = {"stt.parakeet.encoder.att_context_style",
                                       "stt.parakeet.encoder.att_context_left",
                                       "stt.parakeet.encoder.att_context_right",
                                       "stt.parakeet.encoder.att_context_size_choices",
                                       "stt.parakeet.encoder.conv_context_left",
                                       "stt.parakeet.encoder.conv_context_right",
                                       "stt.frontend.normalize",
                                       "stt.capability.streaming",
                                       "stt.variant"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i])) return true;
    return false;
}

/* See the header comment: the cache-aware rewrite of an offline file. */
static int make_cache_aware(const char *in, const char *out, int right) {
    gguf_file *g = NULL;
    if (tr_gguf_open(in, &g) != TRANSCRIBE_OK) {
        fprintf(stderr, "stream: cannot open %s\n", in);
        return 1;
    }
    uint32_t k = 0, C = 0, d = 0, nm = 0;
    /* a Parakeet file is one with the Parakeet encoder's keys (the rewrite
     * edits those; the architecture name itself is never compared) */
    bool ok = tr_gguf_get_u32(g, "stt.parakeet.encoder.conv_kernel", &k) == 1 &&
              tr_gguf_get_u32(g, "stt.parakeet.encoder.subsampling_channels", &C) == 1 &&
              tr_gguf_get_u32(g, "stt.parakeet.encoder.d_model", &d) == 1 &&
              tr_gguf_get_u32(g, "stt.frontend.num_mels", &nm) == 1 && k > 0;
    if (!ok) {
        fprintf(stderr, "stream: %s is not a Parakeet file\n", in);
        tr_gguf_close(g);
        return 1;
    }
    gguf_writer *w = tr_gguf_writer_create();
    ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++)
        if (!skip_key(tr_gguf_key_name(g, i))) ok = tr_gguf_writer_copy_kv(w, g, i);
    /* the published menu from `right` down (pair 0 is the default) */
    static const int32_t published[8] = {70, 13, 70, 6, 70, 1, 70, 0};
    int first = 0;
    while (first < 3 && published[2 * first + 1] > right) first++;
    const int32_t *menu = published + 2 * first;
    ok = ok && published[2 * first + 1] == right &&
         tr_gguf_writer_set_str(w, "stt.variant", "nemotron-speech-streaming-en-0.6b") &&
         tr_gguf_writer_set_str(w, "stt.parakeet.encoder.att_context_style", "chunked_limited") &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_left", 70) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.att_context_right", right) &&
         tr_gguf_writer_set_arr_i32(w, "stt.parakeet.encoder.att_context_size_choices", menu,
                                    8 - 2 * first) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_left", (int32_t)k - 1) &&
         tr_gguf_writer_set_i32(w, "stt.parakeet.encoder.conv_context_right", 0) &&
         tr_gguf_writer_set_str(w, "stt.frontend.normalize", "none") &&
         tr_gguf_writer_set_bool(w, "stt.capability.streaming", true);
    /* the causal pre-encode's three stages map L mel bins to L / 2 + 1 */
    int F = nm;
    for (int i = 0; i < 3; i++) F = F / 2 + 1;
    const int64_t nin = (int64_t)C * F;
    float *pw = malloc(sizeof(float) * (size_t)(nin * d));
    uint32_t seed = 4242;
    const float sc = 1.0f / sqrtf((float)nin);
    for (int64_t i = 0; pw && i < nin * d; i++) {
        seed = seed * 1664525u + 1013904223u;
        pw[i] = ((float)((seed >> 8) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * sc;
    }
    ok = ok && pw;
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        if (!strcmp(t->name, "enc.pre_encode.out.weight")) {
            const int64_t ne[4] = {nin, d, 1, 1};
            ok = tr_gguf_writer_add_tensor(w, t->name, TR_F32, 2, ne, pw);
        } else {
            ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
        }
    }
    if (ok) ok = tr_gguf_writer_write(w, out) == TRANSCRIBE_OK;
    free(pw);
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    if (!ok) {
        fprintf(stderr, "stream: could not write %s\n", out);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}

/* The unified-en rewrite of an offline file (docs/formats/parakeet.md §3.3,
 * §7.8): the same weights and offline behaviour, style
 * chunked_limited_with_rc with unified-en-0.6b's buffered menus. */
static int make_unified(const char *in, const char *out) {
    gguf_file *g = NULL;
    if (tr_gguf_open(in, &g) != TRANSCRIBE_OK) {
        fprintf(stderr, "stream: cannot open %s\n", in);
        return 1;
    }
    static const char *const keys[] = {"stt.parakeet.encoder.att_context_style",
                                       "stt.parakeet.encoder.att_context_left",
                                       "stt.parakeet.encoder.att_context_right",
                                       "stt.parakeet.encoder.att_context_size_choices",
                                       "stt.parakeet.encoder.att_chunk_left_choices",
                                       "stt.parakeet.encoder.att_chunk_chunk_choices",
                                       "stt.parakeet.encoder.att_chunk_right_choices",
                                       "stt.capability.streaming",
                                       "stt.variant"};
    uint32_t d = 0; /* a Parakeet file: one with the Parakeet encoder's keys */
    bool ok = tr_gguf_get_u32(g, "stt.parakeet.encoder.d_model", &d) == 1 && d > 0;
    gguf_writer *w = ok ? tr_gguf_writer_create() : NULL;
    ok = w != NULL;
    for (int64_t i = 0; ok && i < tr_gguf_n_kv(g); i++) {
        bool skip = false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            skip = skip || !strcmp(tr_gguf_key_name(g, i), keys[k]);
        if (!skip) ok = tr_gguf_writer_copy_kv(w, g, i);
    }
    static const int32_t left[1] = {70}, chunk[4] = {1, 2, 7, 13},
                         right[7] = {0, 1, 2, 3, 4, 7, 13};
    const char *p = "stt.parakeet.encoder.";
    char key[128];
#define KEY(s) (snprintf(key, sizeof key, "%s%s", p, s), key)
    ok = ok && tr_gguf_writer_set_str(w, "stt.variant", "unified-en-0.6b") &&
         tr_gguf_writer_set_str(w, KEY("att_context_style"), "chunked_limited_with_rc") &&
         tr_gguf_writer_set_i32(w, KEY("att_context_left"), -1) &&
         tr_gguf_writer_set_i32(w, KEY("att_context_right"), -1) &&
         tr_gguf_writer_set_arr_i32(w, KEY("att_chunk_left_choices"), left, 1) &&
         tr_gguf_writer_set_arr_i32(w, KEY("att_chunk_chunk_choices"), chunk, 4) &&
         tr_gguf_writer_set_arr_i32(w, KEY("att_chunk_right_choices"), right, 7) &&
         tr_gguf_writer_set_bool(w, "stt.capability.streaming", true);
#undef KEY
    for (int64_t i = 0; ok && i < tr_gguf_n_tensors(g); i++) {
        const tr_tensor *t = tr_gguf_tensor_at(g, i);
        ok = tr_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
    }
    if (ok) ok = tr_gguf_writer_write(w, out) == TRANSCRIBE_OK;
    tr_gguf_writer_free(w);
    tr_gguf_close(g);
    if (!ok) {
        fprintf(stderr, "stream: could not write %s from %s\n", out, in);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
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
    int n_files = 0, threads = 0, feed_ms = 100, att_right = -2, offline = 1;
    int lcr_ms[3] = {-2, -2, -2}; /* --buffered: the PKBS fields */
    const char *buffered = NULL;
    for (int i = 1; i + 2 < argc; i++) { /* file-rewriting modes, not measurements */
        if (strcmp(argv[i], "--make-unified") == 0) return make_unified(argv[i + 1], argv[i + 2]);
        if (strcmp(argv[i], "--make-cache-aware") == 0)
            return make_cache_aware(argv[i + 1], argv[i + 2],
                                    i + 3 < argc ? atoi(argv[i + 3]) : 13);
    }
    const bench_opt opts[] = {{"-m", NULL, BENCH_OPT_STR, &model},
                              {"--threads", NULL, BENCH_OPT_INT, &threads},
                              {"--feed-ms", NULL, BENCH_OPT_INT, &feed_ms},
                              {"--att-right", NULL, BENCH_OPT_INT, &att_right},
                              {"--buffered", NULL, BENCH_OPT_STR, &buffered},
                              {"--offline", NULL, BENCH_OPT_INT, &offline}};
    const char *bad = NULL;
    if (!bench_parse_args(argc, argv, opts, 6, files, 64, &n_files, &bad)) {
        fprintf(stderr, "stream: unknown argument '%s'\n", bad);
        return 2;
    }
    if (buffered && sscanf(buffered, "%d,%d,%d", &lcr_ms[0], &lcr_ms[1], &lcr_ms[2]) != 3) {
        fprintf(stderr, "stream: --buffered wants LEFT_MS,CHUNK_MS,RIGHT_MS\n");
        return 2;
    }
    if (!model || n_files == 0 || feed_ms < 1) {
        fprintf(stderr, "usage: transcribe-bench stream -m MODEL AUDIO... [--threads N] "
                        "[--feed-ms N] [--att-right R] [--buffered L,C,R] [--offline 0]\n");
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
    bool word_ts = caps.max_timestamp_kind >= TRANSCRIBE_TIMESTAMPS_WORD && offline;
    if (word_ts) rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    double off_t0 = now_ms();
    st = !offline ? TRANSCRIBE_OK : transcribe_run(s, all, (int)n, &rp);
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

    /* The stream: committed bytes and audio time after every feed. */
    int feed = feed_ms * rate / 1000;
    const int n_feeds = (int)((n + feed - 1) / feed) + 1;
    int64_t *fed_ms = malloc((size_t)n_feeds * sizeof *fed_ms);
    int64_t *committed = malloc((size_t)n_feeds * sizeof *committed);
    int nf = 0;
    double compute = 0, worst = 0, cpu = 0;
    /* the row commit delay's clock (s) and the 80 ms slices committed so far */
    const int64_t n_rows = (n + rate * 2 / 25 - 1) / (rate * 2 / 25);
    double *row_delay = malloc(((size_t)n_rows + 1) * sizeof *row_delay);
    double clk = 0, lag_max = 0;
    int64_t rows = 0;
    struct transcribe_parakeet_stream_ext pk;
    transcribe_parakeet_stream_ext_init(&pk);
    pk.att_context_right = att_right;
    struct transcribe_stream_params stp;
    transcribe_stream_params_init(&stp);
    stp.family = &pk.ext;
    struct transcribe_parakeet_buffered_stream_ext pb;
    transcribe_parakeet_buffered_stream_ext_init(&pb);
    pb.left_ms = lcr_ms[0];
    pb.chunk_ms = lcr_ms[1];
    pb.right_ms = lcr_ms[2];
    if (lcr_ms[0] >= -1) stp.family = &pb.ext;
    if (att_right < -1 && lcr_ms[0] < -1) stp.family = NULL;
    stp.window_fallback = true; /* any model: natively, else through the window driver */
    st = fed_ms && committed && row_delay ? transcribe_stream_begin(s, NULL, &stp)
                                          : TRANSCRIBE_ERR_OOM;
    for (int64_t pos = 0; st == TRANSCRIBE_OK && pos < n; pos += feed) {
        int take = n - pos < feed ? (int)(n - pos) : feed;
        struct transcribe_stream_update up;
        transcribe_stream_update_init(&up);
        double c0 = cpu_ms(), t0 = now_ms();
        st = transcribe_stream_feed(s, all + pos, take, &up);
        double dt = now_ms() - t0;
        cpu += cpu_ms() - c0;
        compute += dt;
        if (dt > worst) worst = dt;
        const double arrive = (double)(pos + take) / rate;
        clk = (clk > arrive ? clk : arrive) + dt * 1e-3;
        if (clk - arrive > lag_max) lag_max = clk - arrive;
        for (; rows < n_rows && (rows + 1) * 80 <= up.audio_committed_ms; rows++)
            row_delay[rows] = clk - (double)(rows + 1) * 0.08;
        struct transcribe_stream_text t;
        transcribe_stream_text_init(&t);
        transcribe_stream_get_text(s, &t);
        fed_ms[nf] = (pos + take) * 1000 / rate;
        committed[nf++] = (int64_t)t.committed_text_bytes;
    }
    if (st == TRANSCRIBE_OK) {
        double c0 = cpu_ms(), t0 = now_ms();
        st = transcribe_stream_finalize(s, NULL);
        const double dt = now_ms() - t0;
        cpu += cpu_ms() - c0;
        compute += dt;
        const double end = (double)n / rate;
        clk = (clk > end ? clk : end) + dt * 1e-3;
        for (; rows < n_rows; rows++) row_delay[rows] = clk - (double)(rows + 1) * 0.08;
    }
    if (st != TRANSCRIBE_OK) {
        fprintf(stderr, "stream: %s\n", transcribe_status_string(st));
        free(row_delay);
        free(all);
        free(off_end);
        free(fed_ms);
        free(committed);
        free_words(&off);
        transcribe_session_free(s);
        return 1;
    }
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    fed_ms[nf] = n * 1000 / rate; /* finalize commits the rest */
    committed[nf++] = (int64_t)t.committed_text_bytes;
    words str = split_words(t.committed_text);
    int64_t *commit_at = malloc(((size_t)str.n + 1) * sizeof *commit_at);
    int64_t *wend = malloc(((size_t)str.n + 1) * sizeof *wend);
    int n_commit = 0;
    if (commit_at && wend) {
        n_commit = word_ends(t.committed_text, wend, str.n);
        for (int i = 0, f = 0; i < n_commit; i++) {
            while (f < nf - 1 && committed[f] < wend[i]) f++;
            commit_at[i] = fed_ms[f];
        }
    }
    free(wend);
    free(fed_ms);
    free(committed);
    double audio_s = (double)n / rate;
    printf("{\"bench\":\"stream\",\"model\":\"%s\",\"audio_s\":%.2f,\"threads\":%d,\"feed_ms\":%d,"
           "\"att_right\":%d,\"buffered_ms\":[%d,%d,%d],\"compute_s_per_audio_s\":%.4f,"
           "\"max_feed_ms\":%.1f,\"cpu_s_per_audio_s\":%.4f,\"lag_max_s\":%.2f,"
           "\"offline_s_per_audio_s\":%.4f,",
           model, audio_s, threads, feed_ms, att_right < -1 ? -1 : att_right, lcr_ms[0], lcr_ms[1],
           lcr_ms[2], compute / 1000.0 / audio_s, worst, cpu / 1000.0 / audio_s, lag_max,
           !offline ? -1.0 : offline_ms / 1000.0 / audio_s);
    if (n_rows > 0) {
        qsort(row_delay, (size_t)n_rows, sizeof *row_delay, cmp_double);
        printf("\"row_commit_delay_ms\":{\"median\":%.0f,\"p90\":%.0f,\"rows\":%lld},",
               row_delay[n_rows / 2] * 1e3, row_delay[n_rows * 9 / 10] * 1e3, (long long)n_rows);
    }
    free(row_delay);
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
