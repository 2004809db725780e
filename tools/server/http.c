/* The HTTP side: libmicrohttpd daemon (one thread per connection, so a
 * request may block while it waits for a session and runs), routing, the
 * API key, the multipart upload streamed into a private temporary file,
 * and the replies. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#ifdef __linux__
#include <linux/filter.h>
#endif

#include "multipart.h"
#include "server.h"

extern const unsigned char srv_page_html[];
extern const size_t srv_page_html_len;

enum route {
    R_NONE = 0,
    R_PAGE,
    R_HEALTH,
    R_METRICS,
    R_MODELS,
    R_MODEL, /* /v1/models/{id} */
    R_TRANSCRIBE,
    R_TRANSLATE,
};

static bool is_api(int route) {
    return route == R_MODELS || route == R_MODEL || route == R_TRANSCRIBE || route == R_TRANSLATE;
}

static int route_of(const char *url) {
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return R_PAGE;
    if (!strcmp(url, "/health")) return R_HEALTH;
    if (!strcmp(url, "/metrics")) return R_METRICS;
    if (!strcmp(url, "/v1/models")) return R_MODELS;
    if (!strncmp(url, "/v1/models/", 11) && url[11] && !strchr(url + 11, '/')) return R_MODEL;
    if (!strcmp(url, "/v1/audio/transcriptions")) return R_TRANSCRIBE;
    if (!strcmp(url, "/v1/audio/translations")) return R_TRANSLATE;
    return R_NONE;
}

/* Authorization: Bearer KEY, compared in time independent of where the
 * strings differ. */
static bool auth_ok(const srv_server *s, struct MHD_Connection *c) {
    if (!s->opts->api_key) return true;
    const char *h = NULL;
    size_t hlen = 0;
    if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION,
                                      strlen(MHD_HTTP_HEADER_AUTHORIZATION), &h, &hlen) != MHD_YES)
        return false;
    /* a NUL inside the value would end the key early ("KEY\0junk"): refused
     * where the daemon reports the value's length (libmicrohttpd 0.9.75
     * itself cuts the value at the NUL, so only the key's holder can send
     * it there) */
    if (!h || strlen(h) != hlen || strncasecmp(h, "Bearer ", 7) != 0) return false;
    const char *got = h + 7, *want = s->opts->api_key;
    size_t gl = strlen(got), wl = strlen(want);
    unsigned diff = (unsigned)(gl ^ wl);
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)got[i < gl ? i : 0];
    return diff == 0;
}

/* ---- the multipart form ---- */

static char **field_slot(srv_form *fm, const char *key) {
    if (!strcmp(key, "model")) return &fm->model;
    if (!strcmp(key, "language")) return &fm->language;
    if (!strcmp(key, "prompt")) return &fm->prompt;
    if (!strcmp(key, "temperature")) return &fm->temperature;
    if (!strcmp(key, "response_format")) return &fm->response_format;
    if (!strcmp(key, "stream")) return &fm->stream;
    if (!strcmp(key, "vad")) return &fm->vad;
    if (!strcmp(key, "diarize")) return &fm->diarize;
    return NULL;
}

static bool is_granularity_key(const char *key) {
    return !strcmp(key, "timestamp_granularities[]") || !strcmp(key, "timestamp_granularities");
}

static bool append_value(srv_request *rq, char **slot, const char *data, size_t size) {
    size_t have = *slot ? strlen(*slot) : 0;
    if (memchr(data, '\0', size)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, rq->field_key, "invalid_value",
                        "form field '%s' holds a NUL byte", rq->field_key);
        return false;
    }
    if (have + size > SRV_MAX_FIELD_LEN) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, rq->field_key, "field_too_long",
                        "form field '%s' is longer than %d bytes", rq->field_key,
                        SRV_MAX_FIELD_LEN);
        return false;
    }
    char *p = realloc(*slot, have + size + 1);
    if (!p) {
        srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
        return false;
    }
    memcpy(p + have, data, size);
    p[have + size] = '\0';
    *slot = p;
    return true;
}

