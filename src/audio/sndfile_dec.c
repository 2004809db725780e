/* Compressed formats through libsndfile, reading the in-memory image via
 * its virtual I/O interface (so the file is read once and detection is by
 * content). Without libsndfile this says which format needed it. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "util/log.h"
#include "util/vec.h"

#ifdef TR_HAVE_SNDFILE
#include <sndfile.h>

typedef struct {
    const unsigned char *data;
    sf_count_t size, pos;
} mem_io;

static sf_count_t vio_len(void *u) {
    return ((mem_io *)u)->size;
}
static sf_count_t vio_seek(sf_count_t off, int whence, void *u) {
    mem_io *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
    sf_count_t p = base + off;
    if (p < 0 || p > m->size) return -1;
    m->pos = p;
    return p;
}
static sf_count_t vio_read(void *ptr, sf_count_t count, void *u) {
    mem_io *m = u;
    if (count <= 0 || m->pos >= m->size) return 0;
    sf_count_t n = m->size - m->pos < count ? m->size - m->pos : count;
    memcpy(ptr, m->data + m->pos, (size_t)n);
    m->pos += n;
    return n;
}
static sf_count_t vio_write(const void *ptr, sf_count_t count, void *u) {
    (void)ptr;
    (void)count;
    (void)u;
    return 0;
}
static sf_count_t vio_tell(void *u) {
    return ((mem_io *)u)->pos;
}

bool tr_audio_have_sndfile(void) {
    return true;
}

transcribe_status tr_audio_decode_sndfile(const void *data, size_t size, tr_audio_format fmt,
                                          tr_audio *out) {
    return tr_audio_decode_sndfile_max(data, size, fmt, 0, out);
}

transcribe_status tr_audio_decode_sndfile_max(const void *data, size_t size, tr_audio_format fmt,
                                              double max_s, tr_audio *out) {
    memset(out, 0, sizeof *out);
    mem_io m = {data, (sf_count_t)size, 0};
    SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &m);
    if (!sf) {
        /* libsndfile's text for a stream it could not start from memory
         * speaks of a missing file; the bytes are here, just not enough */
        const char *why = sf_strerror(NULL);
        if (strstr(why, "File does not exist")) why = "too short or damaged to decode";
        if (fmt == TR_AUDIO_FMT_UNKNOWN)
            TR_ERROR("audio: not audio this build reads (WAV, FLAC, MP3, Ogg Vorbis/Opus; "
                     "libsndfile: %s)",
                     why);
        else
            TR_ERROR("audio: cannot decode %s data: %s", tr_audio_format_name(fmt), why);
        return TRANSCRIBE_ERR_INVALID_ARG;
    }
    transcribe_status st = TRANSCRIBE_OK;
    float *pcm = NULL, *buf = NULL;
    if (info.channels < 1 || info.channels > TR_AUDIO_MAX_CHANNELS ||
        info.samplerate < TR_AUDIO_MIN_RATE || info.samplerate > TR_AUDIO_MAX_RATE) {
        TR_ERROR("audio: %s stream has %d channels at %d Hz; refusing", tr_audio_format_name(fmt),
                 info.channels, info.samplerate);
        st = TRANSCRIBE_ERR_INVALID_ARG;
        goto done;
    }
    /* the header's length (FLAC's STREAMINFO, ...) first: 2 h of silence
     * is a few hundred KB of FLAC */
    if (info.frames > 0 && info.frames != SF_COUNT_MAX &&
        tr_audio_too_long(info.frames, info.samplerate, max_s, tr_audio_format_name(fmt))) {
        st = TRANSCRIBE_ERR_INPUT_TOO_LONG;
        goto done;
    }
    enum { CHUNK = 4096 };
    int C = info.channels;
    buf = malloc(sizeof(float) * CHUNK * (size_t)C);
    size_t n = 0, cap = 0;
    if (!buf) goto oom;
    for (;;) {
        sf_count_t got = sf_readf_float(sf, buf, CHUNK);
        if (got <= 0) break;
        if ((int64_t)(n + (size_t)got) > TR_AUDIO_MAX_SAMPLES) {
            TR_ERROR("audio: %s stream decodes to more than %lld samples; refusing",
                     tr_audio_format_name(fmt), (long long)TR_AUDIO_MAX_SAMPLES);
            st = TRANSCRIBE_ERR_INVALID_ARG;
            goto done;
        }
        /* a header may lie or say nothing: the decoded length counts too */
        if (tr_audio_too_long((int64_t)(n + (size_t)got), info.samplerate, max_s,
                              tr_audio_format_name(fmt))) {
            st = TRANSCRIBE_ERR_INPUT_TOO_LONG;
            goto done;
        }
        float *np = tr_grow(pcm, &cap, n + (size_t)got, sizeof(float), 8192);
        if (!np) goto oom;
        pcm = np;
        for (sf_count_t i = 0; i < got; i++) {
            double acc = 0;
            for (int c = 0; c < C; c++) acc += buf[(size_t)i * C + c];
            pcm[n + (size_t)i] = (float)(acc / C);
        }
        n += (size_t)got;
    }
    if (n == 0) {
        TR_ERROR("audio: %s stream has no samples", tr_audio_format_name(fmt));
        st = TRANSCRIBE_ERR_INVALID_ARG;
        goto done;
    }
    /* A file that stopped (a download or an upload cut off) is not
     * transcribed in part without a word. FLAC's STREAMINFO gives the exact
     * length and its decoder loses sync at the cut: refused, as the tools
     * refuse a cut WAV. An MP3's length is the Xing header's or an
     * estimate from the bitrate: a shortfall is only said. Ogg streams
     * give no length up front. */
    const double have_s = (double)n / info.samplerate;
    const bool known = info.frames > 0 && info.frames != SF_COUNT_MAX;
    if (sf_error(sf) != SF_ERR_NO_ERROR ||
        (fmt == TR_AUDIO_FMT_FLAC && known && (sf_count_t)n < info.frames)) {
        if (known)
            TR_ERROR(
                "audio: the %s file is cut short or damaged: it decodes to %.2f s of the %.2f s "
                "its header gives (libsndfile: %s)",
                tr_audio_format_name(fmt), have_s, (double)info.frames / info.samplerate,
                sf_strerror(sf));
        else
            TR_ERROR("audio: the %s file is damaged after %.2f s (libsndfile: %s)",
                     tr_audio_format_name(fmt), have_s, sf_strerror(sf));
        st = TRANSCRIBE_ERR_INVALID_ARG;
        goto done;
    }
    if (known && (sf_count_t)n + info.frames / 100 + 4608 < info.frames)
        TR_WARN("audio: the %s file decodes to %.2f s of the %.2f s its header gives; it may be "
                "cut short",
                tr_audio_format_name(fmt), have_s, (double)info.frames / info.samplerate);
    out->pcm = pcm;
    out->n = (int64_t)n;
    out->rate = info.samplerate;
    pcm = NULL;
    goto done;
oom:
    TR_ERROR("audio: out of memory decoding %s", tr_audio_format_name(fmt));
    st = TRANSCRIBE_ERR_OOM;
done:
    free(buf);
    free(pcm);
    sf_close(sf);
    return st;
}

#else

bool tr_audio_have_sndfile(void) {
    return false;
}

transcribe_status tr_audio_decode_sndfile(const void *data, size_t size, tr_audio_format fmt,
                                          tr_audio *out) {
    (void)data;
    (void)size;
    memset(out, 0, sizeof *out);
    if (fmt == TR_AUDIO_FMT_UNKNOWN)
        TR_ERROR("audio: unrecognised audio format (this build reads only WAV)");
    else
        TR_ERROR("audio: %s input needs libsndfile, which this build does not have; "
                 "convert to WAV first",
                 tr_audio_format_name(fmt));
    return TRANSCRIBE_ERR_INVALID_ARG;
}

transcribe_status tr_audio_decode_sndfile_max(const void *data, size_t size, tr_audio_format fmt,
                                              double max_s, tr_audio *out) {
    (void)max_s;
    return tr_audio_decode_sndfile(data, size, fmt, out);
}

#endif
