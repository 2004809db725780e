/* Test helper: drives one whole stream over a buffer and checks the
 * invariants every feed must keep (docs/c-api.md §14): the committed text only
 * grows, the state stays ACTIVE, the update report is consistent. */
#ifndef TR_TESTS_STREAM_HARNESS_H
#define TR_TESTS_STREAM_HARNESS_H

#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"

static inline char *sh_dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static inline const char *sh_committed(const struct transcribe_session *s) {
    struct transcribe_stream_text t;
    transcribe_stream_text_init(&t);
    transcribe_stream_get_text(s, &t);
    return t.committed_text;
}

typedef struct sh_outcome {
    transcribe_status status;
    char *committed;    /* after finalize (malloc'ed) */
    char *full;         /* full_text after finalize (malloc'ed) */
    int n_commit_feeds; /* feeds whose committed text grew */
    int n_shrink;       /* feeds where committed text was not an extension (must be 0) */
} sh_outcome;

static inline void sh_outcome_free(sh_outcome *o) {
    free(o->committed);
    free(o->full);
    memset(o, 0, sizeof *o);
}

/* Streams pcm[0..n) in feeds of `feed` samples under the given policy and
 * agreement n, then finalizes. */
static inline sh_outcome sh_stream(struct transcribe_session *s, const float *pcm, int n, int feed,
                                   transcribe_stream_commit_policy policy, uint32_t agree) {
    sh_outcome o;
    memset(&o, 0, sizeof o);
    struct transcribe_stream_params sp;
    transcribe_stream_params_init(&sp);
    sp.commit_policy = policy;
    sp.stable_prefix_agreement_n = agree;
    sp.window_fallback = true; /* any model: natively, else the window driver */
    o.status = transcribe_stream_begin(s, NULL, &sp);
    if (o.status != TRANSCRIBE_OK) return o;
    char *prev = sh_dup("");
    int64_t fed = 0;
    for (int pos = 0; pos < n; pos += feed) {
        int take = n - pos < feed ? n - pos : feed;
        struct transcribe_stream_update u;
        transcribe_stream_update_init(&u);
        o.status = transcribe_stream_feed(s, pcm + pos, take, &u);
        if (o.status != TRANSCRIBE_OK) break;
        fed += take;
        CHECK(u.input_received_ms == fed * 1000 / 16000);
        CHECK(!u.is_final && u.revision == transcribe_stream_revision(s));
        CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_ACTIVE);
        const char *c = sh_committed(s);
        size_t lp = strlen(prev);
        if (strncmp(c, prev, lp) != 0) o.n_shrink++;
        if (strlen(c) > lp) o.n_commit_feeds++;
        if (policy == TRANSCRIBE_STREAM_COMMIT_ON_FINALIZE) {
            CHECK(*c == 0 && u.audio_committed_ms == 0);
        }
        /* Display text = committed + tentative; committed is a prefix of full. */
        struct transcribe_stream_text t;
        transcribe_stream_text_init(&t);
        transcribe_stream_get_text(s, &t);
        CHECK(t.raw_tentative_start_bytes <= t.full_text_bytes);
        free(prev);
        prev = sh_dup(c);
    }
    if (o.status == TRANSCRIBE_OK) {
        struct transcribe_stream_update u;
        transcribe_stream_update_init(&u);
        o.status = transcribe_stream_finalize(s, &u);
        CHECK(u.is_final);
        if (o.status == TRANSCRIBE_OK) {
            CHECK(transcribe_stream_get_state(s) == TRANSCRIBE_STREAM_FINISHED);
            const char *c = sh_committed(s);
            if (strncmp(c, prev, strlen(prev)) != 0) o.n_shrink++;
            o.committed = sh_dup(c);
            o.full = sh_dup(transcribe_full_text(s));
            struct transcribe_stream_text t;
            transcribe_stream_text_init(&t);
            transcribe_stream_get_text(s, &t);
            CHECK(t.tentative_text_bytes == 0);
        }
    }
    free(prev);
    return o;
}

/* Word-level edit distance between a and b over whitespace-separated words,
 * and the word count of a (for a word error rate). */
static inline int sh_word_distance(const char *a, const char *b, int *n_a) {
    enum { MAXW = 4096 };
    const char *wa[MAXW], *wb[MAXW];
    int la[MAXW], lb[MAXW], na = 0, nb = 0;
    for (const char *p = a; *p && na < MAXW;) {
        while (*p == ' ') p++;
        if (!*p) break;
        const char *q = p;
        while (*q && *q != ' ') q++;
        wa[na] = p, la[na++] = (int)(q - p), p = q;
    }
    for (const char *p = b; *p && nb < MAXW;) {
        while (*p == ' ') p++;
        if (!*p) break;
        const char *q = p;
        while (*q && *q != ' ') q++;
        wb[nb] = p, lb[nb++] = (int)(q - p), p = q;
    }
    *n_a = na;
    int *row = malloc((size_t)(nb + 1) * sizeof *row);
    if (!row) return na + nb;
    for (int j = 0; j <= nb; j++) row[j] = j;
    for (int i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= nb; j++) {
            int up = row[j];
            int same =
                la[i - 1] == lb[j - 1] && memcmp(wa[i - 1], wb[j - 1], (size_t)la[i - 1]) == 0;
            int best = diag + !same;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    int d = row[nb];
    free(row);
    return d;
}

#endif
