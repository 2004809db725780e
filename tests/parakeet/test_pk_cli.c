/* The `transcribe` binary (path in argv[1]) on the reference tiny TDT and
 * CTC models: -f txt prints the golden text, json carries the golden words
 * and segment times, srt / vtt cue the golden segment, --timestamps and
 * --translate / -l reach the run (the last two as errors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pk_test.h"
#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 18], g_err[1 << 16];

static int run(const char *model, const char *flags) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' %s '%s'", g_bin, model, flags,
             TR_CORPUS_DIR "/samples/jfk.wav");
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

static char *golden(const char *cfg, const char *file) {
    char path[2048];
    pk_path(path, sizeof path, cfg, file);
    char *s = pk_read_text(path);
    pk_chomp(s);
    return s;
}

/* "t0 t1 text" of the first golden segment. */
static bool first_segment(const char *cfg, long *t0, long *t1) {
    char *s = golden(cfg, "jfk.segments.txt");
    bool ok = s && sscanf(s, "%ld %ld", t0, t1) == 2;
    free(s);
    return ok;
}

static void ms_clock(long ms, char sep, char *buf, size_t n) {
    snprintf(buf, n, "%02ld:%02ld:%02ld%c%03ld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, sep,
             ms % 1000);
}

/* The texts of an SRT's cues, joined by spaces (number and time lines
 * left out). */
static void cue_texts(const char *srt, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    int line_in_cue = 0;
    for (const char *p = srt; *p;) {
        size_t len = strcspn(p, "\n");
        if (len == 0) {
            line_in_cue = 0;
        } else if (++line_in_cue > 2 && n + len + 2 < cap) {
            if (n) out[n++] = ' ';
            memcpy(out + n, p, len);
            out[n += len] = '\0';
        }
        p += len + (p[len] == '\n');
    }
}

static void check_model(const char *cfg) {
    char model[2048];
    bool have = pk_model_file(cfg, "F32", model, sizeof model);
    CHECK_MSG(have, "%s: no model file", cfg);
    if (!have) return;
    char *text = golden(cfg, "jfk.text.txt");
    CHECK(text != NULL);
    if (!text) return;

    int rc = run(model, "-f txt");
    size_t n = strlen(g_out);
    while (n > 0 && (g_out[n - 1] == '\n' || g_out[n - 1] == '\r')) g_out[--n] = 0;
    CHECK_MSG(rc == 0 && !strcmp(g_out, text), "%s txt: exit %d [%s] want [%s] %s", cfg, rc, g_out,
              text, g_err);

    long t0 = 0, t1 = 0;
    bool have_seg = first_segment(cfg, &t0, &t1);
    char a[32], b[32], want[128];
    rc = run(model, "-f json --tokens");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"token\""), "%s json: %s", cfg, g_out);
    if (have_seg) {
        snprintf(want, sizeof want, "{\"t0_ms\":%ld,\"t1_ms\":%ld,", t0, t1);
        CHECK_MSG(strstr(g_out, want) != NULL, "%s json lacks %s", cfg, want);
    }
    /* every golden word appears with its times */
    char *words = golden(cfg, "jfk.words.txt");
    for (char *line = words ? strtok(words, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        long w0, w1;
        if (sscanf(line, "%ld %ld", &w0, &w1) != 2) continue;
        snprintf(want, sizeof want, "{\"t0_ms\":%ld,\"t1_ms\":%ld,\"text\":", w0, w1);
        CHECK_MSG(strstr(g_out, want) != NULL, "%s json lacks word %s", cfg, line);
    }
    free(words);

    /* The segment (11 s) passes a cue's 7 s: its cues are cut at words,
     * the first from the segment's start, the last to its end, their
     * texts the transcript in order. */
    rc = run(model, "-f srt");
    if (have_seg) {
        ms_clock(t0, ',', a, sizeof a);
        ms_clock(t1, ',', b, sizeof b);
        snprintf(want, sizeof want, "1\n%s --> ", a);
        char end[64], joined[4096];
        snprintf(end, sizeof end, " --> %s\n", b);
        CHECK_MSG(rc == 0 && !strncmp(g_out, want, strlen(want)) && strstr(g_out, end),
                  "%s srt: [%s]", cfg, g_out);
        cue_texts(g_out, joined, sizeof joined);
        CHECK_MSG(!strcmp(joined, text), "%s srt text [%s] want [%s]", cfg, joined, text);
    }
    rc = run(model, "-f vtt");
    if (have_seg) {
        ms_clock(t0, '.', a, sizeof a);
        ms_clock(t1, '.', b, sizeof b);
        snprintf(want, sizeof want, "\n\n%s --> ", a);
        char end[64];
        snprintf(end, sizeof end, " --> %s\n", b);
        CHECK_MSG(rc == 0 && !strncmp(g_out, "WEBVTT", 6) && strstr(g_out, want) &&
                      strstr(g_out, end),
                  "%s vtt: [%s]", cfg, g_out);
    }
    rc = run(model, "-f json --timestamps segment");
    CHECK_MSG(rc == 0 && strstr(g_out, "\"timestamps\":\"segment\""), "%s segment json: %s", cfg,
              g_out);
    /* --raw-tokens keeps CONTROL tokens (the golden raw text shows them) */
    char *raw = golden(cfg, "jfk.raw.txt");
    const char *tag = !raw                  ? NULL
                      : strstr(raw, "</s>") ? "</s>"
                      : strstr(raw, "<s>")  ? "<s>"
                                            : NULL;
    if (tag) {
        rc = run(model, "-f txt --raw-tokens");
        CHECK_MSG(rc == 0 && strstr(g_out, tag), "%s --raw-tokens: [%s]", cfg, g_out);
        rc = run(model, "-f txt");
        CHECK(rc == 0 && !strstr(g_out, tag));
    }
    free(raw);
    rc = run(model, "-t");
    CHECK_MSG(rc != 0, "%s translate: exit %d", cfg, rc);
    rc = run(model, "-l de");
    CHECK_MSG(rc != 0, "%s -l de: exit %d", cfg, rc);
    rc = run(model, "-l en");
    CHECK_MSG(rc == 0, "%s -l en: exit %d %s", cfg, rc, g_err);
    free(text);
}

