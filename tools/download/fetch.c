/* One file into the cache over libcurl (fetch.h): a try appends to FILE.part
 * from where it ends (Range), a dropped connection or a 5xx is tried again,
 * the result is checked against the size and the sha256 the server gives
 * before it is renamed to its final name. */
#include "fetch.h"

#include "sha256.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define ERR(...) (fprintf(stderr, "transcribe-download: error: " __VA_ARGS__), fputc('\n', stderr))
#define NOTE(o, ...)                                                                               \
    do {                                                                                           \
        if (!(o)->quiet) {                                                                         \
            fprintf(stderr, "transcribe-download: " __VA_ARGS__);                                  \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

typedef struct {
    const tdl_fetch_opts *o;
    const char *dir;
    int fd;
    long long have; /* bytes in FILE.part when this try began (0 after a restart) */
    long long written;
    /* the response now arriving (a redirect chain has several) */
    long status;
    int n_responses;
    long long content_length, cr_start, cr_total;
    char etag[96];
    /* kept over the chain: the hub puts them on its redirect */
    long long linked_size;
    char linked_etag[96], first_etag[96];
    bool body_started, discard;
    /* why a try stopped early */
    int write_errno;
    bool bad_range, space_short;
    long long need, space;
    /* progress bar */
    double last_draw;
    bool drew;
} xfer;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* a header's value, trimmed, quotes and a weak W/ prefix dropped */
static void header_value(const char *v, size_t n, char *out, size_t out_n) {
    while (n && (*v == ' ' || *v == '\t')) v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ')) n--;
    if (n >= 2 && v[0] == 'W' && v[1] == '/') v += 2, n -= 2;
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') v++, n -= 2;
    if (n >= out_n) n = out_n - 1;
    memcpy(out, v, n);
    out[n] = 0;
}

/* A file named *.gguf must start with the GGUF magic: a mirror or proxy that answers 200 with
 * an HTML page would otherwise leave a file that fails only later, at load. */
static bool gguf_magic_ok(int fd, const char *final_name) {
    size_t n = strlen(final_name);
    if (n < 5 || strcasecmp(final_name + n - 5, ".gguf") != 0) return true;
    char magic[4];
    return pread(fd, magic, 4, 0) == 4 && memcmp(magic, "GGUF", 4) == 0;
}

static bool is_sha256_hex(const char *s) {
    if (strlen(s) != 64) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
            return false;
    return true;
}

static bool head_is(const char *line, size_t n, const char *name, const char **val, size_t *vn) {
    size_t l = strlen(name);
    if (n <= l || strncasecmp(line, name, l) != 0 || line[l] != ':') return false;
    *val = line + l + 1;
    *vn = n - l - 1;
    return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud) {
    xfer *x = ud;
    size_t n = size * nitems;
    const char *v;
    size_t vn;
    char tmp[96];
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
        const char *sp = memchr(line, ' ', n);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->n_responses++;
        x->content_length = x->cr_start = x->cr_total = -1;
        x->etag[0] = 0;
    } else if (head_is(line, n, "content-length", &v, &vn)) {
        header_value(v, vn, tmp, sizeof tmp);
        x->content_length = strtoll(tmp, NULL, 10);
    } else if (head_is(line, n, "content-range", &v, &vn)) {
        header_value(v, vn, tmp, sizeof tmp);
        long long a = -1, b = -1, t = -1;
        if (sscanf(tmp, "bytes %lld-%lld/%lld", &a, &b, &t) >= 2) {
            x->cr_start = a;
            x->cr_total = t;
        } else if (sscanf(tmp, "bytes */%lld", &t) == 1) {
            x->cr_total = t;
        }
    } else if (head_is(line, n, "x-linked-size", &v, &vn)) {
        header_value(v, vn, tmp, sizeof tmp);
        x->linked_size = strtoll(tmp, NULL, 10);
    } else if (head_is(line, n, "x-linked-etag", &v, &vn)) {
        header_value(v, vn, x->linked_etag, sizeof x->linked_etag);
    } else if (head_is(line, n, "etag", &v, &vn)) {
        header_value(v, vn, x->etag, sizeof x->etag);
        if (x->n_responses == 1) snprintf(x->first_etag, sizeof x->first_etag, "%s", x->etag);
    } else if ((n == 2 && line[0] == '\r') || (n == 1 && line[0] == '\n')) {
        /* the end of a final response's headers: is there room for the body? */
        if (x->status == 200 || x->status == 206) {
            long long rest = x->status == 206 && x->cr_total > 0 ? x->cr_total - x->have
                             : x->content_length >= 0            ? x->content_length
                                                                 : -1;
            struct statvfs vfs;
            if (rest > 0 && statvfs(x->dir, &vfs) == 0) {
                long long free_b = (long long)vfs.f_bavail * (long long)vfs.f_frsize;
                if (free_b < rest) {
                    x->space_short = true;
                    x->need = rest;
                    x->space = free_b;
                    return 0; /* stops the transfer */
                }
            }
        }
    }
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud) {
    xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->body_started) {
        x->body_started = true;
        if (x->status == 206) {
            if (x->cr_start != x->have) {
                x->bad_range = true;
                return 0;
            }
        } else if (x->status == 200) {
            if (x->have > 0) { /* the server ignored the range: from the start */
                if (ftruncate(x->fd, 0) != 0 || lseek(x->fd, 0, SEEK_SET) != 0) {
                    x->write_errno = errno;
                    return 0;
                }
                NOTE(x->o, "the server does not resume: starting over");
                x->have = 0;
            }
        } else {
            x->discard = true; /* an error page: not part of the file */
        }
    }
    if (x->discard) return n;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(x->fd, data + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            x->write_errno = w < 0 ? errno : EIO;
            return 0;
        }
        off += (size_t)w;
    }
    x->written += (long long)n;
    return n;
}

