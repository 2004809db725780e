/* Whisper word and token times (docs/formats/whisper.md §13, our addition) on the reference
 * model of tests/data/whisper/tiny through the public API: WORD and TOKEN runs decode exactly
 * the golden segments and text (the estimate only adds times), every word of every segment's
 * text has a row, word and token times are monotonic and inside their segment (tokens inside
 * their word), the speculative and plain decoders give the same rows, long form (several
 * windows) and long audio split into pieces give words on the input's clock, a batch gives
 * each utterance the rows of its single run, and AUTO / SEGMENT runs are unchanged (rows
 * carry their segment's times). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "transcribe.h"
#include "transcribe/whisper.h"

#define DATA TR_SOURCE_DIR "/tests/data/whisper/tiny/"

/* The rows of one result: the session's (u < 0) or batch utterance u's. */
typedef struct view {
    struct transcribe_session *s;
    int u;
} view;

static int n_segs(view v) {
    return v.u < 0 ? transcribe_n_segments(v.s) : transcribe_batch_n_segments(v.s, v.u);
}
static int n_words(view v) {
    return v.u < 0 ? transcribe_n_words(v.s) : transcribe_batch_n_words(v.s, v.u);
}
static int n_toks(view v) {
    return v.u < 0 ? transcribe_n_tokens(v.s) : transcribe_batch_n_tokens(v.s, v.u);
}
static struct transcribe_segment seg_at(view v, int i) {
    struct transcribe_segment g;
    transcribe_segment_init(&g);
    CHECK((v.u < 0 ? transcribe_get_segment(v.s, i, &g)
                   : transcribe_batch_get_segment(v.s, v.u, i, &g)) == TRANSCRIBE_OK);
    return g;
}
static struct transcribe_word word_at(view v, int i) {
    struct transcribe_word w;
    transcribe_word_init(&w);
    CHECK((v.u < 0 ? transcribe_get_word(v.s, i, &w)
                   : transcribe_batch_get_word(v.s, v.u, i, &w)) == TRANSCRIBE_OK);
    return w;
}
static struct transcribe_token tok_at(view v, int i) {
    struct transcribe_token t;
    transcribe_token_init(&t);
    CHECK((v.u < 0 ? transcribe_get_token(v.s, i, &t)
                   : transcribe_batch_get_token(v.s, v.u, i, &t)) == TRANSCRIBE_OK);
    return t;
}

/* a's whitespace-separated words equal b's */
static bool same_words(const char *a, const char *b) {
    for (;;) {
        while (isspace((unsigned char)*a)) a++;
        while (isspace((unsigned char)*b)) b++;
        if (!*a || !*b) return !*a && !*b;
        size_t la = strcspn(a, " \t\r\n"), lb = strcspn(b, " \t\r\n");
        if (la != lb || memcmp(a, b, la) != 0) return false;
        a += la;
        b += lb;
    }
}

/* The word-time contract on one result; returns how many words lie strictly inside their
 * segment's span (neither starting at its start nor ending at its end). */
static int check_words(view v, const char *what) {
    const int ns = n_segs(v), nw = n_words(v), nt = n_toks(v);
    CHECK_MSG(ns > 0 && nw > 0 && nt >= nw, "%s: %d segments, %d words, %d tokens", what, ns, nw,
              nt);
    int inner = 0, next_word = 0, bad = 0;
    int64_t prev_t0 = INT64_MIN;
    for (int i = 0; i < ns; i++) {
        struct transcribe_segment g = seg_at(v, i);
        CHECK_MSG(g.first_word == next_word, "%s seg %d: first word %d, want %d", what, i,
                  g.first_word, next_word);
        next_word = g.first_word + g.n_words;
        char joined[8192] = "";
        int64_t at = g.t0_ms; /* words follow one another inside the segment */
        for (int k = g.first_word; k < g.first_word + g.n_words && k < nw; k++) {
            struct transcribe_word w = word_at(v, k);
            if (w.seg_index != i || w.t0_ms < at || w.t1_ms < w.t0_ms || w.t1_ms > g.t1_ms ||
                w.t0_ms < prev_t0 || w.n_tokens < 1) {
                if (bad++ < 5)
                    printf("%s: word %d '%s' [%lld %lld] in seg %d [%lld %lld] after %lld\n", what,
                           k, w.text, (long long)w.t0_ms, (long long)w.t1_ms, i, (long long)g.t0_ms,
                           (long long)g.t1_ms, (long long)at);
            }
            if (w.t0_ms > g.t0_ms && w.t1_ms < g.t1_ms) inner++;
            at = w.t1_ms;
            prev_t0 = w.t0_ms;
            int64_t tat = w.t0_ms; /* tokens follow one another inside the word */
            for (int j = w.first_token; j < w.first_token + w.n_tokens && j < nt; j++) {
                struct transcribe_token t = tok_at(v, j);
                if (t.word_index != k || t.seg_index != i || t.t0_ms != tat || t.t1_ms < t.t0_ms ||
                    t.t1_ms > w.t1_ms)
                    bad++;
                tat = t.t1_ms;
            }
            if (tat != w.t1_ms) bad++;
            strncat(joined, " ", sizeof joined - strlen(joined) - 1);
            strncat(joined, w.text ? w.text : "", sizeof joined - strlen(joined) - 1);
        }
        /* every word of the segment's text has a row */
        CHECK_MSG(same_words(joined, g.text), "%s seg %d: words '%s' vs text '%s'", what, i, joined,
                  g.text);
    }
    CHECK_MSG(next_word == nw, "%s: segments hold %d of %d words", what, next_word, nw);
    CHECK_MSG(bad == 0, "%s: %d rows out of order or outside their segment / word", what, bad);
    printf("%s: %d segments, %d words (%d strictly inside their segment), %d tokens\n", what, ns,
           nw, inner, nt);
    return inner;
}

