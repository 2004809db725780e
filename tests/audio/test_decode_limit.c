/* Decode amplification: a small file that holds hours of audio (a WAV at a
 * low rate, compressed silence) is refused by the length limit
 * (transcribe_audio_load_file_max) before it is decoded or resampled to
 * that length: from the header when it tells the length, while decoding
 * when it does not. Files are written at test time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "test_util.h"
#include "transcribe.h"

#ifdef TR_HAVE_SNDFILE
#include <sndfile.h>
#endif

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* An 8-bit mono PCM WAV of `seconds` at `rate` Hz (one byte a sample). */
static int write_wav8(const char *path, int rate, int seconds) {
    uint32_t n = (uint32_t)rate * (uint32_t)seconds;
    unsigned char h[44];
    memcpy(h, "RIFF", 4), put32(h + 4, 36 + n), memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16);
    h[20] = 1, h[21] = 0, h[22] = 1, h[23] = 0; /* PCM, mono */
    put32(h + 24, (uint32_t)rate), put32(h + 28, (uint32_t)rate);
    h[32] = 1, h[33] = 0, h[34] = 8, h[35] = 0; /* block_align 1, 8 bits */
    memcpy(h + 36, "data", 4), put32(h + 40, n);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    for (uint32_t i = 0; ok && i < n; i++) ok = fputc(128 + (int)(i % 7), f) != EOF;
    return fclose(f) == 0 && ok;
}

static void check_wav(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/low-rate.wav", dir);
    CHECK(write_wav8(path, 1000, 20)); /* 20 KB, 20 s: 320 000 samples at 16 kHz */
    float *pcm = (float *)1;
    int n = -1;
    CHECK(transcribe_audio_load_file_max(path, 16000, 10000, &pcm, &n) ==
          TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(pcm == NULL && n == 0);
    CHECK(transcribe_audio_load_file_max(path, 16000, 20000, &pcm, &n) == TRANSCRIBE_OK);
    CHECK(n == 320000);
    transcribe_audio_free(pcm);
    CHECK(transcribe_audio_load_file_max(path, 16000, 0, &pcm, &n) == TRANSCRIBE_OK);
    CHECK(n == 320000); /* 0: no limit */
    transcribe_audio_free(pcm);
    unlink(path);
}

/* A WAV that is too long is refused from its header: none of its samples
 * are decoded. 8 MB of 8-bit samples at 1000 Hz (8000 s) would decode to
 * 32 MB of floats (512 MB at 16 kHz); the peak resident size may grow by
 * the file's bytes (read whole) but not by its decoding. */
static void check_wav_not_decoded(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/long-8bit.wav", dir);
    CHECK(write_wav8(path, 1000, 8000));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long before = ru.ru_maxrss;
    float *pcm = (float *)1;
    int n = -1;
    CHECK(transcribe_audio_load_file_max(path, 16000, 3600 * 1000, &pcm, &n) ==
          TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(pcm == NULL && n == 0);
    getrusage(RUSAGE_SELF, &ru);
    CHECK_MSG(ru.ru_maxrss - before < 24 * 1024, "peak grew by %ld kB",
              ru.ru_maxrss - before); /* the 8 MB file, not 32 MB of floats */
    unlink(path);
}

#ifdef TR_HAVE_SNDFILE
/* `seconds` of silence as 16-bit FLAC at 8 kHz (a few KB). */
static int write_flac_silence(const char *path, int seconds) {
    SF_INFO info = {.samplerate = 8000, .channels = 1, .format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return 0;
    static short zeros[8000];
    int ok = 1;
    for (int s = 0; s < seconds && ok; s++) ok = sf_writef_short(sf, zeros, 8000) == 8000;
    return sf_close(sf) == 0 && ok;
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = len > 0 ? malloc((size_t)len) : NULL;
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) free(b), b = NULL;
    fclose(f);
    *n = b ? (size_t)len : 0;
    return b;
}

static void check_flac(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/silence.flac", dir);
    CHECK(write_flac_silence(path, 40));
    float *pcm = NULL;
    int n = 0;
    CHECK(transcribe_audio_load_file_max(path, 16000, 20000, &pcm, &n) ==
          TRANSCRIBE_ERR_INPUT_TOO_LONG);
    CHECK(pcm == NULL && n == 0);
    CHECK(transcribe_audio_load_file_max(path, 16000, 60000, &pcm, &n) == TRANSCRIBE_OK);
    CHECK(n == 40 * 16000);
    transcribe_audio_free(pcm);
    /* a STREAMINFO that does not tell the length (total samples 0): the
     * decoded part counts instead */
    size_t size = 0;
    unsigned char *b = slurp(path, &size);
    CHECK(b && size > 8 + 18 && !memcmp(b, "fLaC", 4));
    if (b && size > 8 + 18) {
        b[8 + 13] &= 0xF0;
        memset(b + 8 + 14, 0, 4);
        tr_audio a;
        CHECK(tr_audio_decode_memory_max(b, size, 20.0, &a) == TRANSCRIBE_ERR_INPUT_TOO_LONG);
        CHECK(a.pcm == NULL);
        CHECK(tr_audio_decode_memory_max(b, size, 0, &a) == TRANSCRIBE_OK);
        CHECK(a.n == 40 * 8000);
        tr_audio_free(&a);
    }
    free(b);
    unlink(path);
}
#endif

int main(void) {
    char dir[] = "/tmp/tr-decode-limit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    check_wav_not_decoded(dir); /* first: the peak so far is the process's start */
    check_wav(dir);
#ifdef TR_HAVE_SNDFILE
    check_flac(dir);
#endif
    rmdir(dir);
    return TEST_DONE();
}
