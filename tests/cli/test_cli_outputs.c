/* Where the CLI's output goes, run as a user runs it (the bundled model):
 * -o leaves an existing file alone when the run fails (issue 31 item 8),
 * refuses to be an input (the audio, the model) and leaves no temporary
 * file; --output-dir is created when missing and two inputs
 * that would write the same files are refused before anything runs (item
 * 7); a reader that closes the pipe gets a message and exit 1, not a
 * silent SIGPIPE (item 17); --stream writes -o and --output-dir (item 3);
 * --batch prints -f json|srt|vtt and -o as a single run does (item 2);
 * --vad on silence says "no speech found" and its JSON names the timestamp
 * kind a run with speech returns (item 19); --stream -f srt|vtt prints the
 * stream's cues, all of them (item 3); --stream into a pipe prints whole
 * words, never a word cut in two (item 4); --batch-size gives each file
 * the group's timings shared out by length, not zeros (item 14). */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16], g_err[1 << 16], g_dir[1024];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", g_dir, g_bin, args);
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

static void write_file(const char *name, const void *data, size_t n) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static bool file_is(const char *name, const char *want) {
    char path[2048], got[4096] = "";
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return want == NULL;
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    fclose(f);
    return want && strcmp(got, want) == 0;
}

/* s with every run of white space made one space, trimmed. */
static void squash(const char *s, char *d, size_t cap) {
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) {
        if (isspace((unsigned char)*s)) {
            if (n > 0 && d[n - 1] != ' ') d[n++] = ' ';
        } else {
            d[n++] = *s;
        }
    }
    while (n > 0 && d[n - 1] == ' ') n--;
    d[n] = 0;
}