static void human(double b, char *out, size_t n) {
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(out, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(out, n, "%.1f MiB", b / (1024.0 * 1024));
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut,
                       curl_off_t un) {
    (void)ut;
    (void)un;
    xfer *x = ud;
    if (!x->o->progress || x->discard) return 0;
    double t = now_s();
    bool done = dltotal > 0 && dlnow >= dltotal;
    if (!done && t - x->last_draw < 0.1) return 0;
    x->last_draw = t;
    double got = (double)(x->have + dlnow), all = dltotal > 0 ? (double)(x->have + dltotal) : 0;
    char a[32], b[32];
    human(got, a, sizeof a);
    if (all > 0) {
        int width = 30, fill = (int)(width * got / all);
        char bar[31];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        human(all, b, sizeof b);
        fprintf(stderr, "\r[%s] %3d%%  %s / %s ", bar, (int)(100.0 * got / all), a, b);
    } else {
        fprintf(stderr, "\r%s ", a);
    }
    x->drew = true;
    return 0;
}

static void end_bar(xfer *x) {
    if (x->drew) fputc('\n', stderr);
    x->drew = false;
}

static long long fd_size(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
}

static bool hash_file(int fd, char out[65]) {
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    tdl_sha256 s;
    tdl_sha256_init(&s);
    bool ok = buf && lseek(fd, 0, SEEK_SET) == 0;
    while (ok) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            ok = r == 0;
            break;
        }
        tdl_sha256_update(&s, buf, (size_t)r);
    }
    free(buf);
    if (ok) tdl_sha256_hex(&s, out);
    return ok;
}

/* what a failed try means */
enum { TRY_DONE, TRY_AGAIN, TRY_FAIL };

