/* Parakeet parity against the independent PyTorch reference
 * (tools/ref/parakeet.py, float64) on its random tiny models
 * (tests/data/parakeet/<config>/, see the README there), through the public
 * API: for every head (CTC, RNN-T, TDT), F32 and F16 files, jfk and
 * whole-earth (84 s, one encoder pass like the reference):
 *   - emitted tokens (id, frame, duration) identical, via keep_special_tags;
 *   - kept token rows: id, t0/t1 exactly, confidence within 1e-3;
 *   - word rows, the segment, full text and raw text exactly;
 * plus the legacy TDT file (no newer keys → loader defaults) decoding the
 * same tokens. The F16 files hold F16-rounded values of the same weights,
 * so they share the F32 goldens (the reference rounds first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_test.h"
#include "test_util.h"

static int n_checked;

typedef struct golden_tok {
    int id, frame, dur, kept;
    long t0, t1;
    float p;
} golden_tok;

static int read_detail(const char *path, golden_tok *g, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    char line[4096];
    while (n < cap && fgets(line, sizeof line, f)) {
        golden_tok *t = &g[n];
        if (sscanf(line, "%d %d %d %d %ld %ld %f", &t->id, &t->frame, &t->dur, &t->kept, &t->t0,
                   &t->t1, &t->p) == 7)
            n++;
    }
    fclose(f);
    return n;
}

/* Compares "t0 t1 text" lines with rows fetched by `get`. */
static void check_rows(const char *path, struct transcribe_session *s, bool words) {
    char *txt = pk_read_text(path);
    CHECK_MSG(txt != NULL, "%s", path);
    if (!txt) return;
    int n = words ? transcribe_n_words(s) : transcribe_n_segments(s), i = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n"), i++) {
        long t0, t1;
        int off = 0;
        if (sscanf(line, "%ld %ld %n", &t0, &t1, &off) < 2) continue;
        const char *want = line + off;
        if (i >= n) break;
        int64_t g0, g1;
        const char *got;
        if (words) {
            struct transcribe_word w;
            transcribe_word_init(&w);
            transcribe_get_word(s, i, &w);
            g0 = w.t0_ms, g1 = w.t1_ms, got = w.text;
        } else {
            struct transcribe_segment sg;
            transcribe_segment_init(&sg);
            transcribe_get_segment(s, i, &sg);
            g0 = sg.t0_ms, g1 = sg.t1_ms, got = sg.text;
        }
        CHECK_MSG(g0 == t0 && g1 == t1 && got && !strcmp(got, want),
                  "%s row %d: %lld %lld [%s] vs %ld %ld [%s]", path, i, (long long)g0,
                  (long long)g1, got ? got : "(null)", t0, t1, want);
    }
    CHECK_MSG(i == n, "%s: %d golden rows, %d rows", path, i, n);
    free(txt);
}

static void check_text(const char *path, const char *got) {
    char *want = pk_read_text(path);
    pk_chomp(want);
    CHECK_MSG(want && got && !strcmp(want, got), "%s: [%s] vs [%s]", path, got ? got : "(null)",
              want ? want : "(null)");
    free(want);
}