static bool file_piece(srv_request *rq, bool fresh, const char *data, size_t size) {
    srv_form *fm = &rq->form;
    if (fresh) {
        if (fm->have_file) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "file", "invalid_value",
                            "the form has more than one 'file' part");
            return false;
        }
        snprintf(rq->file_path, sizeof rq->file_path, "%s/upload-XXXXXX", rq->srv->tmp_dir);
        rq->file_fd = mkstemp(rq->file_path);
        if (rq->file_fd < 0) {
            rq->file_path[0] = '\0';
            srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "io_error",
                            "cannot store the upload: %s", strerror(errno));
            return false;
        }
        fm->have_file = true;
    }
    if (rq->file_fd < 0) return false;
    while (size > 0) {
        ssize_t w = write(rq->file_fd, data, size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "io_error",
                            "cannot store the upload: %s", strerror(errno));
            return false;
        }
        data += w, size -= (size_t)w;
        fm->file_bytes += w;
    }
    return true;
}

static enum MHD_Result on_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *filename, const char *content_type,
                                const char *transfer_encoding, const char *data, uint64_t off,
                                size_t size) {
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
    srv_request *rq = cls;
    srv_form *fm = &rq->form;
    if (rq->failed) return MHD_NO;
    if (!key) key = "";
    /* a new part starts at offset 0 (an empty first piece of the same
     * part, also at 0, does not start another) */
    bool fresh = off == 0 && !(rq->last_end == 0 && !strcmp(rq->field_key, key) && fm->n_fields);
    rq->last_end = off + size;
    if (fresh) {
        if (++fm->n_fields > SRV_MAX_FIELDS) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "too_many_fields",
                            "the form has more than %d fields", SRV_MAX_FIELDS);
            return MHD_NO;
        }
        snprintf(rq->field_key, sizeof rq->field_key, "%s", key);
    }
    if (!strcmp(key, "file")) return file_piece(rq, fresh, data, size) ? MHD_YES : MHD_NO;
    if (is_granularity_key(key)) {
        if (fresh) {
            if (fm->n_granularities >= SRV_MAX_GRANULAR) {
                srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, "timestamp_granularities[]",
                                "invalid_value", "too many timestamp_granularities[]");
                return MHD_NO;
            }
            fm->granularities[fm->n_granularities++] = calloc(1, 1);
        }
        if (fm->n_granularities == 0) return MHD_YES;
        char **slot = &fm->granularities[fm->n_granularities - 1];
        return append_value(rq, slot, data, size) ? MHD_YES : MHD_NO;
    }
    char **slot = field_slot(fm, key);
    if (!slot) return MHD_YES;             /* fields of the API this server does not use */
    if (fresh && *slot) (*slot)[0] = '\0'; /* a repeated field: the last one wins */
    return append_value(rq, slot, data, size) ? MHD_YES : MHD_NO;
}

static void form_free(srv_form *fm) {
    free(fm->model), free(fm->language), free(fm->prompt), free(fm->temperature);
    free(fm->response_format), free(fm->stream), free(fm->vad);
    free(fm->diarize);
    for (int i = 0; i < fm->n_granularities; i++) free(fm->granularities[i]);
    memset(fm, 0, sizeof *fm);
}

/* ---- replies ---- */

static void reply_json(srv_request *rq, int status, char *body, size_t len) {
    free(rq->reply.body);
    rq->reply.body = body;
    rq->reply.len = len;
    rq->reply.status = status;
    rq->reply.content_type = "application/json";
}