/* A segment longer than 15 s (whole-earth, 84 s, one segment) becomes
 * several subtitle cues cut at word boundaries: each at most 7 s, in order,
 * (unless one random-weight "word" alone is longer). */
static void check_long_cues(const char *cfg) {
    char model[2048], cmd[4096];
    bool have = pk_model_file(cfg, "F32", model, sizeof model);
    CHECK_MSG(have, "%s: no model file", cfg);
    if (!have) return;
    snprintf(cmd, sizeof cmd, "'%s' -q -m '%s' -f srt '%s'", g_bin, model,
             TR_CORPUS_DIR "/samples/whole-earth.wav");
    CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
    int cues = 0;
    long prev_end = -1;
    const char *p = g_out;
    while ((p = strstr(p, " --> ")) != NULL) {
        int h0, m0, s0, f0, h1, m1, s1, f1;
        CHECK(sscanf(p - 12, "%d:%d:%d,%d --> %d:%d:%d,%d", &h0, &m0, &s0, &f0, &h1, &m1, &s1,
                     &f1) == 8);
        long a = ((h0 * 60L + m0) * 60 + s0) * 1000 + f0,
             b = ((h1 * 60L + m1) * 60 + s1) * 1000 + f1;
        const char *line = strchr(p, '\n'), *end = line ? strchr(line + 1, '\n') : NULL;
        bool one_word = line && end && !memchr(line + 1, ' ', (size_t)(end - line - 1));
        CHECK(a >= prev_end && b >= a);
        CHECK_MSG(b - a <= 7000 || one_word, "cue %ld..%ld ms holds several words", a, b);
        prev_end = b;
        cues++;
        p += 5;
    }
    CHECK_MSG(cues > 5, "%s: %d cues for 84 s", cfg, cues);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: test_pk_cli <transcribe binary>\n");
        return 1;
    }
    g_bin = argv[1];
    check_model("tiny-tdt");
    check_model("tiny-ctc");
    check_long_cues("tiny-ctc");
    return TEST_DONE();
}