/* Two results hold the same rows (text and times). */
static void same_rows(view a, view b, const char *what) {
    CHECK_MSG(n_segs(a) == n_segs(b) && n_words(a) == n_words(b) && n_toks(a) == n_toks(b),
              "%s: %d/%d/%d rows vs %d/%d/%d", what, n_segs(a), n_words(a), n_toks(a), n_segs(b),
              n_words(b), n_toks(b));
    int diff = 0;
    for (int i = 0; i < n_words(a) && i < n_words(b); i++) {
        struct transcribe_word x = word_at(a, i), y = word_at(b, i);
        if (x.t0_ms != y.t0_ms || x.t1_ms != y.t1_ms || strcmp(x.text, y.text) != 0) diff++;
    }
    for (int i = 0; i < n_toks(a) && i < n_toks(b); i++) {
        struct transcribe_token x = tok_at(a, i), y = tok_at(b, i);
        if (x.id != y.id || x.t0_ms != y.t0_ms || x.t1_ms != y.t1_ms) diff++;
    }
    CHECK_MSG(diff == 0, "%s: %d rows differ", what, diff);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 14];
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = 0;
    return buf;
}

/* The segments equal the golden of the timestamp decode (times and text). */
static void golden_segments(view v, const char *stem) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s.segments.txt", stem);
    char *segs = read_text(path);
    CHECK(segs != NULL);
    int i = 0;
    for (char *line = segs ? strtok(segs, "\n") : NULL; line; line = strtok(NULL, "\n"), i++) {
        long long t0 = 0, t1 = 0;
        int off = 0;
        if (sscanf(line, "%lld %lld %n", &t0, &t1, &off) < 2 || i >= n_segs(v)) continue;
        struct transcribe_segment g = seg_at(v, i);
        CHECK_MSG(g.t0_ms == t0 && g.t1_ms == t1 && !strcmp(g.text, line + off),
                  "%s seg %d: [%lld %lld] '%s'", stem, i, (long long)g.t0_ms, (long long)g.t1_ms,
                  g.text);
    }
    CHECK_MSG(n_segs(v) == i, "%s: %d segments, want %d", stem, n_segs(v), i);
}

static float *load(const char *name, int *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/samples/%s", TR_CORPUS_DIR, name);
    float *pcm = NULL;
    CHECK(transcribe_audio_load_file(path, 16000, &pcm, n) == TRANSCRIBE_OK);
    return pcm;
}