/* The value of "key": in a JSON line (no escapes in these texts). */
static void json_str(const char *json, const char *key, char *d, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    d[0] = 0;
    if (p) snprintf(d, cap, "%.*s", (int)strcspn(p + strlen(pat), "\""), p + strlen(pat));
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    g_bin = argv[1];
    snprintf(g_dir, sizeof g_dir, "%s/cli_outputs_%d", TR_BINARY_DIR, (int)getpid());
    CHECK(mkdir(g_dir, 0700) == 0);
    const char *jfk = TR_SOURCE_DIR "/samples/jfk.wav";

    /* -o: a model that does not load leaves keep.txt as it was, and makes
     * no file that was not there */
    write_file("keep.txt", "keep\n", 5);
    CHECK(run("-m /nonexistent.gguf -o keep.txt '%s'", jfk) == 1);
    CHECK(file_is("keep.txt", "keep\n"));
    CHECK(run("-m /nonexistent.gguf -o new.txt '%s'", jfk) == 1);
    CHECK(file_is("new.txt", NULL));
    CHECK(run("-q -o keep.txt '%s'", jfk) == 0);
    CHECK_MSG(file_is("keep.txt", g_out) && g_out[0], "-o holds: %s", g_out);

    /* -o that names an input (the audio, the model) is refused and the
     * input kept whole; a run that fails after the model loaded leaves -o
     * as it was; no temporary file is left beside it */
    {
        char src[2048], dst[2048];
        const char *const copies[2][2] = {
            {TR_SOURCE_DIR "/samples/jfk.wav", "in.wav"},
            {TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf", "m.gguf"}};
        long sizes[2] = {0, 0};
        for (int i = 0; i < 2; i++) {
            snprintf(src, sizeof src, "%s", copies[i][0]);
            snprintf(dst, sizeof dst, "%s/%s", g_dir, copies[i][1]);
            FILE *fi = fopen(src, "rb"), *fo = fopen(dst, "wb");
            CHECK(fi && fo);
            char buf[1 << 16];
            size_t n;
            while (fi && fo && (n = fread(buf, 1, sizeof buf, fi)) > 0) {
                fwrite(buf, 1, n, fo);
                sizes[i] += (long)n;
            }
            if (fi) fclose(fi);
            if (fo) fclose(fo);
        }
        struct stat st;
        CHECK(run("-q -o in.wav in.wav") == 1);
        CHECK_MSG(strstr(g_err, "is an input audio file") != NULL, "%s", g_err);
        snprintf(dst, sizeof dst, "%s/in.wav", g_dir);
        CHECK(stat(dst, &st) == 0 && st.st_size == sizes[0]);
        CHECK(run("-q -m m.gguf -o ./m.gguf in.wav") == 1);
        CHECK_MSG(strstr(g_err, "is the model file") != NULL, "%s", g_err);
        snprintf(dst, sizeof dst, "%s/m.gguf", g_dir);
        CHECK(stat(dst, &st) == 0 && st.st_size == sizes[1]);
        CHECK(run("-q -o keep.txt '%s'", jfk) == 0);
        static char kept[sizeof g_out];
        snprintf(kept, sizeof kept, "%s", g_out);
        CHECK(run("-q -m m.gguf -o keep.txt missing.wav") == 1);
        CHECK_MSG(file_is("keep.txt", kept), "a failed run changed -o");
        /* a new -o gets the mode fopen would give it */
        CHECK(run("-q -m m.gguf -o fresh.txt in.wav") == 0);
        snprintf(dst, sizeof dst, "%s/fresh.txt", g_dir);
        const mode_t mask = umask(0);
        umask(mask);
        CHECK(stat(dst, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));
        CHECK(file_is("fresh.txt", kept));
        DIR *d = opendir(g_dir);
        CHECK(d != NULL);
        for (struct dirent *e; d && (e = readdir(d));)
            CHECK_MSG(!strstr(e->d_name, ".partial-"), "left behind: %s", e->d_name);
        if (d) closedir(d);
    }

    /* --stream: -o and --output-dir get the stream's text (item 3) */
    CHECK(run("-q --stream -o st.txt --output-dir stdir '%s'", jfk) == 0);
    {
        char a1[2048], a2[2048];
        snprintf(a1, sizeof a1, "%s/st.txt", g_dir);
        snprintf(a2, sizeof a2, "%s/stdir/jfk.txt", g_dir);
        FILE *f1 = fopen(a1, "rb"), *f2 = fopen(a2, "rb");
        char b1[4096] = "", b2[4096] = "";
        if (f1) b1[fread(b1, 1, sizeof b1 - 1, f1)] = 0, fclose(f1);
        if (f2) b2[fread(b2, 1, sizeof b2 - 1, f2)] = 0, fclose(f2);
        CHECK_MSG(b1[0] && strlen(b1) > 20 && !strcmp(b1, b2), "st.txt '%s', jfk.txt '%s'", b1, b2);
    }

    /* --batch: -f json / srt and -o mean what they mean for one file (item 2) */
    {
        static char single[2 * sizeof g_out];
        char list[2048];
        snprintf(list, sizeof list, "%s/list.txt", g_dir);
        FILE *f = fopen(list, "w");
        CHECK(f != NULL);
        if (f) fprintf(f, "%s\n%s\n", jfk, jfk), fclose(f);
        CHECK(run("-q -f json '%s'", jfk) == 0);
        snprintf(single, sizeof single, "%s%s", g_out, g_out);
        CHECK(run("-q --batch list.txt -f json -o batch.json") == 0);
        CHECK_MSG(!strcmp(g_out, single), "batch json: %s", g_out);
        CHECK(file_is("batch.json", single));
        CHECK(run("-q --batch list.txt --batch-size 2 -f json") == 0);
        CHECK_MSG(!strcmp(g_out, single), "batch-size 2 json: %s", g_out);
        /* subtitles of several inputs on one stream would restart their
         * numbering: refused for a list of two, as on the command line */
        CHECK(run("-q --batch list.txt -f srt") == 1);
        CHECK_MSG(strstr(g_err, "--output-format srt") != NULL, "%s", g_err);
        f = fopen(list, "w");
        CHECK(f != NULL);
        if (f) fprintf(f, "# a comment\n  # another\n\n%s\n", jfk), fclose(f);
        CHECK(run("-q --batch list.txt -f srt") == 0);
        CHECK_MSG(!strncmp(g_out, "1\n00:00:0", 9) && !strstr(g_out, "[1/2]"), "%s", g_out);
    }

    /* --stream into a pipe: the lines are whole words; put together they
     * are the stream's final text (item 4) */
    {
        static char lines[sizeof g_out], final[sizeof g_out], want[sizeof g_out];
        CHECK(run("-q --stream -f json '%s'", jfk) == 0);
        const char *last = strstr(g_out, "{\"type\":\"final\"");
        CHECK(last != NULL);
        json_str(last ? last : "", "text", final, sizeof final);
        squash(final, want, sizeof want);
        CHECK(run("-q --stream '%s'", jfk) == 0);
        CHECK_MSG(strchr(g_out, '\n') != strrchr(g_out, '\n'), "one line only: %s", g_out);
        squash(g_out, lines, sizeof lines);
        CHECK_MSG(want[0] && !strcmp(lines, want), "piped '%s'\nfinal '%s'", lines, want);
    }
    /* --stream -f srt|vtt: the stream's cues from its start, on standard
     * output and in -o (item 3) */
    CHECK(run("-q --stream -f srt -o st.srt '%s'", jfk) == 0);
    CHECK_MSG(!strncmp(g_out, "1\n00:00:00,", 11) && strstr(g_out, "\n\n2\n"), "srt: %s", g_out);
    CHECK(file_is("st.srt", g_out));
    CHECK(run("-q --stream -f vtt '%s'", jfk) == 0);
    CHECK_MSG(!strncmp(g_out, "WEBVTT\n\n00:00:00.", 17) && strstr(g_out, " --> "), "vtt: %s",
              g_out);

    /* --batch-size: each file's timings line has the group's figures
     * shared out by length: non-zero, the same real-time factor (item 14) */
    {
        const char *klatt = TR_SOURCE_DIR "/samples/synth-heldout-klatt3.wav";
        CHECK(run("--batch-size 2 '%s' '%s'", jfk, klatt) == 0);
        int lines = 0;
        char rtf0[32] = "";
        for (const char *p = strstr(g_err, "timings:"); p; p = strstr(p + 1, "timings:")) {
            double enc = 0, total = 0, rtf = 0;
            const char *e = strstr(p, "encode="), *t = strstr(p, "total="), *r = strstr(p, "rtf=");
            CHECK_MSG(strstr(p, "batch of 2") != NULL, "%s", p);
            if (!e || !t || !r) break;
            enc = atof(e + 7), total = atof(t + 6), rtf = atof(r + 4);
            CHECK_MSG(enc > 0 && total > 0 && rtf > 0, "zero figures: %.60s", p);
            char rs[32];
            snprintf(rs, sizeof rs, "%.*s", (int)strcspn(r + 4, " \n"), r + 4);
            if (lines++ == 0) snprintf(rtf0, sizeof rtf0, "%s", rs);
            CHECK_MSG(!strcmp(rs, rtf0), "rtf %s vs %s", rs, rtf0);
        }
        CHECK_MSG(lines == 2, "%d timings lines: %s", lines, g_err);
    }

    /* --output-dir: made with its parents */
    CHECK(run("-q --output-dir subs/deep --output-format txt,srt '%s'", jfk) == 0);
    CHECK(file_is("subs/deep/jfk.txt", g_out));
    char srt[2048];
    snprintf(srt, sizeof srt, "%s/subs/deep/jfk.srt", g_dir);
    CHECK(access(srt, R_OK) == 0);
    /* two inputs with one stem: refused before any run, nothing written */
    char a[2048], b[2048];
    snprintf(a, sizeof a, "%s/a", g_dir);
    snprintf(b, sizeof b, "%s/b", g_dir);
    CHECK(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/x.wav' && cp '%s' '%s/x.wav'", jfk, a, jfk, b);
    CHECK(system(cmd) == 0);
    CHECK(run("-q --output-dir out2 a/x.wav b/x.wav") == 1);
    CHECK_MSG(strstr(g_err, "would write the same files") != NULL, "%s", g_err);
    CHECK(file_is("out2/x.txt", NULL));
    /* an output that is an input (the audio file a/x.json): refused, kept */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/x.json'", jfk, a);
    CHECK(system(cmd) == 0);
    CHECK(run("-q --output-dir a --output-format json a/x.json") == 1);
    CHECK_MSG(strstr(g_err, "is the input 'a/x.json', which the run reads") != NULL, "%s", g_err);
    char xj[2100];
    snprintf(xj, sizeof xj, "%s/x.json", a);
    struct stat sj, sw;
    CHECK(stat(xj, &sj) == 0 && stat(jfk, &sw) == 0 && sj.st_size == sw.st_size);
    CHECK(run("-q --stream --output-dir a --output-format json a/x.json") == 1);
    CHECK(stat(xj, &sj) == 0 && sj.st_size == sw.st_size);
    /* so are two such lines of a --batch list */
    static const char list[] = "a/x.wav\n# b/x.wav is the clash\nb/x.wav\n";
    write_file("clash.list", list, sizeof list - 1);
    CHECK(run("-q --output-dir out2 --batch clash.list") == 1);
    CHECK_MSG(strstr(g_err, "'a/x.wav' and 'b/x.wav' would write the same files") != NULL, "%s",
              g_err);
    CHECK(file_is("out2/x.txt", NULL));

    /* Ctrl-C during a run with -o over an existing file: the file is kept
     * whole; an interrupted run's partial output, if any, stays beside it
     * (a signal before the run, which ends the process, leaves nothing) */
    write_file("kept.txt", "OLD\n", 4);
    {
        char bash[4096];
        snprintf(
            bash, sizeof bash,
            "cd '%s' && python3 -c \"import wave; w = wave.open('%s/samples/whole-earth.wav'); "
            "o = wave.open('long.wav', 'wb'); o.setparams(w.getparams()); "
            "o.writeframes(w.readframes(w.getnframes()) * 20); o.close()\" && "
            "{ TRANSCRIBE_CPU=scalar '%s' -q --threads 1 -f srt -o kept.txt long.wav "
            ">/dev/null 2>&1 & p=$!; sleep 2; kill -INT $p; wait $p; echo \"rc=$?\"; ls "
            "kept.txt.partial-* "
            "2>/dev/null | wc -l; }",
            g_dir, TR_CORPUS_DIR, g_bin);
        CHECK(tr_cli_run(bash, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        CHECK_MSG(file_is("kept.txt", "OLD\n"), "kept.txt replaced; %s", g_out);
        /* aborted: the partial (if it printed any) beside; killed: nothing.
         * (28 min of audio on the scalar kernels, one thread: far from done
         * after 2 s on any machine) */
        CHECK_MSG(!strncmp(g_out, "rc=1\n", 5) || !strncmp(g_out, "rc=130\n0", 8), "%s", g_out);
    }

    /* --stream with -o over an existing file, ended by Ctrl-C: from a file
     * the input was cut, so the file is kept and the exit status says so
     * (it was 0); from standard input Ctrl-C is how a live input ends, so
     * the stream's whole output replaces the file */
    for (int live = 0; live <= 1; live++) {
        write_file("kept.srt", "OLD\n", 4);
        char bash[4096];
        snprintf(bash, sizeof bash,
                 "cd '%s' && { %s '%s' -q --stream --realtime -f srt -o kept.srt %s >/dev/null "
                 "2>&1 & p=$!; sleep 2.5; kill -INT $p; wait $p; echo \"rc=$?\"; }",
                 g_dir, live ? "cat '" TR_SOURCE_DIR "/samples/synth-heldout-klatt3.wav' |" : "",
                 g_bin, live ? "-" : "'" TR_SOURCE_DIR "/samples/synth-heldout-klatt3.wav'");
        CHECK(tr_cli_run(bash, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        if (live) {
            CHECK_MSG(!strncmp(g_out, "rc=0\n", 5) && !file_is("kept.srt", "OLD\n"), "%s", g_out);
        } else {
            CHECK_MSG(!strncmp(g_out, "rc=1\n", 5) && file_is("kept.srt", "OLD\n"), "%s", g_out);
        }
        snprintf(bash, sizeof bash, "rm -f '%s'/kept.srt.partial-*", g_dir);
        CHECK(system(bash) == 0);
    }

    /* a streamed file's subtitles: its stitched segments overlapped by up to
     * 76 ms and were not cut at 7 s; now every cue starts where the last one
     * ended at the earliest, and none passes 7 s where word times allow */
    CHECK(run("-q --stream -f srt '%s/samples/whole-earth.wav'", TR_CORPUS_DIR) == 0);
    {
        long prev_end = 0, longest = 0;
        int cues = 0;
        for (const char *q = strstr(g_out, " --> "); q; q = strstr(q + 5, " --> ")) {
            int h0, m0, s0, ms0, h1, m1, s1, ms1;
            if (sscanf(q - 12, "%d:%d:%d,%d --> %d:%d:%d,%d", &h0, &m0, &s0, &ms0, &h1, &m1, &s1,
                       &ms1) != 8)
                break;
            long t0 = ((h0 * 60L + m0) * 60 + s0) * 1000 + ms0;
            long t1 = ((h1 * 60L + m1) * 60 + s1) * 1000 + ms1;
            CHECK_MSG(t0 >= prev_end && t1 >= t0, "cue %d: %ld-%ld after %ld", cues + 1, t0, t1,
                      prev_end);
            if (t1 - t0 > longest) longest = t1 - t0;
            prev_end = t1;
            cues++;
        }
        CHECK_MSG(cues >= 12 && longest <= 7000, "%d cues, longest %ld ms", cues, longest);
    }

    /* a closed pipe: a message and exit 1 (the JSON of a long file is
     * more than the pipe holds) */
    char bash[9000];
    snprintf(bash, sizeof bash,
             "bash -c '\"%s\" -q -f json \"%s/samples/whole-earth.wav\" "
             "\"%s/samples/whole-earth.wav\" | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}'",
             g_bin, TR_CORPUS_DIR, TR_CORPUS_DIR);
    int rc = tr_cli_run(bash, g_out, sizeof g_out, g_err, sizeof g_err);
    CHECK_MSG(rc == 1 && strstr(g_err, "cannot write to standard output"), "rc %d: %s", rc, g_err);

    /* --vad on 3 s of silence */
    static unsigned char wav[44 + 96000];
    memcpy(wav, "RIFF", 4);
    unsigned int u = 36 + 96000;
    memcpy(wav + 4, &u, 4);
    memcpy(wav + 8, "WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0\x02\0\x10\0data", 32);
    u = 96000;
    memcpy(wav + 40, &u, 4);
    write_file("silence.wav", wav, sizeof wav);
    CHECK(run("--vad silence.wav") == 0);
    CHECK_MSG(strstr(g_err, "no speech found") != NULL, "%s", g_err);
    CHECK(run("-q -f json '%s'", jfk) == 0);
    const char *kind = strstr(g_out, "\"timestamps\":\"");
    char want[64] = "";
    if (kind) snprintf(want, sizeof want, "%.*s", (int)strcspn(kind + 14, "\"") + 15, kind);
    CHECK(run("-q --vad -f json silence.wav") == 0);
    CHECK_MSG(want[0] && strstr(g_out, want) && strstr(g_out, "\"text\":\"\""), "%s vs %s", g_out,
              want);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0);
    return TEST_DONE();
}
