/* Test kit: small readers of the JSON goldens the reference scripts write
 * (decode.json, stream.json, ...): a named object and its end, and the
 * integer arrays, integers, booleans and strings of a key inside it. They
 * read the reference's own layout (no full JSON parser): keys are searched
 * as "key": from a point on, strings keep \" and \\ as their character. */
#ifndef TR_TESTS_GOLDEN_JSON_H
#define TR_TESTS_GOLDEN_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of the first "key": at or after p (spaces skipped) before
 * end (NULL: no limit), or NULL. */
static inline const char *tr_json_val(const char *p, const char *end, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(p, pat);
    if (!p || (end && p > end)) return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == '\n') p++;
    return p;
}

/* The object "name": { ... } in js (its opening brace), or NULL. */
static inline const char *tr_json_obj(const char *js, const char *name) {
    const char *p = tr_json_val(js, NULL, name);
    return p && *p == '{' ? p : NULL;
}

/* The end of the object starting at its brace p. */
static inline const char *tr_json_obj_end(const char *p) {
    int depth = 0;
    for (; *p; p++) {
        if (*p == '{') depth++;
        if (*p == '}' && --depth == 0) return p;
    }
    return p;
}

/* "key": [ints] inside [obj, end) → out (≤ cap); count, -1 when absent. */
static inline int tr_json_ints(const char *obj, const char *end, const char *key, int32_t *out,
                               int cap) {
    const char *p = tr_json_val(obj, end, key);
    if (!p || *p != '[') return -1;
    p++;
    int n = 0;
    while (*p && *p != ']' && n < cap) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p) {
            p++;
            continue;
        }
        out[n++] = (int32_t)v;
        p = e;
    }
    return n;
}

/* "key": integer (or true / false) inside [obj, end); def when absent. */
static inline long tr_json_int(const char *obj, const char *end, const char *key, long def) {
    const char *p = tr_json_val(obj, end, key);
    if (!p) return def;
    if (!strncmp(p, "true", 4)) return 1;
    if (!strncmp(p, "false", 5)) return 0;
    return strtol(p, NULL, 10);
}

/* "key": "string" inside [obj, end) (escapes \" and \\ only). */
static inline bool tr_json_str(const char *obj, const char *end, const char *key, char *out,
                               size_t cap) {
    const char *p = tr_json_val(obj, end, key);
    out[0] = 0;
    if (!p || *p != '"') return false;
    size_t n = 0;
    for (p++; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && p[1]) p++;
        out[n++] = *p;
    }
    out[n] = 0;
    return true;
}

#endif
