/* Upload decoding, with the codecs kept out of the server's memory.
 *
 * WAV (RIFF / RF64), the common case, is parsed by the library itself and
 * decoded in this process. Every other container goes through libsndfile
 * and the codec libraries behind it, which are not ours: libvorbis inside
 * libsndfile 1.2.0 leaks about 5.7 KB per malformed Ogg Vorbis file, so a
 * server fed such uploads would grow without bound. Those files are decoded
 * in a short-lived child process (fork): whatever a codec leaks, or a crash
 * inside it, ends with the child; the server only reads the finished PCM
 * back through a pipe. The child starts from the parent's memory as it is
 * (copy on write), calls the same library loader with the same length
 * limit, and writes a small header (status, sample count) then the
 * samples. glibc makes malloc usable in the child of a threaded process;
 * the child touches nothing else of the parent's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

static bool is_wav(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    unsigned char h[4];
    bool wav = fread(h, 1, 4, f) == 4 && (!memcmp(h, "RIFF", 4) || !memcmp(h, "RF64", 4));
    fclose(f);
    return wav;
}

/* Writes all of buf to fd (a pipe: partial writes and EINTR happen). */
static bool write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads exactly len bytes from fd before the deadline (0: none). */
static bool read_all(int fd, void *buf, size_t len, double deadline) {
    char *p = buf;
    while (len > 0) {
        if (deadline > 0) {
            double left = deadline - now_s();
            if (left <= 0) return false;
            struct pollfd pfd = {fd, POLLIN, 0};
            int r = poll(&pfd, 1, (int)(left * 1000.0) + 1);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
        }
        ssize_t got = read(fd, p, len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        len -= (size_t)got;
    }
    return true;
}

/* The longest reason a child sends back. */
#define WHY_MAX 400

/* The library's loader, with its first error message kept in why. */
static transcribe_status load(const char *path, int rate, int64_t max_ms, float **pcm, int *n,
                              char *why, size_t why_cap) {
    srv_log_capture(why, why_cap);
    transcribe_status st = transcribe_audio_load_file_max(path, rate, max_ms, pcm, n);
    srv_log_capture(NULL, 0);
    return st;
}

/* The child: decode, send (a failure: its status and the length of its
 * reason, then the reason), exit without running the parent's atexit work. */
static void child_decode(int fd, const char *path, int rate, int64_t max_ms) {
    float *pcm = NULL;
    int n = 0;
    char why[WHY_MAX] = "";
    transcribe_status st = load(path, rate, max_ms, &pcm, &n, why, sizeof why);
    int32_t head[2] = {(int32_t)st, st == TRANSCRIBE_OK ? n : (int32_t)strlen(why)};
    bool ok = write_all(fd, head, sizeof head);
    if (ok && st == TRANSCRIBE_OK && head[1] > 0)
        ok = write_all(fd, pcm, (size_t)head[1] * sizeof(float));
    else if (ok && head[1] > 0)
        ok = write_all(fd, why, (size_t)head[1]);
    _exit(ok ? 0 : 1);
}

transcribe_status srv_decode_upload(const char *path, int rate, int64_t max_ms, int timeout_s,
                                    float **pcm, int *n, char *why, size_t why_cap) {
    *pcm = NULL;
    *n = 0;
    if (why_cap) why[0] = '\0';
    if (is_wav(path)) return load(path, rate, max_ms, pcm, n, why, why_cap);
    int fds[2];
    if (pipe(fds) != 0) return TRANSCRIBE_ERR_BACKEND;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return TRANSCRIBE_ERR_BACKEND;
    }
    if (pid == 0) {
        close(fds[0]);
        child_decode(fds[1], path, rate, max_ms);
    }
    close(fds[1]);
    double deadline = timeout_s > 0 ? now_s() + timeout_s : 0;
    int32_t head[2] = {0, 0};
    transcribe_status st = TRANSCRIBE_ERR_INVALID_ARG; /* the child died or said nothing */
    if (read_all(fds[0], head, sizeof head, deadline)) {
        st = (transcribe_status)head[0];
        /* at most what the length limit lets through, and a sane count */
        int64_t cap = max_ms > 0 ? max_ms * rate / 1000 + rate : INT32_MAX;
        if (st == TRANSCRIBE_OK && (head[1] <= 0 || head[1] > cap)) st = TRANSCRIBE_ERR_INVALID_ARG;
        if (st != TRANSCRIBE_OK && head[1] > 0 && head[1] < WHY_MAX) {
            char msg[WHY_MAX];
            if (read_all(fds[0], msg, (size_t)head[1], deadline) && why_cap)
                snprintf(why, why_cap, "%.*s", (int)head[1], msg);
        }
        if (st == TRANSCRIBE_OK) {
            float *buf = malloc((size_t)head[1] * sizeof(float));
            if (!buf) {
                st = TRANSCRIBE_ERR_OOM;
            } else if (!read_all(fds[0], buf, (size_t)head[1] * sizeof(float), deadline)) {
                free(buf);
                st = TRANSCRIBE_ERR_INVALID_ARG;
            } else {
                *pcm = buf;
                *n = head[1];
            }
        }
    }
    close(fds[0]);
    if (st != TRANSCRIBE_OK) kill(pid, SIGKILL); /* a child that hangs or lingers */
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    return st;
}