static void reply_models(srv_request *rq, const char *only) {
    srv_buf b;
    if (!srv_buf_open(&b)) return;
    srv_pool *p = &rq->srv->pool;
    if (!only) fputs("{\"object\":\"list\",\"data\":[", b.f);
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        const srv_model *m = &p->models[i];
        if (only && strcmp(only, m->id)) continue;
        fprintf(b.f, "%s{\"id\":", n++ ? "," : "");
        cli_json_str(b.f, m->id);
        fputs(",\"object\":\"model\",\"created\":0,\"owned_by\":\"transcribe\",\"arch\":", b.f);
        cli_json_str(b.f, transcribe_model_arch_string(m->model));
        fprintf(b.f, ",\"translate\":%s,\"word_timestamps\":%s,\"diarize\":%s,\"languages\":[",
                m->caps.supports_translate ? "true" : "false",
                m->caps.max_timestamp_kind >= TRANSCRIBE_TIMESTAMPS_WORD ? "true" : "false",
                srv_model_diarizes(p, m) ? "true" : "false");
        for (int k = 0; k < m->caps.n_languages; k++) {
            if (k) fputc(',', b.f);
            cli_json_str(b.f, m->caps.languages[k]);
        }
        fputs("]}", b.f);
    }
    if (!only) fputs("]}", b.f);
    fputc('\n', b.f);
    if (only && n == 0) {
        fclose(b.f);
        free(b.data);
        srv_reply_error(rq, 404, SRV_ERR_NOT_FOUND, "model", "model_not_found",
                        "The model '%s' does not exist", only);
        return;
    }
    srv_buf_to_reply(&b, &rq->reply, 200, "application/json");
}

static void reply_get(srv_request *rq, int route, const char *url) {
    srv_server *s = rq->srv;
    switch (route) {
    case R_PAGE: {
        char *page = malloc(srv_page_html_len);
        if (!page) break;
        memcpy(page, srv_page_html, srv_page_html_len);
        reply_json(rq, 200, page, srv_page_html_len);
        rq->reply.content_type = "text/html; charset=utf-8";
        break;
    }
    case R_HEALTH: {
        /* draining (SIGTERM seen) fails the check while requests are still
         * served, so that a balancer moves new ones elsewhere */
        bool closing = atomic_load(&s->closing) != 0;
        bool draining = closing || atomic_load(&s->draining) != 0;
        char *body = NULL;
        int len = asprintf(&body, "{\"status\":\"%s\",\"models\":%d}\n",
                           closing    ? "shutting_down"
                           : draining ? "draining"
                                      : "ok",
                           s->pool.n);
        if (len >= 0) reply_json(rq, draining ? 503 : 200, body, (size_t)len);
        if (draining) rq->reply.retry_after_s = 1;
        break;
    }
    case R_METRICS: {
        size_t len = 0;
        int state = atomic_load(&s->closing) ? 2 : atomic_load(&s->draining) ? 1 : 0;
        /* the scrape itself is not one of the requests it reports */
        const int in_flight = atomic_load(&s->in_flight) - (rq->counted ? 1 : 0);
        char *body = srv_metrics_text(&s->metrics, srv_pool_waiting(&s->pool),
                                      in_flight > 0 ? in_flight : 0, state, &len);
        if (body) {
            reply_json(rq, 200, body, len);
            rq->reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
        }
        break;
    }
    case R_MODELS:
        reply_models(rq, NULL);
        break;
    case R_MODEL:
        reply_models(rq, url + 11);
        break;
    }
    if (!rq->reply.status)
        srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
}

