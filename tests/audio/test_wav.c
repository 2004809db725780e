/* WAV decoding: every sample format, channel downmix, chunk layouts,
 * broken sizes and hostile headers; the public load wrapper. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "test_util.h"
#include "transcribe.h"
#include "wav_writer.h"

enum { FRAMES = 1001 }; /* odd, so 8/24-bit mono data chunks need a pad byte */

static double sig(int i, int ch) {
    return 0.9 * sin(0.013 * i * (ch + 1) + ch);
}

/* Builds a WAV from spec, decodes it and compares with the quantised,
 * channel-averaged signal. Returns the max abs error (or -1 on failure). */
static double roundtrip(const wav_spec *s, int frames, int expect_frames) {
    double *x = malloc(sizeof(double) * (size_t)frames * s->channels);
    for (int i = 0; i < frames; i++)
        for (int c = 0; c < s->channels; c++) x[i * s->channels + c] = sig(i, c);
    size_t size;
    uint8_t *b = wav_build(s, x, frames, &size);
    tr_audio a;
    transcribe_status st = tr_audio_decode_wav(b, size, &a);
    double err = -1;
    if (st == TRANSCRIBE_OK && a.n == expect_frames && a.rate == (int)s->rate) {
        err = 0;
        for (int i = 0; i < expect_frames; i++) {
            double e = 0;
            for (int c = 0; c < s->channels; c++) e += wav_quant(s, x[i * s->channels + c]);
            e /= s->channels;
            double d = fabs(e - a.pcm[i]);
            if (d > err) err = d;
        }
        tr_audio_free(&a);
    } else if (st == TRANSCRIBE_OK) {
        fprintf(stderr, "decoded %lld frames at %d Hz, expected %d at %u\n", (long long)a.n, a.rate,
                expect_frames, s->rate);
        tr_audio_free(&a);
    }
    free(b);
    free(x);
    return err;
}

static transcribe_status decode(const uint8_t *b, size_t n) {
    tr_audio a;
    transcribe_status st = tr_audio_decode_wav(b, n, &a);
    tr_audio_free(&a);
    return st;
}

static void test_formats(void) {
    static const struct {
        int tag, bits;
    } fm[] = {{1, 8}, {1, 16}, {1, 24}, {1, 32}, {3, 32}, {3, 64}};
    for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) {
        for (int ext = 0; ext < 2; ext++) {
            int chans[] = {1, 2, 5};
            for (int ci = 0; ci < 3; ci++) {
                wav_spec s = {.tag = fm[i].tag,
                              .bits = fm[i].bits,
                              .channels = chans[ci],
                              .rate = 22050,
                              .extensible = ext,
                              .data_size_override = -1};
                double e = roundtrip(&s, FRAMES, FRAMES);
                CHECK_MSG(e >= 0 && e < 1e-6, "tag %d bits %d ext %d ch %d: err %g", s.tag, s.bits,
                          ext, s.channels, e);
            }
        }
    }
    printf("formats: PCM 8/16/24/32, float 32/64, plain+extensible, 1/2/5 channels ok\n");
}

static void test_layouts(void) {
    wav_spec s = {.tag = 1, .bits = 24, .channels = 1, .rate = 16000, .data_size_override = -1};
    s.junk_before_fmt = 1;
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.junk_before_fmt = 0;
    s.data_before_fmt = 1; /* odd data chunk with pad byte, then fmt */
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.data_before_fmt = 0;
    s.bits = 16;
    s.data_size_override = 1000000; /* larger than the file: clamp + warn */
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.data_size_override = 0xFFFFFFFF; /* streaming writers */
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.data_size_override = 0; /* the other "unknown": the rest of the file, as a stream reads it */
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.data_size_override = 0x7FFFF000;
    CHECK(roundtrip(&s, FRAMES, FRAMES) >= 0);
    s.data_size_override = 2 * 500 + 1; /* not a multiple of block_align */
    CHECK(roundtrip(&s, FRAMES, 500) >= 0);
}

