/* `transcribe --stream` end to end with the bundled model: a WAV file, a
 * FIFO, WAV and raw PCM on standard input, real-time pacing, JSON events,
 * and the usage errors; and --batch-size over several inputs. A short clip streams to exactly the
 * offline text (the stream's last decode sees the whole clip). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "test_files.h"
#include "test_util.h"
#include "transcribe.h"

#define MODEL TR_SOURCE_DIR "/models/parakeet-ctc-synth-en.gguf"
#define WAV   TR_SOURCE_DIR "/tests/data/bundled/t003-benjamin.wav"

static char g_out[65536], g_err[65536];
static const char *g_bin;

static int run(const char *fmt, const char *a, const char *b) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, fmt, g_bin, a ? a : "", b ? b : "");
    return tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
}

/* The JSON string after "key": in s (simple escapes), appended to out;
 * false when the key is missing. */
static bool json_str_append(const char *s, const char *key, char *out, size_t cap) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":\"", key);
    const char *p = strstr(s, k);
    if (!p) return false;
    p += strlen(k);
    size_t n = strlen(out);
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && p[1]) p++;
        out[n++] = *p;
    }
    out[n] = 0;
    return *p == '"';
}

/* The appended lines joined by single spaces (the text they carry). */
static void join_lines(const char *in, char *out, size_t cap) {
    out[0] = 0;
    size_t n = 0;
    for (const char *p = in; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0 && n + len + 2 < cap) {
            if (n) out[n++] = ' ';
            memcpy(out + n, p, len);
            n += len;
            out[n] = 0;
        }
        p += len + (e ? 1 : 0);
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || !tr_test_file_exists(MODEL) || !tr_test_file_exists(WAV)) {
        printf("SKIP: transcribe binary, bundled model or audio missing\n");
        return 0;
    }
    g_bin = argv[1];
    char offline[4096], text[8192];
    CHECK(run("%s -q -m " MODEL " %s", WAV, NULL) == 0);
    size_t first_line = strcspn(g_out, "\n");
    if (first_line >= sizeof offline) first_line = sizeof offline - 1;
    memcpy(offline, g_out, first_line);
    offline[first_line] = 0;
    CHECK(offline[0] != 0);
    printf("offline: %s\n", offline);

    /* A file. */
    CHECK(run("%s -q --stream -m " MODEL " %s", WAV, NULL) == 0);
    join_lines(g_out, text, sizeof text);
    CHECK_MSG(strcmp(text, offline) == 0, "file: '%s' vs '%s'", text, offline);

    /* --diarizer labels whole runs; a stream has no speakers: the flag is
     * ignored with a warning (the file is not even opened), the text is
     * the stream's. */
    CHECK(run("%s --stream --diarizer /nonexistent/diarizer.gguf -m " MODEL " %s", WAV, NULL) == 0);
    CHECK_MSG(strstr(g_err, "[warn] --diarizer: a streamed run") && !strstr(g_err, "error"), "%s",
              g_err);
    join_lines(g_out, text, sizeof text);
    CHECK_MSG(strcmp(text, offline) == 0, "--diarizer: '%s' vs '%s'", text, offline);

    /* WAV on standard input, fed as it arrives, in 30 ms reads. */
    {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "( cat '%s' | '%s' -q --stream --stream-chunk-ms 30 -m '%s' - )",
                 WAV, g_bin, MODEL);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        join_lines(g_out, text, sizeof text);
        CHECK_MSG(strcmp(text, offline) == 0, "stdin: '%s' vs '%s' (%s)", text, offline, g_err);
    }

    /* Raw s16le on standard input. */
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file(WAV, 16000, &pcm, &n) == TRANSCRIBE_OK);
    char raw[1024], raw32[1024], fifo[1024];
    snprintf(raw, sizeof raw, "%s/stream_cli_%d.s16", TR_BINARY_DIR, (int)getpid());
    snprintf(raw32, sizeof raw32, "%s/stream_cli_%d.f32", TR_BINARY_DIR, (int)getpid());
    snprintf(fifo, sizeof fifo, "%s/stream_cli_%d.fifo", TR_BINARY_DIR, (int)getpid());
    FILE *f = fopen(raw, "wb"), *f32 = fopen(raw32, "wb");
    for (int i = 0; pcm && f && f32 && i < n; i++) {
        float v = pcm[i] * 32768.0f;
        short s = (short)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
        fwrite(&s, sizeof s, 1, f);
        if (i % 2 == 0) fwrite(&pcm[i], sizeof pcm[i], 1, f32); /* 8 kHz */
    }
    if (f) fclose(f);
    if (f32) fclose(f32);
    transcribe_audio_free(pcm);
    {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "( cat '%s' | '%s' -q --stream --raw-format s16le --rate 16000 -m '%s' - )", raw,
                 g_bin, MODEL);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        join_lines(g_out, text, sizeof text);
        CHECK_MSG(strcmp(text, offline) == 0, "raw s16le: '%s' vs '%s'", text, offline);
        /* Raw float at 8 kHz: resampled on the way in; some text comes out. */
        snprintf(cmd, sizeof cmd,
                 "( cat '%s' | '%s' -q --stream --raw-format f32le --rate 8000 -m '%s' - )", raw32,
                 g_bin, MODEL);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        printf("raw f32le 8 kHz: %s", g_out);
        CHECK(g_out[0] != 0);
        /* Standard input that is not WAV needs --raw-format. */
        snprintf(cmd, sizeof cmd, "( cat '%s' | '%s' -q --stream -m '%s' - )", raw, g_bin, MODEL);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 1);
        CHECK(strstr(g_err, "--raw-format") != NULL);
        /* The first Ctrl-C while standard input has not started: the CLI
         * stops then (it waited for the writer's end and blamed the input) */
        snprintf(cmd, sizeof cmd,
                 "( sleep 5 2>/dev/null | '%s' --stream -m '%s' - & p=$!; sleep 1; kill -INT $p; "
                 "wait $p )",
                 g_bin, MODEL);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 1);
        CHECK_MSG(strstr(g_err, "error: -: interrupted before any audio arrived"), "%s", g_err);
        /* Raw PCM with no sample (an empty pipe, half a frame) is an error, as
         * a WAV with none is (the input rule) */
        for (int bytes = 0; bytes <= 1; bytes++) {
            snprintf(cmd, sizeof cmd,
                     "( head -c %d /dev/zero | '%s' -q --stream --raw-format s16le -m '%s' - )",
                     bytes, g_bin, MODEL);
            CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 1);
            CHECK_MSG(strstr(g_err, "error: cannot read audio '-': standard input has no samples"),
                      "%d bytes: %s", bytes, g_err);
        }
    }

    /* A FIFO, written while the CLI reads it; real-time pace. */
    if (mkfifo(fifo, 0600) == 0) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "( cat '%s' > '%s' & '%s' -q --stream --realtime -m '%s' '%s'; rc=$?; wait; "
                 "exit $rc )",
                 WAV, fifo, g_bin, MODEL, fifo);
        CHECK(tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err) == 0);
        join_lines(g_out, text, sizeof text);
        CHECK_MSG(strcmp(text, offline) == 0, "fifo: '%s' vs '%s' (%s)", text, offline, g_err);
        remove(fifo);
    } else {
        printf("SKIP fifo: mkfifo failed\n");
    }

    /* JSON events: partial lines, then a final line with the whole text. */
    CHECK(run("%s -q --stream -f json -m " MODEL " %s", WAV, NULL) == 0);
    CHECK(strncmp(g_out, "{\"type\":\"partial\"", 17) == 0);
    const char *fin = strstr(g_out, "{\"type\":\"final\"");
    CHECK(fin != NULL);
    if (fin) {
        char want[4200];
        snprintf(want, sizeof want, "\"text\":\"%s\"}", offline);
        CHECK_MSG(strstr(fin, want) != NULL, "final: %s", fin);
    }

    /* JSON "committed" is the library's commit, which may end inside a word
     * (README: the next piece goes on with it): the pieces, concatenated,
     * are the final text. The tiny Moonshine Streaming model commits
     * "... over laz" then "y dogs to" then "day!". */
    {
        const char *mss = TR_SOURCE_DIR
            "/tests/data/moonshine_streaming/tiny/moonshine-streaming-tiny-ref-Q8_0.gguf";
        const char *clip = TR_SOURCE_DIR "/tests/data/moonshine_streaming/clip.wav";
        if (tr_test_file_exists(mss) && tr_test_file_exists(clip)) {
            CHECK(run("%s -q --stream -f json -m %s %s", mss, clip) == 0);
            static char joined[8192], final_text[8192];
            joined[0] = final_text[0] = 0;
            int pieces = 0, lines = 0;
            for (const char *l = g_out; *l;) {
                const char *e = strchr(l, '\n');
                char line[8192];
                size_t len = e ? (size_t)(e - l) : strlen(l);
                if (len >= sizeof line) len = sizeof line - 1;
                memcpy(line, l, len);
                line[len] = 0;
                size_t before = strlen(joined);
                CHECK(json_str_append(line, "committed", joined, sizeof joined));
                if (strlen(joined) > before) pieces++;
                if (strstr(line, "{\"type\":\"final\""))
                    json_str_append(line, "text", final_text, sizeof final_text);
                lines++;
                l += len + (e ? 1 : 0);
            }
            CHECK_MSG(pieces >= 2 && final_text[0], "%d pieces in %d lines: %s", pieces, lines,
                      g_out);
            CHECK_MSG(strcmp(joined, final_text) == 0, "committed pieces '%s' vs final '%s'",
                      joined, final_text);
        } else {
            printf("SKIP committed pieces: no tiny Moonshine Streaming model\n");
        }
    }

    /* --batch-size groups several inputs into transcribe_run_batch calls:
     * the same output as one run per file. */
    {
        static char single[sizeof g_out];
        char files[2048];
        snprintf(files, sizeof files, "%s %s/tests/data/bundled/t000-m7.wav %s", WAV, TR_SOURCE_DIR,
                 WAV);
        CHECK(run("%s -q -m " MODEL " %s", files, NULL) == 0);
        memcpy(single, g_out, sizeof single);
        CHECK(run("%s -q --batch-size 2 -m " MODEL " %s", files, NULL) == 0);
        CHECK_MSG(strcmp(g_out, single) == 0, "batched '%s' vs single '%s'", g_out, single);
        CHECK(strstr(g_out, offline) != NULL);
    }

    /* A 44.1 kHz WAV: the library's sinc resampler, streamed, gives the
     * samples a whole-file load gives, so the text is the offline run's. */
    {
        char wav44[1024];
        snprintf(wav44, sizeof wav44, "%s/stream_cli_%d_44k.wav", TR_BINARY_DIR, (int)getpid());
        float *p16 = NULL, *p44 = NULL;
        int n16 = 0;
        int64_t n44 = 0, m = 0;
        struct transcribe_resampler *rs = NULL;
        CHECK(transcribe_audio_load_file(WAV, 16000, &p16, &n16) == TRANSCRIBE_OK);
        CHECK(transcribe_resampler_init(16000, 44100, &rs) == TRANSCRIBE_OK);
        p44 = malloc((size_t)(transcribe_resampler_max_out(rs, n16) + 64) * sizeof *p44);
        CHECK(p44 && transcribe_resampler_feed(rs, p16, n16, p44, &n44) == TRANSCRIBE_OK);
        CHECK(transcribe_resampler_finish(rs, p44 + n44, &m) == TRANSCRIBE_OK);
        n44 += m;
        transcribe_resampler_free(rs);
        FILE *w = fopen(wav44, "wb");
        uint32_t bytes = (uint32_t)n44 * 2u,
                 hdr[] = {36 + bytes, 16, 0x00010001u, 44100, 88200, 0x00100002u, bytes};
        if (w && p44) {
            fwrite("RIFF", 1, 4, w), fwrite(&hdr[0], 4, 1, w), fwrite("WAVEfmt ", 1, 8, w);
            fwrite(&hdr[1], 4, 5, w), fwrite("data", 1, 4, w), fwrite(&hdr[6], 4, 1, w);
            for (int64_t i = 0; i < n44; i++) {
                float v = p44[i] * 32768.0f;
                short q = (short)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
                fwrite(&q, sizeof q, 1, w);
            }
            fclose(w);
        }
        transcribe_audio_free(p16);
        free(p44);
        char off44[4096];
        CHECK(run("%s -q -m " MODEL " %s", wav44, NULL) == 0);
        snprintf(off44, sizeof off44, "%.*s", (int)strcspn(g_out, "\n"), g_out);
        CHECK(run("%s -q --stream -m " MODEL " %s", wav44, NULL) == 0);
        join_lines(g_out, text, sizeof text);
#ifndef TR_HAVE_SOXR /* with libsoxr the whole-file load resamples differently */
        CHECK_MSG(strcmp(text, off44) == 0, "44.1 kHz: '%s' vs '%s'", text, off44);
#endif
        CHECK(text[0] != 0);
        remove(wav44);
    }

    /* Headers the library's parser refuses (issue 36): exit 1, said why. */
    {
        static const struct {
            const char *what;
            uint32_t rate;
            uint16_t align;
            bool data;
        } bad[] = {{"rate 1536001", 1536001, 2, true},
                   {"rate 2147483647", 2147483647u, 2, true},
                   {"block_align 0", 16000, 0, true},
                   {"no data chunk", 16000, 2, false}};
        char path[1024];
        snprintf(path, sizeof path, "%s/stream_cli_%d_bad.wav", TR_BINARY_DIR, (int)getpid());
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            FILE *w = fopen(path, "wb");
            if (!w) continue;
            uint32_t u32[] = {bad[i].data ? 44u + 64u : 36u, 16, bad[i].rate, bad[i].rate * 2u, 64};
            uint16_t fmt[] = {1, 1}, tail[] = {bad[i].align, 16};
            fwrite("RIFF", 1, 4, w), fwrite(&u32[0], 4, 1, w), fwrite("WAVEfmt ", 1, 8, w);
            fwrite(&u32[1], 4, 1, w), fwrite(fmt, 2, 2, w), fwrite(&u32[2], 4, 2, w);
            fwrite(tail, 2, 2, w);
            if (bad[i].data) {
                static const char zeros[64];
                fwrite("data", 1, 4, w), fwrite(&u32[4], 4, 1, w), fwrite(zeros, 1, 64, w);
            }
            fclose(w);
            int rc = run("%s -q --stream -m " MODEL " %s", path, NULL);
            CHECK_MSG(rc == 1 && strstr(g_err, "WAV header"), "%s: rc %d, %s", bad[i].what, rc,
                      g_err);
            char cmd[4096];
            snprintf(cmd, sizeof cmd, "( cat '%s' | '%s' -q --stream -m '%s' - )", path, g_bin,
                     MODEL);
            rc = tr_cli_run(cmd, g_out, sizeof g_out, g_err, sizeof g_err);
            CHECK_MSG(rc == 1 && strstr(g_err, "WAV header"), "%s on stdin: rc %d, %s", bad[i].what,
                      rc, g_err);
        }
        remove(path);
    }

    /* Usage errors. */
    CHECK(run("%s -q --stream -m " MODEL " %s %s", WAV, WAV) == 1);
    CHECK(run("%s -q --stream --raw-format s24 -m " MODEL " %s", WAV, NULL) == 1);
    CHECK(run("%s -q --rate 8000 -m " MODEL " %s", WAV, NULL) == 1);
    remove(raw);
    remove(raw32);
    return TEST_DONE();
}