int main(void) {
    struct transcribe_session_params sp;
    transcribe_session_params_init(&sp);
    sp.n_threads = 2;
    struct transcribe_model *model = NULL;
    struct transcribe_session *s = NULL;
    CHECK(transcribe_model_load_file(DATA "whisper-tiny-ref-F16.gguf", NULL, &model) ==
          TRANSCRIBE_OK);
    CHECK(model && transcribe_session_init(model, &sp, &s) == TRANSCRIBE_OK);
    int nj = 0, ne = 0;
    float *jfk = load("jfk.wav", &nj), *earth = load("whole-earth.wav", &ne);
    if (!s || !jfk || !earth) goto done;
    const view one = {s, -1};

    struct transcribe_capabilities caps;
    transcribe_capabilities_init(&caps);
    CHECK(transcribe_model_get_capabilities(model, &caps) == TRANSCRIBE_OK);
    CHECK(caps.max_timestamp_kind == TRANSCRIBE_TIMESTAMPS_TOKEN);

    struct transcribe_run_params rp;
    transcribe_run_params_init(&rp);
    rp.language = "en";
    rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
    CHECK(transcribe_run(s, jfk, nj, &rp) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_WORD);
    golden_segments(one, "jfk");
    char *text = read_text(DATA "jfk.text.txt");
    if (text) text[strcspn(text, "\n")] = 0;
    CHECK(text && !strcmp(transcribe_full_text(s), text));
    CHECK(check_words(one, "jfk word") > 0);
    /* keep this run's rows: a second session replays it */
    struct transcribe_session *s2 = NULL;
    CHECK(transcribe_session_init(model, &sp, &s2) == TRANSCRIBE_OK);
    if (s2) {
        const view two = {s2, -1};
        /* TOKEN: the same rows, reported as TOKEN */
        rp.timestamps = TRANSCRIBE_TIMESTAMPS_TOKEN;
        CHECK(transcribe_run(s2, jfk, nj, &rp) == TRANSCRIBE_OK);
        CHECK(transcribe_returned_timestamp_kind(s2) == TRANSCRIBE_TIMESTAMPS_TOKEN);
        same_rows(one, two, "WORD vs TOKEN");
        /* the plain decoder (no speculative drafts) records the same evidence */
        rp.timestamps = TRANSCRIBE_TIMESTAMPS_WORD;
        rp.spec_k_drafts = 0;
        CHECK(transcribe_run(s2, jfk, nj, &rp) == TRANSCRIBE_OK);
        same_rows(one, two, "speculative vs plain");
        rp.spec_k_drafts = -1;
        /* a batch: each utterance the rows of its single run */
        const float *pcms[3] = {jfk, earth, jfk};
        const int ns[3] = {nj, ne, nj};
        CHECK(transcribe_run_batch(s2, pcms, ns, 3, &rp) == TRANSCRIBE_OK);
        CHECK(transcribe_batch_returned_timestamp_kind(s2, 0) == TRANSCRIBE_TIMESTAMPS_WORD);
        same_rows(one, (view){s2, 0}, "batch 0 vs single");
        same_rows(one, (view){s2, 2}, "batch 2 vs single");
        /* long form: several windows, words on the file's clock */
        CHECK(transcribe_run(s, earth, ne, &rp) == TRANSCRIBE_OK);
        golden_segments(one, "whole-earth");
        CHECK(check_words(one, "whole-earth word") > 0);
        CHECK(transcribe_get_whisper_chunk_count(s) >= 2);
        struct transcribe_word last = word_at(one, transcribe_n_words(s) - 1);
        CHECK_MSG(last.t0_ms > 30000, "last word at %lld ms", (long long)last.t0_ms);
        same_rows(one, (view){s2, 1}, "batch 1 vs single (long form)");
    }
    transcribe_session_free(s2);

    /* long audio split into pieces: each word inside its piece, on the input's clock */
    struct transcribe_run_params pc = rp;
    pc.chunking = TRANSCRIBE_CHUNKING_ON;
    pc.chunk_max_ms = 20000;
    CHECK(transcribe_run(s, earth, ne, &pc) == TRANSCRIBE_OK);
    const int np = transcribe_n_pieces(s);
    CHECK_MSG(np >= 2, "%d pieces", np);
    check_words(one, "pieces");
    int outside = 0;
    int64_t end_ms = (int64_t)ne * 1000 / 16000;
    for (int i = 0; i < transcribe_n_words(s); i++) {
        struct transcribe_word w = word_at(one, i);
        bool in = false;
        for (int k = 0; k < np && !in; k++) {
            struct transcribe_piece p;
            transcribe_piece_init(&p);
            CHECK(transcribe_get_piece(s, k, &p) == TRANSCRIBE_OK);
            in = w.t0_ms >= p.t0_ms && w.t1_ms <= p.t1_ms;
        }
        if (!in || w.t1_ms > end_ms) outside++;
    }
    CHECK_MSG(outside == 0, "%d words outside their piece", outside);
    struct transcribe_word lastp = word_at(one, transcribe_n_words(s) - 1);
    CHECK(lastp.t0_ms > 20000);

    /* AUTO and SEGMENT: upstream's rows, words carry their segment's times */
    for (int k = 0; k < 2; k++) {
        rp.timestamps = k ? TRANSCRIBE_TIMESTAMPS_SEGMENT : TRANSCRIBE_TIMESTAMPS_AUTO;
        CHECK(transcribe_run(s, jfk, nj, &rp) == TRANSCRIBE_OK);
        CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_SEGMENT);
        golden_segments(one, "jfk");
        int off = 0;
        for (int i = 0; i < transcribe_n_words(s); i++) {
            struct transcribe_word w = word_at(one, i);
            struct transcribe_segment g = seg_at(one, w.seg_index);
            if (w.t0_ms != g.t0_ms || w.t1_ms != g.t1_ms) off++;
        }
        CHECK_MSG(off == 0, "%d words without their segment's times", off);
    }
done:
    transcribe_audio_free(jfk);
    transcribe_audio_free(earth);
    transcribe_session_free(s);
    transcribe_model_free(model);
    return TEST_DONE();
}
