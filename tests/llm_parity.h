/* Helpers the audio-LLM parity tests share (tests/qwen3_asr,
 * tests/granite_speech, tests/moss, tests/canary_qwen, tests/voxtral, ...)
 * on top of parity.h: golden files by folder and file name (a missing one is
 * a failure), the max-abs error against a golden (with the golden's own
 * largest magnitude), the tokenizer_cases.txt check (`hex(text) \t ids`
 * per line) through any encoder, the prompt-length gate at n_ctx and
 * n_ctx - 1, and an abort mid-decode keeping a prefix. Include after
 * test_util.h. */
#ifndef TR_TESTS_LLM_PARITY_H
#define TR_TESTS_LLM_PARITY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "parity.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

/* dir/name as an .npy; a missing golden is a failure (logged). */
static inline bool llm_load_npy(const char *dir, const char *name, npy_array *a) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (npy_load(p, a) != 0) {
        fprintf(stderr, "cannot read %s\n", p);
        tr_test_fail++;
        return false;
    }
    return true;
}

/* dir/name as text (malloc'ed); a missing golden is a failure (logged). */
static inline char *llm_read_golden(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *s = tr_test_read_text(p, NULL);
    if (!s) {
        fprintf(stderr, "cannot read %s\n", p);
        tr_test_fail++;
    }
    return s;
}

/* max |a - b| over n values; *max_ref (optional) gets max |b|. */
static inline double llm_max_abs_diff(const float *a, const float *b, int64_t n, double *max_ref) {
    double e = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        /* written out: GCC 12 aarch64 cannot vectorise fmax(fabs) reductions */
        double d = fabs((double)a[i] - b[i]), r = fabs((double)b[i]);
        if (d > e) e = d;
        if (r > m) m = r;
    }
    if (max_ref) *max_ref = m;
    return e;
}

/* Encodes text into ids (capacity n); the count or < 0. */
typedef int (*llm_encode_fn)(const void *user, const char *text, int32_t *ids, size_t n);

/* llm_encode_fn through the public API; user is the transcribe_model. */
static inline int llm_encode_public(const void *model, const char *text, int32_t *ids, size_t n) {
    return transcribe_tokenize(model, text, ids, n);
}

/* Every case of a tokenizer_cases.txt (`#` lines skipped) through encode;
 * each one a CHECK naming tag. Returns the number of cases. */
static inline int llm_tokenizer_cases(const char *path, llm_encode_fn encode, const void *user,
                                      const char *tag) {
    char *s = tr_test_read_text(path, NULL);
    CHECK_MSG(s != NULL, "cannot read %s", path);
    int n_cases = 0;
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *tab = strchr(line, '\t');
        if (line[0] != '#' && tab) {
            char text[512];
            size_t k = 0;
            for (char *h = line; h + 1 < tab && k + 1 < sizeof text; h += 2) {
                unsigned v;
                sscanf(h, "%2x", &v);
                text[k++] = (char)v;
            }
            text[k] = 0;
            int32_t want[256], got[256];
            int nw = 0;
            for (char *p = tab + 1; *p && nw < 256;) {
                char *e;
                long v = strtol(p, &e, 10);
                if (e == p) break;
                want[nw++] = (int32_t)v;
                p = e;
            }
            int ng = encode(user, text, got, 256);
            CHECK_MSG(ng == nw && memcmp(got, want, sizeof(int32_t) * (size_t)nw) == 0,
                      "%s tokenize case %d", tag, n_cases);
            n_cases++;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(s);
    return n_cases;
}

/* The prompt-length gate with chunking off: on the file at path (session
 * parameters sp, whose n_ctx it sets), pcm must run with n_ctx = fit and be
 * refused INPUT_TOO_LONG with fit - 1. Per n_ctx, a CHECK that the session
 * opens and one of the run's status (tag names the case). */
static inline void llm_expect_ctx_gate(const char *path, struct transcribe_session_params *sp,
                                       int fit, const float *pcm, int n, const char *tag) {
    struct transcribe_run_params whole;
    transcribe_run_params_init(&whole);
    whole.chunking = TRANSCRIBE_CHUNKING_OFF;
    for (int d = 0; d < 2; d++) {
        sp->n_ctx = fit - d;
        struct transcribe_session *s = NULL;
        CHECK(transcribe_open(path, NULL, sp, &s) == TRANSCRIBE_OK);
        if (!s) continue;
        transcribe_status st = transcribe_run(s, pcm, n, &whole);
        CHECK_MSG(st == (d ? TRANSCRIBE_ERR_INPUT_TOO_LONG : TRANSCRIBE_OK), "%s n_ctx %d: %s", tag,
                  sp->n_ctx, transcribe_status_string(st));
        transcribe_session_free(s);
    }
}

/* The abort callback llm_expect_abort sets: it asks to stop at the
 * llm_abort_limit-th poll (llm_polls counts them; reset it before a run). */
static int llm_polls, llm_abort_limit;
static inline bool llm_abort_at(void *user) {
    (void)user;
    return ++llm_polls >= llm_abort_limit;
}

/* s run on pcm and stopped at the limit-th abort poll (the callback stays
 * set): a CHECK that the run says ABORTED, one that transcribe_was_aborted
 * agrees, and one that the text it kept (the raw text when raw) is a
 * non-empty proper prefix of want. */
static inline void llm_expect_abort(struct transcribe_session *s, const float *pcm, int n,
                                    int limit, const char *want, bool raw) {
    llm_abort_limit = limit;
    llm_polls = 0;
    transcribe_set_abort_callback(s, llm_abort_at, NULL);
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_ERR_ABORTED);
    CHECK(transcribe_was_aborted(s));
    const char *part = raw ? transcribe_raw_text(s) : transcribe_full_text(s);
    CHECK_MSG(part && part[0] && strlen(part) < strlen(want) &&
                  strncmp(part, want, strlen(part)) == 0,
              "partial '%s'", part ? part : "(null)");
}

#endif
