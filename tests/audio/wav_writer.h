/* Tiny in-memory WAV writer for the audio tests: any format tag, channel
 * count and bit depth, optional extensible header, extra chunks and broken
 * sizes, so each parser path can be hit deliberately. */
#ifndef TR_TEST_WAV_WRITER_H
#define TR_TEST_WAV_WRITER_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *b;
    size_t n, cap;
} wbuf;

static void wb_put(wbuf *w, const void *p, size_t n) {
    if (w->n + n > w->cap) {
        size_t c = w->cap ? w->cap : 256;
        while (c < w->n + n) c *= 2;
        w->b = realloc(w->b, c);
        w->cap = c;
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void wb_u8(wbuf *w, unsigned v) {
    uint8_t b = (uint8_t)v;
    wb_put(w, &b, 1);
}
static void wb_u16(wbuf *w, unsigned v) {
    wb_u8(w, v & 0xff);
    wb_u8(w, (v >> 8) & 0xff);
}
static void wb_u32(wbuf *w, uint32_t v) {
    wb_u16(w, v & 0xffff);
    wb_u16(w, v >> 16);
}
static void wb_set32(wbuf *w, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) w->b[at + i] = (uint8_t)(v >> (8 * i));
}

typedef struct {
    int tag; /* 1 PCM, 3 float */
    int channels, bits;
    uint32_t rate;
    int extensible;
    int junk_before_fmt;        /* odd-sized LIST/junk chunks before fmt */
    int data_before_fmt;        /* put the data chunk first */
    int64_t data_size_override; /* >= 0: value written into the data size */
    int block_align_delta;
} wav_spec;

/* Quantised value of x as the decoder must return it. */
static double wav_quant(const wav_spec *s, double x) {
    if (s->tag == 3) return s->bits == 32 ? (double)(float)x : x;
    switch (s->bits) {
    case 8:
        return (lrint(x * 127) + 128 - 128) / 128.0;
    case 16:
        return lrint(x * 32767) / 32768.0;
    case 24:
        return lrint(x * 8388607) / 8388608.0;
    default:
        return (double)llrint(x * 2147483647.0) / 2147483648.0;
    }
}

static void wav_sample(wbuf *w, const wav_spec *s, double x) {
    if (s->tag == 3 && s->bits == 32) {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        wb_u32(w, u);
    } else if (s->tag == 3) {
        uint64_t u;
        memcpy(&u, &x, 8);
        wb_u32(w, (uint32_t)u);
        wb_u32(w, (uint32_t)(u >> 32));
    } else if (s->bits == 8) {
        wb_u8(w, (unsigned)(lrint(x * 127) + 128));
    } else if (s->bits == 16) {
        wb_u16(w, (unsigned)(lrint(x * 32767) & 0xffff));
    } else if (s->bits == 24) {
        long v = lrint(x * 8388607);
        wb_u8(w, v & 0xff);
        wb_u8(w, (v >> 8) & 0xff);
        wb_u8(w, (v >> 16) & 0xff);
    } else {
        wb_u32(w, (uint32_t)(int32_t)llrint(x * 2147483647.0));
    }
}

static void wav_fmt_chunk(wbuf *w, const wav_spec *s) {
    int ba = s->channels * s->bits / 8 + s->block_align_delta;
    wb_put(w, "fmt ", 4);
    wb_u32(w, s->extensible ? 40 : 16);
    wb_u16(w, s->extensible ? 0xFFFE : (unsigned)s->tag);
    wb_u16(w, (unsigned)s->channels);
    wb_u32(w, s->rate);
    wb_u32(w, s->rate * (uint32_t)ba);
    wb_u16(w, (unsigned)ba);
    wb_u16(w, (unsigned)s->bits);
    if (s->extensible) {
        static const uint8_t tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                         0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
        wb_u16(w, 22);
        wb_u16(w, (unsigned)s->bits);
        wb_u32(w, 0);
        wb_u16(w, (unsigned)s->tag);
        wb_put(w, tail, 14);
    }
}

static void wav_junk(wbuf *w) {
    wb_put(w, "LIST", 4);
    wb_u32(w, 5);
    wb_put(w, "INFOx", 5);
    wb_u8(w, 0); /* pad byte */
    wb_put(w, "junk", 4);
    wb_u32(w, 3);
    wb_put(w, "abc", 3);
    wb_u8(w, 0);
}

/* x: frames*channels interleaved values in [-1, 1]. Returns malloc'ed bytes. */
static uint8_t *wav_build(const wav_spec *s, const double *x, int frames, size_t *size) {
    wbuf w = {0};
    wb_put(&w, "RIFF", 4);
    wb_u32(&w, 0);
    wb_put(&w, "WAVE", 4);
    if (s->junk_before_fmt) wav_junk(&w);
    size_t data_at = 0;
    for (int pass = 0; pass < 2; pass++) {
        int data_now = (pass == 0) == (s->data_before_fmt != 0);
        if (!data_now) {
            wav_fmt_chunk(&w, s);
            if (s->junk_before_fmt) wav_junk(&w);
            continue;
        }
        wb_put(&w, "data", 4);
        data_at = w.n;
        wb_u32(&w, 0);
        for (int i = 0; i < frames * s->channels; i++) wav_sample(&w, s, x[i]);
        uint32_t dsz = (uint32_t)(w.n - data_at - 4);
        wb_set32(&w, data_at, s->data_size_override >= 0 ? (uint32_t)s->data_size_override : dsz);
        if (dsz & 1) wb_u8(&w, 0);
    }
    wb_set32(&w, 4, (uint32_t)(w.n - 8));
    *size = w.n;
    return w.b;
}

#endif