static void run_case(const char *cfg, const char *file, const char *audio, const float *pcm,
                     int n) {
    char gpath[2048], path[128];
    if (!strcmp(file, "F32") || !strcmp(file, "F16")) {
        if (!pk_model_file(cfg, file, gpath, sizeof gpath)) gpath[0] = 0;
    } else {
        snprintf(path, sizeof path, "parakeet-%s-%s.gguf", cfg, file);
        pk_path(gpath, sizeof gpath, cfg, path);
    }
    snprintf(path, sizeof path, "%s.tokens_detail.txt", audio);
    char dpath[2048];
    pk_path(dpath, sizeof dpath, cfg, path);
    if (!gpath[0] || !pk_exists(gpath) || !pk_exists(dpath)) return;
    enum { CAP = 20000 };
    golden_tok *g = malloc(CAP * sizeof *g);
    int ng = read_detail(dpath, g, CAP);
    struct transcribe_session *s = NULL;
    CHECK_MSG(pk_open(gpath, 2, &s) == TRANSCRIBE_OK, "%s", gpath);
    if (!s || ng < 0) {
        free(g);
        transcribe_session_free(s);
        return;
    }
    n_checked++;
    printf("%s %s %s: %d golden tokens\n", cfg, file, audio, ng);

    /* every emitted token, tags included: id, frame, duration */
    struct transcribe_run_params p;
    transcribe_run_params_init(&p);
    p.keep_special_tags = true;
    CHECK(transcribe_run(s, pcm, n, &p) == TRANSCRIBE_OK);
    /* an encoder frame is subsampling_factor hops of 10 ms */
    const int64_t fms = strstr(cfg, "-sub2") ? 20 : strstr(cfg, "-sub4") ? 40 : 80;
    int nt = transcribe_n_tokens(s), bad = 0;
    CHECK_MSG(nt == ng, "%s %s: %d tokens vs %d", file, audio, nt, ng);
    for (int i = 0; i < nt && i < ng; i++) {
        struct transcribe_token t;
        transcribe_token_init(&t);
        transcribe_get_token(s, i, &t);
        if (t.id != g[i].id || t.t0_ms != (int64_t)g[i].frame * fms ||
            t.t1_ms != (int64_t)(g[i].frame + g[i].dur) * fms) {
            if (bad++ < 5)
                fprintf(stderr, "%s %s token %d: %d [%lld, %lld] vs %d frame %d dur %d\n", file,
                        audio, i, t.id, (long long)t.t0_ms, (long long)t.t1_ms, g[i].id, g[i].frame,
                        g[i].dur);
        }
    }
    CHECK_MSG(bad == 0, "%s %s: %d token mismatches", file, audio, bad);

    /* default run: kept rows, words, segment, texts */
    CHECK(transcribe_run(s, pcm, n, NULL) == TRANSCRIBE_OK);
    CHECK(transcribe_returned_timestamp_kind(s) == TRANSCRIBE_TIMESTAMPS_TOKEN);
    nt = transcribe_n_tokens(s);
    int k = 0;
    bad = 0;
    for (int i = 0; i < ng; i++) {
        if (!g[i].kept) continue;
        struct transcribe_token t;
        transcribe_token_init(&t);
        if (k >= nt || transcribe_get_token(s, k, &t) != TRANSCRIBE_OK) {
            bad++;
            break;
        }
        if (t.id != g[i].id || t.t0_ms != g[i].t0 || t.t1_ms != g[i].t1 ||
            fabsf(t.p - g[i].p) > 1e-3f) {
            if (bad++ < 5)
                fprintf(stderr, "%s %s row %d: %d [%lld %lld] p %.5f vs %d [%ld %ld] %.5f\n", file,
                        audio, k, t.id, (long long)t.t0_ms, (long long)t.t1_ms, (double)t.p,
                        g[i].id, g[i].t0, g[i].t1, (double)g[i].p);
        }
        k++;
    }
    CHECK_MSG(bad == 0 && k == nt, "%s %s: %d row mismatches, %d kept vs %d rows", file, audio, bad,
              k, nt);
    snprintf(path, sizeof path, "%s.words.txt", audio);
    pk_path(dpath, sizeof dpath, cfg, path);
    check_rows(dpath, s, true);
    snprintf(path, sizeof path, "%s.segments.txt", audio);
    pk_path(dpath, sizeof dpath, cfg, path);
    check_rows(dpath, s, false);
    snprintf(path, sizeof path, "%s.text.txt", audio);
    pk_path(dpath, sizeof dpath, cfg, path);
    check_text(dpath, transcribe_full_text(s));
    snprintf(path, sizeof path, "%s.raw.txt", audio);
    pk_path(dpath, sizeof dpath, cfg, path);
    check_text(dpath, transcribe_raw_text(s));
    transcribe_session_free(s);
    free(g);
}

int main(void) {
    static const char *const cfgs[] = {"tiny-ctc", "tiny-rnnt", "tiny-tdt"};
    static const char *const audios[] = {"jfk", "whole-earth"};
    float *pcm[2];
    int n[2];
    for (int a = 0; a < 2; a++) {
        pcm[a] = pk_load_wav(audios[a], &n[a]);
        CHECK(pcm[a] != NULL);
        if (!pcm[a]) return TEST_DONE();
    }
    for (int c = 0; c < 3; c++) {
        const char *files[3] = {"F32", "F16", "legacy-F16"};
        for (int f = 0; f < 3; f++)
            for (int a = 0; a < 2; a++) run_case(cfgs[c], files[f], audios[a], pcm[a], n[a]);
    }
    /* subsampling 2 and 4 (20 and 40 ms frames): jfk, F16 */
    run_case("tiny-ctc-sub2", "F16", "jfk", pcm[0], n[0]);
    run_case("tiny-ctc-sub4", "F16", "jfk", pcm[0], n[0]);
    /* jfk: 3 heads × 2 dtypes + legacy + 2 factors; whole-earth: ctc and tdt × 2 + legacy */
    CHECK_MSG(n_checked == 14, "only %d golden cases found under %s", n_checked, pk_data_dir());
    for (int a = 0; a < 2; a++) free(pcm[a]);
    return TEST_DONE();
}