static enum MHD_Result send_reply(struct MHD_Connection *c, srv_request *rq) {
    if (rq->client_gone) return MHD_NO; /* nobody to answer: close */
    srv_reply *rp = &rq->reply;
    /* copied: the daemon may refuse the response (a reply during an upload
     * is sent after it), and the body stays the request's to free */
    struct MHD_Response *r = MHD_create_response_from_buffer(
        rp->body ? rp->len : 0, rp->body ? rp->body : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (rp->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (rp->retry_after_s > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", rp->retry_after_s);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (rp->status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (rp->status == 405) /* RFC 9110 15.5.6: the methods the resource takes */
        MHD_add_response_header(
            r, MHD_HTTP_HEADER_ALLOW,
            rq->route == R_TRANSCRIBE || rq->route == R_TRANSLATE ? "POST" : "GET, HEAD");
    if (rq->route == R_PAGE && rp->status == 200) {
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'self'; script-src 'unsafe-inline'; "
                                "style-src 'unsafe-inline'; media-src 'self' blob:; "
                                "connect-src 'self'; img-src 'self' data:");
    }
    if (rp->content_type && !strcmp(rp->content_type, "text/event-stream"))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if ((rq->failed && rq->route != R_NONE) || atomic_load(&rq->srv->closing))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)rp->status, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- the request handler ---- */

static srv_request *request_new(srv_server *s, struct MHD_Connection *c) {
    srv_request *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->srv = s;
    rq->conn = c;
    rq->file_fd = -1;
    rq->t_start = srv_now();
    rq->deadline = rq->t_start + s->opts->timeout_s;
    atomic_fetch_add(&s->in_flight, 1);
    rq->counted = true;
    return rq;
}

/* "CRLF--BOUNDARY--" from the Content-Type's boundary parameter (quoted or
 * not; RFC 2046 allows 1..70 characters). The CRLF before it is part of the
 * delimiter (RFC 2046, section 5.1.1): "--BOUNDARY--" inside the file's bytes is
 * data. */
static bool closing_delimiter(const char *ct, char *out, size_t n) {
    const char *b;
    size_t len;
    if (!srv_mp_boundary(ct, &b, &len) || len + 7 > n) return false;
    snprintf(out, n, "\r\n--%.*s--", (int)len, b);
    return true;
}

/* Whether libmicrohttpd's post processor can use the boundary: it looks for
 * "boundary=" case-sensitively, takes the rest of the header as the
 * boundary (no parameter may follow) and wants 2 characters or more. Valid
 * forms it cannot read go to multipart.c. */
static bool mhd_takes_boundary(const char *ct) {
    const char *b = strstr(ct, "boundary=");
    if (!b) return false;
    b += 9;
    size_t len = strlen(b);
    if (len >= 2 && b[0] == '"' && b[len - 1] == '"') b++, len -= 2;
    return len >= 2 && strcspn(b, ";\"") >= len;
}

/* How much of this piece of the body the post processor gets. RFC 2046
 * lets a body go on after its closing delimiter (an "epilogue"; the
 * official OpenAI client sends one CRLF there), but libmicrohttpd's post
 * processor rejects any byte after "--BOUNDARY--\r\n": the rest is dropped
 * here. The delimiter is looked for across pieces. */
static size_t body_before_epilogue(srv_request *rq, const char *data, size_t size) {
    if (rq->epilogue) {
        /* the CRLF that ends the delimiter line, if it came in this piece */
        size_t k = 0;
        while (rq->delim_crlf < 2 && k < size && data[k] == "\r\n"[rq->delim_crlf])
            k++, rq->delim_crlf++;
        rq->delim_crlf = 2;
        return k;
    }
    size_t dl = strlen(rq->delim);
    size_t end = 0;
    bool found = false;
    /* across the joint: the kept tail of the last piece + this one's start */
    char joint[2 * 80];
    size_t head = size < dl - 1 ? size : dl - 1;
    memcpy(joint, rq->tail, rq->tail_len);
    memcpy(joint + rq->tail_len, data, head);
    const char *hit = memmem(joint, rq->tail_len + head, rq->delim, dl);
    if (hit) {
        end = (size_t)(hit - joint) + dl - rq->tail_len;
        found = true;
    } else if ((hit = memmem(data, size, rq->delim, dl)) != NULL) {
        end = (size_t)(hit - data) + dl;
        found = true;
    }
    if (!found) {
        size_t keep = size < dl - 1 ? size : dl - 1;
        if (rq->tail_len + keep > dl - 1) {
            size_t drop = rq->tail_len + keep - (dl - 1);
            if (drop > rq->tail_len) drop = rq->tail_len;
            memmove(rq->tail, rq->tail + drop, rq->tail_len - drop);
            rq->tail_len -= drop;
        }
        memcpy(rq->tail + rq->tail_len, data + size - keep, keep);
        rq->tail_len += keep;
        return size;
    }
    rq->epilogue = true;
    while (rq->delim_crlf < 2 && end < size && data[end] == "\r\n"[rq->delim_crlf])
        end++, rq->delim_crlf++;
    if (end < size) rq->delim_crlf = 2; /* something else follows: no CRLF to wait for */
    return end;
}

/* First call: the headers are in. Decides whatever can be decided before
 * the body (route, method, key, media type, size); prepares the upload. */
static void on_headers(srv_request *rq, const char *url, const char *method) {
    srv_server *s = rq->srv;
    struct MHD_Connection *c = rq->conn;
    int route = route_of(url);
    rq->route = route;
    snprintf(rq->method, sizeof rq->method, "%s", method);
    /* printable bytes only: the path is the client's */
    size_t n = 0;
    for (const char *u = url; *u && n + 1 < sizeof rq->path; u++)
        rq->path[n++] = (*u >= 0x20 && *u < 0x7f) ? *u : '?';
    rq->path[n] = 0;
    int metric = route == R_TRANSCRIBE ? 0 : route == R_TRANSLATE ? 1 : is_api(route) ? 2 : 3;
    atomic_fetch_add(&s->metrics.requests[metric], 1);
    if (route == R_NONE) {
        srv_reply_error(rq, 404, SRV_ERR_NOT_FOUND, NULL, "not_found", "no such endpoint");
        return;
    }
    bool post = route == R_TRANSCRIBE || route == R_TRANSLATE;
    if (strcmp(method, post ? "POST" : "GET") != 0 && !(!post && !strcmp(method, "HEAD"))) {
        srv_reply_error(rq, 405, SRV_ERR_METHOD, NULL, "method_not_allowed", "%s takes %s", url,
                        post ? "POST" : "GET");
        return;
    }
    if (atomic_load(&s->closing) && route != R_HEALTH) {
        /* retryable: another replica (or this one restarted) takes it */
        srv_reply_error(rq, 503, SRV_ERR_OVERLOADED, NULL, "shutting_down",
                        "the server is shutting down");
        rq->reply.retry_after_s = 1;
        return;
    }
    if (is_api(route) && !auth_ok(s, c)) {
        srv_reply_error(rq, 401, SRV_ERR_AUTH, NULL, "invalid_api_key",
                        "Incorrect API key provided (Authorization: Bearer KEY)");
        return;
    }
    if (!post) return;
    rq->translate = route == R_TRANSLATE;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0) {
        srv_reply_error(rq, 415, SRV_ERR_MEDIA, NULL, "unsupported_media_type",
                        "send the audio as multipart/form-data (fields: file, model, ...)");
        return;
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || !end || *end || n > (unsigned long long)s->opts->max_upload_bytes) {
            srv_reply_error(rq, 413, SRV_ERR_TOO_LARGE, "file", "file_too_large",
                            "the request body is larger than %lld MB",
                            (long long)(s->opts->max_upload_bytes >> 20));
            return;
        }
    }
    if (!closing_delimiter(ct, rq->delim, sizeof rq->delim)) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                        "malformed multipart/form-data: no usable boundary");
        return;
    }
    if (!mhd_takes_boundary(ct)) {
        rq->mp = srv_mp_new(ct);
        if (!rq->mp)
            srv_reply_error(rq, 500, SRV_ERR_INTERNAL, NULL, "out_of_memory", "out of memory");
        return;
    }
    /* the body's start counts as a line start (a form of no parts is
     * just the closing delimiter) */
    memcpy(rq->tail, "\r\n", 2);
    rq->tail_len = 2;
    rq->pp = MHD_create_post_processor(c, 16 * 1024, on_field, rq);
    if (!rq->pp) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                        "malformed multipart/form-data (no boundary?)");
        return;
    }
}

