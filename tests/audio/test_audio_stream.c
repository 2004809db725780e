/* Audio that arrives in pieces, through the public additions: the WAV
 * header read as bytes come (the parser of whole files, with the reasons
 * it refuses a header), frames decoded as the file decoder does, and the
 * streaming sinc resampler, whose output equals the whole-buffer resampler
 * bit for bit whatever the piece sizes. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "test_util.h"
#include "transcribe.h"
#include "wav_writer.h"

static void quiet(transcribe_log_level level, const char *text, void *user) {
    (void)level, (void)text, (void)user;
}

/* Feeds x in pieces of 1 + (k * 7919 % chunk) samples; compares with
 * tr_resample_builtin on the whole. */
static void resample_in_pieces(int rate_in, int rate_out, int64_t n, int chunk) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)sin(0.013 * (double)i) * 0.5f + (float)(i % 7) * 0.01f;
    float *want = NULL;
    int64_t n_want = 0;
    CHECK(tr_resample_builtin(x, n, rate_in, rate_out, &want, &n_want) == TRANSCRIBE_OK);
    if (rate_in == rate_out) {
        free(want);
        want = malloc((size_t)n * sizeof *want);
        memcpy(want, x, (size_t)n * sizeof *x);
        n_want = n;
    }
    struct transcribe_resampler *r = NULL;
    CHECK(transcribe_resampler_init(rate_in, rate_out, &r) == TRANSCRIBE_OK);
    float *got = malloc((size_t)(n_want + 16) * sizeof *got);
    int64_t n_got = 0, pos = 0, m = 0;
    for (int k = 0; pos < n; k++) {
        int64_t piece = 1 + (int64_t)k * 7919 % chunk;
        if (piece > n - pos) piece = n - pos;
        int64_t room = transcribe_resampler_max_out(r, piece);
        CHECK(n_got + room <= n_want + 16);
        CHECK(transcribe_resampler_feed(r, x + pos, piece, got + n_got, &m) == TRANSCRIBE_OK);
        CHECK(m <= room);
        n_got += m;
        pos += piece;
    }
    CHECK(n_got + transcribe_resampler_max_out(r, 0) <= n_want + 16);
    CHECK(transcribe_resampler_finish(r, got + n_got, &m) == TRANSCRIBE_OK);
    n_got += m;
    CHECK(transcribe_resampler_feed(r, x, 1, got, &m) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK_MSG(n_got == n_want && !memcmp(got, want, (size_t)n_want * sizeof *got),
              "%d -> %d Hz, pieces up to %d: %lld samples, want %lld", rate_in, rate_out, chunk,
              (long long)n_got, (long long)n_want);
    transcribe_resampler_free(r);
    free(x), free(want), free(got);
}

/* A header read one byte at a time: more is asked for until the samples
 * start, then the same format as the whole-file parse. */
static void header_by_bytes(void) {
    wav_spec s = {.tag = 1,
                  .channels = 2,
                  .bits = 16,
                  .rate = 44100,
                  .junk_before_fmt = 1,
                  .data_size_override = -1};
    double x[200];
    for (int i = 0; i < 200; i++) x[i] = 0.3 * sin(i * 0.1);
    size_t size;
    uint8_t *b = wav_build(&s, x, 100, &size);
    struct transcribe_wav_info info;
    transcribe_wav_info_init(&info);
    size_t have = 0, need = 0;
    int calls = 0;
    for (;;) {
        CHECK(transcribe_wav_read_header(b, have, false, &info, &need) == TRANSCRIBE_OK);
        if (!need) break;
        CHECK_MSG(need > have && need <= size, "need %zu with %zu", need, have);
        if (need <= have || need > size) break;
        have++;
        calls++;
    }
    CHECK(calls > 12 && info.sample_rate == 44100 && info.channels == 2 &&
          info.bits_per_sample == 16 && info.format_tag == 1 && info.block_align == 4 &&
          info.data_bytes == 400 && (size_t)info.data_offset + 400 == size);
    /* frames decoded as the file decoder decodes them */
    tr_audio whole;
    CHECK(tr_audio_decode_wav(b, size, &whole) == TRANSCRIBE_OK && whole.n == 100);
    float got[100];
    int64_t n = 0;
    CHECK(transcribe_wav_decode_frames(&info, b + info.data_offset, 401, got, &n) == TRANSCRIBE_OK);
    CHECK(n == 100 && whole.pcm && !memcmp(got, whole.pcm, sizeof got));
    /* and within a 16-bit step of what was written (wav_quant: the writer's rounding) */
    CHECK(fabs(got[10] - (wav_quant(&s, x[20]) + wav_quant(&s, x[21])) / 2) < 1e-6);
    tr_audio_free(&whole);
    struct transcribe_wav_info bad = info;
    bad.block_align = 0;
    CHECK(transcribe_wav_decode_frames(&bad, b, 4, got, &n) == TRANSCRIBE_ERR_INVALID_ARG);
    free(b);
}

