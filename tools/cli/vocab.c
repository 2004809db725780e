/* --vocabulary "a, b, c" and --vocabulary-file FILE: the terms of both, in
 * that order, as one list for transcribe_run_params.vocabulary. Terms are
 * separated by commas or line breaks; each is trimmed of spaces and tabs,
 * empty ones and file lines starting with '#' are dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Appends the terms of text (modified in place: separators become NULs). */
static bool split_terms(char *text, bool comments, cli_opts *o) {
    for (char *line = text; line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (!(comments && line[strspn(line, " \t")] == '#')) {
            for (char *t = line; t;) {
                char *comma = strchr(t, ',');
                if (comma) *comma = 0;
                t += strspn(t, " \t\r");
                size_t n = strlen(t);
                while (n > 0 && strchr(" \t\r", t[n - 1])) t[--n] = 0;
                if (n > 0) {
                    const char **grown =
                        realloc(o->vocab, ((size_t)o->n_vocab + 1) * sizeof *grown);
                    if (!grown) return false;
                    o->vocab = grown;
                    o->vocab[o->n_vocab++] = t;
                }
                t = comma ? comma + 1 : NULL;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return true;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got > 0;) {
        if (cap - n < 2) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (buf) buf[n] = 0;
    if (bad || (buf && memchr(buf, 0, n))) {
        free(buf);
        return NULL;
    }
    return buf;
}

bool cli_vocab_load(cli_opts *o) {
    if (o->vocabulary) {
        o->vocab_arg = strdup(o->vocabulary);
        if (!o->vocab_arg || !split_terms(o->vocab_arg, false, o)) goto oom;
    }
    if (o->vocabulary_file) {
        o->vocab_file = read_file(o->vocabulary_file);
        if (!o->vocab_file) {
            fprintf(stderr, "error: --vocabulary-file: cannot read '%s' as text\n",
                    o->vocabulary_file);
            return false;
        }
        if (!split_terms(o->vocab_file, true, o)) goto oom;
    }
    return true;
oom:
    fprintf(stderr, "error: out of memory reading the vocabulary\n");
    return false;
}

void cli_vocab_free(cli_opts *o) {
    free(o->vocab);
    free(o->vocab_arg);
    free(o->vocab_file);
    o->vocab = NULL;
    o->vocab_arg = o->vocab_file = NULL;
    o->n_vocab = 0;
}
