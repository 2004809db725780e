/* RIFF/WAVE parser. The file is untrusted: every size is checked against
 * the bytes actually present before anything is read, and a header that
 * cannot describe real audio is rejected with a log line saying why. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "audio/audio_internal.h"
#include "util/log.h"

enum {
    WAV_PCM = 1,
    WAV_FLOAT = 3,
    WAV_ALAW = 6,
    WAV_MULAW = 7,
    WAV_EXTENSIBLE = 0xFFFE,
};

static uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) {
    return rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/* G.711 expansions to 16-bit linear, scaled like 16-bit PCM. */
static int alaw_to_linear(uint8_t a) {
    a ^= 0x55;
    int t = (a & 0x0f) << 4, seg = (a & 0x70) >> 4;
    if (seg == 0)
        t += 8;
    else if (seg == 1)
        t += 0x108;
    else {
        t += 0x108;
        t <<= seg - 1;
    }
    return (a & 0x80) ? t : -t;
}

static int mulaw_to_linear(uint8_t u) {
    u = (uint8_t)~u;
    int t = ((u & 0x0f) << 3) + 0x84;
    t <<= (u & 0x70) >> 4;
    return (u & 0x80) ? (0x84 - t) : (t - 0x84);
}

typedef struct {
    int tag, channels, bits, block_align;
    uint32_t rate;
} wav_fmt;

static transcribe_status bad(const char *why) {
    TR_ERROR("wav: %s", why);
    return TRANSCRIBE_ERR_INVALID_ARG;
}

