#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tr_strbuf_init(tr_strbuf *b) {
    memset(b, 0, sizeof *b);
}

void tr_strbuf_free(tr_strbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void tr_strbuf_clear(tr_strbuf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

static bool reserve(tr_strbuf *b, size_t extra) {
    if (b->oom) return false;
    if (extra > ((size_t)-1) / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

bool tr_strbuf_append(tr_strbuf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

bool tr_strbuf_appends(tr_strbuf *b, const char *s) {
    return tr_strbuf_append(b, s, strlen(s));
}

bool tr_strbuf_appendf(tr_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < sizeof small) return tr_strbuf_append(b, small, (size_t)n);
    if (!reserve(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

const char *tr_strbuf_cstr(const tr_strbuf *b) {
    return b->data ? b->data : "";
}
