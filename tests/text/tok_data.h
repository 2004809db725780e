/* Readers for the line-based tokenizer test data in tests/data/text/ (see
 * tools/ref/tok_gen_data.py): tab-separated fields, hex-encoded strings,
 * '#' comment lines. */
#ifndef TR_TESTS_TOK_DATA_H
#define TR_TESTS_TOK_DATA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char **lines;
    int n;
    char *buf;
} tok_lines;

static inline void tok_lines_free(tok_lines *l) {
    free(l->lines);
    free(l->buf);
    memset(l, 0, sizeof(*l));
}

/* Reads TR_SOURCE_DIR/tests/data/text/<name>; non-comment lines only. */
static inline int tok_lines_read(const char *name, tok_lines *l) {
    memset(l, 0, sizeof(*l));
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/text/%s", TR_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    l->buf = malloc((size_t)size + 1);
    if (!l->buf || fread(l->buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        tok_lines_free(l);
        return -1;
    }
    fclose(f);
    l->buf[size] = '\0';
    int cap = 0;
    for (char *p = l->buf; *p;) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        if (*p != '#') {
            if (l->n == cap) {
                cap = cap ? cap * 2 : 256;
                l->lines = realloc(l->lines, (size_t)cap * sizeof(char *));
            }
            l->lines[l->n++] = p;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Decodes the hex field starting at s (up to a tab or NUL) into a malloc'ed
 * NUL-terminated buffer; *n gets the byte count, *end the field end. */
static inline char *tok_unhex(const char *s, size_t *n, const char **end) {
    size_t len = strcspn(s, "\t");
    char *out = malloc(len / 2 + 1);
    for (size_t i = 0; i + 1 < len; i += 2) {
        unsigned v;
        sscanf(s + i, "%2x", &v);
        out[i / 2] = (char)v;
    }
    out[len / 2] = '\0';
    if (n) *n = len / 2;
    if (end) *end = s + len;
    return out;
}

/* Parses space-separated ints; returns the count (at most cap stored). */
static inline int tok_parse_ids(const char *s, int32_t *ids, int cap) {
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        char *e;
        long v = strtol(s, &e, 10);
        if (e == s) break;
        if (n < cap) ids[n] = (int32_t)v;
        n++;
        s = e;
    }
    return n;
}

#endif
