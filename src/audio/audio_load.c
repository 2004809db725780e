/* File → mono PCM at the requested rate: read the file once, detect the
 * container by its bytes, decode, resample. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "util/log.h"

tr_audio_format tr_audio_detect(const void *data, size_t size) {
    const unsigned char *b = data;
    if (size >= 12 && (!memcmp(b, "RIFF", 4) || !memcmp(b, "RF64", 4)) && !memcmp(b + 8, "WAVE", 4))
        return TR_AUDIO_FMT_WAV;
    if (size >= 4 && !memcmp(b, "fLaC", 4)) return TR_AUDIO_FMT_FLAC;
    if (size >= 4 && !memcmp(b, "OggS", 4)) return TR_AUDIO_FMT_OGG;
    if (size >= 12 && !memcmp(b, "FORM", 4) &&
        (!memcmp(b + 8, "AIFF", 4) || !memcmp(b + 8, "AIFC", 4)))
        return TR_AUDIO_FMT_AIFF;
    if (size >= 3 && !memcmp(b, "ID3", 3)) return TR_AUDIO_FMT_MP3;
    /* Bare MPEG audio frame: 11 sync bits, layer III, valid bitrate/rate. */
    if (size >= 4 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x06) == 0x02 &&
        (b[2] & 0xF0) != 0xF0 && (b[2] & 0x0C) != 0x0C)
        return TR_AUDIO_FMT_MP3;
    return TR_AUDIO_FMT_UNKNOWN;
}

const char *tr_audio_format_name(tr_audio_format f) {
    switch (f) {
    case TR_AUDIO_FMT_WAV:
        return "WAV";
    case TR_AUDIO_FMT_FLAC:
        return "FLAC";
    case TR_AUDIO_FMT_OGG:
        return "Ogg (Vorbis/Opus)";
    case TR_AUDIO_FMT_MP3:
        return "MP3";
    case TR_AUDIO_FMT_AIFF:
        return "AIFF";
    default:
        return "unknown";
    }
}

transcribe_status tr_audio_decode_memory(const void *data, size_t size, tr_audio *out) {
    return tr_audio_decode_memory_max(data, size, 0, out);
}

bool tr_audio_too_long(int64_t n, int rate, double max_s, const char *what) {
    if (max_s <= 0 || rate <= 0 || (double)n <= max_s * rate) return false;
    TR_ERROR("audio: %s lasts %.1f s or more, longer than the %.1f s allowed; refusing", what,
             (double)n / rate, max_s);
    return true;
}

transcribe_status tr_audio_decode_memory_max(const void *data, size_t size, double max_s,
                                             tr_audio *out) {
    if (size == 0) {
        /* said plainly: a codec would answer "format not recognised" */
        memset(out, 0, sizeof *out);
        TR_ERROR("audio: the input is empty (0 bytes)");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    tr_audio_format f = tr_audio_detect(data, size);
    if (f != TR_AUDIO_FMT_WAV) return tr_audio_decode_sndfile_max(data, size, f, max_s, out);
    /* refused from the header, before the samples are decoded (4 bytes of
     * float each, from as little as 1 byte) or resampled (where a low rate
     * multiplies them) */
    return tr_audio_decode_wav_max(data, size, max_s, out);
}

static transcribe_status read_file(const char *path, unsigned char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        if (errno == ENOENT || errno == ENOTDIR) {
            TR_ERROR("audio: file not found: %s", path);
            return TRANSCRIBE_ERR_FILE_NOT_FOUND;
        }
        TR_ERROR("audio: cannot open %s: %s", path, strerror(errno));
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    /* Read in growing blocks: works for pipes and never trusts a size. */
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            unsigned char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(fp);
    fclose(fp);
    if (!buf) {
        TR_ERROR("audio: out of memory reading %s", path);
        return TRANSCRIBE_ERR_OOM;
    }
    if (err) {
        free(buf);
        TR_ERROR("audio: read error on %s", path);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    *data = buf;
    *size = n;
    return TRANSCRIBE_OK;
}

transcribe_status tr_audio_load_file(const char *path, int target_rate, tr_audio *out) {
    return tr_audio_load_file_max(path, target_rate, 0, out);
}

transcribe_status tr_audio_load_file_max(const char *path, int target_rate, double max_s,
                                         tr_audio *out) {
    memset(out, 0, sizeof *out);
    if (!path) {
        TR_ERROR("audio: NULL path");
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    if (target_rate < 0 || target_rate > TR_AUDIO_MAX_RATE) {
        TR_ERROR("audio: target rate %d Hz is out of range", target_rate);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    unsigned char *data;
    size_t size;
    transcribe_status st = read_file(path, &data, &size);
    if (st != TRANSCRIBE_OK) return st;
    tr_audio a;
    st = tr_audio_decode_memory_max(data, size, max_s, &a);
    free(data);
    if (st != TRANSCRIBE_OK) {
        if (size == 0)
            TR_ERROR("audio: %s is empty (0 bytes)", path);
        else if (st != TRANSCRIBE_ERR_INPUT_TOO_LONG)
            TR_ERROR("audio: could not decode %s", path);
        return st;
    }
    if (target_rate == 0 || target_rate == a.rate) {
        *out = a;
        return TRANSCRIBE_OK;
    }
    float *res;
    int64_t n_res;
    st = tr_resample(a.pcm, a.n, a.rate, target_rate, &res, &n_res);
    tr_audio_free(&a);
    if (st != TRANSCRIBE_OK) return st;
    out->pcm = res;
    out->n = n_res;
    out->rate = target_rate;
    return TRANSCRIBE_OK;
}

void tr_audio_free(tr_audio *a) {
    if (!a) return;
    free(a->pcm);
    a->pcm = NULL;
    a->n = 0;
}