/* The headers issue 36 names: each refused, as soon as it is seen. */
static void bad_headers(void) {
    double x[20] = {0};
    struct {
        const char *what;
        wav_spec s;
        bool whole_only; /* only the complete parse can tell */
    } cases[] = {
        {"rate 1536001",
         {.tag = 1, .channels = 1, .bits = 16, .rate = 1536001, .data_size_override = -1},
         false},
        {"rate 2^31-1",
         {.tag = 1, .channels = 1, .bits = 16, .rate = 2147483647u, .data_size_override = -1},
         false},
        {"rate 999",
         {.tag = 1, .channels = 1, .bits = 16, .rate = 999, .data_size_override = -1},
         false},
        {"block_align 0",
         {.tag = 1,
          .channels = 1,
          .bits = 16,
          .rate = 16000,
          .block_align_delta = -2,
          .data_size_override = -1},
         false},
        {"0 channels",
         {.tag = 1, .channels = 0, .bits = 16, .rate = 16000, .data_size_override = -1},
         false},
        {"12-bit PCM",
         {.tag = 1, .channels = 1, .bits = 12, .rate = 16000, .data_size_override = -1},
         false},
        {"data before fmt",
         {.tag = 1,
          .channels = 1,
          .bits = 16,
          .rate = 16000,
          .data_before_fmt = 1,
          .data_size_override = -1},
         false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size, need = 0;
        uint8_t *b = wav_build(&cases[i].s, x, 10, &size);
        struct transcribe_wav_info info;
        transcribe_wav_info_init(&info);
        CHECK_MSG(transcribe_wav_read_header(b, size, false, &info, &need) ==
                      TRANSCRIBE_ERR_INVALID_ARG,
                  "%s accepted", cases[i].what);
        free(b);
    }
    /* no data chunk: a stream asks for more, the whole file is refused */
    static const uint8_t fmt_only[] = {'R',  'I',  'F', 'F', 36, 0,    0, 0, 'W', 'A', 'V', 'E',
                                       'f',  'm',  't', ' ', 16, 0,    0, 0, 1,   0,   1,   0,
                                       0x80, 0x3e, 0,   0,   0,  0x7d, 0, 0, 2,   0,   16,  0};
    struct transcribe_wav_info info;
    transcribe_wav_info_init(&info);
    size_t need = 0;
    CHECK(transcribe_wav_read_header(fmt_only, sizeof fmt_only, false, &info, &need) ==
              TRANSCRIBE_OK &&
          need == sizeof fmt_only + 8);
    CHECK(transcribe_wav_read_header(fmt_only, sizeof fmt_only, true, &info, &need) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_wav_read_header("RIFX....WAVE", 12, false, &info, &need) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    /* an open length (a piping writer): -1 */
    wav_spec s = {.tag = 1, .channels = 1, .bits = 16, .rate = 16000, .data_size_override = 0};
    size_t size;
    uint8_t *b = wav_build(&s, x, 10, &size);
    CHECK(transcribe_wav_read_header(b, size, false, &info, &need) == TRANSCRIBE_OK && need == 0 &&
          info.data_bytes == -1);
    free(b);
    /* arguments */
    CHECK(transcribe_wav_read_header(fmt_only, 4, false, NULL, &need) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_wav_read_header(fmt_only, 4, false, &info, NULL) ==
          TRANSCRIBE_ERR_INVALID_ARG);
    info.struct_size = 8;
    CHECK(transcribe_wav_read_header(fmt_only, 4, false, &info, &need) ==
          TRANSCRIBE_ERR_BAD_STRUCT_SIZE);
}

int main(void) {
    transcribe_log_set(quiet, NULL);
    header_by_bytes();
    bad_headers();
    static const int pairs[][2] = {{44100, 16000}, {8000, 16000},  {48000, 16000},
                                   {22050, 16000}, {16000, 16000}, {11025, 24000}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        resample_in_pieces(pairs[i][0], pairs[i][1], 30011, 4410);
        resample_in_pieces(pairs[i][0], pairs[i][1], 777, 3);
    }
    struct transcribe_resampler *r = (struct transcribe_resampler *)1;
    CHECK(transcribe_resampler_init(1536001, 16000, &r) == TRANSCRIBE_ERR_INVALID_ARG && !r);
    CHECK(transcribe_resampler_init(16000, 999, &r) == TRANSCRIBE_ERR_INVALID_ARG);
    CHECK(transcribe_resampler_init(16000, 8000, NULL) == TRANSCRIBE_ERR_INVALID_ARG);
    int64_t m;
    CHECK(transcribe_resampler_feed(NULL, NULL, 0, NULL, &m) == TRANSCRIBE_ERR_INVALID_ARG);
    transcribe_resampler_free(NULL);
    return TEST_DONE();
}
