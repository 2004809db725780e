/* `tokenize` / `detokenize` with a GGUF file's tokenizer. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

#ifdef TR_INSPECT_WITH_TEXT
#include "gguf/gguf.h"
#include "text/tokenizer.h"

static int open_tok(const char *path, gguf_file **f, tr_tokenizer **t) {
    *t = NULL;
    if (tr_gguf_open(path, f) != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-inspect: '%s' is not a readable GGUF file\n", path);
        return 1;
    }
    if (tr_tokenizer_from_gguf(*f, t) != TRANSCRIBE_OK) {
        fprintf(stderr, "transcribe-inspect: '%s' has no usable tokenizer\n", path);
        tr_gguf_close(*f);
        return 1;
    }
    return 0;
}

int inspect_tokenize(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: transcribe-inspect tokenize MODEL TEXT\n");
        return 2;
    }
    gguf_file *f;
    tr_tokenizer *t;
    if (open_tok(argv[0], &f, &t)) return 1;
    int rc = 1;
    int n = tr_tokenizer_encode(t, argv[1], NULL, 0);
    if (n == INT_MIN) {
        fprintf(stderr, "transcribe-inspect: this tokenizer cannot encode\n");
    } else {
        size_t cap = (size_t)(n < 0 ? -n : n) + 1;
        int32_t *ids = malloc(cap * sizeof(int32_t));
        int got = ids ? tr_tokenizer_encode(t, argv[1], ids, cap) : -1;
        if (got >= 0) {
            for (int i = 0; i < got; i++) printf(i ? " %d" : "%d", ids[i]);
            putchar('\n');
            rc = 0;
        } else {
            fprintf(stderr, "transcribe-inspect: encoding failed\n");
        }
        free(ids);
    }
    tr_tokenizer_free(t);
    tr_gguf_close(f);
    return rc;
}

int inspect_detokenize(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: transcribe-inspect detokenize MODEL ID...\n");
        return 2;
    }
    int32_t *ids = malloc((size_t)(argc - 1) * sizeof(int32_t));
    if (!ids) return 1;
    for (int i = 1; i < argc; i++) {
        char *end;
        long v = strtol(argv[i], &end, 10);
        if (*end || end == argv[i] || v < INT32_MIN || v > INT32_MAX) {
            fprintf(stderr, "transcribe-inspect: '%s' is not a token id\n", argv[i]);
            free(ids);
            return 2;
        }
        ids[i - 1] = (int32_t)v;
    }
    gguf_file *f;
    tr_tokenizer *t;
    if (open_tok(argv[0], &f, &t)) {
        free(ids);
        return 1;
    }
    /* An id outside the vocabulary names no token: an error, not an empty line. */
    int n_vocab = tr_tokenizer_n_vocab(t);
    for (int i = 0; i < argc - 1; i++) {
        if (ids[i] < 0 || ids[i] >= n_vocab) {
            fprintf(stderr,
                    "transcribe-inspect: token id %d is out of range (the vocabulary has ids 0 to "
                    "%d)\n",
                    (int)ids[i], n_vocab - 1);
            free(ids);
            tr_tokenizer_free(t);
            tr_gguf_close(f);
            return 1;
        }
    }
    char *s = tr_tokenizer_decode(t, ids, argc - 1, false);
    int rc = s ? 0 : 1;
    /* A word-initial piece decodes with its space; the text starts after
     * it, as a transcript does (so tokenize and detokenize round-trip). */
    const char *text = s;
    while (text && *text == ' ') text++;
    if (s) printf("%s\n", text);
    free(s);
    free(ids);
    tr_tokenizer_free(t);
    tr_gguf_close(f);
    return rc;
}

#else

int inspect_tokenize(int argc, char **argv) {
    (void)argc, (void)argv;
    /* TODO: built without the text module (src/text did not link). */
    fprintf(stderr, "transcribe-inspect: 'tokenize' is not available in this build\n");
    return 1;
}

int inspect_detokenize(int argc, char **argv) {
    return inspect_tokenize(argc, argv);
}

#endif