static void test_hostile(void) {
    wav_spec s = {.tag = 1, .bits = 16, .channels = 2, .rate = 16000, .data_size_override = -1};
    double x[8] = {0};
    size_t n;
    uint8_t *b = wav_build(&s, x, 4, &n);
    CHECK(decode(b, n) == TRANSCRIBE_OK);
    /* every truncation: OK only when whole frames remain, never a crash */
    int ok = 0;
    for (size_t k = 0; k < n; k++) {
        transcribe_status st = decode(b, k);
        CHECK(st == TRANSCRIBE_OK || st == TRANSCRIBE_ERR_INVALID_ARG);
        ok += st == TRANSCRIBE_OK;
    }
    CHECK(ok == 12); /* cuts inside the data keep 1..3 whole frames */
    free(b);
    CHECK(decode((const uint8_t *)"RIFF", 4) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(decode(NULL, 0) == TRANSCRIBE_ERR_INVALID_ARG);

    struct {
        const char *what;
        wav_spec s;
        int frames;
    } bad[] = {
        {"zero data", {1, 1, 16, 16000, 0, 0, 0, -1, 0}, 0},
        {"65 channels", {1, 65, 16, 16000, 0, 0, 0, -1, 0}, 2},
        {"rate 0", {1, 1, 16, 0, 0, 0, 0, -1, 0}, 2},
        {"rate 4e9", {1, 1, 16, 4000000000u, 0, 0, 0, -1, 0}, 2},
        {"block_align", {1, 2, 16, 16000, 0, 0, 0, -1, 2}, 2},
        {"12 bits", {1, 1, 12, 16000, 0, 0, 0, -1, 0}, 2},
        {"float 16", {3, 1, 16, 16000, 0, 0, 0, -1, 0}, 2},
        {"tag 0x55", {0x55, 1, 16, 16000, 0, 0, 0, -1, 0}, 2},
        {"0 channels", {1, 0, 16, 16000, 0, 0, 0, -1, 0}, 2},
    };
    double z[1024] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = wav_build(&bad[i].s, z, bad[i].frames, &n);
        transcribe_status st = decode(b, n);
        CHECK_MSG(st == TRANSCRIBE_ERR_INVALID_ARG, "%s: status %d", bad[i].what, (int)st);
        free(b);
    }
    /* unknown extensible GUID */
    s.extensible = 1;
    b = wav_build(&s, x, 4, &n);
    b[12 + 8 + 24 + 2] ^= 0x5a; /* GUID tail byte */
    CHECK(decode(b, n) == TRANSCRIBE_ERR_INVALID_ARG);
    free(b);
    /* fmt chunk size beyond the file, and no data chunk */
    s.extensible = 0;
    b = wav_build(&s, x, 4, &n);
    uint8_t save[4];
    memcpy(save, b + 16, 4);
    b[16] = 0xff;
    b[17] = 0xff;
    CHECK(decode(b, n) == TRANSCRIBE_ERR_INVALID_ARG);
    memcpy(b + 16, save, 4);
    memcpy(b + 36, "dat?", 4);
    CHECK(decode(b, n) == TRANSCRIBE_ERR_INVALID_ARG);
    free(b);
}

/* RF64: "RF64" magic, ds64 chunk with the 64-bit sizes, 0xFFFFFFFF in the
 * 32-bit size fields. */
static void test_rf64(void) {
    wbuf w = {0};
    wb_put(&w, "RF64", 4);
    wb_u32(&w, 0xFFFFFFFFu);
    wb_put(&w, "WAVEds64", 8);
    wb_u32(&w, 28);
    wb_u32(&w, 0); /* riff size 64 (unused) */
    wb_u32(&w, 0);
    wb_u32(&w, 6); /* data size 64: 3 frames of 16-bit mono */
    wb_u32(&w, 0);
    wb_u32(&w, 3); /* sample count */
    wb_u32(&w, 0);
    wb_u32(&w, 0); /* table length */
    wav_spec s = {.tag = 1, .bits = 16, .channels = 1, .rate = 16000};
    wav_fmt_chunk(&w, &s);
    wb_put(&w, "data", 4);
    wb_u32(&w, 0xFFFFFFFFu);
    wb_u16(&w, 0x4000);
    wb_u16(&w, 0xC000);
    wb_u16(&w, 0x0001);
    wb_put(&w, "LIST", 4); /* trailing chunk the 64-bit size must exclude */
    wb_u32(&w, 4);
    wb_put(&w, "INFO", 4);
    tr_audio a;
    CHECK(tr_audio_decode_wav(w.b, w.n, &a) == TRANSCRIBE_OK && a.n == 3);
    if (a.pcm) {
        CHECK_NEAR(a.pcm[0], 0.5, 1e-9);
        CHECK_NEAR(a.pcm[1], -0.5, 1e-9);
    }
    tr_audio_free(&a);
    free(w.b);
}