static transcribe_status parse_fmt(const uint8_t *p, uint32_t size, wav_fmt *f) {
    if (size < 16) return bad("fmt chunk shorter than 16 bytes");
    f->tag = rd16(p);
    f->channels = rd16(p + 2);
    f->rate = rd32(p + 4);
    f->block_align = rd16(p + 12);
    f->bits = rd16(p + 14);
    if (f->tag == WAV_EXTENSIBLE) {
        static const uint8_t guid_tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                              0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
        if (size < 40) return bad("WAVE_FORMAT_EXTENSIBLE fmt chunk shorter than 40 bytes");
        if (memcmp(p + 26, guid_tail, 14) != 0)
            return bad("WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID");
        f->tag = rd16(p + 24);
    }
    if (f->channels < 1) return bad("0 channels");
    if (f->channels > TR_AUDIO_MAX_CHANNELS) {
        TR_ERROR("wav: %d channels (more than %d)", f->channels, TR_AUDIO_MAX_CHANNELS);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (f->rate < TR_AUDIO_MIN_RATE || f->rate > TR_AUDIO_MAX_RATE) {
        TR_ERROR("wav: sample rate %u Hz is outside [%d, %d]", f->rate, TR_AUDIO_MIN_RATE,
                 TR_AUDIO_MAX_RATE);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    int ok;
    switch (f->tag) {
    case WAV_PCM:
        ok = f->bits == 8 || f->bits == 16 || f->bits == 24 || f->bits == 32;
        break;
    case WAV_FLOAT:
        ok = f->bits == 32 || f->bits == 64;
        break;
    case WAV_ALAW:
    case WAV_MULAW:
        ok = f->bits == 8;
        break;
    default:
        TR_ERROR("wav: unsupported format tag 0x%04x", (unsigned)f->tag);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (!ok) {
        TR_ERROR("wav: %d bits per sample is not supported for format tag 0x%04x", f->bits,
                 (unsigned)f->tag);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (f->block_align != f->channels * (f->bits / 8)) {
        TR_ERROR("wav: block_align %d does not match %d channels x %d bits", f->block_align,
                 f->channels, f->bits);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    return TRANSCRIBE_OK;
}

static double sample(const uint8_t *p, const wav_fmt *f) {
    if (f->tag == WAV_FLOAT) {
        if (f->bits == 32) {
            uint32_t u = rd32(p);
            float v;
            memcpy(&v, &u, 4);
            return v;
        }
        uint64_t u = rd64(p);
        double v;
        memcpy(&v, &u, 8);
        return v;
    }
    if (f->tag == WAV_ALAW) return alaw_to_linear(p[0]) / 32768.0;
    if (f->tag == WAV_MULAW) return mulaw_to_linear(p[0]) / 32768.0;
    switch (f->bits) {
    case 8:
        return ((int)p[0] - 128) / 128.0;
    case 16:
        return (int16_t)rd16(p) / 32768.0;
    case 24: {
        int32_t v = (int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24);
        return (v >> 8) / 8388608.0;
    }
    default:
        return (int32_t)rd32(p) / 2147483648.0;
    }
}

transcribe_status tr_wav_read_header(const void *data, size_t size, bool complete,
                                     tr_wav_header *out, size_t *need) {
    memset(out, 0, sizeof *out);
    *need = 0;
    const uint8_t *b = data;
    if (!b || size < 12) {
        if (!complete && (b || !size)) return *need = 12, TRANSCRIBE_OK;
        return bad("file too short for a RIFF header");
    }
    bool rf64 = !memcmp(b, "RF64", 4);
    if ((memcmp(b, "RIFF", 4) && !rf64) || memcmp(b + 8, "WAVE", 4))
        return bad("not a RIFF/WAVE file");
    wav_fmt fmt = {0};
    bool have_fmt = false, have_data = false;
    uint64_t rf64_data = 0;
    size_t pos = 12;
    for (;;) {
        if (pos + 8 > size) {
            if (!complete) return *need = pos + 8, TRANSCRIBE_OK;
            break;
        }
        const uint8_t *h = b + pos;
        uint32_t csize = rd32(h + 4);
        size_t body = pos + 8, avail = size - body;
        if (!memcmp(h, "ds64", 4) && rf64 && csize >= 16 && avail < 16 && !complete) {
            return *need = body + 16, TRANSCRIBE_OK;
        } else if (!memcmp(h, "ds64", 4) && rf64 && csize >= 16 && avail >= 16) {
            rf64_data = rd64(h + 16);
        } else if (!memcmp(h, "fmt ", 4)) {
            if (csize > avail) {
                if (complete)
                    return bad("the WAV header is cut short (its fmt chunk runs past the end of "
                               "the file)");
                return *need = body + csize, TRANSCRIBE_OK;
            }
            transcribe_status st = parse_fmt(h + 8, csize, &fmt);
            if (st != TRANSCRIBE_OK) return st;
            have_fmt = true;
        } else if (!memcmp(h, "data", 4)) {
            /* a stream cannot come back for a fmt chunk behind the samples */
            if (!have_fmt && !complete) return bad("data chunk before the fmt chunk");
            uint64_t len = csize;
            if (rf64 && csize == 0xFFFFFFFFu && rf64_data) len = rf64_data;
            out->data_off = body;
            out->data_len = len;
            out->data_field = csize;
            have_data = true;
            if (!have_fmt && len > avail) break; /* the samples run to the end */
        }
        if (have_fmt && have_data) {
            out->tag = fmt.tag;
            out->channels = fmt.channels;
            out->bits = fmt.bits;
            out->block_align = fmt.block_align;
            out->rate = fmt.rate;
            return TRANSCRIBE_OK;
        }
        /* Chunks are word-aligned: odd sizes carry one pad byte. */
        uint64_t next = (uint64_t)body + csize + (csize & 1u);
        if (next > size) {
            if (complete) break;
            if (next + 8 > TR_WAV_MAX_HEADER)
                return bad("more than 16 MiB of header before the data");
            return *need = (size_t)next + 8, TRANSCRIBE_OK;
        }
        pos = (size_t)next;
    }
    if (!have_fmt) return bad("no fmt chunk");
    return bad("no data chunk");
}

void tr_wav_to_mono(const tr_wav_header *h, const void *data, size_t frames, float *out,
                    size_t *nonfinite) {
    wav_fmt fmt = {h->tag, h->channels, h->bits, h->block_align, h->rate};
    const uint8_t *d = data;
    int C = fmt.channels, bps = fmt.bits / 8;
    for (size_t i = 0; i < frames; i++) {
        double acc = 0;
        for (int ch = 0; ch < C; ch++) {
            double v = sample(d + i * (size_t)fmt.block_align + (size_t)ch * bps, &fmt);
            if (!isfinite(v)) {
                v = 0;
                (*nonfinite)++;
            }
            acc += v;
        }
        out[i] = (float)(acc / C);
    }
}

transcribe_status tr_audio_decode_wav(const void *data, size_t size, tr_audio *out) {
    return tr_audio_decode_wav_max(data, size, 0, out);
}

transcribe_status tr_audio_decode_wav_max(const void *data, size_t size, double max_s,
                                          tr_audio *out) {
    memset(out, 0, sizeof *out);
    tr_wav_header h;
    size_t need;
    transcribe_status st = tr_wav_read_header(data, size, true, &h, &need);
    if (st != TRANSCRIBE_OK) return st;
    size_t avail = size - h.data_off, data_len;
    if (tr_wav_length_open(&h)) {
        /* a writer that could not seek back (a pipe): the samples run to
         * the end, as a live stream of the same bytes reads them */
        data_len = avail;
    } else if (h.data_len > avail) {
        TR_WARN("wav: data chunk claims %llu bytes but only %zu remain; clamping",
                (unsigned long long)h.data_len, avail);
        data_len = avail;
    } else {
        data_len = (size_t)h.data_len;
    }
    size_t frames = data_len / (size_t)h.block_align;
    if (tr_audio_too_long((int64_t)frames, (int)h.rate, max_s, "the WAV audio"))
        return TRANSCRIBE_ERR_INPUT_TOO_LONG;
    if (data_len % (size_t)h.block_align)
        TR_WARN("wav: data size %zu is not a multiple of block_align %d; ignoring the tail",
                data_len, h.block_align);
    if (frames == 0) return bad("WAV file is empty (no sample frames)");
    float *pcm = malloc(sizeof(float) * frames);
    if (!pcm) {
        TR_ERROR("wav: out of memory for %zu frames", frames);
        return TRANSCRIBE_ERR_OOM;
    }
    size_t nonfinite = 0;
    tr_wav_to_mono(&h, (const uint8_t *)data + h.data_off, frames, pcm, &nonfinite);
    if (nonfinite) TR_WARN("wav: %zu non-finite float samples replaced by 0", nonfinite);
    out->pcm = pcm;
    out->n = (int64_t)frames;
    out->rate = (int)h.rate;
    return TRANSCRIBE_OK;
}
