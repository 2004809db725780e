/* transcribe-bench server: a bounded load against a transcribe-server it
 * starts on loopback. N requests from C concurrent clients, a mix of valid
 * transcriptions and hostile requests (each with the 4xx it must get);
 * prints p50/p99 latency, throughput and the server's resident memory after
 * the first 100 requests and at its peak, then stops the server (SIGTERM)
 * and checks it exits 0. --check turns the expectations into the exit code:
 * no 5xx but deliberate 503s (queue full), every status as expected, peak
 * RSS flat after the first 100 requests. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "bench.h"
#include "transcribe.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- requests ---- */

typedef struct {
    const char *name;
    char *data; /* the whole HTTP request */
    size_t len;
    int expect;      /* the status it must get */
    bool may_be_503; /* valid work: a full queue may refuse it */
} kind;

#define BOUNDARY "benchBoundary7MA4YWxkTrZu0gW"

static void part(FILE *f, const char *name, const char *filename, const void *v, size_t n) {
    fprintf(f, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"", name);
    if (filename)
        fprintf(f, "; filename=\"%s\"\r\nContent-Type: application/octet-stream", filename);
    fputs("\r\n\r\n", f);
    fwrite(v, 1, n, f);
    fputs("\r\n", f);
}

/* A multipart POST with the given fields (NULL-terminated name/value pairs)
 * and, when audio is non-NULL, a file part. */
static kind make_post(const char *name, const char *path, const void *audio, size_t audio_len,
                      int expect, bool may_be_503, const char *const *fields) {
    char *body = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&body, &blen);
    for (int i = 0; fields && fields[i]; i += 2)
        part(f, fields[i], NULL, fields[i + 1], strlen(fields[i + 1]));
    if (audio) part(f, "file", "a.wav", audio, audio_len);
    fputs("--" BOUNDARY "--\r\n", f);
    fclose(f);
    kind k = {.name = name, .expect = expect, .may_be_503 = may_be_503};
    f = open_memstream(&k.data, &k.len);
    fprintf(f,
            "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n"
            "Content-Length: %zu\r\n\r\n",
            path, blen);
    fwrite(body, 1, blen, f);
    fclose(f);
    free(body);
    return k;
}

static kind make_raw(const char *name, const char *req, int expect) {
    kind k = {.name = name, .expect = expect};
    k.len = strlen(req);
    k.data = malloc(k.len);
    memcpy(k.data, req, k.len);
    return k;
}

/* The first clip_ms of the file as a 16-bit mono 16 kHz WAV. */
static char *wav_clip(const char *path, int clip_ms, size_t *len, double *dur_s) {
    float *pcm = NULL;
    int n = 0;
    if (transcribe_audio_load_file(path, 16000, &pcm, &n) != TRANSCRIBE_OK) return NULL;
    if (clip_ms > 0 && (int64_t)clip_ms * 16 < n) n = clip_ms * 16;
    *dur_s = n / 16000.0;
    *len = 44 + (size_t)n * 2;
    unsigned char *w = malloc(*len);
    uint32_t data = (uint32_t)n * 2;
    memcpy(w, "RIFF", 4);
    uint32_t v = 36 + data;
    memcpy(w + 4, &v, 4);
    memcpy(w + 8, "WAVEfmt ", 8);
    uint32_t fmt_len = 16, rate = 16000, byte_rate = 32000;
    uint16_t pcm_tag = 1, ch = 1, align = 2, bits = 16;
    memcpy(w + 16, &fmt_len, 4);
    memcpy(w + 20, &pcm_tag, 2);
    memcpy(w + 22, &ch, 2);
    memcpy(w + 24, &rate, 4);
    memcpy(w + 28, &byte_rate, 4);
    memcpy(w + 32, &align, 2);
    memcpy(w + 34, &bits, 2);
    memcpy(w + 36, "data", 4);
    memcpy(w + 40, &data, 4);
    for (int i = 0; i < n; i++) {
        float x = pcm[i] < -1.0f ? -1.0f : pcm[i] > 1.0f ? 1.0f : pcm[i];
        int16_t s = (int16_t)(x * 32767.0f);
        memcpy(w + 44 + 2 * (size_t)i, &s, 2);
    }
    transcribe_audio_free(pcm);
    return (char *)w;
}

