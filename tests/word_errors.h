/* Word error counting the WER tests share (tests/bundled, tests/cli):
 * splitting a transcript into words and the word-level Levenshtein
 * distance between a reference and a hypothesis. */
#ifndef TR_TESTS_WORD_ERRORS_H
#define TR_TESTS_WORD_ERRORS_H

#include <string.h>

#define TR_TEST_MAX_WORDS 64

/* Splits s (modified in place) at any of seps into at most cap words;
 * returns the word count. */
static inline int tr_test_split_words(char *s, const char *seps, char **w, int cap) {
    int n = 0;
    for (char *t = strtok(s, seps); t && n < cap; t = strtok(NULL, seps)) w[n++] = t;
    return n;
}

/* Word-level Levenshtein distance (nh <= TR_TEST_MAX_WORDS). */
static inline int tr_test_word_edits(char **r, int nr, char **h, int nh) {
    int prev[TR_TEST_MAX_WORDS + 1], cur[TR_TEST_MAX_WORDS + 1];
    for (int j = 0; j <= nh; j++) prev[j] = j;
    for (int i = 1; i <= nr; i++) {
        cur[0] = i;
        for (int j = 1; j <= nh; j++) {
            int sub = prev[j - 1] + (strcmp(r[i - 1], h[j - 1]) != 0);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(nh + 1));
    }
    return prev[nh];
}

#endif
