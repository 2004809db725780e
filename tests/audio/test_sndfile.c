/* Compressed formats through libsndfile: FLAC, Ogg Vorbis, Ogg Opus and
 * MP3 files are written at test time (libsndfile encodes all four), then
 * loaded by content (the file names lie about the format). Lossless FLAC
 * must match to 16-bit precision; lossy codecs must keep the test tone.
 * Without libsndfile the loader must name the format it cannot read. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "test_util.h"

#ifdef TR_HAVE_SNDFILE
#include <sndfile.h>
#endif

static char last_error[1024];
static void on_log(transcribe_log_level level, const char *msg, void *ud) {
    (void)ud;
    if (level == TRANSCRIBE_LOG_LEVEL_ERROR && !last_error[0])
        snprintf(last_error, sizeof last_error, "%s", msg);
    fprintf(stderr, "[log %d] %s\n", (int)level, msg);
}

#ifdef TR_HAVE_SNDFILE
#define TONE_HZ 440.0
static double tone(int i, int rate) {
    return 0.5 * sin(2 * M_PI * TONE_HZ * i / rate);
}

/* Fraction of the signal's energy at TONE_HZ (Goertzel over the middle). */
static double tone_fraction(const float *x, int64_t n, int rate) {
    int64_t a = n / 4, b = 3 * n / 4;
    double w = 2 * M_PI * TONE_HZ / rate, re = 0, im = 0, e = 0;
    for (int64_t i = a; i < b; i++) {
        re += x[i] * cos(w * i);
        im -= x[i] * sin(w * i);
        e += (double)x[i] * x[i];
    }
    double len = (double)(b - a);
    return e > 0 ? 2 * (re * re + im * im) / len / e : 0;
}

/* Writes `frames` of a stereo tone (same in both channels, opposite
 * 0.1-amplitude hum, so the mono average is the tone). 0 when the
 * installed libsndfile cannot encode this format. */
static int write_file(const char *path, int format, int rate, int frames) {
    SF_INFO info = {.samplerate = rate, .channels = 2, .format = format};
    if (!sf_format_check(&info)) return 0;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    float *buf = malloc(sizeof(float) * 2 * (size_t)frames);
    for (int i = 0; i < frames; i++) {
        double hum = 0.1 * sin(2 * M_PI * 3000.0 * i / rate);
        buf[2 * i] = (float)(tone(i, rate) + hum);
        buf[2 * i + 1] = (float)(tone(i, rate) - hum);
    }
    sf_count_t w = sf_writef_float(sf, buf, frames);
    sf_close(sf);
    free(buf);
    return w == frames;
}

static void check_codec(const char *name, int format, int rate, int lossless) {
    char path[1024];
    snprintf(path, sizeof path, "%s/audio_test_%s.wav", TR_BINARY_DIR, name); /* lying name */
    int frames = rate;                                                        /* 1 s */
    if (!write_file(path, format, rate, frames)) {
        printf("%s: this libsndfile cannot encode it, skipped\n", name);
        return;
    }
    FILE *f = fopen(path, "rb");
    unsigned char head[4] = {0};
    CHECK(f && fread(head, 1, 4, f) == 4);
    if (f) fclose(f);
    tr_audio a;
    transcribe_status st = tr_audio_load_file(path, 0, &a);
    CHECK_MSG(st == TRANSCRIBE_OK, "%s: status %d", name, (int)st);
    if (st == TRANSCRIBE_OK) {
        CHECK(a.rate == rate);
        /* codecs may add priming/padding samples, never lose much */
        CHECK_MSG(a.n >= frames * 95 / 100 && a.n <= frames + rate / 5, "%s: %lld samples", name,
                  (long long)a.n);
        double frac = tone_fraction(a.pcm, a.n, rate);
        printf("%s (%.4s...): %lld samples at %d Hz, tone energy fraction %.4f\n", name,
               (const char *)head, (long long)a.n, a.rate, frac);
        CHECK_MSG(frac > 0.95, "%s: tone fraction %g", name, frac);
        if (lossless) {
            double err = 0;
            for (int i = 0; i < frames && i < a.n; i++) {
                double d = fabs(a.pcm[i] - tone(i, rate));
                if (d > err) err = d;
            }
            CHECK_MSG(err < 2.0 / 32768, "%s: max err %g", name, err);
        }
        tr_audio_free(&a);
        /* resampled on load */
        st = tr_audio_load_file(path, 16000, &a);
        CHECK(st == TRANSCRIBE_OK && a.rate == 16000);
        tr_audio_free(&a);
    }
    remove(path);
}
#endif