/* multipart.c's pieces go where libmicrohttpd's do. */
static bool mp_piece(void *cls, const char *name, const char *filename, const char *data,
                     uint64_t off, size_t size) {
    return on_field(cls, MHD_POSTDATA_KIND, name, filename, NULL, NULL, data, off, size) == MHD_YES;
}

static void on_body(srv_request *rq, const char *data, size_t size) {
    srv_server *s = rq->srv;
    rq->body_bytes += (int64_t)size;
    if (rq->body_bytes > s->opts->max_upload_bytes) {
        srv_reply_error(rq, 413, SRV_ERR_TOO_LARGE, "file", "file_too_large",
                        "the request body is larger than %lld MB",
                        (long long)(s->opts->max_upload_bytes >> 20));
        return;
    }
    if (srv_now() > rq->deadline) {
        srv_reply_error(rq, 408, SRV_ERR_TIMEOUT, NULL, "timeout",
                        "the upload took longer than %d s", s->opts->timeout_s);
        return;
    }
    if (rq->mp) {
        if (!srv_mp_feed(rq->mp, data, size, mp_piece, rq) && !rq->failed) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                            "malformed multipart/form-data");
        }
        return;
    }
    size_t feed = body_before_epilogue(rq, data, size);
    if (feed > 0 && MHD_post_process(rq->pp, data, feed) != MHD_YES && !rq->failed) {
        srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                        "malformed multipart/form-data");
    }
}