static int one_try(CURL *c, xfer *x, char *errbuf) {
    const tdl_fetch_opts *o = x->o;
    char range[48];
    errbuf[0] = 0;
    if (x->have > 0) {
        snprintf(range, sizeof range, "%lld-", x->have);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    } else {
        curl_easy_setopt(c, CURLOPT_RANGE, NULL);
    }
    CURLcode rc = curl_easy_perform(c);
    end_bar(x);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    char *eff = NULL;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
    const char *url = o->url;
    if (x->space_short) {
        char a[32], b[32];
        human((double)x->need, a, sizeof a);
        human((double)x->space, b, sizeof b);
        ERR("not enough space in %s: the file needs %s more, %s free; free some space (or pick "
            "another folder with --dir / TRANSCRIBE_MODEL_DIR) and run again%s",
            x->dir, a, b, x->have ? ": it resumes where it stopped" : "");
        return TRY_FAIL;
    }
    if (x->write_errno) {
        int e = x->write_errno;
        if (e == ENOSPC || e == EFBIG || e == EDQUOT)
            ERR("cannot write the download into %s: %s (after %lld bytes); the disk or the "
                "file size limit is full: free some space (or pick another folder with --dir / "
                "TRANSCRIBE_MODEL_DIR) and run again: it resumes where it stopped",
                x->dir, strerror(e), x->have + x->written);
        else
            ERR("cannot write the download into %s: %s", x->dir, strerror(e));
        return TRY_FAIL;
    }
    if (x->bad_range) {
        NOTE(o, "%s answered a resume from byte %lld with bytes from %lld: starting over", url,
             x->have, x->cr_start);
        return TRY_AGAIN; /* the caller empties FILE.part */
    }
    if (rc == CURLE_OK) {
        if (code == 200 || code == 206) return TRY_DONE;
        if (code == 416 && x->have > 0) return TRY_DONE; /* FILE.part may be whole: checked next */
        if (code == 404 || code == 410) {
            ERR("%s: HTTP %ld, no such file on the server (the catalogue names a file this "
                "server does not have: an old catalogue, or a mirror without it)",
                url, code);
            return TRY_FAIL;
        }
        if (code == 401 || code == 403) {
            ERR("%s: HTTP %ld, access refused (a gated repository needs a token: set HF_TOKEN)",
                url, code);
            return TRY_FAIL;
        }
        if (code == 429 || code >= 500) {
            NOTE(o, "%s: HTTP %ld from the server", url, code);
            return TRY_AGAIN;
        }
        if (code >= 300 && code < 400)
            ERR("%s: HTTP %ld, a redirect without a usable Location", url, code);
        else
            ERR("%s: HTTP %ld", url, code);
        return TRY_FAIL;
    }
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        ERR("cannot resolve the host of %s (%s): no network? A mirror can be named with "
            "--base-url or TRANSCRIBE_MODEL_BASE_URL; cached models work offline",
            url, why);
        return TRY_FAIL;
    case CURLE_COULDNT_CONNECT:
        ERR("cannot connect to %s (%s): no network, or the server is down; cached models work "
            "offline",
            eff ? eff : url, why);
        return TRY_FAIL;
    case CURLE_TOO_MANY_REDIRECTS:
        ERR("%s: too many redirects (more than 10; last %s)", url, eff ? eff : "?");
        return TRY_FAIL;
    case CURLE_UNSUPPORTED_PROTOCOL:
        ERR("%s: redirected to %s, which is not http or https: refused", url, eff ? eff : "?");
        return TRY_FAIL;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        NOTE(o, "the connection dropped after %lld bytes (%s)", x->have + x->written, why);
        return TRY_AGAIN;
    default:
        ERR("%s: %s", url, why);
        return TRY_FAIL;
    }
}