/* ---- one exchange over a fresh connection ---- */

static int exchange(int port, const kind *k) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    size_t off = 0;
    while (off < k->len) {
        ssize_t w = send(fd, k->data + off, k->len - off, MSG_NOSIGNAL);
        if (w <= 0) break; /* the server may answer before it read it all */
        off += (size_t)w;
    }
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (r <= 0) break;
        have += (size_t)r;
        if (have == sizeof buf - 1) have = 16; /* keep the status line, drain the rest */
    }
    close(fd);
    buf[have] = '\0';
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) status = -1;
    return status;
}

/* ---- the run ---- */

typedef struct {
    int port;
    const kind *kinds;
    int n_kinds;
    int n_requests;
    atomic_int next;
    atomic_int done;
    double *latency; /* per request, seconds */
    int *status;
    int *kind_of;
} load;

static void *client(void *arg) {
    load *L = arg;
    for (;;) {
        int i = atomic_fetch_add(&L->next, 1);
        if (i >= L->n_requests) break;
        int k = i % L->n_kinds;
        double t0 = now_s();
        L->status[i] = exchange(L->port, &L->kinds[k]);
        L->latency[i] = now_s() - t0;
        L->kind_of[i] = k;
        atomic_fetch_add(&L->done, 1);
    }
    return NULL;
}

static long rss_kb(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl)) v = strtol(line + fl, NULL, 10);
    fclose(f);
    return v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    fprintf(stderr,
            "usage: transcribe-bench server -m MODEL --audio WAV [options]\n"
            "  --server PATH      transcribe-server (default: beside this program)\n"
            "  --requests N       total requests (default 500)\n"
            "  --clients N        concurrent clients (default 16)\n"
            "  --clip-ms N        send the first N ms of the audio (default: all)\n"
            "  --parallel N       server sessions (default 2)\n"
            "  --queue N          server queue (default 16; beyond: deliberate 503s)\n"
            "  --check            exit 1 unless every status is as expected and RSS is flat\n");
}

static pid_t start_server(const char *bin, const char *model, int parallel, int queue,
                          const char *log_path, int *port) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) dup2(fd, 2);
        char p[16], q[16];
        snprintf(p, sizeof p, "%d", parallel);
        snprintf(q, sizeof q, "%d", queue);
        execl(bin, bin, "-m", model, "--host", "127.0.0.1", "--port", "0", "--parallel", p,
              "--queue", q, "--max-connections", "256", "-q", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(log_path, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            if (sscanf(line, "listening on http://127.0.0.1:%d/", port) == 1) {
                fclose(f);
                return pid;
            }
        }
        if (f) fclose(f);
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) return -1;
        usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