int main(void) {
    transcribe_log_set(on_log, NULL);
#ifdef TR_HAVE_SNDFILE
    CHECK(tr_audio_have_sndfile());
    check_codec("flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 1);
    check_codec("vorbis", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 44100, 0);
    check_codec("opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 0);
    check_codec("mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, 0);
    /* a committed MP3 (written by libsndfile+LAME), so decoding is tested
     * even where the installed libsndfile cannot encode MP3 */
    tr_audio m;
    CHECK(tr_audio_load_file(TR_SOURCE_DIR "/tests/data/audio/tone440_22k.mp3", 0, &m) ==
          TRANSCRIBE_OK);
    if (m.pcm) {
        double frac = tone_fraction(m.pcm, m.n, m.rate);
        printf("committed mp3: %lld samples at %d Hz, tone energy fraction %.4f\n", (long long)m.n,
               m.rate, frac);
        CHECK(m.rate == 22050 && m.n >= 11025 * 95 / 100 && m.n <= 11025 + 4410);
        CHECK(frac > 0.95);
    }
    tr_audio_free(&m);
    /* a FLAC file cut in half (a download that stopped): refused with the
     * reason, not transcribed in part */
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/audio_test_cut.flac", TR_BINARY_DIR);
        if (write_file(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 32000)) {
            FILE *f = fopen(path, "rb");
            static unsigned char whole[1 << 20];
            size_t len = f ? fread(whole, 1, sizeof whole, f) : 0;
            if (f) fclose(f);
            CHECK(len > 1000);
            tr_audio c;
            last_error[0] = 0;
            CHECK(tr_audio_decode_memory(whole, len / 2, &c) == TRANSCRIBE_ERR_INVALID_ARG);
            CHECK_MSG(strstr(last_error, "the FLAC file is cut short or damaged") &&
                          strstr(last_error, "of the 2.00 s its header gives"),
                      "%s", last_error);
            CHECK(tr_audio_decode_memory(whole, len, &c) == TRANSCRIBE_OK && c.n == 32000);
            tr_audio_free(&c);
        } else {
            printf("cut flac: this libsndfile cannot encode FLAC, skipped\n");
        }
        remove(path);
    }
    /* corrupt stream behind a valid magic: clean error, no crash */
    static const unsigned char junk[] = "fLaC\0\0\0\x22garbagegarbagegarbage";
    tr_audio a;
    CHECK(tr_audio_decode_memory(junk, sizeof junk, &a) == TRANSCRIBE_ERR_INVALID_ARG);
    static const unsigned char ogg[] = "OggS\0\x02 not really an ogg page";
    CHECK(tr_audio_decode_memory(ogg, sizeof ogg, &a) == TRANSCRIBE_ERR_INVALID_ARG);
    /* not audio at all (a text file): says what this build reads, not
     * "cannot decode unknown data" */
    static const char text[] = "hello, this is a text file\n";
    last_error[0] = 0;
    CHECK(tr_audio_decode_memory(text, sizeof text - 1, &a) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK_MSG(strstr(last_error, "not audio this build reads (WAV, FLAC, MP3") != NULL, "%s",
              last_error);
#else
    CHECK(!tr_audio_have_sndfile());
    static const unsigned char flac[] = "fLaC\0\0\0\x22 rest of a flac file";
    tr_audio a;
    last_error[0] = 0;
    CHECK(tr_audio_decode_memory(flac, sizeof flac, &a) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(strstr(last_error, "FLAC") != NULL);
    printf("no libsndfile: \"%s\"\n", last_error);
#endif
    /* empty input, in memory and as a file: said so, not "format not
     * recognised" by a codec */
    {
        tr_audio e;
        static const unsigned char none[1] = {0};
        last_error[0] = 0;
        CHECK(tr_audio_decode_memory(none, 0, &e) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK_MSG(strstr(last_error, "empty (0 bytes)") != NULL, "%s", last_error);
        char path[1024];
        snprintf(path, sizeof path, "%s/audio_test_empty.wav", TR_BINARY_DIR);
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) fclose(f);
        last_error[0] = 0;
        CHECK(tr_audio_load_file(path, 16000, &e) == TRANSCRIBE_ERR_INVALID_ARG);
        CHECK(e.pcm == NULL);
        CHECK_MSG(strstr(last_error, "empty (0 bytes)") != NULL, "%s", last_error);
        remove(path);
    }
    CHECK(tr_audio_detect("ID3\x04", 4) == TR_AUDIO_FMT_MP3);
    CHECK(tr_audio_detect("\xff\xfb\x90\x64", 4) == TR_AUDIO_FMT_MP3);
    CHECK(tr_audio_detect("OggS", 4) == TR_AUDIO_FMT_OGG);
    CHECK(tr_audio_detect("RIFF\0\0\0\0WAVE", 12) == TR_AUDIO_FMT_WAV);
    CHECK(tr_audio_detect("RIFF\0\0\0\0AVI ", 12) == TR_AUDIO_FMT_UNKNOWN);
    transcribe_log_set(NULL, NULL);
    return TEST_DONE();
}