static void test_g711(void) {
    /* µ-law 0xFF and A-law 0xD5 are (near) zero; 0x80 / 0xAA are large. */
    uint8_t img[64];
    wbuf w = {0};
    wb_put(&w, "RIFF", 4);
    wb_u32(&w, 0);
    wb_put(&w, "WAVEfmt ", 8);
    wb_u32(&w, 16);
    wb_u16(&w, 7);
    wb_u16(&w, 1);
    wb_u32(&w, 8000);
    wb_u32(&w, 8000);
    wb_u16(&w, 1);
    wb_u16(&w, 8);
    wb_put(&w, "data", 4);
    wb_u32(&w, 2);
    wb_u8(&w, 0xFF);
    wb_u8(&w, 0x80);
    memcpy(img, w.b, w.n);
    tr_audio a;
    CHECK(tr_audio_decode_wav(img, w.n, &a) == TRANSCRIBE_OK && a.n == 2);
    if (a.pcm) {
        CHECK_NEAR(a.pcm[0], 0.0, 1e-9);
        CHECK_NEAR(a.pcm[1], 32124.0 / 32768.0, 1e-6);
    }
    tr_audio_free(&a);
    img[20] = 6; /* A-law */
    img[44] = 0xD5;
    img[45] = 0xAA;
    CHECK(tr_audio_decode_wav(img, w.n, &a) == TRANSCRIBE_OK && a.n == 2);
    if (a.pcm) {
        CHECK_NEAR(a.pcm[0], 8.0 / 32768.0, 1e-9);
        CHECK_NEAR(a.pcm[1], 32256.0 / 32768.0, 1e-6);
    }
    tr_audio_free(&a);
    free(w.b);
}

static void test_files(void) {
    float *pcm = NULL;
    int n = -1;
    CHECK(transcribe_audio_load_file(TR_BINARY_DIR "/no/such/file.wav", 0, &pcm, &n) ==
          TRANSCRIBE_ERR_FILE_NOT_FOUND);
    CHECK(pcm == NULL && n == 0);
    CHECK(transcribe_audio_load_file(NULL, 0, &pcm, &n) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 0, &pcm, &n) ==
          TRANSCRIBE_OK);
    CHECK(n == 176000);
    transcribe_audio_free(pcm);
    CHECK(transcribe_audio_load_file(TR_CORPUS_DIR "/samples/ja.wav", 16000, &pcm, &n) ==
          TRANSCRIBE_OK);
    CHECK(n > 100000);
    transcribe_audio_free(pcm);
    /* resampled on load: 11 s at 8 kHz */
    CHECK(transcribe_audio_load_file(TR_CORPUS_DIR "/samples/jfk.wav", 8000, &pcm, &n) ==
          TRANSCRIBE_OK);
    CHECK(n == 88000);
    transcribe_audio_free(pcm);
    /* a WAV with a misleading extension, and garbage with a .wav name */
    wav_spec s = {.tag = 1, .bits = 16, .channels = 1, .rate = 44100, .data_size_override = -1};
    double x[4410];
    for (int i = 0; i < 4410; i++) x[i] = sig(i, 0);
    size_t size;
    uint8_t *b = wav_build(&s, x, 4410, &size);
    FILE *f = fopen(TR_BINARY_DIR "/audio_test_wav.flac", "wb");
    fwrite(b, 1, size, f);
    fclose(f);
    free(b);
    CHECK(transcribe_audio_load_file(TR_BINARY_DIR "/audio_test_wav.flac", 16000, &pcm, &n) ==
          TRANSCRIBE_OK);
    CHECK(n == 1600);
    transcribe_audio_free(pcm);
    f = fopen(TR_BINARY_DIR "/audio_test_garbage.wav", "wb");
    fputs("this is not audio at all, just text in a file", f);
    fclose(f);
    CHECK(transcribe_audio_load_file(TR_BINARY_DIR "/audio_test_garbage.wav", 0, &pcm, &n) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    remove(TR_BINARY_DIR "/audio_test_wav.flac");
    remove(TR_BINARY_DIR "/audio_test_garbage.wav");
}

int main(void) {
    test_formats();
    test_layouts();
    test_hostile();
    test_g711();
    test_rf64();
    test_files();
    return TEST_DONE();
}
