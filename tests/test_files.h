/* Test helper: small file utilities for tests that read committed goldens. */
#ifndef TR_TESTS_TEST_FILES_H
#define TR_TESTS_TEST_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static inline bool tr_test_file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Whole file as a malloc'ed NUL-terminated string (NULL if unreadable);
 * *len (may be NULL) receives its length. */
static inline char *tr_test_read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t r = s ? fread(s, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    if (s) s[r] = 0;
    fclose(f);
    if (len) *len = r;
    return s;
}

/* size bytes of buf written to path (replacing it); false on any failure. */
static inline bool tr_test_write_file(const char *path, const void *buf, size_t size) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, size, f) == size;
    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

#endif