static bool has_body(struct MHD_Connection *c) {
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return te || (cl && strcmp(cl, "0") != 0);
}

/* The guard's record of connection c (NULL: unwatched). */
static srv_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    srv_request *rq = *con_cls;
    if (!rq) {
        rq = request_new(s, c);
        if (!rq) return MHD_NO;
        *con_cls = rq;
        on_headers(rq, url, method);
        /* headers in: the body (if any) has --body-timeout, then the
         * server's turn */
        srv_guard_phase(s->guard, conn_of(c), has_body(c) ? SRV_CONN_BODY : SRV_CONN_ACTIVE);
        /* An error known from the headers is answered at once only when the
         * body is too large to read; otherwise the body is read and dropped
         * first: a client still sending would otherwise meet a closed
         * connection instead of the answer. */
        if (rq->failed && (rq->reply.status == 413 || !has_body(c))) return send_reply(c, rq);
        if (rq->failed) return MHD_YES;
        if (!rq->pp && !rq->mp) {
            reply_get(rq, rq->route, url);
            return send_reply(c, rq);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        if (!rq->failed) {
            on_body(rq, upload_data, size);
            if (rq->failed && rq->body_bytes > s->opts->max_upload_bytes) return MHD_NO;
        } else {
            /* the error is answered at the end; the rest of a body within
             * the size limit is read and dropped, a larger one closes */
            rq->body_bytes += (int64_t)size;
            if (rq->body_bytes > s->opts->max_upload_bytes) return MHD_NO;
        }
        return MHD_YES;
    }
    srv_guard_phase(s->guard, conn_of(c), SRV_CONN_ACTIVE); /* the body is in */
    if (!rq->failed) {
        if (rq->pp && MHD_destroy_post_processor(rq->pp) != MHD_YES && !rq->failed) {
            rq->pp = NULL;
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                            "malformed multipart/form-data (cut short)");
        }
        rq->pp = NULL;
        if (rq->mp && !srv_mp_done(rq->mp) && !rq->failed) {
            srv_reply_error(rq, 400, SRV_ERR_BAD_REQUEST, NULL, "invalid_multipart",
                            "malformed multipart/form-data (cut short)");
        }
        if (!rq->failed) srv_job_run(rq);
    }
    return send_reply(c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    srv_server *s = cls;
    srv_request *rq = *con_cls;
    if (!rq) return;
    *con_cls = NULL;
    if (rq->pp) MHD_destroy_post_processor(rq->pp);
    srv_mp_free(rq->mp);
    if (rq->file_fd >= 0) close(rq->file_fd);
    if (rq->file_path[0]) unlink(rq->file_path);
    if (!s->opts->quiet && rq->route != R_HEALTH && rq->route != R_METRICS) {
        fprintf(stderr, "[http] %s %s %d %.3f s%s\n", rq->method[0] ? rq->method : "-",
                rq->path[0] ? rq->path : "-", rq->reply.status, srv_now() - rq->t_start,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed)");
    }
    form_free(&rq->form);
    free(rq->reply.body);
    if (rq->counted) atomic_fetch_add(&s->in_flight, -1);
    free(rq);
    /* kept alive: the next request's headers are awaited */
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        srv_guard_phase(s->guard, conn_of(c), SRV_CONN_HEADERS);
}

