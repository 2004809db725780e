/* The multipart/form-data reader of multipart.h. The body is scanned for
 * the delimiter "CRLF--BOUNDARY" (RFC 2046 section 5.1.1: the CRLF before
 * the dashes belongs to the delimiter, so "--BOUNDARY" inside a value that
 * does not follow a line break is data). Bytes are kept across feeds only
 * while they may still be the start of a delimiter (under 80) or belong to
 * a part's headers (at most 8 KB): memory is bounded whatever the body. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, strcasestr */
#endif
#include "multipart.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MP_PREAMBLE, MP_AFTER_DELIM, MP_HEADERS, MP_DATA, MP_DONE };
enum { MP_MAX_HEADERS = 8192, MP_NAME_CAP = 256 };

struct srv_multipart {
    char delim[80]; /* "\r\n--BOUNDARY" */
    size_t dl;
    int state;
    char *buf; /* bytes carried to the next feed, then the new ones */
    size_t len, cap;
    char name[MP_NAME_CAP], filename[MP_NAME_CAP];
    uint64_t off; /* bytes of the current value given so far */
    bool emitted; /* the current part has had a call */
};

bool srv_mp_boundary(const char *ct, const char **out, size_t *len) {
    const char *b = ct ? strcasestr(ct, "boundary=") : NULL;
    if (!b) return false;
    b += 9;
    size_t n;
    if (*b == '"') {
        const char *e = strchr(++b, '"');
        if (!e) return false;
        n = (size_t)(e - b);
    } else {
        n = strcspn(b, "; \t");
    }
    if (n == 0 || n > 70) return false;
    *out = b;
    *len = n;
    return true;
}

srv_multipart *srv_mp_new(const char *ct) {
    const char *b;
    size_t n;
    if (!srv_mp_boundary(ct, &b, &n)) return NULL;
    srv_multipart *mp = calloc(1, sizeof *mp);
    if (!mp) return NULL;
    mp->dl = 4 + n;
    memcpy(mp->delim, "\r\n--", 4);
    memcpy(mp->delim + 4, b, n);
    /* the body's start counts as a line start: a first delimiter without
     * a CRLF before it is found too */
    mp->cap = 4096;
    mp->buf = malloc(mp->cap);
    if (!mp->buf) {
        free(mp);
        return NULL;
    }
    memcpy(mp->buf, "\r\n", 2);
    mp->len = 2;
    mp->state = MP_PREAMBLE;
    return mp;
}

void srv_mp_free(srv_multipart *mp) {
    if (!mp) return;
    free(mp->buf);
    free(mp);
}

bool srv_mp_done(const srv_multipart *mp) {
    return mp && mp->state == MP_DONE;
}

/* Copies a Content-Disposition parameter's value (quoted, with backslash
 * escapes, or a token) into out; returns where the parameter ends. */
static const char *param_value(const char *p, const char *end, char *out, size_t cap) {
    size_t k = 0;
    if (p < end && *p == '"') {
        for (p++; p < end && *p != '"'; p++) {
            if (*p == '\\' && p + 1 < end) p++;
            if (k + 1 < cap) out[k++] = *p;
        }
        if (p < end) p++;
    } else {
        for (; p < end && *p != ';' && *p != ' ' && *p != '\t'; p++)
            if (k + 1 < cap) out[k++] = *p;
    }
    out[k] = '\0';
    return p;
}

/* Reads name= and filename= from a part's header block [h, end). */
static bool parse_headers(srv_multipart *mp, const char *h, const char *end) {
    mp->name[0] = mp->filename[0] = '\0';
    bool named = false;
    while (h < end) {
        const char *eol = memmem(h, (size_t)(end - h), "\r\n", 2);
        if (!eol) eol = end;
        static const char cd[] = "Content-Disposition:";
        if ((size_t)(eol - h) > sizeof cd - 1 && !strncasecmp(h, cd, sizeof cd - 1)) {
            const char *p = h + sizeof cd - 1;
            while (p < eol) {
                while (p < eol && (*p == ' ' || *p == '\t' || *p == ';')) p++;
                const char *k = p;
                while (p < eol && *p != '=' && *p != ';') p++;
                if (p >= eol || *p != '=') continue; /* "form-data", or a flag */
                size_t kl = (size_t)(p - k);
                p++;
                if (kl == 4 && !strncasecmp(k, "name", 4)) {
                    p = param_value(p, eol, mp->name, sizeof mp->name);
                    named = true;
                } else if (kl == 8 && !strncasecmp(k, "filename", 8)) {
                    p = param_value(p, eol, mp->filename, sizeof mp->filename);
                } else {
                    char skip[2];
                    p = param_value(p, eol, skip, sizeof skip);
                }
            }
        }
        h = eol + 2;
    }
    return named;
}

