/* Growable byte string. Owner calls tr_strbuf_free(); on allocation failure
 * the buffer records it in `oom` and later appends become no-ops, so callers
 * check once at the end. */
#ifndef TR_UTIL_STRBUF_H
#define TR_UTIL_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tr_strbuf {
    char *data; /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    bool oom;
} tr_strbuf;

void tr_strbuf_init(tr_strbuf *b);
void tr_strbuf_free(tr_strbuf *b);
void tr_strbuf_clear(tr_strbuf *b);
bool tr_strbuf_append(tr_strbuf *b, const char *s, size_t n);
bool tr_strbuf_appends(tr_strbuf *b, const char *s);
bool tr_strbuf_appendf(tr_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Returns the contents ("" for an empty buffer); never NULL. */
const char *tr_strbuf_cstr(const tr_strbuf *b);

#endif