/* Connections come and go: the guard watches them (guard.c). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    srv_server *s = cls;
    if (!s->guard) return;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? srv_guard_open(s->guard, ci->connect_fd) : NULL;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        srv_guard_close(s->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    const srv_server *s = cls;
    if (s->opts->quiet) return;
    fputs("[mhd] ", stderr);
    vfprintf(stderr, fmt, ap);
}

bool srv_http_start(srv_server *s) {
    const srv_opts *o = s->opts;
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)o->port);
        addr = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, o->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)o->port);
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "transcribe-server: --host %s is not an IP address\n", o->host);
        return false;
    }
    s->guard = srv_guard_start(o);
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->daemon) {
        srv_guard_stop(s->guard);
        s->guard = NULL;
        fprintf(stderr, "transcribe-server: cannot listen on %s:%d: %s\n", o->host, o->port,
                strerror(errno));
        return false;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : o->port;
    return true;
}

/* Closes the listening socket without resetting a connection that the
 * kernel has already accepted for us: closing a listening socket resets the
 * connections in its queue, and a balancer that has streamed an upload on
 * one of them cannot retry it (its client gets a 502). So new handshakes are
 * first dropped (on Linux, a socket filter that takes nothing: the client
 * sends its SYN again and then meets the closed port, a refusal it can
 * retry elsewhere), the queue is emptied into the daemon (those requests
 * are answered: 503 "shutting_down" with Retry-After), and then the socket
 * is closed. Returns how many connections the daemon took over. */
static int close_listener(srv_server *s, MHD_socket lsock) {
    int adopted = 0;
#ifdef __linux__
    struct sock_filter drop_all = BPF_STMT(BPF_RET | BPF_K, 0);
    struct sock_fprog prog = {.len = 1, .filter = &drop_all};
    (void)setsockopt(lsock, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog);
#endif
    int fl = fcntl(lsock, F_GETFL);
    if (fl >= 0 && fcntl(lsock, F_SETFL, fl | O_NONBLOCK) == 0) {
        for (;;) {
            struct sockaddr_storage peer;
            socklen_t len = sizeof peer;
            int fd = accept(lsock, (struct sockaddr *)&peer, &len);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                break; /* EAGAIN: the queue is empty */
            }
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
            /* the daemon owns (and closes) it from here, even on failure */
            if (MHD_add_connection(s->daemon, fd, (const struct sockaddr *)&peer, len) == MHD_YES)
                adopted++;
        }
    }
    close(lsock);
    return adopted;
}

/* Connections the daemon holds that the guard has not been told of yet: a
 * connection's thread reports itself a moment after the accept. */
static bool unreported_connections(srv_server *s) {
    if (!s->guard) return false;
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return di && (long long)di->num_connections > srv_guard_live(s->guard);
}

void srv_http_stop(srv_server *s, int grace_s) {
    if (!s->daemon) return;
    atomic_store(&s->closing, 1);
    /* stop accepting; running requests finish (and new requests on open
     * connections get 503) */
    MHD_socket lsock = MHD_quiesce_daemon(s->daemon);
    const long long seen = srv_guard_opened(s->guard);
    const int adopted = lsock != MHD_INVALID_SOCKET ? close_listener(s, lsock) : 0;
    /* Wait for the running requests, and for those on their way: a
     * connection accepted just before (or just taken over) has its request
     * line and headers in flight (a balancer sends them at once), and the
     * daemon starts its thread a moment later. Stopping under them would
     * close the connection while an upload streams in, which a balancer
     * cannot retry. So: a settling moment, every connection the daemon
     * holds (the taken-over ones too) known to the guard, then until no
     * request runs and none arrives. */
    const double settle = srv_now() + (grace_s > 0 ? 0.25 : 0.0);
    const double until = srv_now() + grace_s;
    while (srv_now() < until &&
           (srv_now() < settle || (s->guard && srv_guard_opened(s->guard) < seen + adopted) ||
            unreported_connections(s) || atomic_load(&s->in_flight) > 0 ||
            srv_guard_arriving(s->guard, 0.25) > 0))
        usleep(20 * 1000);
    atomic_store(&s->closing, 2); /* what still runs is aborted */
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    srv_guard_stop(s->guard); /* after the daemon: no connection is left */
    s->guard = NULL;
}