static bool emit(srv_multipart *mp, const char *data, size_t n, srv_mp_piece_fn fn, void *cls) {
    if (n == 0 && mp->emitted) return true;
    mp->emitted = true;
    bool ok = fn(cls, mp->name, mp->filename, data, mp->off, n);
    mp->off += n;
    return ok;
}

/* Runs the state machine over buf; returns false on a malformed form or a
 * stop; *used gets the bytes consumed. */
static bool scan(srv_multipart *mp, srv_mp_piece_fn fn, void *cls, size_t *used) {
    size_t pos = 0;
    const size_t keep = mp->dl - 1; /* the most of a delimiter one feed can end in */
    for (;;) {
        const char *at = mp->buf + pos;
        size_t left = mp->len - pos;
        if (mp->state == MP_PREAMBLE || mp->state == MP_DATA) {
            const char *hit = memmem(at, left, mp->delim, mp->dl);
            if (!hit) {
                size_t safe = left > keep ? left - keep : 0;
                if (mp->state == MP_DATA && safe > 0 && !emit(mp, at, safe, fn, cls)) return false;
                pos += safe;
                break;
            }
            if (mp->state == MP_DATA && !emit(mp, at, (size_t)(hit - at), fn, cls)) return false;
            pos += (size_t)(hit - at) + mp->dl;
            mp->state = MP_AFTER_DELIM;
        } else if (mp->state == MP_AFTER_DELIM) {
            while (left > 0 && (*at == ' ' || *at == '\t')) at++, left--, pos++; /* padding */
            if (left < 2) break;
            if (at[0] == '-' && at[1] == '-') {
                mp->state = MP_DONE;
                pos = mp->len;
                break;
            }
            if (at[0] != '\r' || at[1] != '\n') return false;
            mp->state = MP_HEADERS; /* pos stays on this CRLF: empty headers end at once */
        } else if (mp->state == MP_HEADERS) {
            const char *hit = memmem(at, left, "\r\n\r\n", 4);
            if (!hit) {
                if (left > MP_MAX_HEADERS) return false;
                break;
            }
            if ((size_t)(hit - at) > MP_MAX_HEADERS || !parse_headers(mp, at + 2, hit))
                return false;
            pos += (size_t)(hit - at) + 4;
            mp->state = MP_DATA;
            mp->off = 0;
            mp->emitted = false;
        } else { /* MP_DONE: an epilogue */
            pos = mp->len;
            break;
        }
    }
    *used = pos;
    return true;
}

bool srv_mp_feed(srv_multipart *mp, const char *data, size_t size, srv_mp_piece_fn fn, void *cls) {
    if (!mp) return false;
    if (mp->state == MP_DONE || size == 0) return true;
    if (mp->len + size > mp->cap) {
        size_t cap = mp->len + size;
        char *grown = realloc(mp->buf, cap);
        if (!grown) return false;
        mp->buf = grown;
        mp->cap = cap;
    }
    memcpy(mp->buf + mp->len, data, size);
    mp->len += size;
    size_t used = 0;
    if (!scan(mp, fn, cls, &used)) return false;
    memmove(mp->buf, mp->buf + used, mp->len - used);
    mp->len -= used;
    /* a data part's value keeps at most a delimiter's length, headers
     * MP_MAX_HEADERS: give back what a large feed needed */
    if (mp->cap > 65536 && mp->len < 4096) {
        char *shrunk = realloc(mp->buf, 4096);
        if (shrunk) mp->buf = shrunk, mp->cap = 4096;
    }
    return true;
}