int bench_server(int argc, char **argv) {
    const char *model = NULL, *audio = NULL, *server = NULL;
    int requests = 500, clients = 16, clip_ms = 0, parallel = 2, queue = 16;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) {
            check = true;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--audio"))
            audio = v;
        else if (!strcmp(a, "--server"))
            server = v;
        else if (!strcmp(a, "--requests"))
            requests = atoi(v);
        else if (!strcmp(a, "--clients"))
            clients = atoi(v);
        else if (!strcmp(a, "--clip-ms"))
            clip_ms = atoi(v);
        else if (!strcmp(a, "--parallel"))
            parallel = atoi(v);
        else if (!strcmp(a, "--queue"))
            queue = atoi(v);
        else {
            usage();
            return 2;
        }
    }
    if (!model || !audio || requests < 1 || requests > 1000000 || clients < 1 || clients > 1024 ||
        parallel < 1 || queue < 0) {
        usage();
        return 2;
    }
    char self[PATH_MAX], srv_path[PATH_MAX + 32];
    if (!server) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return 2;
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        snprintf(srv_path, sizeof srv_path, "%s/transcribe-server", self);
        server = srv_path;
    }
    if (access(server, X_OK) != 0) {
        fprintf(stderr, "bench server: no %s (built only with libmicrohttpd)\n", server);
        return 2;
    }
    size_t wav_len = 0;
    double dur_s = 0;
    char *wav = wav_clip(audio, clip_ms, &wav_len, &dur_s);
    if (!wav) {
        fprintf(stderr, "bench server: cannot read %s\n", audio);
        return 2;
    }
    /* the mix: 6 valid in 10, 4 hostile (each with its status) */
    const char *const f_json[] = {"response_format", "json", NULL};
    const char *const f_verbose[] = {"response_format", "verbose_json", "timestamp_granularities[]",
                                     "word", NULL};
    const char *const f_srt[] = {"response_format", "srt", NULL};
    const char *const f_badmodel[] = {"model", "no-such-model", NULL};
    const char *const f_badfmt[] = {"response_format", "docx", NULL};
    const char *const f_utf8[] = {"language", "e\xff\xfe", NULL};
    const char junk[] = "this is not audio at all, just text pretending to be a file";
    const char *T = "/v1/audio/transcriptions";
    kind kinds[10];
    kinds[0] = make_post("json", T, wav, wav_len, 200, true, f_json);
    kinds[1] = make_post("missing file", T, NULL, 0, 400, false, f_json);
    kinds[2] = make_post("verbose_json", T, wav, wav_len, 200, true, f_verbose);
    kinds[3] = make_post("not audio", T, junk, sizeof junk - 1, 415, false, f_json);
    kinds[4] = make_post("srt", T, wav, wav_len, 200, true, f_srt);
    kinds[5] = make_post("unknown model", T, wav, wav_len, 404, false, f_badmodel);
    kinds[6] = make_post("json", T, wav, wav_len, 200, true, f_json);
    kinds[7] =
        make_raw("path traversal",
                 "GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404);
    kinds[8] = make_post("stream", T, wav, wav_len, 200, true,
                         (const char *const[]){"stream", "true", NULL});
    kinds[9] = make_post(requests % 2 ? "bad format" : "invalid utf-8", T, wav, wav_len, 400, false,
                         requests % 2 ? f_badfmt : f_utf8);
    free(wav);

    char log_path[] = "/tmp/transcribe-bench-server-XXXXXX";
    int lfd = mkstemp(log_path);
    if (lfd >= 0) close(lfd);
    int port = 0;
    pid_t pid = start_server(server, model, parallel, queue, log_path, &port);
    int rc = 1;
    if (pid < 0) {
        /* the log is removed on the way out: its last lines, here */
        fprintf(stderr, "bench server: the server did not start; the end of its log:\n");
        FILE *lf = fopen(log_path, "r");
        if (lf) {
            char tail[4096];
            long size = fseek(lf, 0, SEEK_END) == 0 ? ftell(lf) : 0;
            long from = size > (long)sizeof tail - 1 ? size - ((long)sizeof tail - 1) : 0;
            size_t got = fseek(lf, from, SEEK_SET) == 0 ? fread(tail, 1, sizeof tail - 1, lf) : 0;
            tail[got] = '\0';
            fputs(tail, stderr);
            if (got && tail[got - 1] != '\n') fputc('\n', stderr);
            fclose(lf);
        }
        goto out;
    }
    load L = {.port = port, .kinds = kinds, .n_kinds = 10, .n_requests = requests};
    L.latency = calloc((size_t)requests, sizeof *L.latency);
    L.status = calloc((size_t)requests, sizeof *L.status);
    L.kind_of = calloc((size_t)requests, sizeof *L.kind_of);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    long rss_100 = 0, rss_peak = 0, rss_start = rss_kb(pid, "VmRSS:");
    double t0 = now_s();
    for (int c = 0; c < clients; c++) pthread_create(&th[c], NULL, client, &L);
    /* memory: the server's resident size, sampled while the load runs */
    while (atomic_load(&L.done) < requests) {
        long r = rss_kb(pid, "VmRSS:");
        if (r > rss_peak) rss_peak = r;
        if (atomic_load(&L.done) < 100 && r > rss_100) rss_100 = r;
        usleep(10 * 1000);
    }
    for (int c = 0; c < clients; c++) pthread_join(th[c], NULL);
    double wall = now_s() - t0;
    long hwm = rss_kb(pid, "VmHWM:");

    kill(pid, SIGTERM);
    int wst = 0;
    waitpid(pid, &wst, 0);
    bool clean_exit = WIFEXITED(wst) && WEXITSTATUS(wst) == 0;

    int n_ok = 0, n_503 = 0, n_5xx = 0, n_unexpected = 0, n_valid = 0;
    int counts[600] = {0};
    double *lat = calloc((size_t)requests, sizeof *lat);
    int n_lat = 0;
    for (int i = 0; i < requests; i++) {
        const kind *k = &kinds[L.kind_of[i]];
        int s = L.status[i];
        if (s >= 100 && s < 600) counts[s]++;
        if (s == 503 && k->may_be_503) {
            n_503++;
            continue;
        }
        if (s >= 500) n_5xx++;
        if (s != k->expect) {
            if (n_unexpected++ < 5)
                fprintf(stderr, "bench server: request %d (%s) got %d, wanted %d\n", i, k->name, s,
                        k->expect);
            continue;
        }
        if (k->may_be_503) {
            n_valid++;
            lat[n_lat++] = L.latency[i]; /* latency of completed transcriptions */
        }
        n_ok++;
    }
    qsort(lat, (size_t)n_lat, sizeof *lat, cmp_double);
    double p50 = n_lat ? lat[(n_lat - 1) / 2] : 0, p99 = n_lat ? lat[(n_lat * 99 - 1) / 100] : 0;
    /* flat: the peak after the first 100 requests within 10 % + 8 MiB */
    bool flat = rss_peak <= rss_100 + rss_100 / 10 + 8 * 1024;
    printf("{\"bench\":\"server\",\"requests\":%d,\"clients\":%d,\"audio_s\":%.2f,"
           "\"as_expected\":%d,\"transcribed\":%d,\"deliberate_503\":%d,\"other_5xx\":%d,"
           "\"unexpected\":%d,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"throughput_rps\":%.1f,"
           "\"transcriptions_per_s\":%.1f,\"rss_mb_start\":%.1f,\"rss_mb_at_100\":%.1f,"
           "\"rss_mb_peak\":%.1f,\"vmhwm_mb\":%.1f,\"rss_flat\":%s,\"clean_exit\":%s,\"status\":{",
           requests, clients, dur_s, n_ok, n_valid, n_503, n_5xx, n_unexpected, p50 * 1000,
           p99 * 1000, requests / wall, n_valid / wall, rss_start / 1024.0, rss_100 / 1024.0,
           rss_peak / 1024.0, hwm / 1024.0, flat ? "true" : "false", clean_exit ? "true" : "false");
    int first = 1;
    for (int s = 0; s < 600; s++)
        if (counts[s]) printf("%s\"%d\":%d", first ? "" : ",", s, counts[s]), first = 0;
    printf("}}\n");
    fprintf(stderr,
            "server load: %d requests, %d clients, %.1f s: p50 %.1f ms, p99 %.1f ms (completed "
            "transcriptions of %.2f s audio), %.1f req/s, %d transcribed, %d deliberate 503, "
            "%d other 5xx, %d unexpected; RSS %.1f MiB after 100, peak %.1f MiB (%s)\n",
            requests, clients, wall, p50 * 1000, p99 * 1000, dur_s, requests / wall, n_valid, n_503,
            n_5xx, n_unexpected, rss_100 / 1024.0, rss_peak / 1024.0, flat ? "flat" : "GROWING");
    rc = (!check || (n_5xx == 0 && n_unexpected == 0 && flat && clean_exit && n_valid > 0)) ? 0 : 1;
    free(lat), free(L.latency), free(L.status), free(L.kind_of), free(th);
out:
    for (int k = 0; k < 10; k++) free(kinds[k].data);
    unlink(log_path);
    return rc;
}