int tdl_fetch(const tdl_fetch_opts *o) {
    char part[4200], dir[4200];
    if ((size_t)snprintf(part, sizeof part, "%s.part", o->final) >= sizeof part) {
        ERR("path too long: %s", o->final);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", o->final);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        ERR("cannot create %s: %s", part, strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ERR("another transcribe-download is fetching %s now (%s is locked)", o->final, part);
        close(fd);
        return 1;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        ERR("cannot start libcurl");
        close(fd);
        return 1;
    }
    xfer x;
    char errbuf[CURL_ERROR_SIZE];
    curl_easy_setopt(c, CURLOPT_URL, o->url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_USERAGENT, "transcribe-download");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(o->stall_s > 0 ? o->stall_s : 60));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    if (o->token && *o->token) {
        /* sent to the first host only: libcurl drops it on a redirect to
         * another host (CURLOPT_UNRESTRICTED_AUTH stays off) */
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, o->token);
    }
    int ret = 1;
    long long total = -1;
    for (int attempt = 0;; attempt++) {
        memset(&x, 0, sizeof x);
        x.o = o;
        x.dir = dir;
        x.fd = fd;
        x.have = fd_size(fd);
        if (x.have < 0 || lseek(fd, 0, SEEK_END) < 0) {
            ERR("cannot read %s: %s", part, strerror(errno));
            break;
        }
        if (attempt == 0 && x.have > 0) NOTE(o, "resuming %s from byte %lld", part, x.have);
        int r = one_try(c, &x, errbuf);
        if (r == TRY_DONE) {
            total = x.linked_size > 0 ? x.linked_size
                    : x.cr_total > 0  ? x.cr_total
                    : x.status == 200 ? x.content_length
                                      : -1;
            long long got = fd_size(fd);
            if (total >= 0 && got < total && x.status != 416) {
                NOTE(o, "the transfer ended at %lld of %lld bytes", got, total);
                r = TRY_AGAIN;
            } else {
                break;
            }
        }
        if (x.bad_range && (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)) {
            ERR("cannot empty %s: %s", part, strerror(errno));
            goto out;
        }
        if (r == TRY_FAIL) goto out;
        if (attempt >= o->retries) {
            ERR("giving up after %d tr%s; %s keeps what came (%lld bytes): run again to resume",
                attempt + 1, attempt ? "ies" : "y", part, fd_size(fd));
            goto out;
        }
        unsigned wait_s = attempt < 3 ? 1u << attempt : 8u;
        NOTE(o, "trying again in %u s (try %d of %d)", wait_s, attempt + 2, o->retries + 1);
        sleep(wait_s);
    }
    /* verify: the size the server gave, then its sha256 */
    long long got = fd_size(fd);
    if (total >= 0 && got != total) {
        ERR("%s has %lld bytes where the server announced %lld: removed", part, got, total);
        unlink(part);
        goto out;
    }
    if (total < 0) NOTE(o, "the server gave no size: the file could not be checked for it");
    const char *want = is_sha256_hex(x.linked_etag)  ? x.linked_etag
                       : is_sha256_hex(x.first_etag) ? x.first_etag
                                                     : NULL;
    if (want) {
        char hex[65];
        NOTE(o, "checking sha256 ...");
        if (!hash_file(fd, hex)) {
            ERR("cannot read %s back: %s", part, strerror(errno));
            goto out;
        }
        if (strcasecmp(hex, want) != 0) {
            ERR("checksum mismatch for %s: the server announced sha256 %s, the file has %s; the "
                "file was removed (run again to fetch it anew)",
                o->url, want, hex);
            unlink(part);
            goto out;
        }
    } else {
        NOTE(o, "the server sent no sha256: checked the size only");
    }
    if (!gguf_magic_ok(fd, o->final)) {
        ERR("%s is not a GGUF file (it does not start with \"GGUF\"; a mirror's error page?): "
            "removed",
            o->url);
        unlink(part);
        goto out;
    }
    if (fsync(fd) != 0 || rename(part, o->final) != 0) {
        ERR("cannot move %s to %s: %s", part, o->final, strerror(errno));
        goto out;
    }
    ret = 0;
out:
    if (ret != 0 && fd_size(fd) == 0) unlink(part); /* nothing came: leave no trace */
    curl_easy_cleanup(c);
    close(fd);
    return ret;
}
